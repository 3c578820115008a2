/* Case generator, the DSA chain (attest/pipeline.h): an indexer case, k, and a decode case on
 * the indexer's blocks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/layout.h"
#include "attest/numerics.h"
#include "attest/pipeline.h"
#include "gen_internal.h"

/* Streams of the decode half, apart from the indexer's (which attest_generate_case draws from
 * the case seed itself). Pinned: they define what a pipeline seed means. */
enum { PIPE_STREAM_SHAPE = 101, PIPE_STREAM_VALUES = 102, PIPE_STREAM_QUERY = 103,
       PIPE_STREAM_EDGES = 104, PIPE_STREAM_TIES = 105 };

attest_pipeline_gen_bounds attest_pipeline_gen_defaults(void)
{
    const attest_gen_options o = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    attest_pipeline_gen_bounds g = {o.max_batch, o.max_heads, o.max_len, o.max_topk, o.max_next_n,
                                    4};
    return g;
}

uint64_t attest_pipeline_case_seed(uint64_t campaign_seed, uint64_t i)
{
    /* A stream apart from the families' own, so the same --seed draws unrelated cases. */
    return attest_case_seed(campaign_seed ^ 0x7069706570697065ull, i);
}

void attest_pipeline_case_free(attest_pipeline_case *pc)
{
    if (pc == NULL) return;
    attest_case_free(&pc->indexer);
    attest_case_free(&pc->decode);
    memset(pc, 0, sizeof *pc);
}

attest_status attest_pipeline_param_string(const attest_pipeline_case *pc, char *buf, size_t cap)
{
    ATTEST_RETURN_IF(pc == NULL || buf == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "pipeline param string: NULL argument");
    const attest_indexer_params *x = &pc->indexer.params.indexer;
    const attest_mla_params *m = &pc->decode.params.mla;
    const int n = snprintf(buf, cap,
                           "kernel=pipeline,b=%d,next_n=%d,h=%d,blocks=%d,max_len=%d,k=%d,h_q=%d,"
                           "sink=%d",
                           x->b, x->next_n, x->heads, x->num_blocks, x->max_len, pc->k, m->h_q,
                           m->has_sink);
    ATTEST_RETURN_IF(n < 0 || (size_t)n >= cap, ATTEST_ERR_INVALID_ARGUMENT,
                     "pipeline param string: buffer of %zu bytes too small", cap);
    return ATTEST_OK;
}

/* The decode parameters the chain fixes (shapes from the indexer, 64-token pages on its blocks)
 * and those drawn (heads, sink, a padded page stride). */
static void decode_params(const attest_indexer_params *x, int32_t k, int32_t max_heads,
                          attest_rng *r, attest_mla_params *p)
{
    memset(p, 0, sizeof *p);
    p->layout = ATTEST_LAYOUT_MLA_V32;
    p->page_size = (int32_t)ATTEST_INDEXER_BLOCK;
    /* The layout's record size and widths (mla-v32 at page size 1 is always valid). */
    attest_layout L;
    memset(&L, 0, sizeof L);
    if (attest_layout_make(p->layout, 1, 0, &L) != ATTEST_OK) attest_clear_error();
    p->page_stride = attest_rng_bernoulli(r, 0.5) ? (int64_t)(p->page_size + 1) * L.token_bytes : 0;
    p->num_pages = x->num_blocks;
    p->b = x->b;
    p->s_q = x->next_n;
    p->h_q = (int32_t)attest_rng_range(r, 1, max_heads);
    p->d_qk = (int32_t)L.k_dim;
    p->d_v = (int32_t)L.v_dim;
    p->topk = k;
    p->sm_scale = (float)(1.0 / sqrt((double)p->d_qk));
    p->has_sink = attest_rng_bernoulli(r, 0.5);
    p->lse_convention = ATTEST_LSE_EXCLUDES_SINK;
}

/* Writes every position a request holds into the decode cache, at the physical token the
 * indexer's block table gives it (positions past the length stay poison: a selection that
 * reaches one reads poison). */
