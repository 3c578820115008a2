/* Tests of caches whose byte offsets pass 2^31, as a serving engine's pool of tens of thousands
 * of pages has them: the pool is one large PROT_NONE, MAP_NORESERVE mapping in which only the
 * pages a case uses are made readable (at its two ends, more than 2^31 bytes apart), so nothing
 * else costs memory and a read of any other page faults. The float64 reference and the correct
 * kernel handle it; a kernel that computes page offsets in int32 arithmetic reads the wrong
 * address and fails. The kernels run in a forked child (a fault there is the CRASH verdict the
 * runner would give) and write into shared memory; attest_judge_output judges them as the runner
 * does. (The runner's arena copies a case's pool whole, so such a case goes through the
 * reference, the kernels and the judge directly here.) */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/bound.h"
#include "attest/casefile.h"
#include "attest/device.h"
#include "attest/generator.h"
#include "attest/judge.h"
#include "attest/layout.h"
#include "attest/numerics.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/registry.h"
#include "attest/runner.h"

#define NUM_PAGES 65536 /* x 37376 bytes (mla-v4, 64 tokens a page): 2.45 GB of address space */
#define TOPK 8

typedef struct sparse_case {
    attest_case c;
    uint8_t *pool;
    size_t pool_bytes;
    uint8_t *outputs; /* MAP_SHARED: the forked kernel writes here */
    size_t outputs_bytes;
    void *inputs[ATTEST_CASE_MAX_TENSORS];
} sparse_case;

static const int32_t used_pages[] = {0, 1, NUM_PAGES - 2, NUM_PAGES - 1};

static void build(sparse_case *s)
{
    memset(s, 0, sizeof *s);
    attest_case *c = &s->c;
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    attest_mla_params *p = &c->params.mla;
    p->layout = ATTEST_LAYOUT_MLA_V4;
    p->page_size = 64;
    p->num_pages = NUM_PAGES;
    p->b = 1;
    p->s_q = 1;
    p->h_q = 2;
    p->d_qk = 512;
    p->d_v = 512;
    p->topk = TOPK;
    p->sm_scale = 0.04419417382415922f; /* 512^-0.5 */
    assert_ok(attest_case_define_tensors(c, 0));
    attest_layout L;
    assert_ok(attest_layout_make(ATTEST_LAYOUT_MLA_V4, 64, 0, &L));
    assert_true((uint64_t)NUM_PAGES * L.page_stride > (UINT64_C(1) << 31));

    const size_t os_page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < c->num_tensors; i++) {
        attest_tensor *t = &c->tensors[i];
        if (!strcmp(t->name, "cache_bytes")) {
            s->pool_bytes = t->nbytes;
            s->pool = mmap(NULL, t->nbytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
            assert_true(s->pool != MAP_FAILED);
            t->data = s->pool;
        } else if (t->role == ATTEST_ROLE_OUTPUT) {
            s->outputs_bytes += (t->nbytes + 63) / 64 * 64;
        } else {
            t->data = s->inputs[i] = calloc(1, t->nbytes ? t->nbytes : 1);
            assert_non_null(t->data);
        }
    }
    s->outputs = mmap(NULL, s->outputs_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                      -1, 0);
    assert_true(s->outputs != MAP_FAILED);
    size_t at = 0;
    for (size_t i = 0; i < c->num_tensors; i++)
        if (c->tensors[i].role == ATTEST_ROLE_OUTPUT) {
            c->tensors[i].data = s->outputs + at;
            at += (c->tensors[i].nbytes + 63) / 64 * 64;
        }

    /* The used pages: readable, poisoned, then a few tokens written. */
    const attest_scale_policy policy = {ATTEST_SCALE_POW2, ATTEST_UE8M0_FLASHMLA,
                                        ATTEST_FP8_NONSAT};
    float values[512];
    for (size_t u = 0; u < sizeof used_pages / sizeof used_pages[0]; u++) {
        const uint64_t begin = (uint64_t)used_pages[u] * L.page_stride;
        const uint64_t lo = begin / os_page * os_page;
        const uint64_t hi = (begin + L.page_stride + os_page - 1) / os_page * os_page;
        assert_int_equal(mprotect(s->pool + lo, hi - lo, PROT_READ | PROT_WRITE), 0);
        memset(s->pool + begin, 0xFF, L.page_stride);
        for (uint32_t slot = 0; slot < 64; slot += 9) {
            for (int d = 0; d < 512; d++)
                values[d] = (float)((d * 7 + slot * 13 + used_pages[u] % 97) % 31 - 15) / 8.0f;
            assert_ok(attest_layout_encode_token(&L, s->pool + begin, slot, values, &policy));
        }
    }
    /* Two tokens of each used page: the far ones sit past 2^31 bytes. */
    int32_t *idx = attest_case_tensor(c, "indices")->data;
    for (int k = 0; k < TOPK; k++) idx[k] = used_pages[k / 2] * 64 + (k % 2 ? 9 : 27);
    uint16_t *q = attest_case_tensor(c, "q_bf16")->data;
    for (int i = 0; i < 2 * 512; i++)
        q[i] = attest_bf16_encode((float)((i * 5) % 17 - 8) / 16.0f);
}

