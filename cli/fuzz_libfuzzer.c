/* attest fuzz's libFuzzer engine (fuzz_libfuzzer.h). */
#include "fuzz_libfuzzer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/clock.h"
#include "attest/results.h"
#include "commands.h"
#include "fuzz_inputs.h"

#define MAX_JOBS 4096
/* How long past its -max_total_time a job may take to print its stats and close its files. */
#define GRACE_S 20.0

typedef struct job {
    pid_t pid;
    int fd;          /* read end of its stdout+stderr */
    FILE *log;
    char line[512];  /* the unfinished line of its output */
    size_t len;
    uint64_t cov, ft;
    int done, status, stopped;
} job;

static volatile sig_atomic_t lf_signal;
static void on_signal(int sig) { lf_signal = sig; }

attest_status attest_lf_read_file(const char *path, uint8_t **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ATTEST_RETURN_IF(f == NULL, ATTEST_ERR_IO, "%s: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *b = realloc(buf, cap);
            if (b == NULL) {
                free(buf);
                fclose(f);
                return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s", path);
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return attest_fail(ATTEST_ERR_IO, "%s: read error", path);
    }
    *data = buf;
    *size = n;
    return ATTEST_OK;
}

attest_status attest_lf_keep_input(const char *input, const uint8_t *data, size_t size,
                                   const char *findings, const char *tag, char *id, size_t id_cap,
                                   char *kept, size_t kept_cap)
{
    const char *base = strrchr(input, '/') ? strrchr(input, '/') + 1 : input;
    const char *dash = strchr(base, '-');
    snprintf(id, id_cap, "%.16s", dash ? dash + 1 : base);
    snprintf(kept, kept_cap, "%s/finding-%s-%s.fuzz-input", findings, tag, id);
    if (attest_cli_free_path(kept, kept_cap, NULL) != 0) return ATTEST_ERR_IO;
    /* A new file only: never through a link, never over a file that appeared meanwhile. */
    const int fd = open(kept, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (f == NULL && fd >= 0) close(fd);
    ATTEST_RETURN_IF(f == NULL, ATTEST_ERR_IO, "%s: %s", kept, strerror(errno));
    attest_status st = ATTEST_OK;
    if (fwrite(data, 1, size, f) != size) st = attest_fail(ATTEST_ERR_IO, "%s: write error", kept);
    if (fclose(f) != 0 && st == ATTEST_OK) st = attest_fail(ATTEST_ERR_IO, "%s", kept);
    return st;
}

attest_status attest_lf_default_target(attest_kernel kernel, char *buf, size_t cap)
{
    const char *target = fuzz_target_of(kernel);
    ATTEST_RETURN_IF(target == NULL, ATTEST_ERR_NOT_FOUND, "%s has no libFuzzer target",
                     attest_kernel_name(kernel));
    return attest_lf_named_target(target, buf, cap);
}

attest_status attest_lf_named_target(const char *target, char *buf, size_t cap)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ATTEST_RETURN_IF(n <= 0, ATTEST_ERR_NOT_FOUND, "cannot find this executable's folder");
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(buf, cap, "%s/fuzz/fuzz_%s", self, target);
    ATTEST_RETURN_IF(access(buf, X_OK) != 0, ATTEST_ERR_NOT_FOUND,
                     "no libFuzzer target %s (build with the fuzz preset, or give --fuzzer PATH)", buf);
    return ATTEST_OK;
}

int attest_lf_setup_from(const char *verb, const char *name, const char *fuzzer,
                         const char *dict, const char *corpus_arg, const fuzz_settings *run,
                         attest_lf_setup *s)
{
    memset(s, 0, sizeof *s);
    if (fuzzer) {
        if (access(fuzzer, X_OK) != 0)
            return attest_cli_usage_error(verb, "--fuzzer %s: not an executable: %s", fuzzer,
                                          strerror(errno));
        snprintf(s->target, sizeof s->target, "%s", fuzzer);
    } else if (attest_lf_named_target(name, s->target, sizeof s->target) != ATTEST_OK) {
        return attest_cli_usage_error(verb, "--engine libfuzzer: %s", attest_last_error());
    }
    if (dict && access(dict, R_OK) != 0)
        return attest_cli_usage_error(verb, "--dict %s: %s", dict, strerror(errno));
    if (attest_lf_scratch(corpus_arg, s->work, sizeof s->work, s->corpus, sizeof s->corpus) !=
        ATTEST_OK)
        return attest_cli_usage_error(verb, "%s", attest_last_error());
    attest_lf_options *lo = &s->lo;
    lo->target = s->target;
    lo->corpus = s->corpus;
    lo->dict = dict;
    lo->workdir = s->work;
    lo->time = run->time;
    lo->timeout = run->timeout;
    lo->jobs = run->jobs;
    lo->reruns = run->reruns;
    lo->seed = run->seed;
    lo->progress = !run->quiet && attest_cli_interactive();
    return -1;
}

/* libFuzzer's status lines ("#4096 pulse  cov: 691 ft: 1234 corp: ...") carry cov and ft. */
static void parse_line(job *j)
{
    const char *c = strstr(j->line, " cov: ");
    const char *f = strstr(j->line, " ft: ");
    if (j->line[0] != '#') return;
    if (c) j->cov = strtoull(c + 6, NULL, 10);
    if (f) j->ft = strtoull(f + 5, NULL, 10);
}

static void drain(job *j)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(j->fd, buf, sizeof buf);
        if (n <= 0) return;
        if (j->log) fwrite(buf, 1, (size_t)n, j->log);
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n' || buf[i] == '\r') {
                j->line[j->len] = '\0';
                parse_line(j);
                j->len = 0;
            } else if (j->len + 1 < sizeof j->line) {
                j->line[j->len++] = buf[i];
            }
        }
    }
}

