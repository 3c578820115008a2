// The paged indexer's kernel variants (cuda_indexer_paged.cu), shared with the file that turns
// them into candidates (cuda_paged_candidates.cu). Internal to kernels/cuda.
#ifndef ATTEST_CUDA_PAGED_VARIANTS_H
#define ATTEST_CUDA_PAGED_VARIANTS_H

#include "attest/candidate.h"

enum class paged_variant {
    correct,         // cuda-indexer-paged: streaming (wgmma for > 64 heads on sm_90), else per-page
    noclean,         // cuda-indexer-paged-noclean: the same without the -inf past the live pages
    mma,             // cuda-indexer-paged-mma: the mma.sync streaming kernel, else per-page
    fp8,             // cuda-indexer-paged-fp8: fp8 x fp8 wgmma on sm_90, else as `correct`
    records132,      // wrong stride: the block read as 64 records of 132 bytes
    race,            // a missing barrier between storing the page and reading it
    uninit,          // staged through a workspace it reads where it never wrote
    capture_lengths  // grid sized on the host from the lengths seen at launch (or capture)
};

// Whether the paged kernel handles this case (head_dim 128, heads <= 128, next_n * head tiles
// <= 16 warps).
int paged_indexer_supports(const attest_kernel_args *args);

// Queues one variant's launch on cudaStreamPerThread without synchronizing; 0 on success.
// `workspace` (uninit only) holds b * next_n * max_len floats.
int paged_indexer_run(paged_variant variant, const attest_kernel_args *args, float *workspace);

// Fills every logit with -inf, then runs the correct kernel over the first `pages` pages only.
int paged_indexer_run_pages(const attest_kernel_args *args, int pages);

// The streaming kernels (cuda_indexer_stream.cu with mma.sync, sm90a/cuda_indexer_wgmma.cu
// with wgmma on an sm_90 device): whether one handles the case (head_dim 128; mma.sync:
// next_n * ceil(heads / 64) <= 4; wgmma: the same on a device of compute capability 9.0), and
// its launch on cudaStreamPerThread without synchronizing; 0 on success. clean_tail 0 leaves
// the logits past each row's live pages as they are (stream_args.clean_tail).
int paged_stream_supports(const attest_kernel_args *args);
int paged_stream_run(const attest_kernel_args *args, int clean_tail);
int paged_wgmma_supports(const attest_kernel_args *args);
int paged_wgmma_run(const attest_kernel_args *args, int clean_tail);

// The fp8 x fp8 wgmma streaming kernel (sm90a/cuda_indexer_fp8.cu): Hopper's fp8 MMA
// accumulator, so judged under policies/bf16-tensor-core.json. Same shapes and device check
// as the wgmma kernel.
int paged_fp8_supports(const attest_kernel_args *args);
int paged_fp8_run(const attest_kernel_args *args);
// The same in configuration `variant`: 0 the delivered one; 1..8 and 10 the ones measured
// against it, in ATTEST_IDX_EXPERIMENT builds only (elsewhere every variant is the delivered one).
int paged_fp8_run_variant(const attest_kernel_args *args, int variant);
// The delivered configuration without the -inf stores past each request's live pages
// (cuda-indexer-paged-fp8-noclean: masking unspecified).
int paged_fp8_run_noclean(const attest_kernel_args *args);

#endif
