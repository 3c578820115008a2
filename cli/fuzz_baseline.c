/* attest fuzz --baseline: old vs new, searched (fuzz_baseline.h). */
#include "fuzz_baseline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/casefile.h"
#include "attest/minimize.h"
#include "attest/reference.h"
#include "attest/results.h"
#include "attest/runner.h"
#include "baseline.h"
#include "commands.h"
#include "fuzz_finding.h"
#include "fuzz_jobs.h"
#include "fuzz_libfuzzer.h"

#define VERB "fuzz"

/* Both kernels' runners, made after the fork (each job its own workers). */
typedef struct pair {
    attest_runner *runner[2];
    attest_case_record rec[2];
    attest_case_outputs keep[2];
    attest_baseline_result br;
} pair;

static attest_status pair_open(const attest_fuzz_pair_options *o, pair *p)
{
    memset(p, 0, sizeof *p);
    attest_runner_options ro = attest_runner_defaults();
    ro.reference = attest_ref_simulated;
    ro.policy = o->policy;
    ro.reruns = o->run.reruns;
    ro.timeout_seconds = o->run.timeout;
    for (int j = 0; j < 2; j++) ATTEST_FORWARD(attest_runner_create(o->cand[j], &ro, &p->runner[j]));
    return ATTEST_OK;
}

static void pair_close(pair *p)
{
    for (int j = 0; j < 2; j++) {
        attest_case_outputs_free(&p->keep[j]);
        if (p->runner[j]) attest_runner_destroy(p->runner[j]);
    }
    memset(p, 0, sizeof *p);
}

/* Runs both kernels on c and judges the pair into p->br. */
static attest_status pair_judge(const attest_fuzz_pair_options *o, pair *p, const attest_case *c)
{
    for (int j = 0; j < 2; j++) {
        attest_case_outputs_free(&p->keep[j]);
        memset(&p->keep[j], 0, sizeof p->keep[j]);
        memset(&p->rec[j], 0, sizeof p->rec[j]);
        ATTEST_FORWARD(attest_runner_judge(p->runner[j], c, &p->rec[j], &p->keep[j]));
    }
    return attest_baseline_judge(c, &o->cand[0]->conventions, &p->keep[0], &p->keep[1], o->bitwise,
                                 o->policy, &p->br);
}

/* --- the search --------------------------------------------------------------------------- */

typedef struct search_ctx {
    const attest_fuzz_pair_options *o;
    const char *work;
} search_ctx;

static int search_job(void *q, int32_t job, int32_t jobs, fuzz_job_slot *slot, double deadline)
{
    const search_ctx *x = q;
    const attest_fuzz_pair_options *o = x->o;
    char path[4200];
    snprintf(path, sizeof path, "%s/job-%d.h5", x->work, job);
    attest_results_writer *w = NULL;
    pair p;
    attest_status st = pair_open(o, &p);
    if (st == ATTEST_OK)
        st = attest_baseline_results_open(path, o->run.command_line, o->policy, o->cand, &o->gen,
                                          o->run.seed, 0, &w);
    if (st != ATTEST_OK) {
        fprintf(stderr, "attest fuzz: job %d: %s\n", job, attest_last_error());
        pair_close(&p);
        return 1;
    }
    int stopped = 0;
    attest_case c;
    memset(&c, 0, sizeof c);
    for (uint64_t i = (uint64_t)job; st == ATTEST_OK; i += (uint64_t)jobs) {
        if (fuzz_job_should_stop(slot, deadline)) {
            stopped = __atomic_load_n(&slot->stop, __ATOMIC_RELAXED) != 0;
            break;
        }
        const uint64_t s = attest_case_seed(o->run.seed, i);
        attest_case_free(&c);
        st = attest_generate_case(&o->gen, s, &c);
        if (st == ATTEST_OK) st = pair_judge(o, &p, &c);
        if (st != ATTEST_OK) break;
        /* NEW's row, then the pair's, as attest run --baseline writes them. */
        attest_case_record row;
        p.rec[0].case_id = p.rec[1].case_id = 2 * i;
        attest_baseline_pair_row(&p.rec[0], &p.rec[1], &p.br, o->bitwise, &row);
        row.case_id = 2 * i + 1;
        st = attest_results_append(w, &p.rec[0], &c, &p.keep[0]);
        if (st == ATTEST_OK) st = attest_results_append(w, &row, &c, NULL);
        if (st != ATTEST_OK) break;
        __atomic_fetch_add(&slot->judged, 1, __ATOMIC_RELAXED);
        if (p.br.failed) {
            fuzz_job_found(slot, i, s, p.br.failed_gates);
            break;
        }
    }
    attest_case_free(&c);
    if (st != ATTEST_OK) fprintf(stderr, "attest fuzz: job %d: %s\n", job, attest_last_error());
    attest_results_set_device(w, attest_runner_device(p.runner[0]));
    const attest_status cst = attest_results_close(
        w, st == ATTEST_OK && !stopped ? ATTEST_RESULTS_COMPLETE : ATTEST_RESULTS_INTERRUPTED);
    if (cst != ATTEST_OK) fprintf(stderr, "attest fuzz: job %d: %s\n", job, attest_last_error());
    pair_close(&p);
    return st == ATTEST_OK && cst == ATTEST_OK ? 0 : 1;
}

