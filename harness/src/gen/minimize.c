/* Case minimizer (attest/minimize.h): structural reductions (requests, query rows, heads, for
 * mla-decode the index slots of each scope's rows, and the pool pages or blocks nothing names) by
 * copying slices of the per-request tensors into a smaller case, then value reductions (index
 * slots to -1, shorter lengths) on copies, each kept only when the predicate still fails. The
 * search is the usual delta-debugging shape: remove chunks of half the items, then quarters, down
 * to single items, and start over while anything was removed. */
#include "attest/minimize.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* AX_TOPK and AX_XTOPK: the slots of the main and the extra scope's index rows (mla-decode). */
typedef enum axis_kind { AX_REQ = 0, AX_ROW = 1, AX_HEAD = 2, AX_TOPK = 3, AX_XTOPK = 4 } axis_kind;

typedef struct search {
    attest_minimize_predicate pred;
    void *ctx;
    uint32_t max_tries;
    attest_minimize_stats stats;
    int broken; /* the predicate returned -1 */
} search;

static int has_truth(const attest_case *c)
{
    for (size_t i = 0; i < c->num_tensors; i++)
        if (c->tensors[i].role == ATTEST_ROLE_TRUTH) return 1;
    return 0;
}

static int32_t axis_count(const attest_case *c, axis_kind k)
{
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        const attest_indexer_params *p = &c->params.indexer;
        return k == AX_REQ ? p->b : k == AX_ROW ? p->next_n : k == AX_HEAD ? p->heads : 0;
    }
    const attest_mla_params *p = &c->params.mla;
    if (k == AX_TOPK) return p->topk;
    if (k == AX_XTOPK) return p->has_extra ? p->extra_topk : 0;
    return k == AX_REQ ? p->b : k == AX_ROW ? p->s_q : p->h_q;
}

static void set_axis_count(attest_case *c, axis_kind k, int32_t n)
{
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        attest_indexer_params *p = &c->params.indexer;
        *(k == AX_REQ ? &p->b : k == AX_ROW ? &p->next_n : &p->heads) = n;
    } else {
        attest_mla_params *p = &c->params.mla;
        *(k == AX_REQ    ? &p->b
          : k == AX_ROW  ? &p->s_q
          : k == AX_HEAD ? &p->h_q
          : k == AX_TOPK ? &p->topk
                         : &p->extra_topk) = n;
    }
}

/* Which axis of a named input tensor runs over requests, query rows or heads (-1: none). The
 * indexer's weights [b*next_n, heads] has requests and rows folded into axis 0 (*folded = 1). */
static int tensor_axis(const attest_case *c, const char *name, axis_kind k, int *folded)
{
    *folded = 0;
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        if (!strcmp(name, "q_fp8") || !strcmp(name, "q_true")) return (int)k;
        if (!strcmp(name, "block_table") || !strcmp(name, "context_lens"))
            return k == AX_REQ ? 0 : -1;
        if (!strcmp(name, "weights")) {
            if (k == AX_HEAD) return 1;
            *folded = 1;
            return 0;
        }
        return -1;
    }
    if (k == AX_TOPK || k == AX_XTOPK)
        return !strcmp(name, k == AX_TOPK ? "indices" : "extra_indices") ? 2 : -1;
    if (!strcmp(name, "q_bf16")) return (int)k;
    if (!strcmp(name, "indices") || !strcmp(name, "extra_indices"))
        return k == AX_HEAD ? -1 : (int)k;
    if (!strcmp(name, "topk_length") || !strcmp(name, "extra_topk_length"))
        return k == AX_REQ ? 0 : -1;
    if (!strcmp(name, "attn_sink")) return k == AX_HEAD ? 0 : -1;
    return -1;
}

/* Copies src's slices `keep` (indices along `axis`) into dst, whose shape differs only there. */
static void copy_select(const attest_tensor *src, attest_tensor *dst, int axis, const int64_t *keep,
                        int64_t n_keep)
{
    size_t outer = 1, inner = attest_dtype_size(src->dtype);
    for (int d = 0; d < axis; d++) outer *= (size_t)src->shape[d];
    for (int d = axis + 1; d < src->rank; d++) inner *= (size_t)src->shape[d];
    const size_t old_n = (size_t)src->shape[axis];
    const uint8_t *s = src->data;
    uint8_t *o = dst->data;
    for (size_t i = 0; i < outer; i++)
        for (int64_t k = 0; k < n_keep; k++)
            memcpy(o + (i * (size_t)n_keep + (size_t)k) * inner,
                   s + (i * old_n + (size_t)keep[k]) * inner, inner);
}

