/* External-process top-k candidates (external.h): a process declaring the "topk" family, driven
 * by attest_topk_run through the bridge protocol of docs/external-candidates.md.
 *
 * The C top-k runner forks a child per case because a C candidate runs in attest's own address
 * space; an external candidate runs in its own process already, so the same findings come from
 * the bridge instead: each run's region (inputs, poisoned outputs, canaries between every
 * tensor) is written fresh into the shared file, the process answers or does not, and attest
 * reads the canaries, compares the inputs and copies the outputs out. The process is kept from
 * case to case and replaced after a fault, as in the other families' bridge. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/external.h"
#include "external_def.h"

#define TOPK_CANARY 0xA5
#define TOPK_GUARD 64 /* canary bytes at least, before and after every tensor */
#define TOPK_TENSORS 5

enum { T_LOGITS, T_LENS, T_TABLE, T_INDICES, T_PHYSICAL };
static const char *const tensor_names[TOPK_TENSORS] = {"logits", "context_lens", "block_table",
                                                       "topk_indices", "topk_physical"};

/* Where each tensor sits in the region; offsets 256-aligned, as the other families'. */
typedef struct topk_region {
    int present[TOPK_TENSORS];
    size_t offset[TOPK_TENSORS], nbytes[TOPK_TENSORS];
    size_t size;
} topk_region;

/* The serving process of one candidate, in the process that started it. */
typedef struct topk_state {
    pid_t owner;            /* getpid() when it was started: a forked job starts its own */
    ext_proc proc;
    uint64_t sequence;      /* run messages sent */
    int faults_printed;
    int start_failures;
    char start_error[200];
    attest_topk_params table_params; /* the case `table` was built for */
    int table_valid;
    uint64_t table_key, sent_key;
    pid_t sent_pid;
    size_t table_len;
    char table[2048];
} topk_state;

/* What one run came to. */
typedef struct run_outcome {
    int returned;            /* the process answered done: outputs copied */
    uint32_t failed;         /* bits (1u << attest_topk_check) */
    char detail[192];        /* the first finding */
} run_outcome;

static int external_topk_stub(const attest_topk_args *args)
{
    (void)args; /* only attest_topk_run can drive the process (it needs the whole case) */
    return -1;
}

int attest_external_topk_is(const attest_topk_candidate *cand)
{
    return cand != NULL && cand->run == external_topk_stub;
}

attest_status attest_external_topk_load(const char *spec, const attest_topk_candidate **out)
{
    ATTEST_RETURN_IF(out == NULL, ATTEST_ERR_INVALID_ARGUMENT, "external: out must not be NULL");
    *out = NULL;
    external_def *d = NULL;
    ATTEST_FORWARD(ext_def_load(spec, 1, &d));
    d->topk.name = d->name;
    d->topk.description = d->description;
    d->topk.run = external_topk_stub;
    *out = &d->topk;
    return ATTEST_OK;
}

static external_def *def_of(const attest_topk_candidate *cand)
{
    /* The candidate is external_def's `topk` member (attest_external_topk_is said so). */
    return (external_def *)(void *)((uintptr_t)cand - offsetof(external_def, topk));
}

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

static void region_of(const attest_topk_candidate *cand, const attest_topk_case *c,
                      topk_region *r)
{
    memset(r, 0, sizeof *r);
    const size_t rows = (size_t)attest_topk_rows(&c->p);
    r->nbytes[T_LOGITS] = rows * (size_t)c->p.width * sizeof(float);
    r->nbytes[T_LENS] = (size_t)c->p.b * sizeof(int32_t);
    r->nbytes[T_TABLE] = (size_t)c->p.b * (size_t)c->p.blocks_per_req * sizeof(int32_t);
    r->nbytes[T_INDICES] = rows * (size_t)c->p.k * sizeof(int32_t);
    r->nbytes[T_PHYSICAL] = r->nbytes[T_INDICES];
    r->present[T_LOGITS] = r->present[T_LENS] = r->present[T_TABLE] = 1;
    r->present[T_INDICES] = (cand->outputs & ATTEST_TOPK_OUT_LOGICAL) != 0;
    r->present[T_PHYSICAL] = (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) != 0;
    size_t pos = 256;
    for (int i = 0; i < TOPK_TENSORS; i++) {
        if (!r->present[i]) continue;
        r->offset[i] = pos;
        pos = align256(pos + r->nbytes[i] + TOPK_GUARD);
    }
    r->size = pos;
}

