/* Case generator entry points: default bounds, option checks, case seeds, info (generator.h).
 * The per-family drawing lives in gen_indexer.c and gen_mla.c. */
#include "attest/generator.h"

#include <stdlib.h>
#include <string.h>

#include "attest/rng.h"
#include "gen_internal.h"

attest_gen_options attest_gen_defaults(attest_kernel kernel)
{
    /* Small enough that a case plus its float64 reference takes about a millisecond, large
     * enough that lengths reach 4 pages of 64 (boundaries 63..257) and top-k lists have room
     * for holes and duplicates. */
    attest_gen_options o;
    memset(&o, 0, sizeof o);
    o.kernel = kernel;
    o.max_batch = 4;
    o.max_heads = 8;
    o.max_len = 300;
    o.max_topk = 64;
    o.max_next_n = 2;
    o.max_s_q = 2;
    o.page_size = 0;
    o.layout = 0;
    o.production_shape = 0;
    o.with_truth = 0;
    o.edge_bytes = 1;
    o.production_heads = 1;
    o.high_pools = 10;
    if (kernel == ATTEST_KERNEL_MLA_DECODE) o.max_batch = 3;
    return o;
}

attest_gen_options attest_gen_fuzz_defaults(attest_kernel kernel)
{
    attest_gen_options o = attest_gen_defaults(kernel);
    o.max_batch = 2;
    o.max_heads = 2;
    o.max_len = 80; /* past the 64-token page and block boundary */
    o.max_topk = 16;
    o.production_heads = 0;
    o.high_pools = 30;
    return o;
}

uint64_t attest_case_seed(uint64_t campaign_seed, uint64_t case_index)
{
    /* Output case_index + 1 of a splitmix64 stream seeded with campaign_seed, computed directly
     * (splitmix64 is a counter through a mixer). Pinned: changing it changes every campaign. */
    uint64_t state = campaign_seed + case_index * 0x9E3779B97F4A7C15ull;
    return attest_splitmix64(&state);
}

/* Bounds on the options: far above useful shapes, they turn a typo into an error instead of a
 * huge allocation. */
#define OPT_MAX_BATCH 4096
#define OPT_MAX_HEADS 1024
#define OPT_MAX_LEN (1 << 20)
#define OPT_MAX_TOPK (1 << 16)
#define OPT_MAX_NEXT_N 64
#define OPT_MAX_S_Q 1024

static attest_status check_bound(const char *name, int32_t v, int32_t lo, int32_t hi)
{
    ATTEST_RETURN_IF(v < lo || v > hi, ATTEST_ERR_INVALID_ARGUMENT,
                     "generator option %s = %d is outside [%d, %d]", name, v, lo, hi);
    return ATTEST_OK;
}

static attest_status check_options(const attest_gen_options *o)
{
    ATTEST_RETURN_IF(o == NULL, ATTEST_ERR_INVALID_ARGUMENT, "generator options are NULL");
    ATTEST_RETURN_IF(attest_kernel_name(o->kernel) == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "generator option kernel = %d is not a kernel family", (int)o->kernel);
    ATTEST_FORWARD(check_bound("max_batch", o->max_batch, 1, OPT_MAX_BATCH));
    ATTEST_FORWARD(check_bound("max_heads", o->max_heads, 1, OPT_MAX_HEADS));
    ATTEST_FORWARD(check_bound("max_len", o->max_len, 1, OPT_MAX_LEN));
    ATTEST_FORWARD(check_bound("max_topk", o->max_topk, 1, OPT_MAX_TOPK));
    ATTEST_FORWARD(check_bound("max_next_n", o->max_next_n, 1, OPT_MAX_NEXT_N));
    ATTEST_FORWARD(check_bound("max_s_q", o->max_s_q, 1, OPT_MAX_S_Q));
    ATTEST_FORWARD(check_bound("production_shape", o->production_shape, 0, 1));
    ATTEST_FORWARD(check_bound("with_truth", o->with_truth, 0, 1));
    ATTEST_FORWARD(check_bound("edge_bytes", o->edge_bytes, 0, 1));
    ATTEST_FORWARD(check_bound("production_heads", o->production_heads, 0, 1));
    ATTEST_FORWARD(check_bound("high_pools", o->high_pools, 0, 1000));
    if (o->kernel == ATTEST_KERNEL_INDEXER) {
        ATTEST_RETURN_IF(o->layout != 0 && o->layout != ATTEST_LAYOUT_C4_INDEXER,
                         ATTEST_ERR_INVALID_ARGUMENT,
                         "generator option layout = %d: the indexer reads only c4-indexer",
                         (int)o->layout);
        ATTEST_RETURN_IF(o->page_size != 0 && o->page_size != 64, ATTEST_ERR_INVALID_ARGUMENT,
                         "generator option page_size = %d: c4-indexer blocks hold 64 positions",
                         (int)o->page_size);
    } else {
        ATTEST_RETURN_IF(o->layout != 0 && o->layout != ATTEST_LAYOUT_MLA_V4 &&
                             o->layout != ATTEST_LAYOUT_MLA_V32,
                         ATTEST_ERR_INVALID_ARGUMENT,
                         "generator option layout = %d: mla-decode reads mla-v4 or mla-v32",
                         (int)o->layout);
        ATTEST_FORWARD(check_bound("page_size", o->page_size, 0,
                                   (int32_t)ATTEST_LAYOUT_MAX_PAGE_SIZE));
    }
    return ATTEST_OK;
}

attest_status attest_generate_case_info(const attest_gen_options *opt, uint64_t seed,
                                        attest_case *out, attest_gen_info *info)
{
    ATTEST_RETURN_IF(out == NULL, ATTEST_ERR_INVALID_ARGUMENT, "generator: output case is NULL");
    if (info) memset(info, 0, sizeof *info);
    memset(out, 0, sizeof *out);
    ATTEST_FORWARD(check_options(opt));
    out->kernel = opt->kernel;
    out->seed = seed;
    attest_status st = opt->kernel == ATTEST_KERNEL_INDEXER ? gen_indexer_case(opt, seed, out, info)
                                                            : gen_mla_case(opt, seed, out, info);
    if (st == ATTEST_OK && opt->high_pools > 0 && !opt->with_truth) {
        attest_rng r;
        attest_rng_seed_stream(&r, seed, GEN_STREAM_HIGH_POOL);
        if (attest_rng_below(&r, 1000) < (uint64_t)opt->high_pools)
            st = gen_spread_pools(out, &r, info);
    }
    if (st != ATTEST_OK) {
        attest_case_free(out);
        attest_gen_info_free(info);
    }
    return st;
}

attest_status attest_generate_case(const attest_gen_options *opt, uint64_t seed, attest_case *out)
{
    return attest_generate_case_info(opt, seed, out, NULL);
}

const char *attest_scale_policy_name(const attest_scale_policy *policy)
{
    static const char *const pow2[3][2] = {
        {"pow2-flashmla-nonsat", "pow2-flashmla-satfinite"},
        {"pow2-sglang-nonsat", "pow2-sglang-satfinite"},
        {"pow2-deepgemm-nonsat", "pow2-deepgemm-satfinite"}};
    if (policy == NULL) return "unknown";
    const int sat = policy->overflow == ATTEST_FP8_SATFINITE;
    if (policy->overflow != ATTEST_FP8_NONSAT && !sat) return "unknown";
    if (policy->kind == ATTEST_SCALE_RAW) return sat ? "raw-satfinite" : "raw-nonsat";
    if (policy->kind == ATTEST_SCALE_POW2 && (unsigned)policy->writer < 3u)
        return pow2[policy->writer][sat];
    return "unknown";
}
