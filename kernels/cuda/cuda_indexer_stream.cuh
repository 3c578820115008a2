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
    // 0: the logits past each request's live pages are left as they are (DeepGEMM's
    // clean_logits=False; the candidate declares ATTEST_MASK_UNSPECIFIED), so the cost follows
    // the actual lengths, not the maximum context. 1 (make_args): they are written -inf.
    int32_t clean_tail;
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
    int32_t entry;             // the page's block-table entry (the fetch cursor's only)
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

// The fetch cursor's entry is loaded when it moves, an iteration before the copy that needs
// it: a block-table load right before the copies stalled every page on its latency.
__device__ __forceinline__ void fetch_load_entry(const stream_args &a, page_cursor &c)
{
    c.entry = c.request < a.requests ? a.block_table[static_cast<size_t>(c.request) * a.blocks_per_req + c.page] : 0;
}

__device__ __forceinline__ void fetch_advance(const stream_args &a, page_cursor &c)
{
    cursor_advance(a, c);
    fetch_load_entry(a, c);
}

// Queues the copy of the cursor's page into a stage buffer: 16-byte chunk i of the block goes
// to 16 * (i + min(i / 8, 64)), i.e. fp8 rows padded to kRowBytes, then the 64 scales.
// THREADS: the block size when it is known at compile time (the loop unrolls), else 0.
template <int THREADS>
__device__ __forceinline__ void prefetch_page(const stream_args &a, const page_cursor &c,
                                              uint8_t *stage)
{
    const uint8_t *block = a.cache + static_cast<size_t>(c.entry) * kBlockBytes;
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
    if (!a.clean_tail) return 0;
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

// This thread's walk over the -inf units past every request's live pages, row by row. The
// units are cut into one contiguous share per warp, and lane l of a warp stores units l,
// l + 32, ... of its share: each store is a coalesced 512-byte warp store, and the walk costs
// a compare and an add per store (a cursor that jumped by the grid's thread count crossed a
// row every few stores and recomputed its address at each one). The kernels call it a few
// times per page, so the stores use the memory bandwidth the MMAs leave idle.
struct dead_cursor {
    int request, row;   // row of the request's next_n
    long long unit;     // within the row's dead part
    long long per_row;  // dead units of each row of `request`
    long long left;     // stores left to this lane
    float *out;         // the row's first dead position
};

__device__ __forceinline__ void dead_settle(const stream_args &a, bool vec, dead_cursor &d)
{
    while (d.request < a.requests && d.unit >= d.per_row) {
        d.unit -= d.per_row;
        if (++d.row < a.next_n && d.per_row > 0) continue;
        d.row = 0;
        if (++d.request >= a.requests) break;
        const int begin = live_pages(a, d.request) * kPage;
        d.per_row = begin >= a.max_len ? 0 : vec ? (a.max_len - begin) / 4 : a.max_len - begin;
    }
    if (d.request < a.requests) {
        const int begin = live_pages(a, d.request) * kPage;
        d.out = a.logits + (static_cast<size_t>(d.request) * a.next_n + d.row) * a.max_len + begin;
    }
}

// The cursor of this thread: its warp's share of the `total` units of the grid.
__device__ __forceinline__ dead_cursor dead_begin(const stream_args &a, bool vec, long long total)
{
    const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
    const long long warp = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    const long long first = total * warp / warps, end = total * (warp + 1) / warps;
    dead_cursor d = {-1, 0, first + lane, 0, 0, a.logits};
    d.left = end - first > lane ? (end - first - lane + 31) / 32 : 0;
    if (d.left > 0) dead_settle(a, vec, d);
    return d;
}

__device__ __forceinline__ void dead_store(const stream_args &a, bool vec, dead_cursor &d)
{
    if (d.left <= 0) return;
    if (vec)
        reinterpret_cast<float4 *>(d.out)[d.unit] = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    else
        d.out[d.unit] = -INFINITY;
    d.left--;
    d.unit += 32;
    if (d.unit >= d.per_row && d.left > 0) dead_settle(a, vec, d);
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
    k.clean_tail = 1;
    return k;
}

// The grid: as many blocks as are resident at once, never more than pages of the maximum
// context. Host queries only (device attributes, occupancy), so a launch sized by it can be
// captured; their answers are kept per (kernel, block size, shared memory) (one device per
// process; every kernel of one signature shares this function's instance, so the kernel is
// part of the key), so a launch does not wait on them. 0 when a query fails.
template <typename Kernel>
long long grid_blocks(Kernel kernel, int threads, size_t smem, const attest_indexer_params &p)
{
    struct occupancy {
        const void *kernel;
        int threads;
        size_t smem;
        int per_sm;
    };
    static int sms;
    static occupancy known[32];
    static int known_count;
    if (threads < 32 || threads > 1024) return 0;
    if (sms == 0) {
        int device = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
            return sms = 0;
    }
    const void *key = reinterpret_cast<const void *>(kernel);
    int per_sm = 0;
    for (int i = 0; i < known_count && per_sm == 0; i++)
        if (known[i].kernel == key && known[i].threads == threads && known[i].smem == smem)
            per_sm = known[i].per_sm;
    if (per_sm == 0) {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) != cudaSuccess)
            return 0;
        per_sm = n > 0 ? n : 1;
        if (known_count < 32) known[known_count++] = {key, threads, smem, per_sm};
    }
    const long long pages = static_cast<long long>(p.b) * ((p.max_len + kPage - 1) / kPage);
    const long long blocks = static_cast<long long>(sms) * per_sm;
    return blocks < pages ? blocks : pages;
}

}  // namespace stream

#endif
