/* Sparse MLA decode fuzz inputs (fuzz_inputs.h): the decoder, the case's semantic features and
 * the structure-aware operation writer.
 *
 * Operations: one byte, then its arguments. Bit 7 picks the scope (the extra scope when the case
 * has one). The low 7 bits % 9, below 126, pick
 *   0-2 a field of a cached token (fp8 bit pattern, scale, rope value), 3 a padding byte, 4 an
 *   index slot (-1 holes, duplicates, any token of the pool), 5 topk_length, 6
 *   extra_topk_length, 7 a sink (+-inf, huge, tiny), 8 a q value;
 * 126 and 127 are extended operations, the next byte % 5 picks
 *   0 a whole 64-slot tile of one query row set to -1 (an all-invalid tile),
 *   1 an index slot set to the first or last token of a page (page boundaries),
 *   2 every slot of one query row set to -1 (half of a lonely query: both scopes make one),
 *   3 every scale of one token set to one exponent (exponent classes),
 *   4 two pages of the pool swapped and every index remapped (a page-table permutation: the
 *     same attention, other addresses).
 * Every mutation keeps the case valid (indices stay in the pool), so any failing verdict is the
 * candidate's fault. Arguments are read in the order listed (where an element goes, then its
 * value), each in a statement of its own: in one `a[read()] = read()` C leaves the order to the
 * compiler, and gcc and clang then read the same input as two different cases.
 *
 * The domain. The reference accumulates in double and the candidates in float32 (bf16 on a GPU),
 * and the policy judges a candidate against float32 precision. A value float32 cannot carry (a
 * key of 448 * 2^127, a q of 3e38, whose dot products overflow to inf where the reference stays
 * finite) makes every float32 kernel "wrong", and finds nothing. So mutated values stay in the
 * range real caches and activations live in, which is also the generator's (gen_values.c:
 * tile scales up to 2^33, rope and q of order 1): fp8 bytes are any of the 256 patterns (the
 * NaN codes included); UE8M0 scales any byte up to 2^33 or the NaN byte; fp32 scales any
 * positive or negative float up to 2^34, zero or NaN; rope values any bf16 below 2^8 in
 * magnitude or NaN; q values below 2^5 or NaN. No infinities in cache or q: no writer produces
 * them, and FP8 has none. Padding bytes take any value: a kernel must never read them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/layout.h"
#include "inputs_internal.h"

#define EXTENDED 126
#define TILE 64
#define UE8M0_MAX_BYTE (127 + 33)
#define F32_SCALE_MAX_EXP 33
#define ROPE_MAX_EXP 8
#define Q_MAX_EXP 5

/* One scope of the case: its pool, layout and index list. */
typedef struct scope {
    attest_layout layout;
    uint8_t *pool;          /* for reading (features); writes go through pool_w */
    attest_tensor *pool_t;
    int64_t tokens;
    attest_tensor *indices;
    int present;
} scope;

static void scope_init(const attest_case *c, int extra, scope *s)
{
    const attest_mla_params *p = &c->params.mla;
    memset(s, 0, sizeof *s);
    if (extra && !p->has_extra) return;
    int32_t page_size = extra ? p->extra_page_size : p->page_size;
    int64_t stride = extra ? p->extra_page_stride : p->page_stride;
    int32_t pages = extra ? p->extra_num_pages : p->num_pages;
    if (attest_layout_make(p->layout, (uint32_t)page_size, (uint64_t)stride, &s->layout) != ATTEST_OK)
        abort(); /* the generator made this case: its layout is valid */
    s->pool_t = (attest_tensor *)attest_case_tensor_const(c, extra ? "extra_cache_bytes" : "cache_bytes");
    s->pool = s->pool_t->data;
    s->tokens = (int64_t)pages * page_size;
    s->indices = (attest_tensor *)attest_case_tensor_const(c, extra ? "extra_indices" : "indices");
    s->present = 1;
}

/* Page `page` of the pool, for an operation that writes within it (fuzz_writable_range). */
static uint8_t *pool_page_w(const scope *s, uint64_t page)
{
    const uint64_t stride = s->layout.page_stride;
    return (uint8_t *)fuzz_writable_range(s->pool_t, page * stride, stride) + page * stride;
}

/* Page `page` of the pool, for an operation that writes bytes [at, at + len) of it alone: the
 * next decode of the case copies back just those (a page is tens of KB; most operations write
 * one value). */
