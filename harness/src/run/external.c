/* External-process candidates (external.h): the spec, the declaration read at load, and run()
 * driving the serving process through the control channel and the shared region. */
#include "attest/external.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arena.h"
#include "attest/build_info.h"
#include "attest/conventions.h"
#include "attest/layout.h"
#include "execute.h"
#include "external_def.h"
#include "external_proc.h"

/* Loaded candidates live for the rest of the process, as plugins do; the list keeps them
 * reachable (and leak checkers quiet). Loading happens on one thread, before cases run. */
static external_def *loaded;

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

int attest_external_is_spec(const char *spec)
{
    return spec && (strncmp(spec, "py:", 3) == 0 || strncmp(spec, "exec:", 5) == 0);
}

const char *attest_external_domain(const attest_candidate *cand)
{
    if (cand == NULL || cand->run != external_run) return NULL;
    return ((const external_def *)(const void *)cand)->domain;
}

/* --- the spec ------------------------------------------------------------------------------ */

static int is_identifier(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* The package directory handed to Python first on its path: $ATTEST_PYTHON_DIR, else python/
 * of the source tree this attest was built from, when it exists. */
static const char *python_dir(void)
{
    const char *env = getenv("ATTEST_PYTHON_DIR");
    if (env && *env) return env;
    static char dir[4096];
    struct stat sb;
    snprintf(dir, sizeof dir, "%s/python/attest_candidate", ATTEST_SOURCE_DIR);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return NULL;
    snprintf(dir, sizeof dir, "%s/python", ATTEST_SOURCE_DIR);
    return dir;
}

static attest_status parse_spec(external_def *d, const char *spec)
{
    ATTEST_RETURN_IF(strlen(spec) >= sizeof d->spec || strlen(spec) >= sizeof d->args,
                     ATTEST_ERR_INVALID_ARGUMENT, "candidate spec of %zu characters is too long",
                     strlen(spec));
    snprintf(d->spec, sizeof d->spec, "%s", spec);
    int argc = 0;
    if (strncmp(spec, "py:", 3) == 0) {
        const char *rest = spec + 3, *colon = strrchr(rest, ':');
        ATTEST_RETURN_IF(colon == NULL || colon == rest || !is_identifier(colon + 1),
                         ATTEST_ERR_INVALID_ARGUMENT,
                         "candidate '%s': expected py:PATH.py:NAME (NAME a Python identifier)",
                         spec);
        const size_t path_len = (size_t)(colon - rest);
        char *path = d->args, *name = d->args + path_len + 1;
        memcpy(path, rest, path_len);
        path[path_len] = '\0';
        snprintf(name, sizeof d->args - path_len - 1, "%s", colon + 1);
        struct stat sb;
        ATTEST_RETURN_IF(stat(path, &sb) != 0, ATTEST_ERR_NOT_FOUND, "candidate '%s': %s: %s",
                         spec, path, strerror(errno));
        ATTEST_RETURN_IF(!S_ISREG(sb.st_mode), ATTEST_ERR_NOT_FOUND,
                         "candidate '%s': %s is not a file", spec, path);
        const char *py = getenv("ATTEST_PYTHON");
        static char python3[] = "python3", dash_m[] = "-m", module[] = "attest_candidate";
        d->argv[argc++] = py && *py ? (char *)py : python3;
        d->argv[argc++] = dash_m;
        d->argv[argc++] = module;
        d->argv[argc++] = path;
        d->argv[argc++] = name;
        snprintf(d->name, sizeof d->name, "%s", name);
    } else {
        snprintf(d->args, sizeof d->args, "%s", spec + 5);
        for (char *tok = strtok(d->args, " \t"); tok; tok = strtok(NULL, " \t")) {
            ATTEST_RETURN_IF(argc == EXT_MAX_ARGS, ATTEST_ERR_INVALID_ARGUMENT,
                             "candidate '%.60s': more than %d arguments", spec, EXT_MAX_ARGS);
            d->argv[argc++] = tok;
        }
        ATTEST_RETURN_IF(argc == 0, ATTEST_ERR_INVALID_ARGUMENT,
                         "candidate '%s': expected exec:COMMAND [ARG...]", spec);
        const char *base = strrchr(d->argv[0], '/');
        snprintf(d->name, sizeof d->name, "%s", base ? base + 1 : d->argv[0]);
    }
    d->argv[argc] = NULL;

    int ne = 0;
    snprintf(d->env_store[0], sizeof d->env_store[0], "ATTEST_PROTOCOL=%d",
             ATTEST_EXTERNAL_PROTOCOL);
    d->env[ne] = d->env_store[ne];
    ne++;
    snprintf(d->env_store[1], sizeof d->env_store[1], "ATTEST_CHANNEL_FD=3");
    d->env[ne] = d->env_store[ne];
    ne++;
    snprintf(d->env_store[2], sizeof d->env_store[2], "ATTEST_SHM_FD=4");
    d->env[ne] = d->env_store[ne];
    ne++;
    const char *dir = python_dir();
    if (dir) {
        const char *old = getenv("PYTHONPATH");
        snprintf(d->env_store[3], sizeof d->env_store[3], "PYTHONPATH=%s%s%s", dir,
                 old && *old ? ":" : "", old && *old ? old : "");
        d->env[ne] = d->env_store[ne];
        ne++;
    }
    static char unbuffered[] = "PYTHONUNBUFFERED=1"; /* what it printed before a crash */
    d->env[ne++] = unbuffered;
    d->env[ne] = NULL;
    return ATTEST_OK;
}

/* --- messages ------------------------------------------------------------------------------ */

void ext_sb_add(ext_strbuf *b, const char *fmt, ...)
{
    if (b->overflow) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p + b->used, b->cap - b->used, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= b->cap - b->used) {
        b->overflow = 1;
        return;
    }
    b->used += (size_t)w;
}

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