/* After index slots `keep` of each row were kept, a request's topk_length counts the kept slots
 * below its old length, so every kept slot stays on the side of the length it was on; a length
 * past the old width keeps its excess (a kernel must clamp it either way). */
static void keep_lengths(const attest_case *src, attest_case *dst, axis_kind k, const int64_t *keep,
                         int64_t n_keep)
{
    const char *name = k == AX_TOPK ? "topk_length" : "extra_topk_length";
    const attest_tensor *s = attest_case_tensor_const(src, name);
    attest_tensor *d = attest_case_tensor(dst, name);
    if (s == NULL || s->data == NULL || d == NULL || d->data == NULL) return;
    const int64_t old_width = axis_count(src, k);
    const int32_t *from = s->data;
    int32_t *to = d->data;
    for (size_t r = 0; r < attest_tensor_count(d) && r < attest_tensor_count(s); r++) {
        const int64_t len = from[r];
        int64_t n = 0;
        for (int64_t j = 0; j < n_keep; j++) n += keep[j] < len;
        to[r] = len > old_width ? (int32_t)(n_keep + (len - old_width)) : len < 0 ? from[r] : (int32_t)n;
    }
}

/* A heap copy of src with only `keep` (n_keep of them) along axis kind k; n_keep < 0: a plain
 * copy. Output tensors are left zero (the runner poisons them before every run). */
static attest_status reshape(const attest_case *src, axis_kind k, const int64_t *keep,
                             int64_t n_keep, attest_case *dst)
{
    memset(dst, 0, sizeof *dst);
    dst->kernel = src->kernel;
    dst->seed = src->seed;
    dst->params = src->params;
    /* A sparse pool stays sparse: fewer requests, rows or indices only reach fewer pages. */
    dst->sparse_pools = src->sparse_pools;
    if (n_keep >= 0) set_axis_count(dst, k, (int32_t)n_keep);
    ATTEST_FORWARD(attest_case_define_tensors(dst, has_truth(src)));
    ATTEST_FORWARD(attest_case_alloc_heap(dst));
    const int32_t rows = src->kernel == ATTEST_KERNEL_INDEXER ? src->params.indexer.next_n : 1;
    const int32_t b = axis_count(src, AX_REQ);
    for (size_t i = 0; i < dst->num_tensors; i++) {
        attest_tensor *t = &dst->tensors[i];
        if (t->role == ATTEST_ROLE_OUTPUT) continue;
        const attest_tensor *s = attest_case_tensor_const(src, t->name);
        if (s == NULL || s->data == NULL) continue;
        int folded = 0;
        const int axis = n_keep >= 0 ? tensor_axis(src, t->name, k, &folded) : -1;
        if (axis < 0) {
            if (s->nbytes == t->nbytes) {
                attest_status st = attest_case_copy_tensor(dst, src, (size_t)(s - src->tensors));
                if (st != ATTEST_OK) {
                    attest_case_free(dst);
                    return st;
                }
            }
            continue;
        }
        if (!folded) {
            copy_select(s, t, axis, keep, n_keep);
            continue;
        }
        /* weights rows are (request, row) pairs */
        const int64_t n_rows = k == AX_REQ ? n_keep * rows : (int64_t)b * n_keep;
        int64_t *sel = malloc((size_t)(n_rows ? n_rows : 1) * sizeof *sel);
        if (!sel) {
            attest_case_free(dst);
            return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "minimizer: out of memory");
        }
        int64_t n = 0;
        if (k == AX_REQ) {
            for (int64_t r = 0; r < n_keep; r++)
                for (int32_t j = 0; j < rows; j++) sel[n++] = keep[r] * rows + j;
        } else {
            for (int32_t r = 0; r < b; r++)
                for (int64_t j = 0; j < n_keep; j++) sel[n++] = (int64_t)r * rows + keep[j];
        }
        copy_select(s, t, 0, sel, n);
        free(sel);
    }
    if (n_keep >= 0 && (k == AX_TOPK || k == AX_XTOPK)) keep_lengths(src, dst, k, keep, n_keep);
    return ATTEST_OK;
}