static uint8_t *pool_bytes_w(const scope *s, uint64_t page, uint64_t at, uint64_t len)
{
    const uint64_t stride = s->layout.page_stride;
    return (uint8_t *)fuzz_writable_range(s->pool_t, page * stride + at, len) + page * stride;
}

/* A bf16 pattern below 2^max_exp in magnitude, or NaN; infinities fold into the range. */
static uint16_t bf16_in_range(uint16_t v, unsigned max_exp)
{
    unsigned e = (v >> 7) & 0xFFu;
    if (e == 0xFFu && (v & 0x7Fu) != 0) return v; /* NaN */
    e %= 127u + max_exp;
    return (uint16_t)((v & 0x807Fu) | (e << 7));
}

/* A physical token: half the time one a valid index selects (where a change shows). */
static int64_t pick_token(const scope *s, fuzz_input *in)
{
    uint8_t how = (uint8_t)fuzz_head_uint(in, 1);
    size_t n = attest_tensor_count(s->indices);
    if ((how & 1) && n > 0) {
        int32_t idx = ((const int32_t *)s->indices->data)[fuzz_head_uint(in, 2) % n];
        if (idx >= 0) return idx;
    }
    return (int64_t)(fuzz_head_uint(in, 4) % (uint64_t)s->tokens);
}

static void mutate_token(const scope *s, fuzz_input *in, int field)
{
    const attest_layout *L = &s->layout;
    int64_t t = pick_token(s, in);
    const uint64_t pg = (uint64_t)(t / L->page_size);
    attest_token_offsets o;
    if (attest_layout_token_offsets(L, (uint32_t)(t % L->page_size), &o) != ATTEST_OK) abort();
    if (field == 0) { /* an fp8 element: any of the 256 patterns */
        const uint64_t d = fuzz_head_uint(in, 2) % L->fp8_dim;
        pool_bytes_w(s, pg, o.fp8 + d, 1)[o.fp8 + d] = (uint8_t)fuzz_head_uint(in, 1);
    } else if (field == 1) { /* a scale */
        const uint64_t off = o.scale[fuzz_head_uint(in, 1) % L->num_scales];
        uint8_t *at = pool_bytes_w(s, pg, off, L->scale_format == ATTEST_SCALE_UE8M0 ? 1 : 4) + off;
        if (L->scale_format == ATTEST_SCALE_UE8M0) {
            uint8_t b = (uint8_t)fuzz_head_uint(in, 1);
            *at = b == 0xFF ? b : (uint8_t)(b % (UE8M0_MAX_BYTE + 1));
        } else {
            uint8_t k = (uint8_t)fuzz_head_uint(in, 1);
            float v;
            if (k < 8) {
                static const float special[] = {NAN, 0.0f, -0.0f, 1.0f, 0x1p-126f, 0x1p33f,
                                                1e-4f / 448.0f, 448.0f};
                v = special[k];
            } else {
                float mant = 1.0f + (float)fuzz_head_uint(in, 2) / 65536.0f;
                int e = (int)(fuzz_head_uint(in, 1) % (126 + F32_SCALE_MAX_EXP + 1)) - 126;
                v = ldexpf((k & 8) ? -mant : mant, e);
            }
            memcpy(at, &v, sizeof v);
        }
    } else { /* a rope element (layouts without rope get an fp8 byte instead) */
        if (L->rope_dim == 0) {
            pool_bytes_w(s, pg, o.fp8, 1)[o.fp8] = (uint8_t)fuzz_head_uint(in, 1);
            return;
        }
        uint16_t v = bf16_in_range((uint16_t)fuzz_head_uint(in, 2), ROPE_MAX_EXP);
        const uint64_t off = o.rope + 2 * (fuzz_head_uint(in, 1) % L->rope_dim);
        uint8_t *at = pool_bytes_w(s, pg, off, 2) + off;
        at[0] = (uint8_t)v; /* little-endian, as the layout stores it */
        at[1] = (uint8_t)(v >> 8);
    }
}

/* Any byte that belongs to no value: the per-token pad byte, or the padding of a page. */
static void mutate_padding(const scope *s, fuzz_input *in)
{
    const attest_layout *L = &s->layout;
    int64_t t = pick_token(s, in);
    const uint64_t pg = (uint64_t)(t / L->page_size);
    uint64_t spare = L->page_stride - L->page_payload;
    uint8_t v = (uint8_t)fuzz_head_uint(in, 1);
    uint32_t r = (uint32_t)fuzz_head_uint(in, 2);
    attest_token_offsets o;
    if (attest_layout_token_offsets(L, (uint32_t)(t % L->page_size), &o) != ATTEST_OK) abort();
    if ((r & 1) && o.pad_bytes > 0) {
        pool_bytes_w(s, pg, o.pad, 1)[o.pad] = v;
    } else if (spare > 0) {
        const uint64_t off = L->page_payload + (r >> 1) % spare;
        pool_bytes_w(s, pg, off, 1)[off] = v;
    }
}

