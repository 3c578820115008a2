/* attest list: what this build knows: kernel families, cache layouts, candidates (built-in and
 * loaded from plugins with --candidate) and the embedded default policy. Every line is printed
 * from the same tables the harness uses (layout descriptors, the registry), not from prose. */
#include <stdio.h>
#include <string.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/conventions.h"
#include "attest/external.h"
#include "attest/layout.h"
#include "attest/policy.h"
#include "attest/registry.h"
#include "attest/status.h"
#include "attest/topk_candidates.h"
#include "commands.h"
#include "topk_run.h"

#define VERB "list"
#define MAX_LOADED 32
#define CONVENTIONS_WIDTH 20

static void usage(FILE *f)
{
    fprintf(f, "usage: attest list [--candidate SPEC]...\n\n"
               "Prints the kernel families, KV-cache layouts, candidates and the default policy.\n\n"
               "  --candidate SPEC  also load and list a candidate: a built-in name or\n"
               "                    path/libfoo.so:NAME (a plugin exporting %s);\n"
               "                    repeatable\n"
               "  --help            this text\n",
               ATTEST_PLUGIN_ENTRY_SYMBOL);
}

static const char *const kernel_summary[] = {
    [ATTEST_KERNEL_INDEXER] = "DSA indexer logits over a c4-indexer key cache (docs/kernels.md 5)",
    [ATTEST_KERNEL_MLA_DECODE] = "sparse MLA decode over an mla-v4 / mla-v32 paged cache (docs/kernels.md 6)",
};

static void print_kernels(void)
{
    printf("kernels:\n");
    const attest_kernel kernels[] = {ATTEST_KERNEL_INDEXER, ATTEST_KERNEL_MLA_DECODE};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        printf("  %-12s %s\n", attest_kernel_name(kernels[i]), kernel_summary[kernels[i]]);
    /* Not attest_kernel families: their candidates are of another type (topk) or stages. */
    printf("  %-12s %s\n", "topk", "top-k selection over indexer logits and the page table "
                                   "(docs/topk.md)");
    printf("  %-12s %s\n", "pipeline", "the DSA chain indexer -> top-k -> decode, seam by seam: "
                                       "--candidate STAGE=SPEC (docs/pipeline.md)");
}

static int print_layouts(void)
{
    printf("\nlayouts (page size 64):\n");
    const attest_layout_id ids[] = {ATTEST_LAYOUT_MLA_V4, ATTEST_LAYOUT_MLA_V32,
                                    ATTEST_LAYOUT_C4_INDEXER};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        attest_layout l;
        if (attest_layout_make(ids[i], 64, 0, &l) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", attest_last_error());
        char rope[32] = "";
        if (l.rope_dim) snprintf(rope, sizeof rope, " + %u bf16 rope", l.rope_dim);
        printf("  %-12s %u B/token: %u fp8%s + %u %s scale%s (1 per %u); page stride %llu B "
               "(payload %llu)\n",
               attest_layout_name(ids[i]), l.token_bytes, l.fp8_dim, rope, l.num_scales,
               l.scale_format == ATTEST_SCALE_UE8M0 ? "ue8m0" : "fp32", l.num_scales > 1 ? "s" : "",
               l.scale_tile, (unsigned long long)l.page_stride,
               (unsigned long long)l.page_payload);
    }
    return 0;
}

static void print_candidate(const attest_candidate *c, const char *spec)
{
    const char *kernel = attest_kernel_name(c->kernel);
    char conv[160];
    attest_conventions_format(&c->conventions, c->kernel, conv, sizeof conv);
    /* An external process declares its own domain; the harness hands it host memory. */
    const char *ext = attest_external_domain(c);
    const char *domain = ext ? ext : c->domain == ATTEST_DOMAIN_DEVICE ? "device" : "host";
    printf("  %-36s %-10s %-6s %-*s %s\n", c->name, kernel ? kernel : "?", domain,
           CONVENTIONS_WIDTH, conv, c->description ? c->description : "");
    if (spec) printf("  %-36s (from %s)\n", "", spec);
}

static int print_policy(void)
{
    attest_policy *p = NULL;
    if (attest_policy_default(&p) != ATTEST_OK)
        return attest_cli_usage_error(VERB, "default policy: %s", attest_last_error());
    const char *version = attest_policy_version(p);
    printf("\npolicies:\n  %-12s version %s, %s, %zu entries, hash %s\n", attest_policy_name(p),
           version && *version ? version : "-", attest_policy_origin(p),
           attest_policy_num_entries(p), attest_policy_hash(p));
    return 0;
}

int attest_cmd_list(int argc, char **argv)
{
    const char *specs[MAX_LOADED];
    int nspecs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return ATTEST_EXIT_OK;
        }
        const char *value = NULL;
        const int found = attest_cli_option_value(argc, argv, &i, "--candidate", &value);
        if (found < 0) return attest_cli_usage_error(VERB, "--candidate needs a SPEC");
        if (!found) return attest_cli_usage_error(VERB, "unknown argument '%s' (try --help)", a);
        if (nspecs == MAX_LOADED)
            return attest_cli_usage_error(VERB, "at most %d --candidate options", MAX_LOADED);
        specs[nspecs++] = value;
    }

    /* Resolve first, so a bad --candidate fails before anything is printed. */
    const attest_candidate *loaded[MAX_LOADED];
    const attest_topk_candidate *loaded_topk[MAX_LOADED];
    for (int i = 0; i < nspecs; i++) {
        loaded[i] = NULL;
        loaded_topk[i] = NULL;
        if (attest_candidate_resolve(specs[i], &loaded[i]) == ATTEST_OK) continue;
        /* Not one of the attest_kernel families: perhaps a top-k candidate (built in, a
         * plugin or a process); the first error stands unless that one loads. */
        char why[512];
        snprintf(why, sizeof why, "%s", attest_last_error());
        if (attest_topk_candidate_resolve(specs[i], &loaded_topk[i]) != ATTEST_OK)
            return attest_cli_usage_error(VERB, "%s", why);
    }

    print_kernels();
    if (print_layouts() != 0) return ATTEST_EXIT_USAGE;

    printf("\ncandidates:\n  %-36s %-10s %-6s %-*s %s\n", "name", "kernel", "domain",
           CONVENTIONS_WIDTH, "conventions", "description");
    const attest_candidate *const *list;
    size_t n = attest_builtin_candidates(&list);
    for (size_t i = 0; i < n; i++) print_candidate(list[i], NULL);
    for (int i = 0; i < nspecs; i++)
        if (loaded[i] && !attest_builtin_find(specs[i])) print_candidate(loaded[i], specs[i]);
    attest_topk_print_candidates(CONVENTIONS_WIDTH);
    for (int i = 0; i < nspecs; i++)
        if (loaded_topk[i] && !attest_topk_builtin_find(specs[i]))
            attest_topk_print_candidate(loaded_topk[i], CONVENTIONS_WIDTH);

    if (print_policy() != 0) return ATTEST_EXIT_USAGE;
    return ATTEST_EXIT_OK;
}
