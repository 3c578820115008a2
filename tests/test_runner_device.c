/* Tests of the runner's device path through fake device ops (host memory standing in for device
 * memory): the arena is mirrored, the candidate sees only mirror pointers, canaries and inputs
 * are checked after the copy back, a device fault is a CRASH that replaces the worker, and the
 * parent never touches the device. Toy kernels and reference: runner_toys.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/device.h"
#include "attest/runner.h"
#include "runner_toys.h"

/* --- fake device ops ------------------------------------------------------------------------ */

static const uint8_t *fake_lo, *fake_hi; /* the live allocation, in the process that made it */
static int fake_fault;                   /* set by the candidate: synchronize then fails */
static int fake_opens;                   /* open() calls in this process */

static int open_ok(char *msg, size_t cap)
{
    (void)msg;
    (void)cap;
    fake_opens++;
    return 0;
}

static int open_fail(char *msg, size_t cap)
{
    snprintf(msg, cap, "no CUDA device (fake)");
    return 1;
}

static int describe(char *buf, size_t cap)
{
    snprintf(buf, cap, "fake device 0");
    return 0;
}

static int dev_alloc(void **p, size_t n)
{
    void *q = NULL;
    if (posix_memalign(&q, 256, n) != 0) return 1;
    fake_lo = q;
    fake_hi = fake_lo + n;
    *p = q;
    return 0;
}

static void dev_free(void *p) { free(p); }

/* A fake graph: while capturing, the toy candidate records its arguments instead of running;
 * a launch runs the toy on what was recorded (lengths read then, as a faithful kernel does,
 * unless the toy baked in the capture-time ones). */
static int fake_capturing;
static int fake_graph_ready;
static attest_kernel_args fake_graph_args;
static int32_t fake_baked_lens[8];
static int fake_baked; /* the recorded launch uses fake_baked_lens */

static int graph_begin(void)
{
    fake_capturing = 1;
    fake_graph_ready = 0;
    return 0;
}

static int graph_end(void)
{
    fake_capturing = 0;
    return fake_graph_ready ? 0 : 1;
}

static int graph_launch(void)
{
    attest_kernel_args a = fake_graph_args;
    if (fake_baked) a.u.indexer.context_lens = fake_baked_lens;
    toy_indexer_logits(&a.u.indexer, -INFINITY);
    return 0;
}

static void graph_release(void)
{
    fake_graph_ready = 0;
    fake_baked = 0;
}

static int dev_copy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
    return 0;
}

static int dev_sync(void) { return fake_fault; }

static const char *dev_error(void) { return "an illegal memory access was encountered (fake)"; }

static const attest_device_ops fake_ops = {
    .struct_size = sizeof(attest_device_ops), .name = "fake", .open = open_ok,
    .describe = describe, .alloc = dev_alloc, .free = dev_free, .copy_h2d = dev_copy,
    .copy_d2h = dev_copy, .synchronize = dev_sync, .last_error = dev_error};
static const attest_device_ops graph_ops = {
    .struct_size = sizeof(attest_device_ops), .name = "fake", .open = open_ok,
    .describe = describe, .alloc = dev_alloc, .free = dev_free, .copy_h2d = dev_copy,
    .copy_d2h = dev_copy, .synchronize = dev_sync, .last_error = dev_error,
    .graph_begin = graph_begin, .graph_end = graph_end, .graph_launch = graph_launch,
    .graph_release = graph_release};
static const attest_device_ops no_device_ops = {
    .struct_size = sizeof(attest_device_ops), .name = "fake", .open = open_fail,
    .alloc = dev_alloc, .free = dev_free, .copy_h2d = dev_copy, .copy_d2h = dev_copy,
    .synchronize = dev_sync, .last_error = dev_error};

/* --- a device candidate -------------------------------------------------------------------- */

static int on_device(const void *p)
{
    return (const uint8_t *)p >= fake_lo && (const uint8_t *)p < fake_hi;
}

/* The toy indexer; weight -1 faults the "device", 2 writes one past the output, 3 writes an
 * input; under a graph capture 4 bakes in the lengths it sees, 5 cannot be captured. Returns
 * 90/91 if it is handed host pointers. */

