/* Pipeline mode on the command line (pipeline_run.h). */
#include "pipeline_run.h"
#include "run_options.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attest/casefile.h"
#include "attest/registry.h"
#include "attest/topk_candidates.h"
#include "commands.h"
#include "pipeline_judge.h"
#include "topk_run.h"

static const char *const stage_names[3] = {"indexer", "topk", "decode"};

/* The stage a "STAGE=SPEC" names (0..2), or -1. */
static int stage_of(const char *arg, const char **spec)
{
    for (int i = 0; i < 3; i++) {
        const size_t n = strlen(stage_names[i]);
        if (strncmp(arg, stage_names[i], n) == 0 && arg[n] == '=') {
            *spec = arg + n + 1;
            return i;
        }
    }
    return -1;
}

int attest_wants_pipeline(int argc, char **argv)
{
    const char *spec;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) return 0;
        if (strcmp(a, "--kernel=pipeline") == 0) return 1;
        if (strcmp(a, "--kernel") == 0 && i + 1 < argc && strcmp(argv[i + 1], "pipeline") == 0)
            return 1;
        if (strncmp(a, "--candidate=", 12) == 0 && stage_of(a + 12, &spec) >= 0) return 1;
        if (strcmp(a, "--candidate") == 0 && i + 1 < argc && stage_of(argv[i + 1], &spec) >= 0)
            return 1;
    }
    return 0;
}

/* Resolves one --candidate STAGE=SPEC into s. Returns -1, or an exit status. */
static int add_stage(const char *verb, const char *arg, pipe_stages *s)
{
    const char *spec;
    const int i = stage_of(arg, &spec);
    if (i < 0)
        return attest_cli_usage_error(verb, "pipeline: --candidate '%s' is not STAGE=SPEC "
                                            "(indexer=, topk=, decode=)", arg);
    if (s->spec[i])
        return attest_cli_usage_error(verb, "pipeline: the %s stage is given twice", stage_names[i]);
    s->spec[i] = spec;
    if (strcmp(spec, "reference") == 0) return -1;
    if (i == 1) {
        if (attest_topk_candidate_resolve(spec, &s->topk) != ATTEST_OK)
            return attest_cli_usage_error(verb, "pipeline: %s", attest_last_error());
        return -1;
    }
    const attest_candidate *c;
    if (attest_candidate_resolve(spec, &c) != ATTEST_OK)
        return attest_cli_usage_error(verb, "pipeline: %s", attest_last_error());
    const attest_kernel want = i == 0 ? ATTEST_KERNEL_INDEXER : ATTEST_KERNEL_MLA_DECODE;
    if (c->kernel != want)
        return attest_cli_usage_error(verb, "pipeline: '%s' is a %s kernel, not a %s one", c->name,
                                      attest_kernel_name(c->kernel), attest_kernel_name(want));
    if (i == 0) s->indexer = c;
    else s->decode = c;
    return -1;
}

static void stage_defaults(pipe_stages *s)
{
    for (int i = 0; i < 3; i++)
        if (!s->spec[i]) s->spec[i] = "reference";
}

static const char *stage_verdict(const pipe_result *r, int i)
{
    if (r->failed & (1u << (i + 1))) return "FAIL";
    if (i == 1 && r->detail[1][0]) return "NOT RUN";
    if (i == 2 && !r->decode_ran) return "NOT RUN";
    return "OK";
}

/* The report of one case: the seam that broke, one line per stage, the selection against the
 * reference chain's, and the replay command. */
