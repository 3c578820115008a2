/* attest: one test case, as plain data.
 *
 * A case is a kernel family, its parameters (which include the conventions the outputs follow)
 * and a table of named tensors: inputs a candidate reads, outputs it writes, and "truth" tensors
 * (the unquantized values the cache was built from) that only the true-mode reference reads.
 * The tensor table is what case files store, what the runner places in guarded memory, and what
 * an external-process candidate will receive; the typed views in candidate.h point into it.
 *
 * Tensor names follow the schema of ../shared/oracles (so an oracle group loads as a case):
 *   indexer:    cache_bytes u8 [num_blocks, 8448]; block_table i32 [b, blocks_per_req];
 *               context_lens i32 [b]; q_fp8 u8 [b, next_n, heads, head_dim];
 *               weights f32 [b*next_n, heads]; OUTPUT logits f32 [b*next_n, max_len];
 *               TRUTH k_true f32 [num_blocks*64, head_dim] (by physical position),
 *                     q_true f32 [b, next_n, heads, head_dim].
 *   mla-decode: cache_bytes u8 [num_pages*page_stride]; q_bf16 bf16 [b, s_q, h_q, d_qk];
 *               indices i32 [b, s_q, topk]; topk_length i32 [b] (if has_topk_length);
 *               attn_sink f32 [h_q] (if has_sink); extra_cache_bytes u8
 *               [extra_num_pages*extra_page_stride], extra_indices i32 [b, s_q, extra_topk],
 *               extra_topk_length i32 [b] (if has_extra / has_extra_topk_length);
 *               OUTPUT out_bf16 bf16 [b, s_q, h_q, d_v], lse f32 [b, s_q, h_q];
 *               TRUTH kv_true f32 [num_pages*page_size, k_dim] (by physical token index),
 *                     extra_kv_true f32 [extra_num_pages*extra_page_size, k_dim] (if has_extra).
 * Tensors appear in the table in exactly this order (inputs, outputs, truth).
 */
#ifndef ATTEST_CASE_H
#define ATTEST_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "attest/layout.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attest_kernel {
    ATTEST_KERNEL_INDEXER = 1,   /* "indexer": DSA indexer logits over a c4-indexer cache */
    ATTEST_KERNEL_MLA_DECODE = 2 /* "mla-decode": sparse MLA decode over mla-v4 / mla-v32 */
} attest_kernel;

/* Returns "indexer" / "mla-decode", or NULL. */
const char *attest_kernel_name(attest_kernel kernel);
/* Looks a kernel family up by name; ATTEST_ERR_NOT_FOUND if unknown. */
attest_status attest_kernel_from_name(const char *name, attest_kernel *kernel) ATTEST_MUST_CHECK;

/* What logits beyond a row's valid length hold (docs/kernels.md section 5). */
typedef enum attest_masking {
    ATTEST_MASK_NEG_INF = 0,    /* -inf (vllm, sglang SM120, DeepGEMM clean_logits) */
    ATTEST_MASK_ZERO = 1,       /* 0.0 (sglang V4 torch fallback) */
    ATTEST_MASK_UNSPECIFIED = 2 /* anything; not compared (DeepGEMM with 2-D context lens) */
} attest_masking;

/* Which LSE a decode kernel returns when it has an attention sink (docs/kernels.md section 6). */
typedef enum attest_lse_convention {
    ATTEST_LSE_EXCLUDES_SINK = 0, /* FlashMLA */
    ATTEST_LSE_INCLUDES_SINK = 1  /* sglang SM120 Triton: logaddexp(lse, sink) */
} attest_lse_convention;

/* What the indexer's relu does with a NaN dot product (a NaN fp8 byte in a key that is used). */
typedef enum attest_relu_nan {
    ATTEST_RELU_NAN_TO_ZERO = 0,   /* fmax(dot, 0): the NaN counts as 0 (DeepGEMM) */
    ATTEST_RELU_NAN_PROPAGATES = 1 /* relu(NaN) = NaN reaches the logit (torch.relu) */
} attest_relu_nan;

