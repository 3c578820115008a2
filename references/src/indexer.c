/* attest references: DSA indexer logits over a paged c4-indexer cache (docs/kernels.md sections 4-5).
 *
 * Position t of request b lives in physical block block_table[b][t / 64], slot t % 64. Each logit
 * accumulates in double; a product of two fp8 values is exact in double and a 128-term sum of
 * them is too, so the only rounding left is in the weights and the scale products.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attest/isa.h"
#include "attest/layout.h"
#include "attest/numerics.h"
#include "attest/reference.h"
#include "ref_internal.h"

/* torch.relu, which the README form is written in: NaN stays NaN. */
static double relu_propagating(double x)
{
    return (x > 0.0 || isnan(x)) ? x : 0.0;
}

static double masked_value(attest_masking m)
{
    switch (m) {
    case ATTEST_MASK_NEG_INF: return -INFINITY;
    case ATTEST_MASK_ZERO: return 0.0;
    default: return NAN; /* unspecified: NaN so that nothing can come to depend on it */
    }
}

typedef struct indexer_inputs {
    const attest_indexer_params *p;
    attest_layout layout;
    const uint8_t *cache;
    const int32_t *block_table;
    const int32_t *context_lens;
    const uint8_t *q_fp8;
    const float *weights;
    const float *k_true; /* true mode only */
    const float *q_true;
} indexer_inputs;

static attest_status indexer_check_params(const attest_indexer_params *p)
{
    ATTEST_RETURN_IF(p->b <= 0 || p->next_n <= 0 || p->heads <= 0 || p->num_blocks <= 0 ||
                         p->blocks_per_req <= 0 || p->max_len < 0,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer reference: b, next_n, heads, num_blocks, blocks_per_req must be "
                     "positive and max_len >= 0");
    ATTEST_RETURN_IF(p->head_dim != 128, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer reference: head_dim = %d, the c4-indexer layout fixes it at 128",
                     p->head_dim);
    ATTEST_RETURN_IF(p->masking != ATTEST_MASK_NEG_INF && p->masking != ATTEST_MASK_ZERO &&
                         p->masking != ATTEST_MASK_UNSPECIFIED,
                     ATTEST_ERR_INVALID_ARGUMENT, "indexer reference: unknown masking %d",
                     (int)p->masking);
    ATTEST_RETURN_IF((int64_t)p->b * p->next_n > INT32_MAX, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer reference: b * next_n = %lld rows is too many",
                     (long long)p->b * p->next_n);
    return ATTEST_OK;
}

static attest_status indexer_load(const attest_case *c, attest_ref_mode mode, indexer_inputs *in)
{
    const attest_indexer_params *p = &c->params.indexer;
    ATTEST_FORWARD(indexer_check_params(p));
    in->p = p;
    ATTEST_FORWARD(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, ATTEST_INDEXER_BLOCK, 0,
                                      &in->layout));
    size_t n_cache, n_bt, n_q, n_w;
    ATTEST_FORWARD(attest_ref_count_(&n_cache, "cache_bytes", 2, (int64_t)p->num_blocks,
                                     (int64_t)in->layout.page_stride));
    ATTEST_FORWARD(attest_ref_count_(&n_bt, "block_table", 2, (int64_t)p->b,
                                     (int64_t)p->blocks_per_req));
    ATTEST_FORWARD(attest_ref_count_(&n_q, "q_fp8", 4, (int64_t)p->b, (int64_t)p->next_n,
                                     (int64_t)p->heads, (int64_t)p->head_dim));
    ATTEST_FORWARD(attest_ref_count_(&n_w, "weights", 3, (int64_t)p->b, (int64_t)p->next_n,
                                     (int64_t)p->heads));
    const void *d;
    ATTEST_FORWARD(attest_ref_tensor_(c, "cache_bytes", ATTEST_DTYPE_U8, n_cache, &d));
    in->cache = d;
    ATTEST_FORWARD(attest_ref_tensor_(c, "block_table", ATTEST_DTYPE_I32, n_bt, &d));
    in->block_table = d;
    ATTEST_FORWARD(attest_ref_tensor_(c, "context_lens", ATTEST_DTYPE_I32, (size_t)p->b, &d));
    in->context_lens = d;
    ATTEST_FORWARD(attest_ref_tensor_(c, "q_fp8", ATTEST_DTYPE_U8, n_q, &d));
    in->q_fp8 = d;
    ATTEST_FORWARD(attest_ref_tensor_(c, "weights", ATTEST_DTYPE_F32, n_w, &d));
    in->weights = d;
    in->k_true = NULL;
    in->q_true = NULL;
    if (mode == ATTEST_REF_TRUE) {
        size_t n_k;
        ATTEST_FORWARD(attest_ref_count_(&n_k, "k_true", 3, (int64_t)p->num_blocks,
                                         (int64_t)ATTEST_INDEXER_BLOCK, (int64_t)p->head_dim));
        ATTEST_FORWARD(attest_ref_tensor_(c, "k_true", ATTEST_DTYPE_F32, n_k, &d));
        in->k_true = d;
        ATTEST_FORWARD(attest_ref_tensor_(c, "q_true", ATTEST_DTYPE_F32, n_q, &d));
        in->q_true = d;
    }
    return ATTEST_OK;
}

