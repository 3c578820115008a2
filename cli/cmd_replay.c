/* attest replay: runs one stored case (a case file, or a failing case of a results file)
 * against a candidate and prints the comparison in detail. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "attest/reference.h"
#include "attest/casefile.h"
#include "attest/generator.h"
#include "attest/registry.h"
#include "attest/report.h"
#include "attest/results.h"
#include "baseline.h"
#include "commands.h"
#include "check.h"
#include "topk_files.h"
#include "attest/campaign.h"

static void usage(FILE *f)
{
    fputs("usage: attest replay FILE.h5 --candidate SPEC [--case ID | --group G] [options]\n"
          "\n"
          "FILE is a case file (docs/case-format.md) or a results file; for a results file,\n"
          "--case names the case to run: its stored repro, or (when none was kept) the case\n"
          "regenerated from its seed and the generator bounds the file records.\n"
          "Exit status: 0 the case passed, 1 it failed, 2 usage or input error.\n"
          "\n"
          "  --candidate SPEC  built-in name or path/lib.so:NAME (default for a results file:\n"
          "                    the candidate recorded for that case; a plugin's bare NAME\n"
          "                    finds the library the run recorded)\n"
          "  --case ID         case id in a results file\n"
          "  --group G         case group in a multi-case file (default: the root or the only one)\n"
          "  --against reference|stored\n"
          "                    judge against the CPU reference (default) or against the expected\n"
          "                    outputs the case file stores (as attest check --against stored)\n"
          "  --policy FILE     tolerance policy (default: embedded)\n"
          "  --reruns N        runs, compared bitwise (default 2)\n"
          "  --timeout SEC     per-run time limit (default 10)\n"
          "  --no-isolate      run in this process\n"
          "  --max-case-mb M   refuse cases declaring more than M MiB of tensors (default 4096)\n",
          f);
}

typedef struct replay_args {
    const char *file, *candidate, *group, *policy;
    int against_stored;
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
        {"against", required_argument, NULL, 'a'},
        {"max-case-mb", required_argument, NULL, 'M'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    a->reruns = 2;
    a->timeout = 10.0;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", options)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'c': a->candidate = optarg; break;
        case 'g': a->group = optarg; break;
        case 'p': a->policy = optarg; break;
        case 'n': a->no_isolate = 1; break;
        case 'M': {
            int rc = attest_cli_max_case_mb("replay", optarg);
            if (rc >= 0) return rc;
            break;
        }
        case 'a':
            if (!strcmp(optarg, "stored")) a->against_stored = 1;
            else if (strcmp(optarg, "reference")) return attest_cli_bad_value("replay", "against", optarg);
            break;
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

/* The kernel family named at the head of a canonical parameter string ("kernel=indexer,..."). */
static int kernel_of_params(const char *params, attest_kernel *k)
{
    char name[32];
    if (strncmp(params, "kernel=", 7) != 0) return -1;
    size_t n = strcspn(params + 7, ",");
    if (n >= sizeof name) return -1;
    memcpy(name, params + 7, n);
    name[n] = '\0';
    return attest_kernel_from_name(name, k) == ATTEST_OK ? 0 : -1;
}

/* A case of a results file that kept no repro: drawn again from its seed with the bounds its
 * job recorded, and checked against the row's parameter string so a different draw (another
 * attest version, edited provenance) is an error, not a silent replay of some other case. */
static attest_status regenerate(const replay_args *a, const attest_case_record *stored,
                                const attest_gen_options *gen, attest_case *c)
{
    ATTEST_FORWARD(attest_generate_case(gen, stored->seed, c));
    char params[ATTEST_PARAM_STRING_MAX];
    attest_status st = attest_case_param_string(c, params, sizeof params);
    if (st == ATTEST_OK && strncmp(params, stored->params, sizeof stored->params) != 0)
        st = attest_fail(ATTEST_ERR_FORMAT,
                         "case %" PRIu64 " of %s regenerates as '%s', not as recorded ('%.*s')",
                         a->case_id, a->file, params, (int)sizeof stored->params, stored->params);
    if (st != ATTEST_OK) attest_case_free(c);
    return st;
}

/* Loads the case to replay; *stored (may stay zeroed) receives the record of a results file,
 * job_spec the spec its job recorded ("" when none). */
