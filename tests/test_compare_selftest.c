/* The comparator self-test: on realistic outputs of the CPU references (a small sparse
 * MLA decode case and a small indexer case, built by hand through the layout codec), the clean
 * candidate (the reference rounded to the output dtype, and for the indexer an independent
 * float32 kernel) must pass the default policy, and every injected fault must be caught by at
 * least one gate. Prints the table fault x gate -> caught. Also shows that DeepGEMM's lone
 * cosine metric (< 1e-3) misses the gain and zeroing faults. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/case.h"
#include "attest/compare.h"
#include "attest/layout.h"
#include "attest/numerics.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/rng.h"
#include "attest/runner.h"

#define DG_COS_BOUND 1e-3 /* DeepGEMM's indexer test bound against an unquantized reference */

static void *tensor_data(attest_case *c, const char *name)
{
    attest_tensor *t = attest_case_tensor(c, name);
    assert_non_null(t);
    assert_non_null(t->data);
    return t->data;
}

static attest_tolerance policy_tol(attest_kernel k, const char *output)
{
    attest_policy *p = NULL;
    assert_ok(attest_policy_default(&p));
    attest_tolerance t;
    assert_ok(attest_policy_lookup(p, k, output, &t));
    return t;
}

/* --- the table -------------------------------------------------------------------------------- */

typedef struct fault_row {
    char fault[40];
    char output[12];
    uint32_t failed;
    int vacuous;
    double dg_cos; /* DeepGEMM's lone metric on the same pair; NaN when not applicable */
    double ratio;  /* the worst element's error / tolerance (> 1: the element gate fails) */
} fault_row;

static fault_row rows[48];
static size_t num_rows;

static void record(const char *fault, const char *output, const attest_tensor_metrics *m,
                   double dg_cos)
{
    assert_true(num_rows < sizeof rows / sizeof rows[0]);
    fault_row *r = &rows[num_rows++];
    snprintf(r->fault, sizeof r->fault, "%s", fault);
    snprintf(r->output, sizeof r->output, "%s", output);
    r->failed = m->failed_gates;
    r->vacuous = m->vacuous;
    r->dg_cos = dg_cos;
    r->ratio = m->worst_ratio;
}

/* What the table shows wrong: a fault a gate should have caught, or a clean output that failed.
 * Collected, not asserted, so one run prints the whole table and every miss before failing. */
static char misses[64][200];
static size_t num_misses;

static void expect_row(int ok, const char *what, int line)
{
    if (ok || num_misses >= sizeof misses / sizeof misses[0]) return;
    snprintf(misses[num_misses++], sizeof misses[0], "line %d: '%s' on %s: expected %s", line,
             num_rows ? rows[num_rows - 1].fault : "?", num_rows ? rows[num_rows - 1].output : "?",
             what);
}

#define expect(cond) expect_row(!!(cond), #cond, __LINE__)

static void print_table(void)
{
    printf("\ncomparator self-test (default policy): fault x gate -> caught\n");
    printf("%-34s %-9s", "fault", "output");
    for (unsigned g = 0; g < ATTEST_GATE_COUNT_; ++g) printf(" %-9s", attest_gate_name((attest_gate)g));
    printf(" %-8s %-9s %s\n", "verdict", "err/tol", "lone-cos<1e-3");
    for (size_t i = 0; i < num_rows; ++i) {
        const fault_row *r = &rows[i];
        printf("%-34s %-9s", r->fault, r->output);
        for (unsigned g = 0; g < ATTEST_GATE_COUNT_; ++g)
            printf(" %-9s", (r->failed & ATTEST_GATE_BIT(g)) ? "CAUGHT" : ".");
        const int clean = strncmp(r->fault, "clean", 5) == 0;
        const char *verdict = clean ? (r->failed ? "FAIL!" : "pass") : (r->failed ? "caught" : "MISSED!");
        printf(" %-8s %-9.3g", verdict, r->ratio);
        if (isnan(r->dg_cos))
            printf(" n/a\n");
        else
            printf(" %s (%.2e)\n", r->dg_cos < DG_COS_BOUND ? "pass" : "caught", r->dg_cos);
    }
    fflush(stdout);
}

/* --- comparing a candidate -------------------------------------------------------------------- */

static attest_tensor_metrics judge(const double *ref, const double *bound, const void *cand,
                                   attest_dtype dtype, const attest_tensor *t,
                                   const attest_tolerance *tol)
{
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    uint32_t poison = dtype == ATTEST_DTYPE_BF16 ? ATTEST_POISON_BF16 : ATTEST_POISON_F32;
    assert_ok(attest_compare_tensor_bounded(ref, bound, cand, dtype, attest_tensor_count(t),
                                            t->shape, t->rank, NULL, poison, tol, &m));
    return m;
}

