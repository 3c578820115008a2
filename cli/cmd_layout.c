/* attest layout describe: the byte map of one page of a KV-cache layout, printed from the same
 * descriptor and offset function the codec uses, so what a user reads here is what the harness
 * writes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/case.h"
#include "attest/layout.h"
#include "commands.h"

#define VERB "layout"

/* Where token t's fields lie, from the layout's offset function: token 0, the last token, and
 * the step from one token to the next (read off a two-token page where the page holds one). */
typedef struct geometry {
    attest_token_offsets first, last;
    uint64_t record;      /* bytes from token t's fp8 data to token t+1's */
    uint64_t scale_step;  /* bytes from token t's first scale to token t+1's */
} geometry;

static int geometry_of(const attest_layout *l, geometry *g)
{
    attest_layout two = *l;
    if (l->page_size < 2 && attest_layout_make(l->id, 2, 0, &two) != ATTEST_OK) return -1;
    attest_token_offsets a, b;
    if (attest_layout_token_offsets(l, 0, &g->first) != ATTEST_OK ||
        attest_layout_token_offsets(l, l->page_size - 1u, &g->last) != ATTEST_OK ||
        attest_layout_token_offsets(&two, 0, &a) != ATTEST_OK ||
        attest_layout_token_offsets(&two, 1, &b) != ATTEST_OK)
        return -1;
    g->record = b.fp8 - a.fp8;
    g->scale_step = b.scale[0] - a.scale[0];
    return 0;
}

static const char *scale_type(const attest_layout *l)
{
    return l->scale_format == ATTEST_SCALE_F32 ? "float32" : "ue8m0";
}

static uint32_t scale_bytes(const attest_layout *l)
{
    return l->scale_format == ATTEST_SCALE_F32 ? 4u : 1u;
}

/* The one-line summary of each layout in the usage text, from its default descriptor. */
static void usage_line(FILE *f, attest_layout_id id)
{
    attest_layout l;
    geometry g;
    if (attest_layout_make(id, ATTEST_INDEXER_BLOCK, 0, &l) != ATTEST_OK || geometry_of(&l, &g)) {
        attest_clear_error();
        return;
    }
    switch (id) {
    case ATTEST_LAYOUT_MLA_V4:
        fprintf(f, "  mla-v4      DeepSeek-V4 sparse MLA: page-major, P*%" PRIu64
                   " token bytes then P*%" PRIu64 " scale bytes\n", g.record, g.scale_step);
        break;
    case ATTEST_LAYOUT_MLA_V32:
        fprintf(f, "  mla-v32     DeepSeek-V3.2 sparse MLA: %u-byte interleaved token records\n",
                l.token_bytes);
        break;
    case ATTEST_LAYOUT_C4_INDEXER:
        fprintf(f, "  c4-indexer  DeepSeek-V4 C4 indexer keys: %" PRIu64
                   "-byte blocks of %u positions\n", l.page_stride, l.page_size);
        break;
    }
}

static void usage_layout(FILE *f)
{
    fprintf(f, "usage: attest layout describe LAYOUT [--page-size P] [--page-stride S] "
               "[--token T]\n\n"
               "Prints the byte map of one page of a KV-cache layout: every region with its byte\n"
               "range, element type and count, the page stride and the padding.\n\n"
               "layouts:\n");
    usage_line(f, ATTEST_LAYOUT_MLA_V4);
    usage_line(f, ATTEST_LAYOUT_MLA_V32);
    usage_line(f, ATTEST_LAYOUT_C4_INDEXER);
    fprintf(f, "\nattest layout describe --help for the options.\n");
}

static void usage_describe(FILE *f)
{
    fprintf(f, "usage: attest layout describe LAYOUT [--page-size P] [--page-stride S] "
               "[--token T]\n\n"
               "  LAYOUT           mla-v4, mla-v32 or c4-indexer\n"
               "  --page-size P    tokens per page, 1..%u (default 64; c4-indexer: only 64)\n"
               "  --page-stride S  bytes from one page to the next (default: the layout's own;\n"
               "                   mla-v4 fixes it, mla-v32 and c4-indexer accept any multiple\n"
               "                   of 4 >= the payload)\n"
               "  --token T        also print every byte offset of token (position) T\n",
               ATTEST_LAYOUT_MAX_PAGE_SIZE);
}

