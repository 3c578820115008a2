/* Tests of the runner: verdicts from hand-made candidates (integrity checks, crash isolation,
 * timeouts, conventions, top-k, the device path through fake device ops), plugin loading, and
 * the harness's per-case overhead. Toy kernels and reference: runner_toys.h. */
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

#include "attest/device.h"
#include "attest/runner.h"
#include "runner_toys.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* --- candidates ------------------------------------------------------------------------- */

/* A negative weight is the trigger for the misbehaving candidates below, so one runner can
 * judge a bad case and then a good one. */
static int triggered(const attest_kernel_args *a) { return a->u.indexer.weights[0] < 0.0f; }

static int run_good(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    if (a->kernel == ATTEST_KERNEL_MLA_DECODE) {
        toy_mla(&a->u.mla);
        return 0;
    }
    toy_indexer_logits(&a->u.indexer, -INFINITY);
    return 0;
}

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

static int run_segv(void *ctx, const attest_kernel_args *a)
{
    if (triggered(a)) {
        volatile int *bad = (volatile int *)(uintptr_t)16;
        *bad = 1;
    }
    return run_good(ctx, a);
}

static int run_abort(void *ctx, const attest_kernel_args *a)
{
    if (triggered(a)) abort();
    return run_good(ctx, a);
}

static int run_double_free(void *ctx, const attest_kernel_args *a)
{
    if (triggered(a)) {
        void *volatile p = malloc(64);
        free(p);
        free(p); /* glibc aborts; ASan reports */
    }
    return run_good(ctx, a);
}

static int run_exit(void *ctx, const attest_kernel_args *a)
{
    if (triggered(a)) _exit(3);
    return run_good(ctx, a);
}

static int run_spin(void *ctx, const attest_kernel_args *a)
{
    volatile unsigned long n = 0;
    if (triggered(a))
        for (;;) n++;
    return run_good(ctx, a);
}

/* Shared with the test process: the pid of a process the candidate started. */
static volatile pid_t *grandchild;

