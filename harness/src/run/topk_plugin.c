/* Top-k candidates from plugins (attest/topk_runner.h), loaded as plugin.c loads the other
 * families': a probe child loads the library and reports what the candidate declares; the
 * caller gets a stand-in whose run() loads the library in the process that first calls it (the
 * top-k runner's forked child), never in the caller's. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "attest/files.h"
#include "attest/topk_runner.h"
#include "child_probe.h"

#define TOPK_PLUGIN_MAX_CANDIDATES 4096

static int is_code(const void *fn)
{
    Dl_info info;
    return fn != NULL && dladdr(fn, &info) != 0 && info.dli_fbase != NULL;
}

static attest_status check_candidate(const attest_topk_candidate *c)
{
    ATTEST_RETURN_IF(!is_code((const void *)c->run), ATTEST_ERR_FORMAT,
                     "its run() is NULL or points outside every loaded library");
    ATTEST_RETURN_IF(c->description && !memchr(c->description, '\0', 4096), ATTEST_ERR_FORMAT,
                     "its description is not a string");
    ATTEST_RETURN_IF(c->outputs == 0 || (c->outputs & ~(ATTEST_TOPK_OUT_LOGICAL |
                                                        ATTEST_TOPK_OUT_PHYSICAL)) != 0,
                     ATTEST_ERR_FORMAT, "it declares outputs 0x%x (1 logical, 2 physical, 3 both)",
                     (unsigned)c->outputs);
    ATTEST_RETURN_IF(c->order != ATTEST_TOPK_ORDER_SORTED && c->order != ATTEST_TOPK_ORDER_ANY,
                     ATTEST_ERR_FORMAT, "it declares order %d (0 sorted, 1 any)", (int)c->order);
    ATTEST_RETURN_IF(c->rule != ATTEST_TOPK_BY_SCORE && c->rule != ATTEST_TOPK_SHORT_IDENTITY,
                     ATTEST_ERR_FORMAT, "it declares short-row rule %d (0 by-score, 1 identity)",
                     (int)c->rule);
    return ATTEST_OK;
}

/* dlopen, the entry point and the named candidate, checked: in the probe child, then here. */
static attest_status load_and_find(const char *path, const char *name,
                                   const attest_topk_candidate **out, void **handle)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return attest_file_check_regular(path, "plugins");
    dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        return attest_fail(ATTEST_ERR_NOT_FOUND, "plugin '%s' cannot be loaded: %s", path,
                           why ? why : "unknown dlopen error");
    }
    if (handle) *handle = lib; /* stays loaded: the candidate points into it */
    void *sym = dlsym(lib, ATTEST_TOPK_PLUGIN_ENTRY_SYMBOL);
    ATTEST_RETURN_IF(sym == NULL, ATTEST_ERR_FORMAT, "plugin '%s' does not export %s()", path,
                     ATTEST_TOPK_PLUGIN_ENTRY_SYMBOL);
    attest_topk_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer, as POSIX allows */
    size_t count = 0;
    const attest_topk_candidate *const *list = entry(ATTEST_TOPK_PLUGIN_ABI, &count);
    ATTEST_RETURN_IF(list == NULL, ATTEST_ERR_FORMAT,
                     "plugin '%s': %s(%u) returned NULL (built for another top-k ABI?)", path,
                     ATTEST_TOPK_PLUGIN_ENTRY_SYMBOL, ATTEST_TOPK_PLUGIN_ABI);
    ATTEST_RETURN_IF(count > TOPK_PLUGIN_MAX_CANDIDATES, ATTEST_ERR_FORMAT,
                     "plugin '%s': %s() returned a count of %zu", path,
                     ATTEST_TOPK_PLUGIN_ENTRY_SYMBOL, count);
    char names[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        const attest_topk_candidate *c = list[i];
        if (c == NULL || c->name == NULL || memchr(c->name, '\0', 64) == NULL) continue;
        if (strcmp(c->name, name) == 0) {
            const attest_status st = check_candidate(c);
            if (st != ATTEST_OK) {
                char why[256]; /* attest_fail must not format its own buffer */
                snprintf(why, sizeof why, "%s", attest_last_error());
                return attest_fail(st, "plugin '%s': candidate '%s': %s", path, name, why);
            }
            *out = c;
            return ATTEST_OK;
        }
        const int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                               c->name);
        if (w > 0) used = used + (size_t)w < sizeof names ? used + (size_t)w : sizeof names - 1;
    }
    return attest_fail(ATTEST_ERR_NOT_FOUND, "plugin '%s' has no top-k candidate '%s' (it has: %s)",
                       path, name, used ? names : "none");
}

typedef struct probe_target {
    const char *path, *name;
} probe_target;

/* The probe's report: the status and, when the candidate was found and valid, what it declares. */
typedef struct probe_report {
    int32_t status;
    char message[512];
    char description[256];
    int32_t order, rule;
    uint32_t outputs;
} probe_report;

static int probe_child(int fd, void *arg)
{
    const probe_target *t = arg;
    const attest_topk_candidate *c = NULL;
    probe_report r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)load_and_find(t->path, t->name, &c, NULL);
    if (r.status == ATTEST_OK) {
        if (c->description) snprintf(r.description, sizeof r.description, "%s", c->description);
        r.order = (int32_t)c->order;
        r.rule = (int32_t)c->rule;
        r.outputs = c->outputs;
    }
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
}

/* The stand-ins (plugin.c says why): run() carries no pointer to its candidate, so each
 * stand-in is a slot with a run() of its own. Filled on one thread, before cases run. */
#define TOPK_PLUGIN_SLOTS 16

typedef struct topk_slot {
    attest_topk_candidate cand;
    char path[4096], key[4096], name[64], description[256];
    const attest_topk_candidate *real; /* this process's loaded candidate, NULL until first use */
} topk_slot;

