/* attest CLI (internal): shrinking a failing top-k case while it keeps failing the same way, as
 * attest/minimize.h shrinks the other families' cases: fewer requests, fewer rows per request,
 * a narrower row, fewer slots and shorter lengths, each kept only when the predicate still holds. */
#ifndef ATTEST_CLI_TOPK_MINIMIZE_H
#define ATTEST_CLI_TOPK_MINIMIZE_H

#include <stdint.h>

#include "attest/status.h"
#include "attest/topk.h"

/* 1: the reduced case still fails the same way; 0: it does not; < 0: a harness error (the
 * minimizer stops and returns it). */
typedef int (*attest_topk_still_fails_fn)(const attest_topk_case *c, void *ctx);

typedef struct attest_topk_minimize_stats {
    uint32_t tries;    /* predicate calls */
    uint32_t accepted; /* reductions kept */
} attest_topk_minimize_stats;

/* Writes into *out (owning no memory on entry) the smallest case reached from c within max_tries
 * predicate calls; c itself is left alone. ATTEST_ERR_INTERNAL when the predicate errs. */
attest_status attest_topk_minimize(const attest_topk_case *c, attest_topk_still_fails_fn still,
                                   void *ctx, uint32_t max_tries, attest_topk_case *out,
                                   attest_topk_minimize_stats *stats) ATTEST_MUST_CHECK;

/* A deep copy of c into *out (owning no memory on entry). */
attest_status attest_topk_case_copy(const attest_topk_case *c, attest_topk_case *out)
    ATTEST_MUST_CHECK;

#endif /* ATTEST_CLI_TOPK_MINIMIZE_H */