/* Calls the predicate within the budget. Returns 1 (keep), 0 (reject or budget spent). */
static int try_case(search *s, const attest_case *c)
{
    if (s->broken || s->stats.tries >= s->max_tries) return 0;
    s->stats.tries++;
    const int r = s->pred(c, s->ctx);
    if (r < 0) s->broken = 1;
    if (r == 1) s->stats.accepted++;
    return r == 1;
}

static void replace(attest_case *cur, attest_case *next)
{
    attest_case_free(cur);
    *cur = *next;
    memset(next, 0, sizeof *next);
}

/* Removes chunks of one axis while the predicate allows. Returns 1 when anything went. */
static int reduce_axis(search *s, attest_case *cur, axis_kind k, attest_status *st)
{
    int any = 0;
    int32_t n = axis_count(cur, k);
    for (int32_t chunk = n / 2 > 0 ? n / 2 : 1; chunk >= 1 && n > 1; chunk /= 2) {
        for (int32_t start = 0; start < n && n > 1;) {
            const int32_t end = start + chunk < n ? start + chunk : n;
            if (end - start >= n) break;
            int64_t keep[4096];
            int64_t m = 0;
            if (n > 4096) return any;
            for (int32_t i = 0; i < n; i++)
                if (i < start || i >= end) keep[m++] = i;
            attest_case next;
            *st = reshape(cur, k, keep, m, &next);
            if (*st != ATTEST_OK) return any;
            if (try_case(s, &next)) {
                replace(cur, &next);
                n = axis_count(cur, k);
                any = 1;
            } else {
                attest_case_free(&next);
                start = end;
            }
        }
    }
    return any;
}

/* Whether entry i (flat) of tensor t of case c may be set to -1; NULL: every entry may. */
typedef int (*clearable_fn)(const attest_case *c, const attest_tensor *t, size_t i);

/* The indexer's block-table entries past a request's blocks (the -1 or stale ids serving
 * engines leave there): clearing them lets the blocks only they name go too. */
static int past_request_blocks(const attest_case *c, const attest_tensor *t, size_t i)
{
    const attest_tensor *l = attest_case_tensor_const(c, "context_lens");
    if (l == NULL || l->data == NULL || t->rank != 2) return 0;
    const size_t width = (size_t)t->shape[1];
    const int64_t len = ((const int32_t *)l->data)[i / width];
    return (int64_t)(i % width) >= (len + ATTEST_INDEXER_BLOCK - 1) / ATTEST_INDEXER_BLOCK;
}

/* Sets chunks of the entries of `name` that are not -1 (and that `clearable` allows) to -1:
 * an mla index tensor's slots, the indexer's block-table tails. */
static int reduce_indices(search *s, attest_case *cur, const char *name, clearable_fn clearable,
                          attest_status *st)
{
    int any = 0;
    for (;;) {
        const attest_tensor *t = attest_case_tensor_const(cur, name);
        if (!t || !t->data) return any;
        const int32_t *idx = t->data;
        const size_t total = attest_tensor_count(t);
        size_t n = 0;
        for (size_t i = 0; i < total; i++)
            n += idx[i] != -1 && (clearable == NULL || clearable(cur, t, i));
        int removed = 0;
        for (size_t chunk = n / 2 > 0 ? n / 2 : 1; chunk >= 1 && n > 0 && !removed; chunk /= 2) {
            for (size_t start = 0; start < n && !removed; start += chunk) {
                attest_case next;
                *st = reshape(cur, AX_REQ, NULL, -1, &next);
                if (*st != ATTEST_OK) return any;
                int32_t *w = attest_case_tensor(&next, name)->data;
                size_t seen = 0;
                for (size_t i = 0; i < total; i++) {
                    if (w[i] == -1 || (clearable != NULL && !clearable(cur, t, i))) continue;
                    if (seen >= start && seen < start + chunk) w[i] = -1;
                    seen++;
                }
                if (try_case(s, &next)) {
                    replace(cur, &next);
                    removed = any = 1;
                } else {
                    attest_case_free(&next);
                }
            }
            if (chunk == 1) break;
        }
        if (!removed) return any;
    }
}

