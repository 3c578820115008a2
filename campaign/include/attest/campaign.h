/* attest: the campaign engine (libattest_campaign), shared by `attest run`, `attest campaign`,
 * `attest check`, `attest fuzz` and the baseline and pipeline modes: generates cases from seeds,
 * judges them with the runner, appends every record to the results file (with its provenance,
 * filled here once), prints progress and failing cases as they happen, and stops on SIGINT/SIGTERM
 * after the current case. */
#ifndef ATTEST_CAMPAIGN_H
#define ATTEST_CAMPAIGN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "attest/candidate.h"
#include "attest/generator.h"
#include "attest/policy.h"
#include "attest/report.h"
#include "attest/results.h"
#include "attest/runner.h"
#include "attest/verdict.h"

/* One candidate on `cases` generated cases (or one case when use_case_seed is set). */
typedef struct attest_job {
    const attest_candidate *candidate;
    const char *candidate_spec;  /* as the user wrote it (replay commands repeat it) */
    attest_gen_options gen;
    uint64_t cases;
    uint64_t seed;               /* campaign seed: case i uses attest_case_seed(seed, i) */
    int use_case_seed;           /* 1: run exactly one case drawn from case_seed */
    uint64_t case_seed;
    const char *filter;          /* parameter-string filter ("" or NULL: all) */
} attest_job;

typedef struct attest_engine_options {
    attest_runner_options runner; /* policy and reference are filled by the engine if NULL */
    const char *out_path;          /* results file, or NULL for none */
    int progress;                  /* 1: a live progress line on stderr */
    uint32_t print_failures;       /* failing cases printed as they happen (then only counted) */
    uint64_t max_failures;         /* stop after this many failures (0: never) */
    const char *command_line;
    uint32_t jobs;                 /* worker processes the cases are sharded over (0, 1: none) */
    const char *junit_path;        /* JUnit XML report, one testcase per case, or NULL */
    const char *junit_suite;       /* its suite name ("attest run") */
    double time_limit;             /* seconds; stop (as complete) when it is up (0: none) */
    /* Optional: called after each case is judged, before it is recorded, in the process that
     * judged it; may change the record (`--sanitize` makes a compute-sanitizer report the
     * case's verdict). A returned error stops the run as a harness failure. */
    attest_status (*inspect)(void *ctx, const attest_job *job, const attest_case *c,
                             attest_case_record *rec);
    void *inspect_ctx;
    /* Optional: called for each failing case once it is recorded, in the parent process, with
     * the outputs the runner kept (the candidate's bytes of its first run; asking for the hook
     * makes the runner keep them, for failing cases only when there is no results file).
     * `attest run --save-failures` writes the case file there. A returned error stops the run
     * as a harness failure: a hook that can go on reports its own errors and returns OK. */
    attest_status (*on_failure)(void *ctx, const attest_job *job, const attest_case *c,
                                const attest_case_record *rec, const attest_case_outputs *kept);
    void *on_failure_ctx;
    /* 1: call on_failure for passing cases too (`--save-passing`: a device case that passes
     * under a fixed judge is still worth bringing home, to check the fix against its bytes). */
    int on_failure_passing;
} attest_engine_options;

typedef struct attest_engine_totals {
    uint64_t planned, judged, filtered, failures;
    attest_summary summary;        /* every judged record, for the end-of-run summary */
    double seconds;
    int interrupted;               /* SIGINT/SIGTERM or max_failures stopped it */
    int stop_signal;               /* SIGINT or SIGTERM stopped it (0: not a signal) */
    int timed_out;                 /* the time limit ended it (not an interruption) */
} attest_engine_totals;

/* The exit status of a run: 128 + signal when a signal stopped it (never 0: an interrupted run
 * did not pass), 1 when a case failed, when nothing was judged (a --filter that matched no
 * case, or every case declined as UNSUPPORTED; `attest check` follows the same rule) or when
 * --max-failures stopped it, else 0. */
int attest_engine_exit_status(const attest_engine_totals *t);

/* Returns engine defaults: runner defaults, no results file, progress off, 20 failures printed. */
attest_engine_options attest_engine_defaults(void);

/* Runs the jobs in order into one results file. Returns a status only when the harness could not
 * go on (results file unwritable, a case that cannot be generated); failing candidates are
 * counted in totals. Failures are printed to `log` (stdout for the CLI). */
