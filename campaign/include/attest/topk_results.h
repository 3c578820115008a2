/* attest: the top-k family's rows in a results file (attest/results.h), shared by `attest run
 * --kernel topk`, `attest fuzz --kernel topk` and the top-k fuzz target (fuzz/fuzz_topk.c),
 * whose per-job files `attest fuzz` merges. */
#ifndef ATTEST_TOPK_RESULTS_H
#define ATTEST_TOPK_RESULTS_H

#include <stdint.h>

#include "attest/record.h"
#include "attest/results.h"
#include "attest/status.h"
#include "attest/topk.h"

/* The verdict of a top-k case's failed checks (bits of attest_topk_check), in the runner's
 * priority: CRASH, TIMEOUT, OUT_OF_BOUNDS_WRITE (canary), INPUT_MODIFIED, NONDETERMINISTIC, then
 * MISMATCH for any selection check; OK for none. */
attest_verdict attest_topk_verdict_of(uint32_t failed);

/* The results-file row of a judged top-k case: the runner's verdicts (crash, timeout, canary as
 * OUT_OF_BOUNDS_WRITE, input, nondeterminism; any selection check MISMATCH with the topk gate),
 * the failed checks and the verdict's detail in `message`, no output metrics (the judge compares
 * sets, not values). */
void attest_topk_record(const attest_topk_candidate *cand, const attest_topk_case *c,
                        const char *params, uint64_t case_id, const attest_topk_verdict *v,
                        int32_t reruns, double run_seconds, attest_case_record *rec);

/* Creates the results file of a top-k run: provenance kernel "topk" and its job line
 * "--kernel topk --max-batch B --max-next-n N --max-len W --max-topk K --candidate SPEC", from
 * which `attest replay` draws a row's case again. */
attest_status attest_topk_results_open(const char *path, const char *command_line,
                                       const char *spec, const attest_topk_gen_bounds *g,
                                       uint64_t seed, uint64_t planned,
                                       attest_results_writer **out) ATTEST_MUST_CHECK;

#endif /* ATTEST_TOPK_RESULTS_H */
