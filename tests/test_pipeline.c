/* Tests of the DSA chain as one case (attest/pipeline.h) and its seam judge
 * (cli/pipeline_judge.h): the generator is deterministic, puts the decode cache on the
 * indexer's blocks (held positions written, the rest poison) and plants ties; the chain check
 * names the field that breaks it; the reference chain passes; a mutant of each stage breaks its
 * own seam; a top-k breaking ties the other way passes and its selection's effect is measured;
 * an indexer a lenient policy lets through breaks the end-to-end seam. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/layout.h"
#include "attest/pipeline.h"
#include "attest/policy.h"
#include "attest/registry.h"
#include "attest/topk_candidates.h"
#include "pipeline_judge.h"

static const void *data_of(const attest_case *c, const char *name)
{
    const attest_tensor *t = attest_case_tensor_const(c, name);
    assert_non_null(t);
    return t->data;
}

static size_t bytes_of(const attest_case *c, const char *name)
{
    return attest_case_tensor_const(c, name)->nbytes;
}

/* The same seed gives the same bytes in both stages; another seed other bytes. */
static void test_generate_deterministic(void **state)
{
    (void)state;
    const attest_pipeline_gen_bounds g = attest_pipeline_gen_defaults();
    attest_pipeline_case a, b, c;
    assert_ok(attest_pipeline_generate(7, &g, &a));
    assert_ok(attest_pipeline_generate(7, &g, &b));
    assert_ok(attest_pipeline_generate(8, &g, &c));
    assert_int_equal(a.k, b.k);
    const char *names[] = {"cache_bytes", "q_bf16"};
    assert_memory_equal(data_of(&a.indexer, "cache_bytes"), data_of(&b.indexer, "cache_bytes"),
                        bytes_of(&a.indexer, "cache_bytes"));
    for (int i = 0; i < 2; i++)
        assert_memory_equal(data_of(&a.decode, names[i]), data_of(&b.decode, names[i]),
                            bytes_of(&a.decode, names[i]));
    assert_true(bytes_of(&a.decode, "cache_bytes") != bytes_of(&c.decode, "cache_bytes") ||
                memcmp(data_of(&a.decode, "cache_bytes"), data_of(&c.decode, "cache_bytes"),
                       bytes_of(&a.decode, "cache_bytes")) != 0);
    attest_pipeline_case_free(&a);
    attest_pipeline_case_free(&b);
    attest_pipeline_case_free(&c);
}

/* 1 when every fp8 byte of token `phys` of the decode cache is the 0xFF poison. */
static int token_poisoned(const attest_pipeline_case *pc, int32_t phys)
{
    attest_layout L;
    const attest_mla_params *m = &pc->decode.params.mla;
    assert_ok(attest_layout_make(m->layout, (uint32_t)m->page_size, (uint64_t)m->page_stride, &L));
    const uint8_t *pool = data_of(&pc->decode, "cache_bytes");
    attest_token_offsets o;
    assert_ok(attest_layout_token_offsets(&L, (uint32_t)(phys % 64), &o));
    const uint8_t *p = pool + (size_t)(phys / 64) * L.page_stride + o.fp8;
    for (uint32_t i = 0; i < L.fp8_dim; i++)
        if (p[i] != 0xFF) return 0;
    return 1;
}

/* Position t of request b is the same physical token in both caches: written where the request
 * holds it, poison past its length; the shapes are the chain's; every index starts as -1. */
static void test_generate_shares_blocks(void **state)
{
    (void)state;
    const attest_pipeline_gen_bounds g = attest_pipeline_gen_defaults();
    int past_seen = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        attest_pipeline_case pc;
        assert_ok(attest_pipeline_generate(seed, &g, &pc));
        assert_ok(attest_pipeline_check(&pc));
        const attest_indexer_params *x = &pc.indexer.params.indexer;
        const attest_mla_params *m = &pc.decode.params.mla;
        assert_int_equal(m->page_size, 64);
        assert_int_equal(m->num_pages, x->num_blocks);
        assert_int_equal(m->s_q, x->next_n);
        assert_int_equal(m->topk, pc.k);
        assert_int_equal(x->topk, pc.k);
        const int32_t *lens = data_of(&pc.indexer, "context_lens");
        const int32_t *table = data_of(&pc.indexer, "block_table");
        for (int32_t b = 0; b < x->b; b++)
            for (int32_t t = 0; t < x->blocks_per_req * 64; t++) {
                const int32_t len = lens[b] < x->max_len ? lens[b] : x->max_len;
                /* past the request's blocks the row holds -1 or stale ids (docs/kernels.md) */
                if (t / 64 >= (len + 63) / 64) continue;
                const int32_t phys = table[(size_t)b * x->blocks_per_req + t / 64] * 64 + t % 64;
                if (t < len) assert_false(token_poisoned(&pc, phys));
                else {
                    assert_true(token_poisoned(&pc, phys));
                    past_seen = 1;
                }
            }
        const int32_t *idx = data_of(&pc.decode, "indices");
        for (size_t i = 0; i < attest_tensor_count(attest_case_tensor_const(&pc.decode, "indices")); i++)
            assert_int_equal(idx[i], -1);
        attest_pipeline_case_free(&pc);
    }
    assert_true(past_seen);
}

