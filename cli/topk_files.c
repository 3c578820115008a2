/* The top-k family's case files and results rows (topk_files.h). */
#include "topk_files.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attest/campaign.h"
#include "attest/reference_topk.h"
#include "attest/topk_candidates.h"
#include "attest/topk_casefile.h"
#include "attest/topk_results.h"
#include "commands.h"
#include "topk_run.h"

attest_status attest_topk_save_failure(const char *dir, const attest_topk_candidate *cand,
                                       const attest_topk_case *c, const attest_topk_verdict *v,
                                       const int32_t *idx, const int32_t *phys,
                                       const char *replay, char *path, size_t cap, int *kept)
{
    snprintf(path, cap, "%s/topk-%016" PRIx64 ".h5", dir, c->seed);
    struct stat sb;
    *kept = lstat(path, &sb) == 0;
    if (*kept) return ATTEST_OK;
    const size_t n = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.k;
    int32_t *ref = malloc(n * sizeof *ref + 1);
    ATTEST_RETURN_IF(ref == NULL, ATTEST_ERR_OUT_OF_MEMORY, "topk: out of memory");
    attest_status st = attest_ref_topk_case(c, cand->rule, ref, NULL);
    char checks[160], note[512], tmp[4200];
    attest_topk_check_mask_string(v->failed, checks, sizeof checks);
    snprintf(note, sizeof note, "%s: %s", checks, v->detail);
    attest_topk_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.ref_indices = ref;
    x.candidate_name = cand->name;
    x.cand_indices = (cand->outputs & ATTEST_TOPK_OUT_LOGICAL) ? idx : NULL;
    x.cand_physical = (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) ? phys : NULL;
    x.note = note;
    x.replay = replay;
    /* Written beside and renamed into place: a reader never sees half a file. */
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    if (st == ATTEST_OK) st = attest_topk_casefile_save(tmp, c, &x);
    if (st == ATTEST_OK && rename(tmp, path) != 0)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot rename %s into place", path, tmp);
    if (st != ATTEST_OK) (void)remove(tmp);
    free(ref);
    return st;
}

/* --- attest check over top-k case files -------------------------------------------------------- */

int attest_check_wants_topk(int argc, char **argv)
{
    if (attest_run_wants_topk(argc, argv)) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) return i + 1 < argc && attest_topk_casefile_is(argv[i + 1]);
        if (a[0] == '-') {
            /* Options that take a value: skip it. */
            if (strchr(a, '=') == NULL && i + 1 < argc && argv[i + 1][0] != '-' &&
                strncmp(a, "--no-", 5) != 0 && strcmp(a, "--force") != 0 &&
                strcmp(a, "--quiet") != 0 && strcmp(a, "--help") != 0)
                i++;
            continue;
        }
        return attest_topk_casefile_is(a);
    }
    return 0;
}

static void check_usage(FILE *f)
{
    fputs("usage: attest check FILE... --candidate NAME [--kernel topk] [options]\n"
          "\n"
          "Replays top-k case files (attest run --kernel topk --save-failures DIR writes them)\n"
          "against a top-k candidate: the reference selection of each file's logits under the\n"
          "candidate's rules, every check of attest run --kernel topk (docs/topk.md).\n"
          "Exit status: 0 every file passed, 1 a file failed or is unreadable, 2 usage error.\n"
          "\n"
          "  --candidate NAME   a top-k candidate (attest list) or path/lib.so:NAME\n"
          "  --reruns N         runs per case, compared bitwise (default 2)\n"
          "  --timeout SEC      per-run time limit (default 10)\n"
          "  --no-isolate       run in this process (no crash or hang protection)\n",
          f);
}

static const struct option check_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"candidate", required_argument, NULL, 'c'},
    {"kernel", required_argument, NULL, 'k'},
    {"reruns", required_argument, NULL, 'r'},
    {"timeout", required_argument, NULL, 't'},
    {"no-isolate", no_argument, NULL, 'n'},
    {"quiet", no_argument, NULL, 'q'},
    {NULL, 0, NULL, 0},
};

