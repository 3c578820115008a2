/* Indexer fuzz inputs (fuzz_inputs.h): the decoder, the case's semantic features, and the
 * structure-aware operation writer.
 *
 * Operations (one byte, then its arguments): byte % 6 for bytes below 252 picks one of
 *   0 a context length (anything the block table holds), 1 a block-table entry (any physical
 *   block: repeats, permutations), 2 a key fp8 byte, 3 a query fp8 byte, 4 a weight, 5 a
 *   position's fp32 scale;
 * bytes 252-255 are extended operations, the next byte % 3 picks
 *   0 a swap of two block-table entries of one request (a page-table permutation),
 *   1 every scale of one block set to one power of two (an exponent class),
 *   2 one head's weight zeroed or negated in every query row.
 *
 * Arguments are read in the order listed, each read in a statement of its own (inputs_mla.c says
 * why: C leaves the order of two reads in one assignment to the compiler).
 *
 * The domain: fp8 bytes take any of the 256 patterns, but the fp32 scales and weights take only
 * values real caches hold (pick_float: zeros, small and large finite values, NaN for scales).
 * A raw byte written into a scale could make it 1e38 or inf: the float32 candidate's logit
 * kscale * sum_h w * relu(dot) then overflows where the double reference does not, a verdict
 * on float32 itself rather than on the kernel (inputs_mla.c explains the same for decode). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/layout.h"
#include "inputs_internal.h"

#define POSITIONS ((int32_t)ATTEST_INDEXER_BLOCK) /* signed, for length arithmetic */
#define EXTENDED 252
/* Scale exponents the extended operation writes: 2^-100 (about 1e-30) to 2^14. */
#define SCALE_MIN_EXP (-100)
#define SCALE_EXPS 115

/* Where a c4-indexer block's keys and scales lie, from the layout descriptor. */
typedef struct c4_geometry {
    uint64_t stride;                      /* bytes per block */
    uint64_t keys;                        /* fp8 key bytes of a block, from its start */
    uint32_t dim;                         /* fp8 bytes per key */
    uint64_t key[ATTEST_INDEXER_BLOCK];   /* offset of position t's key */
    uint64_t scale[ATTEST_INDEXER_BLOCK]; /* offset of position t's fp32 scale */
} c4_geometry;

static const c4_geometry *c4(void)
{
    static c4_geometry g;
    if (g.stride) return &g;
    attest_layout L;
    if (attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, ATTEST_INDEXER_BLOCK, 0, &L) != ATTEST_OK) abort();
    for (uint32_t t = 0; t < ATTEST_INDEXER_BLOCK; t++) {
        attest_token_offsets o;
        if (attest_layout_token_offsets(&L, t, &o) != ATTEST_OK) abort();
        g.key[t] = o.fp8;
        g.scale[t] = o.scale[0];
    }
    g.dim = L.fp8_dim;
    g.keys = (uint64_t)L.page_size * L.fp8_dim;
    g.stride = L.page_stride;
    return &g;
}

static float pick_float(fuzz_input *in)
{
    static const float choices[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, 1e4f, 0.5f, 448.0f};
    uint8_t k = (uint8_t)fuzz_head_uint(in, 1);
    if (k < 128) return choices[k % (sizeof choices / sizeof choices[0])];
    return ((float)fuzz_head_uint(in, 2) - 32768.0f) / 1024.0f;
}

void fuzz_indexer_knobs(uint8_t knobs, attest_gen_options *opt)
{
    opt->edge_bytes = (knobs & 1) ? 0 : 1;
    opt->high_pools = fuzz_high_pool_knob(knobs) ? 1000 : 0;
}

static int64_t max_context(const attest_indexer_params *p)
{
    int64_t max_ctx = (int64_t)p->blocks_per_req * POSITIONS;
    return max_ctx > p->max_len ? p->max_len : max_ctx;
}

