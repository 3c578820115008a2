/* attest fuzz: a time-boxed search for a failing case of one candidate, over N worker processes,
 * that ends with every finding minimized and saved as a case file `attest check` fails the
 * same way.
 *
 * Two engines. `libfuzzer` (the default when this build has the libFuzzer targets, fuzz/) runs
 * N processes of the kernel's libFuzzer target on one corpus (fuzz_libfuzzer.h): coverage- and
 * structure-guided mutation of what the kernel reads, beyond anything the generator draws. A
 * finding is the input a target stopped on; it is decoded here into its case (fuzz_inputs.h)
 * and judged again in an isolated worker, so a crash or a hang is a verdict. `search` needs no
 * libFuzzer: fresh seeds under the generator's small default bounds, which reach every edge
 * class the generator knows (lengths 0, 1, page boundaries +-1, holes, duplicates, all-invalid
 * tiles, NaN bytes, +-inf sinks) within a few hundred cases.
 *
 * Either way the search stops at the first finding (as libFuzzer does). It is judged again,
 * then shrunk (attest/minimize.h) while it keeps the same verdict and failed gates, and saved
 * with its reference outputs as FINDINGS/finding-<kernel>-<verdict>-<id>.h5; the saved file is
 * loaded back and judged once more, so what is printed is what `attest check` sees.
 */
#include <dirent.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attest/casefile.h"
#include "attest/files.h"
#include "attest/minimize.h"
#include "attest/reference.h"
#include "attest/registry.h"
#include "attest/report.h"
#include "attest/results.h"
#include "commands.h"
#include "attest/campaign.h"
#include "attest/gen_options.h"
#include "fuzz_finding.h"
#include "fuzz_inputs.h"
#include "fuzz_libfuzzer.h"
#include "attest/topk_candidates.h"
#include "topk_fuzz.h"
#include "baseline.h"
#include "fuzz_baseline.h"
#include "run_options.h"

#define VERB "fuzz"
#define DEFAULT_OUT "attest-fuzz.h5"

#ifdef ATTEST_FUZZ_TARGETS_BUILT
#define DEFAULT_ENGINE "libfuzzer"
#define ENGINE_NOTE "default libfuzzer (this build has the libFuzzer targets)"
#else
#define DEFAULT_ENGINE "search"
#define ENGINE_NOTE "default search (no libFuzzer targets in this build:\n" \
                    "                     libfuzzer needs --fuzzer PATH of a clang build, preset fuzz)"
#endif

static void usage(FILE *f)
{
    fputs("usage: attest fuzz --candidate SPEC [--kernel K] [--time SEC] [--jobs N] [options]\n"
          "\n"
          "Searches for a case the candidate fails, for SEC seconds over N worker processes;\n"
          "stops at the first failing case, shrinks it (fewer requests, query rows, heads and\n"
          "index entries, shorter lengths) while it fails the same way (same verdict and gates),\n"
          "and saves it with its reference outputs as a case file for attest check / attest\n"
          "replay / the golden fixtures.\n"
          "Exit status: 0 nothing found, 1 a finding (saved), 2 usage or input error.\n"
          "\n"
          "  --candidate SPEC   built-in name (attest list) or path/lib.so:NAME\n"
          "  --kernel K         must match the candidate's kernel (default: its own); topk\n"
          "                     (or a built-in top-k candidate) fuzzes a top-k kernel: its\n"
          "                     findings are top-k case files (docs/topk.md)\n"
          "  --engine E         libfuzzer: N processes of the kernel's libFuzzer target on one\n"
          "                     corpus, structure-aware mutation and semantic coverage;\n"
          "                     search: freshly generated cases (any build, any kernel).\n"
          "                     " ENGINE_NOTE "\n"
          "  --fuzzer PATH      the libFuzzer target binary (default: fuzz/fuzz_<kernel> beside\n"
          "                     this executable)\n"
          "  --corpus DIR       libfuzzer: the corpus, kept and grown (default: an empty one,\n"
          "                     removed at the end)\n"
          "  --dict FILE        libfuzzer: a dictionary (fuzz/fuzz_<target>.dict)\n"
          "  --no-structure     libfuzzer: byte mutations only, no semantic counters\n"
          "  --time SEC         how long to search (default 60)\n"
          "  --jobs N           worker processes (default: every core; one per visible GPU for\n"
          "                     a candidate that runs on a GPU)\n"
          "  --seed S           campaign seed (default: from the clock, printed)\n"
          "  --out FILE         every judged case in an HDF5 results file, all jobs merged\n"
          "                     (default " DEFAULT_OUT ", or attest-fuzz-2.h5, -3, ... when an\n"
          "                     earlier search has it)\n"
          "  --force            replace an earlier results file at --out (nothing else)\n"
          "  --findings DIR     where minimized findings go (default: .; made when missing)\n"
          "  --reruns N         runs per case, compared bitwise (default 1; 2 catches\n"
          "                     nondeterministic kernels)\n"
          "  --timeout SEC      per-run time limit (default 10)\n"
          "  --max-tries N      judgements the minimizer may spend (default 4000)\n"
          "  --policy FILE      tolerance policy (default: embedded)\n"
          "  --baseline OLD     old vs new: a finding is a case where --candidate (NEW) and OLD\n"
          "                     disagree, as attest run --baseline judges a pair; saved for\n"
          "                     attest check FILE --candidate NEW --baseline OLD (search engine)\n"
          "  --same MODE        with --baseline: bounds (default) or bitwise\n"
          "  --quiet            no progress line\n"
          "generator bounds (search):\n" ATTEST_CLI_GEN_USAGE
          "  (topk: --max-batch, --max-next-n, --max-len (row width), --max-topk)\n",
          f);
}

