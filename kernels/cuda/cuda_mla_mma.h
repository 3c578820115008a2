// What the pass-1 kernels of cuda-mla-decode-mma share: the launch arguments, built by
// cuda_mla_decode_mma.cu, and the entries to the wgmma kernels of sm90a/ (cuda_mla_decode_wgmma.cu,
// cuda_mla_decode_ws.cu: a library of their own, built for sm_90a alone). Internal to
// kernels/cuda.
#ifndef ATTEST_CUDA_MLA_MMA_H
#define ATTEST_CUDA_MLA_MMA_H

#include <cuda_runtime.h>
#include <stdint.h>

namespace mla_mma {

struct scope {
    const uint8_t *cache;
    const int32_t *indices;  // [queries, count]
    const int32_t *length;   // [b] or nullptr
    int64_t page_stride;
    int32_t page_size, num_pages, count, tiles, splits;
};

struct kargs {
    scope sc[2];
    int32_t s_q, h_q, tps, splits;
    float sm_scale;
    const uint16_t *q;
    const float *sink;  // nullptr without a sink
    uint16_t *out;
    float *lse;
    float *part_out;  // [queries, h_q, splits, 512]
    float *part_lse;  // [queries, h_q, splits]
    // [queries, head blocks]: splits arrived, zero between launches (the fused merge's last
    // block resets its own); nullptr for the two-pass path.
    unsigned int *arrive;
};

// Where the wgmma pass 1 merges the splits. Pinned values: the launch picks its instance by them.
enum class merge_mode {
    two_pass = 0,  // partials only; the merge kernel runs after it
    fused = 1,     // the last split of each (query, head block) to finish merges them all
    fused_race = 2 // fused, without the barrier between the per-head statistics and their use
};

// The most splits the fused merge takes (their weights sit in shared memory); more go two-pass.
constexpr int kFusedMaxSplits = 8;

// Whether this process's device runs the sm_90a cubin (compute capability 9.0); asked once.
bool wgmma_available();

// Queues the wgmma pass 1 on cudaStreamPerThread for `grid` = (splits, queries, head blocks);
// v32 picks the mla-v32 record (656 bytes, K 576 wide) over mla-v4's (584, K 512). The fused
// modes need a.arrive and at most kFusedMaxSplits splits, and write out and lse themselves.
// bits (mla-v4, two_pass only): the codes converted by bit placement, no conversion instruction.
// 0 on success.
int wgmma_partial_launch(const kargs &a, bool v32, dim3 grid, merge_mode merge, bool bits);

// The warp-specialized pass 1 (sm90a/cuda_mla_decode_ws.cu; mla-v4, two-pass merge).
enum class ws_variant {
    correct = 0,
    no_full_wait = 1  // the consumers arrive at a tile's FULL barrier instead of waiting on it
};

// Queues the warp-specialized pass 1 (a producer warpgroup dequantizing the next tile while
// two consumer warpgroups compute this one; the two-warpgroup kernel's bits) on
// cudaStreamPerThread for `grid` as above, mla-v4 only; the merge kernel runs after it. 0 on
// success.
int ws_partial_launch(const kargs &a, dim3 grid, ws_variant v);

}  // namespace mla_mma

#endif
