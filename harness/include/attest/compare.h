/* attest: the comparator. Every gate is computed and recorded; none hides behind another.
 *
 * Gates per output tensor (docs/kernels.md section 7 gives the upstream starting points):
 *   nonfinite  positions of +inf, -inf and NaN must match exactly (counted separately);
 *   element    each element passes if |c-r| <= atol OR |c-r| <= rtol*|r|; the failing fraction
 *              (of finite pairs) must not exceed max_fail_fraction. atol is raised to
 *              atol_ref_scale * max|ref| when that is larger (fp32 sums with cancelling terms
 *              err relative to the tensor's scale, not the element's);
 *   cosine     1 - 2*sum(rc)/sum(r^2+c^2) over finite pairs, in double, <= cos_diff_max;
 *   nmse       sum((c-r)^2)/sum(r^2) <= nmse_max (off when nmse_max < 0);
 *   code       representable steps (bf16 or fp32, per the candidate's dtype) between c and the
 *              reference rounded to that dtype, max <= max_code_distance (off when < 0); pairs
 *              already within atol are not counted (near zero a step count means nothing);
 *   unwritten  elements still holding the harness's output poison pattern must be zero;
 *   topk       (indexer) tie-aware set recall >= topk_min_recall (attest_compare_topk).
 * Non-finite pairs (either side +-inf or NaN) are judged by the nonfinite gate alone: a matching
 * pair (same infinity, or NaN and NaN) is fine and enters no other metric. Elements excluded by
 * the compare mask are counted nowhere.
 * Anti-vacuity: a tensor whose compared reference is all masked/non-finite, or whose max |ref| is
 * below vacuity_factor*atol, is flagged vacuous; a vacuous tensor is never reported as a pass
 * on its own (the case records the flag and the campaign counts it).
 */
#ifndef ATTEST_COMPARE_H
#define ATTEST_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "attest/bound.h"
#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attest_gate {
    ATTEST_GATE_NONFINITE = 0,
    ATTEST_GATE_ELEMENT = 1,
    ATTEST_GATE_COSINE = 2,
    ATTEST_GATE_NMSE = 3,
    ATTEST_GATE_CODE = 4,
    ATTEST_GATE_UNWRITTEN = 5,
    ATTEST_GATE_TOPK = 6,
    ATTEST_GATE_COUNT_
} attest_gate;

#define ATTEST_GATE_BIT(g) (1u << (unsigned)(g))

/* Returns the gate's short name ("nonfinite", "element", "cosine", ...) or "unknown". */
const char *attest_gate_name(attest_gate gate);

/* Writes gate names of a bitmask, joined by '+', into buf ("element+cosine"; "" for 0). */
void attest_gate_mask_string(uint32_t mask, char *buf, size_t cap);

typedef struct attest_tolerance {
    double atol;               /* absolute per-element tolerance */
    double rtol;               /* relative per-element tolerance */
    double max_fail_fraction;  /* fraction of elements allowed over tolerance (0: none) */
    double cos_diff_max;       /* cosine-difference bound */
    double nmse_max;           /* < 0: gate off */
    double max_code_distance;  /* < 0: gate off */
    double vacuity_factor;     /* max|ref| < vacuity_factor * atol => vacuous */
    double topk_min_recall;    /* indexer top-k gate; < 0: off */
    double topk_tie_atol;      /* scores within this of the k-th are interchangeable */
    double topk_tie_rtol;
    char source[160];          /* where the numbers come from (policy file text) */
    double atol_ref_scale;     /* effective atol = max(atol, atol_ref_scale * max|ref|); 0: off */
    /* Computation-derived bounds (docs/policy.md, "Error bounds"). bound_factor < 0: off, and
     * the element gate is atol OR rtol as above. Otherwise an element passes when
     * |c - r| <= bound_factor * B + half a step of the candidate's dtype at |r| + bound_factor * B,
     * where B is the reference's first-order bound on the error of any correct evaluation in
     * the formats below (attest_ref_bounds). */
    double bound_factor;
    attest_bound_model model;  /* the arithmetic a correct kernel may use */
} attest_tolerance;

/* Coordinates of one element: up to 4 indices with the tensor's dimension names. */
typedef struct attest_coord {
    int32_t rank;
    int64_t index[4];
} attest_coord;

/* Writes an element's coordinates in the kernel's terms into buf: "logits[row 0, t 297]",
 * "out_bf16[request 1, query 0, head 3, dim 77]", "lse[request 1, query 0, head 3]"; any other
 * output as "name[i, j, ...]", and "name (no element)" for rank 0. The one naming of output
 * dimensions: the judge's record message and every report use it. */
void attest_coord_string(attest_kernel kernel, const char *output, const attest_coord *co,
                         char *buf, size_t cap);

