/* One run of a candidate on the arena (execute.h), host or device. */
#include "execute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest/clock.h"
#include "attest/device.h"
#include "attest/numerics.h"
#include "attest/runner.h"

static _Thread_local exec_run_info *current_run;

exec_run_info *exec_current_run(void) { return current_run; }

const arena_control *volatile exec_guarded;

void exec_state_init(exec_state *s, const attest_candidate *cand)
{
    memset(s, 0, sizeof *s);
    s->cand = cand;
}

void exec_state_fini(exec_state *s)
{
    if (s->initialized && s->init_rc == 0 && s->cand->fini) s->cand->fini(s->ctx);
    const attest_device_ops *ops = attest_device_ops_get();
    if (s->device_base && ops) ops->free(s->device_base);
    s->device_base = NULL;
    s->device_cap = 0;
    s->initialized = 0;
    s->ctx = NULL;
}

static void set_result(exec_result *res, exec_outcome outcome, int rc, const char *fmt,
                       const char *arg)
{
    res->outcome = outcome;
    res->rc = rc;
    snprintf(res->message, sizeof res->message, fmt, arg);
}

/* Opens the device on first use and sizes the mirror; returns 0 when the case can run. */
static int device_prepare(exec_state *s, const attest_device_ops *ops, size_t bytes,
                          exec_result *res)
{
    if (s->device_state == 0) {
        s->device_msg[0] = '\0';
        if (ops->open(s->device_msg, sizeof s->device_msg) != 0) {
            s->device_state = -1;
            if (s->device_msg[0] == '\0')
                snprintf(s->device_msg, sizeof s->device_msg, "%s", ops->last_error());
        } else {
            s->device_state = 1;
            if (ops->describe && ops->describe(s->device_desc, sizeof s->device_desc) != 0)
                s->device_desc[0] = '\0';
        }
    }
    if (s->device_state < 0) {
        set_result(res, EXEC_UNSUPPORTED, 0, "no usable device: %s", s->device_msg);
        return -1;
    }
    snprintf(res->device, sizeof res->device, "%s", s->device_desc);
    if (bytes > s->device_cap) {
        ops->free(s->device_base);
        s->device_base = NULL;
        s->device_cap = 0;
        if (ops->alloc(&s->device_base, bytes) != 0) {
            s->device_base = NULL;
            set_result(res, EXEC_HARNESS_ERROR, 0, "device allocation failed: %s",
                       ops->last_error());
            return -1;
        }
        s->device_cap = bytes;
    }
    return 0;
}

typedef struct region_copy {
    const attest_device_ops *ops;
    uint8_t *host, *dev;
    int to_device;
} region_copy;

static int copy_range(void *ctx, uint64_t at, uint64_t len)
{
    const region_copy *c = ctx;
    return c->to_device ? c->ops->copy_h2d(c->dev + at, c->host + at, len)
                        : c->ops->copy_d2h(c->host + at, c->dev + at, len);
}

/* Copies the arena's data region to or from the device mirror: whole, or, with sparse pools,
 * without their unplaced pages (never written, and PROT_NONE while a candidate runs). */
static int copy_region(const attest_device_ops *ops, const arena_control *ctl, void *device_base,
                       int to_device)
{
    /* device address of arena offset 0 */
    region_copy c = {ops, (uint8_t *)ctl, (uint8_t *)device_base - ctl->data_begin, to_device};
    return arena_for_each_placed(ctl, copy_range, &c) ? -1 : 0;
}

/* --- the graph check (attest_runner_options.graph_check) ----------------------------------- */

/* What the capture sees in place of the case's lengths and page tables: lengths 1, pages 0.
 * Any kernel whose launch depends on them (a grid sized from the lengths on the host, a length
 * passed by value) then replays the capture-time shape on the real case. Returns the value to
 * write, or -1 for a tensor the capture leaves as it is. */
static int capture_time_value(const attest_tensor *t)
{
    if (t->role != ATTEST_ROLE_INPUT || t->dtype != ATTEST_DTYPE_I32) return -1;
    if (!strcmp(t->name, "context_lens") || !strcmp(t->name, "topk_length") ||
        !strcmp(t->name, "extra_topk_length"))
        return 1;
    if (!strcmp(t->name, "block_table")) return 0;
    return -1;
}

static void fill_poison(const attest_tensor *t, uint8_t *buf)
{
    const size_t n = attest_tensor_count(t);
    if (t->dtype == ATTEST_DTYPE_F32) {
        const uint32_t p = ATTEST_POISON_F32;
        for (size_t i = 0; i < n; i++) memcpy(buf + 4 * i, &p, 4);
    } else if (t->dtype == ATTEST_DTYPE_BF16) {
        const uint16_t p = ATTEST_POISON_BF16;
        for (size_t i = 0; i < n; i++) memcpy(buf + 2 * i, &p, 2);
    } else {
        memset(buf, ATTEST_POISON_BYTE, t->nbytes);
    }
}

