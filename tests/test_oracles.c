/* The references reproduce every case of ../shared/oracles: outputs of FlashMLA's and DeepGEMM's
 * own reference functions. Each group is loaded through attest's own case loading
 * (attest_casefile_load), so the test also proves that an oracle group is a valid case file.
 *
 * Agreement required (oracle README, "Agreement to expect"; upstream computed in fp32):
 *   lse     identical +inf pattern, finite values within LSE_RTOL relative;
 *   out     within one bf16 step of the oracle plus OUT_CANCEL * max|out| (values near zero);
 *           exactly 0 where the query is lonely;
 *   logits  identical -inf pattern, within LOGIT_ROW_TOL of the row's largest magnitude, in both
 *           the kernel order and the README order;
 *   topk    the same set of 512 logical positions, except positions whose logit is within
 *           LOGIT_ROW_TOL of the 512th (ties are interchangeable, docs/kernels.md section 5).
 * The README says "about 1e-7" for lse and "about 2e-7" for logits; the gates leave a margin
 * above what is measured (printed per case) so that they catch a wrong formula, not fp32 noise.
 * Skips (77) when ATTEST_SHARED_DIR or the oracle files are missing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/case.h"
#include "attest/casefile.h"
#include "attest/compare.h"
#include "attest/numerics.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/runner.h"

#define LSE_RTOL 5e-7
#define OUT_CANCEL 1e-5
#define LOGIT_ROW_TOL 1e-6
#define ORACLE_TOPK 512

static char g_dir[4096];

static int oracle_path(const char *file, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s/oracles/%s", g_dir, file);
    return n > 0 && (size_t)n < cap;
}

/* Reads a stored output of the group as doubles (caller frees). */
static double *load_expected(const char *path, const char *group, const char *name, size_t count)
{
    attest_stored_tensor st;
    memset(&st, 0, sizeof st);
    attest_status s = attest_casefile_load_output(path, group, name, &st);
    if (s != ATTEST_OK) fail_msg("%s %s/%s: %s", path, group, name, attest_last_error());
    size_t n = 1;
    for (int32_t i = 0; i < st.rank; i++) n *= (size_t)st.shape[i];
    if (n != count) fail_msg("%s/%s holds %zu elements, expected %zu", group, name, n, count);
    double *v = malloc(n * sizeof *v);
    assert_non_null(v);
    assert_ok(attest_stored_tensor_to_f64(&st, v));
    attest_stored_tensor_free(&st);
    return v;
}

static double *alloc_output(const attest_case *c, const char *name, size_t *count)
{
    const attest_tensor *t = attest_case_tensor_const(c, name);
    assert_non_null(t);
    *count = attest_tensor_count(t);
    double *v = malloc((*count ? *count : 1) * sizeof *v);
    assert_non_null(v);
    return v;
}

/* The spacing of bf16 numbers at |x| (x itself a bf16 value). */
static double bf16_step(double x)
{
    x = fabs(x);
    if (x < 0x1p-126) return 0x1p-133;
    int e;
    (void)frexp(x, &e); /* x = m * 2^e, m in [0.5, 1) */
    return ldexp(1.0, e - 8);
}

/* ---- mla-decode ----------------------------------------------------------------------------- */

/* The oracle's own float32/bf16 outputs judged as a candidate under the default policy, with
 * the computed bounds (docs/policy.md): a correct float32 evaluation by another implementation
 * must pass. `values` are the stored outputs (exact in `dtype`); returns the worst ratio. */
