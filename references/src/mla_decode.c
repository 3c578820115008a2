/* attest references: sparse MLA decode for mla-v4 and mla-v32 (docs/kernels.md section 6).
 *
 * For each query the valid keys of both scopes (main, and the optional extra one) are gathered
 * into one list, so they share ONE softmax; each key is dequantized once and reused by every
 * head. Only the selected slots are ever read: a NaN in an unselected slot cannot matter.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/bound.h"
#include "attest/isa.h"
#include "attest/layout.h"
#include "attest/numerics.h"
#include "attest/reference.h"
#include "ref_internal.h"

/* One scope: a pool of pages and the indices into it. */
typedef struct mla_scope {
    const char *name;           /* "indices" or "extra_indices", for messages */
    attest_layout layout;
    const uint8_t *pool;
    int64_t num_tokens;         /* num_pages * page_size: valid indices are [-1, num_tokens) */
    const int32_t *indices;     /* [b, s_q, topk] */
    int32_t topk;
    const int32_t *topk_length; /* [b] or NULL */
    const float *truth;         /* [num_tokens, k_dim], true mode only */
} mla_scope;

typedef struct mla_inputs {
    const attest_mla_params *p;
    const uint16_t *q;
    const float *sink; /* [h_q] or NULL */
    mla_scope scope[2];
    int num_scopes;
} mla_inputs;

static attest_status mla_load_scope(const attest_case *c, attest_ref_mode mode, mla_scope *s,
                                    const char *prefix, int32_t page_size, int64_t page_stride,
                                    int32_t num_pages, int32_t topk, int has_topk_length)
{
    const attest_mla_params *p = &c->params.mla;
    char name[40];
    s->name = prefix[0] ? "extra_indices" : "indices";
    ATTEST_RETURN_IF(page_size <= 0 || num_pages <= 0 || topk < 0 || page_stride < 0,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "mla reference: %spage_size and %snum_pages must be positive, %stopk and "
                     "%spage_stride >= 0",
                     prefix, prefix, prefix, prefix);
    /* page_stride 0 asks the layout for its default, as attest_case_define_tensors does. */
    ATTEST_FORWARD(attest_layout_make(p->layout, (uint32_t)page_size, (uint64_t)page_stride,
                                      &s->layout));
    size_t n_pool, n_idx, n_tok;
    ATTEST_FORWARD(attest_ref_count_(&n_pool, "cache", 2, (int64_t)num_pages,
                                     (int64_t)s->layout.page_stride));
    ATTEST_FORWARD(attest_ref_count_(&n_tok, "cache tokens", 2, (int64_t)num_pages,
                                     (int64_t)page_size));
    ATTEST_FORWARD(attest_ref_count_(&n_idx, s->name, 3, (int64_t)p->b, (int64_t)p->s_q,
                                     (int64_t)topk));
    s->num_tokens = (int64_t)n_tok;
    s->topk = topk;
    const void *d;
    snprintf(name, sizeof name, "%scache_bytes", prefix);
    ATTEST_FORWARD(attest_ref_tensor_(c, name, ATTEST_DTYPE_U8, n_pool, &d));
    s->pool = d;
    ATTEST_FORWARD(attest_ref_tensor_(c, s->name, ATTEST_DTYPE_I32, n_idx, &d));
    s->indices = d;
    s->topk_length = NULL;
    if (has_topk_length) {
        snprintf(name, sizeof name, "%stopk_length", prefix);
        ATTEST_FORWARD(attest_ref_tensor_(c, name, ATTEST_DTYPE_I32, (size_t)p->b, &d));
        s->topk_length = d;
    }
    s->truth = NULL;
    if (mode == ATTEST_REF_TRUE) {
        size_t n_truth;
        snprintf(name, sizeof name, "%skv_true", prefix);
        ATTEST_FORWARD(attest_ref_count_(&n_truth, name, 2, (int64_t)n_tok,
                                         (int64_t)s->layout.k_dim));
        ATTEST_FORWARD(attest_ref_tensor_(c, name, ATTEST_DTYPE_F32, n_truth, &d));
        s->truth = d;
    }
    return ATTEST_OK;
}

