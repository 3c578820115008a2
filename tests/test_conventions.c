/* Conventions by name (conventions.h), and the reference following each declared convention on
 * hand-built cases whose right answers are known from the convention's definition. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/conventions.h"
#include "attest/reference.h"

static void test_names(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"masking", "-inf"},        {"masking", "0.0"},          {"masking", "unspecified"},
        {"relu_nan", "to_zero"},    {"relu_nan", "propagates"},  {"lse", "excludes_sink"},
        {"lse", "includes_sink"},   {"lonely_lse", "+inf"},      {"lonely_lse", "-inf"},
        {"lonely_lse", "sink"},     {"minus_one", "skip"},       {"minus_one", "ends_list"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        attest_conventions c = attest_conventions_default();
        assert_ok(attest_convention_set(&c, pairs[i][0], pairs[i][1]));
        assert_ok(attest_conventions_validate(&c));
        char want[64], buf[200];
        snprintf(want, sizeof want, "%s=%s", pairs[i][0], pairs[i][1]);
        const attest_kernel k = !strcmp(pairs[i][0], "masking") || !strcmp(pairs[i][0], "relu_nan")
                                    ? ATTEST_KERNEL_INDEXER
                                    : ATTEST_KERNEL_MLA_DECODE;
        attest_conventions_format(&c, k, buf, sizeof buf);
        if (!strstr(buf, want)) fail_msg("'%s' lacks '%s'", buf, want);
    }
    attest_conventions d = attest_conventions_default();
    char buf[200];
    attest_conventions_format(&d, ATTEST_KERNEL_INDEXER, buf, sizeof buf);
    assert_string_equal(buf, "masking=-inf,relu_nan=to_zero");
    attest_conventions_format(&d, ATTEST_KERNEL_MLA_DECODE, buf, sizeof buf);
    assert_string_equal(buf, "lse=excludes_sink,lonely_lse=+inf,minus_one=skip");
}

static void test_bad_names(void **state)
{
    (void)state;
    attest_conventions c = attest_conventions_default();
    assert_int_equal(attest_convention_set(&c, "lonely_lse", "nan"), ATTEST_ERR_NOT_FOUND);
    assert_non_null(strstr(attest_last_error(), "known: +inf, -inf, sink"));
    assert_int_equal(attest_convention_set(&c, "colour", "red"), ATTEST_ERR_NOT_FOUND);
    assert_non_null(strstr(attest_last_error(), "unknown convention 'colour'"));
    assert_memory_equal(&c, &(attest_conventions){0}, sizeof c); /* nothing half-set */
    c.lonely_lse = (attest_lonely_lse)3;
    assert_int_equal(attest_conventions_validate(&c), ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), "lonely_lse"));
}

static void test_apply_round_trip(void **state)
{
    (void)state;
    attest_conventions c = attest_conventions_default();
    c.lse_convention = ATTEST_LSE_INCLUDES_SINK;
    c.lonely_lse = ATTEST_LONELY_LSE_SINK;
    c.invalid_index = ATTEST_INVALID_ENDS_LIST;
    attest_case cs;
    memset(&cs, 0, sizeof cs);
    cs.kernel = ATTEST_KERNEL_MLA_DECODE;
    attest_conventions_apply(&c, &cs);
    assert_int_equal(cs.params.mla.lonely_lse, ATTEST_LONELY_LSE_SINK);
    assert_int_equal(cs.params.mla.invalid_index, ATTEST_INVALID_ENDS_LIST);
    attest_conventions back = attest_conventions_of_case(&cs);
    assert_memory_equal(&back, &c, sizeof c);
}

/* mla-v32, 2 pages of 4 tokens, 2 heads, topk 6: finite keys that differ per token. */
static void make_v32(attest_case *c, int with_sink)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    c->params.mla = (attest_mla_params){.layout = ATTEST_LAYOUT_MLA_V32, .page_size = 4,
                                        .page_stride = 4 * 656, .num_pages = 2, .b = 1, .s_q = 2,
                                        .h_q = 2, .d_qk = 576, .d_v = 512, .topk = 6,
                                        .sm_scale = 0.125f, .has_sink = with_sink};
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));
    uint8_t *cache = attest_case_tensor(c, "cache_bytes")->data;
    for (int tok = 0; tok < 8; tok++) {
        uint8_t *rec = cache + (size_t)tok * 656; /* pages are back to back: stride 4 * 656 */
        for (int d = 0; d < 512; d++) rec[d] = (uint8_t)(0x28 + (tok * 3 + d) % 16); /* finite */
        const float one = 1.0f;
        for (int i = 0; i < 4; i++) memcpy(rec + 512 + 4 * i, &one, 4);
        memset(rec + 528, 0, 128); /* rope = +0 */
    }
    uint16_t *q = attest_case_tensor(c, "q_bf16")->data;
    for (size_t i = 0; i < attest_tensor_count(attest_case_tensor(c, "q_bf16")); i++)
        q[i] = (uint16_t)(0x3C00 + (i % 7) * 0x40); /* small positive bf16 values */
    if (with_sink) {
        float *sink = attest_case_tensor(c, "attn_sink")->data;
        sink[0] = 0.25f;
        sink[1] = -1.5f;
    }
}

static void set_row(attest_case *c, int sq, const int32_t *idx)
{
    int32_t *ind = attest_case_tensor(c, "indices")->data;
    memcpy(ind + sq * 6, idx, 6 * sizeof *idx);
}

