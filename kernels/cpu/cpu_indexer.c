/* cpu-indexer: the DSA indexer (docs/kernels.md section 5) written the way a GPU kernel is, in float32.
 *
 * Work is split like DeepGEMM's paged MQA-logits kernel: one (request, cache block) at a time,
 * all next_n rows of the request together. A block that lies entirely past every row's valid
 * length is not loaded at all (not even its block-table entry): its logits are written as -inf
 * directly. That early exit is the behaviour the harness must accept as equal to a kernel that
 * computes everything and masks afterwards.
 *
 * Per position: for each head fmaxf(dot_fp32(q, k), 0) * w, summed over heads, times the
 * position's fp32 scale last (so relu(NaN) = 0 as in DeepGEMM). The cache is read at the byte
 * offsets of the c4-indexer layout, hard-coded here as a kernel has them, independently of the
 * harness's layout codec.
 *
 * In the sequential and heads-reversed orders a block's 64 positions are vector lanes
 * (block_logits) over keys decoded transposed; per position the operations and their order are
 * those of position_logit, so the logits are the same bits (bench_references --digest).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/isa.h"
#include "attest/numerics.h"
#include "cpu_kernels.h"

enum {
    C4_BLOCK = 64,            /* positions per block */
    C4_DIM = 128,             /* fp8 elements per position */
    C4_SCALES = 64 * 128,     /* byte offset of the fp32 scales in a block */
    C4_BLOCK_BYTES = 8448
};

int cpu_indexer_row_len(const attest_indexer_params *p, const int32_t *context_lens, int row,
                        int no_causal)
{
    int req = row / p->next_n, j = row % p->next_n;
    int64_t len = context_lens[req];
    if (!no_causal) len = len - p->next_n + j + 1; /* slot j sees t <= L - next_n + j */
    if (len < 0) len = 0;
    if (len > p->max_len) len = p->max_len;
    return (int)len;
}

int cpu_indexer_supports(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    if (args->kernel != ATTEST_KERNEL_INDEXER || args->domain != ATTEST_DOMAIN_HOST) return 0;
    const attest_indexer_params *p = args->u.indexer.params;
    return p->head_dim == C4_DIM && p->next_n > 0 && p->heads > 0;
}

static float load_f32(const uint8_t *p)
{
    float v;
    memcpy(&v, p, sizeof v); /* the layout stores little-endian fp32; so does every host we run */
    return v;
}

/* Logit of one position whose fp8 row is k (already decoded) for the q rows of one request row,
 * in the given evaluation order. */
static float position_logit(const float *q, const float *w, int heads, const float *k, float scale,
                            cpu_indexer_order order)
{
    float terms[256];
    float ks[C4_DIM];
    if (order == CPU_INDEXER_SCALE_FIRST)
        for (int d = 0; d < C4_DIM; d++) ks[d] = k[d] * scale;
    const float *kk = order == CPU_INDEXER_SCALE_FIRST ? ks : k;
    /* Scale first is the README form relu(dot(q, k * scale)); it equals the kernel form
     * (fmax(dot, 0) * w, scale last) only for finite positive scales, so it is a function of its
     * own on NaN, infinite, zero and negative scales: torch's relu, which keeps a NaN, as the
     * `propagates` convention its candidate declares. */
    const int keep_nan = order == CPU_INDEXER_SCALE_FIRST;
    float sum = 0.0f;
    for (int i = 0; i < heads; i++) {
        const int h = order == CPU_INDEXER_HEADS_REVERSED ? heads - 1 - i : i;
        const float *qh = q + (size_t)h * C4_DIM;
        float dot = 0.0f;
        if (order == CPU_INDEXER_FMA)
            for (int d = 0; d < C4_DIM; d++) dot = fmaf(qh[d], kk[d], dot);
        else
            for (int d = 0; d < C4_DIM; d++) dot += qh[d] * kk[d];
        if (order == CPU_INDEXER_FMA)
            sum = fmaf(fmaxf(dot, 0.0f), w[h], sum);
        else if (order == CPU_INDEXER_PAIRWISE_HEADS && heads <= 256)
            terms[h] = fmaxf(dot, 0.0f) * w[h];
        else if (keep_nan && dot != dot)
            sum += dot * w[h];
        else
            sum += fmaxf(dot, 0.0f) * w[h];
    }
    if (order == CPU_INDEXER_PAIRWISE_HEADS && heads <= 256) {
        for (int n = heads; n > 1; n = (n + 1) / 2) {
            for (int i = 0; i < n / 2; i++) terms[i] = terms[2 * i] + terms[2 * i + 1];
            if (n % 2) terms[n / 2] = terms[n - 1];
        }
        sum = terms[0];
    }
    return order == CPU_INDEXER_SCALE_FIRST ? sum : sum * scale;
}

