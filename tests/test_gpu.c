/* GPU tests (label gpu): the CUDA candidates through the same runner and verdicts as CPU ones.
 * Exits 77 (skipped) where no CUDA device is usable; the runner, not this process, touches CUDA,
 * so the skip decision comes from the worker's own UNSUPPORTED verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/generator.h"
#include "attest/reference.h"
#include "attest/registry.h"
#include "attest/runner.h"

static attest_policy *policy;


static attest_runner *make_runner_graph(const char *name, int graph_check)
{
    const attest_candidate *cand = attest_builtin_find(name);
    assert_non_null(cand);
    attest_runner_options opt = attest_runner_defaults();
    opt.policy = policy;
    opt.reference = attest_ref_simulated;
    opt.graph_check = graph_check;
    attest_runner *r = NULL;
    assert_ok(attest_runner_create(cand, &opt, &r));
    return r;
}

static attest_runner *make_runner(const char *name) { return make_runner_graph(name, 0); }

static attest_verdict judge(attest_runner *r, const attest_gen_options *g, uint64_t seed,
                            attest_case_record *rec)
{
    attest_case c;
    memset(&c, 0, sizeof c);
    assert_ok(attest_generate_case(g, seed, &c));
    memset(rec, 0, sizeof *rec);
    assert_ok(attest_runner_judge(r, &c, rec, NULL));
    attest_case_free(&c);
    return rec->verdict;
}

/* Runs n generated cases; every verdict must be OK (prints the first failure in full). */
static void expect_all_ok(const char *name, int graph_check, attest_gen_options g, uint64_t seed,
                          uint64_t n, const char *what)
{
    attest_runner *r = make_runner_graph(name, graph_check);
    attest_case_record rec;
    for (uint64_t i = 0; i < n; i++) {
        attest_verdict v = judge(r, &g, attest_case_seed(seed, i), &rec);
        if (v != ATTEST_VERDICT_OK)
            fail_msg("%s, %s, case %llu (seed 0x%llx): %s %s | %s", name, what,
                     (unsigned long long)i, (unsigned long long)rec.seed,
                     attest_verdict_name(v), rec.message, rec.params);
    }
    printf("%s: %llu cases OK (%s%s)\n", name, (unsigned long long)n, what,
           graph_check ? ", graph check" : "");
    attest_runner_destroy(r);
}

/* Returns the first case (of n) whose verdict is `want`, or -1; any verdict other than OK and
 * `want` fails the test. */
static long first_verdict(const char *name, int graph_check, attest_gen_options g, uint64_t seed,
                          uint64_t n, attest_verdict want, attest_case_record *rec)
{
    attest_runner *r = make_runner_graph(name, graph_check);
    long found = -1;
    for (uint64_t i = 0; i < n && found < 0; i++) {
        attest_verdict v = judge(r, &g, attest_case_seed(seed, i), rec);
        if (v == want) found = (long)i;
        else if (v != ATTEST_VERDICT_OK)
            fail_msg("%s case %llu: %s %s", name, (unsigned long long)i, attest_verdict_name(v),
                     rec->message);
    }
    attest_runner_destroy(r);
    return found;
}

/* cuda-indexer-paged passes default bounds, 128 heads with MTP, production shapes, and the
 * graph check; so does its -noclean form. */
static void cuda_indexer_paged_passes(void **state)
{
    (void)state;
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    expect_all_ok("cuda-indexer-paged", 0, g, 21, 400, "default bounds");
    attest_gen_options wide = g;
    wide.max_heads = 128;
    wide.max_len = 3000;
    expect_all_ok("cuda-indexer-paged", 0, wide, 22, 150, "heads up to 128, next_n up to 2");
    attest_gen_options prod = g;
    prod.production_shape = 1;
    prod.max_len = 4096;
    expect_all_ok("cuda-indexer-paged", 0, prod, 23, 60, "production H=64, lengths up to 4096");
    expect_all_ok("cuda-indexer-paged", 1, g, 24, 200, "default bounds");
    attest_gen_options direct = g;
    direct.production_heads = 0; /* cuda-indexer keeps q in 48 KiB of shared memory: at most 96 heads */
    expect_all_ok("cuda-indexer", 1, direct, 25, 100, "default bounds");
    /* Without the -inf past the live pages: judged on the valid positions only. */
    expect_all_ok("cuda-indexer-paged-noclean", 0, g, 19, 300, "default bounds");
    expect_all_ok("cuda-indexer-paged-noclean", 1, wide, 20, 150, "heads up to 128, next_n up to 2");
}

/* The mma.sync streaming kernel on its own (cuda-indexer-paged runs wgmma for 128 heads), with
 * the graph check: default bounds, 128 heads with MTP, and next_n up to 4 at 64 heads (4 row
 * tiles, the most it takes). */
