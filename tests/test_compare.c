/* Focused tests of each comparator gate on tiny vectors whose expected metrics are computed by
 * hand (in the comments). The fault-injection self-test on realistic outputs lives in
 * test_compare_selftest.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/compare.h"

/* A tolerance with every optional gate off; tests switch on what they check. */
static attest_tolerance loose(void)
{
    attest_tolerance t;
    memset(&t, 0, sizeof t);
    t.atol = 0;
    t.rtol = 0;
    t.max_fail_fraction = 1;
    t.cos_diff_max = 1;
    t.nmse_max = -1;
    t.max_code_distance = -1;
    t.vacuity_factor = 0;
    t.topk_min_recall = -1;
    return t;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void near(double got, double want)
{
    if (!(fabs(got - want) <= 1e-15 * fabs(want))) fail_msg("got %.17g, want %.17g", got, want);
}

/* Cosine difference and NMSE by hand: r = 1,2,3,4; c = 1,2,3,5.
 * sum rc = 34, sum r^2 = 30, sum c^2 = 39: cos_diff = 1 - 68/69 = 1/69; nmse = 1/30. */
static void test_cosine_and_nmse_by_hand(void **state)
{
    (void)state;
    const double r[4] = {1, 2, 3, 4};
    const float c[4] = {1, 2, 3, 5};
    const int64_t shape[2] = {2, 2};
    attest_tolerance t = loose();
    t.nmse_max = 1.0 / 30;
    t.max_fail_fraction = 0;
    attest_tensor_metrics m;
    strcpy(m.output, "vec");
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 4, shape, 2, NULL, 0, &t, &m));
    assert_string_equal(m.output, "vec");
    assert_int_equal(m.count, 4);
    assert_int_equal(m.finite_pairs, 4);
    near(m.cos_diff, 1.0 / 69);
    near(m.nmse, 1.0 / 30);
    near(m.max_abs, 1);
    near(m.max_rel, 0.25);
    assert_int_equal(m.worst.rank, 2); /* element 3 of a 2x2 tensor is (1, 1) */
    assert_int_equal(m.worst.index[0], 1);
    assert_int_equal(m.worst.index[1], 1);
    assert_true(m.worst_ref == 4 && m.worst_cand == 5);
    assert_int_equal(m.failed_gates, ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT)); /* atol = rtol = 0 */

    const double cd[4] = {1, 2, 3, 5};
    near(attest_cosine_difference(r, cd, 4), 1.0 / 69);

    /* The cosine gate at its bound: 1/69 passes cos_diff_max = 1/69 + eps and fails just under. */
    t.cos_diff_max = 1.0 / 69 * (1 - 1e-12);
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 4, shape, 2, NULL, 0, &t, &m));
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_COSINE));
    assert_false(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NMSE)); /* 1/30 <= 1/30 */
    t.nmse_max = 1.0 / 31;
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 4, shape, 2, NULL, 0, &t, &m));
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NMSE));
}

/* Element gate: abs OR rel, at the boundaries; the failing fraction against max_fail_fraction. */
static void test_element_gate(void **state)
{
    (void)state;
    /* |5-4| = 1 = 0.25*4 passes by rel; |101-100| = 1 = 0.01*100 passes by rel; |0.0015-0.001|
     * = 5e-4 <= 1e-3 passes by abs. */
    const double r[3] = {4, 100, 0.001};
    float c[3] = {5, 101, 0.0015f};
    attest_tolerance t = loose();
    t.atol = 1e-3;
    t.rtol = 0.25;
    t.max_fail_fraction = 0;
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 3, NULL, 0, NULL, 0, &t, &m));
    assert_int_equal(m.element_failures, 0);
    assert_int_equal(m.failed_gates, 0);
    t.rtol = 0.01; /* 1 > 0.01*4 and 1 > atol: element 0 fails, element 1 still passes */
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 3, NULL, 0, NULL, 0, &t, &m));
    assert_int_equal(m.element_failures, 1);
    near(m.element_fail_fraction, 1.0 / 3);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT));
    assert_int_equal(m.worst.index[0], 0); /* |diff| 1 at elements 0 and 1: the first is kept */
    t.max_fail_fraction = 0.34; /* one failure in three is allowed */
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 3, NULL, 0, NULL, 0, &t, &m));
    assert_false(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT));
}