static void print_case(const pipe_stages *s, const pipe_result *r, const char *label,
                       const char *params, const char *replay)
{
    printf("%s %s %s: %s%s\n", r->failed ? "FAIL" : "OK", label, params,
           r->failed ? "broke at " : "every seam holds", r->failed ? pipe_seam_name(r->broke) : "");
    for (int i = 0; i < 3; i++) {
        printf("  %-8s %-32s %s", stage_names[i], s->spec[i], stage_verdict(r, i));
        if (r->detail[i][0]) printf("  %s", r->detail[i]);
        else if (i == 2 && r->decode_ran) printf("  (judged on the top-k's own indices)");
        printf("\n");
    }
    if (r->rows == 0) {
        printf("  %-8s not compared: no selection\n", "end-to-end");
        if (replay) printf("  replay: %s\n", replay);
        return;
    }
    printf("  %-8s selection vs the reference chain's: %d rows equal, %d within ties, %d beyond",
           "end-to-end", r->rows_equal, r->rows_ties, r->rows_beyond);
    if (r->rows_ties > 0 && r->decode_ran)
        printf("; the ties move the output by up to %.3g (request %d, query %d, head %d), lse by "
               "%.3g (not a failure)",
               r->e2e_out_max, r->e2e_at[0], r->e2e_at[1], r->e2e_at[2], r->e2e_lse_max);
    printf("\n");
    if (r->detail[3][0]) printf("  %-8s %s\n", "", r->detail[3]);
    if (replay) printf("  replay: %s\n", replay);
}

/* Totals over a run. */
typedef struct pipe_totals {
    uint64_t judged, failed, broke[5], tie_cases, tie_rows, beyond_rows, printed;
    double tie_out_max, tie_lse_max;
    char tie_label[64];
} pipe_totals;

static void add_totals(pipe_totals *t, const pipe_result *r, const char *label)
{
    t->judged++;
    if (r->failed) {
        t->failed++;
        t->broke[r->broke]++;
    }
    if (r->rows_ties) {
        t->tie_cases++;
        t->tie_rows += (uint64_t)r->rows_ties;
        if (r->e2e_out_max > t->tie_out_max) {
            t->tie_out_max = r->e2e_out_max;
            snprintf(t->tie_label, sizeof t->tie_label, "%s", label);
        }
        if (r->e2e_lse_max > t->tie_lse_max) t->tie_lse_max = r->e2e_lse_max;
    }
    t->beyond_rows += (uint64_t)r->rows_beyond;
}

static int print_summary(const pipe_totals *t, const char *what, const char *unit,
                         uint64_t unreadable)
{
    printf("attest: %" PRIu64 " pipeline %s\n  verdicts: OK %" PRIu64 ", FAIL %" PRIu64 "\n",
           t->judged, what, t->judged - t->failed, t->failed);
    if (t->failed) {
        printf("  broke at:");
        for (int i = 1; i <= 4; i++)
            if (t->broke[i]) printf(" %s %" PRIu64, pipe_seam_name((pipe_seam)i), t->broke[i]);
        printf("\n");
    }
    printf("  selection vs the reference chain's: %" PRIu64 " rows within ties in %" PRIu64
           " cases", t->tie_rows, t->tie_cases);
    if (t->tie_cases)
        printf(" (largest output difference they cause %.3g, %s; lse %.3g; reported, not failed)",
               t->tie_out_max, t->tie_label, t->tie_lse_max);
    printf(", %" PRIu64 " rows beyond ties\n", t->beyond_rows);
    if (unreadable) printf("  unreadable: %" PRIu64 " files (see above)\n", unreadable);
    return attest_cli_result_line(t->failed, t->judged, unreadable, unit);
}

/* Writes a chain as a pipeline case file: groups "indexer" and "decode" (its indices -1: the
 * run fills them). An existing file is kept. */
static attest_status save_case(const char *dir, const attest_pipeline_case *pc,
                               const char *replay, char *path, size_t cap, int *kept)
{
    snprintf(path, cap, "%s/pipeline-%016" PRIx64 ".h5", dir, pc->seed);
    struct stat sb;
    *kept = lstat(path, &sb) == 0;
    if (*kept) return ATTEST_OK;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    attest_tensorfile *f = NULL;
    ATTEST_FORWARD(attest_tensorfile_create(tmp, &f));
    attest_status st = attest_tensorfile_set_string(
        f, NULL, "attest_pipeline", "one DSA chain: groups indexer and decode on one page table "
                                    "(docs/pipeline.md)");
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "replay", replay);
    const attest_status cst = attest_tensorfile_close(f);
    if (st == ATTEST_OK) st = cst;
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.note = "pipeline stage 1: the indexer";
    if (st == ATTEST_OK) st = attest_casefile_save(tmp, "indexer", &pc->indexer, &x);
    x.note = "pipeline stage 3: the decode (indices are the selection, filled by the run)";
    if (st == ATTEST_OK) st = attest_casefile_save(tmp, "decode", &pc->decode, &x);
    if (st == ATTEST_OK && rename(tmp, path) != 0)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot rename %s into place", path, tmp);
    if (st != ATTEST_OK) (void)remove(tmp);
    return st;
}

