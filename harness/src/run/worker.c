/* The crash-isolation worker (worker.h): fork, serve, wait with a deadline, reap.
 *
 * Kept as a hand-written fork worker rather than a process-pool or RPC library: the candidate's
 * memory must be the arena's shared mapping (so the parent reads outputs and canaries without a
 * copy), a crash or hang must cost one case and leave the parent intact, and one worker serves
 * thousands of cases (the per-case cost in README.md); none of those libraries give all three. */
#include "attest/clock.h"
#include "child_probe.h"
#include "worker.h"

#include <dirent.h>
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a dying worker gets to finish exiting (a sanitizer report, CUDA teardown) before
 * SIGKILL, and how long a killed one gets to be reaped before it is left as a stray. */
#define WORKER_EXIT_GRACE_S 5.0
#define WORKER_REAP_AFTER_KILL_S 2.0

static void sleep_briefly(void)
{
    struct timespec ts = {0, 1000000}; /* 1 ms */
    nanosleep(&ts, NULL);
}

/* --- process trees ------------------------------------------------------------------------- */

/* Candidates may start processes, and those may call setsid() (a daemonizing driver), which
 * takes them out of the worker's process group. The worker is a child subreaper, so every
 * descendant that loses its parent is re-parented to the worker instead of init: all of them
 * stay in the worker's process tree, which is found through /proc and killed whole. */

typedef struct proc_entry {
    pid_t pid, ppid;
} proc_entry;

/* Live (not zombie) processes and their parents; returns how many, at most cap. */
static size_t scan_processes(proc_entry *out, size_t cap)
{
    DIR *d = opendir("/proc");
    if (!d) return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < cap) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t k = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (k <= 0) continue;
        buf[k] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
        char *rp = strrchr(buf, ')');
        char state = 0;
        long ppid = 0;
        if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2) continue;
        if (state == 'Z' || state == 'X') continue;
        out[n].pid = (pid_t)pid;
        out[n].ppid = (pid_t)ppid;
        n++;
    }
    closedir(d);
    return n;
}

#define MAX_SCANNED 32768

/* SIGKILLs every live descendant of root (not root itself), until none is left or a few rounds
 * pass (a descendant may fork while we look). `keep` (may be -1) and its subtree are spared. */
static void kill_descendants(pid_t root, pid_t keep)
{
    proc_entry *procs = malloc(MAX_SCANNED * sizeof *procs);
    pid_t *tree = malloc(MAX_SCANNED * sizeof *tree);
    if (!procs || !tree) {
        free(procs);
        free(tree);
        return;
    }
    for (int round = 0; round < 20; round++) {
        const size_t n = scan_processes(procs, MAX_SCANNED);
        size_t found = 0, head = 0;
        tree[found++] = root;
        while (head < found) {
            pid_t p = tree[head++];
            for (size_t i = 0; i < n && found < MAX_SCANNED; i++)
                if (procs[i].ppid == p && procs[i].pid != keep && procs[i].pid != root)
                    tree[found++] = procs[i].pid;
        }
        if (found == 1) break;
        for (size_t i = 1; i < found; i++) kill(tree[i], SIGKILL);
        sleep_briefly();
    }
    free(procs);
    free(tree);
}

/* Orphan reaping in the parent (attest_runner_reap_orphans): live workers are not orphans. */
static int reap_orphans;
#define MAX_LIVE_WORKERS 64
static pid_t live_workers[MAX_LIVE_WORKERS];

static void track_worker(pid_t pid, int live)
{
    for (int i = 0; i < MAX_LIVE_WORKERS; i++)
        if (live ? live_workers[i] == 0 : live_workers[i] == pid) {
            live_workers[i] = live ? pid : 0;
            return;
        }
}

void attest_runner_reap_orphans(void)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) reap_orphans = 1;
}

/* Children of this process that are no live worker: descendants of a worker that died before
 * it could end them, re-parented here. Killed with their trees and reaped. */
static void end_orphans(void)
{
    if (!reap_orphans) return;
    proc_entry *procs = malloc(MAX_SCANNED * sizeof *procs);
    if (!procs) return;
    const pid_t self = getpid();
    for (int round = 0; round < 20; round++) {
        const size_t n = scan_processes(procs, MAX_SCANNED);
        int any = 0;
        for (size_t i = 0; i < n; i++) {
            if (procs[i].ppid != self) continue;
            int is_worker = 0;
            for (int k = 0; k < MAX_LIVE_WORKERS; k++) is_worker |= live_workers[k] == procs[i].pid;
            if (is_worker) continue;
            kill(procs[i].pid, SIGSTOP);
            kill_descendants(procs[i].pid, -1);
            kill(procs[i].pid, SIGKILL);
            (void)waitpid(procs[i].pid, NULL, 0);
            any = 1;
        }
        if (!any) break;
    }
    free(procs);
}

