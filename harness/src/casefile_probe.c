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

attest_status attest_casefile_probe(const char *path, const char *group)
{
    if (!path) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_probe: NULL path");
    int fds[2];
    if (pipe(fds) != 0)
        return attest_fail(ATTEST_ERR_IO, "%s: cannot create a pipe: %s", path, strerror(errno));
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return attest_fail(ATTEST_ERR_IO, "%s: cannot fork to probe the file: %s", path,
                           strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        /* The caller's crash handlers (a test framework's longjmp, a sanitizer's report) must not
         * run here: the child has to die of the signal. */
        static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
            (void)signal(crash_signals[i], SIG_DFL);
        /* A crash report from the child (a sanitizer's, say) would break the one-line rule. */
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            (void)dup2(devnull, STDERR_FILENO);
            close(devnull);
        }
        probe_report r;
        memset(&r, 0, sizeof r);
        r.status = (int32_t)probe_in_child(path, group);
        snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
        int rc = write_all(fds[1], &r, sizeof r);
        _exit(rc == 0 ? 0 : 1);
    }
    close(fds[1]);
    probe_report r;
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = read(fds[0], (char *)&r + got, sizeof r - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fds[0]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (got == sizeof r && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        r.message[sizeof r.message - 1] = '\0';
        if (r.status == ATTEST_OK) return ATTEST_OK;
        if (r.status < 0 || r.status >= ATTEST_STATUS_COUNT_) r.status = ATTEST_ERR_INTERNAL;
        return attest_fail((attest_status)r.status, "%s", r.message);
    }
    if (WIFSIGNALED(wstatus))
        return attest_fail(ATTEST_ERR_FORMAT,
                           "%s: reading it crashed the HDF5 library (signal %d): its HDF5 "
                           "metadata is corrupt",
                           path, WTERMSIG(wstatus));
    return attest_fail(ATTEST_ERR_FORMAT,
                       "%s: reading it stopped a probe process (exit %d): its HDF5 metadata is "
                       "corrupt",
                       path, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}