/* bf16 by truncation (round toward zero), the classic "(uint16_t)(bits >> 16)" fault. */
static uint16_t bf16_truncate(double x)
{
    float f = (float)x;
    uint32_t w;
    memcpy(&w, &f, 4);
    return (uint16_t)(w >> 16);
}

/* Value rounded to bf16 and back (to nearest even). */
static float round_bf16(float x) { return attest_bf16_decode(attest_bf16_encode(x)); }

/* Is an e4m3fn byte a subnormal (exponent field 0, mantissa not 0)? */
static int fp8_subnormal(uint8_t b) { return (b & 0x78u) == 0 && (b & 0x07u) != 0; }

static double bf16_value(uint16_t b) { return (double)attest_bf16_decode(b); }

/* DeepGEMM's metric on a bf16 or f32 candidate, as doubles. */
static double dg_cos(const double *ref, const void *cand, attest_dtype dtype, size_t n)
{
    double *c = malloc(n * sizeof *c);
    assert_non_null(c);
    for (size_t i = 0; i < n; ++i)
        c[i] = dtype == ATTEST_DTYPE_BF16 ? bf16_value(((const uint16_t *)cand)[i])
                                          : (double)((const float *)cand)[i];
    double d = attest_cosine_difference(ref, c, n);
    free(c);
    return d;
}

/* --- a sparse MLA decode case (mla-v4) ---------------------------------------------------------- */

#define MLA_TOKENS 256
#define MLA_HOT_TOKEN 5 /* logical token every query attends to: its scale tiles get swapped */
static const int32_t mla_pages[4] = {2, 0, 3, 1}; /* logical page -> physical page */

static int32_t mla_phys(int32_t logical) { return mla_pages[logical / 64] * 64 + logical % 64; }

static void build_mla(attest_case *c, attest_layout *layout)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    attest_mla_params *p = &c->params.mla;
    p->layout = ATTEST_LAYOUT_MLA_V4;
    p->page_size = 64;
    p->num_pages = 4;
    p->b = 2;
    p->s_q = 2;
    p->h_q = 16;
    p->d_qk = 512;
    p->d_v = 512;
    p->topk = 64;
    p->sm_scale = 1.0f / sqrtf(512.0f);
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));
    assert_ok(attest_layout_make(ATTEST_LAYOUT_MLA_V4, 64, 0, layout));

    attest_rng rng;
    attest_rng_seed(&rng, 20240917);
    /* Tiles of different magnitude, so their UE8M0 scales differ and a swap changes values. */
    static const float tile_mag[7] = {0.5f, 1, 2, 0.5f, 1, 2, 1};
    float *values = malloc((size_t)MLA_TOKENS * 512 * sizeof *values);
    assert_non_null(values);
    for (int32_t j = 0; j < MLA_TOKENS; ++j)
        for (int32_t d = 0; d < 512; ++d)
            values[(size_t)j * 512 + (size_t)d] =
                (float)attest_rng_normal_portable(&rng, 0, d < 448 ? tile_mag[d / 64] : 0.5);
    uint8_t *cache = tensor_data(c, "cache_bytes");
    attest_pool_poison(layout, cache, 4, 0xFF);
    const attest_scale_policy sp = {ATTEST_SCALE_POW2, ATTEST_UE8M0_FLASHMLA, ATTEST_FP8_NONSAT};
    assert_ok(attest_pool_encode(layout, cache, 4, mla_pages, MLA_TOKENS, values, &sp));
    free(values);

    uint16_t *q = tensor_data(c, "q_bf16");
    size_t nq = (size_t)p->b * p->s_q * p->h_q * p->d_qk;
    for (size_t i = 0; i < nq; ++i) q[i] = attest_bf16_encode((float)attest_rng_normal_portable(&rng, 0, 0.5));

    int32_t *idx = tensor_data(c, "indices");
    int32_t perm[MLA_TOKENS];
    for (int32_t qi = 0; qi < p->b * p->s_q; ++qi) {
        for (int32_t j = 0; j < MLA_TOKENS; ++j) perm[j] = j;
        attest_rng_shuffle_i32(&rng, perm, MLA_TOKENS);
        int32_t *row = idx + (size_t)qi * (size_t)p->topk;
        row[0] = mla_phys(MLA_HOT_TOKEN);
        int32_t used = 1;
        for (int32_t j = 0; used < p->topk; ++j)
            if (perm[j] != MLA_HOT_TOKEN) row[used++] = mla_phys(perm[j]);
        if (qi == 3)
            for (int32_t s = p->topk - 8; s < p->topk; ++s) row[s] = -1; /* some invalid slots */
    }
}

static void mla_reference(attest_case *c, double *out, double *lse)
{
    assert_ok(attest_ref_mla_decode(c, ATTEST_REF_SIMULATED, out, lse));
}

