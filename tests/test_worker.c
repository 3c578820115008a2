/* Tests of crash isolation: crashes of every kind (signal, abort, heap corruption, _exit), a
 * crash while a process the candidate started holds the channel, timeouts, arena re-mapping,
 * descriptor hygiene, and the harness's per-case overhead, isolated and in-process (printed).
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

static int run_segv(void *ctx, const attest_kernel_args *a)
{
    if (triggered(a)) {
        raise(SIGSEGV); /* what a null dereference delivers, without UB the compiler can see */
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

CANDIDATE(c_segv, "segv", IDX, .run = run_segv);
CANDIDATE(c_abort, "abort", IDX, .run = run_abort);
CANDIDATE(c_dfree, "double-free", IDX, .run = run_double_free);
CANDIDATE(c_exit, "exit", IDX, .run = run_exit);
CANDIDATE(c_spin, "spin", IDX, .run = run_spin);
CANDIDATE(c_spawns, "spawns", IDX, .run = run_spawns_then_crashes);

/* --- tests --------------------------------------------------------------------------------- */

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

/* A case larger than the arena re-maps it; the worker is restarted to see the new mapping. */
static void test_arena_growth(void **state)
{
    (void)state;
    attest_runner *r = make_runner(&c_good, 1, 10.0);
    attest_case_record rec = judge_indexer(r, 0.5f, 0);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    attest_case big;
    toy_indexer_case(&big, 2, 64, 40, 0.5f, 0, 1200); /* ~10 MB cache */
    assert_ok(attest_runner_judge(r, &big, &rec, NULL));
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
    assert_ok(attest_runner_judge(r, &c, &rec, NULL)); /* worker started */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        assert_ok(attest_runner_judge(r, &c, &rec, NULL));
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

/* The harness's per-case cost on a tiny case, isolated and in-process (printed, for
 * README.md's figure). A process start per case would cost milliseconds; the bound is loose. */
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
        cmocka_unit_test(test_crashes_isolated),
        cmocka_unit_test(test_crash_with_child),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_arena_growth),
        cmocka_unit_test(test_worker_fds),
        cmocka_unit_test(test_overhead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
