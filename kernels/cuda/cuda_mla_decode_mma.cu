// A tensor-core split-KV sparse MLA decode: "cuda-mla-decode-mma" (pass 1 on wgmma on a
// compute-capability-9.0 device, sm90a/cuda_mla_decode_wgmma.cu, for mla-v4 and mla-v32; the
// mma.sync pass 1 below elsewhere, mla-v4 only), "cuda-mla-decode-mma-fused" (the same with the
// merge fused into the wgmma pass 1's last split), "cuda-mla-decode-mma-bits" (mla-v4's codes
// converted by bit placement), "cuda-mla-decode-mma-ws" (mla-v4's wgmma pass 1 warp-specialized,
// sm90a/cuda_mla_decode_ws.cu), "cuda-mla-decode-mma-sync" (the mma.sync pass 1 everywhere), and
// the racy variants of the two merges and of the warp-specialized handoff.
//
// The mma.sync pass 1, one CUDA block (8 warps) per (split, query, 64 heads): the 64 query heads are the M
// dimension of mma.sync m16n8k16 bf16 tiles, so each gathered token is read from HBM once per
// query and dequantized once into shared memory as bf16 (fp8 * UE8M0 scale in fp32, rounded to
// nearest even; rope copied as is). A split is `tps` tiles of 64 slots of one scope (main first,
// then the extra scope; a split never straddles the two). Per tile:
//   - the raw 584-byte tokens of the next tile arrive by cp.async while this one is computed;
//   - S = Q K^T (each warp 16 heads x 32 tokens, fp32 accumulators), times sm_scale;
//   - an online softmax per head over the valid slots (index not -1, inside the pool, below
//     topk_length): P = exp(s - m) in fp32, its sum in fp32, P rounded to bf16 for P*V;
//   - O = alpha * O + P V (each warp 16 heads x 256 dims of V, fp32 accumulators).
// The split writes O / l and lse = m + ln l; a split with no valid slot writes lse = -inf and
// zeros (the guard that keeps the merge from 0/0).
// Pass 2 (or, in cuda-mla-decode-mma-fused, the wgmma pass 1's last split of up to 8), one block
// per (query, head): the log-sum-exp merge (splits with lse = -inf skipped),
// the sink (out *= 1 / (1 + exp(sink - lse)), the LSE returned excludes it), bf16 rounding. A
// query with no valid slot in any split gets out = 0 and lse = +inf.
//
// K/V and P are bf16, so the candidate is judged under policies/bf16-tensor-core.json (as
// cpu-mla-decode-bf16pv is, whose arithmetic this mirrors: l sums the unrounded P).
// Launches go to cudaStreamPerThread without synchronizing; the grid depends on the shape
// (b, s_q, heads, topk, extra_topk), never on the lengths; the workspace only grows.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attest/candidate.h"
#include "attest/cuda_candidates.h"
#include "cuda_mla_mma.h"
#include "cuda_registry.h"

namespace {

constexpr int kTok = 64;      // slots per tile
constexpr int kHeads = 64;    // heads per block: the MMA's M
constexpr int kDim = 512;     // d_qk = d_v in mla-v4
constexpr int kFp8 = 448;     // quantized dims; the rest are bf16 rope
constexpr int kThreads = 256; // 8 warps
// Row strides, in elements: 1040-byte bf16 rows and 144-byte P rows put the 8 rows an
// ldmatrix reads in 8 distinct 16-byte bank groups.
constexpr int kLd = kDim + 8;
constexpr int kSLd = kTok + 4;
constexpr int kPLd = kTok + 8;
constexpr int kRawTok = 592;  // one token's 576 data bytes and 8 scale bytes, 16-byte rounded
constexpr int kTokenBytes = 584;

constexpr size_t kQsOff = 0;
constexpr size_t kKsOff = kQsOff + sizeof(uint16_t) * kHeads * kLd;
constexpr size_t kRawOff = kKsOff + sizeof(uint16_t) * kTok * kLd;
constexpr size_t kSsOff = kRawOff + static_cast<size_t>(kRawTok) * kTok;
constexpr size_t kPsOff = kSsOff + sizeof(float) * kHeads * kSLd;
constexpr size_t kAlphaOff = kPsOff + sizeof(uint16_t) * kHeads * kPLd;
constexpr size_t kInvOff = kAlphaOff + sizeof(float) * kHeads;
constexpr size_t kValidOff = kInvOff + sizeof(float) * kHeads;
constexpr size_t kSmem = kValidOff + sizeof(int) * 2 * kTok;

enum class mma_variant {
    correct,
    merge_race  // the merge's other warps read the splits' maximum and sum before warp 0 stores them
};

using mla_mma::kargs;
using mla_mma::scope;

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst)), "l"(src)
                 : "memory");
}

