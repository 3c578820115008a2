/* attest CLI: the campaign engine over N worker processes (`--jobs N`).
 *
 * Case g of the campaign (counted across jobs, in the order one process would run them) goes to
 * worker g mod N. Each worker generates and judges its cases with its own runner (and its own
 * isolated candidate process) and streams one message per case down a pipe; the parent reads the
 * pipes round-robin, so it takes the records in exactly the order, and with exactly the case ids,
 * of a single-process run. Everything a case's verdict depends on is drawn from its seed, so the
 * verdicts are the same too. Only the parent touches the results file: a failing case's repro is
 * written from the case regenerated from its seed plus the outputs the worker sends.
 *
 * Workers that may use a GPU are spread over the visible devices through CUDA_VISIBLE_DEVICES,
 * set in the worker before anything can initialize CUDA (the parent never does).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine_internal.h"

enum { MSG_RECORD = 1, MSG_FILTERED = 2, MSG_ERROR = 3 };

typedef struct msg_header {
    uint32_t type;
    int32_t status;   /* MSG_ERROR: the attest_status */
    uint32_t blobs;   /* MSG_RECORD: blobs after the record (reference, candidate per output) */
    uint32_t unused;
} msg_header;

#define MSG_ERROR_TEXT 512

/* --- GPU placement ----------------------------------------------------------------------- */

/* The entries of a CUDA_VISIBLE_DEVICES value as CUDA reads them (indices or UUIDs, comma
 * separated; empty entries skipped). */
static unsigned visible_entries(const char *visible)
{
    unsigned n = 0;
    for (const char *p = visible; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len) n++;
        p += len + (end ? 1 : 0);
    }
    return n;
}

unsigned attest_engine_visible_gpus(const char *visible, unsigned driver_gpus)
{
    return visible == NULL ? driver_gpus : visible_entries(visible);
}

int attest_engine_worker_gpu(const char *visible, unsigned proc_gpus, uint32_t worker, char *buf,
                             size_t cap)
{
    if (cap == 0) return 0;
    buf[0] = '\0';
    if (visible == NULL) {
        if (proc_gpus == 0) return 0;
        snprintf(buf, cap, "%u", worker % proc_gpus);
        return 1;
    }
    const unsigned n = visible_entries(visible);
    if (n == 0) return 0; /* "" hides every device: leave it so */
    unsigned want = worker % n, k = 0;
    for (const char *p = visible; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && k++ == want) {
            if (len >= cap) return 0;
            memcpy(buf, p, len);
            buf[len] = '\0';
            return 1;
        }
        p += len + (end ? 1 : 0);
    }
    return 0;
}

/* Devices the NVIDIA driver lists, read without initializing CUDA (fork after that is unsafe). */
static unsigned driver_gpu_count(void)
{
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (!d) return 0;
    unsigned n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

uint32_t attest_engine_default_workers(int device, uint32_t max)
{
    if (max < 1) max = 1;
    uint32_t n;
    if (device) {
        /* One worker per visible GPU: each worker is a process with its own CUDA context, and
         * contexts on one GPU take turns. Measured on one H200 (docs/device-runs.md,
         * 2026-12-03b): libFuzzer with cuda-indexer-paged 9,967 exec/s with 1 job, 5,321 with
         * 2, 4,762 with 8; cuda-mla-decode-mma 4,063 with 1, 4,939 with 2, 4,479 with 8. */
        n = attest_engine_visible_gpus(getenv("CUDA_VISIBLE_DEVICES"), driver_gpu_count());
    } else {
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 && cores < (long)UINT32_MAX ? (uint32_t)cores : 1;
    }
    return n < 1 ? 1 : n > max ? max : n;
}

/* --- pipe I/O ------------------------------------------------------------------------------ */

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Returns 0, or -1 at end of file or on an error, or -2 when a stop was requested meanwhile. */
static int read_all(int fd, void *data, size_t len)
{
    char *p = data;
    while (len) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR) {
            if (attest_engine_stop_requested) return -2;
            continue;
        }
        if (r <= 0) return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

static int write_blob(int fd, const void *data, uint64_t bytes)
{
    if (write_all(fd, &bytes, sizeof bytes)) return -1;
    return bytes ? write_all(fd, data, (size_t)bytes) : 0;
}

/* --- the worker ------------------------------------------------------------------------------ */

static uint64_t job_cases(const attest_job *job) { return job->use_case_seed ? 1 : job->cases; }

/* The k-th output tensor of a case (the runner keeps outputs in table order). */
static const attest_tensor *nth_output(const attest_case *c, int k)
{
    int seen = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        if (c->tensors[i].role != ATTEST_ROLE_OUTPUT) continue;
        if (seen++ == k) return &c->tensors[i];
    }
    return NULL;
}

static int send_error(int fd, attest_status st)
{
    msg_header h = {.type = MSG_ERROR, .status = (int32_t)st};
    char text[MSG_ERROR_TEXT];
    snprintf(text, sizeof text, "%s", attest_last_error());
    return write_all(fd, &h, sizeof h) || write_all(fd, text, sizeof text) ? -1 : 0;
}

