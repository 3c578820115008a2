/* Private to the fuzz-input library (fuzz_inputs.h): each kernel's decoder, features and
 * operation writer, and the helpers they share. */
#ifndef ATTEST_FUZZ_INPUTS_INTERNAL_H
#define ATTEST_FUZZ_INPUTS_INTERNAL_H

#include "attest/generator.h"
#include "fuzz_inputs.h"

/* The mutator's random numbers (xorshift64*: the mutator must not touch any global RNG). */
typedef struct fuzz_rng {
    uint64_t s;
} fuzz_rng;

uint64_t fuzz_rng_next(fuzz_rng *r);
/* A number below n (n > 0). */
uint64_t fuzz_rng_below(fuzz_rng *r, uint64_t n);

/* One operation being written: bytes in the order the decoder takes them from the head. */
typedef struct fuzz_op {
    uint8_t bytes[96];
    size_t n;
} fuzz_op;

/* Appends the n low bytes of v, little-endian (how fuzz_head_uint reads them). */
void fuzz_op_put(fuzz_op *op, uint64_t v, unsigned n);

/* Decoders: apply the head's operations to the generated case `c`; *valid as in fuzz_decode. */
void fuzz_indexer_apply(attest_case *c, fuzz_input *in, int *valid);
void fuzz_mla_apply(attest_case *c, fuzz_input *in, int *valid);

/* Knobs bits 3 to 6 all set (a sixteenth of the tails): the case's pool moves past 2^31 or
 * 2^32 bytes, held sparsely (gen_spread.c); otherwise it never does, so that an input means one
 * case whatever the generator's default rate. A quarter of the tails (bits 3 and 4) spent most
 * of the targets' time in the sparse placement's page faults (bench/README.md). */
static inline int fuzz_high_pool_knob(uint8_t knobs) { return (knobs & 0x78) == 0x78; }

/* The bytes of tensor t of the case being decoded, for writing: the decoder leaves the caches
 * shared with the cached generated case until an operation writes them, so every write into a
 * cache goes through here (which copies it into the workspace once). Other tensors, and cases
 * not being decoded, are returned as they are. */
void *fuzz_writable(attest_tensor *t);
/* fuzz_writable for an operation that writes only bytes [at, at + len) of t: a sparse pool's
 * reservation, reused by the next decode of the same case, then restores just those (every
 * operation that writes a pool must say where, through this). */
void *fuzz_writable_range(attest_tensor *t, uint64_t at, uint64_t len);

/* Generator options from the knobs byte. */
void fuzz_indexer_knobs(uint8_t knobs, attest_gen_options *opt);
void fuzz_mla_knobs(uint8_t knobs, attest_gen_options *opt);

/* Features (fuzz_case_features). */
extern const char *const fuzz_indexer_feature_names[];
extern const int fuzz_indexer_feature_count;
void fuzz_indexer_features(const attest_case *c, uint8_t *hits);
extern const char *const fuzz_mla_feature_names[];
extern const int fuzz_mla_feature_count;
void fuzz_mla_features(const attest_case *c, uint8_t *hits);

/* Writes one whole operation for the generated case `c`, its values chosen for the feature
 * classes (page boundaries, special codes, ...). */
void fuzz_indexer_op(const attest_case *c, fuzz_rng *r, fuzz_op *op);
void fuzz_mla_op(const attest_case *c, fuzz_rng *r, fuzz_op *op);

/* Adds 1 to hits[i], saturating. */
static inline void fuzz_hit(uint8_t *hits, int i)
{
    if (hits[i] < 255) hits[i]++;
}

/* Adds n to hits[i], saturating (n calls of fuzz_hit). */
static inline void fuzz_hit_n(uint8_t *hits, int i, uint64_t n)
{
    hits[i] = (uint8_t)(hits[i] + n > 255 ? 255 : hits[i] + n);
}

/* The features are the targets' extra coverage counters: coverage of the code computing them
 * would tell libFuzzer the same again, at a trace-cmp callback per byte of every case (a third
 * of the indexer target's instructions). gcc has no such instrumentation to turn off. */
#if defined(__clang__)
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_NO_COVERAGE
#endif

/* Classes of an fp8 e4m3 byte (sign ignored): NaN (0x7F), the largest finite (0x7E), subnormal
 * (0x01-0x07), anything else. */
enum { FUZZ_FP8_OTHER, FUZZ_FP8_NAN, FUZZ_FP8_MAX, FUZZ_FP8_SUBNORMAL, FUZZ_FP8_CLASSES };

/* Adds to count[class] the number of the n bytes at v in each class (FUZZ_FP8_OTHER is not
 * counted); branch-free, three sums the compiler vectorizes. */
FUZZ_NO_COVERAGE static inline void fuzz_fp8_census(const uint8_t *v, size_t n,
                                                    uint64_t count[FUZZ_FP8_CLASSES])
{
    uint32_t nan = 0, max = 0, sub = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t m = (uint8_t)(v[i] & 0x7Fu);
        nan += m == 0x7Fu;
        max += m == 0x7Eu;
        sub += (uint8_t)(m - 1u) < 7u;
    }
    count[FUZZ_FP8_NAN] += nan;
    count[FUZZ_FP8_MAX] += max;
    count[FUZZ_FP8_SUBNORMAL] += sub;
}

/* Feature index of a head count: 1, 2, 3-8, 9-32, 33-64, more (six classes). */
int fuzz_heads_class(int32_t heads);

#endif
