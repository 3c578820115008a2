/* attest: the CUDA candidates (kernels/cuda/), linked only when the build found CUDA.
 *
 * The registry appends them to the built-in list when ATTEST_WITH_CUDA is defined. The header is
 * plain C and may be included from .cu files (C++), hence the extern "C" block.
 */
#ifndef ATTEST_CUDA_CANDIDATES_H
#define ATTEST_CUDA_CANDIDATES_H

#include <stddef.h>

#include "attest/candidate.h"
#include "attest/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the CUDA candidates (static storage, device domain) and sets *count. Defined by
 * kernels/cuda/ only in builds with ATTEST_WITH_CUDA. */
const attest_candidate *const *attest_cuda_candidates(size_t *count);

/* Returns the CUDA device ops for attest_register_device_ops(); touches no CUDA API itself. */
const attest_device_ops *attest_cuda_device_ops(void);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_CUDA_CANDIDATES_H */