static const void *input_data(const attest_topk_case *c, int i)
{
    return i == T_LOGITS ? (const void *)c->logits
           : i == T_LENS ? (const void *)c->context_lens
                         : (const void *)c->block_table;
}

/* Canaries everywhere, then the inputs and the poisoned outputs. */
static void region_fill(uint8_t *shm, const topk_region *r, const attest_topk_case *c)
{
    memset(shm, TOPK_CANARY, r->size);
    for (int i = T_LOGITS; i <= T_TABLE; i++)
        memcpy(shm + r->offset[i], input_data(c, i), r->nbytes[i]);
    for (int i = T_INDICES; i <= T_PHYSICAL; i++) {
        if (!r->present[i]) continue;
        int32_t *o = (int32_t *)(void *)(shm + r->offset[i]);
        for (size_t k = 0; k < r->nbytes[i] / sizeof(int32_t); k++) o[k] = ATTEST_TOPK_POISON;
    }
}

static void add(run_outcome *o, attest_topk_check check, const char *text)
{
    if (!o->failed) snprintf(o->detail, sizeof o->detail, "%.*s", (int)sizeof o->detail - 1, text);
    o->failed |= 1u << check;
}

/* After a done: a changed canary byte names the tensor it follows, a changed input byte its
 * tensor. */
static void region_check(const uint8_t *shm, const topk_region *r, const attest_topk_case *c,
                         int run, run_outcome *o)
{
    size_t gap = 0; /* start of the current canary stretch */
    const char *after = NULL;
    for (int i = 0; i <= TOPK_TENSORS; i++) {
        if (i < TOPK_TENSORS && !r->present[i]) continue;
        const size_t end = i < TOPK_TENSORS ? r->offset[i] : r->size;
        for (size_t b = gap; b < end; b++)
            if (shm[b] != TOPK_CANARY) {
                char text[160];
                if (after)
                    snprintf(text, sizeof text, "canary: run %d wrote past '%s' (byte %zu of "
                             "the region)", run, after, b);
                else
                    snprintf(text, sizeof text, "canary: run %d wrote before '%s' (byte %zu of "
                             "the region)", run, tensor_names[0], b);
                add(o, ATTEST_TOPK_CHECK_CANARY, text);
                break;
            }
        if (i == TOPK_TENSORS) break;
        gap = r->offset[i] + r->nbytes[i];
        after = tensor_names[i];
    }
    for (int i = T_LOGITS; i <= T_TABLE; i++)
        if (memcmp(shm + r->offset[i], input_data(c, i), r->nbytes[i]) != 0) {
            char text[160];
            snprintf(text, sizeof text, "input-modified: run %d changed '%s'", run,
                     tensor_names[i]);
            add(o, ATTEST_TOPK_CHECK_INPUT, text);
        }
}

/* The table part of a run message (kernel, contract, params, tensors), rebuilt only when the
 * case's parameters change. */