static void to_bf16(const double *ref, uint16_t *cand, size_t n)
{
    for (size_t i = 0; i < n; ++i) cand[i] = attest_bf16_encode_f64(ref[i]);
}

static void to_f32(const double *ref, float *cand, size_t n)
{
    for (size_t i = 0; i < n; ++i) cand[i] = (float)ref[i];
}

typedef struct mla_fixture {
    attest_case c;
    attest_layout layout;
    const attest_tensor *t_out, *t_lse;
    size_t n_out, n_lse;
    double *out, *lse;
    double *out_b, *lse_b; /* their computed error bounds */
    uint16_t *cand;
    float *cand_lse;
    attest_tolerance tol_out, tol_lse;
} mla_fixture;

static void mla_setup(mla_fixture *f)
{
    build_mla(&f->c, &f->layout);
    f->t_out = attest_case_tensor(&f->c, "out_bf16");
    f->t_lse = attest_case_tensor(&f->c, "lse");
    assert_non_null(f->t_out);
    assert_non_null(f->t_lse);
    f->n_out = attest_tensor_count(f->t_out);
    f->n_lse = attest_tensor_count(f->t_lse);
    f->out = malloc(f->n_out * sizeof *f->out);
    f->lse = malloc(f->n_lse * sizeof *f->lse);
    f->cand = malloc(f->n_out * sizeof *f->cand);
    f->cand_lse = malloc(f->n_lse * sizeof *f->cand_lse);
    assert_true(f->out && f->lse && f->cand && f->cand_lse);
    mla_reference(&f->c, f->out, f->lse);
    f->tol_out = policy_tol(ATTEST_KERNEL_MLA_DECODE, "out_bf16");
    f->tol_lse = policy_tol(ATTEST_KERNEL_MLA_DECODE, "lse");
    f->out_b = malloc(f->n_out * sizeof *f->out_b);
    f->lse_b = malloc(f->n_lse * sizeof *f->lse_b);
    double *o2 = malloc(f->n_out * sizeof *o2), *l2 = malloc(f->n_lse * sizeof *l2);
    assert_true(f->out_b && f->lse_b && o2 && l2);
    assert_ok(attest_ref_mla_bounds(&f->c, &f->tol_out.model, &f->tol_lse.model, o2, l2,
                                    f->out_b, f->lse_b));
    for (size_t i = 0; i < f->n_out; ++i) assert_true(o2[i] == f->out[i]);
    free(o2);
    free(l2);
}

static void mla_teardown(mla_fixture *f)
{
    free(f->out);
    free(f->lse);
    free(f->out_b);
    free(f->lse_b);
    free(f->cand);
    free(f->cand_lse);
    attest_case_free(&f->c);
}

/* Judges f->cand against the reference, records the row and returns the metrics. */
static attest_tensor_metrics mla_row(mla_fixture *f, const char *fault)
{
    attest_tensor_metrics m =
        judge(f->out, f->out_b, f->cand, ATTEST_DTYPE_BF16, f->t_out, &f->tol_out);
    record(fault, "out_bf16", &m, dg_cos(f->out, f->cand, ATTEST_DTYPE_BF16, f->n_out));
    return m;
}

static size_t argmax_abs(const double *x, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; ++i)
        if (fabs(x[i]) > fabs(x[best])) best = i;
    return best;
}

/* The fp8 (nope) bytes of logical token j in the fixture's cache. */
static uint8_t *mla_token_fp8(mla_fixture *f, uint8_t *cache, int32_t j)
{
    const int32_t phys = mla_phys(j);
    attest_token_offsets o;
    assert_ok(attest_layout_token_offsets(&f->layout, (uint32_t)(phys % 64), &o));
    return cache + (size_t)(phys / 64) * f->layout.page_stride + o.fp8;
}