/* atol_ref_scale: a cancelling sum's error scales with the tensor, so atol is raised to
 * 1e-5 * max|ref| = 0.01 and |0.505 - 0.5| = 0.005 passes. */
static void test_atol_ref_scale(void **state)
{
    (void)state;
    const double r[2] = {1000, 0.5};
    const float c[2] = {1000, 0.505f};
    attest_tolerance t = loose();
    t.atol = 1e-6;
    t.rtol = 1e-3;
    t.max_fail_fraction = 0;
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 2, NULL, 0, NULL, 0, &t, &m));
    assert_int_equal(m.element_failures, 1);
    near(m.atol_effective, 1e-6);
    t.atol_ref_scale = 1e-5;
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 2, NULL, 0, NULL, 0, &t, &m));
    assert_int_equal(m.element_failures, 0);
    near(m.atol_effective, 0.01);
}

/* Non-finite pattern: each class counted; matching infinities and NaN/NaN pairs are fine and
 * enter no other metric; a finite/non-finite pair is a mismatch located by coordinates. */
static void test_nonfinite_gate(void **state)
{
    (void)state;
    const double r[6] = {INFINITY, -INFINITY, NAN, 1, 2, -INFINITY};
    const float c[6] = {INFINITY, -INFINITY, NAN, INFINITY, 2, 5};
    const int64_t shape[2] = {2, 3};
    attest_tolerance t = loose();
    t.max_fail_fraction = 0;
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 6, shape, 2, NULL, 0, &t, &m));
    assert_int_equal(m.ref_posinf, 1);
    assert_int_equal(m.ref_neginf, 2);
    assert_int_equal(m.ref_nan, 1);
    assert_int_equal(m.cand_posinf, 2);
    assert_int_equal(m.cand_neginf, 1);
    assert_int_equal(m.cand_nan, 1);
    assert_int_equal(m.nonfinite_mismatches, 2);
    assert_int_equal(m.first_nonfinite_mismatch.index[0], 1); /* element 3 = (1, 0) */
    assert_int_equal(m.first_nonfinite_mismatch.index[1], 0);
    assert_int_equal(m.finite_pairs, 1);
    assert_int_equal(m.element_failures, 0);
    assert_true(m.cos_diff == 0 && m.max_abs == 0);
    assert_int_equal(m.failed_gates, ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE));

    /* All matching: passes. */
    const float same[6] = {INFINITY, -INFINITY, NAN, 1, 2, -INFINITY};
    assert_ok(attest_compare_tensor(r, same, ATTEST_DTYPE_F32, 6, shape, 2, NULL, 0, &t, &m));
    assert_int_equal(m.failed_gates, 0);
    assert_int_equal(m.nonfinite_mismatches, 0);
}

/* The compare mask: an excluded element (however wrong, NaN or poison) is counted nowhere. */
static void test_mask(void **state)
{
    (void)state;
    const double r[4] = {1, 2, 3, -INFINITY};
    const float c[4] = {1, 1e6f, NAN, 0};
    const uint8_t mask[4] = {1, 0, 0, 0};
    attest_tolerance t = loose();
    t.max_fail_fraction = 0;
    t.cos_diff_max = 0;
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 4, NULL, 0, mask,
                                    f32_bits(NAN), &t, &m));
    assert_int_equal(m.count, 1);
    assert_int_equal(m.unwritten, 0);
    assert_int_equal(m.cand_nan + m.ref_neginf, 0);
    assert_int_equal(m.failed_gates, 0);
    assert_int_equal(m.vacuous, 0);
    /* Unmasked, the same data fails three gates. */
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 4, NULL, 0, NULL, f32_bits(NAN),
                                    &t, &m));
    assert_int_equal(m.failed_gates, ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE) |
                                         ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT) |
                                         ATTEST_GATE_BIT(ATTEST_GATE_COSINE) |
                                         ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN));
}