uint64_t ext_layout_key(const char *s, size_t n, size_t region_bytes)
{
    uint64_t h = 0xcbf29ce484222325ull ^ region_bytes;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

/* --- the declaration ----------------------------------------------------------------------- */

const char *ext_json_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The contract a top-k process declares (docs/topk.md): "order" sorted|any, "outputs"
 * logical|physical|both, "short_row" by-score|identity; each is required, as a C candidate's
 * fields are, so a contract is never assumed. */
static attest_status parse_topk_contract(json_t *o, attest_topk_candidate *tk)
{
    const char *order = ext_json_str(o, "order"), *outputs = ext_json_str(o, "outputs");
    const char *rule = ext_json_str(o, "short_row");
    if (order && strcmp(order, "sorted") == 0) tk->order = ATTEST_TOPK_ORDER_SORTED;
    else if (order && strcmp(order, "any") == 0) tk->order = ATTEST_TOPK_ORDER_ANY;
    else
        return attest_fail(ATTEST_ERR_FORMAT, "it declares order '%s' (sorted or any)",
                           order ? order : "(none)");
    if (outputs && strcmp(outputs, "logical") == 0) tk->outputs = ATTEST_TOPK_OUT_LOGICAL;
    else if (outputs && strcmp(outputs, "physical") == 0) tk->outputs = ATTEST_TOPK_OUT_PHYSICAL;
    else if (outputs && strcmp(outputs, "both") == 0)
        tk->outputs = ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL;
    else
        return attest_fail(ATTEST_ERR_FORMAT, "it declares outputs '%s' (logical, physical or "
                           "both)", outputs ? outputs : "(none)");
    if (rule && strcmp(rule, "by-score") == 0) tk->rule = ATTEST_TOPK_BY_SCORE;
    else if (rule && strcmp(rule, "identity") == 0) tk->rule = ATTEST_TOPK_SHORT_IDENTITY;
    else
        return attest_fail(ATTEST_ERR_FORMAT, "it declares short_row '%s' (by-score or identity)",
                           rule ? rule : "(none)");
    return ATTEST_OK;
}

/* Reads a hello line into d (at load) or checks it against d (later starts). */
static attest_status parse_hello(external_def *d, const char *line, int check_only)
{
    json_error_t err;
    json_t *o = json_loads(line, 0, &err);
    ATTEST_RETURN_IF(o == NULL || !json_is_object(o), ATTEST_ERR_FORMAT,
                     "its first message is not the protocol's hello: '%.60s'", line);
    attest_status st = ATTEST_OK;
    const char *op = ext_json_str(o, "op");
    json_t *version = json_object_get(o, "attest");
    if (op && strcmp(op, "fatal") == 0) {
        const char *kind = ext_json_str(o, "kind"), *msg = ext_json_str(o, "message");
        st = attest_fail(kind && strcmp(kind, "not_found") == 0 ? ATTEST_ERR_NOT_FOUND
                                                                 : ATTEST_ERR_FORMAT,
                         "%s", msg ? msg : "the process reported a fatal error");
        goto done;
    }
    if (!op || strcmp(op, "hello") != 0 || !json_is_integer(version)) {
        st = attest_fail(ATTEST_ERR_FORMAT, "its first message is not the protocol's hello: '%.60s'",
                         line);
        goto done;
    }
    if (json_integer_value(version) != ATTEST_EXTERNAL_PROTOCOL) {
        st = attest_fail(ATTEST_ERR_FORMAT, "it speaks protocol version %" JSON_INTEGER_FORMAT
                         ", this attest speaks %d",
                         json_integer_value(version), ATTEST_EXTERNAL_PROTOCOL);
        goto done;
    }
    const char *family = ext_json_str(o, "family"), *name = ext_json_str(o, "name");
    const char *domain = ext_json_str(o, "domain"), *desc = ext_json_str(o, "description");
    attest_kernel kernel = ATTEST_KERNEL_INDEXER;
    const int topk = family && strcmp(family, "topk") == 0;
    if (!family || (!topk && attest_kernel_from_name(family, &kernel) != ATTEST_OK)) {
        st = attest_fail(ATTEST_ERR_FORMAT, "it declares an unknown kernel family '%s' (indexer, "
                         "mla-decode or topk)", family ? family : "(none)");
        goto done;
    }
    if (topk != d->is_topk) {
        st = attest_fail(ATTEST_ERR_FORMAT, topk ? "it declares the topk family: run it with "
                         "--kernel topk" : "it declares the %s family, not topk (run it without "
                         "--kernel topk)", family);
        goto done;
    }
    attest_topk_candidate tk;
    memset(&tk, 0, sizeof tk);
    if (topk) {
        st = parse_topk_contract(o, &tk);
        if (st != ATTEST_OK) goto done;
    }
    if (!domain || (strcmp(domain, "host") != 0 && strcmp(domain, "cuda") != 0)) {
        st = attest_fail(ATTEST_ERR_FORMAT, "it declares an unknown memory domain '%s' (host or "
                         "cuda)", domain ? domain : "(none)");
        goto done;
    }
    if (!name || !*name || strlen(name) >= sizeof d->name) {
        st = attest_fail(ATTEST_ERR_FORMAT, "it declares no name or one longer than %zu "
                         "characters", sizeof d->name - 1);
        goto done;
    }
    attest_conventions conv = attest_conventions_default();
    json_t *jc = json_object_get(o, "conventions");
    if (jc && !json_is_object(jc)) {
        st = attest_fail(ATTEST_ERR_FORMAT, "its conventions are not an object");
        goto done;
    }
    const char *key;
    json_t *val;
    json_object_foreach(jc, key, val)
    {
        if (!json_is_string(val)) {
            st = attest_fail(ATTEST_ERR_FORMAT, "convention %s is not a string", key);
            goto done;
        }
        st = attest_convention_set(&conv, key, json_string_value(val));
        if (st != ATTEST_OK) goto done;
    }
    if (check_only) {
        if (kernel != d->cand.kernel || strcmp(name, d->name) != 0 ||
            memcmp(&conv, &d->cand.conventions, sizeof conv) != 0 ||
            strcmp(domain, d->domain) != 0 || tk.order != d->topk.order ||
            tk.outputs != d->topk.outputs || tk.rule != d->topk.rule)
            st = attest_fail(ATTEST_ERR_FORMAT, "its declaration changed since it was loaded");
        goto done;
    }
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->domain, sizeof d->domain, "%s", domain);
    snprintf(d->description, sizeof d->description, "%s%s(%s process, %s)", desc ? desc : "",
             desc && *desc ? " " : "", strncmp(d->spec, "py:", 3) == 0 ? "python" : "external",
             domain);
    d->cand.kernel = kernel;
    d->cand.conventions = conv;
    d->topk.order = tk.order;
    d->topk.outputs = tk.outputs;
    d->topk.rule = tk.rule;
done:
    json_decref(o);
    return st;
}