static int run_device(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    const attest_indexer_args *ia = &a->u.indexer;
    if (a->domain != ATTEST_DOMAIN_DEVICE) return 90;
    if (!on_device(ia->cache) || !on_device(ia->logits) || !on_device(ia->weights) ||
        !on_device(ia->context_lens) || !on_device(ia->block_table) || !on_device(ia->q_fp8))
        return 91;
    if (fake_capturing) {
        if (ia->weights[0] == 5.0f) return 1;
        fake_graph_args = *a;
        fake_graph_ready = 1;
        if (ia->weights[0] == 4.0f) {
            for (int i = 0; i < ia->params->b && i < 8; i++)
                fake_baked_lens[i] = ia->context_lens[i];
            fake_baked = 1;
        }
        return 0;
    }
    toy_indexer_logits(ia, -INFINITY);
    const float w = ia->weights[0];
    const attest_indexer_params *p = ia->params;
    if (w < 0.0f) fake_fault = 1;
    if (w == 2.0f) ia->logits[(size_t)p->b * p->max_len] = 0.0f;
    if (w == 3.0f) ((uint8_t *)ia->cache)[100] ^= 1;
    return 0;
}

static const attest_candidate c_device = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "fake-device-indexer",
    .description = "the toy indexer on fake device memory",
    .kernel = ATTEST_KERNEL_INDEXER,
    .domain = ATTEST_DOMAIN_DEVICE,
    .run = run_device,
};

static attest_runner *make_runner_with(int isolate, int graph_check)
{
    attest_runner_options o = attest_runner_defaults();
    o.isolate = isolate;
    o.graph_check = graph_check;
    o.reference = toy_reference;
    attest_runner *r = NULL;
    if (attest_runner_create(&c_device, &o, &r) != ATTEST_OK)
        fail_msg("runner_create: %s", attest_last_error());
    return r;
}

static attest_runner *make_runner(int isolate) { return make_runner_with(isolate, 0); }

static attest_case_record judge(attest_runner *r, float w)
{
    attest_case c;
    toy_indexer_case(&c, 2, 64, 40, w, 0, 1);
    attest_case_record rec;
    assert_ok(attest_runner_judge(r, &c, &rec, NULL));
    attest_case_free(&c);
    return rec;
}

static void expect(const attest_case_record *rec, attest_verdict v, const char *needle)
{
    if (rec->verdict != v)
        fail_msg("verdict %s, expected %s (%s)", attest_verdict_name(rec->verdict),
                 attest_verdict_name(v), rec->message);
    if (needle && !strstr(rec->message, needle))
        fail_msg("message '%s' lacks '%s'", rec->message, needle);
}

/* --- tests --------------------------------------------------------------------------------- */

/* Without device ops, or without a device, a device candidate is UNSUPPORTED, saying why. */
static void test_no_device(void **state)
{
    (void)state;
    assert_int_equal(attest_register_device_ops(NULL), 0);
    attest_runner *r = make_runner(1);
    attest_case_record rec = judge(r, 0.5f);
    expect(&rec, ATTEST_VERDICT_UNSUPPORTED, "no device ops registered");
    attest_runner_destroy(r);

    assert_int_equal(attest_register_device_ops(&no_device_ops), 0);
    r = make_runner(1);
    rec = judge(r, 0.5f);
    expect(&rec, ATTEST_VERDICT_UNSUPPORTED, "no CUDA device (fake)");
    rec = judge(r, 0.5f);
    expect(&rec, ATTEST_VERDICT_UNSUPPORTED, "no CUDA device (fake)");
    attest_runner_destroy(r);
    assert_int_equal(attest_register_device_ops(NULL), 0);
}

