/* attest check: comparing a candidate's outputs with the expected outputs a fixture stores
 * (check.h). The stored tensor takes the reference's place in the comparator, so every gate of
 * the policy applies unchanged; only the conventions need care, because the stored outputs
 * follow the case file's attributes while the candidate follows its own declaration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/compare.h"
#include "attest/judge.h"
#include "attest/runner.h"
#include "check.h"

static void where_prefix(char *buf, size_t cap, const char *path, const char *group)
{
    int root = !group || !*group || !strcmp(group, "/");
    snprintf(buf, cap, "%s: %s%s", path, root ? "" : group, root ? "" : "/");
}

static void shape_string(const int64_t *shape, int32_t rank, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

attest_status check_expected_load(const char *path, const char *group, const attest_case *c,
                                  check_expected *out)
{
    memset(out, 0, sizeof *out);
    char where[600];
    where_prefix(where, sizeof where, path, group);
    int32_t k = 0;
    attest_status st = ATTEST_OK;
    for (size_t i = 0; i < c->num_tensors && st == ATTEST_OK; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        if (k >= ATTEST_RECORD_MAX_OUTPUTS) break;
        attest_stored_tensor *s = &out->tensors[out->count];
        st = attest_casefile_load_output(path, group, t->name, s);
        if (st == ATTEST_ERR_NOT_FOUND) {
            attest_clear_error();
            st = ATTEST_OK;
            k++;
            continue;
        }
        if (st != ATTEST_OK) break;
        out->output_index[out->count++] = k++;
        if (s->dtype != ATTEST_DTYPE_F32 && s->dtype != ATTEST_DTYPE_BF16 &&
            s->dtype != ATTEST_DTYPE_F64) {
            st = attest_fail(ATTEST_ERR_FORMAT,
                             "%s%s: expected output of dtype %s; stored outputs are float32, "
                             "bf16 (uint16) or float64",
                             where, t->name, attest_dtype_name(s->dtype));
        } else if (!attest_stored_tensor_matches(s, t)) {
            char got[96], want[96];
            shape_string(s->shape, s->rank, got, sizeof got);
            shape_string(t->shape, t->rank, want, sizeof want);
            st = attest_fail(ATTEST_ERR_FORMAT,
                             "%s%s: expected output of shape %s, the case's %s is %s", where,
                             t->name, got, t->name, want);
        }
    }
    if (st != ATTEST_OK) check_expected_free(out);
    return st;
}

void check_expected_free(check_expected *e)
{
    for (int32_t i = 0; i < e->count && i < ATTEST_RECORD_MAX_OUTPUTS; i++)
        attest_stored_tensor_free(&e->tensors[i]);
    memset(e, 0, sizeof *e);
}

static const attest_tensor *output_tensor(const attest_case *c, int32_t k)
{
    for (size_t i = 0; i < c->num_tensors; i++)
        if (c->tensors[i].role == ATTEST_ROLE_OUTPUT && k-- == 0) return &c->tensors[i];
    return NULL;
}

/* log(exp(a) + exp(b)) in double; +inf absorbs, -inf is the identity, NaN propagates. */
static double logaddexp(double a, double b)
{
    if (isnan(a) || isnan(b)) return a + b;
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    if (a == INFINITY || b == INFINITY) return INFINITY;
    double m = a > b ? a : b;
    return m + log1p(exp(-fabs(a - b)));
}

static void add_note(char *notes, size_t cap, const char *text)
{
    if (!notes || cap == 0) return;
    size_t n = strlen(notes);
    if (n + 1 < cap) snprintf(notes + n, cap - n, "%s%s", n ? "; " : "", text);
}

/* Judges one stored output (attest_judge_output), after making the lse conventions agree: when
 * the stored lse and the candidate's differ on the sink, it is added to the side without it. */
