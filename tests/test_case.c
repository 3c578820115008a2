/* Tests of the case module: tensor tables, parameter strings, filters and input validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/topk.h"

static attest_case indexer_case(void)
{
    attest_case c;
    memset(&c, 0, sizeof c);
    c.kernel = ATTEST_KERNEL_INDEXER;
    c.params.indexer = (attest_indexer_params){.b = 2, .next_n = 2, .heads = 4, .head_dim = 128,
                                               .num_blocks = 5, .blocks_per_req = 2,
                                               .max_len = 128, .masking = ATTEST_MASK_NEG_INF};
    return c;
}

static attest_case mla_case(void)
{
    attest_case c;
    memset(&c, 0, sizeof c);
    c.kernel = ATTEST_KERNEL_MLA_DECODE;
    c.params.mla = (attest_mla_params){.layout = ATTEST_LAYOUT_MLA_V4, .page_size = 64,
                                       .num_pages = 3, .b = 2, .s_q = 1, .h_q = 8, .d_qk = 512,
                                       .d_v = 512, .topk = 16, .sm_scale = 0.0441941738f,
                                       .has_sink = 1};
    return c;
}

/* The indexer table follows the oracle schema: names, order, dtypes and shapes. */
static void indexer_tensor_table(void **state)
{
    (void)state;
    attest_case c = indexer_case();
    assert_ok(attest_case_define_tensors(&c, 1));
    const char *names[] = {"cache_bytes", "block_table", "context_lens", "q_fp8",
                           "weights", "logits", "k_true", "q_true"};
    assert_int_equal(c.num_tensors, 8);
    for (size_t i = 0; i < 8; i++) assert_string_equal(c.tensors[i].name, names[i]);
    assert_int_equal(c.tensors[0].nbytes, 5 * 8448);
    assert_int_equal(c.tensors[4].shape[0], 4); /* b * next_n rows of weights */
    assert_int_equal(c.tensors[5].role, ATTEST_ROLE_OUTPUT);
    assert_int_equal(c.tensors[5].nbytes, 4 * 128 * 4);
    assert_int_equal(c.tensors[6].shape[0], 5 * 64);
    assert_int_equal(c.tensors[6].role, ATTEST_ROLE_TRUTH);
}

/* The decode table fills the default page stride and adds optional tensors only when declared. */
static void mla_tensor_table(void **state)
{
    (void)state;
    attest_case c = mla_case();
    assert_ok(attest_case_define_tensors(&c, 0));
    assert_int_equal(c.params.mla.page_stride, 37440);
    assert_non_null(attest_case_tensor(&c, "attn_sink"));
    assert_null(attest_case_tensor(&c, "topk_length"));
    assert_null(attest_case_tensor(&c, "extra_indices"));
    assert_int_equal(attest_case_tensor(&c, "cache_bytes")->nbytes, 3 * 37440);
    assert_int_equal(attest_case_tensor(&c, "out_bf16")->nbytes, 2 * 1 * 8 * 512 * 2);
}

/* Impossible parameters are refused with a message naming the field. */
static void rejects_bad_params(void **state)
{
    (void)state;
    attest_case c = mla_case();
    c.params.mla.d_qk = 576; /* mla-v4 keys are 512 wide */
    assert_int_equal(attest_case_define_tensors(&c, 0), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "d_qk"));
    c = mla_case();
    c.params.mla.page_stride = 1000; /* smaller than one page's payload */
    assert_int_equal(attest_case_define_tensors(&c, 0), ATTEST_ERR_INVALID_ARGUMENT);
    c = indexer_case();
    c.params.indexer.head_dim = 64;
    assert_int_equal(attest_case_define_tensors(&c, 0), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "head_dim"));
    c = indexer_case();
    c.params.indexer.b = 0;
    assert_int_equal(attest_case_define_tensors(&c, 0), ATTEST_ERR_INVALID_ARGUMENT);
}

/* The parameter string is stable and filters match whole values or prefixes. */
static void param_string_and_filter(void **state)
{
    (void)state;
    attest_case c = mla_case();
    assert_ok(attest_case_define_tensors(&c, 0));
    char s[512];
    assert_ok(attest_case_param_string(&c, s, sizeof s));
    assert_non_null(strstr(s, "kernel=mla-decode,layout=mla-v4,P=64,stride=37440,pages=3,b=2"));
    assert_true(attest_param_string_matches(s, ""));
    assert_true(attest_param_string_matches(s, "b=2"));
    assert_true(attest_param_string_matches(s, "layout=mla-v4,h=8"));
    assert_true(attest_param_string_matches(s, "layout=mla*"));
    assert_false(attest_param_string_matches(s, "b=20"));
    assert_false(attest_param_string_matches(s, "h=8,b=3"));
    assert_false(attest_param_string_matches(s, "nosuchkey=1"));
    assert_false(attest_param_string_matches(s, "garbage"));
    char tiny[16];
    assert_int_equal(attest_case_param_string(&c, tiny, sizeof tiny), ATTEST_ERR_INVALID_ARGUMENT);
}

/* Every term "key=value" of a parameter string passes attest_param_filter_check_keys for its
 * kernel (so the accepted keys follow the field table and the top-k string), and a filter that
 * can never match is refused: `--filter batch=2` judged nothing and said only EMPTY. */
static void each_term_passes(const char *s, attest_kernel kernel, int topk)
{
    char term[128];
    for (const char *f = s; *f;) {
        const char *end = strchr(f, ',');
        const size_t len = end ? (size_t)(end - f) : strlen(f);
        assert_true(len < sizeof term);
        memcpy(term, f, len);
        term[len] = '\0';
        if (topk) assert_ok(attest_topk_filter_check(term));
        else assert_ok(attest_case_filter_check(kernel, term));
        assert_true(attest_param_string_matches(s, term));
        if (!end) break;
        f = end + 1;
    }
}

