/* attest references: tensor lookup and size arithmetic shared by the reference sources. */
#include <stdarg.h>
#include <stdint.h>

#include "ref_internal.h"

attest_status attest_ref_tensor_(const attest_case *c, const char *name, attest_dtype dtype,
                                 size_t count, const void **data)
{
    const attest_tensor *t = attest_case_tensor_const(c, name);
    ATTEST_RETURN_IF(t == NULL, ATTEST_ERR_INVALID_ARGUMENT, "reference: the case has no tensor %s",
                     name);
    ATTEST_RETURN_IF(t->dtype != dtype, ATTEST_ERR_INVALID_ARGUMENT,
                     "reference: tensor %s is %s, expected %s", name, attest_dtype_name(t->dtype),
                     attest_dtype_name(dtype));
    ATTEST_RETURN_IF(t->data == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "reference: tensor %s has no data placed", name);
    size_t esize = attest_dtype_size(dtype);
    ATTEST_RETURN_IF(esize == 0 || t->nbytes / esize < count, ATTEST_ERR_INVALID_ARGUMENT,
                     "reference: tensor %s holds %zu bytes, the parameters need %zu elements of %zu",
                     name, t->nbytes, count, esize);
    *data = t->data;
    return ATTEST_OK;
}

attest_status attest_ref_count_(size_t *out, const char *what, int n, ...)
{
    /* 2^62 leaves headroom for a later multiplication by an element size. */
    const uint64_t limit = UINT64_C(1) << 62;
    uint64_t acc = 1;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        int64_t f = va_arg(ap, int64_t);
        if (f < 0 || (f != 0 && acc > limit / (uint64_t)f)) {
            va_end(ap);
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                               "reference: size of %s is negative or too large (factor %lld)", what,
                               (long long)f);
        }
        acc *= (uint64_t)f;
    }
    va_end(ap);
    ATTEST_RETURN_IF(acc > (uint64_t)SIZE_MAX, ATTEST_ERR_INVALID_ARGUMENT,
                     "reference: size of %s does not fit in memory", what);
    *out = (size_t)acc;
    return ATTEST_OK;
}