static void mutate_index(const scope *s, fuzz_input *in)
{
    size_t n = attest_tensor_count(s->indices);
    if (n == 0) return;
    int32_t *idx = s->indices->data;
    uint64_t slot = fuzz_head_uint(in, 2) % n;
    uint8_t how = (uint8_t)fuzz_head_uint(in, 1);
    if (how % 3 == 0) {
        idx[slot] = -1;
    } else if (how % 3 == 1) {
        idx[slot] = idx[fuzz_head_uint(in, 2) % n]; /* a duplicate (or a -1) */
    } else {
        idx[slot] = (int32_t)(fuzz_head_uint(in, 4) % (uint64_t)s->tokens);
    }
}

static void mutate_length(attest_case *c, fuzz_input *in, const char *name, int32_t topk)
{
    attest_tensor *t = attest_case_tensor(c, name);
    if (t == NULL) return;
    int32_t *len = t->data;
    const uint64_t i = fuzz_head_uint(in, 1) % attest_tensor_count(t);
    len[i] = (int32_t)(fuzz_head_uint(in, 2) % (uint64_t)(topk + 1));
}

static void mutate_sink(attest_case *c, fuzz_input *in)
{
    attest_tensor *t = attest_case_tensor(c, "attn_sink");
    if (t == NULL) return;
    static const float choices[] = {INFINITY, -INFINITY, 0.0f, -0.0f, 30.0f, -30.0f, 1e-30f, 5.0f};
    float *sink = t->data;
    const uint64_t i = fuzz_head_uint(in, 1) % attest_tensor_count(t);
    sink[i] = choices[fuzz_head_uint(in, 1) % (sizeof choices / sizeof choices[0])];
}

static void mutate_q(attest_case *c, fuzz_input *in)
{
    attest_tensor *t = attest_case_tensor(c, "q_bf16");
    uint16_t *q = t->data;
    const uint64_t i = fuzz_head_uint(in, 4) % attest_tensor_count(t);
    q[i] = bf16_in_range((uint16_t)fuzz_head_uint(in, 2), Q_MAX_EXP);
}


/* Slots of one query row of a scope: [b, s_q, topk]. */
static int32_t row_width(const scope *s) { return (int32_t)s->indices->shape[s->indices->rank - 1]; }
static uint64_t row_count(const scope *s)
{
    const int32_t w = row_width(s);
    return w > 0 ? attest_tensor_count(s->indices) / (uint64_t)w : 0;
}

/* Exchanges n bytes of two pages, a chunk at a time: a byte loop took a coverage counter per
 * byte in fuzz builds (a tenth of a decode exec, for a page of 37 KB). */
static void swap_bytes(uint8_t *a, uint8_t *b, uint64_t n)
{
    uint8_t tmp[1024];
    while (n > 0) {
        const size_t k = n < sizeof tmp ? (size_t)n : sizeof tmp;
        memcpy(tmp, a, k);
        memcpy(a, b, k);
        memcpy(b, tmp, k);
        a += k;
        b += k;
        n -= k;
    }
}