/* Physical block of position t of request b, range-checked against the table and the pool. */
static attest_status indexer_block(const indexer_inputs *in, int32_t b, int32_t t, int32_t *block)
{
    const attest_indexer_params *p = in->p;
    int32_t j = t / (int32_t)ATTEST_INDEXER_BLOCK;
    ATTEST_RETURN_IF(j >= p->blocks_per_req, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer reference: context_lens[%d] = %d needs block %d, block_table has %d",
                     b, in->context_lens[b], j, p->blocks_per_req);
    int32_t blk = in->block_table[(size_t)b * (size_t)p->blocks_per_req + (size_t)j];
    ATTEST_RETURN_IF(blk < 0 || blk >= p->num_blocks, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer reference: block_table[%d][%d] = %d outside [0, %d)", b, j, blk,
                     p->num_blocks);
    *block = blk;
    return ATTEST_OK;
}

/* Positions per block: one logit per lane. As in mla_decode.c, each logit keeps its own double
 * accumulators summed in dim and head order, so the results are bit for bit those of one
 * position at a time; the positions of a block share every load of q and w. */
#define IDX_BLOCK 8
typedef double v8d __attribute__((vector_size(64), aligned(8)));
typedef int64_t v8i __attribute__((vector_size(64), aligned(8)));
#define V8D_ABS(x) ((v8d)((v8i)(x) & ((v8i){0} + INT64_MAX)))

/* The logits of IDX_BLOCK positions. q holds the row's heads x D query values, kt the
 * positions' key values dim-major ([D][IDX_BLOCK]: raw fp8 values in kernel order, fp8 * scale in
 * README order, truth in true mode), kscale their key scales. mag[j] receives |kscale_j| *
 * sum_h |w_h| * sum_d |q_hd k_jd|, the size of the terms any evaluation of the logit adds (see
 * attest_ref_bounds). */
