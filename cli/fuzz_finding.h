/* attest fuzz: what happens to a finding, whichever engine found it. It is judged again in the
 * caller's runner (isolated: a crash or a hang is a verdict), shrunk (attest/minimize.h) while it
 * keeps the same verdict and failed gates, and saved with its float64 reference outputs as
 * FINDINGS/finding-<kernel>-<verdict>-<id>.h5; the saved file is loaded back and judged once
 * more, so what is printed is what `attest check` sees. */
#ifndef ATTEST_CLI_FUZZ_FINDING_H
#define ATTEST_CLI_FUZZ_FINDING_H

#include <stdint.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/casefile.h"
#include "attest/runner.h"
#include "attest/status.h"

/* Where a finding came from: a generated seed (search) or a libFuzzer input. */
typedef struct attest_finding_origin {
    char id[40];     /* the file name's last part: the seed or the input's hash, in hex */
    char how[1400];  /* for the case file's note: how to get the unminimized case back */
    char what[80];   /* for messages: "case seed 0x..." or "libFuzzer input crash-..." */
    int expected;    /* the search saw verdict/gates (search); libFuzzer only says "failed" */
    attest_verdict verdict;
    uint32_t gates;
} attest_finding_origin;

typedef struct attest_finding_options {
    const char *findings;  /* folder of the saved case files */
    const char *candidate; /* the candidate spec, for the printed `attest check` command */
    uint32_t max_tries;    /* judgements the minimizer may spend */
} attest_finding_options;

/* Saves c as a case file at path with its float64 reference outputs as the expected outputs (as
 * golden fixtures hold them), a note and the command that replays it; `recorded` (may be NULL:
 * none) holds the recorded candidate outputs to add (attest_cli_recorded_extras fills them),
 * its expected, note and replay fields left to this function. */
attest_status attest_fuzz_save_case(const char *path, const attest_case *c, const char *note,
                                    const char *replay, const attest_casefile_extras *recorded)
    ATTEST_MUST_CHECK;

/* Judges, minimizes and saves the failing case *c (left to the caller to free). Returns
 * ATTEST_OK when the finding was saved (or did not fail again: then it says so). */
attest_status attest_fuzz_finding(const attest_finding_options *fo, const attest_candidate *cand,
                                  const attest_runner_options *ropt, attest_case *c,
                                  const attest_finding_origin *o, int number) ATTEST_MUST_CHECK;

#endif
