/* Tests of the case minimizer: it reaches the smallest case a toy predicate allows, never hands
 * the predicate an invalid case, keeps what the predicate needs, and stops on a broken one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/generator.h"
#include "attest/minimize.h"

/* A generated case with several requests, rows and heads and some valid entries. */
static void big_case(attest_kernel k, attest_case *c)
{
    attest_gen_options o = attest_gen_defaults(k);
    for (uint64_t i = 0;; i++) {
        memset(c, 0, sizeof *c);
        assert_ok(attest_generate_case(&o, attest_case_seed(77, i), c));
        const attest_case_size z = attest_case_size_of(c);
        if (z.requests >= 2 && z.rows >= 2 && z.heads >= 2 && z.entries >= 8) return;
        attest_case_free(c);
    }
}

typedef struct toy {
    int calls, invalid;
    int32_t need_requests; /* fails only with at least this many requests */
    int64_t need_entries;  /* ... and this many valid entries */
    int broken;
} toy;

static int toy_pred(const attest_case *c, void *p)
{
    toy *t = p;
    t->calls++;
    if (t->broken) return -1;
    if (attest_case_check_inputs(c) != ATTEST_OK) t->invalid++;
    const attest_case_size z = attest_case_size_of(c);
    return z.requests >= t->need_requests && z.entries >= t->need_entries;
}

/* "Fails whenever one entry is valid": shrinks to one request, row and head and one entry. */
static void shrinks_to_the_minimum(void **state)
{
    (void)state;
    const attest_kernel kernels[] = {ATTEST_KERNEL_MLA_DECODE, ATTEST_KERNEL_INDEXER};
    for (int k = 0; k < 2; k++) {
        attest_case c, m;
        big_case(kernels[k], &c);
        toy t = {.need_requests = 1, .need_entries = 1};
        attest_minimize_stats st;
        assert_ok(attest_minimize_case(&c, toy_pred, &t, 0, &m, &st));
        const attest_case_size z = attest_case_size_of(&m);
        assert_int_equal(z.requests, 1);
        assert_int_equal(z.rows, 1);
        assert_int_equal(z.heads, 1);
        /* the indexer's lengths halve: one position or a few; mla entries go one by one */
        if (kernels[k] == ATTEST_KERNEL_MLA_DECODE) assert_int_equal(z.entries, 1);
        else assert_true(z.entries >= 1 && z.entries <= 2);
        assert_int_equal(t.invalid, 0);
        assert_int_equal(st.tries, (uint32_t)t.calls);
        assert_ok(attest_case_check_inputs(&m));
        attest_case_free(&m);
        attest_case_free(&c);
    }
}

/* What the predicate needs stays: two requests and 8 entries. */
static void keeps_what_the_failure_needs(void **state)
{
    (void)state;
    attest_case c, m;
    big_case(ATTEST_KERNEL_MLA_DECODE, &c);
    toy t = {.need_requests = 2, .need_entries = 8};
    assert_ok(attest_minimize_case(&c, toy_pred, &t, 0, &m, NULL));
    const attest_case_size z = attest_case_size_of(&m);
    assert_int_equal(z.requests, 2);
    assert_int_equal(z.entries, 8);
    assert_int_equal(z.heads, 1);
    attest_case_free(&m);
    attest_case_free(&c);
}

/* "Fails while value V sits below request 0's topk_length and value W past it, in row 0":
 * the index rows narrow to those two slots, and topk_length follows the kept slots (a length
 * left as it was would count W as valid, and the narrowing would be refused). */
typedef struct slots_need {
    int32_t v, w;
    int invalid;
} slots_need;

static int slots_pred(const attest_case *c, void *p)
{
    slots_need *n = p;
    if (attest_case_check_inputs(c) != ATTEST_OK) n->invalid++;
    const attest_tensor *t = attest_case_tensor_const(c, "indices");
    const attest_tensor *l = attest_case_tensor_const(c, "topk_length");
    const int32_t *idx = t->data, K = (int32_t)t->shape[2], len = ((const int32_t *)l->data)[0];
    int below = 0, past = 0;
    for (int32_t j = 0; j < K; j++) {
        below |= idx[j] == n->v && j < len;
        past |= idx[j] == n->w && j >= len;
    }
    return below && past;
}

