/* attest: internal interface of the built-in CPU candidates.
 *
 * The correct kernels take a configuration struct so that the mutants (mutants.c) reuse the very
 * same code with one deliberate fault switched on; the correct candidates run with the zeroed
 * ("no fault") configuration. Not a public header: only kernels/ includes it.
 */
#ifndef ATTEST_CPU_KERNELS_H
#define ATTEST_CPU_KERNELS_H

#include <stddef.h>

#include "attest/candidate.h"

/* What the indexer writes past a row's valid length. */
typedef enum cpu_indexer_mask {
    CPU_MASK_NEG_INF = 0, /* correct: -inf (the declared convention) */
    CPU_MASK_ZERO = 1,    /* fault: 0.0 */
    CPU_MASK_SKIP = 2     /* fault: leaves the output as it was (unwritten) */
} cpu_indexer_mask;

/* Evaluation orders of the indexer: every one is correct, and each is a false-alarm control
 * (orders.c) that the computed bounds must accept. */
typedef enum cpu_indexer_order {
    CPU_INDEXER_SEQUENTIAL = 0,     /* heads 0..H-1, dot products d = 0..D-1, scale last */
    CPU_INDEXER_HEADS_REVERSED = 1, /* heads H-1..0 */
    CPU_INDEXER_PAIRWISE_HEADS = 2, /* head terms summed as a balanced tree */
    CPU_INDEXER_FMA = 3,            /* fmaf in the dot products and the head sum */
    CPU_INDEXER_SCALE_FIRST = 4     /* the key scale folded into each key element first */
} cpu_indexer_order;

/* Faults of the indexer; all zero is the correct kernel. */
typedef struct cpu_indexer_faults {
    int scale_shift;       /* reads the scale of position t + scale_shift (mod 64) */
    cpu_indexer_mask mask; /* what to write past the length */
    int record_stride;     /* != 0: reads position t at t*record_stride (the [64,1,132] view bug) */
    int no_causal;         /* every MTP row of a request sees all L positions */
    int table_extent;      /* a request ends where its block-table row does (its first negative
                              entry, or the row's end), not at context_lens: it reads the blocks
                              past its own, which serving engines leave as -1 or stale ids */
    cpu_indexer_order order; /* not a fault: a correct evaluation order */
} cpu_indexer_faults;

/* Faults of the sparse MLA decode; all zero is the correct kernel. */
typedef struct cpu_mla_faults {
    int scale_shift;        /* dequantizes tile i with scale i + scale_shift */
    int payload_stride;     /* page base = page * P * token_bytes instead of page_stride */
    int no_merge_guard;     /* no special case for an all-invalid tile (0/0 and -inf - -inf) */
    int clamp_invalid;      /* -1 reads slot 0 and is masked only through its probability */
    int ignore_topk_length; /* uses every slot of the top-k list */
    int int32_offsets;      /* a page's byte offset computed in 32-bit arithmetic: wraps past
                               2^31 bytes (shows only on pools that large, test_sparse_pool.c) */
    /* Not faults: correct evaluation orders, the false-alarm controls of orders.c. */
    int tile;               /* indices per split (0: CPU_MLA_TILE) */
    int reverse_merge;      /* merges the splits last to first */
    int exp2;               /* exp2f((s - m) * log2(e)), as GPU kernels compute the softmax */
    int bf16_pv;            /* K/V dequantized to bf16 and P rounded to bf16 for P*V, as FlashMLA
                             * does: correct under policies/bf16-tensor-core.json only */
} cpu_mla_faults;

#define CPU_MLA_TILE 64 /* top-k indices per split, as a split-KV kernel's block */
#define CPU_MLA_LANES 16 /* slots per transposed key block of cpu-mla-decode's dot products */
#define CPU_MLA_MAX_TILES 512 /* 8192 indices in 16-index splits over both scopes */

/* Runs the indexer with the given faults. Returns 0, or nonzero when the arguments are not
 * something this kernel can address (a block index outside the block table). */
int cpu_indexer_compute(const cpu_indexer_faults *faults, const attest_kernel_args *args);

/* Returns 1 if the indexer kernel can run these arguments (host domain, head_dim 128). */
int cpu_indexer_supports(void *ctx, const attest_kernel_args *args);

/* Runs the sparse MLA decode with the given faults. Returns 0, nonzero on an out-of-range index
 * (other than -1) or when scratch memory cannot be allocated. */
int cpu_mla_compute(const cpu_mla_faults *faults, const attest_kernel_args *args);

/* Returns 1 if the decode kernel can run these arguments (mla-v4 with d_qk 512 or mla-v32 with
 * d_qk 576, d_v 512, page stride at least the page payload). */
int cpu_mla_supports(void *ctx, const attest_kernel_args *args);

/* Number of splits of `tile` indices over both scopes of a decode case. */
int cpu_mla_tiles(const attest_mla_params *p, int tile);

/* Valid length of indexer row `row` under the MTP causal rule, clamped to [0, max_len]. */
int cpu_indexer_row_len(const attest_indexer_params *p, const int32_t *context_lens, int row,
                        int no_causal);

extern const attest_candidate cpu_indexer_candidate;
extern const attest_candidate cpu_mla_decode_candidate;

/* The correct kernels in other evaluation orders (static storage); sets *count. */
const attest_candidate *const *cpu_order_candidates(size_t *count);

#ifdef ATTEST_WITH_MUTANTS
/* Returns the mutant candidates (static storage) and sets *count. */
const attest_candidate *const *cpu_mutant_candidates(size_t *count);
#endif

#endif /* ATTEST_CPU_KERNELS_H */
