/* A test plugin for test_plugin.c: "fixture-good" (fills every logit with its flat index) and
 * "fixture-old-abi", whose struct claims another ABI version. Public headers only, no link. */
#include <stddef.h>

#include "attest/candidate.h"

static int fixture_run(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    const attest_indexer_params *p = a->u.indexer.params;
    for (size_t i = 0; i < (size_t)p->b * (size_t)p->next_n * (size_t)p->max_len; i++)
        a->u.indexer.logits[i] = (float)i;
    return 0;
}

static const attest_candidate fixture_good = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "fixture-good",
    .description = "test plugin candidate",
    .kernel = ATTEST_KERNEL_INDEXER,
    .run = fixture_run,
};

static const attest_candidate fixture_old = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION + 98u,
    .struct_size = sizeof(attest_candidate),
    .name = "fixture-old-abi",
    .kernel = ATTEST_KERNEL_INDEXER,
    .run = fixture_run,
};

__attribute__((visibility("default"))) const attest_candidate *const *
attest_plugin_candidates(size_t *count);

const attest_candidate *const *attest_plugin_candidates(size_t *count)
{
    static const attest_candidate *const list[] = {&fixture_good, &fixture_old};
    *count = sizeof list / sizeof list[0];
    return list;
}
