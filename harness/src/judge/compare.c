/* attest: the comparator (see compare.h for the gates). Every metric is accumulated in one pass in
 * double; no gate short-circuits another, so a record always shows every way a candidate is off.
 */
#include "attest/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/isa.h"
#include "attest/numerics.h"

static const char *const gate_names[ATTEST_GATE_COUNT_] = {
    [ATTEST_GATE_NONFINITE] = "nonfinite", [ATTEST_GATE_ELEMENT] = "element",
    [ATTEST_GATE_COSINE] = "cosine",       [ATTEST_GATE_NMSE] = "nmse",
    [ATTEST_GATE_CODE] = "code",           [ATTEST_GATE_UNWRITTEN] = "unwritten",
    [ATTEST_GATE_TOPK] = "topk",
};

const char *attest_gate_name(attest_gate gate)
{
    if ((unsigned)gate >= ATTEST_GATE_COUNT_) return "unknown";
    return gate_names[gate];
}

void attest_gate_mask_string(uint32_t mask, char *buf, size_t cap)
{
    if (buf == NULL || cap == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    for (unsigned g = 0; g < ATTEST_GATE_COUNT_; ++g) {
        if (!(mask & ATTEST_GATE_BIT(g))) continue;
        const char *name = gate_names[g];
        size_t need = strlen(name) + (used > 0 ? 1 : 0);
        if (used + need + 1 > cap) break; /* truncate at a whole name rather than mid-word */
        if (used > 0) buf[used++] = '+';
        memcpy(buf + used, name, strlen(name) + 1);
        used += strlen(name);
    }
}

/* Non-finite classes; two values match in the nonfinite gate when their classes are equal. */
enum { CLASS_FINITE = 0, CLASS_POSINF = 1, CLASS_NEGINF = 2, CLASS_NAN = 3 };

static int classify(double x)
{
    if (isnan(x)) return CLASS_NAN;
    if (isinf(x)) return x > 0 ? CLASS_POSINF : CLASS_NEGINF;
    return CLASS_FINITE;
}

/* Maps a sign-magnitude float encoding onto integers whose order and differences follow the
 * representable values (+0 and -0 both map to 0), so |key(a) - key(b)| counts steps. */
static int64_t ordered_key(uint32_t bits, uint32_t sign_bit)
{
    int64_t mag = (int64_t)(bits & (sign_bit - 1u));
    return (bits & sign_bit) ? -mag : mag;
}

static void unravel(size_t flat, const int64_t *shape, int32_t rank, attest_coord *out)
{
    memset(out, 0, sizeof *out);
    if (shape == NULL || rank <= 0) {
        out->rank = 1;
        out->index[0] = (int64_t)flat;
        return;
    }
    out->rank = rank;
    for (int32_t d = rank - 1; d >= 0; --d) {
        out->index[d] = (int64_t)(flat % (uint64_t)shape[d]);
        flat /= (uint64_t)shape[d];
    }
}

static int bad_bound(double x) { return isnan(x) || x < 0; }

static attest_status check_tolerance(const attest_tolerance *tol)
{
    ATTEST_RETURN_IF(bad_bound(tol->atol), ATTEST_ERR_INVALID_ARGUMENT,
                     "tolerance atol must be >= 0 (got %g)", tol->atol);
    ATTEST_RETURN_IF(bad_bound(tol->rtol), ATTEST_ERR_INVALID_ARGUMENT,
                     "tolerance rtol must be >= 0 (got %g)", tol->rtol);
    ATTEST_RETURN_IF(bad_bound(tol->max_fail_fraction) || tol->max_fail_fraction > 1,
                     ATTEST_ERR_INVALID_ARGUMENT, "tolerance max_fail_fraction must be in [0, 1]");
    ATTEST_RETURN_IF(bad_bound(tol->cos_diff_max), ATTEST_ERR_INVALID_ARGUMENT,
                     "tolerance cos_diff_max must be >= 0 (got %g)", tol->cos_diff_max);
    ATTEST_RETURN_IF(bad_bound(tol->vacuity_factor), ATTEST_ERR_INVALID_ARGUMENT,
                     "tolerance vacuity_factor must be >= 0 (got %g)", tol->vacuity_factor);
    ATTEST_RETURN_IF(bad_bound(tol->atol_ref_scale), ATTEST_ERR_INVALID_ARGUMENT,
                     "tolerance atol_ref_scale must be >= 0 (got %g)", tol->atol_ref_scale);
    ATTEST_RETURN_IF(isnan(tol->nmse_max) || isnan(tol->max_code_distance),
                     ATTEST_ERR_INVALID_ARGUMENT, "tolerance nmse_max/max_code_distance is NaN");
    return ATTEST_OK;
}

/* Candidate element i as (exact) double plus its raw bits in the low bits of *bits. */
static inline double cand_value(const void *cand, attest_dtype dtype, size_t i, uint32_t *bits)
{
    if (dtype == ATTEST_DTYPE_BF16) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)cand + 2 * i, 2);
        *bits = h;
        uint32_t w = (uint32_t)h << 16;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    uint32_t w;
    memcpy(&w, (const uint8_t *)cand + 4 * i, 4);
    *bits = w;
    float f;
    memcpy(&f, &w, 4);
    return f;
}

/* Steps between candidate bits and the reference rounded (nearest even) to the candidate dtype. */
static double code_distance(double r, uint32_t cbits, attest_dtype dtype)
{
    if (dtype == ATTEST_DTYPE_BF16) {
        uint16_t rb = attest_bf16_encode_f64(r);
        int64_t d = ordered_key(cbits, 0x8000u) - ordered_key(rb, 0x8000u);
        return (double)(d < 0 ? -d : d);
    }
    float rf = (float)r;
    uint32_t rb;
    memcpy(&rb, &rf, 4);
    int64_t d = ordered_key(cbits, 0x80000000u) - ordered_key(rb, 0x80000000u);
    return (double)(d < 0 ? -d : d);
}

/* The exponent bits of one step (unit in the last place) of a dtype with `mant` mantissa bits at
 * magnitude x, subnormal steps included: 2^(max(floor(log2 x), -126) - mant), taken from the
 * double's exponent bits as an integer max (frexp and ldexp were a library call each per
 * element; the branches on the exponent after them were a dozen instructions more). x that is
 * not positive and finite (0, negative, inf, NaN) gets the smallest, 2^(-126 - mant), as does a
 * double subnormal, which lies far below 2^-126. `less` lowers the exponent further (1: half a
 * step, exactly, as a power of two). Every result is a normal double, 2^-150 to 2^1016. */
