/* attest CLI: the generator-bound options shared by run and fixture make (gen_options.h). */
#include <stdio.h>

#include "attest/layout.h"
#include "commands.h"
#include "gen_options.h"

static const char *const bound_names[7] = {"max-batch", "max-heads", "max-len", "max-topk",
                                           "max-next-n", "max-s-q", "page-size"};

int attest_cli_gen_is_option(int ch)
{
    return ch >= ATTEST_CLI_GEN_MAX_BATCH && ch < ATTEST_CLI_GEN_END_;
}

int attest_cli_gen_option(const char *verb, int ch, const char *arg, attest_cli_gen_bounds *b)
{
    switch (ch) {
    case ATTEST_CLI_GEN_LAYOUT: b->layout = arg; return -1;
    case ATTEST_CLI_GEN_PRODUCTION: b->production = 1; return -1;
    case ATTEST_CLI_GEN_NO_EDGE: b->no_edge = 1; return -1;
    default: {
        const int idx = ch - ATTEST_CLI_GEN_MAX_BATCH;
        if (attest_cli_parse_i32(arg, 1, 1 << 22, &b->bounds[idx]))
            return attest_cli_bad_value(verb, bound_names[idx], arg);
        return -1;
    }
    }
}

int attest_cli_gen_apply(const char *verb, const attest_cli_gen_bounds *b, attest_gen_options *g)
{
    int32_t *slots[7] = {&g->max_batch, &g->max_heads, &g->max_len, &g->max_topk,
                         &g->max_next_n, &g->max_s_q, &g->page_size};
    for (int i = 0; i < 7; i++)
        if (b->bounds[i]) *slots[i] = b->bounds[i];
    if (b->production) g->production_shape = 1;
    if (b->no_edge) g->edge_bytes = 0;
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
    for (int i = 0; i < 7 && n < cap; i++)
        if (b->bounds[i])
            n += (size_t)snprintf(buf + n, cap - n, " --%s %d", bound_names[i], b->bounds[i]);
    if (b->layout && n < cap) n += (size_t)snprintf(buf + n, cap - n, " --layout %s", b->layout);
    if (b->production && n < cap) n += (size_t)snprintf(buf + n, cap - n, " --production");
    if (b->no_edge && n < cap) snprintf(buf + n, cap - n, " --no-edge-bytes");
}