static void cuda_indexer_paged_mma_passes(void **state)
{
    (void)state;
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    expect_all_ok("cuda-indexer-paged-mma", 1, g, 26, 300, "default bounds");
    attest_gen_options wide = g;
    wide.max_heads = 128;
    wide.max_len = 3000;
    expect_all_ok("cuda-indexer-paged-mma", 1, wide, 27, 100, "heads up to 128, next_n up to 2");
    attest_gen_options mtp = g;
    mtp.max_next_n = 4;
    mtp.production_heads = 0;  /* 128 heads with next_n 3-4: more warps than either kernel takes */
    expect_all_ok("cuda-indexer-paged-mma", 1, mtp, 28, 100, "next_n up to 4");
    expect_all_ok("cuda-indexer-paged", 1, mtp, 29, 100, "next_n up to 4");
}

/* cuda-indexer-paged-fp8 multiplies fp8 by fp8 on Hopper's tensor cores (about 14 bits kept in
 * the accumulator), so it is judged under policies/bf16-tensor-core.json: default bounds with
 * and without the graph check, 128 heads with MTP, production shapes; and its -noclean form. */
static void cuda_indexer_paged_fp8_passes(void **state)
{
    (void)state;
    const char *src = getenv("ATTEST_SOURCE_DIR");
    if (!src) fail_msg("ATTEST_SOURCE_DIR is not set: the bf16 policy is read from the source tree");
    char path[4096];
    snprintf(path, sizeof path, "%s/policies/bf16-tensor-core.json", src);
    attest_policy *bf16 = NULL, *saved = policy;
    assert_ok(attest_policy_load(path, &bf16));
    policy = bf16;
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    expect_all_ok("cuda-indexer-paged-fp8", 0, g, 91, 400, "default bounds");
    expect_all_ok("cuda-indexer-paged-fp8", 1, g, 92, 200, "default bounds");
    attest_gen_options wide = g;
    wide.max_heads = 128;
    wide.max_len = 3000;
    expect_all_ok("cuda-indexer-paged-fp8", 1, wide, 93, 150, "heads up to 128, next_n up to 2");
    attest_gen_options prod = g;
    prod.production_shape = 1;
    prod.max_len = 4096;
    expect_all_ok("cuda-indexer-paged-fp8", 0, prod, 94, 60, "production H=64, lengths up to 4096");
    /* The same kernel without the -inf stores past the live pages: judged on the valid
     * positions only (its masking is unspecified), where it must still be right and written. */
    expect_all_ok("cuda-indexer-paged-fp8-noclean", 0, g, 95, 300, "default bounds");
    expect_all_ok("cuda-indexer-paged-fp8-noclean", 1, wide, 96, 150, "heads up to 128, next_n up to 2");
    policy = saved;
    attest_policy_free(bf16);
}

/* The wrong-stride variant is a MISMATCH; the capture-lengths variant passes eagerly and is a
 * GRAPH_MISMATCH under the graph check. */
static void paged_mutants_are_caught(void **state)
{
    (void)state;
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    attest_case_record rec;
    long at = first_verdict("mutant-cuda-indexer-paged-132-records", 0, g, 31, 50,
                            ATTEST_VERDICT_MISMATCH, &rec);
    assert_true(at >= 0);
    printf("132-records: case %ld MISMATCH: %s\n", at, rec.message);
    /* Lengths past one block's 8 pages (512 positions), where a capture-time grid falls short. */
    attest_gen_options longer = g;
    longer.max_len = 4000;
    expect_all_ok("mutant-cuda-indexer-paged-capture-lengths", 0, longer, 32, 100, "eager");
    at = first_verdict("mutant-cuda-indexer-paged-capture-lengths", 1, longer, 32, 50,
                       ATTEST_VERDICT_GRAPH_MISMATCH, &rec);
    assert_true(at >= 0);
    printf("capture-lengths: case %ld GRAPH_MISMATCH: %s\n", at, rec.message);
}


/* cuda-indexer passes generated cases of default and production shapes. */
static void cuda_indexer_passes(void **state)
{
    (void)state;
    attest_runner *r = make_runner("cuda-indexer");
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    g.production_heads = 0; /* it declines more than 96 heads (UNSUPPORTED, by design) */
    attest_case_record rec;
    for (uint64_t i = 0; i < 300; i++) {
        if (i == 250) g.production_shape = 1;
        attest_verdict v = judge(r, &g, attest_case_seed(11, i), &rec);
        if (v != ATTEST_VERDICT_OK)
            print_error("case %llu: %s %s | %s\n", (unsigned long long)i, attest_verdict_name(v),
                        rec.message, rec.params);
        assert_int_equal(v, ATTEST_VERDICT_OK);
    }
    printf("device: %s; 300 cases OK\n", attest_runner_device(r));
    attest_runner_destroy(r);
}

