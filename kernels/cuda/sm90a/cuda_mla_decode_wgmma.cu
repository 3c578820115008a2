// cuda-mla-decode-mma's pass 1 on sm_90a: the split-KV sparse MLA decode with wgmma, for
// mla-v4 (584-byte tokens, K 512 wide) and mla-v32 (656-byte tokens, K 576 wide, V = the 512
// nope dims).
//
// Why: the mma.sync kernel (cuda_mla_decode_mma.cu) streams both operands of every MMA through
// ldmatrix, five barriers per tile, and reached 12% of the H200's bandwidth. wgmma reads both
// operands from shared memory itself, 64 heads x N slots per instruction, issued asynchronously.
//
// One block of two warpgroups per (split, query, 64 heads). Per 64-slot tile:
//   - the raw records arrive by cp.async one tile (mla-v32) or two tiles (mla-v4) ahead, each
//     warp copying contiguous bytes of one or two records (a plan of each slot's offsets goes
//     through shared memory first), the indices of a tile loaded a tile before it is planned;
//   - the 256 threads dequantize the tile once into K (bf16, fp8 x scale in fp32 rounded to
//     nearest even; rope copied), zeros for invalid slots (P is 0 there, and 0 x NaN is not);
//   - S = Q K^T: warpgroup w takes slots 32w .. 32w+31 (m64n32k16, fp32), times sm_scale;
//   - the online softmax: the two warpgroups exchange their row maxima through shared memory,
//     P = exp(s - m) in fp32 (its sum in fp32), P stored as bf16 for both warpgroups;
//   - O = alpha O + P V: warpgroup w takes dims 256w .. 256w+255 (m64n256k16, V read N-major
//     from the same K tile).
// Shared memory holds Q, K and P in the no-swizzle canonical layout: 8x8 core matrices of
// 128 bytes, element (row, d) at (d / 8) * 1024 + (row / 8) * 128 + (row % 8) * 16 +
// (d % 8) * 2 for 64 rows. As a K-major operand (Q, K for S, P) the 8-dim steps are 1024 bytes
// apart (LBO) and the 8-row groups 128 (SBO); as K's N-major operand for P V (N = dims, K =
// slots) the 8-slot groups are 128 bytes apart (LBO) and the 8-dim groups 1024 (SBO).
// The 16-byte stores of the dequantization go 8 slots of one 8-dim chunk at a time (one core
// matrix), its 16-byte reads 8 records apart by an odd multiple of 16 bytes: no bank conflicts.
// The split's partial (O / l and its LSE) goes to the workspace, and the merge kernel of
// cuda_mla_decode_mma.cu combines the splits; or (cuda-mla-decode-mma-fused, up to
// kFusedMaxSplits splits) the last split of each (query, head block) to finish merges them
// itself (an arrival counter): one launch, the other partials read back while still in L2.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "../cuda_mla_mma.h"
#include "mla_wgmma_ops.cuh"