static void destroy(sparse_case *s)
{
    for (size_t i = 0; i < ATTEST_CASE_MAX_TENSORS; i++) free(s->inputs[i]);
    munmap(s->pool, s->pool_bytes);
    munmap(s->outputs, s->outputs_bytes);
}

/* Runs the candidate in a child on the case; returns 1 when it exited normally and every output
 * passes against the reference, 0 when it failed a gate, -1 when it faulted or returned an
 * error. */
static int judge(sparse_case *s, const char *name, const attest_policy *policy,
                 double **refs, double **bounds)
{
    const attest_candidate *cand = NULL;
    assert_ok(attest_candidate_resolve(name, &cand));
    for (size_t i = 0; i < s->c.num_tensors; i++)
        if (s->c.tensors[i].role == ATTEST_ROLE_OUTPUT)
            memset(s->c.tensors[i].data, 0xFF, s->c.tensors[i].nbytes);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* A fault ends the child (cmocka's handlers would carry on running tests in it). */
        const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
        attest_kernel_args args;
        void *ctx = NULL;
        if (attest_case_args(&s->c, &args) != ATTEST_OK) _exit(3);
        if (cand->init && cand->init(&ctx) != 0) _exit(3);
        if (cand->supports && !cand->supports(ctx, &args)) _exit(3);
        _exit(cand->run(ctx, &args) == 0 ? 0 : 3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    int out = 0, pass = 1;
    for (size_t i = 0; i < s->c.num_tensors; i++) {
        const attest_tensor *t = &s->c.tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        attest_judge_expected exp = {refs[out], ATTEST_DTYPE_F64, bounds[out]};
        attest_tensor_metrics m;
        assert_ok(attest_judge_output(&s->c, t, &exp, t->data, cand->conventions.masking, policy,
                                      NULL, &m));
        pass &= m.failed_gates == 0;
        out++;
    }
    return pass;
}

/* Offsets past 2^31: the reference reads the far pages, the correct kernel passes, the kernel
 * with int32 offsets does not (it faults on an unmapped address or reads the wrong bytes). */
static void test_offsets_past_2g(void **state)
{
    (void)state;
    sparse_case s;
    build(&s);
    attest_bound_model models[2] = {attest_bound_model_fp32(), attest_bound_model_fp32()};
    double *refs[2], *bounds[2];
    const size_t n_out = 2 * 512, n_lse = 2;
    refs[0] = calloc(n_out, sizeof(double));
    refs[1] = calloc(n_lse, sizeof(double));
    bounds[0] = calloc(n_out, sizeof(double));
    bounds[1] = calloc(n_lse, sizeof(double));
    assert_true(refs[0] && refs[1] && bounds[0] && bounds[1]);
    assert_ok(attest_ref_bounds(&s.c, models, refs, bounds));
    for (size_t i = 0; i < n_lse; i++) assert_true(refs[1][i] > -1e300 && refs[1][i] < 1e300);
    attest_policy *policy = NULL;
    assert_ok(attest_policy_default(&policy));
    assert_int_equal(judge(&s, "cpu-mla-decode", policy, refs, bounds), 1);
#ifdef ATTEST_WITH_MUTANTS
    assert_int_not_equal(judge(&s, "mutant-mla-int32-offsets", policy, refs, bounds), 1);
#endif
    attest_policy_free(policy);
    for (int i = 0; i < 2; i++) {
        free(refs[i]);
        free(bounds[i]);
    }
    destroy(&s);
}

/* The same pool held by the case itself (sparse_pools): attest_case_alloc_heap reserves it, only
 * the used pages are written. */
static void build_pool_case(attest_case *c, int32_t pool_pages, unsigned sparse_pools,
                            const int32_t *pages, size_t num_pages);

static void build_owned_pages(attest_case *c, const int32_t *pages, size_t num_pages)
{
    build_pool_case(c, NUM_PAGES, ATTEST_POOL_MAIN, pages, num_pages);
}

static void build_owned(attest_case *c)
{
    build_owned_pages(c, used_pages, sizeof used_pages / sizeof used_pages[0]);
}

/* The same with the indices reaching `pages` (TOPK indices spread over them), in a pool of
 * pool_pages pages held as sparse_pools says. */
static void build_pool_case(attest_case *c, int32_t pool_pages, unsigned sparse_pools,
                            const int32_t *pages, size_t num_pages)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    attest_mla_params *p = &c->params.mla;
    p->layout = ATTEST_LAYOUT_MLA_V4;
    p->page_size = 64;
    p->num_pages = pool_pages;
    p->b = 1;
    p->s_q = 1;
    p->h_q = 2;
    p->d_qk = 512;
    p->d_v = 512;
    p->topk = TOPK;
    p->sm_scale = 0.04419417382415922f;
    c->sparse_pools = sparse_pools;
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));
    attest_layout L;
    assert_ok(attest_layout_make(ATTEST_LAYOUT_MLA_V4, 64, 0, &L));
    uint8_t *pool = attest_case_tensor(c, "cache_bytes")->data;
    const attest_scale_policy policy = {ATTEST_SCALE_POW2, ATTEST_UE8M0_FLASHMLA,
                                        ATTEST_FP8_NONSAT};
    float values[512];
    for (size_t u = 0; u < num_pages; u++) {
        uint8_t *page = pool + (uint64_t)pages[u] * L.page_stride;
        memset(page, 0xFF, L.page_stride);
        for (uint32_t slot = 0; slot < 64; slot += 9) {
            for (int d = 0; d < 512; d++)
                values[d] = (float)((d * 7 + slot * 13 + pages[u] % 97) % 31 - 15) / 8.0f;
            assert_ok(attest_layout_encode_token(&L, page, slot, values, &policy));
        }
    }
    int32_t *idx = attest_case_tensor(c, "indices")->data;
    for (int k = 0; k < TOPK; k++)
        idx[k] = pages[(size_t)k * num_pages / TOPK] * 64 + (k % 2 ? 9 : 27);
    uint16_t *q = attest_case_tensor(c, "q_bf16")->data;
    for (int i = 0; i < 2 * 512; i++)
        q[i] = attest_bf16_encode((float)((i * 5) % 17 - 8) / 16.0f);
}