static attest_status load_case(const char *path, attest_pipeline_case *pc)
{
    memset(pc, 0, sizeof *pc);
    attest_status st = attest_casefile_load(path, "indexer", &pc->indexer);
    if (st == ATTEST_OK) st = attest_casefile_load(path, "decode", &pc->decode);
    if (st == ATTEST_OK) {
        pc->k = pc->decode.params.mla.topk;
        st = attest_pipeline_check(pc);
    }
    if (st != ATTEST_OK) attest_pipeline_case_free(pc);
    return st;
}

static void usage(FILE *f)
{
    fputs("usage: attest run --kernel pipeline --candidate indexer=C1 --candidate topk=C2\n"
          "                  --candidate decode=C3 [options]\n"
          "       attest check FILE... --candidate indexer=C1 --candidate topk=C2 --candidate decode=C3\n"
          "\n"
          "Runs the DSA chain on generated cases (or saved pipeline case files): the indexer's\n"
          "logits go to the top-k, its physical indices to the sparse MLA decode. Each stage is a\n"
          "candidate or `reference` (a stage left out is the reference). Every seam is judged:\n"
          "logits within the indexer's bounds, the selection against the exact reference\n"
          "selection of the logits it got, the decode against the reference over the same\n"
          "indices, and the selection against the reference chain's beyond ties. The report\n"
          "names the seam that broke with request, row and position. docs/pipeline.md.\n"
          "Exit status: 0 every case passed, 1 a case failed, 2 usage or input error.\n"
          "\n"
          "  --cases N          cases to generate (default 100)\n"
          "  --seed S           campaign seed (default 1)\n"
          "  --case-seed X      run exactly one case, drawn from its own seed X (as printed)\n"
          "  --print-failures N failing cases printed (default 20)\n"
          "  --save-failures DIR  write each failing case as DIR/pipeline-SEED.h5 (kept if it\n"
          "                     exists), for attest check\n"
          "  --policy FILE --timeout SEC --no-isolate   as attest run\n"
          "  --max-batch N --max-heads N --max-len N --max-topk N --max-next-n N\n"
          "  --max-decode-heads N   generator bounds (defaults 4, 8, 300, 64, 2, 4)\n",
          f);
}

enum { OPT_MAX_BATCH = 256, OPT_MAX_HEADS, OPT_MAX_LEN, OPT_MAX_TOPK, OPT_MAX_NEXT_N,
       OPT_MAX_DHEADS };

static const struct option options[] = {
    {"help", no_argument, NULL, 'h'},
    /* STAGE=SPEC, given once a stage: not the shared --candidate */
    {"candidate", required_argument, NULL, 'c'},
    ATTEST_CLI_OPT_KERNEL,
    ATTEST_CLI_OPT_CASES,
    ATTEST_CLI_OPT_SEED,
    ATTEST_CLI_OPT_CASE_SEED,
    ATTEST_CLI_OPT_PRINT_FAILURES,
    ATTEST_CLI_OPT_SAVE_FAILURES,
    ATTEST_CLI_OPT_POLICY,
    ATTEST_CLI_OPT_TIMEOUT,
    ATTEST_CLI_OPT_NO_ISOLATE,
    /* The chain generator's own bounds (attest/pipeline.h), not attest/gen_options.h's. */
    {"max-batch", required_argument, NULL, OPT_MAX_BATCH},
    {"max-heads", required_argument, NULL, OPT_MAX_HEADS},
    {"max-len", required_argument, NULL, OPT_MAX_LEN},
    {"max-topk", required_argument, NULL, OPT_MAX_TOPK},
    {"max-next-n", required_argument, NULL, OPT_MAX_NEXT_N},
    {"max-decode-heads", required_argument, NULL, OPT_MAX_DHEADS},
    ATTEST_CLI_OPT_QUIET,
    {NULL, 0, NULL, 0},
};

typedef struct pipe_args {
    pipe_stages stages;
    attest_cli_run_args r;
    attest_pipeline_gen_bounds g;
} pipe_args;

