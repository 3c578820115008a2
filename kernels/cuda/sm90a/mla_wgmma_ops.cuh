// The device operations the wgmma sparse MLA decode kernels of this folder share (the
// two-warpgroup kernel of cuda_mla_decode_wgmma.cu, the warp-specialized one of
// cuda_mla_decode_ws.cu): copies, wgmma and its descriptors, the fp8 and UE8M0 conversions.
// Internal to kernels/cuda/sm90a; each includer gets its own copies (an unnamed namespace).
#ifndef ATTEST_MLA_WGMMA_OPS_CUH
#define ATTEST_MLA_WGMMA_OPS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {
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

template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// A no-swizzle shared-memory matrix descriptor. Every address here is below 256 KiB, so adding
// (bytes >> 4) to a descriptor moves its start without touching the other fields.
__device__ __forceinline__ uint64_t smem_desc(const void *p, uint32_t lbo, uint32_t sbo)
{
    const uint64_t addr = smem_u32(p);
    return ((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
           (static_cast<uint64_t>(sbo >> 4) << 32);
}

// D (64 x 32, fp32) += A (64 x 16, smem) * B (16 x 32, smem); trans_b 1 reads B N-major.
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n32k16(float (&d)[16], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "%16, %17, p, 1, 1, 0, %19;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(da), "l"(db), "r"(accumulate), "n"(TRANS_B));
}

// D (64 x 256, fp32) += A (64 x 16, smem) * B (16 x 256, smem); trans_b 1 reads B N-major.
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, %131;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(accumulate), "n"(TRANS_B));
}

__device__ __forceinline__ float ue8m0_to_float(uint32_t bits)
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

// Four e4m3fn codes (a word, low byte first) times a power of two without a conversion
// instruction (the f32 -> bf16 conversion runs at a quarter of the integer rate): a code's sign
// to bit 15 and its other 7 bits shifted left by 4 is the bf16 of its value times 2^-120, exactly,
// zeros and subnormals included; times 2^120 gives the value, times the scale (a power of two,
// bf16 `sb2`) the product rounded once, the bits fp8x2_to_bf16x2 gives. Not for the NaN codes.
__device__ __forceinline__ void fp8x4_to_bf16x4_bits(uint32_t w, __nv_bfloat162 sb2, uint32_t &p01, uint32_t &p23)
{
    const uint32_t t01 = __byte_perm(w, 0, 0x4140), t23 = __byte_perm(w, 0, 0x4342);  // [b, 0, b, 0]
    const uint32_t u01 = ((t01 & 0x007F007Fu) << 4) | ((t01 & 0x00800080u) << 8);
    const uint32_t u23 = ((t23 & 0x007F007Fu) << 4) | ((t23 & 0x00800080u) << 8);
    const uint32_t up_bits = 0x7B807B80u;  // 2^120, twice
    const __nv_bfloat162 up = *reinterpret_cast<const __nv_bfloat162 *>(&up_bits);
    const __nv_bfloat162 r01 = __hmul2_rn(__hmul2_rn(*reinterpret_cast<const __nv_bfloat162 *>(&u01), up), sb2);
    const __nv_bfloat162 r23 = __hmul2_rn(__hmul2_rn(*reinterpret_cast<const __nv_bfloat162 *>(&u23), up), sb2);
    p01 = *reinterpret_cast<const uint32_t *>(&r01);
    p23 = *reinterpret_cast<const uint32_t *>(&r23);
}

// A UE8M0 scale as bf16 (the same value as ue8m0_to_float: 2^-127 for 0 is a bf16 subnormal).
__device__ __forceinline__ __nv_bfloat162 ue8m0_to_bf16x2(uint32_t bits)
{
    const uint32_t h = bits == 0xFF ? 0x7FC0u : bits == 0 ? 0x0040u : bits << 7;
    const uint32_t two = h | (h << 16);
    return *reinterpret_cast<const __nv_bfloat162 *>(&two);
}

// Whether a word holds an e4m3fn NaN code (low 7 bits all set).
__device__ __forceinline__ bool has_fp8_nan(uint4 v)
{
    const uint32_t m = 0x80808080u;
    return (__vcmpeq4(v.x | m, 0xFFFFFFFFu) | __vcmpeq4(v.y | m, 0xFFFFFFFFu) | __vcmpeq4(v.z | m, 0xFFFFFFFFu) |
            __vcmpeq4(v.w | m, 0xFFFFFFFFu)) != 0;
}

}  // namespace

#endif