/* Halves each request's length (topk_length, extra_topk_length, context_lens) while allowed. */
static int reduce_lengths(search *s, attest_case *cur, const char *name, attest_status *st)
{
    int any = 0;
    const attest_tensor *t = attest_case_tensor_const(cur, name);
    if (!t || !t->data) return 0;
    const size_t n = attest_tensor_count(t);
    for (size_t r = 0; r < n; r++) {
        for (;;) {
            const int32_t len = ((const int32_t *)attest_case_tensor_const(cur, name)->data)[r];
            if (len <= 0) break;
            int kept = 0;
            const int32_t tries[2] = {0, len / 2};
            for (int k = 0; k < 2 && !kept; k++) {
                if (k == 1 && tries[1] == 0) break;
                attest_case next;
                *st = reshape(cur, AX_REQ, NULL, -1, &next);
                if (*st != ATTEST_OK) return any;
                ((int32_t *)attest_case_tensor(&next, name)->data)[r] = tries[k];
                if (try_case(s, &next)) {
                    replace(cur, &next);
                    kept = any = 1;
                } else {
                    attest_case_free(&next);
                }
            }
            if (!kept) break;
        }
    }
    return any;
}

/* A pool and what names its pages: an mla scope's indices (token ids, page * P + slot) or the
 * indexer's block table (block ids). */
enum { POOL_MLA = 0, POOL_MLA_EXTRA = 1, POOL_INDEXER = 2 };
typedef struct pool_names {
    const char *pool, *truth, *indices;
} pool_names;

static const pool_names scope_names[3] = {{"cache_bytes", "kv_true", "indices"},
                                          {"extra_cache_bytes", "extra_kv_true", "extra_indices"},
                                          {"cache_bytes", "k_true", "block_table"}};

static int32_t scope_page_count(const attest_case *c, int extra)
{
    return extra == POOL_INDEXER     ? c->params.indexer.num_blocks
           : extra == POOL_MLA_EXTRA ? c->params.mla.extra_num_pages
                                     : c->params.mla.num_pages;
}

/* What one name counts for: tokens per page, 1 for a block id. */
static int64_t scope_unit(const attest_case *c, int extra)
{
    return extra == POOL_INDEXER     ? 1
           : extra == POOL_MLA_EXTRA ? c->params.mla.extra_page_size
                                     : c->params.mla.page_size;
}

/* A heap copy of src without the pool pages `drop` marks (none of which an index slot names):
 * the kept pages move down in order and every index follows its page. */
static attest_status drop_pages(const attest_case *src, int extra, const uint8_t *drop,
                                int32_t n_drop, attest_case *dst)
{
    const pool_names *nm = &scope_names[extra];
    const int32_t old_pages = scope_page_count(src, extra);
    const int64_t P = scope_unit(src, extra);
    int64_t *map = malloc((size_t)old_pages * sizeof *map);
    if (map == NULL) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "minimizer: out of memory");
    int64_t next = 0;
    for (int32_t i = 0; i < old_pages; i++) map[i] = drop[i] ? -1 : next++;
    memset(dst, 0, sizeof *dst);
    dst->kernel = src->kernel;
    dst->seed = src->seed;
    dst->params = src->params;
    const int32_t pages = old_pages - n_drop;
    if (extra == POOL_INDEXER) dst->params.indexer.num_blocks = pages;
    else if (extra == POOL_MLA_EXTRA) dst->params.mla.extra_num_pages = pages;
    else dst->params.mla.num_pages = pages;
    attest_status st = attest_case_define_tensors(dst, has_truth(src));
    if (st == ATTEST_OK) st = attest_case_alloc_heap(dst);
    for (size_t i = 0; i < dst->num_tensors && st == ATTEST_OK; i++) {
        attest_tensor *t = &dst->tensors[i];
        if (t->role == ATTEST_ROLE_OUTPUT) continue;
        const attest_tensor *s = attest_case_tensor_const(src, t->name);
        if (s == NULL || s->data == NULL) continue;
        if (!strcmp(t->name, nm->pool) || !strcmp(t->name, nm->truth)) {
            const size_t per_page = s->nbytes / (size_t)old_pages;
            for (int32_t p = 0; p < old_pages; p++)
                if (map[p] >= 0)
                    memcpy((uint8_t *)t->data + (size_t)map[p] * per_page,
                           (const uint8_t *)s->data + (size_t)p * per_page, per_page);
        } else if (!strcmp(t->name, nm->indices)) {
            const int32_t *from = s->data;
            int32_t *to = t->data;
            for (size_t k = 0; k < attest_tensor_count(t); k++) {
                const int64_t v = from[k], page = v / P;
                to[k] = v >= 0 && page < old_pages && map[page] >= 0
                            ? (int32_t)(map[page] * P + v % P)
                            : from[k];
            }
        } else if (s->nbytes == t->nbytes) {
            st = attest_case_copy_tensor(dst, src, (size_t)(s - src->tensors));
        }
    }
    free(map);
    if (st != ATTEST_OK) attest_case_free(dst);
    return st;
}

