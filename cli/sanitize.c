/* `--sanitize TOOL`: re-execute under compute-sanitizer (sanitize.h). */
#include "sanitize.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

#define LOG_ENV "ATTEST_SANITIZER_LOG"

int attest_cli_sanitize_tool_ok(const char *tool)
{
    static const char *const tools[] = {"memcheck", "racecheck", "initcheck", "synccheck"};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        if (tool && !strcmp(tool, tools[i])) return 1;
    return 0;
}

const char *attest_cli_sanitize_log(void)
{
    const char *p = getenv(LOG_ENV);
    return p && *p ? p : NULL;
}

static int find_tool(char *path, size_t cap)
{
    const char *env = getenv("ATTEST_COMPUTE_SANITIZER");
    if (env && *env) {
        snprintf(path, cap, "%s", env);
        return access(path, X_OK) == 0 ? 0 : -1;
    }
    const char *dirs = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s:/usr/local/cuda/bin", dirs ? dirs : "");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if (snprintf(path, cap, "%s/compute-sanitizer", d) >= (int)cap) continue;
        if (access(path, X_OK) == 0) return 0;
    }
    return -1;
}

int attest_cli_sanitize_exec(const char *verb, const char *tool, int argc, char **argv)
{
    char cs[PATH_MAX], self[PATH_MAX];
    if (find_tool(cs, sizeof cs) != 0)
        return attest_cli_usage_error(verb, "--sanitize: compute-sanitizer not found (set "
                                            "$ATTEST_COMPUTE_SANITIZER or put it on PATH)");
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return attest_cli_usage_error(verb, "--sanitize: cannot find the attest binary");
    self[n] = '\0';
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/attest-sanitize-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return attest_cli_usage_error(verb, "--sanitize: cannot create a log folder in %s: %s",
                                      tmp && *tmp ? tmp : "/tmp", strerror(errno));
    char pattern[PATH_MAX + 32];
    snprintf(pattern, sizeof pattern, "%s/attest.%%p.log", dir);
    if (setenv(LOG_ENV, pattern, 1) != 0)
        return attest_cli_usage_error(verb, "--sanitize: cannot set %s", LOG_ENV);
    /* compute-sanitizer --tool T --log-file P --print-limit N SELF VERB ARGS... */
    char **nargv = calloc((size_t)argc + 10, sizeof *nargv);
    if (!nargv) return attest_cli_usage_error(verb, "--sanitize: out of memory");
    int k = 0;
    nargv[k++] = cs;
    nargv[k++] = "--tool";
    nargv[k++] = (char *)tool;
    nargv[k++] = "--log-file";
    nargv[k++] = pattern;
    /* Every report of a long campaign in one worker, not the tool's first 100. */
    nargv[k++] = "--print-limit";
    nargv[k++] = "1000000";
    nargv[k++] = self;
    for (int i = 0; i < argc; i++) nargv[k++] = argv[i];
    nargv[k] = NULL;
    fprintf(stderr, "attest %s: under compute-sanitizer --tool %s, logs in %s\n", verb, tool, dir);
    fflush(stderr);
    execv(cs, nargv);
    int err = errno;
    free(nargv);
    return attest_cli_usage_error(verb, "--sanitize: cannot run %s: %s", cs, strerror(err));
}
