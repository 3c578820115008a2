/* Mutants: deliberately broken variants of the built-in CPU candidates, built with ATTEST_MUTANTS.
 *
 * They keep the harness honest: each one carries one realistic kernel bug, and the harness must
 * give it a failing verdict while the correct candidates pass. Numeric faults are switched on in
 * the correct kernels' own code (cpu_indexer_faults / cpu_mla_faults), so a mutant differs from
 * its parent by exactly one bug. Faults of the execution itself (out-of-bounds write, crash,
 * hang) wrap the correct kernel. Crash and hang fire only on some cases (a request of length 0, a
 * query with no valid index) so that a campaign shows the run going on around them.
 */
#include <signal.h>
#include <stdint.h>

#include "cpu_kernels.h"

/* Triggers ------------------------------------------------------------------------------------ */

static int indexer_has_empty_request(const attest_indexer_args *a)
{
    for (int32_t r = 0; r < a->params->b; r++)
        if (a->context_lens[r] <= 0) return 1;
    return 0;
}

static int scope_query_has_valid(const int32_t *idx, int32_t topk, int32_t used)
{
    if (used > topk) used = topk;
    for (int32_t i = 0; i < used; i++)
        if (idx[i] != -1) return 1;
    return 0;
}

/* A query none of whose slots (within topk_length, over both scopes) holds an index. */
static int mla_has_lonely_query(const attest_mla_args *a)
{
    const attest_mla_params *p = a->params;
    for (int32_t b = 0; b < p->b; b++) {
        for (int32_t s = 0; s < p->s_q; s++) {
            const size_t q = (size_t)b * p->s_q + s;
            int32_t used = p->has_topk_length && a->topk_length ? a->topk_length[b] : p->topk;
            int valid = scope_query_has_valid(a->indices + q * p->topk, p->topk, used);
            if (p->has_extra) {
                used = p->has_extra_topk_length && a->extra_topk_length ? a->extra_topk_length[b]
                                                                        : p->extra_topk;
                valid |= scope_query_has_valid(a->extra_indices + q * p->extra_topk,
                                               p->extra_topk, used);
            }
            if (!valid) return 1;
        }
    }
    return 0;
}

static void spin_forever(void)
{
    volatile int spin = 1; /* volatile: the loop has a side effect, so it is not UB to remove */
    while (spin) {
    }
}

/* Run functions ------------------------------------------------------------------------------- */

#define INDEXER_FAULT(fn, ...)                                                                     \
    static int fn(void *ctx, const attest_kernel_args *args)                                       \
    {                                                                                              \
        (void)ctx;                                                                                 \
        static const cpu_indexer_faults faults = {__VA_ARGS__};                                    \
        return cpu_indexer_compute(&faults, args);                                                 \
    }

#define MLA_FAULT(fn, ...)                                                                         \
    static int fn(void *ctx, const attest_kernel_args *args)                                       \
    {                                                                                              \
        (void)ctx;                                                                                 \
        static const cpu_mla_faults faults = {__VA_ARGS__};                                        \
        return cpu_mla_compute(&faults, args);                                                     \
    }

INDEXER_FAULT(run_indexer_scale_shift, .scale_shift = 1)
INDEXER_FAULT(run_indexer_zero_mask, .mask = CPU_MASK_ZERO)
INDEXER_FAULT(run_indexer_skip_mask, .mask = CPU_MASK_SKIP)
INDEXER_FAULT(run_indexer_records, .record_stride = 132)
INDEXER_FAULT(run_indexer_no_causal, .no_causal = 1)
INDEXER_FAULT(run_indexer_table_extent, .table_extent = 1)

MLA_FAULT(run_mla_scale_shift, .scale_shift = 1)
MLA_FAULT(run_mla_payload_stride, .payload_stride = 1)
MLA_FAULT(run_mla_int32_offsets, .int32_offsets = 1)
MLA_FAULT(run_mla_no_merge_guard, .no_merge_guard = 1)
MLA_FAULT(run_mla_nan_slot, .clamp_invalid = 1)
MLA_FAULT(run_mla_ignore_length, .ignore_topk_length = 1)

static const cpu_indexer_faults indexer_correct;
static const cpu_mla_faults mla_correct;

static int run_indexer_write_past_end(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    int rc = cpu_indexer_compute(&indexer_correct, args);
    const attest_indexer_params *p = args->u.indexer.params;
    args->u.indexer.logits[(size_t)p->b * p->next_n * p->max_len] = 1.0f; /* one past the end */
    return rc;
}

static int run_indexer_crash(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    if (indexer_has_empty_request(&args->u.indexer)) raise(SIGSEGV);
    return cpu_indexer_compute(&indexer_correct, args);
}

static int run_indexer_hang(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    if (indexer_has_empty_request(&args->u.indexer)) spin_forever();
    return cpu_indexer_compute(&indexer_correct, args);
}

static int run_mla_write_past_end(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    int rc = cpu_mla_compute(&mla_correct, args);
    const attest_mla_params *p = args->u.mla.params;
    args->u.mla.out[(size_t)p->b * p->s_q * p->h_q * p->d_v] = 0x3F80u; /* bf16 1.0, one past */
    return rc;
}

static int run_mla_crash(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    if (mla_has_lonely_query(&args->u.mla)) raise(SIGSEGV);
    return cpu_mla_compute(&mla_correct, args);
}