static attest_status mla_load(const attest_case *c, attest_ref_mode mode, mla_inputs *in)
{
    const attest_mla_params *p = &c->params.mla;
    in->p = p;
    ATTEST_RETURN_IF(p->layout != ATTEST_LAYOUT_MLA_V4 && p->layout != ATTEST_LAYOUT_MLA_V32,
                     ATTEST_ERR_INVALID_ARGUMENT, "mla reference: layout %d is not mla-v4/mla-v32",
                     (int)p->layout);
    ATTEST_RETURN_IF(p->b <= 0 || p->s_q <= 0 || p->h_q <= 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "mla reference: b, s_q, h_q must be positive");
    ATTEST_RETURN_IF(p->lse_convention != ATTEST_LSE_EXCLUDES_SINK &&
                         p->lse_convention != ATTEST_LSE_INCLUDES_SINK,
                     ATTEST_ERR_INVALID_ARGUMENT, "mla reference: unknown lse_convention %d",
                     (int)p->lse_convention);
    ATTEST_FORWARD(mla_load_scope(c, mode, &in->scope[0], "", p->page_size, p->page_stride,
                                  p->num_pages, p->topk, p->has_topk_length));
    in->num_scopes = 1;
    if (p->has_extra) {
        ATTEST_FORWARD(mla_load_scope(c, mode, &in->scope[1], "extra_", p->extra_page_size,
                                      p->extra_page_stride, p->extra_num_pages, p->extra_topk,
                                      p->has_extra_topk_length));
        in->num_scopes = 2;
    }
    const attest_layout *lay = &in->scope[0].layout;
    ATTEST_RETURN_IF(p->d_qk != (int32_t)lay->k_dim || p->d_v != (int32_t)lay->v_dim,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "mla reference: d_qk = %d, d_v = %d, layout %s needs %u and %u", p->d_qk,
                     p->d_v, attest_layout_name(p->layout), lay->k_dim, lay->v_dim);
    size_t n_q;
    ATTEST_FORWARD(attest_ref_count_(&n_q, "q_bf16", 4, (int64_t)p->b, (int64_t)p->s_q,
                                     (int64_t)p->h_q, (int64_t)p->d_qk));
    const void *d;
    ATTEST_FORWARD(attest_ref_tensor_(c, "q_bf16", ATTEST_DTYPE_BF16, n_q, &d));
    in->q = d;
    in->sink = NULL;
    if (p->has_sink) {
        ATTEST_FORWARD(attest_ref_tensor_(c, "attn_sink", ATTEST_DTYPE_F32, (size_t)p->h_q, &d));
        in->sink = d;
    }
    return ATTEST_OK;
}

/* Dequantizes the valid keys of query (b, s) from one scope into keys[*n ..], k_dim each.
 * Slots at or past topk_length are invalid whatever they hold and are not even range-checked. */
static attest_status mla_gather(const mla_inputs *in, const mla_scope *s, int32_t b, int32_t sq,
                                double *keys, int32_t *n)
{
    const attest_mla_params *p = in->p;
    const uint32_t kd = s->layout.k_dim;
    int64_t limit = s->topk;
    if (s->topk_length != NULL) {
        int64_t tl = s->topk_length[b];
        limit = tl < 0 ? 0 : (tl < limit ? tl : limit);
    }
    const int32_t *row = s->indices + ((size_t)b * (size_t)p->s_q + (size_t)sq) * (size_t)s->topk;
    for (int64_t k = 0; k < limit; k++) {
        int32_t idx = row[k];
        if (idx == -1) { /* only exactly -1 is invalid */
            if (p->invalid_index == ATTEST_INVALID_ENDS_LIST) break;
            continue;
        }
        ATTEST_RETURN_IF(idx < -1 || idx >= s->num_tokens, ATTEST_ERR_INVALID_ARGUMENT,
                         "mla reference: %s[%d][%d][%lld] = %d outside [-1, %lld)", s->name, b,
                         sq, (long long)k, idx, (long long)s->num_tokens);
        double *dst = keys + (size_t)(*n) * kd;
        if (s->truth != NULL) {
            const float *src = s->truth + (size_t)idx * kd;
            for (uint32_t d = 0; d < kd; d++) dst[d] = (double)src[d];
        } else {
            uint32_t slot;
            const uint8_t *page = attest_pool_token_page(&s->layout, s->pool, (uint64_t)idx, &slot);
            attest_layout_decode_token(&s->layout, page, slot, dst);
        }
        (*n)++;
    }
    return ATTEST_OK;
}

/* logaddexp in double, with the infinities handled without inf - inf. */
static double log_add_exp(double a, double b)
{
    if (isnan(a) || isnan(b)) return NAN;
    double m = a > b ? a : b;
    if (isinf(m)) return m; /* +inf dominates; both -inf gives -inf */
    return m + log(exp(a - m) + exp(b - m));
}

/* Where attest_ref_bounds wants the bounds of one head: the model of each output and the
 * destinations (NULL: no bounds). */
typedef struct mla_bound_out {
    const attest_bound_model *out_model, *lse_model;
    double *out_bound; /* [d_v] of this head */
    double *lse_bound;
    double *abs_v;     /* [d_v] scratch */
    double *rho;       /* [keys] scratch: each weight's perturbation under out's model */
    const double *vmax; /* [d_v] max_k |V_k| of the query's keys (the same for every head) */
} mla_bound_out;

static double gamma_n(double n, double u)
{
    const double nu = n * u;
    return nu < 0.5 ? nu / (1.0 - nu) : INFINITY;
}

/* Relative perturbation bound of one softmax weight exp(a - m) under model mo: the score's own
 * error da (absolute, from its dot product), the rounding of the exponent's argument (it is
 * formed from a, the running maxima and the merge of split-KV partials: a few roundings of
 * numbers up to |a| + amax + log(n + 1)), the exp itself and the rounding of P to its format. */
static double weight_exponent_error(const attest_bound_model *mo, double a, double da, double amax,
                                    double n)
{
    const double u = mo->u_accum;
    return da + 6.0 * u * (fabs(a) + amax + log(n + 1.0)) + 16.0 * u + mo->u_probs;
}

