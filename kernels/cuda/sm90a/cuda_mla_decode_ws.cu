// cuda-mla-decode-mma-ws's pass 1 on sm_90a: cuda_mla_decode_wgmma.cu's split-KV sparse MLA
// decode for mla-v4 with the work split by warpgroup (warp specialization).
//
// Why: the two-warpgroup kernel runs its phases in turn in one block per SM (dequantization,
// S, softmax, P V, with barriers between), so the SM is idle on each phase's latency: 19% of
// the H200's bandwidth. Here a third warpgroup, the producer, copies and dequantizes tile i + 1
// into a second K buffer while the two consumer warpgroups compute tile i.
//
// One block of three warpgroups per (split, query, 64 heads):
//   - the consumers (warpgroups 0 and 1, threads 0-255) are the other kernel's two warpgroups
//     without its dequantization: Q into shared memory once, then per tile S = Q K^T (32 slots
//     each, m64n32k16), the online softmax (row maxima exchanged through shared memory), P in
//     bf16, O = alpha O + P V (256 dims each, m64n256k16), and the partial at the end; the same
//     instructions on the same operands in the same order, so the same bits;
//   - the producer (warpgroup 2, threads 256-383): two neighbouring threads per slot, each
//     copying its own 18 16-byte pieces of the slot's record by cp.async (the pair takes one
//     32-byte sector per instruction), 8 pieces in flight per thread across tile boundaries;
//     the 14 fp8 pieces into a private ring of 9, so no barrier among producer threads is
//     needed, the 4 rope pieces straight into K buffer (tile & 1); the UE8M0 scales with a
//     tile's first piece. Each fp8 piece is dequantized as the other kernel does it (fp8 x
//     scale in fp32, rounded once to bf16; zeros for an invalid slot) into K buffer (tile & 1).
// The handoff is by named barriers of all 384 threads: FULL[j] (the producer arrives after its
// stores to buffer j and the proxy fence; the consumers wait), EMPTY[j] (the consumers arrive
// when their wgmma reading buffer j has completed, only where a later tile will use j; the
// producer waits before it writes j again). Shared memory: Q 64 KB, two K buffers 128 KB, P 8
// KB, the ring 18 KB, about 222 KB in all; mla-v32's 576-wide K does not fit twice beside Q,
// so mla-v32 runs the two-warpgroup kernel. Registers: the producer gives its share to the
// consumers (setmaxnreg), whose O takes 128 per thread. On the H200 the consumers wait at
// FULL for 5% of their stall samples and on their own wgmma for ~20% (docs/notes.md, issue
// 12): the producer keeps up since its copies take whole sectors; the broken variant (ws_variant::no_full_wait) lets the consumers arrive at
// FULL without waiting.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "../cuda_mla_mma.h"
#include "mla_wgmma_ops.cuh"

