/* attest show: the summary of a results file again, failures grouped by verdict and gate. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/report.h"
#include "attest/results.h"
#include "commands.h"

static void usage(FILE *f)
{
    fputs("usage: attest show RESULTS.h5 [--per-group N]\n"
          "       attest show BENCH.h5\n"
          "\n"
          "Prints where a campaign came from, its summary, and its failures grouped by verdict and\n"
          "gate, worst first, each with the command that replays it (the checks it ran, --graph\n"
          "or --sanitize, are in its command line and its verdicts). For a bench file (attest\n"
          "bench --out) prints its rows as attest bench did, and the command that wrote them.\n"
          "Exit status: 0 every case passed, 1 a case failed, 2 the file cannot be read.\n"
          "\n"
          "  --per-group N   failing cases shown per group (default 5)\n",
          f);
}

/* A bench file: its rows per candidate, as attest bench printed them. */
static int show_bench(const char *path)
{
    attest_bench_row *rows = NULL;
    size_t n = 0;
    char command[1024];
    if (attest_bench_read(path, &rows, &n, command, sizeof command) != ATTEST_OK)
        return attest_cli_usage_error("show", "%s", attest_last_error());
    printf("bench: %s, %zu rows\n", path, n);
    if (command[0]) printf("  command: %s\n", command);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(rows[i].candidate, rows[i - 1].candidate) != 0) {
            if (rows[i].peak_gbps > 0)
                printf("%s: %d timed runs per shape, peak %.0f GB/s\n", rows[i].candidate,
                       rows[i].result.iters, rows[i].peak_gbps);
            else /* a host candidate benched without --peak-gbps */
                printf("%s: %d timed runs per shape, no peak\n", rows[i].candidate,
                       rows[i].result.iters);
            attest_bench_print_header(stdout);
        }
        attest_bench_print_row(stdout, &rows[i]);
        if (i + 1 == n || strcmp(rows[i].candidate, rows[i + 1].candidate) != 0)
            attest_bench_print_timing(stdout, &rows[i]);
    }
    free(rows);
    return ATTEST_EXIT_OK;
}

static uint64_t judged_rows(const uint64_t *counts, uint64_t unknown)
{
    uint64_t n = unknown;
    for (int v = 0; v < ATTEST_VERDICT_COUNT_; v++) n += counts[v];
    return n;
}

int attest_cmd_show(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"per-group", required_argument, NULL, 'g'},
        {NULL, 0, NULL, 0},
    };
    uint64_t per_group = 5;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", options)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'g':
            if (attest_cli_parse_u64(optarg, &per_group) || per_group == 0 || per_group > 100000)
                return attest_cli_bad_value("show", "per-group", optarg);
            break;
        default: return attest_cli_getopt_error("show", ch, argv);
        }
    }
    if (optind + 1 != argc)
        return attest_cli_usage_error("show", "expected one results file (attest show --help)");
    attest_results_reader *r = NULL;
    /* Read whole in a child first: corrupt HDF5 metadata can crash or hang libhdf5. */
    if (attest_results_probe(argv[optind], 1) != ATTEST_OK) {
        /* Not a results file: a bench file, or the results error stands. */
        char why[512];
        snprintf(why, sizeof why, "%s", attest_last_error());
        if (attest_bench_probe(argv[optind]) == ATTEST_OK) return show_bench(argv[optind]);
        return attest_cli_usage_error("show", "%s", why);
    }
    if (attest_results_open_read(argv[optind], &r) != ATTEST_OK)
        return attest_cli_usage_error("show", "%s", attest_last_error());
    uint64_t counts[ATTEST_VERDICT_COUNT_] = {0}, unknown = 0;
    attest_status st = attest_report_show(stdout, r, (size_t)per_group);
    if (st == ATTEST_OK) st = attest_results_count_verdicts(r, counts, &unknown);
    attest_results_close_read(r);
    if (st != ATTEST_OK) return attest_cli_usage_error("show", "%s", attest_last_error());
    uint64_t failures = unknown;
    for (int v = 0; v < ATTEST_VERDICT_COUNT_; v++)
        if (attest_verdict_is_failure((attest_verdict)v)) failures += counts[v];
    /* Nothing judged is no pass (the rule of run and check). */
    return failures || judged_rows(counts, unknown) == 0 ? ATTEST_EXIT_FAILED
                                                                            : ATTEST_EXIT_OK;
}