static double weight_perturbation(const attest_bound_model *mo, double a, double da, double amax,
                                  double n)
{
    return expm1(weight_exponent_error(mo, a, da, amax, n));
}

/* The bounds of one head (docs/policy.md, "Error bounds", sparse MLA decode). keys, scores,
 * absdots and e (exp(score - m)) describe the n valid keys; out and lse are the exact results;
 * sum is the sum of e and sink_w exp(sink - m) (0 without a sink). */
ATTEST_ISA_BODY void mla_head_bounds_body(const mla_inputs *in, const double *keys,
                                          const double *scores, const double *absdots,
                                          const double *e, int32_t n, int32_t h, double sum,
                                          double sink_w, const double *out, double lse,
                                          const mla_bound_out *bo)
{
    const attest_mla_params *p = in->p;
    const int32_t dqk = p->d_qk, dv = p->d_v;
    const double sink = in->sink != NULL ? (double)in->sink[h] : -INFINITY;
    const int sink_in_lse = in->sink != NULL && p->lse_convention == ATTEST_LSE_INCLUDES_SINK;
    int finite = isfinite(lse) && isfinite(sum) && sum > 0;
    for (int32_t d = 0; d < dv && finite; d++) finite = isfinite(out[d]);
    if (!finite || n == 0) { /* non-finite results are judged by the nonfinite gate alone */
        for (int32_t d = 0; d < dv; d++) bo->out_bound[d] = 0.0;
        *bo->lse_bound = 0.0;
        return;
    }
    double amax = isfinite(sink) ? fabs(sink) : 0.0;
    for (int32_t k = 0; k < n; k++) amax = ref_max_skip_nan(amax, fabs(scores[k]));
    const double sm = fabs((double)p->sm_scale);
    const double nterms = (double)n + 1.0;
    const double denom = sum + sink_w; /* out's normalizer, the sink included */
    const double *vmax = bo->vmax;

    /* out: sum_k w_k rho_k |V_k - out| / (1 - rho_max) from the weights, plus the accumulation
     * of sum p V and sum p (gamma_{n+8}), the values' own rounding and the final scaling. */
    const attest_bound_model *mo = bo->out_model;
    const double da_c = gamma_n((double)dqk + 4.0, mo->u_accum) + mo->u_kv * (1.0 + mo->u_accum);
    double rho_max = 0.0;
    for (int32_t k = 0; k < n; k++) {
        bo->rho[k] = weight_perturbation(mo, scores[k], da_c * sm * absdots[k], amax, nterms);
        rho_max = ref_max_skip_nan(rho_max, bo->rho[k]);
    }
    const double rho_sink =
        sink_w > 0 ? weight_perturbation(mo, sink, 0.0, amax, nterms) : 0.0;
    rho_max = ref_max_skip_nan(rho_max, rho_sink);
    const double g_acc = gamma_n(nterms + 8.0, mo->u_accum);
    if (!(rho_max < 0.5)) {
        /* The weights mean nothing in this format: only |out| <= max |V| is left. */
        for (int32_t d = 0; d < dv; d++)
            bo->out_bound[d] = (vmax[d] + fabs(out[d])) * (1.0 + g_acc);
    } else {
        for (int32_t d = 0; d < dv; d++) bo->out_bound[d] = 0.0;
        double *sum_v = bo->out_bound; /* reused: first sum_k w_k rho_k |V - out| ... */
        double *abs_v = bo->abs_v;
        for (int32_t d = 0; d < dv; d++) abs_v[d] = 0.0;
        for (int32_t k = 0; k < n; k++) {
            const double w = e[k] / denom;
            if (w == 0.0) continue;
            const double rho = bo->rho[k];
            const double *vv = keys + (size_t)k * (size_t)dqk;
            for (int32_t d = 0; d < dv; d++) {
                sum_v[d] += w * rho * fabs(vv[d] - out[d]);
                abs_v[d] += w * fabs(vv[d]);
            }
        }
        const double w_sink = sink_w / denom;
        const double amp = (1.0 + rho_max) / (1.0 - rho_max);
        /* u_probs appears twice: in rho, for a kernel that normalizes by the sum of the rounded
         * P (numerator and denominator perturbed alike, hence |V - out|), and here, for one that
         * multiplies V by the rounded P but divides by the sum of P before rounding (FlashMLA's
         * design): then the rounding moves the numerator alone, by up to u_probs sum w |V|.
         * fixtures/false-alarms/recorded/mla-decode-e4c00cc00ba7deb0.h5 is such a case. */
        const double u_num = g_acc + mo->u_kv + mo->u_probs;
        for (int32_t d = 0; d < dv; d++) {
            double e1 = (sum_v[d] + w_sink * rho_sink * fabs(out[d])) / (1.0 - rho_max);
            double e2 = (u_num * abs_v[d] + (g_acc + 4.0 * mo->u_accum) * fabs(out[d])) * amp;
            bo->out_bound[d] = e1 + e2;
        }
    }
    /* Underflow: a normalized weight below float32's normal range (2^-126) may come out as 0 or
     * as a subnormal with few bits (flush-to-zero, or 1 / (1 + exp(sink - lse)) overflowing when
     * a sink dominates), so each of the n + 1 weights may be off by 2^-126 absolute. */
    for (int32_t d = 0; d < dv; d++) bo->out_bound[d] += (nterms + 2.0) * 0x1p-126 * vmax[d];
    /* A value dequantized below its format's normal range loses up to half a subnormal step
     * absolute (bf16: 2^-134), which u_kv's relative term misses; the weights sum to at most 1
     * and their perturbation scales it by at most 3 (rho_max < 0.5). A correct bf16 kernel gave
     * -0 for a reference of -4.67e-41 (fixtures/false-alarms/mla-decode-bf16-subnormal-v.h5). */
    const double kv_abs = 3.0 * attest_format_subnormal_half_step(mo->u_kv);
    for (int32_t d = 0; d < dv; d++) bo->out_bound[d] += kv_abs;

    /* lse = m + log(S): the weights' average perturbation moves log S by at most
     * -log(1 - rho_avg - gamma); the logarithm, the m + log S addition and a log2/ln
     * conversion round numbers up to amax, |log S| and |lse|. */
    const attest_bound_model *ml = bo->lse_model;
    const double dl_c = gamma_n((double)dqk + 4.0, ml->u_accum) + ml->u_kv * (1.0 + ml->u_accum);
    const double lse_denom = sink_in_lse ? denom : sum;
    double rho_avg = 0.0, theta_max = 0.0;
    for (int32_t k = 0; k < n; k++) {
        const double w = e[k] / lse_denom;
        const double th = weight_exponent_error(ml, scores[k], dl_c * sm * absdots[k], amax, nterms);
        rho_avg += w * expm1(th);
        theta_max = ref_max_skip_nan(theta_max, th);
    }
    if (sink_in_lse && sink_w > 0) {
        const double th = weight_exponent_error(ml, sink, 0.0, amax, nterms);
        rho_avg += sink_w / lse_denom * expm1(th);
        theta_max = ref_max_skip_nan(theta_max, th);
    }
    const double g_lse = gamma_n(nterms + 8.0, ml->u_accum);
    const double shift = rho_avg + g_lse;
    /* log S moves by the log of a weighted mean of the weights' factors exp(theta_k): never more
     * than the largest theta_k, which is the tighter bound when the weights are far off. */
    double dlog = theta_max + g_lse / (1.0 - fmin(g_lse, 0.5));
    if (shift < 0.9) dlog = fmin(dlog, -log1p(-shift));
    const double log_s = log(lse_denom);
    *bo->lse_bound = dlog + 3.0 * ml->u_accum * (amax + fabs(log_s) + fabs(lse));
}
ATTEST_ISA_VARIANTS(mla_head_bounds, (const mla_inputs *in, const double *keys,
                                      const double *scores, const double *absdots, const double *e,
                                      int32_t n, int32_t h, double sum, double sink_w,
                                      const double *out, double lse, const mla_bound_out *bo),
                    (in, keys, scores, absdots, e, n, h, sum, sink_w, out, lse, bo))

