/* Perf mode (attest/bench.h): shape cases, bytes that must move, timed runs. */
#include "attest/bench.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/clock.h"
#include "attest/device.h"
#include "attest/layout.h"
#include "attest/numerics.h"
#include "attest/rng.h"

#define MAX_ITERS 100000

attest_bench_options attest_bench_defaults(void)
{
    attest_bench_options o = {3, 20, ATTEST_BENCH_DEFAULT_PEAK_GBPS};
    return o;
}

/* --- shapes ------------------------------------------------------------------------------- */

static int parse_int(const char *v, size_t n, int32_t lo, int32_t hi, int32_t *out)
{
    if (n == 0 || n > 10) return -1;
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') return -1;
        x = x * 10 + (v[i] - '0');
    }
    if (x < lo || x > hi) return -1;
    *out = (int32_t)x;
    return 0;
}

typedef struct shape_key {
    const char *key;
    int32_t lo, hi;
    size_t off;
} shape_key;

static const shape_key indexer_keys[] = {
    {"b", 1, 4096, offsetof(attest_bench_shape, b)},
    {"len", 0, 1 << 20, offsetof(attest_bench_shape, len)},
    {"max_len", 1, 1 << 20, offsetof(attest_bench_shape, max_len)},
    {"heads", 1, 1024, offsetof(attest_bench_shape, heads)},
    {"next_n", 1, 64, offsetof(attest_bench_shape, next_n)},
};
static const shape_key mla_keys[] = {
    {"b", 1, 4096, offsetof(attest_bench_shape, b)},
    {"s_q", 1, 64, offsetof(attest_bench_shape, s_q)},
    {"heads", 1, 1024, offsetof(attest_bench_shape, heads)},
    {"topk", 1, 1 << 16, offsetof(attest_bench_shape, topk)},
    {"ctx", 1, 1 << 20, offsetof(attest_bench_shape, ctx)},
};

attest_status attest_bench_parse_kernel_shape(attest_kernel kernel, const char *text,
                                              attest_bench_shape *out)
{
    ATTEST_RETURN_IF(!text || !out, ATTEST_ERR_INVALID_ARGUMENT, "bench: no shape");
    ATTEST_RETURN_IF(kernel != ATTEST_KERNEL_INDEXER && kernel != ATTEST_KERNEL_MLA_DECODE,
                     ATTEST_ERR_UNSUPPORTED, "bench: no shapes for %s kernels",
                     attest_kernel_name(kernel));
    const int mla = kernel == ATTEST_KERNEL_MLA_DECODE;
    const shape_key *keys = mla ? mla_keys : indexer_keys;
    const size_t num_keys = mla ? sizeof mla_keys / sizeof mla_keys[0]
                                : sizeof indexer_keys / sizeof indexer_keys[0];
    const char *names = mla ? "b, s_q, heads, topk, ctx, layout" : "b, len, max_len, heads, next_n";
    attest_bench_shape s;
    memset(&s, 0, sizeof s);
    s.kernel = kernel;
    s.heads = 64;
    s.next_n = 1;
    s.s_q = 1;
    s.layout = ATTEST_LAYOUT_MLA_V4;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        ATTEST_RETURN_IF(!eq, ATTEST_ERR_INVALID_ARGUMENT,
                         "shape '%s': expected key=value, got '%.*s'", text, (int)n, p);
        const size_t klen = (size_t)(eq - p), vlen = n - klen - 1;
        if (mla && klen == 6 && strncmp(p, "layout", 6) == 0) {
            if (vlen == 6 && strncmp(eq + 1, "mla-v4", 6) == 0)
                s.layout = ATTEST_LAYOUT_MLA_V4;
            else if (vlen == 7 && strncmp(eq + 1, "mla-v32", 7) == 0)
                s.layout = ATTEST_LAYOUT_MLA_V32;
            else
                return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                                   "shape '%s': layout must be mla-v4 or mla-v32", text);
            p += n;
            if (*p == ',') p++;
            continue;
        }
        size_t k = 0;
        while (k < num_keys && (strlen(keys[k].key) != klen || strncmp(keys[k].key, p, klen) != 0))
            k++;
        ATTEST_RETURN_IF(k == num_keys, ATTEST_ERR_INVALID_ARGUMENT,
                         "shape '%s': unknown key '%.*s' (%s)", text, (int)klen, p, names);
        int32_t *field = (int32_t *)((char *)&s + keys[k].off);
        ATTEST_RETURN_IF(parse_int(eq + 1, vlen, keys[k].lo, keys[k].hi, field) != 0,
                         ATTEST_ERR_INVALID_ARGUMENT,
                         "shape '%s': bad value for %s (%d..%d)", text, keys[k].key,
                         keys[k].lo, keys[k].hi);
        p += n;
        if (*p == ',') p++;
    }
    ATTEST_RETURN_IF(s.b == 0, ATTEST_ERR_INVALID_ARGUMENT, "shape '%s': b is required",
                     text);
    if (mla) {
        ATTEST_RETURN_IF(s.topk == 0, ATTEST_ERR_INVALID_ARGUMENT,
                         "shape '%s': topk is required", text);
        if (s.ctx == 0) s.ctx = s.topk;
        ATTEST_RETURN_IF(s.topk > s.ctx, ATTEST_ERR_INVALID_ARGUMENT,
                         "shape '%s': topk %d exceeds ctx %d", text, s.topk, s.ctx);
        *out = s;
        return ATTEST_OK;
    }
    if (s.max_len == 0) s.max_len = s.len;
    ATTEST_RETURN_IF(s.max_len == 0, ATTEST_ERR_INVALID_ARGUMENT,
                     "shape '%s': len or max_len is required", text);
    ATTEST_RETURN_IF(s.len > s.max_len, ATTEST_ERR_INVALID_ARGUMENT,
                     "shape '%s': len %d exceeds max_len %d", text, s.len, s.max_len);
    *out = s;
    return ATTEST_OK;
}

