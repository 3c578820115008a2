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

/* --- semantic features of a top-k case ---------------------------------------------------- */

enum {
    F_LEN0, F_LEN1, F_SHORT, F_LEN_K, F_LONG, F_FULL, F_EDGE_M1, F_EDGE_0, F_EDGE_P1, F_K_WIDE,
    F_NEXT_N, F_BATCH, F_NAN_IN, F_NEG_INF_IN, F_POS_INF_IN, F_HUGE_PAST, F_NAN_PAST, F_INF_PAST,
    F_ALL_NONFINITE, F_TIE_RUN, F_ZERO_SIGNS, F_COUNT
};

static const char *const feature_names[F_COUNT] = {
    "len=0", "len=1", "len<k", "len=k", "len>k", "len=width", "len%64=63", "len%64=0",
    "len%64=1", "k>=width", "next_n>1", "b>1", "nan-in-length", "-inf-in-length",
    "+inf-in-length", "huge-past-length", "nan-past-length", "inf-past-length",
    "row-all-nonfinite", "equal-neighbours", "+0-and--0",
};

int fuzz_topk_feature_count(void) { return F_COUNT; }

const char *fuzz_topk_feature_name(int i) { return i >= 0 && i < F_COUNT ? feature_names[i] : "?"; }

static void hit(uint8_t *hits, int f)
{
    if (hits[f] < 255) hits[f]++;
}

void fuzz_topk_features(const attest_topk_case *c, uint8_t hits[FUZZ_MAX_FEATURES])
{
    memset(hits, 0, FUZZ_MAX_FEATURES);
    const int32_t rows = attest_topk_rows(&c->p), w = c->p.width, k = c->p.k;
    if (k >= w) hit(hits, F_K_WIDE);
    if (c->p.next_n > 1) hit(hits, F_NEXT_N);
    if (c->p.b > 1) hit(hits, F_BATCH);
    for (int32_t r = 0; r < rows; r++) {
        const int32_t len = attest_topk_row_length(c, r);
        const float *row = c->logits + (size_t)r * (size_t)w;
        hit(hits, len == 0 ? F_LEN0 : len == 1 ? F_LEN1 : len < k ? F_SHORT : len == k ? F_LEN_K
                                                                                       : F_LONG);
        if (len == w) hit(hits, F_FULL);
        if (len > 0 && len % 64 == 63) hit(hits, F_EDGE_M1);
        if (len > 0 && len % 64 == 0) hit(hits, F_EDGE_0);
        if (len > 0 && len % 64 == 1) hit(hits, F_EDGE_P1);
        int finite = 0, pos0 = 0, neg0 = 0;
        for (int32_t t = 0; t < len; t++) {
            const float v = row[t];
            if (isnan(v)) hit(hits, F_NAN_IN);
            else if (isinf(v)) hit(hits, v < 0 ? F_NEG_INF_IN : F_POS_INF_IN);
            else finite = 1;
            if (v == 0.0f && signbit(v)) neg0 = 1;
            else if (v == 0.0f) pos0 = 1;
            if (t > 0 && v == row[t - 1]) hit(hits, F_TIE_RUN);
        }
        if (len > 0 && !finite) hit(hits, F_ALL_NONFINITE);
        if (pos0 && neg0) hit(hits, F_ZERO_SIGNS);
        for (int32_t t = len; t < w; t++) {
            const float v = row[t];
            if (isnan(v)) hit(hits, F_NAN_PAST);
            else if (isinf(v)) hit(hits, F_INF_PAST);
            else if (fabsf(v) >= 1e30f) hit(hits, F_HUGE_PAST);
        }
    }
}
