/* The runner (runner.h): per case, place in the arena, run `reruns` times with integrity
 * checks, compare with the reference, and decide the verdict. */
#include "attest/clock.h"
#include "attest/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "attest/conventions.h"
#include "attest/policy.h"
#include "execute.h"
#include "runner_internal.h"
#include "worker.h"

struct attest_runner {
    const attest_candidate *cand;
    attest_runner_options opt;
    const attest_policy *policy;
    arena arena;
    worker worker;          /* isolated mode */
    exec_state local;       /* in-process mode */
    uint64_t judged;
    char device[96];
    runner_scratch scratch;
    double *ref[ATTEST_RECORD_MAX_OUTPUTS];
    size_t ref_cap[ATTEST_RECORD_MAX_OUTPUTS];
    double *bound[ATTEST_RECORD_MAX_OUTPUTS]; /* element error bounds; unused without them */
    size_t bound_cap[ATTEST_RECORD_MAX_OUTPUTS];
    int bounded;                              /* this case's bounds were computed */
    uint8_t *first[ATTEST_RECORD_MAX_OUTPUTS]; /* outputs of the first run */
    size_t first_cap[ATTEST_RECORD_MAX_OUTPUTS];
};

attest_runner_options attest_runner_defaults(void)
{
    attest_runner_options o;
    memset(&o, 0, sizeof o);
    o.reruns = 2;
    o.timeout_seconds = 10.0;
    o.isolate = 1;
    return o;
}

attest_status attest_runner_create(const attest_candidate *candidate,
                                   const attest_runner_options *options, attest_runner **out)
{
    ATTEST_RETURN_IF(out == NULL || options == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "runner: options and out must not be NULL");
    *out = NULL;
    ATTEST_FORWARD(attest_candidate_validate(candidate));
    ATTEST_RETURN_IF(options->reruns < 1 || options->reruns > 1000, ATTEST_ERR_INVALID_ARGUMENT,
                     "runner: reruns = %d is outside [1, 1000]", options->reruns);
    ATTEST_RETURN_IF(!(options->timeout_seconds > 0.0 && options->timeout_seconds <= 86400.0),
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "runner: timeout_seconds = %g is outside (0, 86400]",
                     options->timeout_seconds);
    ATTEST_RETURN_IF(options->reference == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "runner: options.reference is required");
    attest_policy *def = NULL;
    if (options->policy == NULL) ATTEST_FORWARD(attest_policy_default(&def));
    attest_runner *r = calloc(1, sizeof *r);
    ATTEST_RETURN_IF(r == NULL, ATTEST_ERR_OUT_OF_MEMORY, "runner: out of memory");
    r->cand = candidate;
    r->opt = *options;
    r->policy = options->policy ? options->policy : def;
    arena_init(&r->arena);
    worker_init(&r->worker, candidate);
    exec_state_init(&r->local, candidate);
    *out = r;
    return ATTEST_OK;
}

void attest_runner_destroy(attest_runner *r)
{
    if (r == NULL) return;
    worker_stop(&r->worker);
    exec_state_fini(&r->local);
    arena_release(&r->arena);
    runner_scratch_free(&r->scratch);
    for (int i = 0; i < ATTEST_RECORD_MAX_OUTPUTS; i++) {
        free(r->ref[i]);
        free(r->bound[i]);
        free(r->first[i]);
    }
    free(r);
}

unsigned long attest_runner_worker_starts(const attest_runner *r)
{
    return r ? r->worker.forks : 0;
}

const char *attest_runner_device(const attest_runner *r) { return r ? r->device : ""; }

static attest_status grow(void **p, size_t *cap, size_t bytes)
{
    if (bytes <= *cap && *p) return ATTEST_OK;
    void *q = realloc(*p, bytes ? bytes : 1);
    ATTEST_RETURN_IF(q == NULL, ATTEST_ERR_OUT_OF_MEMORY, "runner: cannot allocate %zu bytes",
                     bytes);
    *p = q;
    *cap = bytes;
    return ATTEST_OK;
}

/* What one judged case found, gathered before the verdict is decided. */
typedef struct findings {
    exec_outcome terminal;      /* EXEC_DONE unless a run ended the case */
    int first_done;             /* the first run's outputs were captured */
    int ref_state;              /* 0 not computed, 1 ok, -1 failed */
    char terminal_msg[256];
    char canary_msg[192];
    char input_msg[192];
    char nondet_msg[192];
    char cand_msg[224];
    char compare_msg[256];
    char ref_msg[200];
    char graph_msg[200];
} findings;

/* The arithmetic models of the case's outputs when the policy asks for computed bounds for
 * any of them (1), else 0; -1 when an output has no policy entry (the comparison reports it). */