typedef struct attest_tensor_metrics {
    char output[32];            /* tensor name, e.g. "logits", "out_bf16", "lse" */
    uint64_t count;             /* elements compared (masked-out "unspecified" ones excluded) */
    /* nonfinite gate */
    uint64_t ref_posinf, ref_neginf, ref_nan;
    uint64_t cand_posinf, cand_neginf, cand_nan;
    uint64_t nonfinite_mismatches;
    attest_coord first_nonfinite_mismatch;
    /* element gate */
    uint64_t element_failures;
    double element_fail_fraction;
    attest_coord worst;         /* the finite pair with the largest error / tolerance ratio */
    double worst_ref, worst_cand;
    double worst_ratio;         /* its |c-r| / tolerance (> 1: it failed); 0 when none */
    double worst_tol;           /* its tolerance */
    /* global */
    double max_abs, max_rel;    /* over finite pairs */
    double cos_diff, nmse;
    double max_code_distance;   /* in steps of the candidate's dtype */
    uint64_t unwritten;
    double topk_recall;         /* 1.0 when not applicable */
    int32_t topk_checked;       /* 1 when the top-k gate ran */
    int32_t vacuous;            /* 1 when the comparison could not show anything (see header) */
    uint32_t failed_gates;      /* ATTEST_GATE_BIT mask */
    uint64_t finite_pairs;      /* compared pairs with both sides finite (element-gate base) */
    double atol_effective;      /* the atol the element gate used (see atol_ref_scale); with
                                 * bounds on, the largest per-element tolerance */
    int32_t topk_worst_row;     /* row with the lowest recall (-1 when not run) */
} attest_tensor_metrics;

/* Compares a candidate tensor (dtype F32 or BF16; its bits are read, never converted lossy) with
 * reference doubles. `compare_mask` (NULL = all) marks elements to compare; `shape`/`rank` give
 * coordinates (NULL/0: flat). `poison_bits` is the output poison pattern (for the unwritten gate;
 * bf16 compares its low 16 bits). Overwrites *m except m->output, which the caller names; the
 * top-k fields are left "not run". Returns ATTEST_ERR_INVALID_ARGUMENT on a bad dtype, shape or
 * tolerance; a mismatch is recorded in m->failed_gates, never returned. */
attest_status attest_compare_tensor(const double *ref, const void *cand, attest_dtype cand_dtype,
                                    size_t count, const int64_t *shape, int32_t rank,
                                    const uint8_t *compare_mask, uint32_t poison_bits,
                                    const attest_tolerance *tol, attest_tensor_metrics *m)
    ATTEST_MUST_CHECK;

/* attest_compare_tensor with computation-derived bounds: bound[i] (count doubles, from
 * attest_ref_bounds under tol->model) is element i's error bound B. With bound NULL or
 * tol->bound_factor < 0 it is attest_compare_tensor. With bounds on:
 *   element  passes when |c-r| <= attest_element_tolerance(tol, dtype, r, B);
 *   cosine   fails when cos_diff > max(cos_diff_max, sum T^2 / sum(r^2 + c^2)), T the element
 *            tolerances: a correct kernel whose every element sits at its bound cannot fail it;
 *   nmse     likewise with sum T^2 / sum r^2;
 *   code     counts only pairs outside their tolerance;
 *   vacuous  when no compared finite reference exceeds its own tolerance (an all-zero output
 *            would pass). */
attest_status attest_compare_tensor_bounded(const double *ref, const double *bound, const void *cand,
                                            attest_dtype cand_dtype, size_t count,
                                            const int64_t *shape, int32_t rank,
                                            const uint8_t *compare_mask, uint32_t poison_bits,
                                            const attest_tolerance *tol, attest_tensor_metrics *m)
    ATTEST_MUST_CHECK;

/* The element tolerance of a reference value r with error bound b under bounds on:
 * bound_factor * b plus half a step of `dtype` (F32 or BF16) at |r| + bound_factor * b, the
 * final rounding of a value that may lie anywhere within the bound. */
double attest_element_tolerance(const attest_tolerance *tol, attest_dtype dtype, double r, double b);

/* Half a step of dtype (F32 or BF16; 0 for F64) at magnitude |x|: the most that rounding x to
 * nearest in that dtype can move it. */
double attest_rounding_error(attest_dtype dtype, double x);

/* Tie-aware top-k comparison of one row. ref_scores are the reference logits of the row (len
 * valid positions); cand_set / ref_set hold k logical positions each (-1 = empty slot). Scores of
 * both sets are recomputed from ref_scores; a candidate position not in ref_set still counts as a
 * hit when its score is within tie tolerance of the k-th reference score (>= kth - max(tie_atol,
 * tie_rtol*|kth|)) AND it stands in for a missed reference position that is itself a tie (score
 * <= kth + that tolerance): swapping a clearly-top position for a tie is still a miss. Writes
 * recall (hits / valid reference slots; 1.0 when both are empty, 0.0 when only the reference is)
 * and returns ATTEST_ERR_INVALID_ARGUMENT on a candidate position outside [0, len) or a duplicate
 * (the caller records that as a failure). */
