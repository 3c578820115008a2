/* External-process candidates of the indexer and mla-decode families (external.h): run()
 * driving the serving process through the control channel and the shared region. What every
 * family's bridge shares (spec, start, declaration) is external_def.c. */
#include "attest/external.h"

#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "attest/conventions.h"
#include "attest/layout.h"
#include "execute.h"
#include "external_def.h"
#include "external_proc.h"

/* What decides a case's table, compared bytewise from run to run (zeroed first, so padding
 * compares equal). */
typedef struct table_signature {
    attest_kernel kernel;
    union {
        attest_indexer_params indexer;
        attest_mla_params mla;
    } params;
    size_t region_bytes;
    size_t num_tensors;
    struct {
        attest_dtype dtype;
        attest_tensor_role role;
        int32_t rank;
        int64_t shape[ATTEST_TENSOR_MAX_RANK];
        size_t offset, nbytes;
    } tensors[ATTEST_CASE_MAX_TENSORS];
} table_signature;

typedef struct external_state {
    const external_def *def;
    ext_proc proc;
    uint64_t sequence;                      /* run messages sent */
    int faults_printed;
    uint64_t sent_key;                      /* the table the process last received */
    table_signature table_sig;              /* the case `table` was built for */
    int table_valid;
    uint64_t table_key;
    size_t table_len;
    char table[12288];
    pid_t sent_pid;                         /* ... and which process received it */
    int start_failures;
    char start_error[200];
} external_state;

static int external_init(void **ctx);
static void external_fini(void *ctx);
static int external_run(void *ctx, const attest_kernel_args *args);

const char *attest_external_domain(const attest_candidate *cand)
{
    if (cand == NULL || cand->run != external_run) return NULL;
    return ((const external_def *)(const void *)cand)->domain;
}

/* --- messages ------------------------------------------------------------------------------ */

static void params_json(ext_strbuf *b, const attest_case *c)
{
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        const attest_indexer_params *p = &c->params.indexer;
        ext_sb_add(b,
               "{\"b\":%d,\"next_n\":%d,\"heads\":%d,\"head_dim\":%d,\"num_blocks\":%d,"
               "\"blocks_per_req\":%d,\"max_len\":%d,\"topk\":%d,\"topk_rule\":%d}",
               p->b, p->next_n, p->heads, p->head_dim, p->num_blocks, p->blocks_per_req,
               p->max_len, p->topk, (int)p->topk_rule);
    } else {
        const attest_mla_params *p = &c->params.mla;
        ext_sb_add(b,
               "{\"layout\":\"%s\",\"page_size\":%d,\"page_stride\":%" PRId64
               ",\"num_pages\":%d,\"b\":%d,\"s_q\":%d,\"h_q\":%d,\"d_qk\":%d,\"d_v\":%d,"
               "\"topk\":%d,\"sm_scale\":%.9g,\"has_topk_length\":%d,\"has_sink\":%d,"
               "\"has_extra\":%d,\"extra_page_size\":%d,\"extra_page_stride\":%" PRId64
               ",\"extra_num_pages\":%d,\"extra_topk\":%d,\"has_extra_topk_length\":%d}",
               attest_layout_name(p->layout), p->page_size, p->page_stride, p->num_pages, p->b,
               p->s_q, p->h_q, p->d_qk, p->d_v, p->topk, (double)p->sm_scale, p->has_topk_length,
               p->has_sink, p->has_extra, p->extra_page_size, p->extra_page_stride,
               p->extra_num_pages, p->extra_topk, p->has_extra_topk_length);
    }
}

/* The tensor table, offsets relative to the region start. */
static void tensors_json(ext_strbuf *b, const attest_case *c, const uint8_t *region)
{
    ext_sb_add(b, "[");
    int first = 1;
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role == ATTEST_ROLE_TRUTH || t->data == NULL) continue;
        ext_sb_add(b, "%s{\"name\":\"%s\",\"dtype\":\"%s\",\"role\":\"%s\",\"offset\":%zu,"
                  "\"nbytes\":%zu,\"shape\":[",
               first ? "" : ",", t->name, attest_dtype_name(t->dtype),
               t->role == ATTEST_ROLE_INPUT ? "input" : "output",
               (size_t)((const uint8_t *)t->data - region), t->nbytes);
        for (int d = 0; d < t->rank; d++) ext_sb_add(b, "%s%" PRId64, d ? "," : "", t->shape[d]);
        ext_sb_add(b, "]}");
        first = 0;
    }
    ext_sb_add(b, "]");
}

