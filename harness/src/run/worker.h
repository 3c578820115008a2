/* attest (internal): the crash-isolation worker.
 *
 * A worker is forked once (no exec: it shares the arena mapping and the candidate's code) and
 * serves run requests over a socketpair until it dies or is told to stop. The parent waits for
 * each answer with poll() and a deadline; a worker that dies (signal, abort, sanitizer report,
 * _exit, device fault) or misses the deadline (then SIGKILLed) is reaped and the run gets CRASH
 * or TIMEOUT. The next request forks a fresh worker. Workers die with their parent
 * (PR_SET_PDEATHSIG), reset every signal handler they inherit (a crash must kill them, not
 * jump into the parent's code) but ignore SIGINT (the parent decides how a campaign stops),
 * keep only stdout/stderr and their channel open, and never dump core. Each worker leads its
 * own process group, killed as a whole, so processes a candidate starts (a Python driver) go
 * with it. Use a runner from a thread that outlives it: PR_SET_PDEATHSIG follows the thread.
 */
#ifndef ATTEST_WORKER_H
#define ATTEST_WORKER_H

#include <sys/types.h>

#include "arena.h"
#include "attest/candidate.h"
#include "attest/status.h"
#include "execute.h"

#define WORKER_MAX_STRAYS 16

typedef struct worker {
    const attest_candidate *cand;
    pid_t pid;               /* 0 when no worker runs; also its process group */
    int fd;                  /* the parent's end of the channel; -1 when none */
    int pidfd;               /* readable when the worker exits (-1 without pidfd_open) */
    uint64_t generation;     /* arena generation the worker was forked with */
    double deadline;         /* of the request in flight (CLOCK_MONOTONIC seconds) */
    int in_flight;
    unsigned long forks;     /* workers started so far */
    pid_t strays[WORKER_MAX_STRAYS]; /* killed but not reaped yet (stuck in the kernel) */
    int num_strays;
} worker;

void worker_init(worker *w, const attest_candidate *cand);

/* Sends a run request, forking a worker first when none runs or when the arena was re-mapped
 * since the worker was forked. The answer is collected by worker_wait. ATTEST_ERR_CHILD when a
 * worker cannot be started. */
attest_status worker_send(worker *w, arena *a, const exec_request *req, double timeout_seconds)
    ATTEST_MUST_CHECK;

/* Waits for the answer to the request in flight until its deadline. Fills res; outcome
 * EXEC_CRASH or EXEC_TIMEOUT when the worker died or was killed (it is then reaped and gone). */
void worker_wait(worker *w, exec_result *res);

/* Stops the worker: closes its channel (it calls fini and exits), waits briefly, then kills it.
 * Reaps every child this worker object started. */
void worker_stop(worker *w);

#endif /* ATTEST_WORKER_H */
