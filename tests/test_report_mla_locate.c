/* Tests of the mla-decode localization (attest_report_mla_locate): a "candidate" whose output is
 * the reference of the same case with one token (or one page) dropped from the query's index list
 * must be localized to that token (page), with the page, in-page slot and byte offsets computed
 * here from the layout descriptor, not by the code under test. */
#include <inttypes.h>
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

#include "attest/generator.h"
#include "attest/layout.h"
#include "attest/numerics.h"
#include "attest/reference.h"
#include "attest/report.h"

#define assert_contains(text, needle)                                                             \
    do {                                                                                           \
        if (!strstr((text), (needle))) fail_msg("missing \"%s\" in:\n%s", (needle), (text));       \
    } while (0)

typedef struct fixture {
    attest_case c;
    int32_t *row;      /* indices[0, 0, :] */
    int32_t valid;     /* its valid slots (no topk_length cut) */
    size_t out_count;
} fixture;

/* Draws a case whose first query has several valid slots, a finite reference and no extra scope
 * or length tensor (so every slot of the row counts). */
static void make_case(fixture *fx)
{
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    g.edge_bytes = 0;
    g.max_heads = 2;
    for (uint64_t seed = 1; seed < 500; seed++) {
        memset(&fx->c, 0, sizeof fx->c);
        assert_ok(attest_generate_case(&g, seed, &fx->c));
        const attest_mla_params *p = &fx->c.params.mla;
        attest_tensor *idx = attest_case_tensor(&fx->c, "indices");
        if (p->has_extra || p->has_topk_length || !idx) {
            attest_case_free(&fx->c);
            continue;
        }
        fx->row = idx->data;
        fx->valid = 0;
        for (int32_t k = 0; k < p->topk; k++) fx->valid += fx->row[k] >= 0;
        fx->out_count = (size_t)p->b * p->s_q * p->h_q * p->d_v;
        double *out = malloc(fx->out_count * sizeof *out), *lse = malloc(4096 * sizeof *lse);
        assert_non_null(out);
        int finite = fx->valid >= 8 && p->b * p->s_q * p->h_q <= 4096 &&
                     attest_ref_mla_decode(&fx->c, ATTEST_REF_SIMULATED, out, lse) == ATTEST_OK;
        for (int32_t d = 0; finite && d < p->d_v; d++) finite = isfinite(out[d]);
        free(out);
        free(lse);
        if (finite) return;
        attest_case_free(&fx->c);
    }
    fail_msg("no suitable mla-decode case in 500 seeds");
}

/* The reference of the case with the slots in drop[] set to -1, as bf16 bytes. */
static uint16_t *reference_without(fixture *fx, const unsigned char *drop)
{
    const attest_mla_params *p = &fx->c.params.mla;
    int32_t *saved = malloc((size_t)p->topk * sizeof *saved);
    memcpy(saved, fx->row, (size_t)p->topk * sizeof *saved);
    for (int32_t k = 0; k < p->topk; k++)
        if (drop[k]) fx->row[k] = -1;
    double *out = malloc(fx->out_count * sizeof *out), *lse = malloc(4096 * sizeof *lse);
    assert_ok(attest_ref_mla_decode(&fx->c, ATTEST_REF_SIMULATED, out, lse));
    memcpy(fx->row, saved, (size_t)p->topk * sizeof *saved);
    uint16_t *bf = malloc(fx->out_count * sizeof *bf);
    for (size_t i = 0; i < fx->out_count; i++) bf[i] = attest_bf16_encode_f64(out[i]);
    free(out);
    free(lse);
    free(saved);
    return bf;
}

static double row_change(fixture *fx, const uint16_t *a)
{
    double *out = malloc(fx->out_count * sizeof *out), *lse = malloc(4096 * sizeof *lse);
    assert_ok(attest_ref_mla_decode(&fx->c, ATTEST_REF_SIMULATED, out, lse));
    double acc = 0.0;
    for (int32_t d = 0; d < fx->c.params.mla.d_v; d++) {
        const double x = (double)attest_bf16_decode(a[d]) - out[d];
        acc += x * x;
    }
    free(out);
    free(lse);
    return sqrt(acc);
}