/* The reference's speed comes from its loop order, not from a different arithmetic: every dot
 * product, every softmax sum and every sum of weighted values is still one double accumulator
 * per output, summed in key (or dim) order, so the results are bit for bit those of the
 * plain per-head loops. What changes is which loop is innermost: heads and keys are processed in
 * blocks, so the inner loops run over independent accumulators (keys of a block for the scores,
 * dims for the values), which the compiler vectorizes without reassociating anything, and a
 * block of keys is reused by every head while it is in cache. -ffp-contract=off (CMakeLists.txt)
 * keeps a multiply-add from fusing into an FMA on any target. */
#define MLA_KEY_BLOCK 16   /* keys per score block: 2 x 16 accumulators stay in registers */
#define MLA_HEAD_GROUP 16  /* heads whose scores are held at once (bounds the scratch memory) */
#define MLA_VALUE_BLOCK 8  /* keys per value-sum block, reused by every head of a group */

/* Eight doubles as one value (GCC/Clang vector extensions): each lane is its own accumulator and
 * every operation is the lane-wise IEEE one, so a vector sum is exactly the scalar sums side by
 * side. The compiler maps it onto whatever the target has (two SSE2 registers per half, one
 * AVX-512 register). */
typedef double v8d __attribute__((vector_size(64), aligned(8)));
typedef int64_t v8i __attribute__((vector_size(64), aligned(8)));

/* |x| lane by lane: the sign bit cleared (a macro: a function returning a v8d would warn about
 * its ABI where AVX-512 is off). */
#define V8D_ABS(x) ((v8d)((v8i)(x) & ((v8i){0} + INT64_MAX)))

/* dot[g] (and ab[g] = sum_d |q_gd K_jd| when with_abs) of nh heads (a compile-time count at
 * every call, so the loops unroll into registers) against one key block, 16 keys as two
 * vectors: each loaded key value serves nh heads. */
