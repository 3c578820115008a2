/* attest references: one entry point that computes every output tensor of a case. */
#include <stddef.h>

#include "attest/reference.h"

attest_indexer_order attest_indexer_order_of(const attest_case *c)
{
    return c->params.indexer.relu_nan == ATTEST_RELU_NAN_PROPAGATES ? ATTEST_INDEXER_ORDER_README
                                                                    : ATTEST_INDEXER_ORDER_KERNEL;
}

attest_status attest_ref_compute(const attest_case *c, attest_ref_mode mode, double **outputs)
{
    ATTEST_RETURN_IF(c == NULL || outputs == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "reference: NULL case or outputs");
    switch (c->kernel) {
    case ATTEST_KERNEL_INDEXER:
        ATTEST_RETURN_IF(outputs[0] == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                         "reference: NULL buffer for logits");
        return attest_ref_indexer_logits(c, mode, attest_indexer_order_of(c), outputs[0]);
    case ATTEST_KERNEL_MLA_DECODE:
        ATTEST_RETURN_IF(outputs[0] == NULL || outputs[1] == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                         "reference: NULL buffer for out_bf16 or lse");
        return attest_ref_mla_decode(c, mode, outputs[0], outputs[1]);
    }
    return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "reference: unknown kernel %d", (int)c->kernel);
}

attest_status attest_ref_bounds(const attest_case *c, const attest_bound_model *models,
                                double **outputs, double **bounds)
{
    ATTEST_RETURN_IF(c == NULL || models == NULL || outputs == NULL || bounds == NULL,
                     ATTEST_ERR_INVALID_ARGUMENT, "bounds: NULL case, models or outputs");
    switch (c->kernel) {
    case ATTEST_KERNEL_INDEXER:
        ATTEST_RETURN_IF(outputs[0] == NULL || bounds[0] == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                         "bounds: NULL buffer for logits");
        return attest_ref_indexer_bounds(c, &models[0], outputs[0], bounds[0]);
    case ATTEST_KERNEL_MLA_DECODE:
        ATTEST_RETURN_IF(outputs[0] == NULL || outputs[1] == NULL || bounds[0] == NULL ||
                             bounds[1] == NULL,
                         ATTEST_ERR_INVALID_ARGUMENT, "bounds: NULL buffer for out_bf16 or lse");
        return attest_ref_mla_bounds(c, &models[0], &models[1], outputs[0], outputs[1], bounds[0],
                                     bounds[1]);
    }
    return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "bounds: unknown kernel %d", (int)c->kernel);
}

attest_status attest_ref_simulated(const attest_case *c, const attest_bound_model *models,
                                   double **outputs, double **bounds)
{
    if (bounds == NULL) return attest_ref_compute(c, ATTEST_REF_SIMULATED, outputs);
    return attest_ref_bounds(c, models, outputs, bounds);
}
