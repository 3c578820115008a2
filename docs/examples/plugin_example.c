/* A complete attest candidate plugin: a straightforward DSA indexer ("example-indexer").
 *
 * Build it as a shared library against attest's public headers only (no attest library to link):
 *
 *     cc -std=c11 -O2 -shared -fPIC -I attest/harness/include plugin_example.c -o libexample.so -lm
 *
 * and run it:
 *
 *     attest run --kernel indexer --candidate ./libexample.so:example-indexer --cases 50 --seed 3
 *
 * The kernel computes, for every logits row i (request b = i / next_n, MTP slot j = i % next_n)
 * and every position t, the indexer logit of docs/kernels.md section 5 in DeepGEMM's order (relu(dot) * w
 * summed over heads, times the position's fp32 scale last), and -inf past the row's valid length
 * t <= L - next_n + j. It reads the c4-indexer cache at the layout's byte offsets: position s of a
 * block at s * 128, its fp32 scale at 8192 + 4 * s. docs/writing-a-candidate.md walks through it.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/candidate.h"

enum { BLOCK = 64, DIM = 128, SCALES_AT = 8192, BLOCK_BYTES = 8448 };

/* fp8 e4m3fn: S EEEE MMM, bias 7, no infinity, NaN = S 1111 111. */
static float fp8_e4m3fn(uint8_t b)
{
    const int exp = (b >> 3) & 0xF, man = b & 7;
    if (exp == 15 && man == 7) return NAN;
    const float mag = exp == 0 ? ldexpf((float)man, -9) : ldexpf(1.0f + (float)man / 8.0f, exp - 7);
    return (b & 0x80) ? -mag : mag;
}

/* The context: a 256-entry decode table, built once by init and shared by every run. */
typedef struct example_ctx {
    float fp8[256];
} example_ctx;

static int example_init(void **ctx)
{
    example_ctx *c = malloc(sizeof *c);
    if (!c) return 1; /* nonzero: the candidate cannot start */
    for (int i = 0; i < 256; i++) c->fp8[i] = fp8_e4m3fn((uint8_t)i);
    *ctx = c;
    return 0;
}

static void example_fini(void *ctx) { free(ctx); }

/* Declines what it was not written for: the verdict is UNSUPPORTED, not a failure. */
static int example_supports(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    return args->kernel == ATTEST_KERNEL_INDEXER && args->domain == ATTEST_DOMAIN_HOST &&
           args->u.indexer.params->head_dim == DIM;
}

static int example_run(void *ctx, const attest_kernel_args *args)
{
    const example_ctx *c = ctx;
    const attest_indexer_args *a = &args->u.indexer;
    const attest_indexer_params *p = a->params;
    const int rows = p->b * p->next_n;

    for (int i = 0; i < rows; i++) {
        const int req = i / p->next_n, j = i % p->next_n;
        int len = a->context_lens[req] - p->next_n + j + 1; /* MTP causal rule */
        if (len < 0) len = 0;
        if (len > p->max_len) len = p->max_len;
        const uint8_t *q = a->q_fp8 + (size_t)i * p->heads * DIM; /* [b, next_n] = row i */
        const float *w = a->weights + (size_t)i * p->heads;
        float *out = a->logits + (size_t)i * p->max_len;

        for (int t = 0; t < p->max_len; t++) {
            if (t >= len) {
                out[t] = -INFINITY; /* the masking convention this candidate declares */
                continue;
            }
            const int blk = t / BLOCK, s = t % BLOCK;
            const int32_t phys = a->block_table[(size_t)req * p->blocks_per_req + blk];
            const uint8_t *block = a->cache + (size_t)phys * BLOCK_BYTES;
            const uint8_t *k = block + (size_t)s * DIM;
            float scale;
            memcpy(&scale, block + SCALES_AT + 4 * s, sizeof scale); /* little-endian fp32 */

            float sum = 0.0f;
            for (int h = 0; h < p->heads; h++) {
                float dot = 0.0f;
                for (int d = 0; d < DIM; d++) dot += c->fp8[q[h * DIM + d]] * c->fp8[k[d]];
                sum += fmaxf(dot, 0.0f) * w[h]; /* fmaxf(NaN, 0) = 0, as in DeepGEMM */
            }
            out[t] = sum * scale;
        }
    }
    return 0;
}

static const attest_candidate example_indexer = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "example-indexer",
    .description = "plugin example: direct float32 indexer, one row at a time",
    .kernel = ATTEST_KERNEL_INDEXER,
    .domain = ATTEST_DOMAIN_HOST,
    .conventions = {.masking = ATTEST_MASK_NEG_INF, .lse_convention = ATTEST_LSE_EXCLUDES_SINK},
    .init = example_init,
    .fini = example_fini,
    .supports = example_supports,
    .run = example_run,
};

static const attest_candidate *const candidates[] = {&example_indexer};

/* The one symbol attest looks up (ATTEST_PLUGIN_ENTRY_SYMBOL). */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const attest_candidate *const *attest_plugin_candidates(size_t *count)
{
    *count = sizeof candidates / sizeof candidates[0];
    return candidates;
}