static inline double step_at(int mant, int less, double x)
{
    const uint64_t exp_mask = UINT64_C(0x7FF0000000000000);
    const uint64_t min_exp = (uint64_t)(1023 - 126) << 52; /* float32's exponent range */
    int64_t sx;
    memcpy(&sx, &x, sizeof sx);
    uint64_t e = sx > 0 && sx < (int64_t)exp_mask ? (uint64_t)sx & exp_mask : 0;
    if (e < min_exp) e = min_exp;
    const uint64_t step = e - ((uint64_t)(mant + less) << 52);
    double out;
    memcpy(&out, &step, sizeof out);
    return out;
}

static inline int dtype_mant(attest_dtype dtype) { return dtype == ATTEST_DTYPE_BF16 ? 7 : 23; }

static double dtype_step(attest_dtype dtype, double x) { return step_at(dtype_mant(dtype), 0, x); }

/* attest_element_tolerance, inline in the comparison loop (a call per judged element). A
 * non-finite bound makes bound_factor * b infinite or NaN, as the product overflowing does:
 * each gives an infinite tolerance. Half a step is the step's power of two one lower, exactly
 * 0.5 * step. */
static inline double element_tolerance_k(double bound_factor, attest_dtype dtype, double r,
                                         double b)
{
    const double kb = bound_factor * b;
    if (!isfinite(kb)) return INFINITY;
    return kb + step_at(dtype_mant(dtype), 1, fabs(r) + kb);
}

static inline double element_tolerance(const attest_tolerance *tol, attest_dtype dtype, double r,
                                       double b)
{
    return element_tolerance_k(tol->bound_factor, dtype, r, b);
}

double attest_element_tolerance(const attest_tolerance *tol, attest_dtype dtype, double r, double b)
{
    return element_tolerance(tol, dtype, r, b);
}

double attest_rounding_error(attest_dtype dtype, double x)
{
    if (dtype != ATTEST_DTYPE_F32 && dtype != ATTEST_DTYPE_BF16) return 0.0;
    return 0.5 * dtype_step(dtype, fabs(x));
}

static int bounded(const attest_tolerance *tol, const double *bound)
{
    return bound != NULL && tol->bound_factor >= 0;
}

/* What the comparison loop reads and what it accumulates. */
typedef struct compare_in {
    const double *ref, *bound;
    const void *cand;
    size_t count;
    const uint8_t *mask;
    uint32_t poison;
    const attest_tolerance *tol;
    double atol; /* bounds off: the effective atol */
} compare_in;

typedef struct compare_acc {
    uint64_t n_cmp, unwritten, ref_pinf, ref_ninf, ref_nan, cand_pinf, cand_ninf, cand_nan,
        nonfinite, finite_pairs, elem_fail;
    size_t first_nonfinite, worst_at;
    int have_worst, informative; /* informative: some reference exceeds its tolerance (bounds) */
    double worst_ratio, worst_tol, worst_ref, worst_cand, max_abs, max_rel, max_code, atol_eff;
    double sum_sq_diff, sum_sq_ref, sum_sq_both, sum_sq_tol;
} compare_acc;

/* Whether the correctly rounded quotient a / b (a >= 0, b > 0) cannot exceed w >= 0, told from
 * p = w * b * (1 - 2^-40) without dividing: for p normal and finite, the two roundings of p
 * stay below the exact w * b, so a <= p gives a / b < w, and a rounded quotient below w is at
 * most w. Anything else (p zero, subnormal, infinite or NaN) answers 0 and the caller divides.
 * A division per element for the worst ratio and another for the largest relative error were a
 * third of the loop; the running maxima rarely move, so most elements skip both. */
static inline int quotient_at_most(double a, double p)
{
    /* p in [2^-1000, DBL_MAX] as one unsigned range test of its bits (NaN and negatives fall
     * outside) */
    const uint64_t lo = (uint64_t)(1023 - 1000) << 52, hi = UINT64_C(0x7FEFFFFFFFFFFFFF);
    uint64_t bits;
    memcpy(&bits, &p, sizeof bits);
    return bits - lo <= hi - lo && a <= p;
}
#define QUOTIENT_MARGIN (1.0 - 0x1p-40)

/* The two running maxima that need a division, for element i of a finite pair (r, c) with
 * tolerance t; `first`: i is the first finite pair, which always sets the worst. */
static inline __attribute__((always_inline)) void
update_worst_and_rel(compare_acc *a, size_t i, double r, double c, double ad, double t, int first)
{
    /* ratio = ad / t (0 when ad is 0, inf when t is not positive) replaces the worst when
     * larger; the first pair always sets it. A zero ad never beats a worst >= 0. */
    if (first || (ad != 0 && !quotient_at_most(ad, a->worst_ratio * t * QUOTIENT_MARGIN))) {
        const double ratio = ad == 0 ? 0.0 : (t > 0 ? ad / t : INFINITY);
        if (ratio > a->worst_ratio || (first && ratio == 0)) {
            a->worst_ratio = ratio;
            a->worst_tol = t;
            a->worst_at = i;
            a->have_worst = 1;
            a->worst_ref = r;
            a->worst_cand = c;
        }
    }
    /* A zero reference has no relative error to speak of; atol judges it. */
    if (r != 0 && !quotient_at_most(ad, a->max_rel * fabs(r) * QUOTIENT_MARGIN) &&
        ad / fabs(r) > a->max_rel)
        a->max_rel = ad / fabs(r);
}

/* Element i's tolerance; without bounds the larger of atol and rtol * |r|. */
static inline __attribute__((always_inline)) double
element_tolerance_at(const compare_in *in, attest_dtype dtype, int use_bounds, double r, size_t i)
{
    return use_bounds ? element_tolerance_k(in->tol->bound_factor, dtype, r, in->bound[i])
                      : fmax(in->atol, in->tol->rtol * fabs(r));
}

/* One element, in element order: the counters and maxima, the sums accumulated in that order
 * (each metric is the one the loop before gave, bit for bit). dtype and use_bounds are
 * compile-time at each call, so each copy keeps only its own branches. A pair of finite values
 * (the common case) skips the classification: its six non-finite counters would add 0. *a is
 * the caller's local, which the compiler keeps in registers (as fields of *m, which the
 * candidate's bytes may alias, each was loaded and stored again on every element). */
