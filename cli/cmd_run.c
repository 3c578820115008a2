/* attest run: one candidate against the reference on generated cases. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/files.h"
#include "attest/registry.h"
#include "attest/report.h"
#include "commands.h"
#include "attest/campaign.h"
#include "attest/gen_options.h"
#include "sanitize.h"
#include "pipeline_run.h"
#include "topk_run.h"
#include "baseline.h"
#include "save_failures.h"
#include "run_options.h"

static void usage(FILE *f)
{
    fputs("usage: attest run --candidate SPEC [--kernel indexer|mla-decode] [options]\n"
          "       attest run --kernel topk --candidate NAME       (attest run --kernel topk --help)\n"
          "       attest run --kernel pipeline --candidate indexer=C1 --candidate topk=C2\n"
          "                  --candidate decode=C3                (attest run --kernel pipeline --help)\n"
          "       attest run --candidate NEW --baseline OLD       (attest run --baseline OLD --help)\n"
          "\n"
          "Judges a candidate kernel on generated cases against the CPU reference.\n"
          "Exit status: 0 every case passed, 1 a case failed or none was judged, 2 usage or\n"
          "input error, 130 stopped by SIGINT (143 SIGTERM).\n"
          "\n"
          "  --candidate SPEC   built-in name (attest list) or path/lib.so:NAME\n"
          "  --kernel K         kernel family; must match the candidate's (default: its own)\n"
          "  --cases N          cases to generate (default 100)\n"
          "  --seed S           campaign seed; case i uses a seed derived from S and i (default 1)\n"
          "  --case-seed X      run exactly one case, drawn from its own seed X (as printed)\n"
          "  --filter F         only cases whose parameter string matches, e.g. 'b=2,layout=mla-v4'\n"
          "  --out FILE         write every result to an HDF5 results file (attest show FILE)\n"
          "  --force            replace an earlier results file at --out (never anything else)\n"
          "  --policy FILE      tolerance policy (default: the embedded policies/default.json)\n"
          "  --reruns N         runs per case, compared bitwise (default 2)\n"
          "  --timeout SEC      per-run time limit (default 10)\n"
          "  --no-isolate       run in this process (no crash isolation; for debugging)\n"
          "  --jobs N           judge the cases in N worker processes (same order, same results)\n"
          "  --graph            CUDA-graph check: capture each case's launch with other lengths\n"
          "                     and page tables, replay it on the case, compare with the eager\n"
          "                     run (verdict GRAPH_MISMATCH); device candidates\n"
          "  --sanitize TOOL    also run each case once under compute-sanitizer (memcheck,\n"
          "                     racecheck, initcheck, synccheck), in a process of its own; a\n"
          "                     report is the verdict SANITIZER\n"
          "  --max-failures N   stop after N failing cases (default: never)\n"
          "  --print-failures N failing cases printed as they happen (default 20)\n"
          "  --junit FILE       also write a JUnit XML report (one testcase per case)\n"
          "  --json FILE        also write the summary as JSON\n"
          "  --save-failures DIR  write each failing case (every failing verdict) as\n"
          "                     DIR/<kernel>-SEED.h5 with the candidate's first-run outputs as\n"
          "                     recorded outputs (DIR made when missing); an existing file is\n"
          "                     kept, never replaced.\n"
          "                     attest check FILE --recorded judges one again (docs/gpu.md)\n"
          "  --save-passing     with --save-failures: save passing cases too (with --case-seed:\n"
          "                     one device case brought home whatever its verdict)\n"
          "  --quiet            no progress line (the default when not a terminal or CI is set)\n"
          "generator bounds:\n" ATTEST_CLI_GEN_USAGE,
          f);
}

enum { OPT_MAX_FAILURES = 256, OPT_GRAPH, OPT_SANITIZE, OPT_SAVE_PASSING };

static const struct option long_options[] = {
    {"help", no_argument, NULL, 'h'},
    ATTEST_CLI_OPT_CANDIDATE,
    ATTEST_CLI_OPT_KERNEL,
    ATTEST_CLI_OPT_CASES,
    ATTEST_CLI_OPT_SEED,
    ATTEST_CLI_OPT_FILTER,
    ATTEST_CLI_OPT_OUT,
    ATTEST_CLI_OPT_CASE_SEED,
    ATTEST_CLI_OPT_POLICY,
    ATTEST_CLI_OPT_RERUNS,
    ATTEST_CLI_OPT_TIMEOUT,
    ATTEST_CLI_OPT_NO_ISOLATE,
    {"max-failures", required_argument, NULL, OPT_MAX_FAILURES},
    ATTEST_CLI_OPT_PRINT_FAILURES,
    ATTEST_CLI_GEN_LONG_OPTIONS,
    ATTEST_CLI_OPT_QUIET,
    ATTEST_CLI_OPT_JOBS,
    ATTEST_CLI_OPT_JUNIT,
    ATTEST_CLI_OPT_JSON,
    ATTEST_CLI_OPT_FORCE,
    {"graph", no_argument, NULL, OPT_GRAPH},
    {"sanitize", required_argument, NULL, OPT_SANITIZE},
    ATTEST_CLI_OPT_SAVE_FAILURES,
    {"save-passing", no_argument, NULL, OPT_SAVE_PASSING},
    {NULL, 0, NULL, 0},
};

typedef struct run_args {
    attest_cli_run_args r;
    const char *sanitize;
    uint64_t max_failures;
    int graph, save_passing;
} run_args;

#define BAD(what) return attest_cli_bad_value("run", what, optarg)

/* Returns -1 to continue, or an exit status. */
static int parse(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof *a);
    attest_cli_run_defaults(&a->r);
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", long_options)) != -1) {
        if (attest_cli_run_is_option(ch)) {
            const int rc = attest_cli_run_option("run", ch, optarg, &a->r);
            if (rc >= 0) return rc;
            continue;
        }
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case OPT_MAX_FAILURES:
            if (attest_cli_parse_u64(optarg, &a->max_failures)) BAD("max-failures");
            break;
        case OPT_GRAPH: a->graph = 1; break;
        case OPT_SAVE_PASSING: a->save_passing = 1; break;
        case OPT_SANITIZE:
            if (!attest_cli_sanitize_tool_ok(optarg)) BAD("sanitize");
            a->sanitize = optarg;
            break;
        default: return attest_cli_getopt_error("run", ch, argv);
        }
    }
    if (optind < argc)
        return attest_cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
    if (a->r.candidate == NULL)
        return attest_cli_usage_error("run", "--candidate is required (attest list shows them)");
    if (a->save_passing && !a->r.save_dir)
        return attest_cli_usage_error("run", "--save-passing needs --save-failures DIR");
    return -1;
}

