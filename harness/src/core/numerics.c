/* Bit-exact fp8 e4m3fn, UE8M0 and bf16 conversions (docs/kernels.md section 1).
 *
 * Every encoder works on the integer bit pattern of its input, so the result never depends on
 * the FPU rounding mode, on x87 excess precision or on libm. Decoders are exact by construction.
 * Pinned against ml_dtypes by tests/py/check_numerics.py (all patterns, >= 10^6 random inputs).
 * Kept as written rather than taken from a library: a library's conversion would have to match
 * these bit for bit on NaN, saturation and subnormals under every rounding mode, and a plugin links
 * these codecs into itself (attest::codec), so they stay small and dependency-free.
 */
#include "attest/numerics.h"

#include <math.h>
#include <string.h>

uint32_t attest_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

float attest_f32_from_bits(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static uint64_t f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double f64_from_bits(uint64_t bits)
{
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* Round-to-nearest-even of `value >> shift` (shift in [1, 63]). */
static uint64_t shift_rne(uint64_t value, unsigned shift)
{
    uint64_t q = value >> shift;
    uint64_t rem = value & ((UINT64_C(1) << shift) - 1u);
    uint64_t half = UINT64_C(1) << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return q;
}

/* fp8 e4m3fn ------------------------------------------------------------------------------- */

/* The decode table is a constant expression: byte S EEEE MMM is (8+M) * 2^E / 1024 for E > 0
 * and M / 512 for E = 0 (subnormals, k * 2^-9); both forms are exact in float. Building it at
 * compile time keeps the decoder a single load with no initialization order to get wrong. */
#define ATTEST_FP8_MAG_(b)                                                                         \
    ((((b) >> 3) & 15u) == 0u ? (float)((b) & 7u) / 512.0f                                       \
                              : (float)((8u + ((b) & 7u)) << (((b) >> 3) & 15u)) / 1024.0f)
#define ATTEST_FP8_VAL_(b)                                                                         \
    (((b) & 0x7Fu) == 0x7Fu ? (((b) & 0x80u) ? -NAN : NAN)                                        \
                            : (((b) & 0x80u) ? -ATTEST_FP8_MAG_(b) : ATTEST_FP8_MAG_(b)))
#define ATTEST_FP8_R4_(b)                                                                          \
    ATTEST_FP8_VAL_(b), ATTEST_FP8_VAL_((b) + 1u), ATTEST_FP8_VAL_((b) + 2u),                     \
        ATTEST_FP8_VAL_((b) + 3u)
#define ATTEST_FP8_R16_(b)                                                                         \
    ATTEST_FP8_R4_(b), ATTEST_FP8_R4_((b) + 4u), ATTEST_FP8_R4_((b) + 8u), ATTEST_FP8_R4_((b) + 12u)
#define ATTEST_FP8_R64_(b)                                                                         \
    ATTEST_FP8_R16_(b), ATTEST_FP8_R16_((b) + 16u), ATTEST_FP8_R16_((b) + 32u),                   \
        ATTEST_FP8_R16_((b) + 48u)

const float attest_fp8_values[256] = {ATTEST_FP8_R64_(0u), ATTEST_FP8_R64_(64u),
                                      ATTEST_FP8_R64_(128u), ATTEST_FP8_R64_(192u)};

float attest_fp8_decode(uint8_t bits) { return attest_fp8_values[bits]; }

uint8_t attest_fp8_encode(float x, attest_fp8_overflow overflow)
{
    uint32_t u = attest_f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint8_t)(sign | ATTEST_FP8_NAN_POS); /* NaN keeps its sign */
    uint8_t overflowed = overflow == ATTEST_FP8_SATFINITE ? (uint8_t)(sign | 0x7Eu)
                                                          : (uint8_t)(sign | ATTEST_FP8_NAN_POS);
    if (a == 0x7F800000u) return overflowed;
    if (a >= 0x3C800000u) {
        /* |x| >= 2^-6, normal in e4m3fn: exponent and mantissa bits are contiguous in both
         * formats, so rebias the top bits and let the rounding carry ripple into the exponent.
         * Code 0x7F after rounding means |x| > 464 (464 itself ties to even 0x7E = 448). */
        uint32_t code = (uint32_t)shift_rne(a, 20) - ((127u - 7u) << 3);
        if (code > 0x7Eu) return overflowed;
        return (uint8_t)(sign | code);
    }
    /* Subnormal range: count units of 2^-9. A float with exponent e holds sig * 2^(e-23), i.e.
     * sig >> (14 - e) units; shifts beyond 24 leave less than half a unit, which rounds to 0.
     * A result of 8 is the smallest normal 0x08, whose code follows 0x07 directly. */
    uint32_t biased = a >> 23;
    if (biased == 0u) return sign; /* float subnormals are far below 2^-10 */
    unsigned shift = 14u + 127u - biased;
    if (shift > 24u) return sign;
    uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
    return (uint8_t)(sign | (uint8_t)shift_rne(sig, shift));
}

/* UE8M0 ------------------------------------------------------------------------------------ */

float attest_ue8m0_decode(uint8_t bits)
{
    if (bits == ATTEST_UE8M0_NAN) return NAN;
    if (bits == 0u) return attest_f32_from_bits(0x00400000u); /* 2^-127, a float subnormal */
    return attest_f32_from_bits((uint32_t)bits << 23);
}

double attest_ue8m0_decode_f64(uint8_t bits)
{
    if (bits == ATTEST_UE8M0_NAN) return NAN;
    return f64_from_bits((uint64_t)(bits - 127 + 1023) << 52);
}

uint8_t attest_ue8m0_encode_ceil(float scale)
{
    /* ceil(log2(x)) + 127 is the exponent field plus one when any mantissa bit is set. This is
     * the bit formula of DeepGEMM's ceil_to_ue8m0 (deep_gemm/utils/math.py) and of the
     * fast_log2_ceil helpers in DeepSeek's inference kernels. FlashMLA's tests/quant.py computes
     * torch.pow(2, log2(s).ceil()) in float32 instead, which agrees except within one float32
     * ulp of log2 above a power of two; the exact ceil is the rule the spec names. */
    uint32_t u = attest_f32_bits(scale);
    if ((u & 0x7F800000u) == 0x7F800000u) return ATTEST_UE8M0_NAN; /* NaN or inf, any sign */
    if ((u >> 31) || u == 0u) return 0x00u;                         /* scale <= 0 */
    uint32_t field = u >> 23;
    uint32_t mant = u & 0x7FFFFFu;
    if (field == 0u) return mant > 0x400000u ? 0x01u : 0x00u; /* float subnormal: vs 2^-127 */
    uint32_t byte = field + (mant != 0u);
    return byte > 254u ? ATTEST_UE8M0_NAN : (uint8_t)byte; /* above 2^127: NaN, no inf */
}

uint8_t attest_ue8m0_scale_for_amax(float amax, attest_ue8m0_writer writer)
{
    /* All three divide in float32 (torch float32 tensors). A NaN amax propagates like torch's
     * clamp, which is why the clamps are written as comparisons and not fmaxf. */
    switch (writer) {
    case ATTEST_UE8M0_FLASHMLA: {
        /* FlashMLA tests/quant.py: _cast_scale_inv_to_ue8m0(amax / 448.0), which is
         * torch.pow(2, torch.clamp_min(s, 1e-4).log2().ceil()). */
        float s = amax / 448.0f;
        if (s < 1e-4f) s = 1e-4f;
        return attest_ue8m0_encode_ceil(s);
    }
    case ATTEST_UE8M0_SGLANG: {
        /* sglang's DeepSeek-V4 cache writer clamps amax (not the scale) at 1e-8 before the
         * division (docs/kernels.md section 1). Its V3.2 writer, nsa/quant_k_cache.py, stored raw
         * amax/448 with no clamp at all; that is ATTEST_SCALE_RAW, not this rule. */
        float m = amax < 1e-8f ? 1e-8f : amax;
        return attest_ue8m0_encode_ceil(m / 448.0f);
    }
    case ATTEST_UE8M0_DEEPGEMM: {
        /* DeepGEMM deep_gemm/utils/math.py ceil_to_ue8m0: exponent field + (mantissa != 0),
         * clamped to [1, 254]; so zero gives 0x01 and NaN/inf give 0xFE, never 0xFF. Its cast
         * helpers (per_token_cast_to_fp8 ...) also clamp amax at 1e-4 before dividing; this
         * rule is the bare ceil_to_ue8m0, as docs/kernels.md section 1 names it. */
        uint8_t b = attest_ue8m0_encode_ceil(fabsf(amax) / 448.0f); /* it takes x.abs() */
        if (b < 1u) b = 1u;
        if (b > 254u) b = 254u;
        return b;
    }
    }
    return ATTEST_UE8M0_NAN; /* unknown writer: a NaN scale poisons whatever uses it */
}

const char *attest_ue8m0_writer_name(attest_ue8m0_writer writer)
{
    switch (writer) {
    case ATTEST_UE8M0_FLASHMLA: return "flashmla";
    case ATTEST_UE8M0_SGLANG: return "sglang";
    case ATTEST_UE8M0_DEEPGEMM: return "deepgemm";
    }
    return NULL;
}

/* bf16 ------------------------------------------------------------------------------------- */

float attest_bf16_decode(uint16_t bits) { return attest_f32_from_bits((uint32_t)bits << 16); }

uint16_t attest_bf16_encode(float x)
{
    uint32_t u = attest_f32_bits(x);
    /* NaN: the canonical quiet NaN with the input's sign, as ml_dtypes gives (the payload is
     * not kept: truncating it could otherwise turn a NaN into inf). */
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7FC0u);
    /* Contiguous exponent|mantissa: rounding the low 16 bits may carry into the exponent, and
     * a carry out of the largest finite gives exactly inf, as RNE requires. */
    return (uint16_t)shift_rne(u, 16);
}

