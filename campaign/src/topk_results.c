/* The top-k family's results rows and results files (attest/topk_results.h). */
#include "attest/topk_results.h"

#include <stdio.h>
#include <string.h>

/* The selection checks: any of them makes a MISMATCH with the topk gate. */
#define SELECTION_CHECKS                                                                           \
    ((1u << ATTEST_TOPK_CHECK_RANGE) | (1u << ATTEST_TOPK_CHECK_DUPLICATE) |                       \
     (1u << ATTEST_TOPK_CHECK_NONFINITE) | (1u << ATTEST_TOPK_CHECK_RECALL) |                      \
     (1u << ATTEST_TOPK_CHECK_PADDING) | (1u << ATTEST_TOPK_CHECK_ORDER) |                         \
     (1u << ATTEST_TOPK_CHECK_SHORT_ROW) | (1u << ATTEST_TOPK_CHECK_TRANSLATION))

attest_verdict attest_topk_verdict_of(uint32_t failed)
{
    /* The runner's priority: what ended or corrupted the run outranks a wrong pick. */
    if (failed & (1u << ATTEST_TOPK_CHECK_CRASH)) return ATTEST_VERDICT_CRASH;
    if (failed & (1u << ATTEST_TOPK_CHECK_TIMEOUT)) return ATTEST_VERDICT_TIMEOUT;
    if (failed & (1u << ATTEST_TOPK_CHECK_CANARY)) return ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE;
    if (failed & (1u << ATTEST_TOPK_CHECK_INPUT)) return ATTEST_VERDICT_INPUT_MODIFIED;
    if (failed & (1u << ATTEST_TOPK_CHECK_NONDETERMINISM)) return ATTEST_VERDICT_NONDETERMINISTIC;
    return failed ? ATTEST_VERDICT_MISMATCH : ATTEST_VERDICT_OK;
}

void attest_topk_record(const attest_topk_candidate *cand, const attest_topk_case *c,
                        const char *params, uint64_t case_id, const attest_topk_verdict *v,
                        int32_t reruns, double run_seconds, attest_case_record *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->case_id = case_id;
    rec->seed = c->seed;
    snprintf(rec->params, sizeof rec->params, "%s", params);
    snprintf(rec->candidate, sizeof rec->candidate, "%s", cand->name);
    rec->verdict = attest_topk_verdict_of(v->failed);
    if (v->failed & SELECTION_CHECKS) rec->failed_gates = ATTEST_GATE_BIT(ATTEST_GATE_TOPK);
    if (v->failed & (1u << ATTEST_TOPK_CHECK_CANARY)) rec->integrity_flags |= ATTEST_INTEGRITY_CANARY;
    if (v->failed & (1u << ATTEST_TOPK_CHECK_INPUT))
        rec->integrity_flags |= ATTEST_INTEGRITY_INPUT_MODIFIED;
    if (v->failed & (1u << ATTEST_TOPK_CHECK_NONDETERMINISM))
        rec->integrity_flags |= ATTEST_INTEGRITY_NONDETERMINISM;
    if (v->failed & (1u << ATTEST_TOPK_CHECK_RUN))
        rec->integrity_flags |= ATTEST_INTEGRITY_CANDIDATE_ERROR;
    rec->reruns = reruns;
    rec->run_seconds = run_seconds;
    /* No output metrics: the judge compares sets, not values, and `attest show` prints the
     * message of a row without them, which names the checks, the row and slot. */
    rec->num_outputs = 0;
    if (v->failed) {
        char checks[160];
        attest_topk_check_mask_string(v->failed, checks, sizeof checks);
        if (strncmp(v->detail, checks, strlen(checks)) == 0)
            snprintf(rec->message, sizeof rec->message, "%.200s", v->detail);
        else
            snprintf(rec->message, sizeof rec->message, "%.60s: %.190s", checks, v->detail);
    }
}

static void job_line(const char *spec, const attest_topk_gen_bounds *g, char *buf, size_t cap)
{
    snprintf(buf, cap, "--kernel topk --max-batch %d --max-next-n %d --max-len %d --max-topk %d "
                       "--candidate %s",
             g->max_batch, g->max_next_n, g->max_width, g->max_k, spec);
}

attest_status attest_topk_results_open(const char *path, const char *command_line,
                                       const char *spec, const attest_topk_gen_bounds *g,
                                       uint64_t seed, uint64_t planned,
                                       attest_results_writer **out)
{
    attest_results_provenance prov;
    attest_results_provenance_init(&prov);
    snprintf(prov.kernel, sizeof prov.kernel, "topk");
    snprintf(prov.candidate, sizeof prov.candidate, "%s", spec);
    snprintf(prov.command_line, sizeof prov.command_line, "%s", command_line);
    /* The judge has no tolerance (exact ties): no policy shaped the verdicts. */
    snprintf(prov.policy_name, sizeof prov.policy_name, "none (exact ties)");
    if (g) job_line(spec, g, prov.jobs, sizeof prov.jobs);
    prov.seed = seed;
    prov.cases_planned = planned;
    return attest_results_create(path, &prov, NULL, out);
}