/* Through the mirror: OK, out-of-bounds write, input write, and a fault that costs a worker. */
static void test_device_isolated(void **state)
{
    (void)state;
    assert_int_equal(attest_register_device_ops(&fake_ops), 0);
    attest_runner *r = make_runner(1);
    attest_case_record rec = judge(r, 0.5f);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_string_equal(attest_runner_device(r), "fake device 0");
    rec = judge(r, 2.0f);
    expect(&rec, ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE, "canary after 'logits'");
    rec = judge(r, 3.0f);
    expect(&rec, ATTEST_VERDICT_INPUT_MODIFIED, "input 'cache_bytes' modified");
    assert_int_equal(attest_runner_worker_starts(r), 1);
    rec = judge(r, -1.0f);
    expect(&rec, ATTEST_VERDICT_CRASH, "device fault: an illegal memory access");
    rec = judge(r, 0.5f);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    assert_int_equal(attest_runner_worker_starts(r), 2);
    attest_runner_destroy(r);
    /* every device call happened in a worker */
    assert_int_equal(fake_opens, 0);
    assert_int_equal(attest_register_device_ops(NULL), 0);
}

/* In-process, the same ops run here (for fuzzers and debugging) with the same verdicts. */
static void test_device_in_process(void **state)
{
    (void)state;
    assert_int_equal(attest_register_device_ops(&fake_ops), 0);
    attest_runner *r = make_runner(0);
    attest_case_record rec = judge(r, 0.5f);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    rec = judge(r, 2.0f);
    expect(&rec, ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE, NULL);
    rec = judge(r, 3.0f);
    expect(&rec, ATTEST_VERDICT_INPUT_MODIFIED, NULL);
    assert_int_equal(fake_opens, 1);
    attest_runner_destroy(r);
    assert_int_equal(attest_register_device_ops(NULL), 0);
}

/* The graph check: a faithful capture replays like the eager run (OK); one that baked in the
 * capture-time lengths, or a launch that cannot be captured, is GRAPH_MISMATCH; without graph
 * ops the harness cannot check (HARNESS_ERROR). Isolated and in-process alike. */
static void test_graph_check(void **state)
{
    (void)state;
    for (int isolate = 0; isolate <= 1; isolate++) {
        assert_int_equal(attest_register_device_ops(&graph_ops), 0);
        attest_runner *r = make_runner_with(isolate, 1);
        attest_case_record rec = judge(r, 0.5f);
        expect(&rec, ATTEST_VERDICT_OK, NULL);
        rec = judge(r, 4.0f);
        expect(&rec, ATTEST_VERDICT_GRAPH_MISMATCH, "graph replay differs from the eager run");
        assert_true(rec.integrity_flags & ATTEST_INTEGRITY_GRAPH);
        expect(&rec, ATTEST_VERDICT_GRAPH_MISMATCH,
               "'logits' 77 of 128 elements, first at flat 1 (eager 196, replay -inf)");
        rec = judge(r, 5.0f);
        expect(&rec, ATTEST_VERDICT_GRAPH_MISMATCH, "the launch cannot be captured");
        rec = judge(r, 0.5f);
        expect(&rec, ATTEST_VERDICT_OK, NULL);
        attest_runner_destroy(r);

        assert_int_equal(attest_register_device_ops(&fake_ops), 0);
        r = make_runner_with(isolate, 1);
        rec = judge(r, 0.5f);
        expect(&rec, ATTEST_VERDICT_HARNESS_ERROR, "no graph support");
        attest_runner_destroy(r);
    }
    /* Without the option, the baked-in toy passes: it is right when run eagerly. */
    assert_int_equal(attest_register_device_ops(&graph_ops), 0);
    attest_runner *r = make_runner(1);
    attest_case_record rec = judge(r, 4.0f);
    expect(&rec, ATTEST_VERDICT_OK, NULL);
    attest_runner_destroy(r);
    assert_int_equal(attest_register_device_ops(NULL), 0);
}

/* A table missing a required op is refused. */
static void test_register_incomplete(void **state)
{
    (void)state;
    attest_device_ops bad = fake_ops;
    bad.synchronize = NULL;
    assert_int_equal(attest_register_device_ops(&bad), -1);
    bad = fake_ops;
    bad.struct_size = 8;
    assert_int_equal(attest_register_device_ops(&bad), -1);
    assert_null(attest_device_ops_get());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_device),
        cmocka_unit_test(test_device_isolated),
        cmocka_unit_test(test_device_in_process),
        cmocka_unit_test(test_register_incomplete),
        cmocka_unit_test(test_graph_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
