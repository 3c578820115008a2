/* attest: independent CPU references (spec sections 5-6), plain C accumulating in double.
 *
 * Simulated mode computes on exactly the bytes in the cache (dequantized); true mode on the
 * unquantized truth tensors the cache was built from, so a user sees the kernel's own error and
 * the quantization error apart. Outputs are doubles; conventions come from the case parameters.
 */
#ifndef ATTEST_REFERENCE_H
#define ATTEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

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
    ATTEST_INDEXER_ORDER_KERNEL = 0, /* kscale * sum_h w * relu(dot(q, kfp8)): DeepGEMM's kernel */
    ATTEST_INDEXER_ORDER_README = 1  /* sum_h w * relu(dot(q, kfp8 * kscale)) */
} attest_indexer_order;

/* Indexer logits [b*next_n, max_len] into `logits`. Rows past their valid length (with the MTP
 * causal rule when next_n > 1) hold -inf, 0.0 or NaN (for "unspecified") per params.masking. */
attest_status attest_ref_indexer_logits(const attest_case *c, attest_ref_mode mode,
                                        attest_indexer_order order, double *logits)
    ATTEST_MUST_CHECK;

/* Valid length of logits row `row` (MTP causal rule applied, clamped to [0, max_len]). */
int32_t attest_indexer_row_length(const attest_indexer_params *p, const int32_t *context_lens,
                                  int32_t row);

/* Top-k over one row: the k largest of logits[0, len) (ties to the lower position), written in
 * descending score order to idx[0, k), -1 padding. rule ATTEST_TOPK_SHORT_IDENTITY returns
 * 0..len-1 when len <= k. NaN logits are never selected. */
attest_status attest_ref_topk_row(const double *logits, int32_t len, int32_t k,
                                  attest_topk_rule rule, int32_t *idx) ATTEST_MUST_CHECK;

/* Translates logical positions of request b to physical cache indices (block*64 + slot), -1
 * stays -1. Fails on a position whose block is outside the block table. */
attest_status attest_topk_to_physical(const int32_t *block_table, int32_t blocks_per_req,
                                      int32_t b, const int32_t *logical, int32_t k,
                                      int32_t *physical) ATTEST_MUST_CHECK;

/* Sparse MLA decode: out [b, s_q, h_q, d_v] and lse [b, s_q, h_q] (natural log). A query with
 * no valid index gives out = 0, lse = +inf. With a sink the LSE follows params.lse_convention. */
attest_status attest_ref_mla_decode(const attest_case *c, attest_ref_mode mode, double *out,
                                    double *lse) ATTEST_MUST_CHECK;

/* Computes every output tensor of the case, in tensor-table order, into outputs[i] (each sized
 * by attest_tensor_count of the i-th output tensor). Simulated mode, kernel order. */
attest_status attest_ref_compute(const attest_case *c, attest_ref_mode mode, double **outputs)
    ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_REFERENCE_H */
