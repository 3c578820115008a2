/* Tests of the top-k family: the judge's rules on hand-made rows (expected verdicts worked out
 * by hand), the reference selection, the generator's coverage, and the verdict gates both ways
 * (every correct built-in passes thousands of generated cases, every mutant fails with the check
 * it breaks). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/reference_topk.h"
#include "attest/topk.h"
#include "attest/topk_candidates.h"
#include "topk_run.h"

#define BIT(c) (1u << (c))

/* One request, one row of width 8, k = 4, length 6; logits
 *   pos:    0    1    2    3    4    5  | 6    7 (past the length)
 *   logit:  1    5    3    3    NaN  3  | 9    9
 * Reference (ties to the lower position, NaN never): 5 (pos 1), then the three 3s
 * (pos 2, 3, 5): {1, 2, 3, 5}. Block table maps logical block 0 to
 * physical block 2 (physical = 128 + pos). */
static void hand_case(attest_topk_case *c, int32_t len)
{
    memset(c, 0, sizeof *c);
    c->p = (attest_topk_params){.b = 1, .next_n = 1, .width = 8, .k = 4, .blocks_per_req = 1,
                                .num_blocks = 3};
    assert_ok(attest_topk_case_alloc(c));
    const float v[8] = {1, 5, 3, 3, NAN, 3, 9, 9};
    memcpy(c->logits, v, sizeof v);
    c->context_lens[0] = len;
    c->block_table[0] = 2;
}

static uint32_t judge(const attest_topk_case *c, const int32_t *ref, const int32_t *idx,
                      const int32_t *phys, attest_topk_order order, attest_topk_rule rule)
{
    attest_topk_verdict v;
    assert_ok(attest_topk_judge(c, ref, idx, phys, order, rule, &v));
    if (v.failed) assert_true(v.first_row >= 0 && v.detail[0] != '\0');
    return v.failed;
}

static const int32_t ref6[4] = {1, 2, 3, 5};

/* The reference selection of the hand case is worked out above; its physical image is 128 + pos. */
static void test_reference_hand_row(void **state)
{
    (void)state;
    attest_topk_case c;
    hand_case(&c, 6);
    int32_t ref[4], phys[4];
    assert_ok(attest_ref_topk_case(&c, ATTEST_TOPK_BY_SCORE, ref, phys));
    assert_memory_equal(ref, ref6, sizeof ref);
    const int32_t want_phys[4] = {129, 130, 131, 133};
    assert_memory_equal(phys, want_phys, sizeof phys);
    /* Length 3 <= k: by score {1, 2, 0, -1}; short identity {0, 1, 2, -1}. */
    c.context_lens[0] = 3;
    assert_ok(attest_ref_topk_case(&c, ATTEST_TOPK_BY_SCORE, ref, NULL));
    const int32_t by_score[4] = {1, 2, 0, -1};
    assert_memory_equal(ref, by_score, sizeof ref);
    assert_ok(attest_ref_topk_case(&c, ATTEST_TOPK_SHORT_IDENTITY, ref, NULL));
    const int32_t identity[4] = {0, 1, 2, -1};
    assert_memory_equal(ref, identity, sizeof ref);
    attest_topk_case_free(&c);
}

/* Equal scores may come in any order and be exchanged for each other; anything else fails. */
static void test_judge_ties_and_recall(void **state)
{
    (void)state;
    attest_topk_case c;
    hand_case(&c, 6);
    const int32_t exact[4] = {1, 2, 3, 5}, reordered_ties[4] = {1, 5, 3, 2};
    assert_int_equal(judge(&c, ref6, exact, NULL, ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_BY_SCORE), 0);
    assert_int_equal(
        judge(&c, ref6, reordered_ties, NULL, ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_BY_SCORE), 0);
    /* Position 0 (logit 1) in place of a 3: not a tie. */
    const int32_t swapped[4] = {1, 2, 3, 0};
    assert_int_equal(judge(&c, ref6, swapped, NULL, ATTEST_TOPK_ORDER_ANY, ATTEST_TOPK_BY_SCORE),
                     BIT(ATTEST_TOPK_CHECK_RECALL));
    attest_topk_case_free(&c);
}

