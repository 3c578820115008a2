/* attest fuzz inputs: what a kernel fuzz input means, in one library that the libFuzzer targets,
 * their replay drivers and `attest fuzz` share.
 *
 * A kernel fuzz input is read from both ends, as zstd's fuzz data producer does: the case's seed
 * and shape knobs come from the TAIL (so mutations of the head leave the shape stable), mutation
 * operations (fp8 bit patterns, index edits, lengths, sinks) from the HEAD. A finding therefore
 * replays from the input file alone: `attest fuzz` decodes the input a libFuzzer target stopped
 * on into the same case, judges it in an isolated worker, minimizes and saves it.
 *
 * Three views of one input format live here so that they cannot drift apart:
 *   - the decoder (input bytes -> case), what every run judges;
 *   - semantic features of a decoded case (length mod page size, pages touched, invalid
 *     fraction, all-invalid tiles, lonely queries, non-finite inputs, exponent classes, head
 *     count, ...), which the targets expose to libFuzzer as extra coverage counters;
 *   - a structure-aware mutator that writes whole operations with values chosen for those
 *     classes (page boundaries +-1, page-table swaps, -1 tiles, duplicates, fp8 special codes,
 *     scale exponents, sinks), where libFuzzer's byte mutations rarely land.
 */
#ifndef ATTEST_FUZZ_INPUTS_H
#define ATTEST_FUZZ_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/status.h"
#include "attest/topk.h"

/* --- reading an input from both ends --------------------------------------------------- */

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

/* Bytes of the tail: the generator seed (8) and the knobs byte. */
#define FUZZ_TAIL_BYTES 9
/* Operations a decoder applies at most. */
#define FUZZ_MAX_MUTATIONS 64

/* --- decoding ---------------------------------------------------------------------------- */

/* The libFuzzer target of a kernel family ("indexer", "mla_decode"), or NULL when it has none. */
const char *fuzz_target_of(attest_kernel kernel);

/* Decodes an input of `kernel`'s target into *out (a generated case with the head's operations
 * applied; pass a case that owns no memory). *valid is 0 when the input names no valid case
 * (the indexer target skips those; *out is then freed). */
attest_status fuzz_decode(attest_kernel kernel, const uint8_t *data, size_t size, attest_case *out,
                          int *valid) ATTEST_MUST_CHECK;

/* The top-k target's input (fuzz/fuzz_topk.c; the top-k family has no attest_kernel): the last 8
 * bytes are the generator seed (little-endian from the end), the byte before them the shape
 * knobs (bit 0: the default bounds, else small ones); the head is a list of 7-byte operations on
 * the generated case (a logit set to any float32, one logit copied over another, a run filled
 * with one value class, a request's length, two block-table entries swapped). *valid is 0 for an
 * input shorter than the tail (then *out owns nothing); else free *out with
 * attest_topk_case_free. */
attest_status fuzz_topk_decode(const uint8_t *data, size_t size, attest_topk_case *out,
                               int *valid) ATTEST_MUST_CHECK;

/* Storage a target decodes into on every exec without allocating: grown to the largest case
 * seen, never shrunk. */
/* A sparse pool's own copy (inputs.c, own_sparse_pool): a reservation that holds the pool of
 * generated case `owner` except in the ranges operations wrote since, which the next decode of
 * the same case copies back. */
#define FUZZ_POOL_WRITES 64
typedef struct fuzz_pool_copy {
    void *map;
    size_t bytes;
    uint64_t owner;        /* 0: none (the reservation is not reused) */
    uint32_t num_written;  /* FUZZ_POOL_WRITES + 1: more than the list holds */
    uint64_t written[FUZZ_POOL_WRITES][2]; /* byte offset and length */
} fuzz_pool_copy;

typedef struct fuzz_workspace {
    void *block;
    size_t cap;
    fuzz_pool_copy pool[2]; /* the main and the extra pool, held sparsely */
    /* The main and the extra pool held densely, written: their copies in block (map points
     * there; not a mapping of their own), kept for the next decode of the same case as above. */
    fuzz_pool_copy dense[2];
} fuzz_workspace;

/* fuzz_decode into ws's storage: *out's tensors point into ws, or, for a cache no operation
 * wrote, into the generated case the decoder keeps; read-only, valid until the next
 * fuzz_decode_reuse, fuzz_decode or fuzz_mutate (a pool held sparsely and written by an
 * operation lives in a reservation of ws's until the next decode). Free *out with
 * attest_case_free after use (it frees nothing: ws owns it all). On !*valid, *out still holds
 * the decoded (invalid) case. */
