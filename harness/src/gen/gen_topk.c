/* The top-k family's case generator (topk.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/generator.h"
#include "attest/rng.h"
#include "attest/topk.h"

attest_topk_gen_bounds attest_topk_gen_defaults(void)
{
    attest_topk_gen_bounds g = {.max_batch = 3, .max_next_n = 3, .max_width = 1024, .max_k = 512};
    return g;
}

uint64_t attest_topk_case_seed(uint64_t campaign_seed, uint64_t i)
{
    /* A stream apart from the other families', so the same --seed draws unrelated cases. */
    return attest_case_seed(campaign_seed ^ 0x746f706b746f706bull, i);
}

/* A length that stresses the edges: block edges, shorter than k, the full width, or anywhere. */
static int32_t draw_length(attest_rng *rng, int32_t width, int32_t k)
{
    int32_t len;
    switch (attest_rng_below(rng, 6)) {
    case 0: { /* at a block edge: 64m - 1, 64m, 64m + 1 */
        int32_t m = (int32_t)attest_rng_range(rng, 1, (width + 63) / 64);
        len = 64 * m + (int32_t)attest_rng_range(rng, -1, 1);
        break;
    }
    case 1: len = (int32_t)attest_rng_range(rng, 0, k); break; /* short: len <= k */
    case 2: len = width; break;
    case 3: len = (int32_t)attest_rng_range(rng, k, k + 2); break; /* just around k */
    default: len = (int32_t)attest_rng_range(rng, 0, width); break;
    }
    if (len < 0) len = 0;
    if (len > width) len = width;
    return len;
}

/* One valid logit under a row's value style. */
static float draw_value(attest_rng *rng, int style, float tie_value)
{
    switch (style) {
    case 0: return (float)attest_rng_normal(rng, 0.0, 3.0);          /* spread: few exact ties */
    case 1: return (float)attest_rng_below(rng, 4);                  /* 4 values: ties everywhere */
    case 2: return attest_rng_below(rng, 3) == 0 ? tie_value          /* a plateau around the */
                                                 : (float)attest_rng_normal(rng, tie_value, 1.0);
    default: return (float)ldexp((double)attest_rng_uniform(rng, -1.0f, 1.0f),
                                 (int)attest_rng_range(rng, -140, 127)); /* any exponent */
    }
}

attest_status attest_topk_generate(uint64_t seed, const attest_topk_gen_bounds *bounds,
                                   attest_topk_case *c)
{
    ATTEST_RETURN_IF(c == NULL, ATTEST_ERR_INVALID_ARGUMENT, "topk generate: NULL case");
    attest_topk_gen_bounds g = bounds ? *bounds : attest_topk_gen_defaults();
    ATTEST_RETURN_IF(g.max_batch < 1 || g.max_next_n < 1 || g.max_width < 1 || g.max_k < 1 ||
                         g.max_width > ATTEST_TOPK_MAX_WIDTH || g.max_k > ATTEST_TOPK_MAX_K,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "topk generate: bounds out of range (batch %d, next_n %d, width %d, k %d)",
                     g.max_batch, g.max_next_n, g.max_width, g.max_k);
    attest_rng rng;
    attest_rng_seed(&rng, seed);
    memset(c, 0, sizeof *c);
    c->seed = seed;
    attest_topk_params *p = &c->p;
    p->b = (int32_t)attest_rng_range(&rng, 1, g.max_batch);
    p->next_n = (int32_t)attest_rng_range(&rng, 1, g.max_next_n);
    p->width = (int32_t)attest_rng_range(&rng, 1, g.max_width);
    static const int32_t ks[] = {1, 2, 7, 16, 64, 100, 128, 256, 512, 2048};
    p->k = attest_rng_below(&rng, 3) == 0 ? (int32_t)attest_rng_range(&rng, 1, g.max_k)
                                          : ks[attest_rng_below(&rng, sizeof ks / sizeof ks[0])];
    if (p->k > g.max_k) p->k = g.max_k;
    p->blocks_per_req = (p->width + 63) / 64 + (int32_t)attest_rng_below(&rng, 2);
    p->num_blocks = p->b * p->blocks_per_req + (int32_t)attest_rng_below(&rng, 4);
    ATTEST_FORWARD(attest_topk_case_alloc(c));

    /* Block table: distinct physical blocks drawn from a shuffled pool, so a translation
     * through the wrong entry lands on another request's (or no request's) block. */
    int32_t *pool = malloc((size_t)p->num_blocks * sizeof *pool);
    if (pool == NULL) {
        attest_topk_case_free(c);
        ATTEST_RETURN_IF(1, ATTEST_ERR_OUT_OF_MEMORY, "topk generate: out of memory");
    }
    for (int32_t i = 0; i < p->num_blocks; i++) pool[i] = i;
    for (int32_t i = p->num_blocks - 1; i > 0; i--) {
        int32_t j = (int32_t)attest_rng_below(&rng, (uint64_t)i + 1), t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    for (int32_t i = 0; i < p->b * p->blocks_per_req; i++) c->block_table[i] = pool[i];
    free(pool);

    for (int32_t q = 0; q < p->b; q++) c->context_lens[q] = draw_length(&rng, p->width, p->k);
    const int past_style = (int)attest_rng_below(&rng, 5);
    for (int32_t r = 0; r < attest_topk_rows(p); r++) {
        const int style = (int)attest_rng_below(&rng, 4);
        const int specials = attest_rng_below(&rng, 3) == 0; /* NaN / -inf / +inf in the row */
        const float tie_value = (float)attest_rng_normal(&rng, 0.0, 2.0);
        const int32_t len = attest_topk_row_length(c, r);
        float *row = c->logits + (size_t)r * (size_t)p->width;
        for (int32_t t = 0; t < p->width; t++) {
            float v;
            if (t < len) {
                v = draw_value(&rng, style, tie_value);
                if (specials) {
                    uint64_t u = attest_rng_below(&rng, 16);
                    if (u == 0) v = NAN;
                    else if (u == 1) v = -INFINITY;
                    else if (u == 2 && attest_rng_below(&rng, 4) == 0) v = INFINITY;
                }
            } else {
                /* Past the length: what a kernel must not read. Huge values, +inf and NaN would
                 * win a selection that ignores the length; -inf and 0 are the masking values. */
                switch (past_style) {
                case 0: v = -INFINITY; break;
                case 1: v = 0.0f; break;
                case 2: v = 1e30f; break;
                case 3: v = INFINITY; break;
                default: v = NAN; break;
                }
            }
            row[t] = v;
        }
    }
    return ATTEST_OK;
}
