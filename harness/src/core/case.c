#include "attest/case.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Upper bounds on case parameters. They are far above production shapes; their job is to turn a
 * corrupted case file into a clear error instead of a multi-terabyte allocation. */
#define MAX_BATCH 65536
#define MAX_NEXT_N 64
#define MAX_HEADS 1024
#define MAX_QUERIES 1024
#define MAX_TOPK (1 << 20)
#define MAX_POOL_UNITS (1 << 24)
#define MAX_LOGITS_LEN (1 << 24)
#define MAX_TENSOR_BYTES (64ull << 30)

const char *attest_kernel_name(attest_kernel kernel)
{
    switch (kernel) {
    case ATTEST_KERNEL_INDEXER: return "indexer";
    case ATTEST_KERNEL_MLA_DECODE: return "mla-decode";
    }
    return NULL;
}

attest_status attest_kernel_from_name(const char *name, attest_kernel *kernel)
{
    ATTEST_RETURN_IF(name == NULL, ATTEST_ERR_INVALID_ARGUMENT, "kernel name is missing");
    if (!strcmp(name, "indexer")) {
        *kernel = ATTEST_KERNEL_INDEXER;
        return ATTEST_OK;
    }
    if (!strcmp(name, "mla-decode")) {
        *kernel = ATTEST_KERNEL_MLA_DECODE;
        return ATTEST_OK;
    }
    return attest_fail(ATTEST_ERR_NOT_FOUND, "unknown kernel '%s' (known: indexer, mla-decode)",
                       name);
}

const char *attest_masking_name(attest_masking m)
{
    switch (m) {
    case ATTEST_MASK_NEG_INF: return "-inf";
    case ATTEST_MASK_ZERO: return "0.0";
    case ATTEST_MASK_UNSPECIFIED: return "unspecified";
    }
    return "unknown";
}

const char *attest_lse_convention_name(attest_lse_convention c)
{
    switch (c) {
    case ATTEST_LSE_EXCLUDES_SINK: return "excludes_sink";
    case ATTEST_LSE_INCLUDES_SINK: return "includes_sink";
    }
    return "unknown";
}

const char *attest_relu_nan_name(attest_relu_nan r)
{
    switch (r) {
    case ATTEST_RELU_NAN_TO_ZERO: return "to_zero";
    case ATTEST_RELU_NAN_PROPAGATES: return "propagates";
    }
    return "unknown";
}

const char *attest_lonely_lse_name(attest_lonely_lse l)
{
    switch (l) {
    case ATTEST_LONELY_LSE_POS_INF: return "+inf";
    case ATTEST_LONELY_LSE_NEG_INF: return "-inf";
    case ATTEST_LONELY_LSE_SINK: return "sink";
    }
    return "unknown";
}

const char *attest_topk_rule_name(attest_topk_rule r)
{
    switch (r) {
    case ATTEST_TOPK_BY_SCORE: return "by_score";
    case ATTEST_TOPK_SHORT_IDENTITY: return "short_identity";
    }
    return "unknown";
}

const char *attest_invalid_index_name(attest_invalid_index i)
{
    switch (i) {
    case ATTEST_INVALID_SKIP: return "skip";
    case ATTEST_INVALID_ENDS_LIST: return "ends_list";
    }
    return "unknown";
}

size_t attest_dtype_size(attest_dtype dtype)
{
    switch (dtype) {
    case ATTEST_DTYPE_U8: return 1;
    case ATTEST_DTYPE_I32: return 4;
    case ATTEST_DTYPE_F32: return 4;
    case ATTEST_DTYPE_BF16: return 2;
    case ATTEST_DTYPE_F64: return 8;
    }
    return 0;
}

const char *attest_dtype_name(attest_dtype dtype)
{
    switch (dtype) {
    case ATTEST_DTYPE_U8: return "uint8";
    case ATTEST_DTYPE_I32: return "int32";
    case ATTEST_DTYPE_F32: return "float32";
    case ATTEST_DTYPE_BF16: return "bf16";
    case ATTEST_DTYPE_F64: return "float64";
    }
    return "unknown";
}

size_t attest_tensor_count(const attest_tensor *t)
{
    size_t n = 1;
    for (int32_t i = 0; i < t->rank; i++) n *= (size_t)t->shape[i];
    return n;
}

static attest_status check_range(const char *field, int64_t value, int64_t lo, int64_t hi)
{
    ATTEST_RETURN_IF(value < lo || value > hi, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s = %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", field, value, lo,
                     hi);
    return ATTEST_OK;
}