static int build_table(topk_state *s, const external_def *d, const attest_topk_case *c,
                       const topk_region *r)
{
    if (s->table_valid && memcmp(&s->table_params, &c->p, sizeof c->p) == 0) return 0;
    const attest_topk_candidate *k = &d->topk;
    const uint32_t both = ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL;
    ext_strbuf tb = {s->table, 0, sizeof s->table, 0};
    ext_sb_add(&tb, "\"kernel\":\"topk\",\"conventions\":\"order=%s,outputs=%s,short_row=%s\","
                    "\"params\":{\"b\":%d,\"next_n\":%d,\"width\":%d,\"k\":%d,"
                    "\"blocks_per_req\":%d,\"num_blocks\":%d},\"tensors\":[",
               k->order == ATTEST_TOPK_ORDER_SORTED ? "sorted" : "any",
               k->outputs == both                      ? "both"
               : k->outputs == ATTEST_TOPK_OUT_LOGICAL ? "logical"
                                                       : "physical",
               k->rule == ATTEST_TOPK_SHORT_IDENTITY ? "identity" : "by-score", c->p.b,
               c->p.next_n, c->p.width, c->p.k, c->p.blocks_per_req, c->p.num_blocks);
    const int64_t rows = attest_topk_rows(&c->p);
    const int64_t shapes[TOPK_TENSORS][2] = {{rows, c->p.width}, {c->p.b, 0},
                                             {c->p.b, c->p.blocks_per_req}, {rows, c->p.k},
                                             {rows, c->p.k}};
    int first = 1;
    for (int i = 0; i < TOPK_TENSORS; i++) {
        if (!r->present[i]) continue;
        ext_sb_add(&tb, "%s{\"name\":\"%s\",\"dtype\":\"%s\",\"role\":\"%s\",\"offset\":%zu,"
                        "\"nbytes\":%zu,\"shape\":[%" PRId64,
                   first ? "" : ",", tensor_names[i], i == T_LOGITS ? "float32" : "int32",
                   i >= T_INDICES ? "output" : "input", r->offset[i], r->nbytes[i], shapes[i][0]);
        if (i != T_LENS) ext_sb_add(&tb, ",%" PRId64, shapes[i][1]);
        ext_sb_add(&tb, "]}");
        first = 0;
    }
    ext_sb_add(&tb, "]");
    if (tb.overflow) return -1;
    s->table_len = tb.used;
    s->table_key = ext_layout_key(s->table, tb.used, r->size);
    s->table_params = c->p;
    s->table_valid = 1;
    return 0;
}

/* The state of this candidate in this process: one inherited through fork() belongs to the
 * parent's process, whose channel this process must neither use nor close on the parent's
 * behalf; it gets its own. */
static topk_state *state_of(external_def *d)
{
    topk_state *s = d->topk_state;
    if (s && s->owner != getpid()) {
        /* Our copies of the parent's descriptors only: the parent's process lives on. */
        if (s->proc.sock >= 0) close(s->proc.sock);
        if (s->proc.pidfd >= 0) close(s->proc.pidfd);
        if (s->proc.out_fd >= 0) close(s->proc.out_fd);
        if (s->proc.shm_fd >= 0) close(s->proc.shm_fd);
        free(s); /* the parent's mapping of the region stays mapped here until exit */
        s = d->topk_state = NULL;
    }
    if (s == NULL) {
        s = calloc(1, sizeof *s);
        if (s == NULL) return NULL;
        s->owner = getpid();
        ext_proc_init(&s->proc);
        d->topk_state = s;
    }
    return s;
}

static void fault(topk_state *s, const external_def *d, run_outcome *o, attest_topk_check check,
                  const char *what)
{
    char line[192];
    ext_def_fault_line(d, &s->proc, &s->faults_printed, what, line, sizeof line);
    add(o, check, line);
}

static void handle_reply(topk_state *s, const external_def *d, const char *line, run_outcome *o)
{
    json_error_t err;
    json_t *j = json_loads(line, 0, &err);
    const char *op = j ? ext_json_str(j, "op") : NULL;
    const char *msg = j ? ext_json_str(j, "message") : NULL;
    const char *kind = j ? ext_json_str(j, "kind") : NULL;
    char what[200], wrong[180];
    if (!ext_reply_answers(line, j, s->sequence, wrong, sizeof wrong)) {
        snprintf(what, sizeof what, "run: %s", wrong);
        fault(s, d, o, ATTEST_TOPK_CHECK_RUN, what);
    } else if (strcmp(op, "done") == 0) {
        o->returned = 1;
    } else if (strcmp(op, "unsupported") == 0) {
        /* The family has no UNSUPPORTED verdict (a C top-k kernel takes every case). */
        snprintf(what, sizeof what, "run: the candidate declined the case%s%.150s",
                 msg ? ": " : "", msg ? msg : "");
        add(o, ATTEST_TOPK_CHECK_RUN, what);
    } else if (strcmp(op, "error") == 0 && kind && strcmp(kind, "output") == 0) {
        snprintf(what, sizeof what, "run: the candidate's outputs cannot be taken: %.150s",
                 msg ? msg : "?");
        fault(s, d, o, ATTEST_TOPK_CHECK_RUN, what);
    } else if (strcmp(op, "error") == 0 && kind && strcmp(kind, "protocol") == 0) {
        snprintf(what, sizeof what, "run: the process did not follow the protocol: %.150s",
                 msg ? msg : "?");
        fault(s, d, o, ATTEST_TOPK_CHECK_RUN, what);
    } else if (strcmp(op, "error") == 0) {
        snprintf(what, sizeof what, "crash: the candidate raised %.160s", msg ? msg : "an error");
        fault(s, d, o, ATTEST_TOPK_CHECK_CRASH, what);
    } else {
        snprintf(what, sizeof what, "run: garbage on the control channel: '%.48s'", line);
        fault(s, d, o, ATTEST_TOPK_CHECK_RUN, what);
    }
    json_decref(j);
}