static char *locate(fixture *fx, const uint16_t *cand)
{
    attest_coord co;
    memset(&co, 0, sizeof co);
    co.rank = 4; /* request 0, query 0, head 0, dim 0 */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    attest_report_mla_locate(f, &fx->c, &co, cand, fx->out_count * 2);
    fclose(f);
    return buf;
}

static void expected_bytes(const attest_case *c, int32_t index, char *buf, size_t cap)
{
    const attest_mla_params *p = &c->params.mla;
    attest_layout L;
    assert_ok(attest_layout_make(p->layout, (uint32_t)p->page_size,
                                 (uint64_t)p->page_stride, &L));
    attest_token_offsets off;
    assert_ok(attest_layout_token_offsets(&L, (uint32_t)(index % p->page_size), &off));
    const uint64_t base = (uint64_t)(index / p->page_size) * L.page_stride;
    snprintf(buf, cap, "page %d at byte %" PRIu64 " (%d * %" PRIu64 "), in-page slot %d; fp8 bytes [%" PRIu64
             ", %" PRIu64 ")",
             (int)(index / p->page_size), base, (int)(index / p->page_size), L.page_stride,
             (int)(index % p->page_size), base + off.fp8, base + off.fp8 + L.fp8_dim);
}

/* Dropping the token that moves the row most is found, with its slot, page and bytes. */
static void test_dropped_token_is_named(void **state)
{
    (void)state;
    fixture fx;
    make_case(&fx);
    const attest_mla_params *p = &fx.c.params.mla;
    unsigned char *drop = calloc((size_t)p->topk, 1);
    int32_t best = -1;
    double best_change = 0.0;
    for (int32_t k = 0; k < p->topk; k++) {
        if (fx.row[k] < 0) continue;
        int dup = 0; /* a token listed twice would stay selected through its other slot */
        for (int32_t j = 0; j < p->topk; j++) dup |= j != k && fx.row[j] == fx.row[k];
        if (dup) continue;
        drop[k] = 1;
        uint16_t *cand = reference_without(&fx, drop);
        drop[k] = 0;
        const double ch = row_change(&fx, cand);
        free(cand);
        if (ch > best_change) {
            best_change = ch;
            best = k;
        }
    }
    assert_true(best >= 0);
    drop[best] = 1;
    uint16_t *cand = reference_without(&fx, drop);
    char *text = locate(&fx, cand);
    char want[256];
    snprintf(want, sizeof want, "explained by token %d (indices[0, 0, %d]", (int)fx.row[best],
             (int)best);
    assert_contains(text, want);
    expected_bytes(&fx.c, fx.row[best], want, sizeof want);
    assert_contains(text, want);
    free(text);
    free(cand);
    free(drop);
    attest_case_free(&fx.c);
}

/* Dropping every token of one page (as a page-stride bug loses a page) names that page. */
static void test_dropped_page_is_named(void **state)
{
    (void)state;
    fixture fx;
    make_case(&fx);
    const attest_mla_params *p = &fx.c.params.mla;
    unsigned char *drop = calloc((size_t)p->topk, 1);
    /* The page of the first valid slot. */
    int32_t page = -1;
    for (int32_t k = 0; k < p->topk && page < 0; k++)
        if (fx.row[k] >= 0) page = fx.row[k] / p->page_size;
    int32_t tokens = 0, others = 0;
    for (int32_t k = 0; k < p->topk; k++) {
        if (fx.row[k] < 0) continue;
        if (fx.row[k] / p->page_size == page) {
            drop[k] = 1;
            tokens++;
        } else {
            others++;
        }
    }
    if (others == 0) skip(); /* every token on one page: nothing to tell apart */
    uint16_t *cand = reference_without(&fx, drop);
    char *text = locate(&fx, cand);
    char want[160];
    snprintf(want, sizeof want, "page %d of cache_bytes (%d selected token%s): leaving it out",
             (int)page, (int)tokens, tokens == 1 ? "" : "s");
    assert_true(row_change(&fx, cand) > 1e-2); /* the dropped page shows above bf16 rounding */
    assert_contains(text, want);
    free(text);
    free(cand);
    free(drop);
    attest_case_free(&fx.c);
}