static inline __attribute__((always_inline)) void
mla_score_block(const double *q, int32_t dqk, const double *blk, int nh, int with_abs,
                v8d dot[][2], v8d ab[][2])
{
    for (int g = 0; g < nh; g++) dot[g][0] = dot[g][1] = ab[g][0] = ab[g][1] = (v8d){0};
    for (int32_t d = 0; d < dqk; d++) {
        const v8d r0 = *(const v8d *)(blk + (size_t)d * MLA_KEY_BLOCK);
        const v8d r1 = *(const v8d *)(blk + (size_t)d * MLA_KEY_BLOCK + 8);
        for (int g = 0; g < nh; g++) {
            const double qd = q[(size_t)g * (size_t)dqk + (size_t)d];
            const v8d t0 = qd * r0, t1 = qd * r1;
            dot[g][0] += t0;
            dot[g][1] += t1;
            if (with_abs) {
                ab[g][0] += V8D_ABS(t0);
                ab[g][1] += V8D_ABS(t1);
            }
        }
    }
}

/* Keys kt are blocked dim-major: block kb / MLA_KEY_BLOCK holds [d_qk][MLA_KEY_BLOCK] (zero
 * past n), so one block is contiguous. Fills scores[h * ls + k] = sm * q_h . K_k and, when
 * absdots is not NULL, sum_d |q_hd K_kd|. */
ATTEST_ISA_BODY void mla_scores_body(const double *q, int32_t heads, int32_t dqk, const double *kt,
                                     int32_t n, double sm, double *scores, double *absdots,
                                     size_t ls)
{
    enum { NH = 4 };
    for (size_t kb = 0; kb < (size_t)n; kb += MLA_KEY_BLOCK) {
        const size_t nb = (size_t)n - kb < MLA_KEY_BLOCK ? (size_t)n - kb : MLA_KEY_BLOCK;
        const double *blk = kt + kb * (size_t)dqk;
        for (int32_t h = 0; h < heads;) {
            v8d dot[NH][2], ab[NH][2];
            const double *qh = q + (size_t)h * (size_t)dqk;
            int g_n = heads - h >= NH ? NH : 1;
            if (g_n == NH && absdots != NULL) mla_score_block(qh, dqk, blk, NH, 1, dot, ab);
            else if (g_n == NH) mla_score_block(qh, dqk, blk, NH, 0, dot, ab);
            else if (absdots != NULL) mla_score_block(qh, dqk, blk, 1, 1, dot, ab);
            else mla_score_block(qh, dqk, blk, 1, 0, dot, ab);
            for (int g = 0; g < g_n; g++)
                for (size_t j = 0; j < nb; j++) {
                    scores[(size_t)(h + g) * ls + kb + j] = sm * dot[g][j / 8][j % 8];
                    if (absdots != NULL) absdots[(size_t)(h + g) * ls + kb + j] = ab[g][j / 8][j % 8];
                }
            h += g_n;
        }
    }
}
ATTEST_ISA_VARIANTS(mla_scores, (const double *q, int32_t heads, int32_t dqk, const double *kt,
                                 int32_t n, double sm, double *scores, double *absdots, size_t ls),
                    (q, heads, dqk, kt, n, sm, scores, absdots, ls))

/* o_g[d] += e_g[k] V_k[d] for keys k in [k0, k0 + MLA_VALUE_BLOCK) and nh (compile-time) heads:
 * each o element is loaded and stored once per block and each V load serves nh heads. */
static inline __attribute__((always_inline)) void
mla_value_block(const double *e, size_t ls, int nh, const double *vv, int32_t dqk, int32_t k0,
                int32_t dv, double *o)
{
    int32_t d = 0;
    for (; d + 8 <= dv; d += 8) {
        v8d acc[4];
        for (int g = 0; g < nh; g++) acc[g] = *(v8d *)(o + (size_t)g * (size_t)dv + (size_t)d);
        for (int k = 0; k < MLA_VALUE_BLOCK; k++) {
            const v8d v = *(const v8d *)(vv + (size_t)k * (size_t)dqk + (size_t)d);
            for (int g = 0; g < nh; g++) acc[g] += e[(size_t)g * ls + (size_t)(k0 + k)] * v;
        }
        for (int g = 0; g < nh; g++) *(v8d *)(o + (size_t)g * (size_t)dv + (size_t)d) = acc[g];
    }
    for (; d < dv; d++)
        for (int g = 0; g < nh; g++) {
            double acc = o[(size_t)g * (size_t)dv + (size_t)d];
            for (int k = 0; k < MLA_VALUE_BLOCK; k++)
                acc += e[(size_t)g * ls + (size_t)(k0 + k)] * vv[(size_t)k * (size_t)dqk + (size_t)d];
            o[(size_t)g * (size_t)dv + (size_t)d] = acc;
        }
}

/* out_g = sum_k e_g[k] V_k (V = the first d_v dims of K) for nh heads, out zeroed first; per
 * element the sum runs over k in order. */
