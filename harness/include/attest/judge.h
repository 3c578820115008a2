/* attest: judging one output of a case against its expected values under a policy. The steps
 * are the same wherever the expected values come from (the reference in the runner, stored
 * outputs in attest check, the old kernel in attest run --baseline): the policy's tolerance for
 * the output, the poison pattern of its dtype, the indexer's compare mask, the comparator and
 * the indexer's top-k gate. One function does them, so a verdict cannot depend on the path.
 */
#ifndef ATTEST_JUDGE_H
#define ATTEST_JUDGE_H

#include <stddef.h>

#include "attest/case.h"
#include "attest/compare.h"
#include "attest/policy.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Buffers reused from call to call (the mask, widened bounds, the top-k gate's sets). */
typedef struct attest_judge_scratch attest_judge_scratch; /* opaque */

/* Allocates an empty scratch; ATTEST_ERR_OUT_OF_MEMORY. */
attest_status attest_judge_scratch_new(attest_judge_scratch **out) ATTEST_MUST_CHECK;

/* Frees the scratch and its buffers; NULL is ignored. */
void attest_judge_scratch_free(attest_judge_scratch *s);

/* The expected values of one output. */
typedef struct attest_judge_expected {
    const double *values; /* one per element, in the output's layout */
    /* ATTEST_DTYPE_F64: the exact reference. F32 or BF16: one correct evaluation rounded to
     * that dtype (stored outputs, another kernel's), which may sit within its bound on the
     * other side of the exact result; with bounds on, the tolerance is then both bounds plus
     * that rounding. */
    attest_dtype rounded_to;
    const double *bound;  /* the reference computation's per-element error bounds, or NULL */
} attest_judge_expected;

/* Judges output tensor `t` of case `c` (the candidate's bytes `cand` in t->dtype) against `exp`
 * under the policy's tolerance for (c->kernel, t->name). Indexer logits past a row's valid
 * length are left out when the case's masking is unspecified or differs from `cand_masking`
 * (what they hold then depends on a convention the two sides do not share); with params.topk
 * > 0 the top-k gate runs on float32 logits. Fills *m (named after t). `s` may be NULL (buffers
 * are then allocated for this call). Returns ATTEST_ERR_NOT_FOUND naming policy, kernel and
 * output when the policy has no tolerance for it, ATTEST_ERR_INVALID_ARGUMENT or
 * ATTEST_ERR_OUT_OF_MEMORY when the comparison could not run; a failed gate is recorded in
 * m->failed_gates, never returned. */
attest_status attest_judge_output(const attest_case *c, const attest_tensor *t,
                                  const attest_judge_expected *exp, const void *cand,
                                  attest_masking cand_masking, const attest_policy *policy,
                                  attest_judge_scratch *s, attest_tensor_metrics *m)
    ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_JUDGE_H */
