/* attest run --kernel topk: a top-k candidate against the reference selection (topk_run.h). */
#include "topk_run.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/campaign.h"
#include "attest/clock.h"
#include "attest/external.h"
#include "attest/files.h"
#include "attest/reference_topk.h"
#include "attest/topk_candidates.h"
#include "attest/topk_runner.h"
#include "commands.h"
#include "run_options.h"
#include "topk_files.h"

attest_status attest_topk_run_candidate(const attest_topk_candidate *cand,
                                        const attest_topk_case *c,
                                        const attest_topk_run_options *o, attest_topk_verdict *v,
                                        int32_t *idx, int32_t *phys)
{
    ATTEST_RETURN_IF(cand == NULL || c == NULL || v == NULL || cand->run == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "topk run: NULL candidate, case or verdict");
    ATTEST_RETURN_IF((cand->outputs & (ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL)) == 0,
                     ATTEST_ERR_INVALID_ARGUMENT, "topk candidate '%s' declares no output",
                     cand->name);
    ATTEST_RETURN_IF(((cand->outputs & ATTEST_TOPK_OUT_LOGICAL) && idx == NULL) ||
                         ((cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) && phys == NULL),
                     ATTEST_ERR_INVALID_ARGUMENT, "topk run: no buffer for a declared output");
    const attest_topk_run_options in_process = {0, 1, 10.0};
    if (o == NULL) o = &in_process;
    if (!(cand->outputs & ATTEST_TOPK_OUT_LOGICAL)) idx = NULL;
    if (!(cand->outputs & ATTEST_TOPK_OUT_PHYSICAL)) phys = NULL;
    const size_t n = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.k;
    int32_t *ref = malloc(n * sizeof *ref + 1);
    ATTEST_RETURN_IF(ref == NULL, ATTEST_ERR_OUT_OF_MEMORY, "topk run: out of memory");
    attest_status st = attest_ref_topk_case(c, cand->rule, ref, NULL);
    if (st != ATTEST_OK) goto out;
    for (size_t i = 0; i < n; i++) {
        if (idx) idx[i] = ATTEST_TOPK_POISON;
        if (phys) phys[i] = ATTEST_TOPK_POISON;
    }
    attest_topk_run_result rr;
    st = attest_topk_run(cand, c, o, idx, phys, &rr);
    if (st != ATTEST_OK) goto out;
    if (rr.outputs_valid) {
        st = attest_topk_judge(c, ref, idx, phys, cand->order, cand->rule, v);
    } else { /* a crash or a timeout left nothing to judge */
        memset(v, 0, sizeof *v);
        v->first_row = v->first_slot = -1;
        v->worst_recall = 0;
    }
    /* Run findings lead the line: a crash, a stray write or a changed input outranks a wrong
     * pick, as the runner's verdict priority has it. */
    if (st == ATTEST_OK && rr.failed) {
        if (rr.failed != (1u << ATTEST_TOPK_CHECK_RUN) || v->failed == 0) {
            snprintf(v->detail, sizeof v->detail, "%s", rr.detail);
            v->first_row = v->first_slot = -1;
        }
        v->failed |= rr.failed;
    }
out:
    free(ref);
    return st;
}

attest_status attest_topk_judge_candidate(const attest_topk_candidate *cand,
                                          const attest_topk_case *c, attest_topk_verdict *v)
{
    ATTEST_RETURN_IF(c == NULL, ATTEST_ERR_INVALID_ARGUMENT, "topk run: NULL case");
    const size_t n = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.k;
    int32_t *idx = malloc(n * sizeof *idx + 1), *phys = malloc(n * sizeof *phys + 1);
    attest_status st = idx && phys ? attest_topk_run_candidate(cand, c, NULL, v, idx, phys)
                                   : attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "topk run: out of memory");
    free(idx);
    free(phys);
    return st;
}

attest_status attest_topk_candidate_resolve(const char *spec, const attest_topk_candidate **out)
{
    ATTEST_RETURN_IF(spec == NULL || out == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "top-k candidate: NULL spec");
    *out = attest_topk_builtin_find(spec);
    if (*out) return ATTEST_OK;
    if (attest_external_is_spec(spec)) return attest_external_topk_load(spec, out);
    if (strchr(spec, ':')) return attest_topk_plugin_load(spec, out);
    return attest_fail(ATTEST_ERR_NOT_FOUND, "no top-k candidate '%s' (attest list)", spec);
}

