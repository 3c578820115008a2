/* attest fixture: makes golden fixtures (case files holding several generated cases, each with
 * its expected outputs) for `attest check`. `fixture make` draws cases from a campaign seed as
 * `attest run` does, optionally keeping only those that cover edge tags (fixture.h), and stores
 * as expected outputs the float64 reference (default) or a candidate's own outputs.
 * docs/fixtures.md is the user's guide. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attest/reference.h"
#include "attest/build_info.h"
#include "attest/casefile.h"
#include "attest/conventions.h"
#include "attest/registry.h"
#include "attest/files.h"
#include "commands.h"
#include "attest/campaign.h"
#include "fixture.h"
#include "attest/gen_options.h"
#include "run_options.h"

#define VERB "fixture"

static void usage(FILE *f)
{
    fputs("usage: attest fixture make OUT.h5 --kernel K [options]\n"
          "       attest fixture tags [--kernel K]\n"
          "\n"
          "make writes generated cases as groups case-0, case-1, ... of a new OUT.h5 (replaced if\n"
          "it exists), each with its expected outputs under the output names (logits; out_bf16,\n"
          "lse), for attest check --against stored|both. Case i is drawn from a seed derived\n"
          "from --seed and i, as attest run draws it; the same command writes the same cases.\n"
          "tags lists the edge tags --cover accepts.\n"
          "\n"
          "  --kernel K         indexer or mla-decode (required)\n"
          "  --cases N          cases to write; with --cover, the most to write (default 8)\n"
          "  --seed S           campaign seed (default 1)\n"
          "  --cover TAGS|all   instead of the first N cases, the fewest small cases that\n"
          "                     together show every edge tag listed (attest fixture tags), each\n"
          "                     case informative (no output all masked, NaN or ~0); an error\n"
          "                     names tags not found\n"
          "  --depth D          --cover: each tag shown by at least D cases (default 1)\n"
          "  --force            replace OUT.h5 when it exists (an HDF5 file, nothing else)\n"
          "  --tries N          generated cases --cover chooses from (default 1000)\n"
          "  --expected WHAT    reference (default): the float64 CPU reference, as attest\n"
          "                     reference computes it; SPEC: the outputs of that candidate (the\n"
          "                     kernel being replaced), in its output dtypes; none: no outputs\n"
          "  --outputs-from OLD the same as --expected OLD: the outputs of kernel OLD, with the\n"
          "                     conventions it declares, so attest check --against stored gates\n"
          "                     a new kernel on OLD's results without OLD present\n"
          "  --with-truth       also store the truth tensors (for attest reference --mode true)\n"
          "generator bounds (as attest run):\n" ATTEST_CLI_GEN_USAGE,
          f);
}

enum { OPT_COVER = 256, OPT_TRIES, OPT_EXPECTED, OPT_TRUTH, OPT_DEPTH, OPT_OUTPUTS_FROM };

static const struct option long_options[] = {
    {"help", no_argument, NULL, 'h'},
    ATTEST_CLI_OPT_KERNEL,
    ATTEST_CLI_OPT_CASES,
    ATTEST_CLI_OPT_SEED,
    {"cover", required_argument, NULL, OPT_COVER},
    {"tries", required_argument, NULL, OPT_TRIES},
    {"expected", required_argument, NULL, OPT_EXPECTED},
    {"with-truth", no_argument, NULL, OPT_TRUTH},
    ATTEST_CLI_GEN_LONG_OPTIONS,
    {"depth", required_argument, NULL, OPT_DEPTH},
    ATTEST_CLI_OPT_FORCE,
    {"outputs-from", required_argument, NULL, OPT_OUTPUTS_FROM},
    {NULL, 0, NULL, 0},
};

typedef struct make_args {
    attest_cli_run_args r; /* kernel, cases, seed, force and the generator bounds */
    const char *out, *cover, *expected;
    uint64_t tries;
    uint32_t depth;
    int with_truth, expected_set;
} make_args;

#define BAD(what) return attest_cli_bad_value(VERB, what, optarg)