ATTEST_ISA_BODY void indexer_logit_block_body(const indexer_inputs *in, const double *q,
                                              const double *kt, const float *w,
                                              const double *kscale, attest_ref_mode mode,
                                              attest_indexer_order order, double *out, double *mag)
{
    const int32_t H = in->p->heads, D = in->p->head_dim;
    const int propagate = mode == ATTEST_REF_SIMULATED && order == ATTEST_INDEXER_ORDER_README;
    double acc[IDX_BLOCK] = {0}, mg[IDX_BLOCK] = {0};
    enum { NH = 4 }; /* heads whose dot products run side by side (independent chains) */
    for (int32_t h0 = 0; h0 < H; h0 += NH) {
        const int nh = H - h0 < NH ? H - h0 : NH;
        v8d dot[NH] = {{0}}, absdot[NH] = {{0}};
        if (nh == NH) {
            for (int32_t d = 0; d < D; d++) {
                const v8d kd = *(const v8d *)(kt + (size_t)d * IDX_BLOCK);
                for (int g = 0; g < NH; g++) {
                    const v8d t = q[(size_t)(h0 + g) * (size_t)D + (size_t)d] * kd;
                    dot[g] += t;
                    absdot[g] += V8D_ABS(t);
                }
            }
        } else {
            for (int g = 0; g < nh; g++)
                for (int32_t d = 0; d < D; d++) {
                    const v8d t = q[(size_t)(h0 + g) * (size_t)D + (size_t)d] *
                                  *(const v8d *)(kt + (size_t)d * IDX_BLOCK);
                    dot[g] += t;
                    absdot[g] += V8D_ABS(t);
                }
        }
        for (int g = 0; g < nh; g++) { /* heads summed in order */
            const double wh = (double)w[h0 + g], aw = fabs((double)w[h0 + g]);
            for (int j = 0; j < IDX_BLOCK; j++) {
                /* DeepGEMM's kernel: fmaxf(dot, 0), so a NaN dot contributes 0, not NaN. */
                const double r = propagate ? relu_propagating(dot[g][j])
                                         : ref_relu_to_zero(dot[g][j]);
                acc[j] += wh * r;
                mg[j] += aw * absdot[g][j];
            }
        }
    }
    for (int j = 0; j < IDX_BLOCK; j++) {
        if (mode == ATTEST_REF_SIMULATED && order == ATTEST_INDEXER_ORDER_KERNEL) {
            acc[j] *= kscale[j];
            mg[j] *= fabs(kscale[j]);
        }
        out[j] = acc[j];
        mag[j] = mg[j];
    }
}
ATTEST_ISA_VARIANTS(indexer_logit_block, (const indexer_inputs *in, const double *q,
                                          const double *kt, const float *w, const double *kscale,
                                          attest_ref_mode mode, attest_indexer_order order,
                                          double *out, double *mag),
                    (in, q, kt, w, kscale, mode, order, out, mag))

/* The error bound of one logit of magnitude `mag` (attest_ref_bounds): gamma_n(u) * mag with
 * n = D + H + 2 roundings on the longest path (D - 1 in the dot product, one each for the head
 * weight, the key scale, a scale folded into the key first and the final result, H - 1 in the
 * head sum), plus the absolute error of flushing every one of those intermediates to zero. */
static double indexer_bound(const attest_indexer_params *p, const attest_bound_model *m,
                            double logit, double mag, double flush_scale)
{
    if (!isfinite(logit)) return 0.0; /* judged by the nonfinite gate alone */
    const double n = (double)p->head_dim + (double)p->heads + 2.0;
    const double nu = n * m->u_accum;
    const double gamma = nu < 0.5 ? nu / (1.0 - nu) : INFINITY;
    /* flush_scale: the most a flushed intermediate is multiplied by on its way to the result. */
    const double flush = n * (double)p->head_dim * 0x1p-126 * (1.0 + flush_scale);
    return gamma * mag + flush;
}

/* The query row `row` in double, into q (heads x D). */
static void indexer_load_query(const indexer_inputs *in, attest_ref_mode mode, int32_t row,
                               double *q)
{
    const size_t n = (size_t)in->p->heads * (size_t)in->p->head_dim;
    const size_t qbase = (size_t)row * n; /* [b, next_n] flattens to row */
    /* The source pointer and the mode outside the loop: through in->, every store to q (a
     * double the compiler cannot tell from in's fields) reloaded them per element. */
    if (mode == ATTEST_REF_TRUE) {
        const float *src = in->q_true + qbase;
        for (size_t i = 0; i < n; i++) q[i] = (double)src[i];
    } else {
        const uint8_t *src = in->q_fp8 + qbase;
        for (size_t i = 0; i < n; i++) q[i] = (double)attest_fp8_values[src[i]];
    }
}

/* The next_n rows of request b. A block of keys is decoded once and serves every row that
 * reaches it (decoding per row was 8% of an indexer fuzz exec); each row's logits are those of
 * the row alone, lane for lane, since a lane's result depends on its own key only. q holds the
 * rows' queries (next_n x heads x D), sum_w next_n doubles. */
