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

/* Half a step (unit in the last place) of a format with `mant` mantissa bits and float32's
 * exponent range at magnitude x >= 0, subnormal steps included: 2^(max(floor(log2 x), -126) -
 * mant - 1), from the double's exponent bits (frexp and ldexp were a library call each per
 * element), as selects so that the comparison's lanes vectorize it. A double subnormal lies far
 * below 2^-126; every result is a normal double, 2^-150 to 2^1015 (the half of a power of two
 * is exact, so this is 0.5 * the step). */
ATTEST_ISA_BODY double half_step(int64_t mant, double x)
{
    uint64_t xb;
    memcpy(&xb, &x, sizeof xb);
    const int64_t e = (int64_t)((xb >> 52) & 0x7FFu) - 1023;
    /* x > 0, finite, normal and above 2^-126: its own exponent; else float's least */
    const int64_t e2 = x > 0 && x < INFINITY && e > -126 ? e : -126;
    const uint64_t half_bits = (uint64_t)(e2 - mant - 1 + 1023) << 52;
    double half;
    memcpy(&half, &half_bits, sizeof half);
    return half;
}

static int64_t mantissa_bits(attest_dtype dtype) { return dtype == ATTEST_DTYPE_BF16 ? 7 : 23; }

/* attest_element_tolerance with the format's mantissa bits: inline in the comparison's lanes. */
ATTEST_ISA_BODY double element_tolerance(double factor, int64_t mant, double r, double b)
{
    const double kb = factor * (isfinite(b) ? b : INFINITY);
    return isfinite(kb) ? kb + half_step(mant, fabs(r) + kb) : INFINITY;
}

double attest_element_tolerance(const attest_tolerance *tol, attest_dtype dtype, double r, double b)
{
    return element_tolerance(tol->bound_factor, mantissa_bits(dtype), r, b);
}

double attest_rounding_error(attest_dtype dtype, double x)
{
    if (dtype != ATTEST_DTYPE_F32 && dtype != ATTEST_DTYPE_BF16) return 0.0;
    return half_step(mantissa_bits(dtype), fabs(x));
}

/* The comparison runs a block of CMP_BLOCK elements at a time (attest_compare_tensor_bounded).
 * What an element needs on its own (its values and classes, its tolerance, its error ratio and
 * relative error: two divisions and the bound's exponent arithmetic, most of an element's time
 * in one scalar pass) and everything the gates need that does not depend on order (counts, the
 * maxima, "some element is informative") are computed for the whole block in vector lanes
 * (cmp_fill); what depends on order stays one element at a time in index order in the caller:
 * the four sums, and so their bits, and the worst pair, the first of the largest ratio. A lane
 * gets the value the one-pass loop computed (the same IEEE operations on the same operands),
 * and a maximum of values that are never NaN is the same in any order. CMP_WAYS accumulators
 * per maximum, so the reductions need no reassociation to vectorize. */
#define CMP_BLOCK 32
#define CMP_WAYS 8

/* One block; index j is element i0 + j. Lanes past the block's end hold zeros. Flags are
 * 64-bit like the values, so that the loops over them vectorize without widening. */
typedef struct cmp_lanes {
    double r[CMP_BLOCK], c[CMP_BLOCK];
    double t[CMP_BLOCK];     /* the element's tolerance */
    double ratio[CMP_BLOCK]; /* |c - r| / t (0 when equal, inf when t <= 0); 0 off pairs */
    double ad[CMP_BLOCK], rel[CMP_BLOCK]; /* |c - r| and |c - r| / |r|; 0 off pairs, r = 0 */
    /* The sums' terms: (c - r)^2, r^2, r^2 + c^2, t^2 (inf for an infinite t); +0 where the
     * lane is not a compared finite pair, which leaves a sum of non-negative terms as it is */
    double dd[CMP_BLOCK], rr[CMP_BLOCK], both[CMP_BLOCK], tt[CMP_BLOCK];
    uint64_t bits[CMP_BLOCK];
    int64_t in[CMP_BLOCK];   /* 1: compared (the mask) */
    int64_t cls[CMP_BLOCK];  /* class(r) | class(c) << 2 (CLASS_*): 0 when both are finite */
    int64_t pair[CMP_BLOCK]; /* 1: compared and both finite */
    int64_t code[CMP_BLOCK]; /* 1: a pair the code gate counts (outside its tolerance / atol) */
    /* The block's order-free reductions (over compared lanes / pairs) */
    uint64_t compared, unwritten, pairs, fails, nonfinite, coded;
    int informative;         /* bounds on: some pair's |r| exceeds its tolerance */
    double max_t, max_abs, max_rel, max_ratio; /* 0 when no pair */
} cmp_lanes;

