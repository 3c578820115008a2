/* Helpers shared by the generator tests: views of a generated case's pools (which slots hold
 * tokens, derived from the case and its info), and checks of poison and truth. Include after
 * cmocka.h. */
#ifndef ATTEST_TEST_GEN_VIEWS_H
#define ATTEST_TEST_GEN_VIEWS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/case.h"
#include "attest/generator.h"
#include "attest/layout.h"
#include "attest/numerics.h"
#include "assert_ok.h"

static inline void generate(const attest_gen_options *o, uint64_t seed, attest_case *c,
                     attest_gen_info *info)
{
    attest_status st = attest_generate_case_info(o, seed, c, info);
    if (st != ATTEST_OK) fail_msg("seed %llu: %s", (unsigned long long)seed, attest_last_error());
}

static inline void *data(attest_case *c, const char *name)
{
    attest_tensor *t = attest_case_tensor(c, name);
    return t ? t->data : NULL;
}

static inline void assert_cases_identical(attest_case *a, attest_case *b)
{
    assert_int_equal(a->kernel, b->kernel);
    assert_true(a->seed == b->seed);
    assert_int_equal(a->num_tensors, b->num_tensors);
    assert_memory_equal(&a->params, &b->params, sizeof a->params);
    for (size_t i = 0; i < a->num_tensors; i++) {
        assert_string_equal(a->tensors[i].name, b->tensors[i].name);
        assert_int_equal(a->tensors[i].nbytes, b->tensors[i].nbytes);
        assert_memory_equal(a->tensors[i].data, b->tensors[i].data, a->tensors[i].nbytes);
    }
    char pa[1024], pb[1024];
    assert_ok(attest_case_param_string(a, pa, sizeof pa));
    assert_ok(attest_case_param_string(b, pb, sizeof pb));
    assert_string_equal(pa, pb);
}

/* One pool as the test sees it: layout, bytes, and which physical slots were written. */
typedef struct pool_view {
    attest_layout L;
    uint8_t *bytes;
    int32_t num_pages;
    uint8_t *written; /* [num_pages * P] slots holding a token's values */
    uint8_t *in_req;  /* [num_pages * P] slots inside some request's length */
} pool_view;

static inline void pool_view_free(pool_view *v)
{
    free(v->written);
    free(v->in_req);
    v->written = v->in_req = NULL;
}

static inline pool_view mla_pool(attest_case *c, int extra, const attest_gen_info *info)
{
    const attest_mla_params *p = &c->params.mla;
    pool_view v;
    memset(&v, 0, sizeof v);
    int32_t P = extra ? p->extra_page_size : p->page_size;
    int64_t stride = extra ? p->extra_page_stride : p->page_stride;
    assert_ok(attest_layout_make(p->layout, (uint32_t)P, (uint64_t)stride, &v.L));
    v.bytes = data(c, extra ? "extra_cache_bytes" : "cache_bytes");
    v.num_pages = extra ? p->extra_num_pages : p->num_pages;
    v.written = calloc((size_t)v.num_pages * P, 1);
    v.in_req = calloc((size_t)v.num_pages * P, 1);
    assert_true(v.written && v.in_req);
    const int32_t *lens = extra ? info->extra_lens : info->lens;
    const int32_t *table = extra ? info->extra_page_table : info->page_table;
    const int32_t ppr = extra ? info->extra_pages_per_req : info->pages_per_req;
    /* Page tables draw distinct pages of the pool. */
    uint8_t *page_used = calloc((size_t)v.num_pages, 1);
    assert_non_null(page_used);
    for (int32_t b = 0; b < p->b; b++) {
        assert_true(lens[b] >= 0 && (int64_t)lens[b] <= (int64_t)ppr * P);
        for (int32_t j = 0; j < (lens[b] + P - 1) / P; j++) {
            int32_t pg = table[(size_t)b * ppr + j];
            assert_true(pg >= 0 && pg < v.num_pages);
            assert_int_equal(page_used[pg], 0);
            page_used[pg] = 1;
        }
        for (int32_t t = 0; t < lens[b]; t++)
            v.in_req[(size_t)table[(size_t)b * ppr + t / P] * P + t % P] = 1;
    }
    free(page_used);
    const int32_t K = extra ? p->extra_topk : p->topk;
    const int32_t *idx = data(c, extra ? "extra_indices" : "indices");
    const int32_t *tl = data(c, extra ? "extra_topk_length" : "topk_length");
    if (!info->sparse_fill) {
        /* Full fill: the request's slots that any index slot names (past topk_length too). */
        const size_t n = (size_t)p->b * (size_t)p->s_q * (size_t)K;
        for (size_t k = 0; k < n; k++)
            if (idx[k] >= 0 && v.in_req[idx[k]]) v.written[idx[k]] = 1;
        return v;
    }
    /* Sparse fill: exactly the slots a valid entry selects hold values. */
    for (int32_t b = 0; b < p->b; b++)
        for (int32_t q = 0; q < p->s_q; q++)
            for (int32_t k = 0; k < (tl ? tl[b] : K); k++) {
                int32_t i = idx[((size_t)b * p->s_q + q) * K + k];
                if (i != -1) v.written[i] = 1;
            }
    return v;
}

