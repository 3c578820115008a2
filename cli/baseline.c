/* attest run --candidate NEW --baseline OLD: two kernels on the same bytes (baseline.h). */
#include "baseline.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/conventions.h"
#include "attest/generator.h"
#include "attest/numerics.h"
#include "attest/verdict.h"
#include "attest/reference.h"
#include "attest/registry.h"
#include "attest/files.h"
#include "attest/results.h"
#include "attest/runner.h"
#include "baseline_run.h"
#include "check.h"
#include "commands.h"
#include "attest/campaign.h"
#include "attest/gen_options.h"
#include "run_options.h"

int attest_run_wants_baseline(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) return 0;
        if (strcmp(argv[i], "--baseline") == 0 || strncmp(argv[i], "--baseline=", 11) == 0)
            return 1;
    }
    return 0;
}

/* The k-th output tensor of a case (outputs follow the inputs in the table). */
static const attest_tensor *output_tensor(const attest_case *c, int32_t k)
{
    for (size_t i = 0; i < c->num_tensors; i++)
        if (c->tensors[i].role == ATTEST_ROLE_OUTPUT && k-- == 0) return &c->tensors[i];
    return NULL;
}

/* 0 finite, 1 +inf, 2 -inf, 3 nan. */
static int nonfinite_class(double v)
{
    return isnan(v) ? 3 : isinf(v) ? (v > 0 ? 1 : 2) : 0;
}

static double element(const void *data, attest_dtype dt, size_t i)
{
    if (dt == ATTEST_DTYPE_BF16) return attest_bf16_decode(((const uint16_t *)data)[i]);
    return ((const float *)data)[i];
}

attest_status attest_baseline_compare(const attest_case *c, const attest_conventions *conv,
                                      const attest_case_outputs *nw, const attest_case_outputs *old,
                                      int bitwise, const attest_policy *policy,
                                      attest_baseline_result *res)
{
    ATTEST_RETURN_IF(c == NULL || nw == NULL || old == NULL || res == NULL || policy == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "baseline compare: NULL argument");
    memset(res, 0, sizeof *res);
    res->first_index = -1;
    const int32_t n_out = nw->num_outputs < old->num_outputs ? nw->num_outputs : old->num_outputs;
    ATTEST_RETURN_IF(n_out <= 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "baseline compare: no outputs kept (did a run crash?)");
    for (int32_t k = 0; k < n_out; k++) {
        const attest_tensor *t = output_tensor(c, k);
        ATTEST_RETURN_IF(t == NULL || nw->candidate[k] == NULL || old->candidate[k] == NULL ||
                             nw->candidate_bytes[k] != t->nbytes ||
                             old->candidate_bytes[k] != t->nbytes,
                         ATTEST_ERR_INTERNAL, "baseline compare: output %d not kept", (int)k);
        const size_t n = attest_tensor_count(t), es = attest_dtype_size(t->dtype);
        const uint8_t *a = nw->candidate[k], *b = old->candidate[k];
        uint64_t differ = 0;
        int64_t first = -1;
        for (size_t i = 0; i < n; i++)
            if (memcmp(a + i * es, b + i * es, es) != 0) {
                if (first < 0) first = (int64_t)i;
                differ++;
            }
        res->bitwise_differ[k] = differ;
        if (differ && res->first_index < 0) {
            res->first_output = k;
            res->first_index = first;
            snprintf(res->first_name, sizeof res->first_name, "%s", t->name);
            res->first_new = element(a, t->dtype, (size_t)first);
            res->first_old = element(b, t->dtype, (size_t)first);
        }
        /* What attest_baseline_closer weighs: inf/nan classes, then errors of finite elements. */
        if (nw->reference[k] != NULL)
            for (size_t i = 0; i < n; i++) {
                const double r = nw->reference[k][i];
                const double vn = element(a, t->dtype, i), vo = element(b, t->dtype, i);
                const int cr = nonfinite_class(r), cn = nonfinite_class(vn),
                          co = nonfinite_class(vo);
                res->new_nonfinite[k] += cn != cr;
                res->old_nonfinite[k] += co != cr;
                if (cr == 0 && cn == 0 && co == 0) {
                    res->new_error[k] += fabs(vn - r);
                    res->old_error[k] += fabs(vo - r);
                }
            }
    }
    res->num_outputs = n_out;
    if (bitwise) {
        for (int32_t k = 0; k < n_out; k++)
            if (res->bitwise_differ[k]) res->failed = 1;
        return ATTEST_OK;
    }
    /* Within bounds: OLD's outputs stand where stored expected outputs stand in attest check, so
     * the tolerance is both kernels' bound plus OLD's own rounding (cli/check_stored.c). The
     * case carries the conventions both declare, so no convention gap applies. */
    attest_case view = *c;
    attest_conventions_apply(conv, &view);
    check_expected e;
    memset(&e, 0, sizeof e);
    e.count = n_out;
    for (int32_t k = 0; k < n_out; k++) {
        const attest_tensor *t = output_tensor(c, k);
        ATTEST_RETURN_IF(t == NULL, ATTEST_ERR_INTERNAL, "baseline compare: no output %d", (int)k);
        attest_stored_tensor *s = &e.tensors[k];
        snprintf(s->name, sizeof s->name, "%s", t->name);
        s->dtype = t->dtype;
        s->rank = t->rank;
        memcpy(s->shape, t->shape, sizeof s->shape);
        s->nbytes = t->nbytes;
        s->data = old->candidate[k]; /* borrowed: e is never freed */
        e.output_index[k] = k;
    }
    uint32_t gates = 0;
    ATTEST_FORWARD(check_compare_stored(&view, &e, nw->candidate, nw->bound, conv, policy,
                                        res->metrics, &gates, res->notes, sizeof res->notes));
    res->failed_gates = gates;
    res->failed = gates != 0;
    return ATTEST_OK;
}

