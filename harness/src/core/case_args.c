/* Typed views of a placed case for candidates (candidate.h). */
#include "attest/candidate.h"

static attest_status need(attest_case *c, const char *name, void **data)
{
    attest_tensor *t = attest_case_tensor(c, name);
    ATTEST_RETURN_IF(t == NULL, ATTEST_ERR_INVALID_ARGUMENT, "case has no tensor '%s'", name);
    ATTEST_RETURN_IF(t->data == NULL && t->nbytes > 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "tensor '%s' is not placed in memory", name);
    *data = t->data;
    return ATTEST_OK;
}

/* An optional tensor is NULL when the case does not define it. */
static void *maybe(attest_case *c, const char *name)
{
    attest_tensor *t = attest_case_tensor(c, name);
    return t ? t->data : NULL;
}

attest_status attest_case_args(attest_case *c, attest_kernel_args *args)
{
    void *p = NULL;
    args->kernel = c->kernel;
    args->domain = ATTEST_DOMAIN_HOST;
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        attest_indexer_args *a = &args->u.indexer;
        a->params = &c->params.indexer;
        ATTEST_FORWARD(need(c, "cache_bytes", &p));
        a->cache = p;
        ATTEST_FORWARD(need(c, "block_table", &p));
        a->block_table = p;
        ATTEST_FORWARD(need(c, "context_lens", &p));
        a->context_lens = p;
        ATTEST_FORWARD(need(c, "q_fp8", &p));
        a->q_fp8 = p;
        ATTEST_FORWARD(need(c, "weights", &p));
        a->weights = p;
        ATTEST_FORWARD(need(c, "logits", &p));
        a->logits = p;
        return ATTEST_OK;
    }
    if (c->kernel == ATTEST_KERNEL_MLA_DECODE) {
        attest_mla_args *a = &args->u.mla;
        const attest_mla_params *mp = &c->params.mla;
        a->params = mp;
        ATTEST_FORWARD(need(c, "cache_bytes", &p));
        a->cache = p;
        ATTEST_FORWARD(need(c, "q_bf16", &p));
        a->q = p;
        ATTEST_FORWARD(need(c, "indices", &p));
        a->indices = p;
        a->topk_length = mp->has_topk_length ? maybe(c, "topk_length") : NULL;
        a->attn_sink = mp->has_sink ? maybe(c, "attn_sink") : NULL;
        a->extra_cache = mp->has_extra ? maybe(c, "extra_cache_bytes") : NULL;
        a->extra_indices = mp->has_extra ? maybe(c, "extra_indices") : NULL;
        a->extra_topk_length =
            mp->has_extra && mp->has_extra_topk_length ? maybe(c, "extra_topk_length") : NULL;
        ATTEST_RETURN_IF(mp->has_topk_length && !a->topk_length, ATTEST_ERR_INVALID_ARGUMENT,
                         "tensor 'topk_length' is declared but not placed");
        ATTEST_RETURN_IF(mp->has_sink && !a->attn_sink, ATTEST_ERR_INVALID_ARGUMENT,
                         "tensor 'attn_sink' is declared but not placed");
        ATTEST_RETURN_IF(mp->has_extra && (!a->extra_cache || !a->extra_indices),
                         ATTEST_ERR_INVALID_ARGUMENT,
                         "extra scope is declared but its tensors are not placed");
        ATTEST_FORWARD(need(c, "out_bf16", &p));
        a->out = p;
        ATTEST_FORWARD(need(c, "lse", &p));
        a->lse = p;
        return ATTEST_OK;
    }
    return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "unknown kernel family %d", (int)c->kernel);
}