/* The worker's own exit: its descendants go first, and are reaped (it is their subreaper). */
static void end_descendants(void)
{
    kill_descendants(getpid(), -1);
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

/* The worker's channel and whether a run is in progress, for exit_handler. */
static int worker_channel = -1;
static volatile int worker_in_run;

/* A candidate that calls exit() ends the worker through the parent's atexit handlers (HDF5's,
 * a sanitizer's), which may crash in a forked child and would be reported as a signal. This
 * runs first (registered last): it tells the parent what happened and ends the worker. */
static void exit_handler(int status, void *arg)
{
    (void)arg;
    if (worker_in_run && worker_channel >= 0) {
        exec_result res;
        memset(&res, 0, sizeof res);
        res.outcome = EXEC_CRASH;
        snprintf(res.message, sizeof res.message,
                 "the candidate called exit(%d) during the run", status);
        (void)send(worker_channel, &res, sizeof res, MSG_NOSIGNAL);
    }
    end_descendants();
    _exit(status == 0 ? 0 : 1);
}

/* A host candidate's access to a sparse pool's unplaced page faults; before the worker dies of
 * it, this tells the parent which page (the CRASH verdict's message). Then, as for any other
 * SIGSEGV, the worker dies of the signal: SA_RESETHAND has restored the default action and the
 * signal raised here (blocked until the handler returns) ends it, also when the candidate
 * raised SIGSEGV itself rather than faulting. */
static void fault_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    const arena_control *ctl = exec_guarded;
    if (ctl != NULL && si != NULL && worker_in_run && worker_channel >= 0) {
        exec_result res;
        memset(&res, 0, sizeof res);
        if (arena_describe_fault(ctl, si->si_addr, res.message, sizeof res.message)) {
            res.outcome = EXEC_CRASH;
            (void)send(worker_channel, &res, sizeof res, MSG_NOSIGNAL);
        }
    }
    raise(sig);
}

static void install_fault_handler(void)
{
    static uint8_t alt[64 * 1024]; /* a candidate's stack overflow is a fault too */
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    (void)sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGSEGV, &sa, NULL);
}

void worker_init(worker *w, const attest_candidate *cand)
{
    memset(w, 0, sizeof *w);
    w->cand = cand;
    w->fd = -1;
    w->pidfd = -1;
}

/* --- the worker's side -------------------------------------------------------------------- */

static void worker_main(int fd, const attest_candidate *cand, arena_control *ctl,
                        size_t ctl_bytes, pid_t parent) __attribute__((noreturn));

static void worker_main(int fd, const attest_candidate *cand, arena_control *ctl,
                        size_t ctl_bytes, pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0); /* the parent died before prctl took effect */
    /* Isolated as every child is (child_probe.h: signals, process group, descriptors); a
     * terminal's ^C reaches the parent, which stops the worker itself. */
    fd = child_isolate(fd, CHILD_FDS_NONE);
    signal(SIGINT, SIG_IGN);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    /* The worker only reads the control page; a stray write there becomes a crash. */
    mprotect(ctl, ctl_bytes, PROT_READ);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    worker_channel = fd;
    on_exit(exit_handler, NULL);
    install_fault_handler();

    exec_state st;
    exec_state_init(&st, cand);
    for (;;) {
        exec_request req;
        ssize_t n = recv(fd, &req, sizeof req, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)sizeof req || req.magic != EXEC_MAGIC) break; /* EOF: stop */
        exec_result res;
        if (req.generation != ctl->generation) {
            memset(&res, 0, sizeof res);
            res.outcome = EXEC_HARNESS_ERROR;
            snprintf(res.message, sizeof res.message, "worker sees a stale arena");
        } else {
            worker_in_run = 1;
            exec_run(&st, ctl, &req, &res);
            worker_in_run = 0;
        }
        fflush(stdout);
        if (send(fd, &res, sizeof res, MSG_NOSIGNAL) != (ssize_t)sizeof res) break;
        if (res.outcome == EXEC_DEVICE_FAULT) _exit(0); /* the device context is lost */
    }
    exec_state_fini(&st);
    fflush(stdout);
    end_descendants();
    _exit(0); /* never exit(): the parent's atexit handlers (HDF5, sanitizers) are not ours */
}