attest_status attest_external_load(const char *spec, const attest_candidate **out)
{
    ATTEST_RETURN_IF(out == NULL, ATTEST_ERR_INVALID_ARGUMENT, "external: out must not be NULL");
    *out = NULL;
    external_def *d = NULL;
    ATTEST_FORWARD(ext_def_load(spec, 0, &d));
    d->cand.abi_version = ATTEST_CANDIDATE_ABI_VERSION;
    d->cand.struct_size = sizeof d->cand;
    d->cand.name = d->name;
    d->cand.description = d->description;
    d->cand.domain = ATTEST_DOMAIN_HOST; /* the runner hands over host memory; see external.h */
    d->cand.init = external_init;
    d->cand.fini = external_fini;
    d->cand.run = external_run;
    ATTEST_FORWARD(attest_candidate_validate(&d->cand));
    *out = &d->cand;
    return ATTEST_OK;
}

/* --- running a case ------------------------------------------------------------------------ */

static int external_init(void **ctx)
{
    exec_run_info *info = exec_current_run();
    if (info == NULL) return -1; /* only the harness's executor can drive it */
    external_state *s = calloc(1, sizeof *s);
    if (s == NULL) return -1;
    s->def = (const external_def *)(const void *)info->cand;
    ext_proc_init(&s->proc);
    *ctx = s;
    return 0;
}

static void external_fini(void *ctx)
{
    external_state *s = ctx;
    if (s == NULL) return;
    if (s->proc.pid > 0) {
        static const char stop[] = "{\"op\":\"stop\"}";
        (void)ext_proc_send(&s->proc, stop, sizeof stop - 1);
    }
    ext_proc_release(&s->proc);
    free(s);
}

/* Ends the run with a verdict-deciding outcome; the process is killed so the next case starts a
 * fresh one, and the last lines of its output are quoted and printed. */
static int fault(external_state *s, exec_run_info *info, exec_outcome outcome, const char *what)
{
    ext_def_fault_line(s->def, &s->proc, &s->faults_printed, what, info->message,
                       sizeof info->message);
    info->outcome = outcome;
    return -1;
}

/* The time the process gets: the caller's deadline less a margin to report a hang as TIMEOUT
 * with its output before the caller gives up and kills the worker. */
static double process_deadline(const exec_run_info *info)
{
    if (info->deadline <= 0) return 0;
    double left = info->deadline - ext_now();
    double margin = left * 0.1 < 0.5 ? left * 0.1 : 0.5;
    return info->deadline - margin;
}

/* The placed bytes between the arena and the shared file, at the same offsets from the region's
 * start: the whole region for a dense case; a sparse pool's extents only (the rest is
 * PROT_NONE in the arena while the candidate runs, and gigabytes). */
typedef struct copy_walk {
    uint8_t *arena; /* arena offset 0 */
    uint8_t *shm;   /* the region's first byte in the file */
    uint64_t begin; /* the region's arena offset */
    int in;         /* 1: arena to file */
} copy_walk;

static int copy_range(void *ctx, uint64_t at, uint64_t len)
{
    const copy_walk *c = ctx;
    if (c->in) memcpy(c->shm + (at - c->begin), c->arena + at, len);
    else memcpy(c->arena + at, c->shm + (at - c->begin), len);
    return 0;
}

static void region_copy(const exec_run_info *info, uint8_t *shm, int in)
{
    const arena_control *ctl = info->control;
    if (ctl == NULL || ctl->num_sparse == 0) {
        if (in) memcpy(shm, info->region, info->region_bytes);
        else memcpy(info->region, shm, info->region_bytes);
        return;
    }
    copy_walk c = {info->region - ctl->data_begin, shm, ctl->data_begin, in};
    (void)arena_for_each_placed(ctl, copy_range, &c);
}

typedef struct unplaced_walk {
    const exec_run_info *info;
    ext_proc *proc;
    ext_strbuf *out;
} unplaced_walk;

static int punch_range(void *ctx, uint64_t at, uint64_t len)
{
    const unplaced_walk *w = ctx;
    /* Without hole punching (a tmpfile fallback) stale bytes stay; the process protects them. */
    (void)fallocate(w->proc->shm_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    (off_t)(at - w->info->control->data_begin), (off_t)len);
    return 0;
}

static int list_range(void *ctx, uint64_t at, uint64_t len)
{
    const unplaced_walk *w = ctx;
    const int first = w->out->used > 0 && w->out->p[w->out->used - 1] == '[';
    ext_sb_add(w->out, "%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",",
               at - w->info->control->data_begin, len);
    return 0;
}