static attest_status compare_one(const attest_case *c, const attest_tensor *t,
                                 const attest_stored_tensor *s, const double *bound,
                                 const void *cand, const attest_conventions *cc,
                                 const attest_policy *policy, attest_tensor_metrics *m,
                                 char *notes, size_t notes_cap)
{
    const size_t n = attest_tensor_count(t);
    double *ref = malloc((n ? n : 1) * sizeof *ref);
    float *conv = NULL;
    ATTEST_RETURN_IF(!ref, ATTEST_ERR_OUT_OF_MEMORY, "%s: %zu stored values", t->name, n);
    attest_status st = attest_stored_tensor_to_f64(s, ref);
    const void *cand_bits = cand;
    if (st == ATTEST_OK && c->kernel == ATTEST_KERNEL_INDEXER && !strcmp(t->name, "logits")) {
        const attest_masking file_m = c->params.indexer.masking;
        if (file_m != ATTEST_MASK_UNSPECIFIED && cc->masking != file_m) {
            char note[200];
            snprintf(note, sizeof note,
                     "logits past row lengths not compared (fixture masking %s, candidate %s)",
                     attest_masking_name(file_m), attest_masking_name(cc->masking));
            add_note(notes, notes_cap, note);
        }
    }
    if (st == ATTEST_OK && c->kernel == ATTEST_KERNEL_MLA_DECODE && !strcmp(t->name, "lse") &&
        c->params.mla.has_sink && cc->lse_convention != c->params.mla.lse_convention) {
        /* Adding the sink is well conditioned (d logaddexp(x, s)/dx <= 1); removing it is not,
         * so whichever side excludes the sink gets it added. */
        const attest_tensor *sink_t = attest_case_tensor_const(c, "attn_sink");
        const float *sink = sink_t ? sink_t->data : NULL;
        const size_t h_q = (size_t)c->params.mla.h_q;
        if (!sink) st = attest_fail(ATTEST_ERR_FORMAT, "case has has_sink but no attn_sink");
        if (st == ATTEST_OK && c->params.mla.lse_convention == ATTEST_LSE_EXCLUDES_SINK) {
            for (size_t i = 0; i < n; i++) ref[i] = logaddexp(ref[i], (double)sink[i % h_q]);
            add_note(notes, notes_cap, "lse: sink added to the stored lse (fixture "
                                       "excludes_sink, candidate includes_sink)");
        } else if (st == ATTEST_OK) {
            conv = malloc((n ? n : 1) * sizeof *conv);
            if (!conv) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "lse: %zu values", n);
            const float *cl = cand;
            for (size_t i = 0; conv && i < n; i++)
                conv[i] = (float)logaddexp((double)cl[i], (double)sink[i % h_q]);
            cand_bits = conv;
            add_note(notes, notes_cap, "lse: sink added to the candidate's lse (fixture "
                                       "includes_sink, candidate excludes_sink)");
        }
    }
    /* The stored outputs are one correct evaluation rounded to their dtype (exact when float64). */
    const attest_judge_expected exp = {ref, s->dtype, bound};
    if (st == ATTEST_OK)
        st = attest_judge_output(c, t, &exp, cand_bits, cc->masking, policy, NULL, m);
    free(ref);
    free(conv);
    return st;
}

/* Returns 1 when output `name` cannot be compared with the stored one at all, because the
 * fixture and the candidate follow different conventions that change which values are right
 * (a NaN key's logit, a lonely query's lse, every row after a -1), and says so in note. */
static int convention_gap(const attest_case *c, const attest_conventions *cc, const char *name,
                          char *note, size_t cap)
{
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        const attest_relu_nan f = c->params.indexer.relu_nan;
        if (f == cc->relu_nan) return 0;
        snprintf(note, cap, "%s not compared (fixture relu_nan %s, candidate %s)", name,
                 attest_relu_nan_name(f), attest_relu_nan_name(cc->relu_nan));
        return 1;
    }
    const attest_mla_params *p = &c->params.mla;
    if (p->invalid_index != cc->invalid_index) {
        snprintf(note, cap, "%s not compared (fixture minus_one %s, candidate %s)", name,
                 attest_invalid_index_name(p->invalid_index),
                 attest_invalid_index_name(cc->invalid_index));
        return 1;
    }
    if (!strcmp(name, "lse") && p->lonely_lse != cc->lonely_lse) {
        snprintf(note, cap, "lse not compared (fixture lonely_lse %s, candidate %s)",
                 attest_lonely_lse_name(p->lonely_lse), attest_lonely_lse_name(cc->lonely_lse));
        return 1;
    }
    return 0;
}

attest_status check_compare_stored(const attest_case *c, const check_expected *e,
                                   void *const *cand, double *const *bounds,
                                   const attest_conventions *cand_conv,
                                   const attest_policy *policy, attest_tensor_metrics *metrics,
                                   uint32_t *failed_gates, char *notes, size_t notes_cap)
{
    *failed_gates = 0;
    if (notes && notes_cap) notes[0] = '\0';
    for (int32_t j = 0; j < e->count; j++) {
        const int32_t k = e->output_index[j];
        const attest_tensor *t = output_tensor(c, k);
        ATTEST_RETURN_IF(!t || !cand[k], ATTEST_ERR_INTERNAL,
                         "stored output %d has no candidate output to compare", (int)k);
        memset(&metrics[j], 0, sizeof metrics[j]);
        char gap[160];
        if (cand_conv && convention_gap(c, cand_conv, t->name, gap, sizeof gap)) {
            snprintf(metrics[j].output, sizeof metrics[j].output, "%s", t->name);
            add_note(notes, notes_cap, gap);
            continue;
        }
        /* The bounds of the reference computation bound a correct kernel's distance from the
         * exact result, which the stored outputs stand for. */
        ATTEST_FORWARD(compare_one(c, t, &e->tensors[j], bounds ? bounds[k] : NULL, cand[k],
                                   cand_conv, policy, &metrics[j], notes, notes_cap));
        *failed_gates |= metrics[j].failed_gates;
    }
    return ATTEST_OK;
}

/* The verdict a row judged against stored outputs gets: what the runner found about the run
 * itself (crash, out-of-bounds write, nondeterminism, an error return) stands; a mismatch with
 * the reference does not, the stored gates decide instead. */
attest_verdict check_stored_verdict(const attest_case_record *ref, uint32_t stored_gates)
{
    if (ref->verdict != ATTEST_VERDICT_OK && ref->verdict != ATTEST_VERDICT_MISMATCH)
        return ref->verdict;
    if (ref->integrity_flags & ATTEST_INTEGRITY_CANDIDATE_ERROR) return ATTEST_VERDICT_MISMATCH;
    return stored_gates ? ATTEST_VERDICT_MISMATCH : ATTEST_VERDICT_OK;
}