__device__ __forceinline__ void cp_async8(void *dst, const void *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_u32(dst)), "l"(src)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p))
                 : "memory");
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p))
                 : "memory");
}

__device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float ue8m0_to_float(uint8_t bits)
{
    if (bits == 0xFF) return __int_as_float(0x7FC00000);
    if (bits == 0) return __int_as_float(0x00400000);  // 2^-127, a float subnormal
    return __int_as_float(static_cast<int>(bits) << 23);
}

// Two fp8 e4m3fn codes (low byte first) times the scale, as two bf16 (every e4m3fn value is
// exact in fp16 and in float; the product is rounded once, to bf16).
__device__ __forceinline__ uint32_t fp8x2_to_bf16x2(uint32_t two, float scale)
{
    const __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
    const float2 f = __half22float2(__half2(hr));
    const __nv_bfloat162 r = __floats2bfloat162_rn(f.x * scale, f.y * scale);
    return *reinterpret_cast<const uint32_t *>(&r);
}

template <mma_variant V>
__global__ void __launch_bounds__(kThreads, 1) mma_partial_kernel(kargs a)
{
    extern __shared__ __align__(16) uint8_t smem[];
    uint16_t *qs = reinterpret_cast<uint16_t *>(smem + kQsOff);  // [64 heads][kLd] bf16
    uint16_t *ks = reinterpret_cast<uint16_t *>(smem + kKsOff);  // [64 tokens][kLd] bf16, K = V
    uint8_t *raw = smem + kRawOff;                                // [64 tokens][592] bytes
    float *ss = reinterpret_cast<float *>(smem + kSsOff);        // [64 heads][kSLd] scores
    uint16_t *ps = reinterpret_cast<uint16_t *>(smem + kPsOff);  // [64 heads][kPLd] bf16 P
    float *alpha_s = reinterpret_cast<float *>(smem + kAlphaOff);
    float *inv_s = reinterpret_cast<float *>(smem + kInvOff);
    int *valid = reinterpret_cast<int *>(smem + kValidOff);  // [2][64]: double-buffered

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
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

    // Q of the block's heads (zero rows past h_q: their scores are computed, never stored).
    for (int e = tid; e < kHeads * (kDim / 8); e += kThreads) {
        const int h = e / (kDim / 8), c = e % (kDim / 8);
        uint16_t *dst = qs + h * kLd + c * 8;
        if (h0 + h < a.h_q)
            cp_async16(dst, a.q + (static_cast<size_t>(query) * a.h_q + h0 + h) * kDim + c * 8);
        else
            *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
    }

    // Four threads per slot: thread (t, part) copies 16-byte chunks part, part + 4, ...
    const int tok = tid >> 2, part = tid & 3;
    auto issue = [&](int tile, int buf) {
        const int slot = tile * kTok + tok;
        const int32_t idx = slot < s.count ? list[slot] : -1;
        // Only -1 is invalid; an index outside the pool never reaches a load.
        const int ok = slot < used && idx != -1 && idx >= 0 && idx < pool;
        if (part == 0) valid[buf * kTok + tok] = ok;
        if (ok) {
            const int64_t page = idx / s.page_size, pslot = idx % s.page_size;
            const uint8_t *pg = s.cache + page * s.page_stride;
            const uint8_t *src = pg + pslot * 576;
            uint8_t *dst = raw + tok * kRawTok;
            for (int c = part; c < 36; c += 4) cp_async16(dst + c * 16, src + c * 16);
            if (part == 0)
                cp_async8(dst + 576, pg + static_cast<int64_t>(s.page_size) * 576 + pslot * 8);
        }
        cp_async_commit();
    };

    float acc[32][4];
#pragma unroll
    for (int j = 0; j < 32; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    // The softmax state of head tid / 4, held by its 4 threads alike.
    float m_run = -INFINITY, l_run = 0.0f;
    int n_valid = 0;

    if (first < last) issue(first, 0);
    else cp_async_commit();
    for (int tile = first; tile < last; tile++) {
        const int buf = (tile - first) & 1;
        cp_async_wait_all();
        __syncthreads();
        // Dequantize: thread (t, part) writes dims [128 part, 128 part + 128) of slot t.
        {
            uint16_t *krow = ks + tok * kLd;
            if (!valid[buf * kTok + tok]) {
                for (int c = 0; c < 16; c++)
                    *reinterpret_cast<uint4 *>(krow + part * 128 + c * 8) = make_uint4(0, 0, 0, 0);
            } else {
                const uint8_t *r = raw + tok * kRawTok;
                const int chunks = part < 3 ? 8 : 4;
                for (int c = 0; c < chunks; c++) {
                    const int d = part * 128 + c * 16;
                    const float scale = ue8m0_to_float(r[576 + d / 64]);
                    const uint4 v = *reinterpret_cast<const uint4 *>(r + d);
                    uint4 lo, hi;
                    lo.x = fp8x2_to_bf16x2(v.x, scale);
                    lo.y = fp8x2_to_bf16x2(v.x >> 16, scale);
                    lo.z = fp8x2_to_bf16x2(v.y, scale);
                    lo.w = fp8x2_to_bf16x2(v.y >> 16, scale);
                    hi.x = fp8x2_to_bf16x2(v.z, scale);
                    hi.y = fp8x2_to_bf16x2(v.z >> 16, scale);
                    hi.z = fp8x2_to_bf16x2(v.w, scale);
                    hi.w = fp8x2_to_bf16x2(v.w >> 16, scale);
                    *reinterpret_cast<uint4 *>(krow + d) = lo;
                    *reinterpret_cast<uint4 *>(krow + d + 8) = hi;
                }
                if (part == 3)
                    for (int c = 0; c < 8; c++)
                        *reinterpret_cast<uint4 *>(krow + kFp8 + c * 8) =
                            *reinterpret_cast<const uint4 *>(r + kFp8 + c * 16);
            }
        }
        __syncthreads();
        if (tile + 1 < last) issue(tile + 1, buf ^ 1);  // overlaps the MMAs below
        // S = sm_scale * Q K^T: warp (hg, th) takes heads 16 hg.. and slots 32 th..
        {
            const int hg = warp & 3, th = warp >> 2;
            float c[4][4];
#pragma unroll
            for (int j = 0; j < 4; j++) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
            const uint16_t *qa = qs + (hg * 16 + (lane & 15)) * kLd + (lane >> 4) * 8;
            const uint16_t *kb =
                ks + (th * 32 + (lane & 7) + ((lane >> 4) << 3)) * kLd + ((lane >> 3) & 1) * 8;
#pragma unroll 4
            for (int k0 = 0; k0 < kDim; k0 += 16) {
                uint32_t af[4], bf[4];
                ldsm_x4(af, qa + k0);
#pragma unroll
                for (int np = 0; np < 2; np++) {
                    ldsm_x4(bf, kb + np * 16 * kLd + k0);
                    mma_bf16(c[2 * np], af, bf[0], bf[1]);
                    mma_bf16(c[2 * np + 1], af, bf[2], bf[3]);
                }
            }
            const int g = lane >> 2, q4 = lane & 3;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int t = th * 32 + j * 8 + q4 * 2;
                *reinterpret_cast<float2 *>(ss + (hg * 16 + g) * kSLd + t) =
                    make_float2(a.sm_scale * c[j][0], a.sm_scale * c[j][1]);
                *reinterpret_cast<float2 *>(ss + (hg * 16 + g + 8) * kSLd + t) =
                    make_float2(a.sm_scale * c[j][2], a.sm_scale * c[j][3]);
            }
        }
        __syncthreads();
        // Online softmax: thread (h, part) takes slots [16 part, 16 part + 16) of head h. The
        // maximum skips NaN scores (a NaN still makes P, l and the output NaN, as it must).
        {
            const int h = tid >> 2;
            const float *srow = ss + h * kSLd + part * 16;
            const int *vt = valid + buf * kTok + part * 16;
            float mt = -INFINITY;
            int nv = 0;
            for (int i = 0; i < 16; i++)
                if (vt[i]) {
                    nv++;
                    if (srow[i] > mt) mt = srow[i];
                }
            mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
            mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
            nv += __shfl_xor_sync(0xffffffffu, nv, 1);
            nv += __shfl_xor_sync(0xffffffffu, nv, 2);
            const float m_new = fmaxf(m_run, mt);
            // Equal maxima (both -inf before any valid slot) rescale by 1, not by exp(NaN).
            const float alpha = m_new == m_run ? 1.0f : expf(m_run - m_new);
            float sum = 0.0f;
            uint16_t *prow = ps + h * kPLd + part * 16;
            for (int i = 0; i < 16; i += 2) {
                const float p0 = vt[i] ? expf(srow[i] - m_new) : 0.0f;
                const float p1 = vt[i + 1] ? expf(srow[i + 1] - m_new) : 0.0f;
                sum += p0;
                sum += p1;
                const __nv_bfloat162 pb = __floats2bfloat162_rn(p0, p1);
                *reinterpret_cast<__nv_bfloat162 *>(prow + i) = pb;
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            l_run = l_run * alpha + sum;
            m_run = m_new;
            n_valid += nv;
            if (part == 0) alpha_s[h] = alpha;
        }
        __syncthreads();
        // O = alpha O + P V: warp (hg, dh) takes heads 16 hg.. and dims 256 dh..
        {
            const int hg = warp & 3, dh = warp >> 2, g = lane >> 2;
            const float a0 = alpha_s[hg * 16 + g], a1 = alpha_s[hg * 16 + g + 8];
#pragma unroll
            for (int j = 0; j < 32; j++) {
                acc[j][0] *= a0;
                acc[j][1] *= a0;
                acc[j][2] *= a1;
                acc[j][3] *= a1;
            }
            const uint16_t *pa = ps + (hg * 16 + (lane & 15)) * kPLd + (lane >> 4) * 8;
            const uint16_t *vb =
                ks + ((lane & 7) + ((lane >> 3) & 1) * 8) * kLd + dh * 256 + (lane >> 4) * 8;
#pragma unroll
            for (int k0 = 0; k0 < kTok; k0 += 16) {
                uint32_t af[4];
                ldsm_x4(af, pa + k0);
#pragma unroll
                for (int np = 0; np < 16; np++) {
                    uint32_t bf[4];
                    ldsm_x4_trans(bf, vb + k0 * kLd + np * 16);
                    mma_bf16(acc[2 * np], af, bf[0], bf[1]);
                    mma_bf16(acc[2 * np + 1], af, bf[2], bf[3]);
                }
            }
        }
    }

    // The split's partial: O / l and lse; no valid slot: lse = -inf and zeros (the guard).
    const size_t qh0 = static_cast<size_t>(query) * a.h_q + h0;
    if (part == 0) {
        const int h = tid >> 2;
        const bool empty = n_valid == 0;
        inv_s[h] = empty ? 0.0f : 1.0f / l_run;
        if (h0 + h < a.h_q)
            a.part_lse[(qh0 + h) * a.splits + split] = empty ? -INFINITY : m_run + logf(l_run);
    }
    __syncthreads();
    {
        const int hg = warp & 3, dh = warp >> 2, g = lane >> 2, q4 = lane & 3;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int h = hg * 16 + g + 8 * half;
            if (h0 + h >= a.h_q) continue;
            const float inv = inv_s[h];
            float *dst = a.part_out + ((qh0 + h) * a.splits + split) * kDim + dh * 256 + q4 * 2;
#pragma unroll
            for (int j = 0; j < 32; j++)
                *reinterpret_cast<float2 *>(dst + j * 8) =
                    make_float2(acc[j][2 * half] * inv, acc[j][2 * half + 1] * inv);
        }
    }
}

