/* Pools past 2^31 bytes (issue 10, item 4): a drawn case's pool spread over a serving engine's
 * page range. A pool of tens of thousands of pages puts the pages one batch reads at byte
 * offsets past 2^31 (or 2^32), where a kernel computing `page * page_stride` in 32-bit
 * arithmetic wraps. Drawing such a case directly would write gigabytes; instead the case drawn as
 * usual (a compact pool of a few pages) is moved: each of its pages gets a new physical id in a
 * pool of millions of pages, some kept low, the rest placed in a run that starts just below,
 * at or past the chosen byte boundary, and every index and block-table entry follows its page.
 * The new pool is held sparsely (case.h): only the moved pages are ever written. */
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

/* Tokens per page (mla) or 1 (the indexer's block table holds block ids). */
static int64_t unit_per_page(const attest_case *c, unsigned pool)
{
    if (c->kernel == ATTEST_KERNEL_INDEXER) return 1;
    return pool == ATTEST_POOL_EXTRA ? c->params.mla.extra_page_size : c->params.mla.page_size;
}

static void set_num_pages(attest_case *c, unsigned pool, int32_t n)
{
    if (c->kernel == ATTEST_KERNEL_INDEXER)
        c->params.indexer.num_blocks = n;
    else if (pool == ATTEST_POOL_EXTRA)
        c->params.mla.extra_num_pages = n;
    else
        c->params.mla.num_pages = n;
}

/* Draws the new id of each of the n old pages (ascending within each run, so neighbours stay
 * neighbours where they were); returns the new page count, or 0 when the pool cannot reach the
 * boundary inside the bounds on pools and on int32 token indices. */
static int64_t draw_map(attest_rng *r, int64_t n, uint64_t stride, int64_t per_page, int32_t *map)
{
    static const double w[] = {60, 30, 10};
    static const uint64_t boundary[] = {UINT64_C(1) << 31, UINT64_C(1) << 32, UINT64_C(3) << 31};
    const uint64_t edge = boundary[attest_rng_choice(r, w, 3)];
    const int64_t low = (int64_t)attest_rng_below(r, (uint64_t)(n / 2 + 1));
    const int64_t high = n - low;
    /* The first high page: a few pages past the boundary, or (30%) far enough below it that the
     * run straddles it, so pages on both sides of 2^31 meet in one query. */
    int64_t start = (int64_t)((edge + stride - 1) / stride);
    if (attest_rng_bernoulli(r, 0.3))
        start -= (int64_t)attest_rng_below(r, (uint64_t)high + 1);
    else
        start += (int64_t)attest_rng_below(r, 8);
    const int gaps = attest_rng_bernoulli(r, 0.5);
    int64_t next = start;
    for (int64_t i = 0; i < n; i++) {
        if (i < low) {
            map[i] = (int32_t)i;
            continue;
        }
        map[i] = (int32_t)next;
        next += 1 + (gaps ? (int64_t)attest_rng_below(r, 4) : 0);
    }
    const int64_t pages = next + (int64_t)attest_rng_below(r, 16);
    if (pages > GEN_MAX_POOL_UNITS || pages * per_page > INT32_MAX) return 0;
    return pages;
}

/* Moves one pool of `c` into `out` (same case, the pool's page count raised): pages through
 * map, entries through map. out's tensors are placed; everything but the pool and its index
 * tensor is copied as it is. */
static void move_entries(const attest_case *c, attest_case *out, unsigned pool, const int32_t *map,
                         int64_t old_pages)
{
    const int64_t per_page = unit_per_page(c, pool);
    const char *name = c->kernel == ATTEST_KERNEL_INDEXER ? "block_table"
                       : pool == ATTEST_POOL_EXTRA        ? "extra_indices"
                                                          : "indices";
    const attest_tensor *t = attest_case_tensor_const(c, name);
    int32_t *dst = attest_case_tensor(out, name)->data;
    const int32_t *src = t->data;
    const int64_t limit = old_pages * per_page;
    for (size_t i = 0; i < attest_tensor_count(t); i++) {
        const int32_t e = src[i];
        dst[i] = e >= 0 && e < limit
                     ? (int32_t)((int64_t)map[e / per_page] * per_page + e % per_page)
                     : e;
    }
}

