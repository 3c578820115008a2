/* Output element coordinates in the kernel's terms (compare.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "attest/compare.h"

void attest_coord_string(attest_kernel kernel, const char *output, const attest_coord *co,
                         char *buf, size_t cap)
{
    static const char *const indexer_logits[] = {"row", "t"};
    static const char *const mla_out[] = {"request", "query", "head", "dim"};
    if (cap == 0) return;
    buf[0] = '\0';
    const char *const *names = NULL;
    int want_rank = -1;
    if (kernel == ATTEST_KERNEL_INDEXER && !strcmp(output, "logits")) {
        names = indexer_logits;
        want_rank = 2;
    } else if (kernel == ATTEST_KERNEL_MLA_DECODE && !strcmp(output, "out_bf16")) {
        names = mla_out;
        want_rank = 4;
    } else if (kernel == ATTEST_KERNEL_MLA_DECODE && !strcmp(output, "lse")) {
        names = mla_out;
        want_rank = 3;
    }
    if (co->rank < 1 || co->rank > 4) {
        snprintf(buf, cap, "%s (no element)", output);
        return;
    }
    size_t used = 0;
    int n = snprintf(buf, cap, "%s[", output);
    if (n < 0 || (size_t)n >= cap) return;
    used = (size_t)n;
    for (int i = 0; i < co->rank; i++) {
        if (names && co->rank == want_rank)
            n = snprintf(buf + used, cap - used, "%s%s %" PRId64, i ? ", " : "", names[i],
                         co->index[i]);
        else
            n = snprintf(buf + used, cap - used, "%s%" PRId64, i ? ", " : "", co->index[i]);
        if (n < 0 || (size_t)n >= cap - used) return;
        used += (size_t)n;
    }
    snprintf(buf + used, cap - used, "]");
}
