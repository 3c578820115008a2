/* Tests of the mutants: each one differs from the expected outputs (tests/kernel_cases.h) on a
 * case designed to expose its bug, while its correct parent agrees on the same case; the
 * crashing and hanging ones are run in a forked child. (The verdicts the runner gives them are
 * tested with the runner.) */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/registry.h"
#include "attest/runner.h"
#include "kernel_cases.h"

#ifdef ATTEST_WITH_MUTANTS


/* Cases --------------------------------------------------------------------------------------- */

static const int32_t lens_basic[] = {150, 65};
static const int32_t table_basic[] = {3, 0, 5, 1, 4, 2};
static const tk_indexer_spec ix_basic = {2, 1, 4, 150, 6, 3, lens_basic, table_basic, 0, 81};
static const int32_t lens_empty[] = {70, 0};
static const tk_indexer_spec ix_empty = {2, 1, 2, 150, 6, 3, lens_empty, table_basic, 0, 82};

/* v4, 200 slots in tiles of 64; tile 1 all -1; -1 holes elsewhere; token 0 never referenced (it
 * keeps the 0xFF poison, NaN); indices span all 4 pages. no_holes drops every -1. */
static int32_t v4_idx[2 * 200];
static tk_mla_spec v4_case(int no_holes, int lonely_query_1)
{
    for (int32_t q = 0; q < 2; q++)
        for (int32_t i = 0; i < 200; i++) {
            int hole = (i >= 64 && i < 128) || i % 5 == 0 || (lonely_query_1 && q == 1);
            v4_idx[q * 200 + i] = hole && !no_holes ? -1 : 1 + (i * 37 + q * 11) % 255;
        }
    return (tk_mla_spec){ATTEST_LAYOUT_MLA_V4, 2, 1, 2, {64, 0, 4, 200, v4_idx, NULL}, {0},
                         NULL, 91};
}

static int32_t v32_idx[2 * 90];
static tk_mla_spec v32_case(int64_t stride)
{
    for (int32_t i = 0; i < 2 * 90; i++) v32_idx[i] = i % 4 == 0 ? -1 : (i * 13) % (4 * 16);
    return (tk_mla_spec){ATTEST_LAYOUT_MLA_V32, 2, 1, 2, {16, stride, 4, 90, v32_idx, NULL}, {0},
                         NULL, 92};
}

/* Indexer mutants ----------------------------------------------------------------------------- */

/* The correct parent agrees on every case used below (so a difference is the mutant's bug). */
static void test_parents_agree(void **state)
{
    (void)state;
    assert_int_equal(tk_indexer_case_mismatches("cpu-indexer", &ix_basic), 0);
    assert_int_equal(tk_indexer_case_mismatches("cpu-indexer", &ix_empty), 0);
    tk_mla_spec s = v4_case(0, 0);
    assert_int_equal(tk_mla_case_mismatches("cpu-mla-decode", &s), 0);
    s = v4_case(0, 1);
    assert_int_equal(tk_mla_case_mismatches("cpu-mla-decode", &s), 0);
    s = v32_case(0);
    assert_int_equal(tk_mla_case_mismatches("cpu-mla-decode", &s), 0);
    s = v32_case(17 * 656);
    assert_int_equal(tk_mla_case_mismatches("cpu-mla-decode", &s), 0);
}

/* Reading position t+1's scale changes (or NaNs, at the length's end) the logits. */
static void test_indexer_scale_off_by_one(void **state)
{
    (void)state;
    assert_true(tk_indexer_case_mismatches("mutant-indexer-scale-off-by-one", &ix_basic) > 0);
}

/* 0.0 or an untouched (poisoned) element where -inf belongs. */
static void test_indexer_mask_faults(void **state)
{
    (void)state;
    assert_true(tk_indexer_case_mismatches("mutant-indexer-zero-past-length", &ix_basic) > 0);
    assert_true(tk_indexer_case_mismatches("mutant-indexer-unwritten-past-length", &ix_basic) > 0);
}

/* Treating the block as 132-byte records reads the wrong bytes. */
static void test_indexer_record_stride(void **state)
{
    (void)state;
    assert_true(tk_indexer_case_mismatches("mutant-indexer-132-byte-records", &ix_basic) > 0);
}

/* Ignoring the MTP rule shows only with next_n > 1. */
static void test_indexer_no_causal(void **state)
{
    (void)state;
    assert_int_equal(tk_indexer_case_mismatches("mutant-indexer-no-mtp-causal", &ix_basic), 0);
    tk_indexer_spec s = ix_basic;
    s.next_n = 2;
    assert_true(tk_indexer_case_mismatches("mutant-indexer-no-mtp-causal", &s) > 0);
}

/* Block-table entries past a request's blocks as serving engines leave them (-1, or a block
 * another request holds): the correct kernel never reads them; one that ends a request at its
 * row's first -1 computes past the length (poison, NaN) or from a stale block (finite), where
 * -inf belongs. */
