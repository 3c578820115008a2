/* Tests of perf mode (attest/bench.h): shape strings, the case a shape builds, the bytes that
 * must move, timing a host candidate, and the bench file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"
#include <hdf5.h>

#include "attest/bench.h"
#include "attest/registry.h"

/* Keys in any order, defaults for the rest, canonical form back. */
static void test_parse_shape(void **state)
{
    (void)state;
    attest_bench_shape s;
    assert_ok(attest_bench_parse_shape("next_n=2,len=100,b=3", &s));
    assert_int_equal(s.b, 3);
    assert_int_equal(s.len, 100);
    assert_int_equal(s.max_len, 100);
    assert_int_equal(s.heads, 64);
    assert_int_equal(s.next_n, 2);
    char buf[96];
    attest_bench_shape_string(&s, buf, sizeof buf);
    assert_string_equal(buf, "b=3,len=100,max_len=100,heads=64,next_n=2");
    assert_ok(attest_bench_parse_shape("b=1,len=8192,max_len=262144,heads=128", &s));
    assert_int_equal(s.max_len, 262144);
    assert_int_equal(s.heads, 128);
}

/* Every bad shape is refused with a message naming what is wrong. */
static void test_parse_shape_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"len=10", "b is required"},       {"b=1", "len or max_len is required"},
        {"b=1,len=9,max_len=8", "exceeds"}, {"b=1,len=x", "bad value for len"},
        {"b=0,len=1", "bad value for b"},   {"b=1,len=1,foo=2", "unknown key 'foo'"},
        {"b=1,len", "expected key=value"}, {"b=1,len=-1", "bad value for len"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        attest_bench_shape s;
        assert_int_equal(attest_bench_parse_shape(bad[i].text, &s), ATTEST_ERR_INVALID_ARGUMENT);
        if (!strstr(attest_last_error(), bad[i].needle))
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].text, attest_last_error(),
                     bad[i].needle);
    }
}

/* The case: every request at the length, a page table of distinct valid blocks (0 past the
 * length), no NaN fp8 byte, power-of-two scales; its inputs pass the harness's checks. */
static void test_bench_case(void **state)
{
    (void)state;
    attest_bench_shape s;
    assert_ok(attest_bench_parse_shape("b=3,len=130,max_len=300,heads=8,next_n=2", &s));
    attest_case c;
    assert_ok(attest_bench_case(&s, 7, &c));
    assert_ok(attest_case_check_inputs(&c));
    const attest_indexer_params *p = &c.params.indexer;
    assert_int_equal(p->num_blocks, 9); /* 3 requests x 3 pages */
    assert_int_equal(p->blocks_per_req, 5);
    const int32_t *lens = attest_case_tensor(&c, "context_lens")->data;
    const int32_t *table = attest_case_tensor(&c, "block_table")->data;
    int seen[9] = {0};
    for (int r = 0; r < 3; r++) {
        assert_int_equal(lens[r], 130);
        for (int j = 0; j < 5; j++) {
            const int32_t blk = table[r * 5 + j];
            if (j < 3) {
                assert_true(blk >= 0 && blk < 9);
                seen[blk]++;
            } else {
                assert_int_equal(blk, 0);
            }
        }
    }
    for (int i = 0; i < 9; i++) assert_int_equal(seen[i], 1);
    const uint8_t *cache = attest_case_tensor(&c, "cache_bytes")->data;
    for (int blk = 0; blk < 9; blk++) {
        for (int i = 0; i < 8192; i++) assert_true((cache[blk * 8448 + i] & 0x7F) != 0x7F);
        for (int t = 0; t < 64; t++) {
            float v;
            memcpy(&v, cache + blk * 8448 + 8192 + 4 * t, 4);
            assert_true(v == 1.0f / 16 || v == 1.0f / 32 || v == 1.0f / 64 || v == 1.0f / 128 ||
                        v == 1.0f / 256);
        }
    }
    attest_case_free(&c);
}

/* Bytes that must move, worked out by hand for b=3, len=130 (3 pages), max_len=300, 8 heads,
 * next_n=2: reads 3 x (3 x (8448 + 4) + 4) + 6 rows x 8 x (128 + 4); writes 6 x 300 x 4. */
