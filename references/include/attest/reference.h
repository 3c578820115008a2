/* attest: independent CPU references (docs/kernels.md sections 5-6), plain C accumulating in double.
 *
 * Simulated mode computes on exactly the bytes in the cache (dequantized); true mode on the
 * unquantized truth tensors the cache was built from, so a user sees the kernel's own error and
 * the quantization error apart. Outputs are doubles; conventions come from the case parameters.
 */
#ifndef ATTEST_REFERENCE_H
#define ATTEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "attest/bound.h"
#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attest_ref_mode {
    ATTEST_REF_SIMULATED = 0, /* on the cache bytes as stored */
    ATTEST_REF_TRUE = 1       /* on the truth tensors (needs them in the case) */
} attest_ref_mode;

typedef enum attest_indexer_order {
    /* kscale * sum_h w * fmax(dot(q, kfp8), 0): DeepGEMM's kernel; a NaN dot contributes 0 */
    ATTEST_INDEXER_ORDER_KERNEL = 0,
    /* sum_h w * relu(dot(q, kfp8 * kscale)) with torch's relu (NaN stays NaN): the README and
     * the upstream torch reference; equal to the kernel order for finite kscale > 0 */
    ATTEST_INDEXER_ORDER_README = 1
} attest_indexer_order;

/* The order an indexer case is judged in: its declared relu_nan decides what a NaN dot gives
 * (propagates: README, to_zero: kernel). Every reference a case is judged or written against
 * takes it from here. */
attest_indexer_order attest_indexer_order_of(const attest_case *c);

/* Indexer logits [b*next_n, max_len] into `logits`. Row r is request r / next_n, MTP slot
 * r % next_n; position t < length reads physical block block_table[b][t / 64], slot t % 64.
 * Rows past their valid length (attest_indexer_row_length) hold -inf, 0.0 or NaN (for
 * "unspecified", so nothing can depend on it) per params.masking. True mode computes
 * sum_h w * fmax(dot(q_true, k_true), 0) with k_true by physical position (order is moot).
 * Returns ATTEST_ERR_INVALID_ARGUMENT naming the tensor or element for a missing tensor, a
 * length needing more blocks than block_table has, or a block outside the pool. */
attest_status attest_ref_indexer_logits(const attest_case *c, attest_ref_mode mode,
                                        attest_indexer_order order, double *logits)
    ATTEST_MUST_CHECK;

/* The valid length of a logits row (the MTP causal rule) is attest_indexer_row_length, case.h. */

/* Top-k over one row: the k largest of logits[0, len) (ties to the lower position), written in
 * descending score order to idx[0, k), -1 padding. rule ATTEST_TOPK_SHORT_IDENTITY returns
 * 0..len-1 when len <= k. NaN and -inf logits (masked positions) are never selected by score
 * (the judge's gate, which ranks -inf last but may pick it, is indexer_select_topk_neg_inf_last).
 * Returns ATTEST_ERR_INVALID_ARGUMENT for a negative len or k. */
attest_status attest_ref_topk_row_skip_neg_inf(const double *logits, int32_t len, int32_t k,
                                  attest_topk_rule rule, int32_t *idx) ATTEST_MUST_CHECK;

/* Translates logical positions of request b to physical cache indices (block*64 + slot), -1
 * stays -1. Fails on a position whose block is outside the block table. */
attest_status attest_topk_to_physical(const int32_t *block_table, int32_t blocks_per_req,
                                      int32_t b, const int32_t *logical, int32_t k,
                                      int32_t *physical) ATTEST_MUST_CHECK;

/* Sparse MLA decode: out [b, s_q, h_q, d_v] and lse [b, s_q, h_q] (natural log), docs/kernels.md section 6. The
 * valid keys of both scopes (index != -1 in slots below topk_length / extra_topk_length, which
 * are clamped to [0, topk]) share one max-subtracted softmax of sm_scale * dot(q, K); V is the
 * first d_v dims of K. A sink scales out by 1 / (1 + exp(sink - lse)); the LSE follows
 * params.lse_convention. A query with no valid key gives out = 0 and the lse params.lonely_lse
 * names (+inf by default, as FlashMLA); a -1 index is skipped, or ends the list when
 * params.invalid_index says so. Only selected slots are read, so a NaN elsewhere cannot matter; a NaN in a selected
 * key propagates. True mode reads kv_true / extra_kv_true rows by physical token index. Returns
 * ATTEST_ERR_INVALID_ARGUMENT naming the element for an index outside [-1, num_pages*P) in a
 * slot that counts, or naming a missing tensor. */
attest_status attest_ref_mla_decode(const attest_case *c, attest_ref_mode mode, double *out,
                                    double *lse) ATTEST_MUST_CHECK;

/* Computes every output tensor of the case, in tensor-table order, into outputs[i] (each sized
 * by attest_tensor_count of the i-th output tensor). The indexer's order follows
 * params.indexer.relu_nan (to_zero: kernel order; propagates: README order). */
attest_status attest_ref_compute(const attest_case *c, attest_ref_mode mode, double **outputs)
    ATTEST_MUST_CHECK;

/* Error bounds from the computation (docs/policy.md, "Error bounds"). For every output element
 * of the simulated reference, bounds[i] receives B: a first-order bound on |computed - exact| of
 * ANY evaluation of that element that follows models[i] (models[i] for the i-th output tensor,
 * in tensor-table order): sums in any order or tree, fused or not, split into tiles and merged,
 * elementary functions within a few units of roundoff. B is built from the magnitudes of the
 * terms (sum_i |x_i|, not |sum_i x_i|), so cancelling sums and huge scores get the bound a
 * correct kernel needs. Elements that are not finite, and fill values past an indexer row's
 * length, get 0. outputs[i] receives the reference values as attest_ref_compute gives them (the
 * bounds need them anyway). */
attest_status attest_ref_bounds(const attest_case *c, const attest_bound_model *models,
                                double **outputs, double **bounds) ATTEST_MUST_CHECK;

/* The runner's reference function (attest_reference_fn): attest_ref_compute in simulated mode
 * when bounds is NULL, attest_ref_bounds otherwise. */
attest_status attest_ref_simulated(const attest_case *c, const attest_bound_model *models,
                                   double **outputs, double **bounds) ATTEST_MUST_CHECK;

/* The two families' parts of attest_ref_bounds. */
attest_status attest_ref_indexer_bounds(const attest_case *c, const attest_bound_model *model,
                                        double *logits, double *bound) ATTEST_MUST_CHECK;
attest_status attest_ref_mla_bounds(const attest_case *c, const attest_bound_model *out_model,
                                    const attest_bound_model *lse_model, double *out, double *lse,
                                    double *out_bound, double *lse_bound) ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_REFERENCE_H */
