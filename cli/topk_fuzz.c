/* attest fuzz --kernel topk (topk_fuzz.h). */
#include "topk_fuzz.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/clock.h"
#include "attest/reference_topk.h"
#include "attest/topk_casefile.h"
#include "attest/topk_results.h"
#include "attest/topk_runner.h"
#include "commands.h"
#include "fuzz_inputs.h"
#include "fuzz_jobs.h"
#include "fuzz_libfuzzer.h"
#include "topk_minimize.h"
#include "topk_run.h"

#define VERB "fuzz"

/* --- one finding: judged again, minimized, saved, checked ---------------------------------- */

typedef struct judged {
    attest_topk_verdict v;
    int32_t *idx, *phys; /* the candidate's outputs, [rows, k] */
} judged;

static void judged_free(judged *j)
{
    free(j->idx);
    free(j->phys);
    j->idx = j->phys = NULL;
}

static attest_status judge(const attest_topk_candidate *cand, const attest_topk_run_options *ro,
                           const attest_topk_case *c, judged *j)
{
    const size_t n = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.k;
    j->idx = malloc(n * sizeof *j->idx + 1);
    j->phys = malloc(n * sizeof *j->phys + 1);
    if (j->idx == NULL || j->phys == NULL) {
        judged_free(j);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "topk fuzz: out of memory");
    }
    const attest_status st = attest_topk_run_candidate(cand, c, ro, &j->v, j->idx, j->phys);
    if (st != ATTEST_OK) judged_free(j);
    return st;
}

typedef struct same_ctx {
    const attest_topk_candidate *cand;
    const attest_topk_run_options *ro;
    uint32_t failed; /* the checks the finding failed */
} same_ctx;

/* The minimizer's predicate: the same failed checks, no more and no fewer. */
static int same_failure(const attest_topk_case *c, void *p)
{
    const same_ctx *s = p;
    judged j;
    memset(&j, 0, sizeof j);
    if (judge(s->cand, s->ro, c, &j) != ATTEST_OK) return -1;
    judged_free(&j);
    return j.v.failed == s->failed;
}

static void describe(const attest_topk_case *c, char *buf, size_t cap)
{
    int32_t longest = 0;
    for (int32_t q = 0; q < c->p.b; q++)
        if (c->context_lens[q] > longest) longest = c->context_lens[q];
    snprintf(buf, cap, "b=%d next_n=%d width=%d k=%d longest length %d", c->p.b, c->p.next_n,
             c->p.width, c->p.k, longest);
}

/* Where a finding came from, for its file name and note. */
typedef struct origin {
    char id[40];
    char what[96];
    char how[1400];
    int expected;     /* the search saw `failed` (the libFuzzer engine only knows "aborted") */
    uint32_t failed;
} origin;

static attest_status save(const char *path, const attest_topk_candidate *cand,
                          const attest_topk_case *c, const judged *j, const char *note,
                          const char *replay)
{
    const size_t n = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.k;
    int32_t *ref = malloc(n * sizeof *ref + 1);
    ATTEST_RETURN_IF(ref == NULL, ATTEST_ERR_OUT_OF_MEMORY, "topk fuzz: out of memory");
    attest_status st = attest_ref_topk_case(c, cand->rule, ref, NULL);
    attest_topk_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.ref_indices = ref;
    x.candidate_name = cand->name;
    x.cand_indices = (cand->outputs & ATTEST_TOPK_OUT_LOGICAL) ? j->idx : NULL;
    x.cand_physical = (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) ? j->phys : NULL;
    x.note = note;
    x.replay = replay;
    if (st == ATTEST_OK) st = attest_topk_casefile_save(path, c, &x);
    free(ref);
    return st;
}

