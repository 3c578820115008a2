/* attest campaign: the main job on an embedded default, needing no GPU: the built-in CPU
 * candidates against the references on generated cases of both kernel families, one results
 * file, and the summary. --candidate points the same job at the user's own kernels. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/files.h"
#include "attest/registry.h"
#include "baseline.h"
#include "commands.h"
#include "save_failures.h"
#include "attest/campaign.h"
#include "attest/gen_options.h"

#define DEFAULT_CASES_PER_KERNEL 1500
#define DEFAULT_OUT "attest-campaign.h5"

#define MAX_JOBS 16
/* --jobs left out: one worker process per online core for host candidates (one per visible GPU
 * with a device candidate), at most this many (each holds a runner, an arena and an isolated
 * candidate process). */
#define MAX_DEFAULT_WORKERS 16

static void usage(FILE *f)
{
    fprintf(f,
            "usage: attest campaign [--candidate SPEC]... [--kernel K] [--cases N] [--seed S]\n"
            "                       [--out FILE] [--force] [--jobs N] [--quiet]\n"
            "                       [--save-failures DIR [--save-passing]] [generator bounds]\n"
            "\n"
            "Runs the main job: by default the embedded campaign, cpu-indexer on N indexer cases\n"
            "and cpu-mla-decode on N mla-decode cases (default N = %d each), isolated, 2 runs per\n"
            "case, under the embedded policy; writes every result to FILE (default %s, or\n"
            "attest-campaign-2.h5, -3, ... when an earlier campaign has it) and prints the\n"
            "summary. Exit status: 0 all passed, 1 a case failed or none was judged, 2 error,\n"
            "130 stopped by SIGINT.\n"
            "\n"
            "  --candidate SPEC  run this candidate (built-in name or path/lib.so:NAME) instead of\n"
            "                    the built-in ones; repeat for several (at most %d)\n"
            "  --kernel K        only the jobs of kernel K (indexer or mla-decode)\n"
            "  --cases N         cases per candidate\n"
            "  --seed S          campaign seed (default 1)\n"
            "  --jobs N          judge the cases in N worker processes (same results, same order;\n"
            "                    default: one per online core, at most %d, when every candidate\n"
            "                    runs on the host; one per visible GPU with a device candidate)\n"
            "  --junit FILE      also write a JUnit XML report (one testcase per case)\n"
            "  --json FILE       also write the summary as JSON\n"
            "  --force           replace an earlier results file at --out (nothing else)\n"
            "  --save-failures DIR  each failing case as DIR/<kernel>-<candidate>-SEED.h5 with the\n"
            "                    candidate's first-run outputs as recorded outputs, never\n"
            "                    replacing a file: attest check FILE --recorded judges them again\n"
            "                    without the candidate (docs/gpu.md); DIR is made when missing\n"
            "  --save-passing    with --save-failures: save passing cases too\n"
            "  --baseline OLD    old vs new: the one --candidate and OLD on the same cases, as\n"
            "                    attest run --baseline (docs/old-vs-new.md), with this verb's\n"
            "                    defaults for --cases and --out; --jobs, --junit and --json\n"
            "                    apply\n"
            "generator bounds (applied to every job; --layout to mla-decode jobs only):\n"
            ATTEST_CLI_GEN_USAGE,
            DEFAULT_CASES_PER_KERNEL, DEFAULT_OUT, MAX_JOBS, MAX_DEFAULT_WORKERS);
}

/* campaign --baseline: the pair job of attest run --baseline, under the campaign's defaults
 * (cases and results file) where the command line leaves them out. */