/* Starts the process and reads its hello. On failure the message is "WHY: OUTPUT TAIL". */
static attest_status start_process(external_def *d, ext_proc *p, double deadline, int check_only)
{
    attest_status st = ext_proc_start(p, d->argv, d->env);
    if (st != ATTEST_OK) return st;
    char *line = NULL;
    ext_read r = ext_proc_read_line(p, deadline, &line);
    char why[160], tail[160];
    if (r == EXT_READ_LINE) {
        st = parse_hello(d, line, check_only);
        if (st == ATTEST_OK) return ATTEST_OK;
        snprintf(why, sizeof why, "%s", attest_last_error());
        ext_proc_stop(p, EXT_STOP_GRACE_S);
        return attest_fail(st, "%s", why);
    }
    if (r == EXT_READ_TIMEOUT) {
        ext_proc_stop(p, 0.0);
        snprintf(why, sizeof why, "no hello before the time limit");
    } else if (r == EXT_READ_TOO_LONG) {
        ext_proc_stop(p, 0.0);
        snprintf(why, sizeof why, "garbage on the control channel");
    } else {
        char how[80];
        ext_proc_describe_exit(p, EXT_STOP_GRACE_S, how, sizeof how);
        ext_proc_stop(p, 0.0);
        snprintf(why, sizeof why, "the process %s before its hello", how);
    }
    ext_proc_output_tail(p, 2, tail, sizeof tail);
    return attest_fail(ATTEST_ERR_CHILD, "%s%s%s", why, tail[0] ? ": " : "", tail);
}