/* A value's CLASS_*, from its bits: the exponent all ones is inf (mantissa 0; by sign) or
 * NaN. */
ATTEST_ISA_BODY int64_t lane_class(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    const int64_t special = (b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull;
    const int64_t nan = (b & 0x000FFFFFFFFFFFFFull) != 0;
    const int64_t neg = (int64_t)(b >> 63);
    return special ? (nan ? CLASS_NAN : CLASS_POSINF + neg) : CLASS_FINITE;
}

/* The largest v[j] with on[j] (0 when none; every v >= 0 or the lane is off). */
ATTEST_ISA_BODY double lane_max(const double *v, const int64_t *on)
{
    double acc[CMP_WAYS] = {0};
    for (size_t j = 0; j < CMP_BLOCK; j += CMP_WAYS)
        for (size_t k = 0; k < CMP_WAYS; ++k) {
            const double x = on[j + k] ? v[j + k] : 0.0;
            acc[k] = x > acc[k] ? x : acc[k];
        }
    double m = 0;
    for (size_t k = 0; k < CMP_WAYS; ++k) m = acc[k] > m ? acc[k] : m;
    return m;
}

ATTEST_ISA_BODY uint64_t lane_count(const int64_t *on)
{
    int64_t n = 0;
    for (size_t j = 0; j < CMP_BLOCK; ++j) n += on[j];
    return (uint64_t)n;
}

/* Fills a block's lanes and reductions (nb <= CMP_BLOCK elements from ref, bound, cand and
 * mask, each already at the block's start; mask may be NULL, bound NULL without bounds).
 * No multiply-add that a compiler could fuse (half a step is built as a power of two; each
 * product is a statement of its own), so the portable, AVX2 and AVX-512 copies agree bit for
 * bit (tests/test_isa.c). Divisors are 1 where a quotient is not used: nothing divides by 0. */
ATTEST_ISA_BODY void cmp_fill_body(cmp_lanes *L, const double *ref, const double *bound,
                                   const void *cand, const uint8_t *mask, int bf16,
                                   uint32_t poison, double factor, double atol, double rtol,
                                   size_t nb)
{
    const int use_bounds = bound != NULL;
    if (bf16) {
        const uint8_t *p = cand;
        for (size_t j = 0; j < nb; ++j) {
            uint16_t h;
            memcpy(&h, p + 2 * j, 2);
            const uint32_t w = (uint32_t)h << 16;
            float f;
            memcpy(&f, &w, 4);
            L->bits[j] = h;
            L->c[j] = f;
        }
    } else {
        const uint8_t *p = cand;
        for (size_t j = 0; j < nb; ++j) {
            uint32_t w;
            memcpy(&w, p + 4 * j, 4);
            float f;
            memcpy(&f, &w, 4);
            L->bits[j] = w;
            L->c[j] = f;
        }
    }
    for (size_t j = 0; j < nb; ++j) L->r[j] = ref[j];
    if (mask)
        for (size_t j = 0; j < nb; ++j) L->in[j] = mask[j] != 0;
    else
        for (size_t j = 0; j < nb; ++j) L->in[j] = 1;
    for (size_t j = nb; j < CMP_BLOCK; ++j) {
        L->r[j] = L->c[j] = 0;
        L->bits[j] = 0;
        L->in[j] = 0;
    }
    for (size_t j = 0; j < CMP_BLOCK; ++j) {
        L->cls[j] = lane_class(L->r[j]) | lane_class(L->c[j]) << 2;
        L->pair[j] = L->in[j] & (L->cls[j] == 0);
    }
    if (use_bounds) {
        const int64_t mant = bf16 ? 7 : 23;
        for (size_t j = 0; j < nb; ++j) L->t[j] = element_tolerance(factor, mant, L->r[j], bound[j]);
    } else {
        for (size_t j = 0; j < nb; ++j) L->t[j] = fmax(atol, rtol * fabs(L->r[j]));
    }
    for (size_t j = nb; j < CMP_BLOCK; ++j) L->t[j] = 0;
    for (size_t j = 0; j < CMP_BLOCK; ++j) {
        const double r = L->r[j], c = L->c[j], t = L->t[j];
        const double a = fabs(c - r), ar = fabs(r);
        const double q = a / (t > 0 ? t : 1.0);
        const double rel = a / (ar != 0 ? ar : 1.0);
        const int64_t on = L->pair[j];
        L->ad[j] = on ? a : 0.0;
        L->ratio[j] = on && a != 0 ? (t > 0 ? q : INFINITY) : 0.0;
        L->rel[j] = on && ar != 0 ? rel : 0.0;
    }
    for (size_t j = 0; j < CMP_BLOCK; ++j) {
        const double r = L->r[j], c = L->c[j], t = L->t[j];
        const double diff = c - r;
        const double d2 = diff * diff;
        const double r2 = r * r;
        const double c2 = c * c;
        const double b2 = r2 + c2;
        const double t2 = t * t;
        const int64_t on = L->pair[j];
        L->dd[j] = on ? d2 : 0.0;
        L->rr[j] = on ? r2 : 0.0;
        L->both[j] = on ? b2 : 0.0;
        L->tt[j] = on && use_bounds ? (t < INFINITY ? t2 : INFINITY) : 0.0;
    }
    int64_t fails = 0, inform = 0, unwritten = 0, nonfinite = 0;
    for (size_t j = 0; j < CMP_BLOCK; ++j) {
        const double a = fabs(L->c[j] - L->r[j]), t = L->t[j];
        const int64_t on = L->pair[j];
        const int64_t fail = !(a <= t);
        fails += on & fail;
        L->code[j] = on & (use_bounds ? fail : a > atol);
        inform += on & (fabs(L->r[j]) > t);
        unwritten += L->in[j] & (L->bits[j] == poison);
        nonfinite += L->in[j] & (L->cls[j] != 0);
    }
    L->compared = lane_count(L->in);
    L->unwritten = (uint64_t)unwritten;
    L->pairs = lane_count(L->pair);
    L->fails = (uint64_t)fails;
    L->nonfinite = (uint64_t)nonfinite;
    L->coded = lane_count(L->code);
    L->informative = use_bounds && inform > 0;
    L->max_t = use_bounds ? lane_max(L->t, L->pair) : 0.0;
    L->max_abs = lane_max(L->ad, L->pair);
    L->max_rel = lane_max(L->rel, L->pair);
    L->max_ratio = lane_max(L->ratio, L->pair);
}

ATTEST_ISA_VARIANTS(cmp_fill,
                    (cmp_lanes * L, const double *ref, const double *bound, const void *cand,
                     const uint8_t *mask, int bf16, uint32_t poison, double factor, double atol,
                     double rtol, size_t nb),
                    (L, ref, bound, cand, mask, bf16, poison, factor, atol, rtol, nb))

/* Pass 1 of the comparison: max |ref| and the count over compared finite references. */
ATTEST_ISA_BODY void cmp_ref_max_body(const double *ref, const uint8_t *mask, size_t count,
                                      double *max_out, uint64_t *finite_out)
{
    double acc[CMP_WAYS] = {0};
    uint64_t n = 0;
    size_t i = 0;
    for (; i + CMP_WAYS <= count; i += CMP_WAYS)
        for (size_t k = 0; k < CMP_WAYS; ++k) {
            const double x = ref[i + k];
            const int on = (mask == NULL || mask[i + k] != 0) && isfinite(x);
            const double a = on ? fabs(x) : 0.0;
            n += (uint64_t)on;
            acc[k] = a > acc[k] ? a : acc[k];
        }
    for (; i < count; ++i) {
        const double x = ref[i];
        const int on = (mask == NULL || mask[i] != 0) && isfinite(x);
        const double a = on ? fabs(x) : 0.0;
        n += (uint64_t)on;
        acc[0] = a > acc[0] ? a : acc[0];
    }
    double m = 0;
    for (size_t k = 0; k < CMP_WAYS; ++k) m = acc[k] > m ? acc[k] : m;
    *max_out = m;
    *finite_out = n;
}

ATTEST_ISA_VARIANTS(cmp_ref_max,
                    (const double *ref, const uint8_t *mask, size_t count, double *max_out,
                     uint64_t *finite_out),
                    (ref, mask, count, max_out, finite_out))

static int bounded(const attest_tolerance *tol, const double *bound)
{
    return bound != NULL && tol->bound_factor >= 0;
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

    /* Pass 1: max |ref| over compared finite references, which sets the effective atol. */
    double max_abs_ref = 0;
    uint64_t finite_refs = 0;
    cmp_ref_max(ref, compare_mask, count, &max_abs_ref, &finite_refs);
    double atol = tol->atol;
    if (tol->atol_ref_scale * max_abs_ref > atol) atol = tol->atol_ref_scale * max_abs_ref;
    m->atol_effective = use_bounds ? 0.0 : atol;

    const uint32_t poison =
        cand_dtype == ATTEST_DTYPE_BF16 ? (poison_bits & 0xFFFFu) : poison_bits;
    /* The loop's counters and maxima are locals, stored into *m after it: as fields of *m,
     * which the compiler must assume the candidate's bytes may alias, each was loaded and stored
     * again on every element (the comparator was a tenth of a small decode case's exec). The
     * operations and their order are those of the loop before; CMP_BLOCK says how a block
     * splits them. */
    uint64_t n_cmp = 0, unwritten = 0, ref_pinf = 0, ref_ninf = 0, ref_nan = 0, cand_pinf = 0,
             cand_ninf = 0, cand_nan = 0, nonfinite = 0, finite_pairs = 0, elem_fail = 0;
    size_t first_nonfinite = 0, worst_at = 0;
    int have_worst = 0;
    double worst_ratio = 0, worst_tol = 0, worst_ref = 0, worst_cand = 0, max_abs = 0,
           max_rel = 0, max_code = 0, atol_eff = m->atol_effective;
    double sum_sq_diff = 0, sum_sq_ref = 0, sum_sq_both = 0, sum_sq_tol = 0;
    int informative = 0; /* some reference exceeds its own tolerance (bounds on) */
    for (size_t i0 = 0; i0 < count; i0 += CMP_BLOCK) {
        const size_t nb = count - i0 < CMP_BLOCK ? count - i0 : CMP_BLOCK;
        cmp_lanes L;
        cmp_fill(&L, ref + i0, use_bounds ? bound + i0 : NULL,
                 (const uint8_t *)cand + i0 * (cand_dtype == ATTEST_DTYPE_BF16 ? 2 : 4),
                 compare_mask ? compare_mask + i0 : NULL, cand_dtype == ATTEST_DTYPE_BF16, poison,
                 tol->bound_factor, atol, tol->rtol, nb);
        n_cmp += L.compared;
        unwritten += L.unwritten;
        elem_fail += L.fails;
        if (L.nonfinite > 0) /* some side non-finite: the nonfinite gate alone judges it */
            for (size_t j = 0; j < nb; ++j) {
                if (!L.in[j] || L.cls[j] == 0) continue;
                const int rc = L.cls[j] & 3, cc = L.cls[j] >> 2;
                ref_pinf += rc == CLASS_POSINF;
                ref_ninf += rc == CLASS_NEGINF;
                ref_nan += rc == CLASS_NAN;
                cand_pinf += cc == CLASS_POSINF;
                cand_ninf += cc == CLASS_NEGINF;
                cand_nan += cc == CLASS_NAN;
                if (rc != cc) {
                    if (nonfinite++ == 0) first_nonfinite = i0 + j;
                }
            }
        if (L.pairs == 0) continue;
        /* The worst pair: the first of the largest ratio (ratios are >= 0 and never NaN, so
         * the running "ratio > worst, or the first pair" rule picks exactly that). */
        if (finite_pairs == 0 || L.max_ratio > worst_ratio) {
            size_t j = 0;
            while (!(L.pair[j] && L.ratio[j] == L.max_ratio)) ++j;
            worst_ratio = L.ratio[j];
            worst_tol = L.t[j];
            worst_at = i0 + j;
            have_worst = 1;
            worst_ref = L.r[j];
            worst_cand = L.c[j];
        }
        finite_pairs += L.pairs;
        if (use_bounds) {
            if (L.informative) informative = 1;
            if (L.max_t > atol_eff) atol_eff = L.max_t;
        }
        if (L.max_abs > max_abs) max_abs = L.max_abs;
        /* A zero reference has no relative error to speak of; atol judges it. */
        if (L.max_rel > max_rel) max_rel = L.max_rel;
        /* sum(r^2 + c^2) - 2 sum(rc) == sum((c - r)^2): the same cosine difference without the
         * cancellation of "1 - ratio", so tiny differences are not lost to rounding. In index
         * order, as one pass adds them (a lane that is no pair adds +0). */
        for (size_t j = 0; j < nb; ++j) {
            sum_sq_diff += L.dd[j];
            sum_sq_ref += L.rr[j];
            sum_sq_both += L.both[j];
            sum_sq_tol += L.tt[j];
        }
        if (L.coded > 0)
            for (size_t j = 0; j < nb; ++j) {
                if (!L.code[j]) continue;
                const double steps = code_distance(L.r[j], L.bits[j], cand_dtype);
                if (steps > max_code) max_code = steps;
            }
    }
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
