/* The comparator's speed and a digest of what it computes: attest_compare_tensor_bounded on
 * one 8 x 512 bf16 output against bounds (a small decode case's output, every element judged),
 * timed under each available ISA pin (portable compares element by element, the others take the
 * block fast path of judge/compare.c), then the metrics of 24,000 comparisons of random
 * tensors (both dtypes, bounds on and off, masks, NaN, infinities, zero references and bounds,
 * failing elements) hashed, so two trees' comparators can be told apart or not:
 *   build/bench/bench_compare [--reps N]
 * Uses only the public API, so the same file builds against an older tree's library. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest/compare.h"
#include "attest/isa.h"
#include "attest/numerics.h"

#define N 4096

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0; }

static uint64_t digest = 1469598103934665603ull; /* FNV-1a */
static void mix(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        digest ^= b[i];
        digest *= 1099511628211ull;
    }
}

static attest_tolerance tolerance(void)
{
    attest_tolerance t;
    memset(&t, 0, sizeof t);
    t.atol = 1e-5;
    t.rtol = 1e-3;
    t.cos_diff_max = 1e-5;
    t.nmse_max = 1e-4;
    t.max_code_distance = 2;
    t.vacuity_factor = 10;
    t.topk_min_recall = -1;
    t.bound_factor = 1.0;
    return t;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int reps = 20000;
    if (argc == 3 && strcmp(argv[1], "--reps") == 0) reps = atoi(argv[2]);
    if (reps < 1) {
        fprintf(stderr, "usage: bench_compare [--reps N]\n");
        return 2;
    }
    static double ref[N], bound[N];
    static uint16_t cb[N];
    static float cf[N];
    static uint8_t mask[N];
    attest_tolerance tol = tolerance();
    attest_tensor_metrics m;

    for (size_t i = 0; i < N; i++) {
        ref[i] = (unit() - 0.5) * 4;
        bound[i] = fabs(ref[i]) * 1e-3 + 1e-6;
        cb[i] = attest_bf16_encode_f64(ref[i] + (unit() - 0.5) * bound[i]);
    }
    const int64_t shape[2] = {8, 512};
    printf("isa       ns per element (%d comparisons of %d bf16 elements, bounds on)\n", reps, N);
    for (int isa = 0; isa < ATTEST_ISA_COUNT_; isa++) {
        if (!attest_isa_available((attest_isa)isa) || attest_isa_pin((attest_isa)isa) != ATTEST_OK)
            continue;
        const double t0 = now();
        for (int r = 0; r < reps; r++)
            if (attest_compare_tensor_bounded(ref, bound, cb, ATTEST_DTYPE_BF16, N, shape, 2, NULL,
                                              0x7FC1u, &tol, &m) != ATTEST_OK)
                return 1;
        printf("%-9s %.2f\n", attest_isa_name((attest_isa)isa), (now() - t0) * 1e9 / ((double)reps * N));
    }

    for (int trial = 0; trial < 3000; trial++) {
        const size_t n = 1 + next() % N;
        const int kind = trial % 7;
        for (size_t i = 0; i < n; i++) {
            double r = (unit() - 0.5) * ldexp(1.0, (int)(next() % 40) - 20);
            if (kind == 1 && next() % 50 == 0) r = (next() & 1) ? INFINITY : NAN;
            if (kind == 2 && next() % 20 == 0) r = 0;
            if (kind == 5 && next() % 10 == 0) r = -INFINITY;
            double b = fabs(r) * 1e-3 * unit();
            if (kind == 3 && next() % 30 == 0) b = (next() & 1) ? INFINITY : NAN;
            if (kind == 6 && next() % 3 == 0) b = 0;
            double c = r + (unit() - 0.5) * b * (kind == 4 ? 8 : 2.2);
            if (next() % 200 == 0) c = NAN;
            if (next() % 300 == 0) c = r;
            if (next() % 400 == 0) c = 0;
            ref[i] = r;
            bound[i] = b;
            cf[i] = (float)c;
            cb[i] = next() % 500 == 0 ? 0x7FC1 : attest_bf16_encode_f64(c);
            mask[i] = next() % 13 != 0;
        }
        for (int v = 0; v < 8; v++) {
            tol.bound_factor = (v & 1) ? -1.0 : ((v & 4) ? 0.0 : 1.5);
            tol.atol_ref_scale = (v & 2) ? 1e-4 : 0;
            const int f32 = (v & 4) != 0;
            const int64_t s2[2] = {1, (int64_t)n};
            memset(&m, 0, sizeof m);
            if (attest_compare_tensor_bounded(ref, (v & 2) && (trial & 1) ? NULL : bound,
                                              f32 ? (const void *)cf : (const void *)cb,
                                              f32 ? ATTEST_DTYPE_F32 : ATTEST_DTYPE_BF16, n, s2, 2,
                                              (trial & 2) ? mask : NULL,
                                              f32 ? 0x7FC0DEADu : 0x7FC1u, &tol, &m) != ATTEST_OK)
                return 1;
            mix(&m, sizeof m);
        }
    }
    printf("digest of 24000 comparisons' metrics: %016llx\n", (unsigned long long)digest);
    return 0;
}