static inline __attribute__((always_inline)) void
compare_one(const compare_in *in, compare_acc *a, attest_dtype dtype, int use_bounds, size_t i)
{
    const uint32_t exp_bits = dtype == ATTEST_DTYPE_BF16 ? 0x7F80u : 0x7F800000u;
    if (in->mask != NULL && !in->mask[i]) return;
    ++a->n_cmp;
    uint32_t cbits;
    const double r = in->ref[i];
    const double c = cand_value(in->cand, dtype, i, &cbits);
    if (cbits == in->poison) ++a->unwritten;
    if (!(isfinite(r) && (cbits & exp_bits) != exp_bits)) {
        const int rc = classify(r), cc = classify(c);
        a->ref_pinf += rc == CLASS_POSINF;
        a->ref_ninf += rc == CLASS_NEGINF;
        a->ref_nan += rc == CLASS_NAN;
        a->cand_pinf += cc == CLASS_POSINF;
        a->cand_ninf += cc == CLASS_NEGINF;
        a->cand_nan += cc == CLASS_NAN;
        if (rc != cc) {
            if (a->nonfinite++ == 0) a->first_nonfinite = i;
        }
        /* Vacuity is the reference's: a finite reference above its tolerance could show a
         * difference whatever the candidate wrote there (a NaN output is not vacuous). */
        if (use_bounds && rc == CLASS_FINITE)
            a->informative |= fabs(r) > element_tolerance_at(in, dtype, use_bounds, r, i);
        return; /* one side is not finite */
    }

    ++a->finite_pairs;
    const double diff = c - r, ad = fabs(diff);
    const double t = element_tolerance_at(in, dtype, use_bounds, r, i);
    if (use_bounds) {
        a->informative |= fabs(r) > t; /* no branch: it goes either way element by element */
        if (t > a->atol_eff) a->atol_eff = t;
        a->sum_sq_tol += t * t; /* t is finite or +inf, never NaN: inf * inf is inf */
    }
    const int fails = !(ad <= t);
    if (fails) ++a->elem_fail;
    update_worst_and_rel(a, i, r, c, ad, t, a->finite_pairs == 1);
    if (ad > a->max_abs) a->max_abs = ad;
    /* sum(r^2 + c^2) - 2 sum(rc) == sum((c - r)^2): the same cosine difference without the
     * cancellation of "1 - ratio", so tiny differences are not lost to rounding. */
    a->sum_sq_diff += diff * diff;
    a->sum_sq_ref += r * r;
    a->sum_sq_both += r * r + c * c;
    if (use_bounds ? fails : ad > in->atol) {
        double steps = code_distance(r, cbits, dtype);
        if (steps > a->max_code) a->max_code = steps;
    }
}

/* --- the block fast path ------------------------------------------------------------------ *
 * Most elements of a correct kernel's output are a finite pair inside its tolerance: for those,
 * compare_one counts, takes two maxima, adds to the sums and, rarely, moves the worst ratio or
 * the largest relative error; a pair of the same non-finite class on both sides it only counts. A block of CMP_BLOCK elements is told apart, and its terms
 * computed, four lanes at a time without a branch; its sums are continued in element order from
 * the lanes, so every metric keeps its bits. The elements that may move the worst ratio or the
 * largest relative error (a multiply cannot rule it out) are then taken one by one in element
 * order, and only those: no other element can move either. A block with any other element
 * (masked out, poison, one side finite, non-finite classes that differ, failing, past atol
 * without bounds) runs compare_one element by element instead: the fast path is exact or not taken. bench_compare (4,096 bf16 elements,
 * bounds on, dev VM): 7.4-8.3 ns per element before, about 3.4 after, the metrics of its 24,000
 * comparisons bit for bit the same. */
#define CMP_BLOCK 64
/* Four lanes: AVX2 has every operation on four doubles or 64-bit integers as one instruction;
 * GCC splits wider vectors element by element on AVX2, and on AVX-512F its comparisons give mask
 * registers that it turns back into vectors one element at a time (that needs AVX512DQ). */
#define CMP_W 4

/* What a block's lanes found: the four sums continued over the block in element order (taken
 * only when no element needs compare_one), and the maxima as the bits of non-negative doubles
 * (+inf included), whose integer order is their numeric order. The sums stay in registers: lane
 * arrays in memory cost more under ASan than they saved (bench/README.md). */
typedef struct cmp_block_sum {
    double sum_sq_diff, sum_sq_ref, sum_sq_both, sum_sq_tol;
    int64_t max_t_bits, max_ad_bits;
    uint64_t maybe_new_max; /* bit k: element base + k may move the worst or max_rel */
    uint64_t finite_pairs;  /* bit k: element base + k is a finite pair */
    uint64_t pinf, ninf, nan; /* pairs of one non-finite class on both sides, by class */
    int other, informative;
    int nonfinite; /* the first pass met a non-finite element: the mixed pass decides */
} cmp_block_sum;

/* Lanes as GCC/clang vectors (kernels/cpu uses them too). Every comparison is of doubles or of
 * signed 64-bit integers, which AVX2 has as instructions (an unsigned 64-bit one it has not).
 * Helpers are macros: a function taking or returning a vector has no fixed ABI below its ISA. */
typedef double cmp_vd __attribute__((vector_size(CMP_W * sizeof(double))));
typedef int64_t cmp_vl __attribute__((vector_size(CMP_W * sizeof(int64_t))));
typedef uint32_t cmp_vu __attribute__((vector_size(CMP_W * sizeof(uint32_t))));
typedef int32_t cmp_vi __attribute__((vector_size(CMP_W * sizeof(int32_t))));
typedef uint16_t cmp_vh __attribute__((vector_size(CMP_W * sizeof(uint16_t))));
typedef float cmp_vf __attribute__((vector_size(CMP_W * sizeof(float))));
typedef uint8_t cmp_vb __attribute__((vector_size(CMP_W)));

#define VBITS(v, out) memcpy(&(out), &(v), sizeof(out))
#define VBLEND(m, a, b) (((m) & (a)) | (~(m) & (b)))
/* v (doubles) keeps its lanes where m is all ones and becomes +0 elsewhere */
#define VFINITE_ONLY(v, m)                                                                         \
    do {                                                                                           \
        cmp_vl vb_;                                                                                \
        VBITS(v, vb_);                                                                             \
        vb_ &= (m);                                                                                \
        VBITS(vb_, v);                                                                             \
    } while (0)
/* quotient_at_most on lanes: p's bits in [lo, hi] (as signed integers: a negative p has its
 * sign bit set and falls below lo) and a <= p */
#define VQAM(a, p, out)                                                                            \
    do {                                                                                           \
        cmp_vl pb_;                                                                                \
        VBITS(p, pb_);                                                                             \
        (out) = (pb_ >= INT64_C(0x0170000000000000)) & (pb_ <= INT64_C(0x7FEFFFFFFFFFFFFF)) &    \
                ((a) <= (p));                                                                      \
    } while (0)