/* Code distance in bf16: steps counted through binade boundaries, through zero, and with the
 * reference rounded to nearest even first. Hand values from the bf16 bit patterns. */
static void test_code_distance_bf16(void **state)
{
    (void)state;
    struct {
        double ref;
        uint16_t cand;
        double steps;
    } cases[] = {
        {1.0, 0x3F80, 0},         /* exact */
        {1.0, 0x3F7F, 1},         /* 0.99609375: one step down, across the binade edge */
        {1.0, 0x3F7E, 2},
        {1.0, 0x3F81, 1},
        {1.999, 0x3FFF, 1},       /* 1.999 rounds up to 2.0 (0x4000); 1.9921875 is one below */
        {1.0 + 1.0 / 256, 0x3F80, 0}, /* the tie 1 + 2^-8 rounds to even 0x3F80 */
        {1.0 + 3.0 / 256, 0x3F82, 0}, /* the tie between 0x3F81 and 0x3F82 rounds to 0x3F82 */
        {1.0 + 3.0 / 256, 0x3F81, 1},
        {0.0, 0x8000, 0},         /* -0 and +0 are the same value */
        {0.0, 0x8001, 1},         /* the smallest negative subnormal */
        {9.183549615799121e-41, 0x8001, 2}, /* +2^-133 (0x0001) to -2^-133 */
        {-1.0, 0xBF81, 1},
        {-1.0, 0x3F80, 0x3F80 * 2}, /* sign flip: 2 * 0x3F80 steps */
    };
    attest_tolerance t = loose();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        attest_tensor_metrics m;
        memset(&m, 0, sizeof m);
        assert_ok(attest_compare_tensor(&cases[i].ref, &cases[i].cand, ATTEST_DTYPE_BF16, 1,
                                        NULL, 0, NULL, 0, &t, &m));
        if (m.max_code_distance != cases[i].steps)
            fail_msg("case %zu: ref %.17g cand 0x%04x: %g steps, want %g", i, cases[i].ref,
                     cases[i].cand, m.max_code_distance, cases[i].steps);
    }
    /* The gate: two steps fail max 1, pass max 2; within atol nothing is counted. */
    const double r = 1.0;
    const uint16_t c = 0x3F7E;
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    t.max_code_distance = 1;
    assert_ok(attest_compare_tensor(&r, &c, ATTEST_DTYPE_BF16, 1, NULL, 0, NULL, 0, &t, &m));
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_CODE));
    t.max_code_distance = 2;
    assert_ok(attest_compare_tensor(&r, &c, ATTEST_DTYPE_BF16, 1, NULL, 0, NULL, 0, &t, &m));
    assert_false(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_CODE));
    t.max_code_distance = 0;
    t.atol = 0.01; /* |0.9921875 - 1| = 0.0078 <= atol */
    assert_ok(attest_compare_tensor(&r, &c, ATTEST_DTYPE_BF16, 1, NULL, 0, NULL, 0, &t, &m));
    assert_true(m.max_code_distance == 0);
    assert_int_equal(m.failed_gates, 0);
}

/* Code distance in fp32: ulps at 1.0 both ways, and the double tie 1 + 2^-24 rounds to 1.0. */
static void test_code_distance_f32(void **state)
{
    (void)state;
    const double refs[4] = {1.0, 1.0, 1.0 + ldexp(1, -24), 1.0 + 3 * ldexp(1, -24)};
    const uint32_t bits[4] = {0x3F800001u, 0x3F7FFFFFu, 0x3F800001u, 0x3F800001u};
    const double want[4] = {1, 1, 1, 1}; /* last: tie between ...01 and ...02 rounds to ...02 */
    attest_tolerance t = loose();
    for (int i = 0; i < 4; ++i) {
        attest_tensor_metrics m;
        memset(&m, 0, sizeof m);
        assert_ok(attest_compare_tensor(&refs[i], &bits[i], ATTEST_DTYPE_F32, 1, NULL, 0,
                                        NULL, 0, &t, &m));
        if (m.max_code_distance != want[i]) fail_msg("case %d: %g steps", i, m.max_code_distance);
    }
}