static int parse_make(int argc, char **argv, make_args *a)
{
    memset(a, 0, sizeof *a);
    attest_cli_run_defaults(&a->r);
    a->r.cases = 8;
    a->r.max_cases = 100000;
    a->tries = 1000;
    a->depth = 1;
    a->expected = "reference";
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", long_options)) != -1) {
        if (attest_cli_run_is_option(ch)) {
            const int rc = attest_cli_run_option(VERB, ch, optarg, &a->r);
            if (rc >= 0) return rc;
            continue;
        }
        switch (ch) {
        case 'h': usage(stdout); return ATTEST_EXIT_OK;
        case OPT_COVER: a->cover = optarg; break;
        case OPT_EXPECTED:
        case OPT_OUTPUTS_FROM:
            /* Two spellings of one choice; given twice, they would silently disagree. */
            if (a->expected_set && strcmp(a->expected, optarg) != 0)
                return attest_cli_usage_error(VERB, "make: --expected / --outputs-from given "
                                                    "twice ('%s', '%s')",
                                              a->expected, optarg);
            a->expected = optarg;
            a->expected_set = 1;
            break;
        case OPT_TRUTH: a->with_truth = 1; break;
        case OPT_DEPTH: {
            int32_t d;
            if (attest_cli_parse_i32(optarg, 1, 100, &d)) BAD("depth");
            a->depth = (uint32_t)d;
            break;
        }
        case OPT_TRIES:
            if (attest_cli_parse_u64(optarg, &a->tries) || a->tries == 0) BAD("tries");
            break;
        default: return attest_cli_getopt_error(VERB, ch, argv);
        }
    }
    if (optind + 1 != argc)
        return attest_cli_usage_error(VERB, "make: expected one output file (OUT.h5)");
    a->out = argv[optind];
    if (!a->r.kernel) return attest_cli_usage_error(VERB, "make: --kernel is required");
    return attest_cli_check_output(VERB, a->out, ATTEST_OUTPUT_HDF5, a->r.force, NULL, 0);
}

/* Applies kernel and bounds to the generator options. Returns an exit status or -1. */
static int gen_options(const make_args *a, attest_gen_options *g)
{
    attest_kernel k;
    if (attest_kernel_from_name(a->r.kernel, &k) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    *g = attest_gen_defaults(k);
    g->with_truth = a->with_truth;
    /* Golden sets stay dense: an external-process candidate (the bridge copies the whole region)
     * declines a pool past 2^31 bytes, and a fixture is for every candidate. */
    g->high_pools = 0;
    return attest_cli_gen_apply(VERB, &a->r.gen, g);
}

/* How the expected outputs are made. */
typedef struct expected_src {
    int none;
    const attest_candidate *cand; /* NULL: the reference */
    attest_runner *runner;
} expected_src;

/* Computes the expected outputs of a case into outs[] (owned by the caller, freed with free()).
 * With a candidate, the case takes the candidate's conventions first, so the file's attributes
 * describe the outputs stored beside them. */
static attest_status make_expected(expected_src *src, attest_case *c, const char *group,
                                   attest_casefile_output *outs, void **bufs, size_t *n_out)
{
    *n_out = 0;
    if (src->none) return ATTEST_OK;
    size_t k = 0;
    double *ref[4] = {0};
    for (size_t i = 0; i < c->num_tensors && k < 4; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        outs[k] = attest_casefile_output_of(t);
        ref[k] = malloc(attest_tensor_count(t) * sizeof(double) + 1);
        bufs[k] = ref[k];
        ATTEST_RETURN_IF(!ref[k], ATTEST_ERR_OUT_OF_MEMORY, "%s: expected outputs", group);
        k++;
    }
    *n_out = k;
    if (!src->cand) {
        ATTEST_FORWARD(attest_engine_reference(c, ref));
        for (size_t j = 0; j < k; j++) {
            outs[j].dtype = ATTEST_DTYPE_F64;
            outs[j].data = ref[j];
        }
        return ATTEST_OK;
    }
    attest_conventions_apply(&src->cand->conventions, c);
    attest_case_record rec;
    attest_case_outputs kept;
    ATTEST_FORWARD(attest_runner_judge(src->runner, c, &rec, &kept));
    attest_status st = ATTEST_OK;
    for (size_t j = 0; j < k && st == ATTEST_OK; j++) {
        if (!kept.candidate[j]) {
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                             "%s: candidate '%s' produced no outputs (%s: %s)", group,
                             src->cand->name, attest_verdict_name(rec.verdict), rec.message);
            break;
        }
        free(bufs[j]);
        bufs[j] = kept.candidate[j]; /* ownership moves to bufs */
        kept.candidate[j] = NULL;
        outs[j].data = bufs[j];
    }
    if (st == ATTEST_OK && rec.verdict != ATTEST_VERDICT_OK)
        printf("  note: %s: %s is %s against the reference (%s); its outputs are stored as "
               "expected\n",
               group, src->cand->name, attest_verdict_name(rec.verdict), rec.message);
    attest_case_outputs_free(&kept);
    return st;
}

