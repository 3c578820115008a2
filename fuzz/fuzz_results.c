/* Fuzz target: the results-file reader on arbitrary bytes, the way `attest show` and `attest
 * replay` use it: probe the file in a child (attest_results_probe), and only when the probe
 * passed open it here, read every row, look cases up and locate their repros. Whatever the
 * bytes, the probe must end in ATTEST_OK or a clean error; after a probe that passed, every read
 * here must pass too (the probe's promise: reading is deterministic), every row must hold a
 * known verdict, and nothing may crash, leak or read out of bounds.
 *
 * Input layout, so a finding replays from its file alone: the last 4 bytes (little-endian) are
 * n, the length of the raw rows file; the n bytes before them are written as the results file's
 * sibling "<name>.rows" (a killed campaign's layout) and the rest as the results file itself.
 * n = 0 (or n too large) means no sibling. Seeds: fuzz/corpus/results (make_results_seeds.py).
 *
 * The probe's child turns any crash into a clean error, one in attest's own reader too, and under
 * libFuzzer it inherits the crash handler (a crash-* file per HDF5 crash while the fuzzer runs
 * on). So every input first runs the probe's reads and this target's in a child of the target's
 * own whose crash report is sorted by its innermost frame (hdf5_child.h): HDF5's crashes and
 * hangs are skipped and summarized, any other crash is a finding, rerun here and aborted on. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "attest/results.h"
#include "hdf5_child.h"

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libhdf5\n"; }
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return "print_suppressions=0"; }

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size > 0 && fwrite(data, 1, size, f) != size) abort();
    if (fclose(f) != 0) abort();
}

static void read_everything(const char *path)
{
    attest_results_reader *r = NULL;
    if (attest_results_open_read(path, &r) != ATTEST_OK) {
        fprintf(stderr, "fuzz results: the probe passed, the open did not: %s\n",
                attest_last_error());
        abort();
    }
    const uint64_t n = attest_results_num_cases(r);
    uint64_t counts[ATTEST_VERDICT_COUNT_], unknown = 0;
    if (attest_results_count_verdicts(r, counts, &unknown) != ATTEST_OK) {
        fprintf(stderr, "fuzz results: the probe read every row, this process could not: %s\n",
                attest_last_error());
        abort();
    }
    uint64_t total = unknown;
    for (int v = 0; v < ATTEST_VERDICT_COUNT_; v++) total += counts[v];
    if (unknown != 0 || total != n) abort(); /* a row of no known verdict passed validation */
    attest_results_rewind(r);
    for (uint64_t i = 0; i < n && i < 64; i++) {
        attest_case_record rec;
        int has_repro = 0, done = 0;
        if (attest_results_next(r, &rec, &has_repro, &done) != ATTEST_OK || done) abort();
        if (rec.num_outputs < 0 || rec.num_outputs > ATTEST_RECORD_MAX_OUTPUTS) abort();
        if (memchr(rec.message, '\0', sizeof rec.message) == NULL) abort();
        attest_case_record found;
        attest_status st = attest_results_find_case(r, rec.case_id, &found, NULL);
        if (st != ATTEST_OK) abort(); /* the row was just read */
        char where[4096], group[64];
        st = attest_results_repro_location(r, rec.case_id, where, sizeof where, group,
                                           sizeof group);
        (void)st; /* no repro is a clean error */
    }
    attest_results_close_read(r);
}

/* What the probe's child reads (open, every row's verdict), then, when that passed, what
 * read_everything reads: the child's side of an input. */
static void read_in_child(const char *path)
{
    attest_results_reader *r = NULL;
    if (attest_results_open_read(path, &r) != ATTEST_OK) return;
    uint64_t counts[ATTEST_VERDICT_COUNT_], unknown = 0;
    const attest_status st = attest_results_count_verdicts(r, counts, &unknown);
    attest_results_close_read(r);
    if (st == ATTEST_OK) read_everything(path);
}

/* Some corrupt heaps make HDF5 1.10 loop forever (fuzz_casefile.c): the probe's child then
 * ends at its deadline, which must come well before libFuzzer's -timeout. */
__attribute__((constructor)) static void short_probe_deadline(void)
{
    setenv("ATTEST_PROBE_TIMEOUT", "3", 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/attest-fuzz-results-%d", (int)getpid());
        if (mkdir(dir, 0700) != 0 && access(dir, W_OK) != 0) abort();
        (void)H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* see fuzz_casefile.c */
    }
    char path[128], rows[160];
    snprintf(path, sizeof path, "%s/r.h5", dir);
    snprintf(rows, sizeof rows, "%s.rows", path);
    size_t rows_len = 0;
    if (size >= 4) {
        rows_len = (size_t)data[size - 4] | (size_t)data[size - 3] << 8 |
                   (size_t)data[size - 2] << 16 | (size_t)data[size - 1] << 24;
        if (rows_len > size - 4) rows_len = 0;
    }
    const size_t body = size >= 4 ? size - 4 - rows_len : size;
    write_file(path, data, body);
    if (rows_len) write_file(rows, data + body, rows_len);
    else unlink(rows);
    static char report[1 << 16];
    const fuzz_child_outcome outcome =
        fuzz_child_run("results", read_in_child, path, report, sizeof report);
    if (outcome == FUZZ_CHILD_HDF5_CRASH) {
        unlink(path);
        unlink(rows);
        return 0;
    }
    const attest_status probed = attest_results_probe(path, 1);
    /* The bad-* corpus files each hold one damage the reader must refuse (make_results_seeds.py):
     * their ctest sets this, and a file that passes is a finding. */
    const char *expect_error = getenv("ATTEST_FUZZ_EXPECT_ERROR");
    if (probed == ATTEST_OK && expect_error && expect_error[0] == '1') {
        fprintf(stderr, "fuzz results: a damaged file was accepted\n");
        abort();
    }
    if (probed == ATTEST_OK) read_everything(path);
    if (outcome == FUZZ_CHILD_OTHER_CRASH) {
        /* Not HDF5's: attest's reader (or this target) crashed on these bytes, which the probe
         * here would have turned into a clean error. */
        fprintf(stderr, "fuzz results: the child crashed outside HDF5:\n%s\n", report);
        abort();
    }
    unlink(path);
    unlink(rows);
    return 0;
}