attest_status attest_baseline_judge(const attest_case *c, const attest_conventions *conv,
                                    const attest_case_outputs *nw, const attest_case_outputs *old,
                                    int bitwise, const attest_policy *policy,
                                    attest_baseline_result *res)
{
    if (nw->num_outputs > 0 && old->num_outputs > 0 && nw->candidate[0] != NULL &&
        old->candidate[0] != NULL)
        return attest_baseline_compare(c, conv, nw, old, bitwise, policy, res);
    ATTEST_RETURN_IF(res == NULL, ATTEST_ERR_INVALID_ARGUMENT, "baseline judge: NULL result");
    memset(res, 0, sizeof *res);
    res->first_index = -1;
    res->failed = 1; /* a run that kept no output (crash, timeout) cannot agree */
    snprintf(res->notes, sizeof res->notes, "a run kept no outputs");
    return ATTEST_OK;
}

int attest_baseline_closer(const attest_baseline_result *br, char *text, size_t cap)
{
    double en = 0, eo = 0;
    uint64_t nn = 0, no = 0;
    for (int32_t k = 0; k < br->num_outputs; k++) {
        en += br->new_error[k];
        eo += br->old_error[k];
        nn += br->new_nonfinite[k];
        no += br->old_nonfinite[k];
    }
    const int closer = nn != no ? (nn < no ? 1 : -1) : en < eo ? 1 : eo < en ? -1 : 0;
    if (text != NULL && cap > 0) {
        const char *side = closer > 0 ? "new" : closer < 0 ? "old" : "neither";
        if (nn || no)
            snprintf(text, cap, "%s (inf/nan mismatches new %" PRIu64 ", old %" PRIu64
                                "; summed |error| new %.6g, old %.6g)",
                     side, nn, no, en, eo);
        else
            snprintf(text, cap, "%s (summed |error| new %.6g, old %.6g)", side, en, eo);
    }
    return closer;
}

