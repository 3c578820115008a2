/* Tests of the runner's verdicts from hand-made candidates: each integrity check (canaries,
 * input checksums, poison, re-runs), declines and failures, declared conventions, the top-k gate,
 * two-output cases, the reference phase, and usage errors; isolated and in-process alike.
 * Toy kernels and reference: runner_toys.h. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "runner_test_util.h"

/* --- candidates ------------------------------------------------------------------------- */

static int run_oob(void *ctx, const attest_kernel_args *a)
{
    run_good(ctx, a);
    const attest_indexer_params *p = a->u.indexer.params;
    a->u.indexer.logits[(size_t)p->b * p->next_n * p->max_len] = 1.0f; /* one past the end */
    return 0;
}

static int run_writes_input(void *ctx, const attest_kernel_args *a)
{
    run_good(ctx, a);
    ((uint8_t *)a->u.indexer.cache)[5] ^= 0x40;
    return 0;
}

static int run_skips(void *ctx, const attest_kernel_args *a)
{
    const attest_indexer_args *ia = &a->u.indexer;
    float keep;
    memcpy(&keep, &ia->logits[3], sizeof keep); /* the poison, as the harness left it */
    run_good(ctx, a);
    memcpy(&ia->logits[3], &keep, sizeof keep);
    return 0;
}

static int run_nondet(void *ctx, const attest_kernel_args *a)
{
    static int calls;
    run_good(ctx, a);
    a->u.indexer.logits[1] += (float)(calls++ % 2) * 0.5f;
    return 0;
}

static int run_fails(void *ctx, const attest_kernel_args *a)
{
    run_good(ctx, a);
    return 7;
}

static int supports_never(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    (void)a;
    return 0;
}

static int init_fails(void **ctx)
{
    *ctx = NULL;
    return 5;
}

/* Declares "unspecified" masking and writes garbage past each row's length. */
static int run_garbage_past(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    toy_indexer_logits(&a->u.indexer, 12345.0f);
    return 0;
}

/* Declares "unspecified" masking and writes the valid positions only, leaving the logits past
 * each row's length as the harness left them (its poison), as cuda-indexer-paged-fp8-noclean
 * does; `short_row0` also skips row 0's last valid position (a missed guard). */
static void write_valid_only(const attest_indexer_args *a, int short_row0)
{
    const attest_indexer_params *p = a->params;
    for (int32_t r = 0; r < p->b * p->next_n; r++) {
        const int32_t L = toy_row_len(p, a->context_lens, r) - (short_row0 && r == 0);
        for (int32_t t = 0; t < L; t++)
            a->logits[(size_t)r * p->max_len + t] =
                a->weights[(size_t)r * p->heads] * (float)(a->cache[t] + 1);
    }
}

static int run_tail_untouched(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    write_valid_only(&a->u.indexer, 0);
    return 0;
}

static int run_tail_untouched_short(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    write_valid_only(&a->u.indexer, 1);
    return 0;
}

/* Right values in reverse order of magnitude: the top-k sets differ. */
static int run_reversed(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    const attest_indexer_args *ia = &a->u.indexer;
    toy_indexer_logits(ia, -INFINITY);
    const attest_indexer_params *p = ia->params;
    for (int32_t r = 0; r < p->b; r++) {
        float *row = ia->logits + (size_t)r * p->max_len;
        const int32_t L = toy_row_len(p, ia->context_lens, r);
        for (int32_t t = 0; t < L / 2; t++) {
            float x = row[t];
            row[t] = row[L - 1 - t];
            row[L - 1 - t] = x;
        }
    }
    return 0;
}

/* Two findings at once: a wrong value, and a write past the end of the output. */
static int run_oob_wrong(void *ctx, const attest_kernel_args *a)
{
    run_oob(ctx, a);
    a->u.indexer.logits[0] += 1000.0f;
    return 0;
}

/* A wrong value on every run, and another that changes from run to run. */
static int run_nondet_wrong(void *ctx, const attest_kernel_args *a)
{
    run_nondet(ctx, a);
    a->u.indexer.logits[0] += 1000.0f;
    return 0;
}

/* A write past the end of the output and a changed input. */
static int run_oob_writes_input(void *ctx, const attest_kernel_args *a)
{
    run_oob(ctx, a);
    ((uint8_t *)a->u.indexer.cache)[5] ^= 0x40;
    return 0;
}

static int run_mla_skips(void *ctx, const attest_kernel_args *a)
{
    const attest_mla_args *m = &a->u.mla;
    uint16_t keep = m->out[7];
    run_good(ctx, a);
    m->out[7] = keep;
    return 0;
}

