/* Edge coverage of the case generator, counted from the case bytes over 1000 seeds per kernel
 * family: every promised edge is reached, and every case is valid, poisoned outside its tokens,
 * position-encoded and consistent with its truth. */
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

#include "gen_test_views.h"

/* Per kernel family: 2000 cases in all. */
#define COVERAGE_SEEDS 1000

/* Edge counters: each is the number of cases (or requests, rows) where the edge shows in the
 * bytes. */
typedef struct coverage {
    long len0, len1, len_bm1, len_b, len_bp1, len_multi_page_boundary, long_len;
    long nan7f, nanff, subnormal, pos448, neg448, pos0, neg0;
    long q_subnormal, q_448, q_nan;
    long holes, dups, all_invalid_rows, tl_present, tl_absent, tl_cuts_valid, tl_traps;
    long sink_pinf, sink_ninf, sink_absent, extra, v32_padded_stride, unused_pages, no_unused;
    long ue8m0_far, ue8m0_448, fp32_nonpow2, fp32_pow2, fp32_far, nan_selected, nan_unselected;
    long next_n_gt1, topk_zero, topk_pos, spare_column, v4, v32, p2, p16, p64, p256;
    long sparse_fill, full_fill;
    long cases, pairs[2];
} coverage;

static void count_len(coverage *cv, int32_t len, int32_t P)
{
    if (len == 0) cv->len0++;
    if (len == 1) cv->len1++;
    if (len >= P - 1 && len > 1) {
        int32_t r = len % P;
        if (r == P - 1) cv->len_bm1++;
        if (r == 0) cv->len_b++;
        if (r == 1 && len > 1) cv->len_bp1++;
        if (len > P + 1 && (r == P - 1 || r == 0 || r == 1)) cv->len_multi_page_boundary++;
    }
    if (len >= 4 * 64) cv->long_len++;
}

/* Scans written tokens: fp8 edge bytes and scale exponents. */
static void count_bytes(coverage *cv, const pool_view *v)
{
    int f[16] = {0};
    long hist[256];
    fp8_histogram(v, hist);
    const uint32_t P = v->L.page_size;
    for (size_t s = 0; s < (size_t)v->num_pages * P; s++) {
        if (!v->written[s]) continue;
        attest_token_offsets o;
        assert_ok(attest_layout_token_offsets(&v->L, (uint32_t)(s % P), &o));
        const uint8_t *page = v->bytes + (s / P) * v->L.page_stride;
        for (uint32_t i = 0; i < v->L.num_scales; i++) {
            if (v->L.scale_format == ATTEST_SCALE_UE8M0) {
                int b = page[o.scale[i]];
                f[7] |= b != 0xFF && abs(b - 127) >= 40;
            } else {
                float x;
                memcpy(&x, page + o.scale[i], 4);
                if (!isfinite(x) || x <= 0) continue;
                int e;
                double m = frexp(x, &e);
                f[8] |= m != 0.5;
                f[9] |= m == 0.5;
                f[10] |= abs(e) >= 40;
            }
        }
    }
    f[0] = hist[0x7F] > 0;
    f[1] = hist[0xFF] > 0;
    for (int k = 1; k <= 7; k++) f[2] |= hist[k] > 0 || hist[0x80 | k] > 0;
    f[3] = hist[0x7E] > 0;
    f[4] = hist[0xFE] > 0;
    f[5] = hist[0x00] > 0;
    f[6] = hist[0x80] > 0;
    /* +-448 under a UE8M0 scale (mla-v4). */
    f[11] = v->L.scale_format == ATTEST_SCALE_UE8M0 && (hist[0x7E] > 0 || hist[0xFE] > 0);
    cv->nan7f += f[0];
    cv->nanff += f[1];
    cv->subnormal += f[2];
    cv->pos448 += f[3];
    cv->neg448 += f[4];
    cv->pos0 += f[5];
    cv->neg0 += f[6];
    cv->ue8m0_far += f[7];
    cv->fp32_nonpow2 += f[8];
    cv->fp32_pow2 += f[9];
    cv->fp32_far += f[10];
    cv->ue8m0_448 += f[11];
}