static attest_status indexer_request(const indexer_inputs *in, attest_ref_mode mode,
                                     attest_indexer_order order, int32_t b, double *q, double *k,
                                     double *kt, double *sum_w, double *logits,
                                     const attest_bound_model *model, double *bound)
{
    const attest_indexer_params *p = in->p;
    const int32_t H = p->heads, D = p->head_dim, n = p->next_n;
    const int32_t row0 = b * n;
    /* A row's length grows with its index in the request (attest_indexer_row_length). */
    int32_t req_len = 0;
    for (int32_t j = 0; j < n; j++) {
        const int32_t len = attest_indexer_row_length(p, in->context_lens, row0 + j);
        if (len > req_len) req_len = len;
        indexer_load_query(in, mode, row0 + j, q + (size_t)j * (size_t)H * (size_t)D);
        const float *w = in->weights + (size_t)(row0 + j) * (size_t)H;
        double s = 0.0;
        for (int32_t h = 0; h < H; h++) s += fabs((double)w[h]);
        sum_w[j] = s;
    }

    for (int32_t t0 = 0; t0 < req_len; t0 += IDX_BLOCK) {
        const int32_t nb = req_len - t0 < IDX_BLOCK ? req_len - t0 : IDX_BLOCK;
        double kscale[IDX_BLOCK], lg[IDX_BLOCK], mag[IDX_BLOCK];
        for (int32_t j = 0; j < IDX_BLOCK; j++) {
            kscale[j] = 1.0;
            if (j >= nb) { /* past the length: a zero key, its logit dropped */
                for (int32_t d = 0; d < D; d++) kt[(size_t)d * IDX_BLOCK + (size_t)j] = 0.0;
                continue;
            }
            const int32_t t = t0 + j;
            int32_t blk = 0;
            ATTEST_FORWARD(indexer_block(in, b, t, &blk));
            uint32_t slot = (uint32_t)t % ATTEST_INDEXER_BLOCK;
            size_t phys = (size_t)blk * ATTEST_INDEXER_BLOCK + slot;
            if (mode == ATTEST_REF_TRUE) {
                for (int32_t d = 0; d < D; d++) k[d] = (double)in->k_true[phys * (size_t)D + (size_t)d];
            } else {
                const uint8_t *page = in->cache + (size_t)blk * in->layout.page_stride;
                if (order == ATTEST_INDEXER_ORDER_README) {
                    attest_layout_decode_token(&in->layout, page, slot, k);
                } else {
                    attest_token_offsets off;
                    ATTEST_FORWARD(attest_layout_token_offsets(&in->layout, slot, &off));
                    /* Straight into the block: the fp8 values need no row of their own. */
                    const uint8_t *codes = page + off.fp8;
                    for (int32_t d = 0; d < D; d++)
                        kt[(size_t)d * IDX_BLOCK + (size_t)j] = (double)attest_fp8_values[codes[d]];
                    kscale[j] = attest_layout_token_scale(&in->layout, page, slot, 0);
                    continue;
                }
            }
            for (int32_t d = 0; d < D; d++) kt[(size_t)d * IDX_BLOCK + (size_t)j] = k[d];
        }
        for (int32_t r = 0; r < n; r++) {
            const int32_t row = row0 + r;
            const int32_t len = attest_indexer_row_length(p, in->context_lens, row);
            if (len <= t0) continue;
            const int32_t nr = len - t0 < IDX_BLOCK ? len - t0 : IDX_BLOCK;
            indexer_logit_block(in, q + (size_t)r * (size_t)H * (size_t)D, kt,
                                in->weights + (size_t)row * (size_t)H, kscale, mode, order, lg,
                                mag);
            double *out = logits + (size_t)row * (size_t)p->max_len;
            for (int32_t j = 0; j < nr; j++) {
                out[t0 + j] = lg[j];
                /* 448 = the largest |q| an fp8 query can hold, for a key scale folded into k
                 * first. */
                if (bound != NULL)
                    bound[(size_t)row * (size_t)p->max_len + (size_t)(t0 + j)] =
                        indexer_bound(p, model, lg[j], mag[j],
                                      sum_w[r] * 449.0 * (1.0 + fabs(kscale[j])));
            }
        }
    }
    const double fill = masked_value(p->masking);
    for (int32_t r = 0; r < n; r++) {
        const int32_t row = row0 + r;
        const int32_t len = attest_indexer_row_length(p, in->context_lens, row);
        double *out = logits + (size_t)row * (size_t)p->max_len;
        for (int32_t t = len; t < p->max_len; t++) out[t] = fill;
        if (bound != NULL) /* a fill value is exact */
            for (int32_t t = len; t < p->max_len; t++)
                bound[(size_t)row * (size_t)p->max_len + (size_t)t] = 0.0;
    }
    return ATTEST_OK;
}

