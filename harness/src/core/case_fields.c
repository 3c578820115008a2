/* The case parameters as data (case.h, attest_case_param_fields): one row per parameter, in
 * parameter-string order. The parameter string (case_params.c), the case-file writer and the
 * reader (store/) walk these rows, so a name is written down once. */
#include <stddef.h>
#include <string.h>

#include "attest/case.h"
#include "attest/layout.h"

static const char *masking(int v) { return attest_masking_name((attest_masking)v); }
static const char *relu_nan(int v) { return attest_relu_nan_name((attest_relu_nan)v); }
static const char *topk_rule(int v) { return attest_topk_rule_name((attest_topk_rule)v); }
static const char *lse(int v) { return attest_lse_convention_name((attest_lse_convention)v); }
static const char *lonely(int v) { return attest_lonely_lse_name((attest_lonely_lse)v); }
static const char *minus_one(int v) { return attest_invalid_index_name((attest_invalid_index)v); }

/* The parameter string spelt by_score "score" before case files named the rule; stored results
 * and filters key on it, so the string keeps its spelling (the only value that differs). */
static const char *topk_rule_short(int v) { return v == ATTEST_TOPK_BY_SCORE ? "score" : NULL; }

_Static_assert(sizeof(attest_masking) == sizeof(int) && sizeof(attest_topk_rule) == sizeof(int) &&
                   sizeof(attest_relu_nan) == sizeof(int) &&
                   sizeof(attest_lse_convention) == sizeof(int) &&
                   sizeof(attest_lonely_lse) == sizeof(int) &&
                   sizeof(attest_invalid_index) == sizeof(int) &&
                   sizeof(attest_layout_id) == sizeof(int),
               "enum parameters are read and written as int");

#define IX(f) offsetof(attest_indexer_params, f)
#define ML(f) offsetof(attest_mla_params, f)
#define REQ ATTEST_ABSENT_REQUIRED, 0
#define DEF(v) ATTEST_ABSENT_VALUE, (v)
#define NAMES(n, f) (n), (f), NULL

static const attest_param_field indexer_fields[] = {
    {"layout", "layout", ATTEST_PARAM_FIXED_LAYOUT, 0, DEF(ATTEST_LAYOUT_C4_INDEXER), 0, 0, NULL, NULL, NULL},
    {"block_size", NULL, ATTEST_PARAM_FIXED, 0, DEF(ATTEST_INDEXER_BLOCK), 0, 0, NULL, NULL, NULL},
    {"block_bytes", NULL, ATTEST_PARAM_FIXED, 0, DEF(ATTEST_LAYOUT_C4_BLOCK_BYTES), 0, 0, NULL, NULL,
     NULL},
    {"b", "b", ATTEST_PARAM_I32, IX(b), REQ, 0, 0, NULL, NULL, NULL},
    {"next_n", "next_n", ATTEST_PARAM_I32, IX(next_n), DEF(1), 0, 0, NULL, NULL, NULL},
    {"heads", "h", ATTEST_PARAM_I32, IX(heads), REQ, 0, 0, NULL, NULL, NULL},
    {"head_dim", "d", ATTEST_PARAM_I32, IX(head_dim), DEF(128), 0, 0, NULL, NULL, NULL},
    {"num_blocks", "blocks", ATTEST_PARAM_I32, IX(num_blocks), REQ, 0, 0, NULL, NULL, NULL},
    /* The oracle schema leaves the table's width implicit. */
    {"blocks_per_req", "bpr", ATTEST_PARAM_I32, IX(blocks_per_req), ATTEST_ABSENT_TABLE_WIDTH, 0,
     0, 0, NULL, NULL, "block_table"},
    {"max_len", "max_len", ATTEST_PARAM_I32, IX(max_len), REQ, 0, 0, NULL, NULL, NULL},
    {"masking", "mask", ATTEST_PARAM_ENUM, IX(masking), DEF(ATTEST_MASK_NEG_INF), 0,
     NAMES(3, masking), NULL},
    {"topk", "topk", ATTEST_PARAM_I32, IX(topk), DEF(0), ATTEST_PARAM_IF_TOPK, 0, NULL, NULL, NULL},
    {"topk_rule", "topk_rule", ATTEST_PARAM_ENUM, IX(topk_rule), DEF(ATTEST_TOPK_BY_SCORE),
     ATTEST_PARAM_IF_TOPK, 2, topk_rule, topk_rule_short, NULL},
    /* Files written before the convention existed hold outputs of the default (to_zero); the
     * parameter string predates it and leaves it out. */
    {"relu_nan", NULL, ATTEST_PARAM_ENUM, IX(relu_nan), DEF(ATTEST_RELU_NAN_TO_ZERO), 0,
     NAMES(2, relu_nan), NULL},
};

