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
 * first (plugin_probe) and, when that passed, in the caller: the same steps give the same
 * answer, and whatever crashes or hangs has then done so in the child. */
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

typedef struct plugin_report {
    int32_t status;
    char message[512];
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
    /* The library's destructors run at the caller's exit: run them here first (a corrupt
     * .fini_array would otherwise crash attest after its summary). */
    if (r.status == ATTEST_OK && lib && dlclose(lib) != 0) {
        r.status = ATTEST_ERR_FORMAT;
        snprintf(r.message, sizeof r.message, "plugin '%s' cannot be unloaded: %s", t->path,
                 dlerror());
        return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
    }
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
}

/* Loads the plugin in a child with a deadline: a constructor or entry point that crashes,
 * blocks or calls exit(), a wild pointer in what it returns, a truncated library (SIGBUS in
 * dlopen), all end there. */
static attest_status plugin_probe(const char *path, const char *name)
{
    plugin_target t = {path, name};
    child_probe p;
    ATTEST_FORWARD(child_probe_spawn(path, "probe the plugin", plugin_child, &t, &p));
    plugin_report r;
    size_t got = child_probe_read(&p, &r, sizeof r);
    int wstatus = child_probe_finish(&p);
    if (got == sizeof r && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        r.message[sizeof r.message - 1] = '\0';
        for (char *c = r.message; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) *c = '?';
        if (r.status == ATTEST_OK) return ATTEST_OK;
        if (r.status < 0 || r.status >= ATTEST_STATUS_COUNT_) r.status = ATTEST_ERR_INTERNAL;
        return attest_fail((attest_status)r.status, "%s", r.message);
    }
    char end[96];
    return attest_fail(ATTEST_ERR_FORMAT,
                       "plugin '%s': loading it (constructors, %s(), destructors) %s; not "
                       "loaded", path,
                       ATTEST_PLUGIN_ENTRY_SYMBOL, child_probe_end(&p, wstatus, end, sizeof end));
}

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
    /* $ATTEST_PLUGIN_PROBE=0 skips the child (a debugger session); the default probes. */
    const char *env = getenv("ATTEST_PLUGIN_PROBE");
    if (!(env && !strcmp(env, "0"))) ATTEST_FORWARD(plugin_probe(path, name));
    return load_and_find(path, name, out, NULL);
}
