/* attest fixture: edge tags of generated cases (fixture.h). Each tag is decided from the case's
 * own tensors where they show it, and from the generator's info only for what they do not (the
 * request lengths of an mla case, where NaN bytes were put). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/layout.h"
#include "attest/reference.h"
#include "fixture.h"

enum {
    /* indexer */
    T_IDX_LEN0, T_IDX_LEN1, T_IDX_BLOCK_EDGE, T_IDX_MTP, T_IDX_MTP_EMPTY_ROW, T_IDX_ROW_FULL,
    T_IDX_TOPK_SHORT, T_IDX_NAN_SELECTED,
    /* mla-decode */
    T_MLA_LEN0, T_MLA_PAGE_EDGE, T_MLA_LONELY, T_MLA_TOPK_LEN0, T_MLA_PAST_TOPK_LEN,
    T_MLA_DUPLICATES, T_MLA_SINK_POSINF, T_MLA_SINK_NEGINF, T_MLA_EXTRA, T_MLA_NAN_UNSELECTED,
    T_MLA_NAN_SELECTED, T_MLA_SPARSE_FILL, T_MLA_SMALL_PAGE, T_MLA_PADDED_PAGE,
    T_COUNT_
};

static const fixture_tag_def tags[T_COUNT_] = {
    {"len-0", ATTEST_KERNEL_INDEXER, 0, "a request with context length 0 (its rows are all masked)"},
    {"len-1", ATTEST_KERNEL_INDEXER, 0, "a request with context length 1"},
    {"block-edge", ATTEST_KERNEL_INDEXER, 0,
     "a context length at a 64-position block boundary +-1 (63, 64, 65, 127, ...)"},
    {"mtp", ATTEST_KERNEL_INDEXER, 0, "next_n > 1: MTP rows with the causal rule"},
    {"mtp-empty-row", ATTEST_KERNEL_INDEXER, 0,
     "an MTP row of valid length 0 in a request of length > 0 (L < next_n)"},
    {"row-full", ATTEST_KERNEL_INDEXER, 0, "a row whose valid length is max_len (no masked tail)"},
    {"topk-short", ATTEST_KERNEL_INDEXER, 0, "top-k on, a row with 0 < length < k"},
    {"nan-selected", ATTEST_KERNEL_INDEXER, 0,
     "a NaN fp8 byte in a key or query the logits depend on"},
    {"len-0", ATTEST_KERNEL_MLA_DECODE, 0, "a request holding no token"},
    {"page-edge", ATTEST_KERNEL_MLA_DECODE, 0,
     "a request length at a page boundary +-1 (P-1, P, P+1, 2P-1, ...; P >= 16)"},
    {"lonely-query", ATTEST_KERNEL_MLA_DECODE, 0,
     "a query with no valid index in any scope (out = 0, lse = +inf)"},
    {"topk-length-0", ATTEST_KERNEL_MLA_DECODE, 0, "a request with topk_length 0"},
    {"past-topk-length", ATTEST_KERNEL_MLA_DECODE, 0,
     "indices other than -1 past a request's topk_length (must be ignored)"},
    {"duplicates", ATTEST_KERNEL_MLA_DECODE, 0, "a valid index repeated within one query's slots"},
    {"sink+inf", ATTEST_KERNEL_MLA_DECODE, 0, "an attention sink of +inf (out = 0 for that head)"},
    {"sink-inf", ATTEST_KERNEL_MLA_DECODE, 0, "an attention sink of -inf (no effect)"},
    {"extra-scope", ATTEST_KERNEL_MLA_DECODE, ATTEST_LAYOUT_MLA_V4,
     "a second (extra) scope joined in the same softmax"},
    {"nan-unselected", ATTEST_KERNEL_MLA_DECODE, 0,
     "NaN bytes in written tokens no valid index selects (must not leak)"},
    {"nan-selected", ATTEST_KERNEL_MLA_DECODE, 0, "a NaN fp8 byte in a selected token (out is NaN)"},
    {"sparse-fill", ATTEST_KERNEL_MLA_DECODE, 0,
     "only selected tokens written, every other slot 0xFF poison"},
    {"small-page", ATTEST_KERNEL_MLA_DECODE, 0, "page size <= 2: requests span many pages"},
    {"padded-page", ATTEST_KERNEL_MLA_DECODE, ATTEST_LAYOUT_MLA_V32,
     "mla-v32 pages padded past P * 656 bytes"},
};

const fixture_tag_def *fixture_tag_table(size_t *count)
{
    *count = T_COUNT_;
    return tags;
}

#define BIT(t) ((fixture_tags)1u << (t))

static const void *data_of(const attest_case *c, const char *name)
{
    const attest_tensor *t = attest_case_tensor_const(c, name);
    return t ? t->data : NULL;
}