/* Unwritten gate: the poison pattern counts, for bf16 only its low 16 bits are compared. */
static void test_unwritten(void **state)
{
    (void)state;
    const double r[3] = {1, 2, 3};
    const uint16_t cb[3] = {0x3F80, 0x7FA5, 0x4040};
    attest_tolerance t = loose();
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_tensor(r, cb, ATTEST_DTYPE_BF16, 3, NULL, 0, NULL, 0xFFFF7FA5u,
                                    &t, &m));
    assert_int_equal(m.unwritten, 1);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN));
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE)); /* the poison is a NaN */
    const uint32_t cf[3] = {0x3F800000u, 0x40000000u, 0x7FA5A5A5u};
    assert_ok(attest_compare_tensor(r, cf, ATTEST_DTYPE_F32, 3, NULL, 0, NULL, 0x7FA5A5A5u,
                                    &t, &m));
    assert_int_equal(m.unwritten, 1);
    /* A different NaN is not the poison. */
    assert_ok(attest_compare_tensor(r, cf, ATTEST_DTYPE_F32, 3, NULL, 0, NULL, 0x7FC00000u,
                                    &t, &m));
    assert_int_equal(m.unwritten, 0);
}

/* Vacuity: all masked, all non-finite, or max|ref| under vacuity_factor * atol; never a gate. */
static void test_vacuity(void **state)
{
    (void)state;
    attest_tolerance t = loose();
    t.atol = 1e-3;
    t.vacuity_factor = 10; /* vacuous below 0.01 */
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    const double small[2] = {0.005, -0.009};
    const float smallc[2] = {0.005f, -0.009f};
    assert_ok(attest_compare_tensor(small, smallc, ATTEST_DTYPE_F32, 2, NULL, 0, NULL, 0, &t,
                                    &m));
    assert_int_equal(m.vacuous, 1);
    assert_int_equal(m.failed_gates, 0);
    const double big[2] = {0.005, -0.02};
    const float bigc[2] = {0.005f, -0.02f};
    assert_ok(attest_compare_tensor(big, bigc, ATTEST_DTYPE_F32, 2, NULL, 0, NULL, 0, &t, &m));
    assert_int_equal(m.vacuous, 0);
    const double masked[2] = {-INFINITY, -INFINITY};
    const float maskedc[2] = {-INFINITY, -INFINITY};
    t.vacuity_factor = 0;
    assert_ok(attest_compare_tensor(masked, maskedc, ATTEST_DTYPE_F32, 2, NULL, 0, NULL, 0,
                                    &t, &m));
    assert_int_equal(m.vacuous, 1);
    const uint8_t none[2] = {0, 0};
    assert_ok(attest_compare_tensor(big, bigc, ATTEST_DTYPE_F32, 2, NULL, 0, none, 0, &t, &m));
    assert_int_equal(m.vacuous, 1);
    assert_int_equal(m.count, 0);
    /* nmse when the reference is all zero: inf for a non-zero candidate; vacuous (0 < 0.01). */
    t.vacuity_factor = 10;
    const double zero[2] = {0, 0};
    const float one[2] = {0, 1};
    assert_ok(attest_compare_tensor(zero, one, ATTEST_DTYPE_F32, 2, NULL, 0, NULL, 0, &t, &m));
    assert_true(isinf(m.nmse));
    near(m.cos_diff, 1.0); /* sum (c-r)^2 = 1 over sum r^2 + c^2 = 1 */
    assert_int_equal(m.vacuous, 1);
}

/* Vacuity asks whether the reference could show a difference, not whether the candidate did:
 * a candidate that writes NaN where the reference is finite and well above its tolerance has
 * no finite pair, and the output is still informative (it fails the nonfinite gate, and a
 * report that called it "could not show a difference" was wrong). A reference below its own
 * tolerance stays vacuous whatever the candidate writes. */
