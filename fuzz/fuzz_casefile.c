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
 * sort (hdf5_child.h): every input runs first in a forked child whose crash or hang report (the
 * sanitizer's, or a backtrace in builds without one) is read back. A report whose innermost frame outside
 * the C library and the sanitizer runtime lies in libhdf5 is HDF5's, and the input is skipped
 * (counted, summarized at exit); any other crash, and every input that did not crash, then runs
 * in this process, where libFuzzer sees coverage, crashes, hangs and leaks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "attest/casefile.h"
#include "fuzz_common.h"
#include "hdf5_child.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/attest-fuzz-casefile-%d.h5", (int)getpid());
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
    fuzz_child_outcome outcome = fuzz_child_run("casefile", read_file, path, report, sizeof report);
    if (outcome != FUZZ_CHILD_HDF5_CRASH) read_file(path);
    if (outcome == FUZZ_CHILD_OTHER_CRASH) {
        /* Loading is deterministic: a crash the child had must happen here too. */
        fprintf(stderr, "fuzz casefile: the child crashed, this process did not:\n%s\n", report);
        abort();
    }
    unlink(path);
    return 0;
}
