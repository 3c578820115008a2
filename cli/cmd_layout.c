/* attest layout describe: the byte map of one page of a KV-cache layout, printed from the same
 * descriptor and offset function the codec uses, so what a user reads here is what the harness
 * writes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/layout.h"
#include "commands.h"

#define VERB "layout"

static void usage_layout(FILE *f)
{
    fprintf(f, "usage: attest layout describe LAYOUT [--page-size P] [--page-stride S] "
               "[--token T]\n\n"
               "Prints the byte map of one page of a KV-cache layout: every region with its byte\n"
               "range, element type and count, the page stride and the padding.\n\n"
               "layouts:\n"
               "  mla-v4      DeepSeek-V4 sparse MLA: page-major, P*576 token bytes then P*8 "
               "scale bytes\n"
               "  mla-v32     DeepSeek-V3.2 sparse MLA: 656-byte interleaved token records\n"
               "  c4-indexer  DeepSeek-V4 C4 indexer keys: 8448-byte blocks of 64 positions\n\n"
               "attest layout describe --help for the options.\n");
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

static void print_v4(const attest_layout *l)
{
    uint64_t P = l->page_size, s0 = P * 576u, t = P - 1u;
    char scales[32], pad[32];
    snprintf(scales, sizeof scales, "%" PRIu64 " + 8t + [0, 7)", s0);
    snprintf(pad, sizeof pad, "%" PRIu64 " + 8t + 7", s0);
    header("token");
    row("token data, nope", "576t + [0, 448)", "fp8_e4m3fn", 448, 0, 448, t * 576u,
        t * 576u + 448u);
    row("token data, rope", "576t + [448, 576)", "bf16", 64, 448, 576, t * 576u + 448u,
        t * 576u + 576u);
    row("token scales", scales, "ue8m0", 7, s0, s0 + 7u, s0 + 8u * t, s0 + 8u * t + 7u);
    row("token pad (poison)", pad, "pad", 1, s0 + 7u, s0 + 8u, s0 + 8u * t + 7u, s0 + 8u * P);
    printf("\n  regions in byte order:\n");
    printf("    [0, %" PRIu64 ")  token data: %" PRIu64
           " records of 576 bytes (448 fp8 nope, 64 bf16 rope)\n", s0, P);
    printf("    [%" PRIu64 ", %" PRIu64 ")  scale region: %" PRIu64
           " x (7 ue8m0 scales + 1 pad byte), starting at %" PRIu64 "\n",
           s0, l->page_payload, P, s0);
    print_page_padding(l);
    printf("\n  scale i of token t (i = 0..6) is byte %" PRIu64
           " + 8t + i and covers nope[64i, 64i+64); value 2^(byte-127).\n", s0);
    printf("  K row (512) = [nope(448) * its scale per 64-tile | rope(64)]; V = K (512).\n");
}

static void print_v32(const attest_layout *l)
{
    uint64_t r = (uint64_t)(l->page_size - 1u) * 656u;
    header("token");
    row("token nope", "656t + [0, 512)", "fp8_e4m3fn", 512, 0, 512, r, r + 512u);
    row("token scales", "656t + [512, 528)", "float32", 4, 512, 528, r + 512u, r + 528u);
    row("token rope", "656t + [528, 656)", "bf16", 64, 528, 656, r + 528u, r + 656u);
    printf("\n  regions in byte order:\n");
    printf("    [0, %" PRIu64 ")  %u records of 656 bytes (512 fp8 nope, 4 float32 scales, 64 bf16 "
           "rope)\n", l->page_payload, l->page_size);
    print_page_padding(l);
    printf("\n  scale i of token t (i = 0..3) is float32 at byte 656t + 512 + 4i and covers "
           "nope[128i, 128i+128).\n");
    printf("  K row (576) = [nope(512) * its scale per 128-tile | rope(64)]; V = nope (512).\n");
}

static void print_c4(const attest_layout *l)
{
    header("position");
    row("keys", "128t + [0, 128)", "fp8_e4m3fn", 128, 0, 128, 63u * 128u, 8192);
    row("scales", "8192 + 4t + [0, 4)", "float32", 1, 8192, 8196, 8192u + 4u * 63u, 8448);
    uint64_t elems = l->page_stride / 4u;
    printf("\n  regions in byte order:\n");
    printf("    [0, 8192)  keys: 64 positions x 128 fp8, position-major\n");
    printf("    [8192, 8448)  scales: 64 x float32\n");
    print_page_padding(l);
    printf("\n  as float32 elements: a block is %" PRIu64
           " elements; the scale of position t is element 2048 + t\n", elems);
    printf("    (t=0 -> 2048, t=1 -> 2049, t=31 -> 2079, t=63 -> 2111); in block b: element b*%"
           PRIu64 " + 2048 + t\n", elems);
    printf("  the [num_blocks, 64, 1, 132] byte shape is a view only: position t's key is bytes\n"
           "  [128t, 128t+128) and its scale bytes [8192+4t, 8196+4t), not a 132-byte record.\n");
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

    uint64_t pad = l.page_stride - l.page_payload;
    printf("layout %s, page size %u\n", name, l.page_size);
    printf("  token bytes   %u", l.token_bytes);
    switch (id) {
    case ATTEST_LAYOUT_MLA_V4: printf(" (448 fp8 nope + 64 bf16 rope + 7 ue8m0 scales + 1 pad)\n"); break;
    case ATTEST_LAYOUT_MLA_V32: printf(" (512 fp8 nope + 4 float32 scales + 64 bf16 rope)\n"); break;
    case ATTEST_LAYOUT_C4_INDEXER: printf(" (128 fp8 + 1 float32 scale, in two regions)\n"); break;
    }
    printf("  page payload  %llu bytes (%u x %u)\n", (unsigned long long)l.page_payload,
           l.page_size, l.token_bytes);
    printf("  page stride   %llu bytes%s\n", (unsigned long long)l.page_stride,
           id == ATTEST_LAYOUT_MLA_V4 ? " (payload rounded up to a multiple of 576)" : "");
    if (pad > 0)
        printf("  page padding  %llu bytes [%llu, %llu), poisoned, never read\n",
               (unsigned long long)pad, (unsigned long long)l.page_payload,
               (unsigned long long)l.page_stride);
    else
        printf("  page padding  0 bytes\n");
    printf("\nbyte map of one page (offsets from the page base):\n");
    switch (id) {
    case ATTEST_LAYOUT_MLA_V4: print_v4(&l); break;
    case ATTEST_LAYOUT_MLA_V32: print_v32(&l); break;
    case ATTEST_LAYOUT_C4_INDEXER: print_c4(&l); break;
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