static fixture_tags indexer_tags(const attest_case *c, const attest_gen_info *info)
{
    const attest_indexer_params *p = &c->params.indexer;
    const int32_t *lens = data_of(c, "context_lens");
    fixture_tags t = 0;
    if (!lens) return 0;
    for (int32_t b = 0; b < p->b; b++) {
        const int32_t L = lens[b], m = L % 64;
        if (L == 0) t |= BIT(T_IDX_LEN0);
        if (L == 1) t |= BIT(T_IDX_LEN1);
        if (L >= 63 && (m == 63 || m == 0 || m == 1)) t |= BIT(T_IDX_BLOCK_EDGE);
    }
    if (p->next_n > 1) t |= BIT(T_IDX_MTP);
    for (int32_t r = 0; r < p->b * p->next_n; r++) {
        const int32_t len = attest_indexer_row_length(p, lens, r);
        if (len == 0 && lens[r / p->next_n] > 0) t |= BIT(T_IDX_MTP_EMPTY_ROW);
        if (len == p->max_len) t |= BIT(T_IDX_ROW_FULL);
        if (p->topk > 0 && len > 0 && len < p->topk) t |= BIT(T_IDX_TOPK_SHORT);
    }
    if (info && info->nan_selected) t |= BIT(T_IDX_NAN_SELECTED);
    return t;
}

/* Valid slots of one query in one scope: below the request's topk_length, index != -1. */
static int32_t valid_slots(const int32_t *row, int32_t topk, const int32_t *tl, int32_t b)
{
    int32_t lim = tl ? tl[b] : topk, n = 0;
    if (lim > topk) lim = topk;
    for (int32_t k = 0; k < lim; k++) n += row[k] != -1;
    return n;
}

static fixture_tags mla_tags(const attest_case *c, const attest_gen_info *info)
{
    const attest_mla_params *p = &c->params.mla;
    const int32_t *idx = data_of(c, "indices"), *tl = data_of(c, "topk_length");
    const int32_t *xidx = data_of(c, "extra_indices"), *xtl = data_of(c, "extra_topk_length");
    const float *sink = data_of(c, "attn_sink");
    fixture_tags t = 0;
    if (!idx) return 0;
    if (info && info->lens)
        for (int32_t b = 0; b < p->b; b++) {
            const int32_t L = info->lens[b], P = p->page_size, m = L % P;
            if (L == 0) t |= BIT(T_MLA_LEN0);
            if (P >= 16 && L >= P - 1 && (m == P - 1 || m == 0 || m == 1))
                t |= BIT(T_MLA_PAGE_EDGE);
        }
    for (int32_t b = 0; b < p->b; b++) {
        if (tl && tl[b] == 0) t |= BIT(T_MLA_TOPK_LEN0);
        for (int32_t q = 0; q < p->s_q; q++) {
            const int32_t *row = idx + ((size_t)b * p->s_q + q) * p->topk;
            int32_t valid = valid_slots(row, p->topk, tl, b);
            if (xidx)
                valid += valid_slots(xidx + ((size_t)b * p->s_q + q) * p->extra_topk, p->extra_topk,
                                     xtl, b);
            if (valid == 0) t |= BIT(T_MLA_LONELY);
            const int32_t lim = tl && tl[b] < p->topk ? tl[b] : p->topk;
            for (int32_t k = lim; k < p->topk; k++)
                if (row[k] != -1) t |= BIT(T_MLA_PAST_TOPK_LEN);
            for (int32_t k = 1; k < lim; k++)
                for (int32_t j = 0; j < k && row[k] != -1; j++)
                    if (row[j] == row[k]) t |= BIT(T_MLA_DUPLICATES);
        }
    }
    for (int32_t h = 0; sink && h < p->h_q; h++) {
        if (sink[h] == INFINITY) t |= BIT(T_MLA_SINK_POSINF);
        if (sink[h] == -INFINITY) t |= BIT(T_MLA_SINK_NEGINF);
    }
    if (p->has_extra) t |= BIT(T_MLA_EXTRA);
    if (info && info->nan_unselected > 0) t |= BIT(T_MLA_NAN_UNSELECTED);
    if (info && info->nan_selected) t |= BIT(T_MLA_NAN_SELECTED);
    if (info && info->sparse_fill) t |= BIT(T_MLA_SPARSE_FILL);
    if (p->page_size <= 2) t |= BIT(T_MLA_SMALL_PAGE);
    if (p->layout == ATTEST_LAYOUT_MLA_V32 &&
        (uint64_t)p->page_stride >
            attest_layout_default_stride(ATTEST_LAYOUT_MLA_V32, (uint32_t)p->page_size))
        t |= BIT(T_MLA_PADDED_PAGE);
    return t;
}

