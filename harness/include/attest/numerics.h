/* attest: bit-exact number formats (fp8 e4m3fn, UE8M0, bf16). See docs/kernels.md section 1.
 *
 * Every function is pure and total: any input bit pattern or float (NaN, inf, -0) has a defined
 * result, pinned by tests against ml_dtypes.
 */
#ifndef ATTEST_NUMERICS_H
#define ATTEST_NUMERICS_H

#include <float.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fp8 e4m3fn ------------------------------------------------------------------------------- */

#define ATTEST_FP8_NAN_POS 0x7Fu  /* the two NaN codes; 0xFF is also the harness's poison byte */
#define ATTEST_FP8_NAN_NEG 0xFFu
#define ATTEST_FP8_MAX 448.0f

/* How float -> e4m3fn treats values beyond the largest finite. */
typedef enum attest_fp8_overflow {
    ATTEST_FP8_NONSAT = 0,  /* PyTorch / ml_dtypes: |x| > 464 (and inf) -> NaN with sign kept */
    ATTEST_FP8_SATFINITE = 1 /* CUDA __NV_SATFINITE: overflow and inf -> +-448, NaN stays NaN */
} attest_fp8_overflow;

/* Returns the float value of an e4m3fn byte (exact; 0x7F/0xFF give NaN). */
float attest_fp8_decode(uint8_t bits);

/* The table attest_fp8_decode reads, for loops that decode many bytes (a call per byte costs
 * more than the lookup): attest_fp8_values[b] == attest_fp8_decode(b). */
extern const float attest_fp8_values[256];

/* Returns the e4m3fn byte nearest to x, ties to even, with the given overflow rule. */
uint8_t attest_fp8_encode(float x, attest_fp8_overflow overflow);

/* UE8M0 (float8_e8m0fnu) ------------------------------------------------------------------- */

#define ATTEST_UE8M0_NAN 0xFFu

/* Returns 2^(bits-127) as a float, exactly as ml_dtypes does; 0xFF gives NaN. Only 0x00 falls
 * below float's normal range: 2^-127 is returned as the float subnormal 0x00400000. */
float attest_ue8m0_decode(uint8_t bits);

/* Returns 2^(bits-127) exactly in double (0xFF gives NaN). */
double attest_ue8m0_decode_f64(uint8_t bits);

/* Which public writer's clamp rule to apply when turning a tile's amax into a UE8M0 scale. */
typedef enum attest_ue8m0_writer {
    ATTEST_UE8M0_FLASHMLA = 0, /* scale = max(amax/448, 1e-4), then ceil to a power of two */
    ATTEST_UE8M0_SGLANG = 1,   /* scale = max(amax, 1e-8)/448, then ceil to a power of two */
    ATTEST_UE8M0_DEEPGEMM = 2  /* scale = amax/448 ceiled to a power of two, byte clamped to [1, 254]
                                  (ceil_to_ue8m0: zero gives 0x01, NaN and inf give 0xFE) */
} attest_ue8m0_writer;

/* Returns the UE8M0 byte of `scale` rounded UP to a power of two (ceil of log2), no clamp.
 * scale <= 0 or below 2^-127 gives 0x00; NaN, inf or above 2^127 gives 0xFF. */
uint8_t attest_ue8m0_encode_ceil(float scale);

/* Returns the UE8M0 scale byte a given writer stores for a tile whose max |value| is amax. */
uint8_t attest_ue8m0_scale_for_amax(float amax, attest_ue8m0_writer writer);

/* Returns the writer's name ("flashmla", "sglang", "deepgemm") or NULL when out of range. */
const char *attest_ue8m0_writer_name(attest_ue8m0_writer writer);

/* bf16 ------------------------------------------------------------------------------------- */

/* Returns the float value of a bf16 bit pattern (exact). */
float attest_bf16_decode(uint16_t bits);

/* Returns the bf16 nearest to x, ties to even; NaN gives the quiet NaN 0x7FC0 with x's sign
 * (as ml_dtypes; the payload is dropped). */
uint16_t attest_bf16_encode(float x);

/* Returns the bf16 nearest to a double (rounded once, from double, ties to even; not through
 * float, which would round twice: ml_dtypes' float64 -> bfloat16 does that). */
uint16_t attest_bf16_encode_f64(double x);

/* Float bit helpers ------------------------------------------------------------------------ */

uint32_t attest_f32_bits(float x);
float attest_f32_from_bits(uint32_t bits);

/* Inline encoders for hot loops ----------------------------------------------------------- */

/* The same functions as attest_fp8_encode and attest_bf16_encode, bit for bit on every float
 * (tests/test_numerics_inline.c checks every float32 bit pattern), written without branches so
 * they inline into the cache writer's loops: the out-of-line encoders keep the readable case
 * analysis, these trade it for selects. Unlike the out-of-line encoders, the fp8 one relies on
 * the default rounding mode (round to nearest even). Round-to-nearest-even of v >> s is
 * (v + 2^(s-1) - 1 + ((v >> s) & 1)) >> s: the odd bit breaks exact ties upward. */
static inline uint8_t attest_fp8_encode_inline(float x, attest_fp8_overflow overflow)
{
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
    /* float arithmetic evaluated wider (x87): the rounding trick below would round twice */
    return attest_fp8_encode(x, overflow);
#endif
    union { float f; uint32_t u; } in = {x};
    const uint32_t u = in.u;
    const uint32_t sign = (u >> 24) & 0x80u;
    const uint32_t a = u & 0x7FFFFFFFu;
    /* |x| >= 2^-6: rebias the exponent|mantissa bits (a carry ripples into the exponent). */
    const uint32_t normal = ((a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20) - ((127u - 7u) << 3);
    /* |x| < 2^-6: the code is |x| in units of 2^-9, rounded to the nearest integer. |x| * 2^9
     * is exact (a power of two), and adding 2^23 rounds it to an integer in the float unit, ties
     * to even: the default rounding mode, the one the float32 products feeding the writer use
     * too. No variable shift, so the writer's loops vectorize on any x86-64. Garbage for larger
     * |x|, where the select below does not take it. */
    union { float f; uint32_t u; } mag = {.u = a};
    union { float f; uint32_t u; } rounded = {.f = mag.f * 512.0f + 8388608.0f};
    const uint32_t sub = rounded.u - 0x4B000000u;
    /* Selects as masks (all ones or zero): compilers keep them branch-free, where a ternary
     * on random data may become a mispredicted branch. */
    const uint32_t is_normal = 0u - (uint32_t)(a >= 0x3C800000u);
    uint32_t code = (normal & is_normal) | (sub & ~is_normal);
    const uint32_t over = overflow == ATTEST_FP8_SATFINITE ? 0x7Eu : 0x7Fu;
    const uint32_t overflowed = 0u - (uint32_t)(code > 0x7Eu); /* |x| > 464 and inf */
    code = (over & overflowed) | (code & ~overflowed);
    code |= 0x7Fu & (0u - (uint32_t)(a > 0x7F800000u));        /* NaN keeps its sign */
    return (uint8_t)(sign | code);
}

static inline uint16_t attest_bf16_encode_inline(float x)
{
    union { float f; uint32_t u; } in = {x};
    const uint32_t u = in.u;
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = ((u >> 16) & 0x8000u) | 0x7FC0u;
    const uint32_t is_nan = 0u - (uint32_t)((u & 0x7FFFFFFFu) > 0x7F800000u);
    return (uint16_t)((nan & is_nan) | (rounded & ~is_nan));
}

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_NUMERICS_H */