attest_status attest_bench_parse_shape(const char *text, attest_bench_shape *out)
{
    return attest_bench_parse_kernel_shape(ATTEST_KERNEL_INDEXER, text, out);
}

void attest_bench_shape_string(const attest_bench_shape *s, char *buf, size_t cap)
{
    if (s->kernel == ATTEST_KERNEL_MLA_DECODE)
        snprintf(buf, cap, "b=%d,s_q=%d,heads=%d,topk=%d,ctx=%d,layout=%s", s->b, s->s_q,
                 s->heads, s->topk, s->ctx,
                 s->layout == ATTEST_LAYOUT_MLA_V32 ? "mla-v32" : "mla-v4");
    else
        snprintf(buf, cap, "b=%d,len=%d,max_len=%d,heads=%d,next_n=%d", s->b, s->len, s->max_len,
                 s->heads, s->next_n);
}

/* --- the case of a shape -------------------------------------------------------------------- */

static uint8_t finite_fp8(attest_rng *r)
{
    uint8_t v = (uint8_t)attest_rng_u32(r);
    return (v & 0x7F) == 0x7F ? (uint8_t)(v ^ 1) : v; /* 0x7F / 0xFF are NaN in e4m3fn */
}

/* Random finite keys and power-of-two scales in every block, at the layout's offsets. */
static attest_status fill_cache(attest_case *c, attest_rng *r)
{
    attest_layout L;
    ATTEST_FORWARD(attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, ATTEST_INDEXER_BLOCK, 0, &L));
    uint8_t *cache = attest_case_tensor(c, "cache_bytes")->data;
    for (int64_t blk = 0; blk < c->params.indexer.num_blocks; blk++) {
        uint8_t *b = cache + (uint64_t)blk * L.page_stride;
        for (uint32_t i = 0; i < L.page_size * L.fp8_dim; i++) b[i] = finite_fp8(r);
        for (uint32_t t = 0; t < L.page_size; t++) { /* powers of two in [2^-8, 2^-4] */
            const float scale = 1.0f / (float)(16u << attest_rng_below(r, 5));
            attest_token_offsets o;
            ATTEST_FORWARD(attest_layout_token_offsets(&L, t, &o));
            memcpy(b + o.scale[0], &scale, 4);
        }
    }
    return ATTEST_OK;
}

