// The per-page paged indexer: what the broken variants of cuda-indexer-paged are built on, and
// what cuda-indexer-paged runs for shapes the streaming kernels (cuda_indexer_stream.cu,
// sm90a/cuda_indexer_wgmma.cu) do not take.
//
// One CUDA block per (request, run of kPagesPerBlock 64-position pages of the logits row). The
// grid is fixed by the case's maximum context (max_len), never by the actual lengths, so one
// captured CUDA graph serves any lengths written into the same buffers. A page past the
// request's length writes -inf without reading the page table or the cache.
//
// A live page is read once with 16-byte asynchronous copies (cp.async: 8192 fp8 bytes, then the
// 256-byte scale area), the next page in flight while this one is computed; it is decoded to
// fp16 in shared memory (every e4m3 value is exact in fp16) and multiplied by the query heads
// with mma.sync m16n8k16 (fp16 in, fp32 accumulate): M = 16 heads per warp, N = 8 positions,
// K = 16 dims. The query heads stay in registers for all the block's pages, and every next_n
// row of the request shares the page, so the cache is read once per request, not once per row.
// The relu, the head weights and the sum over heads follow DeepGEMM's order
// (fmaxf(dot, 0) * w, then times the position's scale).
//
// Launches go to cudaStreamPerThread and run() does not synchronize (the harness does): that is
// what lets the harness capture a launch into a CUDA graph.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "attest/candidate.h"
#include "attest/cuda_candidates.h"
#include "cuda_paged_variants.h"

