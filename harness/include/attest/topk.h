/* attest: top-k selection as a kernel family of its own.
 *
 * In serving engines the indexer's logits go through a separate top-k kernel whose indices drive
 * the sparse MLA decode. This module holds that kernel's case (logits, lengths, next_n and the
 * page table), its generator, its candidate interface and its judge. The reference selection
 * lives in references/ (attest_ref_topk_case); the judge takes it as data, as the comparator
 * takes reference outputs.
 *
 * Tensors of a top-k case (row r belongs to request r / next_n):
 *   INPUT  logits f32 [b*next_n, width]; context_lens i32 [b]; block_table i32 [b, blocks_per_req]
 *   OUTPUT topk_indices i32 [b*next_n, k]   logical positions, -1 padding
 *          topk_physical i32 [b*next_n, k]  physical token indices (block * 64 + offset), -1
 * Row r's valid length follows the indexer's MTP causal rule (slot j of a request of length L
 * sees positions t <= L - next_n + j, clamped to [0, width]).
 *
 * No arithmetic happens in a top-k kernel: it compares the float32 logits it is given. Two
 * positions are therefore tied only when their logits are equal, and the judge needs no
 * tolerance: any difference from the reference that is not an exchange of equal scores is a
 * fault. (Ties within the error bound of an indexer belong to the pipeline's seam, not here.)
 */
#ifndef ATTEST_TOPK_H
#define ATTEST_TOPK_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATTEST_TOPK_MAX_WIDTH (1 << 20)
#define ATTEST_TOPK_MAX_K 8192

/* What an output slot holds before the candidate runs: a position no row has, so a slot the
 * candidate leaves unwritten fails the range check. */
#define ATTEST_TOPK_POISON ((int32_t)0x7fadbeef)

typedef struct attest_topk_params {
    int32_t b;              /* requests */
    int32_t next_n;         /* rows per request */
    int32_t width;          /* logits row width (max_len) */
    int32_t k;              /* slots per row */
    int32_t blocks_per_req; /* width of block_table; blocks_per_req * 64 >= width */
    int32_t num_blocks;     /* physical blocks in the pool (entries are in [0, num_blocks)) */
} attest_topk_params;

/* The order a candidate promises for its selected slots. */
typedef enum attest_topk_order {
    ATTEST_TOPK_ORDER_SORTED = 0, /* scores non-increasing along the slots (equal scores any order) */
    ATTEST_TOPK_ORDER_ANY = 1     /* a set: any order of the selected slots */
} attest_topk_order;

/* Which outputs a candidate writes (a bit mask). */
#define ATTEST_TOPK_OUT_LOGICAL 1u
#define ATTEST_TOPK_OUT_PHYSICAL 2u

/* A top-k case: parameters and owned tensors (all heap). */
typedef struct attest_topk_case {
    uint64_t seed;            /* generator seed, 0 for a hand-made case */
    attest_topk_params p;
    float *logits;            /* [rows, width] */
    int32_t *context_lens;    /* [b] */
    int32_t *block_table;     /* [b, blocks_per_req] */
} attest_topk_case;

/* Allocates the inputs of *c for c->p (zeroed logits, lengths and an identity block table);
 * ATTEST_ERR_INVALID_ARGUMENT naming the field that is out of range. */
attest_status attest_topk_case_alloc(attest_topk_case *c) ATTEST_MUST_CHECK;
void attest_topk_case_free(attest_topk_case *c);

/* Rows of the case (b * next_n). */
int32_t attest_topk_rows(const attest_topk_params *p);
/* Valid length of row r (the MTP causal rule above). */
int32_t attest_topk_row_length(const attest_topk_case *c, int32_t r);

/* Canonical parameter string: "kernel=topk,b=2,next_n=1,width=300,k=64,bpr=5". */
attest_status attest_topk_param_string(const attest_topk_case *c, char *buf, size_t cap)
    ATTEST_MUST_CHECK;
/* attest_param_filter_check_keys (case.h) over the keys of that string. */
attest_status attest_topk_filter_check(const char *filter) ATTEST_MUST_CHECK;

/* Bounds of the generator; attest_topk_gen_defaults gives width <= 1024, k <= 512. */
typedef struct attest_topk_gen_bounds {
    int32_t max_batch, max_next_n, max_width, max_k;
} attest_topk_gen_bounds;
attest_topk_gen_bounds attest_topk_gen_defaults(void);

/* Draws one case from `seed`: shapes, lengths (often at block edges 64m-1, 64m, 64m+1, and
 * shorter than k), logits with heavy ties (few distinct values, equal scores across the k-th
 * place), NaN, -inf and +inf inside the length, values past the length that would win if read
 * (huge, +inf, NaN) or the masking values (-inf, 0), and a shuffled block table. The same seed
 * always gives the same case. */
attest_status attest_topk_generate(uint64_t seed, const attest_topk_gen_bounds *bounds,
                                   attest_topk_case *c) ATTEST_MUST_CHECK;

/* Seed of case i of a campaign with seed s (the indexer/decode generator's derivation). */
uint64_t attest_topk_case_seed(uint64_t campaign_seed, uint64_t i);

