/* Unit tests of the numerics module: hand-derived values from docs/kernels.md section 1 (the exhaustive
 * comparison with ml_dtypes is tests/py/check_numerics.py). Each expected value below is written
 * from the format definition, not computed by the code under test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "attest/numerics.h"

static float f32(uint32_t bits) { return attest_f32_from_bits(bits); }
static float up(float x) { return nextafterf(x, INFINITY); }
static float down(float x) { return nextafterf(x, -INFINITY); }

/* e4m3fn decode: zeros, subnormals k*2^-9, smallest normal 2^-6, 1.0, largest 448, NaN codes. */
static void test_fp8_decode_landmarks(void **state)
{
    (void)state;
    assert_true(attest_fp8_decode(0x00) == 0.0f && !signbit(attest_fp8_decode(0x00)));
    assert_true(attest_fp8_decode(0x80) == 0.0f && signbit(attest_fp8_decode(0x80)));
    assert_true(attest_fp8_decode(0x01) == ldexpf(1.0f, -9));
    assert_true(attest_fp8_decode(0x07) == 7.0f * ldexpf(1.0f, -9));
    assert_true(attest_fp8_decode(0x08) == ldexpf(1.0f, -6));
    assert_true(attest_fp8_decode(0x38) == 1.0f);
    assert_true(attest_fp8_decode(0x39) == 1.125f);
    assert_true(attest_fp8_decode(0x7E) == 448.0f);
    assert_true(attest_fp8_decode(0xFE) == -448.0f);
    assert_true(attest_fp8_decode(0x77) == 240.0f); /* E=14: 2^7 * 1.875 */
    assert_true(isnan(attest_fp8_decode(0x7F)) && !signbit(attest_fp8_decode(0x7F)));
    assert_true(isnan(attest_fp8_decode(0xFF)) && signbit(attest_fp8_decode(0xFF)));
    for (unsigned b = 0; b < 256; b++) /* only the two NaN codes are NaN */
        assert_int_equal(isnan(attest_fp8_decode((uint8_t)b)) != 0, (b & 0x7F) == 0x7F);
}

/* The overflow edge: 464 ties to 448, anything above is NaN (NONSAT) or 448 (SATFINITE). */
static void test_fp8_encode_overflow(void **state)
{
    (void)state;
    const attest_fp8_overflow N = ATTEST_FP8_NONSAT, S = ATTEST_FP8_SATFINITE;
    assert_int_equal(attest_fp8_encode(448.0f, N), 0x7E);
    assert_int_equal(attest_fp8_encode(449.0f, N), 0x7E);
    assert_int_equal(attest_fp8_encode(464.0f, N), 0x7E);
    assert_int_equal(attest_fp8_encode(-464.0f, N), 0xFE);
    assert_int_equal(attest_fp8_encode(down(464.0f), N), 0x7E);
    assert_int_equal(attest_fp8_encode(up(464.0f), N), 0x7F);
    assert_int_equal(attest_fp8_encode(-up(464.0f), N), 0xFF);
    assert_int_equal(attest_fp8_encode(480.0f, N), 0x7F);
    assert_int_equal(attest_fp8_encode(-480.0f, N), 0xFF);
    assert_int_equal(attest_fp8_encode(1e30f, N), 0x7F);
    assert_int_equal(attest_fp8_encode(INFINITY, N), 0x7F);
    assert_int_equal(attest_fp8_encode(-INFINITY, N), 0xFF);
    assert_int_equal(attest_fp8_encode(up(464.0f), S), 0x7E);
    assert_int_equal(attest_fp8_encode(480.0f, S), 0x7E);
    assert_int_equal(attest_fp8_encode(-480.0f, S), 0xFE);
    assert_int_equal(attest_fp8_encode(INFINITY, S), 0x7E);
    assert_int_equal(attest_fp8_encode(-INFINITY, S), 0xFE);
    assert_int_equal(attest_fp8_encode(3.4e38f, S), 0x7E);
    assert_int_equal(attest_fp8_encode(NAN, S) & 0x7F, 0x7F);
    assert_int_equal(attest_fp8_encode(NAN, N), 0x7F);
    assert_int_equal(attest_fp8_encode(-NAN, N), 0xFF);
}

