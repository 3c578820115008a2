/* attest: candidates that run in another process (a Python function, a Triton kernel behind
 * PyTorch, any program speaking the bridge protocol of docs/external-candidates.md).
 *
 * `py:PATH.py:NAME` starts `python3 -m attest_candidate PATH.py NAME` (the package in python/);
 * `exec:CMD ARG...` starts CMD with its arguments (split at spaces, no shell). Loading starts the
 * process once to read its declaration (kernel family, name, conventions, memory domain) and
 * stops it; the candidate it returns is an ordinary host candidate: the runner places, poisons,
 * guards and checksums the case as for any other, and its run() copies the arena's data region
 * (every tensor with its canaries) into shared memory the process maps, asks the process to run
 * the case, and copies the region back, so every integrity check sees what the process wrote.
 * The serving process starts on the first run in each runner worker and is kept from case to
 * case; after a fault (exception, exit, signal, hang, protocol error) it is killed and the next
 * case starts a fresh one.
 */
#ifndef ATTEST_EXTERNAL_H
#define ATTEST_EXTERNAL_H

#include "attest/candidate.h"
#include "attest/status.h"
#include "attest/topk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the control messages; a process declaring another one is refused. */
#define ATTEST_EXTERNAL_PROTOCOL 1

/* Returns 1 when `spec` names an external candidate ("py:..." or "exec:..."), else 0. */
int attest_external_is_spec(const char *spec);

/* Loads an external candidate. The candidate lives for the rest of the process. Bad input gives
 * one line: ATTEST_ERR_NOT_FOUND (no such file, no such NAME in the module, command not found),
 * ATTEST_ERR_FORMAT (import failed, wrong signature, bad declaration, protocol version),
 * ATTEST_ERR_INVALID_ARGUMENT (malformed spec), ATTEST_ERR_CHILD (the process could not start). */
attest_status attest_external_load(const char *spec, const attest_candidate **out)
    ATTEST_MUST_CHECK;

/* The memory domain the process declared ("host" or "cuda") for an external candidate, NULL for
 * any other candidate. The runner sees every external candidate as host memory: a "cuda"
 * candidate's process moves the case to the GPU itself. */
const char *attest_external_domain(const attest_candidate *cand);

/* Loads an external top-k candidate (a process declaring the "topk" family with its contract:
 * order, outputs, short-row rule; docs/topk.md). Errors as attest_external_load; a process
 * declaring another family is ATTEST_ERR_FORMAT. attest_topk_run drives it: the process is
 * started on the first run in the calling process (again after a fork), gets each run's
 * inputs, poisoned outputs and canaries in the shared region, and a fault (exception, exit,
 * signal, hang, protocol error, outputs of the wrong shape) is a finding of the run. */
attest_status attest_external_topk_load(const char *spec, const attest_topk_candidate **out)
    ATTEST_MUST_CHECK;

/* Returns 1 when cand was loaded by attest_external_topk_load, else 0. */
int attest_external_topk_is(const attest_topk_candidate *cand);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_EXTERNAL_H */