uint16_t attest_bf16_encode_f64(double x)
{
    uint64_t u = f64_bits(x);
    uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    uint64_t a = u & UINT64_C(0x7FFFFFFFFFFFFFFF);
    if (a > UINT64_C(0x7FF0000000000000)) return (uint16_t)(sign | 0x7FC0u);
    if (a == UINT64_C(0x7FF0000000000000)) return (uint16_t)(sign | 0x7F80u);
    uint64_t field = a >> 52;
    if (field >= 1023u - 126u) {
        /* At or above 2^-126, bf16's smallest normal: rebias the top 16 bits of the double's
         * exponent|mantissa (11 + 52 bits) to bf16's (8 + 7) and round once. */
        if (field > 1023u + 128u) return (uint16_t)(sign | 0x7F80u);
        uint64_t code = shift_rne(a, 45) - ((uint64_t)(1023u - 127u) << 7);
        if (code >= 0x7F80u) return (uint16_t)(sign | 0x7F80u);
        return (uint16_t)(sign | code);
    }
    /* bf16 subnormals: units of 2^-133. sig * 2^(e-52) holds sig >> (52 - e - 133) units;
     * beyond a shift of 53 less than half a unit remains. A result of 0x80 is the smallest
     * normal, whose code follows 0x7F directly. Double subnormals round to zero. */
    if (field == 0u) return sign;
    unsigned shift = (unsigned)(52 + 1023 - 133 - (int)field);
    if (shift > 53u) return sign;
    uint64_t sig = (a & UINT64_C(0xFFFFFFFFFFFFF)) | (UINT64_C(1) << 52);
    return (uint16_t)(sign | shift_rne(sig, shift));
}
