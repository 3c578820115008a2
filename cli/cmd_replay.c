/* attest replay: runs one stored case (a case file, or a failing case of a results file)
 * against a candidate and prints the comparison in detail. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "attest/casefile.h"
#include "attest/registry.h"
#include "attest/report.h"
#include "attest/results.h"
#include "commands.h"
#include "engine.h"

static void usage(FILE *f)
{
    fputs("usage: attest replay FILE.h5 --candidate SPEC [--case ID | --group G] [options]\n"
          "\n"
          "FILE is a case file (docs/case-format.md) or a results file; for a results file,\n"
          "--case names the failing case whose stored repro to run (attest show prints them).\n"
          "Exit status: 0 the case passed, 1 it failed, 2 usage or input error.\n"
          "\n"
          "  --candidate SPEC  built-in name or path/lib.so:NAME (default for a results file:\n"
          "                    the candidate recorded for that case)\n"
          "  --case ID         case id in a results file\n"
          "  --group G         case group in a multi-case file (default: the root or the only one)\n"
          "  --policy FILE     tolerance policy (default: embedded)\n"
          "  --reruns N        runs, compared bitwise (default 2)\n"
          "  --timeout SEC     per-run time limit (default 10)\n"
          "  --no-isolate      run in this process\n",
          f);
}

typedef struct replay_args {
    const char *file, *candidate, *group, *policy;
    uint64_t case_id;
    int has_case;
    int32_t reruns;
    double timeout;
    int no_isolate;
} replay_args;

static int parse(int argc, char **argv, replay_args *a)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"candidate", required_argument, NULL, 'c'},
        {"case", required_argument, NULL, 'i'},
        {"group", required_argument, NULL, 'g'},
        {"policy", required_argument, NULL, 'p'},
        {"reruns", required_argument, NULL, 'r'},
        {"timeout", required_argument, NULL, 't'},
        {"no-isolate", no_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    a->reruns = 2;
    a->timeout = 10.0;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'c': a->candidate = optarg; break;
        case 'g': a->group = optarg; break;
        case 'p': a->policy = optarg; break;
        case 'n': a->no_isolate = 1; break;
        case 'i':
            if (attest_cli_parse_u64(optarg, &a->case_id))
                return attest_cli_bad_value("replay", "case", optarg);
            a->has_case = 1;
            break;
        case 'r':
            if (attest_cli_parse_i32(optarg, 1, 1000, &a->reruns))
                return attest_cli_bad_value("replay", "reruns", optarg);
            break;
        case 't':
            if (attest_cli_parse_double(optarg, 0.01, 86400.0, &a->timeout))
                return attest_cli_bad_value("replay", "timeout", optarg);
            break;
        default: return attest_cli_getopt_error("replay", ch, argv);
        }
    }
    if (optind + 1 != argc)
        return attest_cli_usage_error("replay", "expected one case or results file");
    a->file = argv[optind];
    return -1;
}

static attest_status only_group(const char *group, attest_kernel kernel, void *user)
{
    (void)kernel;
    char *out = user;
    if (out[0] != '\0')
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                           "the file holds several cases ('%s', '%s', ...): name one with --group",
                           out, group);
    snprintf(out, 256, "%s", group);
    return ATTEST_OK;
}

/* Loads the case to replay; *stored (may stay zeroed) receives the record of a results file. */
static int load_case(const replay_args *a, attest_case *c, attest_case_record *stored,
                     int *from_results)
{
    attest_results_reader *r = NULL;
    *from_results = 0;
    if (attest_results_open_read(a->file, &r) == ATTEST_OK) {
        *from_results = 1;
        int has_repro = 0;
        attest_status st = ATTEST_OK;
        if (!a->has_case)
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                             "%s is a results file: name the case with --case ID", a->file);
        if (st == ATTEST_OK) st = attest_results_find_case(r, a->case_id, stored, &has_repro);
        if (st == ATTEST_OK && !has_repro)
            st = attest_fail(ATTEST_ERR_NOT_FOUND,
                             "case %" PRIu64 " of %s has no stored repro (only failing cases "
                             "keep one); regenerate it with attest run --case-seed 0x%016" PRIx64,
                             a->case_id, a->file, stored->seed);
        if (st == ATTEST_OK) st = attest_results_load_repro(r, a->case_id, c);
        attest_results_close_read(r);
        return st == ATTEST_OK ? -1 : attest_cli_usage_error("replay", "%s", attest_last_error());
    }
    if (a->has_case)
        return attest_cli_usage_error("replay", "--case applies to results files; %s is not one",
                                      a->file);
    char group[256] = "";
    /* User files first go through a child process: corrupt HDF5 metadata can crash libhdf5. */
    if (attest_casefile_probe(a->file, a->group) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    if (a->group) {
        snprintf(group, sizeof group, "%s", a->group);
    } else if (attest_casefile_list_groups(a->file, only_group, group) != ATTEST_OK) {
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    }
    if (attest_casefile_load(a->file, group, c) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    return -1;
}

int attest_cmd_replay(int argc, char **argv)
{
    replay_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) return rc;
    attest_case c;
    attest_case_record stored;
    memset(&c, 0, sizeof c);
    memset(&stored, 0, sizeof stored);
    int from_results = 0;
    if ((rc = load_case(&a, &c, &stored, &from_results)) >= 0) return rc;

    const char *spec = a.candidate ? a.candidate : (from_results ? stored.candidate : NULL);
    const attest_candidate *cand = NULL;
    attest_policy *policy = NULL;
    attest_runner *runner = NULL;
    attest_case_record rec;
    attest_case_outputs kept;
    memset(&rec, 0, sizeof rec);
    memset(&kept, 0, sizeof kept);
    attest_status st = ATTEST_OK;
    if (spec == NULL || *spec == '\0')
        st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "--candidate is required");
    if (st == ATTEST_OK) st = attest_candidate_resolve(spec, &cand);
    if (st == ATTEST_OK && cand->kernel != c.kernel)
        st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "candidate '%s' is a %s kernel; the case is %s",
                         cand->name, attest_kernel_name(cand->kernel), attest_kernel_name(c.kernel));
    if (st == ATTEST_OK)
        st = a.policy ? attest_policy_load(a.policy, &policy) : attest_policy_default(&policy);
    if (st == ATTEST_OK) {
        attest_runner_options opt = attest_runner_defaults();
        opt.reruns = a.reruns;
        opt.timeout_seconds = a.timeout;
        opt.isolate = !a.no_isolate;
        opt.policy = policy;
        opt.reference = attest_engine_reference;
        st = attest_runner_create(cand, &opt, &runner);
    }
    if (st == ATTEST_OK) st = attest_runner_judge(runner, &c, &rec, &kept);
    if (st != ATTEST_OK) {
        rc = attest_cli_usage_error("replay", "%s", attest_last_error());
    } else {
        rec.case_id = stored.case_id;
        attest_tolerance tol[ATTEST_RECORD_MAX_OUTPUTS];
        int have_tol = 1;
        for (int32_t k = 0; k < rec.num_outputs && k < ATTEST_RECORD_MAX_OUTPUTS; k++)
            if (attest_policy_lookup(policy, c.kernel, rec.outputs[k].output, &tol[k]) != ATTEST_OK)
                have_tol = 0;
        char which[64] = "";
        if (from_results) snprintf(which, sizeof which, " case %" PRIu64, a.case_id);
        printf("replay of %s%s with %s (policy %s, hash %s)\n", a.file, which, cand->name,
               attest_policy_name(policy), attest_policy_hash(policy));
        if (from_results)
            printf("stored verdict: %s   replayed verdict: %s%s\n",
                   attest_verdict_name(stored.verdict), attest_verdict_name(rec.verdict),
                   stored.verdict == rec.verdict ? " (reproduced)" : " (DIFFERENT)");
        attest_report_case_detail(stdout, &rec, &c, have_tol ? tol : NULL);
        rc = attest_verdict_is_failure(rec.verdict) ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
    }
    attest_case_outputs_free(&kept);
    attest_runner_destroy(runner);
    attest_policy_free(policy);
    attest_case_free(&c);
    return rc;
}
