/* attest (internal): one run of a candidate on the case placed in the arena.
 *
 * The same code runs in the crash-isolation worker and, when isolation is off, in the caller's
 * process. It owns the candidate's context (init once, fini at the end) and, for device-domain
 * candidates, the device mirror of the arena's data region (see attest/device.h).
 */
#ifndef ATTEST_EXECUTE_H
#define ATTEST_EXECUTE_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "attest/candidate.h"

/* What a run came to, as the executor sees it (the parent adds CRASH and TIMEOUT). */
typedef enum exec_outcome {
    EXEC_DONE = 0,            /* run() returned 0, outputs are in the arena */
    EXEC_CANDIDATE_ERROR = 1, /* run() returned nonzero (exec_result.rc) */
    EXEC_UNSUPPORTED = 2,     /* supports() said no, or no device for a device candidate */
    EXEC_INIT_FAILED = 3,     /* init() returned nonzero */
    EXEC_HARNESS_ERROR = 4,   /* the case could not be handed to the candidate */
    EXEC_DEVICE_FAULT = 5,    /* the device failed during or after the run: context is lost */
    EXEC_CRASH = 6,           /* parent only: the worker died */
    EXEC_TIMEOUT = 7          /* parent only: the worker was killed after the time limit */
} exec_outcome;

typedef struct exec_request {
    uint32_t magic;          /* EXEC_MAGIC, guards against a confused channel */
    int32_t check_supports;  /* ask supports() first (the first run of a case) */
    uint64_t generation;     /* arena generation the parent placed the case in */
    double timeout_seconds;  /* how long the parent waits for the answer (0: no limit) */
    int32_t graph_check;     /* after the run: capture, replay, compare (runner option) */
    int32_t guarded;         /* the caller keeps the unplaced pages protected (an in-process
                              * runner: arena_guard), so the run does not protect them itself */
} exec_request;

#define EXEC_MAGIC 0x61747374u /* "atst" */

typedef struct exec_result {
    int32_t outcome;         /* exec_outcome */
    int32_t rc;              /* run()'s or init()'s return value */
    double run_seconds;      /* the candidate's run (with device copies and synchronize) */
    char message[200];       /* one line when outcome != EXEC_DONE */
    char device[96];         /* device description when a device was used */
    int32_t graph_mismatch;  /* the graph check found a difference (graph_msg says what) */
    char graph_msg[200];
} exec_result;

typedef struct exec_state {
    const attest_candidate *cand;
    void *ctx;
    int initialized;         /* init() was called */
    int init_rc;
    int device_state;        /* 0 not opened, 1 usable, -1 unusable (message kept) */
    char device_msg[160]; /* fits in a result message after its prefix */
    char device_desc[96];
    void *device_base;       /* mirror of [data_begin, used) of the arena */
    size_t device_cap;
} exec_state;

void exec_state_init(exec_state *s, const attest_candidate *cand);

/* What the executor tells a candidate that lives inside the harness (the external-process bridge,
 * external.c) about the run in progress, and what such a candidate can report beyond run()'s
 * return value: a process it drives can crash, hang or break the protocol, and those are verdicts
 * (CRASH, TIMEOUT, HARNESS_ERROR), not a nonzero return. Ordinary candidates never see it. */
typedef struct exec_run_info {
    const attest_candidate *cand;
    const attest_case *placed;  /* the case as handed over: tensors point into `region` */
    uint8_t *region;            /* the arena's data region: every tensor with its canaries */
    size_t region_bytes;
    const arena_control *control; /* the placed case's layout: its sparse pools' extents (the
                                   * region is arena offset control->data_begin) */
    int check_supports;         /* the first run of a case: the candidate may decline it */
    double deadline;            /* CLOCK_MONOTONIC second the caller stops waiting; 0: none */
    exec_outcome outcome;       /* left EXEC_DONE, or set to EXEC_CRASH, EXEC_TIMEOUT,
                                 * EXEC_HARNESS_ERROR or EXEC_UNSUPPORTED to decide the run */
    char message[200];          /* one line when outcome is set */
} exec_run_info;

/* The run in progress on this thread (set around init() and run()), or NULL. */
exec_run_info *exec_current_run(void);

/* The placed case whose sparse pools are protected while a host candidate runs, else NULL: the
 * worker's fault handler reads it to name the page a candidate touched. */
extern const arena_control *volatile exec_guarded;

/* Runs the candidate once on the case in `ctl` (initializing it on first use) and fills res. */
void exec_run(exec_state *s, arena_control *ctl, const exec_request *req, exec_result *res);

/* Calls fini() and frees the device mirror. */
void exec_state_fini(exec_state *s);

#endif /* ATTEST_EXECUTE_H */