static void apply_extended(attest_case *c, fuzz_input *in)
{
    const attest_indexer_params *p = &c->params.indexer;
    switch (fuzz_head_uint(in, 1) % 3) {
    case 0: { /* swap two entries of one request's row */
        int32_t *t = attest_case_tensor(c, "block_table")->data;
        int32_t *row = t + (fuzz_head_uint(in, 1) % (uint64_t)p->b) * (uint64_t)p->blocks_per_req;
        uint64_t i = fuzz_head_uint(in, 1) % (uint64_t)p->blocks_per_req;
        uint64_t j = fuzz_head_uint(in, 1) % (uint64_t)p->blocks_per_req;
        int32_t v = row[i];
        row[i] = row[j];
        row[j] = v;
        break;
    }
    case 1: { /* one block's scales, all one power of two */
        uint64_t blk = fuzz_head_uint(in, 4) % (uint64_t)p->num_blocks;
        uint8_t *b = fuzz_writable_range(attest_case_tensor(c, "cache_bytes"), blk * c4()->stride,
                                         c4()->stride);
        float s = ldexpf(1.0f, SCALE_MIN_EXP + (int)(fuzz_head_uint(in, 1) % SCALE_EXPS));
        for (int pos = 0; pos < POSITIONS; pos++) memcpy(b + blk * c4()->stride + c4()->scale[pos], &s, 4);
        break;
    }
    default: { /* one head's weight in every row */
        attest_tensor *wt = attest_case_tensor(c, "weights");
        float *w = wt->data;
        uint64_t h = fuzz_head_uint(in, 1) % (uint64_t)p->heads;
        int zero = (uint8_t)fuzz_head_uint(in, 1) & 1;
        for (size_t i = h; i < attest_tensor_count(wt); i += (size_t)p->heads) w[i] = zero ? 0.0f : -w[i];
        break;
    }
    }
}

void fuzz_indexer_apply(attest_case *c, fuzz_input *in, int *valid)
{
    const attest_indexer_params *p = &c->params.indexer;
    attest_tensor *cache = attest_case_tensor(c, "cache_bytes");
    attest_tensor *table = attest_case_tensor(c, "block_table");
    attest_tensor *lens = attest_case_tensor(c, "context_lens");
    attest_tensor *q = attest_case_tensor(c, "q_fp8");
    attest_tensor *w = attest_case_tensor(c, "weights");
    const int64_t max_ctx = max_context(p);
    for (int m = 0; m < FUZZ_MAX_MUTATIONS && fuzz_remaining(in) > 0; m++) {
        const uint8_t op = (uint8_t)fuzz_head_uint(in, 1);
        if (op >= EXTENDED) {
            apply_extended(c, in);
            continue;
        }
        switch (op % 6) {
        case 0: { /* a context length: anything the block table can hold */
            int32_t *l = lens->data;
            const uint64_t r = fuzz_head_uint(in, 1) % (uint64_t)p->b;
            l[r] = (int32_t)(fuzz_head_uint(in, 2) % (uint64_t)(max_ctx + 1));
            break;
        }
        case 1: { /* a block-table entry: any physical block, repeats allowed */
            int32_t *t = table->data;
            const uint64_t i = fuzz_head_uint(in, 2) % attest_tensor_count(table);
            t[i] = (int32_t)(fuzz_head_uint(in, 4) % (uint64_t)p->num_blocks);
            break;
        }
        case 2: { /* a key fp8 byte */
            uint64_t blk = fuzz_head_uint(in, 4) % (uint64_t)p->num_blocks;
            uint8_t *b = fuzz_writable_range(cache, blk * c4()->stride, c4()->stride);
            const uint64_t at = blk * c4()->stride + fuzz_head_uint(in, 2) % c4()->keys;
            b[at] = (uint8_t)fuzz_head_uint(in, 1);
            break;
        }
        case 3: { /* a query fp8 pattern */
            uint8_t *b = q->data;
            const uint64_t at = fuzz_head_uint(in, 4) % q->nbytes;
            b[at] = (uint8_t)fuzz_head_uint(in, 1);
            break;
        }
        case 4: { /* a weight */
            float *f = w->data;
            const uint64_t i = fuzz_head_uint(in, 2) % attest_tensor_count(w);
            f[i] = pick_float(in);
            break;
        }
        default: { /* a position's fp32 scale, written at its exact byte offset */
            uint64_t blk = fuzz_head_uint(in, 4) % (uint64_t)p->num_blocks;
            uint64_t pos = fuzz_head_uint(in, 1) % POSITIONS;
            uint8_t nan = (uint8_t)fuzz_head_uint(in, 1) == 0; /* a NaN scale, now and then */
            float s = nan ? NAN : fabsf(pick_float(in));
            memcpy((uint8_t *)fuzz_writable_range(cache, blk * c4()->stride, c4()->stride) +
                       blk * c4()->stride + c4()->scale[pos],
                   &s, 4);
            break;
        }
        }
    }
    /* Lengths and table edits can make a used block invalid only through a -1 the generator
     * left in unused slots: such a case is not a valid input, so it is skipped, not judged. */
    *valid = attest_case_check_inputs(c) == ATTEST_OK;
}

