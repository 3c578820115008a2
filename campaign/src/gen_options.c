/* attest CLI: the generator-bound options shared by run, campaign and fixture make
 * (gen_options.h). One table names every option, the generator field it sets and how: parsing,
 * applying and printing a replay command all walk it, so a printed command cannot forget a bound
 * that shaped its case. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "attest/layout.h"
#include "attest/usage.h"
#include "attest/gen_options.h"

typedef enum flag_kind {
    FLAG_BOUND,
    FLAG_PAGE_SIZE,
    FLAG_LAYOUT,
    FLAG_SET,
    FLAG_CLEAR,
    FLAG_PER_MILLE /* 0..1000, 0 included (attest_cli_gen_bounds.high_pools) */
} flag_kind;

typedef struct gen_flag {
    const char *name; /* without the leading "--" */
    int ch;           /* getopt_long value */
    flag_kind kind;
    size_t field;     /* offsetof the int32_t it sets in attest_gen_options */
    int bound;        /* index into attest_cli_gen_bounds.bounds, or -1 */
} gen_flag;

static const gen_flag flags[] = {
    {"max-batch", ATTEST_CLI_GEN_MAX_BATCH, FLAG_BOUND, offsetof(attest_gen_options, max_batch), 0},
    {"max-heads", ATTEST_CLI_GEN_MAX_HEADS, FLAG_BOUND, offsetof(attest_gen_options, max_heads), 1},
    {"max-len", ATTEST_CLI_GEN_MAX_LEN, FLAG_BOUND, offsetof(attest_gen_options, max_len), 2},
    {"max-topk", ATTEST_CLI_GEN_MAX_TOPK, FLAG_BOUND, offsetof(attest_gen_options, max_topk), 3},
    {"max-next-n", ATTEST_CLI_GEN_MAX_NEXT_N, FLAG_BOUND,
     offsetof(attest_gen_options, max_next_n), 4},
    {"max-s-q", ATTEST_CLI_GEN_MAX_S_Q, FLAG_BOUND, offsetof(attest_gen_options, max_s_q), 5},
    {"page-size", ATTEST_CLI_GEN_PAGE_SIZE, FLAG_PAGE_SIZE,
     offsetof(attest_gen_options, page_size), 6},
    {"layout", ATTEST_CLI_GEN_LAYOUT, FLAG_LAYOUT, offsetof(attest_gen_options, layout), -1},
    {"production", ATTEST_CLI_GEN_PRODUCTION, FLAG_SET,
     offsetof(attest_gen_options, production_shape), -1},
    {"no-edge-bytes", ATTEST_CLI_GEN_NO_EDGE, FLAG_CLEAR, offsetof(attest_gen_options, edge_bytes),
     -1},
    {"high-pools", ATTEST_CLI_GEN_HIGH_POOLS, FLAG_PER_MILLE,
     offsetof(attest_gen_options, high_pools), -1},
};
#define NUM_FLAGS (sizeof flags / sizeof flags[0])

static int32_t *field_of(attest_gen_options *g, const gen_flag *f)
{
    return (int32_t *)(void *)((char *)g + f->field);
}

static int32_t value_of(const attest_gen_options *g, const gen_flag *f)
{
    int32_t v;
    memcpy(&v, (const char *)g + f->field, sizeof v);
    return v;
}

static const gen_flag *flag_by_ch(int ch)
{
    for (size_t i = 0; i < NUM_FLAGS; i++)
        if (flags[i].ch == ch) return &flags[i];
    return NULL;
}

int attest_cli_gen_is_option(int ch)
{
    return flag_by_ch(ch) != NULL;
}

int attest_cli_gen_option(const char *verb, int ch, const char *arg, attest_cli_gen_bounds *b)
{
    const gen_flag *f = flag_by_ch(ch);
    if (f == NULL) return attest_cli_usage_error(verb, "internal: not a generator option");
    switch (f->kind) {
    case FLAG_LAYOUT: b->layout = arg; return -1;
    case FLAG_SET: b->production = 1; return -1;
    case FLAG_CLEAR: b->no_edge = 1; return -1;
    case FLAG_PER_MILLE: {
        int32_t v = 0;
        if (attest_cli_parse_i32(arg, 0, 1000, &v)) return attest_cli_bad_value(verb, f->name, arg);
        b->high_pools = v + 1;
        return -1;
    }
    case FLAG_BOUND:
    case FLAG_PAGE_SIZE:
        if (attest_cli_parse_i32(arg, 1, 1 << 22, &b->bounds[f->bound]))
            return attest_cli_bad_value(verb, f->name, arg);
        return -1;
    }
    return -1;
}

attest_gen_options attest_cli_gen_defaults_for(const attest_candidate *c)
{
    attest_gen_options g = attest_gen_defaults(c->kernel);
    if (c->domain == ATTEST_DOMAIN_DEVICE) g.high_pools = 0;
    return g;
}

