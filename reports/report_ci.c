/* attest reports: JUnit XML and JSON summaries for CI (ci_report.h). */
#include "attest/ci_report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/build_info.h"
#include "report_internal.h"

struct attest_junit {
    char *path, *suite;
    FILE *body; /* the testcases, until close writes the totals before them */
    uint64_t tests, failures, errors, skipped;
};

/* XML text and attribute escaping; bytes outside printable ASCII (a corrupt fixture can name a
 * group with anything) become '?', since XML 1.0 forbids most control characters. */
static void xml_put(FILE *f, const char *s, int text)
{
    for (; s && *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (text && ch == '\n') {
            fputc('\n', f);
            continue;
        }
        switch (ch) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        case '\n': fputs("&#10;", f); break;
        default: fputc(ch >= 0x20 && ch < 0x7f ? ch : '?', f);
        }
    }
}

static void xml_escaped(FILE *f, const char *s) { xml_put(f, s, 0); }

/* The body is buffered in a temporary file (tmpfile: $TMPDIR or /tmp) until the counts are
 * known: say where a write failed, and why. */
static attest_status buffer_failed(const attest_junit *j)
{
    return attest_fail(ATTEST_ERR_IO, "%s: cannot buffer the report in a temporary file (disk "
                                      "full?): %s",
                       j->path, strerror(errno));
}

attest_status attest_junit_open(const char *path, const char *suite, attest_junit **out)
{
    *out = NULL;
    attest_junit *j = calloc(1, sizeof *j);
    ATTEST_RETURN_IF(j == NULL, ATTEST_ERR_OUT_OF_MEMORY, "junit: out of memory");
    j->path = strdup(path);
    j->suite = strdup(suite);
    j->body = tmpfile();
    if (!j->path || !j->suite || !j->body) {
        const int e = errno;
        attest_junit_discard(j);
        return attest_fail(ATTEST_ERR_IO, "%s: cannot buffer the JUnit report: %s", path,
                           strerror(e));
    }
    *out = j;
    return ATTEST_OK;
}

static void testcase_open(attest_junit *j, const char *classname, const char *name, double secs)
{
    fputs("    <testcase classname=\"", j->body);
    xml_escaped(j->body, classname);
    fputs("\" name=\"", j->body);
    xml_escaped(j->body, name);
    fprintf(j->body, "\" time=\"%.6f\"", isfinite(secs) && secs >= 0 ? secs : 0.0);
    j->tests++;
}

attest_status attest_junit_add(attest_junit *j, const char *classname, const char *name,
                               const attest_case_record *rec, const char *replay)
{
    const double secs = rec->gen_seconds + rec->ref_seconds + rec->run_seconds +
                        rec->compare_seconds;
    testcase_open(j, classname, name, secs);
    const char *verdict = attest_verdict_name(rec->verdict);
    if (rec->verdict == ATTEST_VERDICT_OK) {
        fputs("/>\n", j->body);
    } else if (rec->verdict == ATTEST_VERDICT_UNSUPPORTED) {
        j->skipped++;
        fputs(">\n      <skipped message=\"", j->body);
        xml_escaped(j->body, rec->message[0] ? rec->message : "the candidate declined the case");
        fputs("\"/>\n    </testcase>\n", j->body);
    } else {
        const int error = !attest_verdict_is_failure(rec->verdict) ||
                          rec->verdict == ATTEST_VERDICT_HARNESS_ERROR;
        if (error) j->errors++;
        else j->failures++;
        char gates[96], head[512];
        attest_gate_mask_string(rec->failed_gates, gates, sizeof gates);
        snprintf(head, sizeof head, "%s%s%s%s%s%.*s", verdict ? verdict : "UNKNOWN",
                 gates[0] ? " [" : "", gates, gates[0] ? "]" : "", rec->message[0] ? ": " : "",
                 (int)sizeof rec->message, rec->message);
        fprintf(j->body, ">\n      <%s type=\"", error ? "error" : "failure");
        xml_escaped(j->body, verdict ? verdict : "UNKNOWN");
        fputs("\" message=\"", j->body);
        xml_escaped(j->body, head);
        fputs("\">", j->body);
        /* The text: the one-line failure report, then how to replay it. */
        char *line = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&line, &len);
        if (m) {
            attest_report_failure_line(m, rec, replay);
            fclose(m);
            xml_put(j->body, line, 1);
            free(line);
        }
        fprintf(j->body, "</%s>\n    </testcase>\n", error ? "error" : "failure");
    }
    return ferror(j->body) ? buffer_failed(j) : ATTEST_OK;
}

attest_status attest_junit_add_error(attest_junit *j, const char *classname, const char *name,
                                     const char *message)
{
    testcase_open(j, classname, name, 0.0);
    j->errors++;
    fputs(">\n      <error type=\"UNREADABLE\" message=\"", j->body);
    xml_escaped(j->body, message);
    fputs("\"/>\n    </testcase>\n", j->body);
    return ferror(j->body) ? buffer_failed(j) : ATTEST_OK;
}

void attest_junit_discard(attest_junit *j)
{
    if (j == NULL) return;
    if (j->body) fclose(j->body);
    free(j->path);
    free(j->suite);
    free(j);
}

/* Opens path.tmp for writing; the caller renames it over path when whole. */
static FILE *open_tmp(const char *path, char **tmp)
{
    const size_t n = strlen(path) + 5;
    *tmp = malloc(n);
    if (*tmp == NULL) return NULL;
    snprintf(*tmp, n, "%s.tmp", path);
    return fopen(*tmp, "w");
}