enum {
    OPT_TIME = 256, OPT_FINDINGS, OPT_MAX_TRIES, OPT_ENGINE, OPT_FUZZER, OPT_CORPUS, OPT_DICT,
    OPT_NO_STRUCTURE
};

static const struct option long_options[] = {
    {"help", no_argument, NULL, 'h'},
    ATTEST_CLI_OPT_CANDIDATE,
    ATTEST_CLI_OPT_KERNEL,
    ATTEST_CLI_OPT_OUT,
    {"time", required_argument, NULL, OPT_TIME},
    ATTEST_CLI_OPT_JOBS,
    ATTEST_CLI_OPT_SEED,
    {"findings", required_argument, NULL, OPT_FINDINGS},
    ATTEST_CLI_OPT_RERUNS,
    ATTEST_CLI_OPT_TIMEOUT,
    {"max-tries", required_argument, NULL, OPT_MAX_TRIES},
    ATTEST_CLI_OPT_POLICY,
    ATTEST_CLI_OPT_QUIET,
    ATTEST_CLI_OPT_FORCE,
    {"engine", required_argument, NULL, OPT_ENGINE},
    {"fuzzer", required_argument, NULL, OPT_FUZZER},
    {"corpus", required_argument, NULL, OPT_CORPUS},
    {"dict", required_argument, NULL, OPT_DICT},
    {"no-structure", no_argument, NULL, OPT_NO_STRUCTURE},
    ATTEST_CLI_OPT_BASELINE,
    ATTEST_CLI_OPT_SAME,
    ATTEST_CLI_GEN_LONG_OPTIONS,
    {NULL, 0, NULL, 0},
};

typedef struct fuzz_args {
    /* candidate, kernel, out, jobs, seed (seed_given), reruns, timeout, policy, quiet, force,
     * baseline, same (bitwise, same_given) and the generator bounds */
    attest_cli_run_args r;
    const char *findings, *engine, *fuzzer, *corpus, *dict;
    double time;
    int32_t max_tries;
    int no_structure, engine_given;
} fuzz_args;

#define BAD(what) return attest_cli_bad_value(VERB, what, optarg)

