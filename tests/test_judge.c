/* Tests of judging one output (judge.h): the policy lookup, the mask rule for logits past a
 * row's length, the widened bound of rounded expected values and the top-k gate's trigger, on a
 * hand-built indexer case. Expected values are worked out by hand in the comments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/case.h"
#include "attest/judge.h"
#include "attest/policy.h"
#include "attest/status.h"

#define POLICY_HEAD "{\"schema\": 1, \"name\": \"t\", \"version\": \"1\", \"entries\": ["

/* Per-element atol; top-k recall 1 with no tie band. */
static const char ATOL_POLICY[] = POLICY_HEAD
    "{\"kernel\": \"indexer\", \"output\": \"logits\", \"atol\": 1e-6, \"rtol\": 0,"
    " \"max_fail_fraction\": 0, \"cos_diff_max\": 1, \"nmse_max\": null,"
    " \"max_code_distance\": null, \"vacuity_factor\": 0, \"topk_min_recall\": 1,"
    " \"topk_tie_atol\": 0, \"topk_tie_rtol\": 0, \"source\": \"test\"}]}";

/* Computed bounds (bound_factor 1). */
static const char BOUND_POLICY[] = POLICY_HEAD
    "{\"kernel\": \"indexer\", \"output\": \"logits\", \"bound_factor\": 1,"
    " \"accumulation\": \"fp32\", \"max_fail_fraction\": 0, \"cos_diff_max\": 1,"
    " \"nmse_max\": null, \"max_code_distance\": null, \"source\": \"test\"}]}";

/* No indexer entry at all. */
static const char MLA_ONLY_POLICY[] = POLICY_HEAD
    "{\"kernel\": \"mla-decode\", \"output\": \"lse\", \"atol\": 1e-6, \"rtol\": 0,"
    " \"max_fail_fraction\": 0, \"cos_diff_max\": 1, \"nmse_max\": null,"
    " \"max_code_distance\": null, \"vacuity_factor\": 0, \"source\": \"test\"}]}";

static attest_policy *parse(const char *text)
{
    attest_policy *p = NULL;
    if (attest_policy_parse(text, strlen(text), "t.json", &p) != ATTEST_OK)
        fail_msg("policy: %s", attest_last_error());
    return p;
}

/* One request of length 2, next_n 1, max_len 4: the MTP causal rule (t <= L - next_n + j) gives
 * row 0 the valid length 2, so logits 2 and 3 lie past it. */
static void make_case(attest_case *c, attest_masking masking, int32_t topk)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_INDEXER;
    attest_indexer_params *p = &c->params.indexer;
    p->b = 1;
    p->next_n = 1;
    p->heads = 1;
    p->head_dim = 128;
    p->num_blocks = 1;
    p->blocks_per_req = 1;
    p->max_len = 4;
    p->masking = masking;
    p->topk = topk;
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));
    attest_tensor *t = attest_case_tensor(c, "context_lens");
    assert_non_null(t);
    ((int32_t *)t->data)[0] = 2;
}

static const attest_tensor *logits(const attest_case *c)
{
    const attest_tensor *t = attest_case_tensor_const(c, "logits");
    assert_non_null(t);
    assert_int_equal(attest_tensor_count(t), 4);
    return t;
}

/* Logits past the row's length are compared only when both sides follow the same specified
 * masking: a -inf-masking expectation against a candidate writing 0.0 there is two nonfinite
 * mismatches under -inf, none under 0.0 or when the case leaves masking unspecified. */
static void test_mask_past_row_length(void **state)
{
    (void)state;
    attest_policy *p = parse(ATOL_POLICY);
    const double exp_v[4] = {1.0, 2.0, -INFINITY, -INFINITY};
    const float cand[4] = {1.0f, 2.0f, 0.0f, 0.0f};
    const attest_judge_expected exp = {exp_v, ATTEST_DTYPE_F64, NULL};
    attest_case c;
    attest_tensor_metrics m;

    make_case(&c, ATTEST_MASK_NEG_INF, 0);
    assert_int_equal(attest_judge_output(&c, logits(&c), &exp, cand, ATTEST_MASK_NEG_INF, p, NULL, &m),
                     ATTEST_OK);
    assert_string_equal(m.output, "logits");
    assert_int_equal(m.count, 4);
    assert_int_equal(m.nonfinite_mismatches, 2);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE));

    assert_int_equal(attest_judge_output(&c, logits(&c), &exp, cand, ATTEST_MASK_ZERO, p, NULL, &m),
                     ATTEST_OK);
    assert_int_equal(m.count, 2);
    assert_int_equal(m.failed_gates, 0);
    attest_case_free(&c);

    make_case(&c, ATTEST_MASK_UNSPECIFIED, 0);
    assert_int_equal(attest_judge_output(&c, logits(&c), &exp, cand, ATTEST_MASK_UNSPECIFIED, p,
                                         NULL, &m),
                     ATTEST_OK);
    assert_int_equal(m.count, 2);
    assert_int_equal(m.failed_gates, 0);
    attest_case_free(&c);
    attest_policy_free(p);
}