/* What a run asks of each recorded failure: --save-failures writes its case file, and a run of
 * one case (--case-seed, the replay command run prints) prints the case in full, as attest
 * replay does: every gate against its bound and where the failing element lives. */
typedef struct run_hooks {
    attest_cli_saver *saver; /* NULL: no --save-failures */
    const attest_policy *policy;
    int detail;
} run_hooks;

static attest_status run_failure_hook(void *ctx, const attest_job *job, const attest_case *c,
                                      const attest_case_record *rec,
                                      const attest_case_outputs *kept)
{
    const run_hooks *h = ctx;
    if (h->saver) ATTEST_FORWARD(attest_cli_saver_hook(h->saver, job, c, rec, kept));
    if (!h->detail || !attest_verdict_is_failure(rec->verdict)) return ATTEST_OK;
    printf("\n");
    attest_cli_print_case_detail(rec, c, h->policy, kept);
    printf("\n");
    fflush(stdout);
    return ATTEST_OK;
}

int attest_cmd_run(int argc, char **argv)
{
    if (attest_wants_pipeline(argc, argv)) return attest_cmd_run_pipeline(argc, argv);
    if (attest_run_wants_topk(argc, argv)) return attest_cmd_run_topk(argc, argv);
    if (attest_run_wants_baseline(argc, argv)) return attest_cmd_run_baseline(argc, argv);
    char command_line[2048]; /* taken before getopt_long permutes argv */
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    run_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) return rc;

    const char *inputs[] = {a.r.policy, a.r.candidate};
    if (a.r.out && (rc = attest_cli_check_output("run", a.r.out, ATTEST_OUTPUT_RESULTS,
                                                 a.r.force, inputs, 2)) >= 0)
        return rc;
    if ((rc = attest_cli_check_reports("run", a.r.out, a.r.junit, a.r.json, inputs, 2)) >= 0)
        return rc;
    const attest_candidate *cand = NULL;
    if (attest_candidate_resolve(a.r.candidate, &cand) != ATTEST_OK)
        return attest_cli_usage_error("run", "%s", attest_last_error());
    if (a.graph && cand->domain != ATTEST_DOMAIN_DEVICE)
        return attest_cli_usage_error("run", "--graph: '%s' is not a device candidate",
                                      cand->name);
    if (a.r.kernel) {
        attest_kernel k;
        if (attest_kernel_from_name(a.r.kernel, &k) != ATTEST_OK)
            return attest_cli_usage_error("run", "%s", attest_last_error());
        if (k != cand->kernel)
            return attest_cli_usage_error("run", "candidate '%s' is a %s kernel, not %s",
                                          cand->name, attest_kernel_name(cand->kernel), a.r.kernel);
    }
    attest_job job;
    memset(&job, 0, sizeof job);
    job.candidate = cand;
    job.candidate_spec = a.r.candidate;
    job.gen = attest_cli_gen_defaults_for(cand);
    if ((rc = attest_cli_gen_apply("run", &a.r.gen, &job.gen)) >= 0) return rc;
    job.cases = a.r.cases;
    job.seed = a.r.seed;
    job.use_case_seed = a.r.use_case_seed;
    job.case_seed = a.r.case_seed;
    if (attest_case_filter_check(cand->kernel, a.r.filter) != ATTEST_OK)
        return attest_cli_usage_error("run", "--filter: %s", attest_last_error());
    job.filter = a.r.filter;

    attest_engine_options opt = attest_engine_defaults();
    attest_policy *policy = NULL;
    if (a.r.policy) {
        if (attest_policy_load(a.r.policy, &policy) != ATTEST_OK)
            return attest_cli_usage_error("run", "%s", attest_last_error());
        opt.runner.policy = policy;
    }
    attest_cli_saver saver;
    memset(&saver, 0, sizeof saver);
    run_hooks hooks = {NULL, NULL, a.r.use_case_seed};
    if (a.r.save_dir || hooks.detail) {
        /* The saved files record the policy's hash and text, and the detail its bounds: the
         * engine's default is taken here so both name the one that judged. */
        if (!policy && attest_policy_default(&policy) != ATTEST_OK)
            return attest_cli_usage_error("run", "%s", attest_last_error());
        opt.runner.policy = policy;
        hooks.policy = policy;
        opt.on_failure = run_failure_hook;
        opt.on_failure_ctx = &hooks;
    }
    if (a.r.save_dir) {
        if ((rc = attest_cli_saver_init(&saver, "run", a.r.save_dir, policy)) >= 0) {
            attest_policy_free(policy);
            return rc;
        }
        hooks.saver = &saver;
        opt.on_failure_passing = a.save_passing;
        saver.passing = a.save_passing;
    }
    opt.runner.reruns = a.r.reruns;
    opt.runner.timeout_seconds = a.r.timeout;
    opt.runner.isolate = !a.r.no_isolate;
    opt.runner.graph_check = a.graph;
    opt.out_path = a.r.out;
    opt.progress = !a.r.quiet && attest_cli_interactive();
    opt.print_failures = (uint32_t)a.r.print_failures;
    opt.max_failures = a.max_failures;
    opt.command_line = command_line;
    opt.jobs = (uint32_t)a.r.jobs;
    opt.junit_path = a.r.junit;
    opt.junit_suite = "attest run";

    attest_cli_sanitizer san;
    if (a.sanitize) {
        if ((rc = attest_cli_sanitizer_init(&san, "run", a.sanitize, a.r.timeout)) >= 0) {
            attest_policy_free(policy);
            return rc;
        }
        opt.inspect = attest_cli_sanitizer_inspect;
        opt.inspect_ctx = &san;
    }
    attest_engine_totals totals;
    attest_status st = attest_engine_run(&job, 1, &opt, stdout, &totals);
    if (a.sanitize) attest_cli_sanitizer_fini(&san);
    attest_policy_free(policy);
    if (st != ATTEST_OK) {
        fflush(stdout);
        return attest_cli_usage_error("run", "%s", attest_last_error());
    }
    if (totals.filtered)
        printf("filter '%s': %" PRIu64 " generated cases skipped%s\n", a.r.filter, totals.filtered,
               totals.judged ? "" : ": it matched none (check its spelling: attest run --help)");
    attest_report_summary(stdout, &totals.summary, a.r.out, totals.seconds);
    attest_cli_saver_report(&saver, stdout);
    rc = attest_engine_exit_status(&totals);
    return attest_engine_json(a.r.json, "run", &totals, a.r.out, rc);
}
