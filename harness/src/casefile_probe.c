/* attest case files: loading in a child process first, so that a file whose corrupt HDF5
 * metadata crashes the HDF5 library gives an error instead of killing the caller.
 *
 * Why: HDF5 1.10 trusts some on-disk structures. A flipped byte in a variable-length string's
 * heap descriptor makes H5HG_read copy from a wild address; a corrupt attribute message can crash
 * H5Aexists. attest validates everything it reads through the HDF5 API, but cannot validate what
 * the library parses before handing it over. Loading is deterministic, so a file that loads in a
 * child loads in the caller too.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/casefile.h"

/* What the child reports: its status, then the one-line message. */
typedef struct probe_report {
    int32_t status;
    char message[512];
} probe_report;

static attest_status load_one(const char *path, const char *group)
{
    attest_case c;
    attest_status st = attest_casefile_load(path, group, &c);
    if (st == ATTEST_OK) attest_case_free(&c);
    return st;
}

static attest_status load_each(const char *group, attest_kernel kernel, void *user)
{
    (void)kernel;
    return load_one(user, group);
}

static attest_status probe_in_child(const char *path, const char *group)
{
    if (group) return load_one(path, group);
    return attest_casefile_list_groups(path, load_each, (void *)path);
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads up to n bytes; returns how many arrived before end of file or an error. */
static size_t read_all(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

/* The child's deadline: $ATTEST_PROBE_TIMEOUT seconds (0: none), default 60. Reading a valid
 * file takes well under a second per 100 MB. */
static unsigned probe_seconds(void)
{
    const char *env = getenv("ATTEST_PROBE_TIMEOUT");
    if (env == NULL || *env == '\0') return 60;
    char *end;
    unsigned long v = strtoul(env, &end, 10);
    return *end == '\0' && v <= 86400 ? (unsigned)v : 60;
}

/* How a child that reported nothing ended, for messages: "crashed the HDF5 library (signal
 * 11)" or "did not finish within 60 s". */
static const char *child_end(int wstatus, char *buf, size_t cap)
{
    if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGALRM)
        snprintf(buf, cap, "did not finish within %u s", probe_seconds());
    else
        snprintf(buf, cap, "crashed the HDF5 library (signal %d)",
                 WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
    return buf;
}

/* What a child runs: writes its reports to fd, returns its exit code. */
typedef int (*child_fn)(int fd, void *arg);

/* Forks a child that runs fn(write end, arg) and exits; the caller reads *fd (the read end),
 * closes it and reaps *pid with reap(). `doing` completes "cannot fork to ...". */
static attest_status spawn(const char *path, const char *doing, child_fn fn, void *arg, int *fd,
                           pid_t *pid)
{
    int fds[2];
    if (pipe(fds) != 0)
        return attest_fail(ATTEST_ERR_IO, "%s: cannot create a pipe: %s", path, strerror(errno));
    fflush(NULL); /* nothing buffered may be written twice */
    *pid = fork();
    if (*pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return attest_fail(ATTEST_ERR_IO, "%s: cannot fork to %s: %s", path, doing,
                           strerror(errno));
    }
    if (*pid == 0) {
        close(fds[0]);
        /* The caller's crash handlers (a test framework's longjmp, a sanitizer's report) must not
         * run here: the child has to die of the signal. */
        static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
            (void)signal(crash_signals[i], SIG_DFL);
        /* HDF5 1.10 also loops forever on some corrupt metadata (a global heap object whose
         * size overruns its collection): the child gets a deadline, and dies of SIGALRM. */
        (void)signal(SIGALRM, SIG_DFL);
        (void)alarm(probe_seconds());
        /* A crash report from the child (a sanitizer's, say) would break the one-line rule. */
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            (void)dup2(devnull, STDERR_FILENO);
            close(devnull);
        }
        _exit(fn(fds[1], arg));
    }
    close(fds[1]);
    *fd = fds[0];
    return ATTEST_OK;
}

static int reap(pid_t pid)
{
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    return wstatus;
}

/* --- one status for the whole file ----------------------------------------------------------- */

typedef struct probe_target {
    const char *path, *group;
} probe_target;

static int probe_child(int fd, void *arg)
{
    const probe_target *t = arg;
    probe_report r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)probe_in_child(t->path, t->group);
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    return write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
}

attest_status attest_casefile_probe(const char *path, const char *group)
{
    if (!path) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_probe: NULL path");
    probe_target t = {path, group};
    int fd;
    pid_t pid;
    attest_status st = spawn(path, "probe the file", probe_child, &t, &fd, &pid);
    if (st != ATTEST_OK) return st;
    probe_report r;
    size_t got = read_all(fd, &r, sizeof r);
    close(fd);
    int wstatus = reap(pid);
    if (got == sizeof r && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        r.message[sizeof r.message - 1] = '\0';
        if (r.status == ATTEST_OK) return ATTEST_OK;
        if (r.status < 0 || r.status >= ATTEST_STATUS_COUNT_) r.status = ATTEST_ERR_INTERNAL;
        return attest_fail((attest_status)r.status, "%s", r.message);
    }
    char end[64];
    if (WIFSIGNALED(wstatus))
        return attest_fail(ATTEST_ERR_FORMAT, "%s: reading it %s: its HDF5 metadata is corrupt",
                           path, child_end(wstatus, end, sizeof end));
    return attest_fail(ATTEST_ERR_FORMAT,
                       "%s: reading it stopped a probe process (exit %d): its HDF5 metadata is "
                       "corrupt",
                       path, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}

/* --- a status per case ----------------------------------------------------------------------- */

/* The child streams: REC_BEGIN before loading a case (so a crash names it), REC_CASE with its
 * outcome, then REC_END; or REC_FILE_ERROR when the cases cannot be listed. */
enum { REC_BEGIN = 1, REC_CASE = 2, REC_FILE_ERROR = 3, REC_END = 4 };

typedef struct case_record {
    int32_t type;
    attest_casefile_probe_case c;
} case_record;

typedef struct case_list {
    attest_casefile_probe_case *items;
    size_t count, cap;
} case_list;

static attest_status push_case(case_list *l, const attest_casefile_probe_case *c, const char *what)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        attest_casefile_probe_case *p = realloc(l->items, cap * sizeof *p);
        if (!p) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s", what);
        l->items = p;
        l->cap = cap;
    }
    l->items[l->count++] = *c;
    return ATTEST_OK;
}

