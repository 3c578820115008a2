/* Tests of the per-ISA copies of the vector loops (attest/isa.h): every copy this machine runs
 * gives the portable copy's bits, in the references (simulated, true, bounds) and in the
 * built-in CPU candidates, on generated cases of both families. */
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
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/registry.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isa_pin),
        cmocka_unit_test(test_isa_indexer),
        cmocka_unit_test(test_isa_mla_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
