/* attest references: the top-k family's reference selection (attest/topk.h). */
#ifndef ATTEST_REFERENCE_TOPK_H
#define ATTEST_REFERENCE_TOPK_H

#include <stdint.h>

#include "attest/status.h"
#include "attest/topk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reference selection of every row of a top-k case into ref [rows, k]:
 * attest_ref_topk_row_skip_neg_inf over the row's valid length (largest first, equal scores to
 * the lower position, NaN and -inf never chosen, -1 padding; under ATTEST_TOPK_SHORT_IDENTITY a row with len <= k gives
 * 0..len-1). physical (NULL: not wanted) gets each position's physical token index through the
 * row's block table. Returns ATTEST_ERR_INVALID_ARGUMENT / ATTEST_ERR_OUT_OF_MEMORY. */
attest_status attest_ref_topk_case(const attest_topk_case *c, attest_topk_rule rule, int32_t *ref,
                                   int32_t *physical) ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_REFERENCE_TOPK_H */
