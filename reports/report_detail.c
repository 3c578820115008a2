/* attest reports: one case in detail (what `attest replay` prints). Per output: every gate with
 * its value, bound and result; the worst element and the first non-finite mismatch in the
 * kernel's terms, and, given the case, where that element's inputs live in memory.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attest/layout.h"
#include "attest/numerics.h"
#include "report_internal.h"

static const char *gate_result(const attest_tensor_metrics *m, attest_gate g)
{
    return (m->failed_gates & ATTEST_GATE_BIT(g)) ? "FAIL" : "pass";
}

static void gate_row(FILE *f, const char *gate, const char *value, const char *bound,
                     const char *result)
{
    fprintf(f, "    %-10s %-34s %-44s %s\n", gate, value, bound, result);
}

static void gate_table(FILE *f, const attest_tensor_metrics *m, const attest_tolerance *t)
{
    char v[96], b[128], x[32], y[32];
    gate_row(f, "gate", "value", "bound", "result");

    snprintf(v, sizeof v, "%" PRIu64 " mismatched positions", m->nonfinite_mismatches);
    gate_row(f, "nonfinite", v, "+inf/-inf/nan positions equal",
             gate_result(m, ATTEST_GATE_NONFINITE));
    fprintf(f, "    %-10s reference +inf %" PRIu64 " -inf %" PRIu64 " nan %" PRIu64
               "; candidate +inf %" PRIu64 " -inf %" PRIu64 " nan %" PRIu64 "\n",
            "", m->ref_posinf, m->ref_neginf, m->ref_nan, m->cand_posinf, m->cand_neginf,
            m->cand_nan);

    uint64_t base = m->finite_pairs ? m->finite_pairs : m->count;
    snprintf(v, sizeof v, "%" PRIu64 " of %" PRIu64 " off (%.4g%%)", m->element_failures, base,
             100.0 * m->element_fail_fraction);
    if (t && t->bound_factor >= 0) {
        /* Computed bounds: each element has its own tolerance (docs/policy.md). */
        attest_rep_num(t->bound_factor, x, sizeof x);
        snprintf(b, sizeof b, "<= %.4g%% off; |d| <= %s*bound + rounding, per element",
                 100.0 * t->max_fail_fraction, x);
    } else if (t) {
        attest_rep_num(m->atol_effective > 0 ? m->atol_effective : t->atol, x, sizeof x);
        attest_rep_num(t->rtol, y, sizeof y);
        snprintf(b, sizeof b, "<= %.4g%% off; |d| <= %s or %s*|r|", 100.0 * t->max_fail_fraction,
                 x, y);
    } else {
        snprintf(b, sizeof b, "-");
    }
    gate_row(f, "element", v, b, gate_result(m, ATTEST_GATE_ELEMENT));

    attest_rep_num(m->cos_diff, v, sizeof v);
    if (t) {
        attest_rep_num(t->cos_diff_max, x, sizeof x);
        snprintf(b, sizeof b, "<= %s", x);
    }
    gate_row(f, "cosine", v, t ? b : "-", gate_result(m, ATTEST_GATE_COSINE));

    attest_rep_num(m->nmse, v, sizeof v);
    int nmse_off = t && t->nmse_max < 0;
    if (t && !nmse_off) {
        attest_rep_num(t->nmse_max, x, sizeof x);
        snprintf(b, sizeof b, "<= %s", x);
    }
    gate_row(f, "nmse", v, nmse_off ? "off" : t ? b : "-",
             nmse_off ? "off" : gate_result(m, ATTEST_GATE_NMSE));

    snprintf(v, sizeof v, "%.6g steps", m->max_code_distance);
    int code_off = t && t->max_code_distance < 0;
    if (t && !code_off) snprintf(b, sizeof b, "<= %.6g steps", t->max_code_distance);
    gate_row(f, "code", v, code_off ? "off" : t ? b : "-",
             code_off ? "off" : gate_result(m, ATTEST_GATE_CODE));

    snprintf(v, sizeof v, "%" PRIu64 " elements still poisoned", m->unwritten);
    gate_row(f, "unwritten", v, "0", gate_result(m, ATTEST_GATE_UNWRITTEN));

    if (m->topk_checked) {
        snprintf(v, sizeof v, "recall %.6f (worst row %d)", m->topk_recall, (int)m->topk_worst_row);
        if (t) snprintf(b, sizeof b, ">= %.6g", t->topk_min_recall);
        gate_row(f, "topk", v, t ? b : "-", gate_result(m, ATTEST_GATE_TOPK));
    } else {
        gate_row(f, "topk", "not run", "-", "-");
    }
}