/* Judges one case and prints its line; *failed receives whether it failed. */
static attest_status judge_print(const attest_topk_candidate *cand, const attest_topk_case *c,
                                 const attest_topk_run_options *ro, const char *label,
                                 int *failed)
{
    const size_t n = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.k;
    int32_t *idx = malloc(n * sizeof *idx + 1), *phys = malloc(n * sizeof *phys + 1);
    attest_topk_verdict v;
    attest_status st = idx && phys ? attest_topk_run_candidate(cand, c, ro, &v, idx, phys)
                                   : attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "topk: out of memory");
    free(idx);
    free(phys);
    ATTEST_FORWARD(st);
    char params[160], checks[160];
    if (attest_topk_param_string(c, params, sizeof params) != ATTEST_OK) params[0] = '\0';
    *failed = v.failed != 0;
    if (!v.failed) {
        printf("OK %s %s\n", label, params);
        return ATTEST_OK;
    }
    attest_topk_check_mask_string(v.failed, checks, sizeof checks);
    printf("%s %s %s [%s] rows failing %d\n  %s\n", attest_verdict_name(attest_topk_verdict_of(v.failed)),
           label, params, checks, v.rows_failed, v.detail);
    return ATTEST_OK;
}

int attest_cmd_check_topk(int argc, char **argv)
{
    const char *spec = NULL, *kernel = NULL;
    attest_topk_run_options ro = attest_topk_run_defaults();
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = attest_cli_getopt(argc, argv, ":", check_options)) != -1) {
        switch (ch) {
        case 'h': check_usage(stdout); return ATTEST_EXIT_OK;
        case 'c': spec = optarg; break;
        case 'k': kernel = optarg; break;
        case 'r':
            if (attest_cli_parse_i32(optarg, 1, 1000, &ro.reruns))
                return attest_cli_bad_value("check", "reruns", optarg);
            break;
        case 't':
            if (attest_cli_parse_double(optarg, 0.01, 86400.0, &ro.timeout_seconds))
                return attest_cli_bad_value("check", "timeout", optarg);
            break;
        case 'n': ro.isolate = 0; break;
        case 'q': break;
        default: return attest_cli_getopt_error("check", ch, argv);
        }
    }
    if (kernel && strcmp(kernel, "topk") != 0)
        return attest_cli_usage_error("check", "top-k case files take --kernel topk, not %s", kernel);
    if (spec == NULL) return attest_cli_usage_error("check", "--candidate is required");
    if (optind >= argc) return attest_cli_usage_error("check", "expected top-k case files");
    const attest_topk_candidate *cand = NULL;
    if (attest_topk_candidate_resolve(spec, &cand) != ATTEST_OK)
        return attest_cli_usage_error("check", "%s", attest_last_error());
    uint64_t judged = 0, failed = 0, unreadable = 0;
    for (int f = optind; f < argc; f++) {
        attest_topk_case c;
        /* Read in a child first: corrupt HDF5 metadata can crash or hang libhdf5. */
        if (attest_topk_casefile_probe(argv[f]) != ATTEST_OK ||
            attest_topk_casefile_load(argv[f], &c) != ATTEST_OK) {
            printf("UNREADABLE %s\n    %s\n", argv[f], attest_last_error());
            unreadable++;
            continue;
        }
        int bad = 0;
        const attest_status st = judge_print(cand, &c, &ro, argv[f], &bad);
        attest_topk_case_free(&c);
        if (st != ATTEST_OK) {
            fprintf(stderr, "attest check: %s: harness error: %s\n", argv[f], attest_last_error());
            return ATTEST_EXIT_USAGE;
        }
        judged++;
        failed += (uint64_t)bad;
    }
    printf("attest: %" PRIu64 " top-k case files judged against %s\n  verdicts: OK %" PRIu64
           ", failed %" PRIu64 "\n", judged, cand->name, judged - failed, failed);
    if (unreadable) printf("  unreadable: %" PRIu64 " files (see above)\n", unreadable);
    return attest_cli_result_line(failed, judged, unreadable, "case file");
}

/* --- attest replay ----------------------------------------------------------------------------- */