static attest_status fill_decode_cache(attest_pipeline_case *pc, attest_rng *vals,
                                       attest_rng *edges, attest_rng *shape)
{
    const attest_indexer_params *x = &pc->indexer.params.indexer;
    const attest_mla_params *p = &pc->decode.params.mla;
    attest_layout L;
    ATTEST_FORWARD(attest_layout_make(p->layout, (uint32_t)p->page_size, (uint64_t)p->page_stride,
                                      &L));
    uint8_t *pool = attest_case_tensor(&pc->decode, "cache_bytes")->data;
    const int32_t *lens = attest_case_tensor_const(&pc->indexer, "context_lens")->data;
    const int32_t *table = attest_case_tensor_const(&pc->indexer, "block_table")->data;
    attest_pool_poison(&L, pool, (uint32_t)p->num_pages, 0xFF);
    const attest_scale_policy policy = gen_draw_policy(shape, &L, 0.5);
    /* No edge bytes or extreme tiles: the decode family's own cases hold those; here a token the
     * selection swaps for a tie should move the output by a readable amount. */
    gen_value_cfg cfg;
    gen_value_cfg_draw(&cfg, edges, 0, policy.kind == ATTEST_SCALE_RAW);
    float *values = gen_calloc(L.k_dim, sizeof(float), "values");
    if (values == NULL) return ATTEST_ERR_OUT_OF_MEMORY;
    gen_wave wave;
    gen_wave_init(&wave, vals, L.k_dim);
    attest_status st = ATTEST_OK;
    for (int32_t b = 0; b < x->b && st == ATTEST_OK; b++) {
        const int32_t len = lens[b] < x->max_len ? lens[b] : x->max_len;
        for (int32_t t = 0; t < len && st == ATTEST_OK; t++) {
            const int32_t blk = table[(size_t)b * x->blocks_per_req + t / 64];
            gen_token_values(&L, &wave, &cfg, vals, edges, (int64_t)b * 4099 + t, values);
            st = attest_layout_encode_token(&L, pool + (size_t)blk * L.page_stride,
                                            (uint32_t)(t % 64), values, &policy);
        }
    }
    free(values);
    return st;
}

static void fill_queries(attest_case *c, attest_rng *qr)
{
    const attest_mla_params *p = &c->params.mla;
    attest_tensor *qt = attest_case_tensor(c, "q_bf16");
    uint16_t *q = qt->data;
    static const double sigmas[] = {0.25, 0.5, 0.9, 1.6}; /* flat to peaked softmax (gen_mla.c) */
    const double sigma = sigmas[attest_rng_below(qr, 4)];
    for (size_t i = 0; i < attest_tensor_count(qt); i++)
        q[i] = attest_bf16_encode_inline((float)attest_rng_normal_portable(qr, 0.0, sigma));
    if (p->has_sink) {
        float *sink = attest_case_tensor(c, "attn_sink")->data;
        for (int32_t h = 0; h < p->h_q; h++)
            sink[h] = attest_rng_below(qr, 8) == 0 ? -INFINITY
                                                   : (float)attest_rng_normal_portable(qr, 2.0, 3.0);
    }
}

/* Ties across the k-th place: in some requests every key repeats the key `period` positions
 * back (bytes and scale copied), so each row's logits take at most `period` distinct values and a
 * top-k that breaks equal scores another way than the reference selects other tokens for the
 * decode. Ties in the indexer's logits are what makes a correct chain select differently. */
static attest_status plant_ties(attest_case *ix, attest_rng *r)
{
    const attest_indexer_params *x = &ix->params.indexer;
    attest_layout L;
    ATTEST_FORWARD(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, 64, 0, &L));
    uint8_t *pool = attest_case_tensor(ix, "cache_bytes")->data;
    const int32_t *lens = attest_case_tensor_const(ix, "context_lens")->data;
    const int32_t *table = attest_case_tensor_const(ix, "block_table")->data;
    for (int32_t b = 0; b < x->b; b++) {
        if (!attest_rng_bernoulli(r, 0.3)) continue;
        const int32_t period = (int32_t)attest_rng_range(r, 1, 5);
        const int32_t len = lens[b] < x->max_len ? lens[b] : x->max_len;
        for (int32_t t = period; t < len; t++) {
            const int32_t from = t - period;
            uint8_t *src = pool + (size_t)table[(size_t)b * x->blocks_per_req + from / 64] * L.page_stride;
            uint8_t *dst = pool + (size_t)table[(size_t)b * x->blocks_per_req + t / 64] * L.page_stride;
            attest_token_offsets so, d;
            ATTEST_FORWARD(attest_layout_token_offsets(&L, (uint32_t)(from % 64), &so));
            ATTEST_FORWARD(attest_layout_token_offsets(&L, (uint32_t)(t % 64), &d));
            memcpy(dst + d.fp8, src + so.fp8, L.fp8_dim);
            memcpy(dst + d.scale[0], src + so.scale[0], 4);
        }
    }
    return ATTEST_OK;
}

