/* One external candidate process (external_proc.h): start, channel, output tail, stop. */
#include "child_probe.h"
#include "external_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

double ext_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ext_proc_init(ext_proc *p)
{
    memset(p, 0, sizeof *p);
    p->sock = p->pidfd = p->out_fd = p->shm_fd = -1;
    p->exit_status = -1;
}

static int anon_file(const char *name)
{
#ifdef SYS_memfd_create
    int mfd = (int)syscall(SYS_memfd_create, name, 1u /* MFD_CLOEXEC */);
    if (mfd >= 0) return mfd;
#endif
    (void)name;
    FILE *f = tmpfile(); /* no memfd: an unlinked file does the same */
    if (!f) return -1;
    int fd = dup(fileno(f));
    fclose(f);
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

attest_status ext_proc_reserve(ext_proc *p, size_t bytes)
{
    if (bytes <= p->shm_cap && p->shm) return ATTEST_OK;
    size_t cap = p->shm_cap ? p->shm_cap : ((size_t)1 << 20);
    while (cap < bytes) cap *= 2;
    ATTEST_RETURN_IF(ftruncate(p->shm_fd, (off_t)cap) != 0, ATTEST_ERR_OUT_OF_MEMORY,
                     "external: cannot grow the shared region to %zu bytes: %s", cap,
                     strerror(errno));
    void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, p->shm_fd, 0);
    ATTEST_RETURN_IF(m == MAP_FAILED, ATTEST_ERR_OUT_OF_MEMORY,
                     "external: cannot map %zu bytes of shared memory: %s", cap, strerror(errno));
    if (p->shm) munmap(p->shm, p->shm_cap);
    p->shm = m;
    p->shm_cap = cap;
    return ATTEST_OK;
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child_exec(int sock, int out_fd, int shm_fd, int err_pipe, char *const argv[],
                       char *const env[]) __attribute__((noreturn));

static void child_exec(int sock, int out_fd, int shm_fd, int err_pipe, char *const argv[],
                       char *const env[])
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Move every fd we keep above 4 first, so the dup2s below cannot clobber one another. */
    int s = fcntl(sock, F_DUPFD, 10), o = fcntl(out_fd, F_DUPFD, 10), m = fcntl(shm_fd, F_DUPFD, 10);
    int devnull = open("/dev/null", O_RDONLY);
    if (s < 0 || o < 0 || m < 0 || devnull < 0) goto fail;
    if (dup2(devnull, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0 || dup2(s, 3) < 0 ||
        dup2(m, 4) < 0)
        goto fail;
    /* dup2 clears FD_CLOEXEC on 0-4; everything else is closed by exec or here. */
    for (int fd = 5; fd < 1024; fd++)
        if (fd != err_pipe) close(fd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_IGN); /* the harness decides when a campaign stops */
    execvpe(argv[0], argv, env);
fail:;
    int e = errno;
    ssize_t w = write(err_pipe, &e, sizeof e);
    (void)w;
    _exit(127);
}

attest_status ext_proc_start(ext_proc *p, char *const argv[], char *const env_add[])
{
    if (p->out_fd < 0) {
        p->out_fd = anon_file("attest-candidate-output");
        ATTEST_RETURN_IF(p->out_fd < 0, ATTEST_ERR_CHILD,
                         "external: cannot create an output file: %s", strerror(errno));
        /* Appends from both sides land at the end, also after a trim. */
        fcntl(p->out_fd, F_SETFL, fcntl(p->out_fd, F_GETFL) | O_APPEND);
    }
    if (p->shm_fd < 0) {
        p->shm_fd = anon_file("attest-candidate-case");
        ATTEST_RETURN_IF(p->shm_fd < 0, ATTEST_ERR_CHILD,
                         "external: cannot create the shared region: %s", strerror(errno));
        ATTEST_FORWARD(ext_proc_reserve(p, (size_t)1 << 20));
    }
    /* Each process's output starts empty: a tail quoted later is this process's own. */
    if (ftruncate(p->out_fd, 0) != 0) return attest_fail(ATTEST_ERR_CHILD,
                                                         "external: cannot empty the output file: %s",
                                                         strerror(errno));
    /* The environment: ours plus env_add (which wins). Built before fork: malloc is not safe
     * in the child of a threaded process. */
    size_t n_env = 0, n_add = 0;
    while (environ && environ[n_env]) n_env++;
    while (env_add && env_add[n_add]) n_add++;
    char **env = calloc(n_env + n_add + 1, sizeof *env);
    ATTEST_RETURN_IF(env == NULL, ATTEST_ERR_OUT_OF_MEMORY, "external: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t key = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
        int overridden = 0;
        for (size_t j = 0; j < n_add && !overridden; j++)
            overridden = strncmp(env_add[j], environ[i], key) == 0;
        if (!overridden) env[k++] = environ[i];
    }
    for (size_t j = 0; j < n_add; j++) env[k++] = env_add[j];
    env[k] = NULL;

    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        free(env);
        return attest_fail(ATTEST_ERR_CHILD, "external: socketpair failed: %s", strerror(errno));
    }
    if (pipe2(ep, O_CLOEXEC) != 0) {
        close(sv[0]);
        close(sv[1]);
        free(env);
        return attest_fail(ATTEST_ERR_CHILD, "external: pipe failed: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) child_exec(sv[1], p->out_fd, p->shm_fd, ep[1], argv, env);
    int fork_errno = errno;
    free(env);
    close(sv[1]);
    close(ep[1]);
    if (pid < 0) {
        close(sv[0]);
        close(ep[0]);
        return attest_fail(ATTEST_ERR_CHILD, "external: fork failed: %s", strerror(fork_errno));
    }
    /* exec succeeded when the pipe closes without a word. */
    int child_errno = 0;
    ssize_t r;
    do r = read(ep[0], &child_errno, sizeof child_errno);
    while (r < 0 && errno == EINTR);
    close(ep[0]);
    p->pid = pid;
    p->last_pid = pid;
    p->sock = sv[0];
    p->rlen = 0;
    p->consumed = 0;
    p->exit_status = -1;
#ifdef SYS_pidfd_open
    p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0u);
    if (p->pidfd >= 0) fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
#endif
    if (r == (ssize_t)sizeof child_errno) {
        ext_proc_stop(p, 1.0);
        return attest_fail(child_errno == ENOENT || child_errno == EACCES ? ATTEST_ERR_NOT_FOUND
                                                                          : ATTEST_ERR_CHILD,
                           "cannot run '%s': %s", argv[0], strerror(child_errno));
    }
    return ATTEST_OK;
}

int ext_proc_send(ext_proc *p, const char *line, size_t len)
{
    if (p->sock < 0) return -1;
    struct iovec iov[2] = {{(void *)line, len}, {"\n", 1}};
    size_t total = len + 1, sent = 0;
    while (sent < total) {
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        struct iovec v[2];
        int nv = 0;
        size_t skip = sent;
        for (int i = 0; i < 2; i++) {
            if (skip >= iov[i].iov_len) {
                skip -= iov[i].iov_len;
                continue;
            }
            v[nv].iov_base = (char *)iov[i].iov_base + skip;
            v[nv].iov_len = iov[i].iov_len - skip;
            skip = 0;
            nv++;
        }
        mh.msg_iov = v;
        mh.msg_iovlen = (size_t)nv;
        ssize_t w = sendmsg(p->sock, &mh, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        sent += (size_t)w;
    }
    return 0;
}

ext_read ext_proc_read_line(ext_proc *p, double deadline, char **line)
{
    if (p->consumed) {
        memmove(p->rbuf, p->rbuf + p->consumed, p->rlen - p->consumed);
        p->rlen -= p->consumed;
        p->consumed = 0;
    }
    *line = p->rbuf + p->rlen; /* never read unless a line is returned */
    for (;;) {
        char *nl = memchr(p->rbuf, '\n', p->rlen);
        if (nl) {
            /* Hand out the line in place; it moves out at the next call. */
            *nl = '\0';
            p->consumed = (size_t)(nl - p->rbuf) + 1;
            *line = p->rbuf;
            return EXT_READ_LINE;
        }
        if (p->rlen >= sizeof p->rbuf) return EXT_READ_TOO_LONG;
        if (p->sock < 0) return EXT_READ_EOF;
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - ext_now();
            if (left <= 0) return EXT_READ_TIMEOUT;
            ms = (int)ceil(left * 1000.0);
        }
        /* The pidfd tells of an exit even when a process it started still holds the socket. */
        struct pollfd fds[2] = {{.fd = p->sock, .events = POLLIN}, {.fd = p->pidfd, .events = POLLIN}};
        int r = poll(fds, p->pidfd >= 0 ? 2 : 1, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return EXT_READ_EOF;
        if (r == 0) continue; /* re-check the deadline */
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = recv(p->sock, p->rbuf + p->rlen, sizeof p->rbuf - p->rlen, MSG_DONTWAIT);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) return EXT_READ_EOF;
            p->rlen += (size_t)n;
            continue;
        }
        if (p->pidfd >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) {
            /* Exited: whatever it sent before is still readable; then EOF. */
            ssize_t n = recv(p->sock, p->rbuf + p->rlen, sizeof p->rbuf - p->rlen, MSG_DONTWAIT);
            if (n > 0) {
                p->rlen += (size_t)n;
                continue;
            }
            return EXT_READ_EOF;
        }
    }
}