CANDIDATE(c_oob, "oob", IDX, .run = run_oob);
CANDIDATE(c_input, "writes-input", IDX, .run = run_writes_input);
CANDIDATE(c_skips, "skips", IDX, .run = run_skips);
CANDIDATE(c_nondet, "nondet", IDX, .run = run_nondet);
CANDIDATE(c_fails, "fails", IDX, .run = run_fails);
CANDIDATE(c_decline, "declines", IDX, .run = run_good, .supports = supports_never);
CANDIDATE(c_initfail, "init-fails", IDX, .run = run_good, .init = init_fails);
CANDIDATE(c_unspec, "unspecified", IDX, .run = run_garbage_past,
          .conventions = {.masking = ATTEST_MASK_UNSPECIFIED});
CANDIDATE(c_garbage, "garbage-neg-inf", IDX, .run = run_garbage_past);
CANDIDATE(c_tail, "tail-untouched", IDX, .run = run_tail_untouched,
          .conventions = {.masking = ATTEST_MASK_UNSPECIFIED});
CANDIDATE(c_tail_short, "tail-untouched-short", IDX, .run = run_tail_untouched_short,
          .conventions = {.masking = ATTEST_MASK_UNSPECIFIED});
CANDIDATE(c_tail_neg_inf, "tail-untouched-neg-inf", IDX, .run = run_tail_untouched);
CANDIDATE(c_reversed, "reversed", IDX, .run = run_reversed);
CANDIDATE(c_oob_wrong, "oob-wrong", IDX, .run = run_oob_wrong);
CANDIDATE(c_nondet_wrong, "nondet-wrong", IDX, .run = run_nondet_wrong);
CANDIDATE(c_oob_input, "oob-writes-input", IDX, .run = run_oob_writes_input);
CANDIDATE(c_mla_good, "mla-good", ATTEST_KERNEL_MLA_DECODE, .run = run_good);
CANDIDATE(c_mla_skips, "mla-skips", ATTEST_KERNEL_MLA_DECODE, .run = run_mla_skips);

/* --- tests --------------------------------------------------------------------------------- */

/* A correct candidate passes every gate, bit for bit, in both modes, with every run done. */
static void test_good_ok(void **state)
{
    (void)state;
    for (int isolate = 0; isolate <= 1; isolate++) {
        attest_case_record rec = judge_once(&c_good, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_OK, NULL);
        assert_int_equal(rec.reruns, 2);
        assert_int_equal(rec.integrity_flags, 0);
        assert_int_equal(rec.num_outputs, 1);
        assert_string_equal(rec.outputs[0].output, "logits");
        assert_int_equal(rec.outputs[0].unwritten, 0);
        assert_string_equal(rec.candidate, "good");
        assert_non_null(strstr(rec.params, "kernel=indexer"));
        assert_true(rec.ref_seconds >= 0.0 && rec.run_seconds > 0.0);
    }
    assert_no_children();
}

/* Each integrity check catches its own kind of misbehaviour, isolated and in-process alike. */
static void test_integrity_verdicts(void **state)
{
    (void)state;
    for (int isolate = 0; isolate <= 1; isolate++) {
        attest_case_record rec = judge_once(&c_oob, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE, "canary after 'logits' changed at +0");
        assert_int_equal(rec.integrity_flags, ATTEST_INTEGRITY_CANARY);

        rec = judge_once(&c_input, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_INPUT_MODIFIED, "input 'cache_bytes' modified");
        assert_non_null(strstr(rec.message, "first at byte 5"));
        /* the input is restored between runs: the second run is not "nondeterministic" */
        assert_int_equal(rec.integrity_flags, ATTEST_INTEGRITY_INPUT_MODIFIED);

        rec = judge_once(&c_skips, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_MISMATCH, "unwritten");
        assert_true(rec.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN));
        assert_int_equal(rec.outputs[0].unwritten, 1);
        assert_int_equal(rec.integrity_flags, 0);

        rec = judge_once(&c_nondet, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_NONDETERMINISTIC, "differs bitwise");
        assert_true(rec.integrity_flags & ATTEST_INTEGRITY_NONDETERMINISM);

        rec = judge_once(&c_decline, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_UNSUPPORTED, "declined");
        assert_int_equal(rec.reruns, 1);

        rec = judge_once(&c_fails, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_MISMATCH, "run() returned 7");
        assert_int_equal(rec.integrity_flags, ATTEST_INTEGRITY_CANDIDATE_ERROR);

        rec = judge_once(&c_initfail, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_HARNESS_ERROR, "init() returned 5");
    }
    assert_no_children();
}

