/* Fuzz target: the case-file reader on arbitrary bytes, the way `attest replay` and `attest
 * reference` use it: list the cases of the file, load each, read its stored outputs. Whatever
 * the bytes, each call must end in ATTEST_OK (a loaded case passes attest_case_check_inputs, a
 * stored tensor's size matches its shape) or in a clean error; never a crash, a leak or an
 * out-of-bounds read. The bytes go through a real file because users hand attest paths, and
 * HDF5's file driver is part of what is under test.
 *
 * HDF5 1.10 itself crashes or hangs on some corrupt metadata (a string's global-heap descriptor
 * makes H5HG_read copy from a wild address, or loop forever; casefile_probe.c). attest cannot
 * validate what HDF5 parses before handing it over, and the CLI guards against it by loading
 * user files in a child first (attest_casefile_probe). This target does the same, with a finer
 * sort: every input runs first in a forked child whose crash or hang report (the sanitizer's,
 * or a backtrace in builds without one) is read back. A report whose innermost frame outside
 * the C library and the sanitizer runtime lies in libhdf5 is HDF5's, and the input is skipped
 * (counted, summarized at exit); any other crash, and every input that did not crash, then runs
 * in this process, where libFuzzer sees coverage, crashes, hangs and leaks. */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "attest/casefile.h"
#include "fuzz_common.h"

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_HAVE_ASAN 1
#endif
#endif

/* A child still reading after this is hung (HDF5 1.10 loops forever on some corrupt global
 * heaps). A valid input of this size reads in 5-20 ms under ASan; every input that hangs HDF5
 * costs this much campaign time (5% of inputs in a campaign hang). A slow child is harmless:
 * stopped inside HDF5 its input is skipped, stopped elsewhere it reruns here. */
#define CHILD_MILLISECONDS 500 /* below 1000: a struct timeval's microseconds */
/* The parent's own limit on a child (its report included), far above CHILD_MILLISECONDS. */
#define PARENT_SECONDS 30.0

/* Leaks inside HDF5 1.10 itself are not attest's (LeakSanitizer reads this when linked in).
 * The first one found (H5Oopen on a corrupt object header loses a half-loaded metadata-cache
 * entry, H5C_protect) leaks the same way in a plain HDF5 program that opens the file, gets the
 * error and closes everything (fuzz/README.md, "Findings"). Naming HDF5's functions would need
 * full malloc stacks (fast_unwind_on_malloc=0 halves exec/s: libhdf5 has no frame pointers), so
 * the whole library is named. What that hides: memory HDF5 hands to attest and attest fails to
 * free. The case-file reader has one such site, a variable-length string attribute
 * (store/h5.c, freed with H5free_memory on every path; seed-mla-v4-group-extra.h5 has
 * such strings). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libhdf5\n"; }
/* libFuzzer checks for leaks after inputs that malloc more than they free, and HDF5's caches
 * often do: without this every check would print the suppression table. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return "print_suppressions=0"; }

/* ASan's 256 MiB quarantine of freed memory makes the fork of every input copy page tables for
 * it: fork was 85% of the time. 16 MiB still holds thousands of HDF5-sized blocks. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=16"; }

/* libFuzzer registers a death callback that saves the input as a crash; the child must not. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void check_stored(const attest_stored_tensor *t)
{
    size_t n = attest_dtype_size(t->dtype);
    if (n == 0 || t->rank < 1 || t->rank > ATTEST_TENSOR_MAX_RANK) abort();
    for (int i = 0; i < t->rank; i++) n *= (size_t)t->shape[i];
    if (n != t->nbytes) abort(); /* the reader promised a buffer of this many bytes */
    double *vals = malloc(n / attest_dtype_size(t->dtype) * sizeof *vals + 1);
    if (!vals) abort();
    if (attest_stored_tensor_to_f64(t, vals) != ATTEST_OK) abort();
    free(vals);
}

