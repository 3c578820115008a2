/* The case loop of attest run --baseline, in one process or N jobs (baseline_run.h). */
#include "baseline_run.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/ci_report.h"
#include "attest/clock.h"
#include "attest/report.h"
#include "attest/results.h"
#include "baseline.h"
#include "commands.h"
#include "fuzz_libfuzzer.h"

typedef struct pair_counts {
    uint64_t judged, fails[2], differ, closer_new, closer_old;
    uint64_t error; /* a job's harness error (its message went to stderr) */
    uint64_t spare[2];
} pair_counts;

/* One process's runners and buffers. */
typedef struct pair_run {
    attest_runner *runner[2];
    attest_case c;
    attest_case_outputs keep[2];
    attest_results_writer *results; /* or NULL */
    attest_junit *junit;            /* or NULL */
    attest_summary *summary;        /* --json: every row counted, or NULL */
} pair_run;

static attest_status pair_open(const attest_pair_plan *pl, pair_run *p)
{
    memset(p, 0, sizeof *p);
    for (int j = 0; j < 2; j++)
        ATTEST_FORWARD(attest_runner_create(pl->cand[j], &pl->ro, &p->runner[j]));
    return ATTEST_OK;
}

static void pair_close(pair_run *p)
{
    for (int j = 0; j < 2; j++) {
        if (p->runner[j]) attest_runner_destroy(p->runner[j]);
        attest_case_outputs_free(&p->keep[j]);
    }
    attest_case_free(&p->c);
    p->runner[0] = p->runner[1] = NULL;
}

static uint64_t seed_of(const attest_pair_plan *pl, uint64_t i)
{
    return pl->use_case_seed ? pl->case_seed : attest_case_seed(pl->seed, i);
}

static void replay_of(const attest_pair_plan *pl, uint64_t s, char *buf, size_t cap)
{
    snprintf(buf, cap, "attest run --candidate %s --baseline %s --case-seed 0x%016" PRIx64 "%s",
             pl->cand[0]->name, pl->cand[1]->name, s, pl->bitwise ? " --same bitwise" : "");
}

/* Case i's two testcases: NEW against the reference, and the pair. */
static attest_status junit_add_pair(attest_junit *j, const attest_pair_plan *pl, uint64_t i,
                                    const attest_case_record *nrec, const attest_case_record *row)
{
    char name[512], replay[1024];
    snprintf(name, sizeof name, "case %" PRIu64 " %s", i, nrec->params);
    replay_of(pl, nrec->seed, replay, sizeof replay);
    ATTEST_FORWARD(attest_junit_add(j, pl->cand[0]->name, name, nrec, replay));
    return attest_junit_add(j, row->candidate, name, row, replay);
}

static int harness_error(uint64_t i)
{
    fprintf(stderr, "attest run: case %" PRIu64 ": harness error: %s\n", i, attest_last_error());
    return ATTEST_EXIT_USAGE;
}

/* Cases first, first + stride, ... of the plan. Failing cases are printed to `out` (the first
 * print_failures), each after a line "@case INDEX" when `mark` (a job's file, sorted by the
 * driver). Returns ATTEST_EXIT_OK, or ATTEST_EXIT_USAGE on a harness error. */
