/* A candidate plugin that calls attest's codecs (numerics.h, layout.h) from the public headers,
 * linked through attest::plugin: an indexer that dequantizes the c4-indexer cache with
 * attest_fp8_decode and the layout's offsets, and computes the logits in float. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attest/candidate.h"
#include "attest/layout.h"
#include "attest/numerics.h"

static int codec_supports(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    return args->kernel == ATTEST_KERNEL_INDEXER && args->domain == ATTEST_DOMAIN_HOST;
}

static int codec_run(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    const attest_indexer_args *a = &args->u.indexer;
    const attest_indexer_params *p = a->params;
    attest_layout L;
    if (attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, 64, 0, &L) != ATTEST_OK) return 1;
    const int rows = p->b * p->next_n, D = p->head_dim;
    for (int i = 0; i < rows; i++) {
        const int req = i / p->next_n, j = i % p->next_n;
        int len = a->context_lens[req] - p->next_n + j + 1; /* MTP causal rule */
        if (len < 0) len = 0;
        if (len > p->max_len) len = p->max_len;
        const uint8_t *q = a->q_fp8 + (size_t)i * p->heads * D;
        const float *w = a->weights + (size_t)i * p->heads;
        float *out = a->logits + (size_t)i * p->max_len;
        for (int t = 0; t < p->max_len; t++) {
            if (t >= len) {
                out[t] = -INFINITY;
                continue;
            }
            const int32_t phys = a->block_table[(size_t)req * p->blocks_per_req + t / 64];
            const uint8_t *block = a->cache + (size_t)phys * L.page_stride;
            attest_token_offsets off;
            if (attest_layout_token_offsets(&L, (uint32_t)(t % 64), &off) != ATTEST_OK) return 1;
            float sum = 0.0f;
            for (int h = 0; h < p->heads; h++) {
                float dot = 0.0f;
                for (int d = 0; d < D; d++)
                    dot += attest_fp8_decode(q[h * D + d]) * attest_fp8_decode(block[off.fp8 + d]);
                sum += fmaxf(dot, 0.0f) * w[h];
            }
            out[t] = sum * (float)attest_layout_token_scale(&L, block, (uint32_t)(t % 64), 0);
        }
    }
    return 0;
}

static const attest_candidate codec_indexer = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "codec-indexer",
    .description = "an indexer built on attest's own codecs (install test)",
    .kernel = ATTEST_KERNEL_INDEXER,
    .domain = ATTEST_DOMAIN_HOST,
    .conventions = {.masking = ATTEST_MASK_NEG_INF, .lse_convention = ATTEST_LSE_EXCLUDES_SINK},
    .supports = codec_supports,
    .run = codec_run,
};

static const attest_candidate *const candidates[] = {&codec_indexer};

__attribute__((visibility("default"))) const attest_candidate *const *
attest_plugin_candidates(size_t *count)
{
    *count = 1;
    return candidates;
}
