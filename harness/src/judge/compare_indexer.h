/* attest (internal): the indexer's compare mask and top-k gate (compare.h), with the selection
 * and row-length helpers they share and a variant that reuses the runner's buffers. */
#ifndef ATTEST_COMPARE_INDEXER_H
#define ATTEST_COMPARE_INDEXER_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/compare.h"
#include "attest/status.h"

/* Grows *p to hold `need` elements of `elem` bytes (never shrinks; *cap counts elements). */
attest_status indexer_reserve(void **p, size_t *cap, size_t need, size_t elem) ATTEST_MUST_CHECK;

/* Top-k of one row of scores: the k largest non-NaN scores of [0, len), ties to the lower
 * position, in descending order, -1 padding; ATTEST_TOPK_SHORT_IDENTITY gives 0..len-1 when
 * len <= k. -inf ranks below every finite score but can be chosen: the row is already cut at
 * its valid length, so a -inf inside it is a score (the gate must see a kernel that picks it).
 * attest_ref_topk_row_skip_neg_inf (references) never picks -inf, which there marks masked
 * positions. `heap` holds k ints. */
void indexer_select_topk_neg_inf_last(const double *scores, int32_t len, int32_t k,
                                      attest_topk_rule rule, int32_t *idx, int32_t *heap);

/* Buffers of the top-k gate, reused from call to call (zero-initialize; free with
 * indexer_scratch_free). */
typedef struct indexer_scratch {
    double *scores;   /* one row of candidate logits as doubles */
    size_t scores_cap;
    int32_t *sets;    /* row lengths, candidate and reference top-k sets, then the heap */
    size_t sets_cap;
} indexer_scratch;

void indexer_scratch_free(indexer_scratch *s);

/* attest_indexer_topk_gate with its buffers in `s`. */
attest_status indexer_topk_gate_reuse(const attest_case *c, const double *ref, const double *bound,
                                      const float *cand, const attest_tolerance *tol,
                                      indexer_scratch *s, attest_tensor_metrics *m) ATTEST_MUST_CHECK;

#endif /* ATTEST_COMPARE_INDEXER_H */
