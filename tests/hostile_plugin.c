/* Hostile plugins for test_reliability.py: candidates that attack the harness while they run
 * and, built with -DHAZARD=<n>, libraries that attack it while they load. Public headers only.
 *
 * Candidates (HAZARD unset), all indexer kernels that write nothing useful:
 *   hostile-exit0         calls exit(0) inside run()
 *   hostile-control-page  makes the worker's read-only control page writable again and fills it
 *                         with garbage (the tensor pointers the parent placed there)
 *   hostile-setsid        starts a process that calls setsid() and sleeps; its pid goes to the
 *                         file named by $ATTEST_TEST_PIDFILE
 *   hostile-fini-crash    runs fine; its fini() raises SIGSEGV
 * Load hazards (HAZARD = n): 1 count 2^40, 2 count SIZE_MAX, 3 a wild list entry, 4 a data
 * symbol as the entry point, 5 an entry that segfaults, 6 a constructor that segfaults, 7 an
 * entry that blocks forever, 8 a constructor that calls exit(0), 9 a wild name pointer, 10 a
 * wild run pointer, 11 a destructor that segfaults (attest crashed at exit after its summary:
 * found by tests/bad_input_campaign.py in a plugin whose .fini_array a mutation broke).
 * HAZARD = 12 is no hazard: its constructor appends to $ATTEST_TEST_PROBE_REPORT what the loading
 * process inherited (SIGUSR1's disposition, whether descriptor $ATTEST_TEST_INHERITED_FD is open),
 * for test_probe_isolation.py.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/candidate.h"

#define EXPORT __attribute__((visibility("default")))

static int write_nothing(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    (void)a;
    return 0;
}

#ifndef HAZARD

static int exit0_run(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    (void)a;
    exit(0);
}

/* The control page(s): the worker made them read-only, which splits them off the arena's
 * mapping in /proc/self/maps as the region that ends where the first tensor's region starts. */
static int control_region(uintptr_t first, uintptr_t *lo, uintptr_t *hi)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[512];
    unsigned long prev_a = 0, prev_b = 0;
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) != 2) continue;
        if (first >= a && first < b && prev_b == a) {
            *lo = prev_a;
            *hi = prev_b;
            found = 0;
            break;
        }
        prev_a = a;
        prev_b = b;
    }
    fclose(f);
    return found;
}

static int control_page_run(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    uintptr_t lo, hi, first = (uintptr_t)a->u.indexer.cache;
    const void *ptrs[] = {a->u.indexer.block_table, a->u.indexer.context_lens, a->u.indexer.q_fp8,
                          a->u.indexer.weights, a->u.indexer.logits};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if ((uintptr_t)ptrs[i] < first) first = (uintptr_t)ptrs[i];
    if (control_region(first, &lo, &hi) != 0) return 1;
    if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0) return 2;
    memset((void *)lo, 0x41, hi - lo);
    return 0;
}

static int setsid_run(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    (void)a;
    /* The run returns only once the grandchild has written its pid, so the test sees the pid
     * however loaded the machine is (before, a slow grandchild could be killed by the harness's
     * sweep before writing it, and the test read an empty pid file). */
    int ready[2];
    if (pipe(ready) != 0) return 1;
    pid_t p = fork();
    if (p == 0) {
        close(ready[0]);
        setsid();
        pid_t q = fork(); /* a daemon's double fork: the grandchild is nobody's child */
        if (q == 0) {
            const char *file = getenv("ATTEST_TEST_PIDFILE");
            if (file) {
                FILE *f = fopen(file, "a");
                if (f) {
                    fprintf(f, "%ld\n", (long)getpid());
                    fclose(f);
                }
            }
            char one = 1;
            if (write(ready[1], &one, 1) != 1) _exit(1);
            close(ready[1]);
            for (int i = 0; i < 600; i++) sleep(1);
            _exit(0);
        }
        _exit(0);
    }
    close(ready[1]);
    if (p > 0) {
        char one;
        while (read(ready[0], &one, 1) < 0 && errno == EINTR) {
        }
        waitpid(p, NULL, 0);
    }
    close(ready[0]);
    return 0;
}

static int fini_crash_init(void **ctx)
{
    *ctx = NULL;
    return 0;
}

