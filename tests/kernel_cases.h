/* Shared by test_kernels.c and test_mutants.c: hand-built indexer and MLA-decode cases, and
 * expected outputs computed here, in double, straight from the spec's byte offsets with decoders
 * written in this file (so neither the kernels' code nor the harness codec judges itself).
 * Include after <cmocka.h>.
 */
#ifndef ATTEST_TEST_KERNEL_CASES_H
#define ATTEST_TEST_KERNEL_CASES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/registry.h"
#include "attest/runner.h"
#include "assert_ok.h"

/* Random numbers ---------------------------------------------------------------------------- */

typedef struct tk_rng {
    uint64_t s;
} tk_rng;

static uint64_t tk_next(tk_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double tk_unit(tk_rng *r) { return (double)(tk_next(r) >> 11) * 0x1.0p-53; }

/* Independent decoders (docs/kernels.md section 1) ----------------------------------------------------- */

static double tk_fp8(uint8_t b)
{
    int e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7) return NAN;
    double v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    return (b & 0x80) ? -v : v;
}

static double tk_bf16(uint16_t bits)
{
    uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float tk_f32_at(const uint8_t *p)
{
    float f;
    memcpy(&f, p, sizeof f);
    return f;
}

/* A finite fp8 byte (never 0x7F / 0xFF). */
static uint8_t tk_fp8_byte(tk_rng *r)
{
    uint8_t b;
    do b = (uint8_t)tk_next(r);
    while ((b & 0x7F) == 0x7F);
    return b;
}

/* A bf16 with |x| in [2^lo, 2^(hi+1)) and a random sign. */
static uint16_t tk_bf16_rand(tk_rng *r, int lo, int hi)
{
    int e = lo + (int)(tk_next(r) % (uint64_t)(hi - lo + 1));
    uint16_t m = (uint16_t)(tk_next(r) & 0x7F);
    uint16_t s = (uint16_t)(tk_next(r) & 1);
    return (uint16_t)((s << 15) | ((uint16_t)(e + 127) << 7) | m);
}

static void *tk_data(attest_case *c, const char *name)
{
    attest_tensor *t = attest_case_tensor(c, name);
    assert_non_null(t);
    assert_non_null(t->data);
    return t->data;
}

/* Runs a candidate once (init, run, fini); returns run's result. */
static int tk_run(const attest_candidate *cand, const attest_kernel_args *args)
{
    void *ctx = NULL;
    if (cand->init) assert_int_equal(cand->init(&ctx), 0);
    if (cand->supports) assert_int_equal(cand->supports(ctx, args), 1);
    int rc = cand->run(ctx, args);
    if (cand->fini) cand->fini(ctx);
    return rc;
}

/* Indexer ------------------------------------------------------------------------------------- */

enum { TK_BLOCK_BYTES = 8448, TK_SCALES = 8192 };

typedef struct tk_indexer_spec {
    int32_t b, next_n, heads, max_len, num_blocks, blocks_per_req;
    const int32_t *lens;  /* [b] */
    const int32_t *table; /* [b, blocks_per_req]; entries of blocks past the length may be junk */
    int nan_q;            /* sprinkle fp8 NaN bytes into q */
    uint64_t seed;
} tk_indexer_spec;

static int32_t tk_row_len(const tk_indexer_spec *s, int32_t row)
{
    int32_t len = s->lens[row / s->next_n] - s->next_n + row % s->next_n + 1;
    return len < 0 ? 0 : len > s->max_len ? s->max_len : len;
}

/* Builds the case: the cache is all 0xFF except positions below a request's length. */
static void tk_build_indexer(attest_case *c, const tk_indexer_spec *s)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_INDEXER;
    attest_indexer_params *p = &c->params.indexer;
    p->b = s->b;
    p->next_n = s->next_n;
    p->heads = s->heads;
    p->head_dim = 128;
    p->num_blocks = s->num_blocks;
    p->blocks_per_req = s->blocks_per_req;
    p->max_len = s->max_len;
    p->masking = ATTEST_MASK_NEG_INF;
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));

    tk_rng r = {s->seed};
    uint8_t *cache = tk_data(c, "cache_bytes");
    memset(cache, 0xFF, (size_t)s->num_blocks * TK_BLOCK_BYTES);
    memcpy(tk_data(c, "block_table"), s->table, sizeof(int32_t) * s->b * s->blocks_per_req);
    memcpy(tk_data(c, "context_lens"), s->lens, sizeof(int32_t) * s->b);
    for (int32_t req = 0; req < s->b; req++) {
        for (int32_t t = 0; t < s->lens[req] && t < s->max_len; t++) {
            int32_t blk = s->table[req * s->blocks_per_req + t / 64];
            assert_true(blk >= 0 && blk < s->num_blocks);
            uint8_t *base = cache + (size_t)blk * TK_BLOCK_BYTES;
            for (int d = 0; d < 128; d++) base[(t % 64) * 128 + d] = tk_fp8_byte(&r);
            /* Non-power-of-two scales, distinct per position (an off-by-one shows). */
            float scale = (float)ldexp(0.5 + tk_unit(&r), -6 - (int)(tk_next(&r) % 4));
            memcpy(base + TK_SCALES + 4 * (t % 64), &scale, 4);
        }
    }
    uint8_t *q = tk_data(c, "q_fp8");
    size_t nq = (size_t)s->b * s->next_n * s->heads * 128;
    for (size_t i = 0; i < nq; i++)
        q[i] = s->nan_q && tk_next(&r) % 17 == 0 ? 0x7F : tk_fp8_byte(&r);
    float *w = tk_data(c, "weights");
    for (int32_t i = 0; i < s->b * s->next_n * s->heads; i++) w[i] = (float)(2 * tk_unit(&r) - 1);
}

