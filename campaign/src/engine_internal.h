/* attest: what the campaign engine's in-process loop (engine.c) and its sharded form over
 * worker processes (engine_jobs.c) share. Not a public interface. */
#ifndef ATTEST_CAMPAIGN_ENGINE_INTERNAL_H
#define ATTEST_CAMPAIGN_ENGINE_INTERNAL_H

#include <signal.h>

#include "attest/results.h"
#include "attest/campaign.h"

/* Set by SIGINT/SIGTERM (and by --max-failures): the engine stops after the current case. */
extern volatile sig_atomic_t attest_engine_stop_requested;

typedef struct engine_run {
    const attest_engine_options *opt;
    FILE *log;
    attest_results_writer *results;
    struct attest_junit *junit;    /* --junit: one testcase per record, or NULL */
    attest_engine_totals *totals;
    double start, last_progress;
    uint64_t next_case_id;
    uint32_t failures_printed;
} engine_run;

/* Returns 1 once the options' time limit is up (and records it in the totals). */
int attest_engine_time_up(engine_run *er);

/* Takes one judged case in campaign order: numbers it, counts it, appends it (with `c` and
 * `kept` for a failing case's repro; both may be NULL), prints it when it failed and updates the
 * progress line. Returns the results file's error, if any. */
attest_status attest_engine_take_record(engine_run *er, const attest_job *job,
                                        attest_case_record *rec, const attest_case *c,
                                        const attest_case_outputs *kept) ATTEST_MUST_CHECK;

/* Takes one generated case the filter skipped. */
void attest_engine_take_filtered(engine_run *er);

/* Generates case `seed` of a job and says whether the job's filter keeps it (*skip = 1: not).
 * On error the case holds no memory. */
attest_status attest_engine_generate(const attest_job *job, uint64_t index, uint64_t seed,
                                     attest_case *c, int *skip, double *gen_seconds)
    ATTEST_MUST_CHECK;

/* Runs every case of the jobs over opt->jobs worker processes (case g of the campaign, counted
 * across jobs, goes to worker g mod N) and takes the records in campaign order. */
attest_status attest_engine_run_sharded(engine_run *er, const attest_job *jobs, size_t num_jobs)
    ATTEST_MUST_CHECK;


#endif
