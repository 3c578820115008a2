// A direct CUDA indexer ("cuda-indexer"): proves the device path of the harness. One thread per
// (query row, position); blocks of 64 threads cover one c4-indexer block of 64 positions, so a
// whole CUDA block exits early (writing -inf) when its cache block lies past the row's length,
// as production kernels do. Correct first: no tensor cores, no tiling beyond that.
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "attest/candidate.h"
#include "attest/cuda_candidates.h"
#include "cuda_registry.h"

namespace {

constexpr int kBlockPositions = 64;   // positions per c4-indexer block
constexpr int kBlockBytes = 8448;     // 64 x 128 fp8, then 64 fp32 scales
constexpr int kScaleOffset = 8192;
constexpr int kHeadDim = 128;
constexpr int kMaxHeads = 96;         // q of all heads in shared memory: 96*128*4 = 48 KiB

static_assert(kBlockPositions * kHeadDim + kBlockPositions * 4 == kBlockBytes,
              "c4-indexer block layout");

__device__ float fp8_to_float(uint8_t bits)
{
    __nv_fp8_e4m3 v;
    v.__x = bits;
    return static_cast<float>(v);
}

__global__ void indexer_logits_kernel(attest_indexer_params p, const uint8_t *cache,
                                      const int32_t *block_table, const int32_t *context_lens,
                                      const uint8_t *q_fp8, const float *weights, float *logits)
{
    extern __shared__ float q_shared[];  // [heads, 128] of this row, decoded once per CUDA block
    const int row = blockIdx.y;
    const int logical_block = blockIdx.x;
    const int slot = threadIdx.x;
    const int t = logical_block * kBlockPositions + slot;
    const int request = row / p.next_n;
    const int j = row % p.next_n;
    // MTP causal rule: slot j of a request of length L sees positions t <= L - next_n + j.
    int len = context_lens[request] - p.next_n + j + 1;
    len = min(max(len, 0), min(context_lens[request], p.max_len));
    float *out_row = logits + static_cast<size_t>(row) * p.max_len;

    const int block_start = logical_block * kBlockPositions;
    if (block_start >= len || logical_block >= p.blocks_per_req) {
        if (t < p.max_len) out_row[t] = -INFINITY;  // early exit: the cache is never touched
        return;
    }
    const uint8_t *q_row = q_fp8 + static_cast<size_t>(row) * p.heads * kHeadDim;
    for (int i = slot; i < p.heads * kHeadDim; i += blockDim.x) q_shared[i] = fp8_to_float(q_row[i]);
    __syncthreads();
    if (t >= p.max_len) return;
    if (t >= len) {
        out_row[t] = -INFINITY;
        return;
    }
    const int physical = block_table[static_cast<size_t>(request) * p.blocks_per_req + logical_block];
    const uint8_t *block = cache + static_cast<size_t>(physical) * kBlockBytes;
    const uint8_t *k = block + slot * kHeadDim;
    float k_reg[kHeadDim];
    for (int d = 0; d < kHeadDim; d++) k_reg[d] = fp8_to_float(k[d]);
    const float *w = weights + static_cast<size_t>(row) * p.heads;
    float acc = 0.0f;
    for (int h = 0; h < p.heads; h++) {
        float dot = 0.0f;
        for (int d = 0; d < kHeadDim; d++) dot = fmaf(q_shared[h * kHeadDim + d], k_reg[d], dot);
        acc += fmaxf(dot, 0.0f) * w[h];  // fmaxf(NaN, 0) = 0, as DeepGEMM's relu
    }
    const float scale = reinterpret_cast<const float *>(block + kScaleOffset)[slot];
    out_row[t] = acc * scale;
}

#ifdef ATTEST_WITH_MUTANTS
// A deliberately broken kernel: on a case with a length-0 request it stores far outside any
// allocation, the illegal address that poisons a CUDA context. The harness must report CRASH for
// that case, replace its worker and go on.
__global__ void illegal_address_kernel(float *logits)
{
    logits[static_cast<size_t>(1) << 40] = 1.0f;
}

int cuda_indexer_run(void *, const attest_kernel_args *args);

int cuda_illegal_address_run(void *ctx, const attest_kernel_args *args)
{
    const attest_indexer_params &p = *args->u.indexer.params;
    int32_t lens[1024];
    const int n = p.b < 1024 ? p.b : 1024;
    if (cudaMemcpy(lens, args->u.indexer.context_lens, n * sizeof(int32_t),
                   cudaMemcpyDeviceToHost) != cudaSuccess)
        return 1;
    for (int i = 0; i < n; i++) {
        if (lens[i] == 0) {
            illegal_address_kernel<<<1, 1>>>(args->u.indexer.logits);
            return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
        }
    }
    return cuda_indexer_run(ctx, args);
}
#endif

int cuda_indexer_supports(void *, const attest_kernel_args *args)
{
    const attest_indexer_params *p = args->u.indexer.params;
    return p->head_dim == kHeadDim && p->heads <= kMaxHeads;
}

int cuda_indexer_run(void *, const attest_kernel_args *args)
{
    const attest_indexer_args &a = args->u.indexer;
    const attest_indexer_params &p = *a.params;
    const int rows = p.b * p.next_n;
    const int logical_blocks = (p.max_len + kBlockPositions - 1) / kBlockPositions;
    dim3 grid(logical_blocks, rows);
    const size_t shared = static_cast<size_t>(p.heads) * kHeadDim * sizeof(float);
    // cudaStreamPerThread and no synchronize here (the harness synchronizes): a launch the
    // harness can capture into a CUDA graph.
    indexer_logits_kernel<<<grid, kBlockPositions, shared, cudaStreamPerThread>>>(
        p, a.cache, a.block_table, a.context_lens, a.q_fp8, a.weights, a.logits);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

attest_candidate make_cuda_indexer()
{
    attest_candidate c = {};
    c.abi_version = ATTEST_CANDIDATE_ABI_VERSION;
    c.struct_size = sizeof(attest_candidate);
    c.name = "cuda-indexer";
    c.description = "direct CUDA indexer: one thread per position, early exit past the length";
    c.kernel = ATTEST_KERNEL_INDEXER;
    c.domain = ATTEST_DOMAIN_DEVICE;
    c.conventions.masking = ATTEST_MASK_NEG_INF;
    c.conventions.lse_convention = ATTEST_LSE_EXCLUDES_SINK;
    c.supports = cuda_indexer_supports;
    c.run = cuda_indexer_run;
    return c;
}

const attest_candidate cuda_indexer = make_cuda_indexer();

#ifdef ATTEST_WITH_MUTANTS
attest_candidate make_illegal_address()
{
    attest_candidate c = make_cuda_indexer();
    c.name = "mutant-cuda-indexer-illegal-address";
    c.description = "cuda-indexer storing to an illegal address on a case with a length-0 request";
    c.run = cuda_illegal_address_run;
    return c;
}
const attest_candidate cuda_illegal_address = make_illegal_address();
const attest_candidate *const cuda_candidates[] = {&cuda_indexer, &cuda_illegal_address};
#else
const attest_candidate *const cuda_candidates[] = {&cuda_indexer};
#endif

}  // namespace

const attest_candidate *const *cuda_direct_candidates(size_t *count)
{
    *count = sizeof cuda_candidates / sizeof cuda_candidates[0];
    return cuda_candidates;
}
