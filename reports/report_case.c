/* attest reports: severity, element coordinates in the kernel's terms, and the one-case lines
 * (failure line, headline, brief metrics) that the summary and the grouped failures reuse.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

int attest_report_verdict_rank(attest_verdict v)
{
    switch (v) {
    case ATTEST_VERDICT_CRASH: return 0;
    case ATTEST_VERDICT_SANITIZER: return 0;
    case ATTEST_VERDICT_GRAPH_MISMATCH: return 6;
    case ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE: return 1;
    case ATTEST_VERDICT_INPUT_MODIFIED: return 2;
    case ATTEST_VERDICT_TIMEOUT: return 3;
    case ATTEST_VERDICT_NONDETERMINISTIC: return 4;
    case ATTEST_VERDICT_HARNESS_ERROR: return 5;
    case ATTEST_VERDICT_MISMATCH: return 6;
    case ATTEST_VERDICT_UNSUPPORTED: return 7;
    case ATTEST_VERDICT_OK: return 8;
    case ATTEST_VERDICT_COUNT_: break;
    }
    return 5; /* unknown: attest could not say what happened */
}

/* NaN sorts as the largest error: a metric that could not be computed hides nothing. */
static double key(double v) { return isnan(v) ? INFINITY : v; }

typedef struct severity {
    int rank;
    uint64_t nonfinite;
    double max_rel, cos_diff, fail_fraction;
} severity;

static severity severity_of(const attest_case_record *r)
{
    severity s = {attest_report_verdict_rank(r->verdict), 0, 0.0, 0.0, 0.0};
    int n = r->num_outputs < 0 ? 0 : r->num_outputs;
    if (n > ATTEST_RECORD_MAX_OUTPUTS) n = ATTEST_RECORD_MAX_OUTPUTS;
    for (int k = 0; k < n; k++) {
        const attest_tensor_metrics *m = &r->outputs[k];
        s.nonfinite += m->nonfinite_mismatches;
        if (key(m->max_rel) > s.max_rel) s.max_rel = key(m->max_rel);
        if (key(m->cos_diff) > s.cos_diff) s.cos_diff = key(m->cos_diff);
        if (key(m->element_fail_fraction) > s.fail_fraction)
            s.fail_fraction = key(m->element_fail_fraction);
    }
    return s;
}

int attest_report_severity_cmp(const attest_case_record *a, const attest_case_record *b)
{
    severity x = severity_of(a), y = severity_of(b);
    if (x.rank != y.rank) return x.rank < y.rank ? -1 : 1;
    if (x.nonfinite != y.nonfinite) return x.nonfinite > y.nonfinite ? -1 : 1;
    if (x.max_rel != y.max_rel) return x.max_rel > y.max_rel ? -1 : 1;
    if (x.cos_diff != y.cos_diff) return x.cos_diff > y.cos_diff ? -1 : 1;
    if (x.fail_fraction != y.fail_fraction) return x.fail_fraction > y.fail_fraction ? -1 : 1;
    if (a->case_id != b->case_id) return a->case_id < b->case_id ? -1 : 1;
    return 0;
}

void attest_rep_num(double v, char *buf, size_t cap)
{
    if (isnan(v)) snprintf(buf, cap, "nan");
    else if (isinf(v)) snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    else if (v == 0.0) snprintf(buf, cap, "0");
    else snprintf(buf, cap, "%.3e", v);
}

/* The kernel a record's parameter string names ("kernel=indexer,..."), or 0. */
static attest_kernel kernel_of(const attest_case_record *rec)
{
    if (!strncmp(rec->params, "kernel=indexer", 14)) return ATTEST_KERNEL_INDEXER;
    if (!strncmp(rec->params, "kernel=mla-decode", 17)) return ATTEST_KERNEL_MLA_DECODE;
    return (attest_kernel)0;
}

int attest_rep_main_output(const attest_case_record *rec)
{
    int n = rec->num_outputs > ATTEST_RECORD_MAX_OUTPUTS ? ATTEST_RECORD_MAX_OUTPUTS
                                                         : rec->num_outputs;
    for (int k = 0; k < n; k++)
        if (rec->outputs[k].failed_gates) return k;
    return 0;
}

int attest_rep_nonfinite_first(const attest_tensor_metrics *m)
{
    const uint32_t nonfinite = ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE);
    const uint32_t not_of_pairs = nonfinite | ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN);
    return (m->failed_gates & nonfinite) && !(m->failed_gates & ~not_of_pairs) &&
           m->nonfinite_mismatches > 0 && m->first_nonfinite_mismatch.rank > 0;
}