/* Findings that co-occur: the verdict is the one runner.h ranks first, and every finding stays
 * in the record (integrity flags, failed gates), isolated and in-process alike. */
static void test_findings_cooccur(void **state)
{
    (void)state;
    const uint32_t element = ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT);
    for (int isolate = 0; isolate <= 1; isolate++) {
        /* canary + mismatch: OUT_OF_BOUNDS_WRITE over MISMATCH */
        attest_case_record rec = judge_once(&c_oob_wrong, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE, "canary after 'logits'");
        assert_int_equal(rec.integrity_flags, ATTEST_INTEGRITY_CANARY);
        assert_true(rec.failed_gates & element);

        /* nondeterminism + mismatch: NONDETERMINISTIC over MISMATCH */
        rec = judge_once(&c_nondet_wrong, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_NONDETERMINISTIC, "differs bitwise");
        assert_int_equal(rec.integrity_flags, ATTEST_INTEGRITY_NONDETERMINISM);
        assert_true(rec.failed_gates & element);

        /* canary + changed input: OUT_OF_BOUNDS_WRITE over INPUT_MODIFIED */
        rec = judge_once(&c_oob_input, isolate, 0.5f);
        expect(&rec, ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE, NULL);
        assert_int_equal(rec.integrity_flags,
                         ATTEST_INTEGRITY_CANARY | ATTEST_INTEGRITY_INPUT_MODIFIED);
    }
    assert_no_children();
}

/* Declared conventions reach the reference: "unspecified" masking compares only valid
 * positions, while the same garbage under -inf masking fails the nonfinite gate. */
static void test_masking_convention(void **state)
{
    (void)state;
    attest_case_record rec = judge_once(&c_unspec, 1, 0.5f);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_int_equal(rec.outputs[0].count, 40 + 39); /* rows of length 40 and 39 */
    rec = judge_once(&c_garbage, 1, 0.5f);
    expect(&rec, ATTEST_VERDICT_MISMATCH, "nonfinite");
    assert_true(rec.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE));
    /* The record's message (results files, --json) names the element as the reports do. */
    assert_non_null(strstr(rec.message, "nonfinite mismatches (first at logits[row "));
    assert_non_null(strstr(rec.message, ", t "));
}

/* A candidate that leaves the logits past each row's length unwritten passes under
 * "unspecified" masking (nothing there is compared, nothing there counts as unwritten), fails
 * under -inf masking, and still fails under "unspecified" when it leaves one valid position
 * unwritten. */
static void test_unwritten_tail(void **state)
{
    (void)state;
    attest_case_record rec = judge_once(&c_tail, 1, 0.5f);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_int_equal(rec.outputs[0].count, 40 + 39);
    assert_int_equal(rec.outputs[0].unwritten, 0);
    rec = judge_once(&c_tail_short, 1, 0.5f);
    expect(&rec, ATTEST_VERDICT_MISMATCH, NULL);
    assert_true(rec.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN));
    assert_int_equal(rec.outputs[0].unwritten, 1);
    rec = judge_once(&c_tail_neg_inf, 1, 0.5f);
    expect(&rec, ATTEST_VERDICT_MISMATCH, NULL);
    assert_true(rec.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN));
}

/* With topk > 0 the top-k gate runs: recall 1 for the right logits, below 1 for reversed. */
static void test_topk_gate(void **state)
{
    (void)state;
    attest_runner *r = make_runner(&c_good, 0, 10.0);
    attest_case_record rec = judge_indexer(r, 0.5f, 8);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_int_equal(rec.outputs[0].topk_checked, 1);
    assert_true(rec.outputs[0].topk_recall == 1.0);
    attest_runner_destroy(r);
    r = make_runner(&c_reversed, 0, 10.0);
    rec = judge_indexer(r, 0.5f, 8);
    expect(&rec, ATTEST_VERDICT_MISMATCH, "top-k recall");
    assert_true(rec.failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK));
    assert_true(rec.outputs[0].topk_recall < 1.0);
    attest_runner_destroy(r);
}