/* An illegal address poisons the worker's CUDA context: that case is CRASH, a new worker takes
 * over, and the following cases are judged normally. */
static void illegal_address_is_a_crash_and_the_run_goes_on(void **state)
{
    (void)state;
    attest_runner *r = make_runner("mutant-cuda-indexer-illegal-address");
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    attest_case_record rec;
    int crashes = 0, ok_after_crash = 0;
    for (uint64_t i = 0; i < 200 && ok_after_crash < 3; i++) {
        attest_verdict v = judge(r, &g, attest_case_seed(12, i), &rec);
        if (v == ATTEST_VERDICT_CRASH) {
            if (crashes++ == 0) printf("case %llu: CRASH: %s\n", (unsigned long long)i, rec.message);
        } else {
            assert_int_equal(v, ATTEST_VERDICT_OK);
            if (crashes) ok_after_crash++;
        }
    }
    assert_true(crashes > 0);
    assert_int_equal(ok_after_crash, 3);
    printf("worker starts: %lu (one per crash plus the first)\n", attest_runner_worker_starts(r));
    assert_true(attest_runner_worker_starts(r) >= (unsigned long)crashes);
    attest_runner_destroy(r);
}

/* cuda-mla-decode passes default bounds (both layouts, sinks, extra scopes, topk_length,
 * lonely queries), production shapes, and the graph check. */
static void cuda_mla_decode_passes(void **state)
{
    (void)state;
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    expect_all_ok("cuda-mla-decode", 0, g, 41, 400, "default bounds");
    expect_all_ok("cuda-mla-decode", 1, g, 42, 150, "default bounds");
    attest_gen_options prod = g;
    prod.production_shape = 1;
    expect_all_ok("cuda-mla-decode", 0, prod, 43, 20, "production shapes");
}

/* The missing guard and the wrong stride are MISMATCHes; the racy merge fails some case. */
static void mla_mutants_are_caught(void **state)
{
    (void)state;
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    attest_case_record rec;
    long at = first_verdict("mutant-cuda-mla-decode-no-guard", 0, g, 51, 200,
                            ATTEST_VERDICT_MISMATCH, &rec);
    assert_true(at >= 0);
    printf("no-guard: case %ld MISMATCH: %s\n", at, rec.message);
    at = first_verdict("mutant-cuda-mla-decode-wrong-stride", 0, g, 52, 200,
                       ATTEST_VERDICT_MISMATCH, &rec);
    assert_true(at >= 0);
    printf("wrong-stride: case %ld MISMATCH: %s\n", at, rec.message);
    attest_runner *r = make_runner("mutant-cuda-mla-decode-merge-race");
    int failing = 0;
    for (uint64_t i = 0; i < 200 && !failing; i++) {
        attest_verdict v = judge(r, &g, attest_case_seed(53, i), &rec);
        if (attest_verdict_is_failure(v)) {
            failing = 1;
            printf("merge-race: case %llu %s: %s\n", (unsigned long long)i,
                   attest_verdict_name(v), rec.message);
        }
    }
    attest_runner_destroy(r);
    if (!failing) printf("merge-race: no failing verdict in 200 cases without racecheck\n");
}

/* cuda-mla-decode-mma passes mla-v4 and mla-v32 cases under
 * policies/bf16-tensor-core.json (its K/V and P are bf16): default bounds with and without the
 * graph check, more than 64 heads (two head blocks, the last one padded), production shapes;
 * cuda-mla-decode-mma-fused (the merge in pass 1's last split) passes both layouts;
 * cuda-mla-decode-mma-ws (the warp-specialized pass 1) passes both layouts (mla-v32 on the
 * two-warpgroup kernel); cuda-mla-decode-mma-sync (the mma.sync pass 1 it runs off sm_90)
 * passes mla-v4; the racy merges and -ws without the consumers' wait for a full buffer fail
 * some case. */