static double judge_oracle_output(const attest_case *c, int k, const char *name,
                                  const double *values, size_t n, attest_dtype dtype)
{
    attest_policy *pol = NULL;
    assert_ok(attest_policy_default(&pol));
    attest_bound_model models[2];
    double *refs[2] = {NULL, NULL}, *bounds[2] = {NULL, NULL};
    int nout = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        attest_tolerance tol;
        assert_ok(attest_policy_lookup(pol, c->kernel, t->name, &tol));
        models[nout] = tol.model;
        refs[nout] = malloc(attest_tensor_count(t) * sizeof(double));
        bounds[nout] = malloc(attest_tensor_count(t) * sizeof(double));
        assert_true(refs[nout] && bounds[nout]);
        nout++;
    }
    assert_ok(attest_ref_bounds(c, models, refs, bounds));
    attest_tolerance tol;
    assert_ok(attest_policy_lookup(pol, c->kernel, name, &tol));
    void *cand = malloc(n * 4 + 4);
    assert_non_null(cand);
    for (size_t i = 0; i < n; i++) {
        if (dtype == ATTEST_DTYPE_BF16)
            ((uint16_t *)cand)[i] = attest_bf16_encode_f64(values[i]);
        else
            ((float *)cand)[i] = (float)values[i];
    }
    const attest_tensor *t = attest_case_tensor_const(c, name);
    assert_non_null(t);
    attest_tensor_metrics m;
    memset(&m, 0, sizeof m);
    /* Logits past a row's length follow the fixture's -inf masking, as the reference does. */
    assert_ok(attest_compare_tensor_bounded(refs[k], bounds[k], cand, dtype, n, t->shape,
                                            t->rank, NULL,
                                            dtype == ATTEST_DTYPE_BF16 ? ATTEST_POISON_BF16
                                                                       : ATTEST_POISON_F32,
                                            &tol, &m));
    if (m.failed_gates) {
        char g[96];
        attest_gate_mask_string(m.failed_gates, g, sizeof g);
        fail_msg("oracle %s as a candidate fails %s (worst ratio %.3g)", name, g, m.worst_ratio);
    }
    for (int i = 0; i < nout; i++) {
        free(refs[i]);
        free(bounds[i]);
    }
    free(cand);
    return m.worst_ratio;
}

static void check_mla_group(const char *path, const char *group)
{
    attest_case c;
    memset(&c, 0, sizeof c);
    attest_status st = attest_casefile_load(path, group, &c);
    if (st != ATTEST_OK) fail_msg("loading %s:%s: %s", path, group, attest_last_error());
    assert_int_equal(c.kernel, ATTEST_KERNEL_MLA_DECODE);
    size_t n_out, n_lse;
    double *out = alloc_output(&c, "out_bf16", &n_out);
    double *lse = alloc_output(&c, "lse", &n_lse);
    double *outs[2] = {out, lse};
    st = attest_ref_compute(&c, ATTEST_REF_SIMULATED, outs);
    if (st != ATTEST_OK) fail_msg("%s: reference failed: %s", group, attest_last_error());
    double *eout = load_expected(path, group, "out_bf16", n_out);
    double *exp_lse = load_expected(path, group, "lse", n_lse);
    const size_t dv = (size_t)c.params.mla.d_v;

    double lse_rel = 0.0, out_steps = 0.0, out_excess = 0.0, out_max = 0.0;
    size_t inf_rows = 0, bad = 0;
    for (size_t i = 0; i < n_out; i++) out_max = fmax(out_max, fabs(eout[i]));
    for (size_t r = 0; r < n_lse; r++) {
        const double *ro = out + r * dv, *eo = eout + r * dv;
        if (isinf(exp_lse[r]) || isinf(lse[r])) {
            inf_rows++;
            if (!(lse[r] == exp_lse[r])) bad++;
            for (size_t d = 0; d < dv; d++)
                if (ro[d] != 0.0 || eo[d] != 0.0) bad++;
            continue;
        }
        double rel = fabs(lse[r] - exp_lse[r]) / fmax(fabs(exp_lse[r]), 1e-30);
        lse_rel = fmax(lse_rel, rel);
        if (!(rel <= LSE_RTOL)) bad++;
        for (size_t d = 0; d < dv; d++) {
            double diff = fabs(ro[d] - eo[d]), step = bf16_step(eo[d]);
            out_steps = fmax(out_steps, diff / step);
            out_excess = fmax(out_excess, fmax(diff - step, 0.0));
            if (!(diff <= step + OUT_CANCEL * out_max)) bad++;
        }
    }
    printf("oracle %-22s lse max rel %.2e | out max |d|/bf16 step %.2f, beyond one step "
           "%.2e of max|out| | lonely rows %zu | %s\n",
           group, lse_rel, out_steps, out_max > 0 ? out_excess / out_max : 0.0, inf_rows,
           bad ? "MISMATCH" : "agrees");
    if (bad) fail_msg("%s: %zu elements outside the oracle agreement", group, bad);
    const double r_out = judge_oracle_output(&c, 0, "out_bf16", eout, n_out, ATTEST_DTYPE_BF16);
    const double r_lse = judge_oracle_output(&c, 1, "lse", exp_lse, n_lse, ATTEST_DTYPE_F32);
    printf("oracle %-22s as a candidate (default policy): pass, worst error/tolerance out %.3f, "
           "lse %.3f\n", group, r_out, r_lse);
    free(out);
    free(lse);
    free(eout);
    free(exp_lse);
    attest_case_free(&c);
}