/* Expected logits [rows, max_len], docs/kernels.md section 5 in double; -inf past the length. */
static double *tk_expect_indexer(attest_case *c, const tk_indexer_spec *s)
{
    const uint8_t *cache = tk_data(c, "cache_bytes");
    const uint8_t *q = tk_data(c, "q_fp8");
    const float *w = tk_data(c, "weights");
    const int32_t rows = s->b * s->next_n;
    double *e = malloc(sizeof(double) * rows * s->max_len);
    assert_non_null(e);
    for (int32_t i = 0; i < rows; i++) {
        const int32_t len = tk_row_len(s, i), req = i / s->next_n;
        for (int32_t t = 0; t < s->max_len; t++) {
            if (t >= len) {
                e[i * s->max_len + t] = -INFINITY;
                continue;
            }
            const uint8_t *base =
                cache + (size_t)s->table[req * s->blocks_per_req + t / 64] * TK_BLOCK_BYTES;
            double sum = 0;
            for (int32_t h = 0; h < s->heads; h++) {
                double dot = 0;
                for (int d = 0; d < 128; d++)
                    dot += tk_fp8(q[((size_t)i * s->heads + h) * 128 + d]) *
                           tk_fp8(base[(t % 64) * 128 + d]);
                sum += (dot > 0 ? dot : 0) * w[i * s->heads + h]; /* relu(NaN) = 0 */
            }
            e[i * s->max_len + t] = sum * tk_f32_at(base + TK_SCALES + 4 * (t % 64));
        }
    }
    return e;
}

/* Counts logits that disagree: -inf exactly where expected, else within 1e-5 of the row's
 * largest magnitude (fp32 sums of 64 heads x 128 products). */
static size_t tk_indexer_mismatches(const float *got, const double *exp, int32_t rows,
                                    int32_t width)
{
    size_t bad = 0;
    for (int32_t i = 0; i < rows; i++) {
        double scale = 0;
        for (int32_t t = 0; t < width; t++)
            if (isfinite(exp[i * width + t])) scale = fmax(scale, fabs(exp[i * width + t]));
        for (int32_t t = 0; t < width; t++) {
            const double e = exp[i * width + t], g = got[i * width + t];
            if (isinf(e)) bad += !(isinf(g) && (g < 0) == (e < 0));
            else bad += !(isfinite(g) && fabs(g - e) <= 1e-5 * scale + 1e-30);
        }
    }
    return bad;
}

/* MLA decode ---------------------------------------------------------------------------------- */

typedef struct tk_scope_spec {
    int32_t page_size;
    int64_t page_stride; /* 0: the layout's default */
    int32_t num_pages;
    int32_t topk;
    const int32_t *indices;     /* [b, s_q, topk] */
    const int32_t *topk_length; /* [b] or NULL */
} tk_scope_spec;

typedef struct tk_mla_spec {
    attest_layout_id layout;
    int32_t b, s_q, h_q;
    tk_scope_spec main, extra; /* extra.topk == 0: no extra scope */
    const float *sink;         /* [h_q] or NULL */
    uint64_t seed;
} tk_mla_spec;