static int run_range(pair_run *p, const attest_pair_plan *pl, uint64_t first, uint64_t stride,
                     FILE *out, int mark, pair_counts *n)
{
    uint64_t printed = 0;
    for (uint64_t i = first; i < pl->total; i += stride) {
        const uint64_t s = seed_of(pl, i);
        attest_case_free(&p->c);
        if (attest_generate_case(pl->gen, s, &p->c) != ATTEST_OK) {
            fprintf(stderr, "attest run: case %" PRIu64 ": %s\n", i, attest_last_error());
            return ATTEST_EXIT_USAGE;
        }
        attest_case_record rec[2];
        for (int j = 0; j < 2; j++) {
            attest_case_outputs_free(&p->keep[j]);
            memset(&p->keep[j], 0, sizeof p->keep[j]);
            memset(&rec[j], 0, sizeof rec[j]);
            if (attest_runner_judge(p->runner[j], &p->c, &rec[j], &p->keep[j]) != ATTEST_OK)
                return harness_error(i);
            if (rec[j].verdict != ATTEST_VERDICT_OK) n->fails[j]++;
        }
        n->judged++;
        attest_baseline_result br;
        if (attest_baseline_judge(&p->c, &pl->cand[0]->conventions, &p->keep[0], &p->keep[1],
                                  pl->bitwise, pl->policy, &br) != ATTEST_OK)
            return harness_error(i);
        if (br.failed) {
            n->differ++;
            const int closer = attest_baseline_closer(&br, NULL, 0);
            n->closer_new += closer > 0;
            n->closer_old += closer < 0;
        }
        /* NEW's row, then the pair's (docs/results-format.md, "Old vs new"). */
        attest_case_record row;
        rec[0].case_id = rec[1].case_id = 2 * i;
        attest_baseline_pair_row(&rec[0], &rec[1], &br, pl->bitwise, &row);
        row.case_id = 2 * i + 1;
        if (p->results && (attest_results_append(p->results, &rec[0], &p->c, &p->keep[0]) != ATTEST_OK ||
                           attest_results_append(p->results, &row, &p->c, NULL) != ATTEST_OK))
            return harness_error(i);
        if (p->junit && junit_add_pair(p->junit, pl, i, &rec[0], &row) != ATTEST_OK)
            return harness_error(i);
        if (p->summary) {
            attest_summary_add(p->summary, &rec[0]);
            attest_summary_add(p->summary, &row);
        }
        const int case_failed = br.failed || rec[0].verdict != ATTEST_VERDICT_OK;
        if (!case_failed || printed >= pl->print_failures) continue;
        printed++;
        if (mark) fprintf(out, "@case %" PRIu64 "\n", i);
        fprintf(out, "case %" PRIu64 " %s\n  new %s: %s; old %s: %s\n", i,
                p->c.seed ? rec[0].params : "", pl->cand[0]->name,
                attest_verdict_name(rec[0].verdict), pl->cand[1]->name,
                attest_verdict_name(rec[1].verdict));
        if (br.failed) attest_baseline_fprint(out, &br, pl->bitwise, "  ");
        char replay[1024];
        replay_of(pl, s, replay, sizeof replay);
        fprintf(out, "  replay: %s\n", replay);
    }
    return ATTEST_EXIT_OK;
}

static int print_summary(const attest_pair_plan *pl, const pair_counts *n)
{
    printf("attest: %" PRIu64 " cases, both kernels on the same bytes\n", n->judged);
    printf("  new %s vs reference: OK %" PRIu64 ", failing %" PRIu64 "\n", pl->cand[0]->name,
           n->judged - n->fails[0], n->fails[0]);
    printf("  old %s vs reference: OK %" PRIu64 ", failing %" PRIu64 "\n", pl->cand[1]->name,
           n->judged - n->fails[1], n->fails[1]);
    printf("  new vs old (%s): agree %" PRIu64 ", differ %" PRIu64,
           pl->bitwise ? "bitwise" : "within bounds", n->judged - n->differ, n->differ);
    if (n->differ)
        printf(" (closer to the reference: new in %" PRIu64 ", old in %" PRIu64 ")", n->closer_new,
               n->closer_old);
    printf("\n");
    const int failed = n->fails[0] != 0 || n->differ != 0;
    printf("result: %s (%" PRIu64 " cases)\n", failed ? "FAIL" : "PASS", n->judged);
    return failed ? ATTEST_EXIT_FAILED : ATTEST_EXIT_OK;
}

/* --- N jobs ------------------------------------------------------------------------------- */