ATTEST_ISA_BODY void block_terms_generic(const compare_in *in, size_t base, double worst,
                                         double max_rel, cmp_block_sum *out, attest_dtype dtype,
                                         int use_bounds, int mixed)
{
    const double *ref = in->ref + base, *bound = use_bounds ? in->bound + base : NULL;
    const uint8_t *mask = in->mask ? in->mask + base : NULL;
    const double bound_factor = in->tol->bound_factor, atol = in->atol, rtol = in->tol->rtol;
    const int64_t abs_mask = INT64_C(0x7FFFFFFFFFFFFFFF), exp_mask = INT64_C(0x7FF0000000000000);
    const int64_t max_finite = INT64_C(0x7FEFFFFFFFFFFFFF);
    const int64_t min_exp = (int64_t)(1023 - 126) << 52; /* step_at's float32 exponent floor */
    const int64_t half_step = (int64_t)(dtype_mant(dtype) + 1) << 52;
    const int32_t poison_w =
        (int32_t)(dtype == ATTEST_DTYPE_BF16 ? in->poison << 16 : in->poison); /* as w holds it */
    const cmp_vl zero = {0};
    cmp_vl max_t = zero, max_ad = zero, other = zero, informative = zero;
    double s_diff = out->sum_sq_diff, s_ref = out->sum_sq_ref, s_both = out->sum_sq_both,
           s_tol = out->sum_sq_tol;
    cmp_vl maybe_bits = zero, pair_bits = zero, n_pinf = zero, n_ninf = zero, n_nan = zero;
    cmp_vl nonfinite = zero;
    cmp_vl lane_bit;
    for (int k = 0; k < CMP_W; k++) lane_bit[k] = INT64_C(1) << k;
    for (size_t j = 0; j < CMP_BLOCK; j += CMP_W) {
        cmp_vd r, c;
        memcpy(&r, ref + j, sizeof r);
        cmp_vu w;
        if (dtype == ATTEST_DTYPE_BF16) {
            cmp_vh h;
            memcpy(&h, (const uint8_t *)in->cand + 2 * (base + j), sizeof h);
            w = __builtin_convertvector(h, cmp_vu) << 16;
        } else {
            memcpy(&w, (const uint8_t *)in->cand + 4 * (base + j), sizeof w);
        }
        cmp_vf f;
        VBITS(w, f);
        c = __builtin_convertvector(f, cmp_vd);
        cmp_vi wi;
        VBITS(w, wi);
        const cmp_vl c_finite =
            __builtin_convertvector((wi & 0x7F800000) != 0x7F800000, cmp_vl);
        const cmp_vd diff = c - r;
        cmp_vl rb, db;
        VBITS(r, rb);
        VBITS(diff, db);
        const cmp_vl ab = db & abs_mask, arb = rb & abs_mask;
        cmp_vd ad, absr;
        VBITS(ab, ad);
        VBITS(arb, absr);
        cmp_vl tb;
        if (use_bounds) {
            cmp_vd b;
            memcpy(&b, bound + j, sizeof b);
            const cmp_vd kb = bound_factor * b;
            cmp_vl kbb;
            VBITS(kb, kbb);
            const cmp_vl kb_finite = (kbb & abs_mask) <= max_finite;
            const cmp_vd x = absr + kb;
            cmp_vl sx;
            VBITS(x, sx);
            cmp_vl e = (sx > 0) & (sx < exp_mask) & (sx & exp_mask);
            e = VBLEND(e < min_exp, zero + min_exp, e);
            const cmp_vl step_bits = e - half_step;
            cmp_vd step;
            VBITS(step_bits, step);
            const cmp_vd tk = kb + step;
            VBITS(tk, tb);
            tb = VBLEND(kb_finite, tb, zero + exp_mask);
        } else {
            const cmp_vd rel = rtol * absr, atolv = (cmp_vd){0} + atol;
            cmp_vl relb, atolb;
            VBITS(rel, relb);
            VBITS(atolv, atolb);
            tb = VBLEND(rel > atolv, relb, atolb);
        }
        cmp_vd t;
        VBITS(tb, t);
        const cmp_vd pw = worst * t * QUOTIENT_MARGIN, pr = max_rel * absr * QUOTIENT_MARGIN;
        cmp_vl q_worst, q_rel;
        VQAM(ad, pw, q_worst);
        VQAM(ad, pr, q_rel);
        /* A pair of one non-finite class on both sides (the -inf past an indexer row's length)
         * only counts; the others (one side finite, classes that differ) take compare_one. */
        const cmp_vl finite = (arb <= max_finite) & c_finite;
        cmp_vl same_nonfinite = zero;
        if (mixed) {
            const cmp_vl wabs = __builtin_convertvector(wi & 0x7FFFFFFF, cmp_vl);
            const cmp_vl c_pinf = __builtin_convertvector(wi == 0x7F800000, cmp_vl);
            const cmp_vl c_ninf = __builtin_convertvector(wi == (int32_t)0xFF800000u, cmp_vl);
            const cmp_vl c_nan = wabs > 0x7F800000;
            const cmp_vl r_pinf = rb == exp_mask, r_ninf = rb == (exp_mask | INT64_MIN);
            const cmp_vl r_nan = arb > exp_mask;
            same_nonfinite = (r_pinf & c_pinf) | (r_ninf & c_ninf) | (r_nan & c_nan);
            n_pinf -= r_pinf & c_pinf; /* a lane's -1 counts one */
            n_ninf -= r_ninf & c_ninf;
            n_nan -= r_nan & c_nan;
        } else {
            nonfinite |= ~finite;
        }
        if (mask != NULL) {
            cmp_vb mb;
            memcpy(&mb, mask + j, sizeof mb);
            other |= __builtin_convertvector(mb, cmp_vl) == 0;
        }
        /* the poison bits (a NaN in practice, but any pattern counts as unwritten) */
        other |= __builtin_convertvector(wi == poison_w, cmp_vl);
        cmp_vl bad = ~(ad <= t) | ~(tb >= 0);
        if (!use_bounds) bad |= ad > atol;
        other |= (mixed ? ~(finite | same_nonfinite) : zero) | (finite & bad);
        /* lane k of group j holds bit j + k, so OR-ing the lanes at the end gives the mask */
        const cmp_vl bit = lane_bit << (int64_t)j;
        maybe_bits |= finite & (((ad != 0) & ~q_worst) | ((r != 0) & ~q_rel)) & bit;
        pair_bits |= finite & bit;
        informative |= finite & (absr > t);
        /* only finite pairs reach the maxima and the sums (+0 leaves a sum's bits as they are) */
        const cmp_vl tf = finite & tb, af = finite & ab;
        max_t = VBLEND(tf > max_t, tf, max_t);
        max_ad = VBLEND(af > max_ad, af, max_ad);
        cmp_vd dsq = diff * diff, rsq = r * r, bsq = r * r + c * c, tsq = t * t;
        if (mixed) {
            VFINITE_ONLY(dsq, finite);
            VFINITE_ONLY(rsq, finite);
            VFINITE_ONLY(bsq, finite);
            VFINITE_ONLY(tsq, finite);
        }
        for (int k = 0; k < CMP_W; k++) {
            s_diff += dsq[k];
            s_ref += rsq[k];
            s_both += bsq[k];
            if (use_bounds) s_tol += tsq[k];
        }
    }
    out->sum_sq_diff = s_diff;
    out->sum_sq_ref = s_ref;
    out->sum_sq_both = s_both;
    out->sum_sq_tol = s_tol;
    out->maybe_new_max = out->finite_pairs = out->pinf = out->ninf = out->nan = 0;
    out->max_t_bits = out->max_ad_bits = 0;
    out->other = out->informative = out->nonfinite = 0;
    for (int k = 0; k < CMP_W; k++) {
        out->maybe_new_max |= (uint64_t)maybe_bits[k];
        out->finite_pairs |= (uint64_t)pair_bits[k];
        out->pinf += (uint64_t)n_pinf[k];
        out->ninf += (uint64_t)n_ninf[k];
        out->nan += (uint64_t)n_nan[k];
        if (max_t[k] > out->max_t_bits) out->max_t_bits = max_t[k];
        if (max_ad[k] > out->max_ad_bits) out->max_ad_bits = max_ad[k];
        out->other |= other[k] != 0;
        out->informative |= informative[k] != 0;
        out->nonfinite |= nonfinite[k] != 0;
    }
}

