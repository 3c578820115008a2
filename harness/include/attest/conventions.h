/* attest: the conventions a kernel declares, by name.
 *
 * Public kernels disagree on a few outputs no single answer is right for (what an indexer writes
 * past a row's length, whether a returned LSE includes the attention sink, ...). A candidate
 * declares its choice (attest_candidate.conventions); the reference, the comparator and stored
 * expected outputs follow the declaration. This module names each convention and its values
 * for command lines, `attest list`, case-file attributes and the external-candidate protocol
 * (docs/conventions.md names a public kernel for every value).
 */
#ifndef ATTEST_CONVENTIONS_H
#define ATTEST_CONVENTIONS_H

#include <stddef.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets one convention from its key and value names ("masking", "-inf"). ATTEST_ERR_NOT_FOUND
 * names the known keys or values when either is unknown. */
attest_status attest_convention_set(attest_conventions *c, const char *key, const char *value)
    ATTEST_MUST_CHECK;

/* Writes the conventions that matter for `kernel` as "key=value,key=value" into buf (clipped to
 * cap). Returns the length written. */
size_t attest_conventions_format(const attest_conventions *c, attest_kernel kernel, char *buf,
                                 size_t cap);

/* The conventions every built-in candidate starts from (FlashMLA / DeepGEMM choices). */
attest_conventions attest_conventions_default(void);

/* Checks every field holds a known value; ATTEST_ERR_FORMAT naming the field otherwise. */
attest_status attest_conventions_validate(const attest_conventions *c) ATTEST_MUST_CHECK;

/* Copies the conventions into a case's parameters, so the reference and the comparator judge
 * the outputs of a candidate that declared them. */
void attest_conventions_apply(const attest_conventions *c, attest_case *cc);

/* Reads the conventions a case's parameters carry (the inverse of apply for its kernel; fields
 * of the other kernel keep their defaults). */
attest_conventions attest_conventions_of_case(const attest_case *c);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_CONVENTIONS_H */
