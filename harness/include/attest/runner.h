/* attest: the runner judges one candidate on cases, with run integrity and crash isolation.
 *
 * Per case: the case's tensors are copied into a guarded arena (canaries around every buffer,
 * outputs poisoned), input checksums are taken, the candidate runs `reruns` times (in a forked
 * worker when isolated), and the outputs are compared with the reference under the policy.
 * Verdict priority when several findings apply: CRASH, TIMEOUT, HARNESS_ERROR, UNSUPPORTED,
 * OUT_OF_BOUNDS_WRITE, INPUT_MODIFIED, NONDETERMINISTIC, MISMATCH, GRAPH_MISMATCH, OK (the
 * CLI's --sanitize sets SANITIZER over any of them). All findings stay in the
 * record's integrity_flags and failed_gates.
 *
 * The reference, the candidate and the comparator see the case with the candidate's declared
 * conventions (masking, lse_convention) in place of the case's. Timings in the record:
 * ref_seconds the reference; run_seconds the run phase as the caller waits for it (placement,
 * every re-run with its process round trip and integrity checks; the reference is computed while
 * the first isolated run is in flight and is not counted twice); compare_seconds the gates.
 * gen_seconds is left 0 for the caller. case_id counts the cases judged by this runner.
 * Device candidates: see attest/device.h.
 */
#ifndef ATTEST_RUNNER_H
#define ATTEST_RUNNER_H

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/policy.h"
#include "attest/record.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Computes the simulated reference of every output tensor of a case into outputs[i] and, when
 * `bounds` is not NULL, each element's error bound under models[i] into bounds[i] (one model per
 * output, from the policy; attest_ref_simulated in references/ is the real one). The runner asks
 * for bounds when the policy's entries have bound_factor set, and takes the function as a
 * pointer so the harness does not depend on references/. */
typedef attest_status (*attest_reference_fn)(const attest_case *c, const attest_bound_model *models,
                                             double **outputs, double **bounds);

typedef struct attest_runner_options {
    int32_t reruns;           /* runs per case, compared bitwise (default 2) */
    double timeout_seconds;   /* per run (default 10) */
    int32_t isolate;          /* 1 (default): run in a forked worker; 0: in this process */
    const attest_policy *policy;
    attest_reference_fn reference;
    /* 1: device candidates only. After the first run of each case, the worker captures the
     * candidate's run() into a CUDA graph with other lengths and page tables in the same
     * buffers (every length 1, every page-table entry 0), restores the case, replays the graph
     * and compares its outputs bitwise with the eager run's: a difference, or a launch that
     * cannot be captured, is GRAPH_MISMATCH. Needs the device ops' graph ops. */
    int32_t graph_check;
} attest_runner_options;

/* Returns the defaults (reruns 2, timeout 10 s, isolated); policy and reference left NULL. */
attest_runner_options attest_runner_defaults(void);

typedef struct attest_runner attest_runner; /* opaque */

/* Creates a runner for one candidate; when isolated, its worker is forked with the first case.
 * options->policy NULL means the embedded default policy; options->reference is required. */
attest_status attest_runner_create(const attest_candidate *candidate,
                                   const attest_runner_options *options, attest_runner **out)
    ATTEST_MUST_CHECK;

/* Judges one case (placed anywhere; the runner copies it) and fills the record. `keep` (may be
 * NULL) receives the reference and candidate outputs. Returns an error only when the harness
 * itself failed in a way that stops the campaign; a failing candidate is a verdict. */
attest_status attest_runner_judge(attest_runner *runner, const attest_case *c,
                                  attest_case_record *record, attest_case_outputs *keep)
    ATTEST_MUST_CHECK;

/* Stops the worker and frees everything. */
void attest_runner_destroy(attest_runner *runner);

/* Number of workers forked so far (1 + one per crash or timeout; 0 when not isolated). */
unsigned long attest_runner_worker_starts(const attest_runner *runner);

/* The device description a device candidate's worker reported ("" for host candidates or
 * before the first device run), for provenance. */
const char *attest_runner_device(const attest_runner *runner);

/* Makes this process a child subreaper and, after every worker ends, kills (with their process
 * trees) and reaps its children that are not live workers: what a crashed worker's candidate
 * left running, setsid() daemons included, re-parented here. Only for programs that start no
 * children of their own (the attest CLI calls it); workers always end their own descendants. */
void attest_runner_reap_orphans(void);

/* A candidate from a plugin: "path/libfoo.so:NAME". The caller's process never loads the
 * library: a probe child loads it, checks the candidate and reports its name, description,
 * kernel, domain and conventions, which the returned stand-in carries; its functions load the
 * library in the process that first calls one (the runner's worker), where it stays loaded.
 * The same library and name give the same stand-in; at most 16 per process.
 * ATTEST_ERR_NOT_FOUND / ATTEST_ERR_FORMAT with a message on failure. */
attest_status attest_plugin_load(const char *spec, const attest_candidate **out) ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_RUNNER_H */
