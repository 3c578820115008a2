/* attest: the candidate interface, a versioned struct of function pointers plus a context.
 *
 * The harness allocates every buffer (so it can poison and guard it); a candidate only reads its
 * inputs and writes its outputs through the typed views below. A device-domain candidate receives
 * device pointers with the same layout; params always live in host memory.
 *
 * Plugins: a shared library exports `attest_plugin_candidates` (type attest_plugin_entry_fn),
 * returning its candidates; `--candidate path/libfoo.so:NAME` picks one by name.
 */
#ifndef ATTEST_CANDIDATE_H
#define ATTEST_CANDIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: attest_conventions gained relu_nan, lonely_lse and invalid_index. */
#define ATTEST_CANDIDATE_ABI_VERSION 2u

typedef enum attest_memory_domain {
    ATTEST_DOMAIN_HOST = 0,  /* pointers are host memory */
    ATTEST_DOMAIN_DEVICE = 1 /* pointers are CUDA device memory */
} attest_memory_domain;

typedef struct attest_indexer_args {
    const attest_indexer_params *params;
    const uint8_t *cache;         /* [num_blocks, 8448] c4-indexer blocks */
    const int32_t *block_table;   /* [b, blocks_per_req] physical block of logical block j */
    const int32_t *context_lens;  /* [b] compressed positions per request */
    const uint8_t *q_fp8;         /* [b, next_n, heads, head_dim] e4m3fn, no scale */
    const float *weights;         /* [b * next_n, heads] */
    float *logits;                /* out: [b * next_n, max_len] */
} attest_indexer_args;

typedef struct attest_mla_args {
    const attest_mla_params *params;
    const uint8_t *cache;              /* [num_pages * page_stride] */
    const uint16_t *q;                 /* [b, s_q, h_q, d_qk] bf16 bits */
    const int32_t *indices;            /* [b, s_q, topk] physical token index or -1 */
    const int32_t *topk_length;        /* [b] or NULL */
    const float *attn_sink;            /* [h_q] or NULL */
    const uint8_t *extra_cache;        /* NULL unless params->has_extra */
    const int32_t *extra_indices;      /* [b, s_q, extra_topk] */
    const int32_t *extra_topk_length;  /* [b] or NULL */
    uint16_t *out;                     /* out: [b, s_q, h_q, d_v] bf16 bits */
    float *lse;                        /* out: [b, s_q, h_q] natural log */
} attest_mla_args;

typedef struct attest_kernel_args {
    attest_kernel kernel;
    attest_memory_domain domain;
    union {
        attest_indexer_args indexer;
        attest_mla_args mla;
    } u;
} attest_kernel_args;

/* Fills typed views that point into a placed case's tensors (host domain). */
attest_status attest_case_args(attest_case *c, attest_kernel_args *args) ATTEST_MUST_CHECK;

/* Conventions a candidate declares; the reference and the comparator follow them when judging
 * it (attest/conventions.h names them; docs/conventions.md says which public kernel makes each
 * choice). Zero is the default of every field. */
typedef struct attest_conventions {
    attest_masking masking;               /* indexer: what it writes past a row's length */
    attest_lse_convention lse_convention; /* mla-decode with a sink */
    attest_relu_nan relu_nan;             /* indexer: what relu makes of a NaN dot */
    attest_lonely_lse lonely_lse;         /* mla-decode: LSE of a query with no valid index */
    attest_invalid_index invalid_index;   /* mla-decode: what a -1 index means */
} attest_conventions;

typedef struct attest_candidate {
    uint32_t abi_version;       /* ATTEST_CANDIDATE_ABI_VERSION */
    uint32_t struct_size;       /* sizeof(attest_candidate) as compiled by the candidate */
    const char *name;           /* unique, e.g. "cpu-indexer", "mutant-scale-off-by-one" */
    const char *description;    /* one line */
    attest_kernel kernel;
    attest_memory_domain domain;
    attest_conventions conventions;
    /* Optional: sets *ctx; nonzero return = the candidate cannot start (HARNESS_ERROR). */
    int (*init)(void **ctx);
    /* Optional: releases ctx. */
    void (*fini)(void *ctx);
    /* Optional: returns 1 if it can run this case, 0 if not (verdict UNSUPPORTED). */
    int (*supports)(void *ctx, const attest_kernel_args *args);
    /* Required: computes the outputs. Nonzero return = the candidate reports a failure. */
    int (*run)(void *ctx, const attest_kernel_args *args);
} attest_candidate;

/* Entry point a plugin exports as `attest_plugin_candidates`. */
typedef const attest_candidate *const *(*attest_plugin_entry_fn)(size_t *count);
#define ATTEST_PLUGIN_ENTRY_SYMBOL "attest_plugin_candidates"

/* Checks a candidate struct: ABI version, size, name, kernel, run present. */
attest_status attest_candidate_validate(const attest_candidate *cand) ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_CANDIDATE_H */
