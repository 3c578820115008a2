/* Candidate plugins and candidate validation (runner.h, candidate.h). */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "attest/candidate.h"
#include "attest/conventions.h"
#include "attest/runner.h"
#include "attest/files.h"
#include "child_probe.h"

/* The struct must reach `run`, the last field the harness reads. */
#define CANDIDATE_MIN_SIZE (offsetof(attest_candidate, run) + sizeof(((attest_candidate *)0)->run))

attest_status attest_candidate_validate(const attest_candidate *cand)
{
    ATTEST_RETURN_IF(cand == NULL, ATTEST_ERR_INVALID_ARGUMENT, "candidate is NULL");
    ATTEST_RETURN_IF(cand->abi_version != ATTEST_CANDIDATE_ABI_VERSION, ATTEST_ERR_FORMAT,
                     "candidate ABI version %u, attest supports %u (rebuild it against this "
                     "attest's candidate.h)",
                     cand->abi_version, ATTEST_CANDIDATE_ABI_VERSION);
    ATTEST_RETURN_IF(cand->struct_size < CANDIDATE_MIN_SIZE, ATTEST_ERR_FORMAT,
                     "candidate struct_size %u is smaller than the %zu bytes attest reads",
                     cand->struct_size, (size_t)CANDIDATE_MIN_SIZE);
    ATTEST_RETURN_IF(cand->name == NULL || cand->name[0] == '\0', ATTEST_ERR_FORMAT,
                     "candidate has no name");
    ATTEST_RETURN_IF(strlen(cand->name) >= 64, ATTEST_ERR_FORMAT,
                     "candidate name '%.40s...' is longer than 63 characters", cand->name);
    ATTEST_RETURN_IF(attest_kernel_name(cand->kernel) == NULL, ATTEST_ERR_FORMAT,
                     "candidate '%s': unknown kernel family %d", cand->name, (int)cand->kernel);
    ATTEST_RETURN_IF(cand->domain != ATTEST_DOMAIN_HOST && cand->domain != ATTEST_DOMAIN_DEVICE,
                     ATTEST_ERR_FORMAT, "candidate '%s': unknown memory domain %d", cand->name,
                     (int)cand->domain);
    if (attest_conventions_validate(&cand->conventions) != ATTEST_OK) {
        char why[128]; /* attest_fail must not format its own buffer */
        snprintf(why, sizeof why, "%s", attest_last_error());
        return attest_fail(ATTEST_ERR_FORMAT, "candidate '%s': %s", cand->name, why);
    }
    ATTEST_RETURN_IF(cand->run == NULL, ATTEST_ERR_FORMAT, "candidate '%s' has no run function",
                     cand->name);
    return ATTEST_OK;
}

/* At most this many candidates per plugin: a count beyond it is a bug or an attack. */
#define PLUGIN_MAX_CANDIDATES 4096

/* Whether fn points into code of some loaded object (a wild pointer does not). */
static int is_code(const void *fn)
{
    Dl_info info;
    return fn == NULL || (dladdr(fn, &info) != 0 && info.dli_fbase != NULL);
}

/* dlopen, the entry point, and every field attest reads, validated. Runs in a probe child
 * first (plugin_probe) and, when that passed, in the process that runs the candidate (the
 * runner's worker): the same steps give the same answer, and whatever crashes or hangs while
 * loading has then done so in the child. */