#define BAD(what) return attest_cli_bad_value(verb, what, optarg)

/* Parses the options both verbs share; leaves the operands from optind. Returns -1 or an exit
 * status. */
static int parse(const char *verb, int argc, char **argv, pipe_args *a)
{
    memset(a, 0, sizeof *a);
    attest_cli_run_defaults(&a->r);
    a->g = attest_pipeline_gen_defaults();
    optind = 1;
    opterr = 0;
    int ch, rc;
    while ((ch = attest_cli_getopt(argc, argv, ":", options)) != -1) {
        if (attest_cli_run_is_option(ch)) {
            if ((rc = attest_cli_run_option(verb, ch, optarg, &a->r)) >= 0) return rc;
            continue;
        }
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case 'c':
            if ((rc = add_stage(verb, optarg, &a->stages)) >= 0) return rc;
            break;
        case OPT_MAX_BATCH:
            if (attest_cli_parse_i32(optarg, 1, 64, &a->g.max_batch)) BAD("max-batch");
            break;
        case OPT_MAX_HEADS:
            if (attest_cli_parse_i32(optarg, 1, 128, &a->g.max_heads)) BAD("max-heads");
            break;
        case OPT_MAX_LEN:
            if (attest_cli_parse_i32(optarg, 1, 65536, &a->g.max_len)) BAD("max-len");
            break;
        case OPT_MAX_TOPK:
            if (attest_cli_parse_i32(optarg, 1, 2048, &a->g.max_topk)) BAD("max-topk");
            break;
        case OPT_MAX_NEXT_N:
            if (attest_cli_parse_i32(optarg, 1, 16, &a->g.max_next_n)) BAD("max-next-n");
            break;
        case OPT_MAX_DHEADS:
            if (attest_cli_parse_i32(optarg, 1, 128, &a->g.max_decode_heads)) BAD("max-decode-heads");
            break;
        default: return attest_cli_getopt_error(verb, ch, argv);
        }
    }
    if (a->r.kernel && strcmp(a->r.kernel, "pipeline") != 0)
        return attest_cli_usage_error(verb, "pipeline: --kernel %s with STAGE=SPEC candidates "
                                            "(use --kernel pipeline)", a->r.kernel);
    stage_defaults(&a->stages);
    if (a->r.save_dir && (rc = attest_cli_output_dir(verb, "save-failures", a->r.save_dir)) >= 0) return rc;
    return -1;
}

/* Opens the policy and the stages' runners. Returns -1 or an exit status. */
static int open_stages(const char *verb, pipe_args *a, attest_policy **policy)
{
    if ((a->r.policy ? attest_policy_load(a->r.policy, policy) : attest_policy_default(policy)) !=
        ATTEST_OK)
        return attest_cli_usage_error(verb, "%s", attest_last_error());
    a->stages.policy = *policy;
    if (pipe_stages_open(&a->stages, a->r.timeout, !a->r.no_isolate) != ATTEST_OK) {
        pipe_stages_close(&a->stages);
        attest_policy_free(*policy);
        return attest_cli_usage_error(verb, "%s", attest_last_error());
    }
    printf("attest %s: pipeline indexer=%s topk=%s decode=%s\n", verb, a->stages.spec[0],
           a->stages.spec[1], a->stages.spec[2]);
    return -1;
}

static void replay_command(const pipe_args *a, uint64_t seed, char *buf, size_t cap)
{
    const attest_pipeline_gen_bounds d = attest_pipeline_gen_defaults();
    size_t n = (size_t)snprintf(buf, cap, "attest run --kernel pipeline --candidate indexer=%s "
                                "--candidate topk=%s --candidate decode=%s --case-seed 0x%016" PRIx64,
                                a->stages.spec[0], a->stages.spec[1], a->stages.spec[2], seed);
    const int32_t *v[6] = {&a->g.max_batch, &a->g.max_heads, &a->g.max_len, &a->g.max_topk,
                           &a->g.max_next_n, &a->g.max_decode_heads};
    const int32_t dv[6] = {d.max_batch, d.max_heads, d.max_len, d.max_topk, d.max_next_n,
                           d.max_decode_heads};
    static const char *const flag[6] = {"max-batch", "max-heads", "max-len", "max-topk",
                                        "max-next-n", "max-decode-heads"};
    for (int i = 0; i < 6 && n < cap; i++)
        if (*v[i] != dv[i]) n += (size_t)snprintf(buf + n, cap - n, " --%s %d", flag[i], *v[i]);
}