static void apply_extended(const scope *s, fuzz_input *in)
{
    const attest_layout *L = &s->layout;
    int32_t *idx = s->indices->data;
    const int32_t w = row_width(s);
    const uint64_t rows = row_count(s);
    if (rows == 0 || w == 0) return;
    switch (fuzz_head_uint(in, 1) % 5) {
    case 0: { /* an all-invalid tile */
        int32_t *row = idx + (fuzz_head_uint(in, 2) % rows) * (uint64_t)w;
        const int32_t tiles = (w + TILE - 1) / TILE;
        const int32_t t0 = (int32_t)(fuzz_head_uint(in, 1) % (uint64_t)tiles) * TILE;
        for (int32_t i = t0; i < t0 + TILE && i < w; i++) row[i] = -1;
        break;
    }
    case 1: { /* a page's first or last token */
        uint64_t slot = fuzz_head_uint(in, 2) % attest_tensor_count(s->indices);
        uint64_t page = fuzz_head_uint(in, 2) % ((uint64_t)s->tokens / L->page_size);
        idx[slot] = (int32_t)(page * L->page_size + ((fuzz_head_uint(in, 1) & 1) ? L->page_size - 1 : 0));
        break;
    }
    case 2: { /* a query row with no valid slot in this scope */
        int32_t *row = idx + (fuzz_head_uint(in, 2) % rows) * (uint64_t)w;
        for (int32_t i = 0; i < w; i++) row[i] = -1;
        break;
    }
    case 3: { /* every scale of one token */
        int64_t t = pick_token(s, in);
        uint8_t *page = pool_page_w(s, (uint64_t)(t / L->page_size));
        attest_token_offsets o;
        if (attest_layout_token_offsets(L, (uint32_t)(t % L->page_size), &o) != ATTEST_OK) abort();
        const uint8_t e = (uint8_t)fuzz_head_uint(in, 1);
        for (uint32_t k = 0; k < L->num_scales; k++) {
            if (L->scale_format == ATTEST_SCALE_UE8M0) {
                page[o.scale[k]] = (uint8_t)(e % (UE8M0_MAX_BYTE + 1));
            } else {
                float v = ldexpf(1.0f, (int)(e % (126 + F32_SCALE_MAX_EXP + 1)) - 126);
                memcpy(page + o.scale[k], &v, sizeof v);
            }
        }
        break;
    }
    default: { /* two pages swapped, indices following them */
        const uint64_t pages = (uint64_t)s->tokens / L->page_size;
        const uint64_t a = fuzz_head_uint(in, 2) % pages, b = fuzz_head_uint(in, 2) % pages;
        if (a == b) break;
        uint8_t *pa = pool_page_w(s, a), *pb = pool_page_w(s, b);
        swap_bytes(pa, pb, L->page_stride);
        const size_t n = attest_tensor_count(s->indices);
        for (size_t i = 0; i < n; i++) {
            if (idx[i] < 0) continue;
            const uint64_t pg = (uint64_t)idx[i] / L->page_size, off = (uint64_t)idx[i] % L->page_size;
            if (pg == a) idx[i] = (int32_t)(b * L->page_size + off);
            else if (pg == b) idx[i] = (int32_t)(a * L->page_size + off);
        }
        break;
    }
    }
}

void fuzz_mla_knobs(uint8_t knobs, attest_gen_options *opt)
{
    if (knobs & 1) opt->layout = (knobs & 2) ? ATTEST_LAYOUT_MLA_V32 : ATTEST_LAYOUT_MLA_V4;
    opt->edge_bytes = (knobs & 4) ? 0 : 1;
    opt->high_pools = fuzz_high_pool_knob(knobs) ? 1000 : 0;
}

void fuzz_mla_apply(attest_case *c, fuzz_input *in, int *valid)
{
    const attest_mla_params *p = &c->params.mla;
    scope scopes[2];
    scope_init(c, 0, &scopes[0]);
    scope_init(c, 1, &scopes[1]);
    for (int m = 0; m < FUZZ_MAX_MUTATIONS && fuzz_remaining(in) > 0; m++) {
        uint8_t op = (uint8_t)fuzz_head_uint(in, 1);
        const scope *s = &scopes[(op & 0x80) && scopes[1].present ? 1 : 0];
        if ((op & 0x7F) >= EXTENDED) {
            apply_extended(s, in);
            continue;
        }
        switch ((op & 0x7F) % 9) {
        case 0: mutate_token(s, in, 0); break;
        case 1: mutate_token(s, in, 1); break;
        case 2: mutate_token(s, in, 2); break;
        case 3: mutate_padding(s, in); break;
        case 4: mutate_index(s, in); break;
        case 5: mutate_length(c, in, "topk_length", p->topk); break;
        case 6: mutate_length(c, in, "extra_topk_length", p->has_extra ? p->extra_topk : 0); break;
        case 7: mutate_sink(c, in); break;
        default: mutate_q(c, in); break;
        }
    }
    if (attest_case_check_inputs(c) != ATTEST_OK) abort(); /* a mutation broke validity: a bug here */
    *valid = 1;
}

/* --- features ---------------------------------------------------------------------------- */