/* Resident memory of this process, in KiB (VmRSS). */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

static attest_verdict judge_in_runner(const attest_case *c, const char *name, int isolate,
                                      char *message, size_t cap)
{
    const attest_candidate *cand = NULL;
    assert_ok(attest_candidate_resolve(name, &cand));
    attest_runner_options o = attest_runner_defaults();
    o.reference = attest_ref_simulated;
    o.isolate = isolate;
    attest_runner *r = NULL;
    assert_ok(attest_runner_create(cand, &o, &r));
    attest_case_record rec;
    assert_ok(attest_runner_judge(r, c, &rec, NULL));
    attest_runner_destroy(r);
    if (message) snprintf(message, cap, "%s", rec.message);
    return rec.verdict;
}

/* The runner's arena places only the used pages of the case's 2.45 GB pool: the correct kernel
 * passes, isolated or not, and the whole path writes a few MB. */
static void test_runner_places_only_reached_pages(void **state)
{
    (void)state;
    const long before = rss_kib();
    attest_case c;
    build_owned(&c);
    char msg[256] = "";
    const attest_verdict v = judge_in_runner(&c, "cpu-mla-decode", 1, msg, sizeof msg);
    if (v != ATTEST_VERDICT_OK) print_message("%s\n", msg);
    assert_int_equal(v, ATTEST_VERDICT_OK);
    assert_int_equal(judge_in_runner(&c, "cpu-mla-decode", 0, NULL, 0), ATTEST_VERDICT_OK);
    const long after = rss_kib();
    /* 4 pages of 37 KB, the reference's buffers and the arena's small tensors: far below the
     * 2.45 GB a dense placement would write. */
    if (before > 0 && after > 0) assert_true(after - before < 64 * 1024);
    attest_case_free(&c);
}

static long minor_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : -1;
}

/* Resident shared memory of this process (the arena), in KiB (RssShmem). */
static long shmem_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "RssShmem: %ld kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

static attest_verdict judge_again(attest_runner *r, const attest_case *c)
{
    attest_case_record rec;
    assert_ok(attest_runner_judge(r, c, &rec, NULL));
    return rec.verdict;
}

/* A runner of the named candidate judging in this process, against the simulated reference. */
static attest_runner *in_process_runner(const char *name)
{
    const attest_candidate *cand = NULL;
    assert_ok(attest_candidate_resolve(name, &cand));
    attest_runner_options o = attest_runner_defaults();
    o.reference = attest_ref_simulated;
    o.isolate = 0;
    attest_runner *r = NULL;
    assert_ok(attest_runner_create(cand, &o, &r));
    return r;
}

/* Cases one after another in one runner with the same layout, as a fuzz target's mutations of
 * one generated case: the pages both reach stay placed instead of being released and faulted in
 * again, the pages only the last case reached go back (the arena's resident memory shrinks by
 * them), and the verdicts stay OK. */
