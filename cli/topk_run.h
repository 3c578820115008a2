/* attest CLI (internal): the top-k family's run loop, shared by `attest run --kernel topk` and
 * the tests: a case, the reference selection under the candidate's rule, the candidate on
 * poisoned outputs, and the judge. */
#ifndef ATTEST_CLI_TOPK_RUN_H
#define ATTEST_CLI_TOPK_RUN_H

#include "attest/status.h"
#include "attest/topk.h"
#include "attest/topk_runner.h"


/* Runs `cand` on case c and judges it. Errors (out of memory, a malformed case) are returned; a
 * failing candidate is recorded in *v (a nonzero return of its run is the "run" check). */
attest_status attest_topk_judge_candidate(const attest_topk_candidate *cand,
                                          const attest_topk_case *c, attest_topk_verdict *v)
    ATTEST_MUST_CHECK;

/* Runs `cand` on case c through attest_topk_run (o NULL: once, in this process) and judges the
 * first run's outputs; the run's findings (crash, timeout, canary, input, nondeterminism, run)
 * join the verdict's checks and lead its detail. idx / phys [rows, k] receive what the candidate
 * wrote (each must be given when the candidate declares it; one it does not declare is left
 * alone; both hold ATTEST_TOPK_POISON after a crash or a timeout). */
attest_status attest_topk_run_candidate(const attest_topk_candidate *cand,
                                        const attest_topk_case *c,
                                        const attest_topk_run_options *o, attest_topk_verdict *v,
                                        int32_t *idx, int32_t *phys) ATTEST_MUST_CHECK;

/* A built-in top-k candidate by name, or a plugin's ("path/lib.so:NAME"). */
attest_status attest_topk_candidate_resolve(const char *spec, const attest_topk_candidate **out)
    ATTEST_MUST_CHECK;

/* `attest run --kernel topk ...` (argv as given to attest run). */
int attest_cmd_run_topk(int argc, char **argv);

/* Prints the built-in top-k candidates as rows of attest list's candidate table. */
void attest_topk_print_candidates(int conventions_width);
/* Prints one top-k candidate as such a row. */
void attest_topk_print_candidate(const attest_topk_candidate *c, int conventions_width);

/* 1 when argv asks attest run for the top-k family (--kernel topk, or a top-k candidate). */
int attest_run_wants_topk(int argc, char **argv);

#endif /* ATTEST_CLI_TOPK_RUN_H */