namespace {

using mla_mma::kargs;
using mla_mma::kFusedMaxSplits;
using mla_mma::merge_mode;
using mla_mma::scope;

constexpr int kTok = 64;       // slots per tile
constexpr int kHeads = 64;     // heads per block: wgmma's M
constexpr int kThreads = 256;  // two warpgroups
constexpr int kDv = 512;
constexpr int kChunk = 1024;   // one 8-dim chunk of 64 rows in the canonical layout

template <bool V32>
struct geom;
template <>
struct geom<false> {  // mla-v4: [nope fp8 x 448 | rope bf16 x 64] per token, 8 UE8M0 bytes apart
    static constexpr int dqk = 512, nope = 448, rope_at = 448;
    static constexpr int raw = 592;  // 576 data + 8 scale bytes + 8 pad: 16 x 37, an odd multiple
    static constexpr int stages = 2, copies = 36, items = 36;
};
template <>
struct geom<true> {  // mla-v32: [nope fp8 x 512 | scales fp32 x 4 | rope bf16 x 64] per token
    static constexpr int dqk = 576, nope = 512, rope_at = 528;
    static constexpr int raw = 656;  // 16 x 41
    static constexpr int stages = 1, copies = 41, items = 40;
};

template <bool V32>
struct smem_map {
    using G = geom<V32>;
    static constexpr size_t q = 0;
    static constexpr size_t k = q + static_cast<size_t>(G::dqk / 8) * kChunk;
    static constexpr size_t p = k + static_cast<size_t>(G::dqk / 8) * kChunk;
    static constexpr size_t raw = p + static_cast<size_t>(kTok / 8) * kChunk;
    static constexpr size_t plan = raw + static_cast<size_t>(G::stages) * kTok * G::raw;
    static constexpr size_t vcur = plan + sizeof(long long) * 3 * kTok * 2;
    static constexpr size_t red = vcur + sizeof(int) * kTok;
    static constexpr size_t lsum = red + sizeof(float) * 2 * kHeads;
    // The fused merge: each head's split weights, its maximum, sum and lonely flag, and
    // whether this block is the last of its (query, head block).
    static constexpr size_t wts = lsum + sizeof(float) * 2 * kHeads;
    static constexpr size_t stat = wts + sizeof(float) * kHeads * kFusedMaxSplits;
    static constexpr size_t last = stat + sizeof(float) * 3 * kHeads;
    static constexpr size_t bytes = last + 16;
};
static_assert(smem_map<false>::bytes <= 227 * 1024, "mla-v4 shared memory");
static_assert(smem_map<true>::bytes <= 227 * 1024, "mla-v32 shared memory");

template <bool V32>
__device__ __forceinline__ float item_scale(const uint8_t *rec, int k)
{
    // Item k of a thread covers dims 16 (part + 4k) ..: scale k (64 dims each) in mla-v4,
    // scale k / 2 (128 dims each) in mla-v32.
    if (V32) return *reinterpret_cast<const float *>(rec + 512 + 4 * (k / 2));
    return ue8m0_to_float(rec[576 + k]);
}

// MERGE: merge_mode, as an int. BITS (mla-v4 only): fp8x4_to_bf16x4_bits for the codes.
template <bool V32, int MERGE, bool BITS = false>
__global__ void __launch_bounds__(kThreads, 1) wgmma_partial_kernel(kargs a)
{
    using G = geom<V32>;
    using M = smem_map<V32>;
    extern __shared__ __align__(128) uint8_t smem[];
    uint8_t *const qs = smem + M::q;
    uint8_t *const ks = smem + M::k;
    uint8_t *const ps = smem + M::p;
    uint8_t *const raw = smem + M::raw;
    // The copy plan of a tile, per slot: the byte offsets in the cache of its record and (mla-v4)
    // of its scales, -1 for an invalid slot. A ring of three: a plan is written a barrier before
    // its copies are issued and read again when its tile is dequantized.
    long long *const plan = reinterpret_cast<long long *>(smem + M::plan);  // [3][64][2]
    int *const vcur = reinterpret_cast<int *>(smem + M::vcur);      // the tile in K
    float *const red = reinterpret_cast<float *>(smem + M::red);    // [2][64] row maxima
    float *const lsum = reinterpret_cast<float *>(smem + M::lsum);  // [2][64] row sums

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wg = warp >> 2, g = lane >> 2, q4 = lane & 3;
    const int r0 = (warp & 3) * 16 + g, r1 = r0 + 8;  // the two heads (rows) a thread holds
    const int split = blockIdx.x, query = blockIdx.y, h0 = blockIdx.z * kHeads;
    const int b = query / a.s_q;
    const int which = split < a.sc[0].splits ? 0 : 1;
    const scope &s = a.sc[which];
    const int first = (which == 0 ? split : split - a.sc[0].splits) * a.tps;
    const int last = min(first + a.tps, s.tiles);
    int used = s.count;
    if (s.length) used = min(max(s.length[b], 0), s.count);
    const int64_t pool = static_cast<int64_t>(s.num_pages) * s.page_size;
    const int32_t *list = s.indices + static_cast<size_t>(query) * s.count;

    // Q of the block's heads into the canonical layout (zero rows past h_q: their scores are
    // computed, never stored). 8 consecutive threads take 8 heads of one chunk (one core
    // matrix); a warp reads 64 contiguous bytes of each of its 8 rows.
    for (int e = tid; e < kHeads * (G::dqk / 8); e += kThreads) {
        const int rest = e >> 3, ck = rest % (G::dqk / 8);
        const int h = (rest / (G::dqk / 8)) * 8 + (e & 7);
        uint8_t *dst = qs + ck * kChunk + (h >> 3) * 128 + (h & 7) * 16;
        if (h0 + h < a.h_q)
            cp_async16(dst, a.q + (static_cast<size_t>(query) * a.h_q + h0 + h) * G::dqk + ck * 8);
        else
            *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
    }

    // Threads 0-63 plan slot tid of each tile; four threads per slot, (tok, part), dequantize
    // its 16-byte pieces part, part + 4, ...
    const int tok = tid & 63, part = tid >> 6;
    auto index_of = [&](int tile) -> int32_t {
        const int slot = tile * kTok + tid;
        return slot < s.count ? __ldg(list + slot) : -1;
    };
    auto plan_slot = [&](int tile, int32_t idx, int r) {
        const int slot = tile * kTok + tid;
        long long d = -1, sc = -1;
        // Only -1 is invalid; an index outside the pool never reaches a load.
        if (slot < used && idx >= 0 && idx < pool) {
            const int64_t page = idx / s.page_size, pslot = idx % s.page_size;
            d = page * s.page_stride + pslot * (V32 ? 656 : 576);
            sc = page * s.page_stride + static_cast<int64_t>(s.page_size) * 576 + pslot * 8;
        }
        plan[(r * kTok + tid) * 2] = d;
        plan[(r * kTok + tid) * 2 + 1] = sc;
    };
    // The copies of the tile planned in ring entry r (or none past the split) into stage buf:
    // consecutive threads take consecutive 16-byte pieces of a record, so a warp reads 512
    // contiguous bytes of at most two records.
    auto issue = [&](bool any_tile, int r, int buf) {
        if (any_tile) {
            uint8_t *stage = raw + buf * kTok * G::raw;
            constexpr int kItems = kTok * G::copies;
#pragma unroll
            for (int k = 0; k < (kItems + kThreads - 1) / kThreads; k++) {
                const int j = tid + k * kThreads;
                if (j < kItems) {
                    const int t = j / G::copies, c = j % G::copies;
                    const long long d = plan[(r * kTok + t) * 2];
                    if (d >= 0) cp_async16(stage + t * G::raw + c * 16, s.cache + d + c * 16);
                }
            }
            if (!V32 && tid < kTok) {
                const long long sc = plan[(r * kTok + tid) * 2 + 1];
                if (sc >= 0) cp_async8(stage + tid * G::raw + 576, s.cache + sc);
            }
        }
        cp_async_commit();
    };
    // Threads 0-63: the index of slot tid of the next tile to plan, loaded a tile ahead.
    int32_t next_idx = -1;
    if (tid < kTok) {
        for (int k = 0; k < G::stages; k++)
            if (first + k < last) plan_slot(first + k, index_of(first + k), k);
        if (first + G::stages < last) next_idx = index_of(first + G::stages);
    }

    float o[128];
#pragma unroll
    for (int j = 0; j < 128; j++) o[j] = 0.0f;
    // The softmax state of rows r0 and r1, alike in the 4 threads of a quad and in both
    // warpgroups (each sums its own slots; the sums are added at the end).
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    int any = 0;

    const uint64_t dq = smem_desc(qs, kChunk, 128);
    const uint64_t dk = smem_desc(ks + wg * 512, kChunk, 128);       // slots 32 wg ..
    const uint64_t dp = smem_desc(ps, kChunk, 128);
    const uint64_t dv = smem_desc(ks + wg * 32 * kChunk, 128, kChunk);  // dims 256 wg ..

    __syncthreads();  // the first plans
    for (int k = 0; k < G::stages; k++) issue(first + k < last, k, k);
    for (int tile = first; tile < last; tile++) {
        const int i = tile - first, buf = G::stages == 2 ? (i & 1) : 0;
        if (G::stages == 2) cp_async_wait<1>();
        else cp_async_wait<0>();
        // This tile (and Q) landed for every thread; every MMA of the last tile has completed
        // (each warpgroup waited on its own), so K and P may be rewritten.
        __syncthreads();
        {
            const uint8_t *rec = raw + (buf * kTok + tok) * G::raw;
            const int ok = plan[((i % 3) * kTok + tok) * 2] >= 0;
            if (part == 0) vcur[tok] = ok;
            any |= ok;
            uint8_t *kt = ks + (tok >> 3) * 128 + (tok & 7) * 16;
            constexpr int kNope = G::nope / 16;  // nope items: 16 fp8 -> two chunks
#pragma unroll
            for (int k = 0; k < G::items / 4; k++) {
                const int c = part + 4 * k;
                if (c < kNope) {
                    uint4 lo = make_uint4(0, 0, 0, 0), hi = lo;
                    if (BITS && !V32 && ok && !has_fp8_nan(*reinterpret_cast<const uint4 *>(rec + c * 16))) {
                        const uint4 v = *reinterpret_cast<const uint4 *>(rec + c * 16);
                        const __nv_bfloat162 sb2 = ue8m0_to_bf16x2(rec[576 + k]);
                        fp8x4_to_bf16x4_bits(v.x, sb2, lo.x, lo.y);
                        fp8x4_to_bf16x4_bits(v.y, sb2, lo.z, lo.w);
                        fp8x4_to_bf16x4_bits(v.z, sb2, hi.x, hi.y);
                        fp8x4_to_bf16x4_bits(v.w, sb2, hi.z, hi.w);
                    } else if (ok) {
                        const float scale = item_scale<V32>(rec, k);
                        const uint4 v = *reinterpret_cast<const uint4 *>(rec + c * 16);
                        lo.x = fp8x2_to_bf16x2(v.x, scale);
                        lo.y = fp8x2_to_bf16x2(v.x >> 16, scale);
                        lo.z = fp8x2_to_bf16x2(v.y, scale);
                        lo.w = fp8x2_to_bf16x2(v.y >> 16, scale);
                        hi.x = fp8x2_to_bf16x2(v.z, scale);
                        hi.y = fp8x2_to_bf16x2(v.z >> 16, scale);
                        hi.z = fp8x2_to_bf16x2(v.w, scale);
                        hi.w = fp8x2_to_bf16x2(v.w >> 16, scale);
                    }
                    *reinterpret_cast<uint4 *>(kt + (2 * c) * kChunk) = lo;
                    *reinterpret_cast<uint4 *>(kt + (2 * c + 1) * kChunk) = hi;
                } else {
                    const int r = c - kNope;  // rope: 8 bf16 per item, copied
                    uint4 v = make_uint4(0, 0, 0, 0);
                    if (ok) v = *reinterpret_cast<const uint4 *>(rec + G::rope_at + r * 16);
                    *reinterpret_cast<uint4 *>(kt + (G::nope / 8 + r) * kChunk) = v;
                }
            }
        }
        const bool ahead = tile + G::stages < last;
        if (tid < kTok && ahead) {
            plan_slot(tile + G::stages, next_idx, (i + G::stages) % 3);
            next_idx = tile + G::stages + 1 < last ? index_of(tile + G::stages + 1) : -1;
        }
        fence_async_shared();  // the generic-proxy stores (K, Q's zero rows), visible to wgmma
        __syncthreads();
        issue(ahead, (i + G::stages) % 3, buf);  // this stage is free again; overlaps the MMAs

        // S = Q K^T for slots 32 wg .. 32 wg + 31.
        float sc[16];
#pragma unroll
        for (int j = 0; j < 16; j++) sc[j] = 0.0f;
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < G::dqk / 16; k++)
            wgmma_m64n32k16<0>(sc, dq + k * (2 * kChunk >> 4), dk + k * (2 * kChunk >> 4), k > 0);
        wgmma_commit();
        wgmma_wait();

        // sc[4j + e]: row r0, slot 32 wg + 8j + 2 q4 + e; sc[4j + 2 + e]: row r1. The maximum
        // skips NaN scores (a NaN still makes P, l and the output NaN, as it must).
        int valid[8];
        float mt0 = -INFINITY, mt1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                valid[2 * j + e] = vcur[wg * 32 + 8 * j + 2 * q4 + e];
                sc[4 * j + e] *= a.sm_scale;
                sc[4 * j + 2 + e] *= a.sm_scale;
                if (valid[2 * j + e]) {
                    mt0 = fmaxf(mt0, sc[4 * j + e]);
                    mt1 = fmaxf(mt1, sc[4 * j + 2 + e]);
                }
            }
        mt0 = fmaxf(mt0, __shfl_xor_sync(0xffffffffu, mt0, 1));
        mt0 = fmaxf(mt0, __shfl_xor_sync(0xffffffffu, mt0, 2));
        mt1 = fmaxf(mt1, __shfl_xor_sync(0xffffffffu, mt1, 1));
        mt1 = fmaxf(mt1, __shfl_xor_sync(0xffffffffu, mt1, 2));
        if (q4 == 0) {
            red[wg * kHeads + r0] = mt0;
            red[wg * kHeads + r1] = mt1;
        }
        __syncthreads();
        const float n0 = fmaxf(m0, fmaxf(red[r0], red[kHeads + r0]));
        const float n1 = fmaxf(m1, fmaxf(red[r1], red[kHeads + r1]));
        // Equal maxima (both -inf before any valid slot) rescale by 1, not by exp(NaN).
        const float alpha0 = n0 == m0 ? 1.0f : expf(m0 - n0);
        const float alpha1 = n1 == m1 ? 1.0f : expf(m1 - n1);
        float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float p00 = valid[2 * j] ? expf(sc[4 * j] - n0) : 0.0f;
            const float p01 = valid[2 * j + 1] ? expf(sc[4 * j + 1] - n0) : 0.0f;
            const float p10 = valid[2 * j] ? expf(sc[4 * j + 2] - n1) : 0.0f;
            const float p11 = valid[2 * j + 1] ? expf(sc[4 * j + 3] - n1) : 0.0f;
            sum0 += p00;
            sum0 += p01;
            sum1 += p10;
            sum1 += p11;
            // P (row, slot t = 32 wg + 8j + 2 q4): chunk t / 8 = 4 wg + j, word q4 of the row.
            uint8_t *pc = ps + (4 * wg + j) * kChunk + q4 * 4;
            const __nv_bfloat162 b0 = __floats2bfloat162_rn(p00, p01);
            const __nv_bfloat162 b1 = __floats2bfloat162_rn(p10, p11);
            *reinterpret_cast<__nv_bfloat162 *>(pc + (r0 >> 3) * 128 + (r0 & 7) * 16) = b0;
            *reinterpret_cast<__nv_bfloat162 *>(pc + (r1 >> 3) * 128 + (r1 & 7) * 16) = b1;
        }
        sum0 += __shfl_xor_sync(0xffffffffu, sum0, 1);
        sum0 += __shfl_xor_sync(0xffffffffu, sum0, 2);
        sum1 += __shfl_xor_sync(0xffffffffu, sum1, 1);
        sum1 += __shfl_xor_sync(0xffffffffu, sum1, 2);
        l0 = l0 * alpha0 + sum0;
        l1 = l1 * alpha1 + sum1;
        m0 = n0;
        m1 = n1;
        fence_async_shared();  // P, visible to both warpgroups' wgmma
        __syncthreads();

        // O = alpha O + P V for dims 256 wg .. 256 wg + 255: o[4j + e] row r0, o[4j + 2 + e]
        // row r1, dim 256 wg + 8j + 2 q4 + e.