static void move_table(int32_t *table, size_t n, const int32_t *map, int64_t old_pages)
{
    for (size_t i = 0; table && i < n; i++)
        if (table[i] >= 0 && table[i] < old_pages) table[i] = map[table[i]];
}

attest_status gen_spread_pools(attest_case *c, attest_rng *r, attest_gen_info *info)
{
    unsigned pools[2] = {ATTEST_POOL_MAIN, 0};
    if (c->kernel == ATTEST_KERNEL_MLA_DECODE && c->params.mla.has_extra &&
        attest_rng_bernoulli(r, 0.5))
        pools[1] = ATTEST_POOL_EXTRA;
    int32_t *maps[2] = {NULL, NULL};
    int64_t old_pages[2] = {0, 0};
    attest_case out;
    memset(&out, 0, sizeof out);
    out.kernel = c->kernel;
    out.seed = c->seed;
    out.params = c->params;
    attest_status st = ATTEST_OK;
    for (int k = 0; k < 2 && st == ATTEST_OK; k++) {
        if (pools[k] == 0) continue;
        uint64_t stride = 0;
        if (attest_case_pool_tensor(c, pools[k], &stride, &old_pages[k]) < 0 || stride == 0) {
            pools[k] = 0;
            continue;
        }
        maps[k] = gen_calloc((size_t)old_pages[k], sizeof *maps[k], "page map");
        if (maps[k] == NULL) {
            st = ATTEST_ERR_OUT_OF_MEMORY;
            break;
        }
        const int64_t pages =
            draw_map(r, old_pages[k], stride, unit_per_page(c, pools[k]), maps[k]);
        if (pages == 0) {
            pools[k] = 0;
            continue;
        }
        set_num_pages(&out, pools[k], (int32_t)pages);
        out.sparse_pools |= pools[k];
    }
    if (st == ATTEST_OK && out.sparse_pools == 0) goto done; /* nothing could move: keep c */
    if (st == ATTEST_OK) st = attest_case_define_tensors(&out, 0);
    if (st == ATTEST_OK) st = attest_case_alloc_heap(&out);
    for (size_t i = 0; i < c->num_tensors && st == ATTEST_OK; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_INPUT) continue;
        const unsigned pool = attest_case_tensor_pool(c, i);
        const int k = pool == ATTEST_POOL_MAIN ? 0 : pool == ATTEST_POOL_EXTRA ? 1 : -1;
        if (k >= 0 && pools[k] != 0) {
            /* Every old page moves, reached or not: it keeps what the generator wrote there. */
            uint64_t stride = 0;
            (void)attest_case_pool_tensor(c, pool, &stride, NULL);
            uint8_t *dst = attest_case_tensor(&out, t->name)->data;
            for (int64_t p = 0; p < old_pages[k]; p++)
                memcpy(dst + (uint64_t)maps[k][p] * stride, (const uint8_t *)t->data + p * stride,
                       stride);
            continue;
        }
        st = attest_case_copy_tensor(&out, c, i);
    }
    for (int k = 0; k < 2 && st == ATTEST_OK; k++) {
        if (pools[k] == 0) continue;
        move_entries(c, &out, pools[k], maps[k], old_pages[k]);
        if (!info) continue;
        if (k == 0)
            move_table(info->page_table, (size_t)info->b * (size_t)info->pages_per_req, maps[k],
                       old_pages[k]);
        else
            move_table(info->extra_page_table,
                       (size_t)info->b * (size_t)info->extra_pages_per_req, maps[k], old_pages[k]);
    }
    if (st == ATTEST_OK) {
        attest_case_free(c);
        *c = out;
        memset(&out, 0, sizeof out);
    }
done:
    attest_case_free(&out);
    free(maps[0]);
    free(maps[1]);
    return st;
}