static void test_runner_keeps_the_pages_both_cases_reach(void **state)
{
    (void)state;
    attest_case all, near;
    build_owned(&all);
    const int32_t near_pages[] = {0, 1};
    build_owned_pages(&near, near_pages, 2);
    attest_runner *r = in_process_runner("cpu-mla-decode");
    assert_int_equal(judge_again(r, &all), ATTEST_VERDICT_OK);
    assert_int_equal(judge_again(r, &all), ATTEST_VERDICT_OK);
    long f0 = minor_faults();
    assert_int_equal(judge_again(r, &all), ATTEST_VERDICT_OK);
    const long same = minor_faults() - f0;
    const long with_far = shmem_kib();
    assert_int_equal(judge_again(r, &near), ATTEST_VERDICT_OK);
    const long without_far = shmem_kib();
    f0 = minor_faults();
    assert_int_equal(judge_again(r, &all), ATTEST_VERDICT_OK);
    const long far_again = minor_faults() - f0;
    attest_runner_destroy(r);
    /* The two far pages (2 x 37,440 bytes, 19 OS pages) went back after `all` and came again. */
    if (with_far >= 0 && without_far >= 0) assert_true(with_far - without_far >= 64);
    print_message("minor faults: %ld judging the same case again, %ld after the far pages went\n",
                  same, far_again);
    assert_true(far_again >= same + 16);
    attest_case_free(&all);
    attest_case_free(&near);
}

/* A case held densely after one held sparsely, in one runner (a fuzz target's mix: a case in
 * three moves its pool past 2^31): the dense case's arena pages are still placed, so judging it
 * again faults no more than judging it twice in a row. The sparse case's guard once started right
 * after its first tensors, where the dense case lays its pool, so releasing the sparse case's
 * pages took the dense pool's with them and every one of its 146 OS pages faulted in again. */
static void test_runner_dense_pages_survive_a_sparse_case(void **state)
{
    (void)state;
    attest_case dense, sparse;
    const int32_t dense_pages[] = {0, 5, 10, 15};
    build_pool_case(&dense, 16, 0, dense_pages, 4); /* 16 x 37,440 bytes: 146 OS pages */
    build_owned(&sparse);
    attest_runner *r = in_process_runner("cpu-mla-decode");
    assert_int_equal(judge_again(r, &dense), ATTEST_VERDICT_OK);
    assert_int_equal(judge_again(r, &sparse), ATTEST_VERDICT_OK);
    assert_int_equal(judge_again(r, &dense), ATTEST_VERDICT_OK);
    long f0 = minor_faults();
    assert_int_equal(judge_again(r, &dense), ATTEST_VERDICT_OK);
    const long same = minor_faults() - f0;
    assert_int_equal(judge_again(r, &sparse), ATTEST_VERDICT_OK);
    f0 = minor_faults();
    assert_int_equal(judge_again(r, &dense), ATTEST_VERDICT_OK);
    const long after_sparse = minor_faults() - f0;
    attest_runner_destroy(r);
    print_message("minor faults judging the dense case: %ld again, %ld after the sparse one\n",
                  same, after_sparse);
    assert_true(after_sparse <= same + 32);
    attest_case_free(&dense);
    attest_case_free(&sparse);
}

/* A page the last case placed and this one does not reach faults as any unplaced page does: the
 * payload-stride kernel's far reads land on pages 65421-65423, which the first case placed. */
static void test_runner_page_of_the_last_case_faults(void **state)
{
    (void)state;
#ifdef ATTEST_WITH_MUTANTS
    attest_case before, c;
    const int32_t before_pages[] = {0, 1, 65421, 65422, 65423};
    build_owned_pages(&before, before_pages, 5);
    build_owned(&c);
    const attest_candidate *cand = NULL;
    assert_ok(attest_candidate_resolve("mutant-mla-payload-stride", &cand));
    attest_runner_options o = attest_runner_defaults();
    o.reference = attest_ref_simulated;
    attest_runner *r = NULL;
    assert_ok(attest_runner_create(cand, &o, &r));
    attest_case_record rec;
    assert_ok(attest_runner_judge(r, &before, &rec, NULL));
    assert_ok(attest_runner_judge(r, &c, &rec, NULL));
    attest_runner_destroy(r);
    if (rec.verdict != ATTEST_VERDICT_CRASH) print_message("%s\n", rec.message);
    assert_int_equal(rec.verdict, ATTEST_VERDICT_CRASH);
    assert_non_null(strstr(rec.message, "unplaced page"));
    attest_case_free(&before);
    attest_case_free(&c);
#endif
}