static void describe_element(const attest_tensor *t, const uint8_t *p, char *buf, size_t cap)
{
    if (t->dtype == ATTEST_DTYPE_F32) {
        float v;
        memcpy(&v, p, 4);
        snprintf(buf, cap, "%.9g", (double)v);
    } else if (t->dtype == ATTEST_DTYPE_BF16) {
        uint16_t v;
        memcpy(&v, p, 2);
        snprintf(buf, cap, "%.5g", (double)attest_bf16_decode(v));
    } else {
        snprintf(buf, cap, "0x%02x", p[0]);
    }
}

/* Bitwise comparison of one output: eager (the arena) against the replay. */
static int graph_compare(const attest_tensor *t, const uint8_t *eager, const uint8_t *replay,
                         exec_result *res)
{
    const size_t es = attest_dtype_size(t->dtype), n = attest_tensor_count(t);
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(eager + i * es, replay + i * es, es) != 0 && differ++ == 0) first = i;
    if (differ == 0) return 0;
    char a[32], b[32];
    describe_element(t, eager + first * es, a, sizeof a);
    describe_element(t, replay + first * es, b, sizeof b);
    res->graph_mismatch = 1;
    char msg[512]; /* room for every field; the result keeps its first 199 characters */
    snprintf(msg, sizeof msg,
             "graph replay differs from the eager run: '%s' %zu of %zu elements, first at flat "
             "%zu (eager %s, replay %s)",
             t->name, differ, n, first, a, b);
    snprintf(res->graph_msg, sizeof res->graph_msg, "%.199s", msg);
    return 1;
}

static void graph_fail(exec_result *res, const char *what, const char *why)
{
    res->graph_mismatch = 1;
    snprintf(res->graph_msg, sizeof res->graph_msg, "graph check: %s: %.120s", what, why);
}

/* Captures run() with capture-time inputs, restores the case, replays, compares. `dev` is the
 * case with device pointers, `host` the same case in the arena (eager outputs already there).
 * Returns nonzero when it ended the run (res->outcome says how: a device fault, or a check the
 * harness could not make). */
static int graph_check(exec_state *s, const attest_device_ops *ops, const attest_case *dev,
                       const attest_case *host, const attest_kernel_args *args, exec_result *res)
{
    if (!ATTEST_DEVICE_HAS_OP(ops, graph_release) || !ops->graph_begin || !ops->graph_end ||
        !ops->graph_launch) {
        set_result(res, EXEC_HARNESS_ERROR, 0, "%s",
                   "graph check: the device ops have no graph support");
        return 1;
    }
    size_t scratch_bytes = 1;
    for (size_t i = 0; i < dev->num_tensors; i++)
        if (dev->tensors[i].nbytes > scratch_bytes) scratch_bytes = dev->tensors[i].nbytes;
    uint8_t *scratch = malloc(scratch_bytes);
    if (!scratch) {
        set_result(res, EXEC_HARNESS_ERROR, 0, "%s", "graph check: out of memory");
        return 1;
    }
    int fault = 0, failed = 0;
    for (size_t i = 0; i < dev->num_tensors && !failed; i++) {
        const int v = capture_time_value(&dev->tensors[i]);
        if (v < 0) continue;
        const size_t n = attest_tensor_count(&dev->tensors[i]);
        for (size_t k = 0; k < n; k++) memcpy(scratch + 4 * k, &v, 4);
        failed = ops->copy_h2d(dev->tensors[i].data, scratch, dev->tensors[i].nbytes) != 0;
    }
    if (failed) graph_fail(res, "copy to the device", ops->last_error());
    if (!failed) {
        if (ops->graph_begin() != 0) {
            graph_fail(res, "cannot begin a capture", ops->last_error());
            failed = 1;
        } else {
            const int rc = s->cand->run(s->ctx, args);
            const int end = ops->graph_end();
            if (rc != 0 || end != 0) {
                char why[160];
                snprintf(why, sizeof why, "%s%s", rc ? "run() failed while capturing; " : "",
                         end ? ops->last_error() : "");
                graph_fail(res, "the launch cannot be captured", why);
                failed = 1;
                ops->synchronize(); /* clears the capture's error; a real fault comes back */
            }
        }
    }
    /* Restore the case's inputs and poison the outputs, in the same buffers. */
    for (size_t i = 0; i < dev->num_tensors; i++) {
        const attest_tensor *t = &dev->tensors[i];
        if (capture_time_value(t) >= 0) {
            if (ops->copy_h2d(t->data, host->tensors[i].data, t->nbytes) != 0) fault = 1;
        } else if (t->role == ATTEST_ROLE_OUTPUT) {
            fill_poison(t, scratch);
            if (ops->copy_h2d(t->data, scratch, t->nbytes) != 0) fault = 1;
        }
    }
    if (!failed && !fault) {
        if (ops->graph_launch() != 0 || ops->synchronize() != 0) {
            fault = 1;
        } else {
            for (size_t i = 0; i < dev->num_tensors && !fault; i++) {
                const attest_tensor *t = &dev->tensors[i];
                if (t->role != ATTEST_ROLE_OUTPUT) continue;
                if (ops->copy_d2h(scratch, t->data, t->nbytes) != 0) fault = 1;
                else if (graph_compare(t, host->tensors[i].data, scratch, res)) break;
            }
        }
    }
    ops->graph_release();
    free(scratch);
    if (fault) set_result(res, EXEC_DEVICE_FAULT, 0, "device fault in the graph check: %s",
                          ops->last_error());
    return fault;
}