static int32_t i32_at(const attest_case *c, const char *name, size_t index, int *ok)
{
    const attest_tensor *t = attest_case_tensor_const(c, name);
    if (!t || !t->data || t->dtype != ATTEST_DTYPE_I32 || index >= attest_tensor_count(t)) {
        *ok = 0;
        return 0;
    }
    *ok = 1;
    return ((const int32_t *)t->data)[index];
}

#define BLOCK_ROW_LISTED 16 /* block-table rows up to this many entries are printed whole */

/* A short block-table row whole, '|' after the blocks the request's length L needs: the -1 or
 * stale entries past them (what serving engines leave there) are on the page. */
static void block_table_row(FILE *f, const attest_case *c, int64_t request, int32_t len)
{
    const attest_indexer_params *p = &c->params.indexer;
    if (p->blocks_per_req <= 0 || p->blocks_per_req > BLOCK_ROW_LISTED || len < 0) return;
    const int64_t need = ((int64_t)len + ATTEST_INDEXER_BLOCK - 1) / ATTEST_INDEXER_BLOCK;
    fprintf(f, "      block_table[%" PRId64 "] = [", request);
    for (int32_t k = 0; k < p->blocks_per_req; k++) {
        int ok = 0;
        const int32_t e = i32_at(c, "block_table", (size_t)(request * p->blocks_per_req + k), &ok);
        if (!ok) break;
        fprintf(f, "%s%d", k == need ? (k ? " | " : "| ") : (k ? ", " : ""), (int)e);
    }
    fprintf(f, "] (%" PRId64 " block%s hold%s the request's %d positions)\n", need,
            need == 1 ? "" : "s", need == 1 ? "s" : "", (int)len);
}

/* The logit of row `row` over the fp8 row at `krow` (128 bytes) times `scale`, in double as the
 * kernel order computes it: scale * sum_h w_h * max(0, q_h . k). */
static double indexer_logit_of(const attest_indexer_params *p, const uint8_t *q, const float *w,
                               const uint8_t *krow, double scale)
{
    double acc = 0.0;
    for (int32_t h = 0; h < p->heads; h++) {
        double dot = 0.0;
        const uint8_t *qh = q + (size_t)h * (size_t)p->head_dim;
        for (int32_t d = 0; d < p->head_dim; d++)
            dot += (double)attest_fp8_values[qh[d]] * (double)attest_fp8_values[krow[d]];
        acc += (double)w[h] * (dot > 0.0 ? dot : 0.0);
    }
    return scale * acc;
}

/* Whether a hypothesis's logit is the candidate's: within the element's own tolerance plus a
 * float32 kernel's rounding of a value that size (a misread scale or row moves a logit by far
 * more). */
static int indexer_matches(double hyp, double cand, double tol)
{
    return isfinite(hyp) && fabs(hyp - cand) <= tol + 1e-5 * fabs(hyp);
}

/* The worst element of a failing indexer output against the classic misreads: the scale of
 * another slot of the same block (an off-by-one scale index), the fp8 row of another slot (a
 * wrong row stride), or the position's slot in another physical block (a wrong block-table
 * entry). The first one whose logit is the candidate's is named with its bytes. */
