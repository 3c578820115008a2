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

#endif /* ATTEST_REF_INTERNAL_H */
