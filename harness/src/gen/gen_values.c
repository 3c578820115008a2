/* Generator building blocks: lengths, scale policies, and cache values that encode their
 * position, with tiles crafted to hold the fp8 edge bytes. Integer and IEEE arithmetic only
 * (no libm transcendental), so a seed gives the same bytes on every platform. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/numerics.h"
#include "gen_internal.h"

void *gen_calloc(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL) (void)attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "generator: out of memory for %s", what);
    return p;
}

void gen_wave_init(gen_wave *w, attest_rng *rng, uint32_t dims)
{
    w->dims = dims > GEN_MAX_DIM ? GEN_MAX_DIM : dims;
    for (uint32_t d = 0; d < w->dims; d++) {
        /* Steps of 0.02-0.25 period: no two neighbours alike, and no aliasing to a step near a
         * whole period (which would make j and j+1 look alike). */
        w->step[d] = (uint32_t)attest_rng_range(rng, 1300, 16384);
        w->phase[d] = (uint32_t)attest_rng_below(rng, 65536);
    }
}

/* Parabolic approximation of sin(2 pi x) for x = ph / 65536 in [0, 1): exact IEEE arithmetic,
 * and branch-free (random phases would defeat a branch predictor). A position's phase is
 * (step * key + phase) mod 2^16: the low 16 bits of a product and a sum depend only on the
 * low bits of their operands, so 32-bit arithmetic gives it (and vectorizes). */
static inline float wave_of(uint32_t ph)
{
    const float sign = 1.0f - (float)(ph >> 15) * 2.0f;     /* second half period: negative */
    const float y = (float)(ph & 0x7FFFu) * (1.0f / 65536.0f); /* [0, 0.5) */
    return sign * 16.0f * y * (0.5f - y);
}

/* Uniform in [-1, 1) from 32 random bits. */
static inline float noise_from_bits(uint32_t bits)
{
    return (float)(int32_t)bits * 0x1.0p-31f;
}

void gen_value_cfg_draw(gen_value_cfg *cfg, attest_rng *edges, int edge_bytes, int raw_scale)
{
    cfg->noise = 0.35f;
    /* Amplitudes differ per tile so a kernel reading the scale of the wrong tile or token is
     * off by a power of two, not by nothing. */
    cfg->tile_exp_lo = -2;
    cfg->tile_exp_hi = 2;
    cfg->extreme_rate = 0.0;
    cfg->extreme_lo = 0;
    cfg->extreme_hi = 0;
    cfg->edge_rate = 0.0;
    cfg->extreme_tiles = ~0u;
    cfg->extreme_salt = 0;
    cfg->extreme_key_rate = 1.0;
    if (!edge_bytes) return;
    static const double edge_rates[] = {0.0, 0.03, 0.15};
    cfg->edge_rate = edge_rates[attest_rng_below(edges, 3)];
    if (attest_rng_bernoulli(edges, 0.25)) {
        /* Extreme exponents, still finite in float32 through the references and kernels: a raw
         * fp32 writer clamps amax at 1e-4, so below 2^-13 it only writes zeros. */
        cfg->extreme_rate = attest_rng_bernoulli(edges, 0.5) ? 0.05 : 0.4;
        cfg->extreme_lo = raw_scale ? -12 : -100;
        cfg->extreme_hi = 40;
    }
}

/* Rewrites one tile of logical values so that every writer stores scale 2^e with
 * 448 * 2^e = the tile's amax: one element becomes +-448 * 2^e (fp8 +-448), one a subnormal
 * k * 2^-9 * 2^e, one a signed zero, maybe one the opposite-sign 448. All are exact in the fp8
 * grid at scale 2^e, so the truth equals the decoded cache there. */
static void craft_tile(float *tile, uint32_t n, attest_rng *edges)
{
    if (n < 4) return;
    float amax = 0.0f;
    for (uint32_t i = 0; i < n; i++) {
        float a = fabsf(tile[i]);
        if (a > amax) amax = a;
    }
    /* Smallest e with 448 * 2^e >= amax. e >= -13 keeps 2^e above FlashMLA's 1e-4 scale floor
     * (and a raw writer's 1e-4 amax floor), so every writer picks exactly 2^e. */
    int e = -13;
    if (amax > 0.0f) {
        int ex;
        (void)frexpf(amax, &ex); /* amax = m * 2^ex, m in [0.5, 1) */
        e = ex - 9;
        while (e > -13 && ldexpf(448.0f, e - 1) >= amax) e--;
        while (ldexpf(448.0f, e) < amax) e++;
        if (e < -13) e = -13;
    }
    uint32_t pos[4];
    for (uint32_t k = 0; k < 4; k++) {
        /* Four distinct slots of the tile. */
        for (;;) {
            uint32_t p = (uint32_t)attest_rng_below(edges, n);
            int dup = 0;
            for (uint32_t m = 0; m < k; m++) dup |= pos[m] == p;
            if (!dup) {
                pos[k] = p;
                break;
            }
        }
    }
    const float sign = attest_rng_bernoulli(edges, 0.5) ? -1.0f : 1.0f;
    tile[pos[0]] = sign * ldexpf(448.0f, e);
    tile[pos[1]] = (attest_rng_bernoulli(edges, 0.5) ? -1.0f : 1.0f) *
                   ldexpf((float)attest_rng_range(edges, 1, 7), e - 9);
    tile[pos[2]] = attest_rng_bernoulli(edges, 0.5) ? -0.0f : 0.0f;
    if (attest_rng_bernoulli(edges, 0.5)) tile[pos[3]] = -sign * ldexpf(448.0f, e);
}