static inline pool_view indexer_pool(attest_case *c)
{
    const attest_indexer_params *p = &c->params.indexer;
    pool_view v;
    memset(&v, 0, sizeof v);
    assert_ok(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, 64, 0, &v.L));
    v.bytes = data(c, "cache_bytes");
    v.num_pages = p->num_blocks;
    v.written = calloc((size_t)v.num_pages * 64, 1);
    v.in_req = calloc((size_t)v.num_pages * 64, 1);
    assert_true(v.written && v.in_req);
    const int32_t *table = data(c, "block_table");
    const int32_t *lens = data(c, "context_lens");
    /* The blocks requests use are distinct physical blocks; past a request's blocks an entry is
     * -1 or any block (unused, or stale: one a request uses), as serving engines leave them. */
    uint8_t *used = calloc((size_t)p->num_blocks, 1);
    assert_non_null(used);
    for (int32_t b = 0; b < p->b; b++)
        for (int32_t j = 0; j < p->blocks_per_req; j++) {
            const int32_t e = table[(size_t)b * p->blocks_per_req + j];
            if (j >= (lens[b] + 63) / 64) {
                assert_true(e == -1 || (e >= 0 && e < p->num_blocks));
                continue;
            }
            assert_true(e >= 0 && e < p->num_blocks);
            assert_int_equal(used[e], 0);
            used[e] = 1;
        }
    free(used);
    for (int32_t b = 0; b < p->b; b++)
        for (int32_t t = 0; t < lens[b]; t++)
            v.written[(size_t)table[(size_t)b * p->blocks_per_req + t / 64] * 64 + t % 64] = 1;
    memcpy(v.in_req, v.written, (size_t)v.num_pages * 64);
    return v;
}

static inline size_t scale_bytes(const attest_layout *L)
{
    return L->scale_format == ATTEST_SCALE_UE8M0 ? 1u : 4u;
}

static inline const uint8_t *ff_page(size_t n)
{
    static uint8_t *buf = NULL;
    static size_t cap = 0;
    if (n > cap) {
        free(buf);
        buf = malloc(n);
        assert_non_null(buf);
        memset(buf, 0xFF, n);
        cap = n;
    }
    return buf;
}

/* Every byte that belongs to no written token (padding, unused slots and pages) holds 0xFF:
 * the page must equal an all-0xFF page with only the written tokens' fields copied in. Padding
 * is also checked on its own through the layout's region map. */