static void indexer_explain(FILE *f, const attest_case *c, const attest_tensor_metrics *m,
                            const attest_coord *co)
{
    const attest_indexer_params *p = &c->params.indexer;
    if (co->rank != 2 || p->next_n < 1 || !isfinite(m->worst_cand) || !isfinite(m->worst_ref))
        return;
    const int64_t row = co->index[0], t = co->index[1], request = row / p->next_n;
    const int64_t j = t / ATTEST_INDEXER_BLOCK, in_block = t % ATTEST_INDEXER_BLOCK;
    int ok = 0;
    if (j >= p->blocks_per_req) return;
    const int32_t phys = i32_at(c, "block_table", (size_t)(request * p->blocks_per_req + j), &ok);
    const attest_tensor *cache = attest_case_tensor_const(c, "cache_bytes");
    const attest_tensor *qt = attest_case_tensor_const(c, "q_fp8");
    const attest_tensor *wt = attest_case_tensor_const(c, "weights");
    attest_layout L;
    if (!ok || phys < 0 || phys >= p->num_blocks || !cache || !cache->data || !qt || !qt->data ||
        !wt || !wt->data || p->head_dim != 128 ||
        attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, ATTEST_INDEXER_BLOCK, 0, &L) != ATTEST_OK ||
        cache->nbytes < (size_t)p->num_blocks * L.page_stride ||
        attest_tensor_count(qt) < (size_t)(row + 1) * (size_t)p->heads * (size_t)p->head_dim ||
        attest_tensor_count(wt) < (size_t)(row + 1) * (size_t)p->heads) {
        attest_clear_error();
        return;
    }
    const size_t qrow = (size_t)p->heads * (size_t)p->head_dim;
    const uint8_t *q = (const uint8_t *)qt->data + (size_t)row * qrow;
    const float *w = (const float *)wt->data + (size_t)row * (size_t)p->heads;
    const uint8_t *pool = cache->data;
    const double cand = m->worst_cand, tol = m->worst_tol;
    /* slot s of physical block b: its fp8 row and its scale */
