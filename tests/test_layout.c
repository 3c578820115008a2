/* Unit tests of the layout module: offsets pinned from docs/kernels.md sections 2-4, descriptor errors,
 * the region map, and a pool round trip checked against an element-by-element computation
 * written here from the spec (its own offsets, fp8/bf16 rounding by nearest-value search and
 * power-of-two ceilings by frexp), never by calling the codec under test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/layout.h"

/* --- independent oracles ------------------------------------------------------------------- */

/* e4m3fn value of a code from the format definition; code 0x7F stands for the virtual next step
 * 480, so that searching codes 0..0x7F for the nearest value rounds |x| > 464 to "NaN". */
static double ref_fp8_mag(unsigned code)
{
    unsigned e = (code >> 3) & 15u, m = code & 7u;
    if (code == 0x7Fu) return 480.0;
    return e == 0 ? ldexp((double)m, -9) : ldexp(1.0 + m / 8.0, (int)e - 7);
}

/* Nearest e4m3fn code to x, ties to the even code; NaN/inf/overflow by the overflow rule. */
static uint8_t ref_fp8_encode(float x, int satfinite)
{
    static double mag[128];
    if (mag[1] == 0.0)
        for (unsigned c = 0; c < 128u; c++) mag[c] = ref_fp8_mag(c);
    uint8_t sign = signbit(x) ? 0x80 : 0x00;
    if (isnan(x)) return (uint8_t)(sign | 0x7F);
    double a = fabs((double)x);
    unsigned best = 0;
    for (unsigned c = 1; c <= 0x7Fu; c++) {
        double d = fabs(mag[c] - a), db = fabs(mag[best] - a);
        if (d < db || (d == db && (c & 1u) == 0)) best = c;
    }
    if (best == 0x7Fu) best = satfinite ? 0x7Eu : 0x7Fu;
    return (uint8_t)(sign | best);
}

static double ref_fp8_value(uint8_t code)
{
    double v = ref_fp8_mag(code & 0x7Fu);
    return (code & 0x80u) ? -v : v;
}

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Nearest bf16 to a finite float: of the two bf16 values around x, the closer; ties to even. */
static uint16_t ref_bf16(float x)
{
    uint32_t lo = bits_of(x) >> 16;
    double a = (double)float_of(lo << 16), b = (double)float_of((lo + 1u) << 16);
    double da = fabs((double)x - a), db = fabs((double)x - b);
    return (uint16_t)((da < db || (da == db && (lo & 1u) == 0)) ? lo : lo + 1u);
}

/* ceil(log2(s)) for s > 0 by frexp: s = m * 2^e with m in [0.5, 1). */
static int ref_ceil_log2(double s)
{
    int e;
    double m = frexp(s, &e);
    return m == 0.5 ? e - 1 : e;
}

/* The scale the spec says a tile with this amax gets, as a float and as its stored bytes. */
static float ref_scale(float amax, const attest_scale_policy *p, int ue8m0, uint8_t bytes[4])
{
    float s;
    if (p->kind == ATTEST_SCALE_RAW) {
        s = (amax < 1e-4f ? 1e-4f : amax) / 448.0f;
    } else {
        float x;
        int e;
        if (p->writer == ATTEST_UE8M0_FLASHMLA) {
            x = amax / 448.0f;
            x = x < 1e-4f ? 1e-4f : x;
            e = ref_ceil_log2(x);
        } else if (p->writer == ATTEST_UE8M0_SGLANG) {
            x = (amax < 1e-8f ? 1e-8f : amax) / 448.0f;
            e = ref_ceil_log2(x);
        } else {
            x = amax / 448.0f;
            e = x > 0.0f ? ref_ceil_log2(x) : -126;
            if (e < -126) e = -126;
        }
        s = ldexpf(1.0f, e);
        if (ue8m0) {
            bytes[0] = (uint8_t)(e + 127);
            return s;
        }
    }
    uint32_t u = bits_of(s);
    for (int k = 0; k < 4; k++) bytes[k] = (uint8_t)(u >> (8 * k));
    return s;
}

/* Deterministic values: per-tile magnitudes spread over 2^-20..2^8, some all-zero tiles. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rng_unit(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* --- pinned offsets ------------------------------------------------------------------------ */