/* A non-finite candidate row gets the page listing, no leave-one-out. */
static void test_nonfinite_candidate(void **state)
{
    (void)state;
    fixture fx;
    make_case(&fx);
    uint16_t *cand = calloc(fx.out_count, sizeof *cand);
    cand[3] = 0x7FC0; /* NaN */
    char *text = locate(&fx, cand);
    assert_contains(text, "no leave-one-out");
    assert_contains(text, "selected pages (page: tokens, weight):");
    assert_null(strstr(text, "explained by"));
    free(text);
    free(cand);
    attest_case_free(&fx.c);
}

/* A non-finite candidate row where the reference is finite: the localization names the token
 * a common bug reads instead, when its bytes decode to NaN: here token 0, which a kernel that
 * reads token 0 for a -1 slot (and weights it by 0) takes. Nothing such: it says so. */
static void test_nonfinite_suspects(void **state)
{
    (void)state;
    fixture fx;
    make_case(&fx);
    const attest_mla_params *p = &fx.c.params.mla;
    uint16_t *cand = calloc(fx.out_count, sizeof *cand);
    cand[3] = 0x7FC0; /* NaN */
    char *text = locate(&fx, cand);
    assert_null(strstr(text, "possible cause, -1 slots"));
    assert_null(strstr(text, "possible cause, past"));
    free(text);
    /* token 0 out of the selection, one -1 slot, and a NaN fp8 byte in token 0 (an unselected
     * slot may hold NaN bytes already: the generator poisons them) */
    int holes = 0;
    fx.row[p->topk - 1] = -1;
    for (int32_t k = 0; k < p->topk; k++) {
        if (fx.row[k] == 0) fx.row[k] = -1;
        holes += fx.row[k] == -1;
    }
    attest_layout L;
    assert_ok(attest_layout_make(p->layout, (uint32_t)p->page_size, (uint64_t)p->page_stride, &L));
    attest_token_offsets off;
    assert_ok(attest_layout_token_offsets(&L, 0, &off));
    uint8_t *pool = attest_case_tensor(&fx.c, "cache_bytes")->data;
    pool[off.fp8 + 5] = 0x7F; /* e4m3 NaN */
    double *k0 = malloc(L.k_dim * sizeof *k0);
    attest_layout_decode_token(&L, pool, 0, k0);
    int bad = 0;
    for (uint32_t d = 0; d < L.k_dim; d++) bad += !isfinite(k0[d]);
    free(k0);
    assert_true(bad >= 1);
    text = locate(&fx, cand);
    char want[256];
    snprintf(want, sizeof want, "possible cause, -1 slots: indices[0, 0] has %d -1 slot%s, and "
             "token 0 holds %d inf/nan of %u values: a kernel that reads token 0 for -1", holes,
             holes == 1 ? "" : "s", bad, L.k_dim);
    assert_contains(text, want);
    free(text);
    /* one scale too many: the bytes after the first selected token's last scale read as NaN */
    int32_t first = 0;
    while (first < p->topk && fx.row[first] < 0) first++;
    assert_true(first < p->topk);
    const int32_t tok = fx.row[first];
    attest_token_offsets toff;
    assert_ok(attest_layout_token_offsets(&L, (uint32_t)(tok % p->page_size), &toff));
    const int ue8m0 = L.scale_format == ATTEST_SCALE_UE8M0;
    const uint64_t after = (uint64_t)(tok / p->page_size) * L.page_stride +
                           toff.scale[L.num_scales - 1] + (ue8m0 ? 1 : 4);
    uint8_t saved[4];
    memcpy(saved, pool + after, 4);
    if (ue8m0) {
        pool[after] = 0xFF; /* ue8m0 NaN */
    } else {
        const float nan = NAN;
        memcpy(pool + after, &nan, 4);
    }
    text = locate(&fx, cand);
    snprintf(want, sizeof want, "possible cause, one scale too many: the %s after the last scale "
             "of token %d (indices[0, 0, %d]), byte %" PRIu64 ", reads as a %s scale of NaN",
             ue8m0 ? "byte" : "4 bytes", (int)tok, (int)first, after, ue8m0 ? "ue8m0" : "float32");
    assert_contains(text, want);
    free(text);
    memset(pool + after, 0x3F, ue8m0 ? 1 : 4); /* finite either way */
    text = locate(&fx, cand);
    assert_null(strstr(text, want));
    free(text);
    memcpy(pool + after, saved, 4);
    /* a finite candidate row asks nothing of the sort */
    cand[3] = 0;
    text = locate(&fx, cand);
    assert_null(strstr(text, "token 0 holds"));
    free(text);
    free(cand);
    attest_case_free(&fx.c);
}