ATTEST_ISA_BODY void mla_values_body(const double *e, size_t ls, int32_t nh, const double *keys,
                                     int32_t dqk, int32_t n, int32_t dv, double *out)
{
    enum { NH = 4 };
    for (size_t i = 0; i < (size_t)nh * (size_t)dv; i++) out[i] = 0.0;
    int32_t kb = 0;
    for (; kb + MLA_VALUE_BLOCK <= n; kb += MLA_VALUE_BLOCK) {
        const double *vv = keys + (size_t)kb * (size_t)dqk;
        int32_t g = 0;
        for (; g + NH <= nh; g += NH)
            mla_value_block(e + (size_t)g * ls, ls, NH, vv, dqk, kb, dv, out + (size_t)g * (size_t)dv);
        for (; g < nh; g++)
            mla_value_block(e + (size_t)g * ls, ls, 1, vv, dqk, kb, dv, out + (size_t)g * (size_t)dv);
    }
    for (int32_t g = 0; g < nh; g++) {
        double *o = out + (size_t)g * (size_t)dv;
        for (int32_t k = kb; k < n; k++) {
            const double ek = e[(size_t)g * ls + (size_t)k];
            const double *vv = keys + (size_t)k * (size_t)dqk;
            for (int32_t d = 0; d < dv; d++) o[d] += ek * vv[d];
        }
    }
}
ATTEST_ISA_VARIANTS(mla_values, (const double *e, size_t ls, int32_t nh, const double *keys,
                                 int32_t dqk, int32_t n, int32_t dv, double *out),
                    (e, ls, nh, keys, dqk, n, dv, out))

/* The query's scratch: its keys twice (token-major for the values, dim-major for the scores),
 * the decoded q of a group of heads and per-head score rows. */
typedef struct mla_scratch {
    double *keys;    /* [max_keys][d_qk] */
    double *kt;      /* [ld / MLA_KEY_BLOCK][d_qk][MLA_KEY_BLOCK] */
    size_t ld;       /* max_keys rounded up to MLA_KEY_BLOCK */
    double *q;       /* [MLA_HEAD_GROUP][d_qk] */
    double *scores;  /* [MLA_HEAD_GROUP][ls] */
    double *absdots; /* [MLA_HEAD_GROUP][ls] */
    double *e;       /* [MLA_HEAD_GROUP][ls] exp(score - m) */
    double *rho;     /* [ls] */
    double *abs_v;   /* [d_v] */
    double *vmax;    /* [d_v] */
    size_t ls;
    double *owned;   /* a block too large to keep, freed by mla_scratch_done */
} mla_scratch;

/* The scratch lives in one block per thread that is kept from call to call and only grows: a
 * production-shape call needs megabytes, which malloc would map and unmap (and the kernel zero)
 * on every call, a fifth of the call's time; a fuzz target calls the reference once per input.
 * The block is reachable from the thread's own variable until the thread ends; a call that
 * needs more than MLA_SCRATCH_KEEP bytes gets a block of its own, freed when it returns. */
#define MLA_SCRATCH_KEEP (64u << 20)
static _Thread_local struct {
    double *block;
    size_t cap; /* doubles */
} mla_scratch_cache;

static attest_status mla_scratch_take(mla_scratch *s, int64_t max_keys, int32_t dqk, int32_t dv)
{
    memset(s, 0, sizeof *s);
    size_t n_keys, n_kt, n_rows;
    s->ls = (size_t)(max_keys ? max_keys : 1);
    s->ld = (s->ls + MLA_KEY_BLOCK - 1) / MLA_KEY_BLOCK * MLA_KEY_BLOCK;
    ATTEST_FORWARD(attest_ref_count_(&n_keys, "gathered keys", 2, (int64_t)s->ls, (int64_t)dqk));
    ATTEST_FORWARD(attest_ref_count_(&n_kt, "gathered keys", 2, (int64_t)s->ld, (int64_t)dqk));
    ATTEST_FORWARD(attest_ref_count_(&n_rows, "score rows", 2, (int64_t)MLA_HEAD_GROUP,
                                     (int64_t)s->ls));
    const size_t dvs = (size_t)(dv > 0 ? dv : 1);
    const size_t need = n_keys + n_kt + (size_t)MLA_HEAD_GROUP * (size_t)dqk + 3 * n_rows +
                        s->ls + 2 * dvs;
    double *at;
    int fresh = 0; /* a new or grown block: kt's padding lanes are zeroed once */
    if (need > MLA_SCRATCH_KEEP / sizeof(double)) {
        at = s->owned = malloc(need * sizeof *at);
        ATTEST_RETURN_IF(at == NULL, ATTEST_ERR_OUT_OF_MEMORY, "mla reference: out of memory");
        fresh = 1;
    } else {
        if (need > mla_scratch_cache.cap) {
            double *grown = realloc(mla_scratch_cache.block, need * sizeof *grown);
            ATTEST_RETURN_IF(grown == NULL, ATTEST_ERR_OUT_OF_MEMORY,
                             "mla reference: out of memory");
            mla_scratch_cache.block = grown;
            mla_scratch_cache.cap = need;
            fresh = 1;
        }
        at = mla_scratch_cache.block;
    }
    /* kt first, at the block's start whatever the shape: its lanes past a query's keys are
     * never stored (mla_transpose_keys), so they hold zeros or key values of an earlier query or
     * call (dequantized or float32 values: normal doubles, infinities or NaN, no operand that is
     * slow to multiply), never the heap's leftovers or another array's values. */
    s->kt = at, at += n_kt;
    if (fresh) memset(s->kt, 0, n_kt * sizeof *s->kt);
    s->keys = at, at += n_keys;
    s->q = at, at += (size_t)MLA_HEAD_GROUP * (size_t)dqk;
    s->scores = at, at += n_rows;
    s->absdots = at, at += n_rows;
    s->e = at, at += n_rows;
    s->rho = at, at += s->ls;
    s->abs_v = at, at += dvs;
    s->vmax = at;
    return ATTEST_OK;
}