/* The correct kernel, then one byte written on the last placed page, past 2^31 bytes. */
static const attest_candidate *correct_mla;
static int run_writes_far_page(void *ctx, const attest_kernel_args *args)
{
    const int rc = correct_mla->run(ctx, args);
    uint8_t *pool = (uint8_t *)args->u.mla.cache;
    pool[(uint64_t)(NUM_PAGES - 1) * 37440 + 100] ^= 1;
    return rc;
}

/* A kernel that writes a placed page of a sparse pool changed an input: the arena's check
 * compares the pool's extents with the case's own bytes, isolated or not. */
static void test_runner_pool_write_is_input_modified(void **state)
{
    (void)state;
    assert_ok(attest_candidate_resolve("cpu-mla-decode", &correct_mla));
    const attest_candidate cand = {.abi_version = ATTEST_CANDIDATE_ABI_VERSION,
                                   .struct_size = sizeof(attest_candidate),
                                   .name = "writes-far-page",
                                   .description = "test candidate",
                                   .kernel = ATTEST_KERNEL_MLA_DECODE,
                                   .run = run_writes_far_page};
    attest_case c;
    build_owned(&c);
    char want[96];
    snprintf(want, sizeof want, "input 'cache_bytes' modified: 1 bytes changed, first at byte %llu",
             (unsigned long long)(NUM_PAGES - 1) * 37440 + 100);
    for (int isolate = 0; isolate <= 1; isolate++) {
        attest_runner_options o = attest_runner_defaults();
        o.reference = attest_ref_simulated;
        o.isolate = isolate;
        attest_runner *r = NULL;
        assert_ok(attest_runner_create(&cand, &o, &r));
        attest_case_record rec;
        assert_ok(attest_runner_judge(r, &c, &rec, NULL));
        attest_runner_destroy(r);
        if (rec.verdict != ATTEST_VERDICT_INPUT_MODIFIED) print_message("%s\n", rec.message);
        assert_int_equal(rec.verdict, ATTEST_VERDICT_INPUT_MODIFIED);
        assert_non_null(strstr(rec.message, want));
        /* restored before the second run: not also nondeterministic */
        assert_int_equal(rec.integrity_flags, ATTEST_INTEGRITY_INPUT_MODIFIED);
    }
    attest_case_free(&c);
}

/* Reads one byte of page 65534 (placed by build_owned's case, not by the {0, 1} one): always, or
 * only when an index of the case reaches that page. */
static volatile uint8_t sink_byte;
static int read_always;
static int run_reads_page_65534(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    int reached = read_always;
    for (int k = 0; k < TOPK; k++) reached |= args->u.mla.indices[k] / 64 == 65534;
    if (reached) sink_byte = args->u.mla.cache[(uint64_t)65534 * 37440 + 64];
    return 0;
}

/* In a child: an in-process runner of the page-65534 reader judges `first`, then `second`.
 * Returns the signal that ended the child, or 0 when both judgements returned. */
static int in_process_pair(const attest_case *first, const attest_case *second, int always)
{
    read_always = always;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        const attest_candidate cand = {.abi_version = ATTEST_CANDIDATE_ABI_VERSION,
                                       .struct_size = sizeof(attest_candidate),
                                       .name = "reads-page-65534",
                                       .description = "test candidate",
                                       .kernel = ATTEST_KERNEL_MLA_DECODE,
                                       .run = run_reads_page_65534};
        attest_runner_options o = attest_runner_defaults();
        o.reference = attest_ref_simulated;
        o.isolate = 0;
        o.reruns = 2;
        attest_runner *r = NULL;
        attest_case_record rec;
        if (attest_runner_create(&cand, &o, &r) != ATTEST_OK) _exit(3);
        if (attest_runner_judge(r, first, &rec, NULL) != ATTEST_OK) _exit(4);
        if (attest_runner_judge(r, second, &rec, NULL) != ATTEST_OK) _exit(5);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) return WTERMSIG(status);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    return 0;
}

/* An in-process runner keeps the unplaced pages protected between cases laid out alike: a page
 * the last case placed and this one does not reach faults; a page this one reaches and the last
 * did not is readable. */
static void test_in_process_protection_follows_the_case(void **state)
{
    (void)state;
    attest_case all, near;
    build_owned(&all);
    const int32_t near_pages[] = {0, 1};
    build_owned_pages(&near, near_pages, 2);
    assert_int_equal(in_process_pair(&all, &near, 1), SIGSEGV);
    assert_int_equal(in_process_pair(&near, &all, 0), 0);
    assert_int_equal(in_process_pair(&all, &all, 1), 0);
    assert_int_equal(in_process_pair(&near, &near, 1), SIGSEGV);
    attest_case_free(&all);
    attest_case_free(&near);
}

/* An access outside the placed pages faults in the worker: CRASH, naming the page when the
 * address lies in the pool. */