int attest_run_wants_topk(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) return 0;
        if (strcmp(a, "--kernel=topk") == 0) return 1;
        if (strcmp(a, "--kernel") == 0 && i + 1 < argc && strcmp(argv[i + 1], "topk") == 0) return 1;
        if (strncmp(a, "--candidate=", 12) == 0 && attest_topk_builtin_find(a + 12)) return 1;
        if (strcmp(a, "--candidate") == 0 && i + 1 < argc && attest_topk_builtin_find(argv[i + 1]))
            return 1;
    }
    return 0;
}

void attest_topk_print_candidate(const attest_topk_candidate *c, int conventions_width)
{
    char conv[96];
    const uint32_t o = c->outputs;
    snprintf(conv, sizeof conv, "order=%s,out=%s,short=%s",
             c->order == ATTEST_TOPK_ORDER_SORTED ? "sorted" : "any",
             o == (ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL) ? "both"
             : o == ATTEST_TOPK_OUT_LOGICAL                            ? "logical"
                                                                       : "physical",
             c->rule == ATTEST_TOPK_SHORT_IDENTITY ? "identity" : "by-score");
    printf("  %-36s %-10s %-6s %-*s %s\n", c->name, "topk", "host", conventions_width, conv,
           c->description ? c->description : "");
}

void attest_topk_print_candidates(int conventions_width)
{
    const attest_topk_candidate *const *list;
    const size_t n = attest_topk_builtin_candidates(&list);
    for (size_t i = 0; i < n; i++) attest_topk_print_candidate(list[i], conventions_width);
}

static void usage(FILE *f)
{
    fputs("usage: attest run --kernel topk --candidate NAME [options]\n"
          "\n"
          "Judges a top-k selection kernel on generated cases against the reference selection:\n"
          "exact-tie set recall, positions inside the length, -1 padding at the end, the order\n"
          "it declares, the short-row rule and the page-table translation.\n"
          "Exit status: 0 every case passed, 1 a case failed, 2 usage or input error.\n"
          "\n"
          "  --candidate NAME   a top-k candidate (attest list) or path/lib.so:NAME, a plugin\n"
          "                     exporting attest_plugin_topk_candidates (docs/topk.md), or\n"
          "                     py:PATH.py:NAME / exec:CMD ARG..., a process (docs/external-candidates.md)\n"
          "  --cases N          cases to generate (default 100)\n"
          "  --seed S           campaign seed (default 1)\n"
          "  --case-seed X      run exactly one case, drawn from its own seed X (as printed)\n"
          "  --filter F         only cases whose parameter string matches, e.g. 'k=512'\n"
          "  --print-failures N failing cases printed (default 20)\n"
          "  --reruns N         runs per case, compared bitwise (default 2)\n"
          "  --timeout SEC      per-run time limit (default 10)\n"
          "  --no-isolate       run in this process (no crash or hang protection)\n"
          "  --save-failures DIR  write each failing case as DIR/topk-SEED.h5 (kept if it\n"
          "                     exists), for attest check (docs/case-format.md)\n"
          "  --out FILE         write a results file, one row per case (attest show, attest replay;\n"
          "                     docs/results-format.md); --force replaces an earlier one\n"
          "  --max-batch N --max-next-n N --max-len N (row width) --max-topk N   generator bounds\n",
          f);
}

enum { OPT_MAX_BATCH = 256, OPT_MAX_NEXT_N, OPT_MAX_LEN, OPT_MAX_TOPK };