/* 1 when token `key` is one of the few whose every tile may take an extreme exponent. */
static int extreme_key(const gen_value_cfg *cfg, int64_t key)
{
    if (cfg->extreme_key_rate >= 1.0) return 1;
    uint64_t h = cfg->extreme_salt ^ (uint64_t)key;
    return (double)(attest_splitmix64(&h) >> 11) * 0x1p-53 < cfg->extreme_key_rate;
}

int32_t gen_mix_heads(const attest_gen_options *opt, attest_rng *mix, int32_t heads, int32_t *b,
                      int32_t *rows)
{
    if (opt->production_shape || !opt->production_heads || !attest_rng_bernoulli(mix, 0.01))
        return heads;
    *b = 1;
    *rows = 1;
    return attest_rng_bernoulli(mix, 0.5) ? 64 : 128;
}

/* out[j] = amp * (0.8 * wave + noise * noise_from_bits(bits[j])) for n dims whose wave steps and
 * phases start at step, phase; in blocks of a fixed 16 that the compiler vectorizes at -O2 (it
 * needs a known count and no aliasing), then any rest. */
#define WAVE_BLOCK 16u
static void wave_values(float *restrict out, const uint32_t *restrict step,
                        const uint32_t *restrict phase, const uint32_t *restrict bits, uint32_t n,
                        uint32_t key, float amp, float noise)
{
    uint32_t j = 0;
    for (; j + WAVE_BLOCK <= n; j += WAVE_BLOCK)
        for (uint32_t k = j; k < j + WAVE_BLOCK; k++)
            out[k] = amp * (0.8f * wave_of((step[k] * key + phase[k]) & 0xFFFFu) +
                            noise * noise_from_bits(bits[k]));
    for (; j < n; j++)
        out[j] = amp * (0.8f * wave_of((step[j] * key + phase[j]) & 0xFFFFu) +
                        noise * noise_from_bits(bits[j]));
}

void gen_token_values(const attest_layout *layout, const gen_wave *w, const gen_value_cfg *cfg,
                      attest_rng *vals, attest_rng *edges, int64_t key, float *out)
{
    const uint32_t tile = layout->scale_tile;
    const int any_tile = cfg->extreme_rate > 0.0 && extreme_key(cfg, key);
    const float noise = cfg->noise; /* out may alias cfg for the compiler: read it once */
    for (uint32_t s = 0; s < layout->num_scales; s++) {
        int32_t u = (int32_t)attest_rng_range(vals, cfg->tile_exp_lo, cfg->tile_exp_hi);
        if (cfg->extreme_rate > 0.0 && (any_tile || ((cfg->extreme_tiles >> s) & 1u)) &&
            attest_rng_bernoulli(edges, cfg->extreme_rate))
            u = (int32_t)attest_rng_range(edges, cfg->extreme_lo, cfg->extreme_hi);
        /* A mantissa in [1, 2) spreads amax / scale over the whole fp8 range under a
         * power-of-two scale (with 2^u alone it would sit in a narrow band). */
        const float amp = ldexpf(1.0f + (float)(attest_rng_u32(vals) >> 8) * 0x1.0p-24f, u);
        const uint32_t d0 = s * tile;
        uint32_t d1 = d0 + tile;
        if (d1 > layout->fp8_dim) d1 = layout->fp8_dim;
        /* One 64-bit draw per two dims, low half first: drawn first (the generator's
         * sequential part), then the values as a loop over dims that vectorizes. */
        uint32_t halves[GEN_MAX_DIM + 1];
        for (uint32_t j = 0; j < d1 - d0; j += 2) {
            const uint64_t bits = attest_rng_u64_inline(vals);
            halves[j] = (uint32_t)bits;
            halves[j + 1] = (uint32_t)(bits >> 32);
        }
        wave_values(out + d0, w->step + d0, w->phase + d0, halves, d1 - d0, (uint32_t)key, amp,
                    noise);
        if (cfg->edge_rate > 0.0 && attest_rng_bernoulli(edges, cfg->edge_rate))
            craft_tile(out + d0, d1 - d0, edges);
    }
    /* The rope part is stored as bf16, unquantized: amplitude 1, same position encoding. */
    uint32_t high[GEN_MAX_DIM];
    const uint32_t rope = layout->rope_dim < GEN_MAX_DIM ? layout->rope_dim : GEN_MAX_DIM;
    for (uint32_t r = 0; r < rope; r++) high[r] = (uint32_t)(attest_rng_u64_inline(vals) >> 32);
    /* Amplitude 1: amp * x == x exactly, so the same helper computes these too. */
    wave_values(out + layout->fp8_dim, w->step + layout->fp8_dim, w->phase + layout->fp8_dim, high,
                rope, (uint32_t)key, 1.0f, noise);
}