/* One run: the region written fresh, one line each way, the region read back. */
static void run_once(external_def *d, topk_state *s, const attest_topk_case *c,
                     const topk_region *r, int run, double timeout, int32_t *out[2],
                     run_outcome *o)
{
    memset(o, 0, sizeof *o);
    char what[200];
    if (s->proc.pid <= 0) {
        if (s->start_failures >= EXT_START_RETRIES) {
            snprintf(what, sizeof what, "run: not started again after %d failures: %.140s",
                     EXT_START_RETRIES, s->start_error);
            add(o, ATTEST_TOPK_CHECK_RUN, what);
            return;
        }
        /* The start (importing torch, compiling a kernel) has the load's allowance, not the
         * run's time limit: a tight --timeout must not turn every fresh process into a
         * failed start, and the runs after a hang into "not started again". */
        const double allowance = timeout > EXT_START_TIMEOUT_S ? timeout : EXT_START_TIMEOUT_S;
        if (ext_def_start(d, &s->proc, ext_now() + allowance) != ATTEST_OK) {
            s->start_failures++;
            snprintf(s->start_error, sizeof s->start_error, "%s", attest_last_error());
            snprintf(what, sizeof what, "run: the candidate process did not start: %.150s",
                     s->start_error);
            add(o, ATTEST_TOPK_CHECK_RUN, what);
            return;
        }
        s->start_failures = 0;
    }
    const double deadline = ext_now() + timeout;
    ext_proc_trim_output(&s->proc, EXT_OUTPUT_LIMIT);
    if (ext_proc_reserve(&s->proc, r->size) != ATTEST_OK || build_table(s, d, c, r) != 0) {
        snprintf(what, sizeof what, "run: %.180s", attest_last_error());
        add(o, ATTEST_TOPK_CHECK_RUN, what);
        return;
    }
    region_fill(s->proc.shm, r, c);
    char msg[sizeof s->table + 256];
    ext_strbuf mb = {msg, 0, sizeof msg, 0};
    s->sequence++;
    ext_sb_add(&mb, "{\"op\":\"run\",\"case\":%" PRIu64 ",\"size\":%zu,\"map\":%zu,"
                    "\"layout\":\"%016" PRIx64 "\",\"check_supports\":1",
               s->sequence, r->size, s->proc.shm_cap, s->table_key);
    if (s->table_key != s->sent_key || s->sent_pid != s->proc.pid)
        ext_sb_add(&mb, ",%s", s->table);
    ext_sb_add(&mb, "}");
    s->sent_key = s->table_key;
    s->sent_pid = s->proc.pid;
    if (ext_proc_send(&s->proc, msg, mb.used) != 0) {
        char how[80];
        ext_proc_describe_exit(&s->proc, EXT_STOP_GRACE_S, how, sizeof how);
        snprintf(what, sizeof what, "crash: the candidate process %s between cases", how);
        fault(s, d, o, ATTEST_TOPK_CHECK_CRASH, what);
        return;
    }
    char *line = NULL;
    switch (ext_proc_read_line(&s->proc, deadline, &line)) {
    case EXT_READ_LINE: handle_reply(s, d, line, o); break;
    case EXT_READ_TIMEOUT:
        snprintf(what, sizeof what, "timeout: no answer within %g s; candidate process killed",
                 timeout);
        fault(s, d, o, ATTEST_TOPK_CHECK_TIMEOUT, what);
        break;
    case EXT_READ_TOO_LONG:
        snprintf(what, sizeof what, "run: garbage on the control channel (a line over %d bytes)",
                 EXT_LINE_MAX);
        fault(s, d, o, ATTEST_TOPK_CHECK_RUN, what);
        break;
    case EXT_READ_EOF:
    default: {
        char how[80];
        ext_proc_describe_exit(&s->proc, EXT_STOP_GRACE_S, how, sizeof how);
        snprintf(what, sizeof what, "crash: the candidate process %s during the case", how);
        fault(s, d, o, ATTEST_TOPK_CHECK_CRASH, what);
        break;
    }
    }
    if (!o->returned) return;
    region_check(s->proc.shm, r, c, run, o);
    for (int i = 0; i < 2; i++)
        if (out[i]) memcpy(out[i], s->proc.shm + r->offset[T_INDICES + i], r->nbytes[T_INDICES]);
}