#define ROW_OF(b, s) (pool + (size_t)(b) * L.page_stride + off_of[s].fp8)
#define SCALE_OF(b, s) \
    ((double)attest_layout_token_scale(&L, pool + (size_t)(b) * L.page_stride, (uint32_t)(s), 0))
    attest_token_offsets off_of[ATTEST_INDEXER_BLOCK];
    for (uint32_t s = 0; s < ATTEST_INDEXER_BLOCK; s++)
        if (attest_layout_token_offsets(&L, s, &off_of[s]) != ATTEST_OK) {
            attest_clear_error();
            return;
        }
    const uint64_t base = (uint64_t)phys * L.page_stride;
    /* Another slot's scale, then another slot's row, nearest slots first: an off-by-one is the
     * likeliest misread. */
    for (int misread_row = 0; misread_row < 2; misread_row++)
        for (int64_t dist = 1; dist < ATTEST_INDEXER_BLOCK; dist++)
            for (int sign = 1; sign >= -1; sign -= 2) {
                const int64_t s = in_block + sign * dist;
                if (s < 0 || s >= ATTEST_INDEXER_BLOCK) continue;
                const int64_t r = misread_row ? s : in_block, k = misread_row ? in_block : s;
                if (!indexer_matches(indexer_logit_of(p, q, w, ROW_OF(phys, r), SCALE_OF(phys, k)),
                                     cand, tol))
                    continue;
                if (misread_row)
                    fprintf(f, "    localization: the candidate's logit is the fp8 row of slot %"
                               PRId64 " (bytes [%" PRIu64 ", %" PRIu64 ")) times this position's "
                               "scale: a row read off by %+" PRId64 " (a row stride or index "
                               "bug)\n",
                            s, base + off_of[s].fp8, base + off_of[s].fp8 + L.fp8_dim,
                            s - in_block);
                else
                    fprintf(f, "    localization: the candidate's logit is this position's fp8 row "
                               "times the scale of slot %" PRId64 " (byte %" PRIu64 " = %.9g) "
                               "instead of slot %" PRId64 "'s (byte %" PRIu64 "): a scale read "
                               "off by %+" PRId64 "\n",
                            s, base + off_of[s].scale[0], SCALE_OF(phys, s), in_block,
                            base + off_of[in_block].scale[0], s - in_block);
                return;
            }
    /* Other blocks: those the block table names (a wrong entry reads one of them; a sparse pool
     * spans millions of blocks, most never placed). */
    const size_t entries = (size_t)p->b * (size_t)p->blocks_per_req;
    for (size_t e = 0; e < entries; e++) {
        const int32_t b = i32_at(c, "block_table", e, &ok);
        if (!ok || b < 0 || b >= p->num_blocks || b == phys) continue;
        if (!indexer_matches(indexer_logit_of(p, q, w, ROW_OF(b, in_block), SCALE_OF(b, in_block)),
                             cand, tol))
            continue;
        fprintf(f, "    localization: the candidate's logit is slot %" PRId64 " of physical "
                   "block %d (bytes from %" PRIu64 "), not of block %d = block_table[%" PRId64
                   "][%" PRId64 "]: a wrong block\n",
                in_block, (int)b, (uint64_t)b * L.page_stride, (int)phys, request, j);
        return;
    }
    {
        /* The V3.2-style view of a block as 64 records of 132 bytes (fp8 row, then its float32
         * scale), where the c4-indexer layout holds 64 rows, then 64 scales. */
        const uint64_t rec = (uint64_t)in_block * (L.fp8_dim + 4u);
        float sc;
        memcpy(&sc, pool + base + rec + L.fp8_dim, sizeof sc);
        if (rec + L.fp8_dim + 4u <= L.page_stride &&
            indexer_matches(indexer_logit_of(p, q, w, pool + base + rec, (double)sc), cand, tol)) {
            fprintf(f, "    localization: the candidate's logit is the block read as 64 records of "
                       "%u bytes (row at byte %" PRIu64 ", scale at byte %" PRIu64 "), not as "
                       "the layout's 64 rows then 64 scales: a wrong view of the block\n",
                    L.fp8_dim + 4u, base + rec, base + rec + L.fp8_dim);
            return;
        }
    }
#undef ROW_OF
#undef SCALE_OF
    fprintf(f, "    localization: no other slot's scale or row of the block, and no other block's "
               "slot, gives the candidate's logit\n");
}

/* Where an indexer logit's inputs live: the row's request and MTP slot, its valid length, and
 * the position's block and bytes in the cache (docs/kernels.md sections 4 and 5). */