static int bound_models(const attest_policy *policy, const attest_case *cc, const size_t *outs,
                        size_t num_out, attest_bound_model *models)
{
    int any = 0;
    for (size_t k = 0; k < num_out; k++) {
        attest_tolerance tol;
        if (attest_policy_lookup(policy, cc->kernel, cc->tensors[outs[k]].name, &tol) != ATTEST_OK) {
            attest_clear_error();
            return -1;
        }
        models[k] = tol.model;
        any |= tol.bound_factor >= 0;
    }
    return any;
}

static void compute_reference(attest_runner *r, const attest_case *cc, const size_t *outs,
                              size_t num_out, attest_case_record *rec, findings *f)
{
    const double t0 = attest_monotonic_seconds();
    attest_status st = ATTEST_OK;
    attest_bound_model models[ATTEST_RECORD_MAX_OUTPUTS];
    r->bounded = bound_models(r->policy, cc, outs, num_out, models) > 0;
    for (size_t k = 0; k < num_out && st == ATTEST_OK; k++) {
        size_t n = attest_tensor_count(&cc->tensors[outs[k]]);
        st = grow((void **)&r->ref[k], &r->ref_cap[k], n * sizeof(double));
        if (st == ATTEST_OK && r->bounded)
            st = grow((void **)&r->bound[k], &r->bound_cap[k], n * sizeof(double));
    }
    if (st == ATTEST_OK) st = r->opt.reference(cc, models, r->ref, r->bounded ? r->bound : NULL);
    rec->ref_seconds = attest_monotonic_seconds() - t0;
    f->ref_state = st == ATTEST_OK ? 1 : -1;
    if (st != ATTEST_OK)
        snprintf(f->ref_msg, sizeof f->ref_msg, "reference failed: %s", attest_last_error());
}

/* Integrity checks after a run that returned: canaries, inputs, determinism. */
static void check_run(attest_runner *r, const attest_case *cc, const size_t *outs, size_t num_out,
                      int run, attest_case_record *rec, findings *f)
{
    char buf[160];
    if (arena_check_canaries(&r->arena, buf, sizeof buf) > 0) {
        if (!(rec->integrity_flags & ATTEST_INTEGRITY_CANARY))
            snprintf(f->canary_msg, sizeof f->canary_msg, "run %d: %s", run + 1, buf);
        rec->integrity_flags |= ATTEST_INTEGRITY_CANARY;
    }
    if (arena_check_inputs(&r->arena, cc, buf, sizeof buf) > 0) {
        if (!(rec->integrity_flags & ATTEST_INTEGRITY_INPUT_MODIFIED))
            snprintf(f->input_msg, sizeof f->input_msg, "run %d: %s", run + 1, buf);
        rec->integrity_flags |= ATTEST_INTEGRITY_INPUT_MODIFIED;
    }
    for (size_t k = 0; k < num_out; k++) {
        const attest_tensor *t = &cc->tensors[outs[k]];
        const uint8_t *now = arena_tensor(&r->arena, outs[k]);
        if (run == 0) {
            memcpy(r->first[k], now, t->nbytes);
            continue;
        }
        if (memcmp(r->first[k], now, t->nbytes) == 0) continue;
        if (!(rec->integrity_flags & ATTEST_INTEGRITY_NONDETERMINISM)) {
            size_t es = attest_dtype_size(t->dtype), i = 0, differ = 0, first = 0;
            for (i = 0; i < t->nbytes / es; i++)
                if (memcmp(r->first[k] + i * es, now + i * es, es) != 0 && differ++ == 0)
                    first = i;
            snprintf(f->nondet_msg, sizeof f->nondet_msg,
                     "run %d differs bitwise from run 1: '%s' %zu elements, first at flat %zu",
                     run + 1, t->name, differ, first);
        }
        rec->integrity_flags |= ATTEST_INTEGRITY_NONDETERMINISM;
    }
}

static attest_verdict decide(const attest_case_record *rec, const findings *f)
{
    switch (f->terminal) {
    case EXEC_CRASH:
    case EXEC_DEVICE_FAULT: return ATTEST_VERDICT_CRASH;
    case EXEC_TIMEOUT: return ATTEST_VERDICT_TIMEOUT;
    case EXEC_HARNESS_ERROR:
    case EXEC_INIT_FAILED: return ATTEST_VERDICT_HARNESS_ERROR;
    default: break;
    }
    /* Only when there were outputs to judge: isolated and in-process runs agree then (an
     * isolated run computes the reference before it knows the candidate declines). */
    if (f->ref_state < 0 && f->first_done) return ATTEST_VERDICT_HARNESS_ERROR;
    if (f->terminal == EXEC_UNSUPPORTED) return ATTEST_VERDICT_UNSUPPORTED;
    if (rec->integrity_flags & ATTEST_INTEGRITY_CANARY) return ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE;
    if (rec->integrity_flags & ATTEST_INTEGRITY_INPUT_MODIFIED) return ATTEST_VERDICT_INPUT_MODIFIED;
    if (rec->integrity_flags & ATTEST_INTEGRITY_NONDETERMINISM)
        return ATTEST_VERDICT_NONDETERMINISTIC;
    if (rec->failed_gates || (rec->integrity_flags & ATTEST_INTEGRITY_CANDIDATE_ERROR))
        return ATTEST_VERDICT_MISMATCH;
    if (rec->integrity_flags & ATTEST_INTEGRITY_GRAPH) return ATTEST_VERDICT_GRAPH_MISMATCH;
    return ATTEST_VERDICT_OK;
}

