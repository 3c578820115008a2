/* attest references: helpers shared by the reference sources (not a public header).
 *
 * The references take their sizes from the case parameters, never from the tensor table, and
 * check that each tensor they read holds at least that many elements: a malformed case becomes
 * an error naming the tensor, never an out-of-bounds read.
 */
#ifndef ATTEST_REF_INTERNAL_H
#define ATTEST_REF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attest/case.h"
#include "attest/status.h"

/* Finds tensor `name`, checks its dtype, that its data is placed and that it holds at least
 * `count` elements, and stores its data in *data. ATTEST_ERR_INVALID_ARGUMENT naming it if not. */
attest_status attest_ref_tensor_(const attest_case *c, const char *name, attest_dtype dtype,
                                 size_t count, const void **data) ATTEST_MUST_CHECK;

/* Stores the product of `n` factors (int64, each must be >= 0) in *out. Fails with
 * ATTEST_ERR_INVALID_ARGUMENT naming `what` on a negative factor or on overflow past 2^62, so that
 * sizes derived from parameters can be trusted for indexing. */
attest_status attest_ref_count_(size_t *out, const char *what, int n, ...) ATTEST_MUST_CHECK;

/* bf16 to double, exactly: the bits shifted into a float32's high half (attest_bf16_decode
 * inline; it was a call per element of q). */
static inline double ref_bf16_to_double(uint16_t bits)
{
    const uint32_t w = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &w, sizeof f);
    return (double)f;
}

/* fmax(m, y) for a running maximum m that is never NaN: a NaN y is skipped, a tie keeps m (glibc's
 * fmax returns its first argument on a tie, -0 and +0 included). Inline and branch-free, where
 * fmax is a library call per element. */
static inline double ref_max_skip_nan(double m, double y) { return y > m ? y : m; }

/* fmax(x, 0.0), exactly: x when x >= 0 (-0 kept, as glibc's fmax keeps its first argument on a
 * tie), else 0 (a NaN gives 0, DeepGEMM's fmaxf). */
static inline double ref_relu_to_zero(double x) { return x >= 0.0 ? x : 0.0; }

#endif /* ATTEST_REF_INTERNAL_H */