static int parse(int argc, char **argv, fuzz_args *a)
{
    memset(a, 0, sizeof *a);
    attest_cli_run_defaults(&a->r);
    a->r.out = NULL; /* --out left out: attest_cmd_fuzz picks the default's first free name */
    a->r.seed = 0; /* from the clock unless --seed (check_findings_and_seed) */
    a->r.reruns = 1;
    a->r.jobs = 0; /* not given: default_jobs once the candidate is known */
    a->findings = ".";
    a->engine = DEFAULT_ENGINE;
    a->time = 60;
    a->max_tries = 4000;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, "", long_options)) != -1) {
        if (attest_cli_run_is_option(ch)) {
            const int rc = attest_cli_run_option(VERB, ch, optarg, &a->r);
            if (rc >= 0) return rc;
            continue;
        }
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case OPT_FINDINGS: a->findings = optarg; break;
        case OPT_FUZZER: a->fuzzer = optarg; break;
        case OPT_CORPUS: a->corpus = optarg; break;
        case OPT_DICT: a->dict = optarg; break;
        case OPT_NO_STRUCTURE: a->no_structure = 1; break;
        case OPT_ENGINE:
            if (strcmp(optarg, "libfuzzer") != 0 && strcmp(optarg, "search") != 0) BAD("engine");
            a->engine = optarg;
            a->engine_given = 1;
            break;
        case OPT_TIME:
            if (attest_cli_parse_double(optarg, 0.1, 86400.0 * 365, &a->time)) BAD("time");
            break;
        case OPT_MAX_TRIES:
            if (attest_cli_parse_i32(optarg, 1, 1000000, &a->max_tries)) BAD("max-tries");
            break;
        default: return attest_cli_getopt_error(VERB, ch, argv);
        }
    }
    if (optind < argc)
        return attest_cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
    if (a->r.candidate == NULL)
        return attest_cli_usage_error(VERB, "--candidate is required (attest list shows them)");
    if (a->r.same_given && a->r.baseline == NULL)
        return attest_cli_usage_error(VERB, "--same needs --baseline");
    return -1;
}

/* --jobs when not given: one per core, or one per visible GPU for a candidate that runs on one
 * (attest_engine_default_workers). */
static void default_jobs(fuzz_args *a, int device)
{
    if (a->r.jobs == 0)
        a->r.jobs = (int32_t)attest_engine_default_workers(device, (uint32_t)a->r.max_jobs);
}

static attest_finding_options finding_options(const fuzz_args *a)
{
    attest_finding_options fo = {a->findings, a->r.candidate, (uint32_t)a->max_tries};
    return fo;
}

/* The failing rows of a results file, first one per (verdict, gates) signature, up to `cap`. */
static size_t first_failures(const char *path, attest_case_record *out, size_t cap)
{
    attest_results_reader *r = NULL;
    if (attest_results_open_read(path, &r) != ATTEST_OK) return 0;
    size_t n = 0;
    for (int done = 0; n < cap;) {
        attest_case_record rec;
        if (attest_results_next(r, &rec, NULL, &done) != ATTEST_OK || done) break;
        if (!attest_verdict_is_failure(rec.verdict)) continue;
        int seen = 0;
        for (size_t i = 0; i < n; i++)
            seen |= out[i].verdict == rec.verdict && out[i].failed_gates == rec.failed_gates;
        if (!seen) out[n++] = rec;
    }
    attest_results_close_read(r);
    return n;
}

/* --- the libFuzzer engine ----------------------------------------------------------------- */

static int gen_bounds_given(const attest_cli_gen_bounds *g)
{
    for (size_t i = 0; i < sizeof g->bounds / sizeof g->bounds[0]; i++)
        if (g->bounds[i]) return 1;
    return g->layout || g->production || g->no_edge;
}

/* Decodes, judges, minimizes and saves the input a libFuzzer job stopped on. */
static attest_status libfuzzer_finding(const fuzz_args *a, const attest_candidate *cand,
                                       const attest_runner_options *ropt, const char *input,
                                       const char *log, int number)
{
    uint8_t *data = NULL;
    size_t size = 0;
    ATTEST_FORWARD(attest_lf_read_file(input, &data, &size));
    attest_case c;
    memset(&c, 0, sizeof c);
    int valid = 0;
    attest_status st = fuzz_decode(cand->kernel, data, size, &c, &valid);
    attest_finding_origin o;
    memset(&o, 0, sizeof o);
    const char *base = strrchr(input, '/') ? strrchr(input, '/') + 1 : input;
    char kept[4400] = "";
    if (st == ATTEST_OK)
        st = attest_lf_keep_input(input, data, size, a->findings, attest_kernel_name(cand->kernel),
                                  o.id, sizeof o.id, kept, sizeof kept);
    free(data);
    snprintf(o.what, sizeof o.what, "libFuzzer input %.40s", base);
    const char *kept_base = strrchr(kept, '/') ? strrchr(kept, '/') + 1 : kept;
    snprintf(o.how, sizeof o.how,
             "decoded from the libFuzzer input %.80s beside this file "
             "(ATTEST_FUZZ_CANDIDATE=%.600s %s_replay INPUT replays it; fuzz/README.md)",
             st == ATTEST_OK ? kept_base : "(not kept)", a->r.candidate,
             fuzz_target_of(cand->kernel));
    if (st == ATTEST_OK && !valid)
        st = attest_fail(ATTEST_ERR_INTERNAL, "%s names no valid case, yet the target stopped on "
                         "it: its output is in %s", input, log);
    if (st == ATTEST_OK) {
        printf("finding %d: the libFuzzer target stopped on %s (kept as %s)\n", number, base, kept);
        const attest_finding_options fo = finding_options(a);
        st = attest_fuzz_finding(&fo, cand, ropt, &c, &o, number);
    }
    attest_case_free(&c);
    return st;
}

