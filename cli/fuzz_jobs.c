/* attest fuzz: forked search jobs (fuzz_jobs.h). */
#include "fuzz_jobs.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/clock.h"
#include "attest/usage.h"
#include "fuzz_libfuzzer.h"

static volatile sig_atomic_t jobs_signal;
static void on_signal(int sig) { jobs_signal = sig; }

int fuzz_job_should_stop(const fuzz_job_slot *slot, double deadline)
{
    return __atomic_load_n(&slot->stop, __ATOMIC_RELAXED) || attest_monotonic_seconds() > deadline;
}

void fuzz_job_found(fuzz_job_slot *slot, uint64_t index, uint64_t seed, uint64_t failed)
{
    slot->index = index;
    slot->seed = seed;
    slot->failed = failed;
    __atomic_store_n(&slot->found, 1, __ATOMIC_RELEASE);
}

attest_status fuzz_jobs_run(int32_t jobs, double time, int progress, fuzz_job_fn fn, void *ctx,
                            fuzz_jobs_result *r)
{
    memset(r, 0, sizeof *r);
    r->first_s = -1;
    ATTEST_RETURN_IF(jobs < 1, ATTEST_ERR_INVALID_ARGUMENT, "fuzz jobs: %d jobs", jobs);
    const size_t len = (size_t)jobs * sizeof(fuzz_job_slot);
    fuzz_job_slot *slots = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ATTEST_RETURN_IF(slots == MAP_FAILED, ATTEST_ERR_IO, "job counters: %s", strerror(errno));
    memset(slots, 0, len);
    pid_t *pids = calloc((size_t)jobs, sizeof *pids);
    if (pids == NULL) {
        munmap(slots, len);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "fuzz jobs: out of memory");
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    jobs_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    fflush(NULL);
    const double start = attest_monotonic_seconds(), deadline = start + time;
    int running = 0, stopping = 0;
    for (int32_t i = 0; i < jobs; i++) {
        const pid_t pid = fork();
        if (pid == 0) {
            /* The driver stops the jobs through their slots; a terminal's ^C reaches them too
             * and must let them close their results files. */
            signal(SIGINT, SIG_IGN);
            signal(SIGTERM, SIG_IGN);
            _exit(fn(ctx, i, jobs, &slots[i], deadline));
        }
        if (pid < 0) {
            r->errors++;
            stopping = 1;
            for (int32_t k = 0; k < i; k++) __atomic_store_n(&slots[k].stop, 1, __ATOMIC_RELAXED);
            break;
        }
        pids[i] = pid;
        running++;
    }
    double last_progress = 0;
    while (running > 0) {
        usleep(20000);
        const double now = attest_monotonic_seconds() - start;
        uint64_t judged = 0, found = 0;
        for (int32_t i = 0; i < jobs; i++) {
            judged += __atomic_load_n(&slots[i].judged, __ATOMIC_RELAXED);
            found += __atomic_load_n(&slots[i].found, __ATOMIC_ACQUIRE);
        }
        if (found && r->first_s < 0) {
            r->first_s = now;
            r->first_judged = judged;
        }
        if (!stopping && (found || jobs_signal)) {
            stopping = 1; /* the search stops at the first finding */
            for (int32_t i = 0; i < jobs; i++) __atomic_store_n(&slots[i].stop, 1, __ATOMIC_RELAXED);
        }
        for (int32_t i = 0; i < jobs; i++) {
            int status;
            if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                pids[i] = 0;
                running--;
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) slots[i].error = 1;
            }
        }
        if (progress && now - last_progress >= 0.5) {
            last_progress = now;
            fprintf(stderr, "\r  %.0f s  cases %" PRIu64 "  %.0f cases/s  findings %" PRIu64 "   ",
                    now, judged, now > 0 ? (double)judged / now : 0.0, found);
            fflush(stderr);
        }
    }
    if (progress) fputc('\n', stderr);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    r->seconds = attest_monotonic_seconds() - start;
    r->interrupted = jobs_signal != 0;
    int32_t first = -1;
    for (int32_t i = 0; i < jobs; i++) {
        r->judged += slots[i].judged;
        r->errors += slots[i].error != 0;
        r->findings += slots[i].found != 0;
        if (slots[i].found && (first < 0 || slots[i].index < slots[first].index)) first = i;
    }
    if (first >= 0) r->first = slots[first];
    free(pids);
    munmap(slots, len);
    return ATTEST_OK;
}

int fuzz_jobs_merge(attest_status run_status, const fuzz_jobs_result *r, int32_t jobs,
                    uint64_t seed, const char *work, const char *out, const char *command_line,
                    uint64_t *rows)
{
    attest_lf_options lo;
    memset(&lo, 0, sizeof lo);
    lo.jobs = jobs;
    lo.workdir = work;
    lo.seed = seed;
    *rows = 0;
    attest_status st = run_status;
    if (st == ATTEST_OK) st = attest_lf_merge(&lo, out, command_line, r->interrupted, rows, NULL);
    if (st != ATTEST_OK || r->errors)
        return attest_cli_usage_error("fuzz", "%s (scratch folder kept: %s)",
                                      st != ATTEST_OK ? attest_last_error()
                                                      : "a job failed (its message is above)",
                                      work);
    printf("attest fuzz: %" PRIu64 " cases in %.2f s (%.0f cases/s over %d job%s), %d "
           "finding%s\n",
           r->judged, r->seconds, r->seconds > 0 ? (double)r->judged / r->seconds : 0.0, jobs,
           jobs == 1 ? "" : "s", r->findings, r->findings == 1 ? "" : "s");
    return -1;
}