/* Index lists: holes, duplicates, all-invalid rows, topk_length effects. */
static void count_indices(coverage *cv, const int32_t *idx, const int32_t *tl, int32_t b,
                          int32_t s_q, int32_t K, const uint8_t *written, const uint8_t *in_req)
{
    int holes = 0, dups = 0, all_invalid = 0, cuts = 0, traps = 0;
    for (int32_t bi = 0; bi < b; bi++)
        for (int32_t q = 0; q < s_q; q++) {
            const int32_t *row = idx + ((size_t)bi * s_q + q) * K;
            const int32_t valid = tl ? tl[bi] : K;
            int n_valid = 0, n_all = 0;
            for (int32_t k = 0; k < K; k++) {
                n_all += row[k] != -1;
                if (k >= valid) {
                    if (row[k] != -1 && !written[row[k]]) traps = 1;
                    continue;
                }
                if (row[k] == -1) {
                    holes |= k + 1 < valid; /* a -1 that is not just the tail */
                    continue;
                }
                n_valid++;
                /* Every valid index points at a written token inside a request. */
                assert_true(written[row[k]] && in_req[row[k]]);
                for (int32_t m = 0; m < k; m++) dups |= row[m] == row[k];
            }
            all_invalid |= n_valid == 0 && valid > 0;
            cuts |= tl != NULL && n_all > n_valid && n_valid > 0;
        }
    cv->holes += holes;
    cv->dups += dups;
    cv->all_invalid_rows += all_invalid;
    cv->tl_cuts_valid += cuts;
    cv->tl_traps += traps;
}

/* Returns the fraction of dims in which two decoded tokens differ, over dims where both are
 * finite and not both zero (a tile of an extreme tiny scale quantizes to zeros in any token). */
static double fraction_differing(const double *a, const double *b, uint32_t n)
{
    int finite = 0, differ = 0;
    for (uint32_t d = 0; d < n; d++) {
        if (!isfinite(a[d]) || !isfinite(b[d]) || (a[d] == 0 && b[d] == 0)) continue;
        finite++;
        differ += fabs(a[d] - b[d]) > 1e-6 * (fabs(a[d]) + fabs(b[d]));
    }
    return finite ? (double)differ / finite : 1.0;
}

/* Token j and j+1 of a request (and token j of another request) decode to clearly different
 * values, so a mis-strided read cannot go unnoticed. Returns the smallest fraction seen;
 * pairs[0] counts neighbour pairs, pairs[1] those differing in under half their dims. */
static double check_position_encoding(const pool_view *v, const int32_t *lens,
                                      const int32_t *table, int32_t ppr, int32_t b, long *pairs)
{
    const uint32_t P = v->L.page_size, n = v->L.k_dim;
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    assert_true(x && y);
    double worst = 1.0;
    for (int32_t r = 0; r < b; r++) {
        if (lens[r] < 2) continue;
        for (int32_t j = 0; j + 1 < lens[r]; j += 1 + lens[r] / 7) {
            const size_t sj = (size_t)table[(size_t)r * ppr + j / P] * P + j % P;
            const size_t sj1 = (size_t)table[(size_t)r * ppr + (j + 1) / P] * P + (j + 1) % P;
            if (!v->written[sj] || !v->written[sj1]) continue;
            pairs[0]++;
            uint32_t slot;
            const uint8_t *pg =
                attest_pool_token_page(&v->L, v->bytes, (uint64_t)table[(size_t)r * ppr + j / P] * P + j % P, &slot);
            attest_layout_decode_token(&v->L, pg, slot, x);
            pg = attest_pool_token_page(&v->L, v->bytes,
                                        (uint64_t)table[(size_t)r * ppr + (j + 1) / P] * P + (j + 1) % P, &slot);
            attest_layout_decode_token(&v->L, pg, slot, y);
            double f = fraction_differing(x, y, n);
            if (f < worst) worst = f;
            if (f < 0.5) pairs[1]++;
            if (r + 1 < b && lens[r + 1] > j &&
                v->written[(size_t)table[(size_t)(r + 1) * ppr + j / P] * P + j % P]) {
                pg = attest_pool_token_page(&v->L, v->bytes,
                                            (uint64_t)table[(size_t)(r + 1) * ppr + j / P] * P + j % P, &slot);
                attest_layout_decode_token(&v->L, pg, slot, y);
                f = fraction_differing(x, y, n);
                if (f < worst) worst = f;
            }
        }
    }
    free(x);
    free(y);
    return worst;
}

