/* Tests of the case generator: reproducibility, what each option changes, well-spread values,
 * pinned shapes, errors and speed. Edge coverage is in test_generator_coverage.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "gen_test_views.h"

/* Same seed, same bytes and parameter string; the info too. */
static void same_seed_same_case(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        attest_gen_options o =
            attest_gen_defaults(k ? ATTEST_KERNEL_MLA_DECODE : ATTEST_KERNEL_INDEXER);
        o.with_truth = k;
        for (uint64_t s = 1; s <= 40; s++) {
            attest_case a, b;
            attest_gen_info ia, ib;
            generate(&o, s * 7919, &a, &ia);
            generate(&o, s * 7919, &b, &ib);
            assert_true(a.seed == s * 7919);
            assert_cases_identical(&a, &b);
            assert_int_equal(ia.b, ib.b);
            assert_memory_equal(ia.lens, ib.lens, (size_t)ia.b * sizeof(int32_t));
            assert_memory_equal(ia.page_table, ib.page_table,
                                (size_t)ia.b * ia.pages_per_req * sizeof(int32_t));
            assert_memory_equal(&ia.policy, &ib.policy, sizeof ia.policy);
            /* Without the info, the very same case. */
            attest_case c;
            assert_ok(attest_generate_case(&o, s * 7919, &c));
            assert_cases_identical(&a, &c);
            attest_case_free(&a);
            attest_case_free(&b);
            attest_case_free(&c);
            attest_gen_info_free(&ia);
            attest_gen_info_free(&ib);
        }
    }
}

/* Different seeds give different cases (parameters or bytes). */
static void different_seeds_differ(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        attest_gen_options o =
            attest_gen_defaults(k ? ATTEST_KERNEL_MLA_DECODE : ATTEST_KERNEL_INDEXER);
        attest_case prev;
        generate(&o, attest_case_seed(5, 0), &prev, NULL);
        for (uint64_t i = 1; i < 50; i++) {
            attest_case c;
            generate(&o, attest_case_seed(5, i), &c, NULL);
            int same = c.num_tensors == prev.num_tensors &&
                       !memcmp(&c.params, &prev.params, sizeof c.params);
            for (size_t t = 0; same && t < c.num_tensors; t++)
                same = c.tensors[t].nbytes == prev.tensors[t].nbytes &&
                       !memcmp(c.tensors[t].data, prev.tensors[t].data, c.tensors[t].nbytes);
            assert_false(same);
            assert_false(memcmp(data(&c, "cache_bytes"), data(&prev, "cache_bytes"),
                                attest_case_tensor(&c, "cache_bytes")->nbytes <
                                        attest_case_tensor(&prev, "cache_bytes")->nbytes
                                    ? attest_case_tensor(&c, "cache_bytes")->nbytes
                                    : attest_case_tensor(&prev, "cache_bytes")->nbytes) == 0);
            attest_case_free(&prev);
            prev = c;
        }
        attest_case_free(&prev);
    }
}

/* edge_bytes only changes values: shapes, lengths and index lists stay, no NaN byte is placed
 * in a written token, and the truth flag adds tensors without changing the others. */
static void options_change_only_what_they_name(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        attest_kernel kernel = k ? ATTEST_KERNEL_MLA_DECODE : ATTEST_KERNEL_INDEXER;
        attest_gen_options on = attest_gen_defaults(kernel), off = on, truth = on;
        off.edge_bytes = 0;
        truth.with_truth = 1;
        for (uint64_t s = 0; s < 60; s++) {
            uint64_t seed = attest_case_seed(77, s);
            attest_case a, b, t;
            attest_gen_info ia, ib;
            generate(&on, seed, &a, &ia);
            generate(&off, seed, &b, &ib);
            generate(&truth, seed, &t, NULL);
            assert_memory_equal(&a.params, &b.params, sizeof a.params);
            assert_memory_equal(ia.lens, ib.lens, (size_t)ia.b * sizeof(int32_t));
            const char *same[] = {"indices", "topk_length", "attn_sink", "block_table",
                                  "context_lens", "extra_indices", "weights"};
            for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
                attest_tensor *x = attest_case_tensor(&a, same[i]);
                if (x) assert_memory_equal(x->data, data(&b, same[i]), x->nbytes);
            }
            /* q too, but where decode's extreme exponents go on value tiles, q is 0 there. */
            attest_tensor *qa = attest_case_tensor(&a, "q_bf16");
            if (qa) {
                const uint16_t *x = qa->data, *y = data(&b, "q_bf16");
                for (size_t i = 0; i < attest_tensor_count(qa); i++)
                    if (x[i] != y[i]) assert_int_equal(x[i], 0);
            }
            for (size_t i = 0; i < a.num_tensors; i++)
                assert_memory_equal(a.tensors[i].data, data(&t, a.tensors[i].name),
                                    a.tensors[i].nbytes);
            assert_true(t.num_tensors > a.num_tensors);
            pool_view v = k ? mla_pool(&b, 0, &ib) : indexer_pool(&b);
            long hist[256];
            fp8_histogram(&v, hist);
            assert_int_equal(hist[0x7F] + hist[0xFF], 0);
            assert_int_equal(ib.nan_selected + ib.nan_unselected, 0);
            pool_view_free(&v);
            attest_case_free(&a);
            attest_case_free(&b);
            attest_case_free(&t);
            attest_gen_info_free(&ia);
            attest_gen_info_free(&ib);
        }
    }
}