template <mma_variant V>
__global__ void __launch_bounds__(128) mma_merge_kernel(kargs a)
{
    __shared__ float s_max, s_denom;
    __shared__ int s_lonely;
    const int query = blockIdx.x, h = blockIdx.y, lane = threadIdx.x & 31;
    const size_t qh = static_cast<size_t>(query) * a.h_q + h;
    const float *lse = a.part_lse + qh * a.splits;
    if (threadIdx.x < 32) {
        float m = -INFINITY;
        int lonely = 1;
        for (int t = lane; t < a.splits; t += 32) {
            if (lse[t] != -INFINITY) lonely = 0;  // NaN counts: that split had valid slots
            if (lse[t] > m) m = lse[t];
        }
        for (int o = 16; o > 0; o >>= 1) {
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
            lonely &= __shfl_xor_sync(0xffffffffu, lonely, o);
        }
        float denom = 0.0f;
        for (int t = lane; t < a.splits; t += 32)
            if (lse[t] != -INFINITY) denom += expf(lse[t] - m);
        for (int o = 16; o > 0; o >>= 1) denom += __shfl_xor_sync(0xffffffffu, denom, o);
        if (lane == 0) {
            s_max = m;
            s_denom = denom;
            s_lonely = lonely;
        }
    }
    // The race: without this barrier warps 1-3 read s_max and s_denom before warp 0 stores them.
    if (V != mma_variant::merge_race) __syncthreads();
    uint16_t *out = a.out + qh * kDim;
    const int d = threadIdx.x * 4;
    if (s_lonely) {  // no valid slot at all: FlashMLA's lonely convention
        *reinterpret_cast<uint2 *>(out + d) = make_uint2(0, 0);
        if (threadIdx.x == 0) a.lse[qh] = INFINITY;
        return;
    }
    const float m = s_max, denom = s_denom;
    const float total = m + logf(denom);
    float factor = 1.0f / denom;
    if (a.sink) factor /= 1.0f + expf(a.sink[h] - total);
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int t = 0; t < a.splits; t++) {
        if (lse[t] == -INFINITY) continue;
        const float w = expf(lse[t] - m);
        const float4 po = *reinterpret_cast<const float4 *>(a.part_out + (qh * a.splits + t) * kDim + d);
        acc.x = fmaf(w, po.x, acc.x);
        acc.y = fmaf(w, po.y, acc.y);
        acc.z = fmaf(w, po.z, acc.z);
        acc.w = fmaf(w, po.w, acc.w);
    }
    const __nv_bfloat162 lo = __floats2bfloat162_rn(acc.x * factor, acc.y * factor);
    const __nv_bfloat162 hi = __floats2bfloat162_rn(acc.z * factor, acc.w * factor);
    *reinterpret_cast<uint2 *>(out + d) =
        make_uint2(*reinterpret_cast<const uint32_t *>(&lo), *reinterpret_cast<const uint32_t *>(&hi));
    if (threadIdx.x == 0) a.lse[qh] = total;
}

bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Which pass-1 kernel runs a case: the wgmma one on a compute-capability-9.0 device (mla-v4
// and mla-v32), else the mma.sync one (mla-v4 only).
enum class pass1 { none, sync, wgmma };

// Any head count (heads past a multiple of 64 are zero rows of the last block); pages whose
// stride keeps every token on a 16-byte boundary (mla-v4's multiple-of-576 stride always does;
// mla-v32's generated strides, 656 P and 656 (P + 1), do too).
pass1 pick(const attest_kernel_args *args, bool sync_only)
{
    const attest_mla_args &m = args->u.mla;
    const attest_mla_params *p = m.params;
    const bool v32 = p->layout == ATTEST_LAYOUT_MLA_V32;
    if (!v32 && p->layout != ATTEST_LAYOUT_MLA_V4) return pass1::none;
    const int dqk = v32 ? 576 : kDim, token = v32 ? 656 : kTokenBytes;
    if (p->d_qk != dqk || p->d_v != kDim || p->h_q < 1) return pass1::none;
    if (p->page_size <= 0 || p->page_stride < static_cast<int64_t>(p->page_size) * token ||
        p->page_stride % 16 != 0 || !aligned16(m.cache) || !aligned16(m.q))
        return pass1::none;
    if (p->has_extra &&
        (p->extra_page_size <= 0 ||
         p->extra_page_stride < static_cast<int64_t>(p->extra_page_size) * token ||
         p->extra_page_stride % 16 != 0 || !aligned16(m.extra_cache)))
        return pass1::none;
    const int64_t queries = static_cast<int64_t>(p->b) * p->s_q;
    if (queries < 1 || queries > 65535 || (p->h_q + kHeads - 1) / kHeads > 65535) return pass1::none;
    if (!sync_only && mla_mma::wgmma_available()) return pass1::wgmma;
    return v32 ? pass1::none : pass1::sync;
}

int mma_supports(void *, const attest_kernel_args *args) { return pick(args, false) != pass1::none; }
int sync_supports(void *, const attest_kernel_args *args) { return pick(args, true) != pass1::none; }

struct mma_ctx {
    float *workspace;  // grow-only, so a captured graph's pointers stay valid
    size_t bytes;
    unsigned int *arrive;  // the fused merge's counters, grow-only, zero between launches
    size_t counters;
    bool zeroed;           // arrive was zeroed eagerly, not only by a captured memset
    int sms;           // multiprocessors, read once
};

int mma_init(void **ctx)
{
    *ctx = calloc(1, sizeof(mma_ctx));
    return *ctx ? 0 : 1;
}

void mma_fini(void *ctx)
{
    mma_ctx *c = static_cast<mma_ctx *>(ctx);
    if (c && c->workspace) cudaFree(c->workspace);
    if (c && c->arrive) cudaFree(c->arrive);
    free(c);
}

// Tiles per split: the fewest waves of one-block-per-SM times tiles per block; on a tie the
// fewer splits (less partial traffic through the merge).
int tiles_per_split(int tiles0, int tiles1, int64_t blocks_per_split, int sms)
{
    const int most = tiles0 > tiles1 ? tiles0 : tiles1;
    int best = most > 0 ? most : 1;
    int64_t best_cost = -1;
    for (int tps = best; tps >= 1; tps--) {
        const int64_t splits = (tiles0 + tps - 1) / tps + (tiles1 + tps - 1) / tps;
        const int64_t waves = (splits * blocks_per_split + sms - 1) / sms;
        const int64_t cost = waves * tps;
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best = tps;
        }
    }
    return best;
}