attest_status ext_topk_run(const attest_topk_candidate *cand, const attest_topk_case *c,
                           const attest_topk_run_options *o, int32_t *idx, int32_t *phys,
                           attest_topk_run_result *res)
{
    external_def *d = def_of(cand);
    topk_state *s = state_of(d);
    ATTEST_RETURN_IF(s == NULL, ATTEST_ERR_OUT_OF_MEMORY, "topk run: out of memory");
    memset(res, 0, sizeof *res);
    topk_region r;
    region_of(cand, c, &r);
    const size_t out_bytes = r.nbytes[T_INDICES];
    /* The first run's outputs, and the current run's to compare with them. */
    int32_t *buf = malloc(4 * out_bytes + 1);
    ATTEST_RETURN_IF(buf == NULL, ATTEST_ERR_OUT_OF_MEMORY, "topk run: out of memory");
    int32_t *first[2] = {r.present[T_INDICES] ? buf : NULL,
                         r.present[T_PHYSICAL] ? buf + out_bytes / 4 : NULL};
    int32_t *cur[2] = {r.present[T_INDICES] ? buf + 2 * (out_bytes / 4) : NULL,
                       r.present[T_PHYSICAL] ? buf + 3 * (out_bytes / 4) : NULL};
    int delivered = 1;
    for (int32_t run = 0; run < o->reruns; run++) {
        run_outcome one;
        run_once(d, s, c, &r, run + 1, o->timeout_seconds, run == 0 ? first : cur, &one);
        if (one.failed && !res->failed)
            snprintf(res->detail, sizeof res->detail, "%.*s", (int)sizeof res->detail - 1, one.detail);
        res->failed |= one.failed;
        if (!one.returned) {
            /* Nothing came back: a crash or a hang, or no outputs to take (declined, garbage,
             * wrong shapes), so no run after it is judged either. */
            if (run == 0) delivered = 0;
            break;
        }
        res->runs++;
        if (run == 0) continue;
        for (int i = 0; i < 2; i++)
            if (first[i] && memcmp(first[i], cur[i], out_bytes) != 0) {
                if (!res->failed)
                    snprintf(res->detail, sizeof res->detail,
                             "nondeterminism: run %d wrote other outputs than run 1", run + 1);
                res->failed |= 1u << ATTEST_TOPK_CHECK_NONDETERMINISM;
                break;
            }
    }
    res->outputs_valid = delivered &&
                         !(res->failed & ((1u << ATTEST_TOPK_CHECK_CRASH) |
                                          (1u << ATTEST_TOPK_CHECK_TIMEOUT)));
    if (res->outputs_valid) {
        if (idx && first[0]) memcpy(idx, first[0], out_bytes);
        if (phys && first[1]) memcpy(phys, first[1], out_bytes);
    }
    free(buf);
    return ATTEST_OK;
}