static int job_main(const attest_pair_plan *pl, const char *work, int32_t job, pair_counts *n)
{
    char path[4200];
    pair_run p;
    attest_status st = pair_open(pl, &p);
    snprintf(path, sizeof path, "%s/job-%d.h5", work, job);
    if (st == ATTEST_OK)
        st = attest_baseline_results_open(path, pl->command_line, pl->policy, pl->cand, pl->gen,
                                          pl->seed, 0, &p.results);
    snprintf(path, sizeof path, "%s/job-%d.txt", work, job);
    FILE *out = st == ATTEST_OK ? fopen(path, "w") : NULL;
    if (st == ATTEST_OK && out == NULL) st = attest_fail(ATTEST_ERR_IO, "%s: %s", path, strerror(errno));
    int rc = ATTEST_EXIT_USAGE;
    if (st == ATTEST_OK) rc = run_range(&p, pl, (uint64_t)job, (uint64_t)pl->jobs, out, 1, n);
    else fprintf(stderr, "attest run: job %d: %s\n", job, attest_last_error());
    if (out && fclose(out) != 0) rc = ATTEST_EXIT_USAGE;
    if (p.results &&
        attest_results_close(p.results, rc == ATTEST_EXIT_OK ? ATTEST_RESULTS_COMPLETE
                                                             : ATTEST_RESULTS_INTERRUPTED) != ATTEST_OK) {
        fprintf(stderr, "attest run: job %d: %s\n", job, attest_last_error());
        rc = ATTEST_EXIT_USAGE;
    }
    pair_close(&p);
    n->error = rc != ATTEST_EXIT_OK;
    return n->error ? 1 : 0;
}

/* Reads the next row of r with its repro (c owns nothing on entry; freed by the caller). */
static attest_status next_row(attest_results_reader *r, attest_case_record *rec, attest_case *c,
                              int *with_case)
{
    int has_repro = 0, done = 0;
    ATTEST_FORWARD(attest_results_next(r, rec, &has_repro, &done));
    ATTEST_RETURN_IF(done, ATTEST_ERR_FORMAT, "%s: a job's results end early",
                     attest_results_path(r));
    *with_case = has_repro && attest_results_load_repro(r, rec->case_id, c) == ATTEST_OK;
    return ATTEST_OK;
}

/* The jobs' rows in case order: into the results file and the JUnit report. */
static attest_status merge(const attest_pair_plan *pl, const char *work, attest_results_writer *w,
                           attest_junit *junit, attest_summary *summary)
{
    attest_results_reader **r = calloc((size_t)pl->jobs, sizeof *r);
    ATTEST_RETURN_IF(r == NULL, ATTEST_ERR_OUT_OF_MEMORY, "run --baseline: out of memory");
    attest_status st = ATTEST_OK;
    for (int32_t j = 0; j < pl->jobs && st == ATTEST_OK; j++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/job-%d.h5", work, j);
        st = attest_results_open_read(path, &r[j]);
    }
    for (uint64_t i = 0; i < pl->total && st == ATTEST_OK; i++) {
        attest_case_record rec[2];
        attest_case c[2];
        int with_case[2] = {0, 0};
        memset(c, 0, sizeof c);
        for (int k = 0; k < 2 && st == ATTEST_OK; k++)
            st = next_row(r[i % (uint64_t)pl->jobs], &rec[k], &c[k], &with_case[k]);
        for (int k = 0; k < 2 && st == ATTEST_OK && w; k++) {
            rec[k].case_id = 2 * i + (uint64_t)k;
            st = attest_results_append(w, &rec[k], with_case[k] ? &c[k] : NULL, NULL);
        }
        if (st == ATTEST_OK && junit) st = junit_add_pair(junit, pl, i, &rec[0], &rec[1]);
        for (int k = 0; k < 2 && st == ATTEST_OK && summary; k++) attest_summary_add(summary, &rec[k]);
        for (int k = 0; k < 2; k++) attest_case_free(&c[k]);
    }
    for (int32_t j = 0; j < pl->jobs; j++) attest_results_close_read(r[j]);
    free(r);
    return st;
}

typedef struct printed_case {
    uint64_t index;
    char *text;
} printed_case;

