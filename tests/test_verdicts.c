/* End-to-end verdicts: every built-in host candidate judged by the isolated runner on generated
 * cases. The correct CPU candidates must pass every case; each mutant must receive its own
 * failing verdict (and no verdict outside what its fault can cause) within a bounded number of
 * cases. This keeps the harness honest: a gate or integrity check that stops working shows here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/generator.h"
#include "attest/reference.h"
#include "attest/registry.h"
#include "attest/runner.h"

#define CORRECT_CASES 150
#define MUTANT_CASE_LIMIT 400


typedef struct expectation {
    const char *candidate;
    attest_verdict expected;
    uint32_t allowed; /* bit mask of verdicts the fault may also produce on the way */
} expectation;

#define V(v) (1u << ATTEST_VERDICT_##v)

static const expectation mutants[] = {
    {"mutant-indexer-scale-off-by-one", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-indexer-zero-past-length", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-indexer-unwritten-past-length", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-indexer-132-byte-records", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-indexer-no-mtp-causal", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-indexer-reads-past-blocks", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-indexer-write-past-end", ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE, V(OK)},
    {"mutant-indexer-crash", ATTEST_VERDICT_CRASH, V(OK)},
    {"mutant-indexer-hang", ATTEST_VERDICT_TIMEOUT, V(OK)},
    {"mutant-mla-scale-off-by-one", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-mla-payload-stride", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-mla-no-merge-guard", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-mla-reads-nan-slot", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-mla-ignores-topk-length", ATTEST_VERDICT_MISMATCH, V(OK)},
    {"mutant-mla-write-past-end", ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE, V(OK)},
    {"mutant-mla-crash", ATTEST_VERDICT_CRASH, V(OK)},
    {"mutant-mla-hang", ATTEST_VERDICT_TIMEOUT, V(OK)},
};

static attest_policy *policy;

static int setup(void **state)
{
    (void)state;
    return attest_policy_default(&policy) == ATTEST_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    attest_policy_free(policy);
    return 0;
}

/* timeout: 1 s for the mutants (the hang mutants spin forever: keep the test short); the correct
 * candidates get the runner's default, since a 128-head case takes seconds under ASan on a
 * loaded machine and a TIMEOUT there would be the test's, not the kernel's. */
static attest_runner *make_runner(const attest_candidate *cand, double timeout)
{
    attest_runner_options opt = attest_runner_defaults();
    opt.policy = policy;
    opt.reference = attest_ref_simulated;
    if (timeout > 0) opt.timeout_seconds = timeout;
    attest_runner *r = NULL;
    assert_ok(attest_runner_create(cand, &opt, &r));
    return r;
}

/* Judges case i of seed `seed`; returns its verdict and copies the record's message. */
static attest_verdict judge(attest_runner *r, const attest_candidate *cand, uint64_t seed,
                            uint64_t i, char *params, size_t cap)
{
    attest_gen_options g = attest_gen_defaults(cand->kernel);
    attest_case c;
    memset(&c, 0, sizeof c);
    assert_ok(attest_generate_case(&g, attest_case_seed(seed, i), &c));
    attest_case_record rec;
    memset(&rec, 0, sizeof rec);
    assert_ok(attest_runner_judge(r, &c, &rec, NULL));
    snprintf(params, cap, "%s [%s]", rec.params, rec.message);
    attest_case_free(&c);
    return rec.verdict;
}

/* The correct CPU candidates, and the same kernels in other evaluation orders (the false-alarm
 * controls of kernels/cpu/orders.c), pass every generated case of two seeds. */
static void correct_candidates_pass(void **state)
{
    (void)state;
    static const char *const names[] = {
        "cpu-indexer",           "cpu-mla-decode",          "cpu-indexer-heads-reversed",
        "cpu-indexer-pairwise",  "cpu-indexer-fma",         "cpu-indexer-scale-first",
        "cpu-mla-decode-tile16", "cpu-mla-decode-tile256", "cpu-mla-decode-reverse-merge",
        "cpu-mla-decode-exp2"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const attest_candidate *cand = attest_builtin_find(names[k]);
        assert_non_null(cand);
        attest_runner *r = make_runner(cand, 0);
        for (uint64_t seed = 1; seed <= 2; seed++) {
            for (uint64_t i = 0; i < CORRECT_CASES; i++) {
                char params[768];
                attest_verdict v = judge(r, cand, seed, i, params, sizeof params);
                if (v != ATTEST_VERDICT_OK)
                    print_error("%s case %llu of seed %llu: %s %s\n", names[k],
                                (unsigned long long)i, (unsigned long long)seed,
                                attest_verdict_name(v), params);
                assert_int_equal(v, ATTEST_VERDICT_OK);
            }
        }
        attest_runner_destroy(r);
    }
}

/* Each mutant gets its own failing verdict, nothing outside what its fault allows, and a
 * crashing or hanging mutant's runner goes on to judge later cases. */
static void mutants_get_their_verdicts(void **state)
{
    (void)state;
    printf("%-40s %-20s %s\n", "mutant", "verdict", "first at case");
    for (size_t m = 0; m < sizeof mutants / sizeof mutants[0]; m++) {
        const expectation *e = &mutants[m];
        const attest_candidate *cand = attest_builtin_find(e->candidate);
        if (cand == NULL) {
            print_error("built-in candidate %s is missing\n", e->candidate);
            fail();
        }
        attest_runner *r = make_runner(cand, 1.0);
        uint64_t first = UINT64_MAX, after = 0;
        for (uint64_t i = 0; i < MUTANT_CASE_LIMIT && after < 2; i++) {
            char params[768];
            attest_verdict v = judge(r, cand, 1, i, params, sizeof params);
            if (v == e->expected) {
                if (first == UINT64_MAX) first = i;
                continue;
            }
            if (!(e->allowed & (1u << v))) {
                print_error("%s: unexpected %s at case %llu: %s\n", e->candidate,
                            attest_verdict_name(v), (unsigned long long)i, params);
                fail();
            }
            if (first != UINT64_MAX && v == ATTEST_VERDICT_OK) after++; /* the runner goes on */
        }
        if (first != UINT64_MAX)
            printf("%-40s %-20s %llu\n", e->candidate, attest_verdict_name(e->expected),
                   (unsigned long long)first);
        if (first == UINT64_MAX) {
            print_error("%s never got %s in %d cases\n", e->candidate,
                        attest_verdict_name(e->expected), MUTANT_CASE_LIMIT);
            fail();
        }
        attest_runner_destroy(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(correct_candidates_pass),
        cmocka_unit_test(mutants_get_their_verdicts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
