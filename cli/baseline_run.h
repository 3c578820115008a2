/* attest CLI (internal): the case loop of `attest run --baseline` (and `attest campaign
 * --baseline`): both kernels on each generated case, the pair judged (baseline.h), failing cases
 * printed, NEW's row and the pair's row per case in the results file, two JUnit testcases per
 * case, a JSON summary counting both rows of every case, the summary.
 *
 * With jobs > 1 the cases are shared out as the campaign engine shares them (job j judges cases
 * j, j + N, ...), each job in a forked process with its own runners, results file and printed
 * lines; the driver then writes the results file and the JUnit report in case order and prints
 * the first failing cases in case order, so the output matches a one-job run but for timings
 * (and the repro of NEW's row, which keeps the case but not NEW's outputs). */
#ifndef ATTEST_CLI_BASELINE_RUN_H
#define ATTEST_CLI_BASELINE_RUN_H

#include <stdint.h>

#include "attest/candidate.h"
#include "attest/generator.h"
#include "attest/policy.h"
#include "attest/runner.h"

typedef struct attest_pair_plan {
    const attest_candidate *cand[2]; /* NEW, OLD */
    const attest_gen_options *gen;
    const attest_policy *policy;
    attest_runner_options ro;        /* both runners' options (policy set) */
    uint64_t total, seed, case_seed; /* case_seed: the one case, when use_case_seed */
    int use_case_seed, bitwise;
    uint64_t print_failures;
    int32_t jobs;
    const char *out;                 /* results file, NULL: none */
    const char *junit;               /* JUnit XML report, NULL: none */
    const char *json;                /* JSON summary of every row (NEW's and the pairs'), NULL: none */
    const char *verb;                /* for the JSON summary: "run" or "campaign" */
    const char *command_line;
} attest_pair_plan;

/* Runs the plan and prints the failing cases and the summary. Returns the exit status: 0 NEW
 * passes and agrees with OLD everywhere, 1 otherwise, 2 a harness or output error. */
int attest_baseline_run(const attest_pair_plan *pl);

#endif /* ATTEST_CLI_BASELINE_RUN_H */