namespace {

using mla_mma::kargs;
using mla_mma::scope;
using mla_mma::ws_variant;

constexpr int kTok = 64;           // slots per tile
constexpr int kHeads = 64;         // heads per block: wgmma's M
constexpr int kConsumers = 256;    // two warpgroups
constexpr int kProducers = 128;    // one warpgroup
constexpr int kThreads = kConsumers + kProducers;
constexpr int kDv = 512;
constexpr int kChunk = 1024;       // one 8-dim chunk of 64 rows in the canonical layout
constexpr int kQkChunks = 64;      // K 512 wide
constexpr int kNopeItems = 28;     // 448 fp8 dims in 16-byte pieces
constexpr int kRecord = 576;       // data bytes of a record; the scales sit apart, 8 per slot
constexpr int kPieces = 18;        // 16-byte pieces of a record per producer thread
constexpr int kAhead = 8;          // pieces in flight per producer thread
constexpr int kRing = kAhead + 1;  // divides kPieces: every piece's ring slot is a constant
static_assert(kPieces % kRing == 0, "ring slots by piece");
// Register shares (multiples of 8; 128 x 72 + 256 x 216 = 64,512 of the SM's 65,536): the
// producer spills below 72 (its 64-bit offsets), the consumers need 216.
constexpr int kProducerRegs = 72, kConsumerRegs = 216;
// Named barriers; 0 is __syncthreads.
constexpr int kBarConsumers = 1, kBarFull = 2, kBarEmpty = 4;  // FULL, EMPTY: + buffer

struct smem_map {
    static constexpr size_t q = 0;
    static constexpr size_t k = q + static_cast<size_t>(kQkChunks) * kChunk;        // [2]
    static constexpr size_t p = k + 2 * static_cast<size_t>(kQkChunks) * kChunk;
    static constexpr size_t ring = p + static_cast<size_t>(kTok / 8) * kChunk;      // [9][128] x 16
    static constexpr size_t scales = ring + static_cast<size_t>(kRing) * kProducers * 16;  // [2][128] x 8
    static constexpr size_t vcur = scales + 2 * kProducers * 8;                     // [2][64] int
    static constexpr size_t red = vcur + sizeof(int) * 2 * kTok;                    // [2][64] float
    static constexpr size_t lsum = red + sizeof(float) * 2 * kHeads;                // [2][64] float
    static constexpr size_t bytes = lsum + sizeof(float) * 2 * kHeads;
};
static_assert(smem_map::bytes <= 227 * 1024, "ws shared memory");

__device__ __forceinline__ void bar_sync(int id, int count)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_arrive(int id, int count)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Whether any of the `count` threads reaching named barrier `id` passes a nonzero `pred`.
__device__ __forceinline__ int bar_red_or(int id, int count, int pred)
{
    int r;
    asm volatile("{\n.reg .pred p, q;\nsetp.ne.b32 p, %1, 0;\nbar.red.or.pred q, %2, %3, p;\nselp.b32 %0, 1, 0, q;\n}\n"
                 : "=r"(r)
                 : "r"(pred), "r"(id), "r"(count)
                 : "memory");
    return r;
}

// A slot's record and scale offsets in the cache, -1 when the slot is invalid (past the split,
// past topk_length, index -1 or outside the pool: only -1 is invalid, no other reaches a load).
struct where {
    long long rec, scl;
};

template <int VARIANT>
__global__ void __launch_bounds__(kThreads, 1) ws_partial_kernel(kargs a)
{
    using M = smem_map;
    extern __shared__ __align__(128) uint8_t smem[];
    uint8_t *const qs = smem + M::q;
    uint8_t *const ks = smem + M::k;
    uint8_t *const ps = smem + M::p;
    int *const vcur = reinterpret_cast<int *>(smem + M::vcur);      // [2][64] valid slots
    float *const red = reinterpret_cast<float *>(smem + M::red);    // [2][64] row maxima
    float *const lsum = reinterpret_cast<float *>(smem + M::lsum);  // [2][64] row sums

    const int tid = threadIdx.x;
    const int split = blockIdx.x, query = blockIdx.y, h0 = blockIdx.z * kHeads;
    const int which = split < a.sc[0].splits ? 0 : 1;
    const scope &s = a.sc[which];
    const int first = (which == 0 ? split : split - a.sc[0].splits) * a.tps;
    const int ntiles = min(first + a.tps, s.tiles) - first;

    if (tid >= kConsumers) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
        const int pt = tid - kConsumers, tok = pt >> 1, part = pt & 1;
        const int b = query / a.s_q;
        int used = s.count;
        if (s.length) used = min(max(s.length[b], 0), s.count);
        const int64_t pool = static_cast<int64_t>(s.num_pages) * s.page_size;
        const int32_t *const list = s.indices + static_cast<size_t>(query) * s.count;
        uint8_t *const ring = smem + M::ring + pt * 16;
        uint8_t *const scales = smem + M::scales + pt * 8;
        auto index_of = [&](int i) -> int32_t {
            const int slot = (first + i) * kTok + tok;
            return i < ntiles && slot < s.count ? __ldg(list + slot) : -1;
        };
        auto where_of = [&](int i, int32_t idx) -> where {
            const int slot = (first + i) * kTok + tok;
            where w = {-1, -1};
            if (i < ntiles && slot < used && idx >= 0 && idx < pool) {
                const int64_t page = idx / s.page_size, pslot = idx % s.page_size;
                w.rec = page * s.page_stride + pslot * kRecord;
                w.scl = page * s.page_stride + static_cast<int64_t>(s.page_size) * kRecord + pslot * 8;
            }
            return w;
        };
        // Piece k of a slot: bytes 16 c .. of its record, c = 2 k + part: the slot's two threads
        // are neighbours in a warp and take the two halves of one 32-byte sector in the same
        // instruction (one sector request where alternate sectors per thread made two: L2
        // throughput 55.6% -> 43.4% in ncu). Pieces 0-13 (c < 28) are the fp8 dims, through the
        // ring; 14-17 the rope, copied by cp.async straight into its place in K buffer (i & 1):
        // they are issued during tile i itself (8 pieces ahead), after its EMPTY wait at piece
        // 0. The scales come with piece 0.
        auto issue = [&](const where &w, int i, int k) {
            if (w.rec >= 0) {
                const int c = 2 * k + part;
                if (k >= kNopeItems / 2)
                    cp_async16(ks + (i & 1) * kQkChunks * kChunk + (tok >> 3) * 128 + (tok & 7) * 16 +
                                   (kNopeItems + c) * kChunk,
                               s.cache + w.rec + c * 16);
                else
                    cp_async16(ring + (k % kRing) * kProducers * 16, s.cache + w.rec + c * 16);
                if (k == 0) cp_async8(scales + (i & 1) * kProducers * 8, s.cache + w.scl);
            }
            cp_async_commit();  // an empty group past the split keeps the count per piece
        };

        // Tile i's slot here, tile i + 1's (its pieces are issued during tile i) and tile
        // i + 2's index, loaded a tile before it is needed.
        where cur = where_of(0, index_of(0));
        where nxt = where_of(1, index_of(1));
        int32_t idx2 = index_of(2);
#pragma unroll
        for (int k = 0; k < kAhead; k++) issue(cur, 0, k);
        for (int i = 0; i < ntiles; i++) {
            const int j = i & 1;
            const bool ok = cur.rec >= 0;
            uint8_t *const kt = ks + j * kQkChunks * kChunk + (tok >> 3) * 128 + (tok & 7) * 16;
            uint2 sc8 = make_uint2(0, 0);
#pragma unroll
            for (int k = 0; k < kPieces; k++) {
                if (k + kAhead < kPieces) issue(cur, i, k + kAhead);
                else issue(nxt, i + 1, k + kAhead - kPieces);
                cp_async_wait<kAhead>();  // piece k of this tile (and, with piece 0, the scales)
                if (k == 0) {
                    // The consumers are done with buffer j (tile i - 2) before it is written.
                    if (i >= 2) bar_sync(kBarEmpty + j, kThreads);
                    if (ok) sc8 = *reinterpret_cast<const uint2 *>(scales + (i & 1) * kProducers * 8);
                }
                const int c = 2 * k + part;
                uint4 v = make_uint4(0, 0, 0, 0);
                if (k >= kNopeItems / 2) {
                    // rope, chunk 56 + (c - 28): landed in place by its cp.async; zeros for an
                    // invalid slot
                    if (!ok) *reinterpret_cast<uint4 *>(kt + (kNopeItems + c) * kChunk) = v;
                    continue;
                }
                if (ok) v = *reinterpret_cast<const uint4 *>(ring + (k % kRing) * kProducers * 16);
                {
                    uint4 lo = make_uint4(0, 0, 0, 0), hi = lo;
                    if (ok) {
                        const int m = k >> 1;  // the scale of dims 64 m ..
                        const uint32_t byte = ((m < 4 ? sc8.x : sc8.y) >> (8 * (m & 3))) & 0xFF;
                        const float scale = ue8m0_to_float(byte);
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
                }
            }
            if (part == 0) vcur[j * kTok + tok] = ok;
            fence_async_shared();  // the generic-proxy stores to buffer j, visible to wgmma
            bar_arrive(kBarFull + j, kThreads);
            cur = nxt;
            nxt = where_of(i + 2, idx2);
            idx2 = index_of(i + 3);
        }
        cp_async_wait<0>();  // nothing in flight at exit (the groups past the split are empty)
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
        const int lane = tid & 31, warp = tid >> 5;
        const int wg = warp >> 2, q4 = lane & 3;
        const int r0 = (warp & 3) * 16 + (lane >> 2), r1 = r0 + 8;  // the two heads a thread holds

        // Q of the block's heads into the canonical layout, as the two-warpgroup kernel does.
        for (int e = tid; e < kHeads * kQkChunks; e += kConsumers) {
            const int rest = e >> 3, ck = rest % kQkChunks;
            const int h = (rest / kQkChunks) * 8 + (e & 7);
            uint8_t *dst = qs + ck * kChunk + (h >> 3) * 128 + (h & 7) * 16;
            if (h0 + h < a.h_q)
                cp_async16(dst, a.q + (static_cast<size_t>(query) * a.h_q + h0 + h) * (kQkChunks * 8) + ck * 8);
            else
                *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
        }
        cp_async_commit();
        cp_async_wait<0>();
        fence_async_shared();
        bar_sync(kBarConsumers, kConsumers);

        float o[128];
#pragma unroll
        for (int jj = 0; jj < 128; jj++) o[jj] = 0.0f;
        float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
        int any = 0;  // a valid slot among this thread's 8 of each tile (all 64 across the consumers)
        const uint64_t dq = smem_desc(qs, kChunk, 128);
        const uint64_t dk0 = smem_desc(ks + wg * 512, kChunk, 128);            // slots 32 wg ..
        const uint64_t dp = smem_desc(ps, kChunk, 128);
        const uint64_t dv0 = smem_desc(ks + wg * 32 * kChunk, 128, kChunk);  // dims 256 wg ..
        constexpr uint64_t kBufStep = static_cast<uint64_t>(kQkChunks) * kChunk >> 4;

        for (int i = 0; i < ntiles; i++) {
            const int j = i & 1;
            const uint64_t dk = dk0 + j * kBufStep, dv = dv0 + j * kBufStep;
            // Buffer j holds tile i. The broken variant arrives without waiting (bar.arrive for
            // bar.sync): the arrivals still add up, so nothing hangs, but S reads K unwritten.
            if (VARIANT == static_cast<int>(ws_variant::no_full_wait)) bar_arrive(kBarFull + j, kThreads);
            else bar_sync(kBarFull + j, kThreads);

            float sc[16];
#pragma unroll
            for (int jj = 0; jj < 16; jj++) sc[jj] = 0.0f;
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < kQkChunks / 2; k++)
                wgmma_m64n32k16<0>(sc, dq + k * (2 * kChunk >> 4), dk + k * (2 * kChunk >> 4), k > 0);
            wgmma_commit();
            wgmma_wait();

            int valid[8];
            float mt0 = -INFINITY, mt1 = -INFINITY;
#pragma unroll
            for (int jj = 0; jj < 4; jj++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    valid[2 * jj + e] = vcur[j * kTok + wg * 32 + 8 * jj + 2 * q4 + e];
                    any |= valid[2 * jj + e];
                    sc[4 * jj + e] *= a.sm_scale;
                    sc[4 * jj + 2 + e] *= a.sm_scale;
                    if (valid[2 * jj + e]) {
                        mt0 = fmaxf(mt0, sc[4 * jj + e]);
                        mt1 = fmaxf(mt1, sc[4 * jj + 2 + e]);
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
            // Also: both warpgroups' P V of tile i - 1 have completed, so P may be rewritten.
            bar_sync(kBarConsumers, kConsumers);
            const float n0 = fmaxf(m0, fmaxf(red[r0], red[kHeads + r0]));
            const float n1 = fmaxf(m1, fmaxf(red[r1], red[kHeads + r1]));
            const float alpha0 = n0 == m0 ? 1.0f : expf(m0 - n0);
            const float alpha1 = n1 == m1 ? 1.0f : expf(m1 - n1);
            float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
            for (int jj = 0; jj < 4; jj++) {
                const float p00 = valid[2 * jj] ? expf(sc[4 * jj] - n0) : 0.0f;
                const float p01 = valid[2 * jj + 1] ? expf(sc[4 * jj + 1] - n0) : 0.0f;
                const float p10 = valid[2 * jj] ? expf(sc[4 * jj + 2] - n1) : 0.0f;
                const float p11 = valid[2 * jj + 1] ? expf(sc[4 * jj + 3] - n1) : 0.0f;
                sum0 += p00;
                sum0 += p01;
                sum1 += p10;
                sum1 += p11;
                uint8_t *pc = ps + (4 * wg + jj) * kChunk + q4 * 4;
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
            bar_sync(kBarConsumers, kConsumers);

#pragma unroll
            for (int jj = 0; jj < 32; jj++) {
                o[4 * jj] *= alpha0;
                o[4 * jj + 1] *= alpha0;
                o[4 * jj + 2] *= alpha1;
                o[4 * jj + 3] *= alpha1;
            }
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < kTok / 16; k++)
                wgmma_m64n256k16<1>(o, dp + k * (2 * kChunk >> 4), dv + k * (256 >> 4), 1);
            wgmma_commit();
            wgmma_wait();
            if (i + 2 < ntiles) bar_arrive(kBarEmpty + j, kThreads);  // buffer j is free
        }

        any = bar_red_or(kBarConsumers, kConsumers, any);
        if (q4 == 0) {
            lsum[wg * kHeads + r0] = l0;
            lsum[wg * kHeads + r1] = l1;
        }
        bar_sync(kBarConsumers, kConsumers);
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
        for (int jj = 0; jj < 32; jj++) {
            if (h0 + r0 < a.h_q)
                *reinterpret_cast<float2 *>(dst0 + jj * 8) = make_float2(o[4 * jj] * inv0, o[4 * jj + 1] * inv0);
            if (h0 + r1 < a.h_q)
                *reinterpret_cast<float2 *>(dst1 + jj * 8) = make_float2(o[4 * jj + 2] * inv1, o[4 * jj + 3] * inv1);
        }
    }
}

template <int VARIANT>
int launch(const kargs &a, dim3 grid)
{
    static const bool opted_in =
        cudaFuncSetAttribute(ws_partial_kernel<VARIANT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem_map::bytes)) == cudaSuccess;
    if (!opted_in) return 1;
    ws_partial_kernel<VARIANT><<<grid, kThreads, smem_map::bytes, cudaStreamPerThread>>>(a);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

}  // namespace

namespace mla_mma {

int ws_partial_launch(const kargs &a, dim3 grid, ws_variant v)
{
    switch (v) {
    case ws_variant::correct: return launch<0>(a, grid);
    case ws_variant::no_full_wait: return launch<1>(a, grid);
    }
    return 1;
}

}  // namespace mla_mma