static void mla_faults(mla_fixture *f)
{
    attest_tensor_metrics m;
    /* Clean: the reference rounded to bf16 (out) and float (lse). */
    to_bf16(f->out, f->cand, f->n_out);
    m = mla_row(f, "clean");
    expect(m.failed_gates == 0);
    expect(m.vacuous == 0);
    to_f32(f->lse, f->cand_lse, f->n_lse);
    m = judge(f->lse, f->lse_b, f->cand_lse, ATTEST_DTYPE_F32, f->t_lse, &f->tol_lse);
    record("clean", "lse", &m, dg_cos(f->lse, f->cand_lse, ATTEST_DTYPE_F32, f->n_lse));
    expect(m.failed_gates == 0);
    expect(m.vacuous == 0);

    static const double gains[2] = {0.97, 1.03};
    for (int g = 0; g < 2; ++g) {
        for (size_t i = 0; i < f->n_out; ++i) f->cand[i] = attest_bf16_encode_f64(f->out[i] * gains[g]);
        char name[40];
        snprintf(name, sizeof name, "gain %.2f", gains[g]);
        m = mla_row(f, name);
        expect(rows[num_rows - 1].dg_cos < DG_COS_BOUND); /* the lone metric misses it */
    }

    to_bf16(f->out, f->cand, f->n_out);
    size_t big = argmax_abs(f->out, f->n_out);
    f->cand[big] = attest_bf16_encode_f64(-f->out[big]);
    m = mla_row(f, "one element's sign flipped");
    expect(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT));

    to_bf16(f->out, f->cand, f->n_out);
    size_t zeroed = 0;
    for (size_t i = 7; i < f->n_out; i += 1000, ++zeroed) f->cand[i] = 0;
    assert_true(zeroed >= f->n_out / 1000);
    m = mla_row(f, "0.1% of elements zeroed");
    expect(rows[num_rows - 1].dg_cos < DG_COS_BOUND);

    /* Query (b=0, s=0) gets the output of its neighbour token (b=0, s=1). */
    to_bf16(f->out, f->cand, f->n_out);
    const size_t per_token = (size_t)f->c.params.mla.h_q * (size_t)f->c.params.mla.d_v;
    to_bf16(f->out + per_token, f->cand, per_token);
    m = mla_row(f, "token output shifted by one");

    to_bf16(f->out, f->cand, f->n_out);
    f->cand[f->n_out / 2] = 0x7FC0; /* a quiet NaN */
    m = mla_row(f, "one NaN");
    expect(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE));

    to_bf16(f->out, f->cand, f->n_out);
    f->cand[f->n_out - 1] = (uint16_t)ATTEST_POISON_BF16;
    m = mla_row(f, "one element never written");
    expect(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN));

    /* bf16 by truncation instead of round-to-nearest-even. */
    for (size_t i = 0; i < f->n_out; ++i) f->cand[i] = bf16_truncate(f->out[i]);
    m = mla_row(f, "out truncated to bf16 (not RNE)");

    /* fp8 subnormals of the keys read as zero (a flush-to-zero dequantization). Realistic tiles
     * hold few subnormal codes and their values sit below bf16's resolution of the output, so
     * the case gets one tile per token (dims 385..447) of subnormal codes beside one normal
     * value, as the generator's edge tiles have; that case is the reference, and the same case
     * with those codes flushed is the candidate. */
    {
        uint8_t *cache0 = tensor_data(&f->c, "cache_bytes");
        const size_t cache_bytes = attest_tensor_count(attest_case_tensor(&f->c, "cache_bytes"));
        uint8_t *saved = malloc(cache_bytes);
        assert_non_null(saved);
        memcpy(saved, cache0, cache_bytes);
        attest_rng sr;
        attest_rng_seed(&sr, 515);
        for (int32_t j = 0; j < MLA_TOKENS; ++j) {
            uint8_t *fp8 = mla_token_fp8(f, cache0, j);
            for (uint32_t d = 385; d < 448; ++d)
                fp8[d] = (uint8_t)((attest_rng_u32(&sr) & 0x80u) | (1u + attest_rng_below(&sr, 7)));
        }
        double *ob = malloc(f->n_out * sizeof *ob), *lb = malloc(f->n_lse * sizeof *lb);
        double *obb = malloc(f->n_out * sizeof *obb), *lbb = malloc(f->n_lse * sizeof *lbb);
        double *o3 = malloc(f->n_out * sizeof *o3), *l3 = malloc(f->n_lse * sizeof *l3);
        assert_true(ob && lb && obb && lbb && o3 && l3);
        assert_ok(attest_ref_mla_bounds(&f->c, &f->tol_out.model, &f->tol_lse.model, ob, lb,
                                        obb, lbb));
        size_t flushed = 0;
        for (int32_t j = 0; j < MLA_TOKENS; ++j) {
            uint8_t *fp8 = mla_token_fp8(f, cache0, j);
            for (uint32_t d = 0; d < f->layout.fp8_dim; ++d)
                if (fp8_subnormal(fp8[d])) {
                    fp8[d] &= 0x80u;
                    ++flushed;
                }
        }
        assert_true(flushed >= (size_t)MLA_TOKENS * 63);
        mla_reference(&f->c, o3, l3);
        memcpy(cache0, saved, cache_bytes);
        free(saved);
        to_bf16(o3, f->cand, f->n_out);
        m = judge(ob, obb, f->cand, ATTEST_DTYPE_BF16, f->t_out, &f->tol_out);
        record("fp8 subnormals flushed to zero", "out_bf16", &m,
               dg_cos(ob, f->cand, ATTEST_DTYPE_BF16, f->n_out));
        free(ob);
        free(lb);
        free(obb);
        free(lbb);
        free(o3);
        free(l3);
    }

    /* Swap two UE8M0 scale bytes of the hot token, recompute, and judge that as the candidate. */
    uint8_t *cache = tensor_data(&f->c, "cache_bytes");
    uint8_t *page = cache + (size_t)mla_pages[MLA_HOT_TOKEN / 64] * f->layout.page_stride;
    attest_token_offsets off;
    assert_ok(attest_layout_token_offsets(&f->layout, MLA_HOT_TOKEN % 64, &off));
    uint8_t s0 = page[off.scale[0]], s2 = page[off.scale[2]];
    assert_int_not_equal(s0, s2);
    page[off.scale[0]] = s2;
    page[off.scale[2]] = s0;
    double *out2 = malloc(f->n_out * sizeof *out2), *lse2 = malloc(f->n_lse * sizeof *lse2);
    assert_true(out2 && lse2);
    mla_reference(&f->c, out2, lse2);
    page[off.scale[0]] = s0;
    page[off.scale[2]] = s2;
    to_bf16(out2, f->cand, f->n_out);
    m = mla_row(f, "two scale tiles swapped");
    to_f32(lse2, f->cand_lse, f->n_lse);
    m = judge(f->lse, f->lse_b, f->cand_lse, ATTEST_DTYPE_F32, f->t_lse, &f->tol_lse);
    record("two scale tiles swapped", "lse", &m, dg_cos(f->lse, f->cand_lse, ATTEST_DTYPE_F32, f->n_lse));
    free(out2);
    free(lse2);
}