/* --- the finding -------------------------------------------------------------------------- */

typedef struct same_ctx {
    const attest_fuzz_pair_options *o;
    pair *p;
    uint32_t gates;
} same_ctx;

/* The minimizer's predicate: the pair still differs, with the same failed gates. */
static int same_difference(const attest_case *c, void *q)
{
    same_ctx *s = q;
    if (pair_judge(s->o, s->p, c) != ATTEST_OK) return -1;
    return s->p->br.failed && s->p->br.failed_gates == s->gates;
}


static attest_status finding(const attest_fuzz_pair_options *o, const fuzz_job_slot *found)
{
    attest_case c, small, loaded;
    memset(&c, 0, sizeof c);
    memset(&small, 0, sizeof small);
    memset(&loaded, 0, sizeof loaded);
    pair p;
    attest_status st = pair_open(o, &p);
    if (st == ATTEST_OK) st = attest_generate_case(&o->gen, found->seed, &c);
    if (st == ATTEST_OK) st = pair_judge(o, &p, &c);
    char gates[96] = "", before[160], after[160], path[4400], note[2400], replay[4800];
    attest_minimize_stats ms = {0, 0};
    const uint32_t want = (uint32_t)found->failed;
    if (st == ATTEST_OK) {
        const int repeated = p.br.failed && p.br.failed_gates == want;
        if (!repeated)
            printf("finding 1 (case seed 0x%016" PRIx64 "): the pair %s again; a kernel is not "
                   "deterministic across processes, kept unminimized\n",
                   found->seed, p.br.failed ? "differs otherwise" : "agrees");
        same_ctx sc = {o, &p, p.br.failed_gates};
        st = attest_minimize_case(&c, same_difference, &sc, repeated ? (uint32_t)o->run.max_tries : 1,
                                  &small, &ms);
    }
    if (st == ATTEST_OK) {
        attest_gate_mask_string(want, gates, sizeof gates);
        attest_case_size_describe(&c, before, sizeof before);
        attest_case_size_describe(&small, after, sizeof after);
        snprintf(path, sizeof path, "%s/finding-%s-differs-%016" PRIx64 ".h5", o->run.findings,
                 attest_kernel_name(c.kernel), found->seed);
        if (attest_cli_free_path(path, sizeof path, NULL) != 0) st = ATTEST_ERR_IO;
    }
    if (st == ATTEST_OK) {
        snprintf(note, sizeof note,
                 "attest fuzz --baseline finding: %s and %s differ (%s%s%s); generated from seed "
                 "0x%016" PRIx64 " (attest run --candidate %.300s --baseline %.300s --case-seed "
                 "0x%016" PRIx64 "%s), minimized from %s to %s in %u judgements",
                 o->cand[0]->name, o->cand[1]->name, o->bitwise ? "bitwise" : "within both bounds",
                 gates[0] ? ", gates " : "", gates, found->seed, o->spec[0], o->spec[1],
                 found->seed, o->bitwise ? " --same bitwise" : "", before, after, ms.tries);
        snprintf(replay, sizeof replay, "attest check %s --candidate %s --baseline %s%s%s%s", path,
                 o->spec[0], o->spec[1], o->bitwise ? " --same bitwise" : "",
                 o->policy_path ? " --policy " : "", o->policy_path ? o->policy_path : "");
        st = attest_fuzz_save_case(path, &small, note, replay, NULL);
    }
    /* What attest check will see: the file, loaded back, both kernels on it once more. */
    if (st == ATTEST_OK) st = attest_casefile_load(path, NULL, &loaded);
    if (st == ATTEST_OK) st = pair_judge(o, &p, &loaded);
    if (st == ATTEST_OK) {
        printf("finding 1: %s and %s differ (%s%s%s), case seed 0x%016" PRIx64 "\n",
               o->cand[0]->name, o->cand[1]->name, o->bitwise ? "bitwise" : "within both bounds",
               gates[0] ? ", gates " : "", gates, found->seed);
        printf("  new %s: %s; old %s: %s\n", o->cand[0]->name, attest_verdict_name(p.rec[0].verdict),
               o->cand[1]->name, attest_verdict_name(p.rec[1].verdict));
        if (p.br.failed) attest_baseline_print(&p.br, o->bitwise, "  ");
        printf("  minimized: %s -> %s (%u judgements, %u reductions kept)\n", before, after,
               ms.tries, ms.accepted);
        printf("  saved: %s\n", path);
        if (p.br.failed && p.br.failed_gates == want)
            printf("  check: %s   (differs the same way)\n", replay);
        else
            printf("  check: %s   (WARNING: the saved case %s)\n", replay,
                   p.br.failed ? "differs otherwise" : "agrees");
    }
    attest_case_free(&loaded);
    attest_case_free(&small);
    attest_case_free(&c);
    pair_close(&p);
    return st;
}

