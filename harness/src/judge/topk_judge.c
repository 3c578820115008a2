/* The top-k family's judge (topk.h): the tie-aware set recall of the comparator plus the
 * contract rules a selection kernel must keep (range, padding, order, short rows, translation). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/compare.h"
#include "attest/topk.h"

static const char *const check_names[ATTEST_TOPK_CHECK_COUNT_] = {
    "range", "duplicate", "nonfinite", "recall", "padding",
    "order", "short-row", "translation", "run", "crash", "timeout", "canary", "input-modified",
    "nondeterminism"};

const char *attest_topk_check_name(attest_topk_check check)
{
    if ((int)check < 0 || check >= ATTEST_TOPK_CHECK_COUNT_) return "unknown";
    return check_names[check];
}

void attest_topk_check_mask_string(uint32_t failed, char *buf, size_t cap)
{
    if (cap == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < ATTEST_TOPK_CHECK_COUNT_; i++) {
        if (!(failed & (1u << i))) continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? "+" : "", check_names[i]);
        if (n < 0 || (size_t)n >= cap - used) return;
        used += (size_t)n;
    }
}

/* Records a failed check; the first failure of the case also gets its row, slot and line. */
static void fail(attest_topk_verdict *v, attest_topk_check check, int32_t row, int32_t slot,
                 const char *fmt, ...)
{
    v->failed |= 1u << check;
    v->findings++;
    if (v->first_row >= 0) return;
    v->first_row = row;
    v->first_slot = slot;
    int n = snprintf(v->detail, sizeof v->detail, "%s: row %d slot %d: ", check_names[check],
                     row, slot);
    if (n < 0 || (size_t)n >= sizeof v->detail) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->detail + n, sizeof v->detail - (size_t)n, fmt, ap);
    va_end(ap);
}

/* The physical token index of logical position l of request q, or -1 past the block table. */
static int64_t to_physical(const attest_topk_case *c, int32_t q, int32_t l)
{
    if (l < 0 || (int64_t)l >= (int64_t)c->p.blocks_per_req * ATTEST_INDEXER_BLOCK) return -1;
    const int32_t blk = c->block_table[(size_t)q * (size_t)c->p.blocks_per_req +
                                       (size_t)(l / (int32_t)ATTEST_INDEXER_BLOCK)];
    return (int64_t)blk * ATTEST_INDEXER_BLOCK + l % (int32_t)ATTEST_INDEXER_BLOCK;
}

/* The logical position of physical index x in request q's block table, or -1 when none. */
static int32_t to_logical(const attest_topk_case *c, int32_t q, int32_t x)
{
    if (x < 0) return -1;
    const int32_t blk = x / (int32_t)ATTEST_INDEXER_BLOCK, off = x % (int32_t)ATTEST_INDEXER_BLOCK;
    const int32_t *bt = c->block_table + (size_t)q * (size_t)c->p.blocks_per_req;
    for (int32_t j = 0; j < c->p.blocks_per_req; j++)
        if (bt[j] == blk) return j * (int32_t)ATTEST_INDEXER_BLOCK + off;
    return -1;
}

