// cuda-indexer-paged on sm_90a: the streaming kernel of cuda_indexer_stream.cu with wgmma.
//
// Why: the mma.sync kernel keeps the query heads in registers (244 per thread), so only 8
// warps fit on an SM and its MMAs wait on each other (about 56% of the HBM bandwidth on an
// H200). wgmma takes B from shared memory, so a block of one warpgroup needs about 100
// registers and several blocks share an SM; its MMA of 64 positions x 64 heads x 16 dims is
// one instruction, issued asynchronously.
//
// - One warpgroup (4 warps) per block; a page's 64 positions are the M of m64n64k16, warp w
//   holding positions 16w .. 16w+15 as the A operand in registers, converted there from the
//   raw fp8 bytes of the stage (every e4m3 value is exact in fp16).
// - B = the query heads of the block's current request: 64 heads x 128 dims of fp16 per
//   (row, 64-head group) tile in shared memory, in the no-swizzle K-major layout (8x8 core
//   matrices of 128 bytes, 8-head groups 128 bytes apart, the two K halves of a step 1024
//   bytes apart, steps 2048 bytes apart), rewritten when the block moves to another request.
// - Dimensions are permuted the same way for A and B (lane quad q holds dims 32q .. 32q+31),
//   so a lane reads 32 contiguous bytes per position.
// - Everything else (the grid, each block's share of the live pages, the -inf stores, the
//   cp.async ring) is the streaming kernel's, from cuda_indexer_stream.cuh.
#include "../cuda_indexer_stream.cuh"
#include "../cuda_paged_variants.h"

using namespace stream;