/* --- features ---------------------------------------------------------------------------- */

enum {
    F_LEN0, F_LEN1, F_LEN_MOD0, F_LEN_MOD1, F_LEN_MOD63, F_LEN_OTHER, F_LEN_FULL,
    F_PAGES1, F_PAGES2, F_PAGES3_4, F_PAGES5,
    F_INVALID_NONE, F_INVALID_SOME, F_INVALID_MOST, F_INVALID_ALL, F_INVALID_TILE,
    F_TABLE_REPEAT, F_TABLE_PERMUTED,
    F_NEXT_N1, F_NEXT_N2, F_NEXT_N3,
    F_BATCH1, F_BATCH2_3, F_BATCH4,
    F_HEADS, /* six classes */
    F_KEY_NAN = F_HEADS + 6, F_KEY_MAX, F_KEY_SUBNORMAL, F_Q_NAN, F_SCALE_NAN,
    F_SCALE_ZERO, F_SCALE_TINY, F_SCALE_SMALL, F_SCALE_UNIT, F_SCALE_LARGE,
    F_WEIGHT_ZERO, F_WEIGHT_NEGATIVE, F_WEIGHT_ALL_ZERO_HEAD,
    F_POOL_PAST_2G, F_READ_PAST_2G,
    F_COUNT
};

const char *const fuzz_indexer_feature_names[] = {
    "len=0", "len=1", "len%64=0", "len%64=1", "len%64=63", "len-other", "len=table-full",
    "pages=1", "pages=2", "pages=3-4", "pages>=5",
    "invalid=none", "invalid<50%", "invalid>=50%", "invalid=all", "all-invalid-tile",
    "table-repeat", "table-permuted",
    "next_n=1", "next_n=2", "next_n>=3",
    "b=1", "b=2-3", "b>=4",
    "heads=1", "heads=2", "heads=3-8", "heads=9-32", "heads=33-64", "heads>64",
    "key-fp8-nan", "key-fp8-max", "key-fp8-subnormal", "q-fp8-nan", "scale-nan",
    "scale=0", "scale<2^-60", "scale<2^-10", "scale<2^10", "scale>=2^10",
    "weight=0", "weight<0", "head-weights-all-0",
    "pool>2^31", "read-block>=2^31",
};
const int fuzz_indexer_feature_count = F_COUNT;
_Static_assert(sizeof fuzz_indexer_feature_names / sizeof fuzz_indexer_feature_names[0] == F_COUNT,
               "one name per indexer feature");
_Static_assert(F_COUNT <= FUZZ_MAX_FEATURES, "FUZZ_MAX_FEATURES too small");

FUZZ_NO_COVERAGE static void scale_classes(float s, uint8_t *hits)
{
    const float a = fabsf(s);
    if (isnan(s)) fuzz_hit(hits, F_SCALE_NAN);
    else if (a == 0.0f) fuzz_hit(hits, F_SCALE_ZERO);
    else if (a < 0x1p-60f) fuzz_hit(hits, F_SCALE_TINY);
    else if (a < 0x1p-10f) fuzz_hit(hits, F_SCALE_SMALL);
    else if (a < 0x1p10f) fuzz_hit(hits, F_SCALE_UNIT);
    else fuzz_hit(hits, F_SCALE_LARGE);
}

