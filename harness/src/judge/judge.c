/* Judging one output against its expected values (judge.h). */
#include "attest/judge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/record.h"
#include "compare_indexer.h"

struct attest_judge_scratch {
    uint8_t *mask;
    size_t mask_cap;
    double *wide; /* bounds widened for rounded expected values */
    size_t wide_cap;
    indexer_scratch topk;
};

attest_status attest_judge_scratch_new(attest_judge_scratch **out)
{
    *out = calloc(1, sizeof **out);
    ATTEST_RETURN_IF(*out == NULL, ATTEST_ERR_OUT_OF_MEMORY, "judge: cannot allocate scratch");
    return ATTEST_OK;
}

void attest_judge_scratch_free(attest_judge_scratch *s)
{
    if (!s) return;
    free(s->mask);
    free(s->wide);
    indexer_scratch_free(&s->topk);
    free(s);
}

static attest_status judge(const attest_case *c, const attest_tensor *t,
                           const attest_judge_expected *exp, const void *cand,
                           attest_masking cand_masking, const attest_tolerance *tol,
                           attest_judge_scratch *s, attest_tensor_metrics *m)
{
    const size_t n = attest_tensor_count(t);
    const double *bound = exp->bound;
    if (bound != NULL && exp->rounded_to != ATTEST_DTYPE_F64 && tol->bound_factor >= 0) {
        ATTEST_FORWARD(indexer_reserve((void **)&s->wide, &s->wide_cap, n ? n : 1, sizeof(double)));
        const double k = tol->bound_factor > 0 ? tol->bound_factor : 1.0;
        for (size_t i = 0; i < n; i++)
            s->wide[i] = 2.0 * bound[i] +
                         attest_rounding_error(exp->rounded_to,
                                               fabs(exp->values[i]) + 2.0 * k * bound[i]) / k;
        bound = s->wide;
    }
    const int logits = c->kernel == ATTEST_KERNEL_INDEXER && attest_tensor_is(t, "logits");
    const uint8_t *mask = NULL;
    const attest_masking exp_masking = c->params.indexer.masking;
    if (logits && (exp_masking == ATTEST_MASK_UNSPECIFIED || cand_masking != exp_masking)) {
        ATTEST_FORWARD(indexer_reserve((void **)&s->mask, &s->mask_cap, n ? n : 1, 1));
        ATTEST_FORWARD(attest_indexer_valid_mask(c, s->mask));
        mask = s->mask;
    }
    const uint32_t poison = t->dtype == ATTEST_DTYPE_BF16 ? ATTEST_POISON_BF16 : ATTEST_POISON_F32;
    ATTEST_FORWARD(attest_compare_tensor_bounded(exp->values, bound, cand, t->dtype, n, t->shape,
                                                 t->rank, mask, poison, tol, m));
    snprintf(m->output, sizeof m->output, "%s", t->name);
    if (logits && c->params.indexer.topk > 0 && t->dtype == ATTEST_DTYPE_F32)
        ATTEST_FORWARD(indexer_topk_gate_reuse(c, exp->values, bound, cand, tol, &s->topk, m));
    return ATTEST_OK;
}

attest_status attest_judge_output(const attest_case *c, const attest_tensor *t,
                                  const attest_judge_expected *exp, const void *cand,
                                  attest_masking cand_masking, const attest_policy *policy,
                                  attest_judge_scratch *s, attest_tensor_metrics *m)
{
    ATTEST_RETURN_IF(c == NULL || t == NULL || exp == NULL || exp->values == NULL || m == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "judge: NULL argument");
    attest_tolerance tol;
    attest_status st = attest_policy_lookup(policy, c->kernel, t->name, &tol);
    if (st != ATTEST_OK)
        return attest_fail(st, "policy '%s' has no tolerance for %s output '%s'",
                           attest_policy_name(policy), attest_kernel_name(c->kernel), t->name);
    if (s != NULL) return judge(c, t, exp, cand, cand_masking, &tol, s, m);
    attest_judge_scratch local;
    memset(&local, 0, sizeof local);
    st = judge(c, t, exp, cand, cand_masking, &tol, &local, m);
    free(local.mask);
    free(local.wide);
    indexer_scratch_free(&local.topk);
    return st;
}
