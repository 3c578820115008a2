/* attest fuzz: a time-boxed search for a failing case of one candidate, over N worker processes,
 * that ends with every finding minimized and saved as a case file `attest check` fails the
 * same way.
 *
 * The search engine here is the generator: fresh seeds (cases drawn from a campaign seed that
 * changes every run unless --seed pins it) under the generator's small default bounds, which
 * reach every edge class the generator knows (lengths 0, 1, page boundaries +-1, holes,
 * duplicates, all-invalid tiles, NaN bytes, +-inf sinks) within a few hundred cases. It needs no
 * libFuzzer, so it runs on any build; the libFuzzer targets (fuzz/) mutate beyond what the
 * generator draws and are driven by libFuzzer itself (fuzz/README.md).
 *
 * A finding is the first failing case (the search stops there, as libFuzzer does). It is judged
 * again, then shrunk (attest/minimize.h) while it keeps the same verdict and failed gates, and
 * saved with its reference outputs as FINDINGS/finding-<kernel>-<verdict>-<seed>.h5; the saved
 * file is loaded back and judged once more, so what is printed is what `attest check` sees.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

#define VERB "fuzz"
#define DEFAULT_OUT "attest-fuzz.h5"

static void usage(FILE *f)
{
    fputs("usage: attest fuzz --candidate SPEC [--kernel K] [--time SEC] [--jobs N] [options]\n"
          "\n"
          "Searches for a case the candidate fails, for SEC seconds over N worker processes,\n"
          "on freshly generated cases; stops at the first failing case, shrinks it (fewer\n"
          "requests, query rows, heads and index entries, shorter lengths) while it fails\n"
          "the same way (same verdict and gates), and saves it with its reference outputs as a\n"
          "case file for attest check / attest replay / the golden fixtures.\n"
          "Exit status: 0 nothing found, 1 a finding (saved), 2 usage or input error.\n"
          "\n"
          "  --candidate SPEC   built-in name (attest list) or path/lib.so:NAME\n"
          "  --kernel K         must match the candidate's kernel (default: its own)\n"
          "  --time SEC         how long to search (default 60)\n"
          "  --jobs N           worker processes (default: every core)\n"
          "  --seed S           campaign seed (default: from the clock, printed)\n"
          "  --out FILE         every judged case in an HDF5 results file\n"
          "                     (default " DEFAULT_OUT ")\n"
          "  --force            replace an earlier results file at --out (nothing else)\n"
          "  --findings DIR     where minimized findings go (default: .)\n"
          "  --reruns N         runs per case, compared bitwise (default 1; 2 catches\n"
          "                     nondeterministic kernels)\n"
          "  --timeout SEC      per-run time limit (default 10)\n"
          "  --max-tries N      judgements the minimizer may spend (default 4000)\n"
          "  --policy FILE      tolerance policy (default: embedded)\n"
          "  --quiet            no progress line\n"
          "generator bounds:\n" ATTEST_CLI_GEN_USAGE,
          f);
}

enum {
    OPT_TIME = 256, OPT_JOBS, OPT_SEED, OPT_FINDINGS, OPT_RERUNS, OPT_TIMEOUT, OPT_MAX_TRIES,
    OPT_POLICY, OPT_QUIET, OPT_FORCE
};

static const struct option long_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"candidate", required_argument, NULL, 'c'},
    {"kernel", required_argument, NULL, 'k'},
    {"out", required_argument, NULL, 'o'},
    {"time", required_argument, NULL, OPT_TIME},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"findings", required_argument, NULL, OPT_FINDINGS},
    {"reruns", required_argument, NULL, OPT_RERUNS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"max-tries", required_argument, NULL, OPT_MAX_TRIES},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"force", no_argument, NULL, OPT_FORCE},
    ATTEST_CLI_GEN_LONG_OPTIONS,
    {NULL, 0, NULL, 0},
};

typedef struct fuzz_args {
    const char *candidate, *kernel, *out, *findings, *policy;
    double time, timeout;
    int32_t jobs, reruns, max_tries;
    uint64_t seed;
    int have_seed, quiet, force;
    attest_cli_gen_bounds gen;
} fuzz_args;

#define BAD(what) return attest_cli_bad_value(VERB, what, optarg)

static int parse(int argc, char **argv, fuzz_args *a)
{
    memset(a, 0, sizeof *a);
    a->out = DEFAULT_OUT;
    a->findings = ".";
    a->time = 60;
    a->timeout = 10;
    a->reruns = 1;
    a->max_tries = 4000;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    a->jobs = cores > 0 && cores < 4096 ? (int32_t)cores : 1;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
        if (attest_cli_gen_is_option(ch)) {
            const int rc = attest_cli_gen_option(VERB, ch, optarg, &a->gen);
            if (rc >= 0) return rc;
            continue;
        }
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'c': a->candidate = optarg; break;
        case 'k': a->kernel = optarg; break;
        case 'o': a->out = optarg; break;
        case OPT_FINDINGS: a->findings = optarg; break;
        case OPT_POLICY: a->policy = optarg; break;
        case OPT_QUIET: a->quiet = 1; break;
        case OPT_FORCE: a->force = 1; break;
        case OPT_TIME:
            if (attest_cli_parse_double(optarg, 0.1, 86400.0 * 365, &a->time)) BAD("time");
            break;
        case OPT_TIMEOUT:
            if (attest_cli_parse_double(optarg, 0.01, 86400.0, &a->timeout)) BAD("timeout");
            break;
        case OPT_JOBS:
            if (attest_cli_parse_i32(optarg, 1, 4096, &a->jobs)) BAD("jobs");
            break;
        case OPT_RERUNS:
            if (attest_cli_parse_i32(optarg, 1, 1000, &a->reruns)) BAD("reruns");
            break;
        case OPT_MAX_TRIES:
            if (attest_cli_parse_i32(optarg, 1, 1000000, &a->max_tries)) BAD("max-tries");
            break;
        case OPT_SEED:
            if (attest_cli_parse_u64(optarg, &a->seed)) BAD("seed");
            a->have_seed = 1;
            break;
        default: return attest_cli_getopt_error(VERB, ch, argv);
        }
    }
    if (optind < argc)
        return attest_cli_usage_error(VERB, "unexpected argument '%s'", argv[optind]);
    if (a->candidate == NULL)
        return attest_cli_usage_error(VERB, "--candidate is required (attest list shows them)");
    return -1;
}

/* --- judging and minimizing one finding ------------------------------------------------- */