static attest_status load_and_find(const char *path, const char *name,
                                   const attest_candidate **out, void **handle)
{
    /* A name dlopen searches for, or a missing file, is dlopen's to report. */
    struct stat sb;
    attest_status st = ATTEST_OK;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return attest_file_check_regular(path, "plugins");
    dlerror();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        return attest_fail(ATTEST_ERR_NOT_FOUND, "plugin '%s' cannot be loaded: %s", path,
                           why ? why : "unknown dlopen error");
    }
    /* The library stays loaded for the life of the process: candidates point into it. */
    if (handle) *handle = lib;
    dlerror();
    void *sym = dlsym(lib, ATTEST_PLUGIN_ENTRY_SYMBOL);
    if (sym == NULL)
        return attest_fail(ATTEST_ERR_FORMAT, "plugin '%s' does not export %s()", path,
                           ATTEST_PLUGIN_ENTRY_SYMBOL);
    attest_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer, as POSIX allows */
    size_t count = 0;
    const attest_candidate *const *list = entry(&count);
    ATTEST_RETURN_IF(list == NULL && count > 0, ATTEST_ERR_FORMAT,
                     "plugin '%s': %s() returned NULL", path, ATTEST_PLUGIN_ENTRY_SYMBOL);
    ATTEST_RETURN_IF(count > PLUGIN_MAX_CANDIDATES, ATTEST_ERR_FORMAT,
                     "plugin '%s': %s() returned a count of %zu (at most %d)", path,
                     ATTEST_PLUGIN_ENTRY_SYMBOL, count, PLUGIN_MAX_CANDIDATES);
    char names[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        const attest_candidate *c = list[i];
        /* abi_version, struct_size and name lead the struct in every ABI version, so a
         * candidate built for another version is still found by name and refused clearly. */
        if (c == NULL || c->struct_size < offsetof(attest_candidate, name) + sizeof c->name ||
            c->name == NULL || memchr(c->name, '\0', 64) == NULL)
            continue;
        if (strcmp(c->name, name) == 0) {
            st = attest_candidate_validate(c);
            if (st == ATTEST_OK && c->description && !memchr(c->description, '\0', 4096))
                st = attest_fail(ATTEST_ERR_FORMAT, "its description is not a string");
            if (st == ATTEST_OK && (!is_code((const void *)c->run) ||
                                    !is_code((const void *)c->init) ||
                                    !is_code((const void *)c->fini) ||
                                    !is_code((const void *)c->supports)))
                st = attest_fail(ATTEST_ERR_FORMAT,
                                 "a function pointer points outside every loaded library");
            if (st != ATTEST_OK) {
                char why[256]; /* attest_fail must not format its own buffer */
                snprintf(why, sizeof why, "%s", attest_last_error());
                return attest_fail(st, "plugin '%s': %s", path, why);
            }
            *out = c;
            return ATTEST_OK;
        }
        if (used + 1 < sizeof names) {
            int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                             c->name);
            if (w > 0) used += (size_t)w;
            if (used >= sizeof names) used = sizeof names - 1;
        }
    }
    return attest_fail(ATTEST_ERR_NOT_FOUND, "plugin '%s' has no candidate '%s' (it has: %s)",
                       path, name, used ? names : "none");
}

/* What the probe child reports: the status and, when the candidate was found and valid, every
 * field the parent reads of it. The parent never loads the library (see attest_plugin_load). */
typedef struct plugin_report {
    int32_t status;
    char message[512];
    char description[256];
    int32_t kernel, domain;
    attest_conventions conventions;
} plugin_report;

typedef struct plugin_target {
    const char *path, *name;
} plugin_target;

static int plugin_child(int fd, void *arg)
{
    const plugin_target *t = arg;
    const attest_candidate *c = NULL;
    void *lib = NULL;
    plugin_report r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)load_and_find(t->path, t->name, &c, &lib);
    if (r.status == ATTEST_OK) {
        if (c->description) snprintf(r.description, sizeof r.description, "%s", c->description);
        r.kernel = (int32_t)c->kernel;
        r.domain = (int32_t)c->domain;
        r.conventions = c->conventions;
    }
    /* A library's destructors must not first run in a process that trusts it: run them here. */
    if (r.status == ATTEST_OK && lib && dlclose(lib) != 0) {
        r.status = ATTEST_ERR_FORMAT;
        snprintf(r.message, sizeof r.message, "plugin '%s' cannot be unloaded: %s", t->path,
                 dlerror());
        return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
    }
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
}

static void make_printable(char *s, size_t cap)
{
    s[cap - 1] = '\0';
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e) *s = '?';
}

/* Loads the plugin in a child with a deadline: a constructor or entry point that crashes,
 * blocks or calls exit(), a wild pointer in what it returns, a truncated library (SIGBUS in
 * dlopen), all end there. On success *r holds what the candidate declares. */
static attest_status plugin_probe(const char *path, const char *name, plugin_report *r)
{
    plugin_target t = {path, name};
    child_probe p;
    ATTEST_FORWARD(child_probe_spawn(path, "probe the plugin", plugin_child, &t, &p));
    size_t got = child_probe_read(&p, r, sizeof *r);
    int wstatus = child_probe_finish(&p);
    if (got == sizeof *r && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        make_printable(r->message, sizeof r->message);
        make_printable(r->description, sizeof r->description);
        if (r->status == ATTEST_OK) return ATTEST_OK;
        if (r->status < 0 || r->status >= ATTEST_STATUS_COUNT_) r->status = ATTEST_ERR_INTERNAL;
        return attest_fail((attest_status)r->status, "%s", r->message);
    }
    char end[96];
    return attest_fail(ATTEST_ERR_FORMAT,
                       "plugin '%s': loading it (constructors, %s(), destructors) %s; not "
                       "loaded", path,
                       ATTEST_PLUGIN_ENTRY_SYMBOL, child_probe_end(&p, wstatus, end, sizeof end));
}