void attest_rep_headline(FILE *f, const attest_case_record *rec)
{
    char gates[96];
    attest_gate_mask_string(rec->failed_gates, gates, sizeof gates);
    fprintf(f, "#%" PRIu64 " %s", rec->case_id, attest_verdict_name(rec->verdict));
    if (gates[0]) fprintf(f, " [%s]", gates);
    if (rec->candidate[0]) fprintf(f, " %.*s", (int)sizeof rec->candidate, rec->candidate);
}

void attest_report_brief(FILE *f, const attest_case_record *rec)
{
    const char *sep = "";
    if (rec->num_outputs > 0 && rec->failed_gates) {
        const attest_tensor_metrics *m = &rec->outputs[attest_rep_main_output(rec)];
        char rel[32], cosd[32], coord[160];
        attest_rep_num(m->max_rel, rel, sizeof rel);
        attest_rep_num(m->cos_diff, cosd, sizeof cosd);
        if (m->finite_pairs == 0 && m->count > 0) /* the finite-pair metrics are 0 unmeasured */
            fprintf(f, "%.*s: no finite pair", (int)sizeof m->output, m->output);
        else
            fprintf(f, "%.*s: max_rel %s, cos_diff %s", (int)sizeof m->output, m->output, rel,
                    cosd);
        if (m->element_failures)
            fprintf(f, ", %" PRIu64 "/%" PRIu64 " elements off", m->element_failures,
                    m->finite_pairs ? m->finite_pairs : m->count);
        if (m->nonfinite_mismatches)
            fprintf(f, ", %" PRIu64 " inf/nan mismatches", m->nonfinite_mismatches);
        if (m->unwritten) fprintf(f, ", %" PRIu64 " unwritten", m->unwritten);
        if (m->topk_checked && (m->failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK)))
            fprintf(f, ", top-k recall %.4f (row %d)", m->topk_recall, (int)m->topk_worst_row);
        if (m->worst.rank > 0 && !attest_rep_nonfinite_first(m)) {
            attest_coord_string(kernel_of(rec), m->output, &m->worst, coord, sizeof coord);
            fprintf(f, ", worst at %s", coord);
        } else if (m->nonfinite_mismatches && m->first_nonfinite_mismatch.rank > 0) {
            /* No finite pair to rank, or none that fails: the first inf/nan mismatch is where
             * to look. */
            attest_coord_string(kernel_of(rec), m->output, &m->first_nonfinite_mismatch,
                                       coord, sizeof coord);
            fprintf(f, ", first at %s", coord);
        }
        /* the other failing outputs by name and gates (the phrase above describes one) */
        const int n = rec->num_outputs > ATTEST_RECORD_MAX_OUTPUTS ? ATTEST_RECORD_MAX_OUTPUTS
                                                                   : rec->num_outputs;
        for (int k = 0; k < n; k++) {
            const attest_tensor_metrics *o = &rec->outputs[k];
            if (o == m || !o->failed_gates) continue;
            char og[96];
            attest_gate_mask_string(o->failed_gates, og, sizeof og);
            fprintf(f, "; %.*s fails too (%s)", (int)sizeof o->output, o->output, og);
        }
        sep = "; ";
    }
    /* A mismatch's message restates the metrics above; other verdicts' messages are the news. */
    int restates = rec->verdict == ATTEST_VERDICT_MISMATCH && sep[0];
    if (rec->message[0] && !restates)
        fprintf(f, "%s%.*s", sep, (int)sizeof rec->message, rec->message);
}

void attest_report_brief_string(const attest_case_record *rec, char *buf, size_t cap)
{
    if (cap == 0) return;
    buf[0] = '\0';
    FILE *m = fmemopen(buf, cap, "w");
    if (m == NULL) return;
    attest_report_brief(m, rec);
    fclose(m);
}

void attest_report_failure_line(FILE *f, const attest_case_record *rec, const char *replay)
{
    attest_rep_headline(f, rec);
    fputs("  ", f);
    attest_report_brief(f, rec);
    fprintf(f, "\n    seed 0x%016" PRIx64 "  %.*s\n", rec->seed, (int)sizeof rec->params,
            rec->params);
    if (replay && replay[0]) fprintf(f, "    replay: %s\n", replay);
}