int32_t gen_draw_len(attest_rng *rng, int32_t max_len, int32_t unit)
{
    if (max_len <= 0) return 0;
    if (unit < 1) unit = 1;
    static const double w[] = {
        7,  /* 0 */
        7,  /* 1 */
        30, /* a page boundary k*unit - 1, k*unit, k*unit + 1 */
        8,  /* the cap */
        8,  /* just under the cap */
        40  /* anything */
    };
    int32_t len;
    switch (attest_rng_choice(rng, w, sizeof w / sizeof w[0])) {
    case 0: len = 0; break;
    case 1: len = 1; break;
    case 2: {
        int32_t kmax = max_len / unit;
        if (kmax < 1) {
            len = max_len;
            break;
        }
        int64_t k = attest_rng_range(rng, 1, kmax);
        len = (int32_t)(k * unit + attest_rng_range(rng, -1, 1));
        break;
    }
    case 3: len = max_len; break;
    case 4: len = max_len - (int32_t)attest_rng_range(rng, 1, 3); break;
    default:
        /* Half short (within two pages), half anywhere: varlen batches with long tails. */
        if (attest_rng_bernoulli(rng, 0.5)) {
            int64_t short_cap = 2 * (int64_t)unit < max_len ? 2 * (int64_t)unit : max_len;
            len = (int32_t)attest_rng_range(rng, 2, short_cap);
        } else {
            len = (int32_t)attest_rng_range(rng, 2, max_len);
        }
        break;
    }
    if (len < 0) len = 0;
    if (len > max_len) len = max_len;
    return len;
}

attest_scale_policy gen_draw_policy(attest_rng *rng, const attest_layout *layout, double raw_prob)
{
    attest_scale_policy p;
    int raw = layout->scale_format == ATTEST_SCALE_F32 && attest_rng_bernoulli(rng, raw_prob);
    p.kind = raw ? ATTEST_SCALE_RAW : ATTEST_SCALE_POW2;
    p.writer = (attest_ue8m0_writer)attest_rng_below(rng, 3);
    if (raw) p.writer = ATTEST_UE8M0_FLASHMLA; /* unused for raw scales; pinned for equality */
    p.overflow = attest_rng_bernoulli(rng, 0.5) ? ATTEST_FP8_SATFINITE : ATTEST_FP8_NONSAT;
    return p;
}

uint8_t gen_edge_fp8(attest_rng *rng)
{
    const uint8_t sign = attest_rng_bernoulli(rng, 0.5) ? 0x80u : 0x00u;
    switch (attest_rng_below(rng, 3)) {
    case 0: return sign;                                             /* +-0 */
    case 1: return (uint8_t)(sign | attest_rng_range(rng, 1, 7));    /* subnormal */
    default: return (uint8_t)(sign | 0x7Eu);                          /* +-448 */
    }
}

uint8_t gen_nan_fp8(attest_rng *rng)
{
    return attest_rng_bernoulli(rng, 0.5) ? ATTEST_FP8_NAN_POS : ATTEST_FP8_NAN_NEG;
}

attest_status gen_info_alloc(attest_gen_info *info, attest_kernel kernel, int32_t b,
                             int32_t pages_per_req, int32_t extra_pages_per_req)
{
    memset(info, 0, sizeof *info);
    info->kernel = kernel;
    info->b = b;
    info->pages_per_req = pages_per_req;
    info->lens = gen_calloc((size_t)b, sizeof(int32_t), "info lengths");
    info->page_table = gen_calloc((size_t)b * pages_per_req, sizeof(int32_t), "info page table");
    if (extra_pages_per_req >= 0) {
        info->extra_pages_per_req = extra_pages_per_req;
        info->extra_lens = gen_calloc((size_t)b, sizeof(int32_t), "info extra lengths");
        info->extra_page_table =
            gen_calloc((size_t)b * extra_pages_per_req, sizeof(int32_t), "info extra table");
    }
    if (!info->lens || !info->page_table ||
        (extra_pages_per_req >= 0 && (!info->extra_lens || !info->extra_page_table))) {
        attest_gen_info_free(info);
        return ATTEST_ERR_OUT_OF_MEMORY;
    }
    return ATTEST_OK;
}

void attest_gen_info_free(attest_gen_info *info)
{
    if (info == NULL) return;
    free(info->lens);
    free(info->page_table);
    free(info->extra_lens);
    free(info->extra_page_table);
    memset(info, 0, sizeof *info);
}