/* One line of the byte map: a per-token region, its formula, and its first and last instance. */
static void row(const char *region, const char *formula, const char *type, unsigned count,
                uint64_t first_begin, uint64_t first_end, uint64_t last_begin, uint64_t last_end)
{
    char first[48], last[48]; /* two 20-digit numbers, brackets and a comma */
    snprintf(first, sizeof first, "[%" PRIu64 ", %" PRIu64 ")", first_begin, first_end);
    snprintf(last, sizeof last, "[%" PRIu64 ", %" PRIu64 ")", last_begin, last_end);
    printf("  %-20s %-24s %-11s %5u  %-16s %s\n", region, formula, type, count, first, last);
}

static void header(const char *unit)
{
    char formula[32], last[32];
    snprintf(formula, sizeof formula, "bytes (%s t)", unit);
    snprintf(last, sizeof last, "last %s", unit);
    printf("  %-20s %-24s %-11s %5s  %-16s %s\n", "region", formula, "type", "count", "t = 0",
           last);
}

/* The last line of the "regions in byte order" list, when the stride exceeds the payload. */
static void print_page_padding(const attest_layout *l)
{
    if (l->page_stride > l->page_payload)
        printf("    [%" PRIu64 ", %" PRIu64 ")  page padding: %" PRIu64
               " bytes, poisoned, belong to no token\n",
               l->page_payload, l->page_stride, l->page_stride - l->page_payload);
}

static void span(char *buf, size_t cap, uint64_t step, const char *var, uint64_t begin,
                 uint64_t end)
{
    snprintf(buf, cap, "%" PRIu64 "%s + [%" PRIu64 ", %" PRIu64 ")", step, var, begin, end);
}

static void print_v4(const attest_layout *l, const geometry *g)
{
    const uint64_t P = l->page_size, rec = g->record, s0 = g->first.scale[0];
    const uint64_t nope_end = g->first.fp8 + l->fp8_dim, rope_end = g->first.rope + 2u * l->rope_dim;
    const uint64_t sc_end = l->num_scales * scale_bytes(l), pad_at = g->first.pad - s0;
    char nope[32], rope[32], scales[48], pad[32];
    span(nope, sizeof nope, rec, "t", g->first.fp8, nope_end);
    span(rope, sizeof rope, rec, "t", g->first.rope, rope_end);
    snprintf(scales, sizeof scales, "%" PRIu64 " + %" PRIu64 "t + [0, %" PRIu64 ")", s0,
             g->scale_step, sc_end);
    snprintf(pad, sizeof pad, "%" PRIu64 " + %" PRIu64 "t + %" PRIu64, s0, g->scale_step, pad_at);
    header("token");
    row("token data, nope", nope, "fp8_e4m3fn", l->fp8_dim, g->first.fp8, nope_end, g->last.fp8,
        g->last.fp8 + l->fp8_dim);
    row("token data, rope", rope, "bf16", l->rope_dim, g->first.rope, rope_end, g->last.rope,
        g->last.rope + 2u * l->rope_dim);
    row("token scales", scales, scale_type(l), l->num_scales, s0, s0 + sc_end, g->last.scale[0],
        g->last.scale[0] + sc_end);
    row("token pad (poison)", pad, "pad", g->first.pad_bytes, g->first.pad,
        g->first.pad + g->first.pad_bytes, g->last.pad, g->last.pad + g->first.pad_bytes);
    printf("\n  regions in byte order:\n");
    printf("    [0, %" PRIu64 ")  token data: %" PRIu64 " records of %" PRIu64
           " bytes (%u fp8 nope, %u bf16 rope)\n", s0, P, rec, l->fp8_dim, l->rope_dim);
    printf("    [%" PRIu64 ", %" PRIu64 ")  scale region: %" PRIu64 " x (%u %s scales + %u pad byte)"
           ", starting at %" PRIu64 "\n",
           s0, l->page_payload, P, l->num_scales, scale_type(l), g->first.pad_bytes, s0);
    print_page_padding(l);
    printf("\n  scale i of token t (i = 0..%u) is byte %" PRIu64 " + %" PRIu64
           "t + i and covers nope[%ui, %ui+%u); value 2^(byte-127).\n",
           l->num_scales - 1u, s0, g->scale_step, l->scale_tile, l->scale_tile, l->scale_tile);
}