void attest_baseline_pair_row(const attest_case_record *nw, const attest_case_record *old,
                              const attest_baseline_result *br, int bitwise,
                              attest_case_record *row)
{
    memset(row, 0, sizeof *row);
    row->case_id = nw->case_id;
    row->seed = nw->seed;
    memcpy(row->params, nw->params, sizeof row->params);
    /* "NEW vs OLD"; names too long for the column keep OLD's whole and NEW's start. */
    const size_t cap = sizeof row->candidate, lo = strnlen(old->candidate, cap - 5);
    size_t ln = strnlen(nw->candidate, sizeof nw->candidate);
    if (ln + lo + 4 >= cap) ln = cap - 5 - lo;
    memcpy(row->candidate, nw->candidate, ln);
    memcpy(row->candidate + ln, " vs ", 4);
    memcpy(row->candidate + ln + 4, old->candidate, lo);
    row->candidate[ln + 4 + lo] = '\0';
    row->verdict = br->failed ? ATTEST_VERDICT_MISMATCH : ATTEST_VERDICT_OK;
    row->failed_gates = br->failed_gates;
    row->reruns = 1;
    row->num_outputs = bitwise ? 0 : br->num_outputs;
    for (int32_t k = 0; k < row->num_outputs; k++) row->outputs[k] = br->metrics[k];
    char closer[160];
    (void)attest_baseline_closer(br, closer, sizeof closer);
    uint64_t differ = 0;
    for (int32_t k = 0; k < br->num_outputs; k++) differ += br->bitwise_differ[k];
    /* Through a wide buffer: the notes may not fit the row, and a cut note is still news. */
    char msg[512];
    snprintf(msg, sizeof msg,
             "%s %s; old %s; %" PRIu64 " elements differ bitwise; closer to the reference: "
             "%s%s%s",
             bitwise ? "bitwise" : "within both bounds", br->failed ? "differ" : "agree",
             attest_verdict_name(old->verdict), differ, closer, br->notes[0] ? "; " : "",
             br->notes);
    memcpy(row->message, msg, sizeof row->message - 1);
    row->message[sizeof row->message - 1] = '\0';
}

void attest_baseline_fprint(FILE *f, const attest_baseline_result *br, int bitwise,
                            const char *indent)
{
    char gates[96] = "";
    attest_gate_mask_string(br->failed_gates, gates, sizeof gates);
    fprintf(f, "%snew vs old (%s): DIFFER%s%s", indent, bitwise ? "bitwise" : "within both bounds",
           gates[0] ? " gates " : "", gates);
    if (br->first_index >= 0) {
        uint64_t total_differ = 0;
        for (int32_t k = 0; k < br->num_outputs; k++) total_differ += br->bitwise_differ[k];
        fprintf(f, "; %" PRIu64 " elements differ bitwise, first %s[%" PRId64 "]: new %.9g, old %.9g",
               total_differ, br->first_name, br->first_index, br->first_new, br->first_old);
    }
    /* An output differing in inf/nan alone has no worst finite element to show (the first
     * bitwise difference above names one): only a gate over finite values gets one. */
    for (int32_t k = 0; !bitwise && k < br->num_outputs; k++)
        if (br->metrics[k].failed_gates & ~ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE)) {
            const attest_tensor_metrics *m = &br->metrics[k];
            fprintf(f, "; worst %s element [", m->output);
            for (int32_t d = 0; d < m->worst.rank && d < 4; d++)
                fprintf(f, "%s%" PRId64, d ? "," : "", m->worst.index[d]);
            fprintf(f, "]: new %.9g, old %.9g, |diff| / tolerance %.3g", m->worst_cand, m->worst_ref,
                   m->worst_ratio);
        }
    char closer[160];
    (void)attest_baseline_closer(br, closer, sizeof closer);
    fprintf(f, "\n%scloser to the reference: %s%s%s\n", indent, closer, br->notes[0] ? "; " : "",
            br->notes);
}

void attest_baseline_print(const attest_baseline_result *br, int bitwise, const char *indent)
{
    attest_baseline_fprint(stdout, br, bitwise, indent);
}

