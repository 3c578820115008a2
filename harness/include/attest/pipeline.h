/* attest: the DSA chain as one case (docs/pipeline.md).
 *
 * In DeepSeek-style sparse attention the indexer's logits go through a top-k selection whose
 * physical token indices drive the sparse MLA decode. A pipeline case holds the whole chain on
 * one page table: an indexer case (c4-indexer cache, queries, weights, lengths, block table) and
 * a decode case whose mla-v32 cache has 64-token pages on the same physical blocks, so position t
 * of request b is the token block_table[b][t / 64] * 64 + t % 64 in both caches. The decode's
 * queries are the indexer's rows (s_q = next_n), its top-k width is the selection's k, and its
 * `indices` are what the top-k stage selects (the generator leaves them -1: the run fills them).
 */
#ifndef ATTEST_PIPELINE_H
#define ATTEST_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attest_pipeline_case {
    uint64_t seed;       /* the seed it was drawn from, 0 for a loaded one */
    int32_t k;           /* top-k width: indexer params.topk and decode params.topk */
    attest_case indexer; /* inputs and the logits output */
    attest_case decode;  /* mla-v32, page_size 64, num_pages = the indexer's num_blocks */
} attest_pipeline_case;

/* Bounds of the pipeline generator: the indexer's (attest_gen_defaults) plus the decode's heads. */
typedef struct attest_pipeline_gen_bounds {
    int32_t max_batch, max_heads, max_len, max_topk, max_next_n, max_decode_heads;
} attest_pipeline_gen_bounds;

/* b <= 4, H <= 8, max_len <= 300, k <= 64, next_n <= 2, h_q <= 4. */
attest_pipeline_gen_bounds attest_pipeline_gen_defaults(void);

/* Draws a pipeline case from `seed`: the indexer case from the indexer generator under these
 * bounds, where in about 30% of the requests every key then repeats the key 1-5 positions back
 * (so logits tie across the k-th place), k, and a decode case on the same blocks whose every
 * held position is written (positions past a request's length and unused blocks hold 0xFF
 * poison). `out` is overwritten; free with
 * attest_pipeline_case_free. */
attest_status attest_pipeline_generate(uint64_t seed, const attest_pipeline_gen_bounds *bounds,
                                       attest_pipeline_case *out) ATTEST_MUST_CHECK;

/* Checks that a (loaded) pipeline case is one chain: an indexer and a decode case of the shapes
 * above on the same blocks. ATTEST_ERR_FORMAT naming the field that disagrees. */
attest_status attest_pipeline_check(const attest_pipeline_case *pc) ATTEST_MUST_CHECK;

void attest_pipeline_case_free(attest_pipeline_case *pc);

/* Seed of case i of a campaign with seed s. */
uint64_t attest_pipeline_case_seed(uint64_t campaign_seed, uint64_t i);

/* "kernel=pipeline,b=2,next_n=1,h=8,max_len=300,k=64,h_q=4,sink=1". */
attest_status attest_pipeline_param_string(const attest_pipeline_case *pc, char *buf, size_t cap)
    ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_PIPELINE_H */
