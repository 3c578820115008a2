/* The runner's comparison step (runner_internal.h): masks, top-k selection, gates, summary. */
#include "runner_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/compare.h"
#include "attest/numerics.h"
#include "attest/runner.h"

void runner_scratch_free(runner_scratch *s)
{
    free(s->mask);
    free(s->scores);
    free(s->sets);
    memset(s, 0, sizeof *s);
}

static attest_status reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return ATTEST_OK;
    void *q = realloc(*p, need * elem);
    ATTEST_RETURN_IF(q == NULL, ATTEST_ERR_OUT_OF_MEMORY, "runner: cannot allocate %zu bytes",
                     need * elem);
    *p = q;
    *cap = need;
    return ATTEST_OK;
}

int32_t runner_indexer_row_length(const attest_indexer_params *p, const int32_t *context_lens,
                                  int32_t row)
{
    if (p->next_n <= 0 || row < 0) return 0;
    const int32_t b = row / p->next_n, j = row % p->next_n;
    if (b >= p->b) return 0;
    int64_t len = (int64_t)context_lens[b] - p->next_n + j + 1;
    if (len > context_lens[b]) len = context_lens[b];
    if (len > p->max_len) len = p->max_len;
    return len < 0 ? 0 : (int32_t)len;
}

/* Heap order: a is "worse" than b when its score is lower, or equal with a higher position. */
static int worse(const double *s, int32_t a, int32_t b)
{
    return s[a] < s[b] || (s[a] == s[b] && a > b);
}

static void sift_down(const double *s, int32_t *h, int32_t n, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && worse(s, h[l], h[m])) m = l;
        if (r < n && worse(s, h[r], h[m])) m = r;
        if (m == i) return;
        int32_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

void runner_select_topk(const double *scores, int32_t len, int32_t k, attest_topk_rule rule,
                        int32_t *idx, int32_t *heap)
{
    for (int32_t i = 0; i < k; i++) idx[i] = -1;
    if (rule == ATTEST_TOPK_SHORT_IDENTITY && len <= k) {
        for (int32_t i = 0; i < len; i++) idx[i] = i;
        return;
    }
    /* A min-heap of the best k so far, its worst element at the root. */
    int32_t n = 0;
    for (int32_t t = 0; t < len; t++) {
        if (isnan(scores[t])) continue;
        if (n < k) {
            int32_t i = n++;
            heap[i] = t;
            while (i > 0 && worse(scores, heap[i], heap[(i - 1) / 2])) {
                int32_t p = (i - 1) / 2, tmp = heap[i];
                heap[i] = heap[p];
                heap[p] = tmp;
                i = p;
            }
        } else if (worse(scores, heap[0], t)) {
            heap[0] = t;
            sift_down(scores, heap, n, 0);
        }
    }
    /* Pop worst-first into the back of idx: descending order. */
    for (int32_t m = n; m > 0; m--) {
        idx[m - 1] = heap[0];
        heap[0] = heap[m - 1];
        sift_down(scores, heap, m - 1, 0);
    }
}

/* The unspecified-masking mask: positions past a row's valid length are not compared. */
static attest_status indexer_mask(const attest_case *c, runner_scratch *s, const uint8_t **mask)
{
    const attest_indexer_params *p = &c->params.indexer;
    const attest_tensor *lens = attest_case_tensor_const(c, "context_lens");
    ATTEST_RETURN_IF(lens == NULL || lens->data == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "case has no context_lens");
    const size_t rows = (size_t)p->b * (size_t)p->next_n, width = (size_t)p->max_len;
    ATTEST_FORWARD(reserve((void **)&s->mask, &s->mask_cap, rows * width, 1));
    for (size_t r = 0; r < rows; r++) {
        const size_t len = (size_t)runner_indexer_row_length(p, lens->data, (int32_t)r);
        memset(s->mask + r * width, 1, len);
        memset(s->mask + r * width + len, 0, width - len);
    }
    *mask = s->mask;
    return ATTEST_OK;
}

