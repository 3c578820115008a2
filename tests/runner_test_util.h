/* Shared pieces of the runner tests (test_runner.c, test_worker.c): the toy "good" candidate,
 * runner construction with the toy reference, and verdict assertions. Include after cmocka.h. */
#ifndef ATTEST_TEST_RUNNER_UTIL_H
#define ATTEST_TEST_RUNNER_UTIL_H

#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include "attest/runner.h"
#include "runner_toys.h"
#include "assert_ok.h"

#define CANDIDATE(var, nm, kern, ...)                                                              \
    static const attest_candidate var = {.abi_version = ATTEST_CANDIDATE_ABI_VERSION,              \
                                         .struct_size = sizeof(attest_candidate),                  \
                                         .name = nm,                                               \
                                         .description = "test candidate",                          \
                                         .kernel = kern,                                           \
                                         __VA_ARGS__}
#define IDX ATTEST_KERNEL_INDEXER

/* A negative weight is the trigger for the misbehaving test candidates, so one runner can
 * judge a bad case and then a good one. */
static inline int triggered(const attest_kernel_args *a) { return a->u.indexer.weights[0] < 0.0f; }

/* The correct toy candidate of both kernels. */
static inline int run_good(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    if (a->kernel == ATTEST_KERNEL_MLA_DECODE) {
        toy_mla(&a->u.mla);
        return 0;
    }
    toy_indexer_logits(&a->u.indexer, -INFINITY);
    return 0;
}

static inline attest_runner *make_runner(const attest_candidate *cand, int isolate, double timeout)
{
    attest_runner_options o = attest_runner_defaults();
    o.isolate = isolate;
    o.timeout_seconds = timeout;
    o.reference = toy_reference;
    attest_runner *r = NULL;
    attest_status st = attest_runner_create(cand, &o, &r);
    if (st != ATTEST_OK) fail_msg("runner_create: %s", attest_last_error());
    return r;
}

/* Judges one toy indexer case (len 40 of 64, weight w) and returns the record. */
static inline attest_case_record judge_indexer(attest_runner *r, float w, int32_t topk)
{
    attest_case c;
    toy_indexer_case(&c, 2, 64, 40, w, topk, 1);
    attest_case_record rec;
    assert_ok(attest_runner_judge(r, &c, &rec, NULL));
    attest_case_free(&c);
    return rec;
}

static inline void expect(const attest_case_record *rec, attest_verdict v, const char *needle)
{
    if (rec->verdict != v)
        fail_msg("candidate %s: verdict %s, expected %s (%s)", rec->candidate,
                 attest_verdict_name(rec->verdict), attest_verdict_name(v), rec->message);
    if (needle && !strstr(rec->message, needle))
        fail_msg("candidate %s: message '%s' lacks '%s'", rec->candidate, rec->message, needle);
}

/* After destroy, no child of ours is left, running or zombie. */
static inline void assert_no_children(void)
{
    int status;
    errno = 0;
    assert_int_equal(waitpid(-1, &status, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

/* One judged case per candidate, in the given mode. */
static inline attest_case_record judge_once(const attest_candidate *cand, int isolate, float w)
{
    attest_runner *r = make_runner(cand, isolate, 10.0);
    attest_case_record rec = judge_indexer(r, w, 0);
    attest_runner_destroy(r);
    return rec;
}

CANDIDATE(c_good, "good", IDX, .run = run_good);

#endif /* ATTEST_TEST_RUNNER_UTIL_H */
