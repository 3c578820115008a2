/* Fuzz target: the tolerance-policy parser on arbitrary text. It must accept or reject with a
 * message, never crash. An accepted policy must hold what docs/policy.md promises: at least one
 * entry, every entry found again by a lookup of its (kernel, output), every number finite and
 * in its range (a gate that is off reads -1), the exact text it was parsed from. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/policy.h"
#include "attest/status.h"
#include "fuzz_common.h"

static int bound_ok(double x) { return isfinite(x) && x >= 0; }
static int fraction_ok(double x) { return isfinite(x) && x >= 0 && x <= 1; }

static void check_entry(const attest_policy *policy, size_t i)
{
    attest_kernel kernel;
    const char *output = NULL;
    attest_tolerance tol, found;
    if (attest_policy_entry_at(policy, i, &kernel, &output, &tol) != ATTEST_OK) abort();
    if (attest_kernel_name(kernel) == NULL || output == NULL || output[0] == '\0') abort();
    /* The parser refuses duplicates, so the lookup must find this very entry. */
    if (attest_policy_lookup(policy, kernel, output, &found) != ATTEST_OK) abort();
    if (memcmp(&found, &tol, sizeof tol) != 0) abort();
    if (!bound_ok(tol.atol) || !bound_ok(tol.rtol) || !bound_ok(tol.cos_diff_max) ||
        !bound_ok(tol.vacuity_factor) || !bound_ok(tol.atol_ref_scale) ||
        !bound_ok(tol.topk_tie_atol) || !bound_ok(tol.topk_tie_rtol))
        abort();
    if (!fraction_ok(tol.max_fail_fraction)) abort();
    if (!(bound_ok(tol.nmse_max) || tol.nmse_max == -1)) abort();
    if (!(bound_ok(tol.max_code_distance) || tol.max_code_distance == -1)) abort();
    if (!(fraction_ok(tol.topk_min_recall) || tol.topk_min_recall == -1)) abort();
    if (memchr(tol.source, '\0', sizeof tol.source) == NULL || tol.source[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    attest_policy *policy = NULL;
    if (attest_policy_parse((const char *)data, size, "<fuzz>", &policy) != ATTEST_OK) {
        if (policy != NULL) abort(); /* a failed parse leaves *out NULL */
        if (attest_last_error()[0] == '\0') abort(); /* and says why */
        return 0;
    }
    size_t n = attest_policy_num_entries(policy);
    if (n == 0) abort();
    for (size_t i = 0; i < n; i++) check_entry(policy, i);
    if (attest_policy_entry_at(policy, n, NULL, NULL, NULL) != ATTEST_ERR_NOT_FOUND) abort();
    const char *text = attest_policy_text(policy);
    if (strlen(text) != size || memcmp(text, data, size) != 0) abort(); /* JSON has no NUL */
    if (strlen(attest_policy_hash(policy)) != 64 || attest_policy_name(policy)[0] == '\0') abort();
    attest_policy_free(policy);
    return 0;
}