/* Two outputs (bf16 and f32): both compared; an unwritten bf16 element is caught. */
static void test_mla_outputs(void **state)
{
    (void)state;
    for (int isolate = 0; isolate <= 1; isolate++) {
        attest_runner *r = make_runner(&c_mla_good, isolate, 10.0);
        attest_case c;
        toy_mla_case(&c, 4);
        attest_case_record rec;
        attest_case_outputs keep;
        assert_ok(attest_runner_judge(r, &c, &rec, &keep));
        expect(&rec, ATTEST_VERDICT_OK, NULL);
        assert_int_equal(rec.num_outputs, 2);
        assert_string_equal(rec.outputs[0].output, "out_bf16");
        assert_string_equal(rec.outputs[1].output, "lse");
        /* kept outputs: the candidate's bytes and the reference, independently known */
        assert_int_equal(keep.num_outputs, 2);
        const uint16_t *q = attest_case_tensor(&c, "q_bf16")->data;
        const uint16_t *out = keep.candidate[0];
        assert_int_equal(keep.candidate_bytes[0], 2 * 4 * 512 * 2);
        assert_int_equal(out[512 + 9], q[576 + 9]); /* head 1, element 9 */
        /* lse[query, h] = indices[query, 0] + h/4 with indices[0] = -1, indices[3] = 2 */
        assert_true(keep.reference[1][1] == -0.75);
        assert_true(keep.reference[1][4] == 2.0);
        assert_true(keep.reference[0][512 + 9] == (double)attest_bf16_decode(q[576 + 9]));
        attest_case_outputs_free(&keep);
        attest_runner_destroy(r);

        r = make_runner(&c_mla_skips, isolate, 10.0);
        assert_ok(attest_runner_judge(r, &c, &rec, NULL));
        expect(&rec, ATTEST_VERDICT_MISMATCH, "out_bf16");
        assert_int_equal(rec.outputs[0].unwritten, 1);
        assert_int_equal(rec.outputs[1].failed_gates, 0);
        attest_runner_destroy(r);
        attest_case_free(&c);
    }
}

static attest_status slow_reference(const attest_case *c, const attest_bound_model *models,
                                    double **out, double **bounds)
{
    struct timespec ts = {0, 700 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return toy_reference(c, models, out, bounds);
}

static attest_status failing_reference(const attest_case *c, const attest_bound_model *models,
                                       double **out, double **bounds)
{
    (void)c;
    (void)models;
    (void)out;
    (void)bounds;
    return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "toy reference refuses");
}

/* The reference is computed while the first isolated run is in flight: an answer that came
 * meanwhile counts even when the reference outlasts the time limit. A failing reference is a
 * HARNESS_ERROR naming it. */
static void test_reference_phase(void **state)
{
    (void)state;
    attest_runner_options o = attest_runner_defaults();
    o.timeout_seconds = 0.3;
    o.reference = slow_reference;
    attest_runner *r = NULL;
    assert_ok(attest_runner_create(&c_good, &o, &r));
    attest_case_record rec = judge_indexer(r, 0.5f, 0);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_true(rec.ref_seconds >= 0.7);
    attest_runner_destroy(r);
    for (int isolate = 0; isolate <= 1; isolate++) {
        o.reference = failing_reference;
        o.isolate = isolate;
        assert_ok(attest_runner_create(&c_good, &o, &r));
        rec = judge_indexer(r, 0.5f, 0);
        expect(&rec, ATTEST_VERDICT_HARNESS_ERROR, "reference failed: toy reference refuses");
        attest_runner_destroy(r);
    }
}

/* Wrong kernel and bad options are errors, not verdicts. */
static void test_errors(void **state)
{
    (void)state;
    attest_runner_options o = attest_runner_defaults();
    assert_int_equal(o.reruns, 2);
    assert_int_equal(o.isolate, 1);
    assert_true(o.timeout_seconds == 10.0);
    attest_runner *r = NULL;
    assert_int_equal(attest_runner_create(&c_good, &o, &r), ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "reference"));
    o.reference = toy_reference;
    o.reruns = 0;
    assert_int_equal(attest_runner_create(&c_good, &o, &r), ATTEST_ERR_INVALID_ARGUMENT);
    r = make_runner(&c_mla_good, 1, 10.0);
    attest_case c;
    toy_indexer_case(&c, 1, 64, 10, 0.5f, 0, 1);
    attest_case_record rec;
    assert_int_equal(attest_runner_judge(r, &c, &rec, NULL), ATTEST_ERR_INVALID_ARGUMENT);
    assert_int_equal(rec.verdict, ATTEST_VERDICT_HARNESS_ERROR);
    attest_case_free(&c);
    attest_runner_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_ok),
        cmocka_unit_test(test_integrity_verdicts),
        cmocka_unit_test(test_findings_cooccur),
        cmocka_unit_test(test_masking_convention),
        cmocka_unit_test(test_unwritten_tail),
        cmocka_unit_test(test_topk_gate),
        cmocka_unit_test(test_mla_outputs),
        cmocka_unit_test(test_reference_phase),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