attest_status attest_engine_run(const attest_job *jobs, size_t num_jobs,
                                const attest_engine_options *options, FILE *log,
                                attest_engine_totals *totals) ATTEST_MUST_CHECK;

/* Stop signals, for every loop over cases (run, campaign, check): while caught, SIGINT and SIGTERM
 * only ask the loop to stop after the current case (attest_stop_requested); --max-failures asks
 * the same way. Catching clears an earlier request; releasing restores the dispositions before. */
typedef struct attest_stop_guard {
    struct sigaction old_int, old_term;
} attest_stop_guard;
void attest_stop_signals_catch(attest_stop_guard *g);
void attest_stop_signals_release(const attest_stop_guard *g);
int attest_stop_requested(void);
/* The signal that asked (SIGINT, SIGTERM), or 0. */
int attest_stop_signal(void);

/* A results file's provenance, filled the same way by every verb that writes one: initialized
 * (attest_results_provenance_init: build, host, start time), then the policy's name, hash, origin
 * and text and the command line (NULL: none). */
void attest_campaign_provenance(attest_results_provenance *prov, const attest_policy *policy,
                                const char *command_line);

/* Adds a candidate to prov: its name to the ","-joined list (*len: the list's length so far, 0
 * for the first; a name that does not fit is left out) and its kernel, which stays only while
 * every candidate runs the same one. */
void attest_campaign_provenance_candidate(attest_results_provenance *prov,
                                          const attest_candidate *c, size_t *len);

/* The reference the CLI judges with: simulated mode, kernel order. */
attest_status attest_engine_reference(const attest_case *c, double **outputs);

/* Writes a job as one line of the results file's provenance "jobs": "--kernel K <every
 * generator bound> --candidate SPEC", with a plugin's library path made absolute. Returns 0, or
 * -1 when buf is too small. */
int attest_engine_job_line(const attest_job *job, char *buf, size_t cap);

/* Finds the job of `candidate` (a name or a spec; NULL or "": the first) for `kernel` in a
 * provenance "jobs" text and fills its spec and generator options. Returns 1 when found, 0 when
 * not, -1 after reporting (attest replay: ...) a line that does not parse. */
int attest_engine_find_job(const char *jobs, const char *candidate, attest_kernel kernel,
                           char *spec, size_t spec_cap, attest_gen_options *gen);

/* Writes spec with the library path of a plugin ("path:NAME") made absolute; a built-in name
 * or a path that does not resolve is copied as it is. */
void attest_engine_absolute_spec(const char *spec, char *buf, size_t cap);

/* Where `--jobs` worker `worker` runs on a GPU host: given $CUDA_VISIBLE_DEVICES (NULL when
 * unset) and the number of devices the driver lists, writes the value the worker's
 * CUDA_VISIBLE_DEVICES gets into buf (round-robin over the visible entries, or over 0..n-1) and
 * returns 1; returns 0 when no device is visible (nothing to set). */
int attest_engine_worker_gpu(const char *visible, unsigned driver_gpus, uint32_t worker, char *buf,
                             size_t cap);

/* The devices `--jobs` workers are spread over: the entries of $CUDA_VISIBLE_DEVICES (visible;
 * NULL when unset) or, unset, the devices the driver lists. */
unsigned attest_engine_visible_gpus(const char *visible, unsigned driver_gpus);

/* The worker count a verb uses when `--jobs` is not given, between 1 and max: with a candidate
 * that runs on a GPU (device != 0), one per visible GPU (several processes on one GPU take turns
 * at it and run slower together); otherwise one per online core. Reads $CUDA_VISIBLE_DEVICES
 * and /proc/driver/nvidia, never CUDA itself (the workers are forked after). */
uint32_t attest_engine_default_workers(int device, uint32_t max);

/* Writes the JSON summary of a finished run to path (NULL: nothing) and returns exit_code, or
 * ATTEST_EXIT_USAGE after a one-line error when it cannot be written. */
int attest_engine_json(const char *path, const char *verb, const attest_engine_totals *t,
                       const char *results_path, int exit_code);

/* Joins argv into one shell-quoted line (for provenance and replay hints). */
void attest_engine_command_line(int argc, char **argv, char *buf, size_t cap);

#endif /* ATTEST_CAMPAIGN_H */