/* A block's positions as vectors of IDX_LANES lanes (the compiler splits them into what the
 * target has); every lane is its own float32 sum, in the scalar loop's order. */
enum { IDX_LANES = 16, IDX_VECS = C4_BLOCK / IDX_LANES };
typedef float idx_v __attribute__((vector_size(IDX_LANES * sizeof(float))));
typedef int32_t idx_vi __attribute__((vector_size(IDX_LANES * sizeof(int32_t))));

/* Logits of the 64 positions of one block for one request row, in the sequential or the
 * heads-reversed order: kt is the block's decoded keys transposed ([C4_DIM][C4_BLOCK], zeros
 * past the positions read), scale the positions' scales. Per lane the same operations as
 * position_logit: a dim-ordered float32 dot, fmaxf(dot, 0) * w[h] summed in head order, times
 * the scale last. fmaxf(x, 0) is written x >= 0 ? x : +0 (a NaN gives 0), which is what glibc's
 * fmaxf returns, -0 included. */
ATTEST_ISA_BODY void block_logits_body(const float *q, const float *w, int heads, int reversed,
                                       const float *kt, const float *scale, float *out)
{
    idx_v sum[IDX_VECS];
    memset(sum, 0, sizeof sum);
    for (int i = 0; i < heads; i++) {
        const int h = reversed ? heads - 1 - i : i;
        const float *qh = q + (size_t)h * C4_DIM;
        idx_v dot[IDX_VECS];
        memset(dot, 0, sizeof dot);
        for (int d = 0; d < C4_DIM; d++) {
            const float qd = qh[d];
            for (int v = 0; v < IDX_VECS; v++) {
                idx_v x;
                memcpy(&x, kt + (size_t)d * C4_BLOCK + (size_t)v * IDX_LANES, sizeof x);
                dot[v] += qd * x;
            }
        }
        const float wh = w[h];
        for (int v = 0; v < IDX_VECS; v++) {
            const idx_vi keep = dot[v] >= 0.0f;
            const idx_v relu = (idx_v)((idx_vi)dot[v] & keep);
            sum[v] += relu * wh;
        }
    }
    for (int v = 0; v < IDX_VECS; v++) {
        idx_v sc;
        memcpy(&sc, scale + (size_t)v * IDX_LANES, sizeof sc);
        const idx_v logit = sum[v] * sc;
        memcpy(out + (size_t)v * IDX_LANES, &logit, sizeof logit);
    }
}
ATTEST_ISA_VARIANTS(block_logits, (const float *q, const float *w, int heads, int reversed,
                                   const float *kt, const float *scale, float *out),
                    (q, w, heads, reversed, kt, scale, out))

static void mask_range(float *row, int t0, int t1, cpu_indexer_mask mask)
{
    if (mask == CPU_MASK_SKIP) return;
    float v = mask == CPU_MASK_ZERO ? 0.0f : -INFINITY;
    for (int t = t0; t < t1; t++) row[t] = v;
}

/* The compute scratch, kept per thread and grown to the largest case seen (up to a bound): a
 * fuzz target runs the kernel on one small case after another, and an allocation per run is
 * what the whole exec otherwise spends on nothing. Larger cases own theirs. */
