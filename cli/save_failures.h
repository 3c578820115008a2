/* attest run and attest campaign --save-failures DIR for the kernel path (indexer, mla-decode):
 * each failing case becomes DIR/<kernel>-<seed>.h5 (campaign: DIR/<kernel>-<candidate>-<seed>.h5,
 * as its jobs may judge one case seed with several candidates), a case file with the candidate's first-run outputs as recorded
 * outputs (docs/case-format.md, "Recorded outputs"), which attest check FILE --recorded judges
 * again without the candidate. */
#ifndef ATTEST_CLI_SAVE_FAILURES_H
#define ATTEST_CLI_SAVE_FAILURES_H

#include <stdint.h>
#include <stdio.h>

#include "attest/campaign.h"
#include "attest/casefile.h"

typedef struct attest_cli_saver {
    const char *dir;
    const char *verb;             /* "run" or "campaign": the notes and messages say which */
    int by_candidate;             /* the candidate's name in every file name */
    const attest_policy *policy;
    int passing;                  /* --save-passing: every case is saved */
    uint64_t saved, kept, failed; /* files written, existing files kept, writes that failed */
} attest_cli_saver;

/* Checks DIR is a writable directory. Returns -1 to go on, else prints one line and returns
 * ATTEST_EXIT_USAGE. */
int attest_cli_saver_init(attest_cli_saver *s, const char *verb, const char *dir,
                          const attest_policy *policy);

/* The engine's on_failure hook: writes the file; a write that fails is one line on stderr and
 * the run goes on. */
attest_status attest_cli_saver_hook(void *ctx, const attest_job *job, const attest_case *c,
                                    const attest_case_record *rec, const attest_case_outputs *kept);

/* The recorded-outputs part of a case file (docs/case-format.md, "Recorded outputs"): the
 * candidate's kept first-run outputs of c, as rec names them, and what they were judged under,
 * so that `attest check FILE --recorded` judges them again without the candidate. The buffers
 * live in *r, which must outlive the save. */
typedef struct attest_cli_recorded {
    attest_casefile_output cand[ATTEST_RECORD_MAX_OUTPUTS];
    char gates[96], conventions[256], message[sizeof ((attest_case_record *)0)->message + 1];
    attest_casefile_recorded info;
} attest_cli_recorded;

/* Fills x's candidate outputs, candidate name and recorded attributes from kept (may be NULL:
 * no outputs, the attributes still). */
void attest_cli_recorded_extras(attest_cli_recorded *r, const attest_candidate *cand,
                                const attest_case *c, const attest_case_record *rec,
                                const attest_case_outputs *kept, const attest_policy *policy,
                                attest_casefile_extras *x);

/* The summary line ("saved failures: 2 written to DIR, 1 kept (existed)"), when any case failed. */
void attest_cli_saver_report(const attest_cli_saver *s, FILE *f);

#endif
