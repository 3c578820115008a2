/* attest reports: failures grouped by verdict and failed gates, worst first, and `attest show`.
 * Each group keeps only its few worst cases, so grouping a million-row file takes little memory.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define DEFAULT_PER_GROUP 5

typedef struct failure_group {
    attest_verdict verdict;
    uint32_t gates;
    uint64_t count;
    size_t kept;
    attest_case_record *worst; /* [per_group], worst first */
} failure_group;

struct attest_failure_groups {
    size_t per_group;
    failure_group *groups;
    size_t num_groups, cap_groups;
    uint64_t failures;
};

attest_status attest_failure_groups_create(size_t per_group, attest_failure_groups **out)
{
    ATTEST_RETURN_IF(!out, ATTEST_ERR_INVALID_ARGUMENT, "attest_failure_groups_create: NULL out");
    *out = calloc(1, sizeof **out);
    ATTEST_RETURN_IF(!*out, ATTEST_ERR_OUT_OF_MEMORY, "failure groups: out of memory");
    (*out)->per_group = per_group ? per_group : DEFAULT_PER_GROUP;
    return ATTEST_OK;
}

void attest_failure_groups_free(attest_failure_groups *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->num_groups; i++) free(g->groups[i].worst);
    free(g->groups);
    free(g);
}

uint64_t attest_failure_groups_count(const attest_failure_groups *g) { return g ? g->failures : 0; }

static attest_status find_group(attest_failure_groups *g, const attest_case_record *rec,
                                failure_group **out)
{
    for (size_t i = 0; i < g->num_groups; i++)
        if (g->groups[i].verdict == rec->verdict && g->groups[i].gates == rec->failed_gates) {
            *out = &g->groups[i];
            return ATTEST_OK;
        }
    if (g->num_groups == g->cap_groups) {
        size_t cap = g->cap_groups ? 2 * g->cap_groups : 8;
        failure_group *n = realloc(g->groups, cap * sizeof *n);
        ATTEST_RETURN_IF(!n, ATTEST_ERR_OUT_OF_MEMORY, "failure groups: out of memory");
        g->groups = n;
        g->cap_groups = cap;
    }
    failure_group *fg = &g->groups[g->num_groups];
    memset(fg, 0, sizeof *fg);
    fg->verdict = rec->verdict;
    fg->gates = rec->failed_gates;
    fg->worst = malloc(g->per_group * sizeof *fg->worst);
    ATTEST_RETURN_IF(!fg->worst, ATTEST_ERR_OUT_OF_MEMORY, "failure groups: out of memory");
    g->num_groups++;
    *out = fg;
    return ATTEST_OK;
}

attest_status attest_failure_groups_add(attest_failure_groups *g, const attest_case_record *rec)
{
    ATTEST_RETURN_IF(!g || !rec, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_failure_groups_add: NULL argument");
    if (!attest_verdict_is_failure(rec->verdict)) return ATTEST_OK;
    failure_group *fg = NULL;
    ATTEST_FORWARD(find_group(g, rec, &fg));
    g->failures++;
    fg->count++;
    size_t at = fg->kept;
    while (at > 0 && attest_report_severity_cmp(rec, &fg->worst[at - 1]) < 0) at--;
    if (at >= g->per_group) return ATTEST_OK;
    size_t last = fg->kept < g->per_group ? fg->kept : g->per_group - 1;
    for (size_t i = last; i > at; i--) fg->worst[i] = fg->worst[i - 1];
    fg->worst[at] = *rec;
    if (fg->kept < g->per_group) fg->kept++;
    return ATTEST_OK;
}

static int group_cmp(const void *a, const void *b)
{
    const failure_group *x = a, *y = b;
    return attest_report_severity_cmp(&x->worst[0], &y->worst[0]);
}

void attest_report_failures(FILE *f, const attest_failure_groups *g, const char *results_path)
{
    if (!g || g->failures == 0) {
        fprintf(f, "no failures\n");
        return;
    }
    /* Sort a copy of the group order, not the groups: printing leaves g as it was. */
    failure_group *order = malloc(g->num_groups * sizeof *order);
    if (!order) {
        fprintf(f, "failures: %" PRIu64 " (out of memory while sorting them)\n", g->failures);
        return;
    }
    memcpy(order, g->groups, g->num_groups * sizeof *order);
    qsort(order, g->num_groups, sizeof *order, group_cmp);
    fprintf(f, "failures by verdict and gate, worst first (%" PRIu64 " case%s in %zu group%s):\n",
            g->failures, g->failures == 1 ? "" : "s", g->num_groups,
            g->num_groups == 1 ? "" : "s");
    for (size_t i = 0; i < g->num_groups; i++) {
        const failure_group *fg = &order[i];
        char gates[96];
        attest_gate_mask_string(fg->gates, gates, sizeof gates);
        fprintf(f, "  %s%s%s%s: %" PRIu64 " case%s\n", attest_verdict_name(fg->verdict),
                gates[0] ? " [" : "", gates, gates[0] ? "]" : "", fg->count,
                fg->count == 1 ? "" : "s");
        for (size_t j = 0; j < fg->kept; j++) {
            const attest_case_record *rec = &fg->worst[j];
            fputs("    ", f);
            attest_rep_headline(f, rec);
            fputs("  ", f);
            attest_report_brief(f, rec);
            fputc('\n', f);
            fprintf(f, "      %.*s\n", (int)sizeof rec->params, rec->params);
            if (results_path) {
                char replay[1200];
                attest_results_replay_command(results_path, rec->case_id, rec->candidate, replay,
                                              sizeof replay);
                fprintf(f, "      replay: %s\n", replay);
            }
        }
        if (fg->count > fg->kept)
            fprintf(f, "    ... and %" PRIu64 " more\n", fg->count - (uint64_t)fg->kept);
    }
    free(order);
}

attest_status attest_report_show(FILE *f, attest_results_reader *r, size_t per_group)
{
    ATTEST_RETURN_IF(!f || !r, ATTEST_ERR_INVALID_ARGUMENT, "attest_report_show: NULL argument");
    attest_failure_groups *g = NULL;
    ATTEST_FORWARD(attest_failure_groups_create(per_group, &g));
    attest_summary s;
    attest_summary_init(&s);
    attest_status st = ATTEST_OK;
    attest_results_rewind(r);
    for (;;) {
        attest_case_record rec;
        int done = 0;
        st = attest_results_next(r, &rec, NULL, &done);
        if (st != ATTEST_OK || done) break;
        attest_summary_add(&s, &rec);
        st = attest_failure_groups_add(g, &rec);
        if (st != ATTEST_OK) break;
    }
    attest_results_rewind(r);
    if (st == ATTEST_OK) {
        const attest_results_provenance *p = attest_results_provenance_of(r);
        const char *path = attest_results_path(r);
        attest_report_provenance(f, path, p, attest_results_num_cases(r));
        fputc('\n', f);
        attest_report_summary(f, &s, path, attest_report_campaign_seconds(p));
        if (s.failures) {
            fputc('\n', f);
            attest_report_failures(f, g, path);
        }
    }
    attest_failure_groups_free(g);
    return st;
}