static int campaign_baseline(int argc, char **argv)
{
    int has_cases = 0, has_out = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        has_cases |= !strncmp(a, "--cases", 7);
        has_out |= !strncmp(a, "--out", 5);
    }
    /* args[0] is the program: attest_cmd_run_baseline reads argv[-1] for its command line. */
    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args) return attest_cli_usage_error("campaign", "out of memory");
    char cases[32];
    snprintf(cases, sizeof cases, "%d", DEFAULT_CASES_PER_KERNEL);
    int n = 1;
    args[0] = argv[-1];
    for (int i = 0; i < argc; i++) args[n++] = argv[i];
    if (!has_cases) {
        args[n++] = "--cases";
        args[n++] = cases;
    }
    char out[256];
    if (!has_out) {
        args[n++] = "--out";
        args[n++] = (char *)attest_cli_default_results(DEFAULT_OUT, out, sizeof out);
    }
    args[n++] = "--as-verb";
    args[n++] = "campaign";
    const int rc = attest_cmd_run_baseline(n - 1, args + 1);
    free(args);
    return rc;
}

int attest_cmd_campaign(int argc, char **argv)
{
    if (attest_run_wants_baseline(argc, argv)) return campaign_baseline(argc, argv);
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'}, {"cases", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'}, {"out", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'}, {"candidate", required_argument, NULL, 'c'},
        {"kernel", required_argument, NULL, 'k'}, {"jobs", required_argument, NULL, 'j'},
        {"junit", required_argument, NULL, 'J'}, {"json", required_argument, NULL, 'S'},
        ATTEST_CLI_GEN_LONG_OPTIONS,
        {"force", no_argument, NULL, 'F'},
        {"save-failures", required_argument, NULL, 'V'},
        {"save-passing", no_argument, NULL, 'P'},
        {NULL, 0, NULL, 0},
    };
    char command_line[2048]; /* taken before getopt_long permutes argv */
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    uint64_t cases = DEFAULT_CASES_PER_KERNEL, seed = 1;
    const char *out = NULL, *kernel_name = NULL, *junit = NULL, *json = NULL;
    const char *save_dir = NULL;
    const char *specs[MAX_JOBS];
    size_t num_specs = 0;
    attest_cli_gen_bounds bounds;
    memset(&bounds, 0, sizeof bounds);
    int quiet = 0, force = 0, save_passing = 0;
    int32_t workers = 0; /* 0: --jobs not given */
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", options)) != -1) {
        if (attest_cli_gen_is_option(ch)) {
            const int rc = attest_cli_gen_option("campaign", ch, optarg, &bounds);
            if (rc >= 0) return rc;
            continue;
        }
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'o': out = optarg; break;
        case 'q': quiet = 1; break;
        case 'J': junit = optarg; break;
        case 'S': json = optarg; break;
        case 'k': kernel_name = optarg; break;
        case 'c':
            if (num_specs == MAX_JOBS)
                return attest_cli_usage_error("campaign", "at most %d --candidate options",
                                              MAX_JOBS);
            specs[num_specs++] = optarg;
            break;
        case 'F': force = 1; break;
        case 'V': save_dir = optarg; break;
        case 'P': save_passing = 1; break;
        case 'n':
            if (attest_cli_parse_u64(optarg, &cases) || cases == 0)
                return attest_cli_bad_value("campaign", "cases", optarg);
            break;
        case 's':
            if (attest_cli_parse_u64(optarg, &seed))
                return attest_cli_bad_value("campaign", "seed", optarg);
            break;
        case 'j':
            if (attest_cli_parse_i32(optarg, 1, 4096, &workers))
                return attest_cli_bad_value("campaign", "jobs", optarg);
            break;
        default: return attest_cli_getopt_error("campaign", ch, argv);
        }
    }
    if (optind != argc)
        return attest_cli_usage_error("campaign", "unexpected argument '%s'", argv[optind]);
    if (save_passing && !save_dir)
        return attest_cli_usage_error("campaign", "--save-passing needs --save-failures DIR");
    attest_kernel only = ATTEST_KERNEL_INDEXER;
    if (kernel_name && attest_kernel_from_name(kernel_name, &only) != ATTEST_OK)
        return attest_cli_usage_error("campaign", "%s", attest_last_error());

    char default_path[256];
    if (out == NULL)
        out = attest_cli_default_results(DEFAULT_OUT, default_path, sizeof default_path);
    int rc = attest_cli_check_output("campaign", out, ATTEST_OUTPUT_RESULTS, force, specs,
                                     num_specs);
    if (rc >= 0) return rc;
    if ((rc = attest_cli_check_reports("campaign", out, junit, json, specs, num_specs)) >= 0)
        return rc;
    static const char *const builtin[] = {"cpu-indexer", "cpu-mla-decode"};
    if (num_specs == 0)
        for (int j = 0; j < 2; j++) specs[num_specs++] = builtin[j];
    attest_job jobs[MAX_JOBS];
    size_t num_jobs = 0;
    memset(jobs, 0, sizeof jobs);
    for (size_t j = 0; j < num_specs; j++) {
        attest_job *job = &jobs[num_jobs];
        if (attest_candidate_resolve(specs[j], &job->candidate) != ATTEST_OK)
            return attest_cli_usage_error("campaign", "%s", attest_last_error());
        if (kernel_name && job->candidate->kernel != only) {
            if (specs[j] == builtin[0] || specs[j] == builtin[1]) continue;
            return attest_cli_usage_error("campaign", "candidate '%s' is a %s kernel, not %s",
                                          job->candidate->name,
                                          attest_kernel_name(job->candidate->kernel), kernel_name);
        }
        job->candidate_spec = specs[j];
        job->gen = attest_cli_gen_defaults_for(job->candidate);
        attest_cli_gen_bounds b = bounds;
        if (job->gen.kernel != ATTEST_KERNEL_MLA_DECODE) b.layout = NULL;
        const int rc = attest_cli_gen_apply("campaign", &b, &job->gen);
        if (rc >= 0) return rc;
        job->cases = cases;
        job->seed = seed;
        num_jobs++;
    }
    if (workers == 0) {
        /* Sharding gives the same records in the same order as one process (engine_jobs.c),
         * so the default can use the cores; with a device candidate, the GPUs (several
         * processes on one GPU take turns at it). */
        int host = 1;
        for (size_t j = 0; j < num_jobs; j++)
            host &= jobs[j].candidate->domain == ATTEST_DOMAIN_HOST;
        workers = (int32_t)attest_engine_default_workers(!host, MAX_DEFAULT_WORKERS);
    }
    attest_engine_options opt = attest_engine_defaults();
    attest_policy *policy = NULL;
    attest_cli_saver saver;
    memset(&saver, 0, sizeof saver);
    if (save_dir) {
        /* The saved files record the judging policy's hash and text: the engine's default is
         * taken here so they name the one that judged. */
        if (attest_policy_default(&policy) != ATTEST_OK)
            return attest_cli_usage_error("campaign", "%s", attest_last_error());
        if ((rc = attest_cli_saver_init(&saver, "campaign", save_dir, policy)) >= 0) {
            attest_policy_free(policy);
            return rc;
        }
        saver.by_candidate = 1;
        saver.passing = save_passing;
        opt.runner.policy = policy;
        opt.on_failure = attest_cli_saver_hook;
        opt.on_failure_ctx = &saver;
        opt.on_failure_passing = save_passing;
    }
    opt.out_path = out;
    opt.progress = !quiet && attest_cli_interactive();
    opt.command_line = command_line;
    opt.jobs = (uint32_t)workers;
    opt.junit_path = junit;
    opt.junit_suite = "attest campaign";
    printf("attest campaign: ");
    for (size_t j = 0; j < num_jobs; j++)
        printf("%s%s", j == 0 ? "" : j + 1 == num_jobs ? " and " : ", ", jobs[j].candidate->name);
    printf(", %" PRIu64 " cases each, seed %" PRIu64 ", results in %s\n", cases, seed, out);
    fflush(stdout);
    attest_engine_totals totals;
    const attest_status st = attest_engine_run(jobs, num_jobs, &opt, stdout, &totals);
    attest_policy_free(policy);
    if (st != ATTEST_OK) return attest_cli_usage_error("campaign", "%s", attest_last_error());
    attest_report_summary(stdout, &totals.summary, out, totals.seconds);
    attest_cli_saver_report(&saver, stdout);
    rc = attest_engine_exit_status(&totals);
    return attest_engine_json(json, "campaign", &totals, out, rc);
}