namespace {

constexpr int kTileHeads = 64;                      // N of one wgmma
constexpr int kTileBytes = kTileHeads * kHeadDim * 2;  // fp16 B tile
constexpr int kMaxTiles = 4;                        // next_n * ceil(heads / 64)
constexpr int kStages = 4;

__device__ __forceinline__ uint64_t smem_desc(const void *p)
{
    const uint64_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    const uint64_t lbo = 1024, sbo = 128;  // K-direction and 8-head-group core-matrix strides
    return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}

__device__ __forceinline__ void wgmma_64x64x16(float (&d)[32], const uint32_t (&a)[4], uint64_t desc,
                                               int accumulate)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Writes the B tiles of `request` (tile c = row slot c / groups, heads (c % groups) * 64 ..)
// as fp16 in the layout smem_desc describes; heads past `heads` are zero. Every thread issues
// all its 16-byte loads before it converts any (they wait on memory together).
template <int TILES>
__device__ __forceinline__ void load_b_tiles(const stream_args &a, int request, uint8_t *b)
{
    // Item i = (tile, head, 16-byte chunk j of the row: words 4j .. 4j+3). Word w holds
    // physical dims 4w .. 4w+3 = 32q + 4s + {0..3}: logical k 2q, 2q+1 of step s (K half 0)
    // and 2q+8, 2q+9 (K half 1).
    constexpr int kChunks = kHeadDim / 16, kItems = kTileHeads * kChunks;
    constexpr int kPerThread = kItems / 128;
    static_assert(kItems % 128 == 0, "whole items per thread");
#pragma unroll 1
    for (int c = 0; c < TILES; c++) {
        const int slot = c / a.groups;
        uint4 v[kPerThread];
#pragma unroll
        for (int k = 0; k < kPerThread; k++) {
            const int i = threadIdx.x + k * 128;
            const int j = i % kChunks, h = (c % a.groups) * kTileHeads + i / kChunks;
            v[k] = make_uint4(0, 0, 0, 0);
            if (h < a.heads)
                v[k] = *reinterpret_cast<const uint4 *>(
                    a.q + ((static_cast<size_t>(request) * a.next_n + slot) * a.heads + h) * kHeadDim + j * 16);
        }
#pragma unroll
        for (int k = 0; k < kPerThread; k++) {
            const int i = threadIdx.x + k * 128;
            const int j = i % kChunks, n = i / kChunks;
            const uint32_t words[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int w = 4 * j + u, q = w / 8, s = w % 8;
                uint8_t *core = b + c * kTileBytes + s * 2048 + (n / 8) * 128 + (n % 8) * 16 + q * 4;
                uint32_t lo, hi;
                fp8x4_to_half2x2(words[u], lo, hi);
                *reinterpret_cast<uint32_t *>(core) = lo;
                *reinterpret_cast<uint32_t *>(core + 1024) = hi;
            }
        }
    }
}

template <int TILES>
__global__ void __launch_bounds__(128) wgmma_kernel(stream_args a)
{
    extern __shared__ __align__(128) uint8_t smem[];
    uint8_t *const stages = smem;
    uint8_t *const btiles = smem + kStages * kStageBytes;
    __shared__ long long share, dead_total;
    __shared__ page_cursor start;

    const bool vec = a.max_len % 4 == 0;
    find_share(a, vec, &share, &start, &dead_total);
    const long long count = share;
    dead_cursor dead = dead_begin(a, vec, dead_total);
    const int dead_per_page = static_cast<int>(count > 0 ? (dead.left + count - 1) / count : 0);

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = lane >> 2, quad = lane & 3;
    const int pos_lo = warp * 16 + group, pos_hi = pos_lo + 8;

    page_cursor fetch = start, cur = start;
    fetch_load_entry(a, fetch);
    for (int s = 0; s < kStages - 1; s++) {
        if (s < count) {
            prefetch_page<128>(a, fetch, stages + s * kStageBytes);
            fetch_advance(a, fetch);
        }
        cp_async_commit();
    }

    float w0[TILES][8], w1[TILES][8];  // weights of heads 8j + 2q (+1) of each tile
    int b_request = -1, ctx = 0;
    // The first wgmma of a page does not accumulate (scale-d 0), so the values left from the
    // previous page need no clearing.
    float acc[TILES][32];
#pragma unroll
    for (int c = 0; c < TILES; c++)
#pragma unroll
        for (int i = 0; i < 32; i++) acc[c][i] = 0.0f;

    for (long long it = 0; it < count; it++) {
        cp_async_wait<kStages - 2>();
        __syncthreads();  // this page landed for every thread; the oldest buffer is free again
        if (it + kStages - 1 < count) {
            prefetch_page<128>(a, fetch, stages + ((it + kStages - 1) % kStages) * kStageBytes);
            fetch_advance(a, fetch);
        }
        cp_async_commit();
        for (int k = 0; k < dead_per_page; k++) dead_store(a, vec, dead);

        if (cur.request != b_request) {
            // Every wgmma of the previous page has completed (waited below) and every thread
            // is past the barrier above, so the tiles can be rewritten.
            b_request = cur.request;
            ctx = a.context_lens[cur.request];
            load_b_tiles<TILES>(a, cur.request, btiles);
#pragma unroll
            for (int c = 0; c < TILES; c++) {
                const int slot = c / a.groups, h0 = (c % a.groups) * kTileHeads;
                const float *wr = a.weights + (static_cast<size_t>(cur.request) * a.next_n + slot) * a.heads;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const int h = h0 + 8 * j + 2 * quad;
                    w0[c][j] = h < a.heads ? wr[h] : 0.0f;
                    w1[c][j] = h + 1 < a.heads ? wr[h + 1] : 0.0f;
                }
            }
            fence_async_shared();  // the generic-proxy stores, visible to wgmma's async proxy
            __syncthreads();
        }

        const uint8_t *stage = stages + (it % kStages) * kStageBytes;
        const uint4 *lo = reinterpret_cast<const uint4 *>(stage + pos_lo * kRowBytes + quad * 32);
        const uint4 *hi = reinterpret_cast<const uint4 *>(stage + pos_hi * kRowBytes + quad * 32);
        const uint4 l0 = lo[0], l1 = lo[1], h0 = hi[0], h1 = hi[1];
        const uint32_t lw[8] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
        const uint32_t hw[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
        uint32_t af[8][4];
#pragma unroll
        for (int s = 0; s < 8; s++) {
            fp8x4_to_half2x2(lw[s], af[s][0], af[s][2]);
            fp8x4_to_half2x2(hw[s], af[s][1], af[s][3]);
        }
        wgmma_fence();
#pragma unroll
        for (int c = 0; c < TILES; c++)
#pragma unroll
            for (int s = 0; s < 8; s++)
                wgmma_64x64x16(acc[c], af[s], smem_desc(btiles + c * kTileBytes + s * 2048), s > 0);
        wgmma_commit();
        wgmma_wait();

        // acc[c][4j ..]: positions (lo, hi) x heads 8j + 2q (+1) of tile c; a row's tiles
        // (its head groups) are summed in the thread. relu(NaN) = 0, as DeepGEMM's fmaxf.
        const float *scale = reinterpret_cast<const float *>(stage + kPage * kRowBytes);
        const int pos = quad == 0 ? pos_lo : pos_hi;
        const int t = cur.page * kPage + pos;
        for (int slot = 0; slot < a.next_n; slot++) {
            float s_lo = 0.0f, s_hi = 0.0f;
#pragma unroll
            for (int c = 0; c < TILES; c++) {
                if (c / a.groups != slot) continue;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    s_lo = fmaf(fmaxf(acc[c][4 * j + 1], 0.0f), w1[c][j],
                                fmaf(fmaxf(acc[c][4 * j], 0.0f), w0[c][j], s_lo));
                    s_hi = fmaf(fmaxf(acc[c][4 * j + 3], 0.0f), w1[c][j],
                                fmaf(fmaxf(acc[c][4 * j + 2], 0.0f), w0[c][j], s_hi));
                }
            }
#pragma unroll
            for (int m = 1; m < 4; m <<= 1) {
                s_lo += __shfl_xor_sync(0xFFFFFFFFu, s_lo, m);
                s_hi += __shfl_xor_sync(0xFFFFFFFFu, s_hi, m);
            }
            const int visible = row_length(ctx, a.next_n, slot, a.max_len);
            float *out = a.logits + (static_cast<size_t>(cur.request) * a.next_n + slot) * a.max_len;
            if (quad < 2 && t < a.max_len)
                out[t] = t < visible ? (quad == 0 ? s_lo : s_hi) * scale[pos] : -INFINITY;
        }
        cursor_advance(a, cur);
    }
    while (dead.left > 0) dead_store(a, vec, dead);
}

