/* attest reports: a results file as one self-contained HTML page (html_report.h). */
#include "attest/html_report.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/casefile.h"
#include "attest/policy.h"
#include "attest/report.h"
#include "report_internal.h"

#define HIST_BINS 24

/* Text and attribute escaping; bytes outside printable ASCII become '?'. */
static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '&') fputs("&amp;", f);
        else if (ch == '<') fputs("&lt;", f);
        else if (ch == '>') fputs("&gt;", f);
        else if (ch == '"') fputs("&quot;", f);
        else if (ch == '\n' || (ch >= 0x20 && ch < 0x7f)) fputc(ch, f);
        else fputc('?', f);
    }
}

static void num(FILE *f, double v)
{
    char b[32];
    attest_rep_num(v, b, sizeof b);
    fputs(b, f);
}

static const char *const style =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}"
    "pre,code{font:12px/1.35 ui-monospace,monospace}pre{background:#f7f7f7;padding:8px;"
    "overflow-x:auto}.fail{color:#b00020;font-weight:bold}.pass{color:#0a7a2f;font-weight:bold}"
    ".v-OK{background:#e8f5e9}.v-UNSUPPORTED{background:#f5f5f5}.v-fail{background:#ffebee}"
    "svg text{font:11px sans-serif}";

/* A horizontal bar chart of labelled counts. */
static void bars(FILE *f, const char *const *labels, const uint64_t *counts, size_t n,
                 const char *attr)
{
    uint64_t max = 1;
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        if (counts[i] > max) max = counts[i];
        shown += counts[i] > 0;
    }
    const int row = 20, w = 560;
    fprintf(f, "<svg width=\"%d\" height=\"%d\" role=\"img\">\n", w + 220,
            (int)(shown ? shown : 1) * row + 4);
    size_t y = 0;
    for (size_t i = 0; i < n; i++) {
        if (!counts[i]) continue;
        const double bw = (double)w * (double)counts[i] / (double)max;
        const int failing = strcmp(labels[i], "OK") && strcmp(labels[i], "UNSUPPORTED");
        fprintf(f,
                "<text x=\"0\" y=\"%zu\">%s</text><rect x=\"150\" y=\"%zu\" width=\"%.1f\" "
                "height=\"14\" fill=\"%s\"/><text x=\"%.1f\" y=\"%zu\" %s=\"%s\">%" PRIu64
                "</text>\n",
                y * row + 14, labels[i], y * row + 3, bw > 1 ? bw : 1,
                !strcmp(attr, "data-gate") || failing ? "#d9534f" : "#5cb85c", 155 + bw,
                y * row + 14, attr, labels[i], counts[i]);
        y++;
    }
    if (!shown) fputs("<text x=\"0\" y=\"14\">none</text>\n", f);
    fputs("</svg>\n", f);
}

/* One metric over all cases, log10-binned from 10^lo to 10^hi (zeros in the first bin, values
 * past the range in the last, non-finite counted apart), with the threshold as a red line. */
typedef struct histogram {
    char title[96];
    double lo, hi, threshold;
    uint64_t bins[HIST_BINS], nonfinite, over;
} histogram;

static void hist_add(histogram *h, double v)
{
    if (!isfinite(v)) {
        h->nonfinite++;
        return;
    }
    if (isfinite(h->threshold) && v > h->threshold) h->over++;
    double x = v > 0 ? log10(v) : h->lo;
    int b = (int)floor((x - h->lo) / (h->hi - h->lo) * HIST_BINS);
    if (b < 0) b = 0;
    if (b >= HIST_BINS) b = HIST_BINS - 1;
    h->bins[b]++;
}

