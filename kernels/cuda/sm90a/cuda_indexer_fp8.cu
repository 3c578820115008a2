// cuda-indexer-paged-fp8 on sm_90a: the streaming paged indexer with fp8 x fp8 wgmma.
//
// Why: the exact kernels (cuda_indexer_stream.cu, cuda_indexer_wgmma.cu) convert every key
// byte to fp16 before the MMA; on an H200 those conversions and the per-page latency hold
// them near 57% of the HBM bandwidth. The key cache and q are both e4m3 in the spec
// (docs/kernels.md section 5), so wgmma can take them as they are: no conversion, A and B
// straight from shared memory, half the MMA instructions of fp16. The price is Hopper's fp8
// MMA accumulator (about 14 bits kept, DeepSeek-V3 report section 3.3.2): the candidate is
// judged under policies/bf16-tensor-core.json ("accumulation": "hopper-fp8-mma"), as
// DeepGEMM's fp8 indexer would be; under the float32 default it is not a correct kernel.
//
// - One warpgroup per block, several blocks per SM; the grid, each block's share of the live
//   pages and the -inf stores past them are the streaming kernels' (cuda_indexer_stream.cuh).
//   cuda-indexer-paged-fp8-noclean is the same kernel without those stores (clean_tail 0).
// - A page's 8192 key bytes land by TMA (the cache as a tensor of 128-byte rows, the copy
//   engine doing the 128-byte swizzle) in a ring of stages, each 1024-aligned, in the K-major
//   layout wgmma reads (16-byte chunk c of position r at r * 128 + 16 * (c ^ (r % 8))); the 64
//   scales by a bulk copy into a ring of their own. One thread issues both; an mbarrier per
//   stage says the page landed. The same copies by every thread's 16-byte cp.async held the
//   kernel at 73-77% of HBM with as many pages in flight per SM (4 blocks x 3; this kernel
//   6 x 2: 87-92%), and more blocks did not help them: the per-thread copies were the limit,
//   not the pages in flight (docs/device-runs.md, "TMA").
// - B = the heads of the block's current request, 64 per tile (tile c: row slot c / groups,
//   heads (c % groups) * 64 ..), 128 fp8 bytes per head in the same swizzled layout; heads
//   past `heads` are zero. Rewritten when the block moves to another request, with the
//   head weights (kept in shared memory: the registers they free let 6 blocks fit per SM).
// - wgmma m64n64k32 e4m3 x e4m3 -> f32, four k steps per tile; while it runs the block queues
//   the next page's copy and its share of -inf stores.
// - Then relu, weight, sum over heads, times the position's scale (DeepGEMM's order).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda_indexer_stream.cuh"
#include "../cuda_paged_variants.h"

using namespace stream;

namespace {

constexpr int kTileHeads = 64;                    // N of one wgmma
constexpr int kKeyBytes = kPage * kHeadDim;       // 8192: one stage of keys
constexpr int kQTileBytes = kTileHeads * kHeadDim;  // 8192: one B tile
constexpr int kScaleBytes = kPage * 4;
constexpr int kMaxTiles = 4;                      // next_n * ceil(heads / 64)
constexpr int kThreads = 128;

// The K-major layout of 64 rows x 128 bytes wgmma reads, with the 128-byte swizzle: 16-byte
// chunk c of row r at 128 r + 16 (c ^ (r % 8)). (The unswizzled layout of 8 x 16-byte core
// matrices measured 56% slower: its copies store 8 threads to one bank group or read 128
// bytes apart; docs/device-runs.md.)
__device__ __forceinline__ uint32_t chunk_offset(int row, int chunk)
{
    return static_cast<uint32_t>(row * 128 + ((chunk ^ (row & 7)) << 4));
}

// Its descriptor for k step k (32 bytes on): 8-row groups 1024 bytes apart (SBO), LBO unused
// (encoded 1), mode 1 = 128-byte swizzle.
__device__ __forceinline__ uint64_t smem_desc(uint32_t tile, int k)
{
    const uint32_t addr = tile + 32 * k;
    const uint64_t lbo = 16, sbo = 1024, mode = 1;
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) |
           (mode << 62);
}

