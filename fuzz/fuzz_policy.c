/* Fuzz target: the tolerance-policy parser on arbitrary text. It must accept or reject with a
 * message, never crash; an accepted policy must answer lookups without error or with NOT_FOUND. */
#include <stdlib.h>

#include "attest/policy.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    attest_policy *policy = NULL;
    if (attest_policy_parse((const char *)data, size, "<fuzz>", &policy) != ATTEST_OK) return 0;
    attest_tolerance tol;
    attest_status st = attest_policy_lookup(policy, ATTEST_KERNEL_INDEXER, "logits", &tol);
    if (st != ATTEST_OK && st != ATTEST_ERR_NOT_FOUND) abort();
    if (st == ATTEST_OK && (tol.atol < 0 || tol.rtol < 0)) abort(); /* the parser must refuse these */
    attest_policy_free(policy);
    return 0;
}
