/* Fuzz target: indexer logits (the input format and its domain: inputs_indexer.c). The tail
 * picks a generated case; the head mutates context lengths (0, page boundaries, the block-table
 * limit), block-table entries (repeats, permutations), fp8 bit patterns of keys and queries (NaN
 * codes included), fp32 scales (exponent classes, NaN) and weights. Candidate:
 * $ATTEST_FUZZ_CANDIDATE or cpu-indexer. Under libFuzzer the structure-aware mutator and the
 * semantic counters (fuzz_inputs.h) steer it. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_kernel_input(ATTEST_KERNEL_INDEXER, "indexer", "cpu-indexer", data, size);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    return fuzz_kernel_mutate(ATTEST_KERNEL_INDEXER, data, size, max_size, seed);
}