/* --- an indexer case ------------------------------------------------------------------------------ */

#define IDX_ROWS 2
#define IDX_MAXLEN 128
#define IDX_HEADS 8
#define IDX_TOPK 16
static const int32_t idx_blocks[IDX_ROWS][2] = {{3, 1}, {0, 4}};
static const int32_t idx_lens[IDX_ROWS] = {100, 77};

static void build_indexer(attest_case *c, attest_layout *layout)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_INDEXER;
    attest_indexer_params *p = &c->params.indexer;
    p->b = IDX_ROWS;
    p->next_n = 1;
    p->heads = IDX_HEADS;
    p->head_dim = 128;
    p->num_blocks = 5;
    p->blocks_per_req = 2;
    p->max_len = IDX_MAXLEN;
    p->masking = ATTEST_MASK_NEG_INF;
    p->topk = IDX_TOPK;
    p->topk_rule = ATTEST_TOPK_BY_SCORE;
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));
    assert_ok(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, 64, 0, layout));

    attest_rng rng;
    attest_rng_seed(&rng, 77001);
    uint8_t *cache = tensor_data(c, "cache_bytes");
    attest_pool_poison(layout, cache, 5, 0xFF); /* block 2 and every tail stay NaN */
    memcpy(tensor_data(c, "block_table"), idx_blocks, sizeof idx_blocks);
    memcpy(tensor_data(c, "context_lens"), idx_lens, sizeof idx_lens);
    const attest_scale_policy sp = {ATTEST_SCALE_RAW, ATTEST_UE8M0_DEEPGEMM, ATTEST_FP8_NONSAT};
    float *values = malloc((size_t)IDX_MAXLEN * 128 * sizeof *values);
    assert_non_null(values);
    for (int32_t r = 0; r < IDX_ROWS; ++r) {
        for (int32_t t = 0; t < idx_lens[r]; ++t) {
            double mag = 0.5 + attest_rng_double01(&rng); /* varied per position: raw scales differ */
            for (int32_t d = 0; d < 128; ++d)
                values[(size_t)t * 128 + (size_t)d] = (float)attest_rng_normal_portable(&rng, 0, mag);
        }
        assert_ok(attest_pool_encode(layout, cache, 5, idx_blocks[r], (uint64_t)idx_lens[r],
                                     values, &sp));
    }
    free(values);
    uint8_t *q = tensor_data(c, "q_fp8");
    for (size_t i = 0; i < (size_t)IDX_ROWS * IDX_HEADS * 128; ++i)
        q[i] = attest_fp8_encode((float)attest_rng_normal_portable(&rng, 0, 1), ATTEST_FP8_NONSAT);
    float *w = tensor_data(c, "weights");
    for (size_t i = 0; i < (size_t)IDX_ROWS * IDX_HEADS; ++i)
        w[i] = (float)attest_rng_normal_portable(&rng, 0, 0.25); /* signed: sums cancel */
}

/* An independent float32 indexer (the production order, heads summed last to first), so the
 * clean candidate carries real float32 accumulation error, not just a final rounding. */
enum { IDX_CORRECT, IDX_SCALE_BF16, IDX_ACC_BF16, IDX_FLUSH_SUBNORMALS };

static float fp8_value(uint8_t b, int flush)
{
    return flush && fp8_subnormal(b) ? 0.0f : attest_fp8_decode(b);
}