/* With bound 0 the element tolerance is half a float32 step at 1 (2^-24), so a candidate
 * 2^-10 above an exact 1.0 fails. Expected values rounded to bf16 may themselves be half a bf16
 * step (2^-8) off: the tolerance grows past 2^-8 and the same candidate passes. */
static void test_rounded_expected_widens_bound(void **state)
{
    (void)state;
    attest_policy *p = parse(BOUND_POLICY);
    const double exp_v[4] = {1.0, 1.0, -INFINITY, -INFINITY};
    const double bound[4] = {0, 0, 0, 0};
    const float cand[4] = {1.0f + 0x1p-10f, 1.0f, -INFINITY, -INFINITY};
    attest_case c;
    attest_tensor_metrics m;
    attest_judge_scratch *s = NULL;
    assert_ok(attest_judge_scratch_new(&s));
    make_case(&c, ATTEST_MASK_NEG_INF, 0);

    const attest_judge_expected exact = {exp_v, ATTEST_DTYPE_F64, bound};
    assert_int_equal(attest_judge_output(&c, logits(&c), &exact, cand, ATTEST_MASK_NEG_INF, p, s, &m),
                     ATTEST_OK);
    assert_int_equal(m.element_failures, 1);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT));

    const attest_judge_expected rounded = {exp_v, ATTEST_DTYPE_BF16, bound};
    assert_int_equal(attest_judge_output(&c, logits(&c), &rounded, cand, ATTEST_MASK_NEG_INF, p, s,
                                         &m),
                     ATTEST_OK);
    assert_int_equal(m.element_failures, 0);
    assert_int_equal(m.failed_gates, 0);

    attest_judge_scratch_free(s);
    attest_case_free(&c);
    attest_policy_free(p);
}

/* The top-k gate runs on the logits when the case asks for a top-k (and only then): the
 * candidate's best position 0 is not the expected one (position 1, 2.0 > 1.5), recall 0. */
static void test_topk_gate_runs_when_asked(void **state)
{
    (void)state;
    attest_policy *p = parse(ATOL_POLICY);
    const double exp_v[4] = {1.5, 2.0, -INFINITY, -INFINITY};
    const float cand[4] = {3.0f, 2.0f, -INFINITY, -INFINITY};
    const attest_judge_expected exp = {exp_v, ATTEST_DTYPE_F64, NULL};
    attest_case c;
    attest_tensor_metrics m;

    make_case(&c, ATTEST_MASK_NEG_INF, 0);
    assert_int_equal(attest_judge_output(&c, logits(&c), &exp, cand, ATTEST_MASK_NEG_INF, p, NULL, &m),
                     ATTEST_OK);
    assert_int_equal(m.topk_checked, 0);
    assert_false(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));
    attest_case_free(&c);

    make_case(&c, ATTEST_MASK_NEG_INF, 1);
    assert_int_equal(attest_judge_output(&c, logits(&c), &exp, cand, ATTEST_MASK_NEG_INF, p, NULL, &m),
                     ATTEST_OK);
    assert_int_equal(m.topk_checked, 1);
    assert_true(m.topk_recall == 0.0);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));
    attest_case_free(&c);
    attest_policy_free(p);
}

/* A policy without the output is ATTEST_ERR_NOT_FOUND naming policy, kernel and output. */
static void test_missing_tolerance(void **state)
{
    (void)state;
    attest_policy *p = parse(MLA_ONLY_POLICY);
    const double exp_v[4] = {0};
    const float cand[4] = {0};
    const attest_judge_expected exp = {exp_v, ATTEST_DTYPE_F64, NULL};
    attest_case c;
    attest_tensor_metrics m;
    make_case(&c, ATTEST_MASK_NEG_INF, 0);
    assert_int_equal(attest_judge_output(&c, logits(&c), &exp, cand, ATTEST_MASK_NEG_INF, p, NULL, &m),
                     ATTEST_ERR_NOT_FOUND);
    assert_string_equal(attest_last_error(), "policy 't' has no tolerance for indexer output 'logits'");
    attest_case_free(&c);
    attest_policy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mask_past_row_length),
        cmocka_unit_test(test_rounded_expected_widens_bound),
        cmocka_unit_test(test_topk_gate_runs_when_asked),
        cmocka_unit_test(test_missing_tolerance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