static fuzz_settings settings_of(const fuzz_args *a, const char *command_line)
{
    fuzz_settings r = {.out = a->r.out, .findings = a->findings, .command_line = command_line,
                       .time = a->time, .timeout = a->r.timeout, .jobs = a->r.jobs,
                       .reruns = a->r.reruns, .max_tries = a->max_tries, .seed = a->r.seed,
                       .quiet = a->r.quiet};
    return r;
}

static int run_libfuzzer(fuzz_args *a, const attest_candidate *cand, const char *command_line)
{
    if (gen_bounds_given(&a->r.gen))
        return attest_cli_usage_error(VERB, "generator bounds are options of --engine search (the "
                                      "libFuzzer targets draw their cases from the input)");
    const fuzz_settings run = settings_of(a, command_line);
    attest_lf_setup setup;
    const char *name = fuzz_target_of(cand->kernel);
    if (!name && !a->fuzzer)
        return attest_cli_usage_error(VERB, "--engine libfuzzer: %s has no libFuzzer target",
                                      attest_kernel_name(cand->kernel));
    int rc = attest_lf_setup_from(VERB, name, a->fuzzer, a->dict, a->corpus, &run, &setup);
    if (rc >= 0) return rc;
    attest_lf_options lo = setup.lo;
    const char *target = setup.target, *work = setup.work;
    attest_policy *policy = NULL;
    if (a->r.policy && attest_policy_load(a->r.policy, &policy) != ATTEST_OK) {
        attest_lf_remove_tree(setup.work);
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    }
    lo.candidate = a->r.candidate;
    lo.device_candidate = cand->domain == ATTEST_DOMAIN_DEVICE;
    lo.policy = a->r.policy;
    lo.structure = !a->no_structure;
    lo.features = fuzz_feature_count(cand->kernel);
    printf("attest fuzz: %s (%s), libFuzzer (%s%s), up to %.0f s over %d job%s, seed %" PRIu64
           " (--seed %" PRIu64 "), results in %s\n",
           cand->name, attest_kernel_name(cand->kernel), target,
           lo.structure ? ", structure-aware" : ", byte mutations only", a->time, a->r.jobs,
           a->r.jobs == 1 ? "" : "s", a->r.seed, a->r.seed, a->r.out);
    fflush(stdout);
    attest_lf_totals t;
    if (attest_lf_run_merge(&lo, a->r.out, command_line, &t) != ATTEST_OK) {
        fflush(stdout);
        attest_cli_usage_error(VERB, "%s (scratch folder kept: %s)", attest_last_error(), work);
        attest_policy_free(policy);
        return ATTEST_EXIT_USAGE;
    }
    int exit_code = t.findings ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
    if (!t.findings && !t.interrupted && t.rows > 0 && t.declined == t.rows) {
        /* A device candidate on a host without a GPU declines every case: nothing was checked,
         * which must not read as a pass (as in attest run and attest check). */
        printf("result: FAIL (nothing was checked: the candidate declined every case "
               "(UNSUPPORTED))\n");
        exit_code = ATTEST_EXIT_FAILED;
    }
    if (t.findings) {
        printf("time to first finding: %.3f s (%" PRIu64 " execs)\n", t.first_finding_s,
               t.first_finding_execs);
        attest_runner_options ropt = attest_runner_defaults();
        ropt.policy = policy;
        ropt.reruns = a->r.reruns;
        ropt.timeout_seconds = a->r.timeout;
        ropt.reference = attest_ref_simulated;
        for (int i = 0; i < t.findings; i++)
            if (libfuzzer_finding(a, cand, &ropt, t.finding[i], t.finding_log[i], i + 1) != ATTEST_OK) {
                fflush(stdout);
                attest_cli_usage_error(VERB, "%s", attest_last_error());
                exit_code = ATTEST_EXIT_USAGE;
            }
    } else if (t.interrupted) {
        exit_code = 130;
    }
    if (exit_code != ATTEST_EXIT_USAGE) attest_lf_remove_tree(work);
    attest_policy_free(policy);
    return exit_code;
}

