/* attest campaign: the main job on an embedded default, needing no GPU: the built-in CPU
 * candidates against the references on generated cases of both kernel families, one results
 * file, and the summary. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "attest/registry.h"
#include "commands.h"
#include "engine.h"

#define DEFAULT_CASES_PER_KERNEL 1500
#define DEFAULT_OUT "attest-campaign.h5"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: attest campaign [--cases N] [--seed S] [--out FILE] [--quiet]\n"
            "\n"
            "Runs the embedded default campaign: cpu-indexer on N indexer cases and\n"
            "cpu-mla-decode on N mla-decode cases (default N = %d each), isolated, 2 runs per\n"
            "case, under the embedded policy; writes every result to FILE (default %s)\n"
            "and prints the summary. Exit status: 0 all passed, 1 a case failed, 2 error.\n",
            DEFAULT_CASES_PER_KERNEL, DEFAULT_OUT);
}

int attest_cmd_campaign(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'}, {"cases", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'}, {"out", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'}, {NULL, 0, NULL, 0},
    };
    char command_line[2048]; /* taken before getopt_long permutes argv */
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    uint64_t cases = DEFAULT_CASES_PER_KERNEL, seed = 1;
    const char *out = DEFAULT_OUT;
    int quiet = 0;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'o': out = optarg; break;
        case 'q': quiet = 1; break;
        case 'n':
            if (attest_cli_parse_u64(optarg, &cases) || cases == 0)
                return attest_cli_bad_value("campaign", "cases", optarg);
            break;
        case 's':
            if (attest_cli_parse_u64(optarg, &seed))
                return attest_cli_bad_value("campaign", "seed", optarg);
            break;
        default: return attest_cli_getopt_error("campaign", ch, argv);
        }
    }
    if (optind != argc)
        return attest_cli_usage_error("campaign", "unexpected argument '%s'", argv[optind]);

    static const char *const names[] = {"cpu-indexer", "cpu-mla-decode"};
    attest_job jobs[2];
    memset(jobs, 0, sizeof jobs);
    for (int j = 0; j < 2; j++) {
        if (attest_candidate_resolve(names[j], &jobs[j].candidate) != ATTEST_OK)
            return attest_cli_usage_error("campaign", "%s", attest_last_error());
        jobs[j].candidate_spec = names[j];
        jobs[j].gen = attest_gen_defaults(jobs[j].candidate->kernel);
        jobs[j].cases = cases;
        jobs[j].seed = seed;
    }
    attest_engine_options opt = attest_engine_defaults();
    opt.out_path = out;
    opt.progress = !quiet && attest_cli_interactive();
    opt.command_line = command_line;
    printf("attest campaign: %s and %s, %" PRIu64 " cases each, seed %" PRIu64 ", results in %s\n",
           names[0], names[1], cases, seed, out);
    fflush(stdout);
    attest_engine_totals totals;
    if (attest_engine_run(jobs, 2, &opt, stdout, &totals) != ATTEST_OK)
        return attest_cli_usage_error("campaign", "%s", attest_last_error());
    attest_report_summary(stdout, &totals.summary, out, totals.seconds);
    return totals.failures || totals.interrupted ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
}