enum {
    F_V4, F_V32, F_EXTRA,
    F_TOPK_LEN_NONE, F_TOPK_LEN0, F_TOPK_LEN1, F_TOPK_LEN_PART, F_TOPK_LEN_FULL,
    F_HOLES_NONE, F_HOLES_SOME, F_HOLES_ALL, F_TILE_ALL_INVALID, F_LONELY, F_DUPLICATE,
    F_PAGE_FIRST, F_PAGE_LAST,
    F_SINK_NONE, F_SINK_POS_INF, F_SINK_NEG_INF, F_SINK_FINITE,
    F_FP8_NAN, F_FP8_MAX, F_FP8_SUBNORMAL, F_SCALE_NAN, F_ROPE_NAN, F_Q_NAN,
    F_EXP_MIN, F_EXP_SMALL, F_EXP_UNIT, F_EXP_LARGE,
    F_HEADS, /* six classes */
    F_S_Q1 = F_HEADS + 6, F_S_Q2,
    F_BATCH1, F_BATCH2_3, F_BATCH4,
    F_TOPK_ONE_TILE, F_TOPK_TILES,
    F_POOL_PAST_2G, F_READ_PAST_2G,
    F_COUNT
};

const char *const fuzz_mla_feature_names[] = {
    "layout=mla-v4", "layout=mla-v32", "extra-scope",
    "topk_length=none", "topk_length=0", "topk_length=1", "topk_length<topk", "topk_length=topk",
    "holes=none", "holes=some", "holes=all", "all-invalid-tile", "lonely-query", "duplicate-index",
    "page-first-token", "page-last-token",
    "sink=none", "sink=+inf", "sink=-inf", "sink=finite",
    "fp8-nan", "fp8-max", "fp8-subnormal", "scale-nan", "rope-nan", "q-nan",
    "scale-exp=min", "scale-exp<-10", "scale-exp<10", "scale-exp>=10",
    "heads=1", "heads=2", "heads=3-8", "heads=9-32", "heads=33-64", "heads>64",
    "s_q=1", "s_q>=2",
    "b=1", "b=2-3", "b>=4",
    "topk<=64", "topk>64",
    "pool>2^31", "read-page>=2^31",
};
const int fuzz_mla_feature_count = F_COUNT;
_Static_assert(sizeof fuzz_mla_feature_names / sizeof fuzz_mla_feature_names[0] == F_COUNT,
               "one name per mla feature");
_Static_assert(F_COUNT <= FUZZ_MAX_FEATURES, "FUZZ_MAX_FEATURES too small");

FUZZ_NO_COVERAGE static void exponent_class(int e, uint8_t *hits)
{
    fuzz_hit(hits, e <= -120 ? F_EXP_MIN : e < -10 ? F_EXP_SMALL : e < 10 ? F_EXP_UNIT : F_EXP_LARGE);
}

/* The values of one selected token. */
FUZZ_NO_COVERAGE static void token_features(const scope *s, int64_t t, uint8_t *hits,
                                            uint64_t fp8[FUZZ_FP8_CLASSES])
{
    const attest_layout *L = &s->layout;
    const uint8_t *page = s->pool + (uint64_t)(t / L->page_size) * L->page_stride;
    attest_token_offsets o;
    if (attest_layout_token_offsets(L, (uint32_t)(t % L->page_size), &o) != ATTEST_OK) return;
    fuzz_fp8_census(page + o.fp8, L->fp8_dim, fp8);
    for (uint32_t k = 0; k < L->num_scales; k++) {
        if (L->scale_format == ATTEST_SCALE_UE8M0) {
            const uint8_t b = page[o.scale[k]];
            if (b == 0xFF) fuzz_hit(hits, F_SCALE_NAN);
            else exponent_class((int)b - 127, hits);
        } else {
            float v;
            memcpy(&v, page + o.scale[k], sizeof v);
            int e = 0;
            if (isnan(v)) fuzz_hit(hits, F_SCALE_NAN);
            else if (v == 0.0f) exponent_class(-127, hits);
            else {
                (void)frexpf(v, &e);
                exponent_class(e - 1, hits);
            }
        }
    }
    for (uint32_t d = 0; d < L->rope_dim; d++) {
        const uint16_t v = (uint16_t)(page[o.rope + 2 * d] | page[o.rope + 2 * d + 1] << 8);
        if ((v & 0x7F80u) == 0x7F80u && (v & 0x7Fu)) fuzz_hit(hits, F_ROPE_NAN);
    }
}

/* Tokens already seen, an open-addressed set of the index slots' values (-1: empty): sized by
 * the slots, not by the pool, which may span millions of pages (a sparse pool). 1 when v is new
 * (and now in the set). */
