/* attest reports: the end-of-run summary, the provenance header of `attest show`, and the
 * terminal progress line.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "report_internal.h"

void attest_summary_init(attest_summary *s) { memset(s, 0, sizeof *s); }

/* Keeps the ATTEST_SUMMARY_WORST worst failing records, worst first (insertion into a short
 * sorted array). */
static void keep_worst(attest_summary *s, const attest_case_record *rec)
{
    size_t n = s->num_worst;
    size_t at = n;
    while (at > 0 && attest_report_severity_cmp(rec, &s->worst[at - 1]) < 0) at--;
    if (at >= ATTEST_SUMMARY_WORST) return;
    size_t last = n < ATTEST_SUMMARY_WORST ? n : ATTEST_SUMMARY_WORST - 1;
    for (size_t i = last; i > at; i--) s->worst[i] = s->worst[i - 1];
    s->worst[at] = *rec;
    if (n < ATTEST_SUMMARY_WORST) s->num_worst++;
}

void attest_summary_add(attest_summary *s, const attest_case_record *rec)
{
    s->cases++;
    if ((unsigned)rec->verdict < ATTEST_VERDICT_COUNT_)
        s->verdicts[rec->verdict]++;
    else
        s->unknown_verdicts++;
    int failing = attest_verdict_is_failure(rec->verdict);
    if (failing) {
        s->failures++;
        for (int g = 0; g < ATTEST_GATE_COUNT_; g++)
            if (rec->failed_gates & ATTEST_GATE_BIT(g)) s->gate_cases[g]++;
        keep_worst(s, rec);
    }
    for (int b = 0; b < ATTEST_INTEGRITY_COUNT_; b++)
        if (rec->integrity_flags & (1u << b)) s->integrity_cases[b]++;
    if (rec->vacuous) s->vacuous++;
    s->gen_seconds += rec->gen_seconds;
    s->ref_seconds += rec->ref_seconds;
    s->run_seconds += rec->run_seconds;
    s->compare_seconds += rec->compare_seconds;
}

attest_status attest_summary_from_results(attest_results_reader *r, attest_summary *s)
{
    attest_summary_init(s);
    attest_results_rewind(r);
    for (;;) {
        attest_case_record rec;
        int done = 0;
        ATTEST_FORWARD(attest_results_next(r, &rec, NULL, &done));
        if (done) break;
        attest_summary_add(s, &rec);
    }
    attest_results_rewind(r);
    return ATTEST_OK;
}

const char *attest_report_result_word(const attest_summary *s)
{
    if (s->stop_signal) return "INTERRUPTED";
    if (s->cases == 0) return "EMPTY";
    if (s->failures || s->verdicts[ATTEST_VERDICT_UNSUPPORTED] == s->cases) return "FAIL";
    return "PASS";
}

void attest_report_summary(FILE *f, const attest_summary *s, const char *results_path,
                           double wall_seconds)
{
    fprintf(f, "attest: %" PRIu64 " case%s", s->cases, s->cases == 1 ? "" : "s");
    if (wall_seconds > 0)
        fprintf(f, " in %.2f s (%.0f cases/s)", wall_seconds, (double)s->cases / wall_seconds);
    fputc('\n', f);
    if (s->cases == 0) {
        if (s->stop_signal)
            fprintf(f, "result: INTERRUPTED (%s before any case was judged)\n",
                     strsignal(s->stop_signal));
        else
            fprintf(f, "result: EMPTY (no case was judged)\n");
        return;
    }
    fputs("  verdicts:", f);
    const char *sep = " ";
    for (int rank = 0; rank <= 8; rank++)
        for (int v = 0; v < ATTEST_VERDICT_COUNT_; v++)
            if (attest_report_verdict_rank((attest_verdict)v) == rank && s->verdicts[v]) {
                fprintf(f, "%s%s %" PRIu64, sep, attest_verdict_name((attest_verdict)v),
                        s->verdicts[v]);
                sep = ", ";
            }
    if (s->unknown_verdicts) fprintf(f, "%sUNKNOWN %" PRIu64, sep, s->unknown_verdicts);
    fputc('\n', f);
    fprintf(f, "  failures: %" PRIu64 " (%.2f%%)", s->failures,
            100.0 * (double)s->failures / (double)s->cases);
    if (s->vacuous)
        fprintf(f, "; vacuous: %" PRIu64 " (an output could not show a difference)", s->vacuous);
    fputc('\n', f);
    int any_gate = 0;
    for (int g = 0; g < ATTEST_GATE_COUNT_; g++) any_gate |= s->gate_cases[g] != 0;
    if (any_gate) {
        fputs("  failing gates:", f);
        sep = " ";
        for (int g = 0; g < ATTEST_GATE_COUNT_; g++)
            if (s->gate_cases[g]) {
                fprintf(f, "%s%s %" PRIu64, sep, attest_gate_name((attest_gate)g), s->gate_cases[g]);
                sep = ", ";
            }
        fputc('\n', f);
    }
    int any_integrity = 0;
    for (int b = 0; b < ATTEST_INTEGRITY_COUNT_; b++) any_integrity |= s->integrity_cases[b] != 0;
    if (any_integrity) {
        fputs("  integrity findings:", f);
        sep = " ";
        for (int b = 0; b < ATTEST_INTEGRITY_COUNT_; b++)
            if (s->integrity_cases[b]) {
                fprintf(f, "%s%s %" PRIu64, sep, attest_integrity_name((unsigned)b), s->integrity_cases[b]);
                sep = ", ";
            }
        fputc('\n', f);
    }
    fprintf(f, "  time in: generate %.2f s, reference %.2f s, candidate %.2f s, compare %.2f s\n",
            s->gen_seconds, s->ref_seconds, s->run_seconds, s->compare_seconds);
    if (s->num_worst) {
        fprintf(f, "  worst case%s:\n", s->num_worst == 1 ? "" : "s");
        for (size_t i = 0; i < s->num_worst; i++) {
            const attest_case_record *rec = &s->worst[i];
            fputs("    ", f);
            attest_rep_headline(f, rec);
            fputs("  ", f);
            attest_report_brief(f, rec);
            fputc('\n', f);
            if (results_path) {
                char replay[1200];
                attest_results_replay_command(results_path, rec->case_id, rec->candidate, replay,
                                              sizeof replay);
                fprintf(f, "      replay: %s\n", replay);
            }
        }
    }
    const char *word = attest_report_result_word(s);
    if (!strcmp(word, "INTERRUPTED"))
        fprintf(f, "result: INTERRUPTED (%s after %" PRIu64 " cases, %" PRIu64 " failed)\n",
                strsignal(s->stop_signal), s->cases, s->failures);
    else if (s->failures)
        fprintf(f, "result: FAIL (%" PRIu64 " of %" PRIu64 " cases failed)\n", s->failures,
                s->cases);
    else if (!strcmp(word, "FAIL"))
        fprintf(f, "result: FAIL (nothing was checked: the candidate declined every case, %" PRIu64
                   " UNSUPPORTED)\n", s->cases);
    else
        fprintf(f, "result: PASS (%" PRIu64 " cases)\n", s->cases);
}