static void fini_crash_fini(void *ctx)
{
    (void)ctx;
    raise(SIGSEGV);
}

#define CAND(var, nm, runfn, ...)                                                                \
    static const attest_candidate var = {.abi_version = ATTEST_CANDIDATE_ABI_VERSION,            \
                                         .struct_size = sizeof(attest_candidate),                \
                                         .name = nm,                                             \
                                         .description = "hostile test candidate",                \
                                         .kernel = ATTEST_KERNEL_INDEXER,                        \
                                         .run = runfn,                                           \
                                         __VA_ARGS__}

CAND(c_exit0, "hostile-exit0", exit0_run);
CAND(c_control, "hostile-control-page", control_page_run);
CAND(c_setsid, "hostile-setsid", setsid_run);
CAND(c_fini, "hostile-fini-crash", write_nothing, .init = fini_crash_init, .fini = fini_crash_fini);

EXPORT const attest_candidate *const *attest_plugin_candidates(size_t *count);
const attest_candidate *const *attest_plugin_candidates(size_t *count)
{
    static const attest_candidate *const list[] = {&c_exit0, &c_control, &c_setsid, &c_fini};
    *count = sizeof list / sizeof list[0];
    return list;
}

#else /* load hazards */

__attribute__((unused)) static const attest_candidate good = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "x",
    .kernel = ATTEST_KERNEL_INDEXER,
    .run = write_nothing,
};

#if HAZARD == 9
static const attest_candidate wild_name = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = (const char *)(uintptr_t)0x10,
    .kernel = ATTEST_KERNEL_INDEXER,
    .run = write_nothing,
};
#elif HAZARD == 10
static const attest_candidate wild_run = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "x",
    .kernel = ATTEST_KERNEL_INDEXER,
    .run = (int (*)(void *, const attest_kernel_args *))(uintptr_t)0x1000,
};
#endif

#if HAZARD == 11
__attribute__((destructor)) static void hostile_destructor(void) { raise(SIGSEGV); }
#endif

#if HAZARD == 6 || HAZARD == 8
__attribute__((constructor)) static void hostile_constructor(void)
{
#if HAZARD == 6
    raise(SIGSEGV);
#else
    exit(0);
#endif
}
#endif

#if HAZARD == 12
__attribute__((constructor)) static void report_constructor(void)
{
    const char *file = getenv("ATTEST_TEST_PROBE_REPORT");
    const char *fd_text = getenv("ATTEST_TEST_INHERITED_FD");
    if (!file || !fd_text) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    (void)sigaction(SIGUSR1, NULL, &sa);
    const char *usr1 =
        sa.sa_handler == SIG_IGN ? "ign" : sa.sa_handler == SIG_DFL ? "dfl" : "handler";
    const int open_fd = fcntl(atoi(fd_text), F_GETFD) >= 0;
    char line[96];
    int n = snprintf(line, sizeof line, "pid=%ld usr1=%s fd=%s\n", (long)getpid(), usr1,
                     open_fd ? "open" : "closed");
    int out = open(file, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (out < 0) return;
    if (n > 0) (void)!write(out, line, (size_t)n);
    close(out);
}
#endif

#if HAZARD == 4
EXPORT const unsigned char attest_plugin_candidates[64] = {0};
#else
EXPORT const attest_candidate *const *attest_plugin_candidates(size_t *count);
const attest_candidate *const *attest_plugin_candidates(size_t *count)
{
#if HAZARD == 9
    static const attest_candidate *const list[] = {&wild_name, &good};
#elif HAZARD == 10
    static const attest_candidate *const list[] = {&wild_run};
#else
    static const attest_candidate *const list[] = {&good};
#endif
    *count = 1;
#if HAZARD == 1
    *count = (size_t)1 << 40;
#elif HAZARD == 2
    *count = SIZE_MAX;
#elif HAZARD == 3
    static const attest_candidate *const wild[] = {(const attest_candidate *)(uintptr_t)0x10};
    return wild;
#elif HAZARD == 5
    raise(SIGSEGV);
#elif HAZARD == 7
    for (;;) pause();
#elif HAZARD == 9
    *count = 2;
#endif
    return list;
}
#endif

#endif