static attest_layout make(attest_layout_id id, uint32_t P, uint64_t stride)
{
    attest_layout l;
    assert_ok(attest_layout_make(id, P, stride, &l));
    return l;
}

/* mla-v4 strides and the scale region of docs/kernels.md section 2. */
static void test_mla_v4_offsets(void **state)
{
    (void)state;
    const struct { uint32_t P; uint64_t payload, stride; } pins[] = {
        {64, 37376, 37440}, {256, 149504, 149760}, {2, 1168, 1728}, {1, 584, 1152}};
    for (size_t k = 0; k < sizeof pins / sizeof pins[0]; k++) {
        attest_layout l = make(ATTEST_LAYOUT_MLA_V4, pins[k].P, 0);
        assert_int_equal(l.page_payload, pins[k].payload);
        assert_int_equal(l.page_stride, pins[k].stride);
        assert_int_equal(attest_layout_default_stride(ATTEST_LAYOUT_MLA_V4, pins[k].P),
                         pins[k].stride);
        for (uint32_t t = 0; t < pins[k].P; t++) {
            attest_token_offsets o;
            assert_ok(attest_layout_token_offsets(&l, t, &o));
            assert_int_equal(o.fp8, 576u * t);
            assert_int_equal(o.rope, 576u * t + 448u);
            for (uint32_t i = 0; i < 7; i++) assert_int_equal(o.scale[i], pins[k].P * 576u + 8u * t + i);
            assert_int_equal(o.pad, pins[k].P * 576u + 8u * t + 7u);
            assert_int_equal(o.pad_bytes, 1);
        }
    }
    attest_layout l = make(ATTEST_LAYOUT_MLA_V4, 64, 0);
    assert_int_equal(l.token_bytes, 584);
    assert_int_equal(l.fp8_dim, 448);
    assert_int_equal(l.rope_dim, 64);
    assert_int_equal(l.num_scales, 7);
    assert_int_equal(l.scale_tile, 64);
    assert_int_equal(l.scale_format, ATTEST_SCALE_UE8M0);
    assert_int_equal(l.k_dim, 512);
    assert_int_equal(l.v_dim, 512);
    attest_token_offsets o;
    assert_ok(attest_layout_token_offsets(&l, 0, &o));
    assert_int_equal(o.scale[0], 36864); /* the scale region of a P=64 page */
}

/* mla-v32 records: fields at 0 / 512 / 528 of each 656-byte record (docs/kernels.md section 3). */
static void test_mla_v32_offsets(void **state)
{
    (void)state;
    attest_layout l = make(ATTEST_LAYOUT_MLA_V32, 64, 0);
    assert_int_equal(l.page_stride, 64u * 656u);
    assert_int_equal(l.token_bytes, 656);
    assert_int_equal(l.k_dim, 576);
    assert_int_equal(l.v_dim, 512);
    assert_int_equal(l.scale_format, ATTEST_SCALE_F32);
    assert_int_equal(l.num_scales, 4);
    assert_int_equal(l.scale_tile, 128);
    for (uint32_t t = 0; t < 64; t++) {
        attest_token_offsets o;
        assert_ok(attest_layout_token_offsets(&l, t, &o));
        assert_int_equal(o.fp8, 656u * t);
        for (uint32_t i = 0; i < 4; i++) assert_int_equal(o.scale[i], 656u * t + 512u + 4u * i);
        assert_int_equal(o.rope, 656u * t + 528u);
        assert_int_equal(o.pad_bytes, 0);
    }
    attest_layout wide = make(ATTEST_LAYOUT_MLA_V32, 64, 65u * 656u); /* upstream's P+1 records */
    assert_int_equal(wide.page_stride, 65u * 656u);
    assert_int_equal(wide.page_payload, 64u * 656u);
}

