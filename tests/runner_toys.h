/* Toy cases, a toy reference and hand-made candidates for test_runner.c.
 *
 * The toy semantics are not the real kernels' (the runner does not care what a kernel computes):
 *   indexer:    logits[row, t] = w[row] * (cache_bytes[t] + 1) for t < L(row), the masking value
 *               past it (-inf, 0, or NaN for "unspecified"); L(row) = min(context_lens[b], max_len)
 *               (the toy cases use next_n = 1).
 *   mla-decode: out_bf16[q, h, i] = q_bf16[q, h, i] for i < d_v; lse[q, h] = indices[q, 0] + h/4.
 * Every value is exact in float32 and bf16, so a correct toy candidate matches bit for bit and
 * the verdicts depend on integrity checks only, never on tolerances.
 */
#ifndef ATTEST_TEST_RUNNER_TOYS_H
#define ATTEST_TEST_RUNNER_TOYS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/numerics.h"

static inline int32_t toy_row_len(const attest_indexer_params *p, const int32_t *lens, int32_t row)
{
    int32_t L = lens[row / p->next_n];
    return L < 0 ? 0 : (L > p->max_len ? p->max_len : L);
}

/* The toy reference's values. */
static inline attest_status toy_values(const attest_case *c, double **out)
{
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        const attest_indexer_params *p = &c->params.indexer;
        const uint8_t *cache = attest_case_tensor_const(c, "cache_bytes")->data;
        const int32_t *lens = attest_case_tensor_const(c, "context_lens")->data;
        const float *w = attest_case_tensor_const(c, "weights")->data;
        const double past = p->masking == ATTEST_MASK_NEG_INF ? -INFINITY
                            : p->masking == ATTEST_MASK_ZERO  ? 0.0
                                                              : NAN;
        for (int32_t r = 0; r < p->b * p->next_n; r++) {
            const int32_t L = toy_row_len(p, lens, r);
            for (int32_t t = 0; t < p->max_len; t++)
                out[0][(size_t)r * p->max_len + t] =
                    t < L ? (double)w[(size_t)r * p->heads] * (cache[t] + 1.0) : past;
        }
        return ATTEST_OK;
    }
    const attest_mla_params *p = &c->params.mla;
    const uint16_t *q = attest_case_tensor_const(c, "q_bf16")->data;
    const int32_t *idx = attest_case_tensor_const(c, "indices")->data;
    const size_t heads = (size_t)p->b * p->s_q * p->h_q;
    for (size_t h = 0; h < heads; h++) {
        for (int32_t i = 0; i < p->d_v; i++)
            out[0][h * p->d_v + i] = attest_bf16_decode(q[h * p->d_qk + i]);
        out[1][h] = idx[(h / p->h_q) * p->topk] + (double)(h % p->h_q) / 4.0;
    }
    return ATTEST_OK;
}

/* The toy reference (attest_reference_fn): the toy candidates compute exactly these values, so
 * every bound is 0 and an element passes within half a step of its dtype. */
static inline attest_status toy_reference(const attest_case *c, const attest_bound_model *models,
                                          double **out, double **bounds)
{
    (void)models;
    attest_status st = toy_values(c, out);
    if (st != ATTEST_OK || bounds == NULL) return st;
    for (size_t i = 0, k = 0; i < c->num_tensors; i++) {
        if (c->tensors[i].role != ATTEST_ROLE_OUTPUT) continue;
        for (size_t e = 0; e < attest_tensor_count(&c->tensors[i]); e++) bounds[k][e] = 0.0;
        k++;
    }
    return ATTEST_OK;
}

/* A correct toy indexer, with the masking value it declares. */
static inline void toy_indexer_logits(const attest_indexer_args *a, float past)
{
    const attest_indexer_params *p = a->params;
    for (int32_t r = 0; r < p->b * p->next_n; r++) {
        const int32_t L = toy_row_len(p, a->context_lens, r);
        for (int32_t t = 0; t < p->max_len; t++)
            a->logits[(size_t)r * p->max_len + t] =
                t < L ? a->weights[(size_t)r * p->heads] * (float)(a->cache[t] + 1) : past;
    }
}

static inline void toy_mla(const attest_mla_args *a)
{
    const attest_mla_params *p = a->params;
    const size_t heads = (size_t)p->b * p->s_q * p->h_q;
    for (size_t h = 0; h < heads; h++) {
        memcpy(a->out + h * p->d_v, a->q + h * p->d_qk, (size_t)p->d_v * 2);
        a->lse[h] = (float)a->indices[(h / p->h_q) * p->topk] + (float)(h % p->h_q) / 4.0f;
    }
}

/* Builds a toy indexer case: b requests of `len` positions, one block each, topk k. */
static inline void toy_indexer_case(attest_case *c, int32_t b, int32_t max_len, int32_t len, float w,
                             int32_t topk, int32_t num_blocks)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_INDEXER;
    c->seed = 42;
    attest_indexer_params *p = &c->params.indexer;
    p->b = b;
    p->next_n = 1;
    p->heads = 2;
    p->head_dim = 128;
    p->num_blocks = num_blocks;
    p->blocks_per_req = 1;
    p->max_len = max_len;
    p->masking = ATTEST_MASK_NEG_INF;
    p->topk = topk;
    p->topk_rule = ATTEST_TOPK_BY_SCORE;
    if (attest_case_define_tensors(c, 0) != ATTEST_OK || attest_case_alloc_heap(c) != ATTEST_OK)
        abort();
    uint8_t *cache = attest_case_tensor(c, "cache_bytes")->data;
    for (size_t i = 0; i < attest_case_tensor(c, "cache_bytes")->nbytes; i++)
        cache[i] = (uint8_t)(i * 37u + 11u);
    int32_t *lens = attest_case_tensor(c, "context_lens")->data;
    int32_t *table = attest_case_tensor(c, "block_table")->data;
    float *wt = attest_case_tensor(c, "weights")->data;
    for (int32_t i = 0; i < b; i++) {
        lens[i] = len - i;
        table[i] = 0;
        wt[2 * i] = w;
        wt[2 * i + 1] = 1.0f;
    }
}

static inline void toy_mla_case(attest_case *c, int32_t h_q)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    c->seed = 7;
    attest_mla_params *p = &c->params.mla;
    p->layout = ATTEST_LAYOUT_MLA_V32;
    p->page_size = 2;
    p->num_pages = 2;
    p->b = 1;
    p->s_q = 2;
    p->h_q = h_q;
    p->d_qk = 576;
    p->d_v = 512;
    p->topk = 3;
    p->sm_scale = 0.0416f;
    if (attest_case_define_tensors(c, 0) != ATTEST_OK || attest_case_alloc_heap(c) != ATTEST_OK)
        abort();
    uint16_t *q = attest_case_tensor(c, "q_bf16")->data;
    for (size_t i = 0; i < attest_tensor_count(attest_case_tensor(c, "q_bf16")); i++)
        q[i] = attest_bf16_encode((float)((int)(i % 17) - 8) * 0.25f);
    int32_t *idx = attest_case_tensor(c, "indices")->data;
    for (size_t i = 0; i < attest_tensor_count(attest_case_tensor(c, "indices")); i++)
        idx[i] = (int32_t)(i % 4) - 1;
}

#endif /* ATTEST_TEST_RUNNER_TOYS_H */