/* Round to nearest even in the subnormal range and across the normal boundary. */
static void test_fp8_encode_rounding(void **state)
{
    (void)state;
    const attest_fp8_overflow N = ATTEST_FP8_NONSAT;
    const float u = ldexpf(1.0f, -9); /* the subnormal step */
    assert_int_equal(attest_fp8_encode(0.0f, N), 0x00);
    assert_int_equal(attest_fp8_encode(-0.0f, N), 0x80);
    assert_int_equal(attest_fp8_encode(ldexpf(1.0f, -10), N), 0x00);        /* 0.5u: tie -> 0 */
    assert_int_equal(attest_fp8_encode(up(ldexpf(1.0f, -10)), N), 0x01);    /* just above */
    assert_int_equal(attest_fp8_encode(1.5f * ldexpf(1.0f, -10), N), 0x01); /* 0.75u */
    assert_int_equal(attest_fp8_encode(-1.5f * ldexpf(1.0f, -10), N), 0x81);
    assert_int_equal(attest_fp8_encode(1.5f * u, N), 0x02);                 /* tie -> even 2 */
    assert_int_equal(attest_fp8_encode(2.5f * u, N), 0x02);                 /* tie -> even 2 */
    assert_int_equal(attest_fp8_encode(3.5f * u, N), 0x04);
    assert_int_equal(attest_fp8_encode(7.5f * u, N), 0x08);                 /* into 2^-6 */
    assert_int_equal(attest_fp8_encode(down(7.5f * u), N), 0x07);
    assert_int_equal(attest_fp8_encode(1e-30f, N), 0x00);
    assert_int_equal(attest_fp8_encode(f32(0x00000001u), N), 0x00);         /* float subnormal */
    assert_int_equal(attest_fp8_encode(1.0625f, N), 0x38);                  /* tie -> even 1.0 */
    assert_int_equal(attest_fp8_encode(up(1.0625f), N), 0x39);
    assert_int_equal(attest_fp8_encode(1.1875f, N), 0x3A);                  /* tie -> even 1.25 */
    assert_int_equal(attest_fp8_encode(15.5f, N), 0x58);                    /* 15.5: tie -> 16 */
    /* every finite code round-trips */
    for (unsigned b = 0; b < 256; b++) {
        if ((b & 0x7F) == 0x7F) continue;
        assert_int_equal(attest_fp8_encode(attest_fp8_decode((uint8_t)b), N), b);
        assert_int_equal(attest_fp8_encode(attest_fp8_decode((uint8_t)b), ATTEST_FP8_SATFINITE), b);
    }
}

/* UE8M0 decode: 2^(b-127); 0x00 is the float subnormal 2^-127; 0xFF is NaN. */
static void test_ue8m0_decode(void **state)
{
    (void)state;
    assert_true(attest_ue8m0_decode(127) == 1.0f);
    assert_true(attest_ue8m0_decode(128) == 2.0f);
    assert_true(attest_ue8m0_decode(1) == ldexpf(1.0f, -126));
    assert_int_equal(attest_f32_bits(attest_ue8m0_decode(0)), 0x00400000u);
    assert_int_equal(attest_f32_bits(attest_ue8m0_decode(254)), 0x7F000000u);
    assert_true(isnan(attest_ue8m0_decode(255)));
    assert_true(attest_ue8m0_decode_f64(0) == ldexp(1.0, -127));
    assert_true(attest_ue8m0_decode_f64(254) == ldexp(1.0, 127));
    assert_true(attest_ue8m0_decode_f64(100) == ldexp(1.0, -27));
    assert_true(isnan(attest_ue8m0_decode_f64(255)));
}