/* Range (a masked position), duplicates, NaN, and the -1 padding rules. */
static void test_judge_contract_rules(void **state)
{
    (void)state;
    attest_topk_case c;
    hand_case(&c, 6);
    const attest_topk_order any = ATTEST_TOPK_ORDER_ANY;
    const attest_topk_rule rule = ATTEST_TOPK_BY_SCORE;
    const int32_t masked[4] = {6, 1, 2, 3};    /* position 6 is past the length (logit 9) */
    const int32_t dup[4] = {1, 2, 2, 3};
    const int32_t nan_pick[4] = {4, 1, 2, 3};  /* position 4 holds NaN */
    const int32_t hole[4] = {1, -1, 2, 3};     /* -1 before a selection */
    const int32_t short_by_one[4] = {1, 2, 3, -1};
    const int32_t poison[4] = {1, 2, 3, ATTEST_TOPK_POISON};
    assert_true(judge(&c, ref6, masked, NULL, any, rule) & BIT(ATTEST_TOPK_CHECK_RANGE));
    assert_true(judge(&c, ref6, dup, NULL, any, rule) & BIT(ATTEST_TOPK_CHECK_DUPLICATE));
    assert_true(judge(&c, ref6, nan_pick, NULL, any, rule) & BIT(ATTEST_TOPK_CHECK_NONFINITE));
    assert_true(judge(&c, ref6, hole, NULL, any, rule) & BIT(ATTEST_TOPK_CHECK_PADDING));
    assert_true(judge(&c, ref6, short_by_one, NULL, any, rule) & BIT(ATTEST_TOPK_CHECK_PADDING));
    assert_true(judge(&c, ref6, poison, NULL, any, rule) & BIT(ATTEST_TOPK_CHECK_RANGE));
    /* A -inf logit is no choice either, even to fill a slot the reference leaves empty. */
    c.logits[0] = -INFINITY;
    const int32_t ref3[4] = {1, 2, -1, -1}, with_neginf[4] = {1, 2, 0, -1}, ok3[4] = {2, 1, -1, -1};
    c.context_lens[0] = 3;
    assert_true(judge(&c, ref3, with_neginf, NULL, any, rule) & BIT(ATTEST_TOPK_CHECK_NONFINITE));
    assert_int_equal(judge(&c, ref3, ok3, NULL, any, rule), 0);
    attest_topk_case_free(&c);
}

/* The order contract is the candidate's own: a set in position order passes as "any" and fails
 * as "sorted". */
static void test_judge_order_contract(void **state)
{
    (void)state;
    attest_topk_case c;
    hand_case(&c, 6);
    const int32_t by_position[4] = {1, 2, 3, 5}, rising[4] = {2, 1, 3, 5};
    assert_int_equal(
        judge(&c, ref6, by_position, NULL, ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_BY_SCORE), 0);
    assert_int_equal(judge(&c, ref6, rising, NULL, ATTEST_TOPK_ORDER_ANY, ATTEST_TOPK_BY_SCORE), 0);
    assert_int_equal(judge(&c, ref6, rising, NULL, ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_BY_SCORE),
                     BIT(ATTEST_TOPK_CHECK_ORDER));
    attest_topk_case_free(&c);
}

/* Short rows: under short-identity a row with len <= k is 0..len-1 whatever its scores. */
static void test_judge_short_rows(void **state)
{
    (void)state;
    attest_topk_case c;
    hand_case(&c, 3);
    const int32_t identity[4] = {0, 1, 2, -1}, by_score[4] = {1, 2, 0, -1};
    const int32_t permuted[4] = {2, 0, 1, -1};
    const attest_topk_rule id = ATTEST_TOPK_SHORT_IDENTITY, bs = ATTEST_TOPK_BY_SCORE;
    assert_int_equal(judge(&c, identity, identity, NULL, ATTEST_TOPK_ORDER_SORTED, id), 0);
    assert_int_equal(judge(&c, identity, by_score, NULL, ATTEST_TOPK_ORDER_SORTED, id),
                     BIT(ATTEST_TOPK_CHECK_SHORT_ROW));
    assert_int_equal(judge(&c, identity, permuted, NULL, ATTEST_TOPK_ORDER_ANY, id), 0);
    assert_int_equal(judge(&c, by_score, by_score, NULL, ATTEST_TOPK_ORDER_SORTED, bs), 0);
    /* The identity includes a NaN position when the row has one (len = k = 4). */
    c.logits[0] = NAN;
    c.context_lens[0] = 4;
    const int32_t ident4[4] = {0, 1, 2, 3};
    assert_int_equal(judge(&c, ident4, ident4, NULL, ATTEST_TOPK_ORDER_SORTED, id), 0);
    attest_topk_case_free(&c);
}

