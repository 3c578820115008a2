/* attest: tolerance policies, data not code. A policy file (JSON, parsed with jansson) holds one
 * entry per kernel family and output, each with the source of its numbers; the default policy is
 * embedded in the binary (policies/default.json). Every verdict records the policy's name and
 * content hash.
 */
#ifndef ATTEST_POLICY_H
#define ATTEST_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/compare.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attest_policy attest_policy; /* opaque */

/* Loads a policy file (schema: docs/policy.md). Errors (missing file, bad JSON, unknown key, a
 * negative or missing tolerance, a duplicate (kernel, output) entry) return ATTEST_ERR_IO /
 * ATTEST_ERR_FORMAT with a message "file:line:column: entries[i].field: problem". */
attest_status attest_policy_load(const char *path, attest_policy **out) ATTEST_MUST_CHECK;

/* Parses a policy from memory (`origin` names it in messages). */
attest_status attest_policy_parse(const char *text, size_t len, const char *origin,
                                  attest_policy **out) ATTEST_MUST_CHECK;

/* Returns the embedded default policy (parsed once per process, thread-safe, shared: do not free
 * it; attest_policy_free ignores it). Fails only when the build embedded a broken file. */
attest_status attest_policy_default(attest_policy **out) ATTEST_MUST_CHECK;

/* Frees a loaded or parsed policy; NULL and the shared default are ignored. */
void attest_policy_free(attest_policy *policy);

/* Finds the tolerance for (kernel, output tensor name). ATTEST_ERR_NOT_FOUND if no entry. */
attest_status attest_policy_lookup(const attest_policy *policy, attest_kernel kernel,
                                   const char *output, attest_tolerance *tol) ATTEST_MUST_CHECK;

/* Number of entries, and entry i (for listing a policy); ATTEST_ERR_NOT_FOUND past the end.
 * *output points into the policy. Any out pointer may be NULL. */
size_t attest_policy_num_entries(const attest_policy *policy);
attest_status attest_policy_entry_at(const attest_policy *policy, size_t i, attest_kernel *kernel,
                                     const char **output, attest_tolerance *tol) ATTEST_MUST_CHECK;

const char *attest_policy_name(const attest_policy *policy);    /* its "name" field */
const char *attest_policy_version(const attest_policy *policy); /* its "version" field */
const char *attest_policy_origin(const attest_policy *policy);  /* path or "<embedded>" */
/* The content hash: SHA-256 of the policy's bytes as 64 lowercase hex digits, what `sha256sum`
 * prints for its file (for the embedded default, of policies/default.json). */
const char *attest_policy_hash(const attest_policy *policy);
/* The exact text the policy was parsed from (stored in results for provenance). */
const char *attest_policy_text(const attest_policy *policy);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_POLICY_H */