/* The LSE a decode kernel returns for a query with no valid index in any scope (its output is 0
 * under every convention). */
typedef enum attest_lonely_lse {
    ATTEST_LONELY_LSE_POS_INF = 0, /* +inf (FlashMLA) */
    ATTEST_LONELY_LSE_NEG_INF = 1, /* -inf: the log of an empty sum */
    ATTEST_LONELY_LSE_SINK = 2     /* logaddexp(-inf, sink) = the head's sink; -inf without one */
} attest_lonely_lse;

/* How a decode kernel treats an index of -1 (in a slot below topk_length). */
typedef enum attest_invalid_index {
    ATTEST_INVALID_SKIP = 0,     /* that slot is skipped; later slots still count (FlashMLA) */
    ATTEST_INVALID_ENDS_LIST = 1 /* the first -1 ends the list: later slots are ignored */
} attest_invalid_index;

/* How top-k treats a row with L <= k valid positions. */
typedef enum attest_topk_rule {
    ATTEST_TOPK_BY_SCORE = 0,      /* the k largest valid logits, -1 padding */
    ATTEST_TOPK_SHORT_IDENTITY = 1 /* L <= k returns 0..L-1 regardless of scores, -1 padding */
} attest_topk_rule;

const char *attest_masking_name(attest_masking m);         /* "-inf", "0.0", "unspecified" */
const char *attest_lse_convention_name(attest_lse_convention c); /* "excludes_sink", ... */
const char *attest_relu_nan_name(attest_relu_nan r);               /* "to_zero", "propagates" */
const char *attest_lonely_lse_name(attest_lonely_lse l);           /* "+inf", "-inf", "sink" */
const char *attest_invalid_index_name(attest_invalid_index i);     /* "skip", "ends_list" */
const char *attest_topk_rule_name(attest_topk_rule r);      /* "by_score", "short_identity" */

#define ATTEST_INDEXER_BLOCK 64u /* positions per c4-indexer block */

typedef struct attest_indexer_params {
    int32_t b;               /* requests */
    int32_t next_n;          /* query rows per request (MTP); row i = request i / next_n */
    int32_t heads;           /* H (64 in production) */
    int32_t head_dim;        /* D, fixed at 128 by the c4-indexer layout */
    int32_t num_blocks;      /* physical blocks in the pool */
    int32_t blocks_per_req;  /* width of block_table */
    int32_t max_len;         /* logits row width, in compressed positions */
    attest_masking masking;  /* what rows hold past their length */
    int32_t topk;            /* k for the top-k gate; 0 disables it */
    attest_topk_rule topk_rule;
    attest_relu_nan relu_nan; /* what a NaN dot gives (last: older plugins read a prefix) */
} attest_indexer_params;

typedef struct attest_mla_params {
    attest_layout_id layout;  /* ATTEST_LAYOUT_MLA_V4 or ATTEST_LAYOUT_MLA_V32 */
    int32_t page_size;
    int64_t page_stride;
    int32_t num_pages;
    int32_t b, s_q, h_q, d_qk, d_v, topk;
    float sm_scale;
    int32_t has_topk_length;  /* tensor "topk_length" [b] present */
    int32_t has_sink;         /* tensor "attn_sink" [h_q] present */
    attest_lse_convention lse_convention;
    int32_t has_extra;        /* a second scope joined in the same softmax */
    int32_t extra_page_size;
    int64_t extra_page_stride;
    int32_t extra_num_pages;
    int32_t extra_topk;
    int32_t has_extra_topk_length;
    /* Conventions added later stay last: a plugin built before reads a prefix of the struct. */
    attest_lonely_lse lonely_lse;
    attest_invalid_index invalid_index;
} attest_mla_params;

typedef enum attest_dtype {
    ATTEST_DTYPE_U8 = 1,
    ATTEST_DTYPE_I32 = 2,
    ATTEST_DTYPE_F32 = 3,
    ATTEST_DTYPE_BF16 = 4, /* stored as uint16 bit patterns */
    ATTEST_DTYPE_F64 = 5
} attest_dtype;

