/* Shared helpers of attest's fuzz targets. What a kernel target's input means is in
 * fuzz_inputs.h (read from both ends, so a finding replays from the input file alone, under
 * libFuzzer, the replay driver or `attest fuzz`).
 *
 * The environment a kernel target reads is in fuzz_inputs.h.
 */
#ifndef ATTEST_FUZZ_COMMON_H
#define ATTEST_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/record.h"
#include "fuzz_inputs.h"

/* The candidate the target judges: $ATTEST_FUZZ_CANDIDATE (a built-in name or path.so:NAME),
 * else `fallback`. Aborts with a message when it cannot be resolved: a misconfigured campaign
 * must not look like a clean one. */
const attest_candidate *fuzz_candidate(const char *fallback);

/* Judges a case in-process under $ATTEST_FUZZ_POLICY (default: the embedded policy) with
 * $ATTEST_FUZZ_RERUNS runs (default 1), appends the record to
 * $ATTEST_FUZZ_RESULTS when set (every tolerance result, HDF5: `attest show` reads it; closed
 * as complete when the fuzzer ends normally), and on any failing verdict closes that file (the
 * failing row and its repro in it), prints the record, saves the case to
 * $ATTEST_FUZZ_ARTIFACTS (default ".") as fuzz-<target>-<seed>.h5 and aborts so libFuzzer keeps
 * the input. */
void fuzz_judge(const char *target, const attest_candidate *cand, attest_case *c);

/* A kernel target's LLVMFuzzerTestOneInput: decodes the input (fuzz_decode), sets the semantic
 * counters, judges it (fuzz_judge). */
int fuzz_kernel_input(attest_kernel kernel, const char *target, const char *fallback,
                      const uint8_t *data, size_t size);

/* A kernel target's LLVMFuzzerCustomMutator: fuzz_mutate with libFuzzer's byte mutator, or the
 * byte mutator alone when ATTEST_FUZZ_STRUCTURE=0. */
size_t fuzz_kernel_mutate(attest_kernel kernel, uint8_t *data, size_t size, size_t max_size,
                          unsigned int seed);

/* How this target was started (LLVMFuzzerInitialize's argv, joined), for provenance. */
const char *fuzz_started_as(void);

/* This process's slot of the $ATTEST_FUZZ_STATS file (mapped on the first call), or NULL when
 * the variable is unset. Aborts when it names a slot that cannot be mapped. */
fuzz_stats *fuzz_stats_slot(void);

/* The libFuzzer entry points. fuzz_common.c defines LLVMFuzzerInitialize (it records the
 * command line for the results file's provenance); each target defines LLVMFuzzerTestOneInput. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
/* libFuzzer's own mutator; weak, so the replay drivers (no libFuzzer) link without it. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size) __attribute__((weak));

#endif