static const struct option topk_options[] = {
    {"help", no_argument, NULL, 'h'},
    ATTEST_CLI_OPT_CANDIDATE,
    ATTEST_CLI_OPT_KERNEL,
    ATTEST_CLI_OPT_CASES,
    ATTEST_CLI_OPT_SEED,
    ATTEST_CLI_OPT_FILTER,
    ATTEST_CLI_OPT_CASE_SEED,
    ATTEST_CLI_OPT_PRINT_FAILURES,
    /* The top-k generator's own bounds (not attest/gen_options.h's: other ranges, other
     * fields). */
    {"max-batch", required_argument, NULL, OPT_MAX_BATCH},
    {"max-next-n", required_argument, NULL, OPT_MAX_NEXT_N},
    {"max-len", required_argument, NULL, OPT_MAX_LEN},
    {"max-topk", required_argument, NULL, OPT_MAX_TOPK},
    ATTEST_CLI_OPT_QUIET,
    ATTEST_CLI_OPT_RERUNS,
    ATTEST_CLI_OPT_TIMEOUT,
    ATTEST_CLI_OPT_NO_ISOLATE,
    ATTEST_CLI_OPT_SAVE_FAILURES,
    ATTEST_CLI_OPT_OUT,
    ATTEST_CLI_OPT_FORCE,
    {NULL, 0, NULL, 0},
};

#define BAD(what) return attest_cli_bad_value("run", what, optarg)