/* c4-indexer: position t's scale at byte 8192 + 4t, float element 2048 + t (docs/kernels.md section 4). */
static void test_c4_indexer_offsets(void **state)
{
    (void)state;
    attest_layout l = make(ATTEST_LAYOUT_C4_INDEXER, 64, 0);
    assert_int_equal(l.page_stride, 8448);
    assert_int_equal(l.page_payload, 8448);
    assert_int_equal(l.token_bytes, 132);
    assert_int_equal(l.fp8_dim, 128);
    assert_int_equal(l.rope_dim, 0);
    assert_int_equal(l.k_dim, 128);
    assert_int_equal(l.num_scales, 1);
    for (uint32_t t = 0; t < 64; t++) {
        attest_token_offsets o;
        assert_ok(attest_layout_token_offsets(&l, t, &o));
        assert_int_equal(o.fp8, 128u * t);
        assert_int_equal(o.scale[0], 8192u + 4u * t);
        assert_int_equal(o.scale[0] % 4u, 0);
        assert_int_equal(o.scale[0] / 4u, 2048u + t);
    }
}

static void test_names(void **state)
{
    (void)state;
    const char *names[] = {"mla-v4", "mla-v32", "c4-indexer"};
    const attest_layout_id ids[] = {ATTEST_LAYOUT_MLA_V4, ATTEST_LAYOUT_MLA_V32,
                                    ATTEST_LAYOUT_C4_INDEXER};
    for (int k = 0; k < 3; k++) {
        attest_layout_id id;
        assert_ok(attest_layout_from_name(names[k], &id));
        assert_int_equal(id, ids[k]);
        assert_string_equal(attest_layout_name(ids[k]), names[k]);
    }
    attest_layout_id id;
    assert_int_equal(attest_layout_from_name("mla-v5", &id), ATTEST_ERR_NOT_FOUND);
    assert_non_null(strstr(attest_last_error(), "mla-v5"));
    assert_null(attest_layout_name((attest_layout_id)0));
}

/* Bad page sizes and strides are refused with a message naming the problem. */
static void test_make_errors(void **state)
{
    (void)state;
    attest_layout l;
    const struct { attest_layout_id id; uint32_t P; uint64_t stride; const char *word; } bad[] = {
        {ATTEST_LAYOUT_MLA_V4, 0, 0, "page size"},
        {ATTEST_LAYOUT_MLA_V4, ATTEST_LAYOUT_MAX_PAGE_SIZE + 1u, 0, "page size"},
        {ATTEST_LAYOUT_C4_INDEXER, 63, 0, "not 64"},
        {ATTEST_LAYOUT_C4_INDEXER, 128, 0, "not 64"},
        {ATTEST_LAYOUT_MLA_V4, 64, 37376, "stride"},     /* the payload, not rounded */
        {ATTEST_LAYOUT_MLA_V4, 64, 37440u + 576u, "stride"},
        {ATTEST_LAYOUT_MLA_V32, 64, 64u * 656u - 4u, "smaller"},
        {ATTEST_LAYOUT_MLA_V32, 64, 64u * 656u + 2u, "multiple of 4"},
        {ATTEST_LAYOUT_MLA_V32, 64, ATTEST_LAYOUT_MAX_PAGE_STRIDE + 4u, "larger"},
        {ATTEST_LAYOUT_C4_INDEXER, 64, 8444, "smaller"},
        {(attest_layout_id)9, 64, 0, "unknown"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        attest_clear_error();
        assert_int_equal(attest_layout_make(bad[k].id, bad[k].P, bad[k].stride, &l),
                         ATTEST_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(attest_last_error(), bad[k].word));
    }
    assert_int_equal(attest_layout_default_stride(ATTEST_LAYOUT_C4_INDEXER, 32), 0);
    assert_int_equal(attest_layout_default_stride(ATTEST_LAYOUT_MLA_V4, 0), 0);
    assert_ok(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, 64, 8448u + 64u, &l));
    assert_ok(attest_layout_make(ATTEST_LAYOUT_MLA_V4, 64, 37440, &l));
    assert_ok(attest_layout_make(ATTEST_LAYOUT_MLA_V4, ATTEST_LAYOUT_MAX_PAGE_SIZE, 0, &l));
}

static void test_token_out_of_range(void **state)
{
    (void)state;
    attest_layout l = make(ATTEST_LAYOUT_MLA_V32, 16, 0);
    attest_token_offsets o;
    assert_ok(attest_layout_token_offsets(&l, 15, &o));
    assert_int_equal(attest_layout_token_offsets(&l, 16, &o), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "token 16"));
    uint8_t page[16 * 656];
    float values[576] = {0};
    attest_scale_policy p = {ATTEST_SCALE_POW2, ATTEST_UE8M0_SGLANG, ATTEST_FP8_NONSAT};
    assert_int_equal(attest_layout_encode_token(&l, page, 16, values, &p),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_true(isnan(attest_layout_token_scale(&l, page, 16, 0)));
    assert_true(isnan(attest_layout_token_scale(&l, page, 0, 4)));
}