__device__ __forceinline__ void wgmma_fp8_64x64x32(float (&d)[32], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(accumulate));
}

// Keeps the compiler from moving reads of the accumulators across wgmma_wait.
__device__ __forceinline__ void fence_operands(float (&d)[32])
{
#pragma unroll
    for (int i = 0; i < 32; i++) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Queues the cursor's page: key chunk i (position i / 8, chunk i % 8) to its place in `keys`,
// the 16 scale chunks to `scales`.
__device__ __forceinline__ void prefetch_page_to(const stream_args &a, const page_cursor &c, uint32_t keys,
                                                 uint32_t scales)
{
    const uint8_t *block = a.cache + static_cast<size_t>(c.entry) * kBlockBytes;
    constexpr int kChunks = kBlockBytes / 16, kKeyChunks = kKeyBytes / 16;
#pragma unroll
    for (int i = threadIdx.x; i < kChunks; i += kThreads) {
        if (i >= kKeyChunks) {
            cp_async_16(scales + 16 * (i - kKeyChunks), block + 16 * i);
        } else {
            const int row = i >> 3, chunk = i & 7;
            cp_async_16(keys + chunk_offset(row, chunk), block + 16 * (row * 8 + chunk));
        }
    }
}

// Writes the B tiles of `request` in the swizzled layout (heads past `heads` zero). Every
// thread issues all its loads of a tile before it stores any.
template <int TILES>
__device__ __forceinline__ void load_q_tiles(const stream_args &a, int request, uint8_t *b)
{
    constexpr int kPerThread = kQTileBytes / 16 / kThreads;
#pragma unroll
    for (int c = 0; c < TILES; c++) {
        const int slot = c / a.groups, h0 = (c % a.groups) * kTileHeads;
        const uint8_t *q = a.q + (static_cast<size_t>(request) * a.next_n + slot) * a.heads * kHeadDim;
        uint4 v[kPerThread];
#pragma unroll
        for (int k = 0; k < kPerThread; k++) {
            const int i = threadIdx.x + k * kThreads, n = i >> 3, j = i & 7;
            v[k] = make_uint4(0, 0, 0, 0);
            if (h0 + n < a.heads)
                v[k] = *reinterpret_cast<const uint4 *>(q + static_cast<size_t>(h0 + n) * kHeadDim + 16 * j);
        }
#pragma unroll
        for (int k = 0; k < kPerThread; k++) {
            const int i = threadIdx.x + k * kThreads, n = i >> 3, j = i & 7;
            *reinterpret_cast<uint4 *>(b + c * kQTileBytes + chunk_offset(n, j)) = v[k];
        }
    }
}

// A kernel's configuration is its template arguments: STAGES of the ring, MINB the blocks per
// SM it is compiled for (its register budget), TMA whether the page comes by TMA (a tensor
// map of the cache as rows of 128 bytes, the 128-byte swizzle done by the copy engine; one
// thread issues, an mbarrier per stage says it landed) or by every thread's cp.async, WSMEM
// whether the head weights live in shared memory (16 registers fewer per tile); launch()'s
// `carveout` asks for the largest shared-memory carveout (what lets a fifth block fit).

// Dynamic shared memory: 1 KiB of alignment slack, the key stages, the B tiles, the scales,
// the weights (weights_smem only).
template <int TILES, int STAGES, bool WSMEM>
constexpr size_t smem_bytes()
{
    return 1024 + static_cast<size_t>(STAGES) * kKeyBytes + static_cast<size_t>(TILES) * kQTileBytes +
           static_cast<size_t>(STAGES) * kScaleBytes + (WSMEM ? static_cast<size_t>(TILES) * kTileHeads * 4 : 0);
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile(
        "{\n.reg .pred p;\nWAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

// Queues the cursor's page by TMA: its 64 key rows (rows 66 * entry .. of the tensor map,
// swizzled on the way) and its 256 scale bytes (a plain bulk copy), both counted by `bar`.
__device__ __forceinline__ void tma_page_to(const CUtensorMap *map, const stream_args &a, const page_cursor &c,
                                            uint32_t keys, uint32_t scales, uint32_t bar)
{
    const uint8_t *scale_src = a.cache + static_cast<size_t>(c.entry) * kBlockBytes + kScaleOffset;
    const int row = c.entry * (kBlockBytes / 128);
    mbar_expect_tx(bar, kKeyBytes + kScaleBytes);
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(keys),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(0), "r"(row), "r"(bar)
        : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(scales),
                 "l"(scale_src), "r"(kScaleBytes), "r"(bar)
                 : "memory");
}

template <int TILES, int STAGES, int MINB, bool TMA, bool WSMEM>
__global__ void __launch_bounds__(kThreads, MINB) fp8_kernel(stream_args a, const __grid_constant__ CUtensorMap map)
{
    extern __shared__ __align__(16) uint8_t smem_raw[];
    __shared__ long long share, dead_total;
    __shared__ page_cursor start;
    __shared__ __align__(8) uint64_t full[STAGES];  // TMA: stage s landed
    // wgmma's 128-byte swizzle is a function of the address: the stages start 1024-aligned.
    const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
    uint8_t *const base = smem_raw + ((1024 - (raw & 1023)) & 1023);
    uint8_t *const keys = base;
    uint8_t *const qtiles = keys + STAGES * kKeyBytes;
    uint8_t *const scales = qtiles + TILES * kQTileBytes;
    float *const wsm = reinterpret_cast<float *>(scales + STAGES * kScaleBytes);
    const uint32_t keys_s = static_cast<uint32_t>(__cvta_generic_to_shared(keys));
    const uint32_t qtiles_s = static_cast<uint32_t>(__cvta_generic_to_shared(qtiles));
    const uint32_t scales_s = static_cast<uint32_t>(__cvta_generic_to_shared(scales));
    const uint32_t full_s = static_cast<uint32_t>(__cvta_generic_to_shared(full));

    if (TMA && threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) mbar_init(full_s + 8 * s, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    const bool vec = a.max_len % 4 == 0;
    find_share(a, vec, &share, &start, &dead_total);  // ends with a barrier
    const long long count = share;
    dead_cursor dead = dead_begin(a, vec, dead_total);
    const int dead_per_page = static_cast<int>(count > 0 ? (dead.left + count - 1) / count : 0);

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int group = lane >> 2, quad = lane & 3;
    const int pos_lo = warp * 16 + group, pos_hi = pos_lo + 8;
    const bool issuer = !TMA || threadIdx.x == 0;

    page_cursor fetch = start, cur = start;
    if (issuer) fetch_load_entry(a, fetch);
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < count && issuer) {
            if (TMA)
                tma_page_to(&map, a, fetch, keys_s + s * kKeyBytes, scales_s + s * kScaleBytes, full_s + 8 * s);
            else
                prefetch_page_to(a, fetch, keys_s + s * kKeyBytes, scales_s + s * kScaleBytes);
            fetch_advance(a, fetch);
        }
        if (!TMA) cp_async_commit();
    }

    float w0[TILES][8], w1[TILES][8];  // weights of heads 8j + 2q (+1) of each tile (!WSMEM)
    int b_request = -1, ctx = 0;
    // The first k step of a page does not accumulate (scale-d 0): no clearing between pages.
    float acc[TILES][32];
#pragma unroll
    for (int c = 0; c < TILES; c++)
#pragma unroll
        for (int i = 0; i < 32; i++) acc[c][i] = 0.0f;

    for (long long it = 0; it < count; it++) {
        const int stage = static_cast<int>(it % STAGES);
        if (TMA) {
            mbar_wait(full_s + 8 * stage, static_cast<uint32_t>((it / STAGES) & 1));
        } else {
            cp_async_wait<STAGES - 2>();
            fence_async_shared();  // this thread's copies, visible to wgmma's async proxy
        }
        __syncthreads();  // the page landed for every thread; the oldest stage is free

        if (cur.request != b_request) {
            // The previous page's wgmma completed (waited below) in every warp before the
            // barrier above, so the tiles can be rewritten.
            b_request = cur.request;
            ctx = a.context_lens[cur.request];
            load_q_tiles<TILES>(a, cur.request, qtiles);
#pragma unroll
            for (int c = 0; c < TILES; c++) {
                const int slot = c / a.groups, h0 = (c % a.groups) * kTileHeads;
                const float *wr = a.weights + (static_cast<size_t>(cur.request) * a.next_n + slot) * a.heads;
                if (WSMEM) {
                    if (threadIdx.x < kTileHeads) {
                        const int h = h0 + threadIdx.x;
                        wsm[c * kTileHeads + threadIdx.x] = h < a.heads ? wr[h] : 0.0f;
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < 8; j++) {
                        const int h = h0 + 8 * j + 2 * quad;
                        w0[c][j] = h < a.heads ? wr[h] : 0.0f;
                        w1[c][j] = h + 1 < a.heads ? wr[h + 1] : 0.0f;
                    }
                }
            }
            fence_async_shared();
            __syncthreads();
        }

        const uint32_t ka = keys_s + stage * kKeyBytes;
        wgmma_fence();
#pragma unroll
        for (int c = 0; c < TILES; c++)
#pragma unroll
            for (int k = 0; k < kHeadDim / 32; k++)
                wgmma_fp8_64x64x32(acc[c], smem_desc(ka, k), smem_desc(qtiles_s + c * kQTileBytes, k), k > 0);
        wgmma_commit();

        // While the MMAs run: the copy STAGES - 1 pages ahead (into the stage the previous
        // page used: its wgmma completed before the barrier) and this page's -inf stores.
        if (it + STAGES - 1 < count && issuer) {
            const int next = static_cast<int>((it + STAGES - 1) % STAGES);
            if (TMA)
                tma_page_to(&map, a, fetch, keys_s + next * kKeyBytes, scales_s + next * kScaleBytes,
                            full_s + 8 * next);
            else
                prefetch_page_to(a, fetch, keys_s + next * kKeyBytes, scales_s + next * kScaleBytes);
            fetch_advance(a, fetch);
        }
        if (!TMA) cp_async_commit();
        for (int k = 0; k < dead_per_page; k++) dead_store(a, vec, dead);
        wgmma_wait();
#pragma unroll
        for (int c = 0; c < TILES; c++) fence_operands(acc[c]);

        // acc[c][4j ..]: positions (lo, hi) x heads 8j + 2q (+1) of tile c; a row's tiles
        // (its head groups) are summed in the thread. relu(NaN) = 0, as DeepGEMM's fmaxf.
        const float *scale = reinterpret_cast<const float *>(scales + stage * kScaleBytes);
        const int pos = quad == 0 ? pos_lo : pos_hi;
        const int t = cur.page * kPage + pos;
        for (int slot = 0; slot < a.next_n; slot++) {
            float s_lo = 0.0f, s_hi = 0.0f;
#pragma unroll
            for (int c = 0; c < TILES; c++) {
                if (c / a.groups != slot) continue;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    float wa, wb;
                    if (WSMEM) {
                        const float2 w = *reinterpret_cast<const float2 *>(wsm + c * kTileHeads + 8 * j + 2 * quad);
                        wa = w.x;
                        wb = w.y;
                    } else {
                        wa = w0[c][j];
                        wb = w1[c][j];
                    }
                    s_lo = fmaf(fmaxf(acc[c][4 * j + 1], 0.0f), wb, fmaf(fmaxf(acc[c][4 * j], 0.0f), wa, s_lo));
                    s_hi = fmaf(fmaxf(acc[c][4 * j + 3], 0.0f), wb, fmaf(fmaxf(acc[c][4 * j + 2], 0.0f), wa, s_hi));
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

// The cache as a 2-D tensor of num_blocks * 66 rows of 128 bytes, read in boxes of 64 rows
// (a page's keys) with the 128-byte swizzle. The driver's encoder is found through the
// runtime once (no link against libcuda); false when it or the encoding fails.
bool encode_cache_map(const attest_kernel_args *args, CUtensorMap *map)
{
    static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void *fn = nullptr;
        cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
                cudaSuccess ||
            found != cudaDriverEntryPointSuccess)
            fn = nullptr;
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }();
    if (!encode) return false;
    const attest_indexer_params &p = *args->u.indexer.params;
    const cuuint64_t dims[2] = {128, static_cast<cuuint64_t>(p.num_blocks) * (kBlockBytes / 128)};
    const cuuint64_t strides[1] = {128};
    const cuuint32_t box[2] = {128, kPage};
    const cuuint32_t elem[2] = {1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t *>(args->u.indexer.cache), dims, strides,
                  box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int TILES, int STAGES, int MINB, bool TMA, bool WSMEM>
int launch(const stream_args &k, const attest_kernel_args *args, bool carveout)
{
    const attest_indexer_params &p = *args->u.indexer.params;
    // TMA coordinates are int32: a pool of more than 2^31 128-byte rows goes by cp.async.
    if constexpr (TMA)
        if (p.num_blocks > INT32_MAX / (kBlockBytes / 128)) return launch<TILES, 4, 1, false, false>(k, args, false);
    auto kernel = fp8_kernel<TILES, STAGES, MINB, TMA, WSMEM>;
    constexpr size_t smem = smem_bytes<TILES, STAGES, WSMEM>();
    // Above 48 KiB a kernel must opt in; a host call, not a stream operation, made once.
    static const bool opted_in =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) ==
            cudaSuccess &&
        (!carveout || cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                           cudaSharedmemCarveoutMaxShared) == cudaSuccess);
    if (!opted_in) return 1;
    CUtensorMap map;
    memset(&map, 0, sizeof map);
    // An empty pool has no live page (every entry indexes it): the map is never read.
    if (TMA && p.num_blocks > 0 && !encode_cache_map(args, &map)) return 1;
    const long long blocks = grid_blocks(kernel, kThreads, smem, p);
    if (blocks <= 0) return 1;
#ifdef ATTEST_IDX_EXPERIMENT
    static bool told;
    if (!told) {
        cudaFuncAttributes fa;
        int per_sm = 0;
        told = cudaFuncGetAttributes(&fa, kernel) == cudaSuccess &&
               cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem) == cudaSuccess;
        if (told)
            fprintf(stderr, "fp8 kernel tiles %d stages %d minb %d tma %d wsmem %d carveout %d: %d regs, %zu local, %zu smem, %d blocks/SM\n",
                    TILES, STAGES, MINB, TMA, WSMEM, carveout, fa.numRegs, fa.localSizeBytes, smem, per_sm);
    }
#endif
    kernel<<<static_cast<unsigned>(blocks), kThreads, smem, cudaStreamPerThread>>>(k, map);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

}  // namespace

int paged_fp8_supports(const attest_kernel_args *args)
{
    const attest_indexer_params *p = args->u.indexer.params;
    const int groups = (p->heads + kTileHeads - 1) / kTileHeads;
    if (p->head_dim != kHeadDim || p->next_n < 1 || p->next_n * groups > kMaxTiles) return 0;
    return paged_wgmma_supports(args);  // the same sm_90 check
}

namespace {

// The configuration at TILES (1 or 2) of variant `v`: 0 the delivered one, 1..7 the ones
// measured against it (ATTEST_IDX_EXPERIMENT builds only; docs/device-runs.md, "TMA").
// Delivered: the page by TMA, 3 stages, the weights in shared memory, the largest carveout,
// and registers for 6 blocks per SM at one B tile (76 registers), 4 at two (113).
template <int TILES>
int launch_variant(const stream_args &k, const attest_kernel_args *args, int v)
{
    constexpr bool multi = TILES > 1;
#ifdef ATTEST_IDX_EXPERIMENT
    switch (v) {
    case 1:  // cp-async: the kernel before TMA (4 stages, 4 blocks per SM by its registers)
        return launch<TILES, 4, 1, false, false>(k, args, false);
    case 2:  // lb5: registers for five blocks per SM, and the carveout
        if constexpr (multi) return launch<TILES, 4, 1, false, false>(k, args, false);
        else return launch<TILES, 4, 5, false, false>(k, args, true);
    case 3:  // tma
        return launch<TILES, 4, 1, true, false>(k, args, true);
    case 4:  // tma-lb5
        if constexpr (multi) return launch<TILES, 4, 1, true, false>(k, args, true);
        else return launch<TILES, 4, 5, true, false>(k, args, true);
    case 5:  // tma-lb5-ws
        if constexpr (multi) return launch<TILES, 4, 4, true, true>(k, args, true);
        else return launch<TILES, 4, 5, true, true>(k, args, true);
    case 6:  // tma-s5-lb4-ws
        if constexpr (multi) return launch<TILES, 5, 3, true, true>(k, args, true);
        else return launch<TILES, 5, 4, true, true>(k, args, true);
    case 7:  // lb5-ws
        if constexpr (multi) return launch<TILES, 4, 4, false, true>(k, args, true);
        else return launch<TILES, 4, 5, false, true>(k, args, true);
    }
#else
    (void)v;
#endif
    if constexpr (multi) return launch<TILES, 3, 4, true, true>(k, args, true);
    else return launch<TILES, 3, 6, true, true>(k, args, true);
}

}  // namespace

namespace {

int run_configured(const attest_kernel_args *args, int variant, bool clean_tail)
{
    const attest_indexer_params &p = *args->u.indexer.params;
    if (p.b <= 0 || p.max_len <= 0) return 0;
    stream_args k = make_args(args, kTileHeads);
    k.clean_tail = clean_tail;
#ifdef ATTEST_IDX_EXPERIMENT
    // 8, 10: two or four B tiles in other configurations, the rest delivered; 1 (cp.async)
    // at four tiles too.
    const int tiles = p.next_n * k.groups;
    if (variant == 8 && tiles == 2) return launch<2, 3, 5, true, true>(k, args, true);
    if (variant == 10 && tiles == 4) return launch<4, 3, 2, true, true>(k, args, true);
    if (variant == 1 && tiles == 4) return launch<4, 4, 1, false, false>(k, args, false);
    if (variant >= 8) variant = 0;
#endif
    switch (p.next_n * k.groups) {
    case 1: return launch_variant<1>(k, args, variant);
    case 2: return launch_variant<2>(k, args, variant);
    // Three tiles (next_n 3): the cp.async kernel, not measured by TMA. Four (128 heads with
    // next_n 2, or next_n 4): 2 stages and 3 blocks per SM (165 registers), measured 1.33x
    // the cp.async kernel's 2 blocks of 4 stages at 128 heads.
    case 3: return launch<3, 4, 1, false, false>(k, args, false);
    case 4: return launch<4, 2, 3, true, true>(k, args, true);
    }
    return 1;
}

}  // namespace

int paged_fp8_run_variant(const attest_kernel_args *args, int variant)
{
    return run_configured(args, variant, true);
}

int paged_fp8_run_noclean(const attest_kernel_args *args) { return run_configured(args, 0, false); }

int paged_fp8_run(const attest_kernel_args *args)
{
#ifdef ATTEST_IDX_EXPERIMENT
    // A measured configuration in place of the delivered one, for test_gpu and `attest run`.
    static const int variant = getenv("ATTEST_FP8_VARIANT") ? atoi(getenv("ATTEST_FP8_VARIANT")) : 0;
    return paged_fp8_run_variant(args, variant);
#else
    return paged_fp8_run_variant(args, 0);
#endif
}
