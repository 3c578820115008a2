/* Sparse pools (case.h): which pages of a pool a case reaches, and copies that touch only them. */
#include "attest/case.h"

#include <stdlib.h>
#include <string.h>

int attest_case_pool_tensor(const attest_case *c, unsigned pool, uint64_t *page_bytes,
                            int64_t *num_pages)
{
    const char *name = NULL;
    uint64_t stride = 0;
    int64_t pages = 0;
    if (c->kernel == ATTEST_KERNEL_INDEXER && pool == ATTEST_POOL_MAIN) {
        name = "cache_bytes";
        stride = ATTEST_LAYOUT_C4_BLOCK_BYTES;
        pages = c->params.indexer.num_blocks;
    } else if (c->kernel == ATTEST_KERNEL_MLA_DECODE && pool == ATTEST_POOL_MAIN) {
        name = "cache_bytes";
        stride = (uint64_t)c->params.mla.page_stride;
        pages = c->params.mla.num_pages;
    } else if (c->kernel == ATTEST_KERNEL_MLA_DECODE && pool == ATTEST_POOL_EXTRA &&
               c->params.mla.has_extra) {
        name = "extra_cache_bytes";
        stride = (uint64_t)c->params.mla.extra_page_stride;
        pages = c->params.mla.extra_num_pages;
    }
    if (name == NULL) return -1;
    for (size_t i = 0; i < c->num_tensors; i++)
        if (attest_tensor_is(&c->tensors[i], name)) {
            if (page_bytes) *page_bytes = stride;
            if (num_pages) *num_pages = pages;
            return (int)i;
        }
    return -1;
}

unsigned attest_case_tensor_pool(const attest_case *c, size_t i)
{
    if (i >= c->num_tensors) return 0;
    if (attest_case_pool_tensor(c, ATTEST_POOL_MAIN, NULL, NULL) == (int)i)
        return ATTEST_POOL_MAIN;
    if (attest_case_pool_tensor(c, ATTEST_POOL_EXTRA, NULL, NULL) == (int)i)
        return ATTEST_POOL_EXTRA;
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

attest_status attest_case_pool_pages(const attest_case *c, unsigned pool, int32_t **pages,
                                     size_t *count)
{
    *pages = NULL;
    *count = 0;
    int64_t num_pages = 0;
    ATTEST_RETURN_IF(attest_case_pool_tensor(c, pool, NULL, &num_pages) < 0,
                     ATTEST_ERR_INVALID_ARGUMENT, "case has no pool %u", pool);
    const attest_tensor *t = NULL;
    int64_t per_page = 1;
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        t = attest_case_tensor_const(c, "block_table");
    } else {
        t = attest_case_tensor_const(c, pool == ATTEST_POOL_EXTRA ? "extra_indices" : "indices");
        per_page = pool == ATTEST_POOL_EXTRA ? c->params.mla.extra_page_size
                                             : c->params.mla.page_size;
    }
    ATTEST_RETURN_IF(t == NULL || (t->data == NULL && t->nbytes > 0), ATTEST_ERR_INVALID_ARGUMENT,
                     "case: the tensor that indexes pool %u is not placed", pool);
    ATTEST_RETURN_IF(per_page <= 0, ATTEST_ERR_INVALID_ARGUMENT, "case: page size %lld",
                     (long long)per_page);
    const size_t n = attest_tensor_count(t);
    if (n == 0) return ATTEST_OK;
    /* Sorting the entries costs O(n log n) in what the case holds, never in the pool's size. */
    int32_t *list = malloc(n * sizeof *list);
    ATTEST_RETURN_IF(list == NULL, ATTEST_ERR_OUT_OF_MEMORY, "case: %zu pool entries", n);
    const int32_t *e = t->data;
    const int64_t limit = num_pages * per_page;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i] >= 0 && e[i] < limit) list[m++] = (int32_t)(e[i] / per_page);
    qsort(list, m, sizeof *list, cmp_i32);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (u == 0 || list[u - 1] != list[i]) list[u++] = list[i];
    if (u == 0) {
        free(list);
        return ATTEST_OK;
    }
    *pages = list;
    *count = u;
    return ATTEST_OK;
}

attest_status attest_case_copy_tensor(attest_case *dst, const attest_case *src, size_t i)
{
    ATTEST_RETURN_IF(i >= src->num_tensors || i >= dst->num_tensors ||
                         src->tensors[i].nbytes != dst->tensors[i].nbytes,
                     ATTEST_ERR_INVALID_ARGUMENT, "case copy: tensor %zu differs", i);
    const attest_tensor *s = &src->tensors[i];
    attest_tensor *d = &dst->tensors[i];
    if (s->nbytes == 0) return ATTEST_OK;
    ATTEST_RETURN_IF(s->data == NULL || d->data == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "case copy: tensor '%s' is not placed", s->name);
    const unsigned pool = attest_case_tensor_pool(src, i);
    if (pool == 0 || !(src->sparse_pools & pool)) {
        memcpy(d->data, s->data, s->nbytes);
        return ATTEST_OK;
    }
    uint64_t stride = 0;
    (void)attest_case_pool_tensor(src, pool, &stride, NULL);
    int32_t *pages = NULL;
    size_t n = 0;
    ATTEST_FORWARD(attest_case_pool_pages(src, pool, &pages, &n));
    for (size_t k = 0; k < n; k++) {
        const uint64_t at = (uint64_t)pages[k] * stride;
        memcpy((uint8_t *)d->data + at, (const uint8_t *)s->data + at, stride);
    }
    free(pages);
    return ATTEST_OK;
}
