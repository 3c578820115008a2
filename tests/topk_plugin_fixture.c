/* A top-k plugin for the tests (attest/topk.h's plugin entry point): "plugin-topk", a plain
 * selection by repeated maximum (equal scores to the lower position, NaN and -inf never chosen,
 * -1 padding, both outputs), and "plugin-topk-zero-pad", the same padding short rows with
 * position 0 instead of -1. Links nothing of attest. Built with CRASH_IN_ENTRY, the entry point
 * dies of SIGSEGV: the probe child must take that, not attest. With $ATTEST_TEST_TOPK_LOADS set,
 * every process that loads it appends its pid to that file (ctest cli_topk_plugin_not_in_parent:
 * attest's own pid must never be there). */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "attest/topk.h"

#define EXPORT __attribute__((visibility("default")))

__attribute__((constructor)) static void report_load(void)
{
    const char *file = getenv("ATTEST_TEST_TOPK_LOADS");
    if (!file) return;
    char line[32];
    const int n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
    const int fd = open(file, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return;
    if (n > 0) (void)!write(fd, line, (size_t)n);
    close(fd);
}

/* The MTP causal rule (attest/topk.h): slot j of a request of length L sees t <= L - next_n + j. */
static int32_t row_length(const attest_topk_params *p, const int32_t *lens, int32_t row)
{
    const int32_t L = lens[row / p->next_n];
    int32_t n = L - p->next_n + row % p->next_n + 1;
    if (n > L) n = L;
    if (n > p->width) n = p->width;
    return n < 0 ? 0 : n;
}

static int select_rows(const attest_topk_args *a, int32_t pad)
{
    const attest_topk_params *p = a->params;
    uint8_t *taken = calloc((size_t)p->width + 1, 1);
    if (taken == NULL) return 1;
    for (int32_t row = 0; row < p->b * p->next_n; row++) {
        const float *l = a->logits + (size_t)row * p->width;
        const int32_t len = row_length(p, a->context_lens, row), b = row / p->next_n;
        int32_t *out = a->indices + (size_t)row * p->k, *phys = a->physical + (size_t)row * p->k;
        int32_t n = 0;
        for (; n < p->k; n++) {
            int32_t best = -1;
            for (int32_t t = 0; t < len; t++) {
                if (isnan(l[t]) || l[t] == -INFINITY || taken[t]) continue;
                if (best < 0 || l[t] > l[best]) best = t;
            }
            if (best < 0) break;
            out[n] = best;
            taken[best] = 1;
        }
        for (int32_t j = 0; j < n; j++) taken[out[j]] = 0;
        for (int32_t j = 0; j < p->k; j++) {
            if (j >= n) out[j] = pad;
            phys[j] = out[j] < 0 ? -1
                                 : a->block_table[(size_t)b * p->blocks_per_req + out[j] / 64] * 64 +
                                       out[j] % 64;
        }
    }
    free(taken);
    return 0;
}

static int run_topk(const attest_topk_args *a) { return select_rows(a, -1); }
static int run_zero_pad(const attest_topk_args *a) { return select_rows(a, 0); }

static const attest_topk_candidate plugin_topk = {
    "plugin-topk", "test plugin: selection by repeated maximum", ATTEST_TOPK_ORDER_SORTED,
    ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL, ATTEST_TOPK_BY_SCORE, run_topk};
static const attest_topk_candidate plugin_zero_pad = {
    "plugin-topk-zero-pad", "test plugin: pads short rows with position 0", ATTEST_TOPK_ORDER_SORTED,
    ATTEST_TOPK_OUT_LOGICAL | ATTEST_TOPK_OUT_PHYSICAL, ATTEST_TOPK_BY_SCORE, run_zero_pad};
static const attest_topk_candidate *const list[] = {&plugin_topk, &plugin_zero_pad};

EXPORT const attest_topk_candidate *const *attest_plugin_topk_candidates(uint32_t abi, size_t *count)
{
    *count = 0;
#ifdef CRASH_IN_ENTRY
    raise(SIGSEGV);
#endif
    if (abi != ATTEST_TOPK_PLUGIN_ABI) return NULL;
    *count = sizeof list / sizeof list[0];
    return list;
}