/* Without edge bytes, decode scores are spread: the softmax over a row with >= 8 valid entries
 * is rarely dominated by one entry, and indexer rows are rarely all relu-zero. */
static void values_are_well_spread(void **state)
{
    (void)state;
    attest_gen_options o = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    o.edge_bytes = 0;
    long rows = 0, peaked = 0, flat = 0;
    for (uint64_t s = 0; s < 150; s++) {
        attest_case c;
        generate(&o, attest_case_seed(9, s), &c, NULL);
        const attest_mla_params *p = &c.params.mla;
        attest_layout L;
        assert_ok(attest_layout_make(p->layout, (uint32_t)p->page_size,
                                     (uint64_t)p->page_stride, &L));
        const int32_t *idx = data(&c, "indices");
        const int32_t *tl = data(&c, "topk_length");
        const uint16_t *q = data(&c, "q_bf16");
        const uint8_t *pool = data(&c, "cache_bytes");
        double *k = malloc((size_t)p->topk * L.k_dim * sizeof *k);
        double *sc = malloc((size_t)p->topk * sizeof *sc);
        assert_true(k && sc);
        for (int32_t b = 0; b < p->b; b++)
            for (int32_t qi = 0; qi < p->s_q; qi++) {
                const int32_t *row = idx + ((size_t)b * p->s_q + qi) * p->topk;
                int32_t n = 0, valid = tl ? tl[b] : p->topk;
                for (int32_t j = 0; j < valid; j++) {
                    if (row[j] == -1) continue;
                    uint32_t slot;
                    const uint8_t *pg = attest_pool_token_page(&L, pool, (uint64_t)row[j], &slot);
                    attest_layout_decode_token(&L, pg, slot, k + (size_t)n * L.k_dim);
                    n++;
                }
                if (n < 8) continue;
                for (int32_t h = 0; h < p->h_q; h++) {
                    const uint16_t *qh = q + (((size_t)b * p->s_q + qi) * p->h_q + h) * p->d_qk;
                    double mx = -INFINITY, sum = 0;
                    for (int32_t j = 0; j < n; j++) {
                        double d = 0;
                        for (int32_t e = 0; e < p->d_qk; e++)
                            d += attest_bf16_decode(qh[e]) * k[(size_t)j * L.k_dim + e];
                        sc[j] = d * p->sm_scale;
                        if (sc[j] > mx) mx = sc[j];
                    }
                    double mn = INFINITY;
                    for (int32_t j = 0; j < n; j++) {
                        sum += exp(sc[j] - mx);
                        if (sc[j] < mn) mn = sc[j];
                    }
                    rows++;
                    peaked += 1.0 / sum > 0.9; /* the top weight */
                    flat += mx - mn < 0.5;      /* weights within a factor 1.65 of each other */
                }
            }
        free(k);
        free(sc);
        attest_case_free(&c);
    }
    printf("decode rows with >= 8 entries: %ld, softmax top weight > 0.9: %ld, score range < 0.5: "
           "%ld\n",
           rows, peaked, flat);
    assert_true(rows > 500);
    assert_true(peaked * 10 < rows);
    assert_true(flat * 10 < rows);

    o = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    o.edge_bytes = 0;
    long irows = 0, all_zero = 0, positive = 0;
    for (uint64_t s = 0; s < 150; s++) {
        attest_case c;
        generate(&o, attest_case_seed(10, s), &c, NULL);
        const attest_indexer_params *p = &c.params.indexer;
        pool_view v = indexer_pool(&c);
        const int32_t *lens = data(&c, "context_lens");
        const int32_t *table = data(&c, "block_table");
        const uint8_t *q = data(&c, "q_fp8");
        const float *w = data(&c, "weights");
        double kv[128];
        for (int32_t b = 0; b < p->b; b++) {
            if (lens[b] < 8) continue;
            for (int32_t j = 0; j < p->next_n; j++) {
                int nonzero = 0, pos = 0;
                for (int32_t t = 0; t < lens[b]; t++) {
                    uint32_t slot;
                    const uint8_t *pg = attest_pool_token_page(
                        &v.L, v.bytes, (uint64_t)table[(size_t)b * p->blocks_per_req + t / 64] * 64 + t % 64, &slot);
                    attest_layout_decode_token(&v.L, pg, slot, kv);
                    double logit = 0;
                    for (int32_t h = 0; h < p->heads; h++) {
                        const uint8_t *qh = q + (((size_t)b * p->next_n + j) * p->heads + h) * 128;
                        double d = 0;
                        for (int e = 0; e < 128; e++) d += attest_fp8_decode(qh[e]) * kv[e];
                        logit += w[((size_t)b * p->next_n + j) * p->heads + h] * (d > 0 ? d : 0);
                    }
                    nonzero += logit != 0;
                    pos += logit > 0;
                }
                irows++;
                all_zero += nonzero == 0;
                positive += pos > 0;
            }
        }
        pool_view_free(&v);
        attest_case_free(&c);
    }
    printf("indexer rows: %ld, all-zero: %ld, with a positive logit: %ld\n", irows, all_zero,
           positive);
    assert_true(irows > 100);
    assert_true(all_zero * 20 < irows);
    assert_true(positive * 10 > irows * 8);
}