static void fp32_indexer_variant(attest_case *c, float *logits, int variant);

static void fp32_indexer(attest_case *c, float *logits) { fp32_indexer_variant(c, logits, IDX_CORRECT); }

static void fp32_indexer_variant(attest_case *c, float *logits, int variant)
{
    const int flush = variant == IDX_FLUSH_SUBNORMALS, acc16 = variant == IDX_ACC_BF16;
    const uint8_t *cache = tensor_data(c, "cache_bytes"), *q = tensor_data(c, "q_fp8");
    const float *w = tensor_data(c, "weights");
    for (int32_t r = 0; r < IDX_ROWS; ++r) {
        for (int32_t t = 0; t < IDX_MAXLEN; ++t) {
            float *out = &logits[(size_t)r * IDX_MAXLEN + (size_t)t];
            if (t >= idx_lens[r]) {
                *out = -INFINITY;
                continue;
            }
            const uint8_t *blk = cache + (size_t)idx_blocks[r][t / 64] * 8448;
            const uint8_t *k = blk + (size_t)(t % 64) * 128;
            float kscale;
            memcpy(&kscale, blk + 8192 + 4 * (t % 64), 4);
            if (variant == IDX_SCALE_BF16) kscale = round_bf16(kscale);
            float acc = 0;
            for (int32_t h = IDX_HEADS - 1; h >= 0; --h) {
                const uint8_t *qh = q + ((size_t)r * IDX_HEADS + (size_t)h) * 128;
                float dot = 0;
                for (int32_t d = 0; d < 128; ++d) {
                    dot += fp8_value(qh[d], flush) * fp8_value(k[d], flush);
                    if (acc16) dot = round_bf16(dot);
                }
                acc += w[(size_t)r * IDX_HEADS + (size_t)h] * fmaxf(dot, 0.0f);
                if (acc16) acc = round_bf16(acc);
            }
            *out = acc * kscale;
        }
    }
}

static void topk_sets(const double *logits, int32_t k, int32_t *sets)
{
    for (int32_t r = 0; r < IDX_ROWS; ++r)
        assert_ok(attest_ref_topk_row_skip_neg_inf(logits + (size_t)r * IDX_MAXLEN, idx_lens[r], k,
                                      ATTEST_TOPK_BY_SCORE, sets + (size_t)r * (size_t)k));
}