static void mla_scratch_done(mla_scratch *s) { free(s->owned); }

/* keys [n][d_qk] into kt's dim-major blocks. Written a block row (16 lanes, 128 bytes) at a
 * time: walking key by key stored every element into another of the block's d_qk lines (64 KB,
 * more than L1), a third of a small decode case's reference time. The lanes past n are left as
 * they are: mla_score_block computes every lane on its own (lane-wise IEEE operations) and only
 * the n real ones are stored, so what they hold changes no result. Zeroing them was a memset
 * per dim (d_qk per query, most of a block when n is small: 50 KB for 5 keys), the reference's
 * largest memset; they hold zeros (mla_scratch_take) or the keys of an earlier query. */
static void mla_transpose_keys(const double *keys, size_t n, int32_t dqk, double *kt)
{
    for (size_t kb = 0; kb < n; kb += MLA_KEY_BLOCK) {
        const size_t nb = n - kb < MLA_KEY_BLOCK ? n - kb : MLA_KEY_BLOCK;
        const double *src = keys + kb * (size_t)dqk;
        double *blk = kt + kb * (size_t)dqk;
        for (int32_t d = 0; d < dqk; d++) {
            double *row = blk + (size_t)d * MLA_KEY_BLOCK;
            for (size_t j = 0; j < nb; j++) row[j] = src[j * (size_t)dqk + (size_t)d];
        }
    }
}

/* The declared LSE of a lonely query (no valid key; out = 0). */
static double mla_lonely_lse(const mla_inputs *in, int32_t h)
{
    switch (in->p->lonely_lse) {
    case ATTEST_LONELY_LSE_NEG_INF: return -INFINITY;
    case ATTEST_LONELY_LSE_SINK: return in->sink ? (double)in->sink[h] : -INFINITY;
    case ATTEST_LONELY_LSE_POS_INF:
    default: return INFINITY; /* FlashMLA */
    }
}

/* Heads [h0, h0 + nh) of query qi0's row over its n gathered keys: out[d_v] and lse of each
 * (and their bounds when bo). */
ATTEST_ISA_BODY void mla_head_group_body(const mla_inputs *in, mla_scratch *s, size_t qi0,
                                         int32_t h0, int32_t nh, int32_t n, double *out,
                                         double *lse, const attest_bound_model *out_model,
                                         const attest_bound_model *lse_model, double *out_bound,
                                         double *lse_bound)
{
    const attest_mla_params *p = in->p;
    const int32_t dqk = p->d_qk, dv = p->d_v;
    const size_t ls = s->ls;
    const int bounds = out_bound != NULL;
    for (int32_t g = 0; g < nh; g++) {
        const uint16_t *qb = in->q + (qi0 + (size_t)(h0 + g)) * (size_t)dqk;
        double *qg = s->q + (size_t)g * (size_t)dqk;
        for (int32_t d = 0; d < dqk; d++) qg[d] = ref_bf16_to_double(qb[d]);
    }
    if (n > 0)
        mla_scores(s->q, nh, dqk, s->kt, n, (double)p->sm_scale, s->scores,
                   bounds ? s->absdots : NULL, ls);
    /* Max-subtracted softmax. A NaN score (NaN in a selected key) is skipped by the max and then
     * propagates through exp into lse and out, on purpose: the kernel must show it too. */
    double m[MLA_HEAD_GROUP], sum[MLA_HEAD_GROUP];
    for (int32_t g = 0; g < nh; g++) {
        const double *sc = s->scores + (size_t)g * ls;
        double *e = s->e + (size_t)g * ls;
        double mg = -INFINITY, sg = 0.0;
        for (int32_t k = 0; k < n; k++)
            if (sc[k] > mg) mg = sc[k];
        for (int32_t k = 0; k < n; k++) {
            e[k] = exp(sc[k] - mg);
            sg += e[k];
        }
        m[g] = mg;
        sum[g] = sg;
    }
    if (n == 0)
        for (size_t i = 0; i < (size_t)nh * (size_t)dv; i++) out[(size_t)h0 * (size_t)dv + i] = 0.0;
    if (n > 0) mla_values(s->e, ls, nh, s->keys, dqk, n, dv, out + (size_t)h0 * (size_t)dv);
    for (int32_t g = 0; g < nh; g++) {
        const int32_t h = h0 + g;
        double *o = out + (size_t)h * (size_t)dv;
        mla_bound_out bo = {out_model, lse_model, bounds ? out_bound + (size_t)h * (size_t)dv : NULL,
                            bounds ? lse_bound + h : NULL, s->abs_v, s->rho, s->vmax};
        if (n == 0) {
            lse[h] = mla_lonely_lse(in, h);
            if (bounds) mla_head_bounds(in, s->keys, NULL, NULL, NULL, 0, h, 0, 0, o, lse[h], &bo);
            continue;
        }
        double l = m[g] + log(sum[g]);
        double scale = 1.0 / sum[g];
        double sink_w = 0.0;
        if (in->sink != NULL) {
            /* out *= 1 / (1 + exp(sink - lse)); written through sum + exp(sink - m) it cannot
             * overflow, and a +inf sink gives 0, a -inf sink gives 1. */
            double sk = (double)in->sink[h];
            sink_w = exp(sk - m[g]);
            scale = 1.0 / (sum[g] + sink_w);
            if (p->lse_convention == ATTEST_LSE_INCLUDES_SINK) l = log_add_exp(l, sk);
        }
        for (int32_t d = 0; d < dv; d++) o[d] *= scale;
        lse[h] = l;
        if (bounds)
            mla_head_bounds(in, s->keys, s->scores + (size_t)g * ls, s->absdots + (size_t)g * ls,
                            s->e + (size_t)g * ls, n, h, sum[g], sink_w, o, l, &bo);
    }
}
ATTEST_ISA_VARIANTS(mla_head_group, (const mla_inputs *in, mla_scratch *s, size_t qi0, int32_t h0,
                                     int32_t nh, int32_t n, double *out, double *lse,
                                     const attest_bound_model *out_model,
                                     const attest_bound_model *lse_model, double *out_bound,
                                     double *lse_bound),
                    (in, s, qi0, h0, nh, n, out, lse, out_model, lse_model, out_bound, lse_bound))