/* --findings must be a writable folder (made when missing); a seed is drawn from the clock
 * when none was given. */
static int check_findings_and_seed(fuzz_args *a)
{
    const int rc = attest_cli_output_dir(VERB, "findings", a->findings);
    if (rc >= 0) return rc;
    if (!a->r.seed_given) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t s = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
                     ((uint64_t)getpid() << 32);
        a->r.seed = attest_case_seed(s, 0) & 0xFFFFFFFFFFFFull; /* short enough to retype */
    }

    return -1;
}

/* --kernel topk, or a built-in top-k candidate: the top-k family's own search (topk_fuzz.h). */
/* The search engines take none of the libFuzzer engine's options: -1, else the usage error. */
static int refuse_libfuzzer_options(const fuzz_args *a)
{
    if (!a->corpus && !a->dict && !a->fuzzer && !a->no_structure) return -1;
    return attest_cli_usage_error(VERB, "--corpus, --dict, --fuzzer and --no-structure are "
                                  "options of --engine libfuzzer");
}

static int wants_topk(const fuzz_args *a)
{
    if (a->r.kernel) return strcmp(a->r.kernel, "topk") == 0;
    return attest_topk_builtin_find(a->r.candidate) != NULL;
}

static int fuzz_topk(const fuzz_args *a, const char *command_line)
{
    attest_topk_fuzz_options o;
    memset(&o, 0, sizeof o);
    o.candidate = a->r.candidate;
    o.engine = a->engine;
    o.fuzzer = a->fuzzer;
    o.corpus = a->corpus;
    o.dict = a->dict;
    o.run = settings_of(a, command_line);
    o.no_structure = a->no_structure;
    if (a->r.policy)
        return attest_cli_usage_error(VERB, "--policy: the top-k judge has no tolerance (exact "
                                      "ties, docs/topk.md)");
    /* The generator bounds of the top-k family, in the order of attest_cli_gen_bounds. */
    const attest_cli_gen_bounds *g = &a->r.gen;
    if (g->bounds[1] || g->bounds[5] || g->bounds[6] || g->layout || g->production || g->no_edge)
        return attest_cli_usage_error(VERB, "--kernel topk takes --max-batch, --max-next-n, "
                                      "--max-len (the row width) and --max-topk as its bounds");
    o.gen = attest_topk_gen_defaults();
    if (g->bounds[0]) o.gen.max_batch = g->bounds[0];
    if (g->bounds[2]) o.gen.max_width = g->bounds[2];
    if (g->bounds[3]) o.gen.max_k = g->bounds[3];
    if (g->bounds[4]) o.gen.max_next_n = g->bounds[4];
    o.gen_given = g->bounds[0] || g->bounds[2] || g->bounds[3] || g->bounds[4];
    if (o.gen.max_batch > 1024 || o.gen.max_next_n > 16 || o.gen.max_width > ATTEST_TOPK_MAX_WIDTH ||
        o.gen.max_k > ATTEST_TOPK_MAX_K)
        return attest_cli_usage_error(VERB, "top-k bounds: --max-batch <= 1024, --max-next-n <= "
                                      "16, --max-len <= %d, --max-topk <= %d",
                                      ATTEST_TOPK_MAX_WIDTH, ATTEST_TOPK_MAX_K);
    if (strcmp(o.engine, "search") == 0) {
        int rc = refuse_libfuzzer_options(a);
        if (rc >= 0) return rc;
    }
    return attest_topk_fuzz(&o);
}

