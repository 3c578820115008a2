/* Shrinking a failing top-k case (topk_minimize.h). */
#include "topk_minimize.h"

#include <string.h>

attest_status attest_topk_case_copy(const attest_topk_case *c, attest_topk_case *out)
{
    memset(out, 0, sizeof *out);
    out->p = c->p;
    out->seed = c->seed;
    ATTEST_FORWARD(attest_topk_case_alloc(out));
    const size_t rows = (size_t)attest_topk_rows(&c->p);
    memcpy(out->logits, c->logits, rows * (size_t)c->p.width * sizeof(float));
    memcpy(out->context_lens, c->context_lens, (size_t)c->p.b * sizeof(int32_t));
    memcpy(out->block_table, c->block_table,
           (size_t)c->p.b * (size_t)c->p.blocks_per_req * sizeof(int32_t));
    return ATTEST_OK;
}

/* The reductions, each a new case from `c` or ATTEST_ERR_UNSUPPORTED when it does not apply. */
enum { R_DROP_REQUEST, R_DROP_SLOT, R_WIDTH_TO_LONGEST, R_HALVE_WIDTH, R_HALVE_K, R_K_MINUS_ONE,
       R_HALVE_LENGTH, R_LENGTH_MINUS_ONE, R_COUNT };

/* A case shaped `p` whose row r' / request q' / column w' are row rows[r'], request reqs[q'],
 * column w' of c (lengths clamped to the new width). */
static attest_status reshape(const attest_topk_case *c, attest_topk_params p, const int32_t *reqs,
                             int32_t slot0, attest_topk_case *out)
{
    memset(out, 0, sizeof *out);
    out->p = p;
    out->seed = c->seed;
    ATTEST_FORWARD(attest_topk_case_alloc(out));
    for (int32_t q = 0; q < p.b; q++) {
        const int32_t from = reqs ? reqs[q] : q;
        const int32_t len = c->context_lens[from];
        out->context_lens[q] = len < p.width ? len : p.width;
        memcpy(out->block_table + (size_t)q * (size_t)p.blocks_per_req,
               c->block_table + (size_t)from * (size_t)c->p.blocks_per_req,
               (size_t)p.blocks_per_req * sizeof(int32_t));
        for (int32_t j = 0; j < p.next_n; j++)
            memcpy(out->logits + ((size_t)q * (size_t)p.next_n + (size_t)j) * (size_t)p.width,
                   c->logits + ((size_t)from * (size_t)c->p.next_n + (size_t)(j + slot0)) *
                                   (size_t)c->p.width,
                   (size_t)p.width * sizeof(float));
    }
    return ATTEST_OK;
}

static attest_status reduce(const attest_topk_case *c, int kind, int32_t arg, attest_topk_case *out)
{
    attest_topk_params p = c->p;
    int32_t reqs[1024];
    switch (kind) {
    case R_DROP_REQUEST: /* arg: the request dropped */
        if (p.b < 2 || arg >= p.b) break;
        for (int32_t q = 0, n = 0; q < p.b; q++)
            if (q != arg) reqs[n++] = q;
        p.b--;
        return reshape(c, p, reqs, 0, out);
    case R_DROP_SLOT:
        /* Dropping each request's first row keeps every other row's valid length: slot j of a
         * request of length L sees t <= L - next_n + j, and both next_n and j drop by one. */
        if (p.next_n < 2) break;
        p.next_n--;
        return reshape(c, p, NULL, 1, out);
    case R_WIDTH_TO_LONGEST:
    case R_HALVE_WIDTH: {
        int32_t longest = 1;
        for (int32_t q = 0; q < p.b; q++)
            if (c->context_lens[q] > longest) longest = c->context_lens[q];
        const int32_t w = kind == R_HALVE_WIDTH ? p.width / 2 : longest;
        if (w < 1 || w >= p.width) break;
        p.width = w;
        p.blocks_per_req = (w + ATTEST_INDEXER_BLOCK - 1) / ATTEST_INDEXER_BLOCK;
        return reshape(c, p, NULL, 0, out);
    }
    case R_HALVE_K:
    case R_K_MINUS_ONE:
        p.k = kind == R_HALVE_K ? p.k / 2 : p.k - 1;
        if (p.k < 1) break;
        return reshape(c, p, NULL, 0, out);
    case R_HALVE_LENGTH:
    case R_LENGTH_MINUS_ONE: /* arg: the request */
        if (arg >= p.b || c->context_lens[arg] == 0) break;
        ATTEST_FORWARD(attest_topk_case_copy(c, out));
        out->context_lens[arg] = kind == R_HALVE_LENGTH ? c->context_lens[arg] / 2
                                                        : c->context_lens[arg] - 1;
        return ATTEST_OK;
    default: break;
    }
    return ATTEST_ERR_UNSUPPORTED;
}

attest_status attest_topk_minimize(const attest_topk_case *c, attest_topk_still_fails_fn still,
                                   void *ctx, uint32_t max_tries, attest_topk_case *out,
                                   attest_topk_minimize_stats *stats)
{
    attest_topk_minimize_stats local = {0, 0};
    if (stats == NULL) stats = &local;
    memset(stats, 0, sizeof *stats);
    ATTEST_FORWARD(attest_topk_case_copy(c, out));
    for (int progress = 1; progress && stats->tries < max_tries;) {
        progress = 0;
        for (int kind = 0; kind < R_COUNT && stats->tries < max_tries; kind++) {
            const int per_request = kind == R_DROP_REQUEST || kind == R_HALVE_LENGTH ||
                                    kind == R_LENGTH_MINUS_ONE;
            for (int32_t arg = 0; arg < (per_request ? out->p.b : 1) && stats->tries < max_tries;
                 arg++) {
                attest_topk_case t;
                const attest_status rs = reduce(out, kind, arg, &t);
                if (rs == ATTEST_ERR_UNSUPPORTED) continue;
                if (rs != ATTEST_OK) {
                    attest_topk_case_free(out);
                    return rs;
                }
                stats->tries++;
                const int keep = still(&t, ctx);
                if (keep < 0) {
                    attest_topk_case_free(&t);
                    attest_topk_case_free(out);
                    return attest_fail(ATTEST_ERR_INTERNAL, "topk minimize: %s", attest_last_error());
                }
                if (keep) {
                    attest_topk_case_free(out);
                    *out = t;
                    stats->accepted++;
                    progress = 1;
                    /* The same reduction again from the smaller case (a dropped request moves
                     * the next one into its place). */
                    arg--;
                    if (!per_request) arg = -1;
                } else {
                    attest_topk_case_free(&t);
                }
                if (!per_request && !keep) break;
            }
        }
    }
    return ATTEST_OK;
}
