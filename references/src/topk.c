/* attest references: top-k selection over one logits row, and logical -> physical translation.
 *
 * Selection is a full sort of the candidates (score descending, position ascending), which is
 * slow next to a heap but has exactly one order, so the reference's index list is reproducible.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attest/reference.h"

typedef struct scored {
    double v;
    int32_t pos;
} scored;

static int scored_cmp(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->v > y->v) return -1;
    if (x->v < y->v) return 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

attest_status attest_ref_topk_row_skip_neg_inf(const double *logits, int32_t len, int32_t k,
                                  attest_topk_rule rule, int32_t *idx)
{
    ATTEST_RETURN_IF(idx == NULL || (logits == NULL && len > 0), ATTEST_ERR_INVALID_ARGUMENT,
                     "topk reference: NULL logits or output");
    ATTEST_RETURN_IF(len < 0 || k < 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk reference: len = %d and k = %d must be >= 0", len, k);
    ATTEST_RETURN_IF(rule != ATTEST_TOPK_BY_SCORE && rule != ATTEST_TOPK_SHORT_IDENTITY,
                     ATTEST_ERR_INVALID_ARGUMENT, "topk reference: unknown rule %d", (int)rule);
    for (int32_t i = 0; i < k; i++) idx[i] = -1;
    if (rule == ATTEST_TOPK_SHORT_IDENTITY && len <= k) {
        for (int32_t i = 0; i < len; i++) idx[i] = i;
        return ATTEST_OK;
    }
    if (len == 0 || k == 0) return ATTEST_OK;
    scored *s = malloc((size_t)len * sizeof *s);
    ATTEST_RETURN_IF(s == NULL, ATTEST_ERR_OUT_OF_MEMORY, "topk reference: out of memory");
    int32_t n = 0;
    for (int32_t t = 0; t < len; t++) {
        /* NaN has no rank; -inf is what masked positions hold, so it is never a choice. */
        if (isnan(logits[t]) || logits[t] == -INFINITY) continue;
        s[n].v = logits[t];
        s[n].pos = t;
        n++;
    }
    qsort(s, (size_t)n, sizeof *s, scored_cmp);
    for (int32_t i = 0; i < k && i < n; i++) idx[i] = s[i].pos;
    free(s);
    return ATTEST_OK;
}

attest_status attest_topk_to_physical(const int32_t *block_table, int32_t blocks_per_req,
                                      int32_t b, const int32_t *logical, int32_t k,
                                      int32_t *physical)
{
    ATTEST_RETURN_IF(block_table == NULL || logical == NULL || physical == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "topk_to_physical: NULL argument");
    ATTEST_RETURN_IF(blocks_per_req <= 0 || b < 0 || k < 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk_to_physical: blocks_per_req = %d, b = %d, k = %d out of range",
                     blocks_per_req, b, k);
    const int64_t B = ATTEST_INDEXER_BLOCK;
    for (int32_t i = 0; i < k; i++) {
        int32_t l = logical[i];
        if (l == -1) {
            physical[i] = -1;
            continue;
        }
        ATTEST_RETURN_IF(l < 0, ATTEST_ERR_INVALID_ARGUMENT,
                         "topk_to_physical: logical[%d] = %d is negative and not -1", i, l);
        int64_t j = l / B;
        ATTEST_RETURN_IF(j >= blocks_per_req, ATTEST_ERR_INVALID_ARGUMENT,
                         "topk_to_physical: logical[%d] = %d is in block %lld, the block table "
                         "has %d",
                         i, l, (long long)j, blocks_per_req);
        int32_t blk = block_table[(size_t)b * (size_t)blocks_per_req + (size_t)j];
        ATTEST_RETURN_IF(blk < 0, ATTEST_ERR_INVALID_ARGUMENT,
                         "topk_to_physical: block_table[%d][%lld] = %d is negative", b,
                         (long long)j, blk);
        int64_t phys = (int64_t)blk * B + l % B;
        ATTEST_RETURN_IF(phys > INT32_MAX, ATTEST_ERR_INVALID_ARGUMENT,
                         "topk_to_physical: block_table[%d][%lld] = %d overflows int32 indices",
                         b, (long long)j, blk);
        physical[i] = (int32_t)phys;
    }
    return ATTEST_OK;
}