static void hist_svg(FILE *f, const histogram *h)
{
    const int W = 480, H = 120, left = 40;
    uint64_t max = 1;
    for (int i = 0; i < HIST_BINS; i++)
        if (h->bins[i] > max) max = h->bins[i];
    fprintf(f, "<figure style=\"display:inline-block;margin:8px\"><figcaption>");
    esc(f, h->title);
    fprintf(f, ": %" PRIu64 " above the threshold", h->over);
    if (h->nonfinite) fprintf(f, ", %" PRIu64 " not finite", h->nonfinite);
    fprintf(f, "</figcaption>\n<svg width=\"%d\" height=\"%d\">\n", W + left + 10, H + 34);
    const double bw = (double)W / HIST_BINS;
    for (int i = 0; i < HIST_BINS; i++) {
        if (!h->bins[i]) continue;
        const double bh = (double)(H - 4) * sqrt((double)h->bins[i] / (double)max);
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4a7fb5\">"
                "<title>%" PRIu64 " cases</title></rect>\n",
                left + i * bw, H - bh, bw - 1, bh, h->bins[i]);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", left, H,
            left + W, H);
    for (int e = (int)h->lo; e <= (int)h->hi; e += 2)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">1e%d</text>\n",
                left + (e - h->lo) / (h->hi - h->lo) * W, H + 14, e);
    if (isfinite(h->threshold) && h->threshold > 0) {
        double x = (log10(h->threshold) - h->lo) / (h->hi - h->lo) * W;
        if (x < 0) x = 0;
        if (x > W) x = W;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d00\" "
                "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%d\" fill=\"#d00\">threshold ",
                left + x, left + x, H, left + x + 3, H + 28);
        num(f, h->threshold);
        fputs("</text>\n", f);
    }
    fprintf(f, "<text x=\"0\" y=\"10\">cases</text></svg></figure>\n");
}

/* Color of a ratio error/tolerance: white (0) through yellow (0.1..1) to red (>1); black for a
 * non-finite mismatch. */
static void ratio_color(double r, char *buf, size_t cap)
{
    if (isinf(r) || isnan(r)) {
        snprintf(buf, cap, "#000");
        return;
    }
    if (r > 1) {
        const double t = fmin(1.0, log10(r) / 3.0); /* 1 .. 1000 */
        snprintf(buf, cap, "rgb(%d,%d,%d)", 230 - (int)(90 * t), (int)(60 * (1 - t)), 30);
        return;
    }
    const double t = r <= 1e-3 ? 0.0 : (log10(r) + 3.0) / 3.0; /* 1e-3 .. 1 */
    snprintf(buf, cap, "rgb(255,%d,%d)", 255 - (int)(90 * t), 255 - (int)(230 * t));
}

/* Heat map of |c - r| / (atol + rtol |r|) of one output of the worst case: (head x dim) of the
 * failing element's request and query for out_bf16 (attest_rep_nonfinite_first), (row x
 * position) for logits, (request-query x head) for lse; columns binned by their maximum. */
