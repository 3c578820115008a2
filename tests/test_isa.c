/* Tests of the per-ISA copies of the vector loops (attest/isa.h): every copy this machine runs
 * gives the portable copy's bits, in the references (simulated, true, bounds) and in the
 * built-in CPU candidates, on generated cases of both families. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/bound.h"
#include "attest/compare.h"
#include "attest/generator.h"
#include "attest/isa.h"
#include "attest/numerics.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/registry.h"
#include "attest/rng.h"

#define CASES_PER_FAMILY 40
#define MAX_OUTPUTS 4
#define MAX_CANDIDATES 16

/* Everything one ISA computed for one case, flattened: reference outputs in both modes, the
 * bounds, every CPU candidate's output bytes (the outputs poisoned alike before each run) and
 * the comparator's metrics of each against the last reference and the bounds. */
typedef struct isa_result {
    unsigned char *bytes;
    size_t len, cap;
} isa_result;

static void append(isa_result *r, const void *p, size_t n)
{
    if (r->len + n > r->cap) {
        r->cap = (r->len + n) * 2;
        r->bytes = realloc(r->bytes, r->cap);
        assert_non_null(r->bytes);
    }
    memcpy(r->bytes + r->len, p, n);
    r->len += n;
}

static size_t cpu_candidates(attest_kernel kernel, const attest_candidate **out)
{
    const attest_candidate *const *list;
    size_t n = attest_builtin_candidates(&list), k = 0;
    for (size_t i = 0; i < n && k < MAX_CANDIDATES; i++)
        if (list[i]->kernel == kernel && list[i]->domain == ATTEST_DOMAIN_HOST &&
            strncmp(list[i]->name, "cpu-", 4) == 0)
            out[k++] = list[i];
    return k;
}

static void run_everything(attest_case *c, const attest_policy *pol, isa_result *r)
{
    attest_bound_model models[MAX_OUTPUTS];
    memset(models, 0, sizeof models);
    double *refs[MAX_OUTPUTS] = {0}, *bounds[MAX_OUTPUTS] = {0};
    size_t counts[MAX_OUTPUTS];
    int nout = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        assert_true(nout < MAX_OUTPUTS);
        attest_tolerance tol;
        assert_ok(attest_policy_lookup(pol, c->kernel, t->name, &tol));
        models[nout] = tol.model;
        counts[nout] = attest_tensor_count(t);
        refs[nout] = calloc(counts[nout] + 1, sizeof(double));
        bounds[nout] = calloc(counts[nout] + 1, sizeof(double));
        assert_true(refs[nout] && bounds[nout]);
        nout++;
    }
    assert_ok(attest_ref_bounds(c, models, refs, bounds));
    for (int i = 0; i < nout; i++) {
        append(r, refs[i], counts[i] * sizeof(double));
        append(r, bounds[i], counts[i] * sizeof(double));
    }
    assert_ok(attest_ref_compute(c, ATTEST_REF_SIMULATED, refs));
    for (int i = 0; i < nout; i++) append(r, refs[i], counts[i] * sizeof(double));
    int has_truth = 0;
    for (size_t i = 0; i < c->num_tensors; i++) has_truth |= c->tensors[i].role == ATTEST_ROLE_TRUTH;
    if (has_truth) {
        assert_ok(attest_ref_compute(c, ATTEST_REF_TRUE, refs));
        for (int i = 0; i < nout; i++) append(r, refs[i], counts[i] * sizeof(double));
    }
    const attest_candidate *cands[MAX_CANDIDATES];
    const size_t ncand = cpu_candidates(c->kernel, cands);
    assert_true(ncand > 0);
    for (size_t k = 0; k < ncand; k++) {
        const attest_candidate *cand = cands[k];
        for (size_t i = 0; i < c->num_tensors; i++)
            if (c->tensors[i].role == ATTEST_ROLE_OUTPUT)
                memset(c->tensors[i].data, 0xA5, c->tensors[i].nbytes);
        attest_kernel_args args;
        assert_ok(attest_case_args(c, &args));
        void *ctx = NULL;
        if (cand->init) assert_int_equal(cand->init(&ctx), 0);
        const int supported = !cand->supports || cand->supports(ctx, &args);
        const int rc = supported ? cand->run(ctx, &args) : 0;
        if (cand->fini) cand->fini(ctx);
        append(r, &supported, sizeof supported);
        append(r, &rc, sizeof rc);
        /* The comparator on this output against the bounds: every metric (a vector comparator
         * must agree across ISAs like the references). */
        int o = 0;
        for (size_t i = 0; i < c->num_tensors; i++) {
            const attest_tensor *t = &c->tensors[i];
            if (t->role != ATTEST_ROLE_OUTPUT) continue;
            append(r, t->data, t->nbytes);
            attest_tolerance tol;
            assert_ok(attest_policy_lookup(pol, c->kernel, t->name, &tol));
            attest_tensor_metrics m;
            memset(&m, 0, sizeof m);
            if (t->dtype == ATTEST_DTYPE_F32 || t->dtype == ATTEST_DTYPE_BF16) {
                assert_ok(attest_compare_tensor_bounded(refs[o], bounds[o], t->data, t->dtype,
                                                        counts[o], t->shape, t->rank, NULL,
                                                        0xA5A5A5A5u /* the memset above */, &tol, &m));
                append(r, &m, sizeof m);
            }
            o++;
        }
    }
    for (int i = 0; i < nout; i++) {
        free(refs[i]);
        free(bounds[i]);
    }
}

