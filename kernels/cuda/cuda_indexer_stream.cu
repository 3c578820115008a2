// cuda-indexer-paged's kernel: a fixed grid of blocks that stream the live pages.
//
// Why this shape (docs/gpu.md has the measurements): one block per (request, run of pages)
// left every block alone with a three-barrier pipeline, decoded each page into fp16 shared
// memory and had each of its warps read the whole decoded page again for its MMA operand; the
// shared-memory traffic per page (about 90 KB for 8.4 KB of cache) and the barriers held it at
// a third of the HBM bandwidth. Here:
//
// - The grid is a fixed number of blocks (what fits on the device at once, at most one per
//   page of the maximum context): it depends on the device, b, next_n, heads and max_len, never
//   on the lengths, so one captured CUDA graph serves any lengths. Each block counts the live
//   pages of every request on the device and takes an equal contiguous share of them, so the
//   work is balanced whatever the lengths.
// - Positions past a request's live pages get -inf from plain coalesced 16-byte stores spread
//   over every thread of the grid; neither the page table nor the cache is read for them.
// - A block streams its pages through a ring of kStages shared-memory buffers filled with
//   16-byte cp.async copies, kStages - 1 pages ahead; one barrier per page.
// - mma.sync m16n8k16 (fp16 in, fp32 accumulate) with the page as the A operand (16 positions
//   per warp) and the query heads as B, kept in registers as fp16 while the block stays on one
//   request. The A fragments are read from the raw fp8 bytes (each byte by one warp of its head
//   group, 16-byte loads without bank conflicts) and converted in registers: every e4m3 value
//   is exact in fp16, so nothing is rounded before the MMA.
// - The dimensions are permuted the same way for both operands (lane quad q takes dims 32q ..
//   32q+31), so each lane reads 32 contiguous bytes per position; a dot product does not depend
//   on the order of its terms beyond the accumulator's rounding.
// - relu, weight, sum over heads, then times the position's scale (DeepGEMM's order).
#include "cuda_indexer_stream.cuh"
#include "cuda_paged_variants.h"

using namespace stream;