static const attest_param_field mla_fields[] = {
    {"layout", "layout", ATTEST_PARAM_LAYOUT, ML(layout), REQ, 0, 0, NULL, NULL, NULL},
    {"page_size", "P", ATTEST_PARAM_I32, ML(page_size), REQ, ATTEST_PARAM_POOL, 0, NULL, NULL, NULL},
    {"page_stride", "stride", ATTEST_PARAM_I64, ML(page_stride), DEF(0), ATTEST_PARAM_POOL, 0, NULL,
     NULL, NULL},
    {"num_pages", "pages", ATTEST_PARAM_I32, ML(num_pages), REQ, ATTEST_PARAM_POOL, 0, NULL, NULL,
     NULL},
    {"b", "b", ATTEST_PARAM_I32, ML(b), REQ, 0, 0, NULL, NULL, NULL},
    {"s_q", "s_q", ATTEST_PARAM_I32, ML(s_q), REQ, 0, 0, NULL, NULL, NULL},
    {"h_q", "h", ATTEST_PARAM_I32, ML(h_q), REQ, 0, 0, NULL, NULL, NULL},
    {"d_qk", "d_qk", ATTEST_PARAM_I32, ML(d_qk), ATTEST_ABSENT_K_DIM, 0, 0, 0, NULL, NULL, NULL},
    {"d_v", "d_v", ATTEST_PARAM_I32, ML(d_v), ATTEST_ABSENT_V_DIM, 0, 0, 0, NULL, NULL, NULL},
    {"topk", "topk", ATTEST_PARAM_I32, ML(topk), REQ, 0, 0, NULL, NULL, NULL},
    {"sm_scale", "sm_scale", ATTEST_PARAM_F32, ML(sm_scale), ATTEST_ABSENT_INV_SQRT_DQK, 0, 0, 0,
     NULL, NULL, NULL},
    {"has_topk_length", "topk_length", ATTEST_PARAM_FLAG, ML(has_topk_length),
     ATTEST_ABSENT_DATASET, 0, 0, 0, NULL, NULL, "topk_length"},
    {"has_sink", "sink", ATTEST_PARAM_FLAG, ML(has_sink), ATTEST_ABSENT_DATASET, 0, 0, 0, NULL,
     NULL, "attn_sink"},
    {"lse_convention", "lse", ATTEST_PARAM_ENUM, ML(lse_convention),
     DEF(ATTEST_LSE_EXCLUDES_SINK), 0, NAMES(2, lse), NULL},
    /* Conventions the parameter string predates. */
    {"lonely_lse", NULL, ATTEST_PARAM_ENUM, ML(lonely_lse), DEF(ATTEST_LONELY_LSE_POS_INF), 0,
     NAMES(3, lonely), NULL},
    {"minus_one", NULL, ATTEST_PARAM_ENUM, ML(invalid_index), DEF(ATTEST_INVALID_SKIP), 0,
     NAMES(2, minus_one), NULL},
    {"has_extra", "extra", ATTEST_PARAM_FLAG, ML(has_extra), ATTEST_ABSENT_DATASET, 0, 0, 0, NULL,
     NULL, "extra_cache_bytes"},
    {"extra_page_size", "extra_P", ATTEST_PARAM_I32, ML(extra_page_size), REQ,
     ATTEST_PARAM_IF_EXTRA | ATTEST_PARAM_POOL, 0, NULL, NULL, NULL},
    {"extra_page_stride", "extra_stride", ATTEST_PARAM_I64, ML(extra_page_stride), DEF(0),
     ATTEST_PARAM_IF_EXTRA | ATTEST_PARAM_POOL, 0, NULL, NULL, NULL},
    {"extra_num_pages", "extra_pages", ATTEST_PARAM_I32, ML(extra_num_pages), REQ,
     ATTEST_PARAM_IF_EXTRA | ATTEST_PARAM_POOL, 0, NULL, NULL, NULL},
    {"extra_topk", "extra_topk", ATTEST_PARAM_I32, ML(extra_topk), REQ, ATTEST_PARAM_IF_EXTRA, 0,
     NULL, NULL, NULL},
    {"has_extra_topk_length", "extra_topk_length", ATTEST_PARAM_FLAG, ML(has_extra_topk_length),
     ATTEST_ABSENT_DATASET, 0, ATTEST_PARAM_IF_EXTRA, 0, NULL, NULL, "extra_topk_length"},
};