/* The input a job stopped on: crash-*, timeout-*, oom-* or leak-* in its artifact folder. */
static int find_artifact(const char *dir, char *out, size_t cap)
{
    static const char *const kinds[] = {"crash-", "timeout-", "oom-", "leak-"};
    DIR *d = opendir(dir);
    if (d == NULL) return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            if (strncmp(e->d_name, kinds[k], strlen(kinds[k])) == 0) {
                const int n = snprintf(out, cap, "%s/%s", dir, e->d_name);
                found = n > 0 && (size_t)n < cap;
                break;
            }
    closedir(d);
    return found;
}

static void child_exec(const attest_lf_options *opt, int i, int out_fd, const char *stats)
{
    char dir[4096], results[4096], slot[4200], total[64], timeout[64], seed[64], prefix[4200];
    char dict[4200], reruns[16], asan[1024];
    snprintf(dir, sizeof dir, "%s/job-%d", opt->workdir, i);
    snprintf(results, sizeof results, "%s/job-%d.h5", opt->workdir, i);
    snprintf(slot, sizeof slot, "%s:%d", stats, i);
    snprintf(reruns, sizeof reruns, "%d", opt->reruns);
    setenv(FUZZ_ENV_CANDIDATE, opt->candidate, 1);
    setenv(FUZZ_ENV_RESULTS, results, 1);
    setenv(FUZZ_ENV_ARTIFACTS, dir, 1);
    setenv(FUZZ_ENV_RERUNS, reruns, 1);
    setenv(FUZZ_ENV_STATS, slot, 1);
    setenv(FUZZ_ENV_STRUCTURE, opt->structure ? "1" : "0", 1);
    if (opt->policy) setenv(FUZZ_ENV_POLICY, opt->policy, 1);
    else unsetenv(FUZZ_ENV_POLICY);
    if (opt->device_candidate) {
        /* CUDA maps device memory where ASan's shadow gap would be protected; its runtime's
         * allocations live to exit and are not leaks of the kernel under test. */
        const char *old = getenv("ASAN_OPTIONS");
        snprintf(asan, sizeof asan, "%s%sprotect_shadow_gap=0:detect_leaks=0", old ? old : "",
                 old && *old ? ":" : "");
        setenv("ASAN_OPTIONS", asan, 1);
    }
    snprintf(total, sizeof total, "-max_total_time=%d", (int)ceil(opt->time));
    snprintf(timeout, sizeof timeout, "-timeout=%d", (int)ceil(opt->timeout));
    snprintf(seed, sizeof seed, "-seed=%" PRIu64, (opt->seed * 2654435761u + (uint64_t)i) % 2147483647u + 1);
    snprintf(prefix, sizeof prefix, "-artifact_prefix=%s/", dir);
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)opt->target;
    argv[n++] = total;
    argv[n++] = timeout;
    argv[n++] = seed;
    argv[n++] = prefix;
    argv[n++] = (char *)"-max_len=512";
    argv[n++] = (char *)"-len_control=0";
    argv[n++] = (char *)"-print_final_stats=1";
    if (opt->dict) {
        snprintf(dict, sizeof dict, "-dict=%s", opt->dict);
        argv[n++] = dict;
    }
    argv[n++] = (char *)opt->corpus;
    argv[n] = NULL;
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
    close(out_fd);
    signal(SIGPIPE, SIG_DFL); /* ignored by attest itself (main.c); an exec keeps that */
    execv(opt->target, argv);
    fprintf(stderr, "attest fuzz: cannot run %s: %s\n", opt->target, strerror(errno));
    _exit(127);
}