/* Parses "YYYY-MM-DDTHH:MM:SSZ" to seconds since the epoch (UTC), or -1. */
static double parse_utc(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return -1.0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    return t == (time_t)-1 ? -1.0 : (double)t;
}

double attest_report_campaign_seconds(const attest_results_provenance *p)
{
    if (p->duration_s > 0) return p->duration_s;
    double a = parse_utc(p->start_time), b = parse_utc(p->end_time);
    if (a < 0 || b < 0 || b < a) return -1.0;
    return b - a;
}

void attest_report_provenance(FILE *f, const char *results_path,
                              const attest_results_provenance *p, uint64_t rows)
{
    fprintf(f, "results: %s (schema %d, %s)\n", results_path, (int)p->schema_version,
            p->state[0] ? p->state : "unknown state");
    fprintf(f, "  campaign: kernel %s, candidate %s, seed %" PRIu64 ", %" PRIu64 " case%s",
            p->kernel[0] ? p->kernel : "(mixed)", p->candidate[0] ? p->candidate : "(none)",
            p->seed, rows, rows == 1 ? "" : "s");
    if (p->cases_planned) fprintf(f, " of %" PRIu64 " planned", p->cases_planned);
    fputc('\n', f);
    fprintf(f, "  policy: %s (hash %s, from %s)\n", p->policy_name[0] ? p->policy_name : "?",
            p->policy_hash[0] ? p->policy_hash : "?", p->policy_origin[0] ? p->policy_origin : "?");
    fprintf(f, "  attest %s (git %s, %s) on %s\n", p->attest_version, p->git_commit, p->c_compiler,
            p->host[0] ? p->host : "unknown host");
    if (p->cuda_version[0] || p->device[0])
        fprintf(f, "  CUDA %s, device %s\n", p->cuda_version[0] ? p->cuda_version : "?",
                p->device[0] ? p->device : "?");
    fprintf(f, "  started %s", p->start_time[0] ? p->start_time : "?");
    if (p->end_time[0]) fprintf(f, ", ended %s", p->end_time);
    fputc('\n', f);
    if (p->command_line[0]) fprintf(f, "  command: %s\n", p->command_line);
    if (!strcmp(p->state, "running"))
        fprintf(f, "  note: the campaign did not finish (killed, or still running): the file "
                   "holds every case up to its last flush\n");
    else if (!strcmp(p->state, "interrupted"))
        fprintf(f, "  note: the campaign stopped early (a signal, an error, --max-failures or a "
                   "fuzz finding); the file holds every case it judged\n");
}

/* "4.7 s", "3m12s", "2h05m". */
static void format_duration(double s, char *buf, size_t cap)
{
    if (!(s >= 0) || s > 1e9) {
        snprintf(buf, cap, "?");
    } else if (s < 60) {
        snprintf(buf, cap, "%.1f s", s);
    } else if (s < 3600) {
        long t = (long)(s + 0.5);
        snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    } else {
        long t = (long)(s / 60 + 0.5);
        snprintf(buf, cap, "%ldh%02ldm", t / 60, t % 60);
    }
}

void attest_report_progress(FILE *f, uint64_t done, uint64_t total, uint64_t failures,
                            double elapsed_s)
{
    fputc('\r', f);
    if (total)
        fprintf(f, "  %" PRIu64 "/%" PRIu64 "  %5.1f%%", done, total,
                100.0 * (double)done / (double)total);
    else
        fprintf(f, "  %" PRIu64 " cases", done);
    double rate = elapsed_s > 0 ? (double)done / elapsed_s : 0.0;
    if (rate > 0) fprintf(f, "  %.0f cases/s", rate);
    fprintf(f, "  failures %" PRIu64, failures);
    if (total && rate > 0 && done <= total) {
        char eta[32];
        format_duration((double)(total - done) / rate, eta, sizeof eta);
        fprintf(f, "  ETA %s", eta);
    }
    fputs("\033[K", f);
    fflush(f);
}

void attest_report_progress_end(FILE *f)
{
    fputc('\n', f);
    fflush(f);
}
