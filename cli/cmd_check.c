/* attest check: gates CI on golden fixtures. Every case of every fixture file runs through the
 * runner against the CPU reference and, on request, is compared with the expected outputs the
 * fixture stores. One line per case, a summary, exit 0 only when every case passed and every
 * fixture could be read. docs/fixtures.md is the user's guide. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest/clock.h"
#include "attest/ci_report.h"
#include "attest/reference.h"
#include "attest/files.h"
#include "attest/registry.h"
#include "attest/results.h"
#include "baseline.h"
#include "check.h"
#include "attest/files.h"
#include "commands.h"
#include "attest/campaign.h"
#include "pipeline_run.h"
#include "topk_files.h"

#define VERB "check"
#define MAX_CANDIDATES 16

typedef enum against { AGAINST_REFERENCE, AGAINST_STORED, AGAINST_BOTH } against;

static void usage(FILE *f)
{
    fputs("usage: attest check FIXTURE.h5|DIR... --candidate SPEC [options]\n"
          "\n"
          "Runs every case of every fixture (a case file, docs/case-format.md; a DIR means every\n"
          "*.h5 under it, sorted) through the candidate and judges it. A fixture whose cases are\n"
          "of another kernel than every candidate's is skipped with a note. Prints one line per\n"
          "case and a summary. Exit status: 0 every case passed, 1 a case failed or a fixture\n"
          "could not be read (or nothing was checked), 2 usage error. docs/fixtures.md.\n"
          "\n"
          "  --candidate SPEC  built-in name or path/lib.so:NAME; repeat it to check several\n"
          "                    kernels in one run (each case runs with those of its kernel)\n"
          "  --against WHAT    reference (default): the CPU reference of attest run;\n"
          "                    stored: the expected outputs the fixture stores (logits; out_bf16,\n"
          "                    lse), a case storing none is judged against the reference;\n"
          "                    both: each case must pass both\n"
          "  --policy FILE     tolerance policy (default: embedded), for both comparisons\n"
          "  --out FILE        write every judged case to an HDF5 results file (attest show)\n"
          "  --force           replace an earlier results file at --out (never a fixture)\n"
          "  --max-case-mb M   refuse cases declaring more than M MiB of tensors (default 4096)\n"
          "  --reruns N        runs per case, compared bitwise (default 2)\n"
          "  --timeout SEC     per-run time limit (default 10)\n"
          "  --no-isolate      run in this process (no crash isolation; for debugging)\n"
          "  --baseline OLD    also run OLD (the kernel NEW replaces; same family and\n"
          "                    conventions) on every case of its kernel and judge each candidate\n"
          "                    against OLD's outputs (docs/old-vs-new.md); a pair that differs\n"
          "                    fails the check\n"
          "  --same MODE       with --baseline: bounds (default) or bitwise\n"
          "  --junit FILE      also write a JUnit XML report (one testcase per case and candidate)\n"
          "  --json FILE       also write the summary as JSON\n"
          "With --candidate STAGE=SPEC (indexer=, topk=, decode=) the files are pipeline case\n"
          "files and each chain is judged seam by seam (attest check --candidate topk=X --help).\n"
          "With a top-k candidate (or --kernel topk) the files are top-k case files\n"
          "(attest check --kernel topk --help).\n"
          "With --recorded (no --candidate) the files are saved failing cases (attest run\n"
          "--save-failures) and their recorded outputs are judged again (attest check --recorded\n"
          "--help).\n",
          f);
}

typedef struct check_args {
    const char *specs[MAX_CANDIDATES];
    size_t num_specs;
    const char *policy, *out, *junit, *json, *baseline;
    against against;
    int bitwise; /* --same bitwise */
    int32_t reruns;
    double timeout;
    int no_isolate, force;
    char **fixtures;
    size_t num_fixtures;
} check_args;

enum {
    OPT_AGAINST = 256, OPT_POLICY, OPT_OUT, OPT_RERUNS, OPT_TIMEOUT, OPT_NO_ISOLATE, OPT_JUNIT,
    OPT_JSON, OPT_FORCE, OPT_MAX_CASE, OPT_BASELINE, OPT_SAME
};