static void indexer_element(FILE *f, const attest_case *c, const attest_coord *co)
{
    const attest_indexer_params *p = &c->params.indexer;
    if (co->rank != 2 || p->next_n < 1) return;
    int64_t row = co->index[0], t = co->index[1];
    int64_t request = row / p->next_n, slot = row % p->next_n;
    fprintf(f, "      row %" PRId64 " = request %" PRId64 ", next_n slot %" PRId64
               "; position t = %" PRId64 "\n",
            row, request, slot, t);
    int ok = 0;
    int32_t len = i32_at(c, "context_lens", (size_t)request, &ok);
    if (ok) {
        const attest_tensor *lens = attest_case_tensor_const(c, "context_lens");
        const int32_t valid = attest_indexer_row_length(p, lens->data, (int32_t)row);
        fprintf(f, "      request length L = %d; this row sees t < %d"
                   " (t <= L - next_n + slot): position %s\n",
                (int)len, valid,
                t < valid ? "inside the row" : "masked (past the row's length)");
    }
    int64_t j = t / ATTEST_INDEXER_BLOCK, in_block = t % ATTEST_INDEXER_BLOCK;
    if (j >= p->blocks_per_req) {
        fprintf(f, "      logical block %" PRId64 " is past the block table (%d per request)\n", j,
                (int)p->blocks_per_req);
        return;
    }
    int32_t phys = i32_at(c, "block_table", (size_t)(request * p->blocks_per_req + j), &ok);
    if (!ok) return;
    fprintf(f, "      logical block %" PRId64 " (positions %" PRId64 "..%" PRId64
               "), slot %" PRId64 " in it; physical block %d = block_table[%" PRId64 "][%" PRId64
               "]\n",
            j, j * ATTEST_INDEXER_BLOCK, j * ATTEST_INDEXER_BLOCK + ATTEST_INDEXER_BLOCK - 1,
            in_block, (int)phys, request, j);
    block_table_row(f, c, request, ok ? len : -1);
    attest_layout L;
    attest_token_offsets off;
    if (phys < 0 || phys >= p->num_blocks ||
        attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, ATTEST_INDEXER_BLOCK, 0, &L) != ATTEST_OK ||
        attest_layout_token_offsets(&L, (uint32_t)in_block, &off) != ATTEST_OK) {
        attest_clear_error();
        fprintf(f, "      (physical block outside the pool of %d blocks)\n", (int)p->num_blocks);
        return;
    }
    uint64_t base = (uint64_t)phys * L.page_stride;
    fprintf(f, "      cache_bytes: fp8 row at byte %" PRIu64 " (%d * %" PRIu64 " + %" PRIu64
               ", %u bytes); scale at byte %" PRIu64 " (%d * %" PRIu64 " + %" PRIu64
               ", float32)",
            base + off.fp8, (int)phys, L.page_stride, off.fp8, L.fp8_dim, base + off.scale[0],
            (int)phys, L.page_stride, off.scale[0]);
    const attest_tensor *cache = attest_case_tensor_const(c, "cache_bytes");
    if (cache && cache->data && base + L.page_stride <= cache->nbytes)
        fprintf(f, " = %.9g", attest_layout_token_scale(&L, (const uint8_t *)cache->data + base,
                                                         (uint32_t)in_block, 0));
    fputc('\n', f);
}

#define MLA_ROW_LISTED 16 /* index rows up to this many slots are printed whole */

/* Counts the valid (not -1) entries of one query's index list, honoring a length tensor. */
static void mla_indices(FILE *f, const attest_case *c, const char *indices, const char *lengths,
                        int has_lengths, int32_t topk, int64_t request, int64_t query, int32_t s_q)
{
    const attest_tensor *t = attest_case_tensor_const(c, indices);
    if (!t || !t->data || topk <= 0) return;
    size_t start = ((size_t)request * (size_t)s_q + (size_t)query) * (size_t)topk;
    if (start + (size_t)topk > attest_tensor_count(t)) return;
    int32_t limit = topk;
    int ok = 0;
    if (has_lengths) {
        int32_t len = i32_at(c, lengths, (size_t)request, &ok);
        if (ok && len < limit) limit = len < 0 ? 0 : len;
    }
    int32_t valid = 0;
    const int32_t *idx = (const int32_t *)t->data + start;
    for (int32_t k = 0; k < limit; k++) valid += idx[k] != -1;
    fprintf(f, "      %s[%" PRId64 ", %" PRId64 "]: %d of %d slots valid", indices, request, query,
            (int)valid, (int)topk);
    if (has_lengths && ok) fprintf(f, " (%s = %d)", lengths, (int)limit);
    /* A short row (a minimized finding's) is listed whole, '|' where topk_length ends it: the
     * -1 holes and duplicates a kernel mishandles are then on the page. */
    if (topk <= MLA_ROW_LISTED) {
        fputs(": [", f);
        for (int32_t k = 0; k < topk; k++)
            fprintf(f, "%s%d", k == limit ? (k ? " | " : "| ") : (k ? ", " : ""), (int)idx[k]);
        fputc(']', f);
    } else if (has_lengths && ok && limit < topk) {
        /* A longer row: the tokens past the length are what a kernel that ignores it reads. */
        int32_t past = 0;
        for (int32_t k = limit; k < topk; k++) past += idx[k] != -1;
        if (past > 0) {
            fprintf(f, "; past %s, %d slot%s name a token (", lengths, (int)past,
                    past == 1 ? "" : "s");
            int32_t shown = 0;
            for (int32_t k = limit; k < topk && shown < 4; k++)
                if (idx[k] != -1)
                    fprintf(f, "%sslot %d -> %d", shown++ ? ", " : "", (int)k, (int)idx[k]);
            fprintf(f, "%s): a kernel that ignores %s reads %s", past > shown ? ", ..." : "",
                    lengths, past == 1 ? "it" : "them");
        }
    }
    fputc('\n', f);
}