static void test_vacuity_ignores_candidate_nonfinite(void **state)
{
    (void)state;
    attest_tolerance t = loose();
    t.bound_factor = 1;
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    const double r[3] = {1.0, -2.0, 0.5};
    const double b[3] = {1e-3, 1e-3, 1e-3};
    const uint16_t nan_bf16[3] = {0x7FC0, 0x7FC0, 0xFF80}; /* NaN, NaN, -inf */
    assert_ok(attest_compare_tensor_bounded(r, b, nan_bf16, ATTEST_DTYPE_BF16, 3, NULL, 0, NULL,
                                            0, &t, &m));
    assert_int_equal(m.finite_pairs, 0);
    assert_int_equal(m.nonfinite_mismatches, 3);
    assert_int_equal(m.vacuous, 0);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE));
    const double tiny[3] = {1e-9, -1e-9, 0.0}; /* every |r| below its tolerance */
    assert_ok(attest_compare_tensor_bounded(tiny, b, nan_bf16, ATTEST_DTYPE_BF16, 3, NULL, 0,
                                            NULL, 0, &t, &m));
    assert_int_equal(m.vacuous, 1);
    /* A masked-out element cannot make the output informative. */
    const uint8_t only_tiny[3] = {0, 0, 1};
    assert_ok(attest_compare_tensor_bounded(r, b, nan_bf16, ATTEST_DTYPE_BF16, 3, NULL, 0,
                                            only_tiny, 0, &t, &m));
    assert_int_equal(m.vacuous, 0); /* r[2] = 0.5 > its tolerance */
    const double r2[3] = {1.0, -2.0, 1e-9};
    assert_ok(attest_compare_tensor_bounded(r2, b, nan_bf16, ATTEST_DTYPE_BF16, 3, NULL, 0,
                                            only_tiny, 0, &t, &m));
    assert_int_equal(m.vacuous, 1);
}

/* Bad arguments are errors (not verdicts). */
static void test_invalid_arguments(void **state)
{
    (void)state;
    const double r[4] = {0};
    const float c[4] = {0};
    const int64_t shape[2] = {2, 3};
    attest_tolerance t = loose();
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_int_equal(attest_compare_tensor(r, c, ATTEST_DTYPE_F64, 4, NULL, 0, NULL, 0, &t, &m),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 4, shape, 2, NULL, 0, &t, &m),
                     ATTEST_ERR_INVALID_ARGUMENT);
    t.atol = -1;
    assert_int_equal(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, 4, NULL, 0, NULL, 0, &t, &m),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "atol"));
}

/* Gate names and the '+'-joined mask string. */
static void test_gate_names(void **state)
{
    (void)state;
    assert_string_equal(attest_gate_name(ATTEST_GATE_NONFINITE), "nonfinite");
    assert_string_equal(attest_gate_name(ATTEST_GATE_TOPK), "topk");
    assert_string_equal(attest_gate_name((attest_gate)99), "unknown");
    char buf[64];
    attest_gate_mask_string(ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT) | ATTEST_GATE_BIT(ATTEST_GATE_COSINE),
                            buf, sizeof buf);
    assert_string_equal(buf, "element+cosine");
    attest_gate_mask_string(0, buf, sizeof buf);
    assert_string_equal(buf, "");
    char small[12];
    attest_gate_mask_string(ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE) | ATTEST_GATE_BIT(ATTEST_GATE_NMSE),
                            small, sizeof small);
    assert_string_equal(small, "nonfinite"); /* whole names only */
}

