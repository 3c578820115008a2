/* The indexer's compare mask and top-k gate (compare.h: attest_indexer_valid_mask,
 * attest_indexer_topk_gate) on small hand-built cases; every expected value is derived by hand
 * in the comments from the MTP causal rule (docs/kernels.md section 5) and attest_compare_topk's recall. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/case.h"
#include "attest/compare.h"
#include "attest/status.h"

#define PAD 1e9 /* past a row's length: selected only by a gate that reads past it */

/* An indexer case with context_lens set and every other tensor zeroed. */
static void make_case(attest_case *c, int32_t b, int32_t next_n, int32_t max_len,
                      const int32_t *lens, int32_t topk, attest_topk_rule rule)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_INDEXER;
    attest_indexer_params *p = &c->params.indexer;
    p->b = b;
    p->next_n = next_n;
    p->heads = 1;
    p->head_dim = 128;
    p->num_blocks = 1;
    p->blocks_per_req = 1;
    p->max_len = max_len;
    p->masking = ATTEST_MASK_UNSPECIFIED;
    p->topk = topk;
    p->topk_rule = rule;
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));
    attest_tensor *t = attest_case_tensor(c, "context_lens");
    assert_non_null(t);
    memcpy(t->data, lens, (size_t)b * sizeof *lens);
}

/* Exact ties only: no tie band, so a swapped position is a miss unless its score equals the
 * k-th reference score. */
static attest_tolerance exact_tol(void)
{
    attest_tolerance tol;
    memset(&tol, 0, sizeof tol);
    tol.topk_min_recall = 0.9;
    return tol;
}

static void gate(const attest_case *c, const double *ref, const float *cand,
                 attest_tensor_metrics *m)
{
    const attest_tolerance tol = exact_tol();
    memset(m, 0, sizeof *m); /* atol_effective 0: the band stays exact */
    assert_ok(attest_indexer_topk_gate(c, ref, cand, &tol, m));
    assert_int_equal(m->topk_checked, 1);
}

/* The mask follows the MTP causal rule with next_n = 2 and clamps to [0, max_len]. */
static void test_valid_mask_causal_rule(void **state)
{
    (void)state;
    /* L = 5: slot 0 sees t <= 3 (4), slot 1 t <= 4 (5); L = 1: slot 0 sees t <= -1 (0), slot 1
     * t <= 0 (1); L = 9: 8 and 9, both clamped to max_len 6. */
    const int32_t lens[3] = {5, 1, 9};
    const uint8_t expect[6][6] = {{1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 1, 0}, {0, 0, 0, 0, 0, 0},
                                  {1, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1}};
    attest_case c;
    make_case(&c, 3, 2, 6, lens, 2, ATTEST_TOPK_BY_SCORE);
    uint8_t mask[36];
    memset(mask, 0xAA, sizeof mask); /* every byte must be written */
    assert_ok(attest_indexer_valid_mask(&c, mask));
    assert_memory_equal(mask, expect, sizeof mask);
    attest_case_free(&c);
}