static void mla_element(FILE *f, const attest_case *c, const attest_coord *co)
{
    const attest_mla_params *p = &c->params.mla;
    if (co->rank < 3) return;
    int64_t request = co->index[0], query = co->index[1], head = co->index[2];
    mla_indices(f, c, "indices", "topk_length", p->has_topk_length, p->topk, request, query,
                p->s_q);
    if (p->has_extra)
        mla_indices(f, c, "extra_indices", "extra_topk_length", p->has_extra_topk_length,
                    p->extra_topk, request, query, p->s_q);
    const attest_tensor *sink = attest_case_tensor_const(c, "attn_sink");
    if (p->has_sink && sink && sink->data && head >= 0 && (size_t)head < attest_tensor_count(sink))
        fprintf(f, "      attn_sink[%" PRId64 "] = %.9g (lse %s the sink)\n", head,
                (double)((const float *)sink->data)[head],
                p->lse_convention == ATTEST_LSE_INCLUDES_SINK ? "includes" : "excludes");
}

static attest_kernel kernel_of(const attest_case_record *rec, const attest_case *c)
{
    if (c) return c->kernel;
    if (!strncmp(rec->params, "kernel=indexer", 14)) return ATTEST_KERNEL_INDEXER;
    if (!strncmp(rec->params, "kernel=mla-decode", 17)) return ATTEST_KERNEL_MLA_DECODE;
    return (attest_kernel)0;
}

static void element(FILE *f, attest_kernel kernel, const attest_tensor_metrics *m,
                    const attest_coord *co, const attest_case *c)
{
    if (!c) return;
    if (kernel == ATTEST_KERNEL_INDEXER && !strcmp(m->output, "logits")) indexer_element(f, c, co);
    if (kernel == ATTEST_KERNEL_MLA_DECODE) mla_element(f, c, co);
}

/* The index of output `name` among the run's kept outputs, -1 when they hold none of it. */
static int kept_index(const attest_case_record *rec, const attest_case_outputs *kept,
                      const char *name)
{
    if (!kept) return -1;
    for (int k = 0; k < rec->num_outputs && k < kept->num_outputs && k < ATTEST_RECORD_MAX_OUTPUTS;
         k++)
        if (!strcmp(rec->outputs[k].output, name) && kept->candidate[k]) return k;
    return -1;
}

/* The candidate's out_bf16 bytes, when kept. */
static const void *kept_out(const attest_case_record *rec, const attest_case_outputs *kept,
                            size_t *bytes)
{
    const int k = kept_index(rec, kept, "out_bf16");
    *bytes = k < 0 ? 0 : kept->candidate_bytes[k];
    return k < 0 ? NULL : kept->candidate[k];
}

/* The reference and candidate values of output m at co, from the kept outputs of the run and
 * the case's tensor shape. 0 when they were not kept (a detail read from a results file). */