typedef struct judge_ctx {
    attest_runner *runner;
    attest_verdict verdict;
    uint32_t gates;
} judge_ctx;

static attest_status judge(attest_runner *runner, const attest_case *c, attest_case_record *rec)
{
    memset(rec, 0, sizeof *rec);
    return attest_runner_judge(runner, c, rec, NULL);
}

/* The minimizer's predicate: the same verdict and the same failed gates. */
static int same_failure(const attest_case *c, void *p)
{
    judge_ctx *j = p;
    attest_case_record rec;
    if (judge(j->runner, c, &rec) != ATTEST_OK) return -1;
    return rec.verdict == j->verdict && rec.failed_gates == j->gates;
}

static void describe_size(const attest_case *c, char *buf, size_t cap)
{
    const attest_case_size z = attest_case_size_of(c);
    const int mla = c->kernel == ATTEST_KERNEL_MLA_DECODE;
    snprintf(buf, cap, "b=%d %s=%d %s=%d %s=%" PRId64, z.requests, mla ? "s_q" : "next_n", z.rows,
             mla ? "h" : "heads", z.heads, mla ? "index entries" : "positions", z.entries);
}

/* Saves c with its float64 reference outputs as the expected outputs (as golden fixtures hold
 * them). */
static attest_status save_finding(const char *path, const attest_case *c, const char *note,
                                  const char *replay)
{
    attest_casefile_output outs[ATTEST_RECORD_MAX_OUTPUTS];
    double *ref[ATTEST_RECORD_MAX_OUTPUTS] = {0};
    size_t k = 0;
    attest_status st = ATTEST_OK;
    for (size_t i = 0; i < c->num_tensors && k < ATTEST_RECORD_MAX_OUTPUTS; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        outs[k] = attest_casefile_output_of(t);
        outs[k].dtype = ATTEST_DTYPE_F64;
        ref[k] = malloc(attest_tensor_count(t) * sizeof(double) + 1);
        if (!ref[k]) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: expected outputs", path);
        outs[k].data = ref[k];
        k++;
    }
    if (st == ATTEST_OK) st = attest_engine_reference(c, ref);
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.expected = outs;
    x.num_expected = k;
    x.note = note;
    x.replay = replay;
    if (st == ATTEST_OK) st = attest_casefile_save(path, NULL, c, &x);
    for (size_t i = 0; i < k; i++) free(ref[i]);
    return st;
}

