/* Unit tests of the CPU references on tiny hand-built cases whose expected values are derived by
 * hand from docs/kernels.md sections 2-6 (the bytes are written at offsets read from the spec tables, not
 * through the layout codec, so a codec mistake cannot cancel out). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/case.h"
#include "attest/reference.h"

/* fp8 e4m3fn bytes: S EEEE MMM, bias 7. */
#define FP8_1 0x38u     /* 1.0 */
#define FP8_2 0x40u     /* 2.0 */
#define FP8_0_5 0x30u   /* 0.5 */
#define FP8_3 0x44u     /* 3.0 */
#define FP8_M1 0xB8u    /* -1.0 */
#define FP8_M3 0xC4u    /* -3.0 */
#define FP8_NAN 0x7Fu
/* bf16 bit patterns. */
#define BF16_1 0x3F80u
#define BF16_2 0x4000u
#define BF16_1_5 0x3FC0u

#define IDX_BLOCK_BYTES 8448u

static void *tensor(attest_case *c, const char *name)
{
    attest_tensor *t = attest_case_tensor(c, name);
    assert_non_null(t);
    assert_non_null(t->data);
    return t->data;
}

/* ---- indexer -------------------------------------------------------------------------------- */

static void indexer_case(attest_case *c, int32_t b, int32_t next_n, int32_t heads,
                         int32_t num_blocks, int32_t bpr, int32_t max_len, attest_masking m)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_INDEXER;
    attest_indexer_params *p = &c->params.indexer;
    p->b = b;
    p->next_n = next_n;
    p->heads = heads;
    p->head_dim = 128;
    p->num_blocks = num_blocks;
    p->blocks_per_req = bpr;
    p->max_len = max_len;
    p->masking = m;
    assert_ok(attest_case_define_tensors(c, 1));
    assert_ok(attest_case_alloc_heap(c));
}

static void put_k(attest_case *c, int32_t blk, int32_t slot, int32_t d, uint8_t byte)
{
    uint8_t *cache = tensor(c, "cache_bytes");
    cache[(size_t)blk * IDX_BLOCK_BYTES + (size_t)slot * 128 + (size_t)d] = byte;
}

static void put_kscale(attest_case *c, int32_t blk, int32_t slot, float s)
{
    uint8_t *cache = tensor(c, "cache_bytes");
    memcpy(cache + (size_t)blk * IDX_BLOCK_BYTES + 8192 + 4 * (size_t)slot, &s, 4);
}

static void put_q(attest_case *c, int32_t row, int32_t h, int32_t d, uint8_t byte)
{
    const attest_indexer_params *p = &c->params.indexer;
    uint8_t *q = tensor(c, "q_fp8");
    q[((size_t)row * (size_t)p->heads + (size_t)h) * 128 + (size_t)d] = byte;
}

/* The worked example: H = 2, request 0 in physical block 1, block 0 all NaN (poison).
 *   q h0 = [1, 1], q h1 = [-1, 0]; k t0 = [2, 0.5] scale 0.5; k t1 = [-3, 1] scale 4; w = [1.5, .25]
 *   t0: h0 dot 2.5, h1 dot -2 (relu cuts it): 1.5 * 2.5 = 3.75, times 0.5 = 1.875
 *   t1: h0 dot -2 (cut), h1 dot 3: 0.25 * 3 = 0.75, times 4 = 3.0 */
static void worked_indexer(attest_case *c, attest_masking m)
{
    indexer_case(c, 1, 1, 2, 2, 1, 4, m);
    memset(tensor(c, "cache_bytes"), 0xFF, IDX_BLOCK_BYTES); /* block 0: NaN fp8 and scales */
    ((int32_t *)tensor(c, "block_table"))[0] = 1;
    ((int32_t *)tensor(c, "context_lens"))[0] = 2;
    put_q(c, 0, 0, 0, FP8_1);
    put_q(c, 0, 0, 1, FP8_1);
    put_q(c, 0, 1, 0, FP8_M1);
    put_k(c, 1, 0, 0, FP8_2);
    put_k(c, 1, 0, 1, FP8_0_5);
    put_kscale(c, 1, 0, 0.5f);
    put_k(c, 1, 1, 0, FP8_M3);
    put_k(c, 1, 1, 1, FP8_1);
    put_kscale(c, 1, 1, 4.0f);
    float *w = tensor(c, "weights");
    w[0] = 1.5f;
    w[1] = 0.25f;
}

