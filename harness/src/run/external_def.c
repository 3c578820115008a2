/* What the external-process bridges share (external_def.h): the spec, the process's start and
 * declaration (its hello), and the line a fault is reported with. */
#include "external_def.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attest/build_info.h"
#include "attest/conventions.h"
#include "attest/external.h"

/* Loaded candidates live for the rest of the process, as plugins do; the list keeps them
 * reachable (and leak checkers quiet). Loading happens on one thread, before cases run. */
static external_def *loaded;

int attest_external_is_spec(const char *spec)
{
    return spec && (strncmp(spec, "py:", 3) == 0 || strncmp(spec, "exec:", 5) == 0);
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

int ext_reply_answers(const char *line, json_t *o, uint64_t sequence, char *what, size_t cap)
{
    const char *op = o ? ext_json_str(o, "op") : NULL;
    json_t *seq = o ? json_object_get(o, "case") : NULL;
    if (op && json_is_integer(seq) && (uint64_t)json_integer_value(seq) == sequence) return 1;
    if (op && json_is_integer(seq))
        snprintf(what, cap, "the process answered case %" PRId64 " to run message %" PRIu64
                            ": '%.48s'",
                 (int64_t)json_integer_value(seq), sequence, line);
    else
        snprintf(what, cap, "garbage on the control channel: '%.48s'", line);
    return 0;
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

