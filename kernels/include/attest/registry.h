/* attest: the built-in candidates (CPU kernels, mutants when built with ATTEST_MUTANTS, CUDA
 * kernels when built with CUDA) and resolution of a --candidate argument.
 */
#ifndef ATTEST_REGISTRY_H
#define ATTEST_REGISTRY_H

#include <stddef.h>

#include "attest/candidate.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the number of built-in candidates and sets *list to them (static storage). */
size_t attest_builtin_candidates(const attest_candidate *const **list);

/* Finds a built-in candidate by name; NULL if none. */
const attest_candidate *attest_builtin_find(const char *name);

/* Resolves a --candidate argument: a built-in name, "path/lib.so:NAME" for a plugin, or an
 * external process "py:PATH.py:NAME" / "exec:COMMAND ARG..." (attest/external.h).
 * ATTEST_ERR_NOT_FOUND with a message listing what exists when nothing matches. */
attest_status attest_candidate_resolve(const char *spec, const attest_candidate **out)
    ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_REGISTRY_H */