/* Returns -1 to go on, or an exit status. */
static int parse(int argc, char **argv, check_args *a)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"candidate", required_argument, NULL, 'c'},
        {"against", required_argument, NULL, OPT_AGAINST},
        {"policy", required_argument, NULL, OPT_POLICY},
        {"out", required_argument, NULL, OPT_OUT},
        {"reruns", required_argument, NULL, OPT_RERUNS},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"no-isolate", no_argument, NULL, OPT_NO_ISOLATE},
        {"junit", required_argument, NULL, OPT_JUNIT},
        {"json", required_argument, NULL, OPT_JSON},
        {"force", no_argument, NULL, OPT_FORCE},
        {"max-case-mb", required_argument, NULL, OPT_MAX_CASE},
        {"baseline", required_argument, NULL, OPT_BASELINE},
        {"same", required_argument, NULL, OPT_SAME},
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
        case 'c':
            if (a->num_specs == MAX_CANDIDATES)
                return attest_cli_usage_error(VERB, "at most %d --candidate options",
                                              MAX_CANDIDATES);
            a->specs[a->num_specs++] = optarg;
            break;
        case OPT_AGAINST:
            if (!strcmp(optarg, "reference")) a->against = AGAINST_REFERENCE;
            else if (!strcmp(optarg, "stored")) a->against = AGAINST_STORED;
            else if (!strcmp(optarg, "both")) a->against = AGAINST_BOTH;
            else
                return attest_cli_usage_error(
                    VERB, "bad value for --against: '%s' (reference, stored or both)", optarg);
            break;
        case OPT_POLICY: a->policy = optarg; break;
        case OPT_OUT: a->out = optarg; break;
        case OPT_NO_ISOLATE: a->no_isolate = 1; break;
        case OPT_JUNIT: a->junit = optarg; break;
        case OPT_JSON: a->json = optarg; break;
        case OPT_FORCE: a->force = 1; break;
        case OPT_BASELINE: a->baseline = optarg; break;
        case OPT_SAME:
            if (!strcmp(optarg, "bitwise")) a->bitwise = 1;
            else if (!strcmp(optarg, "bounds")) a->bitwise = 0;
            else return attest_cli_bad_value(VERB, "same", optarg);
            break;
        case OPT_MAX_CASE: {
            int rc = attest_cli_max_case_mb(VERB, optarg);
            if (rc >= 0) return rc;
            break;
        }
        case OPT_RERUNS:
            if (attest_cli_parse_i32(optarg, 1, 1000, &a->reruns))
                return attest_cli_bad_value(VERB, "reruns", optarg);
            break;
        case OPT_TIMEOUT:
            if (attest_cli_parse_double(optarg, 0.01, 86400.0, &a->timeout))
                return attest_cli_bad_value(VERB, "timeout", optarg);
            break;
        default: return attest_cli_getopt_error(VERB, ch, argv);
        }
    }
    if (a->num_specs == 0) {
        /* A file with recorded outputs (a fuzz finding, --save-failures) is judged without the
         * candidate: say so, naming whose outputs they are. */
        attest_casefile_recorded_info info;
        memset(&info, 0, sizeof info);
        if (optind + 1 == argc &&
            attest_casefile_load_recorded(argv[optind], NULL, &info) == ATTEST_OK) {
            const int rc = attest_cli_usage_error(
                VERB, "--candidate is required (attest list shows them); %s holds %s's recorded "
                      "outputs, which --recorded judges again without it",
                argv[optind], info.candidate[0] ? info.candidate : "a candidate");
            attest_casefile_recorded_free(&info);
            return rc;
        }
        attest_clear_error();
        return attest_cli_usage_error(VERB, "--candidate is required (attest list shows them)");
    }
    if (optind >= argc)
        return attest_cli_usage_error(VERB, "expected fixture files or directories");
    a->fixtures = argv + optind;
    a->num_fixtures = (size_t)(argc - optind);
    /* A fixture (or the policy) given as an output would be overwritten by it. */
    const size_t n = 2 + a->num_specs + a->num_fixtures;
    const char **inputs = calloc(n, sizeof *inputs);
    if (!inputs) return attest_cli_usage_error(VERB, "out of memory");
    inputs[0] = a->policy;
    inputs[n - 1] = a->baseline;
    for (size_t i = 0; i < a->num_specs; i++) inputs[1 + i] = a->specs[i];
    for (size_t i = 0; i < a->num_fixtures; i++) inputs[1 + a->num_specs + i] = a->fixtures[i];
    int rc = -1;
    if (a->out)
        rc = attest_cli_check_output(VERB, a->out, ATTEST_OUTPUT_RESULTS, a->force, inputs, n);
    if (rc < 0) rc = attest_cli_check_reports(VERB, a->out, a->junit, a->json, inputs, n);
    free(inputs);
    if (rc >= 0) return rc;
    return -1;
}