static void reference(const attest_case *c, double *out, double *lse)
{
    assert_ok(attest_ref_mla_decode(c, ATTEST_REF_SIMULATED, out, lse));
}

static void test_lonely_lse(void **state)
{
    (void)state;
    static const int32_t lonely[6] = {-1, -1, -1, -1, -1, -1}, some[6] = {0, 3, 5, -1, 7, 2};
    for (int sink = 0; sink < 2; sink++) {
        attest_case c;
        make_v32(&c, sink);
        set_row(&c, 0, lonely);
        set_row(&c, 1, some);
        double out[2 * 2 * 512], lse[4];
        const double want_sink[2] = {sink ? 0.25 : -INFINITY, sink ? -1.5 : -INFINITY};
        for (int conv = 0; conv < 3; conv++) {
            c.params.mla.lonely_lse = (attest_lonely_lse)conv;
            reference(&c, out, lse);
            for (int h = 0; h < 2; h++) {
                const double want = conv == ATTEST_LONELY_LSE_POS_INF   ? INFINITY
                                    : conv == ATTEST_LONELY_LSE_NEG_INF ? -INFINITY
                                                                        : want_sink[h];
                if (!(lse[h] == want)) fail_msg("sink %d conv %d head %d: lse %g, want %g", sink,
                                                conv, h, lse[h], want);
                for (int d = 0; d < 512; d++) assert_true(out[h * 512 + d] == 0.0);
                assert_true(isfinite(lse[2 + h])); /* the query with keys is not lonely */
            }
        }
        attest_case_free(&c);
    }
}

/* ends_list: a -1 in slot 3 ends the list, so the row equals one whose slots 3.. are all -1;
 * skip: slots 4 and 5 still count, so it differs. */
static void test_minus_one(void **state)
{
    (void)state;
    static const int32_t hole[6] = {0, 3, 5, -1, 7, 2}, cut[6] = {0, 3, 5, -1, -1, -1};
    attest_case c;
    make_v32(&c, 0);
    double out_hole[2048], lse_hole[4], out_cut[2048], lse_cut[4];
    set_row(&c, 0, hole);
    set_row(&c, 1, hole);
    c.params.mla.invalid_index = ATTEST_INVALID_ENDS_LIST;
    reference(&c, out_hole, lse_hole);
    c.params.mla.invalid_index = ATTEST_INVALID_SKIP;
    set_row(&c, 0, cut);
    set_row(&c, 1, cut);
    reference(&c, out_cut, lse_cut);
    assert_memory_equal(out_hole, out_cut, sizeof out_hole);
    assert_memory_equal(lse_hole, lse_cut, sizeof lse_hole);
    set_row(&c, 0, hole);
    reference(&c, out_hole, lse_hole);
    assert_true(lse_hole[0] != lse_cut[0]); /* skip: tokens 7 and 2 join the softmax */
    attest_case_free(&c);
}

/* A NaN fp8 byte in a key that is used: to_zero keeps the logit finite, propagates makes it NaN;
 * every other position is the same under both. */
static void test_relu_nan(void **state)
{
    (void)state;
    attest_case c;
    memset(&c, 0, sizeof c);
    c.kernel = ATTEST_KERNEL_INDEXER;
    c.params.indexer = (attest_indexer_params){.b = 1, .next_n = 1, .heads = 2, .head_dim = 128,
                                               .num_blocks = 1, .blocks_per_req = 1,
                                               .max_len = 64};
    assert_ok(attest_case_define_tensors(&c, 0));
    assert_ok(attest_case_alloc_heap(&c));
    uint8_t *cache = attest_case_tensor(&c, "cache_bytes")->data;
    memset(cache, 0x38, 8192); /* every key element 1.0 */
    const float scale = 0.5f, w = 1.0f;
    for (int t = 0; t < 64; t++) memcpy(cache + 8192 + 4 * t, &scale, 4);
    cache[3 * 128 + 17] = 0x7F; /* NaN in position 3's key */
    memset(attest_case_tensor(&c, "q_fp8")->data, 0x38, 2 * 128);
    float *wt = attest_case_tensor(&c, "weights")->data;
    wt[0] = wt[1] = w;
    ((int32_t *)attest_case_tensor(&c, "context_lens")->data)[0] = 10;
    double zero[64], prop[64];
    c.params.indexer.relu_nan = ATTEST_RELU_NAN_TO_ZERO;
    double *outs[1] = {zero};
    assert_ok(attest_ref_compute(&c, ATTEST_REF_SIMULATED, outs));
    c.params.indexer.relu_nan = ATTEST_RELU_NAN_PROPAGATES;
    outs[0] = prop;
    assert_ok(attest_ref_compute(&c, ATTEST_REF_SIMULATED, outs));
    assert_true(zero[3] == 0.0);
    assert_true(isnan(prop[3]));
    for (int t = 0; t < 10; t++)
        if (t != 3) assert_true(zero[t] == prop[t] && zero[t] == 2 * 128 * 0.5);
    attest_case_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),      cmocka_unit_test(test_bad_names),
        cmocka_unit_test(test_apply_round_trip), cmocka_unit_test(test_lonely_lse),
        cmocka_unit_test(test_minus_one),  cmocka_unit_test(test_relu_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
