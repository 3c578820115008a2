/* The three production KV-cache byte layouts as data, and a codec that writes and reads tokens at
 * exactly the offsets of docs/kernels.md sections 2-4 (mla-v4, mla-v32, c4-indexer).
 *
 * Multi-byte fields are written and read little-endian byte by byte, so the pool bytes are the
 * same on any host and a page can be compared byte for byte with one built by a GPU kernel.
 */
#include "attest/layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* mla-v4 (docs/kernels.md section 2): token t's data record (448 fp8 nope + 64 bf16 rope) at t*576, its
 * 7 UE8M0 scales and 1 pad byte at P*576 + 8t, the page stride rounded up to 576. */
#define V4_NOPE 448u
#define V4_ROPE 64u
#define V4_TILE 64u
#define V4_SCALES 7u
#define V4_DATA_BYTES 576u  /* the data record of one token */
#define V4_SCALE_SLOT 8u    /* 7 scale bytes + 1 pad byte */
#define V4_TOKEN_BYTES 584u
#define V4_STRIDE(p) ((((p) * V4_TOKEN_BYTES + V4_DATA_BYTES - 1u) / V4_DATA_BYTES) * V4_DATA_BYTES)
_Static_assert(V4_NOPE + 2u * V4_ROPE == V4_DATA_BYTES, "mla-v4 data record is 576 bytes");
_Static_assert(V4_SCALES * V4_TILE == V4_NOPE, "mla-v4: 7 scales of 64 cover the nope part");
_Static_assert(V4_DATA_BYTES + V4_SCALE_SLOT == V4_TOKEN_BYTES, "mla-v4 token is 584 bytes");
_Static_assert(V4_STRIDE(64u) == 37440u && 64u * V4_TOKEN_BYTES == 37376u, "mla-v4 P=64");
_Static_assert(V4_STRIDE(256u) == 149760u && 256u * V4_TOKEN_BYTES == 149504u, "mla-v4 P=256");
_Static_assert(V4_STRIDE(2u) == 1728u, "mla-v4 P=2");
_Static_assert(64u * V4_DATA_BYTES == 36864u, "mla-v4 P=64 scale region starts at 36864");

/* mla-v32 (docs/kernels.md section 3): 656-byte interleaved records [nope 512 | 4 x fp32 | rope 64 bf16]. */
#define V32_NOPE 512u
#define V32_ROPE 64u
#define V32_TILE 128u
#define V32_SCALES 4u
#define V32_SCALE_OFF 512u
#define V32_ROPE_OFF 528u
#define V32_TOKEN_BYTES 656u
_Static_assert(V32_SCALE_OFF == V32_NOPE && V32_ROPE_OFF == V32_SCALE_OFF + 4u * V32_SCALES,
               "mla-v32 fields at 0 / 512 / 528");
_Static_assert(V32_ROPE_OFF + 2u * V32_ROPE == V32_TOKEN_BYTES, "mla-v32 record is 656 bytes");
_Static_assert(V32_SCALES * V32_TILE == V32_NOPE, "mla-v32: 4 scales of 128 cover the nope");

/* c4-indexer (docs/kernels.md section 4): 64 positions x 128 fp8 (position-major), then 64 fp32 scales. */
#define C4_POSITIONS 64u
#define C4_DIM 128u
#define C4_SCALE_OFF 8192u
#define C4_BLOCK_BYTES ATTEST_LAYOUT_C4_BLOCK_BYTES
_Static_assert(C4_POSITIONS * C4_DIM == C4_SCALE_OFF, "c4 keys fill [0, 8192)");
_Static_assert(C4_SCALE_OFF + 4u * C4_POSITIONS == C4_BLOCK_BYTES, "c4 block is 8448 bytes");
_Static_assert(C4_SCALE_OFF / 4u == 2048u && C4_BLOCK_BYTES / 4u == 2112u,
               "c4 scale of position t is float element 2048 + t of 2112");
_Static_assert(C4_DIM + 4u == 132u, "the [.., 64, 1, 132] view: 132 bytes per position");

/* Kernels load fp32 scales and bf16 values with aligned loads; a stride that is not a multiple
 * of this would misalign every page after the first. */
#define STRIDE_ALIGN 4u