static void test_runner_unplaced_access_is_a_crash(void **state)
{
    (void)state;
#ifdef ATTEST_WITH_MUTANTS
    attest_case c;
    build_owned(&c);
    char msg[256];
    const attest_verdict v = judge_in_runner(&c, "mutant-mla-int32-offsets", 1, msg, sizeof msg);
    assert_true(v == ATTEST_VERDICT_CRASH || v == ATTEST_VERDICT_MISMATCH);
    /* Offsets past 2^31 wrap negative: into the arena's guard below the pool, named, in every
     * process alike (nothing else the process maps can be there). */
    assert_int_equal(v, ATTEST_VERDICT_CRASH);
    assert_non_null(strstr(msg, "bytes before sparse pool 'cache_bytes'"));
    attest_case_free(&c);
    /* A kernel that steps pages by their payload (584 * 64) instead of the stride (37440)
     * reads 4 MB short at the far end: inside the pool, on a page no index reaches. */
    attest_case d;
    build_owned(&d);
    char why[256];
    assert_int_equal(judge_in_runner(&d, "mutant-mla-payload-stride", 1, why, sizeof why),
                     ATTEST_VERDICT_CRASH);
    assert_non_null(strstr(why, "unplaced page"));
    assert_non_null(strstr(why, "past 2^31"));
    attest_case_free(&d);
#endif
}

/* A case file stores only the reached pages (cache_pages beside them) and reads back into a
 * sparse case with the same bytes, which the runner judges the same way. */
static void test_casefile_round_trip(void **state)
{
    (void)state;
    attest_case c;
    build_owned(&c);
    char path[] = "/tmp/attest_sparse_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_ok(attest_casefile_save(path, NULL, &c, NULL));
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(sb.st_size < 1 << 20); /* 4 pages of 37 KB, not 2.45 GB */
    attest_case back;
    assert_ok(attest_casefile_load(path, NULL, &back));
    assert_int_equal(back.sparse_pools, ATTEST_POOL_MAIN);
    assert_int_equal(back.params.mla.num_pages, NUM_PAGES);
    const uint8_t *a = attest_case_tensor(&c, "cache_bytes")->data;
    const uint8_t *b = attest_case_tensor(&back, "cache_bytes")->data;
    const uint64_t stride = (uint64_t)c.params.mla.page_stride;
    for (size_t u = 0; u < sizeof used_pages / sizeof used_pages[0]; u++)
        assert_memory_equal(a + used_pages[u] * stride, b + used_pages[u] * stride, stride);
    assert_memory_equal(attest_case_tensor(&c, "indices")->data,
                        attest_case_tensor(&back, "indices")->data, TOPK * sizeof(int32_t));
    assert_int_equal(judge_in_runner(&back, "cpu-mla-decode", 1, NULL, 0), ATTEST_VERDICT_OK);
    attest_case_free(&back);

    unlink(path);
    attest_case_free(&c);
}

/* The reference of a case into freshly allocated buffers (one per output; NULL-terminated). */
static void reference_of(const attest_case *c, double **refs, size_t *counts)
{
    attest_bound_model models[4];
    size_t n = 0;
    for (size_t i = 0; i < c->num_tensors; i++)
        if (c->tensors[i].role == ATTEST_ROLE_OUTPUT) {
            counts[n] = attest_tensor_count(&c->tensors[i]);
            refs[n] = calloc(counts[n] ? counts[n] : 1, sizeof(double));
            assert_non_null(refs[n]);
            models[n] = attest_bound_model_fp32();
            n++;
        }
    refs[n] = NULL;
    assert_ok(attest_ref_simulated(c, models, refs, NULL));
}

/* The largest byte offset past a reached page's start in the case's pools. */
static uint64_t reached_end(const attest_case *c)
{
    uint64_t end = 0;
    for (unsigned pool = ATTEST_POOL_MAIN; pool <= ATTEST_POOL_EXTRA; pool <<= 1) {
        uint64_t stride = 0;
        if (attest_case_pool_tensor(c, pool, &stride, NULL) < 0) continue;
        int32_t *pages = NULL;
        size_t n = 0;
        assert_ok(attest_case_pool_pages(c, pool, &pages, &n));
        const uint64_t last = n ? ((uint64_t)pages[n - 1] + 1) * stride : 0;
        if (last > end) end = last;
        free(pages);
    }
    return end;
}

/* Whether an mla case reads (through an index below topk_length) a page that starts past 2^31
 * bytes: where a page offset in 32-bit arithmetic wraps. */