/* Drops pool pages of one mla scope that no index slot names (valid or not, below topk_length
 * or past it), or the indexer's blocks no block-table entry names (past a request's blocks
 * too), in chunks while the predicate allows: a minimized finding keeps the pages its indices
 * reach and those the failure needs (a kernel reading the wrong page needs that page). Dense
 * pools only: a sparse pool's high offset is often what the finding is about. */
static int reduce_pages(search *s, attest_case *cur, int extra, attest_status *st)
{
    const pool_names *nm = &scope_names[extra];
    if (cur->sparse_pools != 0 || (extra == POOL_MLA_EXTRA && !cur->params.mla.has_extra)) return 0;
    int any = 0;
    for (int progress = 1; progress && *st == ATTEST_OK;) {
        progress = 0;
        const int32_t pages = scope_page_count(cur, extra);
        const attest_tensor *t = attest_case_tensor_const(cur, nm->indices);
        if (t == NULL || t->data == NULL || pages <= 1) return any;
        const int64_t P = scope_unit(cur, extra);
        uint8_t *named = calloc((size_t)pages, 1), *drop = calloc((size_t)pages, 1);
        int32_t *unnamed = malloc((size_t)pages * sizeof *unnamed);
        if (!named || !drop || !unnamed) {
            free(named), free(drop), free(unnamed);
            *st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "minimizer: out of memory");
            return any;
        }
        const int32_t *idx = t->data;
        for (size_t k = 0; k < attest_tensor_count(t); k++)
            if (idx[k] >= 0 && idx[k] / P < pages) named[idx[k] / P] = 1;
        int32_t n = 0;
        for (int32_t p = 0; p < pages; p++)
            if (!named[p]) unnamed[n++] = p;
        if (n == pages) n--; /* a pool keeps one page */
        for (int32_t chunk = n; chunk >= 1 && !progress && *st == ATTEST_OK; chunk /= 2) {
            for (int32_t start = 0; start < n && !progress; start += chunk) {
                const int32_t end = start + chunk < n ? start + chunk : n;
                memset(drop, 0, (size_t)pages);
                for (int32_t j = start; j < end; j++) drop[unnamed[j]] = 1;
                attest_case next;
                *st = drop_pages(cur, extra, drop, end - start, &next);
                if (*st != ATTEST_OK) break;
                if (try_case(s, &next)) {
                    replace(cur, &next);
                    progress = any = 1;
                } else {
                    attest_case_free(&next);
                }
            }
        }
        free(named), free(drop), free(unnamed);
    }
    return any;
}