static void scan_mla(coverage *cv, attest_case *c, const attest_gen_info *info, double *worst_stride)
{
    const attest_mla_params *p = &c->params.mla;
    cv->v4 += p->layout == ATTEST_LAYOUT_MLA_V4;
    cv->v32 += p->layout == ATTEST_LAYOUT_MLA_V32;
    cv->p2 += p->page_size == 2;
    cv->p16 += p->page_size == 16;
    cv->p64 += p->page_size == 64;
    cv->p256 += p->page_size == 256;
    for (int e = 0; e <= p->has_extra; e++) {
        pool_view v = mla_pool(c, e, info);
        check_poison(&v);
        count_bytes(cv, &v);
        const int32_t *lens = e ? info->extra_lens : info->lens;
        const int32_t ppr = e ? info->extra_pages_per_req : info->pages_per_req;
        int32_t used = 0;
        for (int32_t b = 0; b < p->b; b++) {
            count_len(cv, lens[b], (int32_t)v.L.page_size);
            used += (lens[b] + (int32_t)v.L.page_size - 1) / (int32_t)v.L.page_size;
        }
        if (used < v.num_pages) cv->unused_pages++;
        else cv->no_unused++;
        const int32_t *tl = data(c, e ? "extra_topk_length" : "topk_length");
        count_indices(cv, data(c, e ? "extra_indices" : "indices"), tl, p->b, p->s_q,
                      e ? p->extra_topk : p->topk, v.written, v.in_req);
        if (tl) cv->tl_present++;
        else cv->tl_absent++;
        double w = check_position_encoding(&v, lens, e ? info->extra_page_table : info->page_table,
                                           ppr, p->b, cv->pairs);
        if (w < *worst_stride) *worst_stride = w;
        const float *truth = data(c, e ? "extra_kv_true" : "kv_true");
        if (truth) check_truth(&v, truth);
        pool_view_free(&v);
    }
    cv->extra += p->has_extra;
    cv->sparse_fill += info->sparse_fill;
    cv->full_fill += !info->sparse_fill;
    cv->v32_padded_stride +=
        p->layout == ATTEST_LAYOUT_MLA_V32 && p->page_stride > (int64_t)p->page_size * 656;
    if (p->has_sink) {
        const float *s = data(c, "attn_sink");
        int pi = 0, ni = 0;
        for (int32_t h = 0; h < p->h_q; h++) {
            pi |= isinf(s[h]) && s[h] > 0;
            ni |= isinf(s[h]) && s[h] < 0;
        }
        cv->sink_pinf += pi;
        cv->sink_ninf += ni;
    } else {
        cv->sink_absent++;
    }
}

static void scan_indexer(coverage *cv, attest_case *c, const attest_gen_info *info,
                         double *worst_stride)
{
    const attest_indexer_params *p = &c->params.indexer;
    pool_view v = indexer_pool(c);
    check_poison(&v);
    count_bytes(cv, &v);
    const int32_t *lens = data(c, "context_lens");
    assert_memory_equal(lens, info->lens, (size_t)p->b * sizeof *lens);
    for (int32_t b = 0; b < p->b; b++) count_len(cv, lens[b], 64);
    if (p->num_blocks > p->b * p->blocks_per_req) cv->unused_pages++;
    else cv->no_unused++;
    cv->spare_column += p->blocks_per_req * 64 >= p->max_len + 64;
    cv->next_n_gt1 += p->next_n > 1;
    cv->topk_zero += p->topk == 0;
    cv->topk_pos += p->topk > 0;
    const attest_tensor *qt = attest_case_tensor(c, "q_fp8");
    const uint8_t *q = qt->data;
    int qs = 0, q448 = 0, qn = 0;
    for (size_t i = 0; i < qt->nbytes; i++) {
        qs |= (q[i] & 0x7F) >= 1 && (q[i] & 0x7F) <= 7;
        q448 |= (q[i] & 0x7F) == 0x7E;
        qn |= (q[i] & 0x7F) == 0x7F;
    }
    cv->q_subnormal += qs;
    cv->q_448 += q448;
    cv->q_nan += qn;
    double w = check_position_encoding(&v, lens, data(c, "block_table"), p->blocks_per_req, p->b,
                                       cv->pairs);
    if (w < *worst_stride) *worst_stride = w;
    const float *truth = data(c, "k_true");
    if (truth) {
        check_truth(&v, truth);
        const float *qtrue = data(c, "q_true");
        for (size_t i = 0; i < qt->nbytes; i++) {
            float x = attest_fp8_decode(q[i]);
            if (isnan(qtrue[i])) {
                assert_true(isnan(x));
                continue;
            }
            assert_true(fabs((double)x - qtrue[i]) <= fmax(fabs(qtrue[i]) * 0x1p-4, 0x1p-10));
        }
    }
    pool_view_free(&v);
}