static int mla_reads_past_2g(const attest_case *c)
{
    const attest_mla_params *p = &c->params.mla;
    for (int e = 0; e <= p->has_extra; e++) {
        const attest_tensor *t = attest_case_tensor_const(c, e ? "extra_indices" : "indices");
        const attest_tensor *tl =
            attest_case_tensor_const(c, e ? "extra_topk_length" : "topk_length");
        const int64_t K = t->shape[2], per_req = t->shape[1] * K;
        const int32_t P = e ? p->extra_page_size : p->page_size;
        const uint64_t stride = (uint64_t)(e ? p->extra_page_stride : p->page_stride);
        const int32_t *idx = t->data;
        for (size_t i = 0; i < attest_tensor_count(t); i++) {
            const int64_t limit = tl ? ((const int32_t *)tl->data)[(int64_t)i / per_req] : K;
            if (idx[i] >= 0 && (int64_t)i % K < limit &&
                (uint64_t)(idx[i] / P) * stride >= (UINT64_C(1) << 31))
                return 1;
        }
    }
    return 0;
}

/* Generated pools past 2^31 (high_pools): the same seed drawn with and without the move has the
 * same reference, bit for bit (pages are renamed, never changed); the correct kernels pass,
 * mutant-mla-int32-offsets fails on every case that reaches past 2^31, a case file keeps the
 * case, and the whole run writes a few MB. */
static void test_generated_high_pools(void **state)
{
    (void)state;
    const long before = rss_kib();
    for (int k = 0; k < 2; k++) {
        const attest_kernel kernel = k ? ATTEST_KERNEL_MLA_DECODE : ATTEST_KERNEL_INDEXER;
        attest_gen_options high =
            k == 0 ? attest_gen_defaults(kernel) : attest_gen_fuzz_defaults(kernel);
        attest_gen_options flat = high;
        high.high_pools = 1000;
        flat.high_pools = 0;
        int past = 0, reads = 0, mutant_failed = 0;
        const int seeds = 24;
        for (int i = 0; i < seeds; i++) {
            const uint64_t seed = attest_case_seed(77, (uint64_t)i);
            attest_case hc, fc;
            assert_ok(attest_generate_case(&high, seed, &hc));
            assert_ok(attest_generate_case(&flat, seed, &fc));
            assert_ok(attest_case_check_inputs(&hc));
            assert_int_equal(hc.sparse_pools & ATTEST_POOL_MAIN, ATTEST_POOL_MAIN);
            assert_int_equal(fc.sparse_pools, 0);
            const int reaches = reached_end(&hc) > (UINT64_C(1) << 31);
            past += reaches;
            double *hr[5], *fr[5];
            size_t hn[4], fn[4];
            reference_of(&hc, hr, hn);
            reference_of(&fc, fr, fn);
            for (int o = 0; hr[o]; o++) {
                assert_int_equal(hn[o], fn[o]);
                assert_memory_equal(hr[o], fr[o], hn[o] * sizeof(double));
                free(hr[o]);
                free(fr[o]);
            }
            const char *correct = k ? "cpu-mla-decode" : "cpu-indexer";
            char msg[256];
            const attest_verdict v = judge_in_runner(&hc, correct, 1, msg, sizeof msg);
            if (v != ATTEST_VERDICT_OK) print_message("seed %d: %s\n", i, msg);
            assert_int_equal(v, ATTEST_VERDICT_OK);
#ifdef ATTEST_WITH_MUTANTS
            if (k == 1 && mla_reads_past_2g(&hc)) {
                reads++;
                const int f = judge_in_runner(&hc, "mutant-mla-int32-offsets", 1, NULL, 0) !=
                              ATTEST_VERDICT_OK;
                if (!f) {
                    char ps[1024];
                    assert_ok(attest_case_param_string(&hc, ps, sizeof ps));
                    print_message("passes: seed %d %s\n", i, ps);
                }
                mutant_failed += f;
            }
#endif
            if (i == 0) { /* a case file keeps it: the same reference again */
                char path[] = "/tmp/attest_sparse_gen_XXXXXX";
                int fd = mkstemp(path);
                assert_true(fd >= 0);
                close(fd);
                assert_ok(attest_casefile_save(path, NULL, &hc, NULL));
                attest_case back;
                assert_ok(attest_casefile_load(path, NULL, &back));
                unlink(path);
                assert_int_equal(back.sparse_pools, hc.sparse_pools);
                double *br[5];
                size_t bn[4];
                reference_of(&back, br, bn);
                reference_of(&fc, fr, fn);
                for (int o = 0; br[o]; o++) {
                    assert_memory_equal(br[o], fr[o], bn[o] * sizeof(double));
                    free(br[o]);
                    free(fr[o]);
                }
                attest_case_free(&back);
            }
            attest_case_free(&hc);
            attest_case_free(&fc);
        }
        print_message("%s: %d of %d moved cases reach past 2^31, %d read there; the int32 "
                      "mutant fails %d\n",
                      attest_kernel_name(kernel), past, seeds, reads, mutant_failed);
        assert_true(past >= seeds / 2);
#ifdef ATTEST_WITH_MUTANTS
        /* A case that reads past 2^31 reads a wrapped address: a fault, or other bytes. */
        if (k == 1) assert_int_equal(mutant_failed, reads);
        if (k == 1) assert_true(reads >= seeds / 2);
#endif
    }
    const long after = rss_kib();
    if (before > 0 && after > 0) assert_true(after - before < 64 * 1024);
}