static void narrows_index_rows(void **state)
{
    (void)state;
    attest_gen_options o = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    for (uint64_t i = 0;; i++) {
        attest_case c, m;
        memset(&c, 0, sizeof c);
        assert_ok(attest_generate_case(&o, attest_case_seed(91, i), &c));
        const attest_tensor *t = attest_case_tensor_const(&c, "indices");
        const attest_tensor *l = attest_case_tensor_const(&c, "topk_length");
        const int32_t K = c.params.mla.topk;
        const int32_t len = l ? ((const int32_t *)l->data)[0] : 0;
        const int32_t *idx = t->data;
        slots_need n = {-1, -1, 0};
        for (int32_t j = 0; l && j < K && len >= 2 && len < K - 2; j++) {
            if (j == len - 1 && idx[j] >= 0) n.v = idx[j];
            if (j == K - 1 && idx[j] >= 0) n.w = idx[j];
        }
        int dup = 0;
        for (int32_t j = 0; j < K; j++) dup += idx[j] == n.v || idx[j] == n.w;
        if (n.v < 0 || n.w < 0 || n.v == n.w || dup != 2) {
            attest_case_free(&c);
            continue;
        }
        assert_int_equal(slots_pred(&c, &n), 1);
        assert_ok(attest_minimize_case(&c, slots_pred, &n, 0, &m, NULL));
        const attest_case_size z = attest_case_size_of(&m);
        assert_int_equal(z.topk, 2);
        assert_int_equal(m.params.mla.topk, 2);
        const int32_t *mi = attest_case_tensor_const(&m, "indices")->data;
        assert_int_equal(mi[0], n.v);
        assert_int_equal(mi[1], n.w);
        assert_int_equal(((const int32_t *)attest_case_tensor_const(&m, "topk_length")->data)[0], 1);
        assert_int_equal(n.invalid, 0);
        assert_ok(attest_case_check_inputs(&m));
        char line[128];
        attest_case_size_describe(&m, line, sizeof line);
        assert_non_null(strstr(line, "topk=2"));
        attest_case_free(&m);
        attest_case_free(&c);
        return;
    }
}

/* "Fails while some index slot names a page holding these bytes" (one page of the original
 * pool): the pool shrinks to that page alone, moved to page 0, with the slot following it. A
 * page copied to the wrong place or an index left pointing at its old page fails the predicate,
 * so the pool would keep its pages. */
typedef struct page_need {
    const uint8_t *bytes;
    size_t stride;
    int invalid;
} page_need;

/* What names a page of the main pool: token ids of P per page, or the indexer's block ids. */
static const char *namer(const attest_case *c)
{
    return c->kernel == ATTEST_KERNEL_INDEXER ? "block_table" : "indices";
}
static int32_t unit(const attest_case *c)
{
    return c->kernel == ATTEST_KERNEL_INDEXER ? 1 : c->params.mla.page_size;
}
static int32_t pool_pages(const attest_case *c)
{
    return c->kernel == ATTEST_KERNEL_INDEXER ? c->params.indexer.num_blocks
                                              : c->params.mla.num_pages;
}

static int page_pred(const attest_case *c, void *p)
{
    page_need *n = p;
    if (attest_case_check_inputs(c) != ATTEST_OK) n->invalid++;
    const attest_tensor *t = attest_case_tensor_const(c, namer(c));
    const uint8_t *pool = attest_case_tensor_const(c, "cache_bytes")->data;
    const int32_t *idx = t->data, P = unit(c);
    for (size_t k = 0; k < attest_tensor_count(t); k++)
        if (idx[k] >= 0 && idx[k] / P < pool_pages(c) &&
            !memcmp(pool + (size_t)(idx[k] / P) * n->stride, n->bytes, n->stride))
            return 1;
    return 0;
}

