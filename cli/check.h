/* attest CLI (internal): the pieces of `attest check`, golden-fixture gating: finding fixture
 * files, reading them safely, and comparing a candidate's outputs with the expected outputs a
 * fixture stores. See docs/fixtures.md. */
#ifndef ATTEST_CLI_CHECK_H
#define ATTEST_CLI_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/casefile.h"
#include "attest/policy.h"
#include "attest/record.h"
#include "attest/status.h"

/* --- fixture files (check_scan.c) --------------------------------------------------------- */

/* Paths of the fixture files to check, in order: each FILE argument as given, and for each
 * directory argument every regular file ending in ".h5" under it (recursively, hidden entries
 * skipped), sorted bytewise per directory argument. `exclude` (may be NULL) is a path never
 * listed (the results file of the same run). A missing path is listed as given, so it fails as
 * an unreadable fixture rather than vanishing from the gate. */
typedef struct check_files {
    char **paths;
    size_t count, cap;
} check_files;

attest_status check_files_collect(char *const *args, size_t num_args, const char *exclude,
                                  check_files *out) ATTEST_MUST_CHECK;
void check_files_free(check_files *f);

/* One case of a fixture file as a child process read it; `found` counts its stored expected
 * outputs (when asked for). */
typedef attest_casefile_probe_case check_group;

/* The cases of one fixture file (attest_casefile_probe_result). */
typedef attest_casefile_probe_result check_scan;

/* Reads a fixture file in a forked child process (attest_casefile_probe_cases): lists its cases,
 * loads each and, when with_expected is set, its stored expected outputs (check_expected_load).
 * A crash of the HDF5 library on corrupt metadata becomes an error naming the file and the case
 * it was reading, never a crash of the caller. Returns an error only when the scan itself could
 * not run (fork, pipe, memory); the file's problems land in *out, freed with
 * attest_casefile_probe_result_free. Reading is deterministic: what the child read cleanly, the
 * caller reads cleanly. */
attest_status check_scan_file(const char *path, int with_expected, check_scan *out)
    ATTEST_MUST_CHECK;

/* --- comparison with stored expected outputs (check_stored.c) ------------------------------ */

/* The expected outputs one case stores, loaded from its file. */
typedef struct check_expected {
    int32_t count;                                    /* outputs found (0: none stored) */
    attest_stored_tensor tensors[ATTEST_RECORD_MAX_OUTPUTS];
    int32_t output_index[ATTEST_RECORD_MAX_OUTPUTS];  /* k-th output of the case's table */
} check_expected;

/* Loads the stored outputs of the case in `group` named like the case's outputs ("logits";
 * "out_bf16" and "lse"). A missing one is skipped; one of the wrong shape is ATTEST_ERR_FORMAT
 * naming file, group and dataset. */
attest_status check_expected_load(const char *path, const char *group, const attest_case *c,
                                  check_expected *out) ATTEST_MUST_CHECK;
void check_expected_free(check_expected *e);

/* Compares a candidate's outputs (cand[k], bytes of the case's k-th output in table order, as
 * the runner keeps them) with the stored expected outputs under the policy's tolerances, with
 * the gates the runner applies against the reference (the indexer's top-k gate included).
 * `cand_conv` are the conventions the candidate declares; the stored outputs follow the case's:
 * where they differ, logits past a row's length are not compared and an lse is compared after
 * adding the sink to the one that excludes it. Fills metrics[k] for k < e->count (named after
 * the stored tensor) and *failed_gates; notes (may be NULL) receives what was adapted or not
 * compared. Errors only when the comparison could not run (no tolerance, bad shapes). */
attest_status check_compare_stored(const attest_case *c, const check_expected *e,
                                   void *const *cand, double *const *bounds,
                                   const attest_conventions *cand_conv,
                                   const attest_policy *policy, attest_tensor_metrics *metrics,
                                   uint32_t *failed_gates, char *notes, size_t notes_cap)
    ATTEST_MUST_CHECK;

/* The verdict of a case judged against stored outputs: what the runner found about the run
 * itself (ref: its record against the reference: crash, out-of-bounds write, nondeterminism,
 * an error return) stands; a mismatch with the reference does not, the stored gates decide. */
attest_verdict check_stored_verdict(const attest_case_record *ref, uint32_t stored_gates);

/* --- attest check FILE... --recorded (check_recorded.c) ------------------------------------ */

/* 1 when argv asks for --recorded: the files' recorded outputs are judged, no candidate runs. */
int attest_check_wants_recorded(int argc, char **argv);
int attest_cmd_check_recorded(int argc, char **argv);

#endif
