/* attest check: finding fixture files and reading them in a child process (check.h).
 *
 * Why a child: HDF5 1.10 trusts some on-disk structures, so a corrupt fixture can crash the
 * library (casefile_probe.c explains). A CI gate must turn that into a failure that names the
 * file, and still check the other fixtures. One child per file reads everything check will read
 * (the listing, every case, every stored output) and reports per case, so a single bad group
 * costs only itself. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/results.h"
#include "check.h"

/* --- collecting files ------------------------------------------------------------------------ */

static attest_status push_path(check_files *f, const char *path)
{
    if (f->count == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        char **p = realloc(f->paths, cap * sizeof *p);
        if (!p) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "listing fixtures");
        f->paths = p;
        f->cap = cap;
    }
    if (!(f->paths[f->count] = strdup(path)))
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "listing fixtures");
    f->count++;
    return ATTEST_OK;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The results file of this run and its live repro directory are never fixtures. */
static int excluded(const char *path, const char *exclude)
{
    if (!exclude || !*exclude) return 0;
    char real[PATH_MAX];
    if (!realpath(path, real)) return 0;
    size_t n = strlen(exclude);
    if (!strcmp(real, exclude)) return 1;
    return !strncmp(real, exclude, n) &&
           !strncmp(real + n, ATTEST_RESULTS_REPRO_DIR_SUFFIX "/",
                    strlen(ATTEST_RESULTS_REPRO_DIR_SUFFIX) + 1);
}

static attest_status walk(check_files *f, const char *dir, const char *exclude, int depth)
{
    ATTEST_RETURN_IF(depth > 32, ATTEST_ERR_INVALID_ARGUMENT, "%s: directories nest too deep",
                     dir);
    DIR *d = opendir(dir);
    if (!d) return push_path(f, dir); /* unreadable: fails later as a fixture, naming it */
    attest_status st = ATTEST_OK;
    struct dirent *e;
    while (st == ATTEST_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/",
                         e->d_name);
        if (n < 0 || (size_t)n >= sizeof path) {
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s/%s: path too long", dir, e->d_name);
            break;
        }
        struct stat ls, s;
        if (lstat(path, &ls) != 0) continue;
        if (S_ISDIR(ls.st_mode)) {
            st = walk(f, path, exclude, depth + 1); /* symlinked directories are not followed */
        } else if (ends_with(e->d_name, ".h5") && stat(path, &s) == 0 && S_ISREG(s.st_mode) &&
                   !excluded(path, exclude)) {
            st = push_path(f, path);
        }
    }
    closedir(d);
    return st;
}

static int cmp_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

attest_status check_files_collect(char *const *args, size_t num_args, const char *exclude,
                                  check_files *out)
{
    memset(out, 0, sizeof *out);
    /* The excluded file may not exist yet: canonicalize its directory. */
    char ex[PATH_MAX] = "";
    if (exclude && *exclude) {
        char dir[PATH_MAX], real[PATH_MAX];
        const char *slash = strrchr(exclude, '/');
        const char *base = slash ? slash + 1 : exclude;
        size_t dlen = slash ? (size_t)(slash - exclude) : 0;
        if (slash && dlen == 0) dlen = 1; /* "/name" */
        snprintf(dir, sizeof dir, "%.*s", (int)dlen, slash ? exclude : ".");
        if (!slash) snprintf(dir, sizeof dir, ".");
        if (realpath(dir, real)) {
            int n = snprintf(ex, sizeof ex, "%s%s%s", real, ends_with(real, "/") ? "" : "/", base);
            if (n < 0 || (size_t)n >= sizeof ex) ex[0] = '\0'; /* too long to be a real path */
        }
    }
    attest_status st = ATTEST_OK;
    for (size_t i = 0; i < num_args && st == ATTEST_OK; i++) {
        struct stat s;
        if (stat(args[i], &s) == 0 && S_ISDIR(s.st_mode)) {
            size_t first = out->count;
            st = walk(out, args[i], ex, 0);
            if (st == ATTEST_OK && out->count > first)
                qsort(out->paths + first, out->count - first, sizeof *out->paths, cmp_paths);
        } else {
            st = push_path(out, args[i]);
        }
    }
    if (st != ATTEST_OK) check_files_free(out);
    return st;
}

void check_files_free(check_files *f)
{
    for (size_t i = 0; i < f->count; i++) free(f->paths[i]);
    free(f->paths);
    memset(f, 0, sizeof *f);
}

/* --- scanning one file in a child ------------------------------------------------------------ */

enum { REC_BEGIN = 1, REC_GROUP = 2, REC_FILE_ERROR = 3, REC_END = 4 };

typedef struct scan_record {
    int32_t type;
    check_group group;
} scan_record;

typedef struct name_list {
    check_group *items;
    size_t count, cap;
} name_list;

