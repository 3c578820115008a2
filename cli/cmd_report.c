/* attest report: a results file as one self-contained HTML page (html_report.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/files.h"
#include "attest/html_report.h"
#include "attest/results.h"
#include "commands.h"

static void usage(FILE *f)
{
    fputs("usage: attest report RESULTS.h5 --html OUT.html [--max-rows N]\n"
          "\n"
          "Writes the results file as one HTML page that needs nothing else to open: the summary\n"
          "by verdict and gate, the worst cases with their replay commands, an error/tolerance\n"
          "heat map and the cache localization of the worst case, histograms of every metric\n"
          "against its threshold, and the case table. Exit status: 0 written, 2 error.\n"
          "\n"
          "  --html FILE     the page to write (replaced when it exists)\n"
          "  --max-rows N    cases in the table, failing first (default 2000)\n",
          f);
}

int attest_cmd_report(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"html", required_argument, NULL, 'o'},
        {"max-rows", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    uint64_t max_rows = 2000;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, "", options)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'o': out = optarg; break;
        case 'n':
            if (attest_cli_parse_u64(optarg, &max_rows) || max_rows == 0 || max_rows > 10000000)
                return attest_cli_bad_value("report", "max-rows", optarg);
            break;
        default: return attest_cli_getopt_error("report", ch, argv);
        }
    }
    if (optind + 1 != argc)
        return attest_cli_usage_error("report", "expected one results file (attest report --help)");
    if (out == NULL) return attest_cli_usage_error("report", "--html OUT.html is required");
    const char *inputs[] = {argv[optind]};
    const int orc = attest_cli_check_output("report", out, ATTEST_OUTPUT_HTML, 0, inputs, 1);
    if (orc >= 0) return orc;
    attest_results_reader *r = NULL;
    if (attest_results_open_read(argv[optind], &r) != ATTEST_OK)
        return attest_cli_usage_error("report", "%s", attest_last_error());
    /* Written beside the target and renamed: a failure leaves any earlier page as it was. */
    const size_t n = strlen(out) + 5;
    char *tmp = malloc(n);
    FILE *f = NULL;
    if (tmp) {
        snprintf(tmp, n, "%s.tmp", out);
        f = fopen(tmp, "w");
    }
    if (f == NULL) {
        const int e = errno;
        attest_results_close_read(r);
        free(tmp);
        return attest_cli_usage_error("report", "%s: cannot write: %s", out, strerror(e));
    }
    attest_status st = attest_report_html(f, r, (size_t)max_rows);
    if (st != ATTEST_OK && ferror(f)) /* the page's own error does not know the path */
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot write (disk full?): %s", out, strerror(errno));
    attest_results_close_read(r);
    if (fclose(f) != 0 && st == ATTEST_OK)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot write (disk full?): %s", out, strerror(errno));
    if (st == ATTEST_OK && rename(tmp, out) != 0)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot rename into place: %s", out, strerror(errno));
    if (st != ATTEST_OK) (void)remove(tmp);
    free(tmp);
    if (st != ATTEST_OK) return attest_cli_usage_error("report", "%s", attest_last_error());
    printf("wrote %s\n", out);
    return ATTEST_EXIT_OK;
}