/* Kernel and README orders agree on the worked example; -inf past the length. */
static void test_indexer_worked_example(void **state)
{
    (void)state;
    attest_case c;
    worked_indexer(&c, ATTEST_MASK_NEG_INF);
    for (int order = 0; order < 2; order++) {
        double lg[4];
        assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                            (attest_indexer_order)order, lg));
        assert_true(lg[0] == 1.875);
        assert_true(lg[1] == 3.0);
        assert_true(isinf(lg[2]) && lg[2] < 0);
        assert_true(isinf(lg[3]) && lg[3] < 0);
    }
    attest_case_free(&c);
}

/* Each masking convention writes its own value past the row length. */
static void test_indexer_masking_conventions(void **state)
{
    (void)state;
    attest_case c;
    double lg[4];
    worked_indexer(&c, ATTEST_MASK_ZERO);
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_KERNEL, lg));
    assert_true(lg[1] == 3.0 && lg[2] == 0.0 && lg[3] == 0.0 && !signbit(lg[2]));
    attest_case_free(&c);
    worked_indexer(&c, ATTEST_MASK_UNSPECIFIED);
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_KERNEL, lg));
    assert_true(lg[0] == 1.875 && isnan(lg[2]) && isnan(lg[3]));
    attest_case_free(&c);
}

/* A NaN fp8 key byte: the kernel's fmaxf(dot, 0) turns the NaN dot into 0, the README (torch)
 * form keeps NaN. A negative scale separates the two orders. */
static void test_indexer_nan_dot_and_negative_scale(void **state)
{
    (void)state;
    attest_case c;
    double lg[4];
    worked_indexer(&c, ATTEST_MASK_NEG_INF);
    put_q(&c, 0, 0, 5, FP8_1);
    put_k(&c, 1, 0, 5, FP8_NAN); /* h0's dot at t0 becomes NaN; h1 (q[5] = 0) too: 0 * NaN */
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_KERNEL, lg));
    assert_true(lg[0] == 0.0); /* both heads cut to 0 */
    assert_true(lg[1] == 3.0);
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_README, lg));
    assert_true(isnan(lg[0]));
    assert_true(lg[1] == 3.0);
    put_k(&c, 1, 0, 5, 0x00);
    /* t1 with scale -1: kernel -1 * (0.25 * 3) = -0.75; README relu(-dot): h0 dot -2 -> 2,
     * h1 dot 3 -> -3 cut: 1.5 * 2 = 3.0. */
    put_kscale(&c, 1, 1, -1.0f);
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_KERNEL, lg));
    assert_true(lg[1] == -0.75);
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_README, lg));
    assert_true(lg[1] == 3.0);
    attest_case_free(&c);
}

/* True mode reads k_true / q_true at the PHYSICAL position, not the cache. */
static void test_indexer_true_mode(void **state)
{
    (void)state;
    attest_case c;
    double lg[4];
    worked_indexer(&c, ATTEST_MASK_NEG_INF);
    float *kt = tensor(&c, "k_true"), *qt = tensor(&c, "q_true");
    for (int i = 0; i < 64 * 128; i++) kt[i] = NAN; /* physical block 0 must not be read */
    kt[64 * 128 + 0] = 2.0f; /* physical position 64 = block 1 slot 0 = logical t0 */
    kt[64 * 128 + 1] = 2.0f;
    kt[65 * 128 + 0] = -1.0f;
    qt[0] = 1.0f;           /* h0 = [1, 1] */
    qt[1] = 1.0f;
    qt[128] = -1.0f;        /* h1 = [-1, 0] */
    /* t0: h0 dot 4 -> 1.5 * 4 = 6; h1 dot -2 cut. t1: h0 dot -1 cut, h1 dot 1 -> 0.25. */
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_TRUE, ATTEST_INDEXER_ORDER_KERNEL,
                                        lg));
    assert_true(lg[0] == 6.0);
    assert_true(lg[1] == 0.25);
    assert_true(isinf(lg[2]));
    attest_case_free(&c);
}

