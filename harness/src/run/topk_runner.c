/* Running a top-k candidate in a forked child, fenced and re-run (attest/topk_runner.h). */
#include "attest/topk_runner.h"

#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/external.h"
#include "child_probe.h"
#include "external_def.h"

#define CANARY_BYTES 64
#define CANARY_BYTE 0xA5

/* The memory a run writes: what it returned and its inputs' checksum after the run, then each
 * output between canaries. Mapped shared, so a child's writes reach the parent. */
typedef struct run_header {
    int32_t rc;
    int32_t done;         /* 1 once run() returned */
    uint64_t input_after; /* checksum of the inputs after the run */
} run_header;

typedef struct fenced {
    uint8_t *base;
    size_t size, out_bytes;
    run_header *hdr;
    int32_t *out[2]; /* logical, physical */
} fenced;

attest_topk_run_options attest_topk_run_defaults(void)
{
    attest_topk_run_options o = {1, 2, 10.0};
    return o;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t input_checksum(const attest_topk_case *c)
{
    const size_t rows = (size_t)attest_topk_rows(&c->p);
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, c->logits, rows * (size_t)c->p.width * sizeof(float));
    h = fnv(h, c->context_lens, (size_t)c->p.b * sizeof(int32_t));
    return fnv(h, c->block_table, (size_t)c->p.b * c->p.blocks_per_req * sizeof(int32_t));
}

/* [header][canary][logical][canary][physical][canary] */
static attest_status fence_map(fenced *f, size_t out_bytes)
{
    memset(f, 0, sizeof *f);
    f->out_bytes = out_bytes;
    f->size = 64 + 3 * CANARY_BYTES + 2 * out_bytes;
    void *m = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ATTEST_RETURN_IF(m == MAP_FAILED, ATTEST_ERR_OUT_OF_MEMORY, "topk run: mmap of %zu bytes: %s",
                     f->size, strerror(errno));
    f->base = m;
    f->hdr = m;
    f->out[0] = (int32_t *)(f->base + 64 + CANARY_BYTES);
    f->out[1] = (int32_t *)(f->base + 64 + 2 * CANARY_BYTES + out_bytes);
    return ATTEST_OK;
}

/* Poisons the outputs, sets the canaries and clears the header before each run. */
static void fence_reset(fenced *f)
{
    memset(f->base, 0, 64);
    memset(f->base + 64, CANARY_BYTE, f->size - 64);
    const size_t n = f->out_bytes / sizeof(int32_t);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < n; i++) f->out[k][i] = ATTEST_TOPK_POISON;
}

static int canaries_intact(const fenced *f)
{
    const uint8_t *c[3] = {f->base + 64, (const uint8_t *)f->out[0] + f->out_bytes,
                           (const uint8_t *)f->out[1] + f->out_bytes};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < CANARY_BYTES; i++)
            if (c[k][i] != CANARY_BYTE) return 0;
    return 1;
}

static void run_once(const attest_topk_candidate *cand, const attest_topk_case *c, fenced *f)
{
    attest_topk_args args = {&c->p, c->logits, c->context_lens, c->block_table,
                             (cand->outputs & ATTEST_TOPK_OUT_LOGICAL) ? f->out[0] : NULL,
                             (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) ? f->out[1] : NULL};
    f->hdr->rc = cand->run(&args);
    f->hdr->done = 1;
    f->hdr->input_after = input_checksum(c);
}