static attest_status collect_group(const char *group, attest_kernel kernel, void *user)
{
    name_list *l = user;
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        check_group *p = realloc(l->items, cap * sizeof *p);
        if (!p) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "listing cases");
        l->items = p;
        l->cap = cap;
    }
    check_group *g = &l->items[l->count++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", group);
    g->kernel = kernel;
    return ATTEST_OK;
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

static int send_record(int fd, int32_t type, const check_group *g)
{
    scan_record r;
    memset(&r, 0, sizeof r);
    r.type = type;
    if (g) r.group = *g;
    return write_all(fd, &r, sizeof r);
}

static void scan_in_child(int fd, const char *path, int with_expected)
{
    name_list l = {0};
    attest_status st = attest_casefile_list_groups(path, collect_group, &l);
    if (st != ATTEST_OK) {
        check_group g;
        memset(&g, 0, sizeof g);
        g.status = st;
        snprintf(g.message, sizeof g.message, "%s", attest_last_error());
        (void)send_record(fd, REC_FILE_ERROR, &g);
        return;
    }
    for (size_t i = 0; i < l.count; i++) {
        check_group *g = &l.items[i];
        if (send_record(fd, REC_BEGIN, g)) return;
        attest_case c;
        g->status = attest_casefile_load(path, g->name, &c);
        if (g->status == ATTEST_OK) {
            if (with_expected) {
                check_expected e;
                g->status = check_expected_load(path, g->name, &c, &e);
                g->expected = e.count;
                if (g->status == ATTEST_OK) check_expected_free(&e);
            }
            attest_case_free(&c);
        }
        if (g->status != ATTEST_OK) snprintf(g->message, sizeof g->message, "%s", attest_last_error());
        if (send_record(fd, REC_GROUP, g)) return;
    }
    (void)send_record(fd, REC_END, NULL);
}

static attest_status add_group(check_scan *s, const check_group *g, size_t *cap)
{
    if (s->count == *cap) {
        size_t n = *cap ? 2 * *cap : 16;
        check_group *p = realloc(s->groups, n * sizeof *p);
        if (!p) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "scanning a fixture");
        s->groups = p;
        *cap = n;
    }
    s->groups[s->count++] = *g;
    return ATTEST_OK;
}

attest_status check_scan_file(const char *path, int with_expected, check_scan *out)
{
    memset(out, 0, sizeof *out);
    int fds[2];
    if (pipe(fds) != 0)
        return attest_fail(ATTEST_ERR_IO, "%s: cannot create a pipe: %s", path, strerror(errno));
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return attest_fail(ATTEST_ERR_IO, "%s: cannot fork to read it: %s", path, strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        /* The child must die of the signal: no inherited handler, no report on stderr. */
        static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
            (void)signal(crash_signals[i], SIG_DFL);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            (void)dup2(devnull, STDERR_FILENO);
            close(devnull);
        }
        scan_in_child(fds[1], path, with_expected);
        _exit(0);
    }
    close(fds[1]);
    attest_status st = ATTEST_OK;
    size_t cap = 0;
    int ended = 0, open_group = 0;
    check_group begun;
    memset(&begun, 0, sizeof begun);
    for (;;) {
        scan_record r;
        size_t got = 0;
        while (got < sizeof r) {
            ssize_t n = read(fds[0], (char *)&r + got, sizeof r - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += (size_t)n;
        }
        if (got < sizeof r) break;
        r.group.name[sizeof r.group.name - 1] = '\0';
        r.group.message[sizeof r.group.message - 1] = '\0';
        /* Messages quote names from the file, which a corrupt file fills with any bytes. */
        for (char *p = r.group.message; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
        if (r.type == REC_BEGIN) {
            begun = r.group;
            open_group = 1;
        } else if (r.type == REC_GROUP) {
            open_group = 0;
            if (st == ATTEST_OK) st = add_group(out, &r.group, &cap);
        } else if (r.type == REC_FILE_ERROR) {
            out->file_status = r.group.status ? r.group.status : ATTEST_ERR_FORMAT;
            snprintf(out->file_message, sizeof out->file_message, "%s", r.group.message);
            ended = 1;
        } else if (r.type == REC_END) {
            ended = 1;
        }
    }
    close(fds[0]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (st != ATTEST_OK) {
        check_scan_free(out);
        return st;
    }
    if (ended) return ATTEST_OK;
    const int sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
    out->file_status = ATTEST_ERR_FORMAT;
    if (open_group)
        snprintf(out->file_message, sizeof out->file_message,
                 "%s: %s: reading this case crashed the HDF5 library (signal %d): the file's "
                 "HDF5 metadata is corrupt",
                 path, begun.name, sig);
    else
        snprintf(out->file_message, sizeof out->file_message,
                 "%s: listing its cases crashed the HDF5 library (signal %d): the file's HDF5 "
                 "metadata is corrupt",
                 path, sig);
    return ATTEST_OK;
}

void check_scan_free(check_scan *s)
{
    free(s->groups);
    memset(s, 0, sizeof *s);
}