static void indexer_faults(void)
{
    attest_case c;
    attest_layout layout;
    build_indexer(&c, &layout);
    const attest_tensor *t = attest_case_tensor(&c, "logits");
    assert_non_null(t);
    const size_t n = attest_tensor_count(t);
    assert_int_equal(n, (size_t)IDX_ROWS * IDX_MAXLEN);
    const attest_tolerance tol = policy_tol(ATTEST_KERNEL_INDEXER, "logits");
    double ref[IDX_ROWS * IDX_MAXLEN], ref2[IDX_ROWS * IDX_MAXLEN], bnd[IDX_ROWS * IDX_MAXLEN];
    float cand[IDX_ROWS * IDX_MAXLEN];
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED, ATTEST_INDEXER_ORDER_KERNEL,
                                        ref));
    assert_ok(attest_ref_indexer_bounds(&c, &tol.model, ref2, bnd));
    attest_tensor_metrics m;

    to_f32(ref, cand, n);
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    record("clean (rounded reference)", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));
    expect(m.failed_gates == 0);
    expect(m.vacuous == 0);

    /* An independent float32 kernel, with its own top-k: passes every gate, top-k included. */
    fp32_indexer(&c, cand);
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    int32_t ref_sets[IDX_ROWS * IDX_TOPK], cand_sets[IDX_ROWS * IDX_TOPK];
    double cand_d[IDX_ROWS * IDX_MAXLEN];
    for (size_t i = 0; i < n; ++i) cand_d[i] = cand[i];
    topk_sets(ref, IDX_TOPK, ref_sets);
    topk_sets(cand_d, IDX_TOPK, cand_sets);
    assert_ok(attest_compare_topk_bounded(ref, bnd, IDX_ROWS, IDX_MAXLEN, idx_lens, cand_sets,
                                          ref_sets, IDX_TOPK, &tol, &m));
    expect(m.topk_checked == 1);
    record("clean (float32 kernel + its top-k)", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));
    print_message("float32 indexer vs reference: max_abs %.3g (atol_effective %.3g), max_rel %.3g, "
                  "cos_diff %.3g\n", m.max_abs, m.atol_effective, m.max_rel, m.cos_diff);
    expect(m.failed_gates == 0);

    static const double gains[2] = {0.97, 1.03};
    for (int g = 0; g < 2; ++g) {
        for (size_t i = 0; i < n; ++i) cand[i] = (float)(ref[i] * gains[g]);
        char name[40];
        snprintf(name, sizeof name, "gain %.2f", gains[g]);
        m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
        record(name, "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));
        expect(rows[num_rows - 1].dg_cos < DG_COS_BOUND);
    }

    /* Row 0's logits shifted by one position (t reads t-1) inside the valid length. */
    to_f32(ref, cand, n);
    for (int32_t p = 1; p < idx_lens[0]; ++p) cand[p] = (float)ref[p - 1];
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    record("position shifted by one", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));
    expect(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT));

    /* Row 1 writes 0.0 past its length instead of -inf. */
    to_f32(ref, cand, n);
    for (int32_t p = idx_lens[1]; p < IDX_MAXLEN; ++p) cand[IDX_MAXLEN + p] = 0.0f;
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    record("-inf mask dropped past the end", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));
    expect(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE));

    to_f32(ref, cand, n);
    cand[5] = NAN;
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    record("one NaN", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));
    expect(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE));

    /* Swap the fp32 scales of positions 10 and 11 of request 0, recompute, judge. */
    uint8_t *cache = tensor_data(&c, "cache_bytes");
    uint8_t *blk = cache + (size_t)idx_blocks[0][0] * 8448;
    uint8_t s10[4], s11[4];
    memcpy(s10, blk + 8192 + 40, 4);
    memcpy(s11, blk + 8192 + 44, 4);
    assert_true(memcmp(s10, s11, 4) != 0);
    memcpy(blk + 8192 + 40, s11, 4);
    memcpy(blk + 8192 + 44, s10, 4);
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED, ATTEST_INDEXER_ORDER_KERNEL,
                                        ref2));
    memcpy(blk + 8192 + 40, s10, 4);
    memcpy(blk + 8192 + 44, s11, 4);
    to_f32(ref2, cand, n);
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    record("two scale tiles swapped", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));

    /* Key scales rounded to bf16 before use. */
    fp32_indexer_variant(&c, cand, IDX_SCALE_BF16);
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    record("key scale rounded to bf16", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));

    /* Dot products and head sums accumulated in bf16. */
    fp32_indexer_variant(&c, cand, IDX_ACC_BF16);
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    record("accumulation in bf16", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));

    /* fp8 subnormals (query and key bytes) read as zero. */
    fp32_indexer_variant(&c, cand, IDX_FLUSH_SUBNORMALS);
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    record("fp8 subnormals flushed to zero", "logits", &m, dg_cos(ref, cand, ATTEST_DTYPE_F32, n));

    /* Top-k: the k-th selected position swapped for the (k+1)-th, in a row where the gap
     * between them is well outside the tie band. */
    to_f32(ref, cand, n);
    m = judge(ref, bnd, cand, ATTEST_DTYPE_F32, t, &tol);
    int32_t wide[IDX_ROWS * (IDX_TOPK + 1)];
    topk_sets(ref, IDX_TOPK + 1, wide);
    memcpy(cand_sets, ref_sets, sizeof cand_sets);
    int swapped = 0;
    for (int32_t r = 0; r < IDX_ROWS && !swapped; ++r) {
        const double *row = ref + (size_t)r * IDX_MAXLEN;
        int32_t kth = wide[r * (IDX_TOPK + 1) + IDX_TOPK - 1], next = wide[r * (IDX_TOPK + 1) + IDX_TOPK];
        double band = fmax(tol.topk_tie_atol, tol.topk_tie_rtol * fabs(row[kth])) +
                      attest_element_tolerance(&tol, ATTEST_DTYPE_F32, row[kth], bnd[r * IDX_MAXLEN + kth]) +
                      attest_element_tolerance(&tol, ATTEST_DTYPE_F32, row[next], bnd[r * IDX_MAXLEN + next]);
        if (row[kth] - row[next] > 10 * band) {
            for (int32_t s = 0; s < IDX_TOPK; ++s)
                if (cand_sets[r * IDX_TOPK + s] == kth) cand_sets[r * IDX_TOPK + s] = next;
            swapped = 1;
        }
    }
    assert_true(swapped);
    assert_ok(attest_compare_topk_bounded(ref, bnd, IDX_ROWS, IDX_MAXLEN, idx_lens, cand_sets,
                                          ref_sets, IDX_TOPK, &tol, &m));
    record("top-k boundary swapped for k+1-th", "topk", &m, NAN);
    expect(m.failed_gates == ATTEST_GATE_BIT(ATTEST_GATE_TOPK));
    attest_case_free(&c);
}