FUZZ_NO_COVERAGE void fuzz_indexer_features(const attest_case *c, uint8_t *hits)
{
    const c4_geometry *g = c4();
    uint64_t keys[FUZZ_FP8_CLASSES] = {0}, qs[FUZZ_FP8_CLASSES] = {0};
    const attest_indexer_params *p = &c->params.indexer;
    const int32_t *lens = attest_case_tensor_const(c, "context_lens")->data;
    const int32_t *table = attest_case_tensor_const(c, "block_table")->data;
    const uint8_t *cache = attest_case_tensor_const(c, "cache_bytes")->data;
    const attest_tensor *qt = attest_case_tensor_const(c, "q_fp8");
    const attest_tensor *wt = attest_case_tensor_const(c, "weights");
    const int64_t max_ctx = max_context(p);
    int64_t valid = 0;
    for (int32_t r = 0; r < p->b; r++) {
        const int32_t len = lens[r];
        valid += len;
        if (len == 0) fuzz_hit(hits, F_LEN0);
        else if (len == 1) fuzz_hit(hits, F_LEN1);
        else if (len % POSITIONS == 0) fuzz_hit(hits, F_LEN_MOD0);
        else if (len % POSITIONS == 1) fuzz_hit(hits, F_LEN_MOD1);
        else if (len % POSITIONS == POSITIONS - 1) fuzz_hit(hits, F_LEN_MOD63);
        else fuzz_hit(hits, F_LEN_OTHER);
        if (len > 0 && len == max_ctx) fuzz_hit(hits, F_LEN_FULL);
        const int32_t pages = (len + POSITIONS - 1) / POSITIONS;
        if (pages == 1) fuzz_hit(hits, F_PAGES1);
        else if (pages == 2) fuzz_hit(hits, F_PAGES2);
        else if (pages >= 3 && pages <= 4) fuzz_hit(hits, F_PAGES3_4);
        else if (pages >= 5) fuzz_hit(hits, F_PAGES5);
        if ((int64_t)p->max_len - len >= POSITIONS) fuzz_hit(hits, F_INVALID_TILE);
        const int32_t *row = table + (size_t)r * (size_t)p->blocks_per_req;
        for (int32_t i = 0; i < pages; i++) {
            if (i > 0 && row[i] < row[i - 1]) fuzz_hit(hits, F_TABLE_PERMUTED);
            for (int32_t j = 0; j < i; j++)
                if (row[j] == row[i]) fuzz_hit(hits, F_TABLE_REPEAT);
            if (row[i] < 0 || row[i] >= p->num_blocks) continue;
            if ((uint64_t)row[i] * g->stride >= (UINT64_C(1) << 31)) fuzz_hit(hits, F_READ_PAST_2G);
            const uint8_t *blk = cache + (size_t)row[i] * g->stride;
            const int32_t used = len - i * POSITIONS < POSITIONS ? len - i * POSITIONS : POSITIONS;
            for (int32_t pos = 0; pos < used; pos++) {
                float s;
                memcpy(&s, blk + g->scale[pos], 4);
                scale_classes(s, hits);
                fuzz_fp8_census(blk + g->key[pos], g->dim, keys);
            }
        }
    }
    fuzz_hit_n(hits, F_KEY_NAN, keys[FUZZ_FP8_NAN]);
    fuzz_hit_n(hits, F_KEY_MAX, keys[FUZZ_FP8_MAX]);
    fuzz_hit_n(hits, F_KEY_SUBNORMAL, keys[FUZZ_FP8_SUBNORMAL]);
    const int64_t total = (int64_t)p->b * p->max_len;
    if (valid == total) fuzz_hit(hits, F_INVALID_NONE);
    else if (valid == 0) fuzz_hit(hits, F_INVALID_ALL);
    else if (2 * valid > total) fuzz_hit(hits, F_INVALID_SOME);
    else fuzz_hit(hits, F_INVALID_MOST);
    fuzz_hit(hits, p->next_n <= 1 ? F_NEXT_N1 : p->next_n == 2 ? F_NEXT_N2 : F_NEXT_N3);
    fuzz_hit(hits, p->b <= 1 ? F_BATCH1 : p->b <= 3 ? F_BATCH2_3 : F_BATCH4);
    fuzz_hit(hits, F_HEADS + fuzz_heads_class(p->heads));
    if ((uint64_t)p->num_blocks * c4()->stride > (UINT64_C(1) << 31))
        fuzz_hit(hits, F_POOL_PAST_2G);
    const uint8_t *q = qt->data;
    fuzz_fp8_census(q, qt->nbytes, qs);
    fuzz_hit_n(hits, F_Q_NAN, qs[FUZZ_FP8_NAN]);
    const float *w = wt->data;
    const size_t nw = attest_tensor_count(wt);
    for (size_t i = 0; i < nw; i++) {
        if (w[i] == 0.0f) fuzz_hit(hits, F_WEIGHT_ZERO);
        else if (w[i] < 0.0f) fuzz_hit(hits, F_WEIGHT_NEGATIVE);
    }
    for (int32_t h = 0; h < p->heads; h++) {
        int all_zero = 1;
        for (size_t i = (size_t)h; i < nw && all_zero; i += (size_t)p->heads) all_zero = w[i] == 0.0f;
        if (all_zero) fuzz_hit(hits, F_WEIGHT_ALL_ZERO_HEAD);
    }
}

/* --- structured operations --------------------------------------------------------------- */

/* fp8 codes where kernels go wrong: zeros, the smallest subnormals, +-448, the NaN codes. */
static const uint8_t special_fp8[] = {0x00, 0x80, 0x01, 0x81, 0x07, 0x7E, 0xFE, 0x7F, 0xFF, 0x38};