/* ---- indexer -------------------------------------------------------------------------------- */

/* Largest logits deviation over the finite elements, relative to each row's largest magnitude;
 * counts pattern mismatches into *bad. */
static double logits_agreement(const attest_indexer_params *p, const double *ref,
                               const double *exp_, size_t *bad)
{
    double worst = 0.0;
    const size_t w = (size_t)p->max_len;
    for (size_t r = 0; r < (size_t)p->b * (size_t)p->next_n; r++) {
        double rowmax = 0.0;
        for (size_t t = 0; t < w; t++)
            if (isfinite(exp_[r * w + t])) rowmax = fmax(rowmax, fabs(exp_[r * w + t]));
        for (size_t t = 0; t < w; t++) {
            double a = ref[r * w + t], e = exp_[r * w + t];
            if (!isfinite(a) || !isfinite(e)) {
                if (!(a == e)) (*bad)++; /* NaN never matches, -inf must meet -inf */
                continue;
            }
            double dev = fabs(a - e) / fmax(rowmax, 1e-300);
            worst = fmax(worst, dev);
            if (!(dev <= LOGIT_ROW_TOL)) (*bad)++;
        }
    }
    return worst;
}

/* Compares the reference's top-512 of each row with the oracle's set; returns the number of
 * positions in the symmetric difference, counting into *bad those that are not ties. */
static size_t topk_agreement(const attest_case *c, const double *logits, const double *eset,
                             size_t *bad)
{
    const attest_indexer_params *p = &c->params.indexer;
    const attest_tensor *lens_t = attest_case_tensor_const(c, "context_lens");
    const int32_t *lens = lens_t->data;
    const size_t w = (size_t)p->max_len;
    size_t diffs = 0;
    int32_t idx[ORACLE_TOPK];
    for (int32_t r = 0; r < p->b * p->next_n; r++) {
        const double *row = logits + (size_t)r * w;
        int32_t len = attest_indexer_row_length(p, lens, r);
        assert_ok(
            attest_ref_topk_row_skip_neg_inf(row, len, ORACLE_TOPK, ATTEST_TOPK_BY_SCORE, idx));
        double kth = -INFINITY, rowmax = 0.0;
        for (int i = 0; i < ORACLE_TOPK; i++)
            if (idx[i] >= 0) kth = row[idx[i]];
        for (int32_t t = 0; t < len; t++) rowmax = fmax(rowmax, fabs(row[t]));
        /* membership of both sets over the row's positions */
        char *in_ref = calloc(w + 1, 1), *in_exp = calloc(w + 1, 1);
        assert_non_null(in_ref);
        assert_non_null(in_exp);
        size_t n_ref = 0, n_exp = 0;
        for (int i = 0; i < ORACLE_TOPK; i++) {
            if (idx[i] >= 0) {
                in_ref[idx[i]] = 1;
                n_ref++;
            }
            double e = eset[(size_t)r * ORACLE_TOPK + (size_t)i];
            if (e >= 0) {
                if (e >= (double)w) fail_msg("topk512_set[%d][%d] = %g past max_len", r, i, e);
                in_exp[(size_t)e] = 1;
                n_exp++;
            }
        }
        if (n_ref != n_exp) (*bad)++;
        for (size_t t = 0; t < w; t++) {
            if (in_ref[t] == in_exp[t]) continue;
            diffs++;
            if (t >= (size_t)len || !(fabs(row[t] - kth) <= LOGIT_ROW_TOL * rowmax)) (*bad)++;
        }
        free(in_ref);
        free(in_exp);
    }
    return diffs;
}