/* A shuffled order of n pages: consecutive pages of a request are scattered as in a serving
 * cache. NULL when out of memory. */
static int32_t *shuffled(int32_t n, attest_rng *r)
{
    int32_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order) return NULL;
    for (int32_t i = 0; i < n; i++) order[i] = i;
    for (int32_t i = n - 1; i > 0; i--) {
        const int32_t j = (int32_t)attest_rng_below(r, (uint64_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return order;
}

/* MLA decode: request i's ctx tokens on ceil(ctx / 64) pages of a shuffled pool, random values
 * quantized by the layout's writer (power-of-two scales), each query selecting topk distinct
 * tokens of its request in random order. */
static attest_status mla_case(const attest_bench_shape *s, uint64_t seed, attest_case *out)
{
    memset(out, 0, sizeof *out);
    out->kernel = ATTEST_KERNEL_MLA_DECODE;
    out->seed = seed;
    attest_mla_params *p = &out->params.mla;
    attest_layout L;
    ATTEST_FORWARD(attest_layout_make((attest_layout_id)s->layout, 64, 0, &L));
    const int32_t ppr = (s->ctx + 63) / 64;
    ATTEST_RETURN_IF((int64_t)s->b * ppr > INT32_MAX / 64, ATTEST_ERR_INVALID_ARGUMENT,
                     "bench: b x ctx is too many tokens");
    p->layout = (attest_layout_id)s->layout;
    p->page_size = 64;
    p->page_stride = (int64_t)L.page_stride;
    p->num_pages = s->b * ppr;
    p->b = s->b;
    p->s_q = s->s_q;
    p->h_q = s->heads;
    p->d_qk = (int32_t)L.k_dim;
    p->d_v = (int32_t)L.v_dim;
    p->topk = s->topk;
    p->sm_scale = (float)(1.0 / sqrt((double)p->d_qk));
    p->lse_convention = ATTEST_LSE_EXCLUDES_SINK;
    ATTEST_FORWARD(attest_case_define_tensors(out, 0));
    ATTEST_FORWARD(attest_case_alloc_heap(out));
    attest_rng r;
    attest_rng_seed(&r, seed);
    int32_t *order = shuffled(p->num_pages, &r);
    int32_t *pick = malloc((size_t)s->ctx * sizeof *pick);
    float *values = malloc(L.k_dim * sizeof *values);
    attest_status st = order && pick && values
                           ? ATTEST_OK
                           : attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "bench: out of memory");
    const attest_scale_policy policy = {ATTEST_SCALE_POW2, ATTEST_UE8M0_FLASHMLA,
                                        ATTEST_FP8_SATFINITE};
    uint8_t *pool = attest_case_tensor(out, "cache_bytes")->data;
    for (int32_t i = 0; st == ATTEST_OK && i < p->b; i++) {
        for (int32_t t = 0; st == ATTEST_OK && t < s->ctx; t++) {
            for (uint32_t d = 0; d < L.k_dim; d++)
                values[d] = ((float)attest_rng_below(&r, 2001) - 1000.0f) / 500.0f;
            const int32_t page = order[(size_t)i * ppr + t / 64];
            st = attest_layout_encode_token(&L, pool + (size_t)page * L.page_stride,
                                            (uint32_t)(t % 64), values, &policy);
        }
    }
    int32_t *idx = attest_case_tensor(out, "indices")->data;
    for (int32_t i = 0; st == ATTEST_OK && i < p->b; i++) {
        for (int32_t q = 0; q < p->s_q; q++) {
            /* A partial Fisher-Yates: the first topk of a shuffled 0..ctx-1. */
            for (int32_t t = 0; t < s->ctx; t++) pick[t] = t;
            int32_t *row = idx + ((size_t)i * p->s_q + q) * p->topk;
            for (int32_t k = 0; k < p->topk; k++) {
                const int32_t j = k + (int32_t)attest_rng_below(&r, (uint64_t)(s->ctx - k)), t = pick[j];
                pick[j] = pick[k];
                pick[k] = t;
                row[k] = order[(size_t)i * ppr + t / 64] * 64 + t % 64;
            }
        }
    }
    if (st == ATTEST_OK) {
        attest_tensor *qt = attest_case_tensor(out, "q_bf16");
        uint16_t *qv = qt->data;
        for (size_t i = 0; i < attest_tensor_count(qt); i++)
            qv[i] = attest_bf16_encode(((float)attest_rng_below(&r, 2001) - 1000.0f) / 1000.0f);
    }
    free(order);
    free(pick);
    free(values);
    if (st != ATTEST_OK) attest_case_free(out);
    return st;
}

attest_status attest_bench_case(const attest_bench_shape *s, uint64_t seed, attest_case *out)
{
    if (s->kernel == ATTEST_KERNEL_MLA_DECODE) return mla_case(s, seed, out);
    ATTEST_RETURN_IF(s->kernel != ATTEST_KERNEL_INDEXER, ATTEST_ERR_UNSUPPORTED,
                     "bench: no shapes for %s kernels", attest_kernel_name(s->kernel));
    memset(out, 0, sizeof *out);
    out->kernel = ATTEST_KERNEL_INDEXER;
    out->seed = seed;
    attest_indexer_params *p = &out->params.indexer;
    const int32_t pages = (s->len + 63) / 64;
    p->b = s->b;
    p->next_n = s->next_n;
    p->heads = s->heads;
    p->head_dim = 128;
    p->max_len = s->max_len;
    p->blocks_per_req = (s->max_len + 63) / 64;
    p->num_blocks = s->b * pages > 0 ? s->b * pages : 1;
    p->masking = ATTEST_MASK_NEG_INF;
    ATTEST_FORWARD(attest_case_define_tensors(out, 0));
    ATTEST_FORWARD(attest_case_alloc_heap(out));
    attest_rng r;
    attest_rng_seed(&r, seed);
    const attest_status fill = fill_cache(out, &r);
    if (fill != ATTEST_OK) {
        attest_case_free(out);
        return fill;
    }
    int32_t *order = shuffled(p->num_blocks, &r);
    if (!order) {
        attest_case_free(out);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "bench: no memory for the page table");
    }
    int32_t *table = attest_case_tensor(out, "block_table")->data; /* zero past the length */
    int32_t *lens = attest_case_tensor(out, "context_lens")->data;
    for (int32_t i = 0; i < p->b; i++) {
        lens[i] = s->len;
        for (int32_t j = 0; j < pages; j++)
            table[(size_t)i * p->blocks_per_req + j] = order[(size_t)i * pages + j];
    }
    free(order);
    attest_tensor *q = attest_case_tensor(out, "q_fp8");
    for (size_t i = 0; i < q->nbytes; i++) ((uint8_t *)q->data)[i] = finite_fp8(&r);
    attest_tensor *w = attest_case_tensor(out, "weights");
    float *wv = w->data;
    for (size_t i = 0; i < attest_tensor_count(w); i++)
        wv[i] = ((float)attest_rng_below(&r, 2001) - 1000.0f) / 8000.0f;
    return ATTEST_OK;
}