/* The requests' scratch (q, k, kt, sum_w), kept per thread and grown to the largest case seen:
 * a fuzz target judges one small case after another, and three allocations per case were the
 * reference's share of what an exec allocated. */
static _Thread_local struct {
    double *block;
    size_t cap; /* doubles */
} row_scratch;

static double *take_row_scratch(size_t doubles)
{
    if (doubles > row_scratch.cap) {
        double *grown = malloc(doubles * sizeof *grown);
        if (grown == NULL) return NULL;
        free(row_scratch.block);
        row_scratch.block = grown;
        row_scratch.cap = doubles;
    }
    return row_scratch.block;
}

static attest_status indexer_run(const attest_case *c, attest_ref_mode mode,
                                 attest_indexer_order order, double *logits,
                                 const attest_bound_model *model, double *bound)
{
    ATTEST_RETURN_IF(c == NULL || logits == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer reference: NULL case or output");
    ATTEST_RETURN_IF(c->kernel != ATTEST_KERNEL_INDEXER, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer reference: the case is not an indexer case");
    ATTEST_RETURN_IF(mode != ATTEST_REF_SIMULATED && mode != ATTEST_REF_TRUE,
                     ATTEST_ERR_INVALID_ARGUMENT, "indexer reference: unknown mode %d", (int)mode);
    ATTEST_RETURN_IF(order != ATTEST_INDEXER_ORDER_KERNEL && order != ATTEST_INDEXER_ORDER_README,
                     ATTEST_ERR_INVALID_ARGUMENT, "indexer reference: unknown order %d",
                     (int)order);
    indexer_inputs in;
    ATTEST_FORWARD(indexer_load(c, mode, &in));
    const attest_indexer_params *p = in.p;
    size_t nq;
    ATTEST_FORWARD(attest_ref_count_(&nq, "a request's query rows", 3, (int64_t)p->next_n,
                                     (int64_t)p->heads, (int64_t)p->head_dim));
    /* Small (next_n x heads x head_dim, a block of keys): never worth giving back. */
    double *q = take_row_scratch(nq + (size_t)p->head_dim * (1 + IDX_BLOCK) + (size_t)p->next_n);
    if (q == NULL) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "indexer reference: out of memory");
    double *k = q + nq, *kt = k + p->head_dim, *sum_w = kt + (size_t)p->head_dim * IDX_BLOCK;
    attest_status st = ATTEST_OK;
    for (int32_t b = 0; b < p->b && st == ATTEST_OK; b++)
        st = indexer_request(&in, mode, order, b, q, k, kt, sum_w, logits, model, bound);
    return st;
}

attest_status attest_ref_indexer_logits(const attest_case *c, attest_ref_mode mode,
                                        attest_indexer_order order, double *logits)
{
    return indexer_run(c, mode, order, logits, NULL, NULL);
}

attest_status attest_ref_indexer_bounds(const attest_case *c, const attest_bound_model *model,
                                        double *logits, double *bound)
{
    ATTEST_RETURN_IF(model == NULL || bound == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer bounds: NULL model or output");
    return indexer_run(c, ATTEST_REF_SIMULATED, attest_indexer_order_of(c), logits, model, bound);
}