attest_status attest_compare_topk_row(const double *ref_scores, int32_t len, const int32_t *cand_set,
                                      const int32_t *ref_set, int32_t k, double tie_atol,
                                      double tie_rtol, double *recall) ATTEST_MUST_CHECK;

/* Runs the top-k gate over `rows` rows of reference logits (row r at ref_logits + r*width, valid
 * length row_len[r]); cand_sets / ref_sets hold k positions per row. Sets m->topk_checked,
 * m->topk_recall (the lowest row recall), m->topk_worst_row and the TOPK bit of m->failed_gates
 * when a row's recall is below tol->topk_min_recall or a candidate row is malformed (recall 0).
 * The tie band's absolute part is max(topk_tie_atol, 2 * m->atol_effective): run it after
 * attest_compare_tensor on the same logits, since two scores that may each be off by one element
 * tolerance may swap. Does nothing when tol->topk_min_recall < 0. Errors only on bad arguments. */
attest_status attest_compare_topk(const double *ref_logits, int32_t rows, int32_t width,
                                  const int32_t *row_len, const int32_t *cand_sets,
                                  const int32_t *ref_sets, int32_t k, const attest_tolerance *tol,
                                  attest_tensor_metrics *m) ATTEST_MUST_CHECK;

/* attest_compare_topk with per-element bounds (bound: rows x width, as for
 * attest_compare_tensor_bounded; NULL or bounds off: attest_compare_topk). A candidate-only
 * position p is a tie when r_p + T_p >= kth - T_kth and a reference-only position q when
 * r_q - T_q <= kth + T_kth (T the element tolerances): each score may be off by its own
 * tolerance, so such pairs may legitimately swap. The scalar band of attest_compare_topk
 * (without its 2 * atol_effective part) still applies as a floor. */
attest_status attest_compare_topk_bounded(const double *ref_logits, const double *bound,
                                          int32_t rows, int32_t width, const int32_t *row_len,
                                          const int32_t *cand_sets, const int32_t *ref_sets,
                                          int32_t k, const attest_tolerance *tol,
                                          attest_tensor_metrics *m) ATTEST_MUST_CHECK;

/* The indexer's compare mask for logits [b*next_n, max_len] of an indexer case: byte
 * r*max_len + t is 1 when t is below row r's valid length under the MTP causal rule (slot j of a
 * request of length L sees t <= L - next_n + j; clamped to [0, max_len]) and 0 past it, where
 * what a kernel writes depends on its masking convention. `mask` holds b*next_n*max_len bytes.
 * Returns ATTEST_ERR_INVALID_ARGUMENT for a case that is not an indexer case or lacks
 * context_lens. */
attest_status attest_indexer_valid_mask(const attest_case *c, uint8_t *mask) ATTEST_MUST_CHECK;

/* The indexer's top-k gate on logits [b*next_n, max_len] (`ref`: reference or stored values,
 * `cand`: candidate float32): selects params.topk positions of each row's valid region (see
 * attest_indexer_valid_mask) from the candidate's logits and from the reference's alike (the
 * largest first, ties to the lower position, NaN never, -inf below every finite score but not
 * excluded, -1 padding; ATTEST_TOPK_SHORT_IDENTITY gives 0..len-1 when len <= k) and runs
 * attest_compare_topk on the two sets, so run it after attest_compare_tensor on the same logits.
 * Returns ATTEST_ERR_INVALID_ARGUMENT for a case that is not an indexer case or lacks
 * context_lens, ATTEST_ERR_OUT_OF_MEMORY; a low recall is recorded in *m, never returned. */
attest_status attest_indexer_topk_gate(const attest_case *c, const double *ref, const float *cand,
                                       const attest_tolerance *tol, attest_tensor_metrics *m)
    ATTEST_MUST_CHECK;

/* attest_indexer_topk_gate with the logits' element bounds (NULL: without). */
attest_status attest_indexer_topk_gate_bounded(const attest_case *c, const double *ref,
                                               const double *bound, const float *cand,
                                               const attest_tolerance *tol,
                                               attest_tensor_metrics *m) ATTEST_MUST_CHECK;

/* DeepGEMM's lone metric, kept to show what it misses: 1 - 2*sum(rc)/sum(r^2+c^2) in double over
 * the pairs where both are finite; 0 when that denominator is 0. */
double attest_cosine_difference(const double *ref, const double *cand, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_COMPARE_H */
