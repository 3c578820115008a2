/* bench_references: times the CPU references on production shapes.
 *
 *   bench_references [--reps N] [--quick] [--only ROW] [--digest N] [--kernels]
 *
 * Cases are built here by hand (random bytes at the layouts' offsets, no generator), so the
 * benchmark depends only on the case and reference APIs. Each row prints the median of N calls
 * (default 5; CPU time of the thread) and a throughput: GFLOP/s counts 2 flops per multiply-add
 * of the dot products and value sums; MB/s counts the cache bytes the call must read (selected tokens or valid positions).
 * --quick shrinks the largest shapes for a smoke run; --only ROW runs the ROW-th shape alone
 * (1-based; the top-k row goes with the last indexer shape), e.g. under `perf stat`.
 * --kernels also times the built-in float32 kernels (cpu-mla-decode, cpu-indexer) on each
 * shape, a row after the reference's: their vector loops are the other per-ISA code
 * (attest/isa.h).
 *
 * --digest N prints, instead of timings, a digest of the bytes of every reference output and
 * every computed bound of N generated cases per family (seed 1; default bounds, then a quarter
 * as many with --max-heads 128 --max-topk 512), through attest_ref_bounds and attest_ref_compute
 * (which skips the bounds' work), and of the outputs of the built-in float32 kernels
 * (cpu-indexer, cpu-mla-decode) on the same cases: a change that makes the references or the
 * kernels faster without changing what they compute leaves the digest as it was
 * (bench/compare.sh builds both revisions with this file).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest/bound.h"
#include "attest/case.h"
#include "attest/generator.h"
#include "attest/numerics.h"
#include "attest/reference.h"
#include "attest/registry.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static int g_only, g_row; /* --only N: run the N-th shape alone (1-based), for perf stat */
static int g_kernels;     /* --kernels: the built-in CPU kernels' rows too */

static int skip_row(void) { return g_only != 0 && ++g_row != g_only; }

static uint64_t rnd(void)
{
    /* xorshift64*: plenty for filling benchmark inputs */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545F4914F6CDD1Dull;
}

static double urand(void) /* [-1, 1) */
{
    return (double)(rnd() >> 11) * 0x1p-52 - 1.0;
}

static uint8_t fp8_byte(void)
{
    uint8_t b = (uint8_t)rnd();
    return (b & 0x7F) == 0x7F ? 0x00 : b; /* no NaN codes */
}

/* The calling thread's CPU time, not attest_monotonic_seconds: on a shared, loaded machine the
 * time spent waiting for a core is not the reference's. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *tensor(attest_case *c, const char *name)
{
    attest_tensor *t = attest_case_tensor(c, name);
    if (t == NULL || t->data == NULL) {
        fprintf(stderr, "bench: case has no tensor %s\n", name);
        exit(2);
    }
    return t->data;
}

static void check(attest_status st, const char *what)
{
    if (st != ATTEST_OK) {
        fprintf(stderr, "bench: %s failed: %s\n", what, attest_last_error());
        exit(2);
    }
}

static void print_row(const char *kernel, const char *shape, double ms, double gflop, double gb)
{
    printf("| %-10s | %-54s | %9.2f | %8.2f | %8.1f |\n", kernel, shape, ms, gflop / (ms * 1e-3),
           1e3 * gb / (ms * 1e-3));
}

/* ---- mla decode ----------------------------------------------------------------------------- */