/* Names, availability and pinning: portable always runs; an ISA out of range or not available
 * is refused and leaves the active one as it was. */
static void test_isa_pin(void **state)
{
    (void)state;
    const attest_isa was = attest_isa_active();
    assert_true(attest_isa_available(was));
    assert_true(attest_isa_available(ATTEST_ISA_PORTABLE));
    assert_string_equal(attest_isa_name(ATTEST_ISA_AVX2), "avx2");
    assert_null(attest_isa_name(ATTEST_ISA_COUNT_));
    assert_int_equal(attest_isa_pin(ATTEST_ISA_COUNT_), ATTEST_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < ATTEST_ISA_COUNT_; i++) {
        if (attest_isa_available((attest_isa)i)) {
            assert_ok(attest_isa_pin((attest_isa)i));
            assert_int_equal(attest_isa_active(), i);
        } else {
            assert_int_equal(attest_isa_pin((attest_isa)i), ATTEST_ERR_UNSUPPORTED);
        }
    }
    assert_ok(attest_isa_pin(was));
}

static void variants_agree(attest_kernel kernel)
{
    const attest_isa was = attest_isa_active();
    attest_policy *pol = NULL;
    assert_ok(attest_policy_default(&pol));
    attest_gen_options opt = attest_gen_defaults(kernel);
    opt.with_truth = 1;
    opt.high_pools = 0; /* a sparse pool is placed by the runner, not on the heap */
    int others = 0;
    for (int i = 1; i < ATTEST_ISA_COUNT_; i++) others += attest_isa_available((attest_isa)i);
    if (!others) print_message("only the portable loops run on this machine\n");
    for (uint64_t n = 0; n < CASES_PER_FAMILY; n++) {
        attest_case c;
        assert_ok(attest_generate_case(&opt, attest_case_seed(77, n), &c));
        isa_result portable = {0};
        assert_ok(attest_isa_pin(ATTEST_ISA_PORTABLE));
        run_everything(&c, pol, &portable);
        for (int i = 1; i < ATTEST_ISA_COUNT_; i++) {
            if (!attest_isa_available((attest_isa)i)) continue;
            isa_result wide = {0};
            assert_ok(attest_isa_pin((attest_isa)i));
            run_everything(&c, pol, &wide);
            assert_int_equal(wide.len, portable.len);
            if (memcmp(wide.bytes, portable.bytes, portable.len) != 0) {
                size_t at = 0;
                while (wide.bytes[at] == portable.bytes[at]) at++;
                fail_msg("%s case %llu: the %s copy differs from the portable one at byte %zu "
                         "of %zu", attest_kernel_name(kernel), (unsigned long long)n,
                         attest_isa_name((attest_isa)i), at, portable.len);
            }
            free(wide.bytes);
        }
        free(portable.bytes);
        attest_case_free(&c);
    }
    attest_policy_free(pol);
    assert_ok(attest_isa_pin(was));
}

/* Every ISA's copy gives the portable bits on generated indexer cases. */
static void test_isa_indexer(void **state)
{
    (void)state;
    variants_agree(ATTEST_KERNEL_INDEXER);
}

/* Every ISA's copy gives the portable bits on generated sparse MLA decode cases. */
static void test_isa_mla_decode(void **state)
{
    (void)state;
    variants_agree(ATTEST_KERNEL_MLA_DECODE);
}

/* The comparator's metrics of one comparison, every field, for a byte comparison. */
static void compare_into(isa_result *r, const double *ref, const double *bound, const void *cand,
                         attest_dtype dtype, size_t n, const uint8_t *mask, uint32_t poison,
                         const attest_tolerance *tol)
{
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    assert_ok(attest_compare_tensor_bounded(ref, bound, cand, dtype, n, NULL, 0, mask, poison, tol,
                                            &m));
    append(r, &m, sizeof m);
}

static attest_rng cmp_rng;
static uint64_t cmp_next(void) { return attest_rng_u64(&cmp_rng); }
static double cmp_unit(void) { return attest_rng_double01(&cmp_rng); }

/* The comparator's block fast path (every ISA but portable) against its element-by-element path
 * (the portable copy): the same metrics, bit for bit, on tensors of clean blocks (the fast path)
 * with now and then one element that sends its block down the other path: a NaN, an infinity, a
 * zero reference, a masked-out element, a failing one, a new worst ratio, a bound of 0, +inf or
 * NaN, a pair of one non-finite class on both sides, a -inf tail, a finite poison pattern, both
 * dtypes, bounds on and off; some tensors start with exact elements, some are exact
 * throughout, some all zeros, as a lonely query's output (then the first finite pair holds the
 * worst ratio, 0). */