/* The message leads with what decided the verdict, then the other findings. */
static void compose_message(attest_case_record *rec, const findings *f)
{
    const char *parts[] = {f->terminal_msg, f->ref_msg,  f->canary_msg,  f->input_msg,
                           f->nondet_msg,   f->cand_msg, f->compare_msg, f->graph_msg};
    size_t n = 0;
    rec->message[0] = '\0';
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (parts[i][0] == '\0' || n + 3 >= sizeof rec->message) continue;
        int w = snprintf(rec->message + n, sizeof rec->message - n, "%s%s", n ? "; " : "",
                         parts[i]);
        if (w > 0) n += (size_t)w;
        if (n >= sizeof rec->message) n = sizeof rec->message - 1;
    }
}

/* Runs the candidate `reruns` times; the reference is computed while the first isolated run
 * is in flight (the worker runs on another core). */
static attest_status run_all(attest_runner *r, const attest_case *cc, const size_t *outs,
                             size_t num_out, attest_case_record *rec, findings *f)
{
    for (int run = 0; run < r->opt.reruns; run++) {
        if (run > 0) arena_reset_run(&r->arena, cc);
        exec_request req = {EXEC_MAGIC, run == 0, r->arena.generation, r->opt.timeout_seconds,
                            run == 0 && r->opt.graph_check, 0};
        /* In this process the protection of a sparse pool's unplaced pages can outlive the run
         * (arena_guard); a worker protects around each run in its own address space. */
        if (!r->opt.isolate && r->cand->domain != ATTEST_DOMAIN_DEVICE)
            req.guarded = arena_guard(&r->arena) == 0;
        exec_result res;
        if (r->opt.isolate) {
            ATTEST_FORWARD(worker_send(&r->worker, &r->arena, &req, r->opt.timeout_seconds));
            if (f->ref_state == 0) compute_reference(r, cc, outs, num_out, rec, f);
            worker_wait(&r->worker, &res);
        } else {
            exec_run(&r->local, r->arena.control, &req, &res);
        }
        rec->reruns = run + 1;
        if (res.graph_mismatch && !(rec->integrity_flags & ATTEST_INTEGRITY_GRAPH)) {
            rec->integrity_flags |= ATTEST_INTEGRITY_GRAPH;
            snprintf(f->graph_msg, sizeof f->graph_msg, "%s", res.graph_msg);
        }
        if (res.device[0]) snprintf(r->device, sizeof r->device, "%s", res.device);
        if (res.outcome != EXEC_DONE && res.outcome != EXEC_CANDIDATE_ERROR) {
            f->terminal = (exec_outcome)res.outcome;
            if (r->opt.reruns > 1)
                snprintf(f->terminal_msg, sizeof f->terminal_msg, "run %d of %d: %s", run + 1,
                         r->opt.reruns, res.message);
            else
                snprintf(f->terminal_msg, sizeof f->terminal_msg, "%s", res.message);
            return ATTEST_OK;
        }
        check_run(r, cc, outs, num_out, run, rec, f);
        f->first_done = 1;
        if (res.outcome == EXEC_CANDIDATE_ERROR) {
            rec->integrity_flags |= ATTEST_INTEGRITY_CANDIDATE_ERROR;
            snprintf(f->cand_msg, sizeof f->cand_msg, "run %d: %s", run + 1, res.message);
            return ATTEST_OK; /* its outputs are judged as they are; re-runs would add nothing */
        }
    }
    return ATTEST_OK;
}

static void keep_outputs(const attest_runner *r, const attest_case *cc, const size_t *outs,
                         size_t num_out, const findings *f, attest_case_outputs *keep)
{
    keep->num_outputs = (int32_t)num_out;
    for (size_t k = 0; k < num_out; k++) {
        const attest_tensor *t = &cc->tensors[outs[k]];
        if (f->ref_state > 0) {
            size_t bytes = attest_tensor_count(t) * sizeof(double);
            keep->reference[k] = malloc(bytes ? bytes : 1);
            if (keep->reference[k]) memcpy(keep->reference[k], r->ref[k], bytes);
            if (r->bounded) {
                keep->bound[k] = malloc(bytes ? bytes : 1);
                if (keep->bound[k]) memcpy(keep->bound[k], r->bound[k], bytes);
            }
        }
        if (f->first_done) {
            keep->candidate[k] = malloc(t->nbytes ? t->nbytes : 1);
            if (keep->candidate[k]) {
                memcpy(keep->candidate[k], r->first[k], t->nbytes);
                keep->candidate_bytes[k] = t->nbytes;
            }
        }
    }
}