namespace {

constexpr int kGroupHeads = 64;           // query heads per warp (B operand in registers)
constexpr int kNTiles = kGroupHeads / 8;  // MMA N tiles per warp
constexpr int kMTiles = kPage / 16;       // m-tiles of 16 positions per page
// 2 m-tiles per warp: its q registers serve 16 MMAs per k step (1 m-tile measured 16% slower).
constexpr int kMT = 2;
// Warps per block, at most: with the B operand in registers (244 per thread) 8 warps fit.
constexpr int kMaxWarps = 8;
constexpr int kMaxCombos = 4;  // next_n * head groups
constexpr int kStages = 4;

// D = A * B + D for one m16n8k16 tile; A row-major 16x16, B column-major 16x8, fp32 accumulate.
__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                          uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// MT m-tiles (16 positions each) per warp: a warp's q registers serve MT x 8 MMAs per k step.
template <int MT>
__global__ void __launch_bounds__(kMaxWarps * 32, 1) stream_kernel(stream_args a)
{
    constexpr int kWarpsPerCombo = kMTiles / MT;
    __shared__ __align__(16) uint8_t stages[kStages][kStageBytes];
    __shared__ float partial[kMaxCombos][kPage];
    __shared__ long long share, dead_total;
    __shared__ page_cursor start;

    const bool vec = a.max_len % 4 == 0;
    find_share(a, vec, &share, &start, &dead_total);
    const long long count = share;
    // -inf stores per page so that they end with the pages (the rest after the loop).
    dead_cursor dead = dead_begin(a, vec, dead_total);
    const int dead_per_page = static_cast<int>(count > 0 ? (dead.left + count - 1) / count : 0);

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = lane >> 2, quad = lane & 3;
    const int mgroup = warp % kWarpsPerCombo, combo = warp / kWarpsPerCombo;
    const int slot = combo / a.groups, hg = combo % a.groups;

    page_cursor fetch = start, cur = start;
    fetch_load_entry(a, fetch);
    for (int s = 0; s < kStages - 1; s++) {
        if (s < count) {
            prefetch_page<0>(a, fetch, stages[s]);
            fetch_advance(a, fetch);
        }
        cp_async_commit();
    }

    // The B operand: heads hg*64 + 8n + group, dims 32*quad .. +31 as 16 half2 per tile, for
    // the request `q_request`; reloaded when the block moves to another request.
    uint32_t qb[kNTiles][16];
    float w0[kNTiles], w1[kNTiles];
    int q_request = -1;

    for (long long it = 0; it < count; it++) {
        cp_async_wait<kStages - 2>();
        __syncthreads();  // this page landed for every thread; the oldest buffer is free again
        if (it + kStages - 1 < count) {
            prefetch_page<0>(a, fetch, stages[(it + kStages - 1) % kStages]);
            fetch_advance(a, fetch);
        }
        cp_async_commit();
        for (int k = 0; k < dead_per_page; k++) dead_store(a, vec, dead);

        const int row = cur.request * a.next_n + slot;
        if (cur.request != q_request) {
            q_request = cur.request;
#pragma unroll
            for (int n = 0; n < kNTiles; n++) {
                const int h = hg * kGroupHeads + n * 8 + group;
                uint4 v0 = make_uint4(0, 0, 0, 0), v1 = v0;
                if (h < a.heads) {
                    const uint4 *src = reinterpret_cast<const uint4 *>(
                        a.q + (static_cast<size_t>(row) * a.heads + h) * kHeadDim + quad * 32);
                    v0 = src[0];
                    v1 = src[1];
                }
                const uint32_t w[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
                for (int s = 0; s < 8; s++) fp8x4_to_half2x2(w[s], qb[n][2 * s], qb[n][2 * s + 1]);
                const int h0 = hg * kGroupHeads + n * 8 + quad * 2;
                const float *wr = a.weights + static_cast<size_t>(row) * a.heads;
                w0[n] = h0 < a.heads ? wr[h0] : 0.0f;
                w1[n] = h0 + 1 < a.heads ? wr[h0 + 1] : 0.0f;
            }
        }

        const uint8_t *stage = stages[it % kStages];
        float sums[2 * MT];  // positions (lo, hi) of each m-tile, summed over this warp's heads
#pragma unroll
        for (int j = 0; j < MT; j++) {
            const int pos_lo = (mgroup * MT + j) * 16 + group;
            const uint4 *lo = reinterpret_cast<const uint4 *>(stage + pos_lo * kRowBytes + quad * 32);
            const uint4 *hi = reinterpret_cast<const uint4 *>(stage + (pos_lo + 8) * kRowBytes + quad * 32);
            const uint4 l0 = lo[0], l1 = lo[1], h0 = hi[0], h1 = hi[1];
            const uint32_t lw[8] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
            const uint32_t hw[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
            float acc[kNTiles][4];
#pragma unroll
            for (int n = 0; n < kNTiles; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
            for (int s = 0; s < 8; s++) {
                // Logical k 2q, 2q+1 of step s are dims 32q + 4s + {0, 1}; 2q+8, 2q+9: + {2, 3}.
                uint32_t a0, a1, a2, a3;
                fp8x4_to_half2x2(lw[s], a0, a2);
                fp8x4_to_half2x2(hw[s], a1, a3);
#pragma unroll
                for (int n = 0; n < kNTiles; n++)
                    mma_16816(acc[n], a0, a1, a2, a3, qb[n][2 * s], qb[n][2 * s + 1]);
            }
            // acc[n]: positions (lo, hi) x heads 8n + 2q (+1). relu(NaN) = 0, as DeepGEMM's fmaxf.
            float s_lo = 0.0f, s_hi = 0.0f;
#pragma unroll
            for (int n = 0; n < kNTiles; n++) {
                s_lo = fmaf(fmaxf(acc[n][1], 0.0f), w1[n], fmaf(fmaxf(acc[n][0], 0.0f), w0[n], s_lo));
                s_hi = fmaf(fmaxf(acc[n][3], 0.0f), w1[n], fmaf(fmaxf(acc[n][2], 0.0f), w0[n], s_hi));
            }
            sums[2 * j] = s_lo;
            sums[2 * j + 1] = s_hi;
        }
#pragma unroll
        for (int m = 1; m < 4; m <<= 1)
#pragma unroll
            for (int j = 0; j < 2 * MT; j++) sums[j] += __shfl_xor_sync(0xFFFFFFFFu, sums[j], m);
        // Lane quad k stores sum k: m-tile k / 2, position lo or hi.
        float mine = sums[0];
#pragma unroll
        for (int j = 1; j < 2 * MT; j++)
            if (quad == j) mine = sums[j];
        const int pos = (mgroup * MT + quad / 2) * 16 + group + (quad & 1) * 8;
        const bool storer = quad < 2 * MT;
        const int ctx = a.context_lens[cur.request];
        const int visible = row_length(ctx, a.next_n, slot, a.max_len);
        const float *scale = reinterpret_cast<const float *>(stage + kPage * kRowBytes);
        float *out = a.logits + static_cast<size_t>(row) * a.max_len;
        const int t = cur.page * kPage + pos;
        if (a.groups == 1) {
            if (storer && t < a.max_len) out[t] = t < visible ? mine * scale[pos] : -INFINITY;
        } else {
            if (storer) partial[combo][pos] = mine;
            __syncthreads();
            if (hg == 0 && storer && t < a.max_len) {
                float sum = 0.0f;
                for (int g = 0; g < a.groups; g++) sum += partial[combo + g][pos];
                out[t] = t < visible ? sum * scale[pos] : -INFINITY;
            }
        }
        cursor_advance(a, cur);
    }
    while (dead.left > 0) dead_store(a, vec, dead);
}



}  // namespace

int paged_stream_supports(const attest_kernel_args *args)
{
    const attest_indexer_params *p = args->u.indexer.params;
    const int groups = (p->heads + kGroupHeads - 1) / kGroupHeads;
    return p->head_dim == kHeadDim && p->next_n >= 1 &&
           p->next_n * groups * (kMTiles / kMT) <= kMaxWarps;
}

int paged_stream_run(const attest_kernel_args *args, int clean_tail)
{
    const attest_indexer_params &p = *args->u.indexer.params;
    if (p.b <= 0 || p.max_len <= 0) return 0;
    stream_args k = make_args(args, kGroupHeads);
    k.clean_tail = clean_tail;
    const int threads = p.next_n * k.groups * (kMTiles / kMT) * 32;
    const long long blocks = grid_blocks(stream_kernel<kMT>, threads, 0, p);
    if (blocks <= 0) return 1;
    stream_kernel<kMT><<<static_cast<unsigned>(blocks), threads, 0, cudaStreamPerThread>>>(k);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
