/* attest: a results file as one self-contained HTML page (attest report RESULTS.h5 --html
 * OUT.html): provenance, the summary by verdict and by failing gate, the worst cases with their
 * replay commands, for the worst case an error/tolerance heat map and its localization in the
 * cache, histograms of every metric against its threshold over all cases (how close the passing
 * cases came), and the per-case table. Plots are inline SVG; the page loads nothing from
 * anywhere (no script, no font, no stylesheet link), so it opens from a CI artifact as it is.
 *
 * Numbers a test reads back carry data-* attributes: data-count="VERDICT" on the verdict counts,
 * data-case, data-verdict, data-max-rel, data-cos-diff on the rows of the case table.
 */
#ifndef ATTEST_HTML_REPORT_H
#define ATTEST_HTML_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "attest/results.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the page for the results file r to f. max_rows bounds the case table (failing cases
 * first, then the others in file order; 0: 2000). Errors only when the file cannot be read. */
attest_status attest_report_html(FILE *f, attest_results_reader *r, size_t max_rows)
    ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_HTML_REPORT_H */