/* Everything one run of check holds. */
typedef struct check_run {
    const check_args *a;
    const attest_candidate *cands[MAX_CANDIDATES];
    attest_runner *runners[MAX_CANDIDATES];
    const attest_candidate *base;  /* --baseline, or NULL */
    attest_runner *base_runner;
    uint64_t pairs, pairs_differ;
    attest_runner_options ropt;
    attest_policy *policy;
    attest_results_writer *results;
    attest_junit *junit;           /* --junit, or NULL */
    attest_summary summary;        /* the deciding record of every judged case, for --json */
    uint64_t next_case_id;
    /* totals */
    uint64_t files, cases, judged, skipped, failing, unreadable, no_stored, stored_compared;
    uint64_t vacuous, verdicts[ATTEST_VERDICT_COUNT_];
    int label_w, cand_w;           /* column widths of the case lines */
    double load_s, ref_s, run_s, compare_s;
    char no_stored_files[256];
} check_run;

/* "file" for a root case, else "file:group". A corrupt file can name a group with any bytes;
 * the line stays printable ASCII. */
static void case_label(const char *path, const char *group, char *buf, size_t cap)
{
    if (!strcmp(group, "/")) snprintf(buf, cap, "%s", path);
    else snprintf(buf, cap, "%s:%s", path, group);
    for (char *p = buf + strlen(path); *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
}

/* The command that replays a failing case; vs_stored: the failure is against the stored
 * outputs, so the replay judges against them too. */
static void replay_line(const char *path, const char *group, const char *spec, int vs_stored,
                        char *buf, size_t cap)
{
    char *args[9] = {"attest", "replay", (char *)path, "--group", (char *)group, NULL};
    int n = strcmp(group, "/") ? 5 : 3; /* a root case needs no --group */
    args[n++] = "--candidate";
    args[n++] = (char *)spec;
    if (vs_stored) {
        args[n++] = "--against";
        args[n++] = "stored";
    }
    attest_engine_command_line(n, args, buf, cap);
}

/* "logits: element+cosine failed, worst at [0,5] expected 3 cand 2.5" for each failing output. */
static void stored_message(const attest_case_record *rec, const char *notes, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "vs stored expected outputs:");
    int any = 0;
    for (int32_t k = 0; k < rec->num_outputs && n < cap; k++) {
        const attest_tensor_metrics *m = &rec->outputs[k];
        if (!m->failed_gates) continue;
        char gates[96];
        attest_gate_mask_string(m->failed_gates, gates, sizeof gates);
        n += (size_t)snprintf(buf + n, cap - n, "%s %s: %s failed", any ? ";" : "", m->output,
                              gates);
        if (n < cap && m->element_failures > 0) {
            n += (size_t)snprintf(buf + n, cap - n, ", worst at [");
            for (int32_t i = 0; i < m->worst.rank && i < 4 && n < cap; i++)
                n += (size_t)snprintf(buf + n, cap - n, i ? ",%lld" : "%lld",
                                      (long long)m->worst.index[i]);
            if (n < cap)
                n += (size_t)snprintf(buf + n, cap - n, "] expected %.9g cand %.9g",
                                      m->worst_ref, m->worst_cand);
        }
        if (n < cap && (m->failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK)))
            n += (size_t)snprintf(buf + n, cap - n, ", top-k recall %.4g (row %d)",
                                  m->topk_recall, m->topk_worst_row);
        any = 1;
    }
    if (!any && n < cap) n += (size_t)snprintf(buf + n, cap - n, " all gates pass");
    if (notes && *notes && n < cap) snprintf(buf + n, cap - n, " (%s)", notes);
}

static void prefix_message(attest_case_record *rec, const char *label, const char *tag)
{
    char msg[sizeof rec->message];
    snprintf(msg, sizeof msg, "%s", rec->message);
    int n = snprintf(rec->message, sizeof rec->message, "%s%s%s%s", label, tag,
                     msg[0] ? ": " : "", msg);
    if (n < 0) snprintf(rec->message, sizeof rec->message, "%s", msg);
    /* else a long label may cut the message short: the row's repro still holds the case */
}

static attest_status append_row(check_run *r, attest_case_record *rec, const attest_case *c,
                                const attest_case_outputs *kept)
{
    rec->case_id = r->next_case_id++;
    if (!r->results) return ATTEST_OK;
    return attest_results_append(r->results, rec, c, kept);
}

/* --baseline: runs OLD on the case candidate ci was judged on (its record nrec, its outputs
 * kept), judges the pair, prints the pair's line and appends the pair's row. */