/* --- the stand-in candidate ------------------------------------------------------------------
 * A plugin is code: a library whose (corrupt) relocations write outside its own segments passes
 * any probe and then damages the process that loaded it. So the caller gets a stand-in whose
 * declared fields come from the probe's report and whose functions load the library, the first
 * time one is called, in the process that calls it: the runner's worker, isolated; in the
 * caller only under --no-isolate or a direct call. The functions carry no pointer to their
 * candidate, so each stand-in is a slot with its own set of them. */

#define PLUGIN_SLOTS 16

typedef struct plugin_slot {
    attest_candidate cand;        /* what the caller is handed */
    char path[4096];
    char key[4096];               /* the library's real path, to hand out one stand-in per name */
    char name[64];
    char description[256];
    const attest_candidate *real; /* this process's loaded candidate, NULL until first use */
} plugin_slot;

/* Filled on one thread, before cases run, as the external candidates are. */
static plugin_slot slots[PLUGIN_SLOTS];
static size_t slots_used;

static int same_conventions(const attest_conventions *a, const attest_conventions *b)
{
    return a->masking == b->masking && a->lse_convention == b->lse_convention &&
           a->relu_nan == b->relu_nan && a->lonely_lse == b->lonely_lse &&
           a->invalid_index == b->invalid_index;
}

/* Loads the library here (once per process) and checks it still declares what the probe saw:
 * the file may have been replaced since. 0 on success; the reason goes to stderr, as the
 * caller's only channel from init() is a return code. */
static int slot_load(plugin_slot *s)
{
    if (s->real) return 0;
    const attest_candidate *c = NULL;
    attest_status st = load_and_find(s->path, s->name, &c, NULL);
    if (st == ATTEST_OK && (c->kernel != s->cand.kernel || c->domain != s->cand.domain ||
                            !same_conventions(&c->conventions, &s->cand.conventions)))
        st = attest_fail(ATTEST_ERR_FORMAT, "plugin '%s': candidate '%s' declares another "
                         "kernel, domain or conventions than when it was probed", s->path,
                         s->name);
    if (st != ATTEST_OK) {
        fprintf(stderr, "attest: %s\n", attest_last_error());
        return -1;
    }
    s->real = c;
    return 0;
}

static int slot_init(plugin_slot *s, void **ctx)
{
    *ctx = NULL;
    if (slot_load(s) != 0) return -1;
    return s->real->init ? s->real->init(ctx) : 0;
}

static void slot_fini(plugin_slot *s, void *ctx)
{
    if (s->real && s->real->fini) s->real->fini(ctx);
}

static int slot_supports(plugin_slot *s, void *ctx, const attest_kernel_args *a)
{
    if (slot_load(s) != 0) return 0;
    return s->real->supports ? s->real->supports(ctx, a) : 1;
}

static int slot_run(plugin_slot *s, void *ctx, const attest_kernel_args *a)
{
    if (slot_load(s) != 0) return -1;
    return s->real->run(ctx, a);
}

#define SLOT_FUNCTIONS(N)                                                                      \
    static int init_##N(void **ctx) { return slot_init(&slots[N], ctx); }                     \
    static void fini_##N(void *ctx) { slot_fini(&slots[N], ctx); }                            \
    static int supports_##N(void *ctx, const attest_kernel_args *a)                           \
    {                                                                                          \
        return slot_supports(&slots[N], ctx, a);                                               \
    }                                                                                          \
    static int run_##N(void *ctx, const attest_kernel_args *a)                                \
    {                                                                                          \
        return slot_run(&slots[N], ctx, a);                                                    \
    }
SLOT_FUNCTIONS(0) SLOT_FUNCTIONS(1) SLOT_FUNCTIONS(2) SLOT_FUNCTIONS(3)
SLOT_FUNCTIONS(4) SLOT_FUNCTIONS(5) SLOT_FUNCTIONS(6) SLOT_FUNCTIONS(7)
SLOT_FUNCTIONS(8) SLOT_FUNCTIONS(9) SLOT_FUNCTIONS(10) SLOT_FUNCTIONS(11)
SLOT_FUNCTIONS(12) SLOT_FUNCTIONS(13) SLOT_FUNCTIONS(14) SLOT_FUNCTIONS(15)

