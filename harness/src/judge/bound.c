/* attest: format names of the bound model (bound.h). */
#include "attest/bound.h"

#include <string.h>

static const struct {
    const char *name;
    double u;
} formats[] = {
    {"fp32", 0x1p-24},
    {"tf32", 0x1p-11},
    {"fp16", 0x1p-11},
    {"bf16", 0x1p-8},
    /* Not an IEEE format: fp8 products on Hopper tensor cores are accumulated with about 14
     * bits kept (DeepSeek-V3 technical report, section 3.3.2), hence 2^-13. */
    {"hopper-fp8-mma", 0x1p-13},
    {"exact", 0.0},
};

attest_bound_model attest_bound_model_fp32(void)
{
    attest_bound_model m = {0x1p-24, 0x1p-24, 0.0};
    return m;
}

attest_status attest_format_unit_roundoff(const char *name, double *u)
{
    if (name == NULL || u == NULL)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "format name must not be NULL");
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strcmp(formats[i].name, name) == 0) {
            *u = formats[i].u;
            return ATTEST_OK;
        }
    }
    return attest_fail(ATTEST_ERR_NOT_FOUND,
                       "unknown format \"%.40s\" (expected fp32, tf32, fp16, bf16, hopper-fp8-mma "
                       "or exact)",
                       name);
}

double attest_format_subnormal_half_step(double u)
{
    if (u == 0.0 || u == 0x1p-24) return 0x1p-150;
    if (u == 0x1p-11) return 0x1p-25; /* fp16; tf32 shares the unit and loses only 2^-137 */
    if (u == 0x1p-8) return 0x1p-134;
    return 0x1p-126;
}

const char *attest_format_name(double u)
{
    /* tf32 and fp16 share a unit roundoff; the first name is the one printed. */
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].u == u) return formats[i].name;
    return NULL;
}