static attest_status judge_pair(check_run *r, size_t ci, const char *label, const attest_case *c,
                                const attest_case_record *nrec, const attest_case_outputs *kept)
{
    if (!r->base_runner) ATTEST_FORWARD(attest_runner_create(r->base, &r->ropt, &r->base_runner));
    attest_case_record orec;
    attest_case_outputs okept;
    memset(&orec, 0, sizeof orec);
    memset(&okept, 0, sizeof okept);
    ATTEST_FORWARD(attest_runner_judge(r->base_runner, c, &orec, &okept));
    r->run_s += orec.run_seconds;
    attest_baseline_result br;
    attest_status st = attest_baseline_judge(c, &r->cands[ci]->conventions, kept, &okept,
                                             r->a->bitwise, r->policy, &br);
    if (st == ATTEST_OK) {
        attest_case_record row, named = *nrec;
        snprintf(named.candidate, sizeof named.candidate, "%s", r->cands[ci]->name);
        snprintf(orec.candidate, sizeof orec.candidate, "%s", r->base->name);
        attest_baseline_pair_row(&named, &orec, &br, r->a->bitwise, &row);
        r->pairs++;
        if (br.failed) r->pairs_differ++;
        printf("%-*s  %-*s  %s baseline %s (%s; the baseline %s against the reference)\n",
               r->label_w, label, r->cand_w, r->cands[ci]->name,
               br.failed ? "DIFFERS from" : "AGREES with", r->base->name,
               r->a->bitwise ? "bitwise" : "within both bounds", attest_verdict_name(orec.verdict));
        if (br.failed) attest_baseline_print(&br, r->a->bitwise, "    ");
        prefix_message(&row, label, " vs baseline");
        st = append_row(r, &row, c, NULL);
    }
    attest_case_outputs_free(&okept);
    return st;
}

/* Judges one case with one candidate and prints its line. Returns an error only when the
 * harness cannot go on (runner or results file). */