int attest_baseline_replay(const char *file, uint64_t case_id, const attest_case *c,
                           const attest_case_record *stored, const char *pair,
                           const attest_runner_options *ro)
{
    const char *vs = strstr(pair, " vs ");
    char names[2][256];
    snprintf(names[0], sizeof names[0], "%.*s", (int)(vs - pair), pair);
    snprintf(names[1], sizeof names[1], "%s", vs + 4);
    const attest_candidate *cand[2];
    for (int j = 0; j < 2; j++)
        if (attest_candidate_resolve(names[j], &cand[j]) != ATTEST_OK)
            return attest_cli_usage_error("replay", "pair '%s': %s", pair, attest_last_error());
    if (cand[0]->kernel != c->kernel || cand[1]->kernel != c->kernel)
        return attest_cli_usage_error("replay", "pair '%s': not both %s kernels", pair,
                                      attest_kernel_name(c->kernel));
    /* The pair row's message says which comparison made it (docs/results-format.md). */
    const int bitwise = strstr(stored->message, "bitwise agree") != NULL ||
                        strstr(stored->message, "bitwise differ") != NULL;
    attest_runner *runner[2] = {NULL, NULL};
    attest_case_record rec[2];
    attest_case_outputs keep[2];
    memset(keep, 0, sizeof keep);
    attest_baseline_result br;
    attest_status st = ATTEST_OK;
    for (int j = 0; j < 2 && st == ATTEST_OK; j++) {
        st = attest_runner_create(cand[j], ro, &runner[j]);
        if (st == ATTEST_OK) st = attest_runner_judge(runner[j], c, &rec[j], &keep[j]);
    }
    if (st == ATTEST_OK)
        st = attest_baseline_judge(c, &cand[0]->conventions, &keep[0], &keep[1], bitwise,
                                   ro->policy, &br);
    int rc;
    if (st != ATTEST_OK) {
        rc = attest_cli_usage_error("replay", "%s", attest_last_error());
    } else {
        const attest_verdict v = br.failed ? ATTEST_VERDICT_MISMATCH : ATTEST_VERDICT_OK;
        printf("replay of %s case %" PRIu64 ": %s against baseline %s (%s)\n", file, case_id,
               cand[0]->name, cand[1]->name, bitwise ? "bitwise" : "within both bounds");
        printf("  new %s: %s; old %s: %s\n", cand[0]->name, attest_verdict_name(rec[0].verdict),
               cand[1]->name, attest_verdict_name(rec[1].verdict));
        printf("stored verdict: %s   replayed verdict: %s%s\n",
               attest_verdict_name(stored->verdict), attest_verdict_name(v),
               stored->verdict == v ? " (reproduced)" : " (DIFFERENT)");
        if (br.failed) attest_baseline_print(&br, bitwise, "  ");
        else printf("  new vs old: agree\n");
        rc = br.failed ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
    }
    for (int j = 0; j < 2; j++) {
        attest_case_outputs_free(&keep[j]);
        attest_runner_destroy(runner[j]);
    }
    return rc;
}

static void usage(FILE *f)
{
    fputs("usage: attest run --candidate NEW --baseline OLD [--same bitwise|bounds] [options]\n"
          "\n"
          "Runs two kernels of one family on the same generated bytes: each is judged against\n"
          "the reference as by attest run, and NEW against OLD's outputs, either bitwise or\n"
          "within the sum of both kernels' computed error bounds plus OLD's rounding (default).\n"
          "The report names where they differ and which side is closer to the reference.\n"
          "Exit status: 0 NEW passes and agrees with OLD on every case, 1 otherwise, 2 usage or\n"
          "input error.\n"
          "\n"
          "  --candidate NEW    the kernel under test (built-in name or path/lib.so:NAME)\n"
          "  --baseline OLD     the kernel it replaces; same family and conventions\n"
          "  --same MODE        bitwise (a refactor that must not change a bit) or bounds\n"
          "  --out FILE         a results file: NEW's row, then the pair's row, per case\n"
          "                     (docs/results-format.md); --force replaces an earlier one\n"
          "  --jobs N           judge the cases in N forked processes (same rows, same order)\n"
          "  --junit FILE       a JUnit XML report: per case NEW's testcase and the pair's\n"
          "  --json FILE        the summary as JSON, counting both rows of every case\n"
          "  --kernel K --cases N --seed S --case-seed X --policy FILE --timeout SEC --no-isolate\n"
          "  --print-failures N (as attest run)\n"
          "generator bounds:\n" ATTEST_CLI_GEN_USAGE,
          f);
}

