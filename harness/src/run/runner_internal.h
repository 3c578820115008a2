/* attest (internal): the runner's comparison step, kept apart from the run loop. */
#ifndef ATTEST_RUNNER_INTERNAL_H
#define ATTEST_RUNNER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/judge.h"
#include "attest/policy.h"
#include "attest/record.h"
#include "attest/status.h"

/* Buffers reused from case to case. */
typedef struct runner_scratch {
    attest_judge_scratch *judge; /* allocated on first use */
} runner_scratch;

void runner_scratch_free(runner_scratch *s);

/* Judges every output of the case (attest_judge_output; `cand[i]`: candidate bytes of output i
 * in table order, `ref[i]`: reference values, `bound[i]`: their error bounds or NULL) under the
 * policy. Fills rec->outputs, num_outputs, failed_gates and vacuous, and a one-line summary of
 * the failures in msg. ATTEST_ERR_NOT_FOUND when the policy has no entry for an output. */
attest_status runner_compare_outputs(const attest_case *c, const attest_policy *policy,
                                     double *const *ref, double *const *bound, void *const *cand,
                                     attest_case_record *rec, runner_scratch *s, char *msg,
                                     size_t cap) ATTEST_MUST_CHECK;

#endif /* ATTEST_RUNNER_INTERNAL_H */