/* Returns the size in bytes of one element, or 0 for an unknown dtype. */
size_t attest_dtype_size(attest_dtype dtype);
const char *attest_dtype_name(attest_dtype dtype); /* "uint8", "int32", "float32", "bf16", ... */

typedef enum attest_tensor_role {
    ATTEST_ROLE_INPUT = 1,  /* read by the candidate; must be unchanged after a run */
    ATTEST_ROLE_OUTPUT = 2, /* written by the candidate */
    ATTEST_ROLE_TRUTH = 3   /* unquantized source values; never shown to a candidate */
} attest_tensor_role;

#define ATTEST_TENSOR_MAX_RANK 4
#define ATTEST_CASE_MAX_TENSORS 16

typedef struct attest_tensor {
    char name[32];           /* the case-file dataset name, e.g. "cache_bytes", "logits" */
    attest_dtype dtype;
    attest_tensor_role role;
    int32_t rank;
    int64_t shape[ATTEST_TENSOR_MAX_RANK];
    size_t nbytes;           /* product of shape times dtype size */
    void *data;              /* NULL until placed (heap, arena, or file) */
} attest_tensor;

typedef struct attest_case {
    attest_kernel kernel;
    uint64_t seed;           /* the seed the generator drew it from (0 for a loaded case) */
    union {
        attest_indexer_params indexer;
        attest_mla_params mla;
    } params;
    size_t num_tensors;
    attest_tensor tensors[ATTEST_CASE_MAX_TENSORS];
    void *heap_block_;       /* owned memory when placed by attest_case_alloc_heap */
    uint32_t sparse_pools;   /* ATTEST_POOL_* bits: pools held sparsely (see below); 0 = dense */
    size_t heap_map_bytes_;  /* nonzero: heap_block_ is a mapping of that many bytes */
} attest_case;

/* Sparse pools. A serving engine's pool has tens of thousands of pages (byte offsets past 2^31,
 * where 32-bit offset arithmetic wraps) of which one batch reads a few. A pool named in
 * sparse_pools holds bytes only in the pages the case's tables or indices reach
 * (attest_case_pool_pages); attest_case_alloc_heap reserves the rest of its address range without
 * touching it, the runner's arena places only the reached pages (a candidate's access to any other
 * page faults in the worker: CRASH), and a case file stores only them (docs/case-format.md). */
#define ATTEST_POOL_MAIN 1u  /* cache_bytes (both families) */
#define ATTEST_POOL_EXTRA 2u /* extra_cache_bytes (mla-decode with an extra scope) */

/* The index of pool `pool` (one ATTEST_POOL_* bit) in the tensor table, or -1 when the case has
 * none; *page_bytes (may be NULL) gets its page (block) stride, *num_pages its page count. */
int attest_case_pool_tensor(const attest_case *c, unsigned pool, uint64_t *page_bytes,
                            int64_t *num_pages);

/* The ATTEST_POOL_* bit of tensor i, or 0 when it is not a pool. */
unsigned attest_case_tensor_pool(const attest_case *c, size_t i);

/* The pages of a pool that the case reaches, ascending and distinct: the blocks of every
 * block_table entry inside the pool (the indexer; entries past a request's blocks too, which a
 * prefetching kernel may load) or the pages of every index inside the pool (mla-decode; slots
 * past topk_length too). *pages is malloc'd (NULL when *count is 0); the caller frees it. */
attest_status attest_case_pool_pages(const attest_case *c, unsigned pool, int32_t **pages,
                                     size_t *count) ATTEST_MUST_CHECK;

/* Copies input or truth tensor i of src into the same tensor of dst (same shape): for a pool src
 * holds sparsely, only the pages src reaches (dst must reach no others). */
attest_status attest_case_copy_tensor(attest_case *dst, const attest_case *src, size_t i)
    ATTEST_MUST_CHECK;