static void read_outputs(const char *path, const char *group, attest_kernel kernel)
{
    static const char *const mla[] = {"out_bf16", "lse", "candidate/out_bf16", "candidate/lse"};
    static const char *const idx[] = {"logits", "topk512_set", "candidate/logits"};
    const char *const *names = kernel == ATTEST_KERNEL_MLA_DECODE ? mla : idx;
    size_t count = kernel == ATTEST_KERNEL_MLA_DECODE ? 4 : 3;
    for (size_t i = 0; i < count; i++) {
        attest_stored_tensor t;
        if (attest_casefile_load_output(path, group, names[i], &t) != ATTEST_OK) continue;
        check_stored(&t);
        attest_stored_tensor_free(&t);
    }
}

static attest_status load_group(const char *group, attest_kernel kernel, void *user)
{
    const char *path = user;
    attest_case c;
    if (attest_casefile_load(path, group, &c) == ATTEST_OK) {
        if (c.kernel != kernel) abort(); /* listed as one family, loaded as another */
        if (attest_case_check_inputs(&c) != ATTEST_OK) abort(); /* load promised a valid case */
        attest_case_free(&c);
    }
    read_outputs(path, group, kernel);
    return ATTEST_OK; /* keep walking: every case of the file gets loaded */
}

/* Open HDF5 identifiers of the kinds the reader creates. Every one it opens it must close, on
 * every path: a leaked identifier keeps a file open (and HDF5 prints "infinite loop closing
 * library" at exit). */
static const H5I_type_t id_types[] = {H5I_FILE,    H5I_GROUP, H5I_DATATYPE,   H5I_DATASPACE,
                                      H5I_DATASET, H5I_ATTR,  H5I_GENPROP_LST};
#define NUM_ID_TYPES (sizeof id_types / sizeof id_types[0])

static void count_ids(hsize_t counts[NUM_ID_TYPES])
{
    H5E_auto2_t func;
    void *data;
    int saved = H5Eget_auto2(H5E_DEFAULT, &func, &data) >= 0;
    (void)H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a type with no identifier yet is an error */
    for (size_t i = 0; i < NUM_ID_TYPES; i++)
        if (H5Inmembers(id_types[i], &counts[i]) < 0) counts[i] = 0;
    (void)H5Eclear2(H5E_DEFAULT);
    if (saved) (void)H5Eset_auto2(H5E_DEFAULT, func, data);
}

static void read_file(const char *path)
{
    hsize_t before[NUM_ID_TYPES], after[NUM_ID_TYPES];
    count_ids(before);
    if (attest_casefile_list_groups(path, load_group, (void *)path) != ATTEST_OK) {
        /* No case found: the root's error paths still get a turn. */
        attest_case c;
        if (attest_casefile_load(path, NULL, &c) == ATTEST_OK) {
            if (attest_case_check_inputs(&c) != ATTEST_OK) abort();
            attest_case_free(&c);
        }
    }
    count_ids(after);
    for (size_t i = 0; i < NUM_ID_TYPES; i++) {
        if (after[i] != before[i]) {
            fprintf(stderr, "fuzz casefile: HDF5 identifiers of type %d went from %llu to %llu\n",
                    (int)id_types[i], (unsigned long long)before[i], (unsigned long long)after[i]);
            abort();
        }
    }
}

/* --- the child and its crash report --------------------------------------------------------- */

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

static void run_child(const char *path, int report_fd)
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
    read_file(path);
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

/* Returns 1 when the first stack of the report blames libhdf5 (its innermost frame outside the
 * runtime), copies that frame into `frame` and, into `site`, the first named HDF5 function from
 * there outward that is not a generic layer (H5HG_read, H5HG__protect), for the summary. */
static int blames_hdf5(const char *report, char *frame, size_t cap, char *site, size_t site_cap)
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

