/* The top-k family's reference (reference_topk.h): the one selector of references/src/topk.c,
 * applied row by row, and its logical -> physical translation. */
#include <stdlib.h>

#include "attest/reference.h"
#include "attest/reference_topk.h"

attest_status attest_ref_topk_case(const attest_topk_case *c, attest_topk_rule rule, int32_t *ref,
                                   int32_t *physical)
{
    ATTEST_RETURN_IF(c == NULL || ref == NULL || c->logits == NULL || c->context_lens == NULL ||
                         c->block_table == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "topk reference: NULL case or output");
    const int32_t rows = attest_topk_rows(&c->p), k = c->p.k, width = c->p.width;
    double *scores = malloc((size_t)(width > 0 ? width : 1) * sizeof *scores);
    ATTEST_RETURN_IF(scores == NULL, ATTEST_ERR_OUT_OF_MEMORY, "topk reference: out of memory");
    attest_status st = ATTEST_OK;
    for (int32_t r = 0; r < rows && st == ATTEST_OK; r++) {
        const int32_t len = attest_topk_row_length(c, r);
        const float *row = c->logits + (size_t)r * (size_t)width;
        for (int32_t t = 0; t < len; t++) scores[t] = row[t];
        int32_t *out = ref + (size_t)r * (size_t)k;
        st = attest_ref_topk_row_skip_neg_inf(scores, len, k, rule, out);
        if (st == ATTEST_OK && physical != NULL)
            st = attest_topk_to_physical(c->block_table, c->p.blocks_per_req, r / c->p.next_n, out,
                                         k, physical + (size_t)r * (size_t)k);
    }
    free(scores);
    return st;
}