static void print_v32(const attest_layout *l, const geometry *g)
{
    const uint64_t rec = g->record, r = g->last.fp8;
    const uint64_t sc = g->first.scale[0], sc_end = sc + l->num_scales * scale_bytes(l);
    const uint64_t rope = g->first.rope, rope_end = rope + 2u * l->rope_dim;
    char nope_f[32], sc_f[32], rope_f[32];
    span(nope_f, sizeof nope_f, rec, "t", g->first.fp8, l->fp8_dim);
    span(sc_f, sizeof sc_f, rec, "t", sc, sc_end);
    span(rope_f, sizeof rope_f, rec, "t", rope, rope_end);
    header("token");
    row("token nope", nope_f, "fp8_e4m3fn", l->fp8_dim, 0, l->fp8_dim, r, r + l->fp8_dim);
    row("token scales", sc_f, scale_type(l), l->num_scales, sc, sc_end, r + sc, r + sc_end);
    row("token rope", rope_f, "bf16", l->rope_dim, rope, rope_end, r + rope, r + rope_end);
    printf("\n  regions in byte order:\n");
    printf("    [0, %" PRIu64 ")  %u records of %" PRIu64 " bytes (%u fp8 nope, %u %s scales, "
           "%u bf16 rope)\n", l->page_payload, l->page_size, rec, l->fp8_dim, l->num_scales,
           scale_type(l), l->rope_dim);
    print_page_padding(l);
    printf("\n  scale i of token t (i = 0..%u) is %s at byte %" PRIu64 "t + %" PRIu64
           " + %ui and covers nope[%ui, %ui+%u).\n",
           l->num_scales - 1u, scale_type(l), rec, sc, scale_bytes(l), l->scale_tile,
           l->scale_tile, l->scale_tile);
}

static void print_c4(const attest_layout *l, const geometry *g)
{
    const uint64_t keys_end = (uint64_t)l->page_size * l->fp8_dim, sc = g->first.scale[0];
    const uint64_t sb = scale_bytes(l), last = l->page_size - 1u;
    char keys_f[32], sc_f[48];
    span(keys_f, sizeof keys_f, g->record, "t", 0, l->fp8_dim);
    snprintf(sc_f, sizeof sc_f, "%" PRIu64 " + %" PRIu64 "t + [0, %" PRIu64 ")", sc,
             g->scale_step, sb);
    header("position");
    row("keys", keys_f, "fp8_e4m3fn", l->fp8_dim, 0, l->fp8_dim, g->last.fp8,
        g->last.fp8 + l->fp8_dim);
    row("scales", sc_f, scale_type(l), l->num_scales, sc, sc + sb, g->last.scale[0],
        g->last.scale[0] + sb);
    const uint64_t elems = l->page_stride / sb, e0 = sc / sb;
    printf("\n  regions in byte order:\n");
    printf("    [0, %" PRIu64 ")  keys: %u positions x %u fp8, position-major\n", keys_end,
           l->page_size, l->fp8_dim);
    printf("    [%" PRIu64 ", %" PRIu64 ")  scales: %u x %s\n", sc, l->page_payload, l->page_size,
           scale_type(l));
    print_page_padding(l);
    printf("\n  as %s elements: a block is %" PRIu64
           " elements; the scale of position t is element %" PRIu64 " + t\n",
           scale_type(l), elems, e0);
    printf("    (t=0 -> %" PRIu64 ", t=1 -> %" PRIu64 ", t=%" PRIu64 " -> %" PRIu64 ", t=%" PRIu64
           " -> %" PRIu64 "); in block b: element b*%" PRIu64 " + %" PRIu64 " + t\n",
           e0, e0 + 1u, last / 2u, e0 + last / 2u, last, e0 + last, elems, e0);
    printf("  the [num_blocks, %u, 1, %u] byte shape is a view only: position t's key is bytes\n"
           "  [%" PRIu64 "t, %" PRIu64 "t+%u) and its scale bytes [%" PRIu64 "+%" PRIu64 "t, %"
           PRIu64 "+%" PRIu64 "t), not a %u-byte record.\n",
           l->page_size, l->token_bytes, g->record, g->record, l->fp8_dim, sc, g->scale_step,
           sc + sb, g->scale_step, l->token_bytes);
}