#pragma unroll
        for (int j = 0; j < 32; j++) {
            o[4 * j] *= alpha0;
            o[4 * j + 1] *= alpha0;
            o[4 * j + 2] *= alpha1;
            o[4 * j + 3] *= alpha1;
        }
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < kTok / 16; k++)
            wgmma_m64n256k16<1>(o, dp + k * (2 * kChunk >> 4), dv + k * (256 >> 4), 1);
        wgmma_commit();
        wgmma_wait();
    }

    // The split's partial: O / l and lse; no valid slot: lse = -inf and zeros (the guard).
    any = __syncthreads_or(any);
    if (q4 == 0) {
        lsum[wg * kHeads + r0] = l0;
        lsum[wg * kHeads + r1] = l1;
    }
    __syncthreads();
    const float lt0 = lsum[r0] + lsum[kHeads + r0], lt1 = lsum[r1] + lsum[kHeads + r1];
    const bool empty = any == 0;
    const size_t qh0 = static_cast<size_t>(query) * a.h_q + h0;
    if (wg == 0 && q4 == 0) {
        if (h0 + r0 < a.h_q) a.part_lse[(qh0 + r0) * a.splits + split] = empty ? -INFINITY : m0 + logf(lt0);
        if (h0 + r1 < a.h_q) a.part_lse[(qh0 + r1) * a.splits + split] = empty ? -INFINITY : m1 + logf(lt1);
    }
    const float inv0 = empty ? 0.0f : 1.0f / lt0, inv1 = empty ? 0.0f : 1.0f / lt1;
    float *dst0 = a.part_out + ((qh0 + r0) * a.splits + split) * kDv + wg * 256 + q4 * 2;
    float *dst1 = a.part_out + ((qh0 + r1) * a.splits + split) * kDv + wg * 256 + q4 * 2;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        if (h0 + r0 < a.h_q)
            *reinterpret_cast<float2 *>(dst0 + j * 8) = make_float2(o[4 * j] * inv0, o[4 * j + 1] * inv0);
        if (h0 + r1 < a.h_q)
            *reinterpret_cast<float2 *>(dst1 + j * 8) = make_float2(o[4 * j + 2] * inv1, o[4 * j + 3] * inv1);
    }
    if (MERGE == static_cast<int>(merge_mode::two_pass)) return;

    // The fused merge (threadFenceReduction's pattern): every split publishes its partial and
    // arrives; the last to arrive merges them all, in split order whichever block that is, so
    // the output does not depend on which finished last (and equals the merge kernel's bits).
    // No block waits for another: nothing assumes the splits run at the same time.
    int *const is_last = reinterpret_cast<int *>(smem + M::last);
    unsigned int *const counter = a.arrive + blockIdx.y * gridDim.z + blockIdx.z;
    __threadfence();
    __syncthreads();
    if (tid == 0) *is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!*is_last) return;
    __threadfence();
    if (tid == 0) *counter = 0;  // ready for the next launch (and a graph's next replay)

    // Per head: the splits' maximum, sum of weights and lonely flag, as the merge kernel
    // computes them (lanes past the splits hold -inf and add 0). Warpgroup 1 computes them,
    // 8 lanes per head (split t = lane & 7), 4 heads per step; warpgroup 0 waits.
    float *const wts = reinterpret_cast<float *>(smem + M::wts);      // [64][8], -1: skipped
    float *const st_max = reinterpret_cast<float *>(smem + M::stat);  // [64]
    float *const st_denom = st_max + kHeads;                           // [64]
    int *const st_lonely = reinterpret_cast<int *>(st_denom + kHeads); // [64]
    if (wg == 1) {
        const int t = lane & 7;
        float v[4];
#pragma unroll
        for (int it = 0; it < 4; it++) {
            const int hh = (warp - 4) * 16 + it * 4 + (lane >> 3);
            v[it] = t < a.splits && h0 + hh < a.h_q ? __ldcg(a.part_lse + (qh0 + hh) * a.splits + t) : -INFINITY;
        }
#pragma unroll
        for (int it = 0; it < 4; it++) {
            const int hh = (warp - 4) * 16 + it * 4 + (lane >> 3);
            float m = -INFINITY;
            int lonely = 1;
            if (t < a.splits) {
                if (v[it] != -INFINITY) lonely = 0;  // NaN counts: that split had valid slots
                if (v[it] > m) m = v[it];
            }
            for (int off = 4; off > 0; off >>= 1) {
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
                lonely &= __shfl_xor_sync(0xffffffffu, lonely, off);
            }
            float denom = 0.0f;
            if (t < a.splits && v[it] != -INFINITY) denom += expf(v[it] - m);
            for (int off = 4; off > 0; off >>= 1) denom += __shfl_xor_sync(0xffffffffu, denom, off);
            if (t < a.splits) wts[hh * kFusedMaxSplits + t] = v[it] == -INFINITY ? -1.0f : expf(v[it] - m);
            if (t == 0) {
                st_max[hh] = m;
                st_denom[hh] = denom;
                st_lonely[hh] = lonely;
            }
        }
    }
    // The race variant: warpgroup 0 reads the statistics before warpgroup 1 stores them.
    if (MERGE != static_cast<int>(merge_mode::fused_race)) __syncthreads();

    // Rows r0 and r1, dims 256 wg + 8j + 2 q4 + e: sum w_t x partial_t over the splits in
    // order (this block's own partial from its registers), the sink, bf16.
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int r = half ? r1 : r0;
        if (h0 + r >= a.h_q) continue;
        const size_t qh = qh0 + r;
        uint16_t *const out = a.out + qh * kDv + wg * 256 + q4 * 2;
        if (st_lonely[r]) {  // no valid slot at all: FlashMLA's lonely convention
#pragma unroll
            for (int j = 0; j < 32; j++) *reinterpret_cast<uint32_t *>(out + j * 8) = 0;
            if (wg == 0 && q4 == 0) a.lse[qh] = INFINITY;
            continue;
        }
        const float m = st_max[r], denom = st_denom[r];
        const float total = m + logf(denom);
        float factor = 1.0f / denom;
        if (a.sink) factor /= 1.0f + expf(a.sink[h0 + r] - total);
        const float inv = half ? inv1 : inv0;
        const float *const po = a.part_out + qh * a.splits * kDv + wg * 256 + q4 * 2;
        // A quarter of the row's 64 values at a time: 16 accumulators and one batch of loads
        // per split.
