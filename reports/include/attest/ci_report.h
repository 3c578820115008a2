/* attest: reports for CI systems. A JUnit XML file with one testcase per judged case (what CI
 * dashboards, GitHub Actions test reporters and Jenkins read), and a JSON summary of a run for
 * scripts. Both are written next to their final path and renamed into place, so a reader never
 * sees half a file.
 *
 * JUnit mapping: a passing verdict (OK) is a plain testcase; UNSUPPORTED is <skipped>; a failing
 * verdict is <failure type="VERDICT" message="VERDICT [gates]: what">, its text holding the
 * case's parameter string, seed and the command that replays it; HARNESS_ERROR and unreadable
 * fixtures are <error>, since attest could not judge them.
 */
#ifndef ATTEST_CI_REPORT_H
#define ATTEST_CI_REPORT_H

#include <stdint.h>

#include "attest/record.h"
#include "attest/report.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attest_junit attest_junit; /* opaque */

/* Starts a JUnit file at `path` for a test suite named `suite` ("attest run"). Testcases are
 * buffered in an anonymous temporary file; nothing is written at path until attest_junit_close.
 * ATTEST_ERR_IO when the buffer cannot be made. */
attest_status attest_junit_open(const char *path, const char *suite, attest_junit **out)
    ATTEST_MUST_CHECK;

/* Adds one judged case: classname (the candidate), name (the case: "case 17 kernel=..." or
 * "fixture.h5:case-3"), its record and its replay command (NULL: none). */
attest_status attest_junit_add(attest_junit *j, const char *classname, const char *name,
                               const attest_case_record *rec, const char *replay)
    ATTEST_MUST_CHECK;

/* Adds a case attest could not judge (an unreadable fixture): an <error>. */
attest_status attest_junit_add_error(attest_junit *j, const char *classname, const char *name,
                                     const char *message) ATTEST_MUST_CHECK;

/* Writes the file (suite totals, then every testcase) to path.tmp, renames it over path and
 * frees j (also on error). `seconds` is the suite's wall time. */
attest_status attest_junit_close(attest_junit *j, double seconds) ATTEST_MUST_CHECK;

/* Frees j without writing anything (NULL is ignored). */
void attest_junit_discard(attest_junit *j);

/* What a JSON summary says beyond the attest_summary. */
typedef struct attest_json_run {
    const char *verb;          /* "run", "campaign", "check" */
    const char *result;        /* "PASS", "FAIL", "INTERRUPTED", ... as printed */
    int exit_code;
    const char *results_path;  /* NULL: no results file (worst cases get no replay command) */
    double seconds;
    uint64_t unreadable;       /* check: fixture cases or files that could not be read */
    uint64_t filtered;         /* run: generated cases the filter skipped */
} attest_json_run;

/* Writes {"attest": version, "verb", "result", "exit_code", "cases", "failures", "vacuous",
 * "verdicts": {NAME: n, ...}, "failing_gates": {gate: n}, "integrity": {...}, "seconds",
 * "time": {...}, "results_file", "unreadable", "filtered", "worst": [{"case_id", "verdict",
 * "gates", "candidate", "params", "seed", "max_rel", "cos_diff", "message", "replay"}]} to path
 * (via path.tmp). Non-finite numbers are written as null. */
attest_status attest_report_json(const char *path, const attest_summary *s,
                                 const attest_json_run *run) ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_CI_REPORT_H */