/* Validates the parameters (every size positive and bounded, layouts valid, strides consistent)
 * and fills the tensor table (names, dtypes, roles, shapes, nbytes) with data = NULL.
 * with_truth adds the truth tensors. Returns ATTEST_ERR_INVALID_ARGUMENT naming the field. */
attest_status attest_case_define_tensors(attest_case *c, int with_truth) ATTEST_MUST_CHECK;

/* Places every tensor in one zeroed heap block owned by the case. With sparse_pools set the block
 * is an anonymous MAP_NORESERVE mapping: a sparse pool's unreached pages cost no memory. */
attest_status attest_case_alloc_heap(attest_case *c) ATTEST_MUST_CHECK;

/* Frees memory owned by the case (not memory placed by someone else); leaves tensors NULL. */
void attest_case_free(attest_case *c);

/* Returns the tensor with this name, or NULL. */
attest_tensor *attest_case_tensor(attest_case *c, const char *name);
const attest_tensor *attest_case_tensor_const(const attest_case *c, const char *name);

/* Whether t is named name. Not strcmp: in a libFuzzer target every strcmp an exec makes goes
 * through the engine's interceptor, which records each mismatch's operands (a hash, a table
 * entry) and turns the names into dictionary words ("cache_bytes", "logit") that its mutations
 * then insert into inputs; the lookups by name on every exec were 2-3% of an indexer exec. */
static inline int attest_tensor_is(const attest_tensor *t, const char *name)
{
    size_t i = 0;
    while (i < sizeof t->name && t->name[i] == name[i] && name[i] != '\0') i++;
    return i < sizeof t->name && t->name[i] == name[i];
}

/* Number of elements of a tensor (product of its shape). */
size_t attest_tensor_count(const attest_tensor *t);

/* Writes the canonical parameter string ("kernel=mla-decode,layout=mla-v4,b=4,s_q=1,h=64,...")
 * into buf. The same case always gives the same string; it names failures and keys results.
 * Returns ATTEST_ERR_INVALID_ARGUMENT if buf is too small. */
attest_status attest_case_param_string(const attest_case *c, char *buf, size_t cap)
    ATTEST_MUST_CHECK;

/* The parameters of a kernel family as data, declared once: the parameter string, the case-file
 * writer and the case-file reader walk the same table (case_fields.c), so a parameter added,
 * renamed or given a new value name changes all three. */
typedef enum attest_param_type {
    ATTEST_PARAM_I32,    /* int32_t */
    ATTEST_PARAM_I64,    /* int64_t */
    ATTEST_PARAM_F32,    /* float (a double attribute; "%.9g" in the string) */
    ATTEST_PARAM_ENUM,   /* an int-sized enum, stored as its value's name */
    ATTEST_PARAM_FLAG,   /* int32_t 0 or 1: whether `dataset` is present */
    ATTEST_PARAM_LAYOUT, /* attest_layout_id, stored as its name */
    ATTEST_PARAM_FIXED_LAYOUT, /* no field: the family's one layout (`fallback`), by name */
    ATTEST_PARAM_FIXED   /* no field: a layout constant (`fallback`) */
    /* A file states the FIXED kinds; a reader checks them when present. */
} attest_param_type;

/* When a field is absent from a case file. */
typedef enum attest_param_absent {
    ATTEST_ABSENT_REQUIRED,    /* an error */
    ATTEST_ABSENT_VALUE,       /* `fallback` */
    ATTEST_ABSENT_K_DIM,       /* the layout's k_dim */
    ATTEST_ABSENT_V_DIM,       /* the layout's v_dim */
    ATTEST_ABSENT_INV_SQRT_DQK, /* 1/sqrt(d_qk) */
    ATTEST_ABSENT_DATASET,     /* FLAG: the dataset's presence */
    ATTEST_ABSENT_TABLE_WIDTH  /* the width of the block_table dataset */
} attest_param_absent;