/* Position t of a request lives in block_table[b][t / 64], slot t % 64 (across a block edge). */
static void test_indexer_page_translation(void **state)
{
    (void)state;
    attest_case c;
    indexer_case(&c, 1, 1, 1, 4, 2, 66, ATTEST_MASK_NEG_INF);
    int32_t *bt = tensor(&c, "block_table");
    bt[0] = 3;
    bt[1] = 0;
    ((int32_t *)tensor(&c, "context_lens"))[0] = 66;
    ((float *)tensor(&c, "weights"))[0] = 1.0f;
    put_q(&c, 0, 0, 0, FP8_1);
    for (int blk = 0; blk < 4; blk++)
        for (int s = 0; s < 64; s++) put_kscale(&c, blk, s, 1.0f);
    put_k(&c, 3, 1, 0, FP8_2); /* logical t = 1 */
    put_k(&c, 0, 1, 0, FP8_3); /* logical t = 65 */
    put_k(&c, 1, 1, 0, FP8_1); /* unmapped block: must not appear */
    double lg[66];
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_KERNEL, lg));
    for (int t = 0; t < 66; t++) assert_true(lg[t] == (t == 1 ? 2.0 : t == 65 ? 3.0 : 0.0));
    /* A block table entry outside the pool is an error naming the element. */
    bt[1] = 4;
    assert_int_equal(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                               ATTEST_INDEXER_ORDER_KERNEL, lg),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "block_table[0][1]"));
    attest_case_free(&c);
}

/* MTP: slot j of a request of length L sees t <= L - next_n + j, clamped to [0, max_len]. */
static void test_indexer_mtp_rule(void **state)
{
    (void)state;
    attest_indexer_params p = {.b = 3, .next_n = 2, .max_len = 8};
    const int32_t lens[3] = {5, 0, 1};
    const int32_t expect[6] = {4, 5, 0, 0, 0, 1};
    for (int32_t r = 0; r < 6; r++) assert_int_equal(attest_indexer_row_length(&p, lens, r), expect[r]);
    attest_indexer_params p3 = {.b = 1, .next_n = 3, .max_len = 8};
    const int32_t l10[1] = {10}; /* 8, 9, 10 clamp to max_len 8 */
    for (int32_t r = 0; r < 3; r++) assert_int_equal(attest_indexer_row_length(&p3, l10, r), 8);
    const int32_t l9[1] = {9}; /* 7, 8, 9 -> 7, 8, 8 */
    assert_int_equal(attest_indexer_row_length(&p3, l9, 0), 7);
    assert_int_equal(attest_indexer_row_length(&p3, l9, 2), 8);

    /* The logits follow: next_n = 2, L = 2: row 0 sees t0 only, row 1 sees t0 and t1. */
    attest_case c;
    indexer_case(&c, 1, 2, 1, 1, 1, 3, ATTEST_MASK_NEG_INF);
    ((int32_t *)tensor(&c, "context_lens"))[0] = 2;
    float *w = tensor(&c, "weights");
    w[0] = 1.0f;
    w[1] = 2.0f;
    put_q(&c, 0, 0, 0, FP8_1);
    put_q(&c, 1, 0, 0, FP8_1);
    put_k(&c, 0, 0, 0, FP8_1);
    put_k(&c, 0, 1, 0, FP8_3);
    put_kscale(&c, 0, 0, 1.0f);
    put_kscale(&c, 0, 1, 1.0f);
    double lg[6];
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_KERNEL, lg));
    assert_true(lg[0] == 1.0 && isinf(lg[1]) && isinf(lg[2]));
    assert_true(lg[3] == 2.0 && lg[4] == 6.0 && isinf(lg[5]));
    attest_case_free(&c);
}

/* ---- top-k ---------------------------------------------------------------------------------- */

/* Descending scores, ties to the lower position, NaN and -inf never chosen, -1 padding. */
static void test_topk_ties_nan_padding(void **state)
{
    (void)state;
    const double lg[7] = {1.0, 3.0, 3.0, 2.0, NAN, -INFINITY, 5.0};
    int32_t idx[8];
    assert_ok(attest_ref_topk_row_skip_neg_inf(lg, 7, 4, ATTEST_TOPK_BY_SCORE, idx));
    const int32_t e4[4] = {6, 1, 2, 3};
    assert_memory_equal(idx, e4, sizeof e4);
    assert_ok(attest_ref_topk_row_skip_neg_inf(lg, 7, 8, ATTEST_TOPK_BY_SCORE, idx));
    const int32_t e8[8] = {6, 1, 2, 3, 0, -1, -1, -1};
    assert_memory_equal(idx, e8, sizeof e8);
    /* Only positions below len count. */
    assert_ok(attest_ref_topk_row_skip_neg_inf(lg, 2, 3, ATTEST_TOPK_BY_SCORE, idx));
    const int32_t e2[3] = {1, 0, -1};
    assert_memory_equal(idx, e2, sizeof e2);
    assert_ok(attest_ref_topk_row_skip_neg_inf(lg, 0, 2, ATTEST_TOPK_BY_SCORE, idx));
    assert_true(idx[0] == -1 && idx[1] == -1);
    assert_int_equal(attest_ref_topk_row_skip_neg_inf(lg, -1, 2, ATTEST_TOPK_BY_SCORE, idx),
                     ATTEST_ERR_INVALID_ARGUMENT);
}