static attest_status judge_case(check_run *r, size_t ci, const char *path, const char *group,
                                const attest_case *c, const check_expected *e)
{
    const attest_candidate *cand = r->cands[ci];
    if (!r->runners[ci]) ATTEST_FORWARD(attest_runner_create(cand, &r->ropt, &r->runners[ci]));
    attest_case_record ref;
    attest_case_outputs kept;
    memset(&ref, 0, sizeof ref);
    memset(&kept, 0, sizeof kept);
    ATTEST_FORWARD(attest_runner_judge(r->runners[ci], c, &ref, &kept));
    r->ref_s += ref.ref_seconds;
    r->run_s += ref.run_seconds;
    r->compare_s += ref.compare_seconds;

    attest_case_record stored = ref;
    int have_stored = 0;
    char notes[400] = "";
    attest_status st = ATTEST_OK;
    if (r->a->against != AGAINST_REFERENCE && e->count > 0) {
        int outputs_present = 1;
        for (int32_t j = 0; j < e->count; j++)
            if (e->output_index[j] >= kept.num_outputs || !kept.candidate[e->output_index[j]])
                outputs_present = 0;
        if (outputs_present) {
            const double t0 = attest_monotonic_seconds();
            uint32_t gates = 0;
            memset(stored.outputs, 0, sizeof stored.outputs);
            st = check_compare_stored(c, e, kept.candidate, kept.bound, &cand->conventions, r->policy,
                                      stored.outputs, &gates, notes, sizeof notes);
            r->compare_s += attest_monotonic_seconds() - t0;
            if (st == ATTEST_OK) {
                have_stored = 1;
                stored.num_outputs = e->count;
                stored.failed_gates = gates;
                stored.vacuous = 0;
                for (int32_t j = 0; j < e->count; j++)
                    if (stored.outputs[j].vacuous) stored.vacuous = 1;
                stored.verdict = check_stored_verdict(&ref, gates);
                if (ref.verdict == ATTEST_VERDICT_OK || ref.verdict == ATTEST_VERDICT_MISMATCH)
                    stored_message(&stored, notes, stored.message, sizeof stored.message);
                r->stored_compared++;
            }
        }
    } else if (r->a->against != AGAINST_REFERENCE) {
        r->no_stored++;
    }
    if (st != ATTEST_OK) {
        attest_case_outputs_free(&kept);
        return st;
    }
    /* The rows this case contributes: against the reference unless only stored was asked and
     * the fixture stores outputs; against the stored outputs when it does. */
    const int use_ref = r->a->against != AGAINST_STORED || !have_stored;
    attest_case_record *rows[2];
    int nrows = 0;
    if (use_ref) rows[nrows++] = &ref;
    if (have_stored) rows[nrows++] = &stored;
    attest_verdict v = rows[0]->verdict;
    for (int i = 0; i < nrows; i++)
        if (attest_verdict_is_failure(rows[i]->verdict)) {
            v = rows[i]->verdict;
            break;
        }
    int vac = 0;
    for (int i = 0; i < nrows; i++) vac |= rows[i]->vacuous;

    char label[1024], line[1400];
    case_label(path, group, label, sizeof label);
    size_t n = (size_t)snprintf(line, sizeof line, "%-*s  %-*s  %s", r->label_w, label, r->cand_w,
                                cand->name, attest_verdict_name(v));
    for (int i = 0, shown = 0; i < nrows && n < sizeof line; i++) {
        char gates[96];
        attest_gate_mask_string(rows[i]->failed_gates, gates, sizeof gates);
        if (rows[i]->failed_gates)
            n += (size_t)snprintf(line + n, sizeof line - n, "%s%s: %s", shown++ ? "; " : "  ",
                                  rows[i] == &ref ? "reference" : "stored", gates);
    }
    if (n < sizeof line && vac) n += (size_t)snprintf(line + n, sizeof line - n, "  (vacuous)");
    if (n < sizeof line && r->a->against == AGAINST_STORED && !have_stored)
        n += (size_t)snprintf(line + n, sizeof line - n, "  (no stored outputs: vs reference)");
    puts(line);
    char replay[4096] = "";
    if (attest_verdict_is_failure(v)) {
        /* each failing row's phrase (named coordinates, as attest run prints them); the stored
         * outputs' says so, and is left out when it is the reference's phrase again */
        char phrase[2][1024] = {"", ""};
        int failing[2] = {0, 0};
        for (int i = 0; i < nrows; i++)
            if ((failing[i] = attest_verdict_is_failure(rows[i]->verdict)))
                attest_report_brief_string(rows[i], phrase[i], sizeof phrase[i]);
        const int both = nrows == 2 && failing[0] && failing[1] && strcmp(phrase[0], phrase[1]);
        for (int i = 0; i < nrows; i++) {
            if (!failing[i] || (i == 1 && failing[0] && !both)) continue;
            const char *against = rows[i] == &stored ? "vs stored expected outputs: "
                                  : both                ? "vs reference: "
                                                        : "";
            printf("    %s%s\n", against, phrase[i]);
        }
        int first_failing = 0;
        while (first_failing < nrows && !attest_verdict_is_failure(rows[first_failing]->verdict))
            first_failing++;
        replay_line(path, group, r->a->specs[ci],
                    first_failing < nrows && rows[first_failing] == &stored, replay,
                    sizeof replay);
        printf("    replay: %s\n", replay);
    } else if (have_stored && notes[0]) {
        printf("    note: %s\n", notes);
    }
    fflush(stdout);

    /* For JUnit and JSON: the row that decided the verdict, named after the fixture case. */
    const attest_case_record *decider = rows[0];
    for (int i = 0; i < nrows; i++)
        if (attest_verdict_is_failure(rows[i]->verdict)) {
            decider = rows[i];
            break;
        }
    attest_case_record merged = *decider;
    merged.verdict = v;
    merged.case_id = r->next_case_id;
    attest_summary_add(&r->summary, &merged);
    if (r->junit)
        st = attest_junit_add(r->junit, cand->name, label, &merged, replay[0] ? replay : NULL);

    r->judged++;
    r->verdicts[v < ATTEST_VERDICT_COUNT_ ? v : ATTEST_VERDICT_HARNESS_ERROR]++;
    if (attest_verdict_is_failure(v)) r->failing++;
    if (vac) r->vacuous++;
    for (int i = 0; i < nrows && st == ATTEST_OK; i++) {
        prefix_message(rows[i], label, rows[i] == &stored ? " vs stored" : "");
        st = append_row(r, rows[i], c, &kept);
    }
    /* The pair's row follows the candidate's (docs/results-format.md). */
    if (st == ATTEST_OK && r->base && r->base->kernel == cand->kernel)
        st = judge_pair(r, ci, label, c, &ref, &kept);
    attest_case_outputs_free(&kept);
    return st;
}

/* A fixture case or file that could not be read: counted, printed, and an <error> in JUnit. */
static attest_status unreadable(check_run *r, const char *label, const char *message)
{
    printf("%-*s  %-*s  UNREADABLE\n    %s\n", r->label_w, label, r->cand_w, "-", message);
    r->unreadable++;
    return r->junit ? attest_junit_add_error(r->junit, "attest check", label, message) : ATTEST_OK;
}

