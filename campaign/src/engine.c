#include "attest/campaign.h"

#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attest/clock.h"
#include "attest/shell.h"
#include "attest/reference.h"
#include "attest/report.h"
#include "attest/ci_report.h"
#include "attest/registry.h"
#include "attest/results.h"
#include "engine_internal.h"
#include "attest/usage.h"
#include "attest/gen_options.h"

#define stop_requested attest_engine_stop_requested

int attest_engine_exit_status(const attest_engine_totals *t)
{
    if (t->stop_signal) return 128 + t->stop_signal;
    /* A run whose every case the candidate declined (UNSUPPORTED) checked nothing either: a
     * candidate that declines everything must not pass, as in `attest check`. */
    const int checked_nothing =
        t->judged == 0 || t->summary.verdicts[ATTEST_VERDICT_UNSUPPORTED] == t->judged;
    return t->failures || checked_nothing || t->interrupted ? 1 : 0;
}

/* The campaign in progress, for exit_guard. */
static attest_results_writer *active_results;
static const char *active_path;
static int exit_guard_registered;

/* A candidate run in this process (--no-isolate) that calls exit() would end attest with the
 * candidate's status (0: "passed") and lose the buffered rows. This handler runs first of the
 * atexit handlers (it is registered after HDF5's): it keeps the rows and ends with status 2. */
static void exit_guard(void)
{
    if (!active_results) return;
    attest_results_writer *w = active_results;
    active_results = NULL;
    fflush(stdout);
    const attest_status st = attest_results_flush(w);
    fprintf(stderr,
            "attest: the process was ended by exit() during the campaign (a candidate run with "
            "--no-isolate?); %llu rows %s %s\n",
            (unsigned long long)attest_results_rows_flushed(w),
            st == ATTEST_OK ? "kept in" : "could not all be kept in", active_path);
    _exit(2);
}


attest_status attest_engine_reference(const attest_case *c, double **outputs)
{
    return attest_ref_compute(c, ATTEST_REF_SIMULATED, outputs);
}

attest_engine_options attest_engine_defaults(void)
{
    attest_engine_options o;
    memset(&o, 0, sizeof o);
    o.runner = attest_runner_defaults();
    o.print_failures = 20;
    return o;
}

void attest_engine_command_line(int argc, char **argv, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap == 0) return;
    buf[0] = '\0';
    for (int i = 0; i < argc && len + 1 < cap; i++) {
        if (i) {
            buf[len++] = ' ';
            buf[len] = '\0';
        }
        attest_shell_append_arg(buf, cap, &len, argv[i]);
    }
}

void attest_engine_absolute_spec(const char *spec, char *buf, size_t cap)
{
    /* A plugin "path:NAME" is split at the last ':' as the loader splits it; a built-in name
     * holds no ':'. A path that does not resolve stays as written (the replay then says why). */
    const char *colon = strrchr(spec, ':');
    char path[4096], real[PATH_MAX];
    if (colon && (size_t)(colon - spec) < sizeof path && colon != spec) {
        memcpy(path, spec, (size_t)(colon - spec));
        path[colon - spec] = '\0';
        if (realpath(path, real)) {
            snprintf(buf, cap, "%s%s", real, colon);
            return;
        }
    }
    snprintf(buf, cap, "%s", spec);
}