enum { OPT_VERB = 256 };

static const struct option options[] = {
    {"help", no_argument, NULL, 'h'},
    ATTEST_CLI_OPT_CANDIDATE,
    ATTEST_CLI_OPT_BASELINE,
    ATTEST_CLI_OPT_KERNEL,
    ATTEST_CLI_OPT_CASES,
    ATTEST_CLI_OPT_SEED,
    ATTEST_CLI_OPT_CASE_SEED,
    ATTEST_CLI_OPT_POLICY,
    ATTEST_CLI_OPT_SAME,
    ATTEST_CLI_OPT_TIMEOUT,
    ATTEST_CLI_OPT_NO_ISOLATE,
    ATTEST_CLI_OPT_PRINT_FAILURES,
    ATTEST_CLI_OPT_QUIET,
    ATTEST_CLI_OPT_OUT,
    ATTEST_CLI_OPT_FORCE,
    ATTEST_CLI_OPT_JOBS,
    ATTEST_CLI_OPT_JUNIT,
    ATTEST_CLI_OPT_JSON,
    /* Set by attest campaign --baseline, which runs this verb: the JSON summary's "verb". */
    {"as-verb", required_argument, NULL, OPT_VERB},
    ATTEST_CLI_GEN_LONG_OPTIONS,
    {NULL, 0, NULL, 0},
};

#define BAD(what) return attest_cli_bad_value("run", what, optarg)

attest_status attest_baseline_results_open(const char *path, const char *command_line,
                                           const attest_policy *policy,
                                           const attest_candidate *const cand[2],
                                           const attest_gen_options *gen, uint64_t seed,
                                           uint64_t planned, attest_results_writer **out)
{
    attest_results_provenance prov;
    attest_campaign_provenance(&prov, policy, command_line);
    snprintf(prov.kernel, sizeof prov.kernel, "%s", attest_kernel_name(cand[0]->kernel));
    snprintf(prov.candidate, sizeof prov.candidate, "%s,%s vs %s", cand[0]->name, cand[0]->name,
             cand[1]->name);
    char flags[512];
    if (attest_cli_gen_flags_of(gen, 0, flags, sizeof flags))
        (void)attest_cli_gen_flags_of(gen, 1, flags, sizeof flags);
    snprintf(prov.jobs, sizeof prov.jobs, "--kernel %s%s%s --candidate %s",
             attest_kernel_name(cand[0]->kernel), flags[0] ? " " : "", flags, cand[0]->name);
    prov.seed = seed;
    prov.cases_planned = 2 * planned;
    return attest_results_create(path, &prov, NULL, out);
}

int attest_baseline_check_pair(const char *verb, const attest_candidate *const cand[2])
{
    if (cand[0]->kernel != cand[1]->kernel)
        return attest_cli_usage_error(verb, "baseline '%s' is a %s kernel, candidate '%s' a %s one",
                                      cand[1]->name, attest_kernel_name(cand[1]->kernel),
                                      cand[0]->name, attest_kernel_name(cand[0]->kernel));
    if (memcmp(&cand[0]->conventions, &cand[1]->conventions, sizeof cand[0]->conventions) != 0) {
        char a[160], b[160];
        attest_conventions_format(&cand[0]->conventions, cand[0]->kernel, a, sizeof a);
        attest_conventions_format(&cand[1]->conventions, cand[1]->kernel, b, sizeof b);
        return attest_cli_usage_error(verb, "'%s' (%s) and '%s' (%s) declare different "
                                      "conventions: their outputs are not the same function",
                                      cand[0]->name, a, cand[1]->name, b);
    }
    return -1;
}

