/* cpu-mla-decode: sparse MLA decode (docs/kernels.md section 6) written the way a split-KV GPU kernel is, in
 * float32.
 *
 * The top-k list of a query (main scope, then the extra scope) is cut into tiles of CPU_MLA_TILE
 * indices. Each tile yields a partial (out, lse) with its own running max, as one split of a
 * split-KV kernel does; the partials are then combined with the usual log-sum-exp rescaling. A
 * tile whose indices are all invalid has lse = -inf and is skipped by the combine (its 0/0 output
 * would otherwise turn the result into NaN). The sink is applied after the combine and the
 * returned LSE excludes it (FlashMLA). Output rounds to bf16, nearest even.
 *
 * The cache layouts (mla-v4, mla-v32) are read at their byte offsets, hard-coded here as a kernel
 * has them, independently of the harness's layout codec.
 *
 * Speed without a second function: each q . k is one float32 sum in dim order, as a scalar loop
 * takes it, but the keys are also kept transposed in blocks of CPU_MLA_LANES slots so that the
 * vector lanes run across slots (block_dots); P*V is elementwise over dims. The outputs are the
 * same bits as the scalar loops (bench_references --digest covers them).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/isa.h"
#include "attest/numerics.h"
#include "cpu_kernels.h"

/* Where a token's fields are, for one layout. */
typedef struct mla_geom {
    int v4;          /* 1: mla-v4 (page-major regions); 0: mla-v32 (interleaved records) */
    int fp8_dim;     /* 448 | 512 */
    int rope_dim;    /* 64 */
    int num_scales;  /* 7 | 4 */
    int scale_tile;  /* 64 | 128 */
    int k_dim;       /* 512 | 576 */
    int token_bytes; /* 584 | 656: a token's bytes over all its regions */
} mla_geom;

static const mla_geom geom_v4 = {1, 448, 64, 7, 64, 512, 584};
static const mla_geom geom_v32 = {0, 512, 64, 4, 128, 576, 656};

enum { V4_DATA_BYTES = 576, V4_SCALE_BYTES = 8, V32_SCALE_OFF = 512, V32_ROPE_OFF = 528 };

/* One scope of the joint softmax: a cache pool and the query's slice of its index list. */
typedef struct mla_scope {
    const uint8_t *cache;
    int page_size;
    int64_t page_stride;
    int num_pages;
    const int32_t *indices; /* this query's topk entries */
    int topk;               /* entries in the list */
    int used;               /* entries before topk_length; the rest are invalid */
} mla_scope;

static const mla_geom *geom_of(attest_layout_id id)
{
    if (id == ATTEST_LAYOUT_MLA_V4) return &geom_v4;
    if (id == ATTEST_LAYOUT_MLA_V32) return &geom_v32;
    return NULL;
}

int cpu_mla_supports(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    if (args->kernel != ATTEST_KERNEL_MLA_DECODE || args->domain != ATTEST_DOMAIN_HOST) return 0;
    const attest_mla_params *p = args->u.mla.params;
    const mla_geom *g = geom_of(p->layout);
    if (!g || p->d_qk != g->k_dim || p->d_v != 512 || p->page_size <= 0) return 0;
    if (p->page_stride < (int64_t)p->page_size * g->token_bytes) return 0;
    if (p->has_extra && (p->extra_page_size <= 0 ||
                         p->extra_page_stride < (int64_t)p->extra_page_size * g->token_bytes))
        return 0;
    return cpu_mla_tiles(p, CPU_MLA_TILE) <= CPU_MLA_MAX_TILES;
}

int cpu_mla_tiles(const attest_mla_params *p, int tile)
{
    return (p->topk + tile - 1) / tile + (p->has_extra ? (p->extra_topk + tile - 1) / tile : 0);
}

static float load_f32(const uint8_t *p)
{
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* bf16 to float is exact: the bits shifted into the high half (attest_bf16_decode, inline). */
static inline float bf16_value(uint16_t v)
{
    union { uint32_t u; float f; } x = {(uint32_t)v << 16};
    return x.f;
}

static float load_bf16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return bf16_value(v);
}

/* Dequantizes physical token `idx` of a scope into k (k_dim floats), fp8 * scale in fp32, and
 * into lane `lane` of its transposed key block kt ([k_dim][CPU_MLA_LANES]). */
