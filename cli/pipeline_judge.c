/* The DSA chain judged seam by seam (pipeline_judge.h). */
#include "pipeline_judge.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/compare.h"
#include "attest/conventions.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/reference_topk.h"
#include "attest/verdict.h"
#include "topk_run.h"

const char *pipe_seam_name(pipe_seam s)
{
    switch (s) {
    case PIPE_SEAM_NONE: return "none";
    case PIPE_SEAM_INDEXER: return "indexer";
    case PIPE_SEAM_TOPK: return "topk";
    case PIPE_SEAM_DECODE: return "decode";
    case PIPE_SEAM_END_TO_END: return "end-to-end";
    }
    return "none";
}

attest_status pipe_stages_open(pipe_stages *s, double timeout, int isolate)
{
    attest_runner_options ro = attest_runner_defaults();
    ro.reference = attest_ref_simulated;
    ro.policy = s->policy;
    ro.timeout_seconds = timeout;
    ro.isolate = isolate;
    s->topk_run = attest_topk_run_defaults();
    s->topk_run.isolate = isolate;
    s->topk_run.timeout_seconds = timeout;
    if (s->indexer) ATTEST_FORWARD(attest_runner_create(s->indexer, &ro, &s->runner[0]));
    if (s->decode) ATTEST_FORWARD(attest_runner_create(s->decode, &ro, &s->runner[1]));
    return ATTEST_OK;
}

void pipe_stages_close(pipe_stages *s)
{
    for (int i = 0; i < 2; i++) {
        if (s->runner[i]) attest_runner_destroy(s->runner[i]);
        s->runner[i] = NULL;
    }
}

/* The chain's working buffers for one case. */
typedef struct chain {
    int32_t rows, width, k, next_n;
    float *logits;     /* [rows, width] what the top-k stage reads */
    double *ref;       /* [rows, width] reference logits */
    double *bound;     /* [rows, width] their bounds (0 where none) */
    int32_t *idx;      /* [rows, k] the selection, logical (-1 padding) */
    int32_t *phys;     /* [rows, k] the same, physical */
    int32_t *ref_idx;  /* [rows, k] the reference chain's selection */
    int32_t *ref_phys;
    uint8_t *seen;     /* [width] scratch */
} chain;

static void chain_free(chain *ch)
{
    free(ch->logits);
    free(ch->ref);
    free(ch->bound);
    free(ch->idx);
    free(ch->phys);
    free(ch->ref_idx);
    free(ch->ref_phys);
    free(ch->seen);
}

static attest_status chain_alloc(chain *ch, const attest_pipeline_case *pc)
{
    const attest_indexer_params *x = &pc->indexer.params.indexer;
    memset(ch, 0, sizeof *ch);
    ch->rows = x->b * x->next_n;
    ch->width = x->max_len;
    ch->k = pc->k;
    ch->next_n = x->next_n;
    const size_t nl = (size_t)ch->rows * ch->width + 1, ns = (size_t)ch->rows * ch->k + 1;
    ch->logits = malloc(nl * sizeof *ch->logits);
    ch->ref = malloc(nl * sizeof *ch->ref);
    ch->bound = calloc(nl, sizeof *ch->bound);
    ch->idx = malloc(ns * sizeof *ch->idx);
    ch->phys = malloc(ns * sizeof *ch->phys);
    ch->ref_idx = malloc(ns * sizeof *ch->ref_idx);
    ch->ref_phys = malloc(ns * sizeof *ch->ref_phys);
    ch->seen = calloc((size_t)ch->width + 1, 1);
    if (!ch->logits || !ch->ref || !ch->bound || !ch->idx || !ch->phys || !ch->ref_idx ||
        !ch->ref_phys || !ch->seen) {
        chain_free(ch);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "pipeline: out of memory");
    }
    return ATTEST_OK;
}

static const int32_t *tensor_i32(const attest_case *c, const char *name)
{
    const attest_tensor *t = attest_case_tensor_const(c, name);
    return t ? t->data : NULL;
}