int attest_cmd_run_pipeline(int argc, char **argv)
{
    const char *verb = "run";
    pipe_args a;
    int rc = parse(verb, argc, argv, &a);
    if (rc >= 0) return rc;
    if (optind < argc)
        return attest_cli_usage_error(verb, "unexpected argument '%s'", argv[optind]);
    attest_policy *policy = NULL;
    if ((rc = open_stages(verb, &a, &policy)) >= 0) return rc;
    pipe_totals t;
    memset(&t, 0, sizeof t);
    const uint64_t total = a.r.use_case_seed ? 1 : a.r.cases;
    rc = -1;
    for (uint64_t i = 0; i < total && rc < 0; i++) {
        const uint64_t s =
            a.r.use_case_seed ? a.r.case_seed : attest_pipeline_case_seed(a.r.seed, i);
        attest_pipeline_case pc;
        pipe_result r;
        char params[256], label[64], replay[1024];
        attest_status st = attest_pipeline_generate(s, &a.g, &pc);
        if (st == ATTEST_OK) st = attest_pipeline_param_string(&pc, params, sizeof params);
        if (st == ATTEST_OK) st = pipe_judge(&a.stages, &pc, &r);
        if (st != ATTEST_OK) {
            fprintf(stderr, "attest run: case %" PRIu64 ": %s\n", i, attest_last_error());
            attest_pipeline_case_free(&pc);
            rc = ATTEST_EXIT_USAGE;
            break;
        }
        snprintf(label, sizeof label, "case %" PRIu64, i);
        add_totals(&t, &r, label);
        replay_command(&a, s, replay, sizeof replay);
        if (r.failed && a.r.save_dir) {
            char path[4096];
            int kept = 0;
            const attest_status sst =
                save_case(a.r.save_dir, &pc, replay, path, sizeof path, &kept);
            if (sst == ATTEST_OK && kept) printf("  note: %s exists, kept\n", path);
            else if (sst != ATTEST_OK) {
                fprintf(stderr, "attest run: %s\n", attest_last_error());
                rc = ATTEST_EXIT_USAGE;
            }
        }
        if ((r.failed || a.r.use_case_seed) && t.printed < a.r.print_failures) {
            t.printed++;
            print_case(&a.stages, &r, label, params, replay);
        }
        attest_pipeline_case_free(&pc);
    }
    pipe_stages_close(&a.stages);
    attest_policy_free(policy);
    return rc >= 0 ? rc : print_summary(&t, "cases", "case", 0);
}

int attest_cmd_check_pipeline(int argc, char **argv)
{
    const char *verb = "check";
    pipe_args a;
    int rc = parse(verb, argc, argv, &a);
    if (rc >= 0) return rc;
    if (optind >= argc) return attest_cli_usage_error(verb, "expected pipeline case files");
    attest_policy *policy = NULL;
    if ((rc = open_stages(verb, &a, &policy)) >= 0) return rc;
    pipe_totals t;
    memset(&t, 0, sizeof t);
    uint64_t unreadable = 0;
    rc = -1;
    for (int f = optind; f < argc && rc < 0; f++) {
        attest_pipeline_case pc;
        pipe_result r;
        if (load_case(argv[f], &pc) != ATTEST_OK) {
            printf("UNREADABLE %s\n    %s\n", argv[f], attest_last_error());
            unreadable++;
            continue;
        }
        if (pipe_judge(&a.stages, &pc, &r) != ATTEST_OK) {
            fprintf(stderr, "attest check: %s: %s\n", argv[f], attest_last_error());
            rc = ATTEST_EXIT_USAGE;
        } else {
            add_totals(&t, &r, argv[f]);
            print_case(&a.stages, &r, argv[f], "", NULL);
        }
        attest_pipeline_case_free(&pc);
    }
    pipe_stages_close(&a.stages);
    attest_policy_free(policy);
    if (rc >= 0) return rc;
    return print_summary(&t, "case files", "case file", unreadable);
}
