// What the streaming paged-indexer kernels share (cuda_indexer_stream.cu: mma.sync;
// sm90a/cuda_indexer_wgmma.cu: wgmma): the arguments, the stage layout of a copied page, the
// walk over the live pages, each block's share of them, and the -inf stores past them.
// Internal to kernels/cuda.
#ifndef ATTEST_CUDA_INDEXER_STREAM_CUH
#define ATTEST_CUDA_INDEXER_STREAM_CUH

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "attest/candidate.h"

namespace stream {

constexpr int kPage = 64;
constexpr int kBlockBytes = 8448;
constexpr int kScaleOffset = 8192;
constexpr int kHeadDim = 128;
// Rows padded to 144 bytes: the 16-byte loads of a quarter warp (2 positions x 4 quads) then
// hit 8 distinct 4-bank groups.
constexpr int kRowBytes = kHeadDim + 16;
constexpr int kStageBytes = kPage * kRowBytes + kPage * 4;

struct stream_args {
    const uint8_t *cache;
    const int32_t *block_table;
    const int32_t *context_lens;
    const uint8_t *q;
    const float *weights;
    float *logits;
    int32_t requests, next_n, heads, groups, max_len, blocks_per_req;
};

// Four e4m3 bytes to two fp16x2 words: bytes 0-1 to `lo`, 2-3 to `hi` (one conversion each).
__device__ __forceinline__ void fp8x4_to_half2x2(uint32_t w, uint32_t &lo, uint32_t &hi)
{
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\n"
        "cvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
        : "=r"(lo), "=r"(hi)
        : "r"(w));
}

__device__ __forceinline__ void cp_async_16(uint32_t smem, const void *global)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(global));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Positions row `slot` of a request of length ctx may see (MTP: slot j of next_n sees
// t <= ctx - next_n + j), clamped to the row width.
__device__ __forceinline__ int row_length(int ctx, int next_n, int slot, int max_len)
{
    const int len = ctx - next_n + slot + 1;
    return min(max(len, 0), min(max(ctx, 0), max_len));
}

// Pages of request r that some row sees: the last row sees the most.
__device__ __forceinline__ int live_pages(const stream_args &a, int r)
{
    const int longest = row_length(a.context_lens[r], a.next_n, a.next_n - 1, a.max_len);
    return min((longest + kPage - 1) / kPage, a.blocks_per_req);
}

// An iterator over the live (request, page) pairs in request order.
struct page_cursor {
    int request, page, pages;  // pages: live pages of `request`
};

__device__ __forceinline__ void cursor_advance(const stream_args &a, page_cursor &c)
{
    if (++c.page < c.pages) return;
    c.page = 0;
    do {
        if (++c.request >= a.requests) return;
        c.pages = live_pages(a, c.request);
    } while (c.pages == 0);
}

// Queues the copy of the cursor's page into a stage buffer: 16-byte chunk i of the block goes
// to 16 * (i + min(i / 8, 64)), i.e. fp8 rows padded to kRowBytes, then the 64 scales.
// THREADS: the block size when it is known at compile time (the loop unrolls), else 0.
template <int THREADS>
__device__ __forceinline__ void prefetch_page(const stream_args &a, const page_cursor &c,
                                              uint8_t *stage)
{
    const int32_t entry = a.block_table[static_cast<size_t>(c.request) * a.blocks_per_req + c.page];
    const uint8_t *block = a.cache + static_cast<size_t>(entry) * kBlockBytes;
    const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(stage));
    constexpr int kChunks = kBlockBytes / 16;
    if (THREADS > 0) {
#pragma unroll
        for (int i = threadIdx.x; i < kChunks; i += THREADS)
            cp_async_16(base + 16 * (i + min(i >> 3, kPage)), block + 16 * i);
    } else {
#pragma unroll 1
        for (int i = threadIdx.x; i < kChunks; i += blockDim.x)
            cp_async_16(base + 16 * (i + min(i >> 3, kPage)), block + 16 * i);
    }
}

// Units of -inf (16-byte float4 or single floats) past request r's live pages, all its rows.
__device__ __forceinline__ long long dead_units(const stream_args &a, int r, bool vec)
{
    const int begin = live_pages(a, r) * kPage;
    if (begin >= a.max_len) return 0;
    return static_cast<long long>(a.next_n) * (vec ? (a.max_len - begin) / 4 : a.max_len - begin);
}