static void mark_failed(pipe_result *r, pipe_seam s)
{
    r->failed |= 1u << s;
    if (r->broke == PIPE_SEAM_NONE) r->broke = s;
}

/* "request 1, row 3 (MTP slot 1)" */
static void where_row(const chain *ch, int32_t row, char *buf, size_t cap)
{
    snprintf(buf, cap, "request %d, row %d (MTP slot %d)", row / ch->next_n, row,
             row % ch->next_n);
}

static void coords(const attest_coord *c, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int32_t d = 0; d < c->rank && d < 4 && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? "," : "", c->index[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* One line on a failing stage record: its verdict, gates and worst element. `names` labels the
 * coordinates of each output ("row,t" / "request,query,head,dim"). */
static void record_detail(const attest_case_record *rec, char *buf, size_t cap)
{
    char gates[96];
    attest_gate_mask_string(rec->failed_gates, gates, sizeof gates);
    size_t n = (size_t)snprintf(buf, cap, "%s%s%s", attest_verdict_name(rec->verdict),
                                gates[0] ? " " : "", gates);
    for (int32_t k = 0; k < rec->num_outputs && n < cap; k++) {
        const attest_tensor_metrics *m = &rec->outputs[k];
        if (!m->failed_gates) continue;
        char at[64];
        coords(&m->worst, at, sizeof at);
        if (m->element_failures > 0)
            n += (size_t)snprintf(buf + n, cap - n,
                                  "; %s: %" PRIu64 " elements over their bound, worst %s%s ref "
                                  "%.9g cand %.9g (%.3g x its bound)",
                                  m->output, m->element_failures, m->output, at, m->worst_ref,
                                  m->worst_cand, m->worst_ratio);
        else if (m->nonfinite_mismatches > 0) {
            coords(&m->first_nonfinite_mismatch, at, sizeof at);
            n += (size_t)snprintf(buf + n, cap - n, "; %s: %" PRIu64 " inf/nan mismatches, first %s%s",
                                  m->output, m->nonfinite_mismatches, m->output, at);
        }
        break; /* the first failing output names the place */
    }
    /* The message of a crash, a timeout or an integrity finding; a mismatch's says the above. */
    if (rec->verdict != ATTEST_VERDICT_MISMATCH && rec->message[0] && n < cap)
        snprintf(buf + n, cap - n, " (%s)", rec->message);
}

/* Stage 1: the logits the top-k reads, the reference's and their bounds. Returns 0 in *have
 * when the indexer left no logits (a crash, a timeout). */
static attest_status stage_indexer(pipe_stages *s, attest_pipeline_case *pc, chain *ch,
                                   pipe_result *r, int *have)
{
    const size_t n = (size_t)ch->rows * ch->width;
    *have = 0;
    if (!s->indexer) {
        double *outs[1] = {ch->ref};
        ATTEST_FORWARD(attest_ref_compute(&pc->indexer, ATTEST_REF_SIMULATED, outs));
        for (size_t i = 0; i < n; i++) ch->logits[i] = (float)ch->ref[i];
        r->indexer.verdict = ATTEST_VERDICT_OK;
        *have = 1;
        return ATTEST_OK;
    }
    attest_case_outputs keep;
    memset(&keep, 0, sizeof keep);
    ATTEST_FORWARD(attest_runner_judge(s->runner[0], &pc->indexer, &r->indexer, &keep));
    if (keep.num_outputs > 0 && keep.candidate[0] && keep.reference[0] &&
        keep.candidate_bytes[0] == n * sizeof(float)) {
        memcpy(ch->logits, keep.candidate[0], n * sizeof(float));
        memcpy(ch->ref, keep.reference[0], n * sizeof(double));
        if (keep.bound[0]) memcpy(ch->bound, keep.bound[0], n * sizeof(double));
        *have = 1;
    }
    attest_case_outputs_free(&keep);
    if (r->indexer.verdict != ATTEST_VERDICT_OK) {
        mark_failed(r, PIPE_SEAM_INDEXER);
        char d[320], at[96] = "";
        record_detail(&r->indexer, d, sizeof d);
        const attest_tensor_metrics *m = &r->indexer.outputs[0];
        const attest_coord *c = m->element_failures > 0 ? &m->worst : &m->first_nonfinite_mismatch;
        if (r->indexer.num_outputs > 0 && m->failed_gates && c->rank == 2) {
            char w[64];
            where_row(ch, (int32_t)c->index[0], w, sizeof w);
            snprintf(at, sizeof at, "%s, position %" PRId64 ": ", w, c->index[1]);
        }
        snprintf(r->detail[0], sizeof r->detail[0], "%s%s", at, d);
    }
    return ATTEST_OK;
}

/* The logical position of physical token `phys` in request b, or -2 when no block of the
 * request holds it. Only the blocks the request uses count: past them a row holds -1 or stale
 * ids of other requests' blocks. */
static int32_t logical_of(const attest_indexer_params *x, const int32_t *table,
                          const int32_t *lens, int32_t b, int32_t phys)
{
    if (phys < 0) return phys == -1 ? -1 : -2;
    const int32_t len = lens[b] < x->max_len ? lens[b] : x->max_len;
    const int32_t used = (len + 63) / 64 < x->blocks_per_req ? (len + 63) / 64 : x->blocks_per_req;
    for (int32_t j = 0; j < used; j++)
        if (table[(size_t)b * x->blocks_per_req + j] == phys / 64) return j * 64 + phys % 64;
    return -2;
}

/* Stage 2: the selection, logical and physical, judged on the logits it was given. *valid is 0
 * when a physical index lies outside the pool (the decode cannot read it). */
static attest_status stage_topk(pipe_stages *s, attest_pipeline_case *pc, chain *ch,
                                pipe_result *r, int *valid)
{
    const attest_indexer_params *x = &pc->indexer.params.indexer;
    const int32_t *lens = tensor_i32(&pc->indexer, "context_lens");
    const int32_t *table = tensor_i32(&pc->indexer, "block_table");
    attest_topk_case tc;
    memset(&tc, 0, sizeof tc);
    tc.seed = pc->seed;
    tc.p.b = x->b;
    tc.p.next_n = x->next_n;
    tc.p.width = x->max_len;
    tc.p.k = ch->k;
    tc.p.blocks_per_req = x->blocks_per_req;
    tc.p.num_blocks = x->num_blocks;
    tc.logits = ch->logits;
    tc.context_lens = (int32_t *)lens; /* borrowed: tc is never freed */
    tc.block_table = (int32_t *)table;
    const size_t ns = (size_t)ch->rows * ch->k;
    memset(&r->topk, 0, sizeof r->topk);
    r->topk.first_row = r->topk.first_slot = -1;
    r->topk.worst_recall = 1.0;
    uint32_t outs = ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL;
    if (!s->topk) {
        ATTEST_FORWARD(attest_ref_topk_case(&tc, ATTEST_TOPK_BY_SCORE, ch->idx, ch->phys));
    } else {
        outs = s->topk->outputs;
        ATTEST_FORWARD(
            attest_topk_run_candidate(s->topk, &tc, &s->topk_run, &r->topk, ch->idx, ch->phys));
    }
    /* The output a candidate does not write, from the one it does. */
    for (int32_t row = 0; row < ch->rows; row++) {
        const int32_t b = row / ch->next_n;
        int32_t *li = ch->idx + (size_t)row * ch->k, *pi = ch->phys + (size_t)row * ch->k;
        for (int32_t j = 0; j < ch->k; j++) {
            if (!(outs & ATTEST_TOPK_OUT_PHYSICAL))
                pi[j] = li[j] < 0 ? (li[j] == -1 ? -1 : -2)
                        : li[j] / 64 < x->blocks_per_req
                            ? table[(size_t)b * x->blocks_per_req + li[j] / 64] * 64 + li[j] % 64
                            : -2;
            if (!(outs & ATTEST_TOPK_OUT_LOGICAL)) li[j] = logical_of(x, table, lens, b, pi[j]);
        }
    }
    *valid = 1;
    const int64_t pool = (int64_t)x->num_blocks * 64;
    for (size_t i = 0; i < ns; i++)
        if (ch->phys[i] < -1 || ch->phys[i] >= pool) *valid = 0;
    (void)lens;
    if (r->topk.failed) {
        mark_failed(r, PIPE_SEAM_TOPK);
        char checks[160], w[64] = "";
        attest_topk_check_mask_string(r->topk.failed, checks, sizeof checks);
        if (r->topk.first_row >= 0) where_row(ch, r->topk.first_row, w, sizeof w);
        /* The judge's detail starts with the check's name, which the line already gives. */
        const char *d = r->topk.detail, *colon = strstr(d, ": ");
        if (colon && (size_t)(colon - d) < 16 && strncmp(checks, d, (size_t)(colon - d)) == 0)
            d = colon + 2;
        if (w[0])
            snprintf(r->detail[1], sizeof r->detail[1], "%s, slot %d: %s; %s (%d rows fail)", w,
                     r->topk.first_slot, checks, d, r->topk.rows_failed);
        else
            snprintf(r->detail[1], sizeof r->detail[1], "%s; %s", checks, d);
    }
    return ATTEST_OK;
}

/* The selection against the reference chain's: equal, different within ties (the indexer's
 * bounds on both sides, and the float32 rounding the top-k saw), or beyond. */
/* The indexer seam's tolerance of one logit (reference r, bound B), as the element gate applies
 * it under the policy: two logits a correct indexer returns can swap order when their reference
 * values are within the sum of their tolerances. */
static double logit_tolerance(const attest_tolerance *tol, double atol_eff, double r, double B)
{
    if (tol->bound_factor >= 0) {
        const double bb = tol->bound_factor * B;
        return bb + attest_rounding_error(ATTEST_DTYPE_F32, fabs(r) + bb);
    }
    return atol_eff + tol->rtol * fabs(r);
}

static attest_status compare_selection(const pipe_stages *s, attest_pipeline_case *pc, chain *ch,
                                       attest_topk_rule rule, pipe_result *r)
{
    attest_tolerance tol;
    if (attest_policy_lookup(s->policy, ATTEST_KERNEL_INDEXER, "logits", &tol) != ATTEST_OK) {
        /* No entry: the computed bound as the default policy applies it. */
        attest_clear_error();
        memset(&tol, 0, sizeof tol);
        tol.bound_factor = 1;
    }
    double max_ref = 0;
    for (size_t i = 0; i < (size_t)ch->rows * ch->width; i++)
        if (isfinite(ch->ref[i]) && fabs(ch->ref[i]) > max_ref) max_ref = fabs(ch->ref[i]);
    const double atol_eff = tol.atol > tol.atol_ref_scale * max_ref ? tol.atol
                                                                    : tol.atol_ref_scale * max_ref;
    const attest_indexer_params *x = &pc->indexer.params.indexer;
    const int32_t *lens = tensor_i32(&pc->indexer, "context_lens");
    const int32_t *table = tensor_i32(&pc->indexer, "block_table");
    r->rows = ch->rows;
    r->first_beyond_row = -1;
    r->beyond_recall = 1.0;
    for (int32_t row = 0; row < ch->rows; row++) {
        const int32_t len = attest_indexer_row_length(x, lens, row);
        const double *rs = ch->ref + (size_t)row * ch->width;
        int32_t *ref_set = ch->ref_idx + (size_t)row * ch->k;
        const int32_t *cand = ch->idx + (size_t)row * ch->k;
        ATTEST_FORWARD(attest_ref_topk_row_skip_neg_inf(rs, len, ch->k, rule, ref_set));
        ATTEST_FORWARD(attest_topk_to_physical(table, x->blocks_per_req, row / ch->next_n, ref_set,
                                               ch->k, ch->ref_phys + (size_t)row * ch->k));
        /* As sets: every reference position chosen, and as many chosen. */
        int32_t nr = 0, nc = 0, common = 0;
        for (int32_t j = 0; j < ch->k; j++)
            if (ref_set[j] >= 0 && ref_set[j] < ch->width) {
                ch->seen[ref_set[j]] = 1;
                nr++;
            }
        for (int32_t j = 0; j < ch->k; j++) {
            if (cand[j] == -1) continue;
            nc++;
            if (cand[j] >= 0 && cand[j] < ch->width && ch->seen[cand[j]] == 1) {
                ch->seen[cand[j]] = 2;
                common++;
            }
        }
        for (int32_t j = 0; j < ch->k; j++)
            if (ref_set[j] >= 0 && ref_set[j] < ch->width) ch->seen[ref_set[j]] = 0;
        if (nr == nc && common == nr) {
            r->rows_equal++;
            continue;
        }
        double band = 0;
        for (int32_t t = 0; t < len; t++) {
            const double bt = ch->bound[(size_t)row * ch->width + t];
            if (!isfinite(rs[t])) continue;
            const double e = logit_tolerance(&tol, atol_eff, rs[t], isfinite(bt) ? bt : 0);
            if (e > band) band = e;
        }
        band *= 2; /* both sides of a swap */
        double recall = 0;
        if (attest_compare_topk_row(rs, len, cand, ref_set, ch->k, band, 0.0, &recall) != ATTEST_OK) {
            attest_clear_error(); /* a position out of range or twice: the top-k seam says which */
            recall = 0;
        }
        if (recall >= 1.0 && nr == nc) {
            r->rows_ties++;
        } else {
            if (r->rows_beyond++ == 0) {
                r->first_beyond_row = row;
                r->beyond_recall = recall;
            }
        }
    }
    return ATTEST_OK;
}

/* Stage 3: the decode over the selection's physical indices. */
static attest_status stage_decode(pipe_stages *s, attest_pipeline_case *pc, chain *ch,
                                  pipe_result *r)
{
    attest_tensor *t = attest_case_tensor(&pc->decode, "indices");
    memcpy(t->data, ch->phys, (size_t)ch->rows * ch->k * sizeof(int32_t));
    r->decode_ran = 1;
    if (!s->decode) {
        r->decode.verdict = ATTEST_VERDICT_OK;
        return ATTEST_OK;
    }
    ATTEST_FORWARD(attest_runner_judge(s->runner[1], &pc->decode, &r->decode, NULL));
    if (r->decode.verdict != ATTEST_VERDICT_OK) {
        mark_failed(r, PIPE_SEAM_DECODE);
        char d[320], at[96] = "";
        record_detail(&r->decode, d, sizeof d);
        for (int32_t k = 0; k < r->decode.num_outputs; k++) {
            const attest_tensor_metrics *m = &r->decode.outputs[k];
            if (!m->failed_gates) continue;
            const attest_coord *c = m->element_failures > 0 ? &m->worst : &m->first_nonfinite_mismatch;
            if (c->rank >= 3)
                snprintf(at, sizeof at, "request %" PRId64 ", query %" PRId64 " (row %" PRId64
                         "), head %" PRId64 ": ",
                         c->index[0], c->index[1], c->index[0] * ch->next_n + c->index[1],
                         c->index[2]);
            break;
        }
        snprintf(r->detail[2], sizeof r->detail[2], "%s%s", at, d);
    }
    return ATTEST_OK;
}

/* The decode output difference the selection alone causes: the reference decode over the
 * chain's selection against the reference decode over the reference chain's. */
static attest_status selection_effect(pipe_stages *s, attest_pipeline_case *pc, chain *ch,
                                      pipe_result *r)
{
    attest_case view = pc->decode;
    if (s->decode) attest_conventions_apply(&s->decode->conventions, &view);
    const attest_mla_params *m = &view.params.mla;
    const size_t nl = (size_t)m->b * m->s_q * m->h_q, no = nl * (size_t)m->d_v;
    double *o1 = malloc((no + 1) * sizeof *o1), *o2 = malloc((no + 1) * sizeof *o2);
    double *l1 = malloc((nl + 1) * sizeof *l1), *l2 = malloc((nl + 1) * sizeof *l2);
    attest_status st = o1 && o2 && l1 && l2 ? ATTEST_OK
                                            : attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "pipeline");
    attest_tensor *t = attest_case_tensor(&view, "indices");
    if (st == ATTEST_OK) st = attest_ref_mla_decode(&view, ATTEST_REF_SIMULATED, o1, l1);
    if (st == ATTEST_OK) {
        memcpy(t->data, ch->ref_phys, (size_t)ch->rows * ch->k * sizeof(int32_t));
        st = attest_ref_mla_decode(&view, ATTEST_REF_SIMULATED, o2, l2);
        memcpy(t->data, ch->phys, (size_t)ch->rows * ch->k * sizeof(int32_t));
    }
    if (st == ATTEST_OK) {
        for (size_t i = 0; i < no; i++) {
            const double d = fabs(o1[i] - o2[i]);
            if (isfinite(d) && d > r->e2e_out_max) {
                r->e2e_out_max = d;
                const size_t q = i / (size_t)m->d_v;
                r->e2e_at[0] = (int32_t)(q / ((size_t)m->s_q * m->h_q));
                r->e2e_at[1] = (int32_t)(q / (size_t)m->h_q % (size_t)m->s_q);
                r->e2e_at[2] = (int32_t)(q % (size_t)m->h_q);
            }
        }
        for (size_t i = 0; i < nl; i++) {
            const double d = fabs(l1[i] - l2[i]);
            if (isfinite(d) && d > r->e2e_lse_max) r->e2e_lse_max = d;
        }
    }
    free(o1);
    free(o2);
    free(l1);
    free(l2);
    return st;
}

attest_status pipe_judge(pipe_stages *s, attest_pipeline_case *pc, pipe_result *r)
{
    ATTEST_RETURN_IF(s == NULL || pc == NULL || r == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "pipeline judge: NULL argument");
    memset(r, 0, sizeof *r);
    ATTEST_FORWARD(attest_pipeline_check(pc));
    chain ch;
    ATTEST_FORWARD(chain_alloc(&ch, pc));
    int have = 0, valid = 0;
    attest_status st = stage_indexer(s, pc, &ch, r, &have);
    if (st == ATTEST_OK && !have)
        snprintf(r->detail[1], sizeof r->detail[1], "not run: the indexer left no logits");
    if (st == ATTEST_OK && have) st = stage_topk(s, pc, &ch, r, &valid);
    const attest_topk_rule rule = s->topk ? s->topk->rule : ATTEST_TOPK_BY_SCORE;
    if (st == ATTEST_OK && have) st = compare_selection(s, pc, &ch, rule, r);
    if (st == ATTEST_OK && have && !valid)
        snprintf(r->detail[2], sizeof r->detail[2],
                 "not run: the selection holds physical indices outside the pool");
    if (st == ATTEST_OK && have && valid) st = stage_decode(s, pc, &ch, r);
    if (st == ATTEST_OK && r->rows_ties > 0 && r->decode_ran) st = selection_effect(s, pc, &ch, r);
    if (st == ATTEST_OK && r->rows_beyond > 0) {
        char w[64];
        where_row(&ch, r->first_beyond_row, w, sizeof w);
        snprintf(r->detail[3], sizeof r->detail[3],
                 "the selection differs from the reference chain's beyond ties in %d of %d rows "
                 "(first: %s, recall %.4g)",
                 r->rows_beyond, r->rows, w, r->beyond_recall);
        if (r->failed == 0) mark_failed(r, PIPE_SEAM_END_TO_END);
    }
    chain_free(&ch);
    return st;
}
