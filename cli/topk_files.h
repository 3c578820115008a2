/* attest CLI (internal): the top-k family's files. Failing cases as top-k case files
 * (attest/topk_casefile.h) that `attest check` replays, one results-file row per judged case
 * (attest/results.h) that `attest show` prints and `attest replay` runs again. */
#ifndef ATTEST_CLI_TOPK_FILES_H
#define ATTEST_CLI_TOPK_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "attest/record.h"
#include "attest/results.h"
#include "attest/status.h"
#include "attest/topk.h"

/* The results-file row of a judged top-k case: the runner's verdicts (crash, timeout, canary as
 * OUT_OF_BOUNDS_WRITE, input, nondeterminism; any selection check MISMATCH with the topk gate),
 * the failed checks and the verdict's detail in `message`, no output metrics (the judge compares
 * sets, not values). */
void attest_topk_record(const attest_topk_candidate *cand, const attest_topk_case *c,
                        const char *params, uint64_t case_id, const attest_topk_verdict *v,
                        int32_t reruns, double run_seconds, attest_case_record *rec);

/* Writes a failing case as DIR/topk-SEED.h5 with the reference selection under the candidate's
 * rule, the candidate's outputs and the replay command; an existing file is kept (*kept = 1).
 * path receives the file's name. */
attest_status attest_topk_save_failure(const char *dir, const attest_topk_candidate *cand,
                                       const attest_topk_case *c, const attest_topk_verdict *v,
                                       const int32_t *idx, const int32_t *phys,
                                       const char *replay, char *path, size_t cap, int *kept)
    ATTEST_MUST_CHECK;

/* Creates the results file of a top-k run: provenance kernel "topk" and its job line
 * "--kernel topk --max-batch B --max-next-n N --max-len W --max-topk K --candidate SPEC", from
 * which `attest replay` draws a row's case again. */
attest_status attest_topk_results_open(const char *path, const char *command_line,
                                       const char *spec, const attest_topk_gen_bounds *g,
                                       uint64_t seed, uint64_t planned,
                                       attest_results_writer **out) ATTEST_MUST_CHECK;

/* 1 when attest check's argv asks for the top-k family: --kernel topk, a built-in top-k
 * candidate, or a first file that is a top-k case file. */
int attest_check_wants_topk(int argc, char **argv);

/* `attest check FILE... --candidate NAME` over top-k case files. */
int attest_cmd_check_topk(int argc, char **argv);

/* `attest replay` of a top-k row of a results file (its case drawn again from the row's seed
 * and the file's job line) or of a top-k case file. Returns -1 when `file` is neither (the
 * caller goes on), else the exit status. */
int attest_topk_replay(const char *file, int has_case, uint64_t case_id, const char *candidate,
                       int32_t reruns, double timeout, int no_isolate);

#endif /* ATTEST_CLI_TOPK_FILES_H */