static void test_isa_compare(void **state)
{
    (void)state;
    const attest_isa was = attest_isa_active();
    enum { N = 2048 };
    static double ref[N], bound[N];
    static uint16_t cb[N];
    static float cf[N];
    static uint8_t mask[N];
    attest_tolerance tol;
    memset(&tol, 0, sizeof tol);
    tol.atol = 1e-5;
    tol.rtol = 1e-3;
    tol.cos_diff_max = 1e-5;
    tol.nmse_max = 1e-4;
    tol.max_code_distance = 2;
    tol.vacuity_factor = 10;
    tol.topk_min_recall = -1;
    int compared = 0;
    attest_rng_seed(&cmp_rng, 0x9E3779B97F4A7C15ull);
    for (int trial = 0; trial < 400; trial++) {
        const size_t n = trial % 5 == 0 ? 1 + cmp_next() % N : N - cmp_next() % 70;
        const unsigned rare = 1 + (unsigned)(cmp_next() % 3000); /* one special in `rare` */
        for (size_t i = 0; i < n; i++) {
            const double r = (cmp_unit() - 0.5) * ldexp(1.0, (int)(cmp_next() % 30) - 15);
            double b = fabs(r) * 2e-3 + 1e-9, c = r + (cmp_unit() - 0.5) * b;
            ref[i] = r;
            mask[i] = 1;
            if (trial % 9 == 4 && i >= n / 2) { /* an indexer row's tail past its length */
                ref[i] = -INFINITY;
                c = -INFINITY;
            } else if (cmp_next() % rare == 0) {
                switch (cmp_next() % 12) {
                case 0: ref[i] = NAN; break;
                case 1: ref[i] = -INFINITY; break;
                case 2: ref[i] = 0; break;
                case 3: mask[i] = 0; break;
                case 4: c = r + 50 * b; break;        /* fails */
                case 5: c = r + 0.49 * b * 1.9; break; /* a ratio near the worst */
                case 6: b = 0; break;
                case 7: b = INFINITY; break;
                case 8: ref[i] = c = -INFINITY; break; /* the same class on both sides */
                case 9: ref[i] = c = NAN; break;
                case 10: ref[i] = c = INFINITY; break;
                default: c = NAN; break;
                }
            }
            if (trial % 7 == 1 && (i < 3 || trial % 2)) { /* exact: a worst ratio of 0 */
                ref[i] = trial % 4 == 1 ? 0.0 : attest_bf16_decode(attest_bf16_encode_f64(r));
                c = ref[i];
            }
            bound[i] = b;
            cf[i] = (float)c;
            cb[i] = attest_bf16_encode_f64(c);
        }
        for (int v = 0; v < 4; v++) {
            tol.bound_factor = (v & 1) ? -1.0 : 1.0; /* bounds off / on */
            const int f32 = (v & 2) != 0;
            const uint8_t *mk = trial % 3 == 0 ? mask : NULL;
            /* a finite poison pattern, which some element holds: counted as unwritten */
            uint32_t poison = 0x7FA5A5A5u;
            if (trial % 6 == 2) {
                if (f32) memcpy(&poison, &cf[n / 2], sizeof poison);
                else poison = cb[n / 2];
            }
            isa_result portable = {0};
            assert_ok(attest_isa_pin(ATTEST_ISA_PORTABLE));
            compare_into(&portable, ref, bound, f32 ? (const void *)cf : (const void *)cb,
                         f32 ? ATTEST_DTYPE_F32 : ATTEST_DTYPE_BF16, n, mk, poison, &tol);
            for (int i = 1; i < ATTEST_ISA_COUNT_; i++) {
                if (!attest_isa_available((attest_isa)i)) continue;
                isa_result wide = {0};
                assert_ok(attest_isa_pin((attest_isa)i));
                compare_into(&wide, ref, bound, f32 ? (const void *)cf : (const void *)cb,
                             f32 ? ATTEST_DTYPE_F32 : ATTEST_DTYPE_BF16, n, mk, poison, &tol);
                if (memcmp(wide.bytes, portable.bytes, portable.len) != 0)
                    fail_msg("trial %d variant %d (n %zu): the %s comparator's metrics differ "
                             "from the element-by-element ones", trial, v, n,
                             attest_isa_name((attest_isa)i));
                free(wide.bytes);
                compared++;
            }
            free(portable.bytes);
        }
    }
    if (compared == 0) print_message("only the portable loops run on this machine\n");
    assert_ok(attest_isa_pin(was));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isa_pin),
        cmocka_unit_test(test_isa_indexer),
        cmocka_unit_test(test_isa_mla_decode),
        cmocka_unit_test(test_isa_compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