/* The short rule: L <= k returns 0..L-1 whatever the scores; L > k selects by score. */
static void test_topk_short_identity(void **state)
{
    (void)state;
    const double lg[5] = {1.0, NAN, 5.0, 7.0, 0.5};
    int32_t idx[4];
    assert_ok(attest_ref_topk_row_skip_neg_inf(lg, 3, 4, ATTEST_TOPK_SHORT_IDENTITY, idx));
    const int32_t e[4] = {0, 1, 2, -1};
    assert_memory_equal(idx, e, sizeof e);
    assert_ok(attest_ref_topk_row_skip_neg_inf(lg, 3, 4, ATTEST_TOPK_BY_SCORE, idx));
    const int32_t s[4] = {2, 0, -1, -1};
    assert_memory_equal(idx, s, sizeof s);
    /* L == k still takes the short rule (NaN position included). */
    assert_ok(attest_ref_topk_row_skip_neg_inf(lg, 3, 3, ATTEST_TOPK_SHORT_IDENTITY, idx));
    assert_true(idx[0] == 0 && idx[1] == 1 && idx[2] == 2);
    assert_ok(attest_ref_topk_row_skip_neg_inf(lg, 5, 2, ATTEST_TOPK_SHORT_IDENTITY, idx));
    assert_true(idx[0] == 3 && idx[1] == 2);
}

/* Logical position l of request b maps to block_table[b][l / 64] * 64 + l % 64. */
static void test_topk_to_physical(void **state)
{
    (void)state;
    const int32_t bt[4] = {7, 7, 5, 2}; /* request 1 has blocks 5, 2 */
    const int32_t logical[5] = {0, 63, 64, 127, -1};
    int32_t phys[5];
    assert_ok(attest_topk_to_physical(bt, 2, 1, logical, 5, phys));
    const int32_t e[5] = {320, 383, 128, 191, -1};
    assert_memory_equal(phys, e, sizeof e);
    const int32_t past[1] = {128};
    assert_int_equal(attest_topk_to_physical(bt, 2, 1, past, 1, phys), ATTEST_ERR_INVALID_ARGUMENT);
    const int32_t neg[1] = {-2};
    assert_int_equal(attest_topk_to_physical(bt, 2, 1, neg, 1, phys), ATTEST_ERR_INVALID_ARGUMENT);
}

/* ---- sparse MLA decode ---------------------------------------------------------------------- */

/* mla-v4 with P = 2: stride ceil(2*584/576)*576 = 1728; token t data at t*576, its 7 UE8M0
 * scales at 2*576 + t*8. Every byte starts as 0xFF (NaN everywhere), as upstream tests do. */
#define V4_P 2
#define V4_STRIDE 1728u

static void mla_case(attest_case *c, attest_layout_id layout, int32_t P, int64_t stride,
                     int32_t pages, int32_t h_q, int32_t topk, int sink, int topk_len,
                     int extra)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    attest_mla_params *p = &c->params.mla;
    p->layout = layout;
    p->page_size = P;
    p->page_stride = stride;
    p->num_pages = pages;
    p->b = 1;
    p->s_q = 1;
    p->h_q = h_q;
    p->d_qk = layout == ATTEST_LAYOUT_MLA_V4 ? 512 : 576;
    p->d_v = 512;
    p->topk = topk;
    p->sm_scale = 1.0f;
    p->has_sink = sink;
    p->has_topk_length = topk_len;
    p->has_extra = extra;
    if (extra) {
        p->extra_page_size = 3; /* stride ceil(3*584/576)*576 = 2304 */
        p->extra_page_stride = 0;
        p->extra_num_pages = 1;
        p->extra_topk = 2;
    }
    assert_ok(attest_case_define_tensors(c, 1));
    assert_ok(attest_case_alloc_heap(c));
    attest_tensor *t = attest_case_tensor(c, "cache_bytes");
    memset(t->data, 0xFF, t->nbytes);
    if (extra) {
        t = attest_case_tensor(c, "extra_cache_bytes");
        memset(t->data, 0xFF, t->nbytes);
    }
}