static int handle_reply(external_state *s, exec_run_info *info, const char *line)
{
    json_error_t err;
    json_t *o = json_loads(line, 0, &err);
    char what[200];
    if (!ext_reply_answers(line, o, s->sequence, what, sizeof what)) {
        json_decref(o);
        return fault(s, info, EXEC_HARNESS_ERROR, what);
    }
    const char *op = ext_json_str(o, "op");
    int rc = 0;
    const char *msg = ext_json_str(o, "message");
    if (strcmp(op, "done") == 0) {
        region_copy(info, s->proc.shm, 0);
    } else if (strcmp(op, "unsupported") == 0) {
        info->outcome = EXEC_UNSUPPORTED;
        snprintf(info->message, sizeof info->message, "the candidate declined the case%s%s",
                 msg ? ": " : "", msg ? msg : "");
        rc = -1;
    } else if (strcmp(op, "error") == 0) {
        const char *kind = ext_json_str(o, "kind");
        if (kind && strcmp(kind, "output") == 0) {
            snprintf(what, sizeof what, "the candidate's outputs cannot be taken: %s",
                     msg ? msg : "?");
            rc = fault(s, info, EXEC_HARNESS_ERROR, what);
        } else if (kind && strcmp(kind, "protocol") == 0) {
            snprintf(what, sizeof what, "the process did not follow the protocol: %s",
                     msg ? msg : "?");
            rc = fault(s, info, EXEC_HARNESS_ERROR, what);
        } else {
            snprintf(what, sizeof what, "the candidate raised %s", msg ? msg : "an error");
            rc = fault(s, info, EXEC_CRASH, what);
        }
    } else {
        snprintf(what, sizeof what, "garbage on the control channel: '%.48s'", line);
        rc = fault(s, info, EXEC_HARNESS_ERROR, what);
    }
    json_decref(o);
    return rc;
}

static void make_signature(const exec_run_info *info, table_signature *sig)
{
    memset(sig, 0, sizeof *sig);
    const attest_case *c = info->placed;
    sig->kernel = c->kernel;
    if (c->kernel == ATTEST_KERNEL_INDEXER)
        memcpy(&sig->params.indexer, &c->params.indexer, sizeof c->params.indexer);
    else
        memcpy(&sig->params.mla, &c->params.mla, sizeof c->params.mla);
    sig->region_bytes = info->region_bytes;
    sig->num_tensors = c->num_tensors;
    for (size_t i = 0; i < c->num_tensors && i < ATTEST_CASE_MAX_TENSORS; i++) {
        const attest_tensor *t = &c->tensors[i];
        sig->tensors[i].dtype = t->dtype;
        sig->tensors[i].role = t->role;
        sig->tensors[i].rank = t->rank;
        memcpy(sig->tensors[i].shape, t->shape, sizeof t->shape);
        sig->tensors[i].offset = t->data ? (size_t)((const uint8_t *)t->data - info->region) : 0;
        sig->tensors[i].nbytes = t->nbytes;
    }
}

