/* attest CLI: `run --sanitize TOOL`, each case checked by compute-sanitizer in a process of its
 * own.
 *
 * The campaign runs as usual (the runner judges every case in its forked worker); then, for
 * each case, a child `compute-sanitizer --tool TOOL --log-file F attest run --case-seed SEED
 * --no-isolate ...` runs the same case once, CUDA in the very process the tool started, and F
 * is read after the child exits. Why a process per case: compute-sanitizer (2025) writes the
 * reports of a forked worker into its parent's log and only when the tool exits, so a report
 * can be matched to its case only when one tool run holds one case. A report (a line of the
 * tool's "=========" prefix other than its banner and summaries) makes the case's verdict
 * SANITIZER with the tool's first lines; the campaign goes on.
 */
#ifndef ATTEST_CLI_SANITIZE_H
#define ATTEST_CLI_SANITIZE_H

#include <limits.h>

#include "attest/campaign.h"

typedef struct attest_cli_sanitizer {
    const char *tool;      /* memcheck, racecheck, initcheck or synccheck */
    char exe[PATH_MAX];    /* compute-sanitizer */
    char self[PATH_MAX];   /* this attest binary */
    char dir[PATH_MAX];    /* the per-case logs (removed by fini) */
    double timeout;        /* per child, seconds */
    unsigned long children;
} attest_cli_sanitizer;

/* The tools `--sanitize` accepts. */
int attest_cli_sanitize_tool_ok(const char *tool);

/* Finds the tool ($ATTEST_COMPUTE_SANITIZER, PATH, /usr/local/cuda/bin) and makes the log
 * folder. Returns -1 when ready, else a usage-error exit status (one line printed). */
int attest_cli_sanitizer_init(attest_cli_sanitizer *s, const char *verb, const char *tool,
                              double timeout_seconds);

/* The engine's inspect hook (ctx = the sanitizer). */
attest_status attest_cli_sanitizer_inspect(void *ctx, const attest_job *job, const attest_case *c,
                                           attest_case_record *rec);

/* Removes the log folder. */
void attest_cli_sanitizer_fini(attest_cli_sanitizer *s);

/* Whether one log line (without its newline) belongs to an error report. */
int attest_cli_sanitizer_is_report(const char *line);

#endif
