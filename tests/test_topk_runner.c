/* Tests of the top-k runner (attest/topk_runner.h): a correct candidate runs clean (isolated and
 * in process) and its outputs come back; hostile ones each give their finding, never a harness
 * error: a crash, a hang past the limit, a write past the outputs, a changed input, outputs that
 * differ between runs, a nonzero return. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/topk.h"
#include "attest/topk_candidates.h"
#include "attest/topk_runner.h"

static size_t slots(const attest_topk_args *a) { return (size_t)a->params->b * a->params->next_n * a->params->k; }

/* Writes 0..k-1 in every row: not a correct selection, but the runner does not judge picks. */
static int run_fill(const attest_topk_args *a)
{
    for (size_t i = 0; i < slots(a); i++) a->indices[i] = (int32_t)(i % (size_t)a->params->k);
    return 0;
}
static int run_crash(const attest_topk_args *a)
{
    (void)a;
    raise(SIGSEGV);
    return 0;
}
static int run_hang(const attest_topk_args *a)
{
    (void)a;
    for (;;) pause();
    return 0;
}
static int run_past_end(const attest_topk_args *a)
{
    run_fill(a);
    a->indices[slots(a)] = 7; /* one slot past [rows, k] */
    return 0;
}
static int run_modify_input(const attest_topk_args *a)
{
    run_fill(a);
    ((float *)a->logits)[0] += 1.0f;
    return 0;
}
static int run_flaky(const attest_topk_args *a)
{
    static int calls; /* the runs of a case share one process (the child, when isolated) */
    run_fill(a);
    a->indices[0] = calls++;
    return 0;
}
static int run_fails(const attest_topk_args *a)
{
    run_fill(a);
    return 3;
}

#define CAND(fn) {#fn, "test", ATTEST_TOPK_ORDER_ANY, ATTEST_TOPK_OUT_LOGICAL, ATTEST_TOPK_BY_SCORE, fn}

static void make_case(attest_topk_case *c)
{
    const attest_topk_gen_bounds g = attest_topk_gen_defaults();
    assert_ok(attest_topk_generate(attest_topk_case_seed(3, 0), &g, c));
}

static attest_topk_run_result run_with(const attest_topk_candidate *cand, int isolate, double timeout)
{
    attest_topk_case c;
    make_case(&c);
    attest_topk_run_options o = attest_topk_run_defaults();
    o.isolate = isolate;
    o.timeout_seconds = timeout;
    const size_t n = (size_t)attest_topk_rows(&c.p) * (size_t)c.p.k;
    int32_t *idx = calloc(n + 1, sizeof *idx), *phys = calloc(n + 1, sizeof *phys);
    assert_non_null(idx);
    assert_non_null(phys);
    attest_topk_run_result r;
    assert_ok(attest_topk_run(cand, &c, &o, idx, phys, &r));
    if (r.outputs_valid && cand->run != NULL && strncmp(cand->name, "run_", 4) == 0)
        assert_int_equal(idx[n - 1], (int32_t)((n - 1) % (size_t)c.p.k));
    free(idx);
    free(phys);
    attest_topk_case_free(&c);
    return r;
}

static void test_clean_runs(void **state)
{
    (void)state;
    const attest_topk_candidate fill = CAND(run_fill);
    for (int iso = 0; iso <= 1; iso++) {
        const attest_topk_run_result r = run_with(&fill, iso, 10.0);
        assert_int_equal(r.failed, 0);
        assert_int_equal(r.outputs_valid, 1);
        assert_int_equal(r.runs, 2);
        assert_string_equal(r.detail, "");
    }
    /* A built-in correct kernel, isolated, writes outputs the caller sees. */
    const attest_topk_run_result r = run_with(attest_topk_builtin_find("cpu-topk"), 1, 10.0);
    assert_int_equal(r.failed, 0); /* its picks are judged by test_topk; here: it ran clean */
    assert_int_equal(r.outputs_valid, 1);
}

static void test_crash_and_hang(void **state)
{
    (void)state;
    const attest_topk_candidate crash = CAND(run_crash), hang = CAND(run_hang);
    attest_topk_run_result r = run_with(&crash, 1, 10.0);
    assert_int_equal(r.failed, 1u << ATTEST_TOPK_CHECK_CRASH);
    assert_int_equal(r.outputs_valid, 0);
    assert_non_null(strstr(r.detail, "signal 11"));
    r = run_with(&hang, 1, 0.2);
    assert_int_equal(r.failed, 1u << ATTEST_TOPK_CHECK_TIMEOUT);
    assert_int_equal(r.runs, 0); /* no run returned */
}

static void test_integrity_findings(void **state)
{
    (void)state;
    const attest_topk_candidate past = CAND(run_past_end), input = CAND(run_modify_input),
                                flaky = CAND(run_flaky), fails = CAND(run_fails);
    for (int iso = 0; iso <= 1; iso++) {
        assert_true(run_with(&past, iso, 10.0).failed & (1u << ATTEST_TOPK_CHECK_CANARY));
        assert_true(run_with(&input, iso, 10.0).failed & (1u << ATTEST_TOPK_CHECK_INPUT));
        assert_int_equal(run_with(&fails, iso, 10.0).failed, 1u << ATTEST_TOPK_CHECK_RUN);
    }
    for (int iso = 0; iso <= 1; iso++) {
        const attest_topk_run_result r = run_with(&flaky, iso, 10.0);
        assert_int_equal(r.failed, 1u << ATTEST_TOPK_CHECK_NONDETERMINISM);
        assert_non_null(strstr(r.detail, "nondeterminism"));
    }
    assert_string_equal(attest_topk_check_name(ATTEST_TOPK_CHECK_INPUT), "input-modified");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_runs),
        cmocka_unit_test(test_crash_and_hang),
        cmocka_unit_test(test_integrity_findings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
