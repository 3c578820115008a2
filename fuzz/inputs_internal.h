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

/* Knobs bits 3 and 4 both set (a quarter of the tails): the case's pool moves past 2^31 or
 * 2^32 bytes, held sparsely (gen_spread.c); otherwise it never does, so that an input means one
 * case whatever the generator's default rate. */
static inline int fuzz_high_pool_knob(uint8_t knobs) { return (knobs & 0x18) == 0x18; }

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

/* Feature index of a head count: 1, 2, 3-8, 9-32, 33-64, more (six classes). */
int fuzz_heads_class(int32_t heads);

#endif