attest_status attest_pipeline_generate(uint64_t seed, const attest_pipeline_gen_bounds *bounds,
                                       attest_pipeline_case *out)
{
    ATTEST_RETURN_IF(bounds == NULL || out == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "pipeline generate: NULL argument");
    ATTEST_RETURN_IF(bounds->max_decode_heads < 1 || bounds->max_decode_heads > 128,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "pipeline generate: max_decode_heads %d outside [1, 128]",
                     bounds->max_decode_heads);
    memset(out, 0, sizeof *out);
    out->seed = seed;
    attest_gen_options o = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    o.max_batch = bounds->max_batch;
    o.max_heads = bounds->max_heads;
    o.max_len = bounds->max_len;
    o.max_topk = bounds->max_topk;
    o.max_next_n = bounds->max_next_n;
    /* The decode pool is built from the indexer's, page by page: both stay as drawn. */
    o.high_pools = 0;
    attest_status st = attest_generate_case(&o, seed, &out->indexer);
    if (st != ATTEST_OK) return st;
    attest_rng shape, vals, qr, edges, ties;
    attest_rng_seed_stream(&ties, seed, PIPE_STREAM_TIES);
    st = plant_ties(&out->indexer, &ties);
    if (st != ATTEST_OK) {
        attest_pipeline_case_free(out);
        return st;
    }
    attest_rng_seed_stream(&shape, seed, PIPE_STREAM_SHAPE);
    attest_rng_seed_stream(&vals, seed, PIPE_STREAM_VALUES);
    attest_rng_seed_stream(&qr, seed, PIPE_STREAM_QUERY);
    attest_rng_seed_stream(&edges, seed, PIPE_STREAM_EDGES);
    attest_indexer_params *x = &out->indexer.params.indexer;
    /* k: often the bound, often more than a short row holds (the -1 padding reaches the decode) */
    out->k = attest_rng_bernoulli(&shape, 0.3) ? bounds->max_topk
                                               : (int32_t)attest_rng_range(&shape, 1, bounds->max_topk);
    x->topk = out->k;
    x->topk_rule = ATTEST_TOPK_BY_SCORE;
    out->decode.kernel = ATTEST_KERNEL_MLA_DECODE;
    out->decode.seed = seed;
    decode_params(x, out->k, bounds->max_decode_heads, &shape, &out->decode.params.mla);
    st = attest_case_define_tensors(&out->decode, 0);
    if (st == ATTEST_OK) st = attest_case_alloc_heap(&out->decode);
    if (st == ATTEST_OK) st = fill_decode_cache(out, &vals, &edges, &shape);
    if (st == ATTEST_OK) {
        fill_queries(&out->decode, &qr);
        attest_tensor *idx = attest_case_tensor(&out->decode, "indices");
        int32_t *d = idx->data;
        for (size_t i = 0; i < attest_tensor_count(idx); i++) d[i] = -1;
    }
    if (st != ATTEST_OK) attest_pipeline_case_free(out);
    return st;
}

attest_status attest_pipeline_check(const attest_pipeline_case *pc)
{
    ATTEST_RETURN_IF(pc == NULL, ATTEST_ERR_INVALID_ARGUMENT, "pipeline check: NULL case");
    const attest_indexer_params *x = &pc->indexer.params.indexer;
    const attest_mla_params *m = &pc->decode.params.mla;
#define PIPE_REQUIRE(cond, ...) ATTEST_RETURN_IF(!(cond), ATTEST_ERR_FORMAT, __VA_ARGS__)
    PIPE_REQUIRE(pc->indexer.kernel == ATTEST_KERNEL_INDEXER, "pipeline: the indexer stage is "
                                                              "not an indexer case");
    PIPE_REQUIRE(pc->decode.kernel == ATTEST_KERNEL_MLA_DECODE, "pipeline: the decode stage is "
                                                                "not an mla-decode case");
    PIPE_REQUIRE(m->page_size == (int32_t)ATTEST_INDEXER_BLOCK,
                 "pipeline: decode page_size %d, not the indexer's %u-position blocks",
                 m->page_size, ATTEST_INDEXER_BLOCK);
    PIPE_REQUIRE(m->num_pages == x->num_blocks, "pipeline: decode num_pages %d, indexer "
                 "num_blocks %d (one pool of blocks)", m->num_pages, x->num_blocks);
    PIPE_REQUIRE(m->b == x->b && m->s_q == x->next_n, "pipeline: decode b=%d s_q=%d, indexer "
                 "b=%d next_n=%d", m->b, m->s_q, x->b, x->next_n);
    PIPE_REQUIRE(pc->k >= 1 && m->topk == pc->k, "pipeline: k=%d, decode topk=%d", pc->k,
                 m->topk);
    PIPE_REQUIRE(!m->has_extra && !m->has_topk_length, "pipeline: the decode stage has an extra "
                                                       "scope or topk_length (the chain has one "
                                                       "selection)");
#undef PIPE_REQUIRE
    return ATTEST_OK;
}