/* MLA decode: the distinct tokens each request's queries select (valid entries only), their
 * indices, q; out and lse written. */
static void mla_bytes(const attest_case *c, double *read_bytes, double *write_bytes)
{
    const attest_mla_params *p = &c->params.mla;
    attest_layout L;
    if (attest_layout_make(p->layout, (uint32_t)p->page_size, (uint64_t)p->page_stride, &L) != ATTEST_OK) {
        attest_clear_error();
        return;
    }
    const attest_tensor *it = attest_case_tensor_const(c, "indices");
    const int64_t tokens = (int64_t)p->num_pages * p->page_size;
    uint8_t *seen = it ? calloc((size_t)(tokens > 0 ? tokens : 1), 1) : NULL;
    double distinct = 0;
    for (int32_t i = 0; seen && i < p->b; i++) {
        const int32_t *row = (const int32_t *)it->data + (size_t)i * p->s_q * p->topk;
        for (int64_t k = 0; k < (int64_t)p->s_q * p->topk; k++)
            if (row[k] >= 0 && row[k] < tokens && !seen[row[k]]) {
                seen[row[k]] = 1;
                distinct++;
            }
        for (int64_t k = 0; k < (int64_t)p->s_q * p->topk; k++)
            if (row[k] >= 0 && row[k] < tokens) seen[row[k]] = 0;
    }
    free(seen);
    const double queries = (double)p->b * p->s_q;
    *read_bytes = distinct * L.token_bytes + queries * p->topk * 4.0 +
                  queries * p->h_q * (double)p->d_qk * 2.0;
    *write_bytes = queries * p->h_q * ((double)p->d_v * 2.0 + 4.0);
}

