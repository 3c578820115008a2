// attest_cuda_candidates(): every CUDA candidate, file by file (cuda_registry.h).
#include "attest/cuda_candidates.h"
#include "cuda_registry.h"

namespace {

constexpr size_t kCapacity = 32;
const attest_candidate *joined[kCapacity];
size_t all_count;

void append(const attest_candidate *const *list, size_t n)
{
    for (size_t i = 0; i < n && all_count < kCapacity; i++) joined[all_count++] = list[i];
}

}  // namespace

extern "C" const attest_candidate *const *attest_cuda_candidates(size_t *count)
{
    // Called once, from the registry's pthread_once.
    if (all_count == 0) {
        size_t n = 0;
        const attest_candidate *const *l = cuda_direct_candidates(&n);
        append(l, n);
        l = cuda_paged_candidates(&n);
        append(l, n);
        l = cuda_mla_candidates(&n);
        append(l, n);
        l = cuda_mla_mma_candidates(&n);
        append(l, n);
    }
    *count = all_count;
    return joined;
}