static void load_token(const mla_geom *g, const cpu_mla_faults *f, const mla_scope *sc,
                       const float *lut, int32_t idx, float *k, float *kt, int lane)
{
    const int64_t page = idx / sc->page_size, slot = idx % sc->page_size;
    const int64_t stride = f->payload_stride ? (int64_t)sc->page_size * g->token_bytes
                                             : sc->page_stride;
    /* The int32 fault wraps as 32-bit hardware does (through uint32_t: no signed overflow). */
    const uint8_t *pg = f->int32_offsets
                            ? sc->cache + (int32_t)((uint32_t)page * (uint32_t)stride)
                            : sc->cache + page * stride;
    const uint8_t *data, *rope;
    float scales[8];
    if (g->v4) {
        data = pg + slot * V4_DATA_BYTES;
        rope = data + g->fp8_dim;
        const uint8_t *sb = pg + (int64_t)sc->page_size * V4_DATA_BYTES + slot * V4_SCALE_BYTES;
        for (int i = 0; i < g->num_scales; i++)
            scales[i] = attest_ue8m0_decode(sb[i + f->scale_shift]);
    } else {
        data = pg + slot * g->token_bytes;
        rope = data + V32_ROPE_OFF;
        for (int i = 0; i < g->num_scales; i++)
            scales[i] = load_f32(data + V32_SCALE_OFF + 4 * (i + f->scale_shift));
    }
    /* One scale per tile of scale_tile dims: no division per element. */
    for (int t = 0, d = 0; t < g->num_scales; t++) {
        const float sc_t = scales[t];
        for (int e = 0; e < g->scale_tile; e++, d++) k[d] = lut[data[d]] * sc_t;
    }
    if (f->bf16_pv)
        for (int d = 0; d < g->fp8_dim; d++)
            k[d] = bf16_value(attest_bf16_encode_inline(k[d]));
    for (int d = 0; d < g->rope_dim; d++) k[g->fp8_dim + d] = load_bf16(rope + 2 * d);
    for (int d = 0; d < g->k_dim; d++) kt[(size_t)d * CPU_MLA_LANES + lane] = k[d];
}

/* Scratch for one query: its keys (row-major for P*V, transposed in blocks of CPU_MLA_LANES
 * slots for the dot products), validity flags, per-slot dots and per-tile partials. */
typedef struct mla_scratch {
    float *keys;     /* [slots, k_dim] */
    float *kt;       /* [slots / CPU_MLA_LANES, k_dim, CPU_MLA_LANES] */
    uint8_t *valid;  /* [slots] */
    float *dot;      /* [slots rounded up to CPU_MLA_LANES] */
    float *scores;   /* [tile] */
    float *part_out; /* [tiles, d_v] */
    float *part_lse; /* [tiles] */
    float *q;        /* [d_qk] */
    float *acc;      /* [d_v] */
} mla_scratch;

/* Loads the keys of one scope's slots into keys[first..]. Returns -1 on an index outside the
 * pool that is not -1 (a kernel would read out of bounds). */
static int load_scope(const mla_geom *g, const cpu_mla_faults *f, const mla_scope *sc,
                      const float *lut, mla_scratch *s, int first)
{
    const int64_t pool_tokens = (int64_t)sc->num_pages * sc->page_size;
    for (int i = 0; i < sc->topk; i++) {
        int32_t idx = sc->indices[i];
        uint8_t ok = i < sc->used && idx != -1;
        if (ok && (idx < 0 || idx >= pool_tokens)) return -1;
        const int slot = first + i;
        s->valid[slot] = ok;
        float *kt = s->kt + (size_t)(slot / CPU_MLA_LANES) * g->k_dim * CPU_MLA_LANES;
        /* A slot not loaded keeps in its lane what an earlier query left there (take_scratch):
         * defined floats whose dot product is never used. */
        if (!ok && f->clamp_invalid) idx = 0; /* the classic "load index max(idx, 0)" */
        else if (!ok) continue;
        load_token(g, f, sc, lut, idx, s->keys + (size_t)slot * g->k_dim, kt,
                   slot % CPU_MLA_LANES);
    }
    return 0;
}

