/* attest: human-readable reports of judged cases, for terminals and logs. Every printer takes a
 * FILE * (tests capture with open_memstream) and writes plain ASCII; none allocates unless said.
 *
 *   (a) the end-of-run summary: cases, verdict counts, failing gates, rate, worst cases;
 *   (b) failures grouped by verdict and failed gates, worst first, each with its replay command;
 *   (c) the detailed mismatch report of one case: every gate's value against its bound, and the
 *       worst element named in the kernel's terms (request, slot, position, cache block and byte
 *       offset for the indexer; request, query, head, dim for mla-decode);
 *   (d) a progress line (cases done/total, rate, failures so far, ETA), and a failure line
 *       for printing failing cases as they happen.
 *
 * Severity, used for "worst first" everywhere: the verdict class (CRASH, OUT_OF_BOUNDS_WRITE,
 * INPUT_MODIFIED, TIMEOUT, NONDETERMINISTIC, HARNESS_ERROR, MISMATCH, then the passing ones), then
 * within a class the number of non-finite mismatches, the largest relative error, the cosine
 * difference, the failing fraction, and finally the case id (earlier first).
 */
#ifndef ATTEST_REPORT_H
#define ATTEST_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attest/case.h"
#include "attest/compare.h"
#include "attest/record.h"
#include "attest/results.h"
#include "attest/status.h"
#include "attest/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- severity ------------------------------------------------------------------------------ */

/* Rank of a verdict class, 0 = worst (CRASH) ... 8 = OK; unknown verdicts rank with
 * HARNESS_ERROR. */
int attest_report_verdict_rank(attest_verdict v);

/* Orders two records by severity: < 0 when a is worse than b, 0 only for the same case id. */
int attest_report_severity_cmp(const attest_case_record *a, const attest_case_record *b);

/* --- (a) summary --------------------------------------------------------------------------- */

#define ATTEST_SUMMARY_WORST 5

/* Running totals over judged cases; plain data, fill with attest_summary_add. */
typedef struct attest_summary {
    uint64_t cases;
    uint64_t verdicts[ATTEST_VERDICT_COUNT_];
    uint64_t unknown_verdicts;
    uint64_t failures;                        /* attest_verdict_is_failure */
    uint64_t gate_cases[ATTEST_GATE_COUNT_];  /* failing cases whose failed_gates has the gate */
    uint64_t integrity_cases[ATTEST_INTEGRITY_COUNT_]; /* cases with ATTEST_INTEGRITY_* bit i */
    uint64_t vacuous;                         /* cases with a vacuous output */
    double gen_seconds, ref_seconds, run_seconds, compare_seconds;
    size_t num_worst;
    attest_case_record worst[ATTEST_SUMMARY_WORST]; /* the worst failing cases, worst first */
    int stop_signal;                          /* a run stopped by this signal (0: none) */
} attest_summary;

void attest_summary_init(attest_summary *s);

/* Counts one record (and keeps it when it is among the worst failures). */
void attest_summary_add(attest_summary *s, const attest_case_record *rec);

/* Fills a summary from every row of a results file. */
attest_status attest_summary_from_results(attest_results_reader *r, attest_summary *s)
    ATTEST_MUST_CHECK;

/* Prints the summary. results_path (may be NULL) adds replay commands to the worst cases;
 * wall_seconds > 0 adds the rate. Ends with "result: PASS ...", "result: FAIL ...", "result:
 * EMPTY ..." (nothing judged) or "result: INTERRUPTED ..." (stop_signal set: never PASS). */
void attest_report_summary(FILE *f, const attest_summary *s, const char *results_path,
                           double wall_seconds);

/* The summary's result in one word, as its "result:" line and --json's "result" say it:
 * INTERRUPTED (a stop signal), EMPTY (nothing judged), FAIL (a failing case, or the candidate
 * declined every case), PASS. A stop at --max-failures is FAIL: the run ended as asked. */
const char *attest_report_result_word(const attest_summary *s);

/* The campaign's duration: duration_s when recorded, else the seconds between its start and end
 * times, or -1 when neither is known. */
double attest_report_campaign_seconds(const attest_results_provenance *p);

/* Prints where a results file came from (attest version, commit, host, device, policy, seed,
 * command, times) and warns when the campaign did not finish. */
