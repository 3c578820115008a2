// A SIMT split-KV sparse MLA decode ("cuda-mla-decode") for mla-v4 and mla-v32, and its broken
// variants.
//
// Pass 1, one CUDA block per (split, query, group of 16 heads): a split is a tile of 32 slots
// of the query's index list (main scope first, then the extra scope; a tile never straddles the
// two). The block dequantizes the tile's valid tokens into shared memory once for its 16 heads
// (fp8 * scale in fp32, rope as bf16), computes the scores, and writes the tile's partial output
// (normalized by its own sum) and partial LSE. A tile with no valid slot writes lse = -inf and
// zeros: that is the guard that keeps the merge from computing 0/0.
// Pass 2, one block per (query, head): the log-sum-exp merge of the splits (a split with
// lse = -inf is skipped), the attention sink (out *= 1 / (1 + exp(sink - lse))), bf16 rounding.
// The LSE returned excludes the sink (FlashMLA). A query with no valid slot in any split gets
// out = 0 and lse = +inf.
//
// The cache layouts are read at their byte offsets, written out here as a kernel has them.
// Launches go to cudaStreamPerThread without synchronizing (capturable); the workspace only
// grows, so a captured graph's pointers stay valid for the shape it was captured at.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attest/candidate.h"
#include "attest/cuda_candidates.h"
#include "cuda_registry.h"

