/* The top-k family's case: its geometry, allocation and parameter string (topk.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/case.h"
#include "attest/topk.h"

int32_t attest_topk_rows(const attest_topk_params *p)
{
    return p->b * p->next_n;
}

int32_t attest_topk_row_length(const attest_topk_case *c, int32_t r)
{
    /* The indexer's rule: the top-k kernel selects over the rows the indexer wrote. */
    attest_indexer_params ip;
    memset(&ip, 0, sizeof ip);
    ip.b = c->p.b;
    ip.next_n = c->p.next_n;
    ip.max_len = c->p.width;
    return attest_indexer_row_length(&ip, c->context_lens, r);
}

static attest_status check_params(const attest_topk_params *p)
{
    ATTEST_RETURN_IF(p->b < 1 || p->b > 1024, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk case: b = %d must be in [1, 1024]", p->b);
    ATTEST_RETURN_IF(p->next_n < 1 || p->next_n > 16, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk case: next_n = %d must be in [1, 16]", p->next_n);
    ATTEST_RETURN_IF(p->width < 1 || p->width > ATTEST_TOPK_MAX_WIDTH, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk case: width = %d must be in [1, %d]", p->width, ATTEST_TOPK_MAX_WIDTH);
    ATTEST_RETURN_IF(p->k < 1 || p->k > ATTEST_TOPK_MAX_K, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk case: k = %d must be in [1, %d]", p->k, ATTEST_TOPK_MAX_K);
    ATTEST_RETURN_IF((int64_t)p->blocks_per_req * ATTEST_INDEXER_BLOCK < p->width ||
                         p->blocks_per_req > ATTEST_TOPK_MAX_WIDTH / 64 + 1,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "topk case: blocks_per_req = %d must cover width = %d (64 per block)",
                     p->blocks_per_req, p->width);
    ATTEST_RETURN_IF(p->num_blocks < p->blocks_per_req ||
                         (int64_t)p->num_blocks * ATTEST_INDEXER_BLOCK > INT32_MAX,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "topk case: num_blocks = %d must be >= blocks_per_req and fit int32 indices",
                     p->num_blocks);
    ATTEST_RETURN_IF((int64_t)attest_topk_rows(p) * p->width > (int64_t)1 << 28,
                     ATTEST_ERR_INVALID_ARGUMENT, "topk case: %d rows of width %d are too many",
                     attest_topk_rows(p), p->width);
    return ATTEST_OK;
}

attest_status attest_topk_case_alloc(attest_topk_case *c)
{
    ATTEST_RETURN_IF(c == NULL, ATTEST_ERR_INVALID_ARGUMENT, "topk case: NULL");
    ATTEST_FORWARD(check_params(&c->p));
    const size_t rows = (size_t)attest_topk_rows(&c->p);
    c->logits = calloc(rows * (size_t)c->p.width, sizeof(float));
    c->context_lens = calloc((size_t)c->p.b, sizeof(int32_t));
    c->block_table = calloc((size_t)c->p.b * (size_t)c->p.blocks_per_req, sizeof(int32_t));
    if (c->logits == NULL || c->context_lens == NULL || c->block_table == NULL) {
        attest_topk_case_free(c);
        ATTEST_RETURN_IF(1, ATTEST_ERR_OUT_OF_MEMORY, "topk case: out of memory");
    }
    for (int32_t i = 0; i < c->p.b * c->p.blocks_per_req; i++)
        c->block_table[i] = i % c->p.num_blocks;
    return ATTEST_OK;
}

void attest_topk_case_free(attest_topk_case *c)
{
    if (c == NULL) return;
    free(c->logits);
    free(c->context_lens);
    free(c->block_table);
    c->logits = NULL;
    c->context_lens = NULL;
    c->block_table = NULL;
}

/* The keys of the parameter string below, in its order. */
static const char *const topk_param_keys[] = {"kernel", "b", "next_n", "width", "k", "bpr"};

attest_status attest_topk_filter_check(const char *filter)
{
    return attest_param_filter_check_keys(
        filter, topk_param_keys, sizeof topk_param_keys / sizeof topk_param_keys[0], "topk");
}

attest_status attest_topk_param_string(const attest_topk_case *c, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "kernel=topk,b=%d,next_n=%d,width=%d,k=%d,bpr=%d", c->p.b,
                     c->p.next_n, c->p.width, c->p.k, c->p.blocks_per_req);
    ATTEST_RETURN_IF(n < 0 || (size_t)n >= cap, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk param string: buffer of %zu bytes too small", cap);
    return ATTEST_OK;
}