static void cuda_mla_decode_mma_passes(void **state)
{
    (void)state;
    const char *src = getenv("ATTEST_SOURCE_DIR");
    if (!src) fail_msg("ATTEST_SOURCE_DIR is not set: the bf16 policy is read from the source tree");
    char path[4096];
    snprintf(path, sizeof path, "%s/policies/bf16-tensor-core.json", src);
    attest_policy *bf16 = NULL, *saved = policy;
    assert_ok(attest_policy_load(path, &bf16));
    policy = bf16;
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    g.layout = ATTEST_LAYOUT_MLA_V4;
    expect_all_ok("cuda-mla-decode-mma", 0, g, 61, 400, "default bounds, mla-v4");
    expect_all_ok("cuda-mla-decode-mma", 1, g, 62, 150, "default bounds, mla-v4");
    attest_gen_options wide = g;
    wide.max_heads = 130;
    expect_all_ok("cuda-mla-decode-mma", 0, wide, 63, 60, "heads up to 130");
    attest_gen_options prod = g;
    prod.production_shape = 1;
    expect_all_ok("cuda-mla-decode-mma", 0, prod, 64, 20, "production shapes, mla-v4");
    attest_gen_options v32 = g;
    v32.layout = ATTEST_LAYOUT_MLA_V32;
    expect_all_ok("cuda-mla-decode-mma", 0, v32, 66, 400, "default bounds, mla-v32");
    expect_all_ok("cuda-mla-decode-mma", 1, v32, 67, 150, "default bounds, mla-v32");
    attest_gen_options wide32 = v32;
    wide32.max_heads = 130;
    expect_all_ok("cuda-mla-decode-mma", 0, wide32, 68, 60, "heads up to 130, mla-v32");
    attest_gen_options prod32 = v32;
    prod32.production_shape = 1;
    expect_all_ok("cuda-mla-decode-mma", 0, prod32, 69, 20, "production shapes, mla-v32");
    expect_all_ok("cuda-mla-decode-mma-fused", 0, g, 72, 200, "default bounds, mla-v4");
    expect_all_ok("cuda-mla-decode-mma-fused", 1, v32, 73, 100, "default bounds, mla-v32");
    expect_all_ok("cuda-mla-decode-mma-fused", 0, prod, 74, 20, "production shapes, mla-v4");
    expect_all_ok("cuda-mla-decode-mma-ws", 0, g, 75, 300, "default bounds, mla-v4");
    expect_all_ok("cuda-mla-decode-mma-ws", 1, g, 76, 100, "default bounds, mla-v4");
    expect_all_ok("cuda-mla-decode-mma-ws", 0, wide, 77, 60, "heads up to 130, mla-v4");
    expect_all_ok("cuda-mla-decode-mma-ws", 0, prod, 78, 20, "production shapes, mla-v4");
    expect_all_ok("cuda-mla-decode-mma-ws", 0, v32, 79, 100, "default bounds, mla-v32");
    expect_all_ok("cuda-mla-decode-mma-sync", 0, g, 70, 200, "default bounds, mla-v4");
    expect_all_ok("cuda-mla-decode-mma-sync", 1, wide, 71, 60, "heads up to 130, mla-v4");
    const char *const racy[] = {"mutant-cuda-mla-decode-mma-merge-race",
                                "mutant-cuda-mla-decode-mma-fused-race",
                                "mutant-cuda-mla-decode-mma-ws-no-full-wait"};
    const attest_gen_options *const racy_gen[] = {&g, &g, &g};
    const uint64_t racy_cases[] = {200, 200, 200};
    int failing[3] = {0, 0, 0};
    for (int m = 0; m < 3; m++) {
        attest_runner *r = make_runner(racy[m]);
        attest_case_record rec;
        for (uint64_t i = 0; i < racy_cases[m] && !failing[m]; i++) {
            attest_verdict v = judge(r, racy_gen[m], attest_case_seed(65, i), &rec);
            if (attest_verdict_is_failure(v)) {
                failing[m] = 1;
                printf("%s: case %llu %s: %s\n", racy[m], (unsigned long long)i,
                       attest_verdict_name(v), rec.message);
            }
        }
        attest_runner_destroy(r);
    }
    policy = saved;
    attest_policy_free(bf16);
    assert_true(failing[0]);
    assert_true(failing[1]);
    assert_true(failing[2]);
}

int main(void)
{
    if (attest_policy_default(&policy) != ATTEST_OK) return 1;
    /* Probe through the runner: its worker opens the device, this process never does. */
    attest_runner *probe = make_runner("cuda-indexer");
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    attest_case_record rec;
    attest_verdict v = judge(probe, &g, 1, &rec);
    attest_runner_destroy(probe);
    if (v == ATTEST_VERDICT_UNSUPPORTED) {
        printf("skipped: %s\n", rec.message);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cuda_indexer_passes),
        cmocka_unit_test(illegal_address_is_a_crash_and_the_run_goes_on),
        cmocka_unit_test(cuda_indexer_paged_passes),
        cmocka_unit_test(cuda_indexer_paged_mma_passes),
        cmocka_unit_test(cuda_indexer_paged_fp8_passes),
        cmocka_unit_test(paged_mutants_are_caught),
        cmocka_unit_test(cuda_mla_decode_passes),
        cmocka_unit_test(mla_mutants_are_caught),
        cmocka_unit_test(cuda_mla_decode_mma_passes),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    attest_policy_free(policy);
    return failed;
}