namespace {

constexpr int kTile = 32;        // slots per split
constexpr int kHeadGroup = 16;   // heads per pass-1 block
constexpr int kThreads = 256;
constexpr int kDv = 512;

enum class mla_variant {
    correct,
    no_guard,     // no all-invalid guard: 0/0 partials, and the merge does not skip them
    merge_race,   // the merge reads the split maximum before thread 0 has stored it
    wrong_stride  // pages addressed at P * token_bytes, not at the padded page stride
};

// Where a token's fields are, per layout (docs/layouts.md and docs/kernels.md have the byte maps).
struct geom {
    int v4, fp8_dim, num_scales, scale_tile, k_dim, token_bytes;
};

struct scope {
    const uint8_t *cache;
    const int32_t *indices;  // [queries, count]
    const int32_t *length;   // [b] or nullptr
    int64_t page_stride;
    int32_t page_size, num_pages, count, tiles;
};

struct mla_kargs {
    geom g;
    scope sc[2];
    int32_t nscopes, s_q, h_q, d_qk, splits;
    float sm_scale;
    const uint16_t *q;
    const float *sink;  // nullptr without a sink
    uint16_t *out;
    float *lse;
    float *part_out;  // [queries, h_q, splits, 512]
    float *part_lse;  // [queries, h_q, splits]
};

__device__ __forceinline__ float fp8_to_float(uint8_t bits)
{
    __nv_fp8_e4m3 v;
    v.__x = bits;
    return static_cast<float>(v);
}

__device__ __forceinline__ float ue8m0_to_float(uint8_t bits)
{
    if (bits == 0xFF) return __int_as_float(0x7FC00000);
    if (bits == 0) return __int_as_float(0x00400000);  // 2^-127, a float subnormal
    return __int_as_float(static_cast<int>(bits) << 23);
}

__device__ __forceinline__ float bf16_to_float(uint16_t bits)
{
    return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

// Element d of the dequantized key of token idx.
template <mla_variant V>
__device__ float key_element(const geom &g, const scope &s, int32_t idx, int d)
{
    const int64_t page = idx / s.page_size, slot = idx % s.page_size;
    const int64_t stride = V == mla_variant::wrong_stride
                               ? static_cast<int64_t>(s.page_size) * g.token_bytes
                               : s.page_stride;
    const uint8_t *pg = s.cache + page * stride;
    if (g.v4) {
        const uint8_t *data = pg + slot * 576;
        if (d >= g.fp8_dim) {
            const uint8_t *r = data + g.fp8_dim + 2 * (d - g.fp8_dim);
            return bf16_to_float(static_cast<uint16_t>(r[0] | (r[1] << 8)));
        }
        const uint8_t *scales = pg + static_cast<int64_t>(s.page_size) * 576 + slot * 8;
        return fp8_to_float(data[d]) * ue8m0_to_float(scales[d / g.scale_tile]);
    }
    const uint8_t *data = pg + slot * g.token_bytes;
    if (d >= g.fp8_dim) {
        const uint8_t *r = data + 528 + 2 * (d - g.fp8_dim);
        return bf16_to_float(static_cast<uint16_t>(r[0] | (r[1] << 8)));
    }
    float scale;
    memcpy(&scale, data + 512 + 4 * (d / g.scale_tile), 4);
    return fp8_to_float(data[d]) * scale;
}

template <mla_variant V>
__global__ void __launch_bounds__(kThreads) mla_partial_kernel(mla_kargs a)
{
    extern __shared__ float smem[];
    const int k_dim = a.g.k_dim;
    float *kbuf = smem;                          // [kTile, k_dim]
    float *qs = kbuf + kTile * k_dim;            // [kHeadGroup, d_qk]
    float *pr = qs + kHeadGroup * a.d_qk;        // [kHeadGroup, kTile] scores, then weights
    float *stat = pr + kHeadGroup * kTile;       // [kHeadGroup, 2]: max, sum
    int *valid = reinterpret_cast<int *>(stat + 2 * kHeadGroup);  // [kTile]
    int *tokens = valid + kTile;                                   // [kTile]

    const int split = blockIdx.x, query = blockIdx.y, h0 = blockIdx.z * kHeadGroup;
    const int b = query / a.s_q;
    const int which = split < a.sc[0].tiles ? 0 : 1;
    const scope &s = a.sc[which];
    const int begin = (which == 0 ? split : split - a.sc[0].tiles) * kTile;
    int used = s.count;
    if (s.length) used = min(max(s.length[b], 0), s.count);
    const int64_t pool = static_cast<int64_t>(s.num_pages) * s.page_size;
    const int32_t *list = s.indices + static_cast<size_t>(query) * s.count;

    for (int i = threadIdx.x; i < kTile; i += blockDim.x) {
        const int slot = begin + i;
        const int32_t idx = slot < s.count ? list[slot] : -1;
        // Only -1 is invalid; an index outside the pool never reaches a load.
        valid[i] = slot < used && idx != -1 && idx >= 0 && idx < pool;
        tokens[i] = idx;
    }
    for (int i = threadIdx.x; i < kHeadGroup * a.d_qk; i += blockDim.x) {
        const int h = h0 + i / a.d_qk;
        qs[i] = h < a.h_q ? bf16_to_float(a.q[(static_cast<size_t>(query) * a.h_q + h) * a.d_qk +
                                               i % a.d_qk])
                          : 0.0f;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * k_dim; e += blockDim.x) {
        const int i = e / k_dim;
        kbuf[e] = valid[i] ? key_element<V>(a.g, s, tokens[i], e % k_dim) : 0.0f;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kHeadGroup * kTile; e += blockDim.x) {
        const int h = e / kTile, i = e % kTile;
        float score = -INFINITY;
        if (valid[i] && h0 + h < a.h_q) {
            const float *q = qs + h * a.d_qk, *k = kbuf + i * k_dim;
            float dot = 0.0f;
            for (int d = 0; d < a.d_qk; d++) dot = fmaf(q[d], k[d], dot);
            score = a.sm_scale * dot;
        }
        pr[e] = score;
    }
    __syncthreads();
    if (threadIdx.x < kHeadGroup) {
        // The tile's own maximum over valid slots (a NaN score never replaces it), then the
        // weights exp(score - max); the sum of a tile with a NaN score is NaN, as it must be.
        const int h = threadIdx.x;
        float m = -INFINITY;
        int n_valid = 0;
        for (int i = 0; i < kTile; i++) {
            if (!valid[i]) continue;
            n_valid++;
            if (pr[h * kTile + i] > m) m = pr[h * kTile + i];
        }
        float l = 0.0f;
        for (int i = 0; i < kTile; i++) {
            const float w = valid[i] ? expf(pr[h * kTile + i] - m) : 0.0f;
            pr[h * kTile + i] = w;
            l += w;
        }
        if (n_valid == 0 && V != mla_variant::no_guard) {
            stat[2 * h] = -INFINITY;  // the guard: lse -inf, zeros
            stat[2 * h + 1] = 0.0f;
        } else {
            stat[2 * h] = m + logf(l);
            stat[2 * h + 1] = 1.0f / l;  // 0/0 = NaN without the guard
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kHeadGroup * kDv; e += blockDim.x) {
        const int h = e / kDv, d = e % kDv;
        if (h0 + h >= a.h_q) continue;
        float acc = 0.0f;
        for (int i = 0; i < kTile; i++)
            if (valid[i] || V == mla_variant::no_guard) acc = fmaf(pr[h * kTile + i], kbuf[i * k_dim + d], acc);
        const size_t at = (static_cast<size_t>(query) * a.h_q + h0 + h) * a.splits + split;
        const bool empty = stat[2 * h] == -INFINITY && V != mla_variant::no_guard;
        a.part_out[at * kDv + d] = empty ? 0.0f : acc * stat[2 * h + 1];
        if (d == 0) a.part_lse[at] = stat[2 * h];
    }
}

template <mla_variant V>
__global__ void __launch_bounds__(128) mla_merge_kernel(mla_kargs a)
{
    __shared__ float s_max, s_denom;
    __shared__ int s_lonely;
    const int query = blockIdx.x, h = blockIdx.y;
    const size_t qh = static_cast<size_t>(query) * a.h_q + h;
    const float *lse = a.part_lse + qh * a.splits;
    const bool skip_empty = V != mla_variant::no_guard;
    if (threadIdx.x == 0) {
        float m = -INFINITY;
        int lonely = 1;
        for (int t = 0; t < a.splits; t++) {
            if (lse[t] != -INFINITY) lonely = 0;  // NaN counts: that split had valid slots
            if (lse[t] > m) m = lse[t];
        }
        float denom = 0.0f;
        for (int t = 0; t < a.splits; t++) {
            if (lse[t] == -INFINITY && skip_empty) continue;
            denom += expf(lse[t] - m);
        }
        s_max = m;
        s_denom = denom;
        s_lonely = lonely;
    }
    // The race: without this barrier the other threads read s_max and s_denom before thread
    // 0 has stored them.
    if (V != mla_variant::merge_race) __syncthreads();
    uint16_t *out = a.out + qh * kDv;
    if (s_lonely) {  // no valid slot at all: FlashMLA's lonely convention
        for (int d = threadIdx.x; d < kDv; d += blockDim.x) out[d] = 0;
        if (threadIdx.x == 0) a.lse[qh] = INFINITY;
        return;
    }
    const float m = s_max, denom = s_denom;
    const float total = m + logf(denom);
    float factor = 1.0f / denom;
    if (a.sink) factor /= 1.0f + expf(a.sink[h] - total);
    for (int d = threadIdx.x; d < kDv; d += blockDim.x) {
        float acc = 0.0f;
        for (int t = 0; t < a.splits; t++) {
            if (lse[t] == -INFINITY && skip_empty) continue;
            acc = fmaf(expf(lse[t] - m), a.part_out[(qh * a.splits + t) * kDv + d], acc);
        }
        const __nv_bfloat16 v = __float2bfloat16_rn(acc * factor);
        out[d] = *reinterpret_cast<const uint16_t *>(&v);
    }
    if (threadIdx.x == 0) a.lse[qh] = total;
}

bool geom_of(int layout, geom *g)
{
    if (layout == ATTEST_LAYOUT_MLA_V4) *g = {1, 448, 7, 64, 512, 584};
    else if (layout == ATTEST_LAYOUT_MLA_V32) *g = {0, 512, 4, 128, 576, 656};
    else return false;
    return true;
}

int mla_supports(void *, const attest_kernel_args *args)
{
    const attest_mla_params *p = args->u.mla.params;
    geom g;
    if (!geom_of(p->layout, &g) || p->d_qk != g.k_dim || p->d_v != kDv || p->page_size <= 0)
        return 0;
    if (p->page_stride < static_cast<int64_t>(p->page_size) * g.token_bytes) return 0;
    if (p->has_extra && (p->extra_page_size <= 0 ||
                         p->extra_page_stride < static_cast<int64_t>(p->extra_page_size) * g.token_bytes))
        return 0;
    const int64_t queries = static_cast<int64_t>(p->b) * p->s_q;
    return queries <= 65535 && (p->h_q + kHeadGroup - 1) / kHeadGroup <= 65535;
}

// The partials' workspace: grow-only, so a captured graph's pointers stay valid.
struct mla_ctx {
    float *workspace;
    size_t bytes;
};

int mla_init(void **ctx)
{
    *ctx = calloc(1, sizeof(mla_ctx));
    return *ctx ? 0 : 1;
}

void mla_fini(void *ctx)
{
    mla_ctx *c = static_cast<mla_ctx *>(ctx);
    if (c && c->workspace) cudaFree(c->workspace);
    free(c);
}

template <mla_variant V>
int mla_run(void *ctx, const attest_kernel_args *args)
{
    mla_ctx *c = static_cast<mla_ctx *>(ctx);
    const attest_mla_args &m = args->u.mla;
    const attest_mla_params &p = *m.params;
    mla_kargs a = {};
    if (!geom_of(p.layout, &a.g)) return 1;
    a.sc[0] = {m.cache, m.indices, p.has_topk_length ? m.topk_length : nullptr, p.page_stride,
               p.page_size, p.num_pages, p.topk, (p.topk + kTile - 1) / kTile};
    a.nscopes = 1;
    if (p.has_extra) {
        a.sc[1] = {m.extra_cache, m.extra_indices,
                   p.has_extra_topk_length ? m.extra_topk_length : nullptr, p.extra_page_stride,
                   p.extra_page_size, p.extra_num_pages, p.extra_topk,
                   (p.extra_topk + kTile - 1) / kTile};
        a.nscopes = 2;
    }
    a.splits = a.sc[0].tiles + (a.nscopes > 1 ? a.sc[1].tiles : 0);
    a.s_q = p.s_q;
    a.h_q = p.h_q;
    a.d_qk = p.d_qk;
    a.sm_scale = p.sm_scale;
    a.q = m.q;
    a.sink = p.has_sink ? m.attn_sink : nullptr;
    a.out = m.out;
    a.lse = m.lse;
    const int queries = p.b * p.s_q;
    const size_t parts = static_cast<size_t>(queries) * p.h_q * (a.splits > 0 ? a.splits : 1);
    const size_t bytes = parts * (kDv + 1) * sizeof(float);
    if (bytes > c->bytes) {
        if (c->workspace) cudaFree(c->workspace);
        c->workspace = nullptr;
        c->bytes = 0;
        if (cudaMalloc(&c->workspace, bytes) != cudaSuccess) return 1;
        c->bytes = bytes;
    }
    a.part_out = c->workspace;
    a.part_lse = c->workspace + parts * kDv;
    const size_t shared = (static_cast<size_t>(kTile) * a.g.k_dim + kHeadGroup * p.d_qk +
                           kHeadGroup * kTile + 2 * kHeadGroup + 2 * kTile) * sizeof(float);
    if (cudaFuncSetAttribute(mla_partial_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared)) != cudaSuccess)
        return 1;
    if (a.splits > 0) {
        const dim3 grid(a.splits, queries, (p.h_q + kHeadGroup - 1) / kHeadGroup);
        mla_partial_kernel<V><<<grid, kThreads, shared, cudaStreamPerThread>>>(a);
    }
    mla_merge_kernel<V><<<dim3(queries, p.h_q), 128, 0, cudaStreamPerThread>>>(a);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

attest_candidate make(const char *name, const char *description,
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
    c.init = mla_init;
    c.fini = mla_fini;
    c.supports = mla_supports;
    c.run = run;
    return c;
}

const attest_candidate correct = make(
    "cuda-mla-decode",
    "SIMT split-KV CUDA sparse MLA decode (mla-v4, mla-v32): 32-slot splits, LSE merge, sink",
    mla_run<mla_variant::correct>);
#ifdef ATTEST_WITH_MUTANTS
const attest_candidate no_guard = make(
    "mutant-cuda-mla-decode-no-guard",
    "cuda-mla-decode without the all-invalid split guard (0/0 partials reach the merge)",
    mla_run<mla_variant::no_guard>);
const attest_candidate merge_race = make(
    "mutant-cuda-mla-decode-merge-race",
    "cuda-mla-decode whose merge reads the split maximum before it is stored (missing barrier)",
    mla_run<mla_variant::merge_race>);
const attest_candidate wrong_stride = make(
    "mutant-cuda-mla-decode-wrong-stride",
    "cuda-mla-decode addressing pages at P * token bytes instead of the padded page stride",
    mla_run<mla_variant::wrong_stride>);
const attest_candidate *const list[] = {&correct, &no_guard, &merge_race, &wrong_stride};
#else
const attest_candidate *const list[] = {&correct};
#endif

}  // namespace

const attest_candidate *const *cuda_mla_candidates(size_t *count)
{
    *count = sizeof list / sizeof list[0];
    return list;
}
