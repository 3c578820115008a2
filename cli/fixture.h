/* attest CLI (internal): edge tags of generated cases, for `attest fixture make --cover`. A tag
 * names one edge a golden fixture should hold (a length-0 request, a page boundary +-1, an
 * all-invalid query, ...); make keeps the generated cases that show a tag not yet covered. */
#ifndef ATTEST_CLI_FIXTURE_H
#define ATTEST_CLI_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/generator.h"
#include "attest/status.h"

/* A set of tags: bit i is entry i of the tag table. */
typedef uint32_t fixture_tags;

typedef struct fixture_tag_def {
    const char *name;      /* "len-0", "page-edge", ... (unique per kernel) */
    attest_kernel kernel;
    int32_t layout;        /* 0: any; else the only attest_layout_id that can show it */
    const char *what;      /* one line for `attest fixture tags` and the README */
} fixture_tag_def;

/* Returns the tag table (static) and its size (at most 32 entries). */
const fixture_tag_def *fixture_tag_table(size_t *count);

/* Returns the tags a generated case shows, from its tensors and what the generator drew. */
fixture_tags fixture_case_tags(const attest_case *c, const attest_gen_info *info);

/* Estimates the bytes a case takes in a fixture file (written cache tokens, which do not
 * compress, plus the other tensors and float64 expected outputs; poisoned slots compress to
 * almost nothing and are not counted), so --cover can prefer small cases. */
double fixture_case_cost(const attest_case *c, const attest_gen_info *info);

/* Parses "all" or a comma-separated list of tag names of `kernel` into *out. "all" means every
 * tag of the kernel that `layout` (0: any) can show. ATTEST_ERR_NOT_FOUND names an unknown tag
 * and lists the known ones. */
attest_status fixture_tags_parse(const char *list, attest_kernel kernel, int32_t layout,
                                 fixture_tags *out) ATTEST_MUST_CHECK;

/* Writes the names of the tags in `tags`, comma-separated ("" for none), into buf. */
void fixture_tags_string(fixture_tags tags, char *buf, size_t cap);

#endif