// The block's share of the live pages: `count` pages in request order from `start`, and the
// whole grid's -inf units. Every block counts them itself (a block-wide scan over the
// requests), so neither an earlier launch nor host code depends on the lengths.
__device__ inline void find_share(const stream_args &a, bool vec, long long *count, page_cursor *start,
                           long long *dead_total)
{
    __shared__ long long warp_sums[32], warp_dead[32];
    __shared__ long long base, first, dead;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int pass = 0; pass < 2; pass++) {
        if (threadIdx.x == 0) base = dead = 0;
        __syncthreads();
        for (int r0 = 0; r0 < a.requests; r0 += blockDim.x) {
            const int r = r0 + threadIdx.x;
            const int mine = r < a.requests ? live_pages(a, r) : 0;
            long long d = pass == 0 && r < a.requests ? dead_units(a, r, vec) : 0;
            long long incl = mine;
            for (int m = 1; m < 32; m <<= 1) {
                const long long v = __shfl_up_sync(0xFFFFFFFFu, incl, m);
                if (lane >= m) incl += v;
                d += __shfl_xor_sync(0xFFFFFFFFu, d, m);
            }
            if (lane == 31) warp_sums[warp] = incl;
            if (lane == 0) warp_dead[warp] = d;
            __syncthreads();
            long long before = base;
            for (int w = 0; w < warp; w++) before += warp_sums[w];
            incl += before;
            if (pass == 1 && mine > 0 && incl - mine <= first && first < incl) {
                start->request = r;
                start->page = static_cast<int>(first - (incl - mine));
                start->pages = mine;
            }
            __syncthreads();
            if (threadIdx.x == 0)
                for (int w = 0; w < warps; w++) {
                    base += warp_sums[w];
                    dead += warp_dead[w];
                }
            __syncthreads();
        }
        if (pass == 0 && threadIdx.x == 0) {
            first = base * blockIdx.x / gridDim.x;
            *count = base * (blockIdx.x + 1) / gridDim.x - first;
            *dead_total = dead;
            start->request = a.requests;
            start->page = start->pages = 0;
        }
        __syncthreads();
    }
}

// This thread's walk over the -inf units past every request's live pages, row by row: unit
// gt of the grid, then every `threads`-th (no division: a walk forward). The stores are spread
// over the page loop, so they use the memory bandwidth the MMAs leave idle.
struct dead_cursor {
    int request, row;   // row of the request's next_n
    long long unit;     // within the row's dead part
    long long per_row;  // dead units of each row of `request`
    int begin;          // first dead position of `request`
};

__device__ __forceinline__ void dead_settle(const stream_args &a, bool vec, dead_cursor &d)
{
    while (d.request < a.requests && d.unit >= d.per_row) {
        d.unit -= d.per_row;
        if (++d.row < a.next_n && d.per_row > 0) continue;
        d.row = 0;
        if (++d.request >= a.requests) return;
        d.begin = live_pages(a, d.request) * kPage;
        d.per_row = d.begin >= a.max_len ? 0 : vec ? (a.max_len - d.begin) / 4 : a.max_len - d.begin;
    }
}

__device__ __forceinline__ void dead_store(const stream_args &a, bool vec, long long threads,
                                           dead_cursor &d)
{
    if (d.request >= a.requests) return;
    float *out = a.logits + (static_cast<size_t>(d.request) * a.next_n + d.row) * a.max_len + d.begin;
    if (vec)
        reinterpret_cast<float4 *>(out)[d.unit] = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    else
        out[d.unit] = -INFINITY;
    d.unit += threads;
    dead_settle(a, vec, d);
}

inline stream_args make_args(const attest_kernel_args *args, int groups_of)
{
    const attest_indexer_params &p = *args->u.indexer.params;
    const attest_indexer_args &in = args->u.indexer;
    stream_args k = {};
    k.cache = in.cache;
    k.block_table = in.block_table;
    k.context_lens = in.context_lens;
    k.q = in.q_fp8;
    k.weights = in.weights;
    k.logits = in.logits;
    k.requests = p.b;
    k.next_n = p.next_n;
    k.heads = p.heads;
    k.groups = (p.heads + groups_of - 1) / groups_of;
    k.max_len = p.max_len;
    k.blocks_per_req = p.blocks_per_req;
    return k;
}

// The grid: as many blocks as are resident at once, never more than pages of the maximum
// context. Host queries only (device attributes, occupancy), so a launch sized by it can be
// captured; their answers are kept (per kernel and block size: one device per process), so
// a launch does not wait on them. 0 when a query fails.
template <typename Kernel>
long long grid_blocks(Kernel kernel, int threads, size_t smem, const attest_indexer_params &p)
{
    static int sms;
    static int per_sm[33];  // by warps per block
    const int warps = threads / 32;
    if (warps < 1 || warps > 32) return 0;
    if (sms == 0) {
        int device = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
            return sms = 0;
    }
    if (per_sm[warps] == 0) {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) != cudaSuccess)
            return 0;
        per_sm[warps] = n > 0 ? n : 1;
    }
    const long long pages = static_cast<long long>(p.b) * ((p.max_len + kPage - 1) / kPage);
    const long long blocks = static_cast<long long>(sms) * per_sm[warps];
    return blocks < pages ? blocks : pages;
}

}  // namespace stream

#endif
