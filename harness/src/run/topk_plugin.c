/* Top-k candidates from plugins (attest/topk_runner.h), loaded as plugin.c loads the other
 * families': a probe child first, then the caller. */
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

typedef struct probe_report {
    int32_t status;
    char message[512];
} probe_report;

static int probe_child(int fd, void *arg)
{
    const probe_target *t = arg;
    const attest_topk_candidate *c = NULL;
    probe_report r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)load_and_find(t->path, t->name, &c, NULL);
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
}

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
    void *lib = NULL;
    return load_and_find(path, name, out, &lib);
}
