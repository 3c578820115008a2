/* The canonical parameter string of a case (from the field table, case_fields.c), filtering on
 * it, and validation of index inputs. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attest/candidate.h"
#include "attest/case.h"

typedef struct str_builder {
    char *buf;
    size_t cap, len;
    int overflow;
} str_builder;

static void sb_add(str_builder *sb, const char *fmt, ...) ATTEST_PRINTF(2, 3);
static void sb_add(str_builder *sb, const char *fmt, ...)
{
    if (sb->overflow) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sb->cap - sb->len) {
        sb->overflow = 1;
        return;
    }
    sb->len += (size_t)n;
}

attest_status attest_case_param_string(const attest_case *c, char *buf, size_t cap)
{
    ATTEST_RETURN_IF(buf == NULL || cap == 0, ATTEST_ERR_INVALID_ARGUMENT, "no buffer");
    str_builder sb = {buf, cap, 0, 0};
    buf[0] = '\0';
    size_t n;
    const attest_param_field *fields = attest_case_param_fields(c->kernel, &n);
    if (!fields)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "unknown kernel family %d",
                           (int)c->kernel);
    sb_add(&sb, "kernel=%s", attest_kernel_name(c->kernel));
    for (size_t i = 0; i < n; i++) {
        const attest_param_field *f = &fields[i];
        if (!f->key || !attest_param_present(c, f)) continue;
        if ((f->flags & ATTEST_PARAM_IF_TOPK) && c->params.indexer.topk <= 0) continue;
        const int64_t v = attest_param_get(c, f);
        switch (f->type) {
        case ATTEST_PARAM_F32: sb_add(&sb, ",%s=%.9g", f->key, attest_param_get_real(c, f)); break;
        case ATTEST_PARAM_ENUM:
        case ATTEST_PARAM_LAYOUT:
        case ATTEST_PARAM_FIXED_LAYOUT: {
            const char *name = attest_param_value_name(f, v, 1);
            sb_add(&sb, ",%s=%s", f->key, name ? name : "unknown");
            break;
        }
        case ATTEST_PARAM_FLAG: sb_add(&sb, ",%s=%d", f->key, v != 0); break;
        default: sb_add(&sb, ",%s=%" PRId64, f->key, v); break;
        }
    }
    ATTEST_RETURN_IF(sb.overflow, ATTEST_ERR_INVALID_ARGUMENT,
                     "parameter string longer than %zu bytes", cap - 1);
    return ATTEST_OK;
}

/* Finds "key=" at the start of a comma-separated field and returns its value span. */
static int find_value(const char *params, const char *key, size_t key_len, const char **value,
                      size_t *value_len)
{
    const char *p = params;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t field_len = end ? (size_t)(end - p) : strlen(p);
        if (field_len > key_len && !strncmp(p, key, key_len) && p[key_len] == '=') {
            *value = p + key_len + 1;
            *value_len = field_len - key_len - 1;
            return 1;
        }
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

int attest_param_string_matches(const char *params, const char *filter)
{
    if (filter == NULL || *filter == '\0') return 1;
    const char *f = filter;
    while (*f) {
        const char *end = strchr(f, ',');
        size_t len = end ? (size_t)(end - f) : strlen(f);
        const char *eq = memchr(f, '=', len);
        if (eq == NULL) return 0; /* a filter term must be key=value */
        size_t key_len = (size_t)(eq - f);
        const char *want = eq + 1;
        size_t want_len = len - key_len - 1;
        int prefix = want_len > 0 && want[want_len - 1] == '*';
        if (prefix) want_len--;
        const char *have;
        size_t have_len;
        if (!find_value(params, f, key_len, &have, &have_len)) return 0;
        if (prefix ? (have_len < want_len || strncmp(have, want, want_len))
                   : (have_len != want_len || strncmp(have, want, want_len)))
            return 0;
        if (!end) break;
        f = end + 1;
    }
    return 1;
}

attest_status attest_param_filter_check_keys(const char *filter, const char *const *keys,
                                             size_t num_keys, const char *what)
{
    if (filter == NULL) return ATTEST_OK;
    const char *f = filter;
    for (;;) {
        const char *end = strchr(f, ',');
        const size_t len = end ? (size_t)(end - f) : strlen(f);
        const char *eq = memchr(f, '=', len);
        ATTEST_RETURN_IF(eq == NULL || eq == f || eq + 1 == f + len, ATTEST_ERR_INVALID_ARGUMENT,
                         "filter term '%.*s' is not key=value (e.g. 'b=2,layout=mla-v4')",
                         (int)len, f);
        const size_t key_len = (size_t)(eq - f);
        int known = 0;
        for (size_t i = 0; i < num_keys && !known; i++)
            known = strlen(keys[i]) == key_len && !strncmp(keys[i], f, key_len);
        if (!known) {
            char list[512];
            size_t at = 0;
            list[0] = '\0';
            for (size_t i = 0; i < num_keys && at + 1 < sizeof list; i++) {
                int w = snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", keys[i]);
                if (w > 0) at += (size_t)w;
            }
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                               "filter key '%.*s': %s cases have no such parameter (keys: %s)",
                               (int)key_len, f, what, list);
        }
        if (!end) return ATTEST_OK;
        f = end + 1;
    }
}