/* Some requests repeat their keys (bytes of position t equal those of t - p for every t). */
static void test_generate_plants_ties(void **state)
{
    (void)state;
    const attest_pipeline_gen_bounds g = attest_pipeline_gen_defaults();
    attest_layout L;
    assert_ok(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, 64, 0, &L));
    int periodic = 0;
    for (uint64_t seed = 1; seed <= 60 && !periodic; seed++) {
        attest_pipeline_case pc;
        assert_ok(attest_pipeline_generate(seed, &g, &pc));
        const attest_indexer_params *x = &pc.indexer.params.indexer;
        const uint8_t *pool = data_of(&pc.indexer, "cache_bytes");
        const int32_t *lens = data_of(&pc.indexer, "context_lens");
        const int32_t *table = data_of(&pc.indexer, "block_table");
        for (int32_t b = 0; b < x->b && !periodic; b++) {
            const int32_t len = lens[b] < x->max_len ? lens[b] : x->max_len;
            if (len < 70) continue;
            for (int32_t p = 1; p <= 5 && !periodic; p++) {
                int same = 1;
                for (int32_t t = p; t < len && same; t++) {
                    attest_token_offsets a, o;
                    assert_ok(attest_layout_token_offsets(&L, (uint32_t)(t % 64), &a));
                    assert_ok(attest_layout_token_offsets(&L, (uint32_t)((t - p) % 64), &o));
                    const uint8_t *pa = pool + (size_t)table[(size_t)b * x->blocks_per_req + t / 64] * L.page_stride;
                    const uint8_t *po = pool + (size_t)table[(size_t)b * x->blocks_per_req + (t - p) / 64] * L.page_stride;
                    same = memcmp(pa + a.fp8, po + o.fp8, L.fp8_dim) == 0;
                }
                periodic = same;
            }
        }
        attest_pipeline_case_free(&pc);
    }
    assert_true(periodic);
}

/* A chain whose decode pool or shape disagrees with the indexer's is refused, naming the field. */
static void test_check_names_the_field(void **state)
{
    (void)state;
    const attest_pipeline_gen_bounds g = attest_pipeline_gen_defaults();
    attest_pipeline_case pc;
    assert_ok(attest_pipeline_generate(3, &g, &pc));
    pc.decode.params.mla.num_pages++;
    assert_int_equal(attest_pipeline_check(&pc), ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), "num_pages"));
    pc.decode.params.mla.num_pages--;
    pc.k++;
    assert_int_equal(attest_pipeline_check(&pc), ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), "topk"));
    attest_pipeline_case_free(&pc);
}

/* Judges seeds 1..n with the stages named (NULL: reference); returns the cases that failed and
 * counts, per seam, the cases that broke there. */
static int judge_seeds(const char *indexer, const char *topk, const char *decode, int n,
                       int broke[5], int *ties, double *effect)
{
    attest_policy *policy = NULL;
    assert_ok(attest_policy_default(&policy));
    pipe_stages s;
    memset(&s, 0, sizeof s);
    s.policy = policy;
    if (indexer) s.indexer = attest_builtin_find(indexer);
    if (decode) s.decode = attest_builtin_find(decode);
    if (topk) s.topk = attest_topk_builtin_find(topk);
    assert_true((indexer == NULL) == (s.indexer == NULL) && (decode == NULL) == (s.decode == NULL) &&
                (topk == NULL) == (s.topk == NULL));
    assert_ok(pipe_stages_open(&s, 10.0, 0));
    const attest_pipeline_gen_bounds g = attest_pipeline_gen_defaults();
    int failed = 0;
    memset(broke, 0, 5 * sizeof *broke);
    *ties = 0;
    *effect = 0;
    for (int i = 0; i < n; i++) {
        attest_pipeline_case pc;
        pipe_result r;
        assert_ok(attest_pipeline_generate(attest_pipeline_case_seed(5, (uint64_t)i), &g, &pc));
        assert_ok(pipe_judge(&s, &pc, &r));
        if (r.failed) {
            failed++;
            broke[r.broke]++;
            assert_true(r.failed & (1u << r.broke));
            assert_true(r.detail[r.broke - 1][0] != '\0');
        }
        *ties += r.rows_ties;
        if (r.e2e_out_max > *effect) *effect = r.e2e_out_max;
        attest_pipeline_case_free(&pc);
    }
    pipe_stages_close(&s);
    attest_policy_free(policy);
    return failed;
}