FUZZ_NO_COVERAGE static int seen_insert(int32_t *set, uint64_t mask, int32_t v)
{
    for (uint64_t h = ((uint64_t)(uint32_t)v * 0x9E3779B97F4A7C15ULL) >> 32;; h++) {
        int32_t *e = &set[h & mask];
        if (*e == v) return 0;
        if (*e < 0) {
            *e = v;
            return 1;
        }
    }
}

/* Features of one scope's indices; valid[row] counts each row's valid slots. */
FUZZ_NO_COVERAGE static void scope_features(const attest_case *c, const scope *s,
                                            const int32_t *lens, int32_t *valid, uint8_t *hits,
                                            int32_t *seen, uint64_t seen_mask,
                                            uint64_t fp8[FUZZ_FP8_CLASSES])
{
    const int32_t w = row_width(s);
    const uint64_t rows = row_count(s);
    const int32_t *idx = s->indices->data;
    const int32_t s_q = c->params.mla.s_q;
    const uint32_t P = s->layout.page_size;
    /* The first token of the first page that starts 2^31 bytes or more into the pool: where
     * 32-bit offset arithmetic wraps. A class of its own, so that the corpus keeps an input
     * that reads there without the pool code's coverage edges keeping every moved-pool input
     * (their execs are the targets' system time). */
    const uint64_t stride = s->layout.page_stride ? s->layout.page_stride : 1;
    const int64_t high = (int64_t)((((UINT64_C(1) << 31) + stride - 1) / stride) * P);
    for (uint64_t r = 0; r < rows; r++) {
        const int32_t limit = lens ? lens[r / (uint64_t)s_q] : w;
        const int32_t *row = idx + r * (uint64_t)w;
        int32_t n = 0, in_tile = 0, tile_valid = 0;
        for (int32_t i = 0; i < limit; i++) {
            const int32_t v = row[i];
            if (v >= 0) {
                n++;
                tile_valid++;
                if (v % (int32_t)P == 0) fuzz_hit(hits, F_PAGE_FIRST);
                if (v % (int32_t)P == (int32_t)P - 1) fuzz_hit(hits, F_PAGE_LAST);
                if (v >= high) fuzz_hit(hits, F_READ_PAST_2G);
                if (seen_insert(seen, seen_mask, v)) {
                    token_features(s, v, hits, fp8);
                } else {
                    for (int32_t j = 0; j < i; j++)
                        if (row[j] == v) {
                            fuzz_hit(hits, F_DUPLICATE);
                            break;
                        }
                }
            }
            if (++in_tile == TILE || i == limit - 1) {
                if (in_tile == TILE && tile_valid == 0) fuzz_hit(hits, F_TILE_ALL_INVALID);
                in_tile = tile_valid = 0;
            }
        }
        if (limit > 0) fuzz_hit(hits, n == 0 ? F_HOLES_ALL : n == limit ? F_HOLES_NONE : F_HOLES_SOME);
        valid[r] += n;
    }
}

/* A buffer of at least n zeroed bytes kept between calls (the features run on every exec and
 * must not allocate there once the largest case has been seen); NULL when out of memory. */
FUZZ_NO_COVERAGE static void *zeroed(void **buf, size_t *cap, size_t n)
{
    if (n > *cap) {
        void *b = realloc(*buf, n);
        if (b == NULL) return NULL;
        *buf = b;
        *cap = n;
    }
    return memset(*buf, 0, n);
}