/* Top-k ties: exact and near ties are interchangeable, a clearly lower score is not. */
static void test_topk_ties(void **state)
{
    (void)state;
    const double s[5] = {5, 4, 3, 3, 1};
    const int32_t ref[3] = {0, 1, 2};
    double recall = -1;
    const int32_t tie[3] = {1, 3, 0}; /* order does not matter; 3 ties the k-th score */
    assert_ok(attest_compare_topk_row(s, 5, tie, ref, 3, 0, 0, &recall));
    near(recall, 1);
    const int32_t low[3] = {0, 1, 4};
    assert_ok(attest_compare_topk_row(s, 5, low, ref, 3, 0, 0, &recall));
    near(recall, 2.0 / 3);

    const double n[5] = {5, 4, 3, 2.99999, 1};
    const int32_t swap[3] = {0, 1, 3};
    assert_ok(attest_compare_topk_row(n, 5, swap, ref, 3, 0, 0, &recall));
    near(recall, 2.0 / 3);
    assert_ok(attest_compare_topk_row(n, 5, swap, ref, 3, 1e-4, 0, &recall));
    near(recall, 1);
    assert_ok(attest_compare_topk_row(n, 5, swap, ref, 3, 0, 1e-5, &recall));
    near(recall, 1); /* band 3e-5 */
    assert_ok(attest_compare_topk_row(n, 5, swap, ref, 3, 0, 1e-6, &recall));
    near(recall, 2.0 / 3); /* band 3e-6 < 1e-5 gap */

    /* A clearly-top position swapped out for a tie is still a miss: 0 (score 10) is not a tie. */
    const double top[4] = {10, 5, 5, 5};
    const int32_t ref3[3] = {0, 1, 2}, cand3[3] = {1, 2, 3};
    assert_ok(attest_compare_topk_row(top, 4, cand3, ref3, 3, 0.1, 0, &recall));
    near(recall, 2.0 / 3);
}

/* Top-k under computed bounds: any values within every element's tolerance may reorder the
 * top-k, so a candidate whose every element passes never fails the gate. The rule before matched
 * each swap against the k-th score's tolerance only and failed the first case below. */
static void topk_of(const double *v, int32_t n, int32_t k, int32_t *set)
{
    for (int32_t j = 0; j < k; ++j) {
        int32_t best = -1;
        for (int32_t i = 0; i < n; ++i) {
            int taken = 0;
            for (int32_t t = 0; t < j; ++t) taken |= set[t] == i;
            if (!taken && (best < 0 || v[i] > v[best])) best = i;
        }
        set[j] = best;
    }
}

static void test_topk_bounded_swaps(void **state)
{
    (void)state;
    attest_tolerance tol;
    memset(&tol, 0, sizeof tol);
    tol.bound_factor = 1;
    tol.topk_min_recall = 1;
    attest_tensor_metrics m;
    /* Position 0's own tolerance is the wide one: 0.45 is within it, so 0 and 2 may swap. */
    const double r[3] = {2.0, 1.0, 0.5}, b[3] = {1.6, 0.01, 0.01};
    const int32_t len[1] = {3}, ref_set[2] = {0, 1}, cand_set[2] = {1, 2};
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_topk_bounded(r, b, 1, 3, len, cand_set, ref_set, 2, &tol, &m));
    near(m.topk_recall, 1);
    assert_int_equal(m.failed_gates, 0);
    /* Narrow tolerances: the same swap is a miss. */
    const double narrow[3] = {0.1, 0.01, 0.01};
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_topk_bounded(r, narrow, 1, 3, len, cand_set, ref_set, 2, &tol, &m));
    near(m.topk_recall, 0.5);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));

    /* Random rows: candidate values drawn within each element's tolerance always pass; a
     * candidate that swaps in the row's lowest score for its highest fails once the two
     * intervals are apart. */
    enum { N = 24, K = 6 };
    uint64_t x = 0x9e3779b97f4a7c15u;
    int separated = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        double rr[N], bb[N], cc[N];
        for (int i = 0; i < N; ++i) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            rr[i] = (double)(x >> 11) / 9007199254740992.0 * 4.0;
            x = x * 6364136223846793005u + 1442695040888963407u;
            bb[i] = (double)(x >> 11) / 9007199254740992.0 * ((trial % 3) ? 0.3 : 2.0);
            x = x * 6364136223846793005u + 1442695040888963407u;
            cc[i] = rr[i] + bb[i] * (2.0 * (double)(x >> 11) / 9007199254740992.0 - 1.0);
        }
        int32_t rs[K], cs[K], n[1] = {N};
        topk_of(rr, N, K, rs);
        topk_of(cc, N, K, cs);
        memset(&m, 0, sizeof m);
        assert_ok(attest_compare_topk_bounded(rr, bb, 1, N, n, cs, rs, K, &tol, &m));
        if (m.topk_recall != 1.0)
            fail_msg("trial %d: a candidate within every tolerance got recall %.3f", trial,
                     m.topk_recall);
        int32_t lo = 0, hi = 0;
        for (int i = 1; i < N; ++i) {
            if (rr[i] < rr[lo]) lo = i;
            if (rr[i] > rr[hi]) hi = i;
        }
        if (rr[lo] + bb[lo] >= rr[hi] - bb[hi]) continue;
        int32_t bad[K];
        memcpy(bad, rs, sizeof bad);
        for (int j = 0; j < K; ++j)
            if (bad[j] == hi) bad[j] = lo;
        memset(&m, 0, sizeof m);
        assert_ok(attest_compare_topk_bounded(rr, bb, 1, N, n, bad, rs, K, &tol, &m));
        assert_true(m.topk_recall < 1.0);
        separated++;
    }
    assert_true(separated > 100);
}