/* Writes the file's provenance at the root (no case there), then one group per case. */
static attest_status start_file(const char *path, const char *command_line, const char *expected)
{
    attest_tensorfile *f = NULL;
    ATTEST_FORWARD(attest_tensorfile_create(path, &f));
    attest_status st = attest_tensorfile_set_string(f, NULL, "attest_fixture", "golden fixture: "
                                                    "one case per group, expected outputs beside "
                                                    "(docs/fixtures.md)");
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "command", command_line);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "expected", expected);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "attest_version", ATTEST_VERSION);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "attest_commit", ATTEST_GIT_COMMIT);
    attest_status cst = attest_tensorfile_close(f);
    return st != ATTEST_OK ? st : cst;
}

static int cmd_tags(int argc, char **argv)
{
    attest_kernel only = (attest_kernel)0;
    if (argc == 3 && !strcmp(argv[1], "--kernel")) {
        if (attest_kernel_from_name(argv[2], &only) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
    } else if (argc != 1) {
        return attest_cli_usage_error(VERB, "usage: attest fixture tags [--kernel K]");
    }
    size_t n;
    const fixture_tag_def *t = fixture_tag_table(&n);
    for (size_t i = 0; i < n; i++)
        if (!only || t[i].kernel == only)
            printf("%-11s %-17s %s%s%s\n", attest_kernel_name(t[i].kernel), t[i].name, t[i].what,
                   t[i].layout ? "; " : "",
                   t[i].layout ? attest_layout_name((attest_layout_id)t[i].layout) : "");
    return ATTEST_EXIT_OK;
}

typedef struct make_state {
    const make_args *a;
    attest_gen_options gen;
    fixture_tags wanted, covered;
    expected_src src;
    char tmp[4200];
    char bounds[256];
    uint64_t kept;
} make_state;

/* Generates case i again and writes it as the next group. */
static attest_status write_case(make_state *m, uint64_t i)
{
    const uint64_t seed = attest_case_seed(m->a->r.seed, i);
    attest_case c;
    attest_gen_info info;
    memset(&c, 0, sizeof c);
    memset(&info, 0, sizeof info);
    ATTEST_FORWARD(attest_generate_case_info(&m->gen, seed, &c, &info));
    const fixture_tags tags = fixture_case_tags(&c, &info);
    attest_gen_info_free(&info);
    char group[32], tag_names[512], note[1400], params[ATTEST_PARAM_STRING_MAX];
    snprintf(group, sizeof group, "case-%" PRIu64, m->kept);
    fixture_tags_string(tags, tag_names, sizeof tag_names);
    attest_casefile_output outs[4];
    void *bufs[4] = {0};
    size_t n_out = 0;
    attest_status st = make_expected(&m->src, &c, group, outs, bufs, &n_out);
    if (st == ATTEST_OK) st = attest_case_param_string(&c, params, sizeof params);
    snprintf(note, sizeof note,
             "case %" PRIu64 " of seed %" PRIu64 "; edges: %s; regenerate: attest run --kernel %s "
             "--candidate NAME --case-seed 0x%016" PRIx64 "%s",
             i, m->a->r.seed, tag_names[0] ? tag_names : "none", attest_kernel_name(c.kernel), seed,
             m->bounds);
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.expected = outs;
    x.num_expected = n_out;
    x.note = note;
    if (st == ATTEST_OK) st = attest_casefile_save(m->tmp, group, &c, &x);
    if (st == ATTEST_OK) {
        printf("%-8s case %" PRIu64 ", seed 0x%016" PRIx64 "  %s\n         edges: %s\n", group, i,
               seed, params, tag_names[0] ? tag_names : "none");
        m->covered |= tags & m->wanted;
        m->kept++;
    }
    for (size_t k = 0; k < 4; k++) free(bufs[k]);
    attest_case_free(&c);
    return st;
}

/* A case is informative when every output's reference holds a finite value the comparator can
 * tell from noise (max |finite value| >= vacuity_factor * atol of the default policy): a case
 * whose outputs are all masked, NaN or near zero shows its edge but tests nothing beside it
 * (the comparator flags such outputs vacuous). */
static attest_status informative_case(const attest_case *c, int *informative)
{
    *informative = 0;
    attest_policy *policy = NULL;
    ATTEST_FORWARD(attest_policy_default(&policy));
    double *ref[ATTEST_RECORD_MAX_OUTPUTS] = {0};
    const attest_tensor *outs[ATTEST_RECORD_MAX_OUTPUTS];
    size_t k = 0;
    attest_status st = ATTEST_OK;
    for (size_t i = 0; i < c->num_tensors && k < ATTEST_RECORD_MAX_OUTPUTS; i++) {
        if (c->tensors[i].role != ATTEST_ROLE_OUTPUT) continue;
        outs[k] = &c->tensors[i];
        ref[k] = malloc(attest_tensor_count(outs[k]) * sizeof(double) + 1);
        if (!ref[k++]) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "reference outputs");
    }
    if (st == ATTEST_OK) st = attest_engine_reference(c, ref);
    int all = st == ATTEST_OK;
    for (size_t j = 0; j < k && all; j++) {
        attest_tolerance tol;
        if (attest_policy_lookup(policy, c->kernel, outs[j]->name, &tol) != ATTEST_OK) {
            attest_clear_error();
            continue;
        }
        double max_abs = 0;
        for (size_t e = 0; e < attest_tensor_count(outs[j]); e++)
            if (isfinite(ref[j][e]) && fabs(ref[j][e]) > max_abs) max_abs = fabs(ref[j][e]);
        all = max_abs >= tol.vacuity_factor * tol.atol && max_abs > 0;
    }
    for (size_t j = 0; j < k; j++) free(ref[j]);
    *informative = all;
    return st;
}