/* Writes a v4 token whose only nonzero values are nope[0] = fp8 byte * 2^(scale0 - 127) and
 * rope[0] (K dim 448) = bf16 `rope`. */
static void v4_token(uint8_t *pool, int32_t P, uint64_t stride, int32_t index, uint8_t nope0,
                     uint8_t scale0, uint16_t rope)
{
    uint8_t *page = pool + (size_t)(index / P) * stride;
    int32_t t = index % P;
    memset(page + (size_t)t * 576, 0, 576);
    page[(size_t)t * 576] = nope0;
    memcpy(page + (size_t)t * 576 + 448, &rope, 2); /* little-endian host */
    memset(page + (size_t)P * 576 + (size_t)t * 8, 127, 7); /* scales 1.0 */
    page[(size_t)P * 576 + (size_t)t * 8] = scale0;
}

static void set_q0(attest_case *c, int32_t h, uint16_t bits)
{
    uint16_t *q = tensor(c, "q_bf16");
    q[(size_t)h * (size_t)c->params.mla.d_qk] = bits;
}

/* One token, one head: out = V of that token, lse = sm_scale * dot. Token 1: nope0 = 2 * 2^1 = 4,
 * rope0 = 1.5; q = e0; sm_scale 0.5 -> lse 2.0. */
static void test_mla_one_token(void **state)
{
    (void)state;
    attest_case c;
    mla_case(&c, ATTEST_LAYOUT_MLA_V4, V4_P, 0, 2, 1, 2, 0, 0, 0);
    c.params.mla.sm_scale = 0.5f;
    v4_token(tensor(&c, "cache_bytes"), V4_P, V4_STRIDE, 1, FP8_2, 128, BF16_1_5);
    int32_t *idx = tensor(&c, "indices");
    idx[0] = 1;
    idx[1] = -1;
    set_q0(&c, 0, BF16_1);
    double out[512], lse;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(lse == 2.0);
    for (int d = 0; d < 512; d++) assert_true(out[d] == (d == 0 ? 4.0 : d == 448 ? 1.5 : 0.0));
    attest_case_free(&c);
}

/* Two tokens with scores 1 and 2 (page 0 slot 1 and page 2 slot 0): lse = ln(e + e^2),
 * out[0] = (1 e + 2 e^2) / (e + e^2), out[448] = e / (e + e^2) (only token A has rope 1). */
static void two_token_case(attest_case *c, int sink, int extra)
{
    mla_case(c, ATTEST_LAYOUT_MLA_V4, V4_P, 0, 3, 1, 3, sink, 0, extra);
    uint8_t *pool = tensor(c, "cache_bytes");
    v4_token(pool, V4_P, V4_STRIDE, 1, FP8_1, 127, BF16_1);
    int32_t *idx = tensor(c, "indices");
    idx[0] = -1;
    idx[1] = 1;
    if (extra) {
        /* token B lives in the extra scope's pool (P = 3, stride 2304), slot 2 */
        v4_token(tensor(c, "extra_cache_bytes"), 3, 2304, 2, FP8_2, 127, 0);
        int32_t *eidx = tensor(c, "extra_indices");
        eidx[0] = 2;
        eidx[1] = -1;
        idx[2] = -1;
    } else {
        v4_token(pool, V4_P, V4_STRIDE, 4, FP8_2, 127, 0);
        idx[2] = 4;
    }
    set_q0(c, 0, BF16_1);
}

static void expect_two_token(const double *out, double lse, double sink_factor)
{
    const double e1 = exp(1.0), e2 = exp(2.0);
    assert_true(fabs(lse - log(e1 + e2)) < 1e-15);
    assert_true(fabs(out[0] - sink_factor * (e1 + 2.0 * e2) / (e1 + e2)) < 1e-15);
    assert_true(fabs(out[448] - sink_factor * e1 / (e1 + e2)) < 1e-15);
    assert_true(out[1] == 0.0 && out[511] == 0.0);
}