/* CPU_MLA_LANES floats as one GCC/clang vector: the compiler splits it into what the target has
 * (four SSE registers, two AVX2 ones, one AVX-512 one); every lane is its own float32 sum. */
typedef float lanes_v __attribute__((vector_size(CPU_MLA_LANES * sizeof(float))));

/* A macro, not a function: a function returning a 64-byte vector has no fixed ABI. */
#define LOAD_LANES(v, p) memcpy(&(v), (p), sizeof(lanes_v))

/* dot[j] = q . K_slot[j] for the slots of `blocks` transposed key blocks: each slot's sum is
 * one float32 accumulator in dim order, as a scalar loop takes it; the vector lanes run across
 * slots, and two blocks at a time are independent chains. */
ATTEST_ISA_BODY void block_dots_body(const float *q, const float *kt, int k_dim, int blocks,
                                     float *dot)
{
    const size_t bs = (size_t)k_dim * CPU_MLA_LANES;
    int b = 0;
    for (; b + 2 <= blocks; b += 2) {
        const float *k0 = kt + (size_t)b * bs, *k1 = k0 + bs;
        lanes_v a0 = {0}, a1 = {0};
        for (int d = 0; d < k_dim; d++) {
            const float qd = q[d];
            lanes_v x0, x1;
            LOAD_LANES(x0, k0 + (size_t)d * CPU_MLA_LANES);
            LOAD_LANES(x1, k1 + (size_t)d * CPU_MLA_LANES);
            a0 += qd * x0;
            a1 += qd * x1;
        }
        memcpy(dot + (size_t)b * CPU_MLA_LANES, &a0, sizeof a0);
        memcpy(dot + (size_t)(b + 1) * CPU_MLA_LANES, &a1, sizeof a1);
    }
    for (; b < blocks; b++) {
        const float *k0 = kt + (size_t)b * bs;
        lanes_v a0 = {0};
        for (int d = 0; d < k_dim; d++) {
            lanes_v x0;
            LOAD_LANES(x0, k0 + (size_t)d * CPU_MLA_LANES);
            a0 += q[d] * x0;
        }
        memcpy(dot + (size_t)b * CPU_MLA_LANES, &a0, sizeof a0);
    }
}
ATTEST_ISA_VARIANTS(block_dots, (const float *q, const float *kt, int k_dim, int blocks, float *dot),
                    (q, kt, k_dim, blocks, dot))

/* out[d] += p * v[d]: elementwise, the same bits at any vector width; inlined into each ISA's
 * copy of tile_partial. */
ATTEST_ISA_BODY void axpy(float *out, float p, const float *v, int n)
{
    for (int d = 0; d < n; d++) out[d] += p * v[d];
}

/* Partial (out, lse) of one tile of slots [begin, end) for one head; s->dot holds the head's
 * dot products. */
ATTEST_ISA_BODY void tile_partial_body(const mla_geom *g, const cpu_mla_faults *f,
                                       const mla_scratch *s, int begin, int end, float sm_scale,
                                       int d_v, float *out, float *lse)
{
    float m = -INFINITY;
    int n_valid = 0;
    for (int i = begin; i < end; i++) {
        s->scores[i - begin] = -INFINITY;
        if (!s->valid[i]) continue;
        s->scores[i - begin] = sm_scale * s->dot[i];
        n_valid++;
    }
    for (int i = begin; i < end; i++) /* the running max in slot order, as one pass takes it */
        if (s->valid[i] && s->scores[i - begin] > m) m = s->scores[i - begin];
    memset(out, 0, sizeof(float) * (size_t)d_v);
    if (n_valid == 0 && !f->no_merge_guard) {
        *lse = -INFINITY;
        return;
    }
    float l = 0.0f;
    for (int i = begin; i < end; i++) {
        if (!s->valid[i] && !f->clamp_invalid) continue;
        const float pr = !s->valid[i] ? 0.0f
                         : f->exp2 ? exp2f((s->scores[i - begin] - m) * 1.44269504f)
                                   : expf(s->scores[i - begin] - m);
        const float *v = s->keys + (size_t)i * g->k_dim;
        l += pr;
        const float pv = f->bf16_pv ? bf16_value(attest_bf16_encode_inline(pr)) : pr;
        axpy(out, pv, v, d_v);
    }
    for (int d = 0; d < d_v; d++) out[d] /= l;
    *lse = m + logf(l);
}
ATTEST_ISA_VARIANTS(tile_partial, (const mla_geom *g, const cpu_mla_faults *f,
                                   const mla_scratch *s, int begin, int end, float sm_scale,
                                   int d_v, float *out, float *lse),
                    (g, f, s, begin, end, sm_scale, d_v, out, lse))