void attest_bench_bytes(const attest_case *c, attest_masking masking, double *read_bytes,
                        double *write_bytes)
{
    *read_bytes = *write_bytes = 0;
    if (c->kernel == ATTEST_KERNEL_MLA_DECODE) {
        mla_bytes(c, read_bytes, write_bytes);
        return;
    }
    if (c->kernel != ATTEST_KERNEL_INDEXER) return;
    const attest_indexer_params *p = &c->params.indexer;
    const attest_tensor *lens_t = attest_case_tensor_const(c, "context_lens");
    const int32_t *lens = lens_t ? lens_t->data : NULL;
    double rd = 0;
    for (int32_t i = 0; lens && i < p->b; i++) {
        const int32_t len = lens[i] < p->max_len ? lens[i] : p->max_len;
        const double pages = len > 0 ? (double)((len + 63) / 64) : 0.0;
        rd += pages * ((double)ATTEST_LAYOUT_C4_BLOCK_BYTES + 4.0) + 4.0;
    }
    const double rows = (double)p->b * p->next_n;
    rd += rows * p->heads * (double)p->head_dim + rows * p->heads * 4.0;
    *read_bytes = rd;
    if (masking != ATTEST_MASK_UNSPECIFIED || !lens) {
        *write_bytes = rows * p->max_len * 4.0;
        return;
    }
    double wr = 0;
    for (int32_t r = 0; r < p->b * p->next_n; r++) wr += attest_indexer_row_length(p, lens, r) * 4.0;
    *write_bytes = wr;
}

/* --- timing --------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void summarize(double *us, int n, attest_bench_result *out)
{
    qsort(us, (size_t)n, sizeof *us, cmp_double);
    out->iters = n;
    out->min_us = us[0];
    out->max_us = us[n - 1];
    out->median_us = n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
    out->p10_us = us[(n - 1) / 10];
    out->p90_us = us[(n - 1) - (n - 1) / 10];
}

/* Device placement: one allocation, every tensor 256-byte aligned, inputs copied once. */
typedef struct placed {
    void *base;
    attest_case local;
} placed;

static attest_status place_on_device(const attest_device_ops *ops, const attest_case *c,
                                     placed *pl)
{
    size_t total = 0;
    for (size_t i = 0; i < c->num_tensors; i++) total += (c->tensors[i].nbytes + 255) & ~(size_t)255;
    ATTEST_RETURN_IF(ops->alloc(&pl->base, total ? total : 256) != 0, ATTEST_ERR_DEVICE,
                     "bench: cannot allocate %zu bytes on the device: %s", total,
                     ops->last_error());
    pl->local = *c;
    pl->local.heap_block_ = NULL;
    size_t off = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        attest_tensor *t = &pl->local.tensors[i];
        t->data = (uint8_t *)pl->base + off;
        off += (t->nbytes + 255) & ~(size_t)255;
        if (t->role == ATTEST_ROLE_INPUT && t->nbytes &&
            ops->copy_h2d(t->data, c->tensors[i].data, t->nbytes) != 0)
            return attest_fail(ATTEST_ERR_DEVICE, "bench: copy to the device failed: %s",
                               ops->last_error());
    }
    return ATTEST_OK;
}

