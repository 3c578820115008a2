/* attest: the case generator. A case is a kernel family + bounds + seed; everything in it is
 * drawn from the seed alone, so the seed (logged in every record) replays it exactly.
 */
#ifndef ATTEST_GENERATOR_H
#define ATTEST_GENERATOR_H

#include <stdint.h>

#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds the generator draws within. attest_gen_defaults() gives small, fast shapes that still
 * reach every edge (lengths 0, 1, page boundaries +-1, holes, NaN bytes, +-inf sinks). */
typedef struct attest_gen_options {
    attest_kernel kernel;
    int32_t max_batch;        /* requests per case */
    int32_t max_heads;        /* indexer H and decode h_q upper bound */
    int32_t max_len;          /* indexer: compressed positions; decode: tokens per request */
    int32_t max_topk;         /* decode top-k width */
    int32_t max_next_n;       /* indexer MTP rows per request */
    int32_t max_s_q;          /* decode queries per request */
    int32_t page_size;        /* 0: drawn from the layout's usual sizes */
    int32_t layout;           /* 0: drawn; else an attest_layout_id for mla-decode */
    int32_t production_shape; /* 1: fixed production heads/dims (H=64, d=512, topk=512) */
    int32_t with_truth;       /* 1: also fill the truth tensors (for true-mode references) */
    int32_t edge_bytes;       /* 1 (default): NaN/subnormal/+-448 fp8 bytes and extreme scales */
} attest_gen_options;

/* Returns the default bounds for a kernel family. */
attest_gen_options attest_gen_defaults(attest_kernel kernel);

/* Derives case i's seed from a campaign seed (splitmix64 of seed and i): stable across versions. */
uint64_t attest_case_seed(uint64_t campaign_seed, uint64_t case_index);

/* Draws one case from `seed`: parameters, tensors (placed on the heap), cache bytes (padding and
 * unreferenced slots hold 0xFF poison), indices, lengths. The caller frees with attest_case_free. */
attest_status attest_generate_case(const attest_gen_options *opt, uint64_t seed, attest_case *out)
    ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_GENERATOR_H */