#define SLOT_ENTRY(N) {init_##N, fini_##N, supports_##N, run_##N}
static const struct {
    int (*init)(void **ctx);
    void (*fini)(void *ctx);
    int (*supports)(void *ctx, const attest_kernel_args *args);
    int (*run)(void *ctx, const attest_kernel_args *args);
} slot_functions[PLUGIN_SLOTS] = {
    SLOT_ENTRY(0),  SLOT_ENTRY(1),  SLOT_ENTRY(2),  SLOT_ENTRY(3),
    SLOT_ENTRY(4),  SLOT_ENTRY(5),  SLOT_ENTRY(6),  SLOT_ENTRY(7),
    SLOT_ENTRY(8),  SLOT_ENTRY(9),  SLOT_ENTRY(10), SLOT_ENTRY(11),
    SLOT_ENTRY(12), SLOT_ENTRY(13), SLOT_ENTRY(14), SLOT_ENTRY(15),
};

attest_status attest_plugin_load(const char *spec, const attest_candidate **out)
{
    ATTEST_RETURN_IF(spec == NULL || out == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "plugin: spec and out must not be NULL");
    *out = NULL;
    /* "path:NAME", split at the last ':' (a path may hold one; a name never does). */
    const char *colon = strrchr(spec, ':');
    ATTEST_RETURN_IF(colon == NULL || colon == spec || colon[1] == '\0',
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "plugin '%s': expected path/libfoo.so:NAME", spec);
    const size_t path_len = (size_t)(colon - spec);
    char path[4096];
    ATTEST_RETURN_IF(path_len + 3 > sizeof path, ATTEST_ERR_INVALID_ARGUMENT,
                     "plugin: path of %zu characters is too long", path_len);
    /* dlopen searches the library path for a bare name; a file named on the command line is
     * meant relative to the working directory. */
    struct stat sb;
    memcpy(path, spec, path_len);
    path[path_len] = '\0';
    if (!memchr(spec, '/', path_len) && stat(path, &sb) == 0) {
        memmove(path + 2, path, path_len + 1);
        memcpy(path, "./", 2);
    }
    const char *name = colon + 1;
    ATTEST_RETURN_IF(strlen(name) >= 64, ATTEST_ERR_INVALID_ARGUMENT,
                     "plugin '%s': candidate name longer than 63 characters", path);
    /* One stand-in per library and name, however the path is spelled. A later chdir() would
     * change what a relative path names: the slot keeps the real path when there is one. */
    char key[4096];
    if (!realpath(path, key)) snprintf(key, sizeof key, "%s", path);
    for (size_t i = 0; i < slots_used; i++)
        if (!strcmp(slots[i].key, key) && !strcmp(slots[i].name, name)) {
            *out = &slots[i].cand;
            return ATTEST_OK;
        }
    ATTEST_RETURN_IF(slots_used == PLUGIN_SLOTS, ATTEST_ERR_INVALID_ARGUMENT,
                     "plugin '%s': at most %d plugin candidates per process", path,
                     PLUGIN_SLOTS);
    plugin_slot *s = &slots[slots_used];
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", strchr(key, '/') ? key : path);
    snprintf(s->key, sizeof s->key, "%s", key);
    snprintf(s->name, sizeof s->name, "%s", name);
    plugin_report r;
    memset(&r, 0, sizeof r);
    /* $ATTEST_PLUGIN_PROBE=0 skips the child and loads the library here (a debugger session). */
    const char *env = getenv("ATTEST_PLUGIN_PROBE");
    if (env && !strcmp(env, "0")) {
        ATTEST_FORWARD(load_and_find(path, name, &s->real, NULL));
        if (s->real->description)
            snprintf(r.description, sizeof r.description, "%s", s->real->description);
        r.kernel = (int32_t)s->real->kernel;
        r.domain = (int32_t)s->real->domain;
        r.conventions = s->real->conventions;
    } else {
        ATTEST_FORWARD(plugin_probe(path, name, &r));
    }
    snprintf(s->description, sizeof s->description, "%s", r.description);
    s->cand.abi_version = ATTEST_CANDIDATE_ABI_VERSION;
    s->cand.struct_size = sizeof s->cand;
    s->cand.name = s->name;
    s->cand.description = s->description;
    s->cand.kernel = (attest_kernel)r.kernel;
    s->cand.domain = (attest_memory_domain)r.domain;
    s->cand.conventions = r.conventions;
    s->cand.init = slot_functions[slots_used].init;
    s->cand.fini = slot_functions[slots_used].fini;
    s->cand.supports = slot_functions[slots_used].supports;
    s->cand.run = slot_functions[slots_used].run;
    /* The child validated them; the report crossed a pipe, so they are checked again here. */
    attest_status st = attest_candidate_validate(&s->cand);
    if (st != ATTEST_OK) {
        char why[256]; /* attest_fail must not format its own buffer */
        snprintf(why, sizeof why, "%s", attest_last_error());
        return attest_fail(st, "plugin '%s': %s", path, why);
    }
    slots_used++;
    *out = &s->cand;
    return ATTEST_OK;
}