static void heat_map(FILE *f, const attest_stored_tensor *ref, const attest_stored_tensor *cand,
                     const attest_tensor_metrics *m, const attest_tolerance *tol)
{
    const size_t n = (size_t)(ref->nbytes / sizeof(double));
    double *r = malloc(n * sizeof *r), *c = malloc(n * sizeof *c);
    if (!r || !c || attest_stored_tensor_to_f64(ref, r) != ATTEST_OK ||
        attest_stored_tensor_to_f64(cand, c) != ATTEST_OK) {
        attest_clear_error();
        free(r);
        free(c);
        return;
    }
    /* The 2-D view: rows x cols starting at `base`. */
    size_t rows = 1, cols = n, base = 0;
    const char *row_name = "row", *col_name = "column";
    char of_row[64] = "";
    if (ref->rank == 4) { /* out_bf16 [b, s_q, h, d_v] */
        rows = (size_t)ref->shape[2];
        cols = (size_t)ref->shape[3];
        /* the failing element's row: the first inf/nan mismatch when only that gate fails */
        const attest_coord *at =
            attest_rep_nonfinite_first(m) ? &m->first_nonfinite_mismatch : &m->worst;
        const int64_t b = at->rank == 4 ? at->index[0] : 0;
        const int64_t q = at->rank == 4 ? at->index[1] : 0;
        base = ((size_t)b * (size_t)ref->shape[1] + (size_t)q) * rows * cols;
        row_name = "head";
        col_name = "dim";
        snprintf(of_row, sizeof of_row, " of request %lld, query %lld", (long long)b,
                 (long long)q);
    } else if (ref->rank == 3) { /* lse [b, s_q, h] */
        rows = (size_t)(ref->shape[0] * ref->shape[1]);
        cols = (size_t)ref->shape[2];
        row_name = "request*s_q+query";
        col_name = "head";
    } else if (ref->rank == 2) { /* logits [rows, positions] */
        rows = (size_t)ref->shape[0];
        cols = (size_t)ref->shape[1];
        col_name = "position";
    }
    if (rows > 64) rows = 64;
    const size_t bins = cols > 128 ? 128 : cols, per = (cols + bins - 1) / (bins ? bins : 1);
    /* The policy's atol and rtol; under computed per-element bounds (which the file does not
     * keep) the policy's are 0, and the map divides by the worst element's own tolerance. */
    double atol = tol ? tol->atol : m->atol_effective;
    double rtol = tol ? tol->rtol : 0.0;
    const char *denominator = "atol + rtol |r|";
    if (!(atol > 0 || rtol > 0)) {
        atol = m->worst_tol > 0 ? m->worst_tol : m->atol_effective;
        rtol = 0.0;
        denominator = "the worst element's computed tolerance";
    }
    const int cw = bins > 64 ? 5 : 9, ch = rows > 32 ? 6 : 12;
    fprintf(f,
            "<p>%s%s: error / tolerance, |c - r| / (%s), rows = %s, columns = %s "
            "(%zu per cell, maximum shown); white below 1e-3, yellow to 1, red above 1; black: "
            "non-finite mismatch.</p>\n",
            m->output, of_row, denominator, row_name, col_name, per);
    fprintf(f, "<svg width=\"%zu\" height=\"%zu\" role=\"img\">\n", bins * cw + 60,
            rows * ch + 30);
    for (size_t i = 0; i < rows; i++) {
        for (size_t b = 0; b < bins; b++) {
            double worst = 0.0;
            for (size_t j = b * per; j < (b + 1) * per && j < cols; j++) {
                const size_t at = base + i * cols + j;
                if (at >= n) break;
                const double rv = r[at], cv = c[at];
                double ratio;
                if (!isfinite(rv) || !isfinite(cv))
                    ratio = (isnan(rv) && isnan(cv)) || rv == cv ? 0.0 : INFINITY;
                else
                    ratio = fabs(cv - rv) / (atol + rtol * fabs(rv) + 1e-300);
                if (!(ratio <= worst)) worst = ratio;
            }
            char color[48];
            ratio_color(worst, color, sizeof color);
            fprintf(f, "<rect x=\"%zu\" y=\"%zu\" width=\"%d\" height=\"%d\" fill=\"%s\">"
                       "<title>%s %zu, %s %zu..%zu: ",
                    40 + b * cw, i * ch, cw, ch, color, row_name, i, col_name, b * per,
                    (b + 1) * per - 1);
            num(f, worst);
            fputs("</title></rect>", f);
        }
        fputc('\n', f);
    }
    fprintf(f, "<text x=\"0\" y=\"%zu\">%s 0..%zu</text></svg>\n", rows * ch + 20, row_name,
            rows - 1);
    free(r);
    free(c);
}