static void test_indexer_reads_past_blocks(void **state)
{
    (void)state;
    static const int32_t minus_one[] = {3, 0, 5, 1, 4, -1}, stale[] = {3, 0, 5, 1, 4, 3};
    tk_indexer_spec s = ix_basic;
    s.table = minus_one;
    assert_int_equal(tk_indexer_case_mismatches("cpu-indexer", &s), 0);
    assert_true(tk_indexer_case_mismatches("mutant-indexer-reads-past-blocks", &s) > 0);
    s.table = stale;
    assert_int_equal(tk_indexer_case_mismatches("cpu-indexer", &s), 0);
    assert_true(tk_indexer_case_mismatches("mutant-indexer-reads-past-blocks", &s) > 0);
}

/* The element just past the logits changes (the harness's canary would). */
static void test_indexer_write_past_end(void **state)
{
    (void)state;
    attest_case c;
    tk_build_indexer(&c, &ix_basic);
    attest_kernel_args args;
    assert_ok(attest_case_args(&c, &args));
    const size_t n = 2 * 150;
    float *buf = malloc((n + 1) * sizeof(float));
    assert_non_null(buf);
    tk_poison_f32(buf, n + 1);
    args.u.indexer.logits = buf;
    assert_int_equal(tk_run(tk_builtin("mutant-indexer-write-past-end"), &args), 0);
    uint32_t bits;
    memcpy(&bits, &buf[n], 4);
    assert_int_not_equal(bits, ATTEST_POISON_F32);
    free(buf);
    attest_case_free(&c);
}