const char *attest_layout_name(attest_layout_id id)
{
    switch (id) {
    case ATTEST_LAYOUT_MLA_V4: return "mla-v4";
    case ATTEST_LAYOUT_MLA_V32: return "mla-v32";
    case ATTEST_LAYOUT_C4_INDEXER: return "c4-indexer";
    }
    return NULL;
}

attest_status attest_layout_from_name(const char *name, attest_layout_id *id)
{
    static const attest_layout_id ids[] = {ATTEST_LAYOUT_MLA_V4, ATTEST_LAYOUT_MLA_V32,
                                           ATTEST_LAYOUT_C4_INDEXER};
    ATTEST_RETURN_IF(name == NULL || id == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "layout name and output must not be NULL");
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (strcmp(name, attest_layout_name(ids[i])) == 0) {
            *id = ids[i];
            return ATTEST_OK;
        }
    }
    return attest_fail(ATTEST_ERR_NOT_FOUND,
                       "unknown layout '%s' (known: mla-v4, mla-v32, c4-indexer)", name);
}

uint64_t attest_layout_default_stride(attest_layout_id id, uint32_t page_size)
{
    if (page_size == 0u || page_size > ATTEST_LAYOUT_MAX_PAGE_SIZE) return 0;
    switch (id) {
    case ATTEST_LAYOUT_MLA_V4: return V4_STRIDE((uint64_t)page_size);
    case ATTEST_LAYOUT_MLA_V32: return (uint64_t)page_size * V32_TOKEN_BYTES;
    case ATTEST_LAYOUT_C4_INDEXER: return page_size == C4_POSITIONS ? C4_BLOCK_BYTES : 0;
    }
    return 0;
}

