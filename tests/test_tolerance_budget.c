/* The error of float32 indexer kernels, in several summation orders, against the float64
 * reference on the same dequantized bytes, on a production-like shape (H = 64, D = 128, 2048
 * positions, signed weights so head sums cancel). The test prints the measured errors and how
 * much of each element's computed bound they use (policies/default.json), and checks strict.json's
 * fixed bounds keep a margin over them (docs/policy.md quotes these figures). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/case.h"
#include "attest/compare.h"
#include "attest/layout.h"
#include "attest/numerics.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/rng.h"

#define H 64
#define D 128
#define L 2048
#define BLOCKS (L / 64)

enum { ORDER_SEQ, ORDER_REV_HEADS, ORDER_FMA, ORDER_SPLIT_K, ORDER_PAIRWISE, NUM_ORDERS };
static const char *const order_names[NUM_ORDERS] = {"sequential", "heads reversed", "fma",
                                                    "split-k 4x32", "pairwise heads"};

typedef struct budget {
    double scaled;  /* max |err| / max |ref| */
    double rel_big; /* max |err| / |ref| over elements with |ref| >= 0.1 max |ref| */
} budget;

static void build(attest_case *c, uint64_t seed, int positive_weights)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_INDEXER;
    attest_indexer_params *p = &c->params.indexer;
    p->b = 1;
    p->next_n = 1;
    p->heads = H;
    p->head_dim = D;
    p->num_blocks = BLOCKS;
    p->blocks_per_req = BLOCKS;
    p->max_len = L;
    p->masking = ATTEST_MASK_NEG_INF;
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));
    attest_layout layout;
    assert_ok(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, 64, 0, &layout));

    attest_rng rng;
    attest_rng_seed(&rng, seed);
    int32_t *table = attest_case_tensor(c, "block_table")->data;
    for (int32_t j = 0; j < BLOCKS; ++j) table[j] = BLOCKS - 1 - j;
    ((int32_t *)attest_case_tensor(c, "context_lens")->data)[0] = L;
    float *values = malloc((size_t)L * D * sizeof *values);
    assert_non_null(values);
    for (size_t i = 0; i < (size_t)L * D; ++i)
        values[i] = (float)attest_rng_normal_portable(&rng, 0, 1);
    const attest_scale_policy sp = {ATTEST_SCALE_RAW, ATTEST_UE8M0_DEEPGEMM, ATTEST_FP8_NONSAT};
    assert_ok(attest_pool_encode(&layout, attest_case_tensor(c, "cache_bytes")->data, BLOCKS,
                                 table, L, values, &sp));
    free(values);
    uint8_t *q = attest_case_tensor(c, "q_fp8")->data;
    for (size_t i = 0; i < (size_t)H * D; ++i)
        q[i] = attest_fp8_encode((float)attest_rng_normal_portable(&rng, 0, 1), ATTEST_FP8_NONSAT);
    float *w = attest_case_tensor(c, "weights")->data;
    for (int32_t h = 0; h < H; ++h) {
        double x = attest_rng_normal_portable(&rng, 0, 0.25);
        w[h] = (float)(positive_weights ? fabs(x) : x);
    }
}

/* One float32 kernel: kscale * sum_h w_h * relu(dot_h), in the given order. */
static void fp32_logits(attest_case *c, int order, float *out)
{
    const uint8_t *cache = attest_case_tensor(c, "cache_bytes")->data;
    const uint8_t *q8 = attest_case_tensor(c, "q_fp8")->data;
    const int32_t *table = attest_case_tensor(c, "block_table")->data;
    const float *w = attest_case_tensor(c, "weights")->data;
    static float q[H * D];
    for (size_t i = 0; i < (size_t)H * D; ++i) q[i] = attest_fp8_decode(q8[i]);
    for (int32_t t = 0; t < L; ++t) {
        const uint8_t *blk = cache + (size_t)table[t / 64] * 8448;
        float k[D], kscale, terms[H];
        for (int32_t d = 0; d < D; ++d) k[d] = attest_fp8_decode(blk[(t % 64) * D + d]);
        memcpy(&kscale, blk + 8192 + 4 * (t % 64), 4);
        float acc = 0;
        for (int32_t i = 0; i < H; ++i) {
            const int32_t h = order == ORDER_REV_HEADS ? H - 1 - i : i;
            const float *qh = q + (size_t)h * D;
            float dot = 0;
            if (order == ORDER_SPLIT_K) {
                float part[4] = {0, 0, 0, 0};
                for (int32_t d = 0; d < D; ++d) part[d / 32] += qh[d] * k[d];
                dot = (part[0] + part[1]) + (part[2] + part[3]);
            } else if (order == ORDER_FMA) {
                for (int32_t d = 0; d < D; ++d) dot = fmaf(qh[d], k[d], dot);
            } else {
                for (int32_t d = 0; d < D; ++d) dot += qh[d] * k[d];
            }
            terms[h] = w[h] * fmaxf(dot, 0.0f);
            if (order == ORDER_FMA)
                acc = fmaf(w[h], fmaxf(dot, 0.0f), acc);
            else
                acc += terms[h];
        }
        if (order == ORDER_PAIRWISE) {
            for (int32_t n = H; n > 1; n /= 2)
                for (int32_t i = 0; i < n / 2; ++i) terms[i] = terms[2 * i] + terms[2 * i + 1];
            acc = terms[0];
        }
        out[t] = acc * kscale;
    }
}