void exec_run(exec_state *s, arena_control *ctl, const exec_request *req, exec_result *res)
{
    memset(res, 0, sizeof *res);
    const attest_candidate *cand = s->cand;
    const int on_device = cand->domain == ATTEST_DOMAIN_DEVICE;
    const attest_device_ops *ops = on_device ? attest_device_ops_get() : NULL;
    if (on_device && ops == NULL) {
        set_result(res, EXEC_UNSUPPORTED, 0, "%s",
                   "no device ops registered (attest built without CUDA?)");
        return;
    }
    /* The candidate gets a private copy of the case: params live on this side, and in a
     * worker the control page is read-only. */
    attest_case local = ctl->placed;
    uint8_t *host_data = (uint8_t *)ctl + ctl->data_begin;
    const size_t data_bytes = ctl->used - ctl->data_begin;
    if (on_device) {
        if (device_prepare(s, ops, data_bytes, res) != 0) return;
        for (size_t i = 0; i < local.num_tensors; i++) {
            uint8_t *p = local.tensors[i].data;
            if (p) local.tensors[i].data = (uint8_t *)s->device_base + (p - host_data);
        }
    }
    exec_run_info info;
    memset(&info, 0, sizeof info);
    info.cand = cand;
    info.placed = &local;
    info.region = host_data;
    info.region_bytes = data_bytes;
    info.control = ctl;
    info.check_supports = req->check_supports;
    if (req->timeout_seconds > 0) info.deadline = attest_monotonic_seconds() + req->timeout_seconds;
    info.outcome = EXEC_DONE;
    if (!s->initialized) {
        s->initialized = 1;
        current_run = &info;
        s->init_rc = cand->init ? cand->init(&s->ctx) : 0;
        current_run = NULL;
    }
    if (s->init_rc != 0) {
        res->outcome = EXEC_INIT_FAILED;
        res->rc = s->init_rc;
        snprintf(res->message, sizeof res->message, "candidate init() returned %d", s->init_rc);
        return;
    }
    attest_kernel_args args;
    memset(&args, 0, sizeof args);
    if (attest_case_args(&local, &args) != ATTEST_OK) {
        set_result(res, EXEC_HARNESS_ERROR, 0, "cannot hand the case over: %s",
                   attest_last_error());
        return;
    }
    args.domain = cand->domain;
    if (on_device && copy_region(ops, ctl, s->device_base, 1) != 0) {
        set_result(res, EXEC_HARNESS_ERROR, 0, "copy to the device failed: %s",
                   ops->last_error());
        return;
    }
    if (req->check_supports && cand->supports && !cand->supports(s->ctx, &args)) {
        set_result(res, EXEC_UNSUPPORTED, 0, "%s", "the candidate declined the case");
        return;
    }
    /* A host candidate's access to a sparse pool's unplaced pages faults (the worker names the
     * page: worker.c); the protection lasts only the run, the harness itself never needs it. */
    const int guard = !on_device && ctl->num_sparse > 0 && !req->guarded;
    if (guard && arena_protect_sparse(ctl, 1) != 0) {
        (void)arena_protect_sparse(ctl, 0);
        set_result(res, EXEC_HARNESS_ERROR, 0, "%s",
                   "cannot protect the unplaced pages of a sparse pool (mprotect failed)");
        return;
    }
    exec_guarded = !on_device && ctl->num_sparse > 0 ? ctl : NULL;
    const double t0 = attest_monotonic_seconds();
    current_run = &info;
    const int rc = cand->run(s->ctx, &args);
    current_run = NULL;
    exec_guarded = NULL;
    if (guard && arena_protect_sparse(ctl, 0) != 0) {
        set_result(res, EXEC_HARNESS_ERROR, rc, "%s",
                   "cannot unprotect the pages of a sparse pool (mprotect failed)");
        return;
    }
    if (info.outcome != EXEC_DONE) {
        res->run_seconds = attest_monotonic_seconds() - t0;
        set_result(res, info.outcome, rc, "%s", info.message);
        return;
    }
    if (on_device) {
        /* Synchronize even after a failing run: its queued work may still write. */
        if (ops->synchronize() != 0) {
            set_result(res, EXEC_DEVICE_FAULT, rc, "device fault: %s", ops->last_error());
            return;
        }
        if (copy_region(ops, ctl, s->device_base, 0) != 0) {
            set_result(res, EXEC_DEVICE_FAULT, rc, "copy from the device failed: %s",
                       ops->last_error());
            return;
        }
    }
    res->run_seconds = attest_monotonic_seconds() - t0;
    res->rc = rc;
    if (rc != 0) {
        res->outcome = EXEC_CANDIDATE_ERROR;
        snprintf(res->message, sizeof res->message, "candidate run() returned %d", rc);
        return;
    }
    res->outcome = EXEC_DONE;
    if (on_device && req->graph_check && graph_check(s, ops, &local, &ctl->placed, &args, res))
        return; /* res says what ended it */
}