/* Starts a process that holds the worker's channel open, then crashes. */
static int run_spawns_then_crashes(void *ctx, const attest_kernel_args *a)
{
    if (triggered(a)) {
        pid_t pid = fork();
        if (pid == 0) {
            sleep(60);
            _exit(0);
        }
        *grandchild = pid;
        raise(SIGSEGV);
    }
    return run_good(ctx, a);
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

static int run_mla_skips(void *ctx, const attest_kernel_args *a)
{
    const attest_mla_args *m = &a->u.mla;
    uint16_t keep = m->out[7];
    run_good(ctx, a);
    m->out[7] = keep;
    return 0;
}

#define CANDIDATE(var, nm, kern, runfn, ...)                                                       \
    static const attest_candidate var = {.abi_version = ATTEST_CANDIDATE_ABI_VERSION,              \
                                         .struct_size = sizeof(attest_candidate),                  \
                                         .name = nm,                                               \
                                         .description = "test candidate",                          \
                                         .kernel = kern,                                           \
                                         .run = runfn,                                             \
                                         __VA_ARGS__}

#define IDX ATTEST_KERNEL_INDEXER
CANDIDATE(c_good, "good", IDX, run_good);
CANDIDATE(c_oob, "oob", IDX, run_oob);
CANDIDATE(c_input, "writes-input", IDX, run_writes_input);
CANDIDATE(c_skips, "skips", IDX, run_skips);
CANDIDATE(c_nondet, "nondet", IDX, run_nondet);
CANDIDATE(c_segv, "segv", IDX, run_segv);
CANDIDATE(c_abort, "abort", IDX, run_abort);
CANDIDATE(c_dfree, "double-free", IDX, run_double_free);
CANDIDATE(c_exit, "exit", IDX, run_exit);
CANDIDATE(c_spin, "spin", IDX, run_spin);
CANDIDATE(c_fails, "fails", IDX, run_fails);
CANDIDATE(c_spawns, "spawns", IDX, run_spawns_then_crashes);
CANDIDATE(c_decline, "declines", IDX, run_good, .supports = supports_never);
CANDIDATE(c_initfail, "init-fails", IDX, run_good, .init = init_fails);
CANDIDATE(c_unspec, "unspecified", IDX, run_garbage_past,
          .conventions = {.masking = ATTEST_MASK_UNSPECIFIED});
CANDIDATE(c_garbage, "garbage-neg-inf", IDX, run_garbage_past);
CANDIDATE(c_reversed, "reversed", IDX, run_reversed);
CANDIDATE(c_mla_good, "mla-good", ATTEST_KERNEL_MLA_DECODE, run_good);
CANDIDATE(c_mla_skips, "mla-skips", ATTEST_KERNEL_MLA_DECODE, run_mla_skips);

/* --- helpers ------------------------------------------------------------------------------ */

static attest_runner *make_runner(const attest_candidate *cand, int isolate, double timeout)
{
    attest_runner_options o = attest_runner_defaults();
    o.isolate = isolate;
    o.timeout_seconds = timeout;
    o.reference = toy_reference;
    attest_runner *r = NULL;
    attest_status st = attest_runner_create(cand, &o, &r);
    if (st != ATTEST_OK) fail_msg("runner_create: %s", attest_last_error());
    return r;
}

/* Judges one toy indexer case (len 40 of 64, weight w) and returns the record. */
static attest_case_record judge_indexer(attest_runner *r, float w, int32_t topk)
{
    attest_case c;
    toy_indexer_case(&c, 2, 64, 40, w, topk, 1);
    attest_case_record rec;
    assert_int_equal(attest_runner_judge(r, &c, &rec, NULL), ATTEST_OK);
    attest_case_free(&c);
    return rec;
}

static void expect(const attest_case_record *rec, attest_verdict v, const char *needle)
{
    if (rec->verdict != v)
        fail_msg("candidate %s: verdict %s, expected %s (%s)", rec->candidate,
                 attest_verdict_name(rec->verdict), attest_verdict_name(v), rec->message);
    if (needle && !strstr(rec->message, needle))
        fail_msg("candidate %s: message '%s' lacks '%s'", rec->candidate, rec->message, needle);
}

/* After destroy, no child of ours is left, running or zombie. */
static void assert_no_children(void)
{
    int status;
    errno = 0;
    assert_int_equal(waitpid(-1, &status, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

/* One judged case per candidate, in the given mode. */
static attest_case_record judge_once(const attest_candidate *cand, int isolate, float w)
{
    attest_runner *r = make_runner(cand, isolate, 10.0);
    attest_case_record rec = judge_indexer(r, w, 0);
    attest_runner_destroy(r);
    return rec;
}

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

/* A crash of any kind is a CRASH naming how the worker died; the next case on the same runner
 * gets a fresh worker and passes. */
static void test_crashes_isolated(void **state)
{
    (void)state;
    struct {
        const attest_candidate *cand;
        const char *why;
    } crashers[] = {
        {&c_segv, "killed by SIGSEGV"},
        {&c_abort, "SIGABRT"},
        {&c_dfree, UNDER_ASAN ? "worker exited with status 1" : "SIGABRT"},
        {&c_exit, "exited with status 3"},
    };
    for (size_t i = 0; i < sizeof crashers / sizeof crashers[0]; i++) {
        attest_runner *r = make_runner(crashers[i].cand, 1, 10.0);
        attest_case_record rec = judge_indexer(r, 0.5f, 0);
        expect(&rec, ATTEST_VERDICT_OK, NULL);
        rec = judge_indexer(r, -1.0f, 0);
        expect(&rec, ATTEST_VERDICT_CRASH, crashers[i].why);
        assert_non_null(strstr(rec.message, "run 1 of 2"));
        rec = judge_indexer(r, 0.5f, 0);
        expect(&rec, ATTEST_VERDICT_OK, NULL);
        assert_int_equal(attest_runner_worker_starts(r), 2);
        attest_runner_destroy(r);
        assert_no_children();
    }
}

/* Dead or a zombie: a reparented process may wait for a reaper that never comes. */
static int process_gone(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

/* A crash is seen at once even when a process the candidate started keeps the channel open,
 * and that process is killed with the worker's process group. */
static void test_crash_with_child(void **state)
{
    (void)state;
    grandchild = mmap(NULL, sizeof *grandchild, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(grandchild != MAP_FAILED);
    *grandchild = 0;
    attest_runner *r = make_runner(&c_spawns, 1, 20.0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    attest_case_record rec = judge_indexer(r, -1.0f, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    expect(&rec, ATTEST_VERDICT_CRASH, "SIGSEGV");
    assert_true((double)(t1.tv_sec - t0.tv_sec) < 5.0);
    assert_true(*grandchild > 0);
    int gone = 0;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = process_gone(*grandchild);
        if (!gone) usleep(10000);
    }
    assert_true(gone);
    rec = judge_indexer(r, 0.5f, 0);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    attest_runner_destroy(r);
    munmap((void *)grandchild, sizeof *grandchild);
    assert_no_children();
}

/* A spinning candidate is killed at the deadline (TIMEOUT) and the campaign goes on. */
static void test_timeout(void **state)
{
    (void)state;
    attest_runner *r = make_runner(&c_spin, 1, 0.5);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    attest_case_record rec = judge_indexer(r, -1.0f, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    expect(&rec, ATTEST_VERDICT_TIMEOUT, "worker killed");
    double took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    assert_true(took >= 0.5 && took < 3.0);
    rec = judge_indexer(r, 0.5f, 0);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_int_equal(attest_runner_worker_starts(r), 2);
    attest_runner_destroy(r);
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
        assert_int_equal(attest_runner_judge(r, &c, &rec, &keep), ATTEST_OK);
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
        assert_int_equal(attest_runner_judge(r, &c, &rec, NULL), ATTEST_OK);
        expect(&rec, ATTEST_VERDICT_MISMATCH, "out_bf16");
        assert_int_equal(rec.outputs[0].unwritten, 1);
        assert_int_equal(rec.outputs[1].failed_gates, 0);
        attest_runner_destroy(r);
        attest_case_free(&c);
    }
}

/* A case larger than the arena re-maps it; the worker is restarted to see the new mapping. */
static void test_arena_growth(void **state)
{
    (void)state;
    attest_runner *r = make_runner(&c_good, 1, 10.0);
    attest_case_record rec = judge_indexer(r, 0.5f, 0);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    attest_case big;
    toy_indexer_case(&big, 2, 64, 40, 0.5f, 0, 1200); /* ~10 MB cache */
    assert_int_equal(attest_runner_judge(r, &big, &rec, NULL), ATTEST_OK);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    attest_case_free(&big);
    rec = judge_indexer(r, 0.5f, 0);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_int_equal(attest_runner_worker_starts(r), 2);
    attest_runner_destroy(r);
    assert_no_children();
}

/* The worker holds no descriptor of ours: a pipe's reader sees EOF once we close our end. */
static void test_worker_fds(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    attest_runner *r = make_runner(&c_good, 1, 10.0);
    attest_case_record rec = judge_indexer(r, 0.5f, 0); /* forks while the pipe is open */
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    close(p[1]);
    assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    char ch;
    assert_int_equal(read(p[0], &ch, 1), 0); /* EOF, not EAGAIN: no writer left */
    close(p[0]);
    attest_runner_destroy(r);
}

static attest_status slow_reference(const attest_case *c, double **out)
{
    struct timespec ts = {0, 700 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return toy_reference(c, out);
}

static attest_status failing_reference(const attest_case *c, double **out)
{
    (void)c;
    (void)out;
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
    assert_int_equal(attest_runner_create(&c_good, &o, &r), ATTEST_OK);
    attest_case_record rec = judge_indexer(r, 0.5f, 0);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_true(rec.ref_seconds >= 0.7);
    attest_runner_destroy(r);
    for (int isolate = 0; isolate <= 1; isolate++) {
        o.reference = failing_reference;
        o.isolate = isolate;
        assert_int_equal(attest_runner_create(&c_good, &o, &r), ATTEST_OK);
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

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

/* Mean wall time of attest_runner_judge over n tiny cases (two runs each). */
static double per_case_seconds(int isolate, int n)
{
    attest_runner *r = make_runner(&c_good, isolate, 10.0);
    attest_case c;
    toy_indexer_case(&c, 1, 64, 40, 0.5f, 0, 1);
    attest_case_record rec;
    assert_int_equal(attest_runner_judge(r, &c, &rec, NULL), ATTEST_OK); /* worker started */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(attest_runner_judge(r, &c, &rec, NULL), ATTEST_OK);
        ok += rec.verdict == ATTEST_VERDICT_OK;
    }
    const double per = seconds_since(&t0) / n;
    assert_int_equal(ok, n);
    /* one worker for the whole campaign: no process start per case */
    assert_int_equal(attest_runner_worker_starts(r), isolate ? 1 : 0);
    attest_runner_destroy(r);
    attest_case_free(&c);
    return per;
}

/* The harness's per-case cost on a tiny case, isolated and in-process (printed: the number the
 * issue asks for). A process start per case would cost milliseconds; the bound is loose. */
static void test_overhead(void **state)
{
    (void)state;
    const int n = 2000;
    const double iso = per_case_seconds(1, n), local = per_case_seconds(0, n);
    printf("runner per-case cost, tiny indexer case, 2 runs/case, %d cases: isolated %.1f us, "
           "in-process %.1f us, isolation adds %.1f us\n",
           n, iso * 1e6, local * 1e6, (iso - local) * 1e6);
    assert_true(iso < 5e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_ok),
        cmocka_unit_test(test_integrity_verdicts),
        cmocka_unit_test(test_crashes_isolated),
        cmocka_unit_test(test_crash_with_child),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_masking_convention),
        cmocka_unit_test(test_topk_gate),
        cmocka_unit_test(test_mla_outputs),
        cmocka_unit_test(test_arena_growth),
        cmocka_unit_test(test_worker_fds),
        cmocka_unit_test(test_reference_phase),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_overhead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