typedef struct tk_geom {
    int v4, fp8_dim, num_scales, scale_tile, k_dim, token_bytes;
} tk_geom;

static tk_geom tk_geom_of(attest_layout_id id)
{
    if (id == ATTEST_LAYOUT_MLA_V4) return (tk_geom){1, 448, 7, 64, 512, 584};
    return (tk_geom){0, 512, 4, 128, 576, 656};
}

static int64_t tk_default_stride(attest_layout_id id, int32_t P)
{
    if (id == ATTEST_LAYOUT_MLA_V4) return ((int64_t)P * 584 + 575) / 576 * 576;
    return (int64_t)P * 656;
}

/* Writes token `idx` of a pool with random content at the spec's offsets. */
static void tk_write_token(tk_rng *r, const tk_geom *g, uint8_t *pool, int32_t P, int64_t stride,
                           int32_t idx)
{
    uint8_t *page = pool + (int64_t)(idx / P) * stride;
    const int32_t t = idx % P;
    uint8_t *data = page + (g->v4 ? (int64_t)t * 576 : (int64_t)t * 656);
    for (int d = 0; d < g->fp8_dim; d++) data[d] = tk_fp8_byte(r);
    uint8_t *rope = data + (g->v4 ? 448 : 528);
    for (int d = 0; d < 64; d++) {
        uint16_t v = tk_bf16_rand(r, -4, 0);
        memcpy(rope + 2 * d, &v, 2);
    }
    for (int i = 0; i < g->num_scales; i++) {
        if (g->v4) {
            page[(int64_t)P * 576 + t * 8 + i] = (uint8_t)(127 - 6 - tk_next(r) % 4);
        } else {
            float s = (float)ldexp(0.5 + tk_unit(r), -7 - (int)(tk_next(r) % 3));
            memcpy(data + 512 + 4 * i, &s, 4);
        }
    }
}

/* Dequantizes token idx into k (k_dim doubles), from the spec's offsets. */
static void tk_read_token(const tk_geom *g, const uint8_t *pool, int32_t P, int64_t stride,
                          int32_t idx, double *k)
{
    const uint8_t *page = pool + (int64_t)(idx / P) * stride;
    const int32_t t = idx % P;
    const uint8_t *data = page + (g->v4 ? (int64_t)t * 576 : (int64_t)t * 656);
    for (int d = 0; d < g->fp8_dim; d++) {
        const int i = d / g->scale_tile;
        const double s = g->v4 ? ldexp(1.0, page[(int64_t)P * 576 + t * 8 + i] - 127)
                               : tk_f32_at(data + 512 + 4 * i);
        k[d] = tk_fp8(data[d]) * s;
    }
    const uint8_t *rope = data + (g->v4 ? 448 : 528);
    for (int d = 0; d < 64; d++) {
        uint16_t v;
        memcpy(&v, rope + 2 * d, 2);
        k[g->fp8_dim + d] = tk_bf16(v);
    }
}

static void tk_fill_scope(tk_rng *r, const tk_geom *g, attest_case *c, const char *cache_name,
                          const char *idx_name, const char *len_name, const tk_scope_spec *sc,
                          int64_t stride, int32_t nq)
{
    uint8_t *pool = tk_data(c, cache_name);
    memset(pool, 0xFF, (size_t)(sc->num_pages * stride));
    memcpy(tk_data(c, idx_name), sc->indices, sizeof(int32_t) * nq * sc->topk);
    if (sc->topk_length)
        memcpy(tk_data(c, len_name), sc->topk_length, sizeof(int32_t) * c->params.mla.b);
    /* Every index named anywhere in the list (even past topk_length) holds a real token. */
    for (int32_t i = 0; i < nq * sc->topk; i++)
        if (sc->indices[i] >= 0) tk_write_token(r, g, pool, sc->page_size, stride, sc->indices[i]);
}

