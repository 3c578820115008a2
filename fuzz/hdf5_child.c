/* The forked reader child of the HDF5 reader targets and its crash report (hdf5_child.h). */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hdf5_child.h"

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_HAVE_ASAN 1
#endif
#endif

/* A child still reading after this is hung (HDF5 1.10 loops forever on some corrupt global
 * heaps). A valid case file reads in 5-20 ms under ASan; every input that hangs HDF5
 * costs this much campaign time (5% of inputs in a campaign hang). A slow child is harmless:
 * stopped inside HDF5 its input is skipped, stopped elsewhere it reruns here. */
#define CHILD_MILLISECONDS 500 /* below 1000: a struct timeval's microseconds */
/* The parent's own limit on a child (its report included), far above CHILD_MILLISECONDS. */
#define PARENT_SECONDS 30.0

/* libFuzzer registers a death callback that saves the input as a crash; the child must not. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* The child's stack on a hang (SIGALRM), and without a sanitizer on a crash too (nothing else
 * would report it), in the sanitizer's frame format ("#N 0xADDR in SYMBOL (MODULE)") so that
 * one parser reads every report. HANG_MARK tells the parser to skip the frames of this handler,
 * up to the signal trampoline in the C library. dladdr is not async-signal-safe; the process is
 * dying anyway. */
#define HANG_MARK "fuzz child: hang\n"
void __sanitizer_print_stack_trace(void) __attribute__((weak));

/* Set when a sanitizer starts its report in the child: the deadline's handler must then not
 * print a second stack (ASan's report holds the lock that printing takes; the child deadlocked
 * on a loaded machine), and the timer is stopped so the report can finish. */
static volatile sig_atomic_t child_reporting;
void __asan_on_error(void);
void __asan_on_error(void)
{
    child_reporting = 1;
    struct itimerval off = {{0, 0}, {0, 0}};
    (void)setitimer(ITIMER_REAL, &off, NULL);
}

static void child_signal(int sig)
{
    if (sig == SIGALRM) dprintf(STDERR_FILENO, HANG_MARK);
#ifdef FUZZ_HAVE_ASAN
    if (__sanitizer_print_stack_trace) __sanitizer_print_stack_trace();
#else
    void *frames[64];
    int n = backtrace(frames, 64);
    dprintf(STDERR_FILENO, "fuzz child: signal %d\n", sig);
    for (int i = 1; i < n; i++) { /* frame 0 is this handler */
        Dl_info info;
        memset(&info, 0, sizeof info);
        (void)dladdr(frames[i], &info);
        dprintf(STDERR_FILENO, "    #%d %p in %s (%s)\n", i - 1, frames[i],
                info.dli_sname ? info.dli_sname : "?", info.dli_fname ? info.dli_fname : "?");
    }
#endif
    _exit(1);
}

/* The deadline's handler: nothing while a sanitizer reports (the report finishes and exits);
 * the report parser skips every frame up to the signal trampoline for hangs. */
static void alarm_signal(int sig)
{
    if (child_reporting) return;
    child_signal(sig);
}

static void run_child(void (*read)(const char *path), const char *path, int report_fd)
{
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(NULL);
    (void)dup2(report_fd, STDERR_FILENO);
    (void)signal(SIGALRM, alarm_signal);
    struct itimerval deadline = {{0, 0}, {0, CHILD_MILLISECONDS * 1000}};
    (void)setitimer(ITIMER_REAL, &deadline, NULL);
#ifndef FUZZ_HAVE_ASAN
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) (void)signal(sigs[i], child_signal);
#endif
    read(path);
    _exit(0);
}

/* Frames of the sanitizer runtime and the C library say where a crash was noticed, not who
 * caused it (ASan's memcpy interceptor, glibc's memmove). */
static int is_runtime_frame(const char *line)
{
    static const char *const marks[] = {"__interceptor_", " in __asan", " in __sanitizer",
                                        " in __ubsan",    " in __lsan",  "libc.so",
                                        "libclang_rt",    "libasan",     "libubsan"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(line, marks[i])) return 1;
    return 0;
}