void attest_report_provenance(FILE *f, const char *results_path,
                              const attest_results_provenance *p, uint64_t rows);

/* --- (b) failures grouped by verdict and gate ------------------------------------------------ */

typedef struct attest_failure_groups attest_failure_groups; /* opaque */

/* Creates an empty grouping that keeps the `per_group` worst cases of each group (0: 5). */
attest_status attest_failure_groups_create(size_t per_group, attest_failure_groups **out)
    ATTEST_MUST_CHECK;

/* Adds a record; passing verdicts (OK, UNSUPPORTED) are ignored. */
attest_status attest_failure_groups_add(attest_failure_groups *g, const attest_case_record *rec)
    ATTEST_MUST_CHECK;

/* Number of failing cases added. */
uint64_t attest_failure_groups_count(const attest_failure_groups *g);

/* Prints the groups, worst group first (by its worst case), each with its count and its worst
 * cases, each case with the command that replays it from results_path (NULL: no command). */
void attest_report_failures(FILE *f, const attest_failure_groups *g, const char *results_path);

void attest_failure_groups_free(attest_failure_groups *g);

/* `attest show`: provenance, summary and grouped failures of a results file. per_group 0: 5. */
attest_status attest_report_show(FILE *f, attest_results_reader *r, size_t per_group)
    ATTEST_MUST_CHECK;

/* --- (c) one case in detail ---------------------------------------------------------------- */

/* Prints one record in detail: verdict, message, integrity findings, and per output every gate
 * with its value, its bound (from tol[k] for output k when tol is not NULL) and pass/fail, the
 * worst element and the first non-finite mismatch named in the kernel's terms with reference and
 * candidate values. With the case `c` (may be NULL) it also names where the element's inputs
 * live: for indexer logits the logical and physical block and the byte offsets of the position's
 * fp8 row and scale in cache_bytes, and the row's valid length; for mla-decode the valid indices
 * of the query. */
void attest_report_case_detail(FILE *f, const attest_case_record *rec, const attest_case *c,
                               const attest_tolerance *tol);

/* attest_report_case_detail, plus what only the outputs show (kept may be NULL): for
 * mla-decode, the localization of the worst element of out_bf16 (attest_report_mla_locate). */
void attest_report_case_detail_outputs(FILE *f, const attest_case_record *rec,
                                       const attest_case *c, const attest_tolerance *tol,
                                       const attest_case_outputs *kept);

/* Localizes an mla-decode element (request, query, head[, dim]) to the cache: recomputes the
 * reference softmax of that head from the case's bytes, names the token with the largest
 * |p * v[dim]|, the token and the pages whose leave-one-out removal brings the reference closest
 * to the candidate's row (cand_out: the candidate's out_bf16 bytes, may be NULL), each with its
 * index slot, page, in-page slot and the byte ranges of its fp8 data, scales and rope. */
void attest_report_mla_locate(FILE *f, const attest_case *c, const attest_coord *co,
                              const void *cand_out, size_t cand_bytes);

/* The deciding output's metrics and where its failing element is, in one phrase (no newline):
 * "out_bf16: max_rel 1.2e-02, cos_diff 3e-06, 12/4096 elements off, worst at out_bf16[request
 * 1, query 0, head 3, dim 77]; lse fails too (nonfinite)"; the record's message for verdicts
 * without metrics. */
void attest_report_brief(FILE *f, const attest_case_record *rec);

/* The same phrase into buf (cut at cap - 1 bytes; "" when it cannot be formatted). */
void attest_report_brief_string(const attest_case_record *rec, char *buf, size_t cap);

/* One failing case as it happens (a headline with the deciding output's metrics and where its
 * worst element is, the parameter string, then "replay: <replay>" when replay is not NULL). */
void attest_report_failure_line(FILE *f, const attest_case_record *rec, const char *replay);

/* --- (d) progress -------------------------------------------------------------------------- */

/* Redraws the terminal's progress line in place: "\r  1234/5000  24.7%  812 cases/s  failures 17
 * ETA 4.7 s" then erase-to-end-of-line, no newline. total 0: no percentage and no ETA. */
void attest_report_progress(FILE *f, uint64_t done, uint64_t total, uint64_t failures,
                            double elapsed_s);

/* Ends an in-place progress line (prints a newline). */
void attest_report_progress_end(FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_REPORT_H */