#define ATTEST_PARAM_IF_TOPK 1u  /* in the parameter string only when topk > 0 */
#define ATTEST_PARAM_IF_EXTRA 2u /* exists only when has_extra (string, file and reader) */
#define ATTEST_PARAM_POOL 4u     /* a page pool's size, stride or count: checked as a pool */

typedef struct attest_param_field {
    const char *attr;        /* case-file attribute name */
    const char *key;         /* parameter-string key; NULL: not in the string */
    attest_param_type type;
    size_t offset;           /* into the family's parameter struct (attest_case.params) */
    attest_param_absent absent;
    int64_t fallback;        /* ATTEST_ABSENT_VALUE: the value; FIXED: the only value */
    unsigned flags;          /* ATTEST_PARAM_IF_* */
    int num_values;          /* ENUM: values 0 .. num_values-1 */
    const char *(*value_name)(int v); /* ENUM: the file's name of value v */
    const char *(*short_name)(int v); /* ENUM: the string's name of v where it differs, or NULL */
    const char *dataset;     /* FLAG: the dataset whose presence it states */
} attest_param_field;

/* The fields of a kernel family, in parameter-string order (*count of them); NULL for an unknown
 * family. */
const attest_param_field *attest_case_param_fields(attest_kernel kernel, size_t *count);

/* Field f of the case's parameters as an integer (FIXED kinds: their value; F32: 0), and set. */
int64_t attest_param_get(const attest_case *c, const attest_param_field *f);
void attest_param_set(attest_case *c, const attest_param_field *f, int64_t v);
/* An F32 field as a double, and set (rounded to float). */
double attest_param_get_real(const attest_case *c, const attest_param_field *f);
void attest_param_set_real(attest_case *c, const attest_param_field *f, double v);

/* The name of value v of an ENUM, LAYOUT or FIXED_LAYOUT field (short_form: as the parameter
 * string spells it); NULL when v has none. */
const char *attest_param_value_name(const attest_param_field *f, int64_t v, int short_form);

/* Whether field f exists for this case (ATTEST_PARAM_IF_EXTRA fields only with has_extra). */
int attest_param_present(const attest_case *c, const attest_param_field *f);

/* Returns 1 if every key=value pair of `filter` (comma separated; a value may end in '*' to match
 * a prefix) appears in the parameter string, 0 otherwise. An empty filter matches everything. */
int attest_param_string_matches(const char *params, const char *filter);

/* Whether every term of `filter` can match a parameter string made of `keys` (num_keys of them):
 * key=value with a value, a key among them. A filter that cannot match is a typo to report, not a
 * run that judged nothing (`--filter batch=2` was EMPTY). ATTEST_ERR_INVALID_ARGUMENT naming the
 * term and the keys; what: the kernel's name, for the message. */
attest_status attest_param_filter_check_keys(const char *filter, const char *const *keys,
                                             size_t num_keys, const char *what) ATTEST_MUST_CHECK;

/* attest_param_filter_check_keys over the keys of `kernel`'s parameter strings (indexer and
 * mla-decode: "kernel" and its field table's keys). */
attest_status attest_case_filter_check(attest_kernel kernel, const char *filter) ATTEST_MUST_CHECK;

/* Checks every index-like input against the pool: page table entries, context lengths against
 * max_len and blocks_per_req, indices in [-1, num_pages*page_size). A loaded case that fails here
 * is malformed (ATTEST_ERR_FORMAT naming the tensor and element); generated cases never fail. */
attest_status attest_case_check_inputs(const attest_case *c) ATTEST_MUST_CHECK;

/* Valid length of indexer logits row `row` (request row / next_n, MTP slot row % next_n): slot j
 * of a request of length L sees t <= L - next_n + j (docs/kernels.md section 5), so
 * L - next_n + j + 1, clamped to [0, min(L, max_len)]. 0 for a row outside the batch or NULL
 * arguments. The one definition of the rule: references, judge and reports use it. */
int32_t attest_indexer_row_length(const attest_indexer_params *p, const int32_t *context_lens,
                                  int32_t row);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_CASE_H */