/* A physical block some request reads (where a change shows), or any block. */
static uint64_t pick_block(const attest_case *c, fuzz_rng *r)
{
    const attest_indexer_params *p = &c->params.indexer;
    const int32_t *table = attest_case_tensor_const(c, "block_table")->data;
    const int32_t *lens = attest_case_tensor_const(c, "context_lens")->data;
    const uint64_t req = fuzz_rng_below(r, (uint64_t)p->b);
    const int32_t pages = (lens[req] + POSITIONS - 1) / POSITIONS;
    if (pages > 0 && fuzz_rng_below(r, 4) != 0) {
        int32_t blk = table[req * (uint64_t)p->blocks_per_req + fuzz_rng_below(r, (uint64_t)pages)];
        if (blk >= 0) return (uint64_t)blk;
    }
    return fuzz_rng_below(r, (uint64_t)p->num_blocks);
}

void fuzz_indexer_op(const attest_case *c, fuzz_rng *r, fuzz_op *op)
{
    const attest_indexer_params *p = &c->params.indexer;
    const int64_t max_ctx = max_context(p);
    switch (fuzz_rng_below(r, 9)) {
    case 0:
    case 1: { /* a length at a page boundary +-1, 0, 1 or the whole table */
        int64_t len;
        const uint64_t how = fuzz_rng_below(r, 4);
        if (how == 0) len = (int64_t)fuzz_rng_below(r, 2) ? max_ctx : 0;
        else if (how == 1) len = (int64_t)fuzz_rng_below(r, 2) + 1;
        else len = (int64_t)fuzz_rng_below(r, (uint64_t)max_ctx / POSITIONS + 1) * POSITIONS +
                   (int64_t)fuzz_rng_below(r, 3) - 1;
        if (len < 0) len = 0;
        if (len > max_ctx) len = max_ctx;
        fuzz_op_put(op, 0, 1);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)p->b), 1);
        fuzz_op_put(op, (uint64_t)len, 2);
        break;
    }
    case 2: /* a page-table permutation within one request */
        fuzz_op_put(op, EXTENDED, 1);
        fuzz_op_put(op, 0, 1);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)p->b), 1);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)p->blocks_per_req), 1);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)p->blocks_per_req), 1);
        break;
    case 3: /* a table entry: a repeat of another request's block or any block */
        fuzz_op_put(op, 1, 1);
        fuzz_op_put(op, fuzz_rng_below(r, attest_tensor_count(attest_case_tensor_const(c, "block_table"))), 2);
        fuzz_op_put(op, pick_block(c, r), 4);
        break;
    case 4: /* a special key fp8 code in a block that is read */
        fuzz_op_put(op, 2, 1);
        fuzz_op_put(op, pick_block(c, r), 4);
        fuzz_op_put(op, fuzz_rng_below(r, c4()->keys), 2);
        fuzz_op_put(op, special_fp8[fuzz_rng_below(r, sizeof special_fp8)], 1);
        break;
    case 5: /* a special query code */
        fuzz_op_put(op, 3, 1);
        fuzz_op_put(op, fuzz_rng_below(r, attest_case_tensor_const(c, "q_fp8")->nbytes), 4);
        fuzz_op_put(op, special_fp8[fuzz_rng_below(r, sizeof special_fp8)], 1);
        break;
    case 6: /* a scale exponent class for a whole block */
        fuzz_op_put(op, EXTENDED, 1);
        fuzz_op_put(op, 1, 1);
        fuzz_op_put(op, pick_block(c, r), 4);
        fuzz_op_put(op, fuzz_rng_below(r, SCALE_EXPS), 1);
        break;
    case 7: { /* a NaN or zero scale at one position */
        const int nan = (int)fuzz_rng_below(r, 2);
        fuzz_op_put(op, 5, 1);
        fuzz_op_put(op, pick_block(c, r), 4);
        fuzz_op_put(op, fuzz_rng_below(r, POSITIONS), 1);
        fuzz_op_put(op, nan ? 0 : 1, 1);  /* 0: NaN */
        if (!nan) fuzz_op_put(op, 0, 1);  /* pick_float: 0.0 */
        break;
    }
    default: /* one head's weights zeroed or negated */
        fuzz_op_put(op, EXTENDED, 1);
        fuzz_op_put(op, 2, 1);
        fuzz_op_put(op, fuzz_rng_below(r, (uint64_t)p->heads), 1);
        fuzz_op_put(op, fuzz_rng_below(r, 2), 1);
        break;
    }
}
