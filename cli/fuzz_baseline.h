/* attest CLI (internal): `attest fuzz --candidate NEW --baseline OLD [--same bitwise|bounds]`, a
 * search for a case on which NEW and OLD disagree, as `attest run --baseline` judges a pair
 * (baseline.h): bitwise, or within both kernels' computed bounds plus OLD's rounding.
 *
 * The generated-case search (fuzz_jobs.h): N forked jobs, each running both kernels on every
 * case and writing NEW's row and the pair's row, as attest run --baseline writes them, to a
 * results file the driver merges into --out. The first differing case is judged again, shrunk
 * (attest/minimize.h) while the pair differs with the same failed gates, and saved with its
 * reference outputs as FINDINGS/finding-<kernel>-differs-<seed>.h5, loaded back and judged once
 * more: `attest check FILE --candidate NEW --baseline OLD` reports the same difference. */
#ifndef ATTEST_CLI_FUZZ_BASELINE_H
#define ATTEST_CLI_FUZZ_BASELINE_H

#include <stdint.h>

#include "attest/candidate.h"
#include "attest/generator.h"
#include "attest/policy.h"
#include "fuzz_jobs.h"

typedef struct attest_fuzz_pair_options {
    const char *spec[2];      /* NEW and OLD as given */
    const attest_candidate *cand[2];
    const attest_policy *policy; /* never NULL */
    const char *policy_path;  /* as given, NULL: the embedded policy */
    fuzz_settings run;
    attest_gen_options gen;
    int bitwise;
} attest_fuzz_pair_options;

/* Returns the exit status: 0 nothing found, 1 a differing case saved, 2 an error, 130
 * interrupted. */
int attest_fuzz_pair(const attest_fuzz_pair_options *o);

#endif /* ATTEST_CLI_FUZZ_BASELINE_H */
