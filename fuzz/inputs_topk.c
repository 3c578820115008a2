/* What a top-k fuzz input means (fuzz_inputs.h, "top-k"): one decoder for fuzz/fuzz_topk.c, its
 * replay driver and `attest fuzz --kernel topk`, so the case the target judged and the case the
 * driver minimizes cannot drift apart. */
#include <math.h>
#include <string.h>

#include "fuzz_inputs.h"

#define OP_BYTES 7

static uint32_t rd(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static void apply(attest_topk_case *c, const uint8_t *op)
{
    const size_t n = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.width;
    const uint32_t a = rd(op + 1, 2), b = rd(op + 3, 4);
    switch (op[0] % 5) {
    case 0: { /* any float32 bit pattern */
        float f;
        memcpy(&f, &b, sizeof f);
        c->logits[a % n] = f;
        break;
    }
    case 1: c->logits[a % n] = c->logits[b % n]; break;
    case 2: {
        static const float classes[] = {NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 3.0e38f, -3.0e38f, 1.0f};
        const size_t at = a % n, len = 1 + (b >> 8) % 128;
        for (size_t i = at; i < at + len && i < n; i++) c->logits[i] = classes[b % 8];
        break;
    }
    case 3: c->context_lens[a % (uint32_t)c->p.b] = (int32_t)(b % (uint32_t)(c->p.width + 1)); break;
    default: {
        /* A swap keeps the entries distinct, so a translation through the wrong entry still
         * lands elsewhere. */
        const size_t m = (size_t)c->p.b * (size_t)c->p.blocks_per_req;
        const size_t i = a % m, j = b % m;
        const int32_t t = c->block_table[i];
        c->block_table[i] = c->block_table[j];
        c->block_table[j] = t;
        break;
    }
    }
}

attest_status fuzz_topk_decode(const uint8_t *data, size_t size, attest_topk_case *out, int *valid)
{
    memset(out, 0, sizeof *out);
    *valid = 0;
    if (size < FUZZ_TAIL_BYTES) return ATTEST_OK;
    uint64_t seed = 0;
    for (int i = 0; i < 8; i++) seed |= (uint64_t)data[size - 1 - i] << (8 * i);
    const uint8_t knobs = data[size - FUZZ_TAIL_BYTES];
    attest_topk_gen_bounds g = attest_topk_gen_defaults();
    if (!(knobs & 1)) { /* small cases: many per second */
        g.max_batch = 2;
        g.max_width = 200;
        g.max_k = 64;
    }
    ATTEST_FORWARD(attest_topk_generate(seed, &g, out));
    for (size_t at = 0; at + OP_BYTES <= size - FUZZ_TAIL_BYTES; at += OP_BYTES) apply(out, data + at);
    *valid = 1;
    return ATTEST_OK;
}