static void finding(attest_topk_run_result *res, attest_topk_check check, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void finding(attest_topk_run_result *res, attest_topk_check check, const char *fmt, ...)
{
    if (!res->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(res->detail, sizeof res->detail, fmt, ap);
        va_end(ap);
    }
    res->failed |= 1u << check;
}

/* Every run in one child (one fork per case, not per run: on a loaded machine the wait for the
 * child dominates); runs until one does not return. *sig: 0 when the child exited, else the
 * signal that ended it (SIGALRM: the time limit of all the runs). */
static attest_status run_child(const attest_topk_candidate *cand, const attest_topk_case *c,
                               fenced *f, int32_t runs, double timeout, int *sig)
{
    fflush(NULL); /* the child must not flush the parent's buffers a second time */
    const pid_t pid = fork();
    ATTEST_RETURN_IF(pid < 0, ATTEST_ERR_CHILD, "topk run: fork: %s", strerror(errno));
    if (pid == 0) {
        /* Isolated as every child is (child_probe.h): a crash ends it as a signal the parent
         * sees, whatever handlers the parent installed; it reaches none of the parent's files. */
        (void)child_isolate(-1, CHILD_FDS_NONE);
        const double limit = timeout * runs;
        struct itimerval it;
        memset(&it, 0, sizeof it);
        it.it_value.tv_sec = (time_t)limit;
        it.it_value.tv_usec = (suseconds_t)((limit - (double)(time_t)limit) * 1e6);
        setitimer(ITIMER_REAL, &it, NULL);
        for (int32_t r = 0; r < runs; r++) run_once(cand, c, &f[r]);
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        ATTEST_RETURN_IF(errno != EINTR, ATTEST_ERR_CHILD, "topk run: waitpid: %s",
                         strerror(errno));
    *sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return ATTEST_OK;
}

attest_status attest_topk_run(const attest_topk_candidate *cand, const attest_topk_case *c,
                              const attest_topk_run_options *o, int32_t *idx, int32_t *phys,
                              attest_topk_run_result *res)
{
    ATTEST_RETURN_IF(cand == NULL || cand->run == NULL || c == NULL || o == NULL || res == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "topk run: NULL argument");
    ATTEST_RETURN_IF(((cand->outputs & ATTEST_TOPK_OUT_LOGICAL) && idx == NULL) ||
                         ((cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) && phys == NULL),
                     ATTEST_ERR_INVALID_ARGUMENT, "topk run: no buffer for a declared output");
    ATTEST_RETURN_IF(o->reruns < 1 || !(o->timeout_seconds > 0), ATTEST_ERR_INVALID_ARGUMENT,
                     "topk run: reruns %d, timeout %g", o->reruns, o->timeout_seconds);
    /* An external candidate runs in a process of its own already: the bridge is its isolation. */
    if (attest_external_topk_is(cand)) return ext_topk_run(cand, c, o, idx, phys, res);
    memset(res, 0, sizeof *res);
    const size_t out_bytes = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.k * sizeof(int32_t);
    fenced *f = calloc((size_t)o->reruns, sizeof *f);
    ATTEST_RETURN_IF(f == NULL, ATTEST_ERR_OUT_OF_MEMORY, "topk run: out of memory");
    attest_status st = ATTEST_OK;
    int32_t mapped = 0;
    for (; mapped < o->reruns && st == ATTEST_OK; mapped++) {
        st = fence_map(&f[mapped], out_bytes);
        if (st == ATTEST_OK) fence_reset(&f[mapped]);
        else break;
    }
    const uint64_t before = input_checksum(c);
    int sig = 0;
    if (st == ATTEST_OK && o->isolate) st = run_child(cand, c, f, o->reruns, o->timeout_seconds, &sig);
    else if (st == ATTEST_OK)
        for (int32_t run = 0; run < o->reruns; run++) run_once(cand, c, &f[run]);
    for (int32_t run = 0; run < o->reruns && st == ATTEST_OK; run++) {
        const fenced *fr = &f[run];
        if (!fr->hdr->done) {
            if (sig == SIGALRM)
                finding(res, ATTEST_TOPK_CHECK_TIMEOUT, "timeout: run %d outlived %g s", run + 1,
                        o->timeout_seconds);
            else
                finding(res, ATTEST_TOPK_CHECK_CRASH, "crash: run %d died of signal %d (%s)",
                        run + 1, sig, sig ? strsignal(sig) : "exited early");
            break;
        }
        res->runs++;
        if (fr->hdr->rc != 0)
            finding(res, ATTEST_TOPK_CHECK_RUN, "run: the candidate returned %d", fr->hdr->rc);
        if (!canaries_intact(fr))
            finding(res, ATTEST_TOPK_CHECK_CANARY,
                    "canary: run %d wrote outside its [rows, k] outputs", run + 1);
        if (fr->hdr->input_after != before)
            finding(res, ATTEST_TOPK_CHECK_INPUT,
                    "input-modified: run %d changed the logits, lengths or block table", run + 1);
        if (run == 0) {
            res->outputs_valid = 1;
        } else if (memcmp(f[0].out[0], fr->out[0], out_bytes) != 0 ||
                   memcmp(f[0].out[1], fr->out[1], out_bytes) != 0) {
            finding(res, ATTEST_TOPK_CHECK_NONDETERMINISM,
                    "nondeterminism: run %d wrote other outputs than run 1", run + 1);
        }
    }
    /* A run that died after run 1 returned still spoils the case: its outputs stay unjudged. */
    if (res->failed & ((1u << ATTEST_TOPK_CHECK_CRASH) | (1u << ATTEST_TOPK_CHECK_TIMEOUT)))
        res->outputs_valid = 0;
    if (st == ATTEST_OK && res->outputs_valid) {
        if (idx && (cand->outputs & ATTEST_TOPK_OUT_LOGICAL)) memcpy(idx, f[0].out[0], out_bytes);
        if (phys && (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL))
            memcpy(phys, f[0].out[1], out_bytes);
    }
    for (int32_t i = 0; i < mapped; i++)
        if (f[i].base) munmap(f[i].base, f[i].size);
    free(f);
    return st;
}
