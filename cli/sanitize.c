/* `run --sanitize TOOL` (sanitize.h): one compute-sanitizer child per case. */
#include "sanitize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "attest/gen_options.h"

#define TOOL_PREFIX "========="
#define MAX_LINES_KEPT 3 /* a headline and where it happened */
#define MAX_ARGS 96

int attest_cli_sanitize_tool_ok(const char *tool)
{
    static const char *const tools[] = {"memcheck", "racecheck", "initcheck", "synccheck"};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        if (tool && !strcmp(tool, tools[i])) return 1;
    return 0;
}

int attest_cli_sanitizer_is_report(const char *line)
{
    if (strncmp(line, TOOL_PREFIX, strlen(TOOL_PREFIX)) != 0) return 0;
    const char *p = line + strlen(TOOL_PREFIX);
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\0') return 0;
    /* The banner, the summaries and the exit notes say nothing about the kernel. */
    static const char *const not_reports[] = {"COMPUTE-SANITIZER", "ERROR SUMMARY:",
                                              "LEAK SUMMARY:", "RACECHECK SUMMARY:",
                                              "Target application returned"};
    for (size_t i = 0; i < sizeof not_reports / sizeof not_reports[0]; i++)
        if (strncmp(p, not_reports[i], strlen(not_reports[i])) == 0) return 0;
    return 1;
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

int attest_cli_sanitizer_init(attest_cli_sanitizer *s, const char *verb, const char *tool,
                              double timeout_seconds)
{
    memset(s, 0, sizeof *s);
    s->tool = tool;
    s->timeout = timeout_seconds;
    if (find_tool(s->exe, sizeof s->exe) != 0)
        return attest_cli_usage_error(verb, "--sanitize: compute-sanitizer not found (set "
                                            "$ATTEST_COMPUTE_SANITIZER or put it on PATH)");
    ssize_t n = readlink("/proc/self/exe", s->self, sizeof s->self - 1);
    if (n <= 0) return attest_cli_usage_error(verb, "--sanitize: cannot find the attest binary");
    s->self[n] = '\0';
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(s->dir, sizeof s->dir, "%s/attest-sanitize-XXXXXX", tmp);
    if (!mkdtemp(s->dir))
        return attest_cli_usage_error(verb, "--sanitize: cannot create a log folder in %s: %s",
                                      tmp, strerror(errno));
    return -1;
}

void attest_cli_sanitizer_fini(attest_cli_sanitizer *s)
{
    if (!s->dir[0]) return;
    rmdir(s->dir); /* each inspect removed its own log */
    s->dir[0] = '\0';
}

/* Reads the child's log: the number of report lines, the first ones joined into `lines`. */
static int read_reports(const char *path, char *lines, size_t cap)
{
    lines[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512];
    int found = 0, kept = 0;
    size_t used = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!attest_cli_sanitizer_is_report(line)) continue;
        found++;
        if (kept == MAX_LINES_KEPT || used + 3 >= cap) continue;
        const char *text = line + strlen(TOOL_PREFIX);
        while (*text == ' ' || *text == '\t') text++;
        int w = snprintf(lines + used, cap - used, "%s%s", kept ? "; " : "", text);
        if (w > 0) used = used + (size_t)w < cap ? used + (size_t)w : cap - 1;
        kept++;
    }
    fclose(f);
    return found;
}

/* Runs argv with output to /dev/null; waits up to `timeout` s, then kills it. Returns its wait
 * status, or -1 when it could not start. */
static int run_child(char **argv, double timeout)
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL); /* ignored by attest itself (main.c); an exec keeps that */
        execv(argv[0], argv);
        _exit(127);
    }
    struct timespec tick = {0, 5 * 1000000};
    double waited = 0;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) return status;
        if (w < 0 && errno != EINTR) return -1;
        if (waited > timeout) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            return status;
        }
        nanosleep(&tick, NULL);
        waited += 0.005;
    }
}

attest_status attest_cli_sanitizer_inspect(void *ctx, const attest_job *job, const attest_case *c,
                                           attest_case_record *rec)
{
    (void)c;
    attest_cli_sanitizer *s = ctx;
    char log[PATH_MAX + 64], seed[32], timeout[32], flags[512];
    snprintf(seed, sizeof seed, "0x%016" PRIx64, rec->seed);
    /* One log per (process, case): with --jobs, several processes inspect cases at once. */
    snprintf(log, sizeof log, "%s/case-%ld-%s.log", s->dir, (long)getpid(), seed);
    unlink(log);
    snprintf(timeout, sizeof timeout, "%g", s->timeout);
    if (attest_cli_gen_flags_of(&job->gen, 1, flags, sizeof flags)) flags[0] = '\0';
    /* compute-sanitizer --tool T --log-file F SELF run --candidate C --kernel K --case-seed X
     * --reruns 1 --no-isolate --quiet --timeout S [generator bounds] */
    char *argv[MAX_ARGS];
    int k = 0;
    argv[k++] = s->exe;
    argv[k++] = "--tool";
    argv[k++] = (char *)s->tool;
    argv[k++] = "--log-file";
    argv[k++] = log;
    argv[k++] = s->self;
    argv[k++] = "run";
    argv[k++] = "--candidate";
    argv[k++] = (char *)job->candidate_spec;
    argv[k++] = "--kernel";
    argv[k++] = (char *)attest_kernel_name(job->gen.kernel);
    argv[k++] = "--case-seed";
    argv[k++] = seed;
    argv[k++] = "--reruns";
    argv[k++] = "1";
    argv[k++] = "--no-isolate";
    argv[k++] = "--quiet";
    argv[k++] = "--timeout";
    argv[k++] = timeout;
    for (char *save = NULL, *w = strtok_r(flags, " ", &save); w && k < MAX_ARGS - 1;
         w = strtok_r(NULL, " ", &save))
        argv[k++] = w;
    argv[k] = NULL;
    const int status = run_child(argv, 10.0 * s->timeout + 60.0);
    s->children++;
    ATTEST_RETURN_IF(status == -1 || (WIFEXITED(status) && WEXITSTATUS(status) == 127),
                     ATTEST_ERR_CHILD, "--sanitize: cannot run %s", s->exe);
    char lines[200];
    const int found = read_reports(log, lines, sizeof lines);
    unlink(log);
    if (found <= 0) return ATTEST_OK;
    char old[sizeof rec->message];
    snprintf(old, sizeof old, "%s", rec->message);
    char msg[512]; /* every field; the record keeps what fits */
    snprintf(msg, sizeof msg, "compute-sanitizer %s: %s%s%s", s->tool, lines, old[0] ? "; " : "",
             old);
    snprintf(rec->message, sizeof rec->message, "%.*s", (int)sizeof rec->message - 1, msg);
    rec->verdict = ATTEST_VERDICT_SANITIZER;
    rec->integrity_flags |= ATTEST_INTEGRITY_SANITIZER;
    return ATTEST_OK;
}
