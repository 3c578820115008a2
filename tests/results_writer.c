/* A results-store driver for the crash and h5py tests (tests/results.cmake), and for measuring.
 *
 *   results_writer write PATH [--rows N] [--flush-rows K] [--interval S] [--chunk C]
 *                             [--sleep-us U] [--repros] [--no-close]
 *       appends fixture rows (tests/results_fixture.h) 0, 1, 2, ...; prints "flushed N" each time
 *       the file is known to hold N rows, then "closed N". --rows 0 runs until killed. --repros
 *       stores a generated case as the repro of every failing row.
 *   results_writer check PATH MIN_ROWS
 *       opens PATH with attest's reader and checks every row against the fixture; prints
 *       "ok ROWS state=STATE"; exits 1 on any difference or fewer than MIN_ROWS rows.
 *   results_writer bench PATH N [random]
 *       appends N rows with the default options, closes, prints throughput and sizes. "random"
 *       fills every metric with random values (no run-to-run regularity for gzip to find).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attest/generator.h"
#include "attest/results.h"
#include "results_fixture.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

static int fail(const char *what)
{
    fprintf(stderr, "results_writer: %s: %s\n", what, attest_last_error());
    return 1;
}

static void fixture_provenance(attest_results_provenance *p)
{
    attest_results_provenance_init(p);
    snprintf(p->kernel, sizeof p->kernel, "indexer");
    snprintf(p->candidate, sizeof p->candidate, "cand-0,cand-1,cand-2");
    snprintf(p->policy_name, sizeof p->policy_name, "fixture");
    snprintf(p->policy_hash, sizeof p->policy_hash, "0123456789abcdef");
    snprintf(p->policy_origin, sizeof p->policy_origin, "<fixture>");
    snprintf(p->command_line, sizeof p->command_line, "results_writer write");
    p->seed = 42;
    p->policy_text = "{\"name\": \"fixture\"}";
}

static int cmd_write(int argc, char **argv)
{
    const char *path = argv[2];
    uint64_t rows = 1000;
    long sleep_us = 0;
    int repros = 0, close_it = 1;
    attest_results_options opt = attest_results_defaults();
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--flush-rows") && i + 1 < argc)
            opt.flush_rows = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--interval") && i + 1 < argc)
            opt.flush_interval_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            opt.chunk_rows = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sleep-us") && i + 1 < argc) sleep_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--repros")) repros = 1;
        else if (!strcmp(argv[i], "--no-close")) close_it = 0;
        else {
            fprintf(stderr, "results_writer: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    attest_results_provenance prov;
    fixture_provenance(&prov);
    prov.cases_planned = rows;
    attest_results_writer *w;
    if (attest_results_create(path, &prov, &opt, &w) != ATTEST_OK) return fail("create");
    printf("created\n");
    fflush(stdout);
    attest_gen_options gen = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    uint64_t reported = 0;
    for (uint64_t i = 0; rows == 0 || i < rows; i++) {
        attest_case_record rec;
        fixture_record(i, &rec);
        attest_case c;
        memset(&c, 0, sizeof c);
        int have_case = 0;
        if (repros && attest_verdict_is_failure(rec.verdict)) {
            if (attest_generate_case(&gen, rec.seed, &c) != ATTEST_OK) return fail("generate");
            have_case = 1;
        }
        attest_status st = attest_results_append(w, &rec, have_case ? &c : NULL, NULL);
        if (have_case) attest_case_free(&c);
        if (st != ATTEST_OK) return fail("append");
        if (attest_results_rows_flushed(w) != reported) {
            reported = attest_results_rows_flushed(w);
            printf("flushed %llu\n", (unsigned long long)reported);
            fflush(stdout);
        }
        if (sleep_us > 0) usleep((useconds_t)sleep_us);
    }
    if (!close_it) _exit(0);
    if (attest_results_close(w, ATTEST_RESULTS_COMPLETE) != ATTEST_OK) return fail("close");
    printf("closed %llu\n", (unsigned long long)rows);
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    if (argc < 4) return 2;
    const char *path = argv[2];
    uint64_t min_rows = strtoull(argv[3], NULL, 10);
    attest_results_reader *r;
    if (attest_results_open_read(path, &r) != ATTEST_OK) return fail("open");
    uint64_t n = attest_results_num_cases(r);
    int bad = 0;
    uint64_t expect_counts[ATTEST_VERDICT_COUNT_] = {0};
    for (uint64_t i = 0; i < n && bad < 5; i++) {
        attest_case_record got, want;
        int has_repro = 0;
        if (attest_results_read_row(r, i, &got, &has_repro) != ATTEST_OK) {
            attest_results_close_read(r);
            return fail("read");
        }
        fixture_record(i, &want);
        expect_counts[want.verdict]++;
        if (memcmp(&got, &want, sizeof got) != 0) {
            fprintf(stderr, "results_writer: row %llu differs from the fixture\n",
                    (unsigned long long)i);
            bad++;
        }
    }
    uint64_t counts[ATTEST_VERDICT_COUNT_], unknown = 1;
    if (attest_results_count_verdicts(r, counts, &unknown) != ATTEST_OK) {
        attest_results_close_read(r);
        return fail("count");
    }
    if (unknown != 0 || memcmp(counts, expect_counts, sizeof counts) != 0) {
        fprintf(stderr, "results_writer: verdict counts differ\n");
        bad++;
    }
    if (n < min_rows) {
        fprintf(stderr, "results_writer: %llu rows, expected at least %llu\n",
                (unsigned long long)n, (unsigned long long)min_rows);
        bad++;
    }
    printf("ok %llu state=%s\n", (unsigned long long)n, attest_results_provenance_of(r)->state);
    attest_results_close_read(r);
    return bad ? 1 : 0;
}

static int cmd_bench(int argc, char **argv)
{
    if (argc < 4) return 2;
    const char *path = argv[2];
    uint64_t rows = strtoull(argv[3], NULL, 10);
    int random_metrics = argc > 4 && !strcmp(argv[4], "random");
    attest_results_provenance prov;
    fixture_provenance(&prov);
    attest_results_writer *w;
    if (attest_results_create(path, &prov, NULL, &w) != ATTEST_OK) return fail("create");
    double t0 = now();
    uint64_t x = 88172645463325252ull;
    for (uint64_t i = 0; i < rows; i++) {
        attest_case_record rec;
        fixture_record(i, &rec);
        for (int k = 0; random_metrics && k < 2; k++) {
            attest_tensor_metrics *m = &rec.outputs[k];
            double *d[] = {&m->element_fail_fraction, &m->worst_ref, &m->worst_cand, &m->max_abs,
                           &m->max_rel, &m->cos_diff, &m->nmse, &m->atol_effective};
            for (size_t j = 0; j < sizeof d / sizeof d[0]; j++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
                *d[j] = (double)(x >> 11) * 0x1.0p-53;
            }
            m->count = x % 100000;
            m->worst.index[3] = (int64_t)(x % 512);
        }
        if (random_metrics) {
            rec.run_seconds = (double)(x % 1000) * 1e-6;
            rec.seed = x;
        }
        if (attest_results_append(w, &rec, NULL, NULL) != ATTEST_OK) return fail("append");
    }
    if (attest_results_flush(w) != ATTEST_OK) return fail("flush");
    double t1 = now();
    char rows_file[4200];
    snprintf(rows_file, sizeof rows_file, "%s.rows", path);
    long long live = file_size(path) + file_size(rows_file);
    if (attest_results_close(w, ATTEST_RESULTS_COMPLETE) != ATTEST_OK) return fail("close");
    double t2 = now();
    long long final = file_size(path);
    printf("rows %llu: append+flush %.3f s (%.0f rows/s), close %.3f s\n",
           (unsigned long long)rows, t1 - t0, (double)rows / (t1 - t0), t2 - t1);
    printf("live file + rows %lld bytes (%.0f per 1000 rows); final file %lld bytes (%.0f per 1000 rows)\n",
           live, 1000.0 * (double)live / (double)rows, final, 1000.0 * (double)final / (double)rows);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "write")) return cmd_write(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "check")) return cmd_check(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "bench")) return cmd_bench(argc, argv);
    fprintf(stderr, "usage: results_writer write|check|bench PATH ...\n");
    return 2;
}