int attest_cmd_run_baseline(int argc, char **argv)
{
    char command_line[2048]; /* taken before getopt permutes argv */
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    const char *verb = "run";
    attest_cli_run_args r;
    attest_cli_run_defaults(&r);
    r.max_jobs = 256; /* the pair path's own limit on --jobs (attest run allows 4096) */
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", options)) != -1) {
        if (attest_cli_run_is_option(ch)) {
            const int rc = attest_cli_run_option("run", ch, optarg, &r);
            if (rc >= 0) return rc;
            continue;
        }
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case OPT_VERB:
            if (strcmp(optarg, "campaign") != 0) BAD("as-verb");
            verb = optarg;
            break;
        default: return attest_cli_getopt_error("run", ch, argv);
        }
    }
    if (optind < argc)
        return attest_cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
    const char *spec[2] = {r.candidate, r.baseline}, *kernel = r.kernel, *policy_path = r.policy;
    const char *out = r.out, *junit = r.junit, *json = r.json;
    const int32_t jobs = r.jobs;
    const uint64_t cases = r.cases, seed = r.seed, case_seed = r.case_seed;
    const uint64_t print_failures = r.print_failures;
    const int use_case_seed = r.use_case_seed, bitwise = r.bitwise, no_isolate = r.no_isolate;
    const double timeout = r.timeout;
    if (!spec[0] || !spec[1])
        return attest_cli_usage_error("run", "--baseline needs --candidate too");
    const char *inputs[3] = {policy_path, spec[0], spec[1]};
    if (out) {
        const int orc =
            attest_cli_check_output("run", out, ATTEST_OUTPUT_RESULTS, r.force, inputs, 3);
        if (orc >= 0) return orc;
    }
    const int rrc = attest_cli_check_reports("run", out, junit, json, inputs, 3);
    if (rrc >= 0) return rrc;
    const attest_candidate *cand[2];
    for (int j = 0; j < 2; j++)
        if (attest_candidate_resolve(spec[j], &cand[j]) != ATTEST_OK)
            return attest_cli_usage_error("run", "%s", attest_last_error());
    const int prc = attest_baseline_check_pair("run", cand);
    if (prc >= 0) return prc;
    if (kernel) {
        attest_kernel k;
        if (attest_kernel_from_name(kernel, &k) != ATTEST_OK)
            return attest_cli_usage_error("run", "unknown kernel '%s'", kernel);
        if (k != cand[0]->kernel)
            return attest_cli_usage_error("run", "candidate '%s' is a %s kernel, not %s",
                                          cand[0]->name, attest_kernel_name(cand[0]->kernel),
                                          kernel);
    }
    /* Either side on a device: the pair draws what a device run draws. */
    attest_gen_options gen = attest_cli_gen_defaults_for(
        cand[1]->domain == ATTEST_DOMAIN_DEVICE ? cand[1] : cand[0]);
    const int grc = attest_cli_gen_apply("run", &r.gen, &gen);
    if (grc >= 0) return grc;
    attest_policy *policy = NULL;
    if ((policy_path ? attest_policy_load(policy_path, &policy) : attest_policy_default(&policy)) !=
        ATTEST_OK)
        return attest_cli_usage_error("run", "%s", attest_last_error());
    attest_pair_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.cand[0] = cand[0];
    pl.cand[1] = cand[1];
    pl.gen = &gen;
    pl.policy = policy;
    pl.ro = attest_runner_defaults();
    pl.ro.reference = attest_ref_simulated;
    pl.ro.policy = policy;
    pl.ro.timeout_seconds = timeout;
    pl.ro.isolate = !no_isolate;
    pl.total = use_case_seed ? 1 : cases;
    pl.seed = seed;
    pl.case_seed = case_seed;
    pl.use_case_seed = use_case_seed;
    pl.bitwise = bitwise;
    pl.print_failures = print_failures;
    pl.jobs = jobs;
    pl.out = out;
    pl.junit = junit;
    pl.json = json;
    pl.verb = verb;
    pl.command_line = command_line;
    printf("attest run: %s against baseline %s (%s), %s kernel%s\n", cand[0]->name, cand[1]->name,
           bitwise ? "bitwise" : "within both bounds", attest_kernel_name(cand[0]->kernel),
           jobs > 1 && !use_case_seed ? ", over jobs" : "");
    const int rc = attest_baseline_run(&pl);
    attest_policy_free(policy);
    return rc;
}