template <int TILES>
int launch(const stream_args &k, const attest_indexer_params &p)
{
    const size_t smem = static_cast<size_t>(kStages) * kStageBytes + static_cast<size_t>(TILES) * kTileBytes;
    // Above 48 KiB a kernel must opt in; a host call, not a stream operation, made once.
    static const bool opted_in =
        cudaFuncSetAttribute(wgmma_kernel<TILES>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem)) == cudaSuccess;
    if (!opted_in) return 1;
    const long long blocks = grid_blocks(wgmma_kernel<TILES>, 128, smem, p);
    if (blocks <= 0) return 1;
    wgmma_kernel<TILES><<<static_cast<unsigned>(blocks), 128, smem, cudaStreamPerThread>>>(k);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

}  // namespace

int paged_wgmma_supports(const attest_kernel_args *args)
{
    const attest_indexer_params *p = args->u.indexer.params;
    const int groups = (p->heads + kTileHeads - 1) / kTileHeads;
    if (p->head_dim != kHeadDim || p->next_n < 1 || p->next_n * groups > kMaxTiles) return 0;
    // The cubin is sm_90a only; asked once (one device per process).
    static const bool sm90 = [] {
        int device = 0, major = 0, minor = 0;
        return cudaGetDevice(&device) == cudaSuccess &&
               cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
               cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
               major == 9 && minor == 0;
    }();
    return sm90;
}

int paged_wgmma_run(const attest_kernel_args *args, int clean_tail)
{
    const attest_indexer_params &p = *args->u.indexer.params;
    if (p.b <= 0 || p.max_len <= 0) return 0;
    stream_args k = make_args(args, kTileHeads);
    k.clean_tail = clean_tail;
    switch (p.next_n * k.groups) {
    case 1: return launch<1>(k, p);
    case 2: return launch<2>(k, p);
    case 3: return launch<3>(k, p);
    case 4: return launch<4>(k, p);
    }
    return 1;
}
