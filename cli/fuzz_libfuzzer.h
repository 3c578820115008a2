/* attest fuzz's libFuzzer engine: N child processes of a kernel's libFuzzer target (fuzz/,
 * built with clang), one shared corpus, a progress line from their live counters, and their
 * per-job results files merged into one.
 *
 * Children rather than LLVMFuzzerRunDriver in this process: a candidate that crashes, hangs or
 * corrupts memory takes down its libFuzzer process, not the driver that must still decode,
 * minimize and save the input it died on; and a gcc build of attest can drive the targets of a
 * clang build (--fuzzer PATH).
 */
#ifndef ATTEST_CLI_FUZZ_LIBFUZZER_H
#define ATTEST_CLI_FUZZ_LIBFUZZER_H

#include <stdint.h>
#include <stdio.h>

#include "attest/case.h"
#include "attest/status.h"
#include "fuzz_jobs.h"

#define ATTEST_LF_MAX_FINDINGS 8

typedef struct attest_lf_options {
    const char *target;     /* the fuzz_<target> binary */
    const char *candidate;  /* candidate spec, as given */
    int device_candidate;   /* ASan then runs with protect_shadow_gap=0 and no leak check */
    const char *policy;     /* tolerance policy file, NULL: the embedded one */
    const char *corpus;     /* corpus directory (new inputs are written there) */
    const char *dict;       /* libFuzzer dictionary, NULL: none */
    const char *workdir;    /* scratch directory: per-job artifacts, results and logs */
    double time, timeout;   /* campaign and per-input limits, seconds */
    int32_t jobs, reruns;
    uint64_t seed;          /* job i runs libFuzzer with -seed derived from seed and i */
    int structure;          /* 0: byte mutations only, no semantic counters */
    int progress;           /* a progress line on `progress_out` */
    int features;           /* semantic classes the kernel's cases have */
} attest_lf_options;

typedef struct attest_lf_totals {
    uint64_t execs, judged, classes; /* summed over jobs (classes: the most any job reached) */
    uint64_t coverage, features;     /* libFuzzer's cov and ft, the most any job reported */
    double seconds;                  /* until the last job ended */
    double first_finding_s;          /* < 0: none */
    uint64_t first_finding_execs;
    int findings;                    /* inputs a job stopped on */
    char finding[ATTEST_LF_MAX_FINDINGS][4096]; /* their paths (crash-*, timeout-*, ...) */
    char finding_log[ATTEST_LF_MAX_FINDINGS][4096];
    int interrupted;                 /* SIGINT or SIGTERM reached the driver */
    uint64_t rows, declined;         /* rows merged into the results file; of them UNSUPPORTED */
} attest_lf_totals;

/* Runs the campaign until opt->time passes, a job stops on an input (the others are then
 * stopped), or SIGINT/SIGTERM. A job that ends without an input and not by our hand is an
 * error naming its log. */
attest_status attest_lf_run(const attest_lf_options *opt, FILE *progress_out,
                            attest_lf_totals *totals) ATTEST_MUST_CHECK;

/* Merges the jobs' results files of the workdir, in job order with case ids renumbered, into
 * `out` (created; command_line recorded as provenance; closed as interrupted when a signal
 * stopped the campaign, else complete: a finding ends a search normally). *rows receives the
 * rows merged, *declined (when not NULL) those of them the candidate declined (UNSUPPORTED). */
attest_status attest_lf_merge(const attest_lf_options *opt, const char *out,
                              const char *command_line, int interrupted, uint64_t *rows,
                              uint64_t *declined) ATTEST_MUST_CHECK;

/* A whole campaign of the verb: attest_lf_run (progress on stderr), attest_lf_merge into out,
 * then its summary on stdout (execs, coverage, semantic classes, findings, rows merged). */
attest_status attest_lf_run_merge(const attest_lf_options *opt, const char *out,
                                  const char *command_line, attest_lf_totals *t) ATTEST_MUST_CHECK;

/* The target binary for a kernel beside this executable (DIR/fuzz/fuzz_<target>), written into
 * buf; ATTEST_ERR_NOT_FOUND when there is none. */
attest_status attest_lf_default_target(attest_kernel kernel, char *buf, size_t cap) ATTEST_MUST_CHECK;

/* The same for a target named directly ("topk": DIR/fuzz/fuzz_topk). */
attest_status attest_lf_named_target(const char *target, char *buf, size_t cap) ATTEST_MUST_CHECK;

/* Makes a scratch folder $TMPDIR/attest-fuzz-XXXXXX (or /tmp) into work, and the corpus: the
 * folder corpus_arg (made when missing) or, when NULL, work/corpus. */
attest_status attest_lf_scratch(const char *corpus_arg, char *work, size_t wcap, char *corpus,
                                size_t ccap) ATTEST_MUST_CHECK;

/* What the verb's libFuzzer paths (a kernel's target, fuzz_topk) fill alike, and the buffers
 * the options point into. */
typedef struct attest_lf_setup {
    attest_lf_options lo;
    char target[4096], work[4096], corpus[4200];
} attest_lf_setup;

/* Takes the target from --fuzzer (an executable) or as fuzz/fuzz_<name> beside this executable,
 * checks --dict, makes the scratch folder and the corpus (attest_lf_scratch), and fills s->lo's
 * target, corpus, dict, workdir, limits, jobs, reruns, seed and progress from them and `run`;
 * the caller fills the rest (candidate, policy, structure, features). Returns -1 to go on, else
 * prints one line and returns the exit status. */
int attest_lf_setup_from(const char *verb, const char *name, const char *fuzzer,
                         const char *dict, const char *corpus_arg, const fuzz_settings *run,
                         attest_lf_setup *s);

/* Removes a scratch folder this command made (files one level down and one more). */
void attest_lf_remove_tree(const char *dir);

/* Reads a file whole into a heap buffer (free it). */
attest_status attest_lf_read_file(const char *path, uint8_t **data, size_t *size) ATTEST_MUST_CHECK;

/* Keeps an input a target stopped on as FINDINGS/finding-<tag>-<id>.fuzz-input, beside the
 * finding's case file: it replays through the target alone. id gets the input's name after its
 * first '-' (libFuzzer names it crash-<hash>), kept the path written. */
attest_status attest_lf_keep_input(const char *input, const uint8_t *data, size_t size,
                                   const char *findings, const char *tag, char *id, size_t id_cap,
                                   char *kept, size_t kept_cap) ATTEST_MUST_CHECK;

#endif