/* --- the parent's side -------------------------------------------------------------------- */

static void describe_status(int status, char *buf, size_t cap)
{
    if (status == -1) {
        snprintf(buf, cap, "worker died (exit status unavailable)");
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(buf, cap, "worker killed by %s (signal %d, %s)", child_signal_name(sig, "signal"), sig,
                 strsignal(sig));
    } else if (WIFEXITED(status)) {
        /* Sanitizers report and exit(1); glibc heap checks abort (a signal above). */
        snprintf(buf, cap, "worker exited with status %d during the run%s", WEXITSTATUS(status),
                 WEXITSTATUS(status) == 1 ? " (a sanitizer report exits 1: see stderr)" : "");
    } else {
        snprintf(buf, cap, "worker stopped with wait status 0x%x", (unsigned)status);
    }
}

/* Waits up to `seconds` for pid to be reaped. Returns 1 when reaped (*status = -1 when someone
 * else reaped it), 0 when it is still there. */
static int reap_within(pid_t pid, double seconds, int *status)
{
    const double end = attest_monotonic_seconds() + seconds;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return 1;
        if (r < 0 && errno != EINTR) {
            *status = -1; /* ECHILD: SIGCHLD ignored, or reaped elsewhere */
            return 1;
        }
        if (attest_monotonic_seconds() >= end) return 0;
        sleep_briefly();
    }
}

static void reap_strays(worker *w, double seconds)
{
    int kept = 0;
    for (int i = 0; i < w->num_strays; i++) {
        int status;
        if (!reap_within(w->strays[i], seconds, &status)) w->strays[kept++] = w->strays[i];
    }
    w->num_strays = kept;
}

static void kill_group(pid_t pid)
{
    /* Descendants first, while the worker still holds them as their subreaper: once it dies
     * they would be re-parented out of its tree. */
    kill(pid, SIGSTOP);
    kill_descendants(pid, -1);
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL); /* in case setpgid had not happened yet */
}

/* Kills (when still alive) and reaps the current worker; fills *status when it could. */
static void finish_worker(worker *w, int kill_first, double grace, int *status)
{
    int st = -1;
    if (w->fd >= 0) close(w->fd);
    if (w->pidfd >= 0) close(w->pidfd);
    w->fd = -1;
    w->pidfd = -1;
    w->in_flight = 0;
    if (w->pid <= 0) return;
    if (kill_first) kill_group(w->pid);
    if (!reap_within(w->pid, grace, &st)) {
        kill_group(w->pid);
        if (!reap_within(w->pid, WORKER_REAP_AFTER_KILL_S, &st)) {
            st = -1;
            if (w->num_strays < WORKER_MAX_STRAYS) w->strays[w->num_strays++] = w->pid;
        }
    }
    /* Whatever the candidate started is gone too. A process group id is not reused while the
     * group has members, so this cannot hit a stranger. */
    kill(-w->pid, SIGKILL);
    track_worker(w->pid, 0);
    end_orphans();
    if (status) *status = st;
    w->pid = 0;
}

static attest_status worker_start(worker *w, arena *a)
{
    reap_strays(w, 0.0);
    int sv[2];
    ATTEST_RETURN_IF(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0,
                     ATTEST_ERR_CHILD, "worker: socketpair failed: %s", strerror(errno));
    /* Buffered output would otherwise be printed by both processes. */
    fflush(stdout);
    fflush(stderr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return attest_fail(ATTEST_ERR_CHILD, "worker: fork failed: %s", strerror(e));
    }
    if (pid == 0) {
        close(sv[0]);
        worker_main(sv[1], w->cand, a->control, a->control->data_begin, parent);
    }
    close(sv[1]);
    setpgid(pid, pid); /* both sides set it: no window where a group kill misses */
    w->pid = pid;
    track_worker(pid, 1);
    w->fd = sv[0];
#ifdef SYS_pidfd_open
    w->pidfd = (int)syscall(SYS_pidfd_open, pid, 0u);
    if (w->pidfd >= 0) fcntl(w->pidfd, F_SETFD, FD_CLOEXEC);
#endif
    w->generation = a->generation;
    w->forks++;
    return ATTEST_OK;
}