/* The worst case: its heat maps and its detailed report with the cache localization. */
static void worst_case(FILE *f, attest_results_reader *r, const attest_case_record *rec,
                       const attest_policy *policy)
{
    char path[4096], group[256];
    if (attest_results_repro_location(r, rec->case_id, path, sizeof path, group, sizeof group) !=
        ATTEST_OK) {
        attest_clear_error();
        fprintf(f, "<p>No repro was kept for case %" PRIu64 ": no heat map (replay it to see the "
                   "outputs).</p>\n",
                rec->case_id);
        return;
    }
    attest_case c;
    memset(&c, 0, sizeof c);
    if (attest_results_load_repro(r, rec->case_id, &c) != ATTEST_OK) {
        fputs("<p>The repro could not be read: ", f);
        esc(f, attest_last_error());
        fputs("</p>\n", f);
        attest_clear_error();
        return;
    }
    attest_stored_tensor refs[ATTEST_RECORD_MAX_OUTPUTS], cands[ATTEST_RECORD_MAX_OUTPUTS];
    memset(refs, 0, sizeof refs);
    memset(cands, 0, sizeof cands);
    attest_case_outputs kept;
    memset(&kept, 0, sizeof kept);
    attest_tolerance tol[ATTEST_RECORD_MAX_OUTPUTS];
    int have_tol = 1;
    const int n = rec->num_outputs < ATTEST_RECORD_MAX_OUTPUTS ? rec->num_outputs
                                                               : ATTEST_RECORD_MAX_OUTPUTS;
    for (int k = 0; k < n; k++) {
        const attest_tensor_metrics *m = &rec->outputs[k];
        char name[128];
        if (attest_policy_lookup(policy, c.kernel, m->output, &tol[k]) != ATTEST_OK) have_tol = 0;
        snprintf(name, sizeof name, "candidate/%s", m->output);
        const int have_c = attest_casefile_load_output(path, group, name, &cands[k]) == ATTEST_OK;
        const int have_r = attest_casefile_load_output(path, group, m->output, &refs[k]) ==
                           ATTEST_OK;
        attest_clear_error();
        if (have_c) {
            kept.candidate[k] = cands[k].data;
            kept.candidate_bytes[k] = cands[k].nbytes;
        }
        kept.num_outputs = k + 1;
        if (have_c && have_r && refs[k].dtype == ATTEST_DTYPE_F64 && m->failed_gates)
            heat_map(f, &refs[k], &cands[k], m, have_tol ? &tol[k] : NULL);
    }
    fputs("<h3>The case in detail (as attest replay prints it)</h3>\n<pre>", f);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (m) {
        attest_report_case_detail_outputs(m, rec, &c, have_tol ? tol : NULL, &kept);
        fclose(m);
        esc(f, text);
        free(text);
    }
    fputs("</pre>\n", f);
    for (int k = 0; k < n; k++) {
        attest_stored_tensor_free(&refs[k]);
        attest_stored_tensor_free(&cands[k]);
    }
    attest_case_free(&c);
}

static int failing(const attest_case_record *rec) { return attest_verdict_is_failure(rec->verdict); }

