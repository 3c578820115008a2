/* Fuzz target: sparse MLA decode. The tail picks a generated case (seed, layout, edge bytes);
 * the head mutates it: fields of cached tokens (fp8 bit patterns, scales, rope values) in either
 * scope, padding bytes, top-k index slots (-1 holes, duplicates, any valid token), topk_length
 * and extra_topk_length, sinks (+-inf, huge, tiny) and q values. Every mutation keeps the case
 * valid (indices stay in the pool), so any failing verdict is the candidate's fault.
 * Candidate: $ATTEST_FUZZ_CANDIDATE or cpu-mla-decode.
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

#include "attest/generator.h"
#include "attest/layout.h"
#include "fuzz_common.h"

#define MAX_MUTATIONS 64
#define UE8M0_MAX_BYTE (127 + 33)
#define F32_SCALE_MAX_EXP 33
#define ROPE_MAX_EXP 8
#define Q_MAX_EXP 5

/* One scope of the case: its pool, layout and index list. */
typedef struct scope {
    attest_layout layout;
    uint8_t *pool;
    int64_t tokens;
    attest_tensor *indices;
    int present;
} scope;

static void scope_init(attest_case *c, int extra, scope *s)
{
    const attest_mla_params *p = &c->params.mla;
    memset(s, 0, sizeof *s);
    if (extra && !p->has_extra) return;
    int32_t page_size = extra ? p->extra_page_size : p->page_size;
    int64_t stride = extra ? p->extra_page_stride : p->page_stride;
    int32_t pages = extra ? p->extra_num_pages : p->num_pages;
    if (attest_layout_make(p->layout, (uint32_t)page_size, (uint64_t)stride, &s->layout) != ATTEST_OK)
        abort(); /* the generator made this case: its layout is valid */
    s->pool = attest_case_tensor(c, extra ? "extra_cache_bytes" : "cache_bytes")->data;
    s->tokens = (int64_t)pages * page_size;
    s->indices = attest_case_tensor(c, extra ? "extra_indices" : "indices");
    s->present = 1;
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
    uint8_t *page = s->pool + (uint64_t)(t / L->page_size) * L->page_stride;
    attest_token_offsets o;
    if (attest_layout_token_offsets(L, (uint32_t)(t % L->page_size), &o) != ATTEST_OK) abort();
    if (field == 0) { /* an fp8 element: any of the 256 patterns */
        page[o.fp8 + fuzz_head_uint(in, 2) % L->fp8_dim] = (uint8_t)fuzz_head_uint(in, 1);
    } else if (field == 1) { /* a scale */
        uint8_t *at = page + o.scale[fuzz_head_uint(in, 1) % L->num_scales];
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
            page[o.fp8] = (uint8_t)fuzz_head_uint(in, 1);
            return;
        }
        uint16_t v = bf16_in_range((uint16_t)fuzz_head_uint(in, 2), ROPE_MAX_EXP);
        uint8_t *at = page + o.rope + 2 * (fuzz_head_uint(in, 1) % L->rope_dim);
        at[0] = (uint8_t)v; /* little-endian, as the layout stores it */
        at[1] = (uint8_t)(v >> 8);
    }
}

/* Any byte that belongs to no value: the per-token pad byte, or the padding of a page. */
static void mutate_padding(const scope *s, fuzz_input *in)
{
    const attest_layout *L = &s->layout;
    int64_t t = pick_token(s, in);
    uint8_t *page = s->pool + (uint64_t)(t / L->page_size) * L->page_stride;
    uint64_t spare = L->page_stride - L->page_payload;
    uint8_t v = (uint8_t)fuzz_head_uint(in, 1);
    uint32_t r = (uint32_t)fuzz_head_uint(in, 2);
    attest_token_offsets o;
    if (attest_layout_token_offsets(L, (uint32_t)(t % L->page_size), &o) != ATTEST_OK) abort();
    if ((r & 1) && o.pad_bytes > 0)
        page[o.pad] = v;
    else if (spare > 0)
        page[L->page_payload + (r >> 1) % spare] = v;
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
    len[fuzz_head_uint(in, 1) % attest_tensor_count(t)] =
        (int32_t)(fuzz_head_uint(in, 2) % (uint64_t)(topk + 1));
}

static void mutate_sink(attest_case *c, fuzz_input *in)
{
    attest_tensor *t = attest_case_tensor(c, "attn_sink");
    if (t == NULL) return;
    static const float choices[] = {INFINITY, -INFINITY, 0.0f, -0.0f, 30.0f, -30.0f, 1e-30f, 5.0f};
    float *sink = t->data;
    sink[fuzz_head_uint(in, 1) % attest_tensor_count(t)] =
        choices[fuzz_head_uint(in, 1) % (sizeof choices / sizeof choices[0])];
}

static void mutate_q(attest_case *c, fuzz_input *in)
{
    attest_tensor *t = attest_case_tensor(c, "q_bf16");
    uint16_t *q = t->data;
    q[fuzz_head_uint(in, 4) % attest_tensor_count(t)] =
        bf16_in_range((uint16_t)fuzz_head_uint(in, 2), Q_MAX_EXP);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_input_make(data, size);
    attest_gen_options opt = attest_gen_fuzz_defaults(ATTEST_KERNEL_MLA_DECODE);
    uint64_t seed = fuzz_tail_uint(&in, 8);
    uint8_t knobs = (uint8_t)fuzz_tail_uint(&in, 1);
    if (knobs & 1) opt.layout = (knobs & 2) ? ATTEST_LAYOUT_MLA_V32 : ATTEST_LAYOUT_MLA_V4;
    opt.edge_bytes = (knobs & 4) ? 0 : 1;

    attest_case c;
    memset(&c, 0, sizeof c);
    if (attest_generate_case(&opt, seed, &c) != ATTEST_OK) abort(); /* generator must not fail */
    const attest_mla_params *p = &c.params.mla;
    scope scopes[2];
    scope_init(&c, 0, &scopes[0]);
    scope_init(&c, 1, &scopes[1]);
    for (int m = 0; m < MAX_MUTATIONS && fuzz_remaining(&in) > 0; m++) {
        uint8_t op = (uint8_t)fuzz_head_uint(&in, 1);
        const scope *s = &scopes[(op & 0x80) && scopes[1].present ? 1 : 0];
        switch ((op & 0x7F) % 9) {
        case 0: mutate_token(s, &in, 0); break;
        case 1: mutate_token(s, &in, 1); break;
        case 2: mutate_token(s, &in, 2); break;
        case 3: mutate_padding(s, &in); break;
        case 4: mutate_index(s, &in); break;
        case 5: mutate_length(&c, &in, "topk_length", p->topk); break;
        case 6: mutate_length(&c, &in, "extra_topk_length", p->has_extra ? p->extra_topk : 0); break;
        case 7: mutate_sink(&c, &in); break;
        default: mutate_q(&c, &in); break;
        }
    }
    if (attest_case_check_inputs(&c) != ATTEST_OK) abort(); /* a mutation broke validity: a bug here */
    fuzz_judge("mla_decode", fuzz_candidate("cpu-mla-decode"), &c);
    attest_case_free(&c);
    return 0;
}