/* Spec-derived padding: mla-v4 per-token pad bytes and everything past the payload. */
static int spec_padding(const attest_layout *l, uint64_t b)
{
    uint64_t P = l->page_size;
    if (l->id == ATTEST_LAYOUT_MLA_V4) {
        if (b >= P * 584u) return 1;
        return b >= P * 576u && (b - P * 576u) % 8u == 7u;
    }
    if (l->id == ATTEST_LAYOUT_MLA_V32) return b >= P * 656u;
    return b >= 8448u;
}

/* The region map tiles [0, stride) in byte order, and its padding is exactly the spec's. */
static void test_regions(void **state)
{
    (void)state;
    const attest_layout ls[] = {make(ATTEST_LAYOUT_MLA_V4, 64, 0), make(ATTEST_LAYOUT_MLA_V4, 3, 0),
                                make(ATTEST_LAYOUT_MLA_V32, 4, 5u * 656u),
                                make(ATTEST_LAYOUT_MLA_V32, 8, 0),
                                make(ATTEST_LAYOUT_C4_INDEXER, 64, 8448u + 128u),
                                make(ATTEST_LAYOUT_C4_INDEXER, 64, 0)};
    const size_t want[] = {4u * 64u + 1u, 4u * 3u + 1u, 3u * 4u + 1u, 3u * 8u, 3, 2};
    for (size_t k = 0; k < sizeof ls / sizeof ls[0]; k++) {
        const attest_layout *l = &ls[k];
        size_t n = 0;
        assert_int_equal(attest_layout_regions(l, NULL, 0, &n), ATTEST_ERR_INVALID_ARGUMENT);
        assert_int_equal(n, want[k]);
        attest_layout_region *r = calloc(n, sizeof *r);
        assert_non_null(r);
        size_t small = 0;
        assert_int_equal(attest_layout_regions(l, r, n - 1u, &small), ATTEST_ERR_INVALID_ARGUMENT);
        assert_int_equal(small, n);
        assert_ok(attest_layout_regions(l, r, n, &n));
        uint64_t at = 0;
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(r[i].begin, at);
            assert_true(r[i].end > r[i].begin);
            assert_int_equal(r[i].count * r[i].elem_bytes, r[i].end - r[i].begin);
            assert_non_null(r[i].elem_type);
            for (uint64_t b = r[i].begin; b < r[i].end; b++) {
                assert_int_equal(r[i].is_padding, spec_padding(l, b));
                assert_int_equal(attest_layout_is_padding_byte(l, b), spec_padding(l, b));
            }
            at = r[i].end;
        }
        assert_int_equal(at, l->page_stride);
        assert_int_equal(attest_layout_is_padding_byte(l, l->page_stride), 0);
        free(r);
    }
}

/* --- pool round trip ----------------------------------------------------------------------- */

typedef struct pool_case {
    attest_layout_id id;
    uint32_t P;
    uint64_t stride; /* 0: default */
    attest_scale_policy policy;
    uint8_t poison;
} pool_case;

/* Spec offsets (relative to the page base) of token slot s, computed here independently. */
static uint64_t spec_fp8(const attest_layout *l, uint32_t s)
{
    return l->id == ATTEST_LAYOUT_MLA_V4 ? 576u * s : l->id == ATTEST_LAYOUT_MLA_V32 ? 656u * s : 128u * s;
}
static uint64_t spec_scale(const attest_layout *l, uint32_t s, uint32_t i)
{
    if (l->id == ATTEST_LAYOUT_MLA_V4) return (uint64_t)l->page_size * 576u + 8u * s + i;
    if (l->id == ATTEST_LAYOUT_MLA_V32) return 656u * s + 512u + 4u * i;
    return 8192u + 4u * s;
}
static uint64_t spec_rope(const attest_layout *l, uint32_t s)
{
    return l->id == ATTEST_LAYOUT_MLA_V4 ? 576u * s + 448u : 656u * s + 528u;
}

