/* The comparator against a plain recomputation: every metric of attest_compare_tensor_bounded,
 * bit for bit, next to the one-pass loop written out here the simplest way (a division per
 * element for the ratio and the relative error, every element classified), on inputs made to
 * catch a shortcut: ratios equal to the running worst and one step off it, ties, zeros,
 * subnormals, infinite and non-positive tolerances, masks, poison. The comparator skips the
 * divisions when it can tell they cannot move a maximum; this is what says it never guesses. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/compare.h"
#include "attest/numerics.h"
#include "attest/rng.h"

enum { N = 257 };

/* The inputs' stream (attest_splitmix64 draws inputs only; every expected value below is
 * recomputed here from the plain definitions). */
static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t next(void) { return attest_splitmix64(&rng_state); }
static double unit(void) { return (double)(next() >> 11) / 9007199254740992.0; }

static int64_t key(uint32_t bits, uint32_t sign)
{
    const int64_t mag = (int64_t)(bits & (sign - 1u));
    return (bits & sign) ? -mag : mag;
}

/* What the oracle computes: the fields the loop fills. */
typedef struct plain {
    uint64_t count, unwritten, ref_pinf, ref_ninf, ref_nan, cand_pinf, cand_ninf, cand_nan;
    uint64_t nonfinite, finite_pairs, elem_fail, first_nonfinite, worst_at;
    int have_worst, informative;
    double worst_ratio, worst_tol, worst_ref, worst_cand, max_abs, max_rel, max_code, atol_eff;
    double sum_sq_diff, sum_sq_ref, sum_sq_both, sum_sq_tol;
} plain;

/* The element tolerance as first written (compare.h): bound_factor * B plus half a step of the
 * dtype at |r| + bound_factor * B, the step from frexp, a non-finite bound infinite. */
static double plain_tolerance(const attest_tolerance *tol, attest_dtype dt, double r, double b)
{
    const double kb = tol->bound_factor * (isfinite(b) ? b : INFINITY);
    if (!isfinite(kb)) return INFINITY;
    const double x = fabs(r) + kb;
    int e = -126;
    if (x > 0 && isfinite(x)) {
        int fe;
        (void)frexp(x, &fe); /* x = f 2^fe, f in [0.5, 1): floor(log2 x) = fe - 1 */
        if (fe - 1 > e) e = fe - 1;
    }
    return kb + 0.5 * ldexp(1.0, e - (dt == ATTEST_DTYPE_BF16 ? 7 : 23));
}

static int cls(double x) { return isnan(x) ? 3 : isinf(x) ? (x > 0 ? 1 : 2) : 0; }