attest_status attest_case_filter_check(attest_kernel kernel, const char *filter)
{
    size_t n = 0;
    const attest_param_field *fields = attest_case_param_fields(kernel, &n);
    ATTEST_RETURN_IF(fields == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "filter: %s cases have no parameter table",
                     attest_kernel_name(kernel) ? attest_kernel_name(kernel) : "unknown");
    const char *keys[64];
    size_t num = 0;
    keys[num++] = "kernel";
    for (size_t i = 0; i < n && num < sizeof keys / sizeof keys[0]; i++)
        if (fields[i].key) keys[num++] = fields[i].key;
    return attest_param_filter_check_keys(filter, keys, num, attest_kernel_name(kernel));
}

static attest_status check_indices(const char *name, const int32_t *idx, int64_t count,
                                   int64_t limit)
{
    for (int64_t i = 0; i < count; i++)
        if (idx[i] != -1 && (idx[i] < 0 || idx[i] >= limit))
            return attest_fail(ATTEST_ERR_FORMAT,
                               "%s[%" PRId64 "] = %d is neither -1 nor inside the pool [0, %" PRId64
                               ")",
                               name, i, idx[i], limit);
    return ATTEST_OK;
}

static attest_status check_lengths(const char *name, const int32_t *len, int32_t count,
                                   int64_t limit)
{
    for (int32_t i = 0; i < count; i++)
        if (len[i] < 0 || len[i] > limit)
            return attest_fail(ATTEST_ERR_FORMAT, "%s[%d] = %d is outside [0, %" PRId64 "]", name,
                               i, len[i], limit);
    return ATTEST_OK;
}

static attest_status check_indexer_inputs(const attest_case *c, const attest_kernel_args *a)
{
    const attest_indexer_params *p = &c->params.indexer;
    int64_t cap = (int64_t)p->blocks_per_req * ATTEST_INDEXER_BLOCK;
    if (cap > p->max_len) cap = p->max_len;
    ATTEST_FORWARD(check_lengths("context_lens", a->u.indexer.context_lens, p->b, cap));
    for (int32_t b = 0; b < p->b; b++) {
        /* Only the blocks a request uses must be valid; the rest of its row is never read. */
        int32_t used = (a->u.indexer.context_lens[b] + (int32_t)ATTEST_INDEXER_BLOCK - 1) /
                       (int32_t)ATTEST_INDEXER_BLOCK;
        for (int32_t j = 0; j < used; j++) {
            int32_t blk = a->u.indexer.block_table[(int64_t)b * p->blocks_per_req + j];
            if (blk < 0 || blk >= p->num_blocks)
                return attest_fail(ATTEST_ERR_FORMAT,
                                   "block_table[%d][%d] = %d is outside [0, %d) but request %d "
                                   "uses that block",
                                   b, j, blk, p->num_blocks, b);
        }
    }
    return ATTEST_OK;
}

static attest_status check_mla_inputs(const attest_case *c, const attest_kernel_args *a)
{
    const attest_mla_params *p = &c->params.mla;
    const attest_mla_args *m = &a->u.mla;
    const int64_t per_b = (int64_t)p->s_q * p->topk;
    ATTEST_FORWARD(check_indices("indices", m->indices, per_b * p->b,
                                 (int64_t)p->num_pages * p->page_size));
    if (m->topk_length) ATTEST_FORWARD(check_lengths("topk_length", m->topk_length, p->b, p->topk));
    if (p->has_extra) {
        ATTEST_FORWARD(check_indices("extra_indices", m->extra_indices,
                                     (int64_t)p->b * p->s_q * p->extra_topk,
                                     (int64_t)p->extra_num_pages * p->extra_page_size));
        if (m->extra_topk_length)
            ATTEST_FORWARD(check_lengths("extra_topk_length", m->extra_topk_length, p->b,
                                         p->extra_topk));
    }
    return ATTEST_OK;
}

attest_status attest_case_check_inputs(const attest_case *c)
{
    attest_kernel_args args;
    ATTEST_FORWARD(attest_case_args((attest_case *)c, &args));
    if (c->kernel == ATTEST_KERNEL_INDEXER) return check_indexer_inputs(c, &args);
    return check_mla_inputs(c, &args);
}
