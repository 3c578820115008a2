/* attest: shrinking a failing case to a smaller one that fails the same way.
 *
 * A fuzz finding or a failing generated case is usually far bigger than its bug needs: several
 * requests, many heads, hundreds of top-k entries. The minimizer repeatedly tries smaller cases
 * derived from the current one and keeps each that the caller's predicate still calls a failure
 * of the same kind (the CLI's predicate: the same verdict and the same failed gates):
 *   - fewer requests (halves, then one at a time), fewer query rows (s_q / next_n), fewer heads;
 *   - index slots set to -1 (mla-decode, both scopes; chunks halved down to single slots);
 *   - shorter lengths: topk_length and extra_topk_length (mla-decode), context_lens (indexer).
 * Cache pools, page tables and the values in them are kept as they are (every reduction keeps
 * the case valid for attest_case_check_inputs); truth tensors travel with the case.
 * Every candidate case the predicate sees is placed on the heap and owns its memory.
 */
#ifndef ATTEST_MINIMIZE_H
#define ATTEST_MINIMIZE_H

#include <stdint.h>

#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 1 when `c` still fails the way the original did, 0 when not, -1 when the predicate
 * could not judge (the minimizer then stops and returns ATTEST_ERR_INTERNAL). */
typedef int (*attest_minimize_predicate)(const attest_case *c, void *ctx);

typedef struct attest_minimize_stats {
    uint32_t tries;     /* predicate calls */
    uint32_t accepted;  /* reductions kept */
} attest_minimize_stats;

/* Shrinks `in` (placed) into *out (a heap copy; pass a case that owns no memory). At most
 * max_tries predicate calls (0: 4000). *out is at worst a copy of `in`. stats may be NULL. */
attest_status attest_minimize_case(const attest_case *in, attest_minimize_predicate pred, void *ctx,
                                   uint32_t max_tries, attest_case *out,
                                   attest_minimize_stats *stats) ATTEST_MUST_CHECK;

/* Size of a case as the minimizer sees it, for reports: requests, query rows, heads and valid
 * index entries (mla-decode: non -1 slots below topk_length; indexer: sum of context_lens), and
 * for mla-decode the index slots per row of each scope (topk, extra_topk: 0 without one). */
typedef struct attest_case_size {
    int32_t requests, rows, heads;
    int64_t entries;
    int32_t topk, extra_topk;
} attest_case_size;

attest_case_size attest_case_size_of(const attest_case *c);

/* The size as one line for a finding's report: "b=1 s_q=1 h=1 topk=1 index entries=1" (an
 * extra scope adds "extra_topk=N"), or "b=1 next_n=1 heads=1 positions=3". */
void attest_case_size_describe(const attest_case *c, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_MINIMIZE_H */