static int load_case(const replay_args *a, attest_case *c, attest_case_record *stored,
                     int *from_results, char *job_spec, size_t job_spec_cap,
                     char group[256], int *regenerated)
{
    attest_results_reader *r = NULL;
    *from_results = 0;
    job_spec[0] = '\0';
    /* Results files are read in a child first, as case files are below: corrupt HDF5
     * metadata can crash or hang libhdf5. With --case the file must be a results file. */
    if (a->has_case && attest_results_probe(a->file, 1) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    if ((a->has_case || attest_results_probe(a->file, 0) == ATTEST_OK) &&
        attest_results_open_read(a->file, &r) == ATTEST_OK) {
        *from_results = 1;
        int has_repro = 0, have_job = 0;
        attest_gen_options gen;
        attest_kernel kernel = ATTEST_KERNEL_INDEXER;
        attest_status st = ATTEST_OK;
        if (a->against_stored)
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                             "--against stored applies to case files; %s is a results file",
                             a->file);
        if (st == ATTEST_OK && !a->has_case)
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                             "%s is a results file: name the case with --case ID", a->file);
        if (st == ATTEST_OK) st = attest_results_find_case(r, a->case_id, stored, &has_repro);
        if (st == ATTEST_OK && kernel_of_params(stored->params, &kernel) == 0) {
            have_job = attest_engine_find_job(attest_results_provenance_of(r)->jobs,
                                              stored->candidate, kernel, job_spec, job_spec_cap,
                                              &gen);
            if (have_job < 0) {
                attest_results_close_read(r);
                return ATTEST_EXIT_USAGE;
            }
        }
        if (st == ATTEST_OK && has_repro) {
            /* The repro is read in a child first too (it may be a file of its own). */
            char where[PATH_MAX], repro_group[64];
            st = attest_results_repro_location(r, a->case_id, where, sizeof where, repro_group,
                                               sizeof repro_group);
            if (st == ATTEST_OK) st = attest_casefile_probe(where, repro_group);
            if (st == ATTEST_OK) st = attest_results_load_repro(r, a->case_id, c);
        }
        else if (st == ATTEST_OK && have_job) {
            st = regenerate(a, stored, &gen, c);
            *regenerated = 1;
        }
        else if (st == ATTEST_OK)
            st = attest_fail(ATTEST_ERR_NOT_FOUND,
                             "case %" PRIu64 " of %s has no stored repro and the file records no "
                             "generator bounds to draw it again from its seed 0x%016" PRIx64,
                             a->case_id, a->file, stored->seed);
        attest_results_close_read(r);
        return st == ATTEST_OK ? -1 : attest_cli_usage_error("replay", "%s", attest_last_error());
    }
    if (a->has_case)
        return attest_cli_usage_error("replay", "--case applies to results files; %s is not one",
                                      a->file);
    group[0] = '\0';
    /* User files first go through a child process: corrupt HDF5 metadata can crash libhdf5. */
    if (attest_casefile_probe(a->file, a->group) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    if (a->group) {
        snprintf(group, 256, "%s", a->group);
    } else if (attest_casefile_list_groups(a->file, only_group, group) != ATTEST_OK) {
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    }
    if (attest_casefile_load(a->file, group, c) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    return -1;
}

/* Replaces the verdict and metrics of rec (judged against the reference) with those against
 * the expected outputs the case file stores, as attest check --against stored judges them. */
static attest_status judge_stored(const replay_args *a, const char *group, const attest_case *c,
                                  const attest_candidate *cand, const attest_policy *policy,
                                  const attest_case_outputs *kept, attest_case_record *rec,
                                  char *notes, size_t notes_cap)
{
    check_expected e;
    memset(&e, 0, sizeof e);
    ATTEST_FORWARD(check_expected_load(a->file, group, c, &e));
    attest_status st = ATTEST_OK;
    if (e.count == 0)
        st = attest_fail(ATTEST_ERR_NOT_FOUND, "%s stores no expected outputs to judge against",
                         a->file);
    for (int32_t j = 0; j < e.count && st == ATTEST_OK; j++)
        if (e.output_index[j] >= kept->num_outputs || !kept->candidate[e.output_index[j]])
            st = attest_fail(ATTEST_ERR_NOT_FOUND,
                             "the candidate's outputs were not kept (verdict %s): nothing to "
                             "compare with the stored ones",
                             attest_verdict_name(rec->verdict));
    attest_tensor_metrics metrics[ATTEST_RECORD_MAX_OUTPUTS];
    uint32_t gates = 0;
    memset(metrics, 0, sizeof metrics);
    if (st == ATTEST_OK)
        st = check_compare_stored(c, &e, kept->candidate, kept->bound, &cand->conventions, policy,
                                  metrics, &gates, notes, notes_cap);
    if (st == ATTEST_OK) {
        const attest_verdict v = check_stored_verdict(rec, gates);
        /* The runner's message describes the comparison with the reference; a crash or an
         * error return stays, since it decides the verdict. */
        if (rec->verdict == ATTEST_VERDICT_OK || rec->verdict == ATTEST_VERDICT_MISMATCH)
            snprintf(rec->message, sizeof rec->message, "%s",
                     gates ? "differs from the stored expected outputs" : "");
        memcpy(rec->outputs, metrics, sizeof metrics);
        rec->num_outputs = e.count;
        rec->failed_gates = gates;
        rec->vacuous = 0;
        for (int32_t j = 0; j < e.count; j++)
            if (metrics[j].vacuous) rec->vacuous = 1;
        rec->verdict = v;
    }
    check_expected_free(&e);
    return st;
}

int attest_cmd_replay(int argc, char **argv)
{
    replay_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) return rc;
    /* A top-k row or case file is the top-k family's (topk_files.h). */
    if ((rc = attest_topk_replay(a.file, a.has_case, a.case_id, a.candidate, a.reruns, a.timeout,
                                 a.no_isolate)) >= 0)
        return rc;
    attest_case c;
    attest_case_record stored;
    memset(&c, 0, sizeof c);
    memset(&stored, 0, sizeof stored);
    int from_results = 0;
    char job_spec[4096 + 256], group[256];
    int regenerated = 0;
    if ((rc = load_case(&a, &c, &stored, &from_results, job_spec, sizeof job_spec, group,
                        &regenerated)) >= 0)
        return rc;

    /* The candidate: as given; a bare name that is no built-in but the name of the plugin this
     * case ran with means that plugin (the results file recorded its library). */
    const char *spec = a.candidate;
    const attest_candidate *probe = NULL;
    if (job_spec[0] && (spec == NULL || (!strchr(spec, ':') && !strcmp(spec, stored.candidate) &&
                                         attest_candidate_resolve(spec, &probe) != ATTEST_OK)))
        spec = job_spec;
    if (spec == NULL && from_results) spec = stored.candidate;
    if (spec && from_results && strstr(spec, " vs ")) { /* a pair row of --baseline */
        attest_policy *pp = NULL;
        if ((a.policy ? attest_policy_load(a.policy, &pp) : attest_policy_default(&pp)) != ATTEST_OK) {
            attest_case_free(&c);
            return attest_cli_usage_error("replay", "%s", attest_last_error());
        }
        attest_runner_options po = attest_runner_defaults();
        po.reruns = a.reruns;
        po.timeout_seconds = a.timeout;
        po.isolate = !a.no_isolate;
        po.policy = pp;
        po.reference = attest_ref_simulated;
        rc = attest_baseline_replay(a.file, a.case_id, &c, &stored, spec, &po);
        attest_policy_free(pp);
        attest_case_free(&c);
        return rc;
    }
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
        opt.reference = attest_ref_simulated;
        st = attest_runner_create(cand, &opt, &runner);
    }
    if (st == ATTEST_OK) st = attest_runner_judge(runner, &c, &rec, &kept);
    char notes[400] = "";
    if (st == ATTEST_OK && a.against_stored)
        st = judge_stored(&a, group, &c, cand, policy, &kept, &rec, notes, sizeof notes);
    if (st != ATTEST_OK) {
        rc = attest_cli_usage_error("replay", "%s", attest_last_error());
    } else {
        rec.case_id = stored.case_id;
        char which[64] = "";
        if (from_results) snprintf(which, sizeof which, " case %" PRIu64, a.case_id);
        printf("replay of %s%s with %s (policy %s, hash %s)\n", a.file, which, cand->name,
               attest_policy_name(policy), attest_policy_hash(policy));
        if (regenerated)
            printf("(no repro was kept for this case: drawn again from seed 0x%016" PRIx64
                   " with the bounds the file records)\n",
                   stored.seed);
        if (from_results)
            printf("stored verdict: %s   replayed verdict: %s%s\n",
                   attest_verdict_name(stored.verdict), attest_verdict_name(rec.verdict),
                   stored.verdict == rec.verdict ? " (reproduced)" : " (DIFFERENT)");
        if (a.against_stored)
            printf("judged against the expected outputs stored in %s%s%s\n", a.file,
                   notes[0] ? ": " : "", notes);
        attest_cli_print_case_detail(&rec, &c, policy, &kept);
        rc = attest_verdict_is_failure(rec.verdict) ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
    }
    attest_case_outputs_free(&kept);
    attest_runner_destroy(runner);
    attest_policy_free(policy);
    attest_case_free(&c);
    return rc;
}
