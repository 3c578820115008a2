/* Built-in top-k candidates (topk_candidates.h): the selection and the correct CPU kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/topk_candidates.h"
#include "topk_select.h"

/* Whether a score at a higher position beats one held (a lower position) under the flags. */
static int beats(float s, float held, unsigned flags)
{
    if (flags & TOPK_NAN_UNAWARE) return !(s <= held); /* true for NaN: the bug */
    return (flags & TOPK_TIES_HIGH) ? s >= held : s > held;
}

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void select_row(const float *row, int32_t len, int32_t k, unsigned flags, int32_t *out)
{
    for (int32_t s = 0; s < k; s++) out[s] = -1;
    if ((flags & TOPK_SHORT_IDENTITY) && len <= k) {
        for (int32_t t = 0; t < len; t++) out[t] = t;
        return;
    }
    int32_t n = 0;
    for (int32_t t = 0; t < len; t++) {
        const float s = row[t];
        if (!(flags & TOPK_NAN_UNAWARE) && (isnan(s) || s == -INFINITY)) continue;
        if (flags & TOPK_NAN_UNAWARE && s == -INFINITY) continue;
        if (flags & TOPK_DROP_TIES) {
            int held = 0;
            for (int32_t i = 0; i < n && !held; i++) held = row[out[i]] == s;
            if (held) continue;
        }
        if (n == k && !beats(s, row[out[k - 1]], flags)) continue;
        int32_t i = n < k ? n++ : k - 1;
        while (i > 0 && beats(s, row[out[i - 1]], flags)) {
            out[i] = out[i - 1];
            i--;
        }
        out[i] = t;
    }
    if (flags & TOPK_BY_POSITION) qsort(out, (size_t)n, sizeof *out, cmp_i32);
}

int topk_select_run(const attest_topk_args *a, unsigned flags)
{
    const attest_topk_params *p = a->params;
    const int32_t rows = p->b * p->next_n, k = p->k;
    int32_t *tmp = malloc((size_t)k * sizeof *tmp);
    if (tmp == NULL) return 1;
    for (int32_t r = 0; r < rows; r++) {
        const int32_t q = r / p->next_n;
        attest_indexer_params ip = {.b = p->b, .next_n = p->next_n, .max_len = p->width};
        int32_t len = attest_indexer_row_length(&ip, a->context_lens, r);
        if (flags & TOPK_IGNORE_LENGTH) len = p->width;
        select_row(a->logits + (size_t)r * (size_t)p->width, len, k, flags, tmp);
        if (a->indices) memcpy(a->indices + (size_t)r * (size_t)k, tmp, (size_t)k * sizeof *tmp);
        if (a->physical == NULL) continue;
        const int32_t *bt = a->block_table + (size_t)q * (size_t)p->blocks_per_req;
        for (int32_t s = 0; s < k; s++) {
            const int32_t l = tmp[s];
            int32_t blk = l / 64;
            if (flags & TOPK_PAGE_OFF_BY_ONE) blk = (l + 1) / 64;
            if (l < 0 || blk >= p->blocks_per_req) {
                a->physical[(size_t)r * (size_t)k + (size_t)s] = -1;
                continue;
            }
            a->physical[(size_t)r * (size_t)k + (size_t)s] = bt[blk] * 64 + l % 64;
        }
    }
    free(tmp);
    return 0;
}

static int run_sorted(const attest_topk_args *a) { return topk_select_run(a, 0); }
static int run_ties_high(const attest_topk_args *a) { return topk_select_run(a, TOPK_TIES_HIGH); }
static int run_unsorted(const attest_topk_args *a) { return topk_select_run(a, TOPK_BY_POSITION); }
static int run_short_identity(const attest_topk_args *a)
{
    return topk_select_run(a, TOPK_SHORT_IDENTITY);
}

static const attest_topk_candidate cpu_topk = {
    "cpu-topk", "top-k by score, sorted, equal scores to the lower position, logical + physical",
    ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL,
    ATTEST_TOPK_BY_SCORE, run_sorted};
static const attest_topk_candidate cpu_topk_ties_high = {
    "cpu-topk-ties-high", "cpu-topk with equal scores to the higher position (another legal tie order)",
    ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_OUT_LOGICAL, ATTEST_TOPK_BY_SCORE, run_ties_high};
static const attest_topk_candidate cpu_topk_unsorted = {
    "cpu-topk-unsorted", "the top-k set in position order, physical indices only",
    ATTEST_TOPK_ORDER_ANY, ATTEST_TOPK_OUT_PHYSICAL, ATTEST_TOPK_BY_SCORE, run_unsorted};
static const attest_topk_candidate cpu_topk_short_identity = {
    "cpu-topk-short-identity", "cpu-topk, but a row with len <= k returns 0..len-1",
    ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL,
    ATTEST_TOPK_SHORT_IDENTITY, run_short_identity};

#ifdef ATTEST_WITH_MUTANTS
extern const attest_topk_candidate attest_topk_mutant_drops_ties, attest_topk_mutant_masked,
    attest_topk_mutant_page_off_by_one, attest_topk_mutant_nan_unstable,
    attest_topk_mutant_claims_sorted;
#endif

static const attest_topk_candidate *const builtins[] = {
    &cpu_topk, &cpu_topk_ties_high, &cpu_topk_unsorted, &cpu_topk_short_identity,
#ifdef ATTEST_WITH_MUTANTS
    &attest_topk_mutant_drops_ties, &attest_topk_mutant_masked,
    &attest_topk_mutant_page_off_by_one, &attest_topk_mutant_nan_unstable,
    &attest_topk_mutant_claims_sorted,
#endif
};

size_t attest_topk_builtin_candidates(const attest_topk_candidate *const **list)
{
    *list = builtins;
    return sizeof builtins / sizeof builtins[0];
}

const attest_topk_candidate *attest_topk_builtin_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i]->name, name) == 0) return builtins[i];
    return NULL;
}

int attest_topk_expected_failure(const attest_topk_candidate *cand)
{
    static const struct {
        const char *name;
        attest_topk_check check;
    } expect[] = {
        {"mutant-topk-drops-ties", ATTEST_TOPK_CHECK_RECALL},
        {"mutant-topk-masked-positions", ATTEST_TOPK_CHECK_RANGE},
        {"mutant-topk-page-off-by-one", ATTEST_TOPK_CHECK_TRANSLATION},
        {"mutant-topk-nan-unstable", ATTEST_TOPK_CHECK_NONFINITE},
        {"mutant-topk-claims-sorted", ATTEST_TOPK_CHECK_ORDER},
    };
    for (size_t i = 0; cand != NULL && i < sizeof expect / sizeof expect[0]; i++)
        if (strcmp(expect[i].name, cand->name) == 0) return (int)expect[i].check;
    return -1;
}