static int by_index(const void *a, const void *b)
{
    const uint64_t x = ((const printed_case *)a)->index, y = ((const printed_case *)b)->index;
    return x < y ? -1 : x > y;
}

/* The jobs' printed failing cases, the first print_failures in case order. */
static void print_jobs_failures(const attest_pair_plan *pl, const char *work)
{
    printed_case *list = NULL;
    size_t n = 0, cap = 0;
    for (int32_t j = 0; j < pl->jobs; j++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/job-%d.txt", work, j);
        uint8_t *data = NULL;
        size_t size = 0;
        if (attest_lf_read_file(path, &data, &size) != ATTEST_OK) continue;
        char *text = realloc(data, size + 1);
        if (text == NULL) {
            free(data);
            continue;
        }
        text[size] = '\0';
        for (char *at = strstr(text, "@case "); at; ) {
            char *body = strchr(at, '\n');
            if (body == NULL) break;
            char *next = strstr(body + 1, "\n@case ");
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                printed_case *l = realloc(list, cap * sizeof *l);
                if (l == NULL) break;
                list = l;
            }
            const size_t len = next ? (size_t)(next + 1 - (body + 1)) : strlen(body + 1);
            list[n].index = strtoull(at + 6, NULL, 10);
            list[n].text = strndup(body + 1, len);
            if (list[n].text) n++;
            at = next ? next + 1 : NULL;
        }
        free(text);
    }
    if (n) qsort(list, n, sizeof *list, by_index);
    for (size_t i = 0; i < n; i++) {
        if (i < pl->print_failures) fputs(list[i].text, stdout);
        free(list[i].text);
    }
    free(list);
}

static int run_jobs(const attest_pair_plan *pl, attest_summary *summary)
{
    char work[4096], corpus[4200];
    if (attest_lf_scratch(NULL, work, sizeof work, corpus, sizeof corpus) != ATTEST_OK)
        return attest_cli_usage_error("run", "%s", attest_last_error());
    const size_t len = (size_t)pl->jobs * sizeof(pair_counts);
    pair_counts *n = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED) {
        attest_lf_remove_tree(work);
        return attest_cli_usage_error("run", "job counters: %s", strerror(errno));
    }
    memset(n, 0, len);
    fflush(NULL);
    int failed_jobs = 0;
    pid_t *pids = calloc((size_t)pl->jobs, sizeof *pids);
    for (int32_t j = 0; pids && j < pl->jobs; j++) {
        pids[j] = fork();
        if (pids[j] == 0) _exit(job_main(pl, work, j, &n[j]));
        failed_jobs += pids[j] < 0;
    }
    for (int32_t j = 0; pids && j < pl->jobs; j++) {
        int status;
        if (pids[j] > 0 && (waitpid(pids[j], &status, 0) != pids[j] || !WIFEXITED(status) ||
                            WEXITSTATUS(status) != 0))
            failed_jobs++;
    }
    int rc;
    if (pids == NULL || failed_jobs) {
        rc = attest_cli_usage_error("run", "%s (scratch folder kept: %s)",
                                    pids ? "a job failed (its message is above)" : "out of memory",
                                    work);
    } else {
        pair_counts sum;
        memset(&sum, 0, sizeof sum);
        for (int32_t j = 0; j < pl->jobs; j++) {
            sum.judged += n[j].judged;
            sum.differ += n[j].differ;
            sum.closer_new += n[j].closer_new;
            sum.closer_old += n[j].closer_old;
            for (int k = 0; k < 2; k++) sum.fails[k] += n[j].fails[k];
        }
        attest_results_writer *w = NULL;
        attest_junit *junit = NULL;
        const double t0 = attest_monotonic_seconds();
        attest_status st = ATTEST_OK;
        if (pl->out)
            st = attest_baseline_results_open(pl->out, pl->command_line, pl->policy, pl->cand,
                                              pl->gen, pl->seed, pl->total, &w);
        if (st == ATTEST_OK && pl->junit) st = attest_junit_open(pl->junit, "attest run", &junit);
        if (st == ATTEST_OK) st = merge(pl, work, w, junit, summary);
        if (w) {
            const attest_status cst = attest_results_close(
                w, st == ATTEST_OK ? ATTEST_RESULTS_COMPLETE : ATTEST_RESULTS_INTERRUPTED);
            if (st == ATTEST_OK) st = cst;
        }
        if (junit) {
            if (st == ATTEST_OK) st = attest_junit_close(junit, attest_monotonic_seconds() - t0);
            else attest_junit_discard(junit);
        }
        if (st != ATTEST_OK) {
            rc = attest_cli_usage_error("run", "%s (scratch folder kept: %s)", attest_last_error(),
                                        work);
        } else {
            print_jobs_failures(pl, work);
            rc = print_summary(pl, &sum);
            attest_lf_remove_tree(work);
        }
    }
    free(pids);
    munmap(n, len);
    return rc;
}