static void sum_stats(const fuzz_stats *s, int32_t jobs, const job *js, attest_lf_totals *t)
{
    t->execs = t->judged = t->classes = 0;
    for (int32_t i = 0; i < jobs; i++) {
        t->execs += __atomic_load_n(&s[i].execs, __ATOMIC_RELAXED);
        t->judged += __atomic_load_n(&s[i].judged, __ATOMIC_RELAXED);
        uint64_t c = __atomic_load_n(&s[i].classes, __ATOMIC_RELAXED);
        if (c > t->classes) t->classes = c;
        if (js[i].cov > t->coverage) t->coverage = js[i].cov;
        if (js[i].ft > t->features) t->features = js[i].ft;
    }
}

/* Asks every running job to close its results file, waits (at most 3 s) until each has or has
 * ended, then signals them. */
static void stop_gently(fuzz_stats *s, job *js, int32_t jobs)
{
    for (int32_t i = 0; i < jobs; i++) __atomic_store_n(&s[i].stop, 1, __ATOMIC_RELAXED);
    const double until = attest_monotonic_seconds() + 3.0;
    for (int32_t i = 0; i < jobs; i++)
        while (!js[i].done && js[i].pid > 0 && !__atomic_load_n(&s[i].closed, __ATOMIC_ACQUIRE) &&
               attest_monotonic_seconds() < until) {
            if (js[i].fd > 0) drain(&js[i]);
            if (kill(js[i].pid, 0) != 0) break;
            usleep(2000);
        }
}

static void stop_all(job *js, int32_t jobs, int sig)
{
    for (int32_t i = 0; i < jobs; i++)
        if (!js[i].done && js[i].pid > 0) {
            kill(js[i].pid, sig);
            js[i].stopped = 1;
        }
}

