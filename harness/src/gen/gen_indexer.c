/* Case generator, indexer family: a c4-indexer key cache behind a block table, fp8 queries,
 * fp32 head weights (docs/kernels.md sections 4-5). */
#include <stdlib.h>
#include <string.h>

#include "attest/numerics.h"
#include "gen_internal.h"

/* Draws the parameters and lengths; fills p and lens[b] (lens allocated here). */
static attest_status draw_shape(const attest_gen_options *opt, attest_rng *r, attest_rng *mix,
                                attest_indexer_params *p, int32_t **lens_out)
{
    p->b = (int32_t)attest_rng_range(r, 1, opt->max_batch);
    p->next_n = (int32_t)attest_rng_range(r, 1, opt->max_next_n);
    if (opt->production_shape)
        p->heads = 64;
    else
        p->heads = attest_rng_bernoulli(r, 0.3) ? opt->max_heads
                                                : (int32_t)attest_rng_range(r, 1, opt->max_heads);
    p->heads = gen_mix_heads(opt, mix, p->heads, &p->b, &p->next_n);
    p->head_dim = 128;
    p->max_len = attest_rng_bernoulli(r, 0.35) ? opt->max_len
                                               : (int32_t)attest_rng_range(r, 1, opt->max_len);
    /* Sometimes a spare column: the block table is sized for the model, not the batch. */
    p->blocks_per_req = (p->max_len + 63) / 64 + (attest_rng_bernoulli(r, 0.25) ? 1 : 0);
    int32_t *lens = gen_calloc((size_t)p->b, sizeof *lens, "context lengths");
    if (lens == NULL) return ATTEST_ERR_OUT_OF_MEMORY;
    for (int32_t i = 0; i < p->b; i++) lens[i] = gen_draw_len(r, p->max_len, 64);
    const int64_t used = (int64_t)p->b * p->blocks_per_req;
    const int64_t unused =
        attest_rng_bernoulli(r, 0.12) ? 0 : attest_rng_range(r, 1, used / 2 > 1 ? used / 2 : 1);
    if (used + unused > GEN_MAX_POOL_UNITS) {
        free(lens);
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                           "generator: a pool of %lld blocks is too large; lower max_batch or "
                           "max_len", (long long)(used + unused));
    }
    p->num_blocks = (int32_t)(used + unused);
    p->masking = ATTEST_MASK_NEG_INF;
    if (opt->production_shape)
        p->topk = 512;
    else if (attest_rng_bernoulli(r, 0.25))
        p->topk = 0;
    else
        p->topk = attest_rng_bernoulli(r, 0.3) ? opt->max_topk
                                               : (int32_t)attest_rng_range(r, 1, opt->max_topk);
    p->topk_rule = ATTEST_TOPK_BY_SCORE;
    *lens_out = lens;
    return ATTEST_OK;
}

/* Quantizes every request's positions [0, len) into the pool; truth gets the logical values. */
static attest_status fill_cache(const attest_layout *L, attest_case *c, const int32_t *lens,
                                const attest_scale_policy *policy, const gen_value_cfg *cfg,
                                attest_rng *vals, attest_rng *edges)
{
    const attest_indexer_params *p = &c->params.indexer;
    uint8_t *cache = attest_case_tensor(c, "cache_bytes")->data;
    const int32_t *table = attest_case_tensor(c, "block_table")->data;
    attest_tensor *kt = attest_case_tensor(c, "k_true");
    float *k_true = kt ? kt->data : NULL;
    attest_pool_poison(L, cache, (uint32_t)p->num_blocks, 0xFF);
    if (k_true) {
        const float nan = attest_f32_from_bits(0x7FC00000u);
        for (size_t i = 0; i < attest_tensor_count(kt); i++) k_true[i] = nan;
    }
    gen_wave wave;
    gen_wave_init(&wave, vals, L->k_dim);
    float *values = gen_calloc((size_t)p->max_len, (size_t)L->k_dim * sizeof(float), "values");
    if (values == NULL) return ATTEST_ERR_OUT_OF_MEMORY;
    attest_status st = ATTEST_OK;
    for (int32_t b = 0; b < p->b && st == ATTEST_OK; b++) {
        const int32_t *row = table + (size_t)b * p->blocks_per_req;
        for (int32_t t = 0; t < lens[b]; t++)
            gen_token_values(L, &wave, cfg, vals, edges, (int64_t)b * 4099 + t,
                             values + (size_t)t * L->k_dim);
        st = attest_pool_encode(L, cache, (uint32_t)p->num_blocks, row, (uint64_t)lens[b], values,
                                policy);
        for (int32_t t = 0; t < lens[b] && st == ATTEST_OK && k_true; t++) {
            size_t phys = (size_t)row[t / 64] * 64 + (size_t)(t % 64);
            memcpy(k_true + phys * L->k_dim, values + (size_t)t * L->k_dim,
                   L->k_dim * sizeof(float));
        }
    }
    free(values);
    return st;
}

