/* Tests that the inline branch-free encoders the cache writer uses (attest_fp8_encode_inline,
 * attest_bf16_encode_inline) are the out-of-line encoders bit for bit: on every rounding
 * boundary and 2^24 random floats (unit tier), and with --all on every float32 bit pattern
 * (test_numerics_inline_all, slow tier). The out-of-line ones are pinned to ml_dtypes by
 * check_numerics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "attest/numerics.h"

static int g_all;

/* Returns the number of disagreements on one bit pattern (prints the first few). */
static unsigned check_bits(uint32_t bits)
{
    static unsigned printed;
    const float x = attest_f32_from_bits(bits);
    unsigned bad = 0;
    for (int m = 0; m < 2; m++) {
        const uint8_t want = attest_fp8_encode(x, (attest_fp8_overflow)m);
        const uint8_t got = attest_fp8_encode_inline(x, (attest_fp8_overflow)m);
        if (want != got) {
            bad++;
            if (printed++ < 8)
                printf("fp8 %s of 0x%08x: inline 0x%02x, expected 0x%02x\n",
                       m ? "satfinite" : "nonsat", bits, got, want);
        }
    }
    const uint16_t want = attest_bf16_encode(x), got = attest_bf16_encode_inline(x);
    if (want != got) {
        bad++;
        if (printed++ < 8)
            printf("bf16 of 0x%08x: inline 0x%04x, expected 0x%04x\n", bits, got, want);
    }
    return bad;
}

/* Every fp8 code's value and the midpoints to its neighbours, +-2 ulp, both signs; every
 * bf16 rounding boundary (low half 0x7FFF..0x8001) of every high half; inf, NaNs, zeros. */
static void boundaries(void **state)
{
    (void)state;
    unsigned bad = 0;
    for (uint32_t code = 0; code < 0x7F; code++) {
        const float lo = attest_fp8_decode((uint8_t)code);
        const float hi = code < 0x7E ? attest_fp8_decode((uint8_t)(code + 1)) : 480.0f;
        const float points[] = {lo, (lo + hi) * 0.5f};
        for (int p = 0; p < 2; p++) {
            const uint32_t b = attest_f32_bits(points[p]);
            for (int d = -2; d <= 2; d++) {
                if (b == 0 && d < 0) continue;
                bad += check_bits(b + (uint32_t)d);
                bad += check_bits((b + (uint32_t)d) | 0x80000000u);
            }
        }
    }
    for (uint32_t h = 0; h < 0x10000u; h++)
        for (uint32_t l = 0x7FFEu; l <= 0x8001u; l++) bad += check_bits(h << 16 | l);
    const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                 0x7F800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x00000001u,
                                 0x007FFFFFu, 0x00800000u, 0x3C800000u, 0x3C7FFFFFu,
                                 0x43E80000u, 0x43E80001u, 0x43E7FFFFu, 0x7F7FFFFFu};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        bad += check_bits(specials[i]);
    assert_int_equal(bad, 0);
}

/* 2^24 random bit patterns (xorshift), plus every pattern with --all. */
static void patterns(void **state)
{
    (void)state;
    unsigned long bad = 0;
    if (g_all) {
        for (uint64_t b = 0; b <= 0xFFFFFFFFull; b++) bad += check_bits((uint32_t)b);
        printf("every float32 bit pattern checked (2^32), %lu disagreements\n", bad);
    } else {
        uint64_t s = 0x9E3779B97F4A7C15ull;
        for (uint32_t i = 0; i < (1u << 24); i++) {
            s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
            bad += check_bits((uint32_t)((s * 0x2545F4914F6CDD1Dull) >> 32));
        }
    }
    assert_int_equal(bad, 0);
}

int main(int argc, char **argv)
{
    g_all = argc > 1 && strcmp(argv[1], "--all") == 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(boundaries),
        cmocka_unit_test(patterns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