int attest_baseline_run(const attest_pair_plan *pl)
{
    const double t0 = attest_monotonic_seconds();
    attest_summary *summary = pl->json ? malloc(sizeof *summary) : NULL;
    if (pl->json && summary == NULL) return attest_cli_usage_error("run", "out of memory");
    if (summary) attest_summary_init(summary);
    int rc;
    if (pl->jobs > 1 && !pl->use_case_seed) {
        rc = run_jobs(pl, summary);
    } else {
        pair_run p;
        pair_counts n;
        memset(&n, 0, sizeof n);
        attest_status st = pair_open(pl, &p);
        if (st == ATTEST_OK && pl->out)
            st = attest_baseline_results_open(pl->out, pl->command_line, pl->policy, pl->cand,
                                              pl->gen, pl->seed, pl->total, &p.results);
        if (st == ATTEST_OK && pl->junit) st = attest_junit_open(pl->junit, "attest run", &p.junit);
        if (st != ATTEST_OK) {
            rc = attest_cli_usage_error("run", "%s", attest_last_error());
        } else {
            p.summary = summary;
            rc = run_range(&p, pl, 0, 1, stdout, 0, &n);
            if (rc != ATTEST_EXIT_USAGE) rc = print_summary(pl, &n);
        }
        if (p.results) {
            attest_results_set_device(p.results, attest_runner_device(p.runner[0]));
            const attest_status cst = attest_results_close(
                p.results, rc == ATTEST_EXIT_USAGE ? ATTEST_RESULTS_INTERRUPTED : ATTEST_RESULTS_COMPLETE);
            if (cst != ATTEST_OK && rc != ATTEST_EXIT_USAGE)
                rc = attest_cli_usage_error("run", "%s", attest_last_error());
        }
        if (p.junit) {
            if (rc != ATTEST_EXIT_USAGE &&
                attest_junit_close(p.junit, attest_monotonic_seconds() - t0) != ATTEST_OK)
                rc = attest_cli_usage_error("run", "%s", attest_last_error());
            else if (rc == ATTEST_EXIT_USAGE)
                attest_junit_discard(p.junit);
        }
        pair_close(&p);
    }
    if (rc != ATTEST_EXIT_USAGE && pl->out) printf("  results: %s (attest show %s)\n", pl->out, pl->out);
    if (rc != ATTEST_EXIT_USAGE && pl->junit) printf("  junit: %s\n", pl->junit);
    if (rc != ATTEST_EXIT_USAGE && summary) {
        attest_json_run run;
        memset(&run, 0, sizeof run);
        run.verb = pl->verb ? pl->verb : "run";
        run.result = rc == ATTEST_EXIT_OK ? "PASS" : "FAIL";
        run.exit_code = rc;
        run.results_path = pl->out;
        run.seconds = attest_monotonic_seconds() - t0;
        if (attest_report_json(pl->json, summary, &run) != ATTEST_OK)
            rc = attest_cli_usage_error("run", "%s", attest_last_error());
        else
            printf("  json: %s\n", pl->json);
    }
    free(summary);
    return rc;
}
