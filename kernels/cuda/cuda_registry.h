// The CUDA candidate lists of each file in kernels/cuda, joined by cuda_registry.cu into the
// one list attest_cuda_candidates() returns. Internal to kernels/cuda.
#ifndef ATTEST_CUDA_REGISTRY_H
#define ATTEST_CUDA_REGISTRY_H

#include <stddef.h>

#include "attest/candidate.h"

const attest_candidate *const *cuda_direct_candidates(size_t *count);  // cuda_indexer.cu
const attest_candidate *const *cuda_paged_candidates(size_t *count);   // cuda_paged_candidates.cu
const attest_candidate *const *cuda_mla_candidates(size_t *count);     // cuda_mla_decode.cu
const attest_candidate *const *cuda_mla_mma_candidates(size_t *count); // cuda_mla_decode_mma.cu

#endif
