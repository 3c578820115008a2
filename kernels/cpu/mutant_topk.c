/* Top-k mutants: each breaks one rule of the top-k contract, so the judge must fail it. */
#include "attest/topk_candidates.h"
#include "topk_select.h"

static int run_drops_ties(const attest_topk_args *a) { return topk_select_run(a, TOPK_DROP_TIES); }
static int run_masked(const attest_topk_args *a) { return topk_select_run(a, TOPK_IGNORE_LENGTH); }
static int run_off_by_one(const attest_topk_args *a)
{
    return topk_select_run(a, TOPK_PAGE_OFF_BY_ONE);
}
static int run_nan(const attest_topk_args *a) { return topk_select_run(a, TOPK_NAN_UNAWARE); }
static int run_claims_sorted(const attest_topk_args *a)
{
    return topk_select_run(a, TOPK_BY_POSITION);
}

const attest_topk_candidate attest_topk_mutant_drops_ties = {
    "mutant-topk-drops-ties", "keeps one position per distinct score (drops ties)",
    ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_OUT_LOGICAL, ATTEST_TOPK_BY_SCORE, run_drops_ties};
const attest_topk_candidate attest_topk_mutant_masked = {
    "mutant-topk-masked-positions", "selects over the whole row, ignoring the length",
    ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_OUT_LOGICAL, ATTEST_TOPK_BY_SCORE, run_masked};
const attest_topk_candidate attest_topk_mutant_page_off_by_one = {
    "mutant-topk-page-off-by-one", "translates position l through block (l + 1) / 64",
    ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL,
    ATTEST_TOPK_BY_SCORE, run_off_by_one};
const attest_topk_candidate attest_topk_mutant_nan_unstable = {
    "mutant-topk-nan-unstable", "NaN-unaware comparisons: a NaN logit is let in and rises",
    ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_OUT_LOGICAL, ATTEST_TOPK_BY_SCORE, run_nan};
const attest_topk_candidate attest_topk_mutant_claims_sorted = {
    "mutant-topk-claims-sorted", "returns the set in position order but declares it sorted",
    ATTEST_TOPK_ORDER_SORTED, ATTEST_TOPK_OUT_LOGICAL, ATTEST_TOPK_BY_SCORE, run_claims_sorted};
