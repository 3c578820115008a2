/* Fuzz target: sparse MLA decode (the input format and its domain: inputs_mla.c). The tail picks
 * a generated case (seed, layout, edge bytes); the head mutates it: fields of cached tokens (fp8
 * bit patterns, scales, rope values) in either scope, padding bytes, top-k index slots (-1
 * holes, all-invalid tiles, lonely queries, duplicates, page boundaries, page permutations),
 * topk_length and extra_topk_length, sinks (+-inf, huge, tiny) and q values. Every mutation
 * keeps the case valid, so any failing verdict is the candidate's fault. Candidate:
 * $ATTEST_FUZZ_CANDIDATE or cpu-mla-decode. Under libFuzzer the structure-aware mutator and the
 * semantic counters (fuzz_inputs.h) steer it. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_kernel_input(ATTEST_KERNEL_MLA_DECODE, "mla_decode", "cpu-mla-decode", data, size);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    return fuzz_kernel_mutate(ATTEST_KERNEL_MLA_DECODE, data, size, max_size, seed);
}
