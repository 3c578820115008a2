/* attest: the generator-bound options that attest run and attest fixture make share
 * (--max-batch ... --no-edge-bytes): their getopt table entries, their usage lines, how they apply
 * to attest_gen_options, and the flags text a results file's job lines and replay commands are
 * written in (which is why they live with the campaign engine). */
#ifndef ATTEST_GEN_OPTIONS_H
#define ATTEST_GEN_OPTIONS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "attest/candidate.h"
#include "attest/generator.h"

/* getopt_long values of the options; above any verb's own (those start at 256). */
enum {
    ATTEST_CLI_GEN_MAX_BATCH = 512, ATTEST_CLI_GEN_MAX_HEADS, ATTEST_CLI_GEN_MAX_LEN,
    ATTEST_CLI_GEN_MAX_TOPK, ATTEST_CLI_GEN_MAX_NEXT_N, ATTEST_CLI_GEN_MAX_S_Q,
    ATTEST_CLI_GEN_PAGE_SIZE, ATTEST_CLI_GEN_LAYOUT, ATTEST_CLI_GEN_PRODUCTION,
    ATTEST_CLI_GEN_NO_EDGE, ATTEST_CLI_GEN_HIGH_POOLS, ATTEST_CLI_GEN_END_
};

/* The entries to put in a verb's getopt_long table. */
#define ATTEST_CLI_GEN_LONG_OPTIONS                                                                \
    {"max-batch", required_argument, NULL, ATTEST_CLI_GEN_MAX_BATCH},                              \
    {"max-heads", required_argument, NULL, ATTEST_CLI_GEN_MAX_HEADS},                              \
    {"max-len", required_argument, NULL, ATTEST_CLI_GEN_MAX_LEN},                                  \
    {"max-topk", required_argument, NULL, ATTEST_CLI_GEN_MAX_TOPK},                                \
    {"max-next-n", required_argument, NULL, ATTEST_CLI_GEN_MAX_NEXT_N},                            \
    {"max-s-q", required_argument, NULL, ATTEST_CLI_GEN_MAX_S_Q},                                  \
    {"page-size", required_argument, NULL, ATTEST_CLI_GEN_PAGE_SIZE},                              \
    {"layout", required_argument, NULL, ATTEST_CLI_GEN_LAYOUT},                                    \
    {"production", no_argument, NULL, ATTEST_CLI_GEN_PRODUCTION},                                  \
    {"no-edge-bytes", no_argument, NULL, ATTEST_CLI_GEN_NO_EDGE},                                  \
    {"high-pools", required_argument, NULL, ATTEST_CLI_GEN_HIGH_POOLS}

/* The usage lines that list them. */
#define ATTEST_CLI_GEN_USAGE                                                                       \
    "  --max-batch N --max-heads N --max-len N --max-topk N --max-next-n N --max-s-q N\n"          \
    "  --page-size P --layout mla-v4|mla-v32 --production --no-edge-bytes\n"                     \
    "  --high-pools N (per mille of cases whose pool moves past 2^31 bytes; default 10,\n"      \
    "    0 for a device candidate)\n"

/* The options as given; zero-initialized means none given. */
typedef struct attest_cli_gen_bounds {
    int32_t bounds[7]; /* max-batch .. page-size; 0: generator default */
    const char *layout;
    int production, no_edge;
    int32_t high_pools; /* --high-pools N given: N + 1 (0: not given, so 0 can be asked for) */
} attest_cli_gen_bounds;

/* Returns 1 when ch (a getopt_long value) is one of these options. */
int attest_cli_gen_is_option(int ch);

/* Records option ch with its argument. Returns -1, or ATTEST_EXIT_USAGE after reporting a bad
 * value as "attest VERB: bad value for --NAME: 'ARG'". */
int attest_cli_gen_option(const char *verb, int ch, const char *arg, attest_cli_gen_bounds *b);

/* attest_gen_defaults for candidate c's kernel, with one difference: a device candidate draws
 * no moved pools (high_pools 0) unless --high-pools asks. Its device mirror allocates a moved
 * pool's whole span, pool and guard, up to about 8 GB per case and per worker, and nothing on
 * the GPU faults on an unplaced page; no CUDA candidate has yet run such cases on a GPU
 * (docs/notes.md). Replay commands and job lines write the 0, so a replay with any candidate
 * draws the same cases. */
attest_gen_options attest_cli_gen_defaults_for(const attest_candidate *c);

/* Applies the options to g, whose kernel is set (attest_gen_defaults). Returns -1, or
 * ATTEST_EXIT_USAGE after reporting a --layout that is not an MLA layout or not for g's kernel. */
int attest_cli_gen_apply(const char *verb, const attest_cli_gen_bounds *b, attest_gen_options *g);

/* Writes the options given as command-line flags (" --max-len 64 --production"), for a command
 * that regenerates the same cases; "" when none. */
void attest_cli_gen_flags(const attest_cli_gen_bounds *b, char *buf, size_t cap);

/* Writes the generator options g as the flags that parse back into g, from the same table that
 * parses them: with all = 0 only the options that differ from attest_gen_defaults(g->kernel)
 * (for a printed replay command), with all = 1 every bound (for a record that must survive a
 * change of defaults). Options the CLI cannot set (with_truth) are not written. Returns 0, or -1
 * when buf is too small. */
int attest_cli_gen_flags_of(const attest_gen_options *g, int all, char *buf, size_t cap);

/* Parses flags as attest_cli_gen_flags_of writes them (words separated by spaces) onto g, whose
 * kernel and defaults are set. Returns -1, or ATTEST_EXIT_USAGE after reporting a word that is
 * not one of these options or a bad value. */
int attest_cli_gen_parse_flags(const char *verb, const char *flags, attest_gen_options *g);

#endif