typedef struct scanned {
    uint64_t index;
    fixture_tags tags;
    double cost;
    int picked;
} scanned;

static int popcount(fixture_tags t)
{
    int n = 0;
    for (; t; t &= t - 1) n++;
    return n;
}

static int cmp_index(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* --cover: looks at the first `tries` cases and picks, greedily, the case that adds the most
 * uncovered tags per estimated byte (ties to the earlier case) until every wanted tag is shown
 * by `depth` picked cases: a small fixture that still holds every edge (greedy set cover, within
 * a log factor of the smallest). Fills picked[] in case order. */
static attest_status pick_cover(make_state *m, uint64_t *picked, uint64_t *num_picked)
{
    const make_args *a = m->a;
    scanned *s = calloc((size_t)a->tries, sizeof *s);
    ATTEST_RETURN_IF(!s, ATTEST_ERR_OUT_OF_MEMORY, "--tries %" PRIu64 ": too many", a->tries);
    fixture_tags seen = 0;
    attest_status st = ATTEST_OK;
    for (uint64_t i = 0; i < a->tries && st == ATTEST_OK; i++) {
        attest_case c;
        attest_gen_info info;
        memset(&c, 0, sizeof c);
        memset(&info, 0, sizeof info);
        st = attest_generate_case_info(&m->gen, attest_case_seed(a->r.seed, i), &c, &info);
        if (st != ATTEST_OK) break;
        int informative = 0;
        st = informative_case(&c, &informative);
        s[i].index = i;
        s[i].tags = informative ? fixture_case_tags(&c, &info) & m->wanted : 0;
        s[i].cost = fixture_case_cost(&c, &info) + 4096.0; /* + HDF5 overhead per group */
        seen |= s[i].tags;
        attest_gen_info_free(&info);
        attest_case_free(&c);
    }
    /* A tag counts as covered once `depth` picked cases show it. */
    uint32_t count[32] = {0};
    fixture_tags covered = 0;
    *num_picked = 0;
    while (st == ATTEST_OK && covered != (m->wanted & seen) && *num_picked < a->r.cases) {
        size_t best = (size_t)-1;
        double best_score = 0;
        for (size_t i = 0; i < (size_t)a->tries; i++) {
            int gain = s[i].picked ? 0 : popcount(s[i].tags & ~covered);
            double score = gain / s[i].cost;
            if (gain > 0 && score > best_score) {
                best = i;
                best_score = score;
            }
        }
        s[best].picked = 1;
        for (int t = 0; t < 32; t++)
            if ((s[best].tags >> t) & 1u && ++count[t] >= a->depth) covered |= 1u << t;
        picked[(*num_picked)++] = s[best].index;
    }
    free(s);
    ATTEST_FORWARD(st);
    qsort(picked, (size_t)*num_picked, sizeof *picked, cmp_index);
    if (covered != m->wanted) {
        char missing[512];
        fixture_tags_string(m->wanted & ~covered, missing, sizeof missing);
        if ((m->wanted & ~seen) != 0)
            return attest_fail(ATTEST_ERR_NOT_FOUND,
                               "%s: no case among the first %" PRIu64 " shows: %s (raise --tries "
                               "or change the generator bounds)",
                               a->out, a->tries, missing);
        return attest_fail(ATTEST_ERR_NOT_FOUND,
                           "%s: %" PRIu64 " cases do not cover: %s (raise --cases)", a->out,
                           a->r.cases, missing);
    }
    return ATTEST_OK;
}

static int cmd_make(int argc, char **argv)
{
    /* Taken before getopt permutes argv; "attest", not the path it ran from: the command is
     * for people to rerun. */
    char command_line[2048];
    char *prog = argv[-2];
    argv[-2] = "attest";
    attest_engine_command_line(argc + 2, argv - 2, command_line, sizeof command_line);
    argv[-2] = prog;
    make_args a;
    int rc = parse_make(argc, argv, &a);
    if (rc >= 0) return rc;
    make_state m;
    memset(&m, 0, sizeof m);
    m.a = &a;
    if ((rc = gen_options(&a, &m.gen)) >= 0) return rc;
    if (a.cover &&
        fixture_tags_parse(a.cover, m.gen.kernel, m.gen.layout, &m.wanted) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    attest_cli_gen_flags(&a.r.gen, m.bounds, sizeof m.bounds);

    char expected_desc[256];
    if (!strcmp(a.expected, "none")) {
        m.src.none = 1;
        snprintf(expected_desc, sizeof expected_desc, "none");
    } else if (!strcmp(a.expected, "reference")) {
        snprintf(expected_desc, sizeof expected_desc,
                 "float64 CPU reference (simulated, kernel order), as attest reference computes "
                 "it");
    } else {
        if (attest_candidate_resolve(a.expected, &m.src.cand) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "--expected: %s", attest_last_error());
        if (m.src.cand->kernel != m.gen.kernel)
            return attest_cli_usage_error(VERB, "--expected: candidate '%s' is a %s kernel",
                                          m.src.cand->name,
                                          attest_kernel_name(m.src.cand->kernel));
        attest_runner_options ro = attest_runner_defaults();
        ro.reference = attest_ref_simulated;
        if (attest_runner_create(m.src.cand, &ro, &m.src.runner) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
        char conv[160];
        attest_conventions_format(&m.src.cand->conventions, m.src.cand->kernel, conv,
                                  sizeof conv);
        snprintf(expected_desc, sizeof expected_desc,
                 "outputs of candidate %s (its dtypes; conventions %s)", m.src.cand->name, conv);
    }

    snprintf(m.tmp, sizeof m.tmp, "%s.tmp-%ld", a.out, (long)getpid());
    attest_status st = start_file(m.tmp, command_line, expected_desc);
    uint64_t *picked = calloc((size_t)a.r.cases, sizeof *picked), num_picked = a.r.cases;
    if (!picked && st == ATTEST_OK) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "case list");
    if (st == ATTEST_OK && a.cover) st = pick_cover(&m, picked, &num_picked);
    else
        for (uint64_t i = 0; picked && i < a.r.cases; i++) picked[i] = i;
    for (uint64_t i = 0; st == ATTEST_OK && i < num_picked; i++) st = write_case(&m, picked[i]);
    free(picked);
    attest_runner_destroy(m.src.runner);
    if (st == ATTEST_OK && rename(m.tmp, a.out) != 0)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot rename %s into place", a.out, m.tmp);
    if (st != ATTEST_OK) {
        (void)remove(m.tmp); /* a partial fixture would look like a whole one */
        return attest_cli_usage_error(VERB, "%s: not written: %s", a.out, attest_last_error());
    }
    struct stat sb;
    printf("wrote %" PRIu64 " case%s to %s, %lld bytes; expected outputs: %s\n", m.kept,
           m.kept == 1 ? "" : "s", a.out,
           stat(a.out, &sb) == 0 ? (long long)sb.st_size : -1LL, expected_desc);
    return ATTEST_EXIT_OK;
}

int attest_cmd_fixture(int argc, char **argv)
{
    if (argc < 2)
        return attest_cli_usage_error(VERB, "expected a subcommand, make or tags (attest "
                                            "fixture --help)");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return ATTEST_EXIT_OK;
    }
    if (!strcmp(argv[1], "make")) return cmd_make(argc - 1, argv + 1);
    if (!strcmp(argv[1], "tags")) return cmd_tags(argc - 1, argv + 1);
    return attest_cli_usage_error(VERB, "unknown subcommand '%s' (make or tags)", argv[1]);
}