/* Decodes one (request, query) for every head. Returns -1 on a bad index. */
static int decode_query(const mla_geom *g, const cpu_mla_faults *f, const attest_mla_args *a,
                        const float *lut, mla_scratch *s, int b, int sq)
{
    const attest_mla_params *p = a->params;
    const size_t query = (size_t)b * p->s_q + sq;
    mla_scope scopes[2];
    int nscopes = 1;
    scopes[0] = (mla_scope){a->cache, p->page_size, p->page_stride, p->num_pages,
                            a->indices + query * p->topk, p->topk, p->topk};
    if (p->has_topk_length && a->topk_length && !f->ignore_topk_length)
        scopes[0].used = a->topk_length[b];
    if (p->has_extra) {
        scopes[1] = (mla_scope){a->extra_cache, p->extra_page_size, p->extra_page_stride,
                                p->extra_num_pages, a->extra_indices + query * p->extra_topk,
                                p->extra_topk, p->extra_topk};
        if (p->has_extra_topk_length && a->extra_topk_length && !f->ignore_topk_length)
            scopes[1].used = a->extra_topk_length[b];
        nscopes = 2;
    }

    /* Tiles never straddle the two scopes: each scope is its own run of splits. */
    const int tile = f->tile > 0 ? f->tile : CPU_MLA_TILE;
    int tile_begin[CPU_MLA_MAX_TILES + 1], ntiles = 0, slots = 0, any_valid = 0;
    for (int c = 0; c < nscopes; c++) {
        if (scopes[c].used < 0) scopes[c].used = 0;
        if (scopes[c].used > scopes[c].topk) scopes[c].used = scopes[c].topk;
        if (load_scope(g, f, &scopes[c], lut, s, slots) != 0) return -1;
        for (int i = 0; i < scopes[c].topk; i += tile) tile_begin[ntiles++] = slots + i;
        slots += scopes[c].topk;
    }
    tile_begin[ntiles] = slots;
    for (int i = 0; i < slots; i++) any_valid |= s->valid[i];

    for (int h = 0; h < p->h_q; h++) {
        const size_t qh = query * p->h_q + h;
        uint16_t *out = a->out + qh * p->d_v;
        if (!any_valid) { /* lonely query: FlashMLA's convention */
            memset(out, 0, sizeof(uint16_t) * (size_t)p->d_v);
            a->lse[qh] = INFINITY;
            continue;
        }
        for (int d = 0; d < p->d_qk; d++) s->q[d] = bf16_value(a->q[qh * p->d_qk + d]);
        block_dots(s->q, s->kt, g->k_dim, (slots + CPU_MLA_LANES - 1) / CPU_MLA_LANES, s->dot);
        float m = -INFINITY;
        for (int t = 0; t < ntiles; t++) {
            tile_partial(g, f, s, tile_begin[t], tile_begin[t + 1], p->sm_scale, p->d_v,
                         s->part_out + (size_t)t * p->d_v, &s->part_lse[t]);
            if (s->part_lse[t] > m) m = s->part_lse[t];
        }
        /* Combine: rescale each split by exp(lse_t - max); an all-invalid split is skipped. */
        float denom = 0.0f;
        memset(s->acc, 0, sizeof(float) * (size_t)p->d_v);
        for (int i = 0; i < ntiles; i++) {
            const int t = f->reverse_merge ? ntiles - 1 - i : i;
            if (s->part_lse[t] == -INFINITY && !f->no_merge_guard) continue;
            const float w = f->exp2 ? exp2f((s->part_lse[t] - m) * 1.44269504f)
                                    : expf(s->part_lse[t] - m);
            const float *po = s->part_out + (size_t)t * p->d_v;
            denom += w;
            for (int d = 0; d < p->d_v; d++) s->acc[d] += w * po[d];
        }
        const float lse = m + logf(denom);
        float factor = 1.0f / denom;
        if (p->has_sink && a->attn_sink) factor /= 1.0f + expf(a->attn_sink[h] - lse);
        for (int d = 0; d < p->d_v; d++) out[d] = attest_bf16_encode_inline(s->acc[d] * factor);
        a->lse[qh] = lse;
    }
    return 0;
}