/* What the dequantized K and V rows are made of. */
static void print_rows(const attest_layout *l)
{
    printf("  K row (%u) = [nope(%u) * its scale per %u-tile | rope(%u)]; V = %s (%u).\n",
           l->k_dim, l->fp8_dim, l->scale_tile, l->rope_dim, l->v_dim == l->k_dim ? "K" : "nope",
           l->v_dim);
}

static void print_token(const attest_layout *l, uint32_t t)
{
    attest_token_offsets o;
    if (attest_layout_token_offsets(l, t, &o) != ATTEST_OK) return; /* checked by the caller */
    const char *what = l->id == ATTEST_LAYOUT_C4_INDEXER ? "position" : "token";
    printf("\n%s %u (page base + offset):\n", what, t);
    printf("  fp8 data   [%" PRIu64 ", %" PRIu64 ")  %u x fp8_e4m3fn\n", o.fp8, o.fp8 + l->fp8_dim,
           l->fp8_dim);
    if (l->rope_dim > 0)
        printf("  rope       [%" PRIu64 ", %" PRIu64 ")  %u x bf16\n", o.rope,
               o.rope + 2u * l->rope_dim, l->rope_dim);
    for (uint32_t i = 0; i < l->num_scales; i++) {
        if (l->scale_format == ATTEST_SCALE_F32)
            printf("  scale %u    byte %" PRIu64 " (float32 element %" PRIu64
                   ")  covers fp8[%u, %u)\n",
                   i, o.scale[i], o.scale[i] / 4u, i * l->scale_tile, (i + 1u) * l->scale_tile);
        else
            printf("  scale %u    byte %" PRIu64 "  ue8m0, covers fp8[%u, %u)\n", i, o.scale[i],
                   i * l->scale_tile, (i + 1u) * l->scale_tile);
    }
    if (o.pad_bytes > 0) printf("  pad        byte %" PRIu64 "\n", o.pad);
}