/* A case that is not an indexer case, or has no context_lens data, is an argument error. */
static void test_bad_cases_are_errors(void **state)
{
    (void)state;
    const int32_t lens[1] = {3};
    attest_case c;
    make_case(&c, 1, 1, 4, lens, 2, ATTEST_TOPK_BY_SCORE);
    uint8_t mask[4];
    double ref[4] = {0};
    float cand[4] = {0};
    attest_tolerance tol = exact_tol();
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    attest_case no_lens = c;
    attest_case_tensor(&no_lens, "context_lens")->data = NULL;
    assert_int_equal(attest_indexer_valid_mask(&no_lens, mask), ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(attest_indexer_topk_gate(&no_lens, ref, cand, &tol, &m),
                     ATTEST_ERR_INVALID_ARGUMENT);
    attest_case mla = c;
    mla.kernel = ATTEST_KERNEL_MLA_DECODE;
    assert_int_equal(attest_indexer_valid_mask(&mla, mask), ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(attest_indexer_topk_gate(&mla, ref, cand, &tol, &m),
                     ATTEST_ERR_INVALID_ARGUMENT);
    attest_clear_error();
    attest_case_free(&c);
}

/* A tie at the k-th candidate score goes to the lower position, and nothing past a row's
 * length is selected: recall 1 on both rows. */
static void test_gate_tie_to_lower_position(void **state)
{
    (void)state;
    /* L = 4, next_n = 2: row 0 has length 3, row 1 length 4; k = 2. */
    const int32_t lens[1] = {4};
    attest_case c;
    make_case(&c, 1, 2, 5, lens, 2, ATTEST_TOPK_BY_SCORE);
    /* Row 0: the reference picks {0, 1}. The candidate ties 5 at positions 1 and 2: the lower
     * wins, {0, 1}, recall 1 (position 2 instead would be a miss: its reference score 4.5 is
     * below the k-th, 5, so recall 0.5). Row 1: identical logits, recall 1. */
    const double ref[10] = {9, 5, 4.5, PAD, PAD, 1, 2, 3, 4, PAD};
    const float cand[10] = {9, 5, 5, PAD, PAD, 1, 2, 3, 4, PAD};
    attest_tensor_metrics m;
    gate(&c, ref, cand, &m);
    assert_true(m.topk_recall == 1.0);
    assert_int_equal(m.topk_worst_row, 0);
    assert_false(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));
    attest_case_free(&c);
}

/* A NaN candidate logit is never selected: the next score takes its slot. */
static void test_gate_nan_never_selected(void **state)
{
    (void)state;
    const int32_t lens[1] = {4};
    attest_case c;
    make_case(&c, 1, 2, 5, lens, 2, ATTEST_TOPK_BY_SCORE);
    /* Row 1: the reference picks {0, 1}; the candidate's NaN at 0 is skipped, {1, 2}: one
     * common position, and position 2 (reference 2) is below the k-th (3): recall 1/2. */
    const double ref[10] = {9, 5, 4.5, PAD, PAD, 4, 3, 2, 1, PAD};
    const float cand[10] = {9, 5, 4.5f, PAD, PAD, NAN, 3, 2, 1, PAD};
    attest_tensor_metrics m;
    gate(&c, ref, cand, &m);
    assert_true(m.topk_recall == 0.5);
    assert_int_equal(m.topk_worst_row, 1);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));
    attest_case_free(&c);
}

/* -inf ranks below every finite score but is not excluded (the harness's rule; the references'
 * attest_ref_topk_row_skip_neg_inf excludes it, which would give recall 1/2 here). */
static void test_gate_neg_inf_ranks_last(void **state)
{
    (void)state;
    const int32_t lens[1] = {5};
    attest_case c;
    make_case(&c, 1, 1, 5, lens, 4, ATTEST_TOPK_BY_SCORE);
    /* Reference {4, 0, 1, 2} (ties at -inf to the lower positions), candidate {0, 1, 2, 3}:
     * 3 common; the k-th reference score is -inf, so the candidate's extra 3 (-inf) is a tie
     * but the missed 4 (score 2) is not: recall 3/4. */
    const double ref[5] = {1, -INFINITY, -INFINITY, -INFINITY, 2};
    const float cand[5] = {1, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    attest_tensor_metrics m;
    gate(&c, ref, cand, &m);
    assert_true(m.topk_recall == 0.75);
    assert_int_equal(m.topk_worst_row, 0);
    attest_case_free(&c);
}

/* ATTEST_TOPK_SHORT_IDENTITY takes 0..len-1 when len <= k whatever the scores; by score, a NaN
 * reference row has nothing to select. */
static void test_gate_short_identity(void **state)
{
    (void)state;
    /* L = 1, next_n = 2: row 0 has length 0, row 1 length 1; k = 2. */
    const int32_t lens[1] = {1};
    const double ref[6] = {PAD, PAD, PAD, NAN, PAD, PAD};
    const float cand[6] = {PAD, PAD, PAD, 3, PAD, PAD};
    attest_case c;
    attest_tensor_metrics m;
    /* By score: row 0 both empty (1); row 1 reference empty, candidate {0} (0). */
    make_case(&c, 1, 2, 3, lens, 2, ATTEST_TOPK_BY_SCORE);
    gate(&c, ref, cand, &m);
    assert_true(m.topk_recall == 0.0);
    assert_int_equal(m.topk_worst_row, 1);
    assert_true(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));
    attest_case_free(&c);
    /* Short identity: row 1 is {0} on both sides (1). */
    make_case(&c, 1, 2, 3, lens, 2, ATTEST_TOPK_SHORT_IDENTITY);
    gate(&c, ref, cand, &m);
    assert_true(m.topk_recall == 1.0);
    assert_false(m.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));
    attest_case_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_mask_causal_rule),
        cmocka_unit_test(test_bad_cases_are_errors),
        cmocka_unit_test(test_gate_tie_to_lower_position),
        cmocka_unit_test(test_gate_nan_never_selected),
        cmocka_unit_test(test_gate_neg_inf_ranks_last),
        cmocka_unit_test(test_gate_short_identity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