fixture_tags fixture_case_tags(const attest_case *c, const attest_gen_info *info)
{
    return c->kernel == ATTEST_KERNEL_INDEXER ? indexer_tags(c, info) : mla_tags(c, info);
}

/* Distinct slots selected by valid entries of one scope's indices. */
static double selected_tokens(const int32_t *idx, const int32_t *tl, int32_t b, int32_t s_q,
                              int32_t topk, int64_t slots)
{
    uint8_t *seen = calloc((size_t)(slots > 0 ? slots : 1), 1);
    double n = 0;
    if (!seen) return (double)b * s_q * topk;
    for (int32_t bi = 0; bi < b; bi++)
        for (int32_t q = 0; q < s_q; q++) {
            const int32_t *row = idx + ((size_t)bi * s_q + q) * topk;
            const int32_t lim = tl && tl[bi] < topk ? tl[bi] : topk;
            for (int32_t k = 0; k < lim; k++)
                if (row[k] >= 0 && row[k] < slots && !seen[row[k]]) {
                    seen[row[k]] = 1;
                    n++;
                }
        }
    free(seen);
    return n;
}

double fixture_case_cost(const attest_case *c, const attest_gen_info *info)
{
    double bytes = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role == ATTEST_ROLE_OUTPUT) bytes += (double)attest_tensor_count(t) * 8.0;
        else if (!strstr(t->name, "cache_bytes")) bytes += (double)t->nbytes;
    }
    /* A position's cache bytes over all its regions, from the layout's descriptor. */
    const attest_layout_id id =
        c->kernel == ATTEST_KERNEL_INDEXER ? ATTEST_LAYOUT_C4_INDEXER : c->params.mla.layout;
    attest_layout L;
    memset(&L, 0, sizeof L);
    if (attest_layout_make(id, ATTEST_INDEXER_BLOCK, 0, &L) != ATTEST_OK) attest_clear_error();
    const double tb = (double)L.token_bytes;
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        const int32_t *lens = data_of(c, "context_lens");
        for (int32_t b = 0; lens && b < c->params.indexer.b; b++) bytes += tb * lens[b];
        return bytes;
    }
    const attest_mla_params *p = &c->params.mla;
    if (info && !info->sparse_fill) {
        for (int32_t b = 0; info->lens && b < p->b; b++) bytes += tb * info->lens[b];
        for (int32_t b = 0; info->extra_lens && b < p->b; b++) bytes += tb * info->extra_lens[b];
        return bytes;
    }
    const int32_t *idx = data_of(c, "indices"), *xidx = data_of(c, "extra_indices");
    if (idx)
        bytes += tb * selected_tokens(idx, data_of(c, "topk_length"), p->b, p->s_q, p->topk,
                                      (int64_t)p->num_pages * p->page_size);
    if (xidx)
        bytes += tb * selected_tokens(xidx, data_of(c, "extra_topk_length"), p->b, p->s_q,
                                      p->extra_topk, (int64_t)p->extra_num_pages * p->extra_page_size);
    return bytes;
}

attest_status fixture_tags_parse(const char *list, attest_kernel kernel, int32_t layout,
                                 fixture_tags *out)
{
    *out = 0;
    if (!strcmp(list, "all")) {
        for (int i = 0; i < T_COUNT_; i++)
            if (tags[i].kernel == kernel && (!layout || !tags[i].layout || tags[i].layout == layout))
                *out |= BIT(i);
        return ATTEST_OK;
    }
    const char *s = list;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        int found = -1;
        for (int i = 0; i < T_COUNT_ && found < 0; i++)
            if (tags[i].kernel == kernel && strlen(tags[i].name) == n && !strncmp(tags[i].name, s, n))
                found = i;
        if (found < 0) {
            char known[512] = "";
            size_t k = 0;
            for (int i = 0; i < T_COUNT_ && k < sizeof known; i++)
                if (tags[i].kernel == kernel)
                    k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", k ? ", " : "",
                                          tags[i].name);
            return attest_fail(ATTEST_ERR_NOT_FOUND, "--cover: unknown %s edge tag '%.*s' (known: %s)",
                               attest_kernel_name(kernel), (int)n, s, known);
        }
        if (layout && tags[found].layout && tags[found].layout != layout)
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                               "--cover: edge tag '%s' needs layout %s", tags[found].name,
                               attest_layout_name((attest_layout_id)tags[found].layout));
        *out |= BIT(found);
        s += n;
        if (*s == ',') s++;
    }
    return ATTEST_OK;
}

void fixture_tags_string(fixture_tags t, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap) buf[0] = '\0';
    for (int i = 0; i < T_COUNT_ && n < cap; i++)
        if (t & BIT(i))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "", tags[i].name);
}
