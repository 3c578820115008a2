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

/* The bounds of one head (docs/policy.md, "Error bounds", sparse MLA decode). keys, scores and
 * absdots describe the n valid keys; out and lse are the exact results; sum is the sum of
 * exp(score - m) and sink_w exp(sink - m) (0 without a sink). */
static void mla_head_bounds(const mla_inputs *in, const double *keys, const double *scores,
                            const double *absdots, int32_t n, int32_t h, double m, double sum,
                            double sink_w, const double *out, double lse, const mla_bound_out *bo)
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
    for (int32_t k = 0; k < n; k++) amax = fmax(amax, fabs(scores[k]));
    const double sm = fabs((double)p->sm_scale);
    const double nterms = (double)n + 1.0;
    const double denom = sum + sink_w; /* out's normalizer, the sink included */

    /* out: sum_k w_k rho_k |V_k - out| / (1 - rho_max) from the weights, plus the accumulation
     * of sum p V and sum p (gamma_{n+8}), the values' own rounding and the final scaling. */
    const attest_bound_model *mo = bo->out_model;
    const double da_c = gamma_n((double)dqk + 4.0, mo->u_accum) + mo->u_kv * (1.0 + mo->u_accum);
    double rho_max = 0.0;
    for (int32_t k = 0; k < n; k++) {
        bo->rho[k] = weight_perturbation(mo, scores[k], da_c * sm * absdots[k], amax, nterms);
        rho_max = fmax(rho_max, bo->rho[k]);
    }
    const double rho_sink =
        sink_w > 0 ? weight_perturbation(mo, sink, 0.0, amax, nterms) : 0.0;
    rho_max = fmax(rho_max, rho_sink);
    const double g_acc = gamma_n(nterms + 8.0, mo->u_accum);
    if (!(rho_max < 0.5)) {
        /* The weights mean nothing in this format: only |out| <= max |V| is left. */
        for (int32_t d = 0; d < dv; d++) {
            double vmax = 0.0;
            for (int32_t k = 0; k < n; k++) vmax = fmax(vmax, fabs(keys[(size_t)k * dqk + d]));
            bo->out_bound[d] = (vmax + fabs(out[d])) * (1.0 + g_acc);
        }
    } else {
        for (int32_t d = 0; d < dv; d++) bo->out_bound[d] = 0.0;
        double *sum_v = bo->out_bound; /* reused: first sum_k w_k rho_k |V - out| ... */
        double *abs_v = bo->abs_v;
        for (int32_t d = 0; d < dv; d++) abs_v[d] = 0.0;
        for (int32_t k = 0; k < n; k++) {
            const double w = exp(scores[k] - m) / denom;
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
        for (int32_t d = 0; d < dv; d++) {
            double e1 = (sum_v[d] + w_sink * rho_sink * fabs(out[d])) / (1.0 - rho_max);
            double e2 = ((g_acc + mo->u_kv) * abs_v[d] + (g_acc + 4.0 * mo->u_accum) * fabs(out[d])) * amp;
            bo->out_bound[d] = e1 + e2;
        }
    }
    /* Underflow: a normalized weight below float32's normal range (2^-126) may come out as 0 or
     * as a subnormal with few bits (flush-to-zero, or 1 / (1 + exp(sink - lse)) overflowing when
     * a sink dominates), so each of the n + 1 weights may be off by 2^-126 absolute. */
    for (int32_t d = 0; d < dv; d++) {
        double vmax = 0.0;
        for (int32_t k = 0; k < n; k++) vmax = fmax(vmax, fabs(keys[(size_t)k * dqk + d]));
        bo->out_bound[d] += (nterms + 2.0) * 0x1p-126 * vmax;
    }

    /* lse = m + log(S): the weights' average perturbation moves log S by at most
     * -log(1 - rho_avg - gamma); the logarithm, the m + log S addition and a log2/ln
     * conversion round numbers up to amax, |log S| and |lse|. */
    const attest_bound_model *ml = bo->lse_model;
    const double dl_c = gamma_n((double)dqk + 4.0, ml->u_accum) + ml->u_kv * (1.0 + ml->u_accum);
    const double lse_denom = sink_in_lse ? denom : sum;
    double rho_avg = 0.0, theta_max = 0.0;
    for (int32_t k = 0; k < n; k++) {
        const double w = exp(scores[k] - m) / lse_denom;
        const double th = weight_exponent_error(ml, scores[k], dl_c * sm * absdots[k], amax, nterms);
        rho_avg += w * expm1(th);
        theta_max = fmax(theta_max, th);
    }
    if (sink_in_lse && sink_w > 0) {
        const double th = weight_exponent_error(ml, sink, 0.0, amax, nterms);
        rho_avg += sink_w / lse_denom * expm1(th);
        theta_max = fmax(theta_max, th);
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

/* One head of one query over n gathered keys: out[d_v] and *lse (and its bounds when bo). */
static void mla_head(const mla_inputs *in, const double *q, const double *keys, int32_t n,
                     int32_t h, double *scores, double *absdots, double *out, double *lse,
                     const mla_bound_out *bo)
{
    const attest_mla_params *p = in->p;
    const int32_t dqk = p->d_qk, dv = p->d_v;
    for (int32_t d = 0; d < dv; d++) out[d] = 0.0;
    if (n == 0) {
        /* A lonely query: no valid key, out = 0; its LSE is the declared convention's. */
        switch (p->lonely_lse) {
        case ATTEST_LONELY_LSE_NEG_INF: *lse = -INFINITY; break;
        case ATTEST_LONELY_LSE_SINK: *lse = in->sink ? (double)in->sink[h] : -INFINITY; break;
        case ATTEST_LONELY_LSE_POS_INF:
        default: *lse = INFINITY; break; /* FlashMLA */
        }
        if (bo != NULL) mla_head_bounds(in, keys, scores, absdots, 0, h, 0, 0, 0, out, *lse, bo);
        return;
    }
    const double sm = (double)p->sm_scale;
    double m = -INFINITY;
    for (int32_t k = 0; k < n; k++) {
        const double *kk = keys + (size_t)k * (size_t)dqk;
        double dot = 0.0, absdot = 0.0;
        for (int32_t d = 0; d < dqk; d++) {
            dot += q[d] * kk[d];
            absdot += fabs(q[d] * kk[d]);
        }
        scores[k] = sm * dot;
        absdots[k] = absdot;
        if (scores[k] > m) m = scores[k];
    }
    /* Max-subtracted softmax. A NaN score (NaN in a selected key) is skipped by the max and then
     * propagates through exp into lse and out, on purpose: the kernel must show it too. */
    double sum = 0.0;
    for (int32_t k = 0; k < n; k++) {
        double e = exp(scores[k] - m);
        sum += e;
        const double *vv = keys + (size_t)k * (size_t)dqk; /* V = first d_v dims of K */
        for (int32_t d = 0; d < dv; d++) out[d] += e * vv[d];
    }
    double l = m + log(sum);
    double scale = 1.0 / sum;
    double sink_w = 0.0;
    if (in->sink != NULL) {
        /* out *= 1 / (1 + exp(sink - lse)); written through sum + exp(sink - m) it cannot
         * overflow, and a +inf sink gives 0, a -inf sink gives 1. */
        double s = (double)in->sink[h];
        sink_w = exp(s - m);
        scale = 1.0 / (sum + sink_w);
        if (p->lse_convention == ATTEST_LSE_INCLUDES_SINK) l = log_add_exp(l, s);
    }
    for (int32_t d = 0; d < dv; d++) out[d] *= scale;
    *lse = l;
    if (bo != NULL) mla_head_bounds(in, keys, scores, absdots, n, h, m, sum, sink_w, out, l, bo);
}

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
    size_t n_keys;
    ATTEST_FORWARD(attest_ref_count_(&n_keys, "gathered keys", 2, max_keys, (int64_t)p->d_qk));
    double *keys = malloc((n_keys ? n_keys : 1) * sizeof *keys);
    /* scores, their |q| . |K| magnitudes, and the bounds' per-key weight perturbations */
    const size_t key_slots = (size_t)(max_keys ? max_keys : 1);
    double *scores = malloc(3 * key_slots * sizeof *scores);
    double *q = malloc(((size_t)p->d_qk + (size_t)(p->d_v > 0 ? p->d_v : 0)) * sizeof *q);
    if (keys == NULL || scores == NULL || q == NULL) {
        free(keys);
        free(scores);
        free(q);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "mla reference: out of memory");
    }
    attest_status st = ATTEST_OK;
    for (int32_t b = 0; b < p->b && st == ATTEST_OK; b++) {
        for (int32_t sq = 0; sq < p->s_q && st == ATTEST_OK; sq++) {
            int32_t n = 0;
            for (int i = 0; i < in.num_scopes && st == ATTEST_OK; i++)
                st = mla_gather(&in, &in.scope[i], b, sq, keys, &n);
            if (st != ATTEST_OK) break;
            for (int32_t h = 0; h < p->h_q; h++) {
                size_t qi = ((size_t)b * (size_t)p->s_q + (size_t)sq) * (size_t)p->h_q + (size_t)h;
                const uint16_t *qb = in.q + qi * (size_t)p->d_qk;
                for (int32_t d = 0; d < p->d_qk; d++) q[d] = (double)attest_bf16_decode(qb[d]);
                mla_bound_out bo = {out_model, lse_model,
                                    out_bound ? out_bound + qi * (size_t)p->d_v : NULL,
                                    lse_bound ? lse_bound + qi : NULL, q + p->d_qk,
                                    scores + 2 * key_slots};
                mla_head(&in, q, keys, n, h, scores, scores + key_slots,
                         out + qi * (size_t)p->d_v, lse + qi, out_bound ? &bo : NULL);
            }
        }
    }
    free(keys);
    free(scores);
    free(q);
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