/* Top-k gate: selects from the candidate's logits and the reference's alike. */
static attest_status indexer_topk(const attest_case *c, const double *ref, const float *cand,
                                  const attest_tolerance *tol, runner_scratch *s,
                                  attest_tensor_metrics *m)
{
    const attest_indexer_params *p = &c->params.indexer;
    const int32_t *lens = attest_case_tensor_const(c, "context_lens")->data;
    const int32_t rows = p->b * p->next_n, width = p->max_len, k = p->topk;
    /* sets: row lengths, candidate sets, reference sets, heap. */
    const size_t need = (size_t)rows + 2 * (size_t)rows * (size_t)k + (size_t)k;
    ATTEST_FORWARD(reserve((void **)&s->sets, &s->sets_cap, need, sizeof(int32_t)));
    ATTEST_FORWARD(reserve((void **)&s->scores, &s->scores_cap, (size_t)width, sizeof(double)));
    int32_t *row_len = s->sets, *cand_sets = row_len + rows;
    int32_t *ref_sets = cand_sets + (size_t)rows * (size_t)k, *heap = ref_sets + (size_t)rows * k;
    for (int32_t r = 0; r < rows; r++) {
        const int32_t len = runner_indexer_row_length(p, lens, r);
        const size_t base = (size_t)r * (size_t)width;
        row_len[r] = len;
        for (int32_t t = 0; t < len; t++) s->scores[t] = (double)cand[base + (size_t)t];
        runner_select_topk(s->scores, len, k, p->topk_rule, cand_sets + (size_t)r * k, heap);
        runner_select_topk(ref + base, len, k, p->topk_rule, ref_sets + (size_t)r * k, heap);
    }
    return attest_compare_topk(ref, rows, width, row_len, cand_sets, ref_sets, k, tol, m);
}

static void coord_string(const attest_coord *c, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; i < c->rank && i < 4 && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)c->index[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* "logits: element+unwritten (worst [0,5] ref 3 cand nan; 2 unwritten)". */
static void summarize(const attest_tensor_metrics *m, char *buf, size_t cap)
{
    char gates[96], at[64];
    attest_gate_mask_string(m->failed_gates, gates, sizeof gates);
    int n = snprintf(buf, cap, "%s: %s failed", m->output, gates);
    if (n < 0 || (size_t)n >= cap) return;
    if (m->failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_UNWRITTEN))
        n += snprintf(buf + n, cap - (size_t)n, ", %llu unwritten",
                      (unsigned long long)m->unwritten);
    if ((size_t)n >= cap) return;
    if (m->failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE)) {
        coord_string(&m->first_nonfinite_mismatch, at, sizeof at);
        n += snprintf(buf + n, cap - (size_t)n, ", %llu nonfinite mismatches (first at %s)",
                      (unsigned long long)m->nonfinite_mismatches, at);
    }
    if ((size_t)n >= cap) return;
    if (m->element_failures > 0) {
        coord_string(&m->worst, at, sizeof at);
        n += snprintf(buf + n, cap - (size_t)n, ", worst at %s ref %.9g cand %.9g", at,
                      m->worst_ref, m->worst_cand);
    }
    if ((size_t)n >= cap) return;
    if (m->failed_gates & ATTEST_GATE_BIT(ATTEST_GATE_TOPK))
        snprintf(buf + n, cap - (size_t)n, ", top-k recall %.4g (row %d)", m->topk_recall,
                 m->topk_worst_row);
}

attest_status runner_compare_outputs(const attest_case *c, const attest_policy *policy,
                                     double *const *ref, void *const *cand,
                                     attest_case_record *rec, runner_scratch *s, char *msg,
                                     size_t cap)
{
    msg[0] = '\0';
    size_t k = 0, used = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        ATTEST_RETURN_IF(k >= ATTEST_RECORD_MAX_OUTPUTS, ATTEST_ERR_INTERNAL,
                         "case has more than %d outputs", ATTEST_RECORD_MAX_OUTPUTS);
        attest_tolerance tol;
        attest_status st = attest_policy_lookup(policy, c->kernel, t->name, &tol);
        if (st != ATTEST_OK)
            return attest_fail(st, "policy '%s' has no tolerance for %s output '%s'",
                               attest_policy_name(policy), attest_kernel_name(c->kernel),
                               t->name);
        const uint8_t *mask = NULL;
        const int indexer = c->kernel == ATTEST_KERNEL_INDEXER && !strcmp(t->name, "logits");
        if (indexer && c->params.indexer.masking == ATTEST_MASK_UNSPECIFIED)
            ATTEST_FORWARD(indexer_mask(c, s, &mask));
        attest_tensor_metrics *m = &rec->outputs[k];
        ATTEST_FORWARD(attest_compare_tensor(ref[k], cand[k], t->dtype, attest_tensor_count(t),
                                             t->shape, t->rank, mask,
                                             t->dtype == ATTEST_DTYPE_BF16 ? ATTEST_POISON_BF16
                                                                           : ATTEST_POISON_F32,
                                             &tol, m));
        snprintf(m->output, sizeof m->output, "%s", t->name);
        if (indexer && c->params.indexer.topk > 0 && t->dtype == ATTEST_DTYPE_F32)
            ATTEST_FORWARD(indexer_topk(c, ref[k], cand[k], &tol, s, m));
        rec->failed_gates |= m->failed_gates;
        if (m->vacuous) rec->vacuous = 1;
        if (m->failed_gates && used + 2 < cap) {
            if (used) used += (size_t)snprintf(msg + used, cap - used, "; ");
            if (used < cap) summarize(m, msg + used, cap - used);
            used = strlen(msg);
        }
        k++;
    }
    rec->num_outputs = (int32_t)k;
    return ATTEST_OK;
}