static attest_status finish_tmp(FILE *f, char *tmp, const char *path)
{
    int bad = f == NULL || ferror(f);
    if (f && fclose(f) != 0) bad = 1;
    const int e = errno;
    attest_status st = ATTEST_OK;
    if (bad) {
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot write: %s", path, strerror(e));
        if (tmp) (void)remove(tmp);
    } else if (rename(tmp, path) != 0) {
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot rename into place: %s", path,
                         strerror(errno));
        (void)remove(tmp);
    }
    free(tmp);
    return st;
}

attest_status attest_junit_close(attest_junit *j, double seconds)
{
    char *tmp = NULL;
    FILE *f = open_tmp(j->path, &tmp);
    if (f) {
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"", f);
        xml_escaped(f, j->suite);
        fprintf(f,
                "\" tests=\"%" PRIu64 "\" failures=\"%" PRIu64 "\" errors=\"%" PRIu64
                "\" skipped=\"%" PRIu64 "\" time=\"%.3f\">\n",
                j->tests, j->failures, j->errors, j->skipped, isfinite(seconds) ? seconds : 0.0);
        rewind(j->body);
        char buf[8192];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, j->body)) > 0) fwrite(buf, 1, n, f);
        fputs("  </testsuite>\n</testsuites>\n", f);
    }
    attest_status st = finish_tmp(f, tmp, j->path);
    attest_junit_discard(j);
    return st;
}

/* --- JSON ---------------------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f) fprintf(f, "\\u%04x", ch < 0x20 ? ch : '?');
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("null", f);
}

attest_status attest_report_json(const char *path, const attest_summary *s,
                                 const attest_json_run *run)
{
    char *tmp = NULL;
    FILE *f = open_tmp(path, &tmp);
    if (f) {
        fputs("{\n  \"attest\": ", f);
        json_string(f, ATTEST_VERSION);
        fputs(",\n  \"verb\": ", f);
        json_string(f, run->verb);
        fputs(",\n  \"result\": ", f);
        json_string(f, run->result);
        fprintf(f, ",\n  \"exit_code\": %d,\n  \"cases\": %" PRIu64 ",\n  \"failures\": %" PRIu64
                   ",\n  \"vacuous\": %" PRIu64 ",\n  \"unreadable\": %" PRIu64
                   ",\n  \"filtered\": %" PRIu64 ",\n  \"verdicts\": {",
                run->exit_code, s->cases, s->failures, s->vacuous, run->unreadable,
                run->filtered);
        for (int v = 0, n = 0; v < ATTEST_VERDICT_COUNT_; v++) {
            fprintf(f, "%s", n++ ? ", " : "");
            json_string(f, attest_verdict_name((attest_verdict)v));
            fprintf(f, ": %" PRIu64, s->verdicts[v]);
        }
        fputs("},\n  \"failing_gates\": {", f);
        for (int g = 0, n = 0; g < ATTEST_GATE_COUNT_; g++) {
            fprintf(f, "%s", n++ ? ", " : "");
            json_string(f, attest_gate_name((attest_gate)g));
            fprintf(f, ": %" PRIu64, s->gate_cases[g]);
        }
        fputs("},\n  \"integrity\": {", f);
        for (unsigned b = 0; b < ATTEST_INTEGRITY_COUNT_; b++)
            fprintf(f, "%s\"%s\": %" PRIu64, b ? ", " : "", attest_integrity_name(b),
                    s->integrity_cases[b]);
        fputs("},\n  \"seconds\": ", f);
        json_number(f, run->seconds);
        fputs(",\n  \"time\": {\"generate\": ", f);
        json_number(f, s->gen_seconds);
        fputs(", \"reference\": ", f);
        json_number(f, s->ref_seconds);
        fputs(", \"candidate\": ", f);
        json_number(f, s->run_seconds);
        fputs(", \"compare\": ", f);
        json_number(f, s->compare_seconds);
        fputs("},\n  \"results_file\": ", f);
        if (run->results_path) json_string(f, run->results_path);
        else fputs("null", f);
        fputs(",\n  \"worst\": [", f);
        for (size_t i = 0; i < s->num_worst; i++) {
            const attest_case_record *r = &s->worst[i];
            const attest_tensor_metrics *m = &r->outputs[attest_rep_main_output(r)];
            char gates[96], seed[32], replay[1024];
            attest_gate_mask_string(r->failed_gates, gates, sizeof gates);
            snprintf(seed, sizeof seed, "0x%016" PRIx64, r->seed);
            fprintf(f, "%s\n    {\"case_id\": %" PRIu64 ", \"verdict\": ", i ? "," : "",
                    r->case_id);
            json_string(f, attest_verdict_name(r->verdict));
            fputs(", \"gates\": ", f);
            json_string(f, gates);
            fputs(", \"candidate\": ", f);
            json_string(f, r->candidate);
            fputs(", \"params\": ", f);
            json_string(f, r->params);
            fputs(", \"seed\": ", f);
            json_string(f, seed);
            fputs(", \"max_rel\": ", f);
            json_number(f, r->num_outputs > 0 ? m->max_rel : NAN);
            fputs(", \"cos_diff\": ", f);
            json_number(f, r->num_outputs > 0 ? m->cos_diff : NAN);
            fputs(", \"message\": ", f);
            json_string(f, r->message);
            /* the failure line's phrase, with the element named (the message has raw indices) */
            char phrase[1024];
            attest_report_brief_string(r, phrase, sizeof phrase);
            fputs(", \"summary\": ", f);
            json_string(f, phrase);
            fputs(", \"replay\": ", f);
            if (run->results_path) {
                attest_results_replay_command(run->results_path, r->case_id, r->candidate, replay,
                                              sizeof replay);
                json_string(f, replay);
            } else {
                fputs("null", f);
            }
            fputs("}", f);
        }
        fputs(s->num_worst ? "\n  ]\n}\n" : "]\n}\n", f);
    }
    return finish_tmp(f, tmp, path);
}