attest_status attest_report_html(FILE *f, attest_results_reader *r, size_t max_rows)
{
    if (max_rows == 0) max_rows = 2000;
    const attest_results_provenance *p = attest_results_provenance_of(r);
    const char *path = attest_results_path(r);
    attest_policy *policy = NULL;
    if (!p->policy_text || !p->policy_text[0] ||
        attest_policy_parse(p->policy_text, strlen(p->policy_text), "provenance", &policy) !=
            ATTEST_OK) {
        attest_clear_error();
        ATTEST_FORWARD(attest_policy_default(&policy));
    }
    attest_summary s;
    attest_status st = attest_summary_from_results(r, &s);
    attest_case_record *rows = st == ATTEST_OK ? calloc(max_rows, sizeof *rows) : NULL;
    if (st == ATTEST_OK && !rows) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "html: out of memory");
    /* Histograms per output slot: worst error/tolerance ratio, cosine difference, nmse. */
    histogram h[ATTEST_RECORD_MAX_OUTPUTS][3];
    memset(h, 0, sizeof h);
    char out_names[ATTEST_RECORD_MAX_OUTPUTS][32] = {"", ""};
    size_t nrows = 0;
    for (int pass = 0; st == ATTEST_OK && pass < 2; pass++) {
        /* Pass 0 takes the failing cases into the table, pass 1 the others, in file order. */
        attest_results_rewind(r);
        for (;;) {
            attest_case_record rec;
            int done = 0;
            st = attest_results_next(r, &rec, NULL, &done);
            if (st != ATTEST_OK || done) break;
            if (failing(&rec) == (pass == 0) && nrows < max_rows) rows[nrows++] = rec;
            if (pass) continue;
            for (int k = 0; k < rec.num_outputs && k < ATTEST_RECORD_MAX_OUTPUTS; k++) {
                const attest_tensor_metrics *m = &rec.outputs[k];
                if (!out_names[k][0]) {
                    attest_kernel kernel = strncmp(rec.params, "kernel=indexer", 14)
                                               ? ATTEST_KERNEL_MLA_DECODE
                                               : ATTEST_KERNEL_INDEXER;
                    attest_tolerance t;
                    const int ok = attest_policy_lookup(policy, kernel, m->output, &t) == ATTEST_OK;
                    attest_clear_error();
                    snprintf(out_names[k], sizeof out_names[k], "%s", m->output);
                    const char *what[3] = {"error / tolerance of the worst element",
                                           "cosine difference", "nmse"};
                    const double lo[3] = {-8, -16, -16}, hi[3] = {4, 0, 0};
                    const double thr[3] = {1.0, ok ? t.cos_diff_max : NAN,
                                           ok && t.nmse_max >= 0 ? t.nmse_max : NAN};
                    for (int j = 0; j < 3; j++) {
                        snprintf(h[k][j].title, sizeof h[k][j].title, "%s: %s", m->output,
                                 what[j]);
                        h[k][j].lo = lo[j];
                        h[k][j].hi = hi[j];
                        h[k][j].threshold = thr[j];
                    }
                }
                if (strcmp(out_names[k], m->output)) continue; /* another kernel's slot k */
                hist_add(&h[k][0], m->worst_ratio);
                hist_add(&h[k][1], m->cos_diff);
                hist_add(&h[k][2], m->nmse);
            }
        }
    }
    if (st != ATTEST_OK) {
        free(rows);
        attest_policy_free(policy);
        return st;
    }

    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>attest: ", f);
    esc(f, path);
    fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>attest results: ", style);
    esc(f, path);
    fputs("</h1>\n", f);
    const int pass = s.failures == 0 && s.cases > 0;
    fprintf(f, "<p class=\"%s\" id=\"result\">%s: %" PRIu64 " of %" PRIu64
               " case%s failed</p>\n",
            pass ? "pass" : "fail", pass ? "PASS" : "FAIL", s.failures, s.cases,
            s.cases == 1 ? "" : "s");
    fputs("<table><tr><th>attest</th><td>", f);
    esc(f, p->attest_version);
    fputs(" (", f);
    esc(f, p->git_commit);
    fputs(")</td></tr><tr><th>command</th><td><code>", f);
    esc(f, p->command_line);
    fputs("</code></td></tr><tr><th>candidate</th><td>", f);
    esc(f, p->candidate);
    fputs("</td></tr><tr><th>host</th><td>", f);
    esc(f, p->host);
    if (p->device[0]) {
        fputs("</td></tr><tr><th>device</th><td>", f);
        esc(f, p->device);
        fputs(", ", f);
        esc(f, p->cuda_version);
    }
    fputs("</td></tr><tr><th>policy</th><td>", f);
    esc(f, p->policy_name);
    fputs(" (hash ", f);
    esc(f, p->policy_hash);
    fprintf(f, ")</td></tr><tr><th>seed</th><td>%" PRIu64 "</td></tr><tr><th>started</th><td>",
            p->seed);
    esc(f, p->start_time);
    fputs("</td></tr><tr><th>state</th><td>", f);
    esc(f, p->state);
    fprintf(f, "</td></tr><tr><th>cases</th><td data-count=\"cases\">%" PRIu64
               "</td></tr><tr><th>vacuous</th><td data-count=\"vacuous\">%" PRIu64
               "</td></tr></table>\n",
            s.cases, s.vacuous);

    fputs("<h2>Verdicts</h2>\n", f);
    const char *vnames[ATTEST_VERDICT_COUNT_];
    for (int v = 0; v < ATTEST_VERDICT_COUNT_; v++) vnames[v] = attest_verdict_name((attest_verdict)v);
    bars(f, vnames, s.verdicts, ATTEST_VERDICT_COUNT_, "data-count");
    fputs("<h2>Failing cases by gate</h2>\n", f);
    const char *gnames[ATTEST_GATE_COUNT_];
    for (int g = 0; g < ATTEST_GATE_COUNT_; g++) gnames[g] = attest_gate_name((attest_gate)g);
    bars(f, gnames, s.gate_cases, ATTEST_GATE_COUNT_, "data-gate");

    fputs("<h2>Worst cases</h2>\n", f);
    if (s.num_worst == 0) fputs("<p>No case failed.</p>\n", f);
    for (size_t i = 0; i < s.num_worst; i++) {
        char *line = NULL, replay[2048];
        size_t len = 0;
        attest_results_replay_command(path, s.worst[i].case_id, s.worst[i].candidate, replay,
                                      sizeof replay);
        FILE *m = open_memstream(&line, &len);
        if (!m) continue;
        attest_report_failure_line(m, &s.worst[i], replay);
        fclose(m);
        fputs("<pre>", f);
        esc(f, line);
        fputs("</pre>\n", f);
        free(line);
    }
    /* The worst case that kept a repro (only some failing cases keep one). */
    for (size_t i = 0; i < s.num_worst; i++) {
        char rp[4096], rg[256];
        if (attest_results_repro_location(r, s.worst[i].case_id, rp, sizeof rp, rg, sizeof rg) !=
            ATTEST_OK) {
            attest_clear_error();
            if (i + 1 < s.num_worst) continue;
        }
        fprintf(f, "<h2>The worst case%s, #%" PRIu64 "</h2>\n",
                i ? " with a stored repro" : "", s.worst[i].case_id);
        worst_case(f, r, &s.worst[i], policy);
        break;
    }

    fputs("<h2>Metrics against their thresholds, every case</h2>\n<p>How close the passing "
          "cases came: log-scaled bins, bar height the square root of the count, the red line "
          "the policy's threshold (error / tolerance: 1).</p>\n",
          f);
    for (int k = 0; k < ATTEST_RECORD_MAX_OUTPUTS; k++)
        if (out_names[k][0])
            for (int j = 0; j < 3; j++) hist_svg(f, &h[k][j]);

    fprintf(f, "<h2>Cases</h2>\n<p>%zu of %" PRIu64 " shown, failing first.</p>\n<table "
               "id=\"cases\"><tr><th>case</th><th>verdict</th><th>gates</th><th>candidate</th>"
               "<th>max_rel</th><th>cos_diff</th><th>error/tol</th><th>params</th></tr>\n",
            nrows, s.cases);
    for (size_t i = 0; i < nrows; i++) {
        const attest_case_record *rec = &rows[i];
        const attest_tensor_metrics *m = &rec->outputs[attest_rep_main_output(rec)];
        char gates[96];
        attest_gate_mask_string(rec->failed_gates, gates, sizeof gates);
        const char *v = attest_verdict_name(rec->verdict);
        fprintf(f,
                "<tr class=\"%s\" data-case=\"%" PRIu64 "\" data-verdict=\"%s\" "
                "data-max-rel=\"%.9g\" data-cos-diff=\"%.9g\"><td>%" PRIu64 "</td><td>%s</td>"
                "<td>%s</td><td>",
                failing(rec) ? "v-fail" : rec->verdict == ATTEST_VERDICT_OK ? "v-OK"
                                                                             : "v-UNSUPPORTED",
                rec->case_id, v ? v : "UNKNOWN", rec->num_outputs ? m->max_rel : 0.0,
                rec->num_outputs ? m->cos_diff : 0.0, rec->case_id, v ? v : "UNKNOWN", gates);
        esc(f, rec->candidate);
        fputs("</td><td>", f);
        num(f, rec->num_outputs ? m->max_rel : 0.0);
        fputs("</td><td>", f);
        num(f, rec->num_outputs ? m->cos_diff : 0.0);
        fputs("</td><td>", f);
        num(f, rec->num_outputs ? m->worst_ratio : 0.0);
        fputs("</td><td><code>", f);
        esc(f, rec->params);
        fputs("</code></td></tr>\n", f);
    }
    fputs("</table>\n<p>Written by attest report from the results file alone; it loads nothing "
          "from the network.</p>\n</body></html>\n",
          f);
    free(rows);
    attest_policy_free(policy);
    return ferror(f) ? attest_fail(ATTEST_ERR_IO, "html: cannot write the page") : ATTEST_OK;
}