const attest_param_field *attest_case_param_fields(attest_kernel kernel, size_t *count)
{
    if (kernel == ATTEST_KERNEL_INDEXER) {
        *count = sizeof indexer_fields / sizeof indexer_fields[0];
        return indexer_fields;
    }
    if (kernel == ATTEST_KERNEL_MLA_DECODE) {
        *count = sizeof mla_fields / sizeof mla_fields[0];
        return mla_fields;
    }
    *count = 0;
    return NULL;
}

static const void *at(const attest_case *c, const attest_param_field *f)
{
    return (const char *)&c->params + f->offset;
}

int64_t attest_param_get(const attest_case *c, const attest_param_field *f)
{
    int32_t i32;
    int64_t i64;
    int e;
    switch (f->type) {
    case ATTEST_PARAM_I32:
    case ATTEST_PARAM_FLAG: memcpy(&i32, at(c, f), sizeof i32); return i32;
    case ATTEST_PARAM_I64: memcpy(&i64, at(c, f), sizeof i64); return i64;
    case ATTEST_PARAM_ENUM:
    case ATTEST_PARAM_LAYOUT: memcpy(&e, at(c, f), sizeof e); return e;
    case ATTEST_PARAM_FIXED_LAYOUT:
    case ATTEST_PARAM_FIXED: return f->fallback;
    case ATTEST_PARAM_F32: break;
    }
    return 0;
}

void attest_param_set(attest_case *c, const attest_param_field *f, int64_t v)
{
    void *p = (char *)&c->params + f->offset;
    const int32_t i32 = (int32_t)v;
    const int e = (int)v;
    switch (f->type) {
    case ATTEST_PARAM_I32:
    case ATTEST_PARAM_FLAG: memcpy(p, &i32, sizeof i32); break;
    case ATTEST_PARAM_I64: memcpy(p, &v, sizeof v); break;
    case ATTEST_PARAM_ENUM:
    case ATTEST_PARAM_LAYOUT: memcpy(p, &e, sizeof e); break;
    case ATTEST_PARAM_F32:
    case ATTEST_PARAM_FIXED_LAYOUT:
    case ATTEST_PARAM_FIXED: break;
    }
}

double attest_param_get_real(const attest_case *c, const attest_param_field *f)
{
    float x = 0;
    if (f->type == ATTEST_PARAM_F32) memcpy(&x, at(c, f), sizeof x);
    return (double)x;
}

void attest_param_set_real(attest_case *c, const attest_param_field *f, double v)
{
    const float x = (float)v;
    if (f->type == ATTEST_PARAM_F32) memcpy((char *)&c->params + f->offset, &x, sizeof x);
}

const char *attest_param_value_name(const attest_param_field *f, int64_t v, int short_form)
{
    if (!f) return NULL;
    if (f->type == ATTEST_PARAM_LAYOUT || f->type == ATTEST_PARAM_FIXED_LAYOUT)
        return v == (int)v ? attest_layout_name((attest_layout_id)v) : NULL;
    if (f->type != ATTEST_PARAM_ENUM || v < 0 || v >= f->num_values) return NULL;
    const char *s = short_form && f->short_name ? f->short_name((int)v) : NULL;
    return s ? s : f->value_name((int)v);
}

int attest_param_present(const attest_case *c, const attest_param_field *f)
{
    return !(f->flags & ATTEST_PARAM_IF_EXTRA) ||
           (c->kernel == ATTEST_KERNEL_MLA_DECODE && c->params.mla.has_extra);
}