static int run_mla_hang(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    if (mla_has_lonely_query(&args->u.mla)) spin_forever();
    return cpu_mla_compute(&mla_correct, args);
}

/* The candidates -------------------------------------------------------------------------------- */

#define MUTANT(var, mname, kern, supp, fn, desc)                                                   \
    static const attest_candidate var = {                                                          \
        .abi_version = ATTEST_CANDIDATE_ABI_VERSION,                                               \
        .struct_size = sizeof(attest_candidate),                                                   \
        .name = mname,                                                                             \
        .description = desc,                                                                       \
        .kernel = kern,                                                                            \
        .domain = ATTEST_DOMAIN_HOST,                                                              \
        .conventions = {.masking = ATTEST_MASK_NEG_INF,                                            \
                        .lse_convention = ATTEST_LSE_EXCLUDES_SINK},                               \
        .supports = supp,                                                                          \
        .run = fn,                                                                                 \
    };
#define INDEXER_MUTANT(var, mname, fn, desc)                                                       \
    MUTANT(var, mname, ATTEST_KERNEL_INDEXER, cpu_indexer_supports, fn, desc)
#define MLA_MUTANT(var, mname, fn, desc)                                                           \
    MUTANT(var, mname, ATTEST_KERNEL_MLA_DECODE, cpu_mla_supports, fn, desc)

INDEXER_MUTANT(m_ix_scale, "mutant-indexer-scale-off-by-one", run_indexer_scale_shift,
               "cpu-indexer reading position t+1's scale (mod 64)")
INDEXER_MUTANT(m_ix_zero, "mutant-indexer-zero-past-length", run_indexer_zero_mask,
               "cpu-indexer writing 0.0 instead of -inf past the length")
INDEXER_MUTANT(m_ix_skip, "mutant-indexer-unwritten-past-length", run_indexer_skip_mask,
               "cpu-indexer leaving logits past the length unwritten")
INDEXER_MUTANT(m_ix_records, "mutant-indexer-132-byte-records", run_indexer_records,
               "cpu-indexer taking the [64,1,132] view for 132-byte records (wrong stride)")
INDEXER_MUTANT(m_ix_causal, "mutant-indexer-no-mtp-causal", run_indexer_no_causal,
               "cpu-indexer letting every MTP row see all L positions")
INDEXER_MUTANT(m_ix_extent, "mutant-indexer-reads-past-blocks", run_indexer_table_extent,
               "cpu-indexer ending a request at its block-table row's first -1, not its length")
INDEXER_MUTANT(m_ix_oob, "mutant-indexer-write-past-end", run_indexer_write_past_end,
               "cpu-indexer writing one float past the logits")
INDEXER_MUTANT(m_ix_crash, "mutant-indexer-crash", run_indexer_crash,
               "cpu-indexer raising SIGSEGV on a case with a length-0 request")
INDEXER_MUTANT(m_ix_hang, "mutant-indexer-hang", run_indexer_hang,
               "cpu-indexer spinning forever on a case with a length-0 request")
MLA_MUTANT(m_mla_scale, "mutant-mla-scale-off-by-one", run_mla_scale_shift,
           "cpu-mla-decode dequantizing tile i with scale i+1")
MLA_MUTANT(m_mla_stride, "mutant-mla-payload-stride", run_mla_payload_stride,
           "cpu-mla-decode using P*token_bytes as the page stride (not the padded stride)")
MLA_MUTANT(m_mla_int32, "mutant-mla-int32-offsets", run_mla_int32_offsets,
           "cpu-mla-decode computing page byte offsets in int32 (wrong past 2^31 bytes)")
MLA_MUTANT(m_mla_guard, "mutant-mla-no-merge-guard", run_mla_no_merge_guard,
           "cpu-mla-decode merging an all-invalid tile as 0/0 (NaN)")
MLA_MUTANT(m_mla_nan, "mutant-mla-reads-nan-slot", run_mla_nan_slot,
           "cpu-mla-decode loading slot 0 for -1 indices and weighting it by 0 (0*NaN)")
MLA_MUTANT(m_mla_len, "mutant-mla-ignores-topk-length", run_mla_ignore_length,
           "cpu-mla-decode using every top-k slot regardless of topk_length")
MLA_MUTANT(m_mla_oob, "mutant-mla-write-past-end", run_mla_write_past_end,
           "cpu-mla-decode writing one bf16 past the output")
MLA_MUTANT(m_mla_crash, "mutant-mla-crash", run_mla_crash,
           "cpu-mla-decode raising SIGSEGV on a case with a lonely query")
MLA_MUTANT(m_mla_hang, "mutant-mla-hang", run_mla_hang,
           "cpu-mla-decode spinning forever on a case with a lonely query")

static const attest_candidate *const mutants[] = {
    &m_ix_scale, &m_ix_zero,  &m_ix_skip,   &m_ix_records, &m_ix_causal, &m_ix_extent, &m_ix_oob,
    &m_ix_crash, &m_ix_hang,  &m_mla_scale, &m_mla_stride, &m_mla_int32, &m_mla_guard, &m_mla_nan,
    &m_mla_len,  &m_mla_oob,  &m_mla_crash, &m_mla_hang,
};

const attest_candidate *const *cpu_mutant_candidates(size_t *count)
{
    *count = sizeof mutants / sizeof mutants[0];
    return mutants;
}
