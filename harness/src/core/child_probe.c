/* Loaders probed in a child with a deadline (child_probe.h). */
#include "attest/clock.h"
#include "child_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a killed child gets to be reaped (it may be stuck in the kernel). */
#define REAP_AFTER_KILL_S 5.0

unsigned child_probe_seconds(void)
{
    const char *env = getenv("ATTEST_PROBE_TIMEOUT");
    if (env == NULL || *env == '\0') return 60;
    char *end;
    unsigned long v = strtoul(env, &end, 10);
    return *end == '\0' && v <= 86400 ? (unsigned)v : 60;
}

int child_probe_write_all(int fd, const void *buf, size_t n)
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

/* Closes every descriptor from 3 up but `channel` and, with `files`, the regular files, reading
 * /proc/self/fd with getdents64 into a stack buffer (no allocation after fork). Returns -1 when
 * /proc cannot be read. */
static int close_inherited(int channel, int files)
{
    int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            const struct child_dirent {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (const void *)(buf + off);
            off += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9') continue;
            const int fd = atoi(d->name);
            if (fd < 3 || fd == channel || fd == dir) continue;
            struct stat sb;
            if (files && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) continue;
            close(fd);
        }
    }
    close(dir);
    return 0;
}

int child_isolate(int channel, child_fds keep)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) (void)signal(sig, SIG_DFL);
    (void)signal(SIGTTOU, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    (void)setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        (void)dup2(devnull, STDIN_FILENO);
        if (devnull != STDIN_FILENO) close(devnull);
    }
    if (channel < 0) {
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return -1;
#endif
        (void)close_inherited(-1, keep == CHILD_FDS_FILES);
        return -1;
    }
    if (keep == CHILD_FDS_FILES) {
        (void)fcntl(channel, F_SETFD, FD_CLOEXEC);
        (void)close_inherited(channel, 1);
        return channel;
    }
    if (channel != 3) {
        if (dup2(channel, 3) < 0) return channel;
        close(channel);
    }
    (void)fcntl(3, F_SETFD, FD_CLOEXEC);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4u, ~0u, 0u) == 0) return 3;
#endif
    if (close_inherited(3, 0) == 0) return 3;
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (int i = 4; i < (int)max; i++) close(i);
    return 3;
}

attest_status child_probe_spawn(const char *path, const char *doing, child_probe_fn fn,
                                void *arg, child_probe *p)
{
    return child_probe_spawn_within(path, doing, fn, arg, child_probe_seconds(), p);
}

attest_status child_probe_spawn_within(const char *path, const char *doing, child_probe_fn fn,
                                       void *arg, unsigned seconds, child_probe *p)
{
    memset(p, 0, sizeof *p);
    p->fd = -1;
    int fds[2];
    if (pipe(fds) != 0)
        return attest_fail(ATTEST_ERR_IO, "%s: cannot create a pipe: %s", path, strerror(errno));
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return attest_fail(ATTEST_ERR_IO, "%s: cannot fork to %s: %s", path, doing, strerror(e));
    }
    if (pid == 0) {
        close(fds[0]);
        const int fd = child_isolate(fds[1], CHILD_FDS_FILES);
        if (seconds) (void)alarm(seconds);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            (void)dup2(devnull, STDERR_FILENO);
            close(devnull);
        }
        _exit(fn(fd, arg));
    }
    close(fds[1]);
    (void)setpgid(pid, pid); /* both sides: no window where a group kill misses */
    p->pid = pid;
    p->fd = fds[0];
    /* The parent waits a little longer than the child's alarm, so a child that honours it is
     * reported as such. */
    p->deadline = seconds ? attest_monotonic_seconds() + seconds + 1.0 : INFINITY;
    return ATTEST_OK;
}

size_t child_probe_read(child_probe *p, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n && p->fd >= 0) {
        double left = p->deadline - attest_monotonic_seconds();
        if (left <= 0.0) {
            p->timed_out = 1;
            break;
        }
        struct pollfd pf = {.fd = p->fd, .events = POLLIN};
        int ms = isinf(left) ? -1 : (int)ceil(left * 1000.0);
        int r = poll(&pf, 1, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (r == 0) continue;
        ssize_t k = read(p->fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    return got;
}

static void kill_child(const child_probe *p)
{
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
}

int child_probe_finish(child_probe *p)
{
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
    int wstatus = 0;
    if (p->pid <= 0) return wstatus;
    if (p->timed_out) kill_child(p);
    double kill_by = p->timed_out ? attest_monotonic_seconds() : p->deadline;
    int killed = p->timed_out;
    for (;;) {
        pid_t r = waitpid(p->pid, &wstatus, WNOHANG);
        if (r == p->pid) break;
        if (r < 0 && errno != EINTR) {
            wstatus = 0;
            break;
        }
        double t = attest_monotonic_seconds();
        if (!killed && t >= kill_by) {
            p->timed_out = 1;
            kill_child(p);
            killed = 1;
            kill_by = t;
        }
        if (killed && t >= kill_by + REAP_AFTER_KILL_S) break; /* stuck: leave it */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    /* Whatever the child started (a plugin constructor's process) goes with it. */
    kill(-p->pid, SIGKILL);
    p->pid = 0;
    return wstatus;
}

const char *child_probe_end(const child_probe *p, int wstatus, char *buf, size_t cap)
{
    if (p->timed_out || (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGALRM))
        snprintf(buf, cap, "did not finish within %u s", child_probe_seconds());
    else if (WIFSIGNALED(wstatus))
        snprintf(buf, cap, "crashed (signal %d, %s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    else if (WIFEXITED(wstatus))
        snprintf(buf, cap, "exited with status %d without reporting", WEXITSTATUS(wstatus));
    else
        snprintf(buf, cap, "ended with wait status 0x%x", (unsigned)wstatus);
    return buf;
}

const char *child_probe_file_end(const child_probe *p, int wstatus, char *buf, size_t cap)
{
    if (!p->timed_out && WIFSIGNALED(wstatus) && WTERMSIG(wstatus) != SIGALRM) {
        snprintf(buf, cap, "crashed the HDF5 library (signal %d)", WTERMSIG(wstatus));
        return buf;
    }
    return child_probe_end(p, wstatus, buf, cap);
}

attest_status child_probe_file_status(const char *path, const child_probe *p, int wstatus,
                                      int whole_report, int32_t status, char *message,
                                      size_t message_size)
{
    if (whole_report && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        message[message_size - 1] = '\0';
        for (char *c = message; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) *c = '?';
        if (status == ATTEST_OK) return ATTEST_OK;
        if (status < 0 || status >= ATTEST_STATUS_COUNT_) status = ATTEST_ERR_INTERNAL;
        return attest_fail((attest_status)status, "%s", message);
    }
    char end[96];
    return attest_fail(ATTEST_ERR_FORMAT, "%s: reading it %s: its HDF5 metadata is corrupt", path,
                       child_probe_file_end(p, wstatus, end, sizeof end));
}

const char *child_signal_name(int sig, const char *other)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    case SIGXCPU: return "SIGXCPU";
    default: return other;
    }
}