static int describe(int argc, char **argv)
{
    const char *name = NULL, *ps = NULL, *st = NULL, *tk = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_describe(stdout);
            return ATTEST_EXIT_OK;
        }
        int found = attest_cli_option_value(argc, argv, &i, "--page-size", &ps);
        if (!found) found = attest_cli_option_value(argc, argv, &i, "--page-stride", &st);
        if (!found) found = attest_cli_option_value(argc, argv, &i, "--token", &tk);
        if (found < 0) return attest_cli_usage_error(VERB, "%s needs a value", a);
        if (found) continue;
        if (a[0] == '-' && a[1] != '\0')
            return attest_cli_usage_error(VERB, "unknown option '%s' (try attest layout "
                                                "describe --help)", a);
        if (name != NULL) return attest_cli_usage_error(VERB, "unexpected argument '%s'", a);
        name = a;
    }
    if (name == NULL)
        return attest_cli_usage_error(VERB, "describe needs a LAYOUT (mla-v4, mla-v32, "
                                            "c4-indexer)");
    attest_layout_id id;
    if (attest_layout_from_name(name, &id) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    uint64_t page_size = 64, stride = 0, token = 0;
    if (ps != NULL && attest_cli_parse_dec_u64(ps, &page_size))
        return attest_cli_usage_error(VERB, "--page-size '%s' is not a non-negative integer", ps);
    if (page_size == 0 || page_size > ATTEST_LAYOUT_MAX_PAGE_SIZE)
        return attest_cli_usage_error(VERB, "--page-size %s is outside [1, %u]", ps,
                                      ATTEST_LAYOUT_MAX_PAGE_SIZE);
    if (st != NULL && (attest_cli_parse_dec_u64(st, &stride) || stride == 0))
        return attest_cli_usage_error(VERB, "--page-stride '%s' is not a positive integer", st);
    if (tk != NULL && attest_cli_parse_dec_u64(tk, &token))
        return attest_cli_usage_error(VERB, "--token '%s' is not a non-negative integer", tk);
    attest_layout l;
    if (attest_layout_make(id, (uint32_t)page_size, stride, &l) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    if (tk != NULL && token >= l.page_size)
        return attest_cli_usage_error(VERB, "--token %s is out of range for page size %u", tk,
                                      l.page_size);

    geometry g;
    if (geometry_of(&l, &g) != 0)
        return attest_cli_usage_error(VERB, "%s", attest_last_error());
    uint64_t pad = l.page_stride - l.page_payload;
    printf("layout %s, page size %u\n", name, l.page_size);
    printf("  token bytes   %u", l.token_bytes);
    switch (id) {
    case ATTEST_LAYOUT_MLA_V4:
        printf(" (%u fp8 nope + %u bf16 rope + %u %s scales + %u pad)\n", l.fp8_dim, l.rope_dim,
               l.num_scales, scale_type(&l), g.first.pad_bytes);
        break;
    case ATTEST_LAYOUT_MLA_V32:
        printf(" (%u fp8 nope + %u %s scales + %u bf16 rope)\n", l.fp8_dim, l.num_scales,
               scale_type(&l), l.rope_dim);
        break;
    case ATTEST_LAYOUT_C4_INDEXER:
        printf(" (%u fp8 + %u %s scale, in two regions)\n", l.fp8_dim, l.num_scales,
               scale_type(&l));
        break;
    }
    printf("  page payload  %llu bytes (%u x %u)\n", (unsigned long long)l.page_payload,
           l.page_size, l.token_bytes);
    if (id == ATTEST_LAYOUT_MLA_V4)
        printf("  page stride   %llu bytes (payload rounded up to a multiple of %llu)\n",
               (unsigned long long)l.page_stride, (unsigned long long)g.record);
    else
        printf("  page stride   %llu bytes\n", (unsigned long long)l.page_stride);
    if (pad > 0)
        printf("  page padding  %llu bytes [%llu, %llu), poisoned, never read\n",
               (unsigned long long)pad, (unsigned long long)l.page_payload,
               (unsigned long long)l.page_stride);
    else
        printf("  page padding  0 bytes\n");
    printf("\nbyte map of one page (offsets from the page base):\n");
    switch (id) {
    case ATTEST_LAYOUT_MLA_V4: print_v4(&l, &g); print_rows(&l); break;
    case ATTEST_LAYOUT_MLA_V32: print_v32(&l, &g); print_rows(&l); break;
    case ATTEST_LAYOUT_C4_INDEXER: print_c4(&l, &g); break;
    }
    if (tk != NULL) print_token(&l, (uint32_t)token);
    return ATTEST_EXIT_OK;
}

int attest_cmd_layout(int argc, char **argv)
{
    if (argc < 2)
        return attest_cli_usage_error(VERB, "needs a subcommand: describe (try attest layout "
                                            "--help)");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage_layout(stdout);
        return ATTEST_EXIT_OK;
    }
    if (!strcmp(argv[1], "describe")) return describe(argc - 1, argv + 1);
    return attest_cli_usage_error(VERB, "unknown subcommand '%s' (try attest layout --help)",
                                  argv[1]);
}