namespace {

constexpr int kPage = 64;            // positions per c4-indexer block
constexpr int kBlockBytes = 8448;    // 64 x 128 fp8, then 64 fp32 scales
constexpr int kScaleOffset = 8192;
constexpr int kHeadDim = 128;
constexpr int kHeadTile = 16;        // heads per warp: the M of one MMA
constexpr int kMaxWarps = 16;        // next_n * ceil(heads / 16) warps per block, at most
constexpr int kMaxHeads = 128;
// fp16 page rows padded by 8 halves (16 bytes): a fragment load by the 8 lane groups of a warp
// then hits 8 different 4-bank groups instead of one bank eight times.
constexpr int kRowHalves = kHeadDim + 8;
// Raw fp8 rows land padded the same way (144 bytes), then the 64 scales.
constexpr int kRawRowBytes = kHeadDim + 16;
constexpr int kRawBytes = kPage * kRawRowBytes + kPage * 4;
// Pages per block: the query fragments are loaded once for this many pages.
#ifndef ATTEST_PAGED_PAGES_PER_BLOCK
#define ATTEST_PAGED_PAGES_PER_BLOCK 8
#endif
constexpr int kPagesPerBlock = ATTEST_PAGED_PAGES_PER_BLOCK;

static_assert(kPage * kHeadDim + kPage * 4 == kBlockBytes, "c4-indexer block layout");
static_assert(kBlockBytes % 16 == 0, "16-byte loads cover the block exactly");

struct paged_args {
    const uint8_t *cache;
    const int32_t *block_table;
    const int32_t *context_lens;
    const uint8_t *q;
    const float *weights;
    float *logits;
    float *workspace;  // only the uninitialized-read variant uses it
    int32_t requests, next_n, heads, head_tiles, max_len, blocks_per_req;
};

__device__ __forceinline__ uint32_t fp8x2_to_half2(uint16_t bits)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(bits, __NV_E4M3);
    return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

// D = A * B + D for one m16n8k16 tile; A row-major 16x16, B column-major 16x8, fp32 accumulate.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1)
{
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Positions row `slot` of a request of length ctx may see (the MTP causal rule: slot j of
// next_n sees t <= ctx - next_n + j), clamped to the row width.
__device__ __forceinline__ int row_length(int ctx, int next_n, int slot, int max_len)
{
    const int len = ctx - next_n + slot + 1;
    return min(max(len, 0), min(max(ctx, 0), max_len));
}

__device__ __forceinline__ void cp_async_16(void *smem, const void *global)
{
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Queues the copy of one 8448-byte block into `raw` (rows padded to kRawRowBytes).
__device__ __forceinline__ void prefetch_page(const uint8_t *block, uint8_t *raw)
{
    for (int i = threadIdx.x; i < kBlockBytes / 16; i += blockDim.x) {
        uint8_t *dst = i < kScaleOffset / 16 ? raw + (i >> 3) * kRawRowBytes + (i & 7) * 16
                                             : raw + kPage * kRawRowBytes + (i - kScaleOffset / 16) * 16;
        cp_async_16(dst, block + i * 16);
    }
    cp_async_commit();
}

// Decodes a copied page: fp8 rows to fp16 rows of k_half, scales to k_scale.
__device__ __forceinline__ void decode_page(const uint8_t *raw, uint16_t *k_half, float *k_scale)
{
    for (int i = threadIdx.x; i < kScaleOffset / 16; i += blockDim.x) {
        const int pos = i >> 3, d0 = (i & 7) * 16;
        const uint4 v = *reinterpret_cast<const uint4 *>(raw + pos * kRawRowBytes + d0);
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
        uint32_t h[8];
        for (int k = 0; k < 4; k++) {
            h[2 * k] = fp8x2_to_half2(static_cast<uint16_t>(w[k] & 0xFFFFu));
            h[2 * k + 1] = fp8x2_to_half2(static_cast<uint16_t>(w[k] >> 16));
        }
        uint4 *dst = reinterpret_cast<uint4 *>(k_half + pos * kRowHalves + d0);
        dst[0] = make_uint4(h[0], h[1], h[2], h[3]);
        dst[1] = make_uint4(h[4], h[5], h[6], h[7]);
    }
    for (int i = threadIdx.x; i < kPage; i += blockDim.x)
        k_scale[i] = reinterpret_cast<const float *>(raw + kPage * kRawRowBytes)[i];
}

// The wrong-stride bug: the block read as [64, 132]-byte records (the [num_blocks, 64, 1, 132]
// view some code gives it), so position t's key is taken at t*132 and its scale at t*132 + 128.
__device__ __forceinline__ void load_page_as_records(const uint8_t *block, uint16_t *k_half,
                                                     float *k_scale)
{
    for (int i = threadIdx.x; i < kPage * kHeadDim / 2; i += blockDim.x) {
        const int pos = i / (kHeadDim / 2), d = (i % (kHeadDim / 2)) * 2;
        const uint8_t *rec = block + pos * (kHeadDim + 4);
        const uint16_t bits = static_cast<uint16_t>(rec[d] | (rec[d + 1] << 8));
        *reinterpret_cast<uint32_t *>(k_half + pos * kRowHalves + d) = fp8x2_to_half2(bits);
    }
    for (int pos = threadIdx.x; pos < kPage; pos += blockDim.x)
        k_scale[pos] = *reinterpret_cast<const float *>(block + pos * (kHeadDim + 4) + kHeadDim);
}

// SPLIT warps share a (row, head tile), each taking 64 / SPLIT of the page's positions. Only
// SPLIT 1 is launched: 2 (twice the warps per page) measured slower on an H200, 27% of the HBM
// bandwidth against 31% at b=64, lengths 65536 (docs/device-runs.md).
template <paged_variant V, int SPLIT>
__global__ void __launch_bounds__(kMaxWarps * 32) paged_logits_kernel(paged_args a)
{
    __shared__ __align__(16) uint8_t raw[2][kRawBytes];            // 18.5 KiB: copies in flight
    __shared__ __align__(16) uint16_t k_half[kPage * kRowHalves];  // 17 KiB: the decoded page
    __shared__ __align__(16) float k_scale[kPage];
    __shared__ float partial[kMaxWarps][kPage];  // per warp: its 16 heads summed, per position

    const int request = blockIdx.y;
    const int first_page = blockIdx.x * kPagesPerBlock;
    const int ctx = a.context_lens[request];
    // The request's last row sees the most positions; a page no row sees starts past it.
    const int longest = row_length(ctx, a.next_n, a.next_n - 1, a.max_len);
    const int live_end = min(min(first_page + kPagesPerBlock, (longest + kPage - 1) / kPage),
                             a.blocks_per_req);
    float *const out = a.logits + static_cast<size_t>(request) * a.next_n * a.max_len;
    // Pages past the length: -inf, and neither the page table nor the cache is read.
    const int dead_begin = max(first_page, live_end);
    const int dead_positions = (first_page + kPagesPerBlock - dead_begin) * kPage;
    if (a.max_len % 4 == 0) {
        // 16-byte stores: rows start 16-byte aligned and so does every page.
        const int quads = dead_positions / 4;
        const float4 neg = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        for (int i = threadIdx.x; i < a.next_n * quads; i += blockDim.x) {
            const int t = dead_begin * kPage + (i % quads) * 4;
            if (t < a.max_len)
                *reinterpret_cast<float4 *>(out + static_cast<size_t>(i / quads) * a.max_len + t) = neg;
        }
    } else {
        for (int i = threadIdx.x; i < a.next_n * dead_positions; i += blockDim.x) {
            const int t = dead_begin * kPage + i % dead_positions;
            if (t < a.max_len) out[static_cast<size_t>(i / dead_positions) * a.max_len + t] = -INFINITY;
        }
    }
    if (first_page >= live_end) return;

    const int32_t *table = a.block_table + static_cast<size_t>(request) * a.blocks_per_req;
    if (V != paged_variant::records132)
        prefetch_page(a.cache + static_cast<size_t>(table[first_page]) * kBlockBytes, raw[0]);

    // This warp's (row, 16-head tile) and its A fragments: the query heads, fp8 -> fp16, kept
    // in registers for every page. Heads past `heads` are zero (with weight zero below).
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = lane >> 2, quad = lane & 3;
    const int pair = warp / SPLIT, half = warp % SPLIT;  // pair = (row, head tile)
    const int slot = pair / a.head_tiles, tile = pair % a.head_tiles;
    constexpr int kTiles = kPage / 8 / SPLIT;          // 8-position MMA tiles per warp
    const int row = request * a.next_n + slot;
    const int h_lo = tile * kHeadTile + group, h_hi = h_lo + 8;
    const uint8_t *q_lo = a.q + (static_cast<size_t>(row) * a.heads + h_lo) * kHeadDim;
    const uint8_t *q_hi = q_lo + 8 * kHeadDim;
    uint32_t qa[kHeadDim / 16][4];
#pragma unroll
    for (int s = 0; s < kHeadDim / 16; s++) {
        const int d = s * 16 + quad * 2;
        qa[s][0] = h_lo < a.heads ? fp8x2_to_half2(*reinterpret_cast<const uint16_t *>(q_lo + d)) : 0u;
        qa[s][1] = h_hi < a.heads ? fp8x2_to_half2(*reinterpret_cast<const uint16_t *>(q_hi + d)) : 0u;
        qa[s][2] = h_lo < a.heads ? fp8x2_to_half2(*reinterpret_cast<const uint16_t *>(q_lo + d + 8)) : 0u;
        qa[s][3] = h_hi < a.heads ? fp8x2_to_half2(*reinterpret_cast<const uint16_t *>(q_hi + d + 8)) : 0u;
    }
    const float *w = a.weights + static_cast<size_t>(row) * a.heads;
    const float w_lo = h_lo < a.heads ? w[h_lo] : 0.0f;
    const float w_hi = h_hi < a.heads ? w[h_hi] : 0.0f;

    for (int page = first_page, it = 0; page < live_end; page++, it++) {
        const int buf = it & 1;
        __syncthreads();  // every thread is done with the previous page's buffers
        if (V == paged_variant::records132) {
            load_page_as_records(a.cache + static_cast<size_t>(table[page]) * kBlockBytes,
                                 k_half, k_scale);
        } else {
            if (page + 1 < live_end) {
                prefetch_page(a.cache + static_cast<size_t>(table[page + 1]) * kBlockBytes,
                              raw[buf ^ 1]);
                cp_async_wait<1>();
            } else {
                cp_async_wait<0>();
            }
            __syncthreads();  // this page's copies, from every thread, have landed
            decode_page(raw[buf], k_half, k_scale);
        }
        // The race: without this barrier a warp reads page rows another warp has not stored.
        if (V != paged_variant::race) __syncthreads();

        float acc[kTiles][4];
#pragma unroll
        for (int n = 0; n < kTiles; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
        for (int s = 0; s < kHeadDim / 16; s++) {
#pragma unroll
            for (int n = 0; n < kTiles; n++) {
                // B fragment: position 8n' + group (n' = this warp's n-th tile), dims
                // 16s + 2*quad (+1) and the same + 8.
                const int pos = (half * kTiles + n) * 8 + group;
                const uint16_t *k = k_half + pos * kRowHalves + s * 16 + quad * 2;
                mma_16816(acc[n], qa[s], *reinterpret_cast<const uint32_t *>(k),
                          *reinterpret_cast<const uint32_t *>(k + 8));
            }
        }
        // acc[n] holds heads (group, group + 8) x positions 8n + 2*quad (+1). relu(NaN) = 0, as
        // DeepGEMM's fmaxf; then the 8 lane groups (16 heads) are summed with shuffles.
#pragma unroll
        for (int n = 0; n < kTiles; n++) {
            float p0 = fmaxf(acc[n][0], 0.0f) * w_lo + fmaxf(acc[n][2], 0.0f) * w_hi;
            float p1 = fmaxf(acc[n][1], 0.0f) * w_lo + fmaxf(acc[n][3], 0.0f) * w_hi;
#pragma unroll
            for (int m = 4; m < 32; m <<= 1) {
                p0 += __shfl_xor_sync(0xFFFFFFFFu, p0, m);
                p1 += __shfl_xor_sync(0xFFFFFFFFu, p1, m);
            }
            if (group == 0) {
                const int pos = (half * kTiles + n) * 8 + quad * 2;
                partial[pair][pos] = p0;
                partial[pair][pos + 1] = p1;
            }
        }
        __syncthreads();
        const int page_start = page * kPage;
        for (int i = threadIdx.x; i < a.next_n * kPage; i += blockDim.x) {
            const int r = i / kPage, p = i % kPage, t = page_start + p;
            if (t >= a.max_len) continue;
            float v = -INFINITY;
            const bool visible = t < row_length(ctx, a.next_n, r, a.max_len);
            if (visible) {
                float sum = 0.0f;
                for (int h = 0; h < a.head_tiles; h++) sum += partial[r * a.head_tiles + h][p];
                v = sum * k_scale[p];
            }
            const size_t at = static_cast<size_t>(r) * a.max_len + t;
            if (V == paged_variant::uninit) {
                // Staged through a workspace; only visible positions are stored there.
                if (visible) a.workspace[static_cast<size_t>(request) * a.next_n * a.max_len + at] = v;
            } else {
                out[at] = v;
            }
        }
    }
}

// The uninitialized-read variant's second pass: it loads every workspace element, then masks.
// The values it reads for invisible positions are never used, so the outputs are right; the
// load of memory nobody wrote is what compute-sanitizer's initcheck reports.
__global__ void unstage_kernel(paged_args a)
{
    const size_t n = static_cast<size_t>(a.requests) * a.next_n * a.max_len;
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        const int t = static_cast<int>(i % a.max_len);
        const size_t row = i / a.max_len;
        const int request = static_cast<int>(row / a.next_n), slot = static_cast<int>(row % a.next_n);
        const float staged = __ldcg(a.workspace + i);
        a.logits[i] = t < row_length(a.context_lens[request], a.next_n, slot, a.max_len)
                          ? staged : -INFINITY;
    }
}

// The capture-time variant's first pass: every logit -inf.
__global__ void fill_neg_inf_kernel(float *logits, size_t n)
{
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<size_t>(gridDim.x) * blockDim.x)
        logits[i] = -INFINITY;
}

paged_args make_args(const attest_indexer_args &a)
{
    const attest_indexer_params &p = *a.params;
    paged_args k = {};
    k.cache = a.cache;
    k.block_table = a.block_table;
    k.context_lens = a.context_lens;
    k.q = a.q_fp8;
    k.weights = a.weights;
    k.logits = a.logits;
    k.requests = p.b;
    k.next_n = p.next_n;
    k.heads = p.heads;
    k.head_tiles = (p.heads + kHeadTile - 1) / kHeadTile;
    k.max_len = p.max_len;
    k.blocks_per_req = p.blocks_per_req;
    return k;
}

template <paged_variant V>
int launch(const paged_args &k, int blocks_per_row, int requests)
{
    const dim3 grid(blocks_per_row, requests);
    const int pairs = k.next_n * k.head_tiles;
    paged_logits_kernel<V, 1><<<grid, 32 * pairs, 0, cudaStreamPerThread>>>(k);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

}  // namespace

int paged_indexer_supports(const attest_kernel_args *args)
{
    const attest_indexer_params *p = args->u.indexer.params;
    const int tiles = (p->heads + kHeadTile - 1) / kHeadTile;
    return p->head_dim == kHeadDim && p->heads <= kMaxHeads && p->next_n * tiles <= kMaxWarps;
}

int paged_indexer_run(paged_variant variant, const attest_kernel_args *args, float *workspace)
{
    const attest_indexer_params &p = *args->u.indexer.params;
    paged_args k = make_args(args->u.indexer);
    // Fixed by the maximum context, never by the lengths.
    const int pages = (p.max_len + kPage * kPagesPerBlock - 1) / (kPage * kPagesPerBlock);
    switch (variant) {
    case paged_variant::correct:
    case paged_variant::noclean: {
        // noclean: the streaming kernels leave the logits past each row's live pages alone;
        // the per-page kernel writes them anyway (allowed: its masking is unspecified).
        const int clean = variant == paged_variant::correct;
        // wgmma only where it measured faster on an H200 (128 heads, 365-378 against 427-433
        // us at b=64, lengths 65536); with 64 heads the mma.sync kernel is (234 against 274
        // us; docs/device-runs.md).
        if (p.heads > 64 && p.next_n == 1 && paged_wgmma_supports(args)) return paged_wgmma_run(args, clean);
        if (paged_stream_supports(args)) return paged_stream_run(args, clean);
        return launch<paged_variant::correct>(k, pages, p.b);
    }
    case paged_variant::mma:
        if (paged_stream_supports(args)) return paged_stream_run(args, 1);
        return launch<paged_variant::correct>(k, pages, p.b);
    case paged_variant::fp8:
        if (paged_fp8_supports(args)) return paged_fp8_run(args);
        return paged_indexer_run(paged_variant::correct, args, workspace);
    case paged_variant::records132: return launch<paged_variant::records132>(k, pages, p.b);
    case paged_variant::race: return launch<paged_variant::race>(k, pages, p.b);
    case paged_variant::uninit: {
        k.workspace = workspace;
        if (launch<paged_variant::uninit>(k, pages, p.b) != 0) return 1;
        unstage_kernel<<<256, 256, 0, cudaStreamPerThread>>>(k);
        return cudaGetLastError() == cudaSuccess ? 0 : 1;
    }
    case paged_variant::capture_lengths: break;
    }
    return 1;
}

int paged_indexer_run_pages(const attest_kernel_args *args, int pages)
{
    const attest_indexer_params &p = *args->u.indexer.params;
    const paged_args k = make_args(args->u.indexer);
    const size_t n = static_cast<size_t>(p.b) * p.next_n * p.max_len;
    fill_neg_inf_kernel<<<1024, 256, 0, cudaStreamPerThread>>>(k.logits, n);
    const int blocks = (pages + kPagesPerBlock - 1) / kPagesPerBlock;
    if (blocks > 0 && launch<paged_variant::correct>(k, blocks, p.b) != 0) return 1;
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