static void test_judge_correct_chains_pass(void **state)
{
    (void)state;
    int broke[5], ties;
    double effect;
    assert_int_equal(judge_seeds(NULL, NULL, NULL, 40, broke, &ties, &effect), 0);
    assert_int_equal(ties, 0); /* the reference chain is its own reference */
    assert_int_equal(judge_seeds("cpu-indexer", "cpu-topk-unsorted", "cpu-mla-decode", 60, broke,
                                 &ties, &effect), 0);
    /* Equal scores to the higher position: other tokens within ties, never a failure, and the
     * output they cause is measured. */
    assert_int_equal(judge_seeds("cpu-indexer", "cpu-topk-ties-high", "cpu-mla-decode", 60, broke,
                                 &ties, &effect), 0);
    assert_true(ties > 0);
    assert_true(effect > 0);
}

static void test_judge_mutants_break_their_seam(void **state)
{
    (void)state;
    const struct {
        const char *stage[3];
        pipe_seam seam;
    } m[] = {
        {{"mutant-indexer-scale-off-by-one", "cpu-topk", "cpu-mla-decode"}, PIPE_SEAM_INDEXER},
        {{"cpu-indexer", "mutant-topk-page-off-by-one", "cpu-mla-decode"}, PIPE_SEAM_TOPK},
        {{"cpu-indexer", "mutant-topk-claims-sorted", "cpu-mla-decode"}, PIPE_SEAM_TOPK},
        {{"cpu-indexer", "cpu-topk", "mutant-mla-scale-off-by-one"}, PIPE_SEAM_DECODE},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        int broke[5], ties;
        double effect;
        const int failed = judge_seeds(m[i].stage[0], m[i].stage[1], m[i].stage[2], 30, broke,
                                       &ties, &effect);
        assert_true(failed > 0);
        assert_int_equal(broke[m[i].seam], failed); /* every failure names that seam */
    }
}

/* cpu-indexer, then the last valid position of every row raised above the row's best: a finite
 * error the indexer seam fails under the default policy. */
static int run_promote_last(void *ctx, const attest_kernel_args *a)
{
    const int rc = attest_builtin_find("cpu-indexer")->run(ctx, a);
    const attest_indexer_args *x = &a->u.indexer;
    for (int32_t row = 0; row < x->params->b * x->params->next_n; row++) {
        const int32_t len = attest_indexer_row_length(x->params, x->context_lens, row);
        float *l = x->logits + (size_t)row * x->params->max_len, best = 0;
        for (int32_t t = 0; t < len; t++)
            if (l[t] > best) best = l[t];
        if (len > 1) l[len - 1] = best + 1000.0f;
    }
    return rc;
}

/* A policy whose indexer gates let every element fail lets that indexer pass its seam; its
 * logits reorder the selection beyond ties, which only the end-to-end seam sees. */
static void test_end_to_end_seam(void **state)
{
    (void)state;
    attest_candidate promote = *attest_builtin_find("cpu-indexer");
    promote.name = "test-promote-last";
    promote.run = run_promote_last;
    static const char lenient[] =
        "{\"schema\": 1, \"name\": \"lenient-logits\", \"version\": \"1\", \"description\": \"test\","
        " \"entries\": [{\"kernel\": \"indexer\", \"output\": \"logits\", \"bound_factor\": 1,"
        " \"accumulation\": \"fp32\", \"max_fail_fraction\": 1.0, \"cos_diff_max\": 2.0,"
        " \"nmse_max\": null, \"max_code_distance\": null, \"topk_min_recall\": null,"
        " \"source\": \"test: element failures allowed\"}]}";
    attest_policy *policies[2] = {NULL, NULL};
    assert_ok(attest_policy_default(&policies[0]));
    assert_ok(attest_policy_parse(lenient, sizeof lenient - 1, "lenient", &policies[1]));
    const attest_pipeline_gen_bounds g = attest_pipeline_gen_defaults();
    for (int p = 0; p < 2; p++) {
        pipe_stages s;
        memset(&s, 0, sizeof s);
        s.policy = policies[p];
        s.indexer = &promote;
        assert_ok(pipe_stages_open(&s, 10.0, 0));
        int broke[5] = {0};
        for (int i = 0; i < 20; i++) {
            attest_pipeline_case pc;
            pipe_result r;
            assert_ok(attest_pipeline_generate(attest_pipeline_case_seed(9, (uint64_t)i), &g, &pc));
            assert_ok(pipe_judge(&s, &pc, &r));
            broke[r.broke]++;
            if (r.broke == PIPE_SEAM_END_TO_END) assert_non_null(strstr(r.detail[3], "beyond ties"));
            attest_pipeline_case_free(&pc);
        }
        pipe_stages_close(&s);
        if (p == 0) assert_true(broke[PIPE_SEAM_INDEXER] > 0 && broke[PIPE_SEAM_END_TO_END] == 0);
        else assert_true(broke[PIPE_SEAM_INDEXER] == 0 && broke[PIPE_SEAM_END_TO_END] > 0);
    }
    attest_policy_free(policies[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate_deterministic),
        cmocka_unit_test(test_generate_shares_blocks),
        cmocka_unit_test(test_generate_plants_ties),
        cmocka_unit_test(test_check_names_the_field),
        cmocka_unit_test(test_judge_correct_chains_pass),
        cmocka_unit_test(test_judge_mutants_break_their_seam),
        cmocka_unit_test(test_end_to_end_seam),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