#define IDX_SCRATCH_KEEP ((size_t)64 << 20)
static _Thread_local struct {
    void *block;
    size_t cap; /* bytes */
} idx_scratch;

static void *idx_take_scratch(size_t bytes, void **owned)
{
    *owned = NULL;
    if (bytes > IDX_SCRATCH_KEEP) return *owned = malloc(bytes);
    if (bytes > idx_scratch.cap) {
        void *grown = malloc(bytes);
        if (!grown) return NULL;
        free(idx_scratch.block);
        idx_scratch.block = grown;
        idx_scratch.cap = bytes;
    }
    return idx_scratch.block;
}

int cpu_indexer_compute(const cpu_indexer_faults *f, const attest_kernel_args *args)
{
    const attest_indexer_args *a = &args->u.indexer;
    const attest_indexer_params *p = a->params;
    const int n = p->next_n, heads = p->heads, width = p->max_len;
    const int nblk = (width + C4_BLOCK - 1) / C4_BLOCK;
    const size_t q_row = (size_t)heads * C4_DIM;

    float lut[256];
    for (int i = 0; i < 256; i++) lut[i] = attest_fp8_decode((uint8_t)i);

    /* The sequential and heads-reversed orders run a block's positions as vector lanes
     * (block_logits); the others keep the scalar loop of position_logit. */
    const int vector_order =
        f->order == CPU_INDEXER_SEQUENTIAL || f->order == CPU_INDEXER_HEADS_REVERSED;
    const size_t floats = q_row * (size_t)n + C4_DIM +
                          (vector_order ? (size_t)C4_DIM * C4_BLOCK + 2 * C4_BLOCK : 0);
    void *owned = NULL;
    float *q = idx_take_scratch(sizeof(float) * floats +
                                    (f->table_extent ? sizeof(int32_t) * (size_t)p->b : 0),
                                &owned);
    if (!q) return -1;
    int32_t *extent = f->table_extent ? (int32_t *)(q + floats) : NULL;
    float *k = q + q_row * (size_t)n;
    float *kt = vector_order ? k + C4_DIM : NULL;
    float *scales = vector_order ? kt + (size_t)C4_DIM * C4_BLOCK : NULL;
    float *block_out = vector_order ? scales + C4_BLOCK : NULL;
    const uint8_t *rows[C4_BLOCK]; /* the block's key codes, by position */
    int rc = 0;
    const int32_t *lens = a->context_lens;
    if (extent) {
        for (int r = 0; r < p->b; r++) {
            int j = 0;
            while (j < p->blocks_per_req && a->block_table[(size_t)r * p->blocks_per_req + j] >= 0) j++;
            extent[r] = j * C4_BLOCK < width ? j * C4_BLOCK : width;
        }
        lens = extent;
    }

    for (int req = 0; req < p->b && rc == 0; req++) {
        const uint8_t *qb = a->q_fp8 + (size_t)req * n * q_row;
        for (size_t i = 0; i < q_row * (size_t)n; i++) q[i] = lut[qb[i]];
        /* The last MTP row sees the most positions: past it, every row is masked. */
        int req_len = cpu_indexer_row_len(p, lens, req * n + n - 1, f->no_causal);

        for (int blk = 0; blk < nblk; blk++) {
            const int t0 = blk * C4_BLOCK;
            const int t1 = t0 + C4_BLOCK < width ? t0 + C4_BLOCK : width;
            if (t0 >= req_len) { /* early exit: the block is never touched */
                for (int j = 0; j < n; j++)
                    mask_range(a->logits + (size_t)(req * n + j) * width, t0, t1, f->mask);
                continue;
            }
            if (blk >= p->blocks_per_req) { rc = -1; break; }
            const int32_t phys = a->block_table[(size_t)req * p->blocks_per_req + blk];
            if (phys < 0 || phys >= p->num_blocks) { rc = -1; break; }
            const uint8_t *base = a->cache + (size_t)phys * C4_BLOCK_BYTES;

            const int t_end = req_len < t1 ? req_len : t1;
            for (int t = t0; t < t_end; t++) {
                const int s = t - t0;
                const uint8_t *kb, *sb;
                if (f->record_stride) {
                    kb = base + (size_t)s * f->record_stride;
                    sb = kb + C4_DIM;
                } else {
                    kb = base + (size_t)s * C4_DIM;
                    sb = base + C4_SCALES + 4 * (size_t)((s + f->scale_shift) % C4_BLOCK);
                }
                const float scale = load_f32(sb);
                if (vector_order) { /* transposed below, a tile of positions at a time */
                    rows[s] = kb;
                    scales[s] = scale;
                    continue;
                }
                for (int d = 0; d < C4_DIM; d++) k[d] = lut[kb[d]];
                for (int j = 0; j < n; j++) {
                    const int row = req * n + j;
                    if (t >= cpu_indexer_row_len(p, lens, row, f->no_causal)) continue;
                    a->logits[(size_t)row * width + t] =
                        position_logit(q + (size_t)j * q_row, a->weights + (size_t)row * heads,
                                       heads, k, scale, f->order);
                }
            }
            if (vector_order) {
                /* Positions not read stay zero: lanes computed and never written out. */
                const int s0 = t_end - t0;
                /* Eight positions per dimension: contiguous stores into kt's rows (a position's
                 * 128 stores strided by the block were 9% of an indexer fuzz exec). */
                for (int g = 0; g < s0; g += 8) {
                    if (s0 - g >= 8) {
                        for (int d = 0; d < C4_DIM; d++)
                            for (int i = 0; i < 8; i++)
                                kt[(size_t)d * C4_BLOCK + (size_t)(g + i)] = lut[rows[g + i][d]];
                    } else {
                        for (int d = 0; d < C4_DIM; d++)
                            for (int i = g; i < s0; i++)
                                kt[(size_t)d * C4_BLOCK + (size_t)i] = lut[rows[i][d]];
                    }
                }
                if (s0 < C4_BLOCK) { /* a run per dimension (a store per element was a tenth of
                                      * a short case's candidate) */
                    const size_t tail = sizeof(float) * (size_t)(C4_BLOCK - s0);
                    for (int d = 0; d < C4_DIM; d++) memset(kt + (size_t)d * C4_BLOCK + s0, 0, tail);
                    memset(scales + s0, 0, tail);
                }
                for (int j = 0; j < n; j++) {
                    const int row = req * n + j;
                    const int len = cpu_indexer_row_len(p, lens, row, f->no_causal);
                    if (len <= t0) continue;
                    block_logits(q + (size_t)j * q_row, a->weights + (size_t)row * heads, heads,
                                 f->order == CPU_INDEXER_HEADS_REVERSED, kt, scales, block_out);
                    const int w_end = len < t_end ? len : t_end;
                    memcpy(a->logits + (size_t)row * width + t0, block_out,
                           sizeof(float) * (size_t)(w_end - t0));
                }
            }
            for (int j = 0; j < n; j++) {
                const int row = req * n + j;
                const int len = cpu_indexer_row_len(p, lens, row, f->no_causal);
                mask_range(a->logits + (size_t)row * width, len > t0 ? len : t0, t1, f->mask);
            }
        }
    }
    free(owned);
    return rc;
}

static int run_indexer(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    static const cpu_indexer_faults correct = {0};
    return cpu_indexer_compute(&correct, args);
}

const attest_candidate cpu_indexer_candidate = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "cpu-indexer",
    .description = "float32 indexer, one (request, block) at a time, early exit past the length",
    .kernel = ATTEST_KERNEL_INDEXER,
    .domain = ATTEST_DOMAIN_HOST,
    .conventions = {.masking = ATTEST_MASK_NEG_INF, .lse_convention = ATTEST_LSE_EXCLUDES_SINK},
    .supports = cpu_indexer_supports,
    .run = run_indexer,
};