/* The block-table entries past each request's blocks, as serving engines leave them: never
 * written (distinct unused blocks, poisoned), -1, or stale ids (blocks other requests, or this
 * one, use now). A kernel must not read them; one that does reads poison, an address before the
 * pool, or another request's keys. */
static void fill_table_tail(attest_case *c, const int32_t *lens, attest_rng *mix)
{
    const attest_indexer_params *p = &c->params.indexer;
    int32_t *table = attest_case_tensor(c, "block_table")->data;
    static const double w[] = {40, 30, 30};
    const uint64_t style = attest_rng_choice(mix, w, 3);
    if (style == 0) return;
    for (int32_t b = 0; b < p->b; b++) {
        const int32_t used = (lens[b] + 63) / 64;
        for (int32_t j = used; j < p->blocks_per_req; j++) {
            int32_t *e = &table[(size_t)b * p->blocks_per_req + j];
            if (style == 1) {
                *e = -1;
            } else { /* a block some request holds (the first block of request r, say) */
                const int32_t r = (int32_t)attest_rng_below(mix, (uint64_t)p->b);
                const int32_t ru = (lens[r] + 63) / 64;
                *e = ru > 0 ? table[(size_t)r * p->blocks_per_req +
                                    (size_t)attest_rng_below(mix, (uint64_t)ru)]
                            : (int32_t)attest_rng_below(mix, (uint64_t)p->num_blocks);
            }
        }
    }
}

/* fp8 queries (no scale) and signed fp32 head weights. */
static void fill_queries(attest_case *c, attest_rng *qr, attest_rng *edges, int edge_bytes)
{
    const attest_indexer_params *p = &c->params.indexer;
    attest_tensor *qt = attest_case_tensor(c, "q_fp8");
    uint8_t *q = qt->data;
    attest_tensor *qtt = attest_case_tensor(c, "q_true");
    float *q_true = qtt ? qtt->data : NULL;
    float *w = attest_case_tensor(c, "weights")->data;
    const size_t nq = attest_tensor_count(qt);
    static const double sigmas[] = {0.25, 1.0, 8.0, 64.0};
    const double sigma = sigmas[attest_rng_below(qr, 4)];
    for (size_t i = 0; i < nq; i++) {
        float x = (float)attest_rng_normal_portable(qr, 0.0, sigma);
        if (x > 448.0f) x = 448.0f;
        if (x < -448.0f) x = -448.0f;
        q[i] = attest_fp8_encode_inline(x, ATTEST_FP8_NONSAT);
        if (q_true) q_true[i] = x;
    }
    if (edge_bytes && attest_rng_bernoulli(edges, 0.5)) {
        for (size_t i = 0; i < nq; i++) {
            if (!attest_rng_bernoulli(edges, 0.02)) continue;
            q[i] = gen_edge_fp8(edges);
            if (q_true) q_true[i] = attest_fp8_decode(q[i]);
        }
    }
    /* Mixed signs make relu's zeros and negative contributions both show; sometimes all
     * positive (the common trained case), sometimes with exact zeros. */
    const int all_positive = attest_rng_bernoulli(qr, 0.15);
    const double zero_rate = attest_rng_bernoulli(qr, 0.1) ? 0.2 : 0.0;
    const size_t nw = (size_t)p->b * p->next_n * p->heads;
    for (size_t i = 0; i < nw; i++) {
        double x = attest_rng_normal_portable(qr, 0.0, 1.0);
        if (all_positive && x < 0) x = -x;
        if (zero_rate > 0.0 && attest_rng_bernoulli(qr, zero_rate)) x = 0.0;
        w[i] = (float)x;
    }
}

/* Puts one NaN byte where the answer depends on it: a key position every last MTP row sees, or
 * a query byte of a request's last row. */