static topk_slot slots[TOPK_PLUGIN_SLOTS];
static size_t slots_used;

static int slot_run(topk_slot *s, const attest_topk_args *args)
{
    if (!s->real) {
        const attest_topk_candidate *c = NULL;
        attest_status st = load_and_find(s->path, s->name, &c, NULL);
        if (st == ATTEST_OK &&
            (c->order != s->cand.order || c->rule != s->cand.rule || c->outputs != s->cand.outputs))
            st = attest_fail(ATTEST_ERR_FORMAT, "top-k plugin '%s': candidate '%s' declares "
                             "another order, rule or outputs than when it was probed", s->path,
                             s->name);
        if (st != ATTEST_OK) {
            fprintf(stderr, "attest: %s\n", attest_last_error());
            return -1;
        }
        s->real = c;
    }
    return s->real->run(args);
}

#define TOPK_SLOT_RUN(N)                                                                       \
    static int run_##N(const attest_topk_args *a) { return slot_run(&slots[N], a); }
TOPK_SLOT_RUN(0) TOPK_SLOT_RUN(1) TOPK_SLOT_RUN(2) TOPK_SLOT_RUN(3)
TOPK_SLOT_RUN(4) TOPK_SLOT_RUN(5) TOPK_SLOT_RUN(6) TOPK_SLOT_RUN(7)
TOPK_SLOT_RUN(8) TOPK_SLOT_RUN(9) TOPK_SLOT_RUN(10) TOPK_SLOT_RUN(11)
TOPK_SLOT_RUN(12) TOPK_SLOT_RUN(13) TOPK_SLOT_RUN(14) TOPK_SLOT_RUN(15)

static int (*const slot_runs[TOPK_PLUGIN_SLOTS])(const attest_topk_args *) = {
    run_0, run_1, run_2,  run_3,  run_4,  run_5,  run_6,  run_7,
    run_8, run_9, run_10, run_11, run_12, run_13, run_14, run_15,
};

attest_status attest_topk_plugin_load(const char *spec, const attest_topk_candidate **out)
{
    ATTEST_RETURN_IF(spec == NULL || out == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k plugin: spec and out must not be NULL");
    *out = NULL;
    const char *colon = strrchr(spec, ':'); /* a path may hold ':', a name never does */
    ATTEST_RETURN_IF(colon == NULL || colon == spec || colon[1] == '\0',
                     ATTEST_ERR_INVALID_ARGUMENT, "top-k plugin '%s': expected path/libfoo.so:NAME",
                     spec);
    char path[4096];
    const size_t path_len = (size_t)(colon - spec);
    ATTEST_RETURN_IF(path_len + 3 > sizeof path, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k plugin: path of %zu characters is too long", path_len);
    memcpy(path, spec, path_len);
    path[path_len] = '\0';
    struct stat sb;
    if (!memchr(spec, '/', path_len) && stat(path, &sb) == 0) { /* a file here, not a search */
        memmove(path + 2, path, path_len + 1);
        memcpy(path, "./", 2);
    }
    const char *name = colon + 1;
    ATTEST_RETURN_IF(strlen(name) >= 64, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k plugin '%s': candidate name longer than 63 characters", path);
    char key[4096];
    if (!realpath(path, key)) snprintf(key, sizeof key, "%s", path);
    for (size_t i = 0; i < slots_used; i++)
        if (!strcmp(slots[i].key, key) && !strcmp(slots[i].name, name)) {
            *out = &slots[i].cand;
            return ATTEST_OK;
        }
    ATTEST_RETURN_IF(slots_used == TOPK_PLUGIN_SLOTS, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k plugin '%s': at most %d top-k plugin candidates per process", path,
                     TOPK_PLUGIN_SLOTS);
    probe_target t = {path, name};
    child_probe p;
    ATTEST_FORWARD(child_probe_spawn(path, "probe the top-k plugin", probe_child, &t, &p));
    probe_report r;
    const size_t got = child_probe_read(&p, &r, sizeof r);
    const int wstatus = child_probe_finish(&p);
    if (got != sizeof r || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        char end[96];
        return attest_fail(ATTEST_ERR_FORMAT, "top-k plugin '%s': loading it %s; not loaded",
                           path, child_probe_end(&p, wstatus, end, sizeof end));
    }
    r.message[sizeof r.message - 1] = '\0';
    for (char *c = r.message; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) *c = '?';
    if (r.status != ATTEST_OK)
        return attest_fail(r.status > 0 && r.status < ATTEST_STATUS_COUNT_ ? (attest_status)r.status
                                                                          : ATTEST_ERR_INTERNAL,
                           "%s", r.message);
    r.description[sizeof r.description - 1] = '\0';
    for (char *c = r.description; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) *c = '?';
    topk_slot *s = &slots[slots_used];
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", strchr(key, '/') ? key : path);
    snprintf(s->key, sizeof s->key, "%s", key);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->description, sizeof s->description, "%s", r.description);
    s->cand.name = s->name;
    s->cand.description = s->description;
    s->cand.order = (attest_topk_order)r.order;
    s->cand.rule = (attest_topk_rule)r.rule;
    s->cand.outputs = r.outputs;
    s->cand.run = slot_runs[slots_used];
    /* The child checked them; the report crossed a pipe, so they are checked again. */
    const attest_status st = check_candidate(&s->cand);
    if (st != ATTEST_OK) {
        char why[256]; /* attest_fail must not format its own buffer */
        snprintf(why, sizeof why, "%s", attest_last_error());
        return attest_fail(st, "top-k plugin '%s': candidate '%s': %s", path, name, why);
    }
    slots_used++;
    *out = &s->cand;
    return ATTEST_OK;
}