/* The first scale byte of the token slot k of the row names, NULL for a -1 slot or a token an
 * earlier slot names (each token's scales are moved once). */
static uint8_t *first_scale(const fixture *fx, const attest_layout *L, uint8_t *pool, int32_t k)
{
    const int32_t tok = fx->row[k], P = fx->c.params.mla.page_size;
    for (int32_t j = 0; j < k; j++)
        if (fx->row[j] == tok) return NULL;
    if (tok < 0) return NULL;
    attest_token_offsets off;
    assert_ok(attest_layout_token_offsets(L, (uint32_t)(tok % P), &off));
    return pool + (uint64_t)(tok / P) * L->page_stride + off.scale[0];
}

/* A scale index off by one tile misreads every token alike, which no leave-one-out explains:
 * the candidate here is the reference (attest_ref_mla_decode) of the case with each selected
 * token's scales moved down one tile (the byte after the last, mla-v4's padding, set to a
 * finite 1.0 first), and the localization must name the shift. */
static void test_scale_tile_shift(void **state)
{
    (void)state;
    fixture fx;
    make_case(&fx);
    const attest_mla_params *p = &fx.c.params.mla;
    attest_layout L;
    assert_ok(attest_layout_make(p->layout, (uint32_t)p->page_size, (uint64_t)p->page_stride, &L));
    uint8_t *pool = attest_case_tensor(&fx.c, "cache_bytes")->data;
    const size_t sb = L.scale_format == ATTEST_SCALE_UE8M0 ? 1 : 4;
    const size_t span = (size_t)L.num_scales * sb;
    uint8_t *saved = malloc((size_t)p->topk * (span + sb));
    for (int32_t k = 0; k < p->topk; k++) {
        uint8_t *sc = first_scale(&fx, &L, pool, k);
        if (!sc) continue;
        if (sb == 1) sc[span] = 127; /* the padding byte: ue8m0 2^0 */
        memcpy(saved + (size_t)k * (span + sb), sc, span + sb);
        memmove(sc, sc + sb, span); /* tile i gets tile i+1's scale */
    }
    double *out = malloc(fx.out_count * sizeof *out), *lse = malloc(4096 * sizeof *lse);
    assert_ok(attest_ref_mla_decode(&fx.c, ATTEST_REF_SIMULATED, out, lse));
    uint16_t *cand = malloc(fx.out_count * sizeof *cand);
    for (size_t i = 0; i < fx.out_count; i++) cand[i] = attest_bf16_encode_f64(out[i]);
    for (int32_t k = 0; k < p->topk; k++) { /* the case's own scales back */
        uint8_t *sc = first_scale(&fx, &L, pool, k);
        if (sc) memcpy(sc, saved + (size_t)k * (span + sb), span + sb);
    }
    for (int32_t d = 0; d < p->d_v; d++) assert_true(isfinite(out[d]));
    char *text = locate(&fx, cand);
    assert_contains(text, "explained by a scale index off by +1 tile for every token");
    free(text);
    /* a candidate one token off (dropped): a single token explains it, no shift is named */
    unsigned char *drop = calloc((size_t)p->topk, 1);
    int32_t first = 0;
    while (fx.row[first] < 0) first++;
    drop[first] = 1;
    uint16_t *other = reference_without(&fx, drop);
    text = locate(&fx, other);
    assert_null(strstr(text, "off by +1 tile"));
    free(text);
    free(other);
    free(drop);
    free(out);
    free(lse);
    free(cand);
    free(saved);
    attest_case_free(&fx.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dropped_token_is_named),
        cmocka_unit_test(test_dropped_page_is_named),
        cmocka_unit_test(test_nonfinite_candidate),
        cmocka_unit_test(test_nonfinite_suspects),
        cmocka_unit_test(test_scale_tile_shift),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