static int send_record(int fd, const attest_case_record *rec, const attest_case *c,
                       const attest_case_outputs *kept)
{
    msg_header h = {.type = MSG_RECORD, .blobs = kept ? 2u * (uint32_t)kept->num_outputs : 0};
    if (write_all(fd, &h, sizeof h) || write_all(fd, rec, sizeof *rec)) return -1;
    for (int k = 0; kept && k < kept->num_outputs; k++) {
        const attest_tensor *t = nth_output(c, k);
        uint64_t ref_bytes = kept->reference[k] && t ? attest_tensor_count(t) * sizeof(double) : 0;
        if (write_blob(fd, kept->reference[k], ref_bytes)) return -1;
        uint64_t cand_bytes = kept->candidate[k] ? kept->candidate_bytes[k] : 0;
        if (write_blob(fd, kept->candidate[k], cand_bytes)) return -1;
    }
    return 0;
}

/* Judges cases g = worker, worker + n, ... and sends one message per case. Returns the exit
 * status of the worker process. */
static int worker_main(const engine_run *er, const attest_job *jobs, size_t num_jobs,
                       uint32_t worker, uint32_t n, int fd)
{
    signal(SIGPIPE, SIG_IGN); /* a parent that stopped reading: write() fails and we end */
    char gpu[256];
    if (attest_engine_worker_gpu(getenv("CUDA_VISIBLE_DEVICES"), driver_gpu_count(), worker, gpu,
                                 sizeof gpu))
        setenv("CUDA_VISIBLE_DEVICES", gpu, 1);
    const int keep = er->results != NULL || er->opt->on_failure != NULL;
    uint64_t g = 0;
    for (size_t j = 0; j < num_jobs; j++) {
        const attest_job *job = &jobs[j];
        attest_runner *runner = NULL;
        const uint64_t cases = job_cases(job);
        for (uint64_t i = 0; i < cases; i++, g++) {
            if (g % n != worker) continue;
            if (attest_engine_stop_requested) {
                attest_runner_destroy(runner);
                return 0;
            }
            attest_status st = ATTEST_OK;
            if (!runner) st = attest_runner_create(job->candidate, &er->opt->runner, &runner);
            if (st != ATTEST_OK) return send_error(fd, st) ? 1 : 0;
            const uint64_t seed =
                job->use_case_seed ? job->case_seed : attest_case_seed(job->seed, i);
            attest_case c;
            int skip = 0;
            double gen_seconds = 0;
            st = attest_engine_generate(job, i, seed, &c, &skip, &gen_seconds);
            if (st != ATTEST_OK) {
                attest_runner_destroy(runner);
                return send_error(fd, st) ? 1 : 0;
            }
            int failed;
            if (skip) {
                msg_header h = {.type = MSG_FILTERED};
                failed = write_all(fd, &h, sizeof h);
            } else {
                attest_case_record rec;
                attest_case_outputs kept;
                memset(&rec, 0, sizeof rec);
                memset(&kept, 0, sizeof kept);
                st = attest_runner_judge(runner, &c, &rec, keep ? &kept : NULL);
                if (st == ATTEST_OK && er->opt->inspect)
                    st = er->opt->inspect(er->opt->inspect_ctx, job, &c, &rec);
                rec.gen_seconds = gen_seconds;
                if (st != ATTEST_OK) {
                    (void)send_error(fd, st);
                    failed = 1;
                } else {
                    /* Without a results file only a failing case's outputs are wanted. */
                    const int send = keep && (er->results || er->opt->on_failure_passing ||
                                             attest_verdict_is_failure(rec.verdict));
                    failed = send_record(fd, &rec, &c, send ? &kept : NULL);
                }
                attest_case_outputs_free(&kept);
                attest_case_free(&c);
            }
            if (failed) {
                attest_runner_destroy(runner);
                return 1;
            }
        }
        attest_runner_destroy(runner);
    }
    return 0;
}

/* --- the parent ------------------------------------------------------------------------------ */

/* Reads the rest of a MSG_RECORD into rec and kept. Returns read_all's code. */
static int read_record(int fd, const msg_header *h, attest_case_record *rec,
                       attest_case_outputs *kept)
{
    memset(kept, 0, sizeof *kept);
    int rc = read_all(fd, rec, sizeof *rec);
    if (rc) return rc;
    if (h->blobs > 2u * ATTEST_RECORD_MAX_OUTPUTS) return -1;
    kept->num_outputs = (int32_t)(h->blobs / 2);
    for (uint32_t b = 0; b < h->blobs; b++) {
        uint64_t bytes = 0;
        if ((rc = read_all(fd, &bytes, sizeof bytes))) return rc;
        if (bytes == 0) continue;
        void *data = malloc((size_t)bytes);
        if (!data) return -1;
        if ((rc = read_all(fd, data, (size_t)bytes))) {
            free(data);
            return rc;
        }
        if (b % 2 == 0) {
            kept->reference[b / 2] = data;
        } else {
            kept->candidate[b / 2] = data;
            kept->candidate_bytes[b / 2] = (size_t)bytes;
        }
    }
    return 0;
}