#define CMP_BLOCK_VARIANT(name, dtype, use_bounds, mixed)                                          \
    ATTEST_ISA_BODY void name##_body(const compare_in *in, size_t base, double worst,             \
                                     double max_rel, cmp_block_sum *out)                          \
    {                                                                                              \
        block_terms_generic(in, base, worst, max_rel, out, dtype, use_bounds, mixed);             \
    }                                                                                              \
    ATTEST_ISA_VARIANTS(name,                                                                      \
                        (const compare_in *in, size_t base, double worst, double max_rel,         \
                         cmp_block_sum *out),                                                      \
                        (in, base, worst, max_rel, out))
CMP_BLOCK_VARIANT(block_terms_bf16_bounded, ATTEST_DTYPE_BF16, 1, 0)
CMP_BLOCK_VARIANT(block_terms_bf16_plain, ATTEST_DTYPE_BF16, 0, 0)
CMP_BLOCK_VARIANT(block_terms_f32_bounded, ATTEST_DTYPE_F32, 1, 0)
CMP_BLOCK_VARIANT(block_terms_f32_plain, ATTEST_DTYPE_F32, 0, 0)
CMP_BLOCK_VARIANT(block_mixed_bf16_bounded, ATTEST_DTYPE_BF16, 1, 1)
CMP_BLOCK_VARIANT(block_mixed_bf16_plain, ATTEST_DTYPE_BF16, 0, 1)
CMP_BLOCK_VARIANT(block_mixed_f32_bounded, ATTEST_DTYPE_F32, 1, 1)
CMP_BLOCK_VARIANT(block_mixed_f32_plain, ATTEST_DTYPE_F32, 0, 1)

/* The block's lanes: the finite-only pass, and when it met a non-finite element the pass that
 * also sorts those by class (a block of finite pairs does not pay for that). */
static inline __attribute__((always_inline)) void
block_terms(const compare_in *in, size_t base, double worst, double max_rel, cmp_block_sum *out,
            attest_dtype dtype, int use_bounds)
{
    const double sums[4] = {out->sum_sq_diff, out->sum_sq_ref, out->sum_sq_both, out->sum_sq_tol};
    if (dtype == ATTEST_DTYPE_BF16) {
        if (use_bounds) block_terms_bf16_bounded(in, base, worst, max_rel, out);
        else block_terms_bf16_plain(in, base, worst, max_rel, out);
    } else {
        if (use_bounds) block_terms_f32_bounded(in, base, worst, max_rel, out);
        else block_terms_f32_plain(in, base, worst, max_rel, out);
    }
    if (out->other || !out->nonfinite) return;
    out->sum_sq_diff = sums[0];
    out->sum_sq_ref = sums[1];
    out->sum_sq_both = sums[2];
    out->sum_sq_tol = sums[3];
    if (dtype == ATTEST_DTYPE_BF16) {
        if (use_bounds) block_mixed_bf16_bounded(in, base, worst, max_rel, out);
        else block_mixed_bf16_plain(in, base, worst, max_rel, out);
    } else {
        if (use_bounds) block_mixed_f32_bounded(in, base, worst, max_rel, out);
        else block_mixed_f32_plain(in, base, worst, max_rel, out);
    }
}