static attest_status collect_case(const char *group, attest_kernel kernel, void *user)
{
    attest_casefile_probe_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", group);
    c.kernel = kernel;
    return push_case(user, &c, "listing cases");
}

static int send_record(int fd, int32_t type, const attest_casefile_probe_case *c)
{
    case_record r;
    memset(&r, 0, sizeof r);
    r.type = type;
    if (c) r.c = *c;
    return write_all(fd, &r, sizeof r);
}

typedef struct cases_target {
    const char *path;
    attest_casefile_probe_fn check;
    void *user;
} cases_target;

static int cases_child(int fd, void *arg)
{
    const cases_target *t = arg;
    case_list l = {0};
    attest_status st = attest_casefile_list_groups(t->path, collect_case, &l);
    if (st != ATTEST_OK) {
        attest_casefile_probe_case c;
        memset(&c, 0, sizeof c);
        c.status = st;
        snprintf(c.message, sizeof c.message, "%s", attest_last_error());
        (void)send_record(fd, REC_FILE_ERROR, &c);
        return 0;
    }
    for (size_t i = 0; i < l.count; i++) {
        attest_casefile_probe_case *g = &l.items[i];
        if (send_record(fd, REC_BEGIN, g)) return 0;
        attest_case c;
        g->status = attest_casefile_load(t->path, g->name, &c);
        if (g->status == ATTEST_OK) {
            if (t->check) g->status = t->check(t->path, g->name, &c, &g->found, t->user);
            attest_case_free(&c);
        }
        if (g->status != ATTEST_OK) snprintf(g->message, sizeof g->message, "%s", attest_last_error());
        if (send_record(fd, REC_CASE, g)) return 0;
    }
    (void)send_record(fd, REC_END, NULL);
    return 0;
}

attest_status attest_casefile_probe_cases(const char *path, attest_casefile_probe_fn check,
                                          void *user, attest_casefile_probe_result *out)
{
    if (!out) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_probe_cases: NULL out");
    memset(out, 0, sizeof *out);
    if (!path)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_probe_cases: NULL path");
    cases_target t = {path, check, user};
    int fd;
    pid_t pid;
    attest_status st = spawn(path, "read it", cases_child, &t, &fd, &pid);
    if (st != ATTEST_OK) return st;
    case_list l = {0};
    int ended = 0, open_case = 0;
    attest_casefile_probe_case begun;
    memset(&begun, 0, sizeof begun);
    for (;;) {
        case_record r;
        if (read_all(fd, &r, sizeof r) < sizeof r) break;
        r.c.name[sizeof r.c.name - 1] = '\0';
        r.c.message[sizeof r.c.message - 1] = '\0';
        /* Messages quote names from the file, which a corrupt file fills with any bytes. */
        for (char *p = r.c.message; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
        if (r.type == REC_BEGIN) {
            begun = r.c;
            open_case = 1;
        } else if (r.type == REC_CASE) {
            open_case = 0;
            if (st == ATTEST_OK) st = push_case(&l, &r.c, "probing a case file");
        } else if (r.type == REC_FILE_ERROR) {
            out->file_status = r.c.status ? r.c.status : ATTEST_ERR_FORMAT;
            snprintf(out->file_message, sizeof out->file_message, "%s", r.c.message);
            ended = 1;
        } else if (r.type == REC_END) {
            ended = 1;
        }
    }
    close(fd);
    int wstatus = reap(pid);
    out->cases = l.items;
    out->count = l.count;
    if (st != ATTEST_OK) {
        attest_casefile_probe_result_free(out);
        return st;
    }
    if (ended) return ATTEST_OK;
    char end[64];
    (void)child_end(wstatus, end, sizeof end);
    out->file_status = ATTEST_ERR_FORMAT;
    if (open_case)
        snprintf(out->file_message, sizeof out->file_message,
                 "%s: %s: reading this case %s: the file's HDF5 metadata is corrupt", path,
                 begun.name, end);
    else
        snprintf(out->file_message, sizeof out->file_message,
                 "%s: listing its cases %s: the file's HDF5 metadata is corrupt", path, end);
    return ATTEST_OK;
}

void attest_casefile_probe_result_free(attest_casefile_probe_result *r)
{
    if (!r) return;
    free(r->cases);
    memset(r, 0, sizeof *r);
}