/* What a candidate reads and writes. Outputs it does not declare are NULL. */
typedef struct attest_topk_args {
    const attest_topk_params *params;
    const float *logits;
    const int32_t *context_lens;
    const int32_t *block_table;
    int32_t *indices;  /* [rows, k] or NULL */
    int32_t *physical; /* [rows, k] or NULL */
} attest_topk_args;

typedef struct attest_topk_candidate {
    const char *name;
    const char *description;
    attest_topk_order order;   /* the order contract it declares */
    uint32_t outputs;          /* ATTEST_TOPK_OUT_* it writes */
    attest_topk_rule rule;     /* how it treats a row with len <= k */
    int (*run)(const attest_topk_args *args); /* nonzero: the candidate reports a failure */
} attest_topk_candidate;

/* Entry point a top-k plugin exports as `attest_plugin_topk_candidates` (a shared library
 * named "path/libfoo.so:NAME" where a top-k candidate is expected). `abi` is the
 * ATTEST_TOPK_PLUGIN_ABI attest was built with, the layout of attest_topk_candidate and
 * attest_topk_args; a plugin built against another returns NULL (count 0) and is refused. */
#define ATTEST_TOPK_PLUGIN_ENTRY_SYMBOL "attest_plugin_topk_candidates"
#define ATTEST_TOPK_PLUGIN_ABI 1u
typedef const attest_topk_candidate *const *(*attest_topk_plugin_entry_fn)(uint32_t abi,
                                                                            size_t *count);

/* The judge's checks, each a bit of attest_topk_verdict.failed. */
typedef enum attest_topk_check {
    ATTEST_TOPK_CHECK_RANGE = 0,       /* a slot holds a position outside [0, len) and not -1 */
    ATTEST_TOPK_CHECK_DUPLICATE = 1,   /* a position twice in a row */
    ATTEST_TOPK_CHECK_NONFINITE = 2,   /* a NaN or -inf logit selected (they have no rank) */
    ATTEST_TOPK_CHECK_RECALL = 3,      /* the set differs from the reference beyond exact ties */
    ATTEST_TOPK_CHECK_PADDING = 4,     /* -1 before a selected slot, or a count other than min(k, ranked) */
    ATTEST_TOPK_CHECK_ORDER = 5,       /* declared sorted, but a score rises along the slots */
    ATTEST_TOPK_CHECK_SHORT_ROW = 6,   /* short-identity rule: a row with len <= k is not 0..len-1 */
    ATTEST_TOPK_CHECK_TRANSLATION = 7, /* a physical index is not the page table's image of the position */
    ATTEST_TOPK_CHECK_RUN = 8,         /* the candidate returned nonzero */
    /* Run integrity (attest/topk_runner.h): */
    ATTEST_TOPK_CHECK_CRASH = 9,       /* the run died of a signal */
    ATTEST_TOPK_CHECK_TIMEOUT = 10,    /* the run outlived its time limit */
    ATTEST_TOPK_CHECK_CANARY = 11,     /* a byte around an output changed: a write out of bounds */
    ATTEST_TOPK_CHECK_INPUT = 12,      /* an input (logits, lengths, block table) changed */
    ATTEST_TOPK_CHECK_NONDETERMINISM = 13, /* re-runs wrote different outputs */
    ATTEST_TOPK_CHECK_COUNT_
} attest_topk_check;

/* Returns "range", "duplicate", "nonfinite", "recall", "padding", "order", "short-row",
 * "translation", "run", "crash", "timeout", "canary", "input-modified", "nondeterminism", or
 * "unknown". */
const char *attest_topk_check_name(attest_topk_check check);

typedef struct attest_topk_verdict {
    uint32_t failed;        /* bits (1u << attest_topk_check) */
    int32_t rows_failed;
    uint64_t findings;      /* failed checks recorded (a row may add several) */
    int32_t first_row;      /* the first failing row and slot, -1 when none */
    int32_t first_slot;
    double worst_recall;    /* lowest row recall (1.0 when every row matches) */
    char detail[256];       /* one line on the first failure */
} attest_topk_verdict;

/* Judges a candidate's outputs against the reference selection ref_indices [rows, k] (from
 * attest_ref_topk_case under the candidate's rule). indices / physical are the candidate's
 * outputs (NULL when it does not write them; at least one must be given). With only physical
 * given, each index is mapped back through the row's block table; one that maps to no position
 * of the row's request fails translation. Returns ATTEST_ERR_INVALID_ARGUMENT on bad arguments;
 * a failing candidate is recorded in *v, never returned. */
attest_status attest_topk_judge(const attest_topk_case *c, const int32_t *ref_indices,
                                const int32_t *indices, const int32_t *physical,
                                attest_topk_order order, attest_topk_rule rule,
                                attest_topk_verdict *v) ATTEST_MUST_CHECK;

/* Writes the failed checks joined by '+' ("recall+padding"; "" for none). */
void attest_topk_check_mask_string(uint32_t failed, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_TOPK_H */