static void run_pool_case(const pool_case *c)
{
    attest_layout l = make(c->id, c->P, c->stride);
    const uint32_t num_pages = 5;
    const int32_t table[3] = {3, 0, 4}; /* logical page j -> physical page; 1 and 2 unused */
    const uint64_t num_tokens = 2u * c->P + (c->P + 1u) / 2u; /* a partial last page */
    const uint32_t fp8_dim = c->id == ATTEST_LAYOUT_MLA_V4 ? 448 : c->id == ATTEST_LAYOUT_MLA_V32 ? 512 : 128;
    const uint32_t rope = c->id == ATTEST_LAYOUT_C4_INDEXER ? 0 : 64;
    const uint32_t tile = c->id == ATTEST_LAYOUT_MLA_V4 ? 64 : 128, kd = fp8_dim + rope;
    const int ue8m0 = c->id == ATTEST_LAYOUT_MLA_V4;
    size_t pool_bytes = (size_t)num_pages * l.page_stride;

    float *values = malloc(sizeof(float) * num_tokens * kd);
    double *got = malloc(sizeof(double) * num_tokens * kd);
    uint8_t *pool = malloc(pool_bytes), *written = calloc(pool_bytes, 1);
    assert_true(values && got && pool && written);
    for (uint64_t j = 0; j < num_tokens; j++)
        for (uint32_t i = 0; i < kd; i++) {
            uint32_t t = i / tile;
            double mag = ldexp(1.0, (int)((j * 7u + t * 3u) % 29u) - 20);
            double v = (rng_unit() * 2.0 - 1.0) * mag;
            if (i < fp8_dim && (j + t) % 11u == 5u) v = 0.0; /* an all-zero tile */
            values[j * kd + i] = (float)v;
        }
    attest_pool_poison(&l, pool, num_pages, c->poison);
    assert_ok(attest_pool_encode(&l, pool, num_pages, table, num_tokens, values, &c->policy));
    assert_ok(attest_pool_decode(&l, pool, num_pages, table, num_tokens, got));

    for (uint64_t j = 0; j < num_tokens; j++) {
        uint32_t s = (uint32_t)(j % c->P);
        uint8_t *page = pool + (size_t)table[j / c->P] * l.page_stride;
        uint8_t *wpage = written + (size_t)table[j / c->P] * l.page_stride;
        const float *v = values + j * kd;
        for (uint32_t t = 0; t < fp8_dim / tile; t++) {
            float amax = 0.0f;
            for (uint32_t i = 0; i < tile; i++) amax = fmaxf(amax, fabsf(v[t * tile + i]));
            uint8_t sb[4];
            float scale = ref_scale(amax, &c->policy, ue8m0, sb);
            uint64_t so = spec_scale(&l, s, t);
            for (int k = 0; k < (ue8m0 ? 1 : 4); k++) {
                assert_int_equal(page[so + k], sb[k]);
                wpage[so + k] = 1;
            }
            assert_true(attest_layout_token_scale(&l, page, s, t) == (double)scale);
            for (uint32_t i = 0; i < tile; i++) {
                uint32_t e = t * tile + i;
                uint8_t code = ref_fp8_encode(v[e] / scale,
                                              c->policy.overflow == ATTEST_FP8_SATFINITE);
                uint64_t off = spec_fp8(&l, s) + e;
                assert_int_equal(page[off], code);
                wpage[off] = 1;
                assert_true(got[j * kd + e] == ref_fp8_value(code) * (double)scale);
            }
        }
        for (uint32_t r = 0; r < rope; r++) {
            uint16_t h = ref_bf16(v[fp8_dim + r]);
            uint64_t off = spec_rope(&l, s) + 2u * r;
            assert_int_equal(page[off] | page[off + 1] << 8, h);
            wpage[off] = wpage[off + 1] = 1;
            assert_true(got[j * kd + fp8_dim + r] == (double)float_of((uint32_t)h << 16));
        }
    }
    /* every byte the spec does not assign to a written value still holds the poison: per-token
     * pad, page padding, unwritten slots of the last page and unused pages */
    size_t untouched = 0;
    for (size_t b = 0; b < pool_bytes; b++) {
        if (written[b]) continue;
        assert_int_equal(pool[b], c->poison);
        untouched++;
    }
    for (int j = 0; j < 3; j++)
        for (uint64_t b = 0; b < l.page_stride; b++)
            if (spec_padding(&l, b)) assert_int_equal(written[(size_t)table[j] * l.page_stride + b], 0);
    assert_true(untouched >= 2u * l.page_stride); /* the two unused pages at least */
    free(values);
    free(got);
    free(pool);
    free(written);
}