static int reap(ext_proc *p, double seconds)
{
    if (p->pid <= 0) return 1;
    const double end = ext_now() + seconds;
    for (;;) {
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            p->exit_status = st;
            return 1;
        }
        if (r < 0 && errno != EINTR) {
            p->exit_status = -1;
            return 1;
        }
        if (ext_now() >= end) return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

void ext_proc_stop(ext_proc *p, double grace)
{
    if (p->sock >= 0) close(p->sock);
    p->sock = -1;
    if (p->pid > 0) {
        if (!reap(p, grace)) {
            kill(p->pid, SIGKILL);
            if (!reap(p, 5.0)) p->exit_status = -1; /* stuck in the kernel: nothing more to do */
        }
        p->pid = 0;
    }
    if (p->pidfd >= 0) close(p->pidfd);
    p->pidfd = -1;
    p->rlen = 0;
    p->consumed = 0;
}

void ext_proc_release(ext_proc *p)
{
    ext_proc_stop(p, 1.0);
    if (p->shm) munmap(p->shm, p->shm_cap);
    if (p->shm_fd >= 0) close(p->shm_fd);
    if (p->out_fd >= 0) close(p->out_fd);
    ext_proc_init(p);
}

void ext_proc_describe_exit(ext_proc *p, double wait, char *buf, size_t cap)
{
    if (p->pid > 0 && reap(p, wait)) p->pid = 0;
    const int st = p->exit_status;
    if (p->pid > 0)
        snprintf(buf, cap, "closed its channel but is still running");
    else if (st == -1)
        snprintf(buf, cap, "ended (exit status unavailable)");
    else if (WIFSIGNALED(st))
        snprintf(buf, cap, "killed by %s (signal %d)", child_signal_name(WTERMSIG(st), "a signal"), WTERMSIG(st));
    else if (WIFEXITED(st))
        snprintf(buf, cap, "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(buf, cap, "ended with wait status 0x%x", (unsigned)st);
}

/* Reads up to the last `cap - 1` bytes of the output file into buf; returns the count. */
static size_t read_tail(const ext_proc *p, char *buf, size_t cap)
{
    struct stat sb;
    if (p->out_fd < 0 || fstat(p->out_fd, &sb) != 0 || sb.st_size <= 0 || cap < 2) return 0;
    size_t want = (size_t)sb.st_size < cap - 1 ? (size_t)sb.st_size : cap - 1;
    ssize_t n = pread(p->out_fd, buf, want, sb.st_size - (off_t)want);
    if (n <= 0) return 0;
    buf[n] = '\0';
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '\0' || buf[i] == '\r' || buf[i] == '\t') buf[i] = ' ';
    return (size_t)n;
}

void ext_proc_output_tail(const ext_proc *p, int max_lines, char *buf, size_t cap)
{
    if (cap == 0) return;
    buf[0] = '\0';
    char raw[4096];
    size_t n = read_tail(p, raw, sizeof raw);
    if (n == 0) return;
    /* Collect the last max_lines non-empty lines, newest last. */
    const char *lines[16];
    size_t lens[16];
    int count = 0;
    if (max_lines > 16) max_lines = 16;
    size_t end = n;
    while (end > 0 && count < max_lines) {
        while (end > 0 && (raw[end - 1] == '\n' || raw[end - 1] == ' ')) end--;
        if (end == 0) break;
        size_t begin = end;
        while (begin > 0 && raw[begin - 1] != '\n') begin--;
        size_t b = begin;
        while (b < end && raw[b] == ' ') b++;
        lines[count] = raw + b;
        lens[count] = end - b;
        count++;
        end = begin;
    }
    char joined[4200];
    size_t used = 0;
    for (int i = count - 1; i >= 0; i--) {
        int w = snprintf(joined + used, sizeof joined - used, "%s%.*s", used ? " | " : "",
                         (int)lens[i], lines[i]);
        if (w < 0) break;
        used += (size_t)w;
        if (used >= sizeof joined) {
            used = sizeof joined - 1;
            break;
        }
    }
    /* The newest lines matter most: clip from the front. */
    if (used + 1 > cap) {
        const size_t keep = cap - 4;
        snprintf(buf, cap, "...%s", joined + used - keep);
    } else {
        memcpy(buf, joined, used + 1);
    }
}

void ext_proc_print_tail(const ext_proc *p, const char *who, int max_lines)
{
    char raw[8192];
    size_t n = read_tail(p, raw, sizeof raw);
    if (n == 0) return;
    size_t begin = n;
    int lines = 0;
    while (begin > 0) {
        if (raw[begin - 1] == '\n' && begin < n && ++lines > max_lines) break;
        begin--;
    }
    fprintf(stderr, "attest: last output of %s:\n%s%s", who, raw + begin,
            raw[n - 1] == '\n' ? "" : "\n");
}

void ext_proc_trim_output(ext_proc *p, size_t limit)
{
    struct stat sb;
    if (p->out_fd < 0 || fstat(p->out_fd, &sb) != 0 || (size_t)sb.st_size <= limit) return;
    /* The file is in append mode: the process's next write lands at the new end. */
    if (ftruncate(p->out_fd, 0) != 0) return;
}
