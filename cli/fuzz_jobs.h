/* attest CLI (internal): the generated-case search of `attest fuzz` for the searches the campaign
 * engine does not run (top-k kernels, old vs new pairs): N forked jobs, job j judging cases j,
 * j + N, j + 2N, ... of the campaign until its deadline, a stop from the driver, or its first
 * failing case; one slot of shared memory per job for the driver's progress line and stop;
 * SIGINT and SIGTERM stop every job, which still close their results files. */
#ifndef ATTEST_CLI_FUZZ_JOBS_H
#define ATTEST_CLI_FUZZ_JOBS_H

#include <stdint.h>

#include "attest/status.h"

/* One job's live counters. The job writes all but `stop`. */
/* The settings a fuzz search takes from the command line (attest fuzz's common options), one
 * struct for the top-k and the pair searches. */
typedef struct fuzz_settings {
    const char *out;          /* the merged results file */
    const char *findings;     /* folder of the saved case files */
    const char *command_line; /* for provenance */
    double time, timeout;
    int32_t jobs, reruns, max_tries;
    uint64_t seed;
    int quiet;
} fuzz_settings;

typedef struct fuzz_job_slot {
    uint64_t judged;
    uint64_t found;  /* 1: the job stopped on a failing case */
    uint64_t index;  /* its case index in the campaign */
    uint64_t seed;   /* its case seed */
    uint64_t failed; /* what failed (the search's own bits: checks, gates) */
    uint64_t stop;   /* set by the driver: end after the case at hand */
    uint64_t error;  /* 1: a harness error ended the job (its message went to stderr) */
    uint64_t spare;
} fuzz_job_slot;

/* A job's body, run in a forked child: judge cases job, job + jobs, ... while
 * fuzz_job_should_stop(slot, deadline) is 0, count each in slot->judged, and on a failing case
 * fill index, seed, failed, then found (fuzz_job_found), and return. Returns its exit status. */
typedef int (*fuzz_job_fn)(void *ctx, int32_t job, int32_t jobs, fuzz_job_slot *slot,
                           double deadline);

int fuzz_job_should_stop(const fuzz_job_slot *slot, double deadline);
void fuzz_job_found(fuzz_job_slot *slot, uint64_t index, uint64_t seed, uint64_t failed);

typedef struct fuzz_jobs_result {
    uint64_t judged;        /* over all jobs */
    double seconds;         /* until the last job ended */
    double first_s;         /* when the driver saw the first finding, < 0: none */
    uint64_t first_judged;  /* cases judged by then */
    int findings;           /* jobs that stopped on a failing case */
    fuzz_job_slot first;    /* the finding of the lowest case index */
    int errors;             /* jobs that failed or died */
    int interrupted;        /* SIGINT or SIGTERM reached the driver */
} fuzz_jobs_result;

/* Runs `jobs` jobs of fn for at most `time` seconds, with a progress line on stderr when
 * `progress`. Errors only when the jobs cannot be started. */
attest_status fuzz_jobs_run(int32_t jobs, double time, int progress, fuzz_job_fn fn, void *ctx,
                            fuzz_jobs_result *r) ATTEST_MUST_CHECK;

/* Ends a search after fuzz_jobs_run (run_status is its status): merges the jobs' results files
 * of work into out (attest_lf_merge, closed as interrupted when r says so), sets *rows and prints
 * the cases judged and the findings. Returns -1 when all went well, else the exit code of the
 * usage error it printed, which names work: the scratch folder is kept for a look. */
int fuzz_jobs_merge(attest_status run_status, const fuzz_jobs_result *r, int32_t jobs,
                    uint64_t seed, const char *work, const char *out, const char *command_line,
                    uint64_t *rows);

#endif /* ATTEST_CLI_FUZZ_JOBS_H */