static void test_mla_two_token_softmax(void **state)
{
    (void)state;
    attest_case c;
    two_token_case(&c, 0, 0);
    double out[512], lse;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    expect_two_token(out, lse, 1.0);
    attest_case_free(&c);
}

/* The extra scope joins the main one in ONE softmax: same answer as both tokens in one scope. */
static void test_mla_extra_scope_one_softmax(void **state)
{
    (void)state;
    attest_case c;
    two_token_case(&c, 0, 1);
    double out[512], lse;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    expect_two_token(out, lse, 1.0);
    attest_case_free(&c);
}

/* Sink 0.5: out *= 1 / (1 + exp(0.5 - lse)); LSE excludes it (FlashMLA) or includes it (sglang
 * SM120: ln(e + e^2 + e^0.5)). A +inf sink zeroes out, a -inf sink changes nothing. */
static void test_mla_sink_conventions(void **state)
{
    (void)state;
    const double e1 = exp(1.0), e2 = exp(2.0), es = exp(0.5);
    const double lse0 = log(e1 + e2);
    attest_case c;
    two_token_case(&c, 1, 0);
    float *sink = tensor(&c, "attn_sink");
    double out[512], lse;
    sink[0] = 0.5f;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    expect_two_token(out, lse, (e1 + e2) / (e1 + e2 + es));
    c.params.mla.lse_convention = ATTEST_LSE_INCLUDES_SINK;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(fabs(lse - log(e1 + e2 + es)) < 1e-15);
    assert_true(fabs(out[448] - e1 / (e1 + e2 + es)) < 1e-15);

    sink[0] = INFINITY;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(isinf(lse) && lse > 0);
    assert_true(out[0] == 0.0 && out[448] == 0.0);
    c.params.mla.lse_convention = ATTEST_LSE_EXCLUDES_SINK;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(fabs(lse - lse0) < 1e-15 && out[0] == 0.0);

    sink[0] = -INFINITY;
    c.params.mla.lse_convention = ATTEST_LSE_INCLUDES_SINK;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    expect_two_token(out, lse, 1.0);
    attest_case_free(&c);
}

/* No valid index (all -1, or topk_length 0 over valid ones): out = 0, lse = +inf, with or
 * without a sink. Slots past topk_length may hold anything, even out-of-range values. */
static void test_mla_lonely_and_topk_length(void **state)
{
    (void)state;
    attest_case c;
    mla_case(&c, ATTEST_LAYOUT_MLA_V4, V4_P, 0, 3, 1, 3, 1, 1, 0);
    v4_token(tensor(&c, "cache_bytes"), V4_P, V4_STRIDE, 1, FP8_1, 127, BF16_1);
    ((float *)tensor(&c, "attn_sink"))[0] = 0.25f;
    int32_t *idx = tensor(&c, "indices"), *tl = tensor(&c, "topk_length");
    set_q0(&c, 0, BF16_1);
    double out[512], lse;
    idx[0] = idx[1] = idx[2] = -1;
    tl[0] = 3;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(isinf(lse) && lse > 0);
    for (int d = 0; d < 512; d++) assert_true(out[d] == 0.0);
    idx[0] = 1;
    idx[1] = 999999; /* garbage past topk_length: never read, never an error */
    idx[2] = -7;
    tl[0] = 0;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(isinf(lse) && out[0] == 0.0);
    tl[0] = 1; /* one token with score 1, sink 0.25: out[0] = 1 / (1 + e^(0.25 - 1)) */
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(lse == 1.0);
    assert_true(fabs(out[0] - 1.0 / (1.0 + exp(-0.75))) < 1e-15);
    /* Inside topk_length, anything but -1 outside the pool is an error naming the element. */
    tl[0] = 2;
    assert_int_equal(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "indices[0][0][1]"));
    idx[1] = 6; /* num_pages * P = 6 */
    assert_int_equal(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse),
                     ATTEST_ERR_INVALID_ARGUMENT);
    idx[1] = -2;
    assert_int_equal(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse),
                     ATTEST_ERR_INVALID_ARGUMENT);
    attest_case_free(&c);
}

/* mla-v32 (P = 1, padded stride 2 * 656): K = [nope 512 * fp32 scale | rope 64], V = nope only.
 * nope0 = 1 with scale 0.25, rope0 (K dim 512) = 2; q0 = 2, q512 = 1, sm 0.5:
 * lse = 0.5 * (2 * 0.25 + 1 * 2) = 1.25, out = V = [0.25, 0, ...] (no rope). */