/* The scratch, kept per thread up to MLA_SCRATCH_KEEP bytes: a fresh block per run cost page
 * faults and clearing in every call. It is zeroed when it grows, so every lane of a key block
 * holds a defined float whatever slots a query loads. *owned is set (to free) for a block past
 * the cap, which is taken zeroed each time. */
#define MLA_SCRATCH_KEEP ((size_t)64 << 20)
static _Thread_local struct {
    float *block;
    size_t cap; /* floats */
} scratch_cache;

static float *take_scratch(size_t floats, float **owned)
{
    *owned = NULL;
    if (floats > MLA_SCRATCH_KEEP / sizeof(float)) return *owned = calloc(floats, sizeof(float));
    if (floats > scratch_cache.cap) {
        float *grown = calloc(floats, sizeof(float));
        if (!grown) return NULL;
        free(scratch_cache.block);
        scratch_cache.block = grown;
        scratch_cache.cap = floats;
    }
    return scratch_cache.block;
}

int cpu_mla_compute(const cpu_mla_faults *f, const attest_kernel_args *args)
{
    const attest_mla_args *a = &args->u.mla;
    const attest_mla_params *p = a->params;
    const mla_geom *g = geom_of(p->layout);
    if (!g || p->d_qk != g->k_dim || p->d_v > g->k_dim) return -1;
    const int slots = p->topk + (p->has_extra ? p->extra_topk : 0);
    const int tile = f->tile > 0 ? f->tile : CPU_MLA_TILE;
    const int tiles = cpu_mla_tiles(p, tile);
    if (tiles > CPU_MLA_MAX_TILES) return -1;

    float lut[256];
    for (int i = 0; i < 256; i++) lut[i] = attest_fp8_decode((uint8_t)i);

    mla_scratch s;
    const size_t padded = ((size_t)slots + CPU_MLA_LANES - 1) / CPU_MLA_LANES * CPU_MLA_LANES;
    float *owned = NULL;
    /* The slots' valid flags (bytes) ride at the end of the same block: no allocation per run. */
    const size_t floats = (size_t)slots * g->k_dim + padded * g->k_dim + padded + (size_t)tile +
                          (size_t)tiles * (p->d_v + 1) + p->d_qk + p->d_v;
    s.keys = take_scratch(floats + ((size_t)slots + 1 + sizeof(float) - 1) / sizeof(float), &owned);
    if (!s.keys) return -1;
    s.valid = (uint8_t *)(s.keys + floats);
    s.kt = s.keys + (size_t)slots * g->k_dim;
    s.dot = s.kt + padded * g->k_dim;
    s.scores = s.dot + padded;
    s.part_out = s.scores + tile;
    s.part_lse = s.part_out + (size_t)tiles * p->d_v;
    s.q = s.part_lse + tiles;
    s.acc = s.q + p->d_qk;

    int rc = 0;
    for (int b = 0; b < p->b && rc == 0; b++)
        for (int sq = 0; sq < p->s_q && rc == 0; sq++) rc = decode_query(g, f, a, lut, &s, b, sq);
    free(owned);
    return rc;
}

static int run_mla(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    static const cpu_mla_faults correct = {0};
    return cpu_mla_compute(&correct, args);
}

const attest_candidate cpu_mla_decode_candidate = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "cpu-mla-decode",
    .description = "float32 split-KV sparse MLA decode: 64-index tiles, log-sum-exp combine, sink",
    .kernel = ATTEST_KERNEL_MLA_DECODE,
    .domain = ATTEST_DOMAIN_HOST,
    .conventions = {.masking = ATTEST_MASK_NEG_INF, .lse_convention = ATTEST_LSE_EXCLUDES_SINK},
    .supports = cpu_mla_supports,
    .run = run_mla,
};