/* Takes one record from a worker; a failing case's repro is written from the case regenerated
 * from its seed (the generator is a function of the seed alone). */
static attest_status take_from_worker(engine_run *er, const attest_job *job,
                                      attest_case_record *rec, attest_case_outputs *kept)
{
    attest_case c;
    memset(&c, 0, sizeof c);
    const int failing = attest_verdict_is_failure(rec->verdict);
    const int repro = (er->results && failing) ||
                      (er->opt->on_failure && (failing || er->opt->on_failure_passing));
    if (repro) {
        attest_status st = attest_generate_case(&job->gen, rec->seed, &c);
        if (st != ATTEST_OK)
            return attest_fail(st, "cannot regenerate case seed 0x%016" PRIx64 ": %s", rec->seed,
                               attest_last_error());
    }
    attest_status st = attest_engine_take_record(er, job, rec, repro ? &c : NULL, kept);
    attest_case_free(&c);
    return st;
}

attest_status attest_engine_run_sharded(engine_run *er, const attest_job *jobs, size_t num_jobs)
{
    uint64_t total = 0;
    for (size_t j = 0; j < num_jobs; j++) total += job_cases(&jobs[j]);
    uint32_t n = er->opt->jobs;
    if (total < n) n = total ? (uint32_t)total : 1;
    pid_t *pids = calloc(n, sizeof *pids);
    int *fds = malloc(n * sizeof *fds);
    if (!pids || !fds) {
        free(pids);
        free(fds);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "out of memory for %u workers", n);
    }
    fflush(stdout);
    fflush(stderr);
    if (er->log) fflush(er->log);
    attest_status st = ATTEST_OK;
    uint32_t started = 0;
    for (; started < n; started++) {
        int p[2];
        if (pipe(p) != 0) {
            st = attest_fail(ATTEST_ERR_IO, "cannot create a pipe for worker %u: %s", started,
                             strerror(errno));
            break;
        }
        pid_t pid = fork();
        if (pid < 0) {
            st = attest_fail(ATTEST_ERR_IO, "cannot fork worker %u: %s", started, strerror(errno));
            close(p[0]);
            close(p[1]);
            break;
        }
        if (pid == 0) {
            close(p[0]);
            for (uint32_t w = 0; w < started; w++) close(fds[w]);
            /* _exit: the results file is the parent's; no atexit handler may touch it here. */
            _exit(worker_main(er, jobs, num_jobs, started, n, p[1]));
        }
        close(p[1]);
        pids[started] = pid;
        fds[started] = p[0];
    }

    uint64_t g = 0;
    for (size_t j = 0; j < num_jobs && st == ATTEST_OK; j++) {
        const attest_job *job = &jobs[j];
        const uint64_t cases = job_cases(job);
        for (uint64_t i = 0; i < cases && st == ATTEST_OK; i++, g++) {
            if (attest_engine_stop_requested || attest_engine_time_up(er)) break;
            const uint32_t w = (uint32_t)(g % n);
            msg_header h;
            int rc = read_all(fds[w], &h, sizeof h);
            if (rc == 0 && h.type == MSG_FILTERED) {
                attest_engine_take_filtered(er);
                continue;
            }
            if (rc == 0 && h.type == MSG_ERROR) {
                char text[MSG_ERROR_TEXT];
                rc = read_all(fds[w], text, sizeof text);
                if (rc == 0) {
                    text[sizeof text - 1] = '\0';
                    st = attest_fail((attest_status)h.status, "%s", text);
                    break;
                }
            }
            attest_case_record rec;
            attest_case_outputs kept;
            memset(&kept, 0, sizeof kept);
            if (rc == 0 && h.type == MSG_RECORD) rc = read_record(fds[w], &h, &rec, &kept);
            else if (rc == 0) rc = -1;
            if (rc == 0) st = take_from_worker(er, job, &rec, &kept);
            attest_case_outputs_free(&kept);
            if (rc == -2 || (rc && attest_engine_stop_requested)) break; /* interrupted */
            if (rc)
                st = attest_fail(ATTEST_ERR_INTERNAL,
                                 "worker %u ended before sending case %" PRIu64 " of %s", w, i,
                                 job->candidate->name);
        }
    }
    /* Closing the pipes ends a worker that is still sending; SIGTERM one that is judging. */
    const int finished =
        st == ATTEST_OK && !attest_engine_stop_requested && !er->totals->timed_out;
    for (uint32_t w = 0; w < started; w++) {
        close(fds[w]);
        if (!finished) kill(pids[w], SIGTERM);
    }
    for (uint32_t w = 0; w < started; w++) {
        while (waitpid(pids[w], NULL, 0) < 0 && errno == EINTR) {
        }
    }
    free(pids);
    free(fds);
    return st;
}