static budget measure(const double *ref, const float *cand)
{
    double max_ref = 0;
    for (int32_t t = 0; t < L; ++t) max_ref = fmax(max_ref, fabs(ref[t]));
    budget b = {0, 0};
    for (int32_t t = 0; t < L; ++t) {
        double e = fabs((double)cand[t] - ref[t]);
        b.scaled = fmax(b.scaled, e / max_ref);
        if (fabs(ref[t]) >= 0.1 * max_ref) b.rel_big = fmax(b.rel_big, e / fabs(ref[t]));
    }
    return b;
}

static void check_policy(const attest_policy *p, const double *ref, const float *cand,
                         const attest_case *c, budget worst)
{
    attest_tolerance tol;
    assert_ok(attest_policy_lookup(p, ATTEST_KERNEL_INDEXER, "logits", &tol));
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    const attest_tensor *t = attest_case_tensor_const(c, "logits");
    if (tol.bound_factor >= 0) {
        /* Computed bounds: the measured error must sit well inside every element's bound (the
         * bound is a worst case over orders; these five orders use a fraction of it). */
        double *bound = malloc(L * sizeof *bound), *vals = malloc(L * sizeof *vals);
        assert_true(bound && vals);
        assert_ok(attest_ref_indexer_bounds(c, &tol.model, vals, bound));
        double worst_ratio = 0;
        for (int32_t i = 0; i < L; ++i) {
            assert_true(vals[i] == ref[i]);
            double tt = attest_element_tolerance(&tol, ATTEST_DTYPE_F32, ref[i], bound[i]);
            worst_ratio = fmax(worst_ratio, fabs((double)cand[i] - ref[i]) / tt);
        }
        printf("    %s: max |err| / element tolerance %.3f\n", attest_policy_name(p), worst_ratio);
        assert_true(worst_ratio <= 0.5);
        assert_ok(attest_compare_tensor_bounded(ref, bound, cand, ATTEST_DTYPE_F32, (size_t)L,
                                                t->shape, t->rank, NULL, 0, &tol, &m));
        free(bound);
        free(vals);
    } else {
        /* Fixed bounds: at least 4x over the worst measured error in both senses. */
        assert_true(tol.atol_ref_scale >= 4 * worst.scaled);
        assert_true(tol.rtol >= 4 * worst.rel_big);
        assert_ok(attest_compare_tensor(ref, cand, ATTEST_DTYPE_F32, (size_t)L, t->shape,
                                        t->rank, NULL, 0, &tol, &m));
    }
    assert_int_equal(m.failed_gates, 0);
}

/* Measures the float32 error budget and checks default and strict keep their margin. */
static void test_indexer_float32_budget(void **state)
{
    (void)state;
    attest_policy *def = NULL, *strict = NULL;
    assert_ok(attest_policy_default(&def));
    const char *src = getenv("ATTEST_SOURCE_DIR");
    if (src != NULL) {
        char path[1024];
        snprintf(path, sizeof path, "%s/policies/strict.json", src);
        assert_ok(attest_policy_load(path, &strict));
    }
    double *ref = malloc(L * sizeof *ref);
    float *cand = malloc(L * sizeof *cand);
    assert_true(ref && cand);
    budget worst = {0, 0};
    printf("float32 indexer kernels vs float64 reference, H=%d D=%d L=%d\n", H, D, L);
    for (int pos = 0; pos < 2; ++pos) {
        attest_case c;
        build(&c, 4242 + (uint64_t)pos, pos);
        assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                            ATTEST_INDEXER_ORDER_KERNEL, ref));
        for (int o = 0; o < NUM_ORDERS; ++o) {
            fp32_logits(&c, o, cand);
            budget b = measure(ref, cand);
            printf("  weights %-8s %-15s max|err|/max|ref| %.2e   max rel err (|ref| >= 0.1 max) %.2e\n",
                   pos ? "positive" : "signed", order_names[o], b.scaled, b.rel_big);
            worst.scaled = fmax(worst.scaled, b.scaled);
            worst.rel_big = fmax(worst.rel_big, b.rel_big);
            check_policy(def, ref, cand, &c, worst);
            if (strict) check_policy(strict, ref, cand, &c, worst);
        }
        attest_case_free(&c);
    }
    printf("  worst: %.2e scaled, %.2e relative\n", worst.scaled, worst.rel_big);
    fflush(stdout);
    free(ref);
    free(cand);
    attest_policy_free(strict);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_indexer_float32_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
