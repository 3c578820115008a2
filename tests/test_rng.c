/* Tests of the deterministic PRNG: published known-answer vectors, pinned case seeds, and the
 * distribution of every sampling helper. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attest/generator.h"
#include "attest/rng.h"

/* splitmix64 seeded with 1234567: the first outputs published with the algorithm's reference
 * code (prng.di.unimi.it, splitmix64.c) and used by many ports as a known answer. */
static void splitmix64_known_answer(void **state)
{
    (void)state;
    const uint64_t expect[] = {6457827717110365317ull, 3203168211198807973ull,
                               9817491932198370423ull, 4593380528125082431ull,
                               16408922859458223821ull};
    uint64_t s = 1234567;
    for (size_t i = 0; i < 5; i++) assert_true(attest_splitmix64(&s) == expect[i]);
}

/* xoshiro256** from state {1, 2, 3, 4}: the vector of the reference implementation (the first
 * output, rotl(2 * 5, 7) * 9 = 11520, is checkable by hand). */
static void xoshiro_known_answer(void **state)
{
    (void)state;
    const uint64_t expect[] = {11520ull, 0ull, 1509978240ull, 1215971899390074240ull,
                               1216172134540287360ull, 607988272756665600ull,
                               16172922978634559625ull, 8476171486693032832ull,
                               10595114339597558777ull, 2904607092377533576ull};
    attest_rng r;
    attest_rng_seed(&r, 0);
    r.s[0] = 1;
    r.s[1] = 2;
    r.s[2] = 3;
    r.s[3] = 4;
    for (size_t i = 0; i < 10; i++) assert_true(attest_rng_u64(&r) == expect[i]);
}

/* Case seeds are output i+1 of splitmix64 seeded with the campaign seed (values computed with
 * an independent Python implementation): pinned, since every campaign's cases depend on them. */
static void case_seed_pinned(void **state)
{
    (void)state;
    assert_true(attest_case_seed(1, 0) == 10451216379200822465ull);
    assert_true(attest_case_seed(1, 1) == 13757245211066428519ull);
    assert_true(attest_case_seed(42, 7) == 14769051326987775908ull);
    assert_true(attest_case_seed(0, 0) == 16294208416658607535ull);
    /* The splitmix64 stream seeded with 1234567, read by index. */
    assert_true(attest_case_seed(1234567, 2) == 9817491932198370423ull);
}

/* The same seed gives the same stream; other seeds and other streams do not. */
static void seeding_is_deterministic(void **state)
{
    (void)state;
    attest_rng a, b, c, d;
    attest_rng_seed(&a, 99);
    attest_rng_seed(&b, 99);
    attest_rng_seed(&c, 100);
    attest_rng_seed_stream(&d, 99, 1);
    int diff_c = 0, diff_d = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = attest_rng_u64(&a);
        assert_true(x == attest_rng_u64(&b));
        diff_c += x != attest_rng_u64(&c);
        diff_d += x != attest_rng_u64(&d);
    }
    assert_true(diff_c > 95 && diff_d > 95);
}

/* below(n) is uniform over [0, n), including an n whose bucket of 2^64 is uneven. */
static void below_is_uniform(void **state)
{
    (void)state;
    attest_rng r;
    attest_rng_seed(&r, 7);
    enum { N = 7, DRAWS = 70000 };
    int count[N] = {0};
    for (int i = 0; i < DRAWS; i++) {
        uint64_t x = attest_rng_below(&r, N);
        assert_true(x < N);
        count[x]++;
    }
    /* Each count is binomial(70000, 1/7): mean 10000, sd ~92; 6 sd is a loose bound. */
    for (int i = 0; i < N; i++) assert_true(abs(count[i] - DRAWS / N) < 6 * 92);
    assert_true(attest_rng_below(&r, 0) == 0);
    assert_true(attest_rng_below(&r, 1) == 0);
    /* A bound just above 2^63: rejection must still terminate and stay in range. */
    for (int i = 0; i < 100; i++) assert_true(attest_rng_below(&r, (1ull << 63) + 1) <= (1ull << 63));
}

/* range() hits both inclusive ends and nothing outside. */
static void range_is_inclusive(void **state)
{
    (void)state;
    attest_rng r;
    attest_rng_seed(&r, 8);
    int seen_lo = 0, seen_hi = 0;
    for (int i = 0; i < 2000; i++) {
        int64_t x = attest_rng_range(&r, -3, 3);
        assert_true(x >= -3 && x <= 3);
        seen_lo |= x == -3;
        seen_hi |= x == 3;
    }
    assert_true(seen_lo && seen_hi);
    assert_true(attest_rng_range(&r, 5, 5) == 5);
    assert_true(attest_rng_range(&r, 5, 4) == 5);
    int64_t full = attest_rng_range(&r, INT64_MIN, INT64_MAX); /* no overflow (UBSan checks) */
    (void)full;
}

/* Floats stay in [a, b) and fill it; double01 has mean 1/2. */
static void uniform_in_half_open_interval(void **state)
{
    (void)state;
    attest_rng r;
    attest_rng_seed(&r, 9);
    float lo = 1.0f, hi = 0.0f;
    for (int i = 0; i < 20000; i++) {
        float x = attest_rng_uniform(&r, -2.0f, 3.0f);
        assert_true(x >= -2.0f && x < 3.0f);
        if (x < lo) lo = x;
        if (x > hi) hi = x;
    }
    assert_true(lo < -1.99f && hi > 2.99f);
    /* A range one float wide can only return a. */
    float a = 1.0f, b = nextafterf(1.0f, 2.0f);
    for (int i = 0; i < 100; i++) assert_true(attest_rng_uniform(&r, a, b) == a);
    assert_true(attest_rng_uniform(&r, 3.0f, 3.0f) == 3.0f);
    double s = 0;
    for (int i = 0; i < 20000; i++) s += attest_rng_double01(&r);
    assert_true(fabs(s / 20000 - 0.5) < 0.01);
}