/* Physical indices: each must be the block table's image of its logical position; physical-only
 * outputs are mapped back, and one in no block of the request fails translation. */
static void test_judge_translation(void **state)
{
    (void)state;
    attest_topk_case c;
    hand_case(&c, 6);
    const int32_t idx[4] = {1, 2, 3, 5}, good[4] = {129, 130, 131, 133};
    const int32_t off_by_one[4] = {129, 130, 131, 69}, foreign[4] = {129, 130, 131, 5};
    const attest_topk_order any = ATTEST_TOPK_ORDER_ANY;
    const attest_topk_rule rule = ATTEST_TOPK_BY_SCORE;
    assert_int_equal(judge(&c, ref6, idx, good, any, rule), 0);
    assert_int_equal(judge(&c, ref6, NULL, good, any, rule), 0);
    assert_int_equal(judge(&c, ref6, idx, off_by_one, any, rule), BIT(ATTEST_TOPK_CHECK_TRANSLATION));
    assert_true(judge(&c, ref6, NULL, foreign, any, rule) & BIT(ATTEST_TOPK_CHECK_TRANSLATION));
    attest_topk_verdict v;
    assert_int_equal(attest_topk_judge(&c, ref6, NULL, NULL, any, rule, &v),
                     ATTEST_ERR_INVALID_ARGUMENT);
    attest_topk_case_free(&c);
}

/* The same seed gives the same case; the generator reaches ties across the k-th place, NaN and
 * -inf in the length, +inf, short rows, lengths at block edges and winning values past the
 * length. */
static void test_generator_coverage(void **state)
{
    (void)state;
    attest_topk_gen_bounds g = attest_topk_gen_defaults();
    attest_topk_case a, b;
    assert_ok(attest_topk_generate(42, &g, &a));
    assert_ok(attest_topk_generate(42, &g, &b));
    assert_memory_equal(&a.p, &b.p, sizeof a.p);
    assert_memory_equal(a.logits, b.logits,
                        (size_t)attest_topk_rows(&a.p) * (size_t)a.p.width * sizeof(float));
    attest_topk_case_free(&a);
    attest_topk_case_free(&b);
    int boundary_ties = 0, nan_in = 0, neginf_in = 0, posinf_in = 0, short_rows = 0, edges = 0,
        winning_past = 0;
    for (uint64_t i = 0; i < 500; i++) {
        attest_topk_case c;
        assert_ok(attest_topk_generate(attest_topk_case_seed(7, i), &g, &c));
        int32_t *ref = malloc((size_t)attest_topk_rows(&c.p) * (size_t)c.p.k * sizeof *ref);
        assert_non_null(ref);
        assert_ok(attest_ref_topk_case(&c, ATTEST_TOPK_BY_SCORE, ref, NULL));
        for (int32_t r = 0; r < attest_topk_rows(&c.p); r++) {
            const int32_t len = attest_topk_row_length(&c, r);
            const float *row = c.logits + (size_t)r * (size_t)c.p.width;
            const int32_t *sel = ref + (size_t)r * (size_t)c.p.k;
            if (len <= c.p.k) short_rows++;
            if (len > 0 && (len % 64 == 0 || len % 64 == 1 || len % 64 == 63)) edges++;
            for (int32_t t = 0; t < c.p.width; t++) {
                if (t < len) {
                    nan_in += isnan(row[t]) != 0;
                    neginf_in += row[t] == -INFINITY;
                    posinf_in += row[t] == INFINITY;
                } else {
                    winning_past += isnan(row[t]) || row[t] > 1e29f;
                }
            }
            /* A tie across the k-th place: an unselected valid position equal to the last pick. */
            if (sel[c.p.k - 1] >= 0) {
                const float kth = row[sel[c.p.k - 1]];
                int tie = 0;
                for (int32_t t = 0; t < len && !tie; t++) {
                    int picked = 0;
                    for (int32_t s = 0; s < c.p.k && !picked; s++) picked = sel[s] == t;
                    tie = !picked && row[t] == kth;
                }
                boundary_ties += tie;
            }
        }
        free(ref);
        attest_topk_case_free(&c);
    }
    assert_true(boundary_ties > 20);
    assert_true(nan_in > 20 && neginf_in > 20 && posinf_in > 5);
    assert_true(short_rows > 50 && edges > 50 && winning_past > 1000);
    attest_topk_gen_bounds bad = g;
    bad.max_k = 0;
    attest_topk_case c;
    assert_int_equal(attest_topk_generate(1, &bad, &c), ATTEST_ERR_INVALID_ARGUMENT);
}