/* Quantize through a permuted page table with page strides larger than the payload, then check
 * every byte and every dequantized value against the spec-derived computation. */
static void test_pool_round_trip(void **state)
{
    (void)state;
    const pool_case cases[] = {
        {ATTEST_LAYOUT_MLA_V4, 64, 0, {ATTEST_SCALE_POW2, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_NONSAT}, 0xFF},
        {ATTEST_LAYOUT_MLA_V4, 2, 0, {ATTEST_SCALE_POW2, ATTEST_UE8M0_SGLANG, ATTEST_FP8_SATFINITE}, 0xA5},
        {ATTEST_LAYOUT_MLA_V4, 256, 0, {ATTEST_SCALE_POW2, ATTEST_UE8M0_DEEPGEMM, ATTEST_FP8_NONSAT}, 0x5A},
        {ATTEST_LAYOUT_MLA_V32, 64, 65u * 656u, {ATTEST_SCALE_POW2, ATTEST_UE8M0_DEEPGEMM, ATTEST_FP8_NONSAT}, 0xFF},
        {ATTEST_LAYOUT_MLA_V32, 16, 17u * 656u + 4u, {ATTEST_SCALE_RAW, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_NONSAT}, 0xA5},
        {ATTEST_LAYOUT_MLA_V32, 3, 0, {ATTEST_SCALE_POW2, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_SATFINITE}, 0x00},
        {ATTEST_LAYOUT_C4_INDEXER, 64, 8448u + 256u, {ATTEST_SCALE_RAW, ATTEST_UE8M0_SGLANG, ATTEST_FP8_NONSAT}, 0xFF},
        {ATTEST_LAYOUT_C4_INDEXER, 64, 0, {ATTEST_SCALE_POW2, ATTEST_UE8M0_SGLANG, ATTEST_FP8_NONSAT}, 0x77},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) run_pool_case(&cases[k]);
}

/* The overflow rule reaches the bytes: an inf under DeepGEMM's clamp (scale 2^127) encodes as
 * NaN without saturation and as 448 with it. */
static void test_overflow_policy(void **state)
{
    (void)state;
    attest_layout l = make(ATTEST_LAYOUT_C4_INDEXER, 64, 0);
    uint8_t page[8448];
    float v[128] = {0};
    v[5] = INFINITY;
    v[6] = -INFINITY;
    attest_scale_policy p = {ATTEST_SCALE_POW2, ATTEST_UE8M0_DEEPGEMM, ATTEST_FP8_NONSAT};
    assert_ok(attest_layout_encode_token(&l, page, 3, v, &p));
    assert_int_equal(page[3 * 128 + 5], 0x7F);
    assert_int_equal(page[3 * 128 + 6], 0xFF);
    assert_int_equal(page[3 * 128 + 7], 0x00);
    assert_int_equal(page[8192 + 12 + 3], 0x7F); /* 2^127 as little-endian float: 0x7F000000 */
    p.overflow = ATTEST_FP8_SATFINITE;
    assert_ok(attest_layout_encode_token(&l, page, 3, v, &p));
    assert_int_equal(page[3 * 128 + 5], 0x7E);
    assert_int_equal(page[3 * 128 + 6], 0xFE);
}

/* A raw scale quantizes by one float32 division: for this amax and value, v / s is exactly 152
 * (a tie, to even: 160 = 0x72) while v * (1 / s) is 151.99998 (144 = 0x71). */
static void test_raw_scale_divides(void **state)
{
    (void)state;
    attest_layout l = make(ATTEST_LAYOUT_C4_INDEXER, 64, 0);
    uint8_t page[8448];
    float v[128] = {0};
    v[0] = float_of(0x401CB2EAu); /* amax 2.44842 */
    v[1] = float_of(0x3F54A9ABu); /* 0.8307139 */
    attest_scale_policy p = {ATTEST_SCALE_RAW, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_NONSAT};
    assert_ok(attest_layout_encode_token(&l, page, 0, v, &p));
    assert_int_equal(page[0], 0x7E); /* amax / (amax / 448) rounds to 448 */
    assert_int_equal(page[1], 0x72);
    float s = v[0] / 448.0f;
    uint32_t u = bits_of(s);
    for (int k = 0; k < 4; k++) assert_int_equal(page[8192 + k], (u >> (8 * k)) & 0xFFu);
}