/* --baseline OLD: the pair search (fuzz_baseline.h). */
static int fuzz_baseline(fuzz_args *a, const char *command_line)
{
    if (wants_topk(a))
        return attest_cli_usage_error(VERB, "--baseline: top-k kernels have no pair judge yet "
                                      "(indexer and mla-decode kernels do)");
    if (a->engine_given && strcmp(a->engine, "libfuzzer") == 0)
        return attest_cli_usage_error(VERB, "--baseline runs the search engine (the libFuzzer "
                                      "targets judge one kernel)");
    int rc = refuse_libfuzzer_options(a);
    if (rc >= 0) return rc;
    attest_fuzz_pair_options o;
    memset(&o, 0, sizeof o);
    o.spec[0] = a->r.candidate;
    o.spec[1] = a->r.baseline;
    for (int j = 0; j < 2; j++)
        if (attest_candidate_resolve(o.spec[j], &o.cand[j]) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s%s", j ? "--baseline: " : "", attest_last_error());
    rc = attest_baseline_check_pair(VERB, o.cand);
    if (rc >= 0) return rc;
    default_jobs(a, o.cand[0]->domain == ATTEST_DOMAIN_DEVICE ||
                        o.cand[1]->domain == ATTEST_DOMAIN_DEVICE);
    if (a->r.kernel) {
        attest_kernel k;
        if (attest_kernel_from_name(a->r.kernel, &k) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
        if (k != o.cand[0]->kernel)
            return attest_cli_usage_error(VERB, "candidate '%s' is a %s kernel, not %s",
                                          o.cand[0]->name, attest_kernel_name(o.cand[0]->kernel),
                                          a->r.kernel);
    }
    if ((rc = check_findings_and_seed(a)) >= 0) return rc;
    o.gen = attest_cli_gen_defaults_for(o.cand[0]);
    if ((rc = attest_cli_gen_apply(VERB, &a->r.gen, &o.gen)) >= 0) return rc;
    attest_policy *policy = NULL;
    if ((a->r.policy ? attest_policy_load(a->r.policy, &policy) : attest_policy_default(&policy)) !=
        ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    o.policy = policy;
    o.policy_path = a->r.policy;
    o.run = settings_of(a, command_line);
    o.bitwise = a->r.bitwise;
    rc = attest_fuzz_pair(&o);
    attest_policy_free(policy);
    return rc;
}

int attest_cmd_fuzz(int argc, char **argv)
{
    char command_line[2048];
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    fuzz_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) return rc;
    char default_path[256];
    if (a.r.out == NULL) /* a second search keeps the first's results */
        a.r.out = attest_cli_default_results(DEFAULT_OUT, default_path, sizeof default_path);
    const char *inputs[] = {a.r.policy, a.r.candidate, a.r.baseline};
    if ((rc = attest_cli_check_output(VERB, a.r.out, ATTEST_OUTPUT_RESULTS, a.r.force, inputs,
                                      a.r.baseline ? 3 : 2)) >= 0)
        return rc;
    if (a.r.baseline) return fuzz_baseline(&a, command_line);
    if (wants_topk(&a)) {
        if ((rc = check_findings_and_seed(&a)) >= 0) return rc;
        default_jobs(&a, 0); /* the top-k candidates run on the host */
        return fuzz_topk(&a, command_line);
    }
    const attest_candidate *cand = NULL;
    if (attest_candidate_resolve(a.r.candidate, &cand) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    if (a.r.kernel) {
        attest_kernel k;
        if (attest_kernel_from_name(a.r.kernel, &k) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
        if (k != cand->kernel)
            return attest_cli_usage_error(VERB, "candidate '%s' is a %s kernel, not %s",
                                          cand->name, attest_kernel_name(cand->kernel), a.r.kernel);
    }
    if ((rc = check_findings_and_seed(&a)) >= 0) return rc;
    default_jobs(&a, cand->domain == ATTEST_DOMAIN_DEVICE);

    const char *target = fuzz_target_of(cand->kernel);
    if (strcmp(a.engine, "libfuzzer") == 0 && target == NULL) {
        if (a.engine_given)
            return attest_cli_usage_error(VERB, "--engine libfuzzer: %s has no libFuzzer target "
                                          "(--engine search works for every kernel)",
                                          attest_kernel_name(cand->kernel));
        a.engine = "search";
    }
    if (strcmp(a.engine, "libfuzzer") == 0)
        return run_libfuzzer(&a, cand, command_line);
    if ((rc = refuse_libfuzzer_options(&a)) >= 0) return rc;

    attest_job job;
    memset(&job, 0, sizeof job);
    job.candidate = cand;
    job.candidate_spec = a.r.candidate;
    job.gen = attest_cli_gen_defaults_for(cand);
    if ((rc = attest_cli_gen_apply(VERB, &a.r.gen, &job.gen)) >= 0) return rc;
    job.cases = UINT64_C(1) << 40; /* the time limit ends it */
    job.seed = a.r.seed;

    attest_engine_options opt = attest_engine_defaults();
    attest_policy *policy = NULL;
    if (a.r.policy) {
        if (attest_policy_load(a.r.policy, &policy) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
        opt.runner.policy = policy;
    }
    opt.runner.reruns = a.r.reruns;
    opt.runner.timeout_seconds = a.r.timeout;
    opt.out_path = a.r.out;
    opt.progress = !a.r.quiet && attest_cli_interactive();
    opt.print_failures = 0;
    opt.max_failures = 1;
    opt.command_line = command_line;
    opt.jobs = (uint32_t)a.r.jobs;
    opt.time_limit = a.time;
    printf("attest fuzz: %s (%s), up to %.0f s over %d job%s, seed %" PRIu64
           " (--seed %" PRIu64 " repeats it), results in %s\n",
           cand->name, attest_kernel_name(cand->kernel), a.time, a.r.jobs, a.r.jobs == 1 ? "" : "s",
           a.r.seed, a.r.seed, a.r.out);
    fflush(stdout);
    attest_engine_totals totals;
    attest_status st = attest_engine_run(&job, 1, &opt, stdout, &totals);
    if (st != ATTEST_OK) {
        attest_policy_free(policy);
        fflush(stdout);
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    }
    const double rate = totals.seconds > 0 ? (double)totals.judged / totals.seconds : 0.0;
    printf("attest fuzz: %" PRIu64 " cases in %.2f s (%.0f cases/s over %d job%s), %" PRIu64
           " finding%s\n",
           totals.judged, totals.seconds, rate, a.r.jobs, a.r.jobs == 1 ? "" : "s", totals.failures,
           totals.failures == 1 ? "" : "s");
    int exit_code = totals.failures ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
    if (totals.failures) {
        /* The search stops at the first failing case (taken in campaign order). */
        printf("time to first finding: %.3f s (%" PRIu64 " cases)\n", totals.seconds,
               totals.judged);
        attest_case_record found[4];
        const size_t n = first_failures(a.r.out, found, 4);
        attest_runner_options ropt = opt.runner; /* policy NULL: the embedded default */
        ropt.reference = attest_ref_simulated;
        for (size_t i = 0; i < n; i++) {
            attest_finding_origin o;
            memset(&o, 0, sizeof o);
            snprintf(o.id, sizeof o.id, "%016" PRIx64, found[i].seed);
            snprintf(o.what, sizeof o.what, "case seed 0x%016" PRIx64, found[i].seed);
            snprintf(o.how, sizeof o.how,
                     "generated from seed 0x%016" PRIx64 " (attest run --kernel %s --candidate %s "
                     "--case-seed 0x%016" PRIx64 ")",
                     found[i].seed, attest_kernel_name(cand->kernel), a.r.candidate, found[i].seed);
            o.expected = 1;
            o.verdict = found[i].verdict;
            o.gates = found[i].failed_gates;
            attest_case c;
            memset(&c, 0, sizeof c);
            attest_status fst = attest_generate_case(&job.gen, found[i].seed, &c);
            if (fst == ATTEST_OK) {
                const attest_finding_options fo = finding_options(&a);
                fst = attest_fuzz_finding(&fo, cand, &ropt, &c, &o, (int)i + 1);
            }
            attest_case_free(&c);
            if (fst != ATTEST_OK) {
                fflush(stdout);
                attest_cli_usage_error(VERB, "%s", attest_last_error());
                exit_code = ATTEST_EXIT_USAGE;
            }
        }
    } else {
        exit_code = attest_engine_exit_status(&totals); /* a signal, or nothing judged */
        if (exit_code == ATTEST_EXIT_FAILED && !totals.stop_signal && !totals.interrupted)
            printf("result: FAIL (nothing was checked: %s)\n",
                   totals.judged ? "the candidate declined every case (UNSUPPORTED)"
                                 : "no case was judged");
    }
    attest_policy_free(policy);
    return exit_code;
}