/* Runs a candidate in a forked child killed by SIGALRM after `seconds`; returns its wait status. */
static int run_in_child(const char *name, attest_case *c, unsigned seconds)
{
    attest_kernel_args args;
    assert_ok(attest_case_args(c, &args));
    const attest_candidate *cand = tk_builtin(name);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* not cmocka's handler: die like a real worker */
        alarm(seconds);
        _exit(cand->run(NULL, &args) == 0 ? 0 : 3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* Killed by SIGSEGV, or (under AddressSanitizer, which keeps its own SEGV handler) exited with
 * ASan's error status. */
static int died_of_segv(int status)
{
    return (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
           (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3);
}

static int hung(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM; }
static int finished(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

/* Crash and hang fire on a length-0 request only; other cases run normally. */
static void test_indexer_crash_and_hang(void **state)
{
    (void)state;
    attest_case c;
    tk_build_indexer(&c, &ix_empty);
    assert_true(died_of_segv(run_in_child("mutant-indexer-crash", &c, 30)));
    assert_true(hung(run_in_child("mutant-indexer-hang", &c, 1)));
    attest_case_free(&c);
    tk_build_indexer(&c, &ix_basic);
    assert_true(finished(run_in_child("mutant-indexer-crash", &c, 30)));
    assert_true(finished(run_in_child("mutant-indexer-hang", &c, 30)));
    attest_case_free(&c);
    assert_int_equal(tk_indexer_case_mismatches("mutant-indexer-crash", &ix_basic), 0);
}

/* MLA mutants --------------------------------------------------------------------------------- */

/* Scale i+1: on v4 the last tile's "scale" is the pad byte (NaN), on v32 the rope bytes. */
static void test_mla_scale_off_by_one(void **state)
{
    (void)state;
    tk_mla_spec s = v4_case(0, 0);
    assert_true(tk_mla_case_mismatches("mutant-mla-scale-off-by-one", &s) > 0);
    s = v32_case(0);
    assert_true(tk_mla_case_mismatches("mutant-mla-scale-off-by-one", &s) > 0);
}

/* P*584 instead of the rounded 37440-byte stride on v4; on v32 only a padded stride exposes it. */
static void test_mla_payload_stride(void **state)
{
    (void)state;
    tk_mla_spec s = v4_case(0, 0);
    assert_true(tk_mla_case_mismatches("mutant-mla-payload-stride", &s) > 0);
    s = v32_case(0);
    assert_int_equal(tk_mla_case_mismatches("mutant-mla-payload-stride", &s), 0);
    s = v32_case(17 * 656);
    assert_true(tk_mla_case_mismatches("mutant-mla-payload-stride", &s) > 0);
}

/* An all-invalid tile in the middle of the split turns the merge into NaN; without one, no harm. */
static void test_mla_no_merge_guard(void **state)
{
    (void)state;
    tk_mla_spec s = v4_case(0, 0);
    assert_true(tk_mla_case_mismatches("mutant-mla-no-merge-guard", &s) > 0);
    s = v4_case(1, 0);
    assert_int_equal(tk_mla_case_mismatches("mutant-mla-no-merge-guard", &s), 0);
}

/* -1 read as slot 0, which holds NaN poison: 0 * NaN reaches the output. */
static void test_mla_reads_nan_slot(void **state)
{
    (void)state;
    tk_mla_spec s = v4_case(0, 0);
    assert_true(tk_mla_case_mismatches("mutant-mla-reads-nan-slot", &s) > 0);
    s = v4_case(1, 0);
    assert_int_equal(tk_mla_case_mismatches("mutant-mla-reads-nan-slot", &s), 0);
}

/* Slots past topk_length hold real indices; using them changes the result. */
static void test_mla_ignores_topk_length(void **state)
{
    (void)state;
    static const int32_t len[] = {77, 3};
    tk_mla_spec s = v4_case(0, 0);
    s.main.topk_length = len;
    assert_true(tk_mla_case_mismatches("mutant-mla-ignores-topk-length", &s) > 0);
    assert_int_equal(tk_mla_case_mismatches("cpu-mla-decode", &s), 0);
}

static void test_mla_write_past_end(void **state)
{
    (void)state;
    tk_mla_spec s = v4_case(0, 0);
    attest_case c;
    tk_build_mla(&c, &s);
    attest_kernel_args args;
    assert_ok(attest_case_args(&c, &args));
    const size_t n = 2 * 2 * 512;
    uint16_t *buf = malloc((n + 1) * sizeof(uint16_t));
    assert_non_null(buf);
    for (size_t i = 0; i <= n; i++) buf[i] = ATTEST_POISON_BF16;
    args.u.mla.out = buf;
    assert_int_equal(tk_run(tk_builtin("mutant-mla-write-past-end"), &args), 0);
    assert_int_not_equal(buf[n], ATTEST_POISON_BF16);
    free(buf);
    attest_case_free(&c);
}

/* Crash and hang fire on a lonely query only. */
static void test_mla_crash_and_hang(void **state)
{
    (void)state;
    tk_mla_spec s = v4_case(0, 1);
    attest_case c;
    tk_build_mla(&c, &s);
    assert_true(died_of_segv(run_in_child("mutant-mla-crash", &c, 30)));
    assert_true(hung(run_in_child("mutant-mla-hang", &c, 1)));
    attest_case_free(&c);
    s = v4_case(0, 0);
    tk_build_mla(&c, &s);
    assert_true(finished(run_in_child("mutant-mla-crash", &c, 30)));
    assert_true(finished(run_in_child("mutant-mla-hang", &c, 30)));
    attest_case_free(&c);
}

/* Every built-in mutant is exercised above (a new one must get a test). */
static void test_every_mutant_named(void **state)
{
    (void)state;
    static const char *const tested[] = {
        "mutant-indexer-scale-off-by-one", "mutant-indexer-zero-past-length",
        "mutant-indexer-unwritten-past-length", "mutant-indexer-132-byte-records",
        "mutant-indexer-no-mtp-causal", "mutant-indexer-reads-past-blocks",
        "mutant-indexer-write-past-end", "mutant-indexer-crash",
        "mutant-indexer-hang", "mutant-mla-scale-off-by-one", "mutant-mla-payload-stride",
        "mutant-mla-int32-offsets", /* judged on a pool past 2^31 bytes: test_sparse_pool.c */
        "mutant-mla-no-merge-guard", "mutant-mla-reads-nan-slot",
        "mutant-mla-ignores-topk-length", "mutant-mla-write-past-end", "mutant-mla-crash",
        "mutant-mla-hang"};
    const size_t ntested = sizeof tested / sizeof tested[0];
    const attest_candidate *const *list;
    size_t n = attest_builtin_candidates(&list), mutants = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(list[i]->name, "mutant-", 7) != 0) continue;
        /* Device mutants need a GPU: tests/test_gpu.c (label gpu) judges them. */
        if (list[i]->domain != ATTEST_DOMAIN_HOST) continue;
        mutants++;
        int found = 0;
        for (size_t j = 0; j < ntested; j++) found |= strcmp(tested[j], list[i]->name) == 0;
        if (!found) print_error("mutant %s has no test\n", list[i]->name);
        assert_true(found);
    }
    assert_int_equal(mutants, ntested);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parents_agree),
        cmocka_unit_test(test_indexer_scale_off_by_one),
        cmocka_unit_test(test_indexer_mask_faults),
        cmocka_unit_test(test_indexer_record_stride),
        cmocka_unit_test(test_indexer_no_causal),
        cmocka_unit_test(test_indexer_reads_past_blocks),
        cmocka_unit_test(test_indexer_write_past_end),
        cmocka_unit_test(test_indexer_crash_and_hang),
        cmocka_unit_test(test_mla_scale_off_by_one),
        cmocka_unit_test(test_mla_payload_stride),
        cmocka_unit_test(test_mla_no_merge_guard),
        cmocka_unit_test(test_mla_reads_nan_slot),
        cmocka_unit_test(test_mla_ignores_topk_length),
        cmocka_unit_test(test_mla_write_past_end),
        cmocka_unit_test(test_mla_crash_and_hang),
        cmocka_unit_test(test_every_mutant_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* mutants not built */

int main(void) { return 77; /* skipped: configure with -DATTEST_MUTANTS=ON */ }

#endif