static int external_run(void *ctx, const attest_kernel_args *args)
{
    (void)args; /* the tensor table of the placed case says the same, with names */
    external_state *s = ctx;
    exec_run_info *info = exec_current_run();
    if (s == NULL || info == NULL) return -1;
    const external_def *d = s->def;
    const double deadline = process_deadline(info);
    char what[200];

    if (s->proc.pid <= 0) {
        if (s->start_failures >= EXT_START_RETRIES) {
            info->outcome = EXEC_HARNESS_ERROR;
            snprintf(info->message, sizeof info->message, "not started again after %d failures: %.150s",
                     EXT_START_RETRIES, s->start_error);
            return -1;
        }
        attest_status st = ext_def_start((external_def *)d, &s->proc, deadline);
        if (st != ATTEST_OK) {
            s->start_failures++;
            snprintf(s->start_error, sizeof s->start_error, "%s", attest_last_error());
            info->outcome = EXEC_HARNESS_ERROR;
            snprintf(info->message, sizeof info->message, "the candidate process did not start: %.150s",
                     s->start_error);
            return -1;
        }
        s->start_failures = 0;
    }
    ext_proc_trim_output(&s->proc, EXT_OUTPUT_LIMIT);
    if (ext_proc_reserve(&s->proc, info->region_bytes) != ATTEST_OK) {
        info->outcome = EXEC_HARNESS_ERROR;
        snprintf(info->message, sizeof info->message, "%s", attest_last_error());
        return -1;
    }
    if (info->control->num_sparse > 0) {
        /* Unplaced pages become holes (they read as zeros and hold no memory) before the
         * placed bytes go in: the file keeps no page of an earlier case there. */
        unplaced_walk w = {info, &s->proc, NULL};
        (void)arena_for_each_unplaced(info->control, punch_range, &w);
    }
    region_copy(info, s->proc.shm, 1);

    /* The table (kernel, conventions, params, tensors) goes only when it differs from the last
     * one this process received: a re-run, or a case of the same shapes, is a short line. The
     * JSON is rebuilt only when the case's signature (parameters, tensor table, region size)
     * changed since the last run. */
    static _Thread_local char msg[16384];
    table_signature sig;
    make_signature(info, &sig);
    if (!s->table_valid || memcmp(&sig, &s->table_sig, sizeof sig) != 0) {
        char conv[160];
        attest_conventions_format(&d->cand.conventions, d->cand.kernel, conv, sizeof conv);
        ext_strbuf tb = {s->table, 0, sizeof s->table, 0};
        ext_sb_add(&tb, "\"kernel\":\"%s\",\"conventions\":\"%s\",\"params\":",
               attest_kernel_name(info->placed->kernel), conv);
        params_json(&tb, info->placed);
        ext_sb_add(&tb, ",\"tensors\":");
        tensors_json(&tb, info->placed, info->region);
        if (tb.overflow) {
            info->outcome = EXEC_HARNESS_ERROR;
            snprintf(info->message, sizeof info->message, "external: the case table overflowed");
            return -1;
        }
        s->table_len = tb.used;
        s->table_key = ext_layout_key(s->table, tb.used, info->region_bytes);
        s->table_sig = sig;
        s->table_valid = 1;
    }
    const uint64_t key = s->table_key;
    /* A sparse case's message lists the region's unplaced ranges (the process maps the file
     * sparsely and makes them inaccessible, as the arena is for a host candidate): up to a few
     * thousand pairs, past the static buffer. */
    char *big = NULL;
    ext_strbuf mb = {msg, 0, sizeof msg, 0};
    if (info->control->num_sparse > 0) {
        const size_t cap = sizeof msg + 48 * ((size_t)info->control->num_extents + 8);
        big = malloc(cap);
        if (big == NULL) {
            info->outcome = EXEC_HARNESS_ERROR;
            snprintf(info->message, sizeof info->message, "external: out of memory");
            return -1;
        }
        mb.p = big;
        mb.cap = cap;
    }
    s->sequence++;
    ext_sb_add(&mb, "{\"op\":\"run\",\"case\":%" PRIu64 ",\"size\":%zu,\"map\":%zu,"
                "\"layout\":\"%016" PRIx64 "\",\"check_supports\":%d",
           s->sequence, info->region_bytes, s->proc.shm_cap, key, info->check_supports);
    if (info->control->num_sparse > 0) {
        unplaced_walk w = {info, &s->proc, &mb};
        ext_sb_add(&mb, ",\"unplaced\":[");
        (void)arena_for_each_unplaced(info->control, list_range, &w);
        ext_sb_add(&mb, "]");
    }
    if (key != s->sent_key || s->sent_pid != s->proc.pid) ext_sb_add(&mb, ",%s", s->table);
    ext_sb_add(&mb, "}");
    if (mb.overflow) {
        free(big);
        info->outcome = EXEC_HARNESS_ERROR;
        snprintf(info->message, sizeof info->message, "external: the run message overflowed");
        return -1;
    }
    s->sent_key = key;
    s->sent_pid = s->proc.pid;
    const int sent = ext_proc_send(&s->proc, mb.p, mb.used);
    free(big);
    if (sent != 0) {
        char how[80];
        ext_proc_describe_exit(&s->proc, EXT_STOP_GRACE_S, how, sizeof how);
        snprintf(what, sizeof what, "the candidate process %s between cases", how);
        return fault(s, info, EXEC_CRASH, what);
    }
    char *line = NULL;
    switch (ext_proc_read_line(&s->proc, deadline, &line)) {
    case EXT_READ_LINE: return handle_reply(s, info, line);
    case EXT_READ_TIMEOUT:
        snprintf(what, sizeof what, "no answer within the time limit; candidate process killed");
        return fault(s, info, EXEC_TIMEOUT, what);
    case EXT_READ_TOO_LONG:
        snprintf(what, sizeof what, "garbage on the control channel (a line over %d bytes)",
                 EXT_LINE_MAX);
        return fault(s, info, EXEC_HARNESS_ERROR, what);
    case EXT_READ_EOF:
    default: {
        char how[80];
        ext_proc_describe_exit(&s->proc, EXT_STOP_GRACE_S, how, sizeof how);
        snprintf(what, sizeof what, "the candidate process %s during the case", how);
        return fault(s, info, EXEC_CRASH, what);
    }
    }
}