static void check_indexer_group(const char *path, const char *group)
{
    attest_case c;
    memset(&c, 0, sizeof c);
    attest_status st = attest_casefile_load(path, group, &c);
    if (st != ATTEST_OK) fail_msg("loading %s:%s: %s", path, group, attest_last_error());
    assert_int_equal(c.kernel, ATTEST_KERNEL_INDEXER);
    assert_int_equal(c.params.indexer.masking, ATTEST_MASK_NEG_INF);
    size_t n;
    double *kern = alloc_output(&c, "logits", &n);
    double *readme = malloc(n * sizeof *readme);
    assert_non_null(readme);
    double *outs[1] = {kern};
    st = attest_ref_compute(&c, ATTEST_REF_SIMULATED, outs); /* kernel order */
    if (st != ATTEST_OK) fail_msg("%s: reference failed: %s", group, attest_last_error());
    assert_ok(attest_ref_indexer_logits(&c, ATTEST_REF_SIMULATED,
                                        ATTEST_INDEXER_ORDER_README, readme));
    double *exp_ = load_expected(path, group, "logits", n);
    const size_t rows = (size_t)c.params.indexer.b * (size_t)c.params.indexer.next_n;
    double *eset = load_expected(path, group, "topk512_set", rows * ORACLE_TOPK);
    size_t bad = 0, bad_topk = 0;
    double dk = logits_agreement(&c.params.indexer, kern, exp_, &bad);
    double dr = logits_agreement(&c.params.indexer, readme, exp_, &bad);
    size_t diffs = topk_agreement(&c, kern, eset, &bad_topk);
    printf("oracle %-22s logits max |d|/row max: kernel order %.2e, README order %.2e | "
           "top-512 sets: %zu positions differ (%zu not ties) | %s\n",
           group, dk, dr, diffs, bad_topk, bad + bad_topk ? "MISMATCH" : "agrees");
    if (bad + bad_topk) fail_msg("%s: %zu logits, %zu top-k outside the oracle agreement", group,
                                 bad, bad_topk);
    const double r_log = judge_oracle_output(&c, 0, "logits", exp_, n, ATTEST_DTYPE_F32);
    printf("oracle %-22s as a candidate (default policy): pass, worst error/tolerance %.3f\n",
           group, r_log);
    free(kern);
    free(readme);
    free(exp_);
    free(eset);
    attest_case_free(&c);
}

/* ---- driver --------------------------------------------------------------------------------- */

typedef struct group_list {
    char names[64][128];
    size_t count;
} group_list;

static attest_status collect(const char *group, attest_kernel kernel, void *user)
{
    (void)kernel;
    group_list *l = user;
    ATTEST_RETURN_IF(l->count >= 64, ATTEST_ERR_INTERNAL, "too many oracle groups");
    snprintf(l->names[l->count++], sizeof l->names[0], "%s", group);
    return ATTEST_OK;
}

static void run_file(const char *file, void (*check)(const char *, const char *),
                     size_t min_groups)
{
    char path[4200];
    assert_true(oracle_path(file, path, sizeof path));
    group_list *l = calloc(1, sizeof *l);
    assert_non_null(l);
    attest_status st = attest_casefile_list_groups(path, collect, l);
    if (st != ATTEST_OK) fail_msg("listing %s: %s", path, attest_last_error());
    /* A test that found nothing to check must not pass. */
    assert_true(l->count >= min_groups);
    for (size_t i = 0; i < l->count; i++) check(path, l->names[i]);
    free(l);
}

static void test_oracle_indexer(void **state)
{
    (void)state;
    run_file("upstream_indexer.h5", check_indexer_group, 6);
}

static void test_oracle_mla_v4(void **state)
{
    (void)state;
    run_file("upstream_mla_v4.h5", check_mla_group, 8);
}

static void test_oracle_mla_v32(void **state)
{
    (void)state;
    run_file("upstream_mla_v32.h5", check_mla_group, 4);
}

int main(void)
{
    const char *dir = getenv("ATTEST_SHARED_DIR");
    if (dir == NULL || dir[0] == '\0') {
        printf("ATTEST_SHARED_DIR is not set: skipping the oracle check\n");
        return 77;
    }
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    const char *files[3] = {"upstream_indexer.h5", "upstream_mla_v4.h5", "upstream_mla_v32.h5"};
    for (int i = 0; i < 3; i++) {
        char path[4200];
        if (!oracle_path(files[i], path, sizeof path) || access(path, R_OK) != 0) {
            printf("%s is missing: skipping the oracle check\n", path);
            return 77;
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oracle_indexer),
        cmocka_unit_test(test_oracle_mla_v4),
        cmocka_unit_test(test_oracle_mla_v32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