static void print_coverage(const char *kernel, const coverage *cv)
{
    printf("coverage over %ld %s cases:\n", cv->cases, kernel);
    printf("  lengths: 0:%ld 1:%ld P-1:%ld P:%ld P+1:%ld multi-page-boundary:%ld >=256:%ld\n",
           cv->len0, cv->len1, cv->len_bm1, cv->len_b, cv->len_bp1, cv->len_multi_page_boundary,
           cv->long_len);
    printf("  fp8 bytes in written tokens: 0x7F:%ld 0xFF:%ld subnormal:%ld +448:%ld -448:%ld "
           "+0:%ld -0:%ld\n",
           cv->nan7f, cv->nanff, cv->subnormal, cv->pos448, cv->neg448, cv->pos0, cv->neg0);
    printf("  scales: ue8m0 |b-127|>=40:%ld +-448 under ue8m0:%ld fp32 non-pow2:%ld fp32 pow2:%ld "
           "fp32 |exp|>=40:%ld\n",
           cv->ue8m0_far, cv->ue8m0_448, cv->fp32_nonpow2, cv->fp32_pow2, cv->fp32_far);
    printf("  pools: unused pages:%ld no unused:%ld  NaN selected:%ld NaN unselected:%ld\n",
           cv->unused_pages, cv->no_unused, cv->nan_selected, cv->nan_unselected);
    if (!strcmp(kernel, "mla-decode")) {
        printf("  indices: holes:%ld dups:%ld all-invalid rows:%ld tl present:%ld absent:%ld "
               "tl<valid:%ld tl traps:%ld\n",
               cv->holes, cv->dups, cv->all_invalid_rows, cv->tl_present, cv->tl_absent,
               cv->tl_cuts_valid, cv->tl_traps);
        printf("  sinks: +inf:%ld -inf:%ld absent:%ld  extra:%ld v32 stride>P*656:%ld\n",
               cv->sink_pinf, cv->sink_ninf, cv->sink_absent, cv->extra, cv->v32_padded_stride);
        printf("  layouts: v4:%ld v32:%ld  P=2:%ld 16:%ld 64:%ld 256:%ld  fill sparse:%ld "
               "full:%ld\n",
               cv->v4, cv->v32, cv->p2, cv->p16, cv->p64, cv->p256, cv->sparse_fill,
               cv->full_fill);
    } else {
        printf("  q_fp8: subnormal:%ld +-448:%ld NaN:%ld  next_n>1:%ld topk=0:%ld topk>0:%ld "
               "spare column:%ld\n",
               cv->q_subnormal, cv->q_448, cv->q_nan, cv->next_n_gt1, cv->topk_zero, cv->topk_pos,
               cv->spare_column);
    }
}