/* Fills a pool with random tokens: fp8 data, scales near 2^-5 (UE8M0 or fp32), bf16 rope. */
/* Times a built-in kernel on the case (outputs overwritten), a row named after it. */
static void bench_kernel(const char *name, attest_case *c, const char *shape, int reps,
                         double gflop, double gb)
{
    if (!g_kernels) return;
    const attest_candidate *cand = attest_builtin_find(name);
    if (!cand) {
        fprintf(stderr, "bench: no built-in %s\n", name);
        exit(2);
    }
    attest_kernel_args args;
    check(attest_case_args(c, &args), "case arguments");
    void *ctx = NULL;
    if (cand->init && cand->init(&ctx) != 0) exit(2);
    if (cand->supports && !cand->supports(ctx, &args)) {
        printf("| %-10s | %-54s | unsupported |\n", name, shape);
        if (cand->fini) cand->fini(ctx);
        return;
    }
    double *t = malloc((size_t)reps * sizeof *t);
    if (t == NULL) exit(2);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        if (cand->run(ctx, &args) != 0) {
            fprintf(stderr, "bench: %s failed\n", name);
            exit(2);
        }
        t[r] = now_s() - t0;
    }
    if (cand->fini) cand->fini(ctx);
    print_row(name, shape, 1e3 * median(t, reps), gflop, gb);
    free(t);
}

static void fill_mla_pool(attest_layout_id id, uint8_t *pool, int32_t pages, int32_t P,
                          int64_t stride)
{
    for (int32_t pg = 0; pg < pages; pg++) {
        uint8_t *page = pool + (size_t)pg * (size_t)stride;
        for (int32_t t = 0; t < P; t++) {
            if (id == ATTEST_LAYOUT_MLA_V4) {
                uint8_t *tok = page + (size_t)t * 576;
                for (int d = 0; d < 448; d++) tok[d] = fp8_byte();
                for (int d = 0; d < 64; d++) {
                    uint16_t r = attest_bf16_encode((float)urand());
                    memcpy(tok + 448 + 2 * d, &r, 2);
                }
                for (int i = 0; i < 7; i++) page[(size_t)P * 576 + (size_t)t * 8 + (size_t)i] = 122;
            } else {
                uint8_t *rec = page + (size_t)t * 656;
                for (int d = 0; d < 512; d++) rec[d] = fp8_byte();
                const float s = 0x1p-5f;
                for (int i = 0; i < 4; i++) memcpy(rec + 512 + 4 * i, &s, 4);
                for (int d = 0; d < 64; d++) {
                    uint16_t r = attest_bf16_encode((float)urand());
                    memcpy(rec + 528 + 2 * d, &r, 2);
                }
            }
        }
    }
}