/* A NaN in a tile makes its amax NaN, as torch's max does: FlashMLA's rule then stores the NaN
 * scale byte 0xFF and the whole tile dequantizes to NaN; DeepGEMM's clamps the byte to 254. */
static void test_nan_tile(void **state)
{
    (void)state;
    attest_layout l = make(ATTEST_LAYOUT_MLA_V4, 2, 0);
    uint8_t page[1728];
    float v[512] = {0};
    v[64] = NAN; /* tile 1 */
    v[65] = 1.0f;
    v[0] = 1.0f; /* tile 0 stays finite */
    attest_scale_policy p = {ATTEST_SCALE_POW2, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_NONSAT};
    assert_ok(attest_layout_encode_token(&l, page, 1, v, &p));
    assert_int_equal(page[2 * 576 + 8 + 0], 119); /* 1/448 -> 2^-8 */
    assert_int_equal(page[2 * 576 + 8 + 1], 0xFF);
    assert_int_equal(page[576 + 65] & 0x7F, 0x7F);
    double out[512];
    attest_layout_decode_token(&l, page, 1, out);
    assert_true(out[0] == 1.0);
    assert_true(isnan(out[65]) && isnan(out[66]));
    p.writer = ATTEST_UE8M0_DEEPGEMM;
    assert_ok(attest_layout_encode_token(&l, page, 1, v, &p));
    assert_int_equal(page[2 * 576 + 8 + 1], 254);
}

/* Bad page tables and policies are errors; repeated pages are fine for reading only. */
static void test_pool_errors(void **state)
{
    (void)state;
    attest_layout l = make(ATTEST_LAYOUT_MLA_V4, 2, 0);
    uint8_t pool[3 * 1728];
    float values[4 * 512] = {0};
    double out[4 * 512];
    attest_scale_policy p = {ATTEST_SCALE_POW2, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_NONSAT};
    const int32_t neg[2] = {0, -1}, high[2] = {3, 0}, dup[2] = {1, 1}, ok[2] = {2, 0};
    assert_int_equal(attest_pool_encode(&l, pool, 3, neg, 4, values, &p), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "page_table[1] = -1"));
    assert_int_equal(attest_pool_encode(&l, pool, 3, high, 4, values, &p), ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(attest_pool_encode(&l, pool, 3, dup, 4, values, &p), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "twice"));
    assert_int_equal(attest_pool_encode(&l, pool, 1, ok, 4, values, &p), ATTEST_ERR_INVALID_ARGUMENT);
    assert_ok(attest_pool_encode(&l, pool, 3, ok, 4, values, &p));
    assert_ok(attest_pool_decode(&l, pool, 3, dup, 4, out));
    assert_int_equal(attest_pool_decode(&l, pool, 3, high, 4, out), ATTEST_ERR_INVALID_ARGUMENT);
    attest_scale_policy raw = {ATTEST_SCALE_RAW, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_NONSAT};
    assert_int_equal(attest_pool_encode(&l, pool, 3, ok, 4, values, &raw), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "UE8M0"));
    attest_scale_policy bad_writer = {ATTEST_SCALE_POW2, (attest_ue8m0_writer)7, ATTEST_FP8_NONSAT};
    assert_int_equal(attest_layout_encode_token(&l, pool, 0, values, &bad_writer),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(attest_layout_encode_token(&l, pool, 0, values, NULL), ATTEST_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mla_v4_offsets),
        cmocka_unit_test(test_mla_v32_offsets),
        cmocka_unit_test(test_c4_indexer_offsets),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_make_errors),
        cmocka_unit_test(test_token_out_of_range),
        cmocka_unit_test(test_regions),
        cmocka_unit_test(test_pool_round_trip),
        cmocka_unit_test(test_overflow_policy),
        cmocka_unit_test(test_raw_scale_divides),
        cmocka_unit_test(test_nan_tile),
        cmocka_unit_test(test_pool_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