/* Judges one row; sel is the candidate's logical row (already translated), clean a scratch of k. */
static attest_status judge_row(const attest_topk_case *c, int32_t r, const int32_t *ref,
                               const int32_t *sel, attest_topk_order order, attest_topk_rule rule,
                               uint8_t *seen, double *scores, int32_t *clean,
                               attest_topk_verdict *v)
{
    const int32_t k = c->p.k, len = attest_topk_row_length(c, r);
    const float *row = c->logits + (size_t)r * (size_t)c->p.width;
    const int short_identity = rule == ATTEST_TOPK_SHORT_IDENTITY && len <= k;
    int32_t n_sel = 0, n_ref = 0, first_pad = -1;
    memset(seen, 0, (size_t)(len > 0 ? len : 1));
    for (int32_t s = 0; s < k; s++) {
        const int32_t x = sel[s];
        clean[s] = -1;
        if (ref[s] != -1) n_ref++;
        if (x == -1) {
            if (first_pad < 0) first_pad = s;
            continue;
        }
        n_sel++;
        if (first_pad >= 0)
            fail(v, ATTEST_TOPK_CHECK_PADDING, r, s, "position %d after -1 padding at slot %d", x,
                 first_pad);
        if (x < 0 || x >= len) {
            fail(v, ATTEST_TOPK_CHECK_RANGE, r, s, "position %d outside the row's length %d%s", x,
                 len, x >= len && x < c->p.width ? " (a masked position)" : "");
            continue;
        }
        if (seen[x]) {
            fail(v, ATTEST_TOPK_CHECK_DUPLICATE, r, s, "position %d selected twice", x);
            continue;
        }
        seen[x] = 1;
        clean[s] = x;
        if (!short_identity && (isnan(row[x]) || row[x] == -INFINITY))
            fail(v, ATTEST_TOPK_CHECK_NONFINITE, r, s, "position %d has logit %g, which has no rank",
                 x, (double)row[x]);
    }
    if (short_identity) {
        /* The rule returns 0..len-1 whatever the scores: in slot order when sorted is declared,
         * as a set otherwise; -1 after. */
        for (int32_t s = 0; s < k; s++) {
            const int ok = order == ATTEST_TOPK_ORDER_SORTED
                               ? sel[s] == (s < len ? s : -1)
                               : (s < len ? (sel[s] >= 0 && sel[s] < len && clean[s] == sel[s])
                                          : sel[s] == -1);
            if (!ok) {
                fail(v, ATTEST_TOPK_CHECK_SHORT_ROW, r, s,
                     "row of length %d <= k = %d holds %d, not %d", len, k, sel[s],
                     s < len ? s : -1);
                break;
            }
        }
    } else {
        if (n_sel != n_ref)
            fail(v, ATTEST_TOPK_CHECK_PADDING, r, n_sel < n_ref ? n_sel : n_ref,
                 "%d positions selected, the row has %d to give (k = %d, length %d)", n_sel,
                 n_ref, k, len);
        if (order == ATTEST_TOPK_ORDER_SORTED) {
            int32_t prev = -1;
            for (int32_t s = 0; s < k; s++) {
                const int32_t x = clean[s];
                if (x < 0 || isnan(row[x])) continue;
                if (prev >= 0 && row[x] > row[prev]) {
                    fail(v, ATTEST_TOPK_CHECK_ORDER, r, s,
                         "declared sorted, but position %d (logit %.9g) follows %d (%.9g)", x,
                         (double)row[x], prev, (double)row[prev]);
                    break;
                }
                prev = x;
            }
        }
        /* Exact ties only: a top-k kernel compares the logits it is given, it computes none. */
        for (int32_t t = 0; t < len; t++) scores[t] = row[t];
        double recall = 1.0;
        ATTEST_FORWARD(attest_compare_topk_row(scores, len, clean, ref, k, 0.0, 0.0, &recall));
        if (recall < v->worst_recall) v->worst_recall = recall;
        if (recall < 1.0) {
            int32_t slot = 0;
            for (int32_t s = 0; s < k; s++)
                if (ref[s] != -1 && (ref[s] >= len || !seen[ref[s]])) {
                    slot = s;
                    break;
                }
            fail(v, ATTEST_TOPK_CHECK_RECALL, r, slot,
                 "recall %.4f: reference position %d (logit %.9g) missing and not replaced by an "
                 "equal score",
                 recall, ref[slot], ref[slot] >= 0 ? (double)row[ref[slot]] : 0.0);
        }
    }
    return ATTEST_OK;
}

attest_status attest_topk_judge(const attest_topk_case *c, const int32_t *ref_indices,
                                const int32_t *indices, const int32_t *physical,
                                attest_topk_order order, attest_topk_rule rule,
                                attest_topk_verdict *v)
{
    ATTEST_RETURN_IF(c == NULL || v == NULL || ref_indices == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk judge: NULL case, verdict or reference");
    ATTEST_RETURN_IF(indices == NULL && physical == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk judge: the candidate writes no output");
    ATTEST_RETURN_IF(c->logits == NULL || c->context_lens == NULL || c->block_table == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "topk judge: case inputs not allocated");
    memset(v, 0, sizeof *v);
    v->first_row = v->first_slot = -1;
    v->worst_recall = 1.0;
    const int32_t rows = attest_topk_rows(&c->p), k = c->p.k, width = c->p.width;
    uint8_t *seen = malloc((size_t)width);
    double *scores = malloc((size_t)width * sizeof *scores);
    int32_t *sel = malloc(2 * (size_t)k * sizeof *sel);
    attest_status st = ATTEST_OK;
    if (seen == NULL || scores == NULL || sel == NULL) {
        st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "topk judge: out of memory");
        goto out;
    }
    for (int32_t r = 0; r < rows && st == ATTEST_OK; r++) {
        const int32_t q = r / c->p.next_n;
        const size_t off = (size_t)r * (size_t)k;
        const uint64_t findings = v->findings;
        if (indices != NULL) {
            memcpy(sel, indices + off, (size_t)k * sizeof *sel);
            if (physical != NULL)
                for (int32_t s = 0; s < k; s++) {
                    const int64_t want = sel[s] == -1 ? -1 : to_physical(c, q, sel[s]);
                    if (sel[s] != -1 && want < 0) continue; /* out of range: judged as such */
                    if (physical[off + (size_t)s] != want) {
                        fail(v, ATTEST_TOPK_CHECK_TRANSLATION, r, s,
                             "position %d is physical %lld through the block table, the "
                             "candidate wrote %d",
                             sel[s], (long long)want, physical[off + (size_t)s]);
                        break;
                    }
                }
        } else {
            for (int32_t s = 0; s < k; s++) {
                const int32_t x = physical[off + (size_t)s];
                sel[s] = x == -1 ? -1 : to_logical(c, q, x);
                if (x != -1 && sel[s] < 0) {
                    fail(v, ATTEST_TOPK_CHECK_TRANSLATION, r, s,
                         "physical index %d is in no block of request %d", x, q);
                    sel[s] = INT32_MIN; /* judged as out of range too */
                }
            }
        }
        st = judge_row(c, r, ref_indices + off, sel, order, rule, seen, scores, sel + k, v);
        if (v->findings != findings) v->rows_failed++;
    }
out:
    free(seen);
    free(scores);
    free(sel);
    return st;
}