/* The comparison loop as first written (bounds on when bound != NULL). */
static plain oracle(const double *ref, const double *bound, const void *cand, attest_dtype dt,
                    size_t n, const uint8_t *mask, uint32_t poison, const attest_tolerance *tol)
{
    plain p;
    memset(&p, 0, sizeof p);
    double max_abs_ref = 0;
    for (size_t i = 0; i < n; i++)
        if ((mask == NULL || mask[i]) && isfinite(ref[i]) && fabs(ref[i]) > max_abs_ref)
            max_abs_ref = fabs(ref[i]);
    double atol = tol->atol;
    if (tol->atol_ref_scale * max_abs_ref > atol) atol = tol->atol_ref_scale * max_abs_ref;
    p.atol_eff = bound != NULL ? 0.0 : atol;
    if (dt == ATTEST_DTYPE_BF16) poison &= 0xFFFFu;
    for (size_t i = 0; i < n; i++) {
        if (mask != NULL && !mask[i]) continue;
        p.count++;
        uint32_t bits;
        float f;
        if (dt == ATTEST_DTYPE_BF16) {
            uint16_t h;
            memcpy(&h, (const uint8_t *)cand + 2 * i, 2);
            bits = h;
            const uint32_t w = bits << 16;
            memcpy(&f, &w, 4);
        } else {
            memcpy(&bits, (const uint8_t *)cand + 4 * i, 4);
            memcpy(&f, &bits, 4);
        }
        const double r = ref[i], c = f;
        if (bits == poison) p.unwritten++;
        const int rc = cls(r), cc = cls(c);
        p.ref_pinf += rc == 1, p.ref_ninf += rc == 2, p.ref_nan += rc == 3;
        p.cand_pinf += cc == 1, p.cand_ninf += cc == 2, p.cand_nan += cc == 3;
        if (rc != cc && p.nonfinite++ == 0) p.first_nonfinite = i;
        /* vacuity is the reference's: a finite reference counts whatever the candidate wrote */
        if (bound != NULL && rc == 0 && fabs(r) > plain_tolerance(tol, dt, r, bound[i]))
            p.informative = 1;
        if (rc || cc) continue;
        p.finite_pairs++;
        const double diff = c - r, ad = fabs(diff);
        double t;
        if (bound != NULL) {
            t = plain_tolerance(tol, dt, r, bound[i]);
            if (t > p.atol_eff) p.atol_eff = t;
            p.sum_sq_tol += isfinite(t) ? t * t : INFINITY;
        } else {
            t = fmax(atol, tol->rtol * fabs(r));
        }
        const int fails = !(ad <= t);
        p.elem_fail += fails;
        const double ratio = ad == 0 ? 0.0 : (t > 0 ? ad / t : INFINITY);
        if (ratio > p.worst_ratio || (p.finite_pairs == 1 && ratio == 0)) {
            p.worst_ratio = ratio, p.worst_tol = t, p.worst_at = i, p.have_worst = 1;
            p.worst_ref = r, p.worst_cand = c;
        }
        if (ad > p.max_abs) p.max_abs = ad;
        if (r != 0 && ad / fabs(r) > p.max_rel) p.max_rel = ad / fabs(r);
        p.sum_sq_diff += diff * diff;
        p.sum_sq_ref += r * r;
        p.sum_sq_both += r * r + c * c;
        if (bound != NULL ? fails : ad > atol) {
            int64_t d;
            if (dt == ATTEST_DTYPE_BF16) {
                d = key(bits, 0x8000u) - key(attest_bf16_encode_f64(r), 0x8000u);
            } else {
                const float rf = (float)r;
                uint32_t rb;
                memcpy(&rb, &rf, 4);
                d = key(bits, 0x80000000u) - key(rb, 0x80000000u);
            }
            const double steps = (double)(d < 0 ? -d : d);
            if (steps > p.max_code) p.max_code = steps;
        }
    }
    return p;
}

static void same(double got, double want, const char *what, int trial)
{
    if (memcmp(&got, &want, sizeof got) != 0)
        fail_msg("trial %d: %s = %.17g, the plain loop gives %.17g", trial, what, got, want);
}

static void same_u(uint64_t got, uint64_t want, const char *what, int trial)
{
    if (got != want)
        fail_msg("trial %d: %s = %llu, the plain loop gives %llu", trial, what,
                 (unsigned long long)got, (unsigned long long)want);
}