attest_status attest_layout_make(attest_layout_id id, uint32_t page_size, uint64_t page_stride,
                                 attest_layout *out)
{
    ATTEST_RETURN_IF(out == NULL, ATTEST_ERR_INVALID_ARGUMENT, "layout output must not be NULL");
    const char *name = attest_layout_name(id);
    ATTEST_RETURN_IF(name == NULL, ATTEST_ERR_INVALID_ARGUMENT, "unknown layout id %d", (int)id);
    ATTEST_RETURN_IF(page_size == 0u || page_size > ATTEST_LAYOUT_MAX_PAGE_SIZE,
                     ATTEST_ERR_INVALID_ARGUMENT, "%s: page size %u is outside [1, %u]", name,
                     page_size, ATTEST_LAYOUT_MAX_PAGE_SIZE);
    ATTEST_RETURN_IF(id == ATTEST_LAYOUT_C4_INDEXER && page_size != C4_POSITIONS,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "c4-indexer: page size %u is not 64 (blocks hold exactly 64 positions)",
                     page_size);
    attest_layout l;
    memset(&l, 0, sizeof l);
    l.id = id;
    l.page_size = page_size;
    switch (id) {
    case ATTEST_LAYOUT_MLA_V4:
        l.token_bytes = V4_TOKEN_BYTES;
        l.fp8_dim = V4_NOPE;
        l.rope_dim = V4_ROPE;
        l.num_scales = V4_SCALES;
        l.scale_tile = V4_TILE;
        l.scale_format = ATTEST_SCALE_UE8M0;
        l.v_dim = V4_NOPE + V4_ROPE; /* K = V = all 512 dims */
        break;
    case ATTEST_LAYOUT_MLA_V32:
        l.token_bytes = V32_TOKEN_BYTES;
        l.fp8_dim = V32_NOPE;
        l.rope_dim = V32_ROPE;
        l.num_scales = V32_SCALES;
        l.scale_tile = V32_TILE;
        l.scale_format = ATTEST_SCALE_F32;
        l.v_dim = V32_NOPE; /* V is the nope part only */
        break;
    case ATTEST_LAYOUT_C4_INDEXER:
        l.token_bytes = C4_DIM + 4u;
        l.fp8_dim = C4_DIM;
        l.rope_dim = 0;
        l.num_scales = 1;
        l.scale_tile = C4_DIM;
        l.scale_format = ATTEST_SCALE_F32;
        l.v_dim = 0;
        break;
    }
    l.k_dim = l.fp8_dim + l.rope_dim;
    l.page_payload = (uint64_t)page_size * l.token_bytes;
    uint64_t def = attest_layout_default_stride(id, page_size);
    if (page_stride == 0u) page_stride = def;
    ATTEST_RETURN_IF(page_stride < l.page_payload, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s: page stride %llu is smaller than the page payload %llu (P=%u)", name,
                     (unsigned long long)page_stride, (unsigned long long)l.page_payload,
                     page_size);
    ATTEST_RETURN_IF(page_stride > ATTEST_LAYOUT_MAX_PAGE_STRIDE, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s: page stride %llu is larger than %llu", name,
                     (unsigned long long)page_stride,
                     (unsigned long long)ATTEST_LAYOUT_MAX_PAGE_STRIDE);
    ATTEST_RETURN_IF(id == ATTEST_LAYOUT_MLA_V4 && page_stride != def, ATTEST_ERR_INVALID_ARGUMENT,
                     "mla-v4: page stride %llu is not %llu (kernels derive it as P*584 rounded "
                     "up to a multiple of 576)",
                     (unsigned long long)page_stride, (unsigned long long)def);
    ATTEST_RETURN_IF(page_stride % STRIDE_ALIGN != 0u, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s: page stride %llu is not a multiple of %u (fp32 scales would be "
                     "misaligned)",
                     name, (unsigned long long)page_stride, STRIDE_ALIGN);
    l.page_stride = page_stride;
    *out = l;
    return ATTEST_OK;
}

/* Offsets of token t without argument checks: the single place that encodes the spec tables. */
static void token_offsets(const attest_layout *l, uint32_t t, attest_token_offsets *o)
{
    memset(o, 0, sizeof *o);
    uint64_t P = l->page_size;
    switch (l->id) {
    case ATTEST_LAYOUT_MLA_V4: {
        uint64_t scales = P * V4_DATA_BYTES + (uint64_t)t * V4_SCALE_SLOT;
        o->fp8 = (uint64_t)t * V4_DATA_BYTES;
        o->rope = o->fp8 + V4_NOPE;
        for (uint32_t i = 0; i < V4_SCALES; i++) o->scale[i] = scales + i;
        o->pad = scales + V4_SCALES;
        o->pad_bytes = 1;
        break;
    }
    case ATTEST_LAYOUT_MLA_V32:
        o->fp8 = (uint64_t)t * V32_TOKEN_BYTES;
        o->rope = o->fp8 + V32_ROPE_OFF;
        for (uint32_t i = 0; i < V32_SCALES; i++) o->scale[i] = o->fp8 + V32_SCALE_OFF + 4u * i;
        break;
    case ATTEST_LAYOUT_C4_INDEXER:
        o->fp8 = (uint64_t)t * C4_DIM;
        o->scale[0] = C4_SCALE_OFF + 4u * (uint64_t)t;
        break;
    }
}

static attest_status check_layout(const attest_layout *l)
{
    ATTEST_RETURN_IF(l == NULL, ATTEST_ERR_INVALID_ARGUMENT, "layout must not be NULL");
    ATTEST_RETURN_IF(attest_layout_name(l->id) == NULL || l->page_size == 0u ||
                         l->page_size > ATTEST_LAYOUT_MAX_PAGE_SIZE ||
                         l->page_stride < l->page_payload || l->num_scales == 0u ||
                         l->num_scales > ATTEST_LAYOUT_MAX_SCALES,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "layout descriptor is not one made by attest_layout_make (id %d)",
                     (int)l->id);
    return ATTEST_OK;
}

attest_status attest_layout_token_offsets(const attest_layout *layout, uint32_t t,
                                          attest_token_offsets *out)
{
    ATTEST_FORWARD(check_layout(layout));
    ATTEST_RETURN_IF(out == NULL, ATTEST_ERR_INVALID_ARGUMENT, "offsets output must not be NULL");
    ATTEST_RETURN_IF(t >= layout->page_size, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s: token %u is out of range for page size %u",
                     attest_layout_name(layout->id), t, layout->page_size);
    token_offsets(layout, t, out);
    return ATTEST_OK;
}

/* Region list -------------------------------------------------------------------------------- */

typedef struct region_sink {
    attest_layout_region *regions;
    size_t cap, n;
    uint64_t next; /* end of the previous region: regions must tile the page */
    int gap;
} region_sink;

static void add_region(region_sink *s, const char *name, uint64_t begin, uint64_t bytes,
                       const char *type, uint32_t elem_bytes, int is_padding)
{
    if (bytes == 0u) return;
    if (begin != s->next) s->gap = 1;
    s->next = begin + bytes;
    if (s->n < s->cap && s->regions != NULL) {
        attest_layout_region *r = &s->regions[s->n];
        snprintf(r->name, sizeof r->name, "%s", name);
        r->begin = begin;
        r->end = begin + bytes;
        r->elem_type = type;
        r->elem_bytes = elem_bytes;
        r->count = bytes / elem_bytes;
        r->is_padding = is_padding;
    }
    s->n++;
}

attest_status attest_layout_regions(const attest_layout *layout, attest_layout_region *regions,
                                    size_t cap, size_t *count)
{
    ATTEST_FORWARD(check_layout(layout));
    ATTEST_RETURN_IF(count == NULL, ATTEST_ERR_INVALID_ARGUMENT, "count must not be NULL");
    region_sink s = {regions, regions ? cap : 0u, 0u, 0u, 0};
    uint32_t P = layout->page_size;
    char name[48];
    attest_token_offsets o;
    switch (layout->id) {
    case ATTEST_LAYOUT_MLA_V4:
        for (uint32_t t = 0; t < P; t++) {
            token_offsets(layout, t, &o);
            snprintf(name, sizeof name, "token %u nope", t);
            add_region(&s, name, o.fp8, V4_NOPE, "fp8_e4m3fn", 1, 0);
            snprintf(name, sizeof name, "token %u rope", t);
            add_region(&s, name, o.rope, 2u * V4_ROPE, "bf16", 2, 0);
        }
        for (uint32_t t = 0; t < P; t++) {
            token_offsets(layout, t, &o);
            snprintf(name, sizeof name, "token %u scales", t);
            add_region(&s, name, o.scale[0], V4_SCALES, "ue8m0", 1, 0);
            snprintf(name, sizeof name, "token %u pad", t);
            add_region(&s, name, o.pad, o.pad_bytes, "pad", 1, 1);
        }
        break;
    case ATTEST_LAYOUT_MLA_V32:
        for (uint32_t t = 0; t < P; t++) {
            token_offsets(layout, t, &o);
            snprintf(name, sizeof name, "token %u nope", t);
            add_region(&s, name, o.fp8, V32_NOPE, "fp8_e4m3fn", 1, 0);
            snprintf(name, sizeof name, "token %u scales", t);
            add_region(&s, name, o.scale[0], 4u * V32_SCALES, "float32", 4, 0);
            snprintf(name, sizeof name, "token %u rope", t);
            add_region(&s, name, o.rope, 2u * V32_ROPE, "bf16", 2, 0);
        }
        break;
    case ATTEST_LAYOUT_C4_INDEXER:
        add_region(&s, "keys, positions 0-63 x 128", 0, C4_SCALE_OFF, "fp8_e4m3fn", 1, 0);
        add_region(&s, "scales, positions 0-63", C4_SCALE_OFF, 4u * C4_POSITIONS, "float32", 4,
                   0);
        break;
    }
    add_region(&s, "page padding", layout->page_payload,
               layout->page_stride - layout->page_payload, "pad", 1, 1);
    ATTEST_RETURN_IF(s.gap || s.next != layout->page_stride, ATTEST_ERR_INTERNAL,
                     "%s: regions do not tile the page", attest_layout_name(layout->id));
    *count = s.n;
    ATTEST_RETURN_IF(s.n > cap || regions == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s: %zu regions do not fit in %zu", attest_layout_name(layout->id), s.n,
                     regions ? cap : (size_t)0);
    return ATTEST_OK;
}

int attest_layout_is_padding_byte(const attest_layout *layout, uint64_t offset)
{
    if (layout == NULL || offset >= layout->page_stride) return 0;
    if (offset >= layout->page_payload) return 1;
    if (layout->id == ATTEST_LAYOUT_MLA_V4) {
        uint64_t scales = (uint64_t)layout->page_size * V4_DATA_BYTES;
        return offset >= scales && (offset - scales) % V4_SCALE_SLOT == V4_SCALES;
    }
    return 0;
}

/* Codec ------------------------------------------------------------------------------------ */

static void put_f32_le(uint8_t *p, float x)
{
    uint32_t u = attest_f32_bits(x);
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}

static float get_f32_le(const uint8_t *p)
{
    return attest_f32_from_bits((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                                (uint32_t)p[3] << 24);
}

static attest_status check_policy(const attest_layout *l, const attest_scale_policy *p)
{
    ATTEST_RETURN_IF(p == NULL, ATTEST_ERR_INVALID_ARGUMENT, "scale policy must not be NULL");
    ATTEST_RETURN_IF(p->kind != ATTEST_SCALE_POW2 && p->kind != ATTEST_SCALE_RAW,
                     ATTEST_ERR_INVALID_ARGUMENT, "unknown scale policy kind %d", (int)p->kind);
    ATTEST_RETURN_IF(p->kind == ATTEST_SCALE_POW2 && attest_ue8m0_writer_name(p->writer) == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "unknown UE8M0 writer %d", (int)p->writer);
    ATTEST_RETURN_IF(p->overflow != ATTEST_FP8_NONSAT && p->overflow != ATTEST_FP8_SATFINITE,
                     ATTEST_ERR_INVALID_ARGUMENT, "unknown fp8 overflow mode %d",
                     (int)p->overflow);
    ATTEST_RETURN_IF(p->kind == ATTEST_SCALE_RAW && l->scale_format != ATTEST_SCALE_F32,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "%s stores UE8M0 scales: a raw fp32 scale policy cannot be stored",
                     attest_layout_name(l->id));
    return ATTEST_OK;
}

/* dst[j] = fp8(x[j] * by) (multiply) or fp8(x[j] / by), in blocks of a fixed 64 so that the
 * compiler vectorizes them at -O2 (scale tiles are 64 or 128 wide), then any rest. */
#define FP8_BLOCK 64u
static void encode_fp8_block(const float *restrict x, uint8_t *restrict dst, float by,
                             int multiply, attest_fp8_overflow overflow)
{
    if (multiply)
        for (uint32_t j = 0; j < FP8_BLOCK; j++)
            dst[j] = attest_fp8_encode_inline(x[j] * by, overflow);
    else
        for (uint32_t j = 0; j < FP8_BLOCK; j++)
            dst[j] = attest_fp8_encode_inline(x[j] / by, overflow);
}

static void encode_fp8_run(const float *x, uint8_t *dst, uint32_t n, float by, int multiply,
                           attest_fp8_overflow overflow)
{
    uint32_t j = 0;
    for (; j + FP8_BLOCK <= n; j += FP8_BLOCK)
        encode_fp8_block(x + j, dst + j, by, multiply, overflow);
    for (; j < n; j++)
        dst[j] = attest_fp8_encode_inline(multiply ? x[j] * by : x[j] / by, overflow);
}

/* max |x| over a scale tile; a NaN sticks, as torch's max propagates it (the last NaN's bits,
 * as the scalar loop below leaves them). For x >= 0 float order is the unsigned order of the
 * bits, inf and NaN included, so the max is an integer max the compiler vectorizes (this loop
 * was the branchiest of case generation); a NaN shows as bits above inf and takes the scalar
 * loop, which decides which NaN. */
static float tile_amax(const float *tile, uint32_t n)
{
    uint32_t top = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t u;
        memcpy(&u, &tile[j], sizeof u);
        u &= 0x7FFFFFFFu;
        top = u > top ? u : top;
    }
    if (top <= 0x7F800000u) {
        float amax;
        memcpy(&amax, &top, sizeof amax);
        return amax;
    }
    float amax = 0.0f;
    for (uint32_t j = 0; j < n; j++) {
        float a = fabsf(tile[j]);
        if (a > amax || isnan(a)) amax = a;
    }
    return amax;
}

/* Quantizes one token; layout, policy and t are already checked. */
static void encode_token(const attest_layout *l, uint8_t *page, uint32_t t, const float *values,
                         const attest_scale_policy *policy)
{
    attest_token_offsets o;
    token_offsets(l, t, &o);
    for (uint32_t i = 0; i < l->num_scales; i++) {
        const float *tile = values + (size_t)i * l->scale_tile;
        const float amax = tile_amax(tile, l->scale_tile);
        float scale;
        if (policy->kind == ATTEST_SCALE_POW2) {
            uint8_t b = attest_ue8m0_scale_for_amax(amax, policy->writer);
            scale = attest_ue8m0_decode(b);
            if (l->scale_format == ATTEST_SCALE_UE8M0)
                page[o.scale[i]] = b;
            else
                put_f32_le(page + o.scale[i], scale);
        } else {
            /* Raw fp32 scale. amax is clamped at 1e-4 first, as DeepGEMM's indexer cache writer
             * (kv_cache_cast_to_fp8 in its tests) does, so an all-zero tile gets a finite
             * scale; sglang's V3.2 writer had no clamp and turned such tiles into NaN. */
            scale = (amax < 1e-4f ? 1e-4f : amax) / 448.0f;
            put_f32_le(page + o.scale[i], scale);
        }
        /* value / scale as one correctly rounded float32 division, as FlashMLA's and sglang's
         * writers do; DeepGEMM multiplies by the reciprocal, which can differ by one fp8 step
         * for a raw scale (never for a power of two). */
        uint8_t *dst = page + o.fp8 + (size_t)i * l->scale_tile;
        if (policy->kind == ATTEST_SCALE_POW2 && isfinite(1.0f / scale) && 1.0f / scale != 0.0f) {
            /* x / 2^k and x * 2^-k are the same real number, rounded once: identical bytes at
             * a fraction of the cost (this loop dominates case generation). */
            encode_fp8_run(tile, dst, l->scale_tile, 1.0f / scale, 1, policy->overflow);
        } else {
            encode_fp8_run(tile, dst, l->scale_tile, scale, 0, policy->overflow);
        }
    }
    for (uint32_t j = 0; j < l->rope_dim; j++) {
        uint16_t h = attest_bf16_encode_inline(values[l->fp8_dim + j]);
        page[o.rope + 2u * j] = (uint8_t)h;
        page[o.rope + 2u * j + 1u] = (uint8_t)(h >> 8);
    }
}

attest_status attest_layout_encode_token(const attest_layout *layout, uint8_t *page_base,
                                         uint32_t t, const float *values,
                                         const attest_scale_policy *policy)
{
    ATTEST_FORWARD(check_layout(layout));
    ATTEST_RETURN_IF(page_base == NULL || values == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "page and values must not be NULL");
    ATTEST_RETURN_IF(t >= layout->page_size, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s: token %u is out of range for page size %u",
                     attest_layout_name(layout->id), t, layout->page_size);
    ATTEST_FORWARD(check_policy(layout, policy));
    encode_token(layout, page_base, t, values, policy);
    return ATTEST_OK;
}

static double token_scale(const attest_layout *l, const uint8_t *page, const attest_token_offsets *o,
                          uint32_t i)
{
    if (l->scale_format == ATTEST_SCALE_UE8M0) return attest_ue8m0_decode_f64(page[o->scale[i]]);
    return (double)get_f32_le(page + o->scale[i]);
}

double attest_layout_token_scale(const attest_layout *layout, const uint8_t *page_base, uint32_t t,
                                 uint32_t i)
{
    if (layout == NULL || page_base == NULL || t >= layout->page_size || i >= layout->num_scales)
        return NAN;
    attest_token_offsets o;
    token_offsets(layout, t, &o);
    return token_scale(layout, page_base, &o, i);
}

void attest_layout_decode_token(const attest_layout *layout, const uint8_t *page_base, uint32_t t,
                                double *values)
{
    attest_token_offsets o;
    token_offsets(layout, t, &o);
    const uint8_t *fp8 = page_base + o.fp8;
    for (uint32_t i = 0; i < layout->num_scales; i++) {
        double s = token_scale(layout, page_base, &o, i);
        double *dst = values + (size_t)i * layout->scale_tile;
        const uint8_t *src = fp8 + (size_t)i * layout->scale_tile;
        for (uint32_t j = 0; j < layout->scale_tile; j++)
            dst[j] = (double)attest_fp8_values[src[j]] * s; /* 4 x 24 significant bits: exact */
    }
    const uint8_t *rope = page_base + o.rope;
    for (uint32_t j = 0; j < layout->rope_dim; j++)
        values[layout->fp8_dim + j] =
            (double)attest_bf16_decode((uint16_t)(rope[2u * j] | rope[2u * j + 1u] << 8));
}

/* Pools ------------------------------------------------------------------------------------ */

const uint8_t *attest_pool_token_page(const attest_layout *layout, const uint8_t *pool,
                                      uint64_t index, uint32_t *slot)
{
    *slot = (uint32_t)(index % layout->page_size);
    return pool + (size_t)(index / layout->page_size) * (size_t)layout->page_stride;
}

void attest_pool_poison(const attest_layout *layout, uint8_t *pool, uint32_t num_pages,
                        uint8_t poison)
{
    memset(pool, poison, (size_t)num_pages * (size_t)layout->page_stride);
}

/* Checks the pool arguments and the first ceil(num_tokens / P) page table entries: each in
 * [0, num_pages) and, when writing, no physical page used twice (two logical pages writing one
 * physical page would silently overwrite each other; reading one twice is harmless). */
static attest_status check_pool(const attest_layout *l, const void *pool, uint32_t num_pages,
                                const int32_t *page_table, uint64_t num_tokens, const void *values,
                                int writing)
{
    ATTEST_FORWARD(check_layout(l));
    if (num_tokens == 0u) return ATTEST_OK;
    ATTEST_RETURN_IF(pool == NULL || page_table == NULL || values == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "pool, page table and values must not be NULL");
    uint64_t logical_pages = (num_tokens + l->page_size - 1u) / l->page_size;
    ATTEST_RETURN_IF(writing && logical_pages > num_pages, ATTEST_ERR_INVALID_ARGUMENT,
                     "%llu tokens need %llu pages of %u but the pool has %u",
                     (unsigned long long)num_tokens, (unsigned long long)logical_pages,
                     l->page_size, num_pages);
    uint8_t *seen = calloc((size_t)num_pages, 1);
    ATTEST_RETURN_IF(seen == NULL, ATTEST_ERR_OUT_OF_MEMORY, "page table check: out of memory");
    attest_status st = ATTEST_OK;
    for (uint64_t j = 0; j < logical_pages && st == ATTEST_OK; j++) {
        int32_t p = page_table[j];
        if (p < 0 || (uint32_t)p >= num_pages)
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                             "page_table[%llu] = %d is outside [0, %u)", (unsigned long long)j,
                             (int)p, num_pages);
        else if (writing && seen[p])
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                             "page_table[%llu] = %d: physical page used twice",
                             (unsigned long long)j, (int)p);
        else
            seen[p] = 1;
    }
    free(seen);
    return st;
}