/* Generic HDF5 layers (metadata cache, allocators) that say little about what was being read. */
static int is_generic_hdf5(const char *fn)
{
    static const char *const prefixes[] = {"H5C_", "H5C__", "H5AC_", "H5FL_", "H5MM_", "H5F_block"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(fn, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

int fuzz_child_blames_hdf5(const char *report, char *frame, size_t cap, char *site,
                           size_t site_cap)
{
    const char *p = report;
    while ((p = strstr(p, "#0 ")) != NULL) {
        if (p == report || p[-1] == ' ') break;
        p++;
    }
    int in_handler = strstr(report, HANG_MARK) != NULL; /* frames before the trampoline */
    int blamed = 0;
    snprintf(site, site_cap, "?");
    for (; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        if (line[0] != '#') break; /* the first stack ended */
        if (in_handler) {
            in_handler = strstr(line, "libc.so") == NULL;
        } else if (!blamed && !is_runtime_frame(line)) {
            snprintf(frame, cap, "%s", line);
            if (strstr(line, "libhdf5") == NULL) return 0;
            blamed = 1;
        }
        const char *in = strstr(line, " in H5");
        char fn[64];
        if (blamed && in && strstr(line, "libhdf5") && sscanf(in + 4, "%63s", fn) == 1 &&
            !is_generic_hdf5(fn)) {
            snprintf(site, site_cap, "%s", fn);
            return 1;
        }
        if (!end) break;
        p = end + 1;
        while (*p == ' ') p++;
    }
    return blamed;
}

/* Inputs skipped because they crash or hang HDF5, by where, for the exit summary. */
#define MAX_HDF5_SITES 16
static struct {
    char function[64];
    unsigned long count;
} hdf5_sites[MAX_HDF5_SITES];
static unsigned long hdf5_skipped;
static const char *summary_target = "?";

static void print_hdf5_summary(void)
{
    if (hdf5_skipped == 0) return;
    fprintf(stderr, "fuzz %s: %lu input(s) crashed or hung HDF5 itself and were skipped:\n",
            summary_target, hdf5_skipped);
    for (int i = 0; i < MAX_HDF5_SITES && hdf5_sites[i].count; i++)
        fprintf(stderr, "  %6lu %s\n", hdf5_sites[i].count, hdf5_sites[i].function);
}

static void note_hdf5_crash(const char *target, const char *frame, const char *site, int hang)
{
    char fn[64];
    /* A site name is a short function name; cut anything longer rather than overflow. */
    snprintf(fn, sizeof fn, "%s in %.50s", hang ? "hang" : "crash", site);
    if (hdf5_skipped++ == 0) {
        summary_target = target;
        atexit(print_hdf5_summary);
    }
    for (int i = 0; i < MAX_HDF5_SITES; i++) {
        if (hdf5_sites[i].count == 0)
            snprintf(hdf5_sites[i].function, sizeof hdf5_sites[i].function, "%s", fn);
        if (strcmp(hdf5_sites[i].function, fn) == 0) {
            hdf5_sites[i].count++;
            break;
        }
    }
    if (hdf5_skipped <= 3)
        fprintf(stderr, "fuzz %s: input %s HDF5 itself, skipped (%s)%s\n", target,
                hang ? "hangs" : "crashes", frame,
                hdf5_skipped == 3 ? "; a summary follows at exit" : "");
}

fuzz_child_outcome fuzz_child_run(const char *target, void (*read)(const char *path),
                                  const char *path, char *report, size_t cap)
{
    char report_path[96];
    snprintf(report_path, sizeof report_path, "/tmp/attest-fuzz-%s-%d.log", target,
             (int)getpid());
    int fd = open(report_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) abort();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) abort();
    if (pid == 0) run_child(read, path, fd);
    /* The parent keeps a deadline of its own: a child stuck in its own crash report (or in a
     * handler) must not stop the campaign. Past it the child is killed and counts as a hang. */
    int status = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int killed = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec);
        if (!killed && waited > PARENT_SECONDS) {
            kill(pid, SIGKILL);
            killed = 1;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    ssize_t n = pread(fd, report, cap - 1, 0);
    close(fd);
    unlink(report_path);
    report[n > 0 ? n : 0] = '\0';
    if (!killed && WIFEXITED(status) && WEXITSTATUS(status) == 0) return FUZZ_CHILD_OK;
    char frame[512] = "", site[64];
    const int hang = killed || strstr(report, HANG_MARK) != NULL;
    if (!fuzz_child_blames_hdf5(report, frame, sizeof frame, site, sizeof site))
        return hang ? FUZZ_CHILD_OTHER_HANG : FUZZ_CHILD_OTHER_CRASH;
    note_hdf5_crash(target, frame, site, hang);
    return FUZZ_CHILD_HDF5_CRASH;
}