static inline double double_of(int64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* Every element in element order: the blocks that qualify through the fast path, the rest (and
 * the tail past the last whole block) through compare_one. */
static inline __attribute__((always_inline)) void
compare_loop(const compare_in *in, compare_acc *out, attest_dtype dtype, int use_bounds)
{
    compare_acc a = *out;
    const size_t count = in->count;
    size_t i = 0;
    /* The portable copy (SSE2 on x86-64) has no 64-bit integer comparison: its lanes would be
     * split element by element, slower than compare_one, so it compares element by element. */
    const size_t fast_end = attest_isa_active() == ATTEST_ISA_PORTABLE ? 0 : count;
    /* After a block that needed compare_one the next ones often do too (the -inf tail of an
     * indexer row): the lanes are skipped for 1, 2, 4, ... 8 blocks after consecutive misses,
     * and tried again after that. */
    size_t skip = 0, backoff = 0;
    for (; i + CMP_BLOCK <= fast_end; i += CMP_BLOCK) {
        cmp_block_sum bs;
        bs.other = 1;
        if (skip > 0) {
            skip--;
        } else {
            bs.sum_sq_diff = a.sum_sq_diff;
            bs.sum_sq_ref = a.sum_sq_ref;
            bs.sum_sq_both = a.sum_sq_both;
            bs.sum_sq_tol = a.sum_sq_tol;
            block_terms(in, i, a.worst_ratio, a.max_rel, &bs, dtype, use_bounds);
            if (bs.other) {
                skip = backoff;
                backoff = backoff ? (backoff < 8 ? 2 * backoff : 8) : 1;
            } else {
                backoff = 0;
            }
        }
        if (bs.other) {
            for (size_t k = i; k < i + CMP_BLOCK; k++) compare_one(in, &a, dtype, use_bounds, k);
            continue;
        }
        /* The block's first finite pair is the case's first when none came before, and it sets
         * the worst whatever its ratio. */
        const uint64_t pairs_before = a.finite_pairs;
        const size_t first = bs.finite_pairs ? i + (size_t)__builtin_ctzll(bs.finite_pairs) : 0;
        uint64_t todo = bs.maybe_new_max;
        if (pairs_before == 0 && bs.finite_pairs) todo |= UINT64_C(1) << (first - i);
        while (todo) {
            const size_t k = i + (size_t)__builtin_ctzll(todo);
            todo &= todo - 1;
            uint32_t cbits;
            const double r = in->ref[k], c = cand_value(in->cand, dtype, k, &cbits);
            update_worst_and_rel(&a, k, r, c, fabs(c - r),
                                 element_tolerance_at(in, dtype, use_bounds, r, k),
                                 pairs_before == 0 && k == first);
        }
        a.n_cmp += CMP_BLOCK;
        a.finite_pairs += (uint64_t)__builtin_popcountll(bs.finite_pairs);
        a.ref_pinf += bs.pinf;
        a.cand_pinf += bs.pinf;
        a.ref_ninf += bs.ninf;
        a.cand_ninf += bs.ninf;
        a.ref_nan += bs.nan;
        a.cand_nan += bs.nan;
        if (use_bounds) {
            a.informative |= bs.informative;
            if (double_of(bs.max_t_bits) > a.atol_eff) a.atol_eff = double_of(bs.max_t_bits);
        }
        if (double_of(bs.max_ad_bits) > a.max_abs) a.max_abs = double_of(bs.max_ad_bits);
        a.sum_sq_diff = bs.sum_sq_diff;
        a.sum_sq_ref = bs.sum_sq_ref;
        a.sum_sq_both = bs.sum_sq_both;
        a.sum_sq_tol = bs.sum_sq_tol;
    }
    for (; i < count; i++) compare_one(in, &a, dtype, use_bounds, i);
    *out = a;
}

static void compare_bf16_bounded(const compare_in *in, compare_acc *a)
{
    compare_loop(in, a, ATTEST_DTYPE_BF16, 1);
}
static void compare_bf16_plain(const compare_in *in, compare_acc *a)
{
    compare_loop(in, a, ATTEST_DTYPE_BF16, 0);
}
static void compare_f32_bounded(const compare_in *in, compare_acc *a)
{
    compare_loop(in, a, ATTEST_DTYPE_F32, 1);
}
static void compare_f32_plain(const compare_in *in, compare_acc *a)
{
    compare_loop(in, a, ATTEST_DTYPE_F32, 0);
}

attest_status attest_compare_tensor(const double *ref, const void *cand, attest_dtype cand_dtype,
                                    size_t count, const int64_t *shape, int32_t rank,
                                    const uint8_t *compare_mask, uint32_t poison_bits,
                                    const attest_tolerance *tol, attest_tensor_metrics *m)
{
    return attest_compare_tensor_bounded(ref, NULL, cand, cand_dtype, count, shape, rank,
                                         compare_mask, poison_bits, tol, m);
}

attest_status attest_compare_tensor_bounded(const double *ref, const double *bound, const void *cand,
                                            attest_dtype cand_dtype, size_t count,
                                            const int64_t *shape, int32_t rank,
                                            const uint8_t *compare_mask, uint32_t poison_bits,
                                            const attest_tolerance *tol, attest_tensor_metrics *m)
{
    ATTEST_RETURN_IF(m == NULL || tol == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "compare: metrics and tolerance must not be NULL");
    ATTEST_RETURN_IF(count > 0 && (ref == NULL || cand == NULL), ATTEST_ERR_INVALID_ARGUMENT,
                     "compare: reference and candidate must not be NULL");
    ATTEST_RETURN_IF(cand_dtype != ATTEST_DTYPE_F32 && cand_dtype != ATTEST_DTYPE_BF16,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "compare: candidate dtype must be float32 or bf16 (got %d)", (int)cand_dtype);
    ATTEST_RETURN_IF(rank < 0 || rank > 4, ATTEST_ERR_INVALID_ARGUMENT,
                     "compare: rank %d outside [0, 4]", (int)rank);
    if (shape != NULL && rank > 0) {
        uint64_t prod = 1;
        for (int32_t d = 0; d < rank; ++d) {
            ATTEST_RETURN_IF(shape[d] < 0, ATTEST_ERR_INVALID_ARGUMENT,
                             "compare: shape[%d] = %lld is negative", (int)d, (long long)shape[d]);
            prod *= (uint64_t)shape[d];
        }
        ATTEST_RETURN_IF(prod != count, ATTEST_ERR_INVALID_ARGUMENT,
                         "compare: shape holds %llu elements but count is %zu",
                         (unsigned long long)prod, count);
    }
    ATTEST_FORWARD(check_tolerance(tol));
    const int use_bounds = bounded(tol, bound);

    char name[sizeof m->output];
    memcpy(name, m->output, sizeof name);
    name[sizeof name - 1] = '\0';
    memset(m, 0, sizeof *m);
    memcpy(m->output, name, sizeof name);
    m->topk_recall = 1.0;
    m->topk_worst_row = -1;

    /* Pass 1 (bounds off): max |ref| over compared finite references, which sets the effective
     * atol. With bounds on atol is not used and the finite references are counted by the loop
     * (n_cmp less the non-finite ones). */
    double max_abs_ref = 0;
    uint64_t finite_refs = 0;
    if (!use_bounds)
        for (size_t i = 0; i < count; ++i) {
            if (compare_mask != NULL && !compare_mask[i]) continue;
            if (!isfinite(ref[i])) continue;
            ++finite_refs;
            if (fabs(ref[i]) > max_abs_ref) max_abs_ref = fabs(ref[i]);
        }
    double atol = tol->atol;
    if (tol->atol_ref_scale * max_abs_ref > atol) atol = tol->atol_ref_scale * max_abs_ref;
    m->atol_effective = use_bounds ? 0.0 : atol;

    const uint32_t poison =
        cand_dtype == ATTEST_DTYPE_BF16 ? (poison_bits & 0xFFFFu) : poison_bits;
    compare_acc acc;
    memset(&acc, 0, sizeof acc);
    acc.atol_eff = m->atol_effective;
    const compare_in in = {ref, bound, cand, count, compare_mask, poison, tol, atol};
    if (cand_dtype == ATTEST_DTYPE_BF16) {
        if (use_bounds) compare_bf16_bounded(&in, &acc);
        else compare_bf16_plain(&in, &acc);
    } else {
        if (use_bounds) compare_f32_bounded(&in, &acc);
        else compare_f32_plain(&in, &acc);
    }
    if (use_bounds) finite_refs = acc.n_cmp - acc.ref_pinf - acc.ref_ninf - acc.ref_nan;
    const uint64_t n_cmp = acc.n_cmp, unwritten = acc.unwritten, ref_pinf = acc.ref_pinf,
                   ref_ninf = acc.ref_ninf, ref_nan = acc.ref_nan, cand_pinf = acc.cand_pinf,
                   cand_ninf = acc.cand_ninf, cand_nan = acc.cand_nan, nonfinite = acc.nonfinite,
                   finite_pairs = acc.finite_pairs, elem_fail = acc.elem_fail;
    const size_t first_nonfinite = acc.first_nonfinite, worst_at = acc.worst_at;
    const int have_worst = acc.have_worst, informative = acc.informative;
    const double worst_ratio = acc.worst_ratio, worst_tol = acc.worst_tol,
                 worst_ref = acc.worst_ref, worst_cand = acc.worst_cand, max_abs = acc.max_abs,
                 max_rel = acc.max_rel, max_code = acc.max_code, atol_eff = acc.atol_eff;
    const double sum_sq_diff = acc.sum_sq_diff, sum_sq_ref = acc.sum_sq_ref,
                 sum_sq_both = acc.sum_sq_both, sum_sq_tol = acc.sum_sq_tol;
    m->count = n_cmp;
    m->unwritten = unwritten;
    m->ref_posinf = ref_pinf;
    m->ref_neginf = ref_ninf;
    m->ref_nan = ref_nan;
    m->cand_posinf = cand_pinf;
    m->cand_neginf = cand_ninf;
    m->cand_nan = cand_nan;
    m->nonfinite_mismatches = nonfinite;
    if (nonfinite > 0) unravel(first_nonfinite, shape, rank, &m->first_nonfinite_mismatch);
    m->finite_pairs = finite_pairs;
    m->element_failures = elem_fail;
    m->atol_effective = atol_eff;
    if (have_worst) {
        m->worst_ratio = worst_ratio;
        m->worst_tol = worst_tol;
        unravel(worst_at, shape, rank, &m->worst);
        m->worst_ref = worst_ref;
        m->worst_cand = worst_cand;
    }
    m->max_abs = max_abs;
    m->max_rel = max_rel;
    m->max_code_distance = max_code;

    m->element_fail_fraction =
        m->finite_pairs ? (double)m->element_failures / (double)m->finite_pairs : 0.0;
    m->cos_diff = sum_sq_both > 0 ? sum_sq_diff / sum_sq_both : 0.0;
    if (sum_sq_ref > 0)
        m->nmse = sum_sq_diff / sum_sq_ref;
    else
        m->nmse = sum_sq_diff > 0 ? INFINITY : 0.0;

    if (use_bounds)
        m->vacuous = finite_refs == 0 || !informative;
    else
        m->vacuous = finite_refs == 0 || max_abs_ref < tol->vacuity_factor * tol->atol;

    /* With bounds, the energy gates never ask for less error than the element bounds allow
     * together: a correct kernel with every element at its bound passes them. */
    double cos_max = tol->cos_diff_max, nmse_max = tol->nmse_max;
    if (use_bounds) {
        if (sum_sq_both > 0 && sum_sq_tol / sum_sq_both > cos_max) cos_max = sum_sq_tol / sum_sq_both;
        if (nmse_max >= 0) {
            double allowed = sum_sq_ref > 0 ? sum_sq_tol / sum_sq_ref : (sum_sq_tol > 0 ? INFINITY : 0);
            if (allowed > nmse_max) nmse_max = allowed;
        }
    }
    uint32_t failed = 0;
    if (m->nonfinite_mismatches > 0) failed |= ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE);
    if (m->element_fail_fraction > tol->max_fail_fraction)
        failed |= ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT);
    if (!(m->cos_diff <= cos_max)) failed |= ATTEST_GATE_BIT(ATTEST_GATE_COSINE);
    if (tol->nmse_max >= 0 && !(m->nmse <= nmse_max)) failed |= ATTEST_GATE_BIT(ATTEST_GATE_NMSE);
    if (tol->max_code_distance >= 0 && m->max_code_distance > tol->max_code_distance)
        failed |= ATTEST_GATE_BIT(ATTEST_GATE_CODE);
    if (m->unwritten > 0) failed |= ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN);
    m->failed_gates = failed;
    return ATTEST_OK;
}