/* The bounds and candidate of the file's top-k job line. */
static int parse_job(const char *jobs, attest_topk_gen_bounds *g, char *spec, size_t cap)
{
    const char *p = strstr(jobs, "--kernel topk ");
    if (p == NULL) return -1;
    char fmt[96];
    snprintf(fmt, sizeof fmt, "--kernel topk --max-batch %%d --max-next-n %%d --max-len %%d "
                              "--max-topk %%d --candidate %%%zus", cap - 1);
    return sscanf(p, fmt, &g->max_batch, &g->max_next_n, &g->max_width, &g->max_k, spec) == 5
               ? 0 : -1;
}

static int replay_results(const char *file, uint64_t case_id, const char *candidate,
                          const attest_topk_run_options *ro)
{
    attest_results_reader *r = NULL;
    if (attest_results_open_read(file, &r) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    attest_case_record rec;
    int has_repro = 0;
    attest_status st = attest_results_find_case(r, case_id, &rec, &has_repro);
    if (st != ATTEST_OK) {
        attest_results_close_read(r);
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    }
    if (strncmp(rec.params, "kernel=topk,", 12) != 0) {
        attest_results_close_read(r);
        return -1;
    }
    attest_topk_gen_bounds g;
    char spec[1024];
    const int job = parse_job(attest_results_provenance_of(r)->jobs, &g, spec, sizeof spec);
    attest_results_close_read(r);
    if (job != 0)
        return attest_cli_usage_error("replay", "%s: case %" PRIu64 " is a top-k case but the file "
                                      "records no top-k job to draw it from", file, case_id);
    if (candidate == NULL || strcmp(candidate, rec.candidate) == 0) candidate = spec;
    const attest_topk_candidate *cand = NULL;
    if (attest_topk_candidate_resolve(candidate, &cand) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    attest_topk_case c;
    if (attest_topk_generate(rec.seed, &g, &c) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    char params[160], label[64];
    st = attest_topk_param_string(&c, params, sizeof params);
    if (st == ATTEST_OK && strcmp(params, rec.params) != 0)
        st = attest_fail(ATTEST_ERR_FORMAT, "case %" PRIu64 " of %s regenerates as '%s', not as "
                         "recorded ('%s')", case_id, file, params, rec.params);
    printf("stored: %s %s (%s)\n", attest_verdict_name(rec.verdict), rec.candidate,
           rec.message[0] ? rec.message : "every check holds");
    snprintf(label, sizeof label, "case %" PRIu64, case_id);
    int failed = 0;
    if (st == ATTEST_OK) st = judge_print(cand, &c, ro, label, &failed);
    attest_topk_case_free(&c);
    if (st != ATTEST_OK) return attest_cli_usage_error("replay", "%s", attest_last_error());
    return failed ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
}

int attest_topk_replay(const char *file, int has_case, uint64_t case_id, const char *candidate,
                       int32_t reruns, double timeout, int no_isolate)
{
    attest_topk_run_options ro = attest_topk_run_defaults();
    ro.reruns = reruns;
    ro.timeout_seconds = timeout;
    ro.isolate = !no_isolate;
    if (has_case) {
        if (attest_results_probe(file, 1) != ATTEST_OK) return -1; /* replay's own error */
        return replay_results(file, case_id, candidate, &ro);
    }
    if (!attest_topk_casefile_is(file)) return -1;
    if (candidate == NULL)
        return attest_cli_usage_error("replay", "%s is a top-k case file: name the candidate "
                                      "with --candidate", file);
    const attest_topk_candidate *cand = NULL;
    if (attest_topk_candidate_resolve(candidate, &cand) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    attest_topk_case c;
    if (attest_topk_casefile_probe(file) != ATTEST_OK || attest_topk_casefile_load(file, &c) != ATTEST_OK)
        return attest_cli_usage_error("replay", "%s", attest_last_error());
    int failed = 0;
    const attest_status st = judge_print(cand, &c, &ro, file, &failed);
    attest_topk_case_free(&c);
    if (st != ATTEST_OK) return attest_cli_usage_error("replay", "%s", attest_last_error());
    return failed ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
}
