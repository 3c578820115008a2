/* attest: built-in candidates of the top-k family (attest/topk.h): CPU kernels that keep the
 * contract in different legal ways, and mutants (with ATTEST_MUTANTS) that each break one rule. */
#ifndef ATTEST_TOPK_CANDIDATES_H
#define ATTEST_TOPK_CANDIDATES_H

#include <stddef.h>

#include "attest/topk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the number of built-in top-k candidates and sets *list to them (static storage). */
size_t attest_topk_builtin_candidates(const attest_topk_candidate *const **list);

/* Finds one by name; NULL if none. */
const attest_topk_candidate *attest_topk_builtin_find(const char *name);

/* The check each mutant must fail (its name starts with "mutant-"), or -1 for a correct one. */
int attest_topk_expected_failure(const attest_topk_candidate *cand);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_TOPK_CANDIDATES_H */
