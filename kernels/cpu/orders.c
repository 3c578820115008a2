/* False-alarm controls: the correct CPU kernels in other evaluation orders.
 *
 * Each one computes the same function as cpu-indexer or cpu-mla-decode with a different but
 * equally correct float32 evaluation: heads summed the other way round or as a tree, fused
 * multiply-adds, the key scale folded in first, split-KV tiles of 16 or 256 indices, the splits
 * merged last to first, an exp2-based softmax. A tolerance that fails any of them on any case is
 * a false alarm (docs/policy.md), so every campaign and the false-alarm benchmark run them.
 * cpu-mla-decode-bf16pv computes in FlashMLA's formats (bf16 K/V and P) and is correct under
 * policies/bf16-tensor-core.json, not under the float32 default.
 */
#include <stddef.h>

#include "cpu_kernels.h"

static const cpu_indexer_faults idx_heads_reversed = {.order = CPU_INDEXER_HEADS_REVERSED};
static const cpu_indexer_faults idx_pairwise = {.order = CPU_INDEXER_PAIRWISE_HEADS};
static const cpu_indexer_faults idx_fma = {.order = CPU_INDEXER_FMA};
static const cpu_indexer_faults idx_scale_first = {.order = CPU_INDEXER_SCALE_FIRST};

static int run_idx(void *ctx, const attest_kernel_args *args)
{
    return cpu_indexer_compute((const cpu_indexer_faults *)ctx, args);
}

static int supports_idx(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    return cpu_indexer_supports(NULL, args) && args->u.indexer.params->heads <= 256;
}

static int init_heads_reversed(void **ctx) { *ctx = (void *)&idx_heads_reversed; return 0; }
static int init_pairwise(void **ctx) { *ctx = (void *)&idx_pairwise; return 0; }
static int init_fma(void **ctx) { *ctx = (void *)&idx_fma; return 0; }
static int init_scale_first(void **ctx) { *ctx = (void *)&idx_scale_first; return 0; }

static const cpu_mla_faults mla_tile16 = {.tile = 16};
static const cpu_mla_faults mla_tile256 = {.tile = 256};
static const cpu_mla_faults mla_reverse = {.reverse_merge = 1};
static const cpu_mla_faults mla_exp2 = {.exp2 = 1, .tile = 32};
static const cpu_mla_faults mla_bf16_pv = {.bf16_pv = 1};

static int run_mla(void *ctx, const attest_kernel_args *args)
{
    return cpu_mla_compute((const cpu_mla_faults *)ctx, args);
}

static int supports_mla(void *ctx, const attest_kernel_args *args)
{
    const cpu_mla_faults *f = ctx;
    if (!cpu_mla_supports(NULL, args)) return 0;
    return cpu_mla_tiles(args->u.mla.params, f->tile > 0 ? f->tile : CPU_MLA_TILE) <=
           CPU_MLA_MAX_TILES;
}

static int init_tile16(void **ctx) { *ctx = (void *)&mla_tile16; return 0; }
static int init_tile256(void **ctx) { *ctx = (void *)&mla_tile256; return 0; }
static int init_reverse(void **ctx) { *ctx = (void *)&mla_reverse; return 0; }
static int init_exp2(void **ctx) { *ctx = (void *)&mla_exp2; return 0; }
static int init_bf16_pv(void **ctx) { *ctx = (void *)&mla_bf16_pv; return 0; }

#define ORDER_CANDIDATE(var, cname, kern, init_fn, run_fn, sup_fn, desc, ...)                      \
    static const attest_candidate var = {                                                          \
        .abi_version = ATTEST_CANDIDATE_ABI_VERSION,                                               \
        .struct_size = sizeof(attest_candidate),                                                   \
        .name = cname,                                                                             \
        .description = desc,                                                                       \
        .kernel = kern,                                                                            \
        .domain = ATTEST_DOMAIN_HOST,                                                              \
        .conventions = {.masking = ATTEST_MASK_NEG_INF,                                            \
                        .lse_convention = ATTEST_LSE_EXCLUDES_SINK,                                \
                        __VA_ARGS__},                                                              \
        .init = init_fn,                                                                           \
        .supports = sup_fn,                                                                        \
        .run = run_fn,                                                                             \
    }

ORDER_CANDIDATE(c_heads_reversed, "cpu-indexer-heads-reversed", ATTEST_KERNEL_INDEXER,
                init_heads_reversed, run_idx, supports_idx,
                "cpu-indexer, heads summed last to first (a false-alarm control)");
ORDER_CANDIDATE(c_pairwise, "cpu-indexer-pairwise", ATTEST_KERNEL_INDEXER, init_pairwise, run_idx,
                supports_idx, "cpu-indexer, head terms summed as a balanced tree (control)");
ORDER_CANDIDATE(c_fma, "cpu-indexer-fma", ATTEST_KERNEL_INDEXER, init_fma, run_idx, supports_idx,
                "cpu-indexer with fused multiply-adds (control)");
ORDER_CANDIDATE(c_scale_first, "cpu-indexer-scale-first", ATTEST_KERNEL_INDEXER,
                init_scale_first, run_idx, supports_idx,
                "cpu-indexer in the README order, relu(q . (k * scale)) with torch's relu "
                "(relu_nan=propagates; a control)",
                .relu_nan = ATTEST_RELU_NAN_PROPAGATES);
ORDER_CANDIDATE(c_tile16, "cpu-mla-decode-tile16", ATTEST_KERNEL_MLA_DECODE, init_tile16, run_mla,
                supports_mla, "cpu-mla-decode with 16-index splits (control)");
ORDER_CANDIDATE(c_tile256, "cpu-mla-decode-tile256", ATTEST_KERNEL_MLA_DECODE, init_tile256,
                run_mla, supports_mla, "cpu-mla-decode with 256-index splits (control)");
ORDER_CANDIDATE(c_reverse, "cpu-mla-decode-reverse-merge", ATTEST_KERNEL_MLA_DECODE, init_reverse,
                run_mla, supports_mla, "cpu-mla-decode, splits merged last to first (control)");
ORDER_CANDIDATE(c_bf16_pv, "cpu-mla-decode-bf16pv", ATTEST_KERNEL_MLA_DECODE, init_bf16_pv,
                run_mla, supports_mla,
                "cpu-mla-decode with K/V and P in bf16 (FlashMLA's formats; judge with "
                "policies/bf16-tensor-core.json)");
ORDER_CANDIDATE(c_exp2, "cpu-mla-decode-exp2", ATTEST_KERNEL_MLA_DECODE, init_exp2, run_mla,
                supports_mla, "cpu-mla-decode, exp2-based softmax, 32-index splits (control)");

const attest_candidate *const *cpu_order_candidates(size_t *count)
{
    static const attest_candidate *const list[] = {&c_heads_reversed, &c_pairwise, &c_fma,
                                                   &c_scale_first,    &c_tile16,   &c_tile256,
                                                   &c_reverse,        &c_exp2,     &c_bf16_pv};
    *count = sizeof list / sizeof list[0];
    return list;
}