static void tk_build_mla(attest_case *c, const tk_mla_spec *s)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    attest_mla_params *p = &c->params.mla;
    const tk_geom g = tk_geom_of(s->layout);
    p->layout = s->layout;
    p->page_size = s->main.page_size;
    p->page_stride = s->main.page_stride ? s->main.page_stride
                                         : tk_default_stride(s->layout, s->main.page_size);
    p->num_pages = s->main.num_pages;
    p->b = s->b;
    p->s_q = s->s_q;
    p->h_q = s->h_q;
    p->d_qk = g.k_dim;
    p->d_v = 512;
    p->topk = s->main.topk;
    p->sm_scale = (float)(1.0 / sqrt((double)g.k_dim));
    p->has_topk_length = s->main.topk_length != NULL;
    p->has_sink = s->sink != NULL;
    p->lse_convention = ATTEST_LSE_EXCLUDES_SINK;
    if (s->extra.topk > 0) {
        p->has_extra = 1;
        p->extra_page_size = s->extra.page_size;
        p->extra_page_stride = s->extra.page_stride
                                   ? s->extra.page_stride
                                   : tk_default_stride(s->layout, s->extra.page_size);
        p->extra_num_pages = s->extra.num_pages;
        p->extra_topk = s->extra.topk;
        p->has_extra_topk_length = s->extra.topk_length != NULL;
    }
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));

    tk_rng r = {s->seed};
    const int32_t nq = s->b * s->s_q;
    tk_fill_scope(&r, &g, c, "cache_bytes", "indices", "topk_length", &s->main, p->page_stride,
                  nq);
    if (p->has_extra)
        tk_fill_scope(&r, &g, c, "extra_cache_bytes", "extra_indices", "extra_topk_length",
                      &s->extra, p->extra_page_stride, nq);
    if (s->sink) memcpy(tk_data(c, "attn_sink"), s->sink, sizeof(float) * s->h_q);
    uint16_t *q = tk_data(c, "q_bf16");
    for (int32_t i = 0; i < nq * s->h_q * g.k_dim; i++) q[i] = tk_bf16_rand(&r, -3, 0);
}

/* Expected out [b, s_q, h_q, 512] and lse [b, s_q, h_q] (docs/kernels.md section 6, lse excludes sink). */
static void tk_expect_mla(attest_case *c, double **out_e, double **lse_e)
{
    const attest_mla_params *p = &c->params.mla;
    const tk_geom g = tk_geom_of(p->layout);
    const int32_t nq = p->b * p->s_q, slots = p->topk + (p->has_extra ? p->extra_topk : 0);
    double *out = calloc((size_t)nq * p->h_q * 512, sizeof(double));
    double *lse = calloc((size_t)nq * p->h_q, sizeof(double));
    double *keys = calloc((size_t)slots * g.k_dim, sizeof(double));
    double *score = calloc((size_t)slots, sizeof(double));
    int *valid = calloc((size_t)slots, sizeof(int));
    assert_true(out && lse && keys && score && valid);
    const uint16_t *q = tk_data(c, "q_bf16");
    const float *sink = p->has_sink ? tk_data(c, "attn_sink") : NULL;
    for (int32_t qi = 0; qi < nq; qi++) {
        const int32_t b = qi / p->s_q;
        int any = 0;
        for (int scope = 0; scope < 1 + (p->has_extra != 0); scope++) {
            const int32_t topk = scope ? p->extra_topk : p->topk, first = scope ? p->topk : 0;
            const int32_t *idx = (const int32_t *)tk_data(c, scope ? "extra_indices" : "indices") +
                                 (size_t)qi * topk;
            int32_t used = topk;
            if (!scope && p->has_topk_length) used = ((int32_t *)tk_data(c, "topk_length"))[b];
            if (scope && p->has_extra_topk_length)
                used = ((int32_t *)tk_data(c, "extra_topk_length"))[b];
            const uint8_t *pool = tk_data(c, scope ? "extra_cache_bytes" : "cache_bytes");
            for (int32_t i = 0; i < topk; i++) {
                valid[first + i] = i < used && idx[i] != -1;
                any |= valid[first + i];
                if (valid[first + i])
                    tk_read_token(&g, pool, scope ? p->extra_page_size : p->page_size,
                                  scope ? p->extra_page_stride : p->page_stride, idx[i],
                                  keys + (size_t)(first + i) * g.k_dim);
            }
        }
        for (int32_t h = 0; h < p->h_q; h++) {
            const size_t qh = (size_t)qi * p->h_q + h;
            double *o = out + qh * 512;
            if (!any) {
                lse[qh] = INFINITY;
                continue;
            }
            double m = -INFINITY;
            for (int32_t i = 0; i < slots; i++) {
                if (!valid[i]) continue;
                double dot = 0;
                for (int d = 0; d < g.k_dim; d++)
                    dot += tk_bf16(q[qh * g.k_dim + d]) * keys[(size_t)i * g.k_dim + d];
                score[i] = (double)p->sm_scale * dot;
                m = fmax(m, score[i]);
            }
            double l = 0;
            for (int32_t i = 0; i < slots; i++) {
                if (!valid[i]) continue;
                const double pr = exp(score[i] - m);
                l += pr;
                for (int d = 0; d < 512; d++) o[d] += pr * keys[(size_t)i * g.k_dim + d];
            }
            lse[qh] = m + log(l);
            double f = 1 / l;
            if (sink) f /= 1 + exp((double)sink[h] - lse[qh]);
            for (int d = 0; d < 512; d++) o[d] *= f;
        }
    }
    free(keys);
    free(score);
    free(valid);
    *out_e = out;
    *lse_e = lse;
}

