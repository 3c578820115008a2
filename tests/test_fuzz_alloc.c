/* A kernel fuzz target allocates nothing per exec once it has seen the case (issue 10): the
 * decoder copies a cached generated case into reused storage, the features keep their scratch,
 * and so do the runner, the built-in candidates, the references and the comparator. Every
 * malloc, calloc, realloc and posix_memalign of attest's code in this binary goes through the
 * counters below (-Wl,--wrap, tests/fuzz_engine.cmake); the libraries outside it (libc, HDF5)
 * are not counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz_common.h"

static int counting;
static unsigned long allocations;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);

void *__wrap_malloc(size_t n)
{
    allocations += counting;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size)
{
    allocations += counting;
    return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n)
{
    allocations += counting;
    return __real_realloc(p, n);
}
int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    allocations += counting;
    return __real_posix_memalign(p, align, n);
}

/* The target's entry point is defined by each fuzz_<target>.c; this binary calls
 * fuzz_kernel_input directly. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)data;
    (void)size;
    return 0;
}

static unsigned long allocations_of(attest_kernel kernel, const uint8_t *data, size_t n)
{
    const char *target = kernel == ATTEST_KERNEL_INDEXER ? "indexer" : "mla_decode";
    const char *cand = kernel == ATTEST_KERNEL_INDEXER ? "cpu-indexer" : "cpu-mla-decode";
    allocations = 0;
    counting = 1;
    fuzz_kernel_input(kernel, target, cand, data, n);
    counting = 0;
    return allocations;
}

/* Inputs of one tail (one generated case), heads written by the structure-aware mutator: once
 * each has run, decoding and the features allocate nothing. A process runs one kernel's target (the candidate and the
 * target's state are per process): argv[1] names it, the indexer by default. */
static attest_kernel kernel;

static void test_target_allocates_nothing_per_exec(void **state)
{
    (void)state;
    enum { MAX = 512, INPUTS = 40 };
    static uint8_t in[INPUTS][MAX];
    size_t len[INPUTS];
    uint8_t buf[MAX];
    size_t n = fuzz_mutate(kernel, buf, 0, MAX, 1, NULL); /* a fresh tail */
    buf[n - FUZZ_TAIL_BYTES] &= (uint8_t)~0x10; /* a dense pool (knobs bits 3-4: a sparse one) */
    memcpy(in[0], buf, n);
    len[0] = n;
    int made = 1;
    for (unsigned round = 1; made < INPUTS && round < 4000; round++) {
        memcpy(buf, in[made - 1], len[made - 1]);
        n = fuzz_mutate(kernel, buf, len[made - 1], MAX, round * 2654435761u, NULL);
        /* A new tail is a new case, generated (and allocated) once: not what this checks. */
        if (memcmp(buf + n - FUZZ_TAIL_BYTES, in[0] + len[0] - FUZZ_TAIL_BYTES, FUZZ_TAIL_BYTES))
            continue;
        memcpy(in[made], buf, n);
        len[made++] = n;
    }
    assert_int_equal(made, INPUTS);
    /* The first pass sets up the runner, the arena and the scratch of every path. */
    for (int i = 0; i < made; i++) (void)allocations_of(kernel, in[i], len[i]);
    /* A whole warm exec allocates nothing either: the built-in candidate's compute scratch
     * (kernels/cpu), the float64 indexer reference's rows (references/indexer.c) and the
     * comparator's top-k matching (judge/compare.c) keep theirs per thread, the runner its
     * reference outputs. */
    for (int i = 0; i < made; i++) {
        const unsigned long n_alloc = allocations_of(kernel, in[i], len[i]);
        if (n_alloc) fprintf(stderr, "input %d: a whole exec allocates %lu blocks\n", i, n_alloc);
        assert_int_equal(n_alloc, 0);
    }
    /* The fuzz layer alone (decoding into the workspace, the features): nothing. */
    static fuzz_workspace ws;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < made; i++) {
            attest_case c;
            int valid = 0;
            uint8_t hits[FUZZ_MAX_FEATURES];
            allocations = 0;
            counting = pass;
            assert_int_equal(fuzz_decode_reuse(&ws, kernel, in[i], len[i], &c, &valid), ATTEST_OK);
            if (valid) fuzz_case_features(&c, hits);
            counting = 0;
            assert_int_equal(allocations, 0);
        }
    fuzz_workspace_free(&ws);
}

int main(int argc, char **argv)
{
    kernel = ATTEST_KERNEL_INDEXER;
    if (argc > 2 || (argc == 2 && (attest_kernel_from_name(argv[1], &kernel) != ATTEST_OK ||
                                   fuzz_target_of(kernel) == NULL))) {
        fprintf(stderr, "usage: test_fuzz_alloc [indexer|mla-decode]\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_allocates_nothing_per_exec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