static void note_no_stored(check_run *r, const char *path)
{
    if (strstr(r->no_stored_files, path)) return;
    size_t n = strlen(r->no_stored_files);
    if (n + strlen(path) + 8 < sizeof r->no_stored_files)
        snprintf(r->no_stored_files + n, sizeof r->no_stored_files - n, "%s%s", n ? ", " : "",
                 path);
}

/* Runs every case of one scanned file. */
static attest_status check_file(check_run *r, const char *path, const check_scan *scan)
{
    uint64_t skipped[3] = {0, 0, 0};
    for (size_t g = 0; g < scan->count && !attest_stop_requested(); g++) {
        const check_group *grp = &scan->cases[g];
        r->cases++;
        char label[1024];
        case_label(path, grp->name, label, sizeof label);
        if (grp->status != ATTEST_OK) {
            ATTEST_FORWARD(unreadable(r, label, grp->message));
            continue;
        }
        int any = 0;
        for (size_t ci = 0; ci < r->a->num_specs; ci++) any |= r->cands[ci]->kernel == grp->kernel;
        if (!any) {
            skipped[grp->kernel == ATTEST_KERNEL_INDEXER ? 1 : 2]++;
            r->skipped++;
            continue;
        }
        const double t0 = attest_monotonic_seconds();
        attest_case c;
        check_expected e;
        memset(&e, 0, sizeof e);
        attest_status st = attest_casefile_load(path, grp->name, &c);
        if (st == ATTEST_OK && r->a->against != AGAINST_REFERENCE) {
            st = check_expected_load(path, grp->name, &c, &e);
            if (st != ATTEST_OK) attest_case_free(&c);
        }
        r->load_s += attest_monotonic_seconds() - t0;
        if (st != ATTEST_OK) { /* the child read it; kept for safety */
            ATTEST_FORWARD(unreadable(r, label, attest_last_error()));
            continue;
        }
        if (r->a->against != AGAINST_REFERENCE && e.count == 0) note_no_stored(r, path);
        for (size_t ci = 0; ci < r->a->num_specs && st == ATTEST_OK && !attest_stop_requested();
             ci++)
            if (r->cands[ci]->kernel == grp->kernel) st = judge_case(r, ci, path, grp->name, &c, &e);
        check_expected_free(&e);
        attest_case_free(&c);
        if (st != ATTEST_OK) return st;
    }
    for (int k = 1; k <= 2; k++)
        if (skipped[k])
            printf("%-*s  %-*s  SKIPPED  %" PRIu64 " %s case%s: no %s candidate given\n",
                   r->label_w, path, r->cand_w, "-", skipped[k], attest_kernel_name((attest_kernel)k),
                   skipped[k] == 1 ? "" : "s", attest_kernel_name((attest_kernel)k));
    if (scan->file_status != ATTEST_OK) ATTEST_FORWARD(unreadable(r, path, scan->file_message));
    fflush(stdout);
    return ATTEST_OK;
}

static attest_status open_results(check_run *r, const char *command_line, uint64_t planned)
{
    attest_results_provenance prov;
    attest_campaign_provenance(&prov, r->policy, command_line);
    size_t len = 0;
    for (size_t i = 0; i < r->a->num_specs; i++)
        attest_campaign_provenance_candidate(&prov, r->cands[i], &len);
    prov.cases_planned = planned;
    return attest_results_create(r->a->out, &prov, NULL, &r->results);
}

/* The word of the result line and of --json's "result", as attest run says them: nothing
 * judged is EMPTY, every case declined is FAIL (the candidate checked nothing). */
static const char *result_word(const check_run *r)
{
    if (attest_stop_requested()) return "INTERRUPTED";
    if (r->failing || r->unreadable || r->pairs_differ) return "FAIL";
    if (r->judged == 0) return "EMPTY";
    if (r->judged == r->verdicts[ATTEST_VERDICT_UNSUPPORTED]) return "FAIL";
    return "PASS";
}

