/* attest (internal): the runner's comparison step, kept apart from the run loop. */
#ifndef ATTEST_RUNNER_INTERNAL_H
#define ATTEST_RUNNER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/policy.h"
#include "attest/record.h"
#include "attest/status.h"

/* Buffers reused from case to case. */
typedef struct runner_scratch {
    uint8_t *mask;
    size_t mask_cap;
    double *scores;   /* one row of candidate logits as doubles */
    size_t scores_cap;
    int32_t *sets;    /* candidate and reference top-k sets, then the selection heap */
    size_t sets_cap;
} runner_scratch;

void runner_scratch_free(runner_scratch *s);

/* Valid length of indexer logits row `row`: the MTP causal rule of spec section 5 (slot j of a
 * request of length L sees t <= L - next_n + j), clamped to [0, max_len]. The same rule as the
 * references' attest_indexer_row_length, kept here so the harness does not depend on them. */
int32_t runner_indexer_row_length(const attest_indexer_params *p, const int32_t *context_lens,
                                  int32_t row);

/* Top-k of one row of scores: the k largest non-NaN scores of [0, len), ties to the lower
 * position, in descending order, -1 padding; ATTEST_TOPK_SHORT_IDENTITY gives 0..len-1 when
 * len <= k. `heap` holds k ints. */
void runner_select_topk(const double *scores, int32_t len, int32_t k, attest_topk_rule rule,
                        int32_t *idx, int32_t *heap);

/* Compares every output of the case (`cand[i]`: candidate bytes of output i in table order,
 * `ref[i]`: reference values) under the policy, with the unspecified-mask and top-k gate of the
 * indexer. Fills rec->outputs, num_outputs, failed_gates and vacuous, and a one-line summary of
 * the failures in msg. ATTEST_ERR_NOT_FOUND when the policy has no entry for an output. */
attest_status runner_compare_outputs(const attest_case *c, const attest_policy *policy,
                                     double *const *ref, void *const *cand,
                                     attest_case_record *rec, runner_scratch *s, char *msg,
                                     size_t cap) ATTEST_MUST_CHECK;

#endif /* ATTEST_RUNNER_INTERNAL_H */
