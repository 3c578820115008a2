/* attest: running a top-k candidate (attest/topk.h) as the runner runs the other families: each
 * run in a forked child with a time limit, outputs poisoned and fenced by canaries in memory the
 * parent shares with the child, input checksums before and after, and re-runs compared bitwise.
 * A crash, a hang, a write past the outputs, a changed input or outputs that differ between runs
 * is a finding of the run, never an error of the harness. */
#ifndef ATTEST_TOPK_RUNNER_H
#define ATTEST_TOPK_RUNNER_H

#include <stdint.h>

#include "attest/status.h"
#include "attest/topk.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attest_topk_run_options {
    int32_t isolate;        /* 1: each run in a forked child; 0: in this process (no crash or
                               hang protection; canaries, checksums and re-runs still apply) */
    int32_t reruns;         /* runs per case, compared bitwise (>= 1) */
    double timeout_seconds; /* per run, isolated only */
} attest_topk_run_options;

/* isolate 1, reruns 2, timeout 10 s. */
attest_topk_run_options attest_topk_run_defaults(void);

typedef struct attest_topk_run_result {
    uint32_t failed;        /* bits (1u << attest_topk_check): run, crash, timeout, canary, input,
                               nondeterminism */
    int32_t outputs_valid;  /* 1: idx / phys hold the first run's outputs (no crash or timeout) */
    int32_t runs;           /* runs that returned */
    char detail[192];       /* one line on the first finding, "" when none */
} attest_topk_run_result;

/* Runs cand on case c o->reruns times (isolated: all in one forked child, which a crash or the
 * time limit of all the runs ends) and copies the first run's outputs into idx / phys ([rows, k]
 * each; NULL for an output the candidate does not declare, required for one it does). Errors
 * only when the harness cannot run it (memory, fork). */
attest_status attest_topk_run(const attest_topk_candidate *cand, const attest_topk_case *c,
                              const attest_topk_run_options *o, int32_t *idx, int32_t *phys,
                              attest_topk_run_result *res) ATTEST_MUST_CHECK;

/* A top-k candidate from a plugin, "path/libfoo.so:NAME" (attest/topk.h's entry point). A
 * probe child with a deadline loads it (a constructor or entry point that crashes or hangs
 * fails there) and checks the name, the run pointer (code of a loaded library), the declared
 * outputs, order and short-row rule; the caller's process never loads the library: the returned
 * stand-in carries what the probe reported, and its run() loads the library in the process that
 * first calls it (the top-k runner's child per case). At most 16 per process. ATTEST_ERR_NOT_FOUND names
 * the candidates the plugin has; ATTEST_ERR_FORMAT what is wrong with it. */
attest_status attest_topk_plugin_load(const char *spec, const attest_topk_candidate **out)
    ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_TOPK_RUNNER_H */
