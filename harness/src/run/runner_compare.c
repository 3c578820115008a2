/* The runner's comparison step (runner_internal.h): each output judged against the reference
 * (judge.h), the failures summarized. */
#include "runner_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/compare.h"
#include "attest/judge.h"

void runner_scratch_free(runner_scratch *s)
{
    attest_judge_scratch_free(s->judge);
    s->judge = NULL;
}

/* "logits: element failed, 3 of 600 elements over tolerance, worst at logits[row 0, t 5] ref 3
 * cand 3.5 (...)", coordinates named as the reports name them. */
static void summarize(attest_kernel kernel, const attest_tensor_metrics *m, char *buf, size_t cap)
{
    char gates[96], at[96];
    attest_gate_mask_string(m->failed_gates, gates, sizeof gates);
    int n = snprintf(buf, cap, "%s: %s failed", m->output, gates);
    if (n < 0 || (size_t)n >= cap) return;
    if (m->failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN))
        n += snprintf(buf + n, cap - (size_t)n, ", %llu unwritten",
                      (unsigned long long)m->unwritten);
    if ((size_t)n >= cap) return;
    if (m->failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE)) {
        attest_coord_string(kernel, m->output, &m->first_nonfinite_mismatch, at, sizeof at);
        n += snprintf(buf + n, cap - (size_t)n, ", %llu nonfinite mismatches (first at %s)",
                      (unsigned long long)m->nonfinite_mismatches, at);
    }
    if ((size_t)n >= cap) return;
    if (m->element_failures > 0) {
        attest_coord_string(kernel, m->output, &m->worst, at, sizeof at);
        n += snprintf(buf + n, cap - (size_t)n,
                      ", %llu of %llu elements over tolerance, worst at %s ref %.9g cand %.9g "
                      "(error %.3g = %.3g x its tolerance %.3g)",
                      (unsigned long long)m->element_failures,
                      (unsigned long long)m->finite_pairs, at, m->worst_ref, m->worst_cand,
                      fabs(m->worst_cand - m->worst_ref), m->worst_ratio, m->worst_tol);
    }
    if ((size_t)n >= cap) return;
    if (m->failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK))
        snprintf(buf + n, cap - (size_t)n, ", top-k recall %.4g (row %d)", m->topk_recall,
                 m->topk_worst_row);
}

attest_status runner_compare_outputs(const attest_case *c, const attest_policy *policy,
                                     double *const *ref, double *const *bound, void *const *cand,
                                     attest_case_record *rec, runner_scratch *s, char *msg,
                                     size_t cap)
{
    msg[0] = '\0';
    if (s->judge == NULL) ATTEST_FORWARD(attest_judge_scratch_new(&s->judge));
    size_t k = 0, used = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        ATTEST_RETURN_IF(k >= ATTEST_RECORD_MAX_OUTPUTS, ATTEST_ERR_INTERNAL,
                         "case has more than %d outputs", ATTEST_RECORD_MAX_OUTPUTS);
        attest_tensor_metrics *m = &rec->outputs[k];
        const attest_judge_expected exp = {ref[k], ATTEST_DTYPE_F64, bound[k]};
        /* The case carries the candidate's conventions, so its masking is the candidate's. */
        ATTEST_FORWARD(attest_judge_output(c, t, &exp, cand[k], c->params.indexer.masking, policy,
                                           s->judge, m));
        rec->failed_gates |= m->failed_gates;
        if (m->vacuous) rec->vacuous = 1;
        if (m->failed_gates && used + 2 < cap) {
            if (used) used += (size_t)snprintf(msg + used, cap - used, "; ");
            if (used < cap) summarize(c->kernel, m, msg + used, cap - used);
            used = strlen(msg);
        }
        k++;
    }
    rec->num_outputs = (int32_t)k;
    return ATTEST_OK;
}