static void test_bench_bytes(void **state)
{
    (void)state;
    attest_bench_shape s;
    assert_ok(attest_bench_parse_shape("b=3,len=130,max_len=300,heads=8,next_n=2", &s));
    attest_case c;
    assert_ok(attest_bench_case(&s, 1, &c));
    double rd, wr;
    attest_bench_bytes(&c, ATTEST_MASK_NEG_INF, &rd, &wr);
    assert_true(rd == 3.0 * (3 * 8452 + 4) + 6.0 * 8 * 132);
    assert_true(wr == 6.0 * 300 * 4);
    attest_bench_bytes(&c, ATTEST_MASK_ZERO, &rd, &wr);
    assert_true(wr == 6.0 * 300 * 4);
    /* A candidate that leaves the tail unspecified must write only the valid positions: MTP
     * slot 0 of next_n 2 sees 129 positions, slot 1 all 130; the reads stay the same. */
    attest_bench_bytes(&c, ATTEST_MASK_UNSPECIFIED, &rd, &wr);
    assert_true(rd == 3.0 * (3 * 8452 + 4) + 6.0 * 8 * 132);
    assert_true(wr == 3.0 * (129 + 130) * 4);
    attest_case_free(&c);
}

/* A host candidate is timed with the wall clock: iters rows, ordered percentiles, GB/s from the
 * bytes; the bench file holds one row per measurement, readable by HDF5. */
static void test_bench_host_and_file(void **state)
{
    (void)state;
    const attest_candidate *cand = attest_builtin_find("cpu-indexer");
    assert_non_null(cand);
    attest_bench_shape s;
    assert_ok(attest_bench_parse_shape("b=1,len=200,heads=4", &s));
    attest_case c;
    assert_ok(attest_bench_case(&s, 1, &c));
    attest_bench_options o = attest_bench_defaults();
    o.iters = 5;
    o.warmup = 1;
    attest_bench_row row;
    memset(&row, 0, sizeof row);
    assert_ok(attest_bench_run(cand, &c, &o, &row.result));
    const attest_bench_result *r = &row.result;
    assert_int_equal(r->iters, 5);
    assert_int_equal(r->device_timed, 0);
    assert_true(r->min_us > 0 && r->min_us <= r->p10_us && r->p10_us <= r->median_us &&
                r->median_us <= r->p90_us && r->p90_us <= r->max_us);
    double rd, wr;
    attest_bench_bytes(&c, cand->conventions.masking, &rd, &wr);
    assert_true(r->read_bytes == rd && r->write_bytes == wr);
    assert_true(r->gbps > 0 && r->pct_peak == 100.0 * r->gbps / ATTEST_BENCH_DEFAULT_PEAK_GBPS);
    attest_case_free(&c);

    char dir[] = "/tmp/attest-bench-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/b.h5", dir);
    snprintf(row.candidate, sizeof row.candidate, "cpu-indexer");
    attest_bench_shape_string(&s, row.shape, sizeof row.shape);
    row.peak_gbps = o.peak_gbps;
    attest_bench_row rows[2] = {row, row};
    assert_ok(attest_bench_write(path, rows, 2, "attest bench test"));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, "bench", H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[1] = {0};
    H5Sget_simple_extent_dims(sp, dims, NULL);
    assert_int_equal(dims[0], 2);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
    assert_int_equal(attest_bench_write("/nonexistent-dir/b.h5", rows, 1, ""), ATTEST_ERR_IO);
    unlink(path);
    rmdir(dir);
}

/* MLA decode shapes: defaults (s_q 1, heads 64, ctx = topk, mla-v4), v32, canonical form, and
 * the errors (an indexer key, topk past ctx, an unknown layout, no topk, no b; a family without
 * shapes). */