/* Every fault caught by at least one gate; the clean outputs pass; the table is printed. */
static void test_selftest_table(void **state)
{
    (void)state;
    num_rows = 0;
    num_misses = 0;
    mla_fixture f;
    mla_setup(&f);
    mla_faults(&f);
    mla_teardown(&f);
    indexer_faults();
    print_table();
    for (size_t i = 0; i < num_rows && num_misses < sizeof misses / sizeof misses[0]; ++i) {
        const int clean = strncmp(rows[i].fault, "clean", 5) == 0;
        if (clean && rows[i].failed)
            snprintf(misses[num_misses++], sizeof misses[0], "clean %s failed", rows[i].output);
        if (!clean && !rows[i].failed)
            snprintf(misses[num_misses++], sizeof misses[0], "fault '%s' on %s missed",
                     rows[i].fault, rows[i].output);
    }
    for (size_t i = 0; i < num_misses; ++i) print_error("self-test: %s\n", misses[i]);
    if (num_misses) fail_msg("%zu of the table's expectations failed (listed above)", num_misses);
}

/* DeepGEMM's lone cosine metric (< 1e-3) passes the gain and zeroing faults on realistic decode
 * outputs, while attest's gates catch them (the element gate alone suffices, and cosine too). */
static void test_lone_cosine_misses(void **state)
{
    (void)state;
    mla_fixture f;
    mla_setup(&f);
    static const double gains[2] = {0.97, 1.03};
    for (int g = 0; g <= 2; ++g) {
        if (g < 2) {
            for (size_t i = 0; i < f.n_out; ++i) f.cand[i] = attest_bf16_encode_f64(f.out[i] * gains[g]);
        } else {
            to_bf16(f.out, f.cand, f.n_out);
            for (size_t i = 3; i < f.n_out; i += 1000) f.cand[i] = 0;
        }
        double lone = dg_cos(f.out, f.cand, ATTEST_DTYPE_BF16, f.n_out);
        attest_tensor_metrics m = judge(f.out, f.out_b, f.cand, ATTEST_DTYPE_BF16, f.t_out, &f.tol_out);
        print_message("%s: deepgemm cos_diff %.3g (< 1e-3: missed); attest gates %s%s\n",
                      g == 0 ? "gain 0.97" : g == 1 ? "gain 1.03" : "0.1% zeroed", lone,
                      m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT) ? "element " : "",
                      m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_COSINE) ? "cosine" : "");
        assert_true(lone < DG_COS_BOUND);
        assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT));
        assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_COSINE));
    }
    mla_teardown(&f);
}

/* The clean candidates (rounded reference; the float32 indexer) also pass policies/strict.json,
 * whose bounds sit 4-8x above measured float32 error. */
static void test_clean_passes_strict(void **state)
{
    (void)state;
    const char *src = getenv("ATTEST_SOURCE_DIR");
    if (src == NULL) skip();
    char path[1024];
    snprintf(path, sizeof path, "%s/policies/strict.json", src);
    attest_policy *strict = NULL;
    assert_ok(attest_policy_load(path, &strict));
    attest_tolerance tout, tlse, tlog;
    assert_ok(attest_policy_lookup(strict, ATTEST_KERNEL_MLA_DECODE, "out_bf16", &tout));
    assert_ok(attest_policy_lookup(strict, ATTEST_KERNEL_MLA_DECODE, "lse", &tlse));
    assert_ok(attest_policy_lookup(strict, ATTEST_KERNEL_INDEXER, "logits", &tlog));

    mla_fixture f;
    mla_setup(&f);
    to_bf16(f.out, f.cand, f.n_out);
    attest_tensor_metrics m = judge(f.out, NULL, f.cand, ATTEST_DTYPE_BF16, f.t_out, &tout);
    assert_int_equal(m.failed_gates, 0);
    for (size_t i = 0; i < f.n_out; i += 97) f.cand[i] = attest_bf16_encode_f64(f.out[i] * 0.99);
    m = judge(f.out, NULL, f.cand, ATTEST_DTYPE_BF16, f.t_out, &tout); /* a 1% gain fails strict */
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_CODE));
    to_f32(f.lse, f.cand_lse, f.n_lse);
    m = judge(f.lse, NULL, f.cand_lse, ATTEST_DTYPE_F32, f.t_lse, &tlse);
    assert_int_equal(m.failed_gates, 0);
    mla_teardown(&f);

    attest_case c;
    attest_layout layout;
    build_indexer(&c, &layout);
    double ref[IDX_ROWS * IDX_MAXLEN];
    float cand[IDX_ROWS * IDX_MAXLEN];
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED, ATTEST_INDEXER_ORDER_KERNEL,
                                        ref));
    fp32_indexer(&c, cand);
    m = judge(ref, NULL, cand, ATTEST_DTYPE_F32, attest_case_tensor(&c, "logits"), &tlog);
    assert_int_equal(m.failed_gates, 0);
    attest_case_free(&c);
    attest_policy_free(strict);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selftest_table),
        cmocka_unit_test(test_lone_cosine_misses),
        cmocka_unit_test(test_clean_passes_strict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