#pragma unroll
        for (int jc = 0; jc < 4; jc++) {
            float acc[16];
#pragma unroll
            for (int e = 0; e < 16; e++) acc[e] = 0.0f;
            for (int t = 0; t < a.splits; t++) {
                const float w = wts[r * kFusedMaxSplits + t];
                if (w < 0.0f) continue;  // lse -inf: no valid slot in that split (NaN stays)
                float2 x[8];
                if (t == split) {
#pragma unroll
                    for (int jj = 0; jj < 8; jj++) {
                        const int j = 8 * jc + jj;
                        x[jj] = make_float2(o[4 * j + 2 * half] * inv, o[4 * j + 2 * half + 1] * inv);
                    }
                } else {
#pragma unroll
                    for (int jj = 0; jj < 8; jj++)
                        x[jj] = __ldcg(reinterpret_cast<const float2 *>(po + t * kDv + (8 * jc + jj) * 8));
                }
#pragma unroll
                for (int jj = 0; jj < 8; jj++) {
                    acc[2 * jj] = fmaf(w, x[jj].x, acc[2 * jj]);
                    acc[2 * jj + 1] = fmaf(w, x[jj].y, acc[2 * jj + 1]);
                }
            }
#pragma unroll
            for (int jj = 0; jj < 8; jj++) {
                const __nv_bfloat162 v = __floats2bfloat162_rn(acc[2 * jj] * factor, acc[2 * jj + 1] * factor);
                *reinterpret_cast<__nv_bfloat162 *>(out + (8 * jc + jj) * 8) = v;
            }
        }
        if (wg == 0 && q4 == 0) a.lse[qh] = total;
    }
}

