/* Shared pieces of the case generator: random streams, lengths, position-encoding cache values
 * and edge bytes. Internal to the gen module (harness/src/gen/). */
#ifndef ATTEST_GEN_INTERNAL_H
#define ATTEST_GEN_INTERNAL_H

#include <stdint.h>

#include "attest/case.h"
#include "attest/generator.h"
#include "attest/layout.h"
#include "attest/rng.h"

/* Independent random streams of one case seed. Each purpose draws from its own stream so that
 * a change in one (e.g. edge_bytes off, or a new draw added to the values) leaves the shapes and
 * the other tensors of every seed unchanged. Values are pinned: they define what a seed means. */
enum {
    GEN_STREAM_SHAPE = 1,   /* parameters, lengths, page tables */
    GEN_STREAM_VALUES = 2,  /* cache values (main scope) */
    GEN_STREAM_QUERY = 3,   /* q, weights, sinks */
    GEN_STREAM_INDICES = 4, /* top-k lists and topk_length (main scope) */
    GEN_STREAM_EDGES = 5,   /* which edge bytes, extreme scales and NaNs go where */
    GEN_STREAM_EXTRA = 6,   /* extra scope: values */
    GEN_STREAM_EXTRA_IDX = 7, /* extra scope: indices */
    /* Draws added after the streams above were pinned (issue 10: production head counts, block
     * table entries past a request's blocks, where extreme exponents go), from a stream of their
     * own so that the older draws of every seed stay what they were wherever the new ones do not
     * change the case on purpose. */
    GEN_STREAM_MIX = 8,
    GEN_STREAM_HIGH_POOL = 9 /* whether and where a case's pools move past 2^31 (gen_spread.c) */
};

/* Moves the case's pool (and, half the time, an mla extra scope's) to a pool of millions of
 * pages held sparsely, past 2^31 or 2^32 bytes; indices, block tables and info's page tables
 * follow (gen_spread.c). The case is unchanged when its pool cannot reach the boundary. */
attest_status gen_spread_pools(attest_case *c, attest_rng *r, attest_gen_info *info);

/* Draws whether a case takes a production head count (64 or 128, about 1% of cases) from the
 * mix stream; returns it, or `heads` unchanged. Such a case has one request of one query row
 * (*b and *rows become 1), so that it costs a few ordinary cases, not fifty. */
int32_t gen_mix_heads(const attest_gen_options *opt, attest_rng *mix, int32_t heads, int32_t *b,
                      int32_t *rows);

/* The most pages (blocks) a generated pool may have: case.c's bound on pool units. */
#define GEN_MAX_POOL_UNITS (1 << 24)

/* The largest token width any layout has (mla-v32: 576); sizes the per-dim wave tables. */
#define GEN_MAX_DIM 576

/* A smooth function of (position, dim): a per-dim phase advancing by a per-dim step per
 * position, through a parabolic sine. Neighbouring positions differ by 2-30% of a period in
 * every dim, so a read of position j +- 1, of another page or another request shows. */
typedef struct gen_wave {
    uint32_t dims;
    uint32_t step[GEN_MAX_DIM];  /* phase step per position, in 1/65536 of a period */
    uint32_t phase[GEN_MAX_DIM];
} gen_wave;

void gen_wave_init(gen_wave *w, attest_rng *rng, uint32_t dims);

/* How a case's token values are drawn (see gen_token_values). */
typedef struct gen_value_cfg {
    float noise;            /* per-element uniform noise, relative to the tile amplitude */
    int32_t tile_exp_lo;    /* each tile's amplitude is 2^u, u uniform in [lo, hi] ... */
    int32_t tile_exp_hi;
    double extreme_rate;    /* ... or, with this probability, u in [extreme_lo, extreme_hi] */
    int32_t extreme_lo;
    int32_t extreme_hi;
    double edge_rate;       /* probability that a tile is crafted to hold +-448, a subnormal
                               and a signed zero as fp8 bytes (see gen_craft_tile) */
    /* Where extreme exponents may go (gen_mla_case narrows it; all of it otherwise): a tile s
     * of every token when bit s of extreme_tiles is set, any tile of the few tokens whose key
     * hashes (with extreme_salt) below extreme_key_rate. */
    uint32_t extreme_tiles;
    uint64_t extreme_salt;
    double extreme_key_rate;
} gen_value_cfg;

/* Draws the edge-related part of a value config for one case from the edges stream (all rates
 * 0 when edge_bytes is 0). `raw_scale` selects exponent ranges a raw fp32 writer can represent. */
void gen_value_cfg_draw(gen_value_cfg *cfg, attest_rng *edges, int edge_bytes, int raw_scale);

/* Fills the logical values of one token (layout->k_dim floats: fp8 part then rope part).
 * `key` identifies the token's logical position (request and position); the smooth part comes
 * from the wave at `key`, the noise and amplitudes from `vals`, edge choices from `edges`. */
void gen_token_values(const attest_layout *layout, const gen_wave *w, const gen_value_cfg *cfg,
                      attest_rng *vals, attest_rng *edges, int64_t key, float *out);

/* Draws a sequence length in [0, max_len]: 0, 1, multiples of `unit` +-1, the cap, and a spread
 * of the rest. */
int32_t gen_draw_len(attest_rng *rng, int32_t max_len, int32_t unit);

/* Draws a scale policy for a layout: raw fp32 (only where the layout stores fp32) with
 * probability raw_prob, else power of two by a random writer; random fp8 overflow rule. */
attest_scale_policy gen_draw_policy(attest_rng *rng, const attest_layout *layout, double raw_prob);

/* Returns a random fp8 edge byte: +-0, a subnormal (+-1..7 * 2^-9) or +-448. */
uint8_t gen_edge_fp8(attest_rng *rng);

/* Returns a NaN fp8 code, 0x7F or 0xFF. */
uint8_t gen_nan_fp8(attest_rng *rng);

/* Allocation helpers that record a one-line error. */
void *gen_calloc(size_t n, size_t size, const char *what);

/* Allocates info's arrays for b requests (extra arrays only when extra_pages_per_req >= 0);
 * page tables start at -1. */
attest_status gen_info_alloc(attest_gen_info *info, attest_kernel kernel, int32_t b,
                             int32_t pages_per_req, int32_t extra_pages_per_req);

/* Per-family generators (gen_indexer.c, gen_mla.c). `info` may be NULL. */
attest_status gen_indexer_case(const attest_gen_options *opt, uint64_t seed, attest_case *c,
                               attest_gen_info *info);
attest_status gen_mla_case(const attest_gen_options *opt, uint64_t seed, attest_case *c,
                           attest_gen_info *info);

#endif /* ATTEST_GEN_INTERNAL_H */