/* b requests, each owning its own pages; indices are distinct tokens of the request's pages. */
static void fill_indices(int32_t *idx, int32_t b, int32_t topk, int32_t tokens_per_req)
{
    int32_t *perm = malloc((size_t)tokens_per_req * sizeof *perm);
    if (perm == NULL) exit(2);
    for (int32_t r = 0; r < b; r++) {
        for (int32_t i = 0; i < tokens_per_req; i++) perm[i] = i;
        for (int32_t i = tokens_per_req - 1; i > 0; i--) {
            int32_t j = (int32_t)(rnd() % (uint64_t)(i + 1)), tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        for (int32_t k = 0; k < topk; k++) idx[(size_t)r * topk + k] = r * tokens_per_req + perm[k];
    }
    free(perm);
}

static void bench_mla(attest_layout_id id, int32_t b, int32_t h_q, int32_t topk, int32_t P,
                      int32_t extra_topk, int with_sink, int reps)
{
    if (skip_row()) return;
    attest_case c;
    memset(&c, 0, sizeof c);
    c.kernel = ATTEST_KERNEL_MLA_DECODE;
    attest_mla_params *p = &c.params.mla;
    const int32_t tokens_per_req = (topk + P - 1) / P * P;
    p->layout = id;
    p->page_size = P;
    p->num_pages = b * tokens_per_req / P;
    p->b = b;
    p->s_q = 1;
    p->h_q = h_q;
    p->d_qk = id == ATTEST_LAYOUT_MLA_V4 ? 512 : 576;
    p->d_v = 512;
    p->topk = topk;
    p->sm_scale = (float)(1.0 / sqrt((double)p->d_qk));
    p->has_sink = with_sink;
    int32_t extra_per_req = (extra_topk + P - 1) / P * P;
    if (extra_topk > 0) {
        p->has_extra = 1;
        p->extra_page_size = P;
        p->extra_num_pages = b * extra_per_req / P;
        p->extra_topk = extra_topk;
    }
    check(attest_case_define_tensors(&c, 0), "define mla case");
    check(attest_case_alloc_heap(&c), "alloc mla case");
    fill_mla_pool(id, tensor(&c, "cache_bytes"), p->num_pages, P, p->page_stride);
    fill_indices(tensor(&c, "indices"), b, topk, tokens_per_req);
    if (extra_topk > 0) {
        fill_mla_pool(id, tensor(&c, "extra_cache_bytes"), p->extra_num_pages, P,
                      p->extra_page_stride);
        fill_indices(tensor(&c, "extra_indices"), b, extra_topk, extra_per_req);
    }
    uint16_t *q = tensor(&c, "q_bf16");
    for (size_t i = 0; i < (size_t)b * (size_t)h_q * (size_t)p->d_qk; i++)
        q[i] = attest_bf16_encode((float)urand());
    if (with_sink) {
        float *s = tensor(&c, "attn_sink");
        for (int32_t h = 0; h < h_q; h++) s[h] = (float)urand();
    }
    size_t n_out = (size_t)b * (size_t)h_q * 512;
    double *out = malloc(n_out * sizeof *out), *lse = malloc((size_t)b * h_q * sizeof *lse);
    double *t = malloc((size_t)reps * sizeof *t);
    if (out == NULL || lse == NULL || t == NULL) exit(2);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        check(attest_ref_mla_decode(&c, ATTEST_REF_SIMULATED, out, lse), "mla reference");
        t[r] = now_s() - t0;
    }
    for (int32_t i = 0; i < b * h_q; i++)
        if (!isfinite(lse[i])) fprintf(stderr, "bench: warning: non-finite lse at %d\n", i);
    const double keys = (double)b * (double)(topk + extra_topk);
    const double gflop = keys * h_q * 2.0 * (p->d_qk + p->d_v) * 1e-9;
    const double token_bytes = id == ATTEST_LAYOUT_MLA_V4 ? 584.0 : 656.0;
    const double gb = keys * token_bytes * 1e-9;
    char shape[96], extra[32] = "";
    if (extra_topk > 0) snprintf(extra, sizeof extra, " +extra %d", extra_topk);
    snprintf(shape, sizeof shape, "%s b=%d s_q=1 h=%d topk=%d%s P=%d%s", attest_layout_name(id), b,
             h_q, topk, extra, P, with_sink ? " sink" : "");
    print_row("mla-decode", shape, 1e3 * median(t, reps), gflop, gb);
    bench_kernel("cpu-mla-decode", &c, shape, reps, gflop, gb);
    free(out);
    free(lse);
    free(t);
    attest_case_free(&c);
}

/* ---- indexer and top-k ---------------------------------------------------------------------- */