/* Appends a tensor; shapes are validated by the caller, this only guards the byte count. */
static attest_status add_tensor(attest_case *c, const char *name, attest_dtype dtype,
                                attest_tensor_role role, int32_t rank, const int64_t *shape)
{
    ATTEST_RETURN_IF(c->num_tensors >= ATTEST_CASE_MAX_TENSORS, ATTEST_ERR_INTERNAL,
                     "too many tensors in a case");
    attest_tensor *t = &c->tensors[c->num_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->role = role;
    t->rank = rank;
    uint64_t bytes = attest_dtype_size(dtype);
    for (int32_t i = 0; i < rank; i++) {
        t->shape[i] = shape[i];
        ATTEST_RETURN_IF(shape[i] < 0, ATTEST_ERR_INVALID_ARGUMENT, "%s: negative dimension",
                         name);
        if (shape[i] != 0 && bytes > MAX_TENSOR_BYTES / (uint64_t)shape[i])
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: tensor larger than %llu GiB",
                               name, (unsigned long long)(MAX_TENSOR_BYTES >> 30));
        bytes *= (uint64_t)shape[i];
    }
    t->nbytes = (size_t)bytes;
    c->num_tensors++;
    return ATTEST_OK;
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define RANK(...) ((int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define ADD(name, dtype, role, ...)                                                                \
    ATTEST_FORWARD(add_tensor(c, name, dtype, role, RANK(__VA_ARGS__), SHAPE(__VA_ARGS__)))

static attest_status define_indexer(attest_case *c, int with_truth)
{
    attest_indexer_params *p = &c->params.indexer;
    ATTEST_FORWARD(check_range("b", p->b, 1, MAX_BATCH));
    ATTEST_FORWARD(check_range("next_n", p->next_n, 1, MAX_NEXT_N));
    ATTEST_FORWARD(check_range("heads", p->heads, 1, MAX_HEADS));
    ATTEST_FORWARD(check_range("head_dim", p->head_dim, 128, 128));
    ATTEST_FORWARD(check_range("num_blocks", p->num_blocks, 1, MAX_POOL_UNITS));
    ATTEST_FORWARD(check_range("blocks_per_req", p->blocks_per_req, 1, MAX_POOL_UNITS));
    ATTEST_FORWARD(check_range("max_len", p->max_len, 1, MAX_LOGITS_LEN));
    ATTEST_FORWARD(check_range("masking", p->masking, ATTEST_MASK_NEG_INF,
                               ATTEST_MASK_UNSPECIFIED));
    ATTEST_FORWARD(check_range("topk", p->topk, 0, MAX_TOPK));
    ATTEST_FORWARD(check_range("topk_rule", p->topk_rule, ATTEST_TOPK_BY_SCORE,
                               ATTEST_TOPK_SHORT_IDENTITY));
    const int64_t rows = (int64_t)p->b * p->next_n;
    const int64_t positions = (int64_t)p->num_blocks * ATTEST_INDEXER_BLOCK;
    ADD("cache_bytes", ATTEST_DTYPE_U8, ATTEST_ROLE_INPUT, p->num_blocks, ATTEST_LAYOUT_C4_BLOCK_BYTES);
    ADD("block_table", ATTEST_DTYPE_I32, ATTEST_ROLE_INPUT, p->b, p->blocks_per_req);
    ADD("context_lens", ATTEST_DTYPE_I32, ATTEST_ROLE_INPUT, p->b);
    ADD("q_fp8", ATTEST_DTYPE_U8, ATTEST_ROLE_INPUT, p->b, p->next_n, p->heads, p->head_dim);
    ADD("weights", ATTEST_DTYPE_F32, ATTEST_ROLE_INPUT, rows, p->heads);
    ADD("logits", ATTEST_DTYPE_F32, ATTEST_ROLE_OUTPUT, rows, p->max_len);
    if (with_truth) {
        ADD("k_true", ATTEST_DTYPE_F32, ATTEST_ROLE_TRUTH, positions, p->head_dim);
        ADD("q_true", ATTEST_DTYPE_F32, ATTEST_ROLE_TRUTH, p->b, p->next_n, p->heads,
            p->head_dim);
    }
    return ATTEST_OK;
}

static attest_status check_pool(const char *what, attest_layout_id id, int32_t page_size,
                                int64_t *page_stride, int32_t num_pages, attest_layout *layout)
{
    ATTEST_RETURN_IF(page_size <= 0, ATTEST_ERR_INVALID_ARGUMENT, "%spage_size = %d must be > 0",
                     what, page_size);
    ATTEST_RETURN_IF(*page_stride < 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "%spage_stride = %lld is negative", what, (long long)*page_stride);
    attest_status st = attest_layout_make(id, (uint32_t)page_size, (uint64_t)*page_stride, layout);
    if (st != ATTEST_OK)
        return attest_fail(st, "%slayout: %s", what, attest_last_error());
    *page_stride = (int64_t)layout->page_stride;
    char field[48];
    snprintf(field, sizeof field, "%snum_pages", what);
    ATTEST_FORWARD(check_range(field, num_pages, 1, MAX_POOL_UNITS));
    ATTEST_RETURN_IF((uint64_t)num_pages * layout->page_stride > MAX_TENSOR_BYTES,
                     ATTEST_ERR_INVALID_ARGUMENT, "%spool of %d pages is too large", what,
                     num_pages);
    return ATTEST_OK;
}

static attest_status define_mla(attest_case *c, int with_truth)
{
    attest_mla_params *p = &c->params.mla;
    ATTEST_RETURN_IF(p->layout != ATTEST_LAYOUT_MLA_V4 && p->layout != ATTEST_LAYOUT_MLA_V32,
                     ATTEST_ERR_INVALID_ARGUMENT,
                     "layout must be mla-v4 or mla-v32 for mla-decode (got %d)", (int)p->layout);
    attest_layout layout, extra_layout;
    ATTEST_FORWARD(check_pool("", p->layout, p->page_size, &p->page_stride, p->num_pages, &layout));
    ATTEST_FORWARD(check_range("b", p->b, 1, MAX_BATCH));
    ATTEST_FORWARD(check_range("s_q", p->s_q, 1, MAX_QUERIES));
    ATTEST_FORWARD(check_range("h_q", p->h_q, 1, MAX_HEADS));
    ATTEST_FORWARD(check_range("d_qk", p->d_qk, layout.k_dim, layout.k_dim));
    ATTEST_FORWARD(check_range("d_v", p->d_v, layout.v_dim, layout.v_dim));
    ATTEST_FORWARD(check_range("topk", p->topk, 1, MAX_TOPK));
    ATTEST_RETURN_IF(!(p->sm_scale > 0.0f && p->sm_scale < 1e30f), ATTEST_ERR_INVALID_ARGUMENT,
                     "sm_scale = %g must be positive and finite", (double)p->sm_scale);
    ATTEST_FORWARD(check_range("lse_convention", p->lse_convention, ATTEST_LSE_EXCLUDES_SINK,
                               ATTEST_LSE_INCLUDES_SINK));
    if (p->has_extra) {
        ATTEST_FORWARD(check_pool("extra_", p->layout, p->extra_page_size, &p->extra_page_stride,
                                  p->extra_num_pages, &extra_layout));
        ATTEST_FORWARD(check_range("extra_topk", p->extra_topk, 1, MAX_TOPK));
    }
    const int64_t tokens = (int64_t)p->num_pages * p->page_size;
    ADD("cache_bytes", ATTEST_DTYPE_U8, ATTEST_ROLE_INPUT, (int64_t)p->num_pages * p->page_stride);
    ADD("q_bf16", ATTEST_DTYPE_BF16, ATTEST_ROLE_INPUT, p->b, p->s_q, p->h_q, p->d_qk);
    ADD("indices", ATTEST_DTYPE_I32, ATTEST_ROLE_INPUT, p->b, p->s_q, p->topk);
    if (p->has_topk_length) ADD("topk_length", ATTEST_DTYPE_I32, ATTEST_ROLE_INPUT, p->b);
    if (p->has_sink) ADD("attn_sink", ATTEST_DTYPE_F32, ATTEST_ROLE_INPUT, p->h_q);
    if (p->has_extra) {
        ADD("extra_cache_bytes", ATTEST_DTYPE_U8, ATTEST_ROLE_INPUT,
            (int64_t)p->extra_num_pages * p->extra_page_stride);
        ADD("extra_indices", ATTEST_DTYPE_I32, ATTEST_ROLE_INPUT, p->b, p->s_q, p->extra_topk);
        if (p->has_extra_topk_length)
            ADD("extra_topk_length", ATTEST_DTYPE_I32, ATTEST_ROLE_INPUT, p->b);
    }
    ADD("out_bf16", ATTEST_DTYPE_BF16, ATTEST_ROLE_OUTPUT, p->b, p->s_q, p->h_q, p->d_v);
    ADD("lse", ATTEST_DTYPE_F32, ATTEST_ROLE_OUTPUT, p->b, p->s_q, p->h_q);
    if (with_truth) {
        ADD("kv_true", ATTEST_DTYPE_F32, ATTEST_ROLE_TRUTH, tokens, (int64_t)layout.k_dim);
        if (p->has_extra)
            ADD("extra_kv_true", ATTEST_DTYPE_F32, ATTEST_ROLE_TRUTH,
                (int64_t)p->extra_num_pages * p->extra_page_size, (int64_t)layout.k_dim);
    }
    return ATTEST_OK;
}

attest_status attest_case_define_tensors(attest_case *c, int with_truth)
{
    ATTEST_RETURN_IF(c == NULL, ATTEST_ERR_INVALID_ARGUMENT, "case is NULL");
    ATTEST_RETURN_IF(c->heap_block_ != NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "case tensors are already placed; free the case first");
    c->num_tensors = 0;
    memset(c->tensors, 0, sizeof c->tensors);
    switch (c->kernel) {
    case ATTEST_KERNEL_INDEXER: return define_indexer(c, with_truth);
    case ATTEST_KERNEL_MLA_DECODE: return define_mla(c, with_truth);
    }
    return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "unknown kernel family %d", (int)c->kernel);
}

/* 256-byte alignment: what cudaMalloc gives, so a host copy behaves like a device buffer. */
#define TENSOR_ALIGN 256u

attest_status attest_case_alloc_heap(attest_case *c)
{
    ATTEST_RETURN_IF(c->heap_block_ != NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "case tensors are already placed");
    size_t total = 0;
    for (size_t i = 0; i < c->num_tensors; i++)
        total += (c->tensors[i].nbytes + TENSOR_ALIGN - 1) / TENSOR_ALIGN * TENSOR_ALIGN;
    if (total == 0) total = TENSOR_ALIGN;
    void *block = NULL;
    if (c->sparse_pools != 0) {
        /* Reserved, not committed: only the pages written (the reached pool pages and the small
         * tensors) cost memory; reading any other byte gives 0. */
        block = mmap(NULL, total, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (block == MAP_FAILED)
            return attest_fail(ATTEST_ERR_OUT_OF_MEMORY,
                               "cannot reserve %zu bytes of address space for a sparse case: %s",
                               total, strerror(errno));
        c->heap_map_bytes_ = total;
    } else {
        if (posix_memalign(&block, TENSOR_ALIGN, total) != 0)
            return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for a case",
                               total);
        memset(block, 0, total);
        c->heap_map_bytes_ = 0;
    }
    size_t offset = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        c->tensors[i].data = (uint8_t *)block + offset;
        offset += (c->tensors[i].nbytes + TENSOR_ALIGN - 1) / TENSOR_ALIGN * TENSOR_ALIGN;
    }
    c->heap_block_ = block;
    return ATTEST_OK;
}

void attest_case_free(attest_case *c)
{
    if (c == NULL) return;
    if (c->heap_map_bytes_)
        munmap(c->heap_block_, c->heap_map_bytes_);
    else
        free(c->heap_block_);
    c->heap_block_ = NULL;
    c->heap_map_bytes_ = 0;
    for (size_t i = 0; i < c->num_tensors; i++) c->tensors[i].data = NULL;
}

attest_tensor *attest_case_tensor(attest_case *c, const char *name)
{
    for (size_t i = 0; i < c->num_tensors; i++)
        if (attest_tensor_is(&c->tensors[i], name)) return &c->tensors[i];
    return NULL;
}

const attest_tensor *attest_case_tensor_const(const attest_case *c, const char *name)
{
    for (size_t i = 0; i < c->num_tensors; i++)
        if (attest_tensor_is(&c->tensors[i], name)) return &c->tensors[i];
    return NULL;
}

int32_t attest_indexer_row_length(const attest_indexer_params *p, const int32_t *context_lens,
                                  int32_t row)
{
    if (p == NULL || context_lens == NULL || p->next_n <= 0 || row < 0) return 0;
    const int32_t b = row / p->next_n, j = row % p->next_n;
    if (b >= p->b) return 0;
    int64_t len = (int64_t)context_lens[b] - p->next_n + j + 1;
    if (len > context_lens[b]) len = context_lens[b];
    if (len > p->max_len) len = p->max_len;
    return len < 0 ? 0 : (int32_t)len;
}