static void start_record(attest_runner *r, const attest_case *c, attest_case_record *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->case_id = r->judged++;
    rec->seed = c->seed;
    if (attest_case_param_string(c, rec->params, sizeof rec->params) != ATTEST_OK) {
        rec->params[sizeof rec->params - 1] = '\0';
        attest_clear_error();
    }
    snprintf(rec->candidate, sizeof rec->candidate, "%s", r->cand->name);
}

/* Records a harness failure that stops the campaign, and returns it. */
static attest_status harness_failure(attest_case_record *rec, attest_status st)
{
    rec->verdict = ATTEST_VERDICT_HARNESS_ERROR;
    snprintf(rec->message, sizeof rec->message, "%s", attest_last_error());
    return st;
}

attest_status attest_runner_judge(attest_runner *r, const attest_case *c,
                                  attest_case_record *record, attest_case_outputs *keep)
{
    ATTEST_RETURN_IF(r == NULL || c == NULL || record == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "runner_judge: runner, case and record must not be NULL");
    if (keep) memset(keep, 0, sizeof *keep);
    start_record(r, c, record);
    if (c->kernel != r->cand->kernel)
        return harness_failure(record, attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                                                   "case is for %s but candidate '%s' is for %s",
                                                   attest_kernel_name(c->kernel), r->cand->name,
                                                   attest_kernel_name(r->cand->kernel)));
    /* The reference, the candidate and the comparator all see the candidate's conventions. */
    attest_case cc = *c;
    cc.heap_block_ = NULL;
    attest_conventions_apply(&r->cand->conventions, &cc);

    size_t outs[ATTEST_RECORD_MAX_OUTPUTS], num_out = 0;
    for (size_t i = 0; i < cc.num_tensors; i++) {
        if (cc.tensors[i].role != ATTEST_ROLE_OUTPUT) continue;
        if (num_out == ATTEST_RECORD_MAX_OUTPUTS)
            return harness_failure(record, attest_fail(ATTEST_ERR_INTERNAL,
                                                       "case has more than %d outputs",
                                                       ATTEST_RECORD_MAX_OUTPUTS));
        attest_status st = grow((void **)&r->first[num_out], &r->first_cap[num_out],
                                cc.tensors[i].nbytes);
        if (st != ATTEST_OK) return harness_failure(record, st);
        outs[num_out++] = i;
    }
    const double t_run = attest_monotonic_seconds();
    int remapped = 0;
    attest_status st = arena_place(&r->arena, &cc, &remapped);
    if (st != ATTEST_OK) return harness_failure(record, st);

    findings f;
    memset(&f, 0, sizeof f);
    st = run_all(r, &cc, outs, num_out, record, &f);
    if (st != ATTEST_OK) return harness_failure(record, st);
    /* The reference overlapped the first isolated run; what remains is the run phase. */
    record->run_seconds = attest_monotonic_seconds() - t_run - record->ref_seconds;
    if (record->run_seconds < 0) record->run_seconds = 0;

    const int judged_outputs = f.first_done;
    if ((judged_outputs || keep) && f.ref_state == 0)
        compute_reference(r, &cc, outs, num_out, record, &f);
    if (judged_outputs && f.ref_state > 0) {
        const double t0 = attest_monotonic_seconds();
        void *cand[ATTEST_RECORD_MAX_OUTPUTS] = {0};
        for (size_t k = 0; k < num_out; k++) cand[k] = r->first[k];
        double *none[ATTEST_RECORD_MAX_OUTPUTS] = {0};
        st = runner_compare_outputs(&cc, r->policy, r->ref, r->bounded ? r->bound : none, cand,
                                    record, &r->scratch, f.compare_msg, sizeof f.compare_msg);
        record->compare_seconds = attest_monotonic_seconds() - t0;
        if (st != ATTEST_OK) return harness_failure(record, st);
    } else {
        record->num_outputs = (int32_t)num_out;
        for (size_t k = 0; k < num_out; k++)
            snprintf(record->outputs[k].output, sizeof record->outputs[k].output, "%s",
                     cc.tensors[outs[k]].name);
    }
    record->verdict = decide(record, &f);
    compose_message(record, &f);
    if (keep) keep_outputs(r, &cc, outs, num_out, &f, keep);
    return ATTEST_OK;
}