static void test_parse_mla_shape(void **state)
{
    (void)state;
    attest_bench_shape s;
    char buf[128];
    assert_ok(attest_bench_parse_kernel_shape(ATTEST_KERNEL_MLA_DECODE, "topk=2048,b=64", &s));
    assert_int_equal(s.kernel, ATTEST_KERNEL_MLA_DECODE);
    assert_int_equal(s.b, 64);
    assert_int_equal(s.s_q, 1);
    assert_int_equal(s.heads, 64);
    assert_int_equal(s.topk, 2048);
    assert_int_equal(s.ctx, 2048);
    assert_int_equal(s.layout, ATTEST_LAYOUT_MLA_V4);
    attest_bench_shape_string(&s, buf, sizeof buf);
    assert_string_equal(buf, "b=64,s_q=1,heads=64,topk=2048,ctx=2048,layout=mla-v4");
    assert_ok(attest_bench_parse_kernel_shape(ATTEST_KERNEL_MLA_DECODE,
                                              "b=2,s_q=2,heads=128,topk=10,ctx=100,layout=mla-v32", &s));
    assert_int_equal(s.layout, ATTEST_LAYOUT_MLA_V32);
    attest_bench_shape_string(&s, buf, sizeof buf);
    assert_string_equal(buf, "b=2,s_q=2,heads=128,topk=10,ctx=100,layout=mla-v32");
    static const char *const bad[] = {"b=1,topk=8,len=5", "b=1,topk=9,ctx=8",
                                      "b=1,topk=8,layout=mla-v5", "b=1,heads=8", "topk=8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(attest_bench_parse_kernel_shape(ATTEST_KERNEL_MLA_DECODE, bad[i], &s),
                         ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(attest_bench_parse_kernel_shape((attest_kernel)99, "b=1", &s),
                     ATTEST_ERR_UNSUPPORTED);
}

/* The MLA case: inputs pass the harness's checks; each query's indices are topk distinct tokens
 * of its own request's pages. Bytes by hand: b=3 requests x ctx=100 tokens, s_q=2 queries,
 * topk=100 (every token selected, once per request however many queries select it): reads
 * 3 x 100 x 584 + 6 x 100 x 4 + 6 x 4 heads x 512 (mla-v4 d_qk) x 2, writes 6 x 4 x (512 x 2 + 4); with
 * ctx=200 and topk=50, s_q=1: 3 x 50 distinct tokens. */
static void test_bench_mla_case(void **state)
{
    (void)state;
    attest_bench_shape s;
    assert_ok(attest_bench_parse_kernel_shape(ATTEST_KERNEL_MLA_DECODE,
                                              "b=3,s_q=2,heads=4,topk=100", &s));
    attest_case c;
    assert_ok(attest_bench_case(&s, 5, &c));
    assert_ok(attest_case_check_inputs(&c));
    const attest_mla_params *p = &c.params.mla;
    assert_int_equal(p->num_pages, 6); /* 3 requests x 2 pages of 64 */
    assert_int_equal(p->page_size, 64);
    const int32_t *idx = attest_case_tensor(&c, "indices")->data;
    int owner[6] = {-1, -1, -1, -1, -1, -1};
    for (int r = 0; r < 3; r++)
        for (int q = 0; q < 2; q++) {
            unsigned char seen[384] = {0};
            for (int k = 0; k < 100; k++) {
                const int32_t t = idx[(r * 2 + q) * 100 + k];
                assert_true(t >= 0 && t < 384);
                assert_int_equal(seen[t], 0);
                seen[t] = 1;
                if (owner[t / 64] < 0) owner[t / 64] = r;
                assert_int_equal(owner[t / 64], r);
            }
        }
    double rd = 0, wr = 0;
    attest_bench_bytes(&c, ATTEST_MASK_NEG_INF, &rd, &wr);
    assert_true(rd == 3.0 * 100 * 584 + 6.0 * 100 * 4 + 6.0 * 4 * 512 * 2);
    assert_true(wr == 6.0 * 4 * (512 * 2 + 4));
    attest_case_free(&c);
    assert_ok(attest_bench_parse_kernel_shape(ATTEST_KERNEL_MLA_DECODE,
                                              "b=3,heads=4,topk=50,ctx=200", &s));
    assert_ok(attest_bench_case(&s, 6, &c));
    attest_bench_bytes(&c, ATTEST_MASK_NEG_INF, &rd, &wr);
    assert_true(rd == 3.0 * 50 * 584 + 3.0 * 50 * 4 + 3.0 * 4 * 512 * 2);
    attest_case_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_shape),
        cmocka_unit_test(test_parse_shape_errors),
        cmocka_unit_test(test_bench_case),
        cmocka_unit_test(test_bench_bytes),
        cmocka_unit_test(test_parse_mla_shape),
        cmocka_unit_test(test_bench_mla_case),
        cmocka_unit_test(test_bench_host_and_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