attest_status attest_minimize_case(const attest_case *in, attest_minimize_predicate pred, void *ctx,
                                   uint32_t max_tries, attest_case *out,
                                   attest_minimize_stats *stats)
{
    ATTEST_RETURN_IF(!in || !pred || !out, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_minimize_case: NULL argument");
    search s = {.pred = pred, .ctx = ctx, .max_tries = max_tries ? max_tries : 4000};
    ATTEST_FORWARD(reshape(in, AX_REQ, NULL, -1, out));
    attest_status st = ATTEST_OK;
    const int mla = in->kernel == ATTEST_KERNEL_MLA_DECODE;
    for (int changed = 1; changed && st == ATTEST_OK && !s.broken;) {
        changed = 0;
        for (int k = AX_REQ; k <= (mla ? AX_XTOPK : AX_HEAD) && st == ATTEST_OK; k++)
            changed |= reduce_axis(&s, out, (axis_kind)k, &st);
        if (mla) {
            if (st == ATTEST_OK) changed |= reduce_lengths(&s, out, "topk_length", &st);
            if (st == ATTEST_OK) changed |= reduce_lengths(&s, out, "extra_topk_length", &st);
            if (st == ATTEST_OK) changed |= reduce_indices(&s, out, "indices", NULL, &st);
            if (st == ATTEST_OK) changed |= reduce_indices(&s, out, "extra_indices", NULL, &st);
            if (st == ATTEST_OK) changed |= reduce_pages(&s, out, POOL_MLA, &st);
            if (st == ATTEST_OK) changed |= reduce_pages(&s, out, POOL_MLA_EXTRA, &st);
        } else if (st == ATTEST_OK) {
            changed |= reduce_lengths(&s, out, "context_lens", &st);
            if (st == ATTEST_OK) changed |= reduce_indices(&s, out, "block_table", past_request_blocks, &st);
            if (st == ATTEST_OK) changed |= reduce_pages(&s, out, POOL_INDEXER, &st);
        }
        if (s.stats.tries >= s.max_tries) break;
    }
    if (stats) *stats = s.stats;
    if (st != ATTEST_OK) {
        attest_case_free(out);
        return st;
    }
    if (s.broken) {
        attest_case_free(out);
        return attest_fail(ATTEST_ERR_INTERNAL, "minimizer: the predicate could not judge a case");
    }
    return ATTEST_OK;
}

attest_case_size attest_case_size_of(const attest_case *c)
{
    attest_case_size z = {axis_count(c, AX_REQ), axis_count(c, AX_ROW), axis_count(c, AX_HEAD), 0,
                          axis_count(c, AX_TOPK), axis_count(c, AX_XTOPK)};
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        const attest_tensor *t = attest_case_tensor_const(c, "context_lens");
        for (size_t i = 0; t && t->data && i < attest_tensor_count(t); i++)
            z.entries += ((const int32_t *)t->data)[i];
        return z;
    }
    const char *names[2] = {"indices", "extra_indices"};
    const char *lens[2] = {"topk_length", "extra_topk_length"};
    for (int s = 0; s < 2; s++) {
        const attest_tensor *t = attest_case_tensor_const(c, names[s]);
        if (!t || !t->data) continue;
        const attest_tensor *tl = attest_case_tensor_const(c, lens[s]);
        const int64_t K = t->shape[2], per_req = t->shape[1] * K;
        const int32_t *idx = t->data;
        for (size_t i = 0; i < attest_tensor_count(t); i++) {
            const int64_t r = (int64_t)i / per_req, slot = (int64_t)i % K;
            const int64_t limit = tl && tl->data ? ((const int32_t *)tl->data)[r] : K;
            z.entries += idx[i] != -1 && slot < limit;
        }
    }
    return z;
}

void attest_case_size_describe(const attest_case *c, char *buf, size_t cap)
{
    if (buf == NULL || cap == 0) return;
    const attest_case_size z = attest_case_size_of(c);
    if (c->kernel != ATTEST_KERNEL_MLA_DECODE) {
        snprintf(buf, cap, "b=%d next_n=%d heads=%d positions=%" PRId64, z.requests, z.rows,
                 z.heads, z.entries);
        return;
    }
    char extra[32] = "";
    if (c->params.mla.has_extra) snprintf(extra, sizeof extra, " extra_topk=%d", z.extra_topk);
    snprintf(buf, cap, "b=%d s_q=%d h=%d topk=%d%s index entries=%" PRId64, z.requests, z.rows,
             z.heads, z.topk, extra, z.entries);
}