attest_status attest_pool_encode(const attest_layout *layout, uint8_t *pool, uint32_t num_pages,
                                 const int32_t *page_table, uint64_t num_tokens,
                                 const float *values, const attest_scale_policy *policy)
{
    ATTEST_FORWARD(check_pool(layout, pool, num_pages, page_table, num_tokens, values, 1));
    ATTEST_FORWARD(check_policy(layout, policy));
    uint32_t P = layout->page_size;
    for (uint64_t j = 0; j < num_tokens; j++) {
        uint8_t *page = pool + (size_t)page_table[j / P] * (size_t)layout->page_stride;
        encode_token(layout, page, (uint32_t)(j % P), values + (size_t)j * layout->k_dim, policy);
    }
    return ATTEST_OK;
}

attest_status attest_pool_decode(const attest_layout *layout, const uint8_t *pool,
                                 uint32_t num_pages, const int32_t *page_table,
                                 uint64_t num_tokens, double *values)
{
    ATTEST_FORWARD(check_pool(layout, pool, num_pages, page_table, num_tokens, values, 0));
    uint32_t P = layout->page_size;
    for (uint64_t j = 0; j < num_tokens; j++) {
        const uint8_t *page = pool + (size_t)page_table[j / P] * (size_t)layout->page_stride;
        attest_layout_decode_token(layout, page, (uint32_t)(j % P),
                                   values + (size_t)j * layout->k_dim);
    }
    return ATTEST_OK;
}