FUZZ_NO_COVERAGE void fuzz_mla_features(const attest_case *c, uint8_t *hits)
{
    static void *valid_buf, *seen_buf;
    static size_t valid_cap, seen_cap;
    uint64_t fp8[FUZZ_FP8_CLASSES] = {0};
    const attest_mla_params *p = &c->params.mla;
    fuzz_hit(hits, p->layout == ATTEST_LAYOUT_MLA_V32 ? F_V32 : F_V4);
    if ((uint64_t)p->num_pages * (uint64_t)p->page_stride > (UINT64_C(1) << 31) ||
        (p->has_extra &&
         (uint64_t)p->extra_num_pages * (uint64_t)p->extra_page_stride > (UINT64_C(1) << 31)))
        fuzz_hit(hits, F_POOL_PAST_2G);
    if (p->has_extra) fuzz_hit(hits, F_EXTRA);
    const attest_tensor *lt = attest_case_tensor_const(c, "topk_length");
    const int32_t *lens = lt ? lt->data : NULL;
    if (!lens) fuzz_hit(hits, F_TOPK_LEN_NONE);
    for (int32_t b = 0; lens && b < p->b; b++)
        fuzz_hit(hits, lens[b] == 0 ? F_TOPK_LEN0 : lens[b] == 1 ? F_TOPK_LEN1
                       : lens[b] < p->topk ? F_TOPK_LEN_PART : F_TOPK_LEN_FULL);
    const uint64_t rows = (uint64_t)p->b * (uint64_t)p->s_q;
    int32_t *valid = zeroed(&valid_buf, &valid_cap, (rows ? rows : 1) * sizeof *valid);
    if (valid == NULL) return;
    for (int extra = 0; extra < 2; extra++) {
        scope s;
        scope_init(c, extra, &s);
        if (!s.present) continue;
        uint64_t cap = 16;
        while (cap < 2 * (uint64_t)attest_tensor_count(s.indices)) cap *= 2;
        int32_t *seen = zeroed(&seen_buf, &seen_cap, cap * sizeof *seen);
        if (seen == NULL) break;
        memset(seen, 0xFF, cap * sizeof *seen);
        const attest_tensor *el = extra ? attest_case_tensor_const(c, "extra_topk_length") : lt;
        scope_features(c, &s, el ? el->data : NULL, valid, hits, seen, cap - 1, fp8);
    }
    fuzz_hit_n(hits, F_FP8_NAN, fp8[FUZZ_FP8_NAN]);
    fuzz_hit_n(hits, F_FP8_MAX, fp8[FUZZ_FP8_MAX]);
    fuzz_hit_n(hits, F_FP8_SUBNORMAL, fp8[FUZZ_FP8_SUBNORMAL]);
    for (uint64_t r = 0; r < rows; r++)
        if (valid[r] == 0) fuzz_hit(hits, F_LONELY);
    const attest_tensor *st = attest_case_tensor_const(c, "attn_sink");
    if (!st) fuzz_hit(hits, F_SINK_NONE);
    const size_t n_sink = st ? attest_tensor_count(st) : 0;
    for (size_t i = 0; i < n_sink; i++) {
        const float v = ((const float *)st->data)[i];
        fuzz_hit(hits, isinf(v) ? (v > 0 ? F_SINK_POS_INF : F_SINK_NEG_INF) : F_SINK_FINITE);
    }
    const attest_tensor *qt = attest_case_tensor_const(c, "q_bf16");
    const uint16_t *q = qt->data;
    const size_t n_q = attest_tensor_count(qt);
    uint64_t q_nan = 0;
    for (size_t i = 0; i < n_q; i++) q_nan += (q[i] & 0x7F80u) == 0x7F80u && (q[i] & 0x7Fu);
    fuzz_hit_n(hits, F_Q_NAN, q_nan);
    fuzz_hit(hits, F_HEADS + fuzz_heads_class(p->h_q));
    fuzz_hit(hits, p->s_q <= 1 ? F_S_Q1 : F_S_Q2);
    fuzz_hit(hits, p->b <= 1 ? F_BATCH1 : p->b <= 3 ? F_BATCH2_3 : F_BATCH4);
    fuzz_hit(hits, p->topk <= TILE ? F_TOPK_ONE_TILE : F_TOPK_TILES);
}

/* --- structured operations --------------------------------------------------------------- */

static const uint8_t special_fp8[] = {0x00, 0x80, 0x01, 0x81, 0x07, 0x7E, 0xFE, 0x7F, 0xFF, 0x38};

/* pick_token's arguments for a token some index selects (where a change shows), else any: the
 * "any token" form, whose length does not depend on what the slot holds when it runs. */
static void put_token(const scope *s, fuzz_rng *r, fuzz_op *op)
{
    const int32_t *idx = s->indices->data;
    const uint64_t n = attest_tensor_count(s->indices);
    int64_t t = (int64_t)fuzz_rng_below(r, (uint64_t)s->tokens);
    for (int tries = 0; tries < 4 && n > 0; tries++) {
        const int32_t v = idx[fuzz_rng_below(r, n)];
        if (v >= 0) {
            t = v;
            break;
        }
    }
    fuzz_op_put(op, 0, 1);
    fuzz_op_put(op, (uint64_t)t, 4);
}