/* Marks: bit 0 = in the reference set, bit 1 = in the candidate set. */
static attest_status mark_set(uint8_t *marks, int32_t len, const int32_t *set, int32_t k,
                              uint8_t bit, const char *which, int32_t *valid)
{
    *valid = 0;
    for (int32_t j = 0; j < k; ++j) {
        int32_t p = set[j];
        if (p == -1) continue;
        ATTEST_RETURN_IF(p < 0 || p >= len, ATTEST_ERR_INVALID_ARGUMENT,
                         "top-k: %s slot %d holds position %d outside [0, %d)", which, (int)j,
                         (int)p, (int)len);
        ATTEST_RETURN_IF(marks[p] & bit, ATTEST_ERR_INVALID_ARGUMENT,
                         "top-k: %s slot %d repeats position %d", which, (int)j, (int)p);
        marks[p] |= bit;
        ++*valid;
    }
    return ATTEST_OK;
}

/* Ascending, NaN last: a total order for qsort. */
static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y)) return (isnan(x) != 0) - (isnan(y) != 0);
    return (x > y) - (x < y);
}

/* Grow-only per-thread scratch of the top-k comparison (a row's marks, the tie ends, the row
 * tolerances): a fuzz target compares one small case after another, and allocating them per
 * row was most of what a whole exec allocated. Bounded by the widest row seen. */
typedef struct topk_buf {
    void *p;
    size_t cap;
} topk_buf;
static _Thread_local topk_buf topk_marks, topk_ends, topk_tol;

static void *topk_take(topk_buf *b, size_t bytes)
{
    if (bytes > b->cap) {
        void *q = malloc(bytes);
        if (q == NULL) return NULL;
        free(b->p);
        b->p = q;
        b->cap = bytes;
    }
    return b->p;
}

/* The row comparison; *cand_bad tells a malformed candidate (a verdict for the caller) from a
 * malformed reference set (a harness bug). */