/* Checks the comparator's metrics against the oracle's, field by field. */
static void check(const double *ref, const double *bound, const void *cand, attest_dtype dt,
                  size_t n, const uint8_t *mask, uint32_t poison, const attest_tolerance *tol,
                  int trial)
{
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_tensor_bounded(ref, bound, cand, dt, n, NULL, 0, mask, poison, tol,
                                            &m));
    const int bounded = bound != NULL && tol->bound_factor >= 0;
    const plain p = oracle(ref, bounded ? bound : NULL, cand, dt, n, mask, poison, tol);
    same_u(m.count, p.count, "count", trial);
    same_u(m.unwritten, p.unwritten, "unwritten", trial);
    same_u(m.ref_posinf, p.ref_pinf, "ref_posinf", trial);
    same_u(m.ref_neginf, p.ref_ninf, "ref_neginf", trial);
    same_u(m.ref_nan, p.ref_nan, "ref_nan", trial);
    same_u(m.cand_posinf, p.cand_pinf, "cand_posinf", trial);
    same_u(m.cand_neginf, p.cand_ninf, "cand_neginf", trial);
    same_u(m.cand_nan, p.cand_nan, "cand_nan", trial);
    same_u(m.nonfinite_mismatches, p.nonfinite, "nonfinite_mismatches", trial);
    if (p.nonfinite)
        same_u((uint64_t)m.first_nonfinite_mismatch.index[0], p.first_nonfinite,
               "first_nonfinite", trial);
    same_u(m.finite_pairs, p.finite_pairs, "finite_pairs", trial);
    same_u(m.element_failures, p.elem_fail, "element_failures", trial);
    if (p.have_worst) {
        same_u((uint64_t)m.worst.index[0], p.worst_at, "worst index", trial);
        same(m.worst_ratio, p.worst_ratio, "worst_ratio", trial);
        same(m.worst_tol, p.worst_tol, "worst_tol", trial);
        same(m.worst_ref, p.worst_ref, "worst_ref", trial);
        same(m.worst_cand, p.worst_cand, "worst_cand", trial);
    } else {
        same(m.worst_ratio, 0.0, "worst_ratio (no finite pair)", trial);
    }
    same(m.max_abs, p.max_abs, "max_abs", trial);
    same(m.max_rel, p.max_rel, "max_rel", trial);
    same(m.max_code_distance, p.max_code, "max_code_distance", trial);
    same(m.atol_effective, p.atol_eff, "atol_effective", trial);
    same(m.nmse, p.sum_sq_ref > 0 ? p.sum_sq_diff / p.sum_sq_ref : (p.sum_sq_diff > 0 ? INFINITY : 0),
         "nmse", trial);
    same(m.cos_diff, p.sum_sq_both > 0 ? p.sum_sq_diff / p.sum_sq_both : 0.0, "cos_diff", trial);
    if (bounded) {
        const uint64_t finite_refs = p.count - p.ref_pinf - p.ref_ninf - p.ref_nan;
        same_u((uint64_t)m.vacuous, finite_refs == 0 || !p.informative, "vacuous", trial);
    }
}

static uint16_t bf16_bits(double x) { return attest_bf16_encode_f64(x); }

/* A reference value of one of the awkward kinds. */
static double awkward(int kind)
{
    switch (next() % 12) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return 1e-310 * (unit() - 0.5);            /* double subnormal */
    case 3: return ldexp(unit() - 0.5, -130);           /* float subnormal range */
    case 4: return kind ? INFINITY : 1.0;
    case 5: return kind ? NAN : -1.0;
    case 6: return (double)(int)(next() % 5) * 0.25;    /* few values: exact ties */
    case 7: return ldexp(unit() - 0.5, (int)(next() % 200) - 100);
    default: return (unit() - 0.5) * 8;
    }
}

/* Random inputs of every awkward kind, both dtypes, bounds on and off, with and without a mask:
 * each metric equals the plain loop's. */
static void test_matches_plain_loop(void **state)
{
    (void)state;
    static double ref[N], bound[N];
    static float cf[N];
    static uint16_t cb[N];
    static uint8_t mask[N];
    for (int trial = 0; trial < 3000; trial++) {
        const size_t n = 1 + next() % N;
        const int nonfinite = trial % 3 == 0;
        for (size_t i = 0; i < n; i++) {
            const double r = awkward(nonfinite);
            double c;
            switch (next() % 8) {
            case 0: c = r; break;
            case 1: c = 0; break;
            case 2: c = 2 * r; break;                       /* ad = |r|: relative error 1, ties */
            case 3: c = r + ldexp(1.0, -(int)(next() % 30)); break;
            case 4: c = nonfinite && next() % 4 == 0 ? NAN : -r; break;
            default: c = r * (1 + (unit() - 0.5) * 1e-2);
            }
            double b;
            switch (next() % 10) {
            case 0: b = 0; break;
            case 1: b = INFINITY; break;
            case 2: b = NAN; break;
            case 3: b = -fabs(r) * unit(); break;           /* a non-positive tolerance */
            case 4: b = 1e-320; break;
            case 5: b = (next() & 1) ? 1e308 : 1e300;        /* |r| + kb near overflow */
                break;
            default: b = fabs(r) * 1e-3 * unit();
            }
            ref[i] = r;
            bound[i] = b;
            cf[i] = (float)c;
            cb[i] = bf16_bits(c);
            if (next() % 97 == 0) cb[i] = 0x7FC1u, cf[i] = 0; /* poison, and a bf16 NaN */
            mask[i] = next() % 11 != 0;
        }
        attest_tolerance tol;
        memset(&tol, 0, sizeof tol);
        tol.atol = (trial & 4) ? 0 : 1e-3;
        tol.rtol = (trial & 8) ? 0 : 1e-2;
        tol.max_fail_fraction = 1;
        tol.cos_diff_max = 1;
        tol.nmse_max = -1;
        tol.max_code_distance = -1;
        tol.topk_min_recall = -1;
        tol.atol_ref_scale = (trial & 16) ? 1e-4 : 0;
        tol.bound_factor = (trial & 32) ? 0.0 : 1.5;
        const uint8_t *mk = (trial & 2) ? mask : NULL;
        for (size_t i = 0; i < n; i++)
            for (int f32 = 0; f32 < 2; f32++) {
                const attest_dtype dt = f32 ? ATTEST_DTYPE_F32 : ATTEST_DTYPE_BF16;
                same(attest_element_tolerance(&tol, dt, ref[i], bound[i]),
                     plain_tolerance(&tol, dt, ref[i], bound[i]), "element tolerance", trial);
            }
        check(ref, bound, cb, ATTEST_DTYPE_BF16, n, mk, 0x7FC1u, &tol, trial);
        check(ref, bound, cf, ATTEST_DTYPE_F32, n, mk, 0x7FC0DEADu, &tol, trial);
        check(ref, NULL, cb, ATTEST_DTYPE_BF16, n, mk, 0x7FC1u, &tol, trial);
        check(ref, NULL, cf, ATTEST_DTYPE_F32, n, mk, 0x7FC0DEADu, &tol, trial);
    }
}