static void test_mla_v32_layout(void **state)
{
    (void)state;
    attest_case c;
    mla_case(&c, ATTEST_LAYOUT_MLA_V32, 1, 2 * 656, 2, 1, 1, 0, 0, 0);
    c.params.mla.sm_scale = 0.5f;
    uint8_t *rec = (uint8_t *)tensor(&c, "cache_bytes") + 2 * 656; /* page 1 = index 1 */
    memset(rec, 0, 656);
    rec[0] = FP8_1;
    const float sc = 0.25f, one = 1.0f;
    memcpy(rec + 512, &sc, 4);
    for (int i = 1; i < 4; i++) memcpy(rec + 512 + 4 * i, &one, 4);
    const uint16_t r = BF16_2;
    memcpy(rec + 528, &r, 2);
    ((int32_t *)tensor(&c, "indices"))[0] = 1;
    uint16_t *q = tensor(&c, "q_bf16");
    q[0] = BF16_2;
    q[512] = BF16_1;
    double out[512], lse;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(lse == 1.25);
    for (int d = 0; d < 512; d++) assert_true(out[d] == (d == 0 ? 0.25 : 0.0));
    attest_case_free(&c);
}

/* True mode reads kv_true rows by physical token index; the cache is not consulted. */
static void test_mla_true_mode(void **state)
{
    (void)state;
    attest_case c;
    mla_case(&c, ATTEST_LAYOUT_MLA_V4, V4_P, 0, 2, 1, 1, 0, 0, 0);
    ((int32_t *)tensor(&c, "indices"))[0] = 3;
    set_q0(&c, 0, BF16_1);
    float *kv = tensor(&c, "kv_true");
    for (int i = 0; i < 4 * 512; i++) kv[i] = NAN;
    for (int d = 0; d < 512; d++) kv[3 * 512 + d] = (float)d;
    double out[512], lse;
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_TRUE, out, &lse));
    assert_true(lse == 0.0); /* q . K = K[0] = 0 */
    for (int d = 0; d < 512; d++) assert_true(out[d] == (double)d);
    /* The simulated mode on the all-NaN cache shows NaN: that slot IS selected. */
    assert_ok(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, &lse));
    assert_true(isnan(lse) && isnan(out[0]));
    attest_case_free(&c);
}

/* attest_ref_compute fills the outputs in tensor-table order (out_bf16, then lse; logits). */
static void test_compute_dispatch(void **state)
{
    (void)state;
    attest_case c;
    two_token_case(&c, 0, 0);
    double out[512], lse;
    double *outs[2] = {out, &lse};
    assert_ok(attest_ref_compute(&c, ATTEST_REF_SIMULATED, outs));
    expect_two_token(out, lse, 1.0);
    attest_case_free(&c);
    worked_indexer(&c, ATTEST_MASK_NEG_INF);
    double lg[4];
    double *louts[1] = {lg};
    assert_ok(attest_ref_compute(&c, ATTEST_REF_SIMULATED, louts));
    assert_true(lg[0] == 1.875 && lg[1] == 3.0 && isinf(lg[3]));
    /* True mode without truth tensors (they are last in the table) is an error naming one. */
    c.num_tensors -= 2;
    assert_int_equal(attest_ref_compute(&c, ATTEST_REF_TRUE, louts), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "k_true"));
    c.num_tensors += 2;
    attest_case_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_indexer_worked_example),
        cmocka_unit_test(test_indexer_masking_conventions),
        cmocka_unit_test(test_indexer_nan_dot_and_negative_scale),
        cmocka_unit_test(test_indexer_true_mode),
        cmocka_unit_test(test_indexer_page_translation),
        cmocka_unit_test(test_indexer_mtp_rule),
        cmocka_unit_test(test_topk_ties_nan_padding),
        cmocka_unit_test(test_topk_short_identity),
        cmocka_unit_test(test_topk_to_physical),
        cmocka_unit_test(test_mla_one_token),
        cmocka_unit_test(test_mla_two_token_softmax),
        cmocka_unit_test(test_mla_extra_scope_one_softmax),
        cmocka_unit_test(test_mla_sink_conventions),
        cmocka_unit_test(test_mla_lonely_and_topk_length),
        cmocka_unit_test(test_mla_v32_layout),
        cmocka_unit_test(test_mla_true_mode),
        cmocka_unit_test(test_compute_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