attest_status fuzz_decode_reuse(fuzz_workspace *ws, attest_kernel kernel, const uint8_t *data,
                                size_t size, attest_case *out, int *valid) ATTEST_MUST_CHECK;
void fuzz_workspace_free(fuzz_workspace *ws);

/* --- semantic features ------------------------------------------------------------------- */

/* Upper bound on the features of any kernel. */
#define FUZZ_MAX_FEATURES 64

/* Number of features of a kernel's cases (0 for a kernel without a target). */
int fuzz_feature_count(attest_kernel kernel);
/* Name of feature i ("len%64=63", "lonely-query", ...). */
const char *fuzz_feature_name(attest_kernel kernel, int i);
/* Counts, into hits[0..fuzz_feature_count), how often each feature occurs in c (saturating at
 * 255; hits is zeroed first). */
void fuzz_case_features(const attest_case *c, uint8_t hits[FUZZ_MAX_FEATURES]);

/* Semantic features of a decoded top-k case (lengths against k, the width and block edges, NaN
 * and infinities inside and past the length, ties between neighbours, signed zeros, batch and
 * next_n), counted as fuzz_case_features counts a kernel case's. */
int fuzz_topk_feature_count(void);
const char *fuzz_topk_feature_name(int i);
void fuzz_topk_features(const attest_topk_case *c, uint8_t hits[FUZZ_MAX_FEATURES]);

/* --- structure-aware mutation ------------------------------------------------------------ */

/* libFuzzer's byte-level mutator (LLVMFuzzerMutate) or any function of that shape. */
typedef size_t (*fuzz_byte_mutator)(uint8_t *data, size_t size, size_t max_size);

/* Mutates an input of `kernel`'s target in place and returns its new size (<= max_size): most
 * of the time one whole operation chosen for the decoded case is prepended (the head is read
 * from the front, so a prepended operation is always whole); now and then the case itself
 * changes (a new seed or knobs), or `bytes` (may be NULL) mutates the head as bytes. */
size_t fuzz_mutate(attest_kernel kernel, uint8_t *data, size_t size, size_t max_size,
                   unsigned int seed, fuzz_byte_mutator bytes);

/* --- what a kernel target reads from its environment ------------------------------------
 *
 * `attest fuzz --engine libfuzzer` sets these for the targets it starts:
 *   ATTEST_FUZZ_CANDIDATE   the candidate (a built-in name or path.so:NAME)
 *   ATTEST_FUZZ_RESULTS     a results file for every judged input ("%p": the process id)
 *   ATTEST_FUZZ_ARTIFACTS   where a failing case is saved as a case file (default ".")
 *   ATTEST_FUZZ_RERUNS      runs per input, compared bitwise (default 1)
 *   ATTEST_FUZZ_POLICY      a tolerance policy file (default: the embedded one)
 *   ATTEST_FUZZ_STRUCTURE   0: libFuzzer's byte mutations alone, no semantic counters
 *   ATTEST_FUZZ_STATS       FILE:SLOT, live counters (execs, judged, classes reached) at slot
 *                           SLOT of FILE (fuzz_stats), for a driver's progress line
 *   ATTEST_FUZZ_CLASSES     a file that receives, at a normal exit, one line per semantic
 *                           class the judged inputs reached: its name and the exec (1-based)
 *                           that reached it first
 */
#define FUZZ_ENV_CANDIDATE "ATTEST_FUZZ_CANDIDATE"
#define FUZZ_ENV_RESULTS "ATTEST_FUZZ_RESULTS"
#define FUZZ_ENV_ARTIFACTS "ATTEST_FUZZ_ARTIFACTS"
#define FUZZ_ENV_RERUNS "ATTEST_FUZZ_RERUNS"
#define FUZZ_ENV_POLICY "ATTEST_FUZZ_POLICY"
#define FUZZ_ENV_STRUCTURE "ATTEST_FUZZ_STRUCTURE"
#define FUZZ_ENV_STATS "ATTEST_FUZZ_STATS"
#define FUZZ_ENV_CLASSES "ATTEST_FUZZ_CLASSES"

/* One slot of the ATTEST_FUZZ_STATS file, written by the target, read by the driver. */
typedef struct fuzz_stats {
    uint64_t execs;   /* inputs run */
    uint64_t judged;  /* inputs that named a valid case and were judged */
    uint64_t classes; /* semantic classes reached so far */
    uint64_t stop;    /* set by the driver: close the results file, the job is about to end */
    uint64_t closed;  /* set by the target once it has */
    uint64_t spare[3];
} fuzz_stats;

#endif