/* Ratios on the running worst's own double and one step either side: with c = 0 and rtol the
 * only tolerance, ratio = |r| / fl(rtol |r|), 1 / rtol give or take an ulp as r varies, so the
 * worst is decided by single steps and exact ties (the first stays); likewise the relative
 * errors |0 - r| / |r|, all exactly 1. And ad values built one step above and below worst * t. */
static void test_ratios_one_step_apart(void **state)
{
    (void)state;
    static double ref[N], bound[N];
    static float cf[N];
    for (int trial = 0; trial < 400; trial++) {
        const double rtol = ldexp(1.0 + unit(), -(int)(next() % 20));
        for (size_t i = 0; i < N; i++) {
            ref[i] = (double)(float)ldexp(1.0 + unit(), (int)(next() % 40) - 20);
            cf[i] = 0;
            bound[i] = 0;
        }
        attest_tolerance tol;
        memset(&tol, 0, sizeof tol);
        tol.rtol = rtol;
        tol.max_fail_fraction = 1;
        tol.cos_diff_max = 1;
        tol.nmse_max = -1;
        tol.max_code_distance = -1;
        tol.topk_min_recall = -1;
        tol.bound_factor = -1; /* bounds off */
        check(ref, NULL, cf, ATTEST_DTYPE_F32, N, NULL, 0x7FC0DEADu, &tol, trial);

        /* Bounds on: element 0 sets the worst w = ad0 / t0; each later element has its ad a step
         * above, at, or below w * t (r = -ad, c = 0, so ad is exact). */
        tol.bound_factor = 1.0;
        double t0 = attest_element_tolerance(&tol, ATTEST_DTYPE_F32, 1.0, 0.125);
        ref[0] = 1.0, bound[0] = 0.125, cf[0] = 2.0f; /* ad = 1 */
        const double w = 1.0 / t0;
        for (size_t i = 1; i < N; i++) {
            const double b = ldexp(1.0 + unit(), -(int)(next() % 10));
            /* t depends on |r|, which is ad here: iterate once so ad ~ w * t(ad). */
            double ad = w * b;
            for (int k = 0; k < 3; k++)
                ad = w * attest_element_tolerance(&tol, ATTEST_DTYPE_F32, -ad, b);
            const int step = (int)(next() % 5) - 2;
            for (int s = 0; s < (step < 0 ? -step : step); s++)
                ad = nextafter(ad, step < 0 ? 0 : INFINITY);
            ref[i] = -ad;
            bound[i] = b;
            cf[i] = 0;
        }
        check(ref, bound, cf, ATTEST_DTYPE_F32, N, NULL, 0x7FC0DEADu, &tol, 1000 + trial);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_plain_loop),
        cmocka_unit_test(test_ratios_one_step_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
