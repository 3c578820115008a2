/* attest: the deterministic pseudo-random generator behind every generated case.
 *
 * Generator: xoshiro256** 1.0 (D. Blackman and S. Vigna, "Scrambled linear pseudorandom number
 * generators", ACM TOMS 47(4), 2021; reference description at https://prng.di.unimi.it/), seeded
 * by splitmix64 (G. Steele, D. Lea, C. Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014), as the xoshiro authors recommend. Both are written here from those descriptions.
 *
 * Reproducibility is the point: a case is replayed from its seed on another machine, so every
 * helper except attest_rng_normal() uses only integer arithmetic and correctly rounded IEEE-754
 * operations (+ - * / and conversions), which give the same bits on every conforming platform.
 * attest_rng_normal() calls libm's log and cos, whose last bit may differ between libm builds;
 * code that fills case bytes uses attest_rng_normal_portable() instead.
 */
#ifndef ATTEST_RNG_H
#define ATTEST_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attest_rng {
    uint64_t s[4];       /* xoshiro256** state; never all zero */
    double spare;        /* second Box-Muller value, valid when has_spare */
    int has_spare;
} attest_rng;

/* Returns the next output of a splitmix64 generator whose state is *state, advancing it. */
uint64_t attest_splitmix64(uint64_t *state);

/* Seeds a generator from one 64-bit seed (four splitmix64 outputs fill the state). */
void attest_rng_seed(attest_rng *rng, uint64_t seed);

/* Seeds an independent stream `stream` of `seed`: streams of one seed do not overlap in
 * practice, so adding draws to one stream leaves the others unchanged. */
void attest_rng_seed_stream(attest_rng *rng, uint64_t seed, uint64_t stream);

/* Returns 64 uniformly random bits. */
uint64_t attest_rng_u64(attest_rng *rng);

/* The xoshiro256** step itself, attest_rng_u64's body, inline for loops that draw per element
 * (a call per draw costs as much as the draw). */
static inline uint64_t attest_rng_u64_inline(attest_rng *rng)
{
    uint64_t *s = rng->s;
    const uint64_t x = s[1] * 5;
    const uint64_t result = ((x << 7) | (x >> 57)) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

/* Returns 32 uniformly random bits (the high half of one 64-bit output). */
uint32_t attest_rng_u32(attest_rng *rng);

/* Returns an integer uniform in [0, n) without modulo bias (rejection of the short last bucket,
 * the method of OpenBSD's arc4random_uniform); n = 0 returns 0. */
uint64_t attest_rng_below(attest_rng *rng, uint64_t n);

/* Returns an integer uniform in [lo, hi] (inclusive; lo > hi returns lo). */
int64_t attest_rng_range(attest_rng *rng, int64_t lo, int64_t hi);

/* Returns a double uniform in [0, 1) with 53 random bits. */
double attest_rng_double01(attest_rng *rng);

/* Returns a float uniform in [a, b) (a when b <= a). */
float attest_rng_uniform(attest_rng *rng, float a, float b);

/* Returns a normal deviate (mean, stddev) by the Box-Muller transform. Uses libm log/cos: bit
 * identical only under the same libm. */
double attest_rng_normal(attest_rng *rng, double mean, double stddev);

/* Returns an approximately normal deviate (mean, stddev): the Irwin-Hall sum of four uniforms,
 * rescaled to unit variance (support +-3.46 stddev). Integer and IEEE arithmetic only, so the
 * same bits everywhere. */
double attest_rng_normal_portable(attest_rng *rng, double mean, double stddev);

/* Returns 1 with probability p (p <= 0 never, p >= 1 always), else 0. */
int attest_rng_bernoulli(attest_rng *rng, double p);

/* Shuffles n elements of `elem_size` bytes in place (Fisher-Yates, Durstenfeld's form). */
void attest_rng_shuffle(attest_rng *rng, void *base, size_t n, size_t elem_size);

/* Shuffles an int32 array in place (Fisher-Yates). */
void attest_rng_shuffle_i32(attest_rng *rng, int32_t *a, size_t n);

/* Returns index i with probability weights[i] / sum(weights). Negative or NaN weights count as
 * 0; if every weight is 0 it returns a uniform index. n = 0 returns 0. */
size_t attest_rng_choice(attest_rng *rng, const double *weights, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_RNG_H */