/* Top-k malformed candidates: duplicates and out-of-range positions are errors; -1 pads. */
static void test_topk_malformed(void **state)
{
    (void)state;
    const double s[5] = {5, 4, 3, 2, 1};
    const int32_t ref[3] = {0, 1, 2};
    const int32_t dup[3] = {0, 0, 1}, oob[3] = {0, 1, 5}, neg[3] = {0, 1, -2};
    double recall;
    assert_int_equal(attest_compare_topk_row(s, 5, dup, ref, 3, 0, 0, &recall),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "repeats"));
    assert_int_equal(attest_compare_topk_row(s, 5, oob, ref, 3, 0, 0, &recall),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(attest_compare_topk_row(s, 5, neg, ref, 3, 0, 0, &recall),
                     ATTEST_ERR_INVALID_ARGUMENT);
    const int32_t ref_pad[3] = {0, 1, -1}, cand_pad[3] = {-1, 1, 0};
    assert_ok(attest_compare_topk_row(s, 2, cand_pad, ref_pad, 3, 0, 0, &recall));
    near(recall, 1);
    const int32_t empty[3] = {-1, -1, -1}, one[3] = {0, -1, -1};
    assert_ok(attest_compare_topk_row(s, 5, empty, empty, 3, 0, 0, &recall));
    near(recall, 1);
    assert_ok(attest_compare_topk_row(s, 5, one, empty, 3, 0, 0, &recall));
    near(recall, 0);
    assert_ok(attest_compare_topk_row(s, 5, empty, one, 3, 0, 0, &recall));
    near(recall, 0);
}

/* The tensor-level top-k gate: worst row, malformed rows as recall 0, the tie band widened to
 * twice the element tolerance, off when topk_min_recall < 0. */
static void test_topk_gate(void **state)
{
    (void)state;
    const double logits[2][4] = {{5, 4, 3, 2.995}, {9, 8, 7, 6}};
    const int32_t lens[2] = {4, 4};
    const int32_t ref[2][3] = {{0, 1, 2}, {0, 1, 2}};
    const int32_t cand[2][3] = {{0, 1, 3}, {0, 1, 2}};
    attest_tolerance t = loose();
    t.topk_min_recall = 1;
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_topk(&logits[0][0], 2, 4, lens, &cand[0][0], &ref[0][0], 3, &t,
                                  &m));
    assert_int_equal(m.topk_checked, 1);
    near(m.topk_recall, 2.0 / 3);
    assert_int_equal(m.topk_worst_row, 0);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));

    memset(&m, 0, sizeof m);
    m.atol_effective = 0.005; /* band 0.01 covers the 0.005 gap */
    assert_ok(attest_compare_topk(&logits[0][0], 2, 4, lens, &cand[0][0], &ref[0][0], 3, &t,
                                  &m));
    near(m.topk_recall, 1);
    assert_int_equal(m.failed_gates, 0);

    const int32_t bad[2][3] = {{0, 1, 2}, {0, 0, 1}};
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_topk(&logits[0][0], 2, 4, lens, &bad[0][0], &ref[0][0], 3, &t,
                                  &m));
    near(m.topk_recall, 0);
    assert_int_equal(m.topk_worst_row, 1);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));

    t.topk_min_recall = -1;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_topk(&logits[0][0], 2, 4, lens, &bad[0][0], &ref[0][0], 3, &t,
                                  &m));
    assert_int_equal(m.topk_checked, 0);
    assert_int_equal(m.failed_gates, 0);
}