static void bench_indexer(int32_t b, int32_t len, int32_t next_n, int reps, int with_topk)
{
    if (skip_row()) return;
    attest_case c;
    memset(&c, 0, sizeof c);
    c.kernel = ATTEST_KERNEL_INDEXER;
    attest_indexer_params *p = &c.params.indexer;
    const int32_t bpr = (len + 63) / 64;
    p->b = b;
    p->next_n = next_n;
    p->heads = 64;
    p->head_dim = 128;
    p->num_blocks = b * bpr;
    p->blocks_per_req = bpr;
    p->max_len = len;
    p->masking = ATTEST_MASK_NEG_INF;
    check(attest_case_define_tensors(&c, 0), "define indexer case");
    check(attest_case_alloc_heap(&c), "alloc indexer case");
    uint8_t *cache = tensor(&c, "cache_bytes");
    for (int32_t blk = 0; blk < p->num_blocks; blk++) {
        uint8_t *base = cache + (size_t)blk * 8448;
        for (int i = 0; i < 8192; i++) base[i] = fp8_byte();
        for (int t = 0; t < 64; t++) {
            float s = (float)(0.01 * (1.5 + urand()));
            memcpy(base + 8192 + 4 * t, &s, 4);
        }
    }
    int32_t *bt = tensor(&c, "block_table"), *lens = tensor(&c, "context_lens");
    for (int32_t r = 0; r < b; r++) {
        lens[r] = len;
        for (int32_t j = 0; j < bpr; j++) bt[(size_t)r * bpr + j] = (b - 1 - r) * bpr + j;
    }
    uint8_t *q = tensor(&c, "q_fp8");
    for (size_t i = 0; i < (size_t)b * next_n * 64 * 128; i++) q[i] = fp8_byte();
    float *w = tensor(&c, "weights");
    for (size_t i = 0; i < (size_t)b * next_n * 64; i++) w[i] = (float)urand();

    const size_t rows = (size_t)b * (size_t)next_n;
    double *lg = malloc(rows * (size_t)len * sizeof *lg), *t = malloc((size_t)reps * sizeof *t);
    if (lg == NULL || t == NULL) exit(2);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        check(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED, ATTEST_INDEXER_ORDER_KERNEL, lg),
              "indexer reference");
        t[r] = now_s() - t0;
    }
    double valid = 0.0; /* positions computed, MTP rule included */
    for (size_t r = 0; r < rows; r++) valid += attest_indexer_row_length(p, lens, (int32_t)r);
    const double gflop = valid * 64.0 * (2.0 * 128 + 2.0) * 1e-9;
    const double gb = valid * 132.0 * 1e-9;
    char shape[96];
    snprintf(shape, sizeof shape, "c4-indexer b=%d next_n=%d H=64 D=128 L=%d", b, next_n, len);
    print_row("indexer", shape, 1e3 * median(t, reps), gflop, gb);
    bench_kernel("cpu-indexer", &c, shape, reps, gflop, gb);

    if (with_topk) {
        int32_t idx[512];
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            for (size_t row = 0; row < rows; row++)
                check(attest_ref_topk_row_skip_neg_inf(lg + row * (size_t)len, len, 512,
                                                       ATTEST_TOPK_BY_SCORE, idx),
                      "topk reference");
            t[r] = now_s() - t0;
        }
        snprintf(shape, sizeof shape, "k=512 over %zu row(s) of L=%d", rows, len);
        /* no flops: report the logits read (8-byte doubles) as MB/s */
        print_row("topk", shape, 1e3 * median(t, reps), 0.0, (double)rows * len * 8.0 * 1e-9);
    }
    free(lg);
    free(t);
    attest_case_free(&c);
}