static attest_status mla_run(const attest_case *c, attest_ref_mode mode, double *out, double *lse,
                             const attest_bound_model *out_model,
                             const attest_bound_model *lse_model, double *out_bound,
                             double *lse_bound)
{
    ATTEST_RETURN_IF(c == NULL || out == NULL || lse == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "mla reference: NULL case or output");
    ATTEST_RETURN_IF(c->kernel != ATTEST_KERNEL_MLA_DECODE, ATTEST_ERR_INVALID_ARGUMENT,
                     "mla reference: the case is not an mla-decode case");
    ATTEST_RETURN_IF(mode != ATTEST_REF_SIMULATED && mode != ATTEST_REF_TRUE,
                     ATTEST_ERR_INVALID_ARGUMENT, "mla reference: unknown mode %d", (int)mode);
    mla_inputs in;
    ATTEST_FORWARD(mla_load(c, mode, &in));
    const attest_mla_params *p = in.p;
    int64_t max_keys = 0;
    for (int i = 0; i < in.num_scopes; i++) max_keys += in.scope[i].topk;
    mla_scratch s;
    ATTEST_FORWARD(mla_scratch_take(&s, max_keys, p->d_qk, p->d_v));
    const int32_t dqk = p->d_qk, dv = p->d_v;
    attest_status st = ATTEST_OK;
    for (int32_t b = 0; b < p->b && st == ATTEST_OK; b++) {
        for (int32_t sq = 0; sq < p->s_q && st == ATTEST_OK; sq++) {
            int32_t n = 0;
            for (int i = 0; i < in.num_scopes && st == ATTEST_OK; i++)
                st = mla_gather(&in, &in.scope[i], b, sq, s.keys, &n);
            if (st != ATTEST_OK) break;
            mla_transpose_keys(s.keys, (size_t)n, dqk, s.kt);
            if (out_bound != NULL) {
                /* max over keys of |v[d]|, key by key along the rows (the order of a max does
                 * not matter); a NaN is skipped, as fmax skips it. */
                for (int32_t d = 0; d < dv; d++) s.vmax[d] = 0.0;
                for (int32_t k = 0; k < n; k++) {
                    const double *row = s.keys + (size_t)k * (size_t)dqk;
                    for (int32_t d = 0; d < dv; d++) {
                        const double a = fabs(row[d]);
                        s.vmax[d] = ref_max_skip_nan(s.vmax[d], a);
                    }
                }
            }
            const size_t qi0 = ((size_t)b * (size_t)p->s_q + (size_t)sq) * (size_t)p->h_q;
            for (int32_t h0 = 0; h0 < p->h_q; h0 += MLA_HEAD_GROUP) {
                const int32_t nh = p->h_q - h0 < MLA_HEAD_GROUP ? p->h_q - h0 : MLA_HEAD_GROUP;
                mla_head_group(&in, &s, qi0, h0, nh, n, out + qi0 * (size_t)dv, lse + qi0,
                               out_model, lse_model,
                               out_bound ? out_bound + qi0 * (size_t)dv : NULL,
                               lse_bound ? lse_bound + qi0 : NULL);
            }
        }
    }
    mla_scratch_done(&s);
    return st;
}

attest_status attest_ref_mla_decode(const attest_case *c, attest_ref_mode mode, double *out,
                                    double *lse)
{
    return mla_run(c, mode, out, lse, NULL, NULL, NULL, NULL);
}

attest_status attest_ref_mla_bounds(const attest_case *c, const attest_bound_model *out_model,
                                    const attest_bound_model *lse_model, double *out, double *lse,
                                    double *out_bound, double *lse_bound)
{
    ATTEST_RETURN_IF(out_model == NULL || lse_model == NULL || out_bound == NULL ||
                         lse_bound == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "mla bounds: NULL model or output");
    return mla_run(c, ATTEST_REF_SIMULATED, out, lse, out_model, lse_model, out_bound, lse_bound);
}