int attest_fuzz_pair(const attest_fuzz_pair_options *o)
{
    char work[4096], corpus[4200];
    if (attest_lf_scratch(NULL, work, sizeof work, corpus, sizeof corpus) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    printf("attest fuzz: %s against baseline %s (%s), %s kernel, up to %.0f s over %d job%s, seed "
           "%" PRIu64 " (--seed %" PRIu64 " repeats it), results in %s\n",
           o->cand[0]->name, o->cand[1]->name, o->bitwise ? "bitwise" : "within both bounds",
           attest_kernel_name(o->cand[0]->kernel), o->run.time, o->run.jobs, o->run.jobs == 1 ? "" : "s",
           o->run.seed, o->run.seed, o->run.out);
    search_ctx x = {o, work};
    fuzz_jobs_result r;
    attest_status st = fuzz_jobs_run(o->run.jobs, o->run.time, !o->run.quiet && attest_cli_interactive(),
                                     search_job, &x, &r);
    uint64_t rows = 0;
    int rc = fuzz_jobs_merge(st, &r, o->run.jobs, o->run.seed, work, o->run.out, o->run.command_line, &rows);
    if (rc >= 0) return rc;
    printf("results: %" PRIu64 " rows (NEW's and the pair's per case) in %s\n", rows, o->run.out);
    int exit_code = r.findings ? ATTEST_EXIT_FAILED : r.interrupted ? 130 : ATTEST_EXIT_OK;
    if (r.findings) {
        printf("time to first finding: %.3f s (%" PRIu64 " cases)\n", r.first_s, r.first_judged);
        if (finding(o, &r.first) != ATTEST_OK) {
            fflush(stdout);
            exit_code = attest_cli_usage_error(VERB, "%s", attest_last_error());
        }
    }
    attest_lf_remove_tree(work);
    return exit_code;
}