static void print_summary(const check_run *r, double seconds)
{
    static const char *const against_names[] = {"reference", "stored", "both"};
    printf("\nsummary: %" PRIu64 " fixture file%s, %" PRIu64 " case%s; %" PRIu64
           " judged against %s, %" PRIu64 " skipped (no candidate of their kernel)\n",
           r->files, r->files == 1 ? "" : "s", r->cases, r->cases == 1 ? "" : "s", r->judged,
           against_names[r->a->against], r->skipped);
    printf("  verdicts:");
    for (int v = 0; v < ATTEST_VERDICT_COUNT_; v++)
        if (r->verdicts[v]) printf(" %s %" PRIu64, attest_verdict_name((attest_verdict)v), r->verdicts[v]);
    printf("%s\n", r->judged ? "" : " none");
    if (r->a->against != AGAINST_REFERENCE) {
        printf("  stored expected outputs: compared on %" PRIu64 " judged case%s", r->stored_compared,
               r->stored_compared == 1 ? "" : "s");
        if (r->no_stored)
            printf("; %" PRIu64 " case%s store none (judged against the reference): %s",
                   r->no_stored, r->no_stored == 1 ? "" : "s", r->no_stored_files);
        printf("\n");
    }
    if (r->base)
        printf("  new vs %s (%s): agree %" PRIu64 ", differ %" PRIu64 "\n", r->base->name,
               r->a->bitwise ? "bitwise" : "within bounds", r->pairs - r->pairs_differ,
               r->pairs_differ);
    if (r->vacuous) printf("  vacuous: %" PRIu64 " case%s could not show a difference in some output\n",
                           r->vacuous, r->vacuous == 1 ? "" : "s");
    if (r->unreadable) printf("  unreadable: %" PRIu64 " fixture case%s or file%s (see above)\n",
                              r->unreadable, r->unreadable == 1 ? "" : "s",
                              r->unreadable == 1 ? "" : "s");
    printf("  time: %.2f s (loading %.2f s, reference %.2f s, candidate runs %.2f s, compare %.3f s)\n",
           seconds, r->load_s, r->ref_s, r->run_s, r->compare_s);
    if (r->a->out) printf("  results: %s (attest show %s)\n", r->a->out, r->a->out);
    const char *word = result_word(r);
    if (!strcmp(word, "INTERRUPTED"))
        printf("result: INTERRUPTED (after %" PRIu64 " cases)\n", r->judged);
    else if (r->failing || r->unreadable || r->pairs_differ)
        printf("result: FAIL (%" PRIu64 " failing case%s, %" PRIu64 " unreadable, %" PRIu64
               " differing from the baseline)\n",
               r->failing, r->failing == 1 ? "" : "s", r->unreadable, r->pairs_differ);
    else if (!strcmp(word, "EMPTY") && r->files == 0)
        printf("result: EMPTY (nothing was checked: no fixture file found)\n");
    else if (!strcmp(word, "EMPTY"))
        printf("result: EMPTY (nothing was checked: no fixture case is of a kernel the candidates "
               "implement)\n");
    else if (!strcmp(word, "FAIL"))
        printf("result: FAIL (nothing was checked: the candidates declined every case)\n");
    else
        printf("result: PASS (%" PRIu64 " case%s)\n", r->judged, r->judged == 1 ? "" : "s");
}