/* --- the device path, through fake device ops (host memory standing in for the device) ------ */

static size_t fake_bytes;
static size_t fake_copied; /* bytes the copies moved, in the process that made them */

static int fake_open(char *msg, size_t cap)
{
    (void)msg;
    (void)cap;
    return 0;
}

/* Reserved like a real device allocation is untouched: only what the mirror copies is written. */
static int fake_alloc(void **p, size_t n)
{
    void *q = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (q == MAP_FAILED) return 1;
    fake_bytes = n;
    *p = q;
    return 0;
}

static void fake_free(void *p)
{
    if (p) munmap(p, fake_bytes);
}

static int fake_copy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
    fake_copied += n;
    return 0;
}

static int fake_sync(void) { return 0; }
static const char *fake_error(void) { return "fake"; }

static const attest_device_ops fake_ops = {
    .struct_size = sizeof(attest_device_ops), .name = "fake", .open = fake_open,
    .alloc = fake_alloc, .free = fake_free, .copy_h2d = fake_copy, .copy_d2h = fake_copy,
    .synchronize = fake_sync, .last_error = fake_error};

/* cpu-mla-decode as a device candidate: its pointers are the fake device's, so it reads what the
 * mirror copied there and nothing else. */
static attest_candidate device_twin(const char *name)
{
    const attest_candidate *cand = NULL;
    assert_ok(attest_candidate_resolve(name, &cand));
    attest_candidate twin = *cand;
    twin.domain = ATTEST_DOMAIN_DEVICE;
    twin.supports = NULL; /* it declines device pointers, which here are host memory */
    return twin;
}

/* The device mirror of a sparse pool copies its placed pages, not its gigabytes: the correct
 * kernel passes on the mirror, in-process (the copies counted here) and isolated. On a device
 * nothing faults outside the placed pages (the mirror's other bytes are whatever the allocation
 * held), so the int32 mutant reads zeros there and is a MISMATCH, not a CRASH. */
static void test_device_mirror(void **state)
{
    (void)state;
    assert_int_equal(attest_register_device_ops(&fake_ops), 0);
    attest_case c;
    build_owned(&c);
    for (int isolate = 0; isolate <= 1; isolate++) {
        attest_candidate twin = device_twin("cpu-mla-decode");
        attest_runner_options o = attest_runner_defaults();
        o.reference = attest_ref_simulated;
        o.isolate = isolate;
        attest_runner *r = NULL;
        assert_ok(attest_runner_create(&twin, &o, &r));
        attest_case_record rec;
        fake_copied = 0;
        assert_ok(attest_runner_judge(r, &c, &rec, NULL));
        if (rec.verdict != ATTEST_VERDICT_OK) print_message("%s\n", rec.message);
        assert_int_equal(rec.verdict, ATTEST_VERDICT_OK);
        /* two runs, each a copy there and back: a few hundred KB, not 2.45 GB */
        if (!isolate) assert_true(fake_copied > 0 && fake_copied < (8u << 20));
        attest_runner_destroy(r);
    }
#ifdef ATTEST_WITH_MUTANTS
    attest_candidate bad = device_twin("mutant-mla-int32-offsets");
    attest_runner_options o = attest_runner_defaults();
    o.reference = attest_ref_simulated;
    attest_runner *r = NULL;
    assert_ok(attest_runner_create(&bad, &o, &r));
    attest_case_record rec;
    assert_ok(attest_runner_judge(r, &c, &rec, NULL));
    assert_int_equal(rec.verdict, ATTEST_VERDICT_MISMATCH);
    attest_runner_destroy(r);
#endif
    attest_case_free(&c);
    assert_int_equal(attest_register_device_ops(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offsets_past_2g),
        cmocka_unit_test(test_runner_places_only_reached_pages),
        cmocka_unit_test(test_runner_unplaced_access_is_a_crash),
        cmocka_unit_test(test_runner_keeps_the_pages_both_cases_reach),
        cmocka_unit_test(test_runner_dense_pages_survive_a_sparse_case),
        cmocka_unit_test(test_runner_page_of_the_last_case_faults),
        cmocka_unit_test(test_runner_pool_write_is_input_modified),
        cmocka_unit_test(test_in_process_protection_follows_the_case),
        cmocka_unit_test(test_casefile_round_trip),
        cmocka_unit_test(test_generated_high_pools),
        cmocka_unit_test(test_device_mirror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
