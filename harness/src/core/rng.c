/* xoshiro256** seeded by splitmix64, and the sampling helpers built on it (see rng.h).
 *
 * Kept as written rather than taken from a library: a seed names a case in every results file,
 * repro and bug report, so these streams are pinned bit for bit (tests/test_rng.c); a library
 * free to change its generator or its sampling would silently change what every seed means. */
#include "attest/rng.h"

#include <math.h>
#include <string.h>

/* splitmix64: a Weyl sequence (golden-ratio increment) passed through a 64-bit finalizer. The
 * constants are those of the published algorithm. */
uint64_t attest_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void attest_rng_seed(attest_rng *rng, uint64_t seed)
{
    uint64_t sm = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = attest_splitmix64(&sm);
    /* splitmix64 is a bijection of its counter, so four consecutive outputs are never all zero;
     * the guard keeps the invariant explicit should the seeding ever change. */
    if ((rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]) == 0) rng->s[0] = 1;
    rng->spare = 0.0;
    rng->has_spare = 0;
}

void attest_rng_seed_stream(attest_rng *rng, uint64_t seed, uint64_t stream)
{
    /* Mixing the stream number through splitmix64 before combining keeps nearby (seed, stream)
     * pairs from producing nearby seeds. */
    uint64_t t = stream;
    attest_rng_seed(rng, seed ^ attest_splitmix64(&t));
}

uint64_t attest_rng_u64(attest_rng *rng) { return attest_rng_u64_inline(rng); }

uint32_t attest_rng_u32(attest_rng *rng)
{
    return (uint32_t)(attest_rng_u64(rng) >> 32);
}

uint64_t attest_rng_below(attest_rng *rng, uint64_t n)
{
    if (n <= 1) return 0;
    /* 2^64 mod n values at the bottom of the range would make the lower residues more likely;
     * drawing again when x falls there leaves exactly floor(2^64 / n) values per residue. */
    const uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = attest_rng_u64(rng);
        if (x >= threshold) return x % n;
    }
}

int64_t attest_rng_range(attest_rng *rng, int64_t lo, int64_t hi)
{
    if (hi <= lo) return lo;
    uint64_t span = (uint64_t)hi - (uint64_t)lo; /* may be 2^64 - 1 */
    uint64_t off = span == UINT64_MAX ? attest_rng_u64(rng) : attest_rng_below(rng, span + 1);
    return (int64_t)((uint64_t)lo + off);
}

double attest_rng_double01(attest_rng *rng)
{
    return (double)(attest_rng_u64(rng) >> 11) * 0x1.0p-53;
}

float attest_rng_uniform(attest_rng *rng, float a, float b)
{
    if (!(b > a)) return a;
    float x = (float)((double)a + ((double)b - (double)a) * attest_rng_double01(rng));
    /* Rounding to float can land exactly on b; the interval is half-open. */
    if (x >= b) x = nextafterf(b, a);
    if (x < a) x = a;
    return x;
}

double attest_rng_normal(attest_rng *rng, double mean, double stddev)
{
    if (rng->has_spare) {
        rng->has_spare = 0;
        return mean + stddev * rng->spare;
    }
    /* u1 in (0, 1] so log(u1) is finite. */
    const double u1 = 1.0 - attest_rng_double01(rng);
    const double u2 = attest_rng_double01(rng);
    const double r = sqrt(-2.0 * log(u1));
    const double two_pi = 6.283185307179586476925286766559;
    rng->spare = r * sin(two_pi * u2);
    rng->has_spare = 1;
    return mean + stddev * r * cos(two_pi * u2);
}

double attest_rng_normal_portable(attest_rng *rng, double mean, double stddev)
{
    /* Sum of four U(0,1): mean 2, variance 4/12; scale by sqrt(3) for unit variance. */
    double s = 0.0;
    for (int i = 0; i < 4; i++) s += attest_rng_double01(rng);
    return mean + stddev * (s - 2.0) * 1.7320508075688772935;
}

int attest_rng_bernoulli(attest_rng *rng, double p)
{
    if (!(p > 0.0)) return 0;
    if (p >= 1.0) return 1;
    return attest_rng_double01(rng) < p;
}

void attest_rng_shuffle(attest_rng *rng, void *base, size_t n, size_t elem_size)
{
    unsigned char *a = base;
    unsigned char tmp[64];
    if (n < 2 || elem_size == 0) return;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)attest_rng_below(rng, (uint64_t)i + 1);
        if (j == i) continue;
        /* Swap in chunks so any element size works without allocation. */
        for (size_t off = 0; off < elem_size; off += sizeof tmp) {
            size_t len = elem_size - off < sizeof tmp ? elem_size - off : sizeof tmp;
            memcpy(tmp, a + i * elem_size + off, len);
            memcpy(a + i * elem_size + off, a + j * elem_size + off, len);
            memcpy(a + j * elem_size + off, tmp, len);
        }
    }
}

void attest_rng_shuffle_i32(attest_rng *rng, int32_t *a, size_t n)
{
    if (n < 2) return;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)attest_rng_below(rng, (uint64_t)i + 1);
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

size_t attest_rng_choice(attest_rng *rng, const double *weights, size_t n)
{
    if (n == 0) return 0;
    double total = 0.0;
    size_t last_positive = n;
    for (size_t i = 0; i < n; i++) {
        if (weights[i] > 0.0) {
            total += weights[i];
            last_positive = i;
        }
    }
    if (!(total > 0.0) || last_positive == n) return (size_t)attest_rng_below(rng, n);
    const double u = attest_rng_double01(rng) * total;
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!(weights[i] > 0.0)) continue;
        acc += weights[i];
        if (u < acc) return i;
    }
    /* u * total rounded up past the running sum: the last positive weight owns the remainder. */
    return last_positive;
}