static attest_status topk_row(const double *ref_scores, const double *elem_tol, int32_t len,
                              const int32_t *cand_set, const int32_t *ref_set, int32_t k,
                              double tie_atol, double tie_rtol, double *recall, int *cand_bad)
{
    *cand_bad = 0;
    ATTEST_RETURN_IF(recall == NULL || k < 0 || len < 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k: bad arguments (k %d, len %d)", (int)k, (int)len);
    ATTEST_RETURN_IF(k > 0 && (cand_set == NULL || ref_set == NULL),
                     ATTEST_ERR_INVALID_ARGUMENT, "top-k: sets must not be NULL");
    ATTEST_RETURN_IF(len > 0 && ref_scores == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k: reference scores must not be NULL");
    *recall = 0.0;
    uint8_t *marks = topk_take(&topk_marks, len > 0 ? (size_t)len : 1u);
    ATTEST_RETURN_IF(marks == NULL, ATTEST_ERR_OUT_OF_MEMORY, "top-k: out of memory (len %d)",
                     (int)len);
    memset(marks, 0, len > 0 ? (size_t)len : 1u);
    int32_t n_ref = 0, n_cand = 0;
    attest_status st = mark_set(marks, len, ref_set, k, 1u, "reference", &n_ref);
    if (st == ATTEST_OK) {
        st = mark_set(marks, len, cand_set, k, 2u, "candidate", &n_cand);
        *cand_bad = st != ATTEST_OK;
    }
    if (st != ATTEST_OK) return st;
    if (n_ref == 0) {
        *recall = n_cand == 0 ? 1.0 : 0.0;
        return ATTEST_OK;
    }

    /* The k-th reference score, recomputed from the scores rather than trusted from the order. */
    double kth = INFINITY;
    int have_kth = 0;
    for (int32_t j = 0; j < k; ++j)
        if (ref_set[j] != -1 && (!have_kth || ref_scores[ref_set[j]] < kth)) {
            kth = ref_scores[ref_set[j]];
            have_kth = 1;
        }
    double band = fmax(tie_atol, tie_rtol * fabs(kth));
    if (!isfinite(band)) band = isfinite(tie_atol) ? tie_atol : 0.0;
    int32_t common = 0, extra_ties = 0, missed_ties = 0;
    if (elem_tol != NULL) {
        /* A candidate-only p may stand in for a reference-only q when some values within the
         * element tolerances rank p at or above q: r_p + T_p + band >= r_q - T_q. Comparing each
         * p against the k-th score and its tolerance alone (the rule before) missed the pairs
         * where q's own tolerance is the wide one: a correct kernel whose every element passed
         * could fail the gate. The pairs form a threshold graph (p's partners are every q whose
         * lower end is at most p's upper end), so matching the sorted ends greedily is maximal. */
        double *upper = topk_take(&topk_ends, 2 * ((size_t)k + 1) * sizeof *upper);
        if (upper == NULL)
            return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "top-k: out of memory (k %d)", (int)k);
        double *lower = upper + (size_t)k + 1;
        for (int32_t p = 0; p < len; ++p) {
            if (marks[p] == 3u) ++common;
            else if (marks[p] == 2u && extra_ties <= k) upper[extra_ties++] = ref_scores[p] + elem_tol[p] + band;
            else if (marks[p] == 1u && missed_ties <= k) lower[missed_ties++] = ref_scores[p] - elem_tol[p];
        }
        qsort(upper, (size_t)extra_ties, sizeof *upper, cmp_double);
        qsort(lower, (size_t)missed_ties, sizeof *lower, cmp_double);
        int32_t matched = 0;
        for (int32_t i = 0; i < extra_ties && matched < missed_ties; ++i)
            if (lower[matched] <= upper[i]) ++matched;
        *recall = (double)(common + matched) / (double)n_ref;
        return ATTEST_OK;
    }
    const double lo = kth - band, hi = kth + band;
    for (int32_t p = 0; p < len; ++p) {
        if (marks[p] == 3u) ++common;
        else if (marks[p] == 2u && ref_scores[p] >= lo) ++extra_ties;
        else if (marks[p] == 1u && ref_scores[p] <= hi) ++missed_ties;
    }
    int32_t hits = common + (extra_ties < missed_ties ? extra_ties : missed_ties);
    *recall = (double)hits / (double)n_ref;
    return ATTEST_OK;
}

attest_status attest_compare_topk_row(const double *ref_scores, int32_t len, const int32_t *cand_set,
                                      const int32_t *ref_set, int32_t k, double tie_atol,
                                      double tie_rtol, double *recall)
{
    int cand_bad;
    return topk_row(ref_scores, NULL, len, cand_set, ref_set, k, tie_atol, tie_rtol, recall,
                    &cand_bad);
}

attest_status attest_compare_topk(const double *ref_logits, int32_t rows, int32_t width,
                                  const int32_t *row_len, const int32_t *cand_sets,
                                  const int32_t *ref_sets, int32_t k, const attest_tolerance *tol,
                                  attest_tensor_metrics *m)
{
    return attest_compare_topk_bounded(ref_logits, NULL, rows, width, row_len, cand_sets, ref_sets,
                                       k, tol, m);
}

attest_status attest_compare_topk_bounded(const double *ref_logits, const double *bound,
                                          int32_t rows, int32_t width, const int32_t *row_len,
                                          const int32_t *cand_sets, const int32_t *ref_sets,
                                          int32_t k, const attest_tolerance *tol,
                                          attest_tensor_metrics *m)
{
    ATTEST_RETURN_IF(tol == NULL || m == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k: tolerance and metrics must not be NULL");
    if (tol->topk_min_recall < 0) return ATTEST_OK;
    ATTEST_RETURN_IF(rows < 0 || width < 0 || k < 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k: bad shape (rows %d, width %d, k %d)", (int)rows, (int)width, (int)k);
    ATTEST_RETURN_IF(rows > 0 && (ref_logits == NULL || row_len == NULL ||
                                  (k > 0 && (cand_sets == NULL || ref_sets == NULL))),
                     ATTEST_ERR_INVALID_ARGUMENT, "top-k: inputs must not be NULL");
    const int use_bounds = bounded(tol, bound);
    double *row_tol = NULL;
    if (use_bounds) {
        row_tol = topk_take(&topk_tol, (width > 0 ? (size_t)width : 1u) * sizeof *row_tol);
        ATTEST_RETURN_IF(row_tol == NULL, ATTEST_ERR_OUT_OF_MEMORY, "top-k: out of memory");
    }
    m->topk_checked = 1;
    m->topk_recall = 1.0;
    m->topk_worst_row = -1;
    double tie_atol = tol->topk_tie_atol;
    if (!use_bounds && isfinite(m->atol_effective) && 2 * m->atol_effective > tie_atol)
        tie_atol = 2 * m->atol_effective;
    attest_status st = ATTEST_OK;
    for (int32_t r = 0; r < rows; ++r) {
        if (row_len[r] < 0 || row_len[r] > width) {
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "top-k: row %d length %d outside [0, %d]",
                             (int)r, (int)row_len[r], (int)width);
            break;
        }
        const double *scores = ref_logits + (size_t)r * (size_t)width;
        if (row_tol != NULL)
            for (int32_t p = 0; p < row_len[r]; ++p)
                row_tol[p] = attest_element_tolerance(tol, ATTEST_DTYPE_F32, scores[p],
                                                      bound[(size_t)r * (size_t)width + (size_t)p]);
        double recall = 0;
        const size_t off = (size_t)r * (size_t)k;
        int cand_bad = 0;
        st = topk_row(scores, row_tol, row_len[r], cand_sets + off, ref_sets + off, k, tie_atol,
                      tol->topk_tie_rtol, &recall, &cand_bad);
        if (st != ATTEST_OK && !cand_bad) break;
        if (st != ATTEST_OK) recall = 0.0; /* a malformed candidate row is a miss, not an error */
        st = ATTEST_OK;
        if (m->topk_worst_row < 0 || recall < m->topk_recall) {
            m->topk_recall = recall;
            m->topk_worst_row = r;
        }
    }
    ATTEST_FORWARD(st);
    if (m->topk_recall < tol->topk_min_recall) m->failed_gates |= ATTEST_GATE_BIT(ATTEST_GATE_TOPK);
    return ATTEST_OK;
}

double attest_cosine_difference(const double *ref, const double *cand, size_t count)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < count; ++i) {
        if (!isfinite(ref[i]) || !isfinite(cand[i])) continue;
        double d = cand[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i] + cand[i] * cand[i];
    }
    return den > 0 ? num / den : 0.0;
}