int attest_cmd_run_topk(int argc, char **argv)
{
    char command_line[2048]; /* taken before getopt permutes argv */
    attest_engine_command_line(argc + 1, argv - 1, command_line, sizeof command_line);
    attest_topk_gen_bounds g = attest_topk_gen_defaults();
    attest_topk_run_options ro = attest_topk_run_defaults();
    attest_cli_run_args r;
    attest_cli_run_defaults(&r);
    r.reruns = ro.reruns;
    r.timeout = ro.timeout_seconds;
    r.no_isolate = !ro.isolate;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", topk_options)) != -1) {
        if (attest_cli_run_is_option(ch)) {
            const int rc = attest_cli_run_option("run", ch, optarg, &r);
            if (rc >= 0) return rc;
            continue;
        }
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case OPT_MAX_BATCH:
            if (attest_cli_parse_i32(optarg, 1, 1024, &g.max_batch)) BAD("max-batch");
            break;
        case OPT_MAX_NEXT_N:
            if (attest_cli_parse_i32(optarg, 1, 16, &g.max_next_n)) BAD("max-next-n");
            break;
        case OPT_MAX_LEN:
            if (attest_cli_parse_i32(optarg, 1, ATTEST_TOPK_MAX_WIDTH, &g.max_width)) BAD("max-len");
            break;
        case OPT_MAX_TOPK:
            if (attest_cli_parse_i32(optarg, 1, ATTEST_TOPK_MAX_K, &g.max_k)) BAD("max-topk");
            break;
        default: return attest_cli_getopt_error("run", ch, argv);
        }
    }
    if (optind < argc)
        return attest_cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
    const char *cand_name = r.candidate, *kernel = r.kernel, *filter = r.filter;
    const char *save_dir = r.save_dir, *out = r.out;
    const uint64_t cases = r.cases, seed = r.seed, case_seed = r.case_seed;
    const uint64_t print_failures = r.print_failures;
    const int use_case_seed = r.use_case_seed;
    ro.reruns = r.reruns;
    ro.timeout_seconds = r.timeout;
    ro.isolate = !r.no_isolate;
    if (kernel != NULL && strcmp(kernel, "topk") != 0)
        return attest_cli_usage_error("run", "candidate '%s' is a topk kernel, not %s",
                                      cand_name ? cand_name : "?", kernel);
    if (cand_name == NULL) return attest_cli_usage_error("run", "--candidate is required");
    if (attest_topk_filter_check(filter) != ATTEST_OK)
        return attest_cli_usage_error("run", "--filter: %s", attest_last_error());
    if (save_dir) {
        const int src = attest_cli_output_dir("run", "save-failures", save_dir);
        if (src >= 0) return src;
    }
    if (out) {
        const char *inputs[1] = {cand_name};
        const int orc =
            attest_cli_check_output("run", out, ATTEST_OUTPUT_RESULTS, r.force, inputs, 1);
        if (orc >= 0) return orc;
    }
    const attest_topk_candidate *cand = NULL;
    if (attest_topk_candidate_resolve(cand_name, &cand) != ATTEST_OK)
        return attest_cli_usage_error("run", "%s", attest_last_error());
    attest_results_writer *results = NULL;
    if (out && attest_topk_results_open(out, command_line, cand_name, &g, seed,
                                        use_case_seed ? 1 : cases, &results) != ATTEST_OK)
        return attest_cli_usage_error("run", "%s", attest_last_error());

    printf("attest run: topk candidate %s, %s\n", cand->name, cand->description);
    uint64_t judged = 0, failed = 0, printed = 0;
    uint64_t check_counts[ATTEST_TOPK_CHECK_COUNT_] = {0};
    const uint64_t total = use_case_seed ? 1 : cases;
    for (uint64_t i = 0; i < total; i++) {
        const uint64_t s = use_case_seed ? case_seed : attest_topk_case_seed(seed, i);
        attest_topk_case c;
        attest_status st = attest_topk_generate(s, &g, &c);
        if (st != ATTEST_OK) {
            fprintf(stderr, "attest run: case %" PRIu64 ": %s\n", i, attest_last_error());
            return ATTEST_EXIT_USAGE;
        }
        char params[160];
        if (attest_topk_param_string(&c, params, sizeof params) != ATTEST_OK) params[0] = '\0';
        if (filter != NULL && !attest_param_string_matches(params, filter)) {
            attest_topk_case_free(&c);
            continue;
        }
        attest_topk_verdict v;
        const size_t n = (size_t)attest_topk_rows(&c.p) * (size_t)c.p.k;
        int32_t *idx = malloc(n * sizeof *idx + 1), *phys = malloc(n * sizeof *phys + 1);
        const double t0 = attest_monotonic_seconds();
        st = idx && phys ? attest_topk_run_candidate(cand, &c, &ro, &v, idx, phys)
                         : attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "topk run: out of memory");
        const double seconds = attest_monotonic_seconds() - t0;
        char replay[1024];
        snprintf(replay, sizeof replay,
                 "attest run --kernel topk --candidate %s --case-seed 0x%016" PRIx64
                 " --max-batch %d --max-next-n %d --max-len %d --max-topk %d",
                 cand_name, s, g.max_batch, g.max_next_n, g.max_width, g.max_k);
        if (st == ATTEST_OK && results) {
            attest_case_record rec;
            attest_topk_record(cand, &c, params, i, &v, ro.reruns, seconds, &rec);
            st = attest_results_append(results, &rec, NULL, NULL);
        }
        if (st == ATTEST_OK && v.failed && save_dir) {
            char path[4200];
            int kept = 0;
            st = attest_topk_save_failure(save_dir, cand, &c, &v, idx, phys, replay, path,
                                          sizeof path, &kept);
            if (st == ATTEST_OK && kept) printf("  note: %s exists, kept\n", path);
        }
        free(idx);
        free(phys);
        attest_topk_case_free(&c);
        if (st != ATTEST_OK) {
            fprintf(stderr, "attest run: case %" PRIu64 ": %s\n", i, attest_last_error());
            if (results && attest_results_close(results, ATTEST_RESULTS_INTERRUPTED) != ATTEST_OK)
                fprintf(stderr, "attest run: %s\n", attest_last_error());
            return ATTEST_EXIT_USAGE;
        }
        judged++;
        if (v.failed == 0) continue;
        failed++;
        for (int k = 0; k < ATTEST_TOPK_CHECK_COUNT_; k++)
            if (v.failed & (1u << k)) check_counts[k]++;
        if (printed < print_failures) {
            printed++;
            char checks[160];
            attest_topk_check_mask_string(v.failed, checks, sizeof checks);
            printf("MISMATCH case %" PRIu64 " %s [%s] rows failing %d\n  %s\n  replay: %s\n", i,
                   params, checks, v.rows_failed, v.detail, replay);
        }
    }
    printf("attest: %" PRIu64 " cases judged\n  verdicts: OK %" PRIu64 ", MISMATCH %" PRIu64 "\n",
           judged, judged - failed, failed);
    if (failed) {
        printf("  failed checks:");
        for (int k = 0; k < ATTEST_TOPK_CHECK_COUNT_; k++)
            if (check_counts[k])
                printf(" %s %" PRIu64, attest_topk_check_name((attest_topk_check)k),
                       check_counts[k]);
        printf("\n");
    }
    if (results) {
        if (attest_results_close(results, ATTEST_RESULTS_COMPLETE) != ATTEST_OK)
            return attest_cli_usage_error("run", "%s", attest_last_error());
        printf("  results: %s (attest show %s)\n", out, out);
    }
    return attest_cli_result_line(failed, judged, 0, "case");
}