static void drops_unnamed_pages(void **state)
{
    (void)state;
    const attest_kernel kernels[] = {ATTEST_KERNEL_MLA_DECODE, ATTEST_KERNEL_INDEXER};
    for (int kk = 0; kk < 2; kk++) {
        attest_gen_options o = attest_gen_defaults(kernels[kk]);
        o.high_pools = 0;
        for (uint64_t i = 0;; i++) {
            attest_case c, m;
            memset(&c, 0, sizeof c);
            assert_ok(attest_generate_case(&o, attest_case_seed(93, i), &c));
            const attest_tensor *names = attest_case_tensor_const(&c, namer(&c));
            const int32_t *idx = names->data;
            /* the last slot that names a page (indexer: inside a request's blocks, so that the
             * entries past them are not what the predicate needs) */
            int32_t last = -1;
            for (size_t k = 0; k < attest_tensor_count(names); k++) {
                if (c.kernel == ATTEST_KERNEL_INDEXER) {
                    const int64_t w = names->shape[1], r = (int64_t)k / w, j = (int64_t)k % w;
                    const int32_t len = ((const int32_t *)attest_case_tensor_const(&c, "context_lens")->data)[r];
                    if (j >= (len + 63) / 64) continue;
                }
                if (idx[k] >= 0) last = idx[k];
            }
            const int32_t pages = pool_pages(&c);
            if (c.sparse_pools != 0 || pages < 3 || last < 0 || last / unit(&c) == 0) {
                attest_case_free(&c);
                continue;
            }
            const attest_tensor *pt = attest_case_tensor_const(&c, "cache_bytes");
            const uint8_t *pool = pt->data;
            page_need n = {NULL, pt->nbytes / (size_t)pages, 0};
            n.bytes = pool + (size_t)(last / unit(&c)) * n.stride;
            /* the page must be told apart from every other (unused pages are all poison alike) */
            int alike = 0;
            for (int32_t q = 0; q < pages; q++)
                alike += !memcmp(pool + (size_t)q * n.stride, n.bytes, n.stride);
            if (alike != 1) {
                attest_case_free(&c);
                continue;
            }
            assert_int_equal(page_pred(&c, &n), 1);
            assert_ok(attest_minimize_case(&c, page_pred, &n, 0, &m, NULL));
            /* Every page left is one something names: for mla the one slot left; for the
             * indexer its request's blocks (entries past them go to -1, then their blocks). */
            const attest_tensor *mn = attest_case_tensor_const(&m, namer(&m));
            uint8_t named[64] = {0};
            int32_t distinct = 0;
            assert_true(pool_pages(&m) <= 64);
            for (size_t k = 0; k < attest_tensor_count(mn); k++) {
                const int32_t v = ((const int32_t *)mn->data)[k];
                if (v >= 0 && v / unit(&m) < pool_pages(&m) && !named[v / unit(&m)]++) distinct++;
            }
            assert_int_equal(pool_pages(&m), distinct);
            if (kernels[kk] == ATTEST_KERNEL_INDEXER) {
                const int32_t len = ((const int32_t *)attest_case_tensor_const(&m, "context_lens")->data)[0];
                const int64_t w = mn->shape[1];
                const uint8_t *mp = attest_case_tensor_const(&m, "cache_bytes")->data;
                for (int64_t j = (len + 63) / 64; j < w; j++) {
                    /* past the request's blocks only the entry the predicate needs is left */
                    const int32_t v = ((const int32_t *)mn->data)[j];
                    if (v >= 0) assert_memory_equal(mp + (size_t)v * n.stride, n.bytes, n.stride);
                }
            }
            if (kernels[kk] == ATTEST_KERNEL_MLA_DECODE) {
                assert_int_equal(pool_pages(&m), 1);
                if (m.params.mla.has_extra) assert_int_equal(m.params.mla.extra_num_pages, 1);
                assert_int_equal(attest_case_size_of(&m).topk, 1);
            }
            assert_int_equal(page_pred(&m, &n), 1);
            assert_int_equal(n.invalid, 0);
            assert_ok(attest_case_check_inputs(&m));
            attest_case_free(&m);
            attest_case_free(&c);
            break;
        }
    }
}

/* The budget bounds the calls; a predicate that cannot judge is an error, not a result. */
static void budget_and_broken_predicate(void **state)
{
    (void)state;
    attest_case c, m;
    big_case(ATTEST_KERNEL_INDEXER, &c);
    toy t = {.need_requests = 1, .need_entries = 1};
    assert_ok(attest_minimize_case(&c, toy_pred, &t, 3, &m, NULL));
    assert_true(t.calls <= 3);
    attest_case_free(&m);
    toy b = {.broken = 1};
    assert_int_equal(attest_minimize_case(&c, toy_pred, &b, 0, &m, NULL), ATTEST_ERR_INTERNAL);
    attest_case_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shrinks_to_the_minimum),
        cmocka_unit_test(keeps_what_the_failure_needs),
        cmocka_unit_test(budget_and_broken_predicate),
        cmocka_unit_test(narrows_index_rows),
        cmocka_unit_test(drops_unnamed_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