/* What serving engines produce is in the default mix: 64 and 128 heads (one request, one query
 * row) in about 1% of cases and never without production_heads; indexer block-table rows that
 * hold -1 or stale ids (blocks some request uses) past a request's blocks. */
static void engine_inputs_in_the_mix(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        const attest_kernel kernel = k ? ATTEST_KERNEL_MLA_DECODE : ATTEST_KERNEL_INDEXER;
        attest_gen_options o = attest_gen_defaults(kernel), off = o;
        off.production_heads = 0;
        int heads64 = 0, heads128 = 0, minus_one = 0, stale = 0;
        for (uint64_t s = 0; s < 800; s++) {
            attest_case c, d;
            generate(&o, attest_case_seed(31, s), &c, NULL);
            generate(&off, attest_case_seed(31, s), &d, NULL);
            const int32_t h = k ? c.params.mla.h_q : c.params.indexer.heads;
            const int32_t b = k ? c.params.mla.b : c.params.indexer.b;
            const int32_t rows = k ? c.params.mla.s_q : c.params.indexer.next_n;
            if (h > o.max_heads) {
                assert_true(h == 64 || h == 128);
                assert_int_equal(b, 1);
                assert_int_equal(rows, 1);
                heads64 += h == 64;
                heads128 += h == 128;
            }
            assert_true((k ? d.params.mla.h_q : d.params.indexer.heads) <= o.max_heads);
            if (!k) {
                const attest_indexer_params *p = &c.params.indexer;
                const int32_t *lens = data(&c, "context_lens"), *table = data(&c, "block_table");
                for (int32_t r = 0; r < p->b; r++)
                    for (int32_t j = (lens[r] + 63) / 64; j < p->blocks_per_req; j++) {
                        const int32_t e = table[(size_t)r * p->blocks_per_req + j];
                        minus_one += e == -1;
                        for (int32_t r2 = 0; r2 < p->b; r2++)
                            for (int32_t j2 = 0; j2 < (lens[r2] + 63) / 64; j2++)
                                stale += e >= 0 && table[(size_t)r2 * p->blocks_per_req + j2] == e;
                    }
            }
            attest_case_free(&c);
            attest_case_free(&d);
        }
        assert_true(heads64 > 0 && heads128 > 0);
        assert_true(heads64 + heads128 < 800 / 40); /* a small fraction: campaigns stay fast */
        if (!k) assert_true(minus_one > 0 && stale > 0);
    }
}