/* UE8M0 ceil: powers of two are exact, anything above goes up one; edges at 2^-127 and 2^127. */
static void test_ue8m0_encode_ceil(void **state)
{
    (void)state;
    assert_int_equal(attest_ue8m0_encode_ceil(1.0f), 127);
    assert_int_equal(attest_ue8m0_encode_ceil(up(1.0f)), 128);
    assert_int_equal(attest_ue8m0_encode_ceil(down(1.0f)), 127);
    assert_int_equal(attest_ue8m0_encode_ceil(0.75f), 127);
    assert_int_equal(attest_ue8m0_encode_ceil(0.5f), 126);
    assert_int_equal(attest_ue8m0_encode_ceil(3.0f), 129);
    assert_int_equal(attest_ue8m0_encode_ceil(0.0f), 0);
    assert_int_equal(attest_ue8m0_encode_ceil(-0.0f), 0);
    assert_int_equal(attest_ue8m0_encode_ceil(-1.0f), 0);
    assert_int_equal(attest_ue8m0_encode_ceil(ldexpf(1.0f, -127)), 0);
    assert_int_equal(attest_ue8m0_encode_ceil(up(ldexpf(1.0f, -127))), 1);
    assert_int_equal(attest_ue8m0_encode_ceil(ldexpf(1.0f, -126)), 1);
    assert_int_equal(attest_ue8m0_encode_ceil(f32(1u)), 0);
    assert_int_equal(attest_ue8m0_encode_ceil(ldexpf(1.0f, 127)), 254);
    assert_int_equal(attest_ue8m0_encode_ceil(up(ldexpf(1.0f, 127))), 255);
    assert_int_equal(attest_ue8m0_encode_ceil(INFINITY), 255);
    assert_int_equal(attest_ue8m0_encode_ceil(NAN), 255);
}

/* The writers disagree on tiny and all-zero tiles (docs/kernels.md section 1); values derived by hand:
 * 1e-4 -> 2^-13 (114); 1e-8/448 = 2.2e-11 -> 2^-35 (92); 0.02/448 = 4.5e-5 -> 2^-14 (113);
 * 1e-10/448 = 2.2e-13 -> 2^-42 (85); 1/448 -> 2^-8 (119). */
static void test_ue8m0_writers(void **state)
{
    (void)state;
    const attest_ue8m0_writer F = ATTEST_UE8M0_FLASHMLA, G = ATTEST_UE8M0_SGLANG,
                              D = ATTEST_UE8M0_DEEPGEMM;
    assert_int_equal(attest_ue8m0_scale_for_amax(0.0f, F), 114);
    assert_int_equal(attest_ue8m0_scale_for_amax(0.0f, G), 92);
    assert_int_equal(attest_ue8m0_scale_for_amax(0.0f, D), 1);
    assert_int_equal(attest_ue8m0_scale_for_amax(0.02f, F), 114);
    assert_int_equal(attest_ue8m0_scale_for_amax(0.02f, G), 113);
    assert_int_equal(attest_ue8m0_scale_for_amax(0.02f, D), 113);
    assert_int_equal(attest_ue8m0_scale_for_amax(1e-10f, F), 114);
    assert_int_equal(attest_ue8m0_scale_for_amax(1e-10f, G), 92);
    assert_int_equal(attest_ue8m0_scale_for_amax(1e-10f, D), 85);
    for (int w = 0; w < 3; w++) {
        assert_int_equal(attest_ue8m0_scale_for_amax(1.0f, (attest_ue8m0_writer)w), 119);
        assert_int_equal(attest_ue8m0_scale_for_amax(448.0f, (attest_ue8m0_writer)w), 127);
        assert_int_equal(attest_ue8m0_scale_for_amax(up(448.0f), (attest_ue8m0_writer)w), 128);
    }
    assert_int_equal(attest_ue8m0_scale_for_amax(NAN, F), 255);
    assert_int_equal(attest_ue8m0_scale_for_amax(NAN, G), 255);
    assert_int_equal(attest_ue8m0_scale_for_amax(NAN, D), 254);
    assert_int_equal(attest_ue8m0_scale_for_amax(INFINITY, F), 255);
    assert_int_equal(attest_ue8m0_scale_for_amax(INFINITY, D), 254);
    assert_string_equal(attest_ue8m0_writer_name(F), "flashmla");
    assert_string_equal(attest_ue8m0_writer_name(G), "sglang");
    assert_string_equal(attest_ue8m0_writer_name(D), "deepgemm");
    assert_null(attest_ue8m0_writer_name((attest_ue8m0_writer)3));
}