static void moments(double *x, int n, double *mean, double *var)
{
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = s / n;
    for (int i = 0; i < n; i++) q += (x[i] - *mean) * (x[i] - *mean);
    *var = q / (n - 1);
}

/* Box-Muller and the portable approximation both give the requested mean and variance. */
static void normal_moments(void **state)
{
    (void)state;
    enum { N = 40000 };
    static double x[N];
    attest_rng r;
    attest_rng_seed(&r, 10);
    double mean, var;
    for (int i = 0; i < N; i++) x[i] = attest_rng_normal(&r, 3.0, 2.0);
    moments(x, N, &mean, &var);
    assert_true(fabs(mean - 3.0) < 0.05 && fabs(var - 4.0) < 0.15);
    int beyond = 0; /* a true normal has ~0.27% beyond 3 sd */
    for (int i = 0; i < N; i++) beyond += fabs(x[i] - 3.0) > 6.0;
    assert_true(beyond > 40 && beyond < 180);
    for (int i = 0; i < N; i++) x[i] = attest_rng_normal_portable(&r, -1.0, 0.5);
    moments(x, N, &mean, &var);
    assert_true(fabs(mean + 1.0) < 0.02 && fabs(var - 0.25) < 0.01);
    for (int i = 0; i < N; i++) assert_true(fabs(x[i] + 1.0) <= 0.5 * 3.4642);
}

static void bernoulli_frequency(void **state)
{
    (void)state;
    attest_rng r;
    attest_rng_seed(&r, 11);
    int hits = 0;
    for (int i = 0; i < 20000; i++) hits += attest_rng_bernoulli(&r, 0.3);
    assert_true(abs(hits - 6000) < 6 * 65); /* sd = sqrt(20000 * 0.21) ~ 65 */
    for (int i = 0; i < 100; i++) {
        assert_int_equal(attest_rng_bernoulli(&r, 0.0), 0);
        assert_int_equal(attest_rng_bernoulli(&r, 1.0), 1);
        assert_int_equal(attest_rng_bernoulli(&r, NAN), 0);
    }
}

/* Shuffles are permutations, each position receives every element, and seeds matter. */
static void shuffle_is_a_uniform_permutation(void **state)
{
    (void)state;
    attest_rng r;
    attest_rng_seed(&r, 12);
    enum { N = 5, ROUNDS = 25000 };
    int where[N][N] = {{0}};
    for (int round = 0; round < ROUNDS; round++) {
        int32_t a[N] = {0, 1, 2, 3, 4};
        attest_rng_shuffle_i32(&r, a, N);
        int seen[N] = {0};
        for (int i = 0; i < N; i++) {
            seen[a[i]]++;
            where[a[i]][i]++;
        }
        for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);
    }
    /* Each cell is binomial(25000, 1/5): mean 5000, sd ~63. */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) assert_true(abs(where[i][j] - ROUNDS / N) < 6 * 63);
    /* The generic shuffle moves whole elements of odd sizes (here 70 bytes, past the chunk). */
    struct { unsigned char b[70]; } e[6];
    for (int i = 0; i < 6; i++) memset(e[i].b, i, sizeof e[i].b);
    attest_rng_shuffle(&r, e, 6, sizeof e[0]);
    int seen[6] = {0};
    for (int i = 0; i < 6; i++) {
        for (size_t k = 1; k < sizeof e[i].b; k++) assert_int_equal(e[i].b[k], e[i].b[0]);
        seen[e[i].b[0]]++;
    }
    for (int i = 0; i < 6; i++) assert_int_equal(seen[i], 1);
}

/* Weighted choice follows the weights; zero, negative and NaN weights are never chosen. */
static void choice_follows_weights(void **state)
{
    (void)state;
    attest_rng r;
    attest_rng_seed(&r, 13);
    const double w[] = {1.0, 0.0, 3.0, -2.0, NAN, 6.0};
    int count[6] = {0};
    for (int i = 0; i < 30000; i++) count[attest_rng_choice(&r, w, 6)]++;
    assert_int_equal(count[1], 0);
    assert_int_equal(count[3], 0);
    assert_int_equal(count[4], 0);
    assert_true(abs(count[0] - 3000) < 6 * 52);
    assert_true(abs(count[2] - 9000) < 6 * 80);
    assert_true(abs(count[5] - 18000) < 6 * 85);
    const double zeros[] = {0.0, 0.0, 0.0};
    int any[3] = {0};
    for (int i = 0; i < 300; i++) any[attest_rng_choice(&r, zeros, 3)] = 1;
    assert_true(any[0] && any[1] && any[2]);
    assert_true(attest_rng_choice(&r, w, 0) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splitmix64_known_answer),
        cmocka_unit_test(xoshiro_known_answer),
        cmocka_unit_test(case_seed_pinned),
        cmocka_unit_test(seeding_is_deterministic),
        cmocka_unit_test(below_is_uniform),
        cmocka_unit_test(range_is_inclusive),
        cmocka_unit_test(uniform_in_half_open_interval),
        cmocka_unit_test(normal_moments),
        cmocka_unit_test(bernoulli_frequency),
        cmocka_unit_test(shuffle_is_a_uniform_permutation),
        cmocka_unit_test(choice_follows_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