// FUSE: the wgmma pass 1 merges the splits itself (up to kFusedMaxSplits of them; more, and
// the mma.sync path, go through the merge kernel).
// P1: which wgmma pass 1 (mla-v32 runs the two-warpgroup kernel whichever is asked).
enum class wg_pass1 { plain, bits, ws, ws_no_full_wait };

template <mma_variant V, bool SYNC_ONLY, bool FUSE, wg_pass1 P1 = wg_pass1::plain>
int mma_run(void *ctx, const attest_kernel_args *args)
{
    const pass1 kernel = pick(args, SYNC_ONLY);
    if (kernel == pass1::none) return 1;
    mma_ctx *c = static_cast<mma_ctx *>(ctx);
    const attest_mla_args &m = args->u.mla;
    const attest_mla_params &p = *m.params;
    if (c->sms == 0) {
        int dev = 0, sms = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
            return 1;
        c->sms = sms;
    }
    kargs a = {};
    const int tiles0 = (p.topk + kTok - 1) / kTok;
    const int tiles1 = p.has_extra ? (p.extra_topk + kTok - 1) / kTok : 0;
    const int queries = p.b * p.s_q, head_blocks = (p.h_q + kHeads - 1) / kHeads;
    a.tps = tiles_per_split(tiles0, tiles1, static_cast<int64_t>(queries) * head_blocks, c->sms);
    a.sc[0] = {m.cache, m.indices, p.has_topk_length ? m.topk_length : nullptr, p.page_stride,
               p.page_size, p.num_pages, p.topk, tiles0, (tiles0 + a.tps - 1) / a.tps};
    if (p.has_extra)
        a.sc[1] = {m.extra_cache, m.extra_indices,
                   p.has_extra_topk_length ? m.extra_topk_length : nullptr, p.extra_page_stride,
                   p.extra_page_size, p.extra_num_pages, p.extra_topk, tiles1,
                   (tiles1 + a.tps - 1) / a.tps};
    a.splits = a.sc[0].splits + a.sc[1].splits;
    a.s_q = p.s_q;
    a.h_q = p.h_q;
    a.sm_scale = p.sm_scale;
    a.q = m.q;
    a.sink = p.has_sink ? m.attn_sink : nullptr;
    a.out = m.out;
    a.lse = m.lse;
    const size_t parts = static_cast<size_t>(queries) * p.h_q * (a.splits > 0 ? a.splits : 1);
    const size_t bytes = parts * (kDim + 1) * sizeof(float);
    if (bytes > c->bytes) {
        if (c->workspace) cudaFree(c->workspace);
        c->workspace = nullptr;
        c->bytes = 0;
        if (cudaMalloc(&c->workspace, bytes) != cudaSuccess) return 1;
        c->bytes = bytes;
    }
    a.part_out = c->workspace;
    a.part_lse = c->workspace + parts * kDim;
    const bool fused = FUSE && kernel == pass1::wgmma && a.splits > 0 && a.splits <= mla_mma::kFusedMaxSplits;
    if (fused) {
        const size_t counters = static_cast<size_t>(queries) * head_blocks;
        if (counters > c->counters) {
            if (c->arrive) cudaFree(c->arrive);
            c->arrive = nullptr;
            c->counters = 0;
            if (cudaMalloc(&c->arrive, counters * sizeof(unsigned int)) != cudaSuccess) return 1;
            c->counters = counters;
            c->zeroed = false;
        }
        if (!c->zeroed) {
            // Ordered before the launch on the same stream; every launch leaves them zero again.
            // Under a capture the memset is a node of the graph, not run now: zero them again
            // on the next eager run.
            cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
            if (cudaStreamIsCapturing(cudaStreamPerThread, &capturing) != cudaSuccess ||
                cudaMemsetAsync(c->arrive, 0, c->counters * sizeof(unsigned int), cudaStreamPerThread) != cudaSuccess)
                return 1;
            c->zeroed = capturing == cudaStreamCaptureStatusNone;
        }
        a.arrive = c->arrive;
    }
    if (a.splits > 0) {
        const dim3 grid(a.splits, queries, head_blocks);
        if (kernel == pass1::wgmma) {
            const mla_mma::merge_mode merge = !fused ? mla_mma::merge_mode::two_pass
                                              : V == mma_variant::merge_race ? mla_mma::merge_mode::fused_race
                                                                             : mla_mma::merge_mode::fused;
            const bool v32 = p.layout == ATTEST_LAYOUT_MLA_V32;
            if (!v32 && !fused && (P1 == wg_pass1::ws || P1 == wg_pass1::ws_no_full_wait)) {
                const mla_mma::ws_variant w =
                    P1 == wg_pass1::ws ? mla_mma::ws_variant::correct : mla_mma::ws_variant::no_full_wait;
                if (mla_mma::ws_partial_launch(a, grid, w) != 0) return 1;
            } else if (mla_mma::wgmma_partial_launch(a, v32, grid, merge, P1 == wg_pass1::bits) != 0) {
                return 1;
            }
            if (fused) return cudaGetLastError() == cudaSuccess ? 0 : 1;
        } else {
            if (cudaFuncSetAttribute(mma_partial_kernel<mma_variant::correct>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(kSmem)) != cudaSuccess)
                return 1;
            mma_partial_kernel<mma_variant::correct><<<grid, kThreads, kSmem, cudaStreamPerThread>>>(a);
        }
    }
    mma_merge_kernel<V><<<dim3(queries, p.h_q), 128, 0, cudaStreamPerThread>>>(a);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

attest_candidate make(const char *name, const char *description,
                      int (*supports)(void *, const attest_kernel_args *),
                      int (*run)(void *, const attest_kernel_args *))
{
    attest_candidate c = {};
    c.abi_version = ATTEST_CANDIDATE_ABI_VERSION;
    c.struct_size = sizeof(attest_candidate);
    c.name = name;
    c.description = description;
    c.kernel = ATTEST_KERNEL_MLA_DECODE;
    c.domain = ATTEST_DOMAIN_DEVICE;
    c.conventions.masking = ATTEST_MASK_NEG_INF;
    c.conventions.lse_convention = ATTEST_LSE_EXCLUDES_SINK;
    c.init = mma_init;
    c.fini = mma_fini;
    c.supports = supports;
    c.run = run;
    return c;
}

const attest_candidate correct = make(
    "cuda-mla-decode-mma",
    "tensor-core split-KV sparse MLA decode, 64 heads per tile: wgmma on sm_90 (mla-v4 and "
    "mla-v32), mma.sync elsewhere (mla-v4); K/V and P in bf16 (judge with "
    "policies/bf16-tensor-core.json)",
    mma_supports, mma_run<mma_variant::correct, false, false>);
const attest_candidate fused = make(
    "cuda-mla-decode-mma-fused",
    "cuda-mla-decode-mma whose wgmma pass 1 merges the splits in the last one to finish (an "
    "arrival counter; up to 8 splits), one launch; K/V and P in bf16 (judge with "
    "policies/bf16-tensor-core.json)",
    mma_supports, mma_run<mma_variant::correct, false, true>);
const attest_candidate bits = make(
    "cuda-mla-decode-mma-bits",
    "cuda-mla-decode-mma converting mla-v4's fp8 codes by bit placement and two bf16 multiplies "
    "(no conversion instruction; NaN codes by the conversion): the same bits, 6-8% slower on "
    "the H200; K/V and P in bf16 (judge with policies/bf16-tensor-core.json)",
    mma_supports, mma_run<mma_variant::correct, false, false, wg_pass1::bits>);
const attest_candidate ws = make(
    "cuda-mla-decode-mma-ws",
    "cuda-mla-decode-mma whose wgmma pass 1 is warp-specialized on mla-v4 (a producer "
    "warpgroup copies and dequantizes the next tile into a second K buffer while two consumer "
    "warpgroups compute this one; named-barrier handoff), the same bits; mla-v32 as "
    "cuda-mla-decode-mma; K/V and P in bf16 (judge with policies/bf16-tensor-core.json)",
    mma_supports, mma_run<mma_variant::correct, false, false, wg_pass1::ws>);
const attest_candidate sync = make(
    "cuda-mla-decode-mma-sync",
    "cuda-mla-decode-mma with the mma.sync bf16 pass 1 on every device (mla-v4); K/V and P in "
    "bf16 (judge with policies/bf16-tensor-core.json)",
    sync_supports, mma_run<mma_variant::correct, true, false>);
#ifdef ATTEST_WITH_MUTANTS
const attest_candidate merge_race = make(
    "mutant-cuda-mla-decode-mma-merge-race",
    "cuda-mla-decode-mma whose merge reads the split maximum and sum before warp 0 stores them "
    "(missing barrier)",
    mma_supports, mma_run<mma_variant::merge_race, false, false>);
const attest_candidate fused_race = make(
    "mutant-cuda-mla-decode-mma-fused-race",
    "cuda-mla-decode-mma-fused whose last split reads the per-head statistics before warpgroup "
    "1 stores them (missing barrier; the merge kernel's race past 8 splits)",
    mma_supports, mma_run<mma_variant::merge_race, false, true>);
const attest_candidate ws_no_full_wait = make(
    "mutant-cuda-mla-decode-mma-ws-no-full-wait",
    "cuda-mla-decode-mma-ws whose consumers arrive at a tile's FULL barrier instead of waiting "
    "on it (bar.arrive for bar.sync: a missing wait), computing K before the producer wrote it",
    mma_supports, mma_run<mma_variant::correct, false, false, wg_pass1::ws_no_full_wait>);
const attest_candidate *const list[] = {&correct, &fused, &bits, &ws, &sync, &merge_race, &fused_race, &ws_no_full_wait};
#else
const attest_candidate *const list[] = {&correct, &fused, &bits, &ws, &sync};
#endif

}  // namespace

const attest_candidate *const *cuda_mla_mma_candidates(size_t *count)
{
    *count = sizeof list / sizeof list[0];
    return list;
}