static attest_status finding(const attest_topk_fuzz_options *o, const attest_topk_candidate *cand,
                             const attest_topk_case *c, const origin *from, int number)
{
    attest_topk_run_options ro = attest_topk_run_defaults(); /* isolated: a crash is a verdict */
    ro.reruns = o->run.reruns;
    ro.timeout_seconds = o->run.timeout;
    judged first;
    memset(&first, 0, sizeof first);
    ATTEST_FORWARD(judge(cand, &ro, c, &first));
    char checks[160], want[160];
    attest_topk_check_mask_string(first.v.failed, checks, sizeof checks);
    if (from->expected && first.v.failed != from->failed) {
        attest_topk_check_mask_string(from->failed, want, sizeof want);
        printf("finding %d (%s): [%s] did not repeat: judged again it is [%s]; the candidate is "
               "not deterministic across processes, kept unminimized\n",
               number, from->what, want, checks);
    } else if (!first.v.failed) {
        printf("finding %d (%s): the libFuzzer target stopped on it, but judged in an isolated "
               "run it passes (a failure of the in-process run alone: a sanitizer report, a leak, "
               "or nondeterminism); kept unminimized\n", number, from->what);
    }
    same_ctx sc = {cand, &ro, first.v.failed};
    attest_topk_case small;
    attest_topk_minimize_stats ms = {0, 0};
    const uint32_t tries = first.v.failed ? (uint32_t)o->run.max_tries : 0;
    attest_status st = attest_topk_minimize(c, same_failure, &sc, tries, &small, &ms);
    judged_free(&first);
    if (st != ATTEST_OK) return st;
    judged last;
    memset(&last, 0, sizeof last);
    st = judge(cand, &ro, &small, &last);
    const attest_verdict verdict = attest_topk_verdict_of(first.v.failed);
    char path[4400], note[2400], replay[4600], before[128], after[128];
    describe(c, before, sizeof before);
    describe(&small, after, sizeof after);
    snprintf(path, sizeof path, "%s/finding-topk-%s-%s.h5", o->run.findings,
             attest_verdict_name(verdict), from->id);
    for (char *p = strrchr(path, '/') + 1; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    if (st == ATTEST_OK && attest_cli_free_path(path, sizeof path, NULL) != 0) st = ATTEST_ERR_IO;
    snprintf(note, sizeof note, "attest fuzz finding: %s [%s] of %s; %s, minimized from %s to %s "
             "in %u judgements",
             attest_verdict_name(verdict), checks, cand->name, from->how, before, after, ms.tries);
    snprintf(replay, sizeof replay, "attest check %s --candidate %s", path, o->candidate);
    if (st == ATTEST_OK) st = save(path, cand, &small, &last, note, replay);
    judged_free(&last);
    /* What attest check will see: the file, loaded back, judged once more. */
    attest_topk_case loaded;
    memset(&loaded, 0, sizeof loaded);
    judged again;
    memset(&again, 0, sizeof again);
    if (st == ATTEST_OK) st = attest_topk_casefile_load(path, &loaded);
    if (st == ATTEST_OK) st = judge(cand, &ro, &loaded, &again);
    if (st == ATTEST_OK) {
        char params[160];
        if (attest_topk_param_string(&loaded, params, sizeof params) != ATTEST_OK) params[0] = '\0';
        printf("finding %d: %s [%s], %s\n", number, attest_verdict_name(verdict), checks, from->what);
        printf("  %s\n", again.v.detail);
        printf("  minimized: %s -> %s (%u judgements, %u reductions kept)\n", before, after,
               ms.tries, ms.accepted);
        printf("  saved: %s\n  %s\n", path, params);
        if (again.v.failed == first.v.failed)
            printf("  check: %s   (fails the same way)\n", replay);
        else {
            char now[160];
            attest_topk_check_mask_string(again.v.failed, now, sizeof now);
            printf("  check: %s   (WARNING: the saved case fails [%s], not [%s])\n", replay, now,
                   checks);
        }
    }
    judged_free(&again);
    attest_topk_case_free(&loaded);
    attest_topk_case_free(&small);
    return st;
}

/* --- the search engine: generated cases in forked jobs ------------------------------------- */

typedef struct search_ctx {
    const attest_topk_fuzz_options *o;
    const attest_topk_candidate *cand;
    const char *work;
} search_ctx;

static int search_job(void *p, int32_t job, int32_t jobs, fuzz_job_slot *slot, double deadline)
{
    const search_ctx *x = p;
    const attest_topk_fuzz_options *o = x->o;
    char path[4200];
    snprintf(path, sizeof path, "%s/job-%d.h5", x->work, job);
    attest_results_writer *w = NULL;
    if (attest_topk_results_open(path, o->run.command_line, o->candidate, &o->gen, o->run.seed, 0, &w) !=
        ATTEST_OK) {
        fprintf(stderr, "attest fuzz: job %d: %s\n", job, attest_last_error());
        return 1;
    }
    attest_topk_run_options ro = attest_topk_run_defaults();
    ro.reruns = o->run.reruns;
    ro.timeout_seconds = o->run.timeout;
    attest_status st = ATTEST_OK;
    int stopped = 0;
    for (uint64_t i = (uint64_t)job; st == ATTEST_OK; i += (uint64_t)jobs) {
        if (fuzz_job_should_stop(slot, deadline)) {
            stopped = __atomic_load_n(&slot->stop, __ATOMIC_RELAXED) != 0;
            break;
        }
        const uint64_t s = attest_topk_case_seed(o->run.seed, i);
        attest_topk_case c;
        st = attest_topk_generate(s, &o->gen, &c);
        if (st != ATTEST_OK) break;
        judged j;
        memset(&j, 0, sizeof j);
        const double t0 = attest_monotonic_seconds();
        st = judge(x->cand, &ro, &c, &j);
        if (st == ATTEST_OK) {
            char params[160];
            if (attest_topk_param_string(&c, params, sizeof params) != ATTEST_OK) params[0] = '\0';
            attest_case_record rec;
            attest_topk_record(x->cand, &c, params, i, &j.v, ro.reruns,
                               attest_monotonic_seconds() - t0, &rec);
            st = attest_results_append(w, &rec, NULL, NULL);
            judged_free(&j);
        }
        attest_topk_case_free(&c);
        if (st != ATTEST_OK) break;
        __atomic_fetch_add(&slot->judged, 1, __ATOMIC_RELAXED);
        if (j.v.failed) {
            fuzz_job_found(slot, i, s, j.v.failed);
            break;
        }
    }
    if (st != ATTEST_OK) fprintf(stderr, "attest fuzz: job %d: %s\n", job, attest_last_error());
    const attest_status cst = attest_results_close(
        w, st == ATTEST_OK && !stopped ? ATTEST_RESULTS_COMPLETE : ATTEST_RESULTS_INTERRUPTED);
    if (cst != ATTEST_OK) fprintf(stderr, "attest fuzz: job %d: %s\n", job, attest_last_error());
    return st == ATTEST_OK && cst == ATTEST_OK ? 0 : 1;
}

static int run_search(const attest_topk_fuzz_options *o, const attest_topk_candidate *cand)
{
    char work[4096], corpus[4200];
    if (attest_lf_scratch(NULL, work, sizeof work, corpus, sizeof corpus) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    printf("attest fuzz: %s (topk), up to %.0f s over %d job%s, seed %" PRIu64
           " (--seed %" PRIu64 " repeats it), results in %s\n",
           cand->name, o->run.time, o->run.jobs, o->run.jobs == 1 ? "" : "s", o->run.seed, o->run.seed, o->run.out);
    search_ctx x = {o, cand, work};
    fuzz_jobs_result r;
    attest_status st = fuzz_jobs_run(o->run.jobs, o->run.time, !o->run.quiet && attest_cli_interactive(),
                                     search_job, &x, &r);
    uint64_t rows = 0;
    int rc = fuzz_jobs_merge(st, &r, o->run.jobs, o->run.seed, work, o->run.out, o->run.command_line, &rows);
    if (rc >= 0) return rc;
    printf("results: %" PRIu64 " judged cases in %s\n", rows, o->run.out);
    int exit_code = r.findings ? ATTEST_EXIT_FAILED : r.interrupted ? 130 : ATTEST_EXIT_OK;
    if (r.findings) {
        printf("time to first finding: %.3f s (%" PRIu64 " cases)\n", r.first_s, r.first_judged);
        origin from;
        memset(&from, 0, sizeof from);
        snprintf(from.id, sizeof from.id, "%016" PRIx64, r.first.seed);
        snprintf(from.what, sizeof from.what, "case seed 0x%016" PRIx64, r.first.seed);
        snprintf(from.how, sizeof from.how,
                 "generated from seed 0x%016" PRIx64 " (attest run --kernel topk --candidate "
                 "%.600s --case-seed 0x%016" PRIx64 " --max-batch %d --max-next-n %d "
                 "--max-len %d --max-topk %d)",
                 r.first.seed, o->candidate, r.first.seed, o->gen.max_batch, o->gen.max_next_n,
                 o->gen.max_width, o->gen.max_k);
        from.expected = 1;
        from.failed = (uint32_t)r.first.failed;
        attest_topk_case c;
        st = attest_topk_generate(r.first.seed, &o->gen, &c);
        if (st == ATTEST_OK) {
            st = finding(o, cand, &c, &from, 1);
            attest_topk_case_free(&c);
        }
        if (st != ATTEST_OK) {
            fflush(stdout);
            exit_code = attest_cli_usage_error(VERB, "%s", attest_last_error());
        }
    }
    attest_lf_remove_tree(work);
    return exit_code;
}

/* --- the libFuzzer engine: fuzz/fuzz_topk in N processes ----------------------------------- */

static attest_status libfuzzer_finding(const attest_topk_fuzz_options *o,
                                       const attest_topk_candidate *cand, const char *input,
                                       const char *log, int number)
{
    uint8_t *data = NULL;
    size_t size = 0;
    ATTEST_FORWARD(attest_lf_read_file(input, &data, &size));
    attest_topk_case c;
    int valid = 0;
    attest_status st = fuzz_topk_decode(data, size, &c, &valid);
    origin from;
    memset(&from, 0, sizeof from);
    const char *base = strrchr(input, '/') ? strrchr(input, '/') + 1 : input;
    char kept[4400];
    if (st == ATTEST_OK)
        st = attest_lf_keep_input(input, data, size, o->run.findings, "topk", from.id, sizeof from.id,
                                  kept, sizeof kept);
    free(data);
    snprintf(from.what, sizeof from.what, "libFuzzer input %.40s", base);
    snprintf(from.how, sizeof from.how,
             "decoded from the libFuzzer input finding-topk-%s.fuzz-input beside this file "
             "(ATTEST_FUZZ_CANDIDATE=%.600s fuzz_topk_replay INPUT replays it; fuzz/README.md)",
             from.id, o->candidate);
    if (st == ATTEST_OK && !valid)
        st = attest_fail(ATTEST_ERR_INTERNAL, "%s names no valid case, yet the target stopped on "
                         "it: its output is in %s", input, log);
    if (st == ATTEST_OK) {
        printf("finding %d: the libFuzzer target stopped on %s (kept as %s)\n", number, base, kept);
        st = finding(o, cand, &c, &from, number);
    }
    if (valid) attest_topk_case_free(&c);
    return st;
}

static int run_libfuzzer(const attest_topk_fuzz_options *o, const attest_topk_candidate *cand)
{
    if (o->gen_given)
        return attest_cli_usage_error(VERB, "generator bounds are options of --engine search (the "
                                      "libFuzzer targets draw their cases from the input)");
    attest_lf_setup setup;
    const int rc = attest_lf_setup_from(VERB, "topk", o->fuzzer, o->dict, o->corpus, &o->run,
                                        &setup);
    if (rc >= 0) return rc;
    attest_lf_options lo = setup.lo;
    const char *target = setup.target, *work = setup.work;
    lo.candidate = o->candidate;
    lo.structure = !o->no_structure; /* semantic counters on or off (no custom mutator) */
    lo.features = fuzz_topk_feature_count();
    printf("attest fuzz: %s (topk), libFuzzer (%s), up to %.0f s over %d job%s, seed %" PRIu64
           " (--seed %" PRIu64 "), results in %s\n",
           cand->name, target, o->run.time, o->run.jobs, o->run.jobs == 1 ? "" : "s", o->run.seed, o->run.seed, o->run.out);
    fflush(stdout);
    attest_lf_totals t;
    if (attest_lf_run_merge(&lo, o->run.out, o->run.command_line, &t) != ATTEST_OK) {
        fflush(stdout);
        return attest_cli_usage_error(VERB, "%s (scratch folder kept: %s)", attest_last_error(), work);
    }
    int exit_code = t.findings ? ATTEST_EXIT_FAILED : t.interrupted ? 130 : ATTEST_EXIT_OK;
    if (t.findings) {
        printf("time to first finding: %.3f s (%" PRIu64 " execs)\n", t.first_finding_s,
               t.first_finding_execs);
        for (int i = 0; i < t.findings; i++)
            if (libfuzzer_finding(o, cand, t.finding[i], t.finding_log[i], i + 1) != ATTEST_OK) {
                fflush(stdout);
                attest_cli_usage_error(VERB, "%s", attest_last_error());
                exit_code = ATTEST_EXIT_USAGE;
            }
    }
    if (exit_code != ATTEST_EXIT_USAGE) attest_lf_remove_tree(work);
    return exit_code;
}

int attest_topk_fuzz(const attest_topk_fuzz_options *o)
{
    const attest_topk_candidate *cand = NULL;
    if (attest_topk_candidate_resolve(o->candidate, &cand) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    if (strcmp(o->engine, "libfuzzer") == 0) return run_libfuzzer(o, cand);
    return run_search(o, cand);
}