/* bf16: the top half of float32, RNE on the low half, NaN kept (quiet, signed), overflow to inf. */
static void test_bf16(void **state)
{
    (void)state;
    assert_true(attest_bf16_decode(0x3F80) == 1.0f);
    assert_true(attest_bf16_decode(0xC040) == -3.0f);
    assert_true(attest_bf16_decode(0x0001) == ldexpf(1.0f, -133));
    assert_int_equal(attest_bf16_encode(1.0f), 0x3F80);
    assert_int_equal(attest_bf16_encode(f32(0x3F808000u)), 0x3F80); /* tie -> even */
    assert_int_equal(attest_bf16_encode(f32(0x3F818000u)), 0x3F82); /* tie -> even */
    assert_int_equal(attest_bf16_encode(f32(0x3F808001u)), 0x3F81);
    assert_int_equal(attest_bf16_encode(f32(0x3F807FFFu)), 0x3F80);
    assert_int_equal(attest_bf16_encode(-0.0f), 0x8000);
    assert_int_equal(attest_bf16_encode(f32(0x7F7FFFFFu)), 0x7F80); /* FLT_MAX rounds to inf */
    assert_int_equal(attest_bf16_encode(f32(0x7F7F7FFFu)), 0x7F7F);
    assert_int_equal(attest_bf16_encode(INFINITY), 0x7F80);
    assert_int_equal(attest_bf16_encode(-INFINITY), 0xFF80);
    assert_int_equal(attest_bf16_encode(f32(0x7F800001u)), 0x7FC0); /* signalling NaN stays NaN */
    assert_int_equal(attest_bf16_encode(f32(0xFFA00000u)), 0xFFC0);
    assert_int_equal(attest_bf16_encode(f32(0x00008000u)), 0x0000); /* subnormal tie -> even */
    assert_int_equal(attest_bf16_encode(f32(0x00018000u)), 0x0002);
}

/* encode_f64 rounds once: 1 + 2^-8 + 2^-40 is above the tie, though float would round it onto
 * the tie (then to even, 1.0). */
static void test_bf16_encode_f64(void **state)
{
    (void)state;
    assert_int_equal(attest_bf16_encode_f64(1.0 + ldexp(1.0, -8) + ldexp(1.0, -40)), 0x3F81);
    assert_int_equal(attest_bf16_encode_f64(1.0 + ldexp(1.0, -8)), 0x3F80);
    assert_int_equal(attest_bf16_encode_f64(1.0 + 3 * ldexp(1.0, -8)), 0x3F82);
    assert_int_equal(attest_bf16_encode_f64(-2.0), 0xC000);
    assert_int_equal(attest_bf16_encode_f64(0.0), 0x0000);
    assert_int_equal(attest_bf16_encode_f64(-0.0), 0x8000);
    assert_int_equal(attest_bf16_encode_f64(ldexp(1.0, -133)), 0x0001);
    assert_int_equal(attest_bf16_encode_f64(ldexp(1.0, -134)), 0x0000);            /* tie */
    assert_int_equal(attest_bf16_encode_f64(ldexp(1.0, -134) * 1.0000001), 0x0001);
    assert_int_equal(attest_bf16_encode_f64(ldexp(1.0, -126) - ldexp(1.0, -134)), 0x0080);
    assert_int_equal(attest_bf16_encode_f64(1e300), 0x7F80);
    assert_int_equal(attest_bf16_encode_f64(-1e300), 0xFF80);
    assert_int_equal(attest_bf16_encode_f64(ldexp(255.5, 120)), 0x7F80); /* tie above max -> inf */
    assert_int_equal(attest_bf16_encode_f64(ldexp(255.4, 120)), 0x7F7F);
    assert_int_equal(attest_bf16_encode_f64(5e-324), 0x0000);
    assert_int_equal(attest_bf16_encode_f64(NAN), 0x7FC0);
    assert_int_equal(attest_bf16_encode_f64(-NAN), 0xFFC0);
    assert_int_equal(attest_bf16_encode_f64(INFINITY), 0x7F80);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_decode_landmarks),
        cmocka_unit_test(test_fp8_encode_overflow),
        cmocka_unit_test(test_fp8_encode_rounding),
        cmocka_unit_test(test_ue8m0_decode),
        cmocka_unit_test(test_ue8m0_encode_ceil),
        cmocka_unit_test(test_ue8m0_writers),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_bf16_encode_f64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
