/* One run of a candidate on the arena (execute.h), host or device. */
#include "execute.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attest/clock.h"
#include "attest/device.h"

static _Thread_local exec_run_info *current_run;

exec_run_info *exec_current_run(void) { return current_run; }

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
    if (on_device && ops->copy_h2d(s->device_base, host_data, data_bytes) != 0) {
        set_result(res, EXEC_HARNESS_ERROR, 0, "copy to the device failed: %s",
                   ops->last_error());
        return;
    }
    if (req->check_supports && cand->supports && !cand->supports(s->ctx, &args)) {
        set_result(res, EXEC_UNSUPPORTED, 0, "%s", "the candidate declined the case");
        return;
    }
    const double t0 = attest_monotonic_seconds();
    current_run = &info;
    const int rc = cand->run(s->ctx, &args);
    current_run = NULL;
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
        if (ops->copy_d2h(host_data, s->device_base, data_bytes) != 0) {
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
}