/* ---- digest of what the references compute --------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const uint8_t *b = data;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

static uint64_t digest_family(attest_kernel kernel, int n, int big)
{
    uint64_t h = 0xCBF29CE484222325ull;
    attest_gen_options opt = attest_gen_defaults(kernel);
    if (big) {
        opt.max_heads = 128;
        opt.max_topk = 512;
    }
    attest_bound_model models[ATTEST_CASE_MAX_TENSORS];
    for (int i = 0; i < ATTEST_CASE_MAX_TENSORS; i++) models[i] = attest_bound_model_fp32();
    for (int i = 0; i < n; i++) {
        attest_case c;
        check(attest_generate_case(&opt, attest_case_seed(1, (uint64_t)i), &c), "generate");
        double *outs[ATTEST_CASE_MAX_TENSORS] = {0}, *bounds[ATTEST_CASE_MAX_TENSORS] = {0};
        size_t counts[ATTEST_CASE_MAX_TENSORS] = {0};
        int no = 0;
        for (size_t t = 0; t < c.num_tensors; t++) {
            if (c.tensors[t].role != ATTEST_ROLE_OUTPUT) continue;
            counts[no] = attest_tensor_count(&c.tensors[t]);
            outs[no] = calloc(counts[no] ? counts[no] : 1, sizeof(double));
            bounds[no] = calloc(counts[no] ? counts[no] : 1, sizeof(double));
            if (!outs[no] || !bounds[no]) exit(2);
            no++;
        }
        check(attest_ref_bounds(&c, models, outs, bounds), "reference bounds");
        for (int o = 0; o < no; o++) {
            h = fnv(h, outs[o], counts[o] * sizeof(double));
            h = fnv(h, bounds[o], counts[o] * sizeof(double));
        }
        check(attest_ref_compute(&c, ATTEST_REF_SIMULATED, outs), "reference");
        const attest_candidate *cand = NULL;
        check(attest_candidate_resolve(kernel == ATTEST_KERNEL_INDEXER ? "cpu-indexer"
                                                                       : "cpu-mla-decode",
                                       &cand),
              "candidate");
        attest_kernel_args args;
        check(attest_case_args(&c, &args), "case arguments");
        if (cand->run(NULL, &args) != 0) {
            fprintf(stderr, "bench: %s failed on a generated case\n", cand->name);
            exit(2);
        }
        for (size_t t = 0; t < c.num_tensors; t++)
            if (c.tensors[t].role == ATTEST_ROLE_OUTPUT)
                h = fnv(h, c.tensors[t].data, c.tensors[t].nbytes);
        for (int o = 0; o < no; o++) {
            h = fnv(h, outs[o], counts[o] * sizeof(double));
            free(outs[o]);
            free(bounds[o]);
        }
        attest_case_free(&c);
    }
    return h;
}

static int digest(int n)
{
    printf("reference digest, %d generated cases per family and bound set (seed 1):\n", n);
    printf("  indexer default bounds:                 %016llx\n",
           (unsigned long long)digest_family(ATTEST_KERNEL_INDEXER, n, 0));
    printf("  mla-decode default bounds:              %016llx\n",
           (unsigned long long)digest_family(ATTEST_KERNEL_MLA_DECODE, n, 0));
    printf("  indexer --max-heads 128 --max-topk 512: %016llx\n",
           (unsigned long long)digest_family(ATTEST_KERNEL_INDEXER, n / 4 + 1, 1));
    printf("  mla-decode --max-heads 128 --max-topk 512: %016llx\n",
           (unsigned long long)digest_family(ATTEST_KERNEL_MLA_DECODE, n / 4 + 1, 1));
    return 0;
}

int main(int argc, char **argv)
{
    int reps = 5, quick = 0, digest_cases = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            g_only = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--digest") && i + 1 < argc) {
            digest_cases = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--kernels")) {
            g_kernels = 1;
        } else {
            fprintf(stderr, "usage: %s [--reps N] [--quick] [--only ROW] [--digest N] [--kernels]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (digest_cases > 0) return digest(digest_cases);
    printf("attest CPU references, median of %d call(s) (thread CPU time), double accumulation, one thread\n", reps);
    printf("| %-10s | %-54s | %9s | %8s | %8s |\n", "reference", "shape", "ms/call", "GFLOP/s",
           "MB/s");
    printf("|------------|--------------------------------------------------------|-----------|"
           "----------|----------|\n");
    bench_mla(ATTEST_LAYOUT_MLA_V4, 1, 64, 512, 64, 0, 0, reps);
    bench_mla(ATTEST_LAYOUT_MLA_V4, 4, 64, 512, 64, 0, 0, reps);
    bench_mla(ATTEST_LAYOUT_MLA_V4, 4, 64, 512, 64, 512, 1, reps);
    bench_mla(ATTEST_LAYOUT_MLA_V32, 1, 128, 2048, 64, 0, 0, reps);
    bench_indexer(1, 4096, 1, reps, 0);
    bench_indexer(4, 4096, 2, reps, 0);
    bench_indexer(1, quick ? 8192 : 16384, 1, reps, 0);
    bench_indexer(1, quick ? 8192 : 65536, 1, reps, 1);
    return 0;
}