attest_status attest_bench_run(const attest_candidate *cand, attest_case *c,
                               const attest_bench_options *opt, attest_bench_result *out)
{
    memset(out, 0, sizeof *out);
    ATTEST_RETURN_IF(opt->iters < 1 || opt->iters > MAX_ITERS || opt->warmup < 0,
                     ATTEST_ERR_INVALID_ARGUMENT, "bench: iterations must be 1..%d", MAX_ITERS);
    ATTEST_RETURN_IF(cand->kernel != c->kernel, ATTEST_ERR_INVALID_ARGUMENT,
                     "bench: candidate '%s' is not a %s kernel", cand->name,
                     attest_kernel_name(c->kernel));
    const int on_device = cand->domain == ATTEST_DOMAIN_DEVICE;
    const attest_device_ops *ops = on_device ? attest_device_ops_get() : NULL;
    ATTEST_RETURN_IF(on_device && !ops, ATTEST_ERR_DEVICE,
                     "bench: no device ops registered (attest built without CUDA?)");
    placed pl;
    memset(&pl, 0, sizeof pl);
    if (on_device) {
        char msg[160] = "";
        ATTEST_RETURN_IF(ops->open(msg, sizeof msg) != 0, ATTEST_ERR_DEVICE, "bench: %s",
                         msg[0] ? msg : ops->last_error());
        if (ops->describe && ops->describe(out->device, sizeof out->device) != 0)
            out->device[0] = '\0';
    }
    double *us = malloc((size_t)opt->iters * sizeof *us);
    ATTEST_RETURN_IF(!us, ATTEST_ERR_OUT_OF_MEMORY, "bench: out of memory");
    attest_status st = on_device ? place_on_device(ops, c, &pl) : ATTEST_OK;
    attest_case *view = on_device ? &pl.local : c;
    attest_kernel_args args;
    memset(&args, 0, sizeof args);
    if (st == ATTEST_OK) st = attest_case_args(view, &args);
    args.domain = cand->domain;
    void *ctx = NULL;
    int inited = 0;
    if (st == ATTEST_OK && cand->init) {
        if (cand->init(&ctx) != 0)
            st = attest_fail(ATTEST_ERR_DEVICE, "bench: '%s' init() failed", cand->name);
        else
            inited = 1;
    } else if (st == ATTEST_OK) {
        inited = 1;
    }
    if (st == ATTEST_OK && cand->supports && !cand->supports(ctx, &args))
        st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "bench: '%s' declines this shape",
                         cand->name);
    const int timer = on_device && ATTEST_DEVICE_HAS_OP(ops, timer_stop) && ops->timer_start;
    for (int i = 0; st == ATTEST_OK && i < opt->warmup + opt->iters; i++) {
        const int timed = i >= opt->warmup;
        double t0 = attest_monotonic_seconds(), ms = 0;
        if (timed && timer && ops->timer_start() != 0)
            st = attest_fail(ATTEST_ERR_DEVICE, "bench: device timer: %s", ops->last_error());
        if (st != ATTEST_OK) break;
        const int rc = cand->run(ctx, &args);
        if (rc != 0) {
            st = attest_fail(ATTEST_ERR_DEVICE, "bench: '%s' run() returned %d", cand->name, rc);
            break;
        }
        if (timed && timer && ops->timer_stop(&ms) != 0) {
            st = attest_fail(ATTEST_ERR_DEVICE, "bench: device timer: %s", ops->last_error());
            break;
        }
        if (on_device && ops->synchronize() != 0) {
            st = attest_fail(ATTEST_ERR_DEVICE, "bench: device fault: %s", ops->last_error());
            break;
        }
        if (timed) us[i - opt->warmup] = timer ? ms * 1e3 : (attest_monotonic_seconds() - t0) * 1e6;
    }
    if (inited && cand->fini) cand->fini(ctx);
    if (pl.base) ops->free(pl.base);
    if (st == ATTEST_OK) {
        summarize(us, opt->iters, out);
        out->device_timed = timer;
        attest_bench_bytes(c, cand->conventions.masking, &out->read_bytes, &out->write_bytes);
        out->gbps = out->median_us > 0 ? (out->read_bytes + out->write_bytes) / (out->median_us * 1e3) : 0;
        out->pct_peak = opt->peak_gbps > 0 ? 100.0 * out->gbps / opt->peak_gbps : 0;
    }
    free(us);
    return st;
}