/* Judges, minimizes and saves the failing case of seed `seed`. Returns ATTEST_OK when the
 * finding was saved (or did not fail again: then it says so). */
static attest_status handle_finding(const fuzz_args *a, const attest_candidate *cand,
                                    const attest_runner_options *ropt, const attest_job *job,
                                    const attest_case_record *found, int number)
{
    attest_case c, small;
    memset(&c, 0, sizeof c);
    memset(&small, 0, sizeof small);
    ATTEST_FORWARD(attest_generate_case(&job->gen, found->seed, &c));
    attest_runner *runner = NULL;
    attest_status st = attest_runner_create(cand, ropt, &runner);
    attest_case_record rec;
    if (st == ATTEST_OK) st = judge(runner, &c, &rec);
    char gates[96], before[160], after[160];
    if (st == ATTEST_OK &&
        (rec.verdict != found->verdict || rec.failed_gates != found->failed_gates)) {
        attest_gate_mask_string(found->failed_gates, gates, sizeof gates);
        printf("finding %d (seed 0x%016" PRIx64 "): %s (%s) did not repeat: judged again it is %s; "
               "the candidate is not deterministic across processes, kept unminimized\n",
               number, found->seed, attest_verdict_name(found->verdict), gates,
               attest_verdict_name(rec.verdict));
    }
    judge_ctx jc = {.runner = runner, .verdict = rec.verdict, .gates = rec.failed_gates};
    attest_minimize_stats ms = {0, 0};
    if (st == ATTEST_OK) {
        if (attest_verdict_is_failure(rec.verdict))
            st = attest_minimize_case(&c, same_failure, &jc, (uint32_t)a->max_tries, &small, &ms);
        else
            st = attest_minimize_case(&c, same_failure, &jc, 1, &small, &ms); /* a plain copy */
    }
    char path[4096], note[1024], replay[4400], params[ATTEST_PARAM_STRING_MAX];
    if (st == ATTEST_OK) {
        describe_size(&c, before, sizeof before);
        describe_size(&small, after, sizeof after);
        attest_gate_mask_string(rec.failed_gates, gates, sizeof gates);
        snprintf(path, sizeof path, "%s/finding-%s-%s-%016" PRIx64 ".h5", a->findings,
                 attest_kernel_name(c.kernel), attest_verdict_name(rec.verdict), found->seed);
        for (char *p = strrchr(path, '/') + 1; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
        snprintf(note, sizeof note,
                 "attest fuzz finding: %s%s%s%s of %s; generated from seed 0x%016" PRIx64
                 " (attest run --kernel %s --candidate %s --case-seed 0x%016" PRIx64
                 "), minimized from %s to %s in %u judgements",
                 attest_verdict_name(rec.verdict), gates[0] ? " (" : "", gates, gates[0] ? ")" : "",
                 cand->name, found->seed, attest_kernel_name(c.kernel), a->candidate, found->seed,
                 before, after, ms.tries);
        snprintf(replay, sizeof replay, "attest check %s --candidate %s", path, a->candidate);
        st = save_finding(path, &small, note, replay);
    }
    /* What attest check will see: the file, loaded back, judged once more. */
    attest_case loaded;
    memset(&loaded, 0, sizeof loaded);
    attest_case_record again;
    memset(&again, 0, sizeof again);
    if (st == ATTEST_OK) st = attest_casefile_load(path, NULL, &loaded);
    if (st == ATTEST_OK) st = judge(runner, &loaded, &again);
    if (st == ATTEST_OK) {
        if (attest_case_param_string(&loaded, params, sizeof params) != ATTEST_OK) params[0] = '\0';
        printf("finding %d: %s%s%s%s, case seed 0x%016" PRIx64 "\n", number,
               attest_verdict_name(rec.verdict), gates[0] ? " (" : "", gates, gates[0] ? ")" : "",
               found->seed);
        printf("  minimized: %s -> %s (%u judgements, %u reductions kept)\n", before, after,
               ms.tries, ms.accepted);
        printf("  saved: %s\n  %s\n", path, params);
        if (again.verdict == rec.verdict && again.failed_gates == rec.failed_gates)
            printf("  check: %s   (fails the same way)\n", replay);
        else
            printf("  check: %s   (WARNING: the saved case judged %s, not %s)\n", replay,
                   attest_verdict_name(again.verdict), attest_verdict_name(rec.verdict));
    }
    attest_case_free(&loaded);
    attest_case_free(&small);
    attest_case_free(&c);
    attest_runner_destroy(runner);
    return st;
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

int attest_cmd_fuzz(int argc, char **argv)
{
    char command_line[2048];
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    fuzz_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) return rc;
    const char *inputs[] = {a.policy, a.candidate};
    if ((rc = attest_cli_check_output(VERB, a.out, ATTEST_OUTPUT_RESULTS, a.force, inputs, 2)) >=
        0)
        return rc;
    const attest_candidate *cand = NULL;
    if (attest_candidate_resolve(a.candidate, &cand) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    if (a.kernel) {
        attest_kernel k;
        if (attest_kernel_from_name(a.kernel, &k) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
        if (k != cand->kernel)
            return attest_cli_usage_error(VERB, "candidate '%s' is a %s kernel, not %s",
                                          cand->name, attest_kernel_name(cand->kernel), a.kernel);
    }
    struct stat sb;
    if (stat(a.findings, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return attest_cli_usage_error(VERB, "--findings %s: not a directory", a.findings);
    if (access(a.findings, W_OK) != 0)
        return attest_cli_usage_error(VERB, "--findings %s: not writable: %s", a.findings,
                                      strerror(errno));
    if (!a.have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t s = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
                     ((uint64_t)getpid() << 32);
        a.seed = attest_case_seed(s, 0) & 0xFFFFFFFFFFFFull; /* short enough to retype */
    }

    attest_job job;
    memset(&job, 0, sizeof job);
    job.candidate = cand;
    job.candidate_spec = a.candidate;
    job.gen = attest_gen_defaults(cand->kernel);
    if ((rc = attest_cli_gen_apply(VERB, &a.gen, &job.gen)) >= 0) return rc;
    job.cases = UINT64_C(1) << 40; /* the time limit ends it */
    job.seed = a.seed;

    attest_engine_options opt = attest_engine_defaults();
    attest_policy *policy = NULL;
    if (a.policy) {
        if (attest_policy_load(a.policy, &policy) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
        opt.runner.policy = policy;
    }
    opt.runner.reruns = a.reruns;
    opt.runner.timeout_seconds = a.timeout;
    opt.out_path = a.out;
    opt.progress = !a.quiet && attest_cli_interactive();
    opt.print_failures = 0;
    opt.max_failures = 1;
    opt.command_line = command_line;
    opt.jobs = (uint32_t)a.jobs;
    opt.time_limit = a.time;
    printf("attest fuzz: %s (%s), up to %.0f s over %d job%s, seed %" PRIu64
           " (--seed %" PRIu64 " repeats it), results in %s\n",
           cand->name, attest_kernel_name(cand->kernel), a.time, a.jobs, a.jobs == 1 ? "" : "s",
           a.seed, a.seed, a.out);
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
           totals.judged, totals.seconds, rate, a.jobs, a.jobs == 1 ? "" : "s", totals.failures,
           totals.failures == 1 ? "" : "s");
    int exit_code = totals.failures ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
    if (totals.failures) {
        /* The search stops at the first failing case (taken in campaign order). */
        printf("time to first finding: %.3f s (%" PRIu64 " cases)\n", totals.seconds,
               totals.judged);
        attest_case_record found[4];
        const size_t n = first_failures(a.out, found, 4);
        attest_runner_options ropt = opt.runner; /* policy NULL: the embedded default */
        ropt.reference = attest_ref_simulated;
        for (size_t i = 0; i < n; i++)
            if (handle_finding(&a, cand, &ropt, &job, &found[i], (int)i + 1) != ATTEST_OK) {
                fflush(stdout);
                attest_cli_usage_error(VERB, "%s", attest_last_error());
                exit_code = ATTEST_EXIT_USAGE;
            }
    } else {
        exit_code = attest_engine_exit_status(&totals); /* a signal, or nothing judged */
    }
    attest_policy_free(policy);
    return exit_code;
}