int attest_cli_gen_apply(const char *verb, const attest_cli_gen_bounds *b, attest_gen_options *g)
{
    for (size_t i = 0; i < NUM_FLAGS; i++) {
        const gen_flag *f = &flags[i];
        if (f->bound >= 0 && b->bounds[f->bound]) *field_of(g, f) = b->bounds[f->bound];
    }
    if (b->production) g->production_shape = 1;
    if (b->no_edge) g->edge_bytes = 0;
    if (b->high_pools) g->high_pools = b->high_pools - 1;
    /* An explicit head bound is meant: no production head counts above it. */
    if (b->bounds[1]) g->production_heads = 0;
    if (b->layout) {
        attest_layout_id id;
        if (attest_layout_from_name(b->layout, &id) != ATTEST_OK ||
            (id != ATTEST_LAYOUT_MLA_V4 && id != ATTEST_LAYOUT_MLA_V32))
            return attest_cli_usage_error(verb, "--layout must be mla-v4 or mla-v32, not '%s'",
                                          b->layout);
        if (g->kernel != ATTEST_KERNEL_MLA_DECODE)
            return attest_cli_usage_error(verb, "--layout applies to mla-decode only");
        g->layout = (int32_t)id;
    }
    return -1;
}

void attest_cli_gen_flags(const attest_cli_gen_bounds *b, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NUM_FLAGS && n < cap; i++) {
        const gen_flag *f = &flags[i];
        int w = 0;
        if (f->bound >= 0 && b->bounds[f->bound])
            w = snprintf(buf + n, cap - n, " --%s %d", f->name, b->bounds[f->bound]);
        else if (f->kind == FLAG_LAYOUT && b->layout)
            w = snprintf(buf + n, cap - n, " --%s %s", f->name, b->layout);
        else if ((f->kind == FLAG_SET && b->production) || (f->kind == FLAG_CLEAR && b->no_edge))
            w = snprintf(buf + n, cap - n, " --%s", f->name);
        else if (f->kind == FLAG_PER_MILLE && b->high_pools)
            w = snprintf(buf + n, cap - n, " --%s %d", f->name, b->high_pools - 1);
        if (w > 0) n += (size_t)w;
    }
}

int attest_cli_gen_flags_of(const attest_gen_options *g, int all, char *buf, size_t cap)
{
    const attest_gen_options def = attest_gen_defaults(g->kernel);
    size_t n = 0;
    if (cap == 0) return -1;
    buf[0] = '\0';
    for (size_t i = 0; i < NUM_FLAGS; i++) {
        const gen_flag *f = &flags[i];
        const int32_t v = value_of(g, f);
        if (!all && v == value_of(&def, f)) continue;
        int w = 0;
        switch (f->kind) {
        case FLAG_BOUND:
        case FLAG_PER_MILLE: w = snprintf(buf + n, cap - n, " --%s %d", f->name, v); break;
        case FLAG_PAGE_SIZE: /* 0: drawn per case, which is what leaving it out means */
            if (v) w = snprintf(buf + n, cap - n, " --%s %d", f->name, v);
            break;
        case FLAG_LAYOUT: /* 0: drawn */
            if (v) {
                const char *name = attest_layout_name((attest_layout_id)v);
                w = snprintf(buf + n, cap - n, " --%s %s", f->name, name ? name : "?");
            }
            break;
        case FLAG_SET:
            if (v) w = snprintf(buf + n, cap - n, " --%s", f->name);
            break;
        case FLAG_CLEAR:
            if (!v) w = snprintf(buf + n, cap - n, " --%s", f->name);
            break;
        }
        if (w < 0 || (size_t)w >= cap - n) {
            buf[n] = '\0';
            return -1;
        }
        n += (size_t)w;
    }
    return 0;
}

int attest_cli_gen_parse_flags(const char *verb, const char *text, attest_gen_options *g)
{
    attest_cli_gen_bounds b;
    memset(&b, 0, sizeof b);
    char words[1024];
    if (snprintf(words, sizeof words, "%s", text) >= (int)sizeof words)
        return attest_cli_usage_error(verb, "generator options too long: '%.60s...'", text);
    char *save = NULL;
    for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        const gen_flag *f = NULL;
        for (size_t i = 0; i < NUM_FLAGS && !f; i++)
            if (w[0] == '-' && w[1] == '-' && !strcmp(w + 2, flags[i].name)) f = &flags[i];
        if (f == NULL) return attest_cli_usage_error(verb, "not a generator option: '%s'", w);
        const char *arg = NULL;
        if (f->kind == FLAG_BOUND || f->kind == FLAG_PAGE_SIZE || f->kind == FLAG_LAYOUT ||
            f->kind == FLAG_PER_MILLE) {
            arg = strtok_r(NULL, " ", &save);
            if (arg == NULL) return attest_cli_usage_error(verb, "option --%s needs a value", f->name);
        }
        const int rc = attest_cli_gen_option(verb, f->ch, arg, &b);
        if (rc >= 0) return rc;
    }
    return attest_cli_gen_apply(verb, &b, g); /* b.layout points into words: still alive */
}