/* Counts disagreements: lse within 1e-5 relative (+inf exactly for a lonely query); out within
 * one bf16 step of the exact value, plus 1e-5 of the head's largest |out| for cancellations. */
static size_t tk_mla_mismatches(const uint16_t *out, const float *lse, const double *out_e,
                                const double *lse_e, size_t heads)
{
    size_t bad = 0;
    for (size_t qh = 0; qh < heads; qh++) {
        if (isinf(lse_e[qh])) bad += !(isinf(lse[qh]) && lse[qh] > 0);
        else bad += !(fabs(lse[qh] - lse_e[qh]) <= 1e-5 * fmax(1.0, fabs(lse_e[qh])));
        double scale = 0;
        for (int d = 0; d < 512; d++) scale = fmax(scale, fabs(out_e[qh * 512 + d]));
        for (int d = 0; d < 512; d++) {
            const double e = out_e[qh * 512 + d], g = tk_bf16(out[qh * 512 + d]);
            bad += !(fabs(g - e) <= 0x1p-7 * fabs(e) + 1e-5 * scale);
        }
    }
    return bad;
}

/* Running a built-in candidate on a case ------------------------------------------------------ */

static const attest_candidate *tk_builtin(const char *name)
{
    const attest_candidate *c = attest_builtin_find(name);
    if (!c) print_error("no built-in candidate '%s'\n", name);
    assert_non_null(c);
    return c;
}

static void tk_poison_f32(float *p, size_t n)
{
    const uint32_t bits = ATTEST_POISON_F32;
    for (size_t i = 0; i < n; i++) memcpy(&p[i], &bits, 4);
}

/* Runs `name` on the indexer case, its outputs poisoned first as the harness does (so an
 * unwritten element counts), and returns the number of logits that disagree with expected. */
static size_t tk_indexer_case_mismatches(const char *name, const tk_indexer_spec *s)
{
    attest_case c;
    tk_build_indexer(&c, s);
    attest_kernel_args args;
    assert_ok(attest_case_args(&c, &args));
    tk_poison_f32(args.u.indexer.logits, (size_t)s->b * s->next_n * s->max_len);
    double *e = tk_expect_indexer(&c, s);
    assert_int_equal(tk_run(tk_builtin(name), &args), 0);
    size_t bad = tk_indexer_mismatches(args.u.indexer.logits, e, s->b * s->next_n, s->max_len);
    free(e);
    attest_case_free(&c);
    return bad;
}

/* The same for an MLA-decode case: out and lse poisoned, then compared with expected. */
static size_t tk_mla_case_mismatches(const char *name, const tk_mla_spec *s)
{
    attest_case c;
    tk_build_mla(&c, s);
    attest_kernel_args args;
    assert_ok(attest_case_args(&c, &args));
    const size_t heads = (size_t)s->b * s->s_q * s->h_q;
    for (size_t i = 0; i < heads * 512; i++) args.u.mla.out[i] = ATTEST_POISON_BF16;
    tk_poison_f32(args.u.mla.lse, heads);
    double *oe, *le;
    tk_expect_mla(&c, &oe, &le);
    assert_int_equal(tk_run(tk_builtin(name), &args), 0);
    size_t bad = tk_mla_mismatches(args.u.mla.out, args.u.mla.lse, oe, le, heads);
    free(oe);
    free(le);
    attest_case_free(&c);
    return bad;
}

#endif /* ATTEST_TEST_KERNEL_CASES_H */