static void run_coverage(attest_kernel kernel, coverage *cv, double *worst_stride)
{
    attest_gen_options o = attest_gen_defaults(kernel);
    /* The pools as drawn: the move past 2^31 (test_sparse_pool's generated cases) keeps every
     * byte of them and renames pages only, but leaves most of a pool unwritten. */
    o.high_pools = 0;
    memset(cv, 0, sizeof *cv);
    *worst_stride = 1.0;
    for (uint64_t i = 0; i < COVERAGE_SEEDS; i++) {
        /* Truth tensors change no other tensor (options_change_only_what_they_name), so a
         * quarter of the cases carry them, for the truth check, at no cost to coverage. */
        o.with_truth = i % 4 == 0;
        attest_case c;
        attest_gen_info info;
        generate(&o, attest_case_seed(2024, i), &c, &info);
        if (attest_case_check_inputs(&c) != ATTEST_OK)
            fail_msg("case %llu fails input checks: %s", (unsigned long long)i, attest_last_error());
        cv->cases++;
        cv->nan_selected += info.nan_selected;
        cv->nan_unselected += info.nan_unselected > 0;
        if (kernel == ATTEST_KERNEL_MLA_DECODE)
            scan_mla(cv, &c, &info, worst_stride);
        else
            scan_indexer(cv, &c, &info, worst_stride);
        attest_gen_info_free(&info);
        attest_case_free(&c);
    }
}

/* Over 1000 seeds the decode generator reaches every edge it promises, every case is valid,
 * fully poisoned outside its tokens, position-encoded and consistent with its truth. */
static void mla_coverage(void **state)
{
    (void)state;
    coverage cv;
    double worst;
    run_coverage(ATTEST_KERNEL_MLA_DECODE, &cv, &worst);
    print_coverage("mla-decode", &cv);
    printf("  neighbouring tokens: %ld pairs, %ld differ in < 50%% of dims, worst %.3f\n",
           cv.pairs[0], cv.pairs[1], worst);
    const long must[] = {cv.len0, cv.len1, cv.len_bm1, cv.len_b, cv.len_bp1,
                         cv.len_multi_page_boundary, cv.long_len, cv.nan7f, cv.nanff,
                         cv.subnormal, cv.pos448, cv.neg448, cv.pos0, cv.neg0, cv.holes, cv.dups,
                         cv.all_invalid_rows, cv.tl_present, cv.tl_absent, cv.tl_cuts_valid,
                         cv.tl_traps, cv.sink_pinf, cv.sink_ninf, cv.sink_absent, cv.extra,
                         cv.v32_padded_stride, cv.unused_pages, cv.no_unused, cv.ue8m0_far, cv.ue8m0_448,
                         cv.fp32_nonpow2, cv.fp32_pow2, cv.nan_selected, cv.nan_unselected,
                         cv.v4, cv.v32, cv.p2, cv.p16, cv.p64, cv.p256, cv.sparse_fill,
                         cv.full_fill};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        if (must[i] == 0) fail_msg("decode edge #%zu never generated", i);
    /* NaN in a selected token is kept rare: most cases exercise values. */
    assert_true(cv.nan_selected < cv.cases / 15);
    assert_true(worst >= 0.5);
    assert_true(cv.pairs[0] > 1000 && cv.pairs[1] * 100 <= cv.pairs[0]);
}

/* The same for the indexer generator. */
static void indexer_coverage(void **state)
{
    (void)state;
    coverage cv;
    double worst;
    run_coverage(ATTEST_KERNEL_INDEXER, &cv, &worst);
    print_coverage("indexer", &cv);
    printf("  neighbouring positions: %ld pairs, %ld differ in < 50%% of dims, worst %.3f\n",
           cv.pairs[0], cv.pairs[1], worst);
    const long must[] = {cv.len0, cv.len1, cv.len_bm1, cv.len_b, cv.len_bp1,
                         cv.len_multi_page_boundary, cv.long_len, cv.nan7f, cv.nanff,
                         cv.subnormal, cv.pos448, cv.neg448, cv.pos0, cv.neg0, cv.q_subnormal,
                         cv.q_448, cv.q_nan, cv.fp32_nonpow2, cv.fp32_pow2, cv.fp32_far,
                         cv.unused_pages, cv.no_unused, cv.next_n_gt1, cv.topk_zero, cv.topk_pos,
                         cv.spare_column, cv.nan_selected};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        if (must[i] == 0) fail_msg("indexer edge #%zu never generated", i);
    assert_true(cv.nan_selected < cv.cases / 15);
    assert_true(worst >= 0.5);
    assert_true(cv.pairs[0] > 1000 && cv.pairs[1] * 100 <= cv.pairs[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mla_coverage),
        cmocka_unit_test(indexer_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