static inline void check_poison(const pool_view *v)
{
    const uint32_t P = v->L.page_size;
    const size_t stride = (size_t)v->L.page_stride;
    const uint8_t *ff = ff_page(stride);
    uint8_t *expect = malloc(stride);
    assert_non_null(expect);
    size_t nreg = 0;
    assert_int_equal(attest_layout_regions(&v->L, NULL, 0, &nreg), ATTEST_ERR_INVALID_ARGUMENT);
    attest_layout_region *reg = calloc(nreg, sizeof *reg);
    assert_non_null(reg);
    assert_ok(attest_layout_regions(&v->L, reg, nreg, &nreg));
    for (int32_t pg = 0; pg < v->num_pages; pg++) {
        const uint8_t *page = v->bytes + (size_t)pg * stride;
        memcpy(expect, ff, stride);
        for (uint32_t t = 0; t < P; t++) {
            if (!v->written[(size_t)pg * P + t]) continue;
            attest_token_offsets o;
            assert_ok(attest_layout_token_offsets(&v->L, t, &o));
            memcpy(expect + o.fp8, page + o.fp8, v->L.fp8_dim);
            if (v->L.rope_dim) memcpy(expect + o.rope, page + o.rope, 2u * v->L.rope_dim);
            for (uint32_t i = 0; i < v->L.num_scales; i++)
                memcpy(expect + o.scale[i], page + o.scale[i], scale_bytes(&v->L));
        }
        if (memcmp(expect, page, stride) != 0) {
            size_t i = 0;
            while (expect[i] == page[i]) i++;
            fail_msg("%s page %d byte %zu = 0x%02x outside every written token",
                     attest_layout_name(v->L.id), pg, i, page[i]);
        }
        for (size_t r = 0; r < nreg; r++)
            if (reg[r].is_padding)
                assert_int_equal(memcmp(page + reg[r].begin, ff, reg[r].end - reg[r].begin), 0);
    }
    free(reg);
    free(expect);
}

/* Histogram of the fp8 bytes of the written tokens of a pool. */
static inline void fp8_histogram(const pool_view *v, long hist[256])
{
    const uint32_t P = v->L.page_size;
    memset(hist, 0, 256 * sizeof hist[0]);
    for (size_t s = 0; s < (size_t)v->num_pages * P; s++) {
        if (!v->written[s]) continue;
        attest_token_offsets o;
        assert_ok(attest_layout_token_offsets(&v->L, (uint32_t)(s % P), &o));
        const uint8_t *page = v->bytes + (s / P) * v->L.page_stride;
        for (uint32_t d = 0; d < v->L.fp8_dim; d++) hist[page[o.fp8 + d]]++;
    }
}

/* Written tokens decode to their truth within one fp8 rounding (bf16 for rope); NaN where the
 * truth is NaN. Unwritten slots have all-NaN truth rows. */
static inline void check_truth(const pool_view *v, const float *truth)
{
    const uint32_t P = v->L.page_size, n = v->L.k_dim;
    double *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t s = 0; s < (size_t)v->num_pages * P; s++) {
        const float *tr = truth + s * n;
        if (!v->written[s]) {
            for (uint32_t d = 0; d < n; d++) assert_true(isnan(tr[d]));
            continue;
        }
        const uint8_t *page = v->bytes + (s / P) * v->L.page_stride;
        attest_layout_decode_token(&v->L, page, (uint32_t)(s % P), x);
        double scale[ATTEST_LAYOUT_MAX_SCALES];
        for (uint32_t i = 0; i < v->L.num_scales; i++)
            scale[i] = attest_layout_token_scale(&v->L, page, (uint32_t)(s % P), i);
        for (uint32_t d = 0; d < n; d++) {
            if (isnan(tr[d])) {
                assert_true(isnan(x[d]));
                continue;
            }
            /* Half an fp8 step: 2^-4 relative for normals, 2^-10 * scale below 2^-6; half a
             * bf16 step for the rope. */
            double tol = d < v->L.fp8_dim
                             ? fmax(fabs(tr[d]) * 0x1p-4, scale[d / v->L.scale_tile] * 0x1p-10)
                             : fabs(tr[d]) * 0x1p-8;
            if (!(fabs(x[d] - tr[d]) <= tol * 1.000001))
                fail_msg("slot %zu dim %u: decoded %.9g, truth %.9g", s, d, x[d], (double)tr[d]);
        }
    }
    free(x);
}

#endif /* ATTEST_TEST_GEN_VIEWS_H */
