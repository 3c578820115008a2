/* attest: the case generator. A case is a kernel family + bounds + seed; everything in it is
 * drawn from the seed alone, so the seed (logged in every record) replays it exactly.
 */
#ifndef ATTEST_GENERATOR_H
#define ATTEST_GENERATOR_H

#include <stdint.h>

#include "attest/case.h"
#include "attest/layout.h"
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
    int32_t production_heads; /* 1 (default): about 1% of cases take h = 64 or 128 heads (the
                                 V4 and V3.2 production counts) above max_heads, with one
                                 request of one query row; 0: never */
    int32_t high_pools;       /* per mille of cases (default 10, fuzzing bounds 30; 1000: every
                                 case) whose pools move to a pool of millions of pages, past
                                 2^31 or 2^32 bytes, held sparsely (case.h: sparse pools); 0:
                                 never. Cases with truth tensors never move */
} attest_gen_options;

/* attest_gen_options has high_pools (code built against older headers tests for it). */
#define ATTEST_GEN_HIGH_POOLS 1

/* Returns the default bounds for a kernel family. */
attest_gen_options attest_gen_defaults(attest_kernel kernel);

/* Returns the fuzzing bounds for a kernel family: the smallest shapes that still reach every
 * edge class of the defaults (lengths 0, 1 and 64 +- 1, every page size, holes, duplicates,
 * all-invalid tiles, lonely queries, both layouts, the extra scope, MTP rows, NaN bytes, +-inf
 * sinks, extreme scales), so that one case and its reference take tens of microseconds: at
 * most 2 requests of 2 heads, lengths up to 80, top-k up to 16, no production head counts. */
attest_gen_options attest_gen_fuzz_defaults(attest_kernel kernel);

/* Derives case i's seed from a campaign seed (splitmix64 of seed and i): stable across versions. */
uint64_t attest_case_seed(uint64_t campaign_seed, uint64_t case_index);

/* Draws one case from `seed`: parameters, tensors (placed on the heap), cache bytes (padding and
 * unreferenced slots hold 0xFF poison), indices, lengths. `out` is overwritten (pass a case that
 * owns no memory). The caller frees with attest_case_free. */
attest_status attest_generate_case(const attest_gen_options *opt, uint64_t seed, attest_case *out)
    ATTEST_MUST_CHECK;

/* What the generator drew that the case's tensors do not show directly: the per-request lengths
 * and page tables it wrote the cache through (mla-decode cases carry only physical indices), the
 * scale policy, and where it put NaN bytes. For tests, case files and reports. */
typedef struct attest_gen_info {
    attest_kernel kernel;
    int32_t b;
    int32_t *lens;               /* [b] tokens (mla) / compressed positions (indexer) written */
    int32_t pages_per_req;       /* width of page_table */
    int32_t *page_table;         /* [b, pages_per_req] physical page (block) of logical page j;
                                    -1 where a request has no page j (mla) */
    int32_t *extra_lens;         /* [b] for an mla case with an extra scope, else NULL */
    int32_t extra_pages_per_req;
    int32_t *extra_page_table;   /* [b, extra_pages_per_req] or NULL */
    attest_scale_policy policy;  /* how the cache (both scopes) was quantized */
    int32_t nan_selected;        /* 1: a NaN byte sits where an output depends on it: decode's
                                    true answer is NaN there; the indexer's is NaN or, under
                                    relu(NaN) = 0 (DeepGEMM's kernel order), finite. ~3% */
    int32_t nan_unselected;      /* NaN bytes placed in written tokens no valid index selects */
    int32_t sparse_fill;         /* mla: 1 = only tokens a valid index selects were written (the
                                    rest of each request is poison, as upstream tests do);
                                    0 = every token of [0, lens[b]) that an index slot names
                                    (valid or past topk_length) was written, the rest poison */
} attest_gen_info;

/* attest_generate_case plus the info above (info may be NULL). Free info with
 * attest_gen_info_free. */
attest_status attest_generate_case_info(const attest_gen_options *opt, uint64_t seed,
                                        attest_case *out, attest_gen_info *info)
    ATTEST_MUST_CHECK;

/* Frees the arrays of an info filled by attest_generate_case_info; leaves it zeroed. */
void attest_gen_info_free(attest_gen_info *info);

/* Returns the policy's short name, e.g. "raw-nonsat", "pow2-flashmla-satfinite" (static). */
const char *attest_scale_policy_name(const attest_scale_policy *policy);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_GENERATOR_H */