static int kept_pair(const attest_case_record *rec, const attest_case_outputs *kept,
                     const attest_case *c, const attest_tensor_metrics *m, const attest_coord *co,
                     double *ref, double *cand)
{
    const int k = kept_index(rec, kept, m->output);
    const attest_tensor *t = c ? attest_case_tensor_const(c, m->output) : NULL;
    if (k < 0 || !kept->reference[k] || !t || t->rank != co->rank || co->rank < 1 || co->rank > 4 ||
        (t->dtype != ATTEST_DTYPE_BF16 && t->dtype != ATTEST_DTYPE_F32))
        return 0;
    size_t flat = 0;
    for (int32_t d = 0; d < co->rank; d++) {
        if (co->index[d] < 0 || co->index[d] >= t->shape[d]) return 0;
        flat = flat * (size_t)t->shape[d] + (size_t)co->index[d];
    }
    const size_t es = attest_dtype_size(t->dtype);
    if ((flat + 1) * es > kept->candidate_bytes[k]) return 0;
    const uint8_t *at = (const uint8_t *)kept->candidate[k] + flat * es;
    if (t->dtype == ATTEST_DTYPE_BF16) {
        uint16_t b;
        memcpy(&b, at, 2);
        *cand = attest_bf16_decode(b);
    } else {
        float v;
        memcpy(&v, at, 4);
        *cand = v;
    }
    *ref = kept->reference[k][flat];
    return 1;
}

/* The first inf/nan mismatch: where, both values, the row's memory, and (locate) the
 * localization. */
static void nonfinite_detail(FILE *f, const attest_case_record *rec, attest_kernel kernel,
                             const attest_tensor_metrics *m, const attest_case *c,
                             const attest_case_outputs *kept, int locate)
{
    char coord[200];
    attest_coord_string(kernel, m->output, &m->first_nonfinite_mismatch, coord,
                               sizeof coord);
    double r, v;
    if (kept_pair(rec, kept, c, m, &m->first_nonfinite_mismatch, &r, &v))
        fprintf(f, "    first inf/nan mismatch at %s: reference %.9g, candidate %.9g\n", coord, r,
                v);
    else
        fprintf(f, "    first inf/nan mismatch at %s\n", coord);
    element(f, kernel, m, &m->first_nonfinite_mismatch, c);
    if (locate && c && kernel == ATTEST_KERNEL_MLA_DECODE) {
        size_t bytes;
        const void *out = kept_out(rec, kept, &bytes);
        attest_report_mla_locate(f, c, &m->first_nonfinite_mismatch, out, bytes);
    }
}