int attest_cmd_check(int argc, char **argv)
{
    if (attest_check_wants_recorded(argc, argv)) return attest_cmd_check_recorded(argc, argv);
    if (attest_wants_pipeline(argc, argv)) return attest_cmd_check_pipeline(argc, argv);
    if (attest_check_wants_topk(argc, argv)) return attest_cmd_check_topk(argc, argv);
    char command_line[2048]; /* before getopt permutes argv */
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    check_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0) return rc;
    check_run r;
    memset(&r, 0, sizeof r);
    r.a = &a;
    for (size_t i = 0; i < a.num_specs; i++)
        if (attest_candidate_resolve(a.specs[i], &r.cands[i]) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
    if (a.baseline) {
        if (attest_candidate_resolve(a.baseline, &r.base) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "--baseline: %s", attest_last_error());
        int same_family = 0;
        for (size_t i = 0; i < a.num_specs; i++) {
            if (r.cands[i]->kernel != r.base->kernel) continue;
            same_family = 1;
            if (memcmp(&r.cands[i]->conventions, &r.base->conventions,
                       sizeof r.base->conventions) != 0)
                return attest_cli_usage_error(VERB, "'%s' and baseline '%s' declare different "
                                                    "conventions: their outputs are not the "
                                                    "same function",
                                              r.cands[i]->name, r.base->name);
        }
        if (!same_family)
            return attest_cli_usage_error(VERB, "baseline '%s' is a %s kernel; no candidate is",
                                          r.base->name, attest_kernel_name(r.base->kernel));
    } else if (a.bitwise) {
        return attest_cli_usage_error(VERB, "--same needs --baseline");
    }
    if ((a.policy ? attest_policy_load(a.policy, &r.policy) : attest_policy_default(&r.policy)) !=
        ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    r.ropt = attest_runner_defaults();
    r.ropt.reruns = a.reruns;
    r.ropt.timeout_seconds = a.timeout;
    r.ropt.isolate = !a.no_isolate;
    r.ropt.policy = r.policy;
    r.ropt.reference = attest_ref_simulated;

    const double start = attest_monotonic_seconds();
    check_files files;
    if (check_files_collect(a.fixtures, a.num_fixtures, a.out, &files) != ATTEST_OK) {
        attest_policy_free(r.policy);
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    }
    /* Read every fixture first: the plan (and the results file's provenance) counts them. */
    check_scan *scans = calloc(files.count ? files.count : 1, sizeof *scans);
    attest_status st = scans ? ATTEST_OK : attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "fixture list");
    uint64_t planned = 0;
    for (size_t f = 0; f < files.count && st == ATTEST_OK; f++) {
        st = check_scan_file(files.paths[f], a.against != AGAINST_REFERENCE, &scans[f]);
        for (size_t g = 0; st == ATTEST_OK && g < scans[f].count; g++)
            for (size_t ci = 0; ci < a.num_specs; ci++)
                if (scans[f].cases[g].status == ATTEST_OK &&
                    r.cands[ci]->kernel == scans[f].cases[g].kernel) {
                    planned += a.against == AGAINST_BOTH && scans[f].cases[g].found ? 2 : 1;
                    planned += r.base && r.base->kernel == r.cands[ci]->kernel; /* pair row */
                }
    }
    r.load_s += attest_monotonic_seconds() - start;
    for (size_t ci = 0; ci < a.num_specs; ci++)
        if ((int)strlen(r.cands[ci]->name) > r.cand_w) r.cand_w = (int)strlen(r.cands[ci]->name);
    for (size_t f = 0; st == ATTEST_OK && f < files.count; f++) {
        int w = (int)strlen(files.paths[f]);
        for (size_t g = 0; g < scans[f].count; g++) {
            char label[1024];
            case_label(files.paths[f], scans[f].cases[g].name, label, sizeof label);
            if ((int)strlen(label) > w) w = (int)strlen(label);
        }
        if (w > r.label_w) r.label_w = w < 60 ? w : 60;
    }
    if (st == ATTEST_OK && a.out) st = open_results(&r, command_line, planned);
    attest_summary_init(&r.summary);
    if (st == ATTEST_OK && a.junit) st = attest_junit_open(a.junit, "attest check", &r.junit);
    if (st == ATTEST_OK && files.count == 0)
        printf("no fixture file (*.h5) found under the paths given\n");

    attest_stop_guard stop;
    attest_stop_signals_catch(&stop);
    for (size_t f = 0; f < files.count && st == ATTEST_OK && !attest_stop_requested(); f++) {
        r.files++;
        st = check_file(&r, files.paths[f], &scans[f]);
    }
    attest_stop_signals_release(&stop);
    for (size_t ci = 0; r.results && ci < a.num_specs; ci++)
        attest_results_set_device(r.results, attest_runner_device(r.runners[ci]));
    if (r.results) {
        char saved[512];
        snprintf(saved, sizeof saved, "%s", attest_last_error());
        attest_status cst = attest_results_close(
            r.results, st == ATTEST_OK && !attest_stop_requested() ? ATTEST_RESULTS_COMPLETE
                                                          : ATTEST_RESULTS_INTERRUPTED);
        if (st == ATTEST_OK) st = cst;
        else attest_fail(st, "%s", saved);
    }
    if (r.junit) {
        if (st == ATTEST_OK) st = attest_junit_close(r.junit, attest_monotonic_seconds() - start);
        else attest_junit_discard(r.junit);
    }
    for (size_t ci = 0; ci < a.num_specs; ci++) attest_runner_destroy(r.runners[ci]);
    attest_runner_destroy(r.base_runner);
    for (size_t f = 0; scans && f < files.count; f++)
        attest_casefile_probe_result_free(&scans[f]);
    free(scans);
    check_files_free(&files);
    if (st != ATTEST_OK) {
        fflush(stdout);
        attest_policy_free(r.policy);
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    }
    const double seconds = attest_monotonic_seconds() - start;
    print_summary(&r, seconds);
    attest_policy_free(r.policy);
    rc = ATTEST_EXIT_OK;
    if (attest_stop_requested() || r.failing || r.unreadable || r.pairs_differ ||
        r.judged == r.verdicts[ATTEST_VERDICT_UNSUPPORTED]) /* a gate that checked nothing */
        rc = ATTEST_EXIT_FAILED;
    if (a.json) {
        attest_json_run run;
        memset(&run, 0, sizeof run);
        run.verb = VERB;
        run.result = result_word(&r);
        run.exit_code = rc;
        run.results_path = a.out;
        run.seconds = seconds;
        run.unreadable = r.unreadable;
        if (attest_report_json(a.json, &r.summary, &run) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
    }
    return rc;
}
