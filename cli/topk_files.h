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
#include "attest/topk_results.h"

/* Writes a failing case as DIR/topk-SEED.h5 with the reference selection under the candidate's
 * rule, the candidate's outputs and the replay command; an existing file is kept (*kept = 1).
 * path receives the file's name. */
attest_status attest_topk_save_failure(const char *dir, const attest_topk_candidate *cand,
                                       const attest_topk_case *c, const attest_topk_verdict *v,
                                       const int32_t *idx, const int32_t *phys,
                                       const char *replay, char *path, size_t cap, int *kept)
    ATTEST_MUST_CHECK;

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