static int place_selected_nan(attest_case *c, const attest_layout *L, const int32_t *lens,
                              attest_rng *edges)
{
    const attest_indexer_params *p = &c->params.indexer;
    int32_t candidates = 0;
    for (int32_t b = 0; b < p->b; b++) candidates += lens[b] > 0;
    if (candidates == 0) return 0;
    int32_t pick = (int32_t)attest_rng_below(edges, (uint64_t)candidates), b = 0;
    for (;; b++)
        if (lens[b] > 0 && pick-- == 0) break;
    const uint8_t nan = gen_nan_fp8(edges);
    const float fnan = attest_fp8_decode(nan);
    const uint32_t d = (uint32_t)attest_rng_below(edges, 128);
    if (attest_rng_bernoulli(edges, 0.6)) {
        const int32_t *table = attest_case_tensor(c, "block_table")->data;
        int32_t t = (int32_t)attest_rng_below(edges, (uint64_t)lens[b]);
        int32_t blk = table[(size_t)b * p->blocks_per_req + t / 64];
        attest_token_offsets o;
        if (attest_layout_token_offsets(L, (uint32_t)(t % 64), &o) != ATTEST_OK) return 0;
        uint8_t *cache = attest_case_tensor(c, "cache_bytes")->data;
        cache[(size_t)blk * L->page_stride + o.fp8 + d] = nan;
        attest_tensor *kt = attest_case_tensor(c, "k_true");
        if (kt) ((float *)kt->data)[((size_t)blk * 64 + (size_t)(t % 64)) * 128 + d] = fnan;
    } else {
        int32_t h = (int32_t)attest_rng_below(edges, (uint64_t)p->heads);
        size_t i = (((size_t)b * p->next_n + (size_t)(p->next_n - 1)) * p->heads + h) * 128 + d;
        ((uint8_t *)attest_case_tensor(c, "q_fp8")->data)[i] = nan;
        attest_tensor *qt = attest_case_tensor(c, "q_true");
        if (qt) ((float *)qt->data)[i] = fnan;
    }
    return 1;
}

attest_status gen_indexer_case(const attest_gen_options *opt, uint64_t seed, attest_case *c,
                               attest_gen_info *info)
{
    attest_rng shape, vals, qr, edges, mix;
    attest_rng_seed_stream(&shape, seed, GEN_STREAM_SHAPE);
    attest_rng_seed_stream(&vals, seed, GEN_STREAM_VALUES);
    attest_rng_seed_stream(&qr, seed, GEN_STREAM_QUERY);
    attest_rng_seed_stream(&edges, seed, GEN_STREAM_EDGES);
    attest_rng_seed_stream(&mix, seed, GEN_STREAM_MIX);

    attest_layout L;
    ATTEST_FORWARD(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, 64, 0, &L));
    attest_indexer_params *p = &c->params.indexer;
    int32_t *lens = NULL, *perm = NULL;
    attest_status st = draw_shape(opt, &shape, &mix, p, &lens);
    if (st != ATTEST_OK) return st;
    /* The raw fp32 amax/448 scale is what the V4 indexer cache stores; pow2 covers later
     * writers. */
    const attest_scale_policy policy = gen_draw_policy(&shape, &L, 0.7);
    perm = gen_calloc((size_t)p->num_blocks, sizeof *perm, "block permutation");
    if (perm == NULL) {
        st = ATTEST_ERR_OUT_OF_MEMORY;
        goto done;
    }
    for (int32_t i = 0; i < p->num_blocks; i++) perm[i] = i;
    attest_rng_shuffle_i32(&shape, perm, (size_t)p->num_blocks);

    st = attest_case_define_tensors(c, opt->with_truth);
    if (st == ATTEST_OK) st = attest_case_alloc_heap(c);
    if (st != ATTEST_OK) goto done;
    int32_t *table = attest_case_tensor(c, "block_table")->data;
    memcpy(table, perm, (size_t)p->b * p->blocks_per_req * sizeof *table);
    memcpy(attest_case_tensor(c, "context_lens")->data, lens, (size_t)p->b * sizeof *lens);

    gen_value_cfg cfg;
    gen_value_cfg_draw(&cfg, &edges, opt->edge_bytes, policy.kind == ATTEST_SCALE_RAW);
    st = fill_cache(&L, c, lens, &policy, &cfg, &vals, &edges);
    if (st != ATTEST_OK) goto done;
    fill_table_tail(c, lens, &mix);
    fill_queries(c, &qr, &edges, opt->edge_bytes);
    int nan_selected = 0;
    if (opt->edge_bytes && attest_rng_bernoulli(&edges, 0.03))
        nan_selected = place_selected_nan(c, &L, lens, &edges);

    if (info) {
        st = gen_info_alloc(info, ATTEST_KERNEL_INDEXER, p->b, p->blocks_per_req, -1);
        if (st != ATTEST_OK) goto done;
        memcpy(info->lens, lens, (size_t)p->b * sizeof *lens);
        memcpy(info->page_table, table, (size_t)p->b * p->blocks_per_req * sizeof *table);
        info->policy = policy;
        info->nan_selected = nan_selected;
    }
done:
    free(lens);
    free(perm);
    return st;
}