static void filter_keys_checked(void **state)
{
    (void)state;
    char s[512];
    attest_case c = mla_case();
    c.params.mla.has_topk_length = 1;
    c.params.mla.has_extra = 1;
    c.params.mla.extra_page_size = 64;
    c.params.mla.extra_num_pages = 2;
    c.params.mla.extra_topk = 8;
    c.params.mla.has_extra_topk_length = 1;
    assert_ok(attest_case_define_tensors(&c, 0));
    assert_ok(attest_case_param_string(&c, s, sizeof s));
    assert_non_null(strstr(s, "extra_topk_length="));
    each_term_passes(s, ATTEST_KERNEL_MLA_DECODE, 0);
    attest_case x = indexer_case();
    assert_ok(attest_case_define_tensors(&x, 0));
    assert_ok(attest_case_param_string(&x, s, sizeof s));
    each_term_passes(s, ATTEST_KERNEL_INDEXER, 0);
    attest_topk_case t;
    memset(&t, 0, sizeof t);
    t.p.b = 2, t.p.next_n = 1, t.p.width = 300, t.p.k = 64, t.p.blocks_per_req = 5;
    assert_ok(attest_topk_param_string(&t, s, sizeof s));
    each_term_passes(s, ATTEST_KERNEL_INDEXER, 1);

    assert_ok(attest_case_filter_check(ATTEST_KERNEL_MLA_DECODE, NULL));
    assert_ok(attest_case_filter_check(ATTEST_KERNEL_MLA_DECODE, "layout=mla*,b=2"));
    const char *bad[] = {"batch=2", "nonsense", "b=", "=2", "b=1,,h=2", "b=1,", "", "extra_k=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(attest_case_filter_check(ATTEST_KERNEL_MLA_DECODE, bad[i]),
                         ATTEST_ERR_INVALID_ARGUMENT);
        attest_clear_error();
    }
    assert_int_equal(attest_case_filter_check(ATTEST_KERNEL_INDEXER, "topk_length=1"),
                     ATTEST_ERR_INVALID_ARGUMENT); /* a decode key on an indexer */
    attest_clear_error();
    assert_int_equal(attest_topk_filter_check("h=2"), ATTEST_ERR_INVALID_ARGUMENT);
    attest_clear_error();
}

/* Index inputs outside the pool are a format error naming the tensor and element. */
static void check_inputs_finds_bad_indices(void **state)
{
    (void)state;
    attest_case c = mla_case();
    assert_ok(attest_case_define_tensors(&c, 0));
    assert_ok(attest_case_alloc_heap(&c));
    int32_t *idx = attest_case_tensor(&c, "indices")->data;
    for (int i = 0; i < 2 * 16; i++) idx[i] = i % 3 == 0 ? -1 : i;
    assert_ok(attest_case_check_inputs(&c));
    idx[5] = 3 * 64; /* one past the last token of the pool */
    assert_int_equal(attest_case_check_inputs(&c), ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), "indices[5]"));
    idx[5] = -2; /* only exactly -1 is invalid */
    assert_int_equal(attest_case_check_inputs(&c), ATTEST_ERR_FORMAT);
    attest_case_free(&c);

    c = indexer_case();
    assert_ok(attest_case_define_tensors(&c, 0));
    assert_ok(attest_case_alloc_heap(&c));
    int32_t *lens = attest_case_tensor(&c, "context_lens")->data;
    int32_t *table = attest_case_tensor(&c, "block_table")->data;
    lens[0] = 65;
    lens[1] = 0;
    table[0] = 4;
    table[1] = 0;
    table[2] = -1; /* request 1 has length 0: its row is never read */
    table[3] = 99;
    assert_ok(attest_case_check_inputs(&c));
    table[1] = 5; /* request 0 needs two blocks; block 5 is outside the pool */
    assert_int_equal(attest_case_check_inputs(&c), ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), "block_table[0][1]"));
    table[1] = 0;
    lens[1] = 129; /* longer than max_len */
    assert_int_equal(attest_case_check_inputs(&c), ATTEST_ERR_FORMAT);
    attest_case_free(&c);
}

/* Typed views point into the placed tensors; optional ones are NULL when absent. */
static void args_point_into_tensors(void **state)
{
    (void)state;
    attest_case c = mla_case();
    assert_ok(attest_case_define_tensors(&c, 0));
    attest_kernel_args args;
    assert_int_equal(attest_case_args(&c, &args), ATTEST_ERR_INVALID_ARGUMENT); /* not placed */
    assert_ok(attest_case_alloc_heap(&c));
    assert_ok(attest_case_args(&c, &args));
    assert_ptr_equal(args.u.mla.cache, attest_case_tensor(&c, "cache_bytes")->data);
    assert_ptr_equal(args.u.mla.attn_sink, attest_case_tensor(&c, "attn_sink")->data);
    assert_null(args.u.mla.topk_length);
    assert_null(args.u.mla.extra_cache);
    assert_int_equal((uintptr_t)args.u.mla.out % 256, 0);
    attest_case_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(indexer_tensor_table),
        cmocka_unit_test(mla_tensor_table),
        cmocka_unit_test(rejects_bad_params),
        cmocka_unit_test(param_string_and_filter),
        cmocka_unit_test(filter_keys_checked),
        cmocka_unit_test(check_inputs_finds_bad_indices),
        cmocka_unit_test(args_point_into_tensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