void fuzz_mla_op(const attest_case *c, fuzz_rng *r, fuzz_op *op)
{
    const attest_mla_params *p = &c->params.mla;
    scope s;
    const int extra = p->has_extra && fuzz_rng_below(r, 4) == 0;
    scope_init(c, extra, &s);
    const uint8_t scope_bit = extra ? 0x80 : 0;
    const uint64_t rows = row_count(&s);
    const int32_t w = row_width(&s);
    const uint64_t slots = attest_tensor_count(s.indices);
    if (rows == 0 || w == 0) return;
    switch (fuzz_rng_below(r, 11)) {
    case 0: /* an all-invalid tile */
        fuzz_op_put(op, scope_bit | EXTENDED, 1);
        fuzz_op_put(op, 0, 1);
        fuzz_op_put(op, fuzz_rng_below(r, rows), 2);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)(w + TILE - 1) / TILE), 1);
        break;
    case 1: /* a page-boundary token */
        fuzz_op_put(op, scope_bit | EXTENDED, 1);
        fuzz_op_put(op, 1, 1);
        fuzz_op_put(op, fuzz_rng_below(r, slots), 2);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)s.tokens / s.layout.page_size), 2);
        fuzz_op_put(op, fuzz_rng_below(r, 2), 1);
        break;
    case 2: { /* a lonely query: the same row emptied in every scope */
        const uint64_t row = fuzz_rng_below(r, rows);
        for (int k = 0; k < 1 + (p->has_extra != 0); k++) {
            fuzz_op_put(op, (k ? 0x80 : 0) | EXTENDED, 1);
            fuzz_op_put(op, 2, 1);
            fuzz_op_put(op, row, 2);
        }
        break;
    }
    case 3: /* one token's scales at one exponent */
        fuzz_op_put(op, scope_bit | EXTENDED, 1);
        fuzz_op_put(op, 3, 1);
        put_token(&s, r, op);
        fuzz_op_put(op, fuzz_rng_below(r, 256), 1);
        break;
    case 4: /* a page permutation */
        fuzz_op_put(op, scope_bit | EXTENDED, 1);
        fuzz_op_put(op, 4, 1);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)s.tokens / s.layout.page_size), 2);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)s.tokens / s.layout.page_size), 2);
        break;
    case 5: { /* a -1 hole or a duplicate */
        const uint64_t how = fuzz_rng_below(r, 2); /* how % 3: 0 hole, 1 duplicate */
        fuzz_op_put(op, scope_bit | 4, 1);
        fuzz_op_put(op, fuzz_rng_below(r, slots), 2);
        fuzz_op_put(op, how, 1);
        if (how == 1) fuzz_op_put(op, fuzz_rng_below(r, slots), 2);
        break;
    }
    case 6: { /* topk_length: 0, 1, topk - 1, topk, or a tile boundary */
        if (!p->has_topk_length) return;
        static const int32_t pick[] = {0, 1, -1, -2, TILE, TILE + 1, TILE - 1};
        int32_t v = pick[fuzz_rng_below(r, sizeof pick / sizeof pick[0])];
        if (v == -1) v = p->topk - 1;
        if (v == -2) v = p->topk;
        if (v < 0) v = 0;
        if (v > p->topk) v = p->topk;
        fuzz_op_put(op, 5, 1);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)p->b), 1);
        fuzz_op_put(op, (uint64_t)v, 2);
        break;
    }
    case 7: /* a special fp8 code in a selected token */
        fuzz_op_put(op, scope_bit | 0, 1);
        put_token(&s, r, op);
        fuzz_op_put(op, fuzz_rng_below(r, s.layout.fp8_dim), 2);
        fuzz_op_put(op, special_fp8[fuzz_rng_below(r, sizeof special_fp8)], 1);
        break;
    case 8: /* a sink: +-inf, 0, +-30, tiny */
        if (!p->has_sink) return;
        fuzz_op_put(op, 7, 1);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)p->h_q), 1);
        fuzz_op_put(op, fuzz_rng_below(r, 8), 1);
        break;
    case 9: /* a NaN scale of a selected token */
        fuzz_op_put(op, scope_bit | 1, 1);
        put_token(&s, r, op);
        fuzz_op_put(op, fuzz_rng_below(r, s.layout.num_scales), 1);
        fuzz_op_put(op, s.layout.scale_format == ATTEST_SCALE_UE8M0 ? 0xFF : 0, 1); /* NaN */
        break;
    default: /* a NaN q value */
        fuzz_op_put(op, 8, 1);
        fuzz_op_put(op, fuzz_rng_below(r, attest_tensor_count(attest_case_tensor_const(c, "q_bf16"))), 4);
        fuzz_op_put(op, 0x7FC1, 2);
        break;
    }
}