int attest_engine_job_line(const attest_job *job, char *buf, size_t cap)
{
    char flags[512], spec[4096 + 256];
    if (attest_cli_gen_flags_of(&job->gen, 1, flags, sizeof flags)) return -1;
    attest_engine_absolute_spec(job->candidate_spec, spec, sizeof spec);
    const int n = snprintf(buf, cap, "--kernel %s%s --candidate %s",
                           attest_kernel_name(job->gen.kernel), flags, spec);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Copies line `line` (up to '\n' or the end) into buf; returns the start of the next line. */
static const char *next_line(const char *line, char *buf, size_t cap)
{
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (len >= cap) len = cap - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    return end ? end + 1 : line + strlen(line);
}

int attest_engine_find_job(const char *jobs, const char *candidate, attest_kernel kernel,
                           char *spec, size_t spec_cap, attest_gen_options *gen)
{
    char line[sizeof ((attest_results_provenance *)0)->jobs];
    for (const char *p = jobs ? jobs : ""; *p;) {
        p = next_line(p, line, sizeof line);
        char *cand = strstr(line, " --candidate ");
        if (strncmp(line, "--kernel ", 9) != 0 || cand == NULL) continue;
        *cand = '\0';
        cand += strlen(" --candidate ");
        /* The kernel name ends at the first space (or the end, with no bounds). */
        char *rest = line + 9, *sp = strchr(rest, ' ');
        if (sp) *sp++ = '\0';
        attest_kernel k;
        if (attest_kernel_from_name(rest, &k) != ATTEST_OK || k != kernel) continue;
        const char *colon = strrchr(cand, ':');
        const char *name = colon ? colon + 1 : cand;
        if (candidate && *candidate && strcmp(name, candidate) && strcmp(cand, candidate))
            continue;
        *gen = attest_gen_defaults(kernel);
        if (attest_cli_gen_parse_flags("replay", sp ? sp : "", gen) >= 0) return -1;
        snprintf(spec, spec_cap, "%s", cand);
        return 1;
    }
    return 0;
}

static void fill_provenance(attest_results_provenance *prov, const attest_job *jobs,
                            size_t num_jobs, const attest_engine_options *opt)
{
    attest_campaign_provenance(prov, opt->runner.policy, opt->command_line);
    size_t len = 0;
    for (size_t j = 0; j < num_jobs; j++) {
        attest_campaign_provenance_candidate(prov, jobs[j].candidate, &len);
        /* A search bounded by time plans no number of cases (attest fuzz's job counts to 2^40:
         * "1 case of 1099511627776 planned", said attest show). */
        if (opt->time_limit <= 0) prov->cases_planned += jobs[j].use_case_seed ? 1 : jobs[j].cases;
        const size_t used = strlen(prov->jobs);
        if (used + 1 < sizeof prov->jobs &&
            attest_engine_job_line(&jobs[j], prov->jobs + used + (used ? 1 : 0),
                                   sizeof prov->jobs - used - (used ? 1 : 0)) == 0) {
            if (used) prov->jobs[used] = '\n';
        } else {
            prov->jobs[used] = '\0'; /* too many jobs to record: their cases replay from repros */
        }
    }
    prov->seed = jobs[0].seed;
}

/* The command that replays a case of this run. */
static void replay_for(const engine_run *er, const attest_job *job, const attest_case_record *rec,
                       char *replay, size_t cap)
{
    if (er->opt->out_path) {
        attest_results_replay_command(er->opt->out_path, rec->case_id, job->candidate_spec, replay,
                                      cap);
    } else {
        /* Every bound that shaped the case, from the table that parsed them. */
        char flags[512];
        if (attest_cli_gen_flags_of(&job->gen, 0, flags, sizeof flags))
            (void)attest_cli_gen_flags_of(&job->gen, 1, flags, sizeof flags);
        char *args[] = {"attest", "run", "--kernel", (char *)attest_kernel_name(job->gen.kernel),
                        "--candidate", (char *)job->candidate_spec};
        attest_engine_command_line(6, args, replay, cap);
        const size_t n = strlen(replay);
        snprintf(replay + n, cap - n, "%s --case-seed 0x%016" PRIx64, flags, rec->seed);
    }
}

static void print_failure(engine_run *er, const attest_job *job, const attest_case_record *rec)
{
    er->failures_printed++;
    if (er->failures_printed > er->opt->print_failures) return;
    char replay[1024];
    replay_for(er, job, rec, replay, sizeof replay);
    if (er->opt->progress) fputs("\r\033[K", stderr);
    attest_report_failure_line(er->log, rec, replay);
    if (er->failures_printed == er->opt->print_failures)
        fprintf(er->log, "(further failures are counted, not printed; see attest show)\n");
}

static void update_progress(engine_run *er, int final)
{
    if (!er->opt->progress) return;
    double t = attest_monotonic_seconds();
    if (!final && t - er->last_progress < 0.2) return;
    er->last_progress = t;
    attest_report_progress(stderr, er->totals->judged + er->totals->filtered,
                           er->totals->planned, er->totals->failures, t - er->start);
}

attest_status attest_engine_generate(const attest_job *job, uint64_t index, uint64_t seed,
                                     attest_case *c, int *skip, double *gen_seconds)
{
    memset(c, 0, sizeof *c);
    *skip = 0;
    double t0 = attest_monotonic_seconds();
    attest_status st = attest_generate_case(&job->gen, seed, c);
    if (st != ATTEST_OK)
        return attest_fail(st, "cannot generate case %" PRIu64 " (seed 0x%016" PRIx64 "): %s",
                           index, seed, attest_last_error());
    *gen_seconds = attest_monotonic_seconds() - t0;
    char params[ATTEST_PARAM_STRING_MAX];
    if (attest_case_param_string(c, params, sizeof params) == ATTEST_OK &&
        !attest_param_string_matches(params, job->filter)) {
        *skip = 1;
        attest_case_free(c);
    }
    return ATTEST_OK;
}

int attest_engine_time_up(engine_run *er)
{
    if (er->opt->time_limit <= 0) return 0;
    if (!er->totals->timed_out && attest_monotonic_seconds() - er->start >= er->opt->time_limit)
        er->totals->timed_out = 1;
    return er->totals->timed_out;
}

void attest_engine_take_filtered(engine_run *er)
{
    er->totals->filtered++;
    update_progress(er, 0);
}

attest_status attest_engine_take_record(engine_run *er, const attest_job *job,
                                        attest_case_record *rec, const attest_case *c,
                                        const attest_case_outputs *kept)
{
    rec->case_id = er->next_case_id++;
    er->totals->judged++;
    attest_summary_add(&er->totals->summary, rec);
    if (er->results) ATTEST_FORWARD(attest_results_append(er->results, rec, c, kept));
    if (er->junit) {
        char name[ATTEST_PARAM_STRING_MAX + 32], replay[1024] = "";
        snprintf(name, sizeof name, "case %" PRIu64 " %.*s", rec->case_id,
                 (int)sizeof rec->params, rec->params);
        if (rec->verdict != ATTEST_VERDICT_OK) replay_for(er, job, rec, replay, sizeof replay);
        ATTEST_FORWARD(attest_junit_add(er->junit, job->candidate_spec, name, rec,
                                        replay[0] ? replay : NULL));
    }
    if (attest_verdict_is_failure(rec->verdict)) {
        er->totals->failures++;
        print_failure(er, job, rec);
        if (er->opt->max_failures && er->totals->failures >= er->opt->max_failures)
            stop_requested = 1;
    }
    if (er->opt->on_failure && c &&
        (er->opt->on_failure_passing || attest_verdict_is_failure(rec->verdict)))
        ATTEST_FORWARD(er->opt->on_failure(er->opt->on_failure_ctx, job, c, rec, kept));
    update_progress(er, 0);
    return ATTEST_OK;
}

static attest_status run_job(engine_run *er, const attest_job *job)
{
    attest_runner *runner = NULL;
    ATTEST_FORWARD(attest_runner_create(job->candidate, &er->opt->runner, &runner));
    attest_status st = ATTEST_OK;
    const uint64_t n = job->use_case_seed ? 1 : job->cases;
    for (uint64_t i = 0; i < n && !stop_requested && !attest_engine_time_up(er); i++) {
        const uint64_t seed = job->use_case_seed ? job->case_seed : attest_case_seed(job->seed, i);
        attest_case c;
        int skip = 0;
        double gen_seconds = 0;
        st = attest_engine_generate(job, i, seed, &c, &skip, &gen_seconds);
        if (st != ATTEST_OK) break;
        if (skip) {
            attest_engine_take_filtered(er);
            continue;
        }
        attest_case_record rec;
        attest_case_outputs kept;
        memset(&rec, 0, sizeof rec);
        memset(&kept, 0, sizeof kept);
        st = attest_runner_judge(runner, &c, &rec,
                                 er->results || er->opt->on_failure ? &kept : NULL);
        if (st == ATTEST_OK && er->opt->inspect)
            st = er->opt->inspect(er->opt->inspect_ctx, job, &c, &rec);
        if (st == ATTEST_OK) {
            rec.gen_seconds = gen_seconds;
            st = attest_engine_take_record(er, job, &rec, &c, &kept);
        }
        attest_case_outputs_free(&kept);
        attest_case_free(&c);
        if (st != ATTEST_OK) break;
    }
    /* A device candidate's worker named its GPU and CUDA versions: provenance keeps them. */
    attest_results_set_device(er->results, attest_runner_device(runner));
    /* The candidate's fini runs in the destroy (in this process under --no-isolate): a crash
     * there must not take the buffered rows with it. */
    if (er->results && st == ATTEST_OK) st = attest_results_flush(er->results);
    attest_runner_destroy(runner);
    return st;
}

attest_status attest_engine_run(const attest_job *jobs, size_t num_jobs,
                                const attest_engine_options *options, FILE *log,
                                attest_engine_totals *totals)
{
    ATTEST_RETURN_IF(num_jobs == 0, ATTEST_ERR_INVALID_ARGUMENT, "no job to run");
    memset(totals, 0, sizeof *totals);
    attest_summary_init(&totals->summary);
    attest_engine_options opt = *options;
    attest_policy *own_policy = NULL;
    if (opt.runner.policy == NULL) {
        ATTEST_FORWARD(attest_policy_default(&own_policy));
        opt.runner.policy = own_policy;
    }
    if (opt.runner.reference == NULL) opt.runner.reference = attest_ref_simulated;
    for (size_t j = 0; j < num_jobs; j++)
        totals->planned += jobs[j].use_case_seed ? 1 : jobs[j].cases;

    engine_run er = {.opt = &opt, .log = log, .totals = totals, .start = attest_monotonic_seconds()};
    attest_status st = ATTEST_OK;
    if (opt.out_path) {
        attest_results_provenance prov;
        fill_provenance(&prov, jobs, num_jobs, &opt);
        st = attest_results_create(opt.out_path, &prov, NULL, &er.results);
        if (st == ATTEST_OK) {
            active_results = er.results;
            active_path = opt.out_path;
            if (!exit_guard_registered) exit_guard_registered = atexit(exit_guard) == 0;
        }
    }
    if (st == ATTEST_OK && opt.junit_path)
        st = attest_junit_open(opt.junit_path, opt.junit_suite ? opt.junit_suite : "attest",
                               &er.junit);
    attest_stop_guard stop;
    attest_stop_signals_catch(&stop);
    if (opt.jobs > 1 && st == ATTEST_OK) {
        st = attest_engine_run_sharded(&er, jobs, num_jobs);
    } else {
        for (size_t j = 0; j < num_jobs && st == ATTEST_OK && !stop_requested &&
                           !attest_engine_time_up(&er); j++)
            st = run_job(&er, &jobs[j]);
    }
    totals->interrupted = stop_requested != 0;
    totals->stop_signal = attest_stop_signal();
    totals->summary.stop_signal = attest_stop_signal();
    attest_stop_signals_release(&stop);
    if (opt.progress) attest_report_progress_end(stderr);
    totals->seconds = attest_monotonic_seconds() - er.start;
    active_results = NULL;
    if (er.results) {
        char saved_error[512];
        snprintf(saved_error, sizeof saved_error, "%s", attest_last_error());
        attest_status close_st = attest_results_close(
            er.results, st == ATTEST_OK && !totals->interrupted ? ATTEST_RESULTS_COMPLETE
                                                                : ATTEST_RESULTS_INTERRUPTED);
        if (st == ATTEST_OK) st = close_st;
        else attest_fail(st, "%s", saved_error); /* the first error is the one to report */
    }
    if (er.junit) {
        if (st == ATTEST_OK) st = attest_junit_close(er.junit, totals->seconds);
        else attest_junit_discard(er.junit); /* an error: the run's exit status says it */
    }
    attest_policy_free(own_policy);
    return st;
}

int attest_engine_json(const char *path, const char *verb, const attest_engine_totals *t,
                       const char *results_path, int exit_code)
{
    if (path == NULL) return exit_code;
    attest_json_run run;
    memset(&run, 0, sizeof run);
    run.verb = verb;
    run.result = attest_report_result_word(&t->summary); /* the word the summary prints */
    run.exit_code = exit_code;
    run.results_path = results_path;
    run.seconds = t->seconds;
    run.filtered = t->filtered;
    if (attest_report_json(path, &t->summary, &run) != ATTEST_OK)
        return attest_cli_usage_error(verb, "%s", attest_last_error());
    return exit_code;
}