/* What any blocked or vector comparator must keep (one was tried: docs/notes.md, "The
 * comparator in vector lanes"), over 200 elements: the energy sums are added in
 * index order (after a first element of 1e8 squared, each later square of about 1 rounds on
 * its own; summing those first, as lanes or pairs would, gives another double), and the worst pair is the first
 * of the largest ratio, also when its equal lies in a later block; a masked-out element with a
 * larger error and a non-finite pair count nowhere else. */
static void test_order_across_blocks(void **state)
{
    (void)state;
    enum { N = 200 };
    double r[N];
    float c[N];
    uint8_t mask[N];
    for (int i = 0; i < N; i++) {
        r[i] = i == 0 ? 1e8 : 1.0 + (double)(i % 7) / 8;
        c[i] = (float)r[i] + (i % 3 == 0 ? 0.0f : 0.0625f);
        mask[i] = 1;
    }
    c[31] = (float)r[31] + 0.5f; /* the largest error: 31, and again 32, 95 and 160 */
    c[32] = (float)r[32] + 0.5f;
    c[95] = (float)r[95] + 0.5f;
    c[160] = (float)r[160] + 0.5f;
    r[31] = r[32] = r[95] = r[160] = 1.0;
    c[31] = c[32] = c[95] = c[160] = 1.5f;
    c[40] = 9.0f; /* larger still, but masked out */
    mask[40] = 0;
    r[77] = NAN; /* a non-finite pair (NaN both sides): no sum, no ratio */
    c[77] = NAN;
    double sd = 0, sr = 0, sb = 0;
    uint64_t pairs = 0;
    for (int i = 0; i < N; i++) {
        if (!mask[i] || i == 77) continue;
        const double d = (double)c[i] - r[i];
        sd += d * d;
        sr += r[i] * r[i];
        sb += r[i] * r[i] + (double)c[i] * (double)c[i];
        pairs++;
    }
    attest_tolerance t = loose();
    t.atol = 0.25;
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, N, NULL, 0, mask, 0, &t, &m));
    assert_int_equal(m.count, N - 1);
    assert_int_equal(m.finite_pairs, pairs);
    assert_int_equal(m.ref_nan, 1);
    assert_int_equal(m.nonfinite_mismatches, 0);
    assert_true(m.nmse == sd / sr);      /* bit for bit: the sums in index order */
    assert_true(m.cos_diff == sd / sb);
    double ones_first = 0; /* the same terms in another order: another double */
    for (int i = 1; i < N; i++)
        if (mask[i] && i != 77) ones_first += r[i] * r[i];
    assert_true(ones_first + r[0] * r[0] != sr);
    assert_int_equal(m.worst.index[0], 31);
    near(m.worst_ratio, 2); /* 0.5 / 0.25 */
    assert_int_equal(m.element_failures, 4);
    near(m.max_abs, 0.5);

    /* The first of the largest in a later block, after a smaller one in the first. */
    c[31] = c[32] = 1.25f;
    assert_ok(attest_compare_tensor(r, c, ATTEST_DTYPE_F32, N, NULL, 0, mask, 0, &t, &m));
    assert_int_equal(m.worst.index[0], 95);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cosine_and_nmse_by_hand),
        cmocka_unit_test(test_order_across_blocks),
        cmocka_unit_test(test_element_gate),
        cmocka_unit_test(test_atol_ref_scale),
        cmocka_unit_test(test_nonfinite_gate),
        cmocka_unit_test(test_mask),
        cmocka_unit_test(test_code_distance_bf16),
        cmocka_unit_test(test_code_distance_f32),
        cmocka_unit_test(test_unwritten),
        cmocka_unit_test(test_vacuity),
        cmocka_unit_test(test_vacuity_ignores_candidate_nonfinite),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_gate_names),
        cmocka_unit_test(test_topk_ties),
        cmocka_unit_test(test_topk_bounded_swaps),
        cmocka_unit_test(test_topk_malformed),
        cmocka_unit_test(test_topk_gate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