template <bool V32, int MERGE, bool BITS = false>
int launch(const kargs &a, dim3 grid)
{
    // The two-pass kernel asks for no more than it uses.
    constexpr size_t bytes = MERGE == 0 ? smem_map<V32>::wts : smem_map<V32>::bytes;
    // Above 48 KiB a kernel must opt in; a host call, not a stream operation, made once.
    static const bool opted_in =
        cudaFuncSetAttribute(wgmma_partial_kernel<V32, MERGE, BITS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(bytes)) == cudaSuccess;
    if (!opted_in) return 1;
    wgmma_partial_kernel<V32, MERGE, BITS><<<grid, kThreads, bytes, cudaStreamPerThread>>>(a);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

template <bool V32>
int launch_mode(const kargs &a, dim3 grid, merge_mode merge)
{
    switch (merge) {
    case merge_mode::two_pass: return launch<V32, 0>(a, grid);
    case merge_mode::fused: return launch<V32, 1>(a, grid);
    case merge_mode::fused_race: return launch<V32, 2>(a, grid);
    }
    return 1;
}

}  // namespace

namespace mla_mma {

bool wgmma_available()
{
    static const bool sm90 = [] {
        int device = 0, major = 0, minor = 0;
        return cudaGetDevice(&device) == cudaSuccess &&
               cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
               cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
               major == 9 && minor == 0;
    }();
    return sm90;
}

int wgmma_partial_launch(const kargs &a, bool v32, dim3 grid, merge_mode merge, bool bits)
{
    if (merge != merge_mode::two_pass && (a.arrive == nullptr || a.splits > kFusedMaxSplits)) return 1;
    if (bits && !v32) return merge == merge_mode::two_pass ? launch<false, 0, true>(a, grid) : 1;
    return v32 ? launch_mode<true>(a, grid, merge) : launch_mode<false>(a, grid, merge);
}

}  // namespace mla_mma
