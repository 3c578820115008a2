/* attest: the arithmetic model behind computation-derived error bounds.
 *
 * A correct kernel may evaluate a sum in any order, fuse multiply-adds, split it into tiles and
 * merge them; what it may not do is lose more precision than its formats allow. The model names
 * those formats by their unit roundoff u (half a step at 1: 2^-24 for float32), and the
 * references turn it into a per-element bound (attest_ref_bounds, docs/policy.md "Error bounds").
 */
#ifndef ATTEST_BOUND_H
#define ATTEST_BOUND_H

#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attest_bound_model {
    double u_accum; /* accumulators, products and the elementary functions (float32: 2^-24) */
    double u_probs; /* softmax probabilities as fed to the P*V product (float32 or bf16) */
    double u_kv;    /* keys and values after dequantization (0: kept exact, as fp8 * 2^k is) */
} attest_bound_model;

/* The float32 model: every intermediate in float32, dequantized values exact. */
attest_bound_model attest_bound_model_fp32(void);

/* Unit roundoff of a format name: "fp32" 2^-24, "tf32" and "fp16" 2^-11, "bf16" 2^-8,
 * "hopper-fp8-mma" 2^-13 (the roughly 14-bit accumulator of fp8 tensor-core products that the
 * DeepSeek-V3 report describes), "exact" 0. ATTEST_ERR_NOT_FOUND for another name. */
attest_status attest_format_unit_roundoff(const char *name, double *u) ATTEST_MUST_CHECK;

/* The largest absolute error of rounding a value below the normal range to a format of unit
 * roundoff u: half its smallest subnormal step, which no relative term covers (bf16 2^-134; for
 * 2^-11 the larger of fp16's 2^-25 and tf32's 2^-137; fp32 and exact values, held in float32,
 * 2^-150). For another u, float32's 2^-126 (flush-to-zero), the widest a float32 kernel loses. */
double attest_format_subnormal_half_step(double u);

/* The name of a unit roundoff that attest_format_unit_roundoff gives ("fp32", ...), or NULL. */
const char *attest_format_name(double u);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_BOUND_H */