attest_status ext_def_start(external_def *d, ext_proc *p, double deadline)
{
    return start_process(d, p, deadline, 1);
}

attest_status ext_def_load(const char *spec, int topk, external_def **out)
{
    ATTEST_RETURN_IF(spec == NULL || out == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "external: spec and out must not be NULL");
    *out = NULL;
    ATTEST_RETURN_IF(!attest_external_is_spec(spec), ATTEST_ERR_INVALID_ARGUMENT,
                     "'%s' is not an external candidate (py:PATH.py:NAME or exec:COMMAND)", spec);
    external_def *d = calloc(1, sizeof *d);
    ATTEST_RETURN_IF(d == NULL, ATTEST_ERR_OUT_OF_MEMORY, "external: out of memory");
    d->is_topk = topk;
    attest_status st = parse_spec(d, spec);
    if (st != ATTEST_OK) {
        free(d);
        return st;
    }
    /* Start it once to read what it declares, then stop it: the runner's worker starts its own. */
    ext_proc p;
    ext_proc_init(&p);
    st = start_process(d, &p, ext_now() + EXT_START_TIMEOUT_S, 0);
    if (st == ATTEST_OK) {
        static const char stop[] = "{\"op\":\"stop\"}";
        (void)ext_proc_send(&p, stop, sizeof stop - 1);
    }
    char why[256];
    snprintf(why, sizeof why, "%s", st == ATTEST_OK ? "" : attest_last_error());
    ext_proc_release(&p);
    if (st != ATTEST_OK) {
        free(d);
        return attest_fail(st, "candidate '%s': %s", spec, why);
    }
    d->next = loaded;
    loaded = d;
    *out = d; /* lives for the rest of the process, as a plugin does */
    return ATTEST_OK;
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

void ext_def_fault_line(const external_def *d, ext_proc *p, int *printed, const char *what,
                        char *buf, size_t cap)
{
    char tail[200];
    ext_proc_output_tail(p, 3, tail, sizeof tail);
    /* Clipped when long: the verdict's line has room for the start of the output tail. */
    if (snprintf(buf, cap, "%s%s%s", what, tail[0] ? "; output: " : "", tail) >= (int)cap)
        buf[cap - 1] = '\0';
    /* The full tail on stderr for the first few faults; a campaign of crashes stays readable. */
    if (*printed < EXT_FAULTS_PRINTED) {
        char who[160];
        snprintf(who, sizeof who, "candidate %s (pid %d)%s", d->name, (int)p->last_pid,
                 ++*printed == EXT_FAULTS_PRINTED ? ", printed for its first faults only" : "");
        ext_proc_print_tail(p, who, 12);
    }
    ext_proc_stop(p, 0.0);
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
    const char *op = o ? ext_json_str(o, "op") : NULL;
    json_t *seq = o ? json_object_get(o, "case") : NULL;
    if (!op || !json_is_integer(seq) || (uint64_t)json_integer_value(seq) != s->sequence) {
        snprintf(what, sizeof what, "garbage on the control channel: '%.48s'", line);
        json_decref(o);
        return fault(s, info, EXEC_HARNESS_ERROR, what);
    }
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