static void output_detail(FILE *f, const attest_case_record *rec, int k, const attest_case *c,
                          const attest_tolerance *tol, const attest_case_outputs *kept)
{
    const attest_tensor_metrics *m = &rec->outputs[k];
    attest_kernel kernel = kernel_of(rec, c);
    char gates[96];
    attest_gate_mask_string(m->failed_gates, gates, sizeof gates);
    fprintf(f, "  output %.*s: %" PRIu64 " elements compared, %" PRIu64 " finite pairs: %s%s%s%s\n",
            (int)sizeof m->output, m->output, m->count, m->finite_pairs,
            m->failed_gates ? "FAIL (" : "pass", gates, m->failed_gates ? ")" : "",
            m->vacuous ? ", VACUOUS" : "");
    const uint64_t ref_nonfinite = m->ref_posinf + m->ref_neginf + m->ref_nan;
    if (m->vacuous && ref_nonfinite)
        /* the nonfinite gate still checked the reference's inf/nan positions (a masked row) */
        fprintf(f, "    vacuous: no finite reference value exceeds its own tolerance, so the value "
                   "gates could not show a difference; only the %" PRIu64 " inf/nan positions "
                   "were checked\n",
                ref_nonfinite);
    else if (m->vacuous)
        fprintf(f, "    vacuous: no finite reference value exceeds its own tolerance (or nothing "
                   "was compared): this output could not show a difference\n");
    gate_table(f, m, tol);
    if (tol && tol->source[0]) fprintf(f, "    bounds from: %.*s\n", (int)sizeof tol->source,
                                       tol->source);
    /* The element the failure is at comes first, with the localization: the worst element,
     * or the first inf/nan mismatch when only that gate fails. */
    const int nonfinite_first = attest_rep_nonfinite_first(m);
    if (nonfinite_first) nonfinite_detail(f, rec, kernel, m, c, kept, 1);
    if (m->worst.rank > 0) {
        char coord[200], d[32], rel[32];
        attest_coord_string(kernel, m->output, &m->worst, coord, sizeof coord);
        double diff = fabs(m->worst_cand - m->worst_ref);
        attest_rep_num(diff, d, sizeof d);
        attest_rep_num(m->worst_ref != 0 ? diff / fabs(m->worst_ref) : INFINITY, rel, sizeof rel);
        char tol_s[32], ratio_s[32];
        attest_rep_num(m->worst_tol, tol_s, sizeof tol_s);
        attest_rep_num(m->worst_ratio, ratio_s, sizeof ratio_s);
        fprintf(f, "    worst %s %s (largest error / tolerance%s): reference %.9g, candidate "
                   "%.9g (|diff| %s, rel %s; tolerance %s, ratio %s)\n",
                nonfinite_first ? "finite element" : "element", coord,
                nonfinite_first ? "; the gates of finite pairs pass" : "", m->worst_ref,
                m->worst_cand, d, rel, tol_s, ratio_s);
        element(f, kernel, m, &m->worst, c);
        if (c && kernel == ATTEST_KERNEL_INDEXER && !strcmp(m->output, "logits") &&
            m->worst_ratio > 1.0 && !nonfinite_first)
            indexer_explain(f, c, m, &m->worst);
        if (c && kernel == ATTEST_KERNEL_MLA_DECODE && m->failed_gates && !nonfinite_first) {
            size_t bytes;
            const void *out = kept_out(rec, kept, &bytes);
            attest_report_mla_locate(f, c, &m->worst, out, bytes);
        }
    }
    if (!nonfinite_first && m->nonfinite_mismatches && m->first_nonfinite_mismatch.rank > 0)
        nonfinite_detail(f, rec, kernel, m, c, kept, m->worst.rank == 0);
}

void attest_report_case_detail(FILE *f, const attest_case_record *rec, const attest_case *c,
                               const attest_tolerance *tol)
{
    attest_report_case_detail_outputs(f, rec, c, tol, NULL);
}

void attest_report_case_detail_outputs(FILE *f, const attest_case_record *rec,
                                       const attest_case *c, const attest_tolerance *tol,
                                       const attest_case_outputs *kept)
{
    fputs("case ", f);
    attest_rep_headline(f, rec);
    fprintf(f, "\n  seed 0x%016" PRIx64 ", %d run%s\n", rec->seed, (int)rec->reruns,
            rec->reruns == 1 ? "" : "s");
    fprintf(f, "  params: %.*s\n", (int)sizeof rec->params, rec->params);
    if (rec->message[0]) fprintf(f, "  message: %.*s\n", (int)sizeof rec->message, rec->message);
    if (rec->integrity_flags) {
        static const char *const names[] = {"canary changed (out-of-bounds write)",
                                            "input modified", "re-runs differ bitwise",
                                            "candidate returned an error"};
        fputs("  integrity:", f);
        const char *sep = " ";
        for (unsigned b = 0; b < 32; b++) {
            if (!(rec->integrity_flags & (1u << b))) continue;
            if (b < 4) fprintf(f, "%s%s", sep, names[b]);
            else fprintf(f, "%sbit %u", sep, b);
            sep = "; ";
        }
        fputc('\n', f);
    }
    int n = rec->num_outputs < 0 ? 0 : rec->num_outputs;
    if (n > ATTEST_RECORD_MAX_OUTPUTS) n = ATTEST_RECORD_MAX_OUTPUTS;
    if (n == 0) fprintf(f, "  no output was compared\n");
    for (int k = 0; k < n; k++) output_detail(f, rec, k, c, tol ? &tol[k] : NULL, kept);
    fprintf(f, "  time: generate %.3f s, reference %.3f s, candidate %.3f s, compare %.3f s\n",
            rec->gen_seconds, rec->ref_seconds, rec->run_seconds, rec->compare_seconds);
}