typedef enum child_outcome {
    CHILD_OK,
    CHILD_HDF5_CRASH,  /* crashed or hung inside HDF5: skip the input */
    CHILD_OTHER_CRASH, /* crashed elsewhere: this process must crash too */
    CHILD_OTHER_HANG   /* slow elsewhere: libFuzzer's -timeout judges it in this process */
} child_outcome;

/* Inputs skipped because they crash or hang HDF5, by where, for the exit summary. */
#define MAX_HDF5_SITES 16
static struct {
    char function[64];
    unsigned long count;
} hdf5_sites[MAX_HDF5_SITES];
static unsigned long hdf5_skipped;

static void print_hdf5_summary(void)
{
    if (hdf5_skipped == 0) return;
    fprintf(stderr, "fuzz casefile: %lu input(s) crashed or hung HDF5 itself and were skipped:\n",
            hdf5_skipped);
    for (int i = 0; i < MAX_HDF5_SITES && hdf5_sites[i].count; i++)
        fprintf(stderr, "  %6lu %s\n", hdf5_sites[i].count, hdf5_sites[i].function);
}

static void note_hdf5_crash(const char *frame, const char *site, int hang)
{
    char fn[64];
    /* A site name is a short function name; cut anything longer rather than overflow. */
    snprintf(fn, sizeof fn, "%s in %.50s", hang ? "hang" : "crash", site);
    if (hdf5_skipped++ == 0) atexit(print_hdf5_summary);
    for (int i = 0; i < MAX_HDF5_SITES; i++) {
        if (hdf5_sites[i].count == 0)
            snprintf(hdf5_sites[i].function, sizeof hdf5_sites[i].function, "%s", fn);
        if (strcmp(hdf5_sites[i].function, fn) == 0) {
            hdf5_sites[i].count++;
            break;
        }
    }
    if (hdf5_skipped <= 3)
        fprintf(stderr, "fuzz casefile: input %s HDF5 itself, skipped (%s)%s\n",
                hang ? "hangs" : "crashes", frame,
                hdf5_skipped == 3 ? "; a summary follows at exit" : "");
}

/* Runs read_file in a child; on a crash that is not HDF5's, leaves the report in `report`. */
static child_outcome run_in_child(const char *path, const char *report_path, char *report,
                                  size_t cap)
{
    int fd = open(report_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) abort();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) abort();
    if (pid == 0) run_child(path, fd);
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
    report[n > 0 ? n : 0] = '\0';
    if (!killed && WIFEXITED(status) && WEXITSTATUS(status) == 0) return CHILD_OK;
    char frame[512] = "", site[64];
    const int hang = killed || strstr(report, HANG_MARK) != NULL;
    if (!blames_hdf5(report, frame, sizeof frame, site, sizeof site))
        return hang ? CHILD_OTHER_HANG : CHILD_OTHER_CRASH;
    note_hdf5_crash(frame, site, hang);
    return CHILD_HDF5_CRASH;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], report_path[64];
    snprintf(path, sizeof path, "/tmp/attest-fuzz-casefile-%d.h5", (int)getpid());
    snprintf(report_path, sizeof report_path, "/tmp/attest-fuzz-casefile-%d.log", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size > 0 && fwrite(data, 1, size, f) != size) abort();
    if (fclose(f) != 0) abort();
    static int quiet;
    if (!quiet++) {
        /* attest silences HDF5's error printing per call and restores it after; left on, HDF5
         * prints "infinite loop closing library" at exit once a corrupt object header made it
         * leak (the leak above): noise in every replay. */
        (void)H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    }
    static char report[1 << 16];
    child_outcome outcome = run_in_child(path, report_path, report, sizeof report);
    if (outcome != CHILD_HDF5_CRASH) read_file(path);
    if (outcome == CHILD_OTHER_CRASH) {
        /* Loading is deterministic: a crash the child had must happen here too. */
        fprintf(stderr, "fuzz casefile: the child crashed, this process did not:\n%s\n", report);
        abort();
    }
    unlink(path);
    unlink(report_path);
    return 0;
}
