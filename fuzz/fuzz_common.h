/* Shared helpers of attest's fuzz targets.
 *
 * A fuzz input is read from both ends, as zstd's fuzz data producer does: the case's seed and
 * shape knobs come from the TAIL (so libFuzzer's mutations of the head leave the shape stable),
 * and mutation operations (fp8 bit patterns, index edits, lengths, sinks) from the HEAD. A
 * finding therefore replays from the input file alone, under libFuzzer or the replay driver.
 */
#ifndef ATTEST_FUZZ_COMMON_H
#define ATTEST_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/record.h"

typedef struct fuzz_input {
    const uint8_t *data;
    size_t head; /* next unread byte from the front */
    size_t tail; /* one past the last unread byte from the back */
} fuzz_input;

fuzz_input fuzz_input_make(const uint8_t *data, size_t size);
/* Bytes left between head and tail. */
size_t fuzz_remaining(const fuzz_input *in);
/* Takes n <= 8 bytes from the tail as a little-endian integer (0 when exhausted). */
uint64_t fuzz_tail_uint(fuzz_input *in, unsigned n);
/* Takes n <= 8 bytes from the head as a little-endian integer (0 when exhausted). */
uint64_t fuzz_head_uint(fuzz_input *in, unsigned n);

/* The candidate the target judges: $ATTEST_FUZZ_CANDIDATE (a built-in name or path.so:NAME),
 * else `fallback`. Aborts with a message when it cannot be resolved: a misconfigured campaign
 * must not look like a clean one. */
const attest_candidate *fuzz_candidate(const char *fallback);

/* Judges a case in-process with the default policy and one run, appends the record to
 * $ATTEST_FUZZ_RESULTS when set (every tolerance result, HDF5: `attest show` reads it; closed
 * as complete when the fuzzer ends normally), and on any failing verdict closes that file (the
 * failing row and its repro in it), prints the record, saves the case to
 * $ATTEST_FUZZ_ARTIFACTS (default ".") as fuzz-<target>-<seed>.h5 and aborts so libFuzzer keeps
 * the input. */
void fuzz_judge(const char *target, const attest_candidate *cand, attest_case *c);

/* The libFuzzer entry points. fuzz_common.c defines LLVMFuzzerInitialize (it records the
 * command line for the results file's provenance); each target defines LLVMFuzzerTestOneInput. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