attest_status worker_send(worker *w, arena *a, const exec_request *req, double timeout_seconds)
{
    ATTEST_RETURN_IF(w->in_flight, ATTEST_ERR_INTERNAL, "worker: a request is already in flight");
    if (w->pid > 0) {
        int status;
        /* A worker that died between runs (a stray thread, an outside kill) is replaced
         * quietly rather than blamed on the next case. */
        if (w->generation != a->generation || waitpid(w->pid, &status, WNOHANG) == w->pid) {
            if (w->generation != a->generation) {
                finish_worker(w, 0, WORKER_EXIT_GRACE_S, NULL); /* idle: let it call fini */
            } else { /* already reaped */
                track_worker(w->pid, 0);
                end_orphans();
                close(w->fd);
                if (w->pidfd >= 0) close(w->pidfd);
                w->fd = w->pidfd = -1;
                w->pid = 0;
            }
        }
    }
    if (w->pid <= 0) ATTEST_FORWARD(worker_start(w, a));
    w->deadline = attest_monotonic_seconds() + timeout_seconds;
    w->in_flight = 1;
    /* A failed send means the worker is gone; worker_wait sees the hang-up and reports it. */
    (void)send(w->fd, req, sizeof *req, MSG_NOSIGNAL);
    return ATTEST_OK;
}

void worker_wait(worker *w, exec_result *res)
{
    memset(res, 0, sizeof *res);
    if (!w->in_flight || w->fd < 0) {
        res->outcome = EXEC_HARNESS_ERROR;
        snprintf(res->message, sizeof res->message, "worker: no request in flight");
        return;
    }
    for (;;) {
        /* Past the deadline, one last look without waiting: the answer may have come while the
         * parent was busy (computing the reference). */
        const double left = w->deadline - attest_monotonic_seconds();
        /* The pidfd tells of a death even when a process the candidate started still holds
         * the channel open (then no EOF would come). */
        struct pollfd p[2] = {{.fd = w->fd, .events = POLLIN}, {.fd = w->pidfd, .events = POLLIN}};
        const int ms = left > 0.0 ? (int)ceil(left * 1000.0) : 0;
        int r = poll(p, w->pidfd >= 0 ? 2 : 1, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0 && left <= 0.0) {
            finish_worker(w, 1, WORKER_REAP_AFTER_KILL_S, NULL);
            res->outcome = EXEC_TIMEOUT;
            snprintf(res->message, sizeof res->message,
                     "no answer within the time limit; worker killed");
            return;
        }
        if (r == 0) continue;
        ssize_t n = -1;
        int err = 0;
        if (r > 0) {
            n = recv(w->fd, res, sizeof *res, MSG_DONTWAIT);
            err = errno;
        }
        const int exited = w->pidfd >= 0 && r > 0 && (p[1].revents & (POLLIN | POLLHUP));
        if (n < 0 && (err == EINTR || err == EAGAIN) && !exited) continue;
        if (n == (ssize_t)sizeof *res) {
            w->in_flight = 0;
            res->message[sizeof res->message - 1] = '\0';
            res->device[sizeof res->device - 1] = '\0';
            /* A crash the worker reported itself (exit() in a run, a fault on a sparse pool's
             * unplaced page) is followed by its death: reap it now, so the next case never
             * meets a dying worker. */
            if (res->outcome == EXEC_DEVICE_FAULT || res->outcome == EXEC_CRASH)
                finish_worker(w, 0, WORKER_EXIT_GRACE_S, NULL);
            return;
        }
        /* EOF or a broken channel: the worker died. Let it finish dying to learn how. */
        int status = -1;
        finish_worker(w, n > 0, WORKER_EXIT_GRACE_S, &status);
        memset(res, 0, sizeof *res);
        res->outcome = EXEC_CRASH;
        if (n > 0) {
            snprintf(res->message, sizeof res->message,
                     "worker sent a malformed answer (%zd bytes); killed", n);
            res->outcome = EXEC_HARNESS_ERROR;
        } else {
            describe_status(status, res->message, sizeof res->message);
        }
        return;
    }
}

void worker_stop(worker *w)
{
    /* Closing the channel is the stop request: the worker calls fini and exits. */
    finish_worker(w, 0, WORKER_EXIT_GRACE_S, NULL);
    reap_strays(w, WORKER_REAP_AFTER_KILL_S);
}
