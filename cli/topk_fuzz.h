/* attest CLI (internal): `attest fuzz --kernel topk`, the fuzz verb for the top-k family, whose
 * candidates are not attest_candidate (attest/topk.h) and whose cases are not attest_case.
 *
 * The same two engines as the other families (cmd_fuzz.c): `search` draws fresh cases from the
 * top-k generator in N forked jobs; `libfuzzer` runs N processes of fuzz/fuzz_topk on one corpus
 * (fuzz_libfuzzer.h). Either way the first failing case is judged again in an isolated run,
 * shrunk (topk_minimize.h) while it fails the same checks, saved as a top-k case file
 * FINDINGS/finding-topk-<verdict>-<id>.h5 with the reference selection and the candidate's
 * outputs, loaded back and judged once more: what is printed is what `attest check` sees. */
#ifndef ATTEST_CLI_TOPK_FUZZ_H
#define ATTEST_CLI_TOPK_FUZZ_H

#include <stdint.h>

#include "attest/topk.h"
#include "fuzz_jobs.h"

typedef struct attest_topk_fuzz_options {
    const char *candidate;    /* spec as given: a built-in top-k name or path/lib.so:NAME */
    const char *engine;       /* "search" or "libfuzzer" */
    const char *fuzzer;       /* libfuzzer: the target binary, NULL: fuzz/fuzz_topk beside attest */
    const char *corpus, *dict;
    fuzz_settings run;
    int no_structure;
    attest_topk_gen_bounds gen; /* search: the generator's bounds */
    int gen_given;              /* a bound was given on the command line */
} attest_topk_fuzz_options;

/* Runs the search; returns the exit status (0 nothing found, 1 a finding saved, 2 usage or
 * input error, 130 interrupted). */
int attest_topk_fuzz(const attest_topk_fuzz_options *o);

#endif /* ATTEST_CLI_TOPK_FUZZ_H */