attest_status attest_lf_run(const attest_lf_options *opt, FILE *progress_out, attest_lf_totals *t)
{
    memset(t, 0, sizeof *t);
    t->first_finding_s = -1;
    ATTEST_RETURN_IF(opt->jobs < 1 || opt->jobs > MAX_JOBS, ATTEST_ERR_INVALID_ARGUMENT, "jobs = %d",
                     opt->jobs);
    char stats[4096];
    snprintf(stats, sizeof stats, "%s/stats", opt->workdir);
    const size_t stats_len = (size_t)opt->jobs * sizeof(fuzz_stats);
    int fd = open(stats, O_RDWR | O_CREAT | O_EXCL, 0600);
    ATTEST_RETURN_IF(fd < 0, ATTEST_ERR_IO, "%s: %s", stats, strerror(errno));
    if (ftruncate(fd, (off_t)stats_len) != 0) {
        close(fd);
        return attest_fail(ATTEST_ERR_IO, "%s: %s", stats, strerror(errno));
    }
    fuzz_stats *s = mmap(NULL, stats_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    ATTEST_RETURN_IF(s == MAP_FAILED, ATTEST_ERR_IO, "%s: mmap: %s", stats, strerror(errno));
    job *js = calloc((size_t)(uint32_t)opt->jobs, sizeof *js);
    if (js == NULL) {
        munmap(s, stats_len);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "fuzz jobs");
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    lf_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    attest_status st = ATTEST_OK;
    const double start = attest_monotonic_seconds();
    fflush(NULL);
    for (int32_t i = 0; i < opt->jobs && st == ATTEST_OK; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/job-%d", opt->workdir, i);
        if (mkdir(path, 0700) != 0) {
            st = attest_fail(ATTEST_ERR_IO, "%s: %s", path, strerror(errno));
            break;
        }
        snprintf(path, sizeof path, "%s/job-%d.log", opt->workdir, i);
        js[i].log = fopen(path, "w");
        int p[2];
        if (pipe(p) != 0) {
            st = attest_fail(ATTEST_ERR_IO, "pipe: %s", strerror(errno));
            break;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            sigaction(SIGINT, &old_int, NULL);
            sigaction(SIGTERM, &old_term, NULL);
            child_exec(opt, i, p[1], stats);
        }
        close(p[1]);
        if (pid < 0) {
            close(p[0]);
            st = attest_fail(ATTEST_ERR_IO, "fork: %s", strerror(errno));
            break;
        }
        js[i].pid = pid;
        js[i].fd = p[0];
        fcntl(p[0], F_SETFL, O_NONBLOCK);
    }
    if (st != ATTEST_OK) stop_all(js, opt->jobs, SIGKILL);

    double last_progress = 0, stop_at = 0;
    int running = 0;
    for (int32_t i = 0; i < opt->jobs; i++) running += js[i].pid > 0;
    struct pollfd *pf = calloc((size_t)(uint32_t)opt->jobs, sizeof *pf);
    while (running > 0 && pf) {
        int n = 0;
        for (int32_t i = 0; i < opt->jobs; i++)
            if (js[i].fd > 0) pf[n++] = (struct pollfd){.fd = js[i].fd, .events = POLLIN};
        if (n > 0) (void)poll(pf, (nfds_t)n, 100);
        else usleep(100000);
        for (int32_t i = 0; i < opt->jobs; i++)
            if (js[i].fd > 0) drain(&js[i]);
        const double now = attest_monotonic_seconds() - start;
        for (int32_t i = 0; i < opt->jobs; i++) {
            if (js[i].pid <= 0 || js[i].done) continue;
            int status;
            if (waitpid(js[i].pid, &status, WNOHANG) != js[i].pid) continue;
            drain(&js[i]);
            close(js[i].fd);
            js[i].fd = 0;
            js[i].done = 1;
            js[i].status = status;
            running--;
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/job-%d", opt->workdir, i);
            const int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            if (clean || js[i].stopped) continue;
            if (t->findings < ATTEST_LF_MAX_FINDINGS &&
                find_artifact(dir, t->finding[t->findings], sizeof t->finding[0])) {
                snprintf(t->finding_log[t->findings], sizeof t->finding_log[0], "%s/job-%d.log",
                         opt->workdir, i);
                if (t->findings++ == 0) {
                    sum_stats(s, opt->jobs, js, t);
                    t->first_finding_s = now;
                    t->first_finding_execs = t->execs;
                    stop_gently(s, js, opt->jobs); /* the search stops at the first finding */
                    stop_all(js, opt->jobs, SIGINT);
                    stop_at = now;
                }
            } else if (st == ATTEST_OK) {
                st = attest_fail(ATTEST_ERR_INTERNAL,
                                 "libFuzzer job %d ended (%s %d) without an input to show for it; "
                                 "its output: %s/job-%d.log",
                                 i, WIFEXITED(status) ? "exit status" : "signal",
                                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                                 opt->workdir, i);
                stop_all(js, opt->jobs, SIGINT);
                stop_at = now;
            }
        }
        if (lf_signal && !t->interrupted) {
            t->interrupted = 1;
            stop_gently(s, js, opt->jobs);
            stop_all(js, opt->jobs, SIGINT);
            stop_at = now;
        }
        if (stop_at == 0 && now > opt->time + GRACE_S) {
            stop_all(js, opt->jobs, SIGINT);
            stop_at = now;
        }
        if (stop_at > 0 && now > stop_at + 5) stop_all(js, opt->jobs, SIGKILL);
        if (opt->progress && progress_out && now - last_progress >= 0.5) {
            last_progress = now;
            sum_stats(s, opt->jobs, js, t);
            char classes[64] = ""; /* a target without semantic counters (top-k) shows none */
            if (opt->features > 0)
                snprintf(classes, sizeof classes, "  classes %" PRIu64 "/%d", t->classes,
                         opt->features);
            fprintf(progress_out,
                    "\r  %.0f s  execs %" PRIu64 "  %.0f exec/s  cov %" PRIu64 "  ft %" PRIu64
                    "%s  findings %d   ",
                    now, t->execs, now > 0 ? (double)t->execs / now : 0.0, t->coverage, t->features,
                    classes, t->findings);
            fflush(progress_out);
        }
    }
    free(pf);
    if (opt->progress && progress_out) fputc('\n', progress_out);
    t->seconds = attest_monotonic_seconds() - start;
    sum_stats(s, opt->jobs, js, t);
    for (int32_t i = 0; i < opt->jobs; i++)
        if (js[i].log) fclose(js[i].log);
    free(js);
    munmap(s, stats_len);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return st;
}

attest_status attest_lf_merge(const attest_lf_options *opt, const char *out, const char *command_line,
                              int interrupted, uint64_t *rows, uint64_t *declined)
{
    *rows = 0;
    if (declined) *declined = 0;
    attest_results_writer *w = NULL;
    attest_status st = ATTEST_OK;
    for (int32_t i = 0; i < opt->jobs && st == ATTEST_OK; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/job-%d.h5", opt->workdir, i);
        if (access(path, F_OK) != 0) continue; /* a job stopped before its first judged input */
        attest_results_reader *r = NULL;
        st = attest_results_open_read(path, &r);
        if (st != ATTEST_OK) break;
        const attest_results_provenance *p = attest_results_provenance_of(r);
        if (w == NULL) {
            attest_results_provenance prov = *p;
            snprintf(prov.command_line, sizeof prov.command_line, "%s", command_line);
            prov.seed = opt->seed; /* the campaign's, from which every job's -seed derives */
            prov.policy_text = p->policy_text;
            st = attest_results_create(out, &prov, NULL, &w);
        }
        for (int done = 0; st == ATTEST_OK;) {
            attest_case_record rec;
            int has_repro = 0;
            st = attest_results_next(r, &rec, &has_repro, &done);
            if (st != ATTEST_OK || done) break;
            const uint64_t id = rec.case_id;
            if (declined && rec.verdict == ATTEST_VERDICT_UNSUPPORTED) ++*declined;
            attest_case c;
            memset(&c, 0, sizeof c);
            const int with_case = has_repro && attest_results_load_repro(r, id, &c) == ATTEST_OK;
            rec.case_id = (*rows)++;
            st = attest_results_append(w, &rec, with_case ? &c : NULL, NULL);
            attest_case_free(&c);
        }
        attest_results_close_read(r);
    }
    if (w) {
        attest_status cst = attest_results_close(w, interrupted ? ATTEST_RESULTS_INTERRUPTED
                                                                : ATTEST_RESULTS_COMPLETE);
        if (st == ATTEST_OK) st = cst;
    }
    return st;
}

attest_status attest_lf_run_merge(const attest_lf_options *opt, const char *out,
                                  const char *command_line, attest_lf_totals *t)
{
    ATTEST_FORWARD(attest_lf_run(opt, stderr, t));
    uint64_t rows = 0;
    ATTEST_FORWARD(attest_lf_merge(opt, out, command_line, t->interrupted, &rows, &t->declined));
    t->rows = rows;
    const double rate = t->seconds > 0 ? (double)t->execs / t->seconds : 0.0;
    printf("attest fuzz: %" PRIu64 " execs (%" PRIu64 " judged) in %.2f s (%.0f exec/s over %d "
           "job%s), cov %" PRIu64 ", ft %" PRIu64 ", semantic classes %" PRIu64 "/%d, %d "
           "finding%s\n",
           t->execs, t->judged, t->seconds, rate, opt->jobs, opt->jobs == 1 ? "" : "s",
           t->coverage, t->features, t->classes, opt->features, t->findings,
           t->findings == 1 ? "" : "s");
    printf("results: %" PRIu64 " judged cases in %s\n", rows, out);
    return ATTEST_OK;
}

/* Removes a scratch folder this command made (files one level down and one more). */
void attest_lf_remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) attest_lf_remove_tree(path);
        else unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

attest_status attest_lf_scratch(const char *corpus_arg, char *work, size_t wcap, char *corpus,
                                size_t ccap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(work, wcap, "%s/attest-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ATTEST_RETURN_IF(mkdtemp(work) == NULL, ATTEST_ERR_IO, "scratch folder %s: %s", work,
                     strerror(errno));
    if (corpus_arg) {
        struct stat sb;
        if (stat(corpus_arg, &sb) != 0 && mkdir(corpus_arg, 0777) != 0) {
            const int e = errno;
            attest_lf_remove_tree(work);
            return attest_fail(ATTEST_ERR_IO, "--corpus %s: %s", corpus_arg, strerror(e));
        }
        snprintf(corpus, ccap, "%s", corpus_arg);
    } else {
        snprintf(corpus, ccap, "%s/corpus", work);
        mkdir(corpus, 0700);
    }
    return ATTEST_OK;
}