/* production_shape pins heads, dims and top-k; explicit layout and page size are honoured. */
static void production_and_pinned_options(void **state)
{
    (void)state;
    attest_gen_options o = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    o.production_shape = 1;
    o.max_len = 700;
    for (int lay = ATTEST_LAYOUT_MLA_V4; lay <= ATTEST_LAYOUT_MLA_V32; lay++) {
        o.layout = lay;
        o.page_size = 64;
        attest_case c;
        generate(&o, 3, &c, NULL);
        assert_int_equal(c.params.mla.layout, lay);
        assert_int_equal(c.params.mla.page_size, 64);
        assert_int_equal(c.params.mla.h_q, 64);
        assert_int_equal(c.params.mla.topk, 512);
        assert_int_equal(c.params.mla.d_qk, lay == ATTEST_LAYOUT_MLA_V4 ? 512 : 576);
        assert_int_equal(c.params.mla.d_v, 512);
        assert_true(fabsf(c.params.mla.sm_scale - (float)(1.0 / sqrt(c.params.mla.d_qk))) == 0.0f);
        assert_ok(attest_case_check_inputs(&c));
        attest_case_free(&c);
    }
    o = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    o.production_shape = 1;
    attest_case c;
    generate(&o, 4, &c, NULL);
    assert_int_equal(c.params.indexer.heads, 64);
    assert_int_equal(c.params.indexer.head_dim, 128);
    assert_int_equal(c.params.indexer.topk, 512);
    attest_case_free(&c);
}

/* Bad options are errors naming the option; the output case owns nothing afterwards. */
static void bad_options_are_errors(void **state)
{
    (void)state;
    attest_case c;
    attest_gen_options o = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    o.max_batch = 0;
    assert_int_equal(attest_generate_case(&o, 1, &c), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "max_batch"));
    assert_null(c.heap_block_);
    o = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    o.layout = ATTEST_LAYOUT_C4_INDEXER;
    assert_int_equal(attest_generate_case(&o, 1, &c), ATTEST_ERR_INVALID_ARGUMENT);
    o = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    o.page_size = 32;
    assert_int_equal(attest_generate_case(&o, 1, &c), ATTEST_ERR_INVALID_ARGUMENT);
    o = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    o.page_size = 3; /* mla-v4 accepts any P, but a stride rule may refuse some: either way no leak */
    attest_status st = attest_generate_case(&o, 1, &c);
    if (st == ATTEST_OK) attest_case_free(&c);
    o = attest_gen_defaults((attest_kernel)9);
    assert_int_equal(attest_generate_case(&o, 1, &c), ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(attest_generate_case(NULL, 1, &c), ATTEST_ERR_INVALID_ARGUMENT);
    attest_scale_policy pol = {ATTEST_SCALE_RAW, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_NONSAT};
    assert_string_equal(attest_scale_policy_name(&pol), "raw-nonsat");
    pol = (attest_scale_policy){ATTEST_SCALE_POW2, ATTEST_UE8M0_DEEPGEMM, ATTEST_FP8_SATFINITE};
    assert_string_equal(attest_scale_policy_name(&pol), "pow2-deepgemm-satfinite");
}

/* Generation speed at the default bounds (printed; asserted only loosely). */
static void generation_speed(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        attest_gen_options o =
            attest_gen_defaults(k ? ATTEST_KERNEL_MLA_DECODE : ATTEST_KERNEL_INDEXER);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        const int n = 200;
        for (int i = 0; i < n; i++) {
            attest_case c;
            generate(&o, attest_case_seed(31, (uint64_t)i), &c, NULL);
            attest_case_free(&c);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        printf("%s: %d cases in %.3f s = %.0f cases/s (this build)\n",
               k ? "mla-decode" : "indexer", n, s, n / s);
        assert_true(s < 60.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_seed_same_case),
        cmocka_unit_test(different_seeds_differ),
        cmocka_unit_test(options_change_only_what_they_name),
        cmocka_unit_test(values_are_well_spread),
        cmocka_unit_test(engine_inputs_in_the_mix),
        cmocka_unit_test(production_and_pinned_options),
        cmocka_unit_test(bad_options_are_errors),
        cmocka_unit_test(generation_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