#define GATE_CASES 2000

/* Every correct built-in passes GATE_CASES generated cases. */
static void test_correct_candidates_pass(void **state)
{
    (void)state;
    const attest_topk_candidate *const *list;
    const size_t n = attest_topk_builtin_candidates(&list);
    int correct = 0;
    for (size_t j = 0; j < n; j++) {
        if (attest_topk_expected_failure(list[j]) >= 0) continue;
        correct++;
        for (uint64_t i = 0; i < GATE_CASES; i++) {
            attest_topk_case c;
            assert_ok(attest_topk_generate(attest_topk_case_seed(11, i), NULL, &c));
            attest_topk_verdict v;
            assert_ok(attest_topk_judge_candidate(list[j], &c, &v));
            if (v.failed) print_error("%s case %llu: %s\n", list[j]->name, (unsigned long long)i,
                                      v.detail);
            assert_int_equal(v.failed, 0);
            attest_topk_case_free(&c);
        }
    }
    assert_true(correct >= 4);
}

/* Every mutant fails, and the failing checks name the rule it breaks (on more than 10 of 500
 * cases). */
static void test_mutants_fail(void **state)
{
    (void)state;
    const attest_topk_candidate *const *list;
    const size_t n = attest_topk_builtin_candidates(&list);
    int mutants = 0;
    for (size_t j = 0; j < n; j++) {
        const int expect = attest_topk_expected_failure(list[j]);
        if (expect < 0) continue;
        mutants++;
        int failed = 0, named = 0;
        for (uint64_t i = 0; i < 500; i++) {
            attest_topk_case c;
            assert_ok(attest_topk_generate(attest_topk_case_seed(13, i), NULL, &c));
            attest_topk_verdict v;
            assert_ok(attest_topk_judge_candidate(list[j], &c, &v));
            failed += v.failed != 0;
            named += (v.failed & BIT(expect)) != 0;
            attest_topk_case_free(&c);
        }
        print_message("%-30s fails %d of 500 cases, %d name %s\n", list[j]->name, failed, named,
                      attest_topk_check_name((attest_topk_check)expect));
        assert_true(named > 10);
    }
#ifdef ATTEST_WITH_MUTANTS
    assert_int_equal(mutants, 5);
#endif
}

static int run_nothing(const attest_topk_args *a) { (void)a; return 0; }
static int run_fails(const attest_topk_args *a) { (void)a; return 3; }

/* A candidate that writes nothing leaves the poison, which is out of every row's range; one that
 * returns nonzero fails the run check. */
static void test_unwritten_and_run_failure(void **state)
{
    (void)state;
    attest_topk_candidate lazy = {"lazy", "writes nothing", ATTEST_TOPK_ORDER_ANY,
                                  ATTEST_TOPK_OUT_LOGICAL, ATTEST_TOPK_BY_SCORE, run_nothing};
    attest_topk_case c;
    hand_case(&c, 6);
    attest_topk_verdict v;
    assert_ok(attest_topk_judge_candidate(&lazy, &c, &v));
    assert_true(v.failed & BIT(ATTEST_TOPK_CHECK_RANGE));
    lazy.run = run_fails;
    assert_ok(attest_topk_judge_candidate(&lazy, &c, &v));
    assert_true(v.failed & BIT(ATTEST_TOPK_CHECK_RUN));
    char buf[64];
    attest_topk_check_mask_string(BIT(ATTEST_TOPK_CHECK_RECALL) | BIT(ATTEST_TOPK_CHECK_ORDER), buf,
                                  sizeof buf);
    assert_string_equal(buf, "recall+order");
    attest_topk_case_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_hand_row),
        cmocka_unit_test(test_judge_ties_and_recall),
        cmocka_unit_test(test_judge_contract_rules),
        cmocka_unit_test(test_judge_order_contract),
        cmocka_unit_test(test_judge_short_rows),
        cmocka_unit_test(test_judge_translation),
        cmocka_unit_test(test_generator_coverage),
        cmocka_unit_test(test_correct_candidates_pass),
        cmocka_unit_test(test_mutants_fail),
        cmocka_unit_test(test_unwritten_and_run_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
