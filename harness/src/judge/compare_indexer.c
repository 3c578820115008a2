/* The indexer's compare mask and top-k gate (compare.h, compare_indexer.h): one implementation
 * for the runner, which compares against the reference, and for attest check, which compares
 * against stored outputs. */
#include "compare_indexer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

attest_status indexer_reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return ATTEST_OK;
    void *q = realloc(*p, need * elem);
    ATTEST_RETURN_IF(q == NULL, ATTEST_ERR_OUT_OF_MEMORY,
                     "indexer compare: cannot allocate %zu bytes", need * elem);
    *p = q;
    *cap = need;
    return ATTEST_OK;
}

/* Heap order: a is "worse" than b when its score is lower, or equal with a higher position. */
static int worse(const double *s, int32_t a, int32_t b)
{
    return s[a] < s[b] || (s[a] == s[b] && a > b);
}

static void sift_down(const double *s, int32_t *h, int32_t n, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && worse(s, h[l], h[m])) m = l;
        if (r < n && worse(s, h[r], h[m])) m = r;
        if (m == i) return;
        int32_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

void indexer_select_topk_neg_inf_last(const double *scores, int32_t len, int32_t k,
                                      attest_topk_rule rule, int32_t *idx, int32_t *heap)
{
    for (int32_t i = 0; i < k; i++) idx[i] = -1;
    if (rule == ATTEST_TOPK_SHORT_IDENTITY && len <= k) {
        for (int32_t i = 0; i < len; i++) idx[i] = i;
        return;
    }
    /* A min-heap of the best k so far, its worst element at the root. */
    int32_t n = 0;
    for (int32_t t = 0; t < len; t++) {
        if (isnan(scores[t])) continue;
        if (n < k) {
            int32_t i = n++;
            heap[i] = t;
            while (i > 0 && worse(scores, heap[i], heap[(i - 1) / 2])) {
                int32_t p = (i - 1) / 2, tmp = heap[i];
                heap[i] = heap[p];
                heap[p] = tmp;
                i = p;
            }
        } else if (worse(scores, heap[0], t)) {
            heap[0] = t;
            sift_down(scores, heap, n, 0);
        }
    }
    /* Pop worst-first into the back of idx: descending order. */
    for (int32_t m = n; m > 0; m--) {
        idx[m - 1] = heap[0];
        heap[0] = heap[m - 1];
        sift_down(scores, heap, m - 1, 0);
    }
}

void indexer_scratch_free(indexer_scratch *s)
{
    free(s->scores);
    free(s->sets);
    memset(s, 0, sizeof *s);
}

/* The case's context_lens, checked to cover every request of an indexer case. */
static attest_status context_lens(const attest_case *c, const int32_t **lens)
{
    ATTEST_RETURN_IF(c == NULL || c->kernel != ATTEST_KERNEL_INDEXER, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer compare: not an indexer case");
    const attest_tensor *t = attest_case_tensor_const(c, "context_lens");
    ATTEST_RETURN_IF(t == NULL || t->data == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "case has no context_lens");
    ATTEST_RETURN_IF(t->dtype != ATTEST_DTYPE_I32 || c->params.indexer.b < 0 ||
                         attest_tensor_count(t) < (size_t)c->params.indexer.b,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "context_lens must hold b = %d int32 values", (int)c->params.indexer.b);
    *lens = t->data;
    return ATTEST_OK;
}

attest_status attest_indexer_valid_mask(const attest_case *c, uint8_t *mask)
{
    const int32_t *lens = NULL;
    ATTEST_FORWARD(context_lens(c, &lens));
    const attest_indexer_params *p = &c->params.indexer;
    ATTEST_RETURN_IF(p->next_n < 0 || p->max_len < 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer mask: next_n = %d and max_len = %d must be >= 0", (int)p->next_n,
                     (int)p->max_len);
    const size_t rows = (size_t)p->b * (size_t)p->next_n, width = (size_t)p->max_len;
    if (rows * width == 0) return ATTEST_OK;
    ATTEST_RETURN_IF(mask == NULL, ATTEST_ERR_INVALID_ARGUMENT, "indexer mask: NULL mask");
    for (size_t r = 0; r < rows; r++) {
        const size_t len = (size_t)attest_indexer_row_length(p, lens, (int32_t)r);
        memset(mask + r * width, 1, len);
        memset(mask + r * width + len, 0, width - len);
    }
    return ATTEST_OK;
}

attest_status indexer_topk_gate_reuse(const attest_case *c, const double *ref, const double *bound,
                                      const float *cand, const attest_tolerance *tol,
                                      indexer_scratch *s, attest_tensor_metrics *m)
{
    const int32_t *lens = NULL;
    ATTEST_FORWARD(context_lens(c, &lens));
    const attest_indexer_params *p = &c->params.indexer;
    ATTEST_RETURN_IF(p->next_n < 0 || p->max_len < 0 || p->topk < 0,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "indexer top-k: next_n = %d, max_len = %d and topk = %d must be >= 0",
                     (int)p->next_n, (int)p->max_len, (int)p->topk);
    const int32_t rows = p->b * p->next_n, width = p->max_len, k = p->topk;
    ATTEST_RETURN_IF(rows > 0 && width > 0 && (ref == NULL || cand == NULL),
                     ATTEST_ERR_INVALID_ARGUMENT, "indexer top-k: NULL logits");
    /* sets: row lengths, candidate sets, reference sets, heap. */
    const size_t need = (size_t)rows + 2 * (size_t)rows * (size_t)k + (size_t)k;
    ATTEST_FORWARD(indexer_reserve((void **)&s->sets, &s->sets_cap, need, sizeof(int32_t)));
    ATTEST_FORWARD(indexer_reserve((void **)&s->scores, &s->scores_cap, (size_t)width,
                                   sizeof(double)));
    int32_t *row_len = s->sets, *cand_sets = row_len + rows;
    int32_t *ref_sets = cand_sets + (size_t)rows * (size_t)k, *heap = ref_sets + (size_t)rows * k;
    for (int32_t r = 0; r < rows; r++) {
        const int32_t len = attest_indexer_row_length(p, lens, r);
        const size_t base = (size_t)r * (size_t)width;
        row_len[r] = len;
        for (int32_t t = 0; t < len; t++) s->scores[t] = (double)cand[base + (size_t)t];
        indexer_select_topk_neg_inf_last(s->scores, len, k, p->topk_rule,
                                         cand_sets + (size_t)r * k, heap);
        indexer_select_topk_neg_inf_last(ref + base, len, k, p->topk_rule,
                                         ref_sets + (size_t)r * k, heap);
    }
    return attest_compare_topk_bounded(ref, bound, rows, width, row_len, cand_sets, ref_sets, k,
                                       tol, m);
}

attest_status attest_indexer_topk_gate(const attest_case *c, const double *ref, const float *cand,
                                       const attest_tolerance *tol, attest_tensor_metrics *m)
{
    return attest_indexer_topk_gate_bounded(c, ref, NULL, cand, tol, m);
}

attest_status attest_indexer_topk_gate_bounded(const attest_case *c, const double *ref,
                                               const double *bound, const float *cand,
                                               const attest_tolerance *tol,
                                               attest_tensor_metrics *m)
{
    indexer_scratch s = {0};
    attest_status st = indexer_topk_gate_reuse(c, ref, bound, cand, tol, &s, m);
    indexer_scratch_free(&s);
    return st;
}
