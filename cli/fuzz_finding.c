/* attest fuzz: one finding judged again, minimized, saved and checked (fuzz_finding.h). */
#include "fuzz_finding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/casefile.h"
#include "attest/minimize.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/report.h"
#include "attest/campaign.h"
#include "commands.h"
#include "save_failures.h"

typedef struct judge_ctx {
    attest_runner *runner;
    attest_verdict verdict;
    uint32_t gates;
} judge_ctx;

static attest_status judge(attest_runner *runner, const attest_case *c, attest_case_record *rec)
{
    memset(rec, 0, sizeof *rec);
    return attest_runner_judge(runner, c, rec, NULL);
}

/* The minimizer's predicate: the same verdict and the same failed gates. */
static int same_failure(const attest_case *c, void *p)
{
    judge_ctx *j = p;
    attest_case_record rec;
    if (judge(j->runner, c, &rec) != ATTEST_OK) return -1;
    return rec.verdict == j->verdict && rec.failed_gates == j->gates;
}


attest_status attest_fuzz_save_case(const char *path, const attest_case *c, const char *note,
                                    const char *replay, const attest_casefile_extras *recorded)
{
    attest_casefile_output outs[ATTEST_RECORD_MAX_OUTPUTS];
    double *ref[ATTEST_RECORD_MAX_OUTPUTS] = {0};
    size_t k = 0;
    attest_status st = ATTEST_OK;
    for (size_t i = 0; i < c->num_tensors && k < ATTEST_RECORD_MAX_OUTPUTS; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT) continue;
        outs[k] = attest_casefile_output_of(t);
        outs[k].dtype = ATTEST_DTYPE_F64;
        ref[k] = malloc(attest_tensor_count(t) * sizeof(double) + 1);
        if (!ref[k]) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: expected outputs", path);
        outs[k].data = ref[k];
        k++;
    }
    if (st == ATTEST_OK) st = attest_engine_reference(c, ref);
    attest_casefile_extras x = recorded ? *recorded : (attest_casefile_extras){0};
    x.expected = outs;
    x.num_expected = k;
    x.note = note;
    x.replay = replay;
    int existed = 0;
    if (st == ATTEST_OK) st = attest_casefile_save_new(path, c, &x, &existed);
    if (st == ATTEST_OK && existed) /* taken since attest_cli_free_path looked */
        st = attest_fail(ATTEST_ERR_IO, "%s: appeared while the finding was written; kept", path);
    for (size_t i = 0; i < k; i++) free(ref[i]);
    return st;
}

attest_status attest_fuzz_finding(const attest_finding_options *fo, const attest_candidate *cand,
                                  const attest_runner_options *ropt, attest_case *cp,
                                  const attest_finding_origin *o, int number)
{
    attest_case c = *cp, small;
    memset(&small, 0, sizeof small);
    attest_runner *runner = NULL;
    attest_status st = attest_runner_create(cand, ropt, &runner);
    attest_case_record rec;
    if (st == ATTEST_OK) st = judge(runner, &c, &rec);
    char gates[96], before[160], after[160];
    if (st == ATTEST_OK && o->expected &&
        (rec.verdict != o->verdict || rec.failed_gates != o->gates)) {
        attest_gate_mask_string(o->gates, gates, sizeof gates);
        printf("finding %d (%s): %s (%s) did not repeat: judged again it is %s; "
               "the candidate is not deterministic across processes, kept unminimized\n",
               number, o->what, attest_verdict_name(o->verdict), gates,
               attest_verdict_name(rec.verdict));
    } else if (st == ATTEST_OK && !attest_verdict_is_failure(rec.verdict)) {
        printf("finding %d (%s): the libFuzzer target stopped on it, but judged in an isolated "
               "worker it is %s (a failure of the in-process run alone: a sanitizer report, a "
               "leak, or nondeterminism); kept unminimized\n",
               number, o->what, attest_verdict_name(rec.verdict));
    }
    judge_ctx jc = {.runner = runner, .verdict = rec.verdict, .gates = rec.failed_gates};
    attest_minimize_stats ms = {0, 0};
    if (st == ATTEST_OK) {
        if (attest_verdict_is_failure(rec.verdict))
            st = attest_minimize_case(&c, same_failure, &jc, fo->max_tries, &small, &ms);
        else
            st = attest_minimize_case(&c, same_failure, &jc, 1, &small, &ms); /* a plain copy */
    }
    char path[4096], note[2048], replay[4400], params[ATTEST_PARAM_STRING_MAX];
    if (st == ATTEST_OK) {
        attest_case_size_describe(&c, before, sizeof before);
        attest_case_size_describe(&small, after, sizeof after);
        attest_gate_mask_string(rec.failed_gates, gates, sizeof gates);
        snprintf(path, sizeof path, "%s/finding-%s-%s-%s.h5", fo->findings,
                 attest_kernel_name(c.kernel), attest_verdict_name(rec.verdict), o->id);
        for (char *p = strrchr(path, '/') + 1; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
        if (attest_cli_free_path(path, sizeof path, NULL) != 0) st = ATTEST_ERR_IO;
    }
    if (st == ATTEST_OK) {
        snprintf(note, sizeof note,
                 "attest fuzz finding: %s%s%s%s of %s; %s, minimized from %s to %s in %u judgements",
                 attest_verdict_name(rec.verdict), gates[0] ? " (" : "", gates, gates[0] ? ")" : "",
                 cand->name, o->how, before, after, ms.tries);
        snprintf(replay, sizeof replay, "attest check %s --candidate %s", path, fo->candidate);
        /* A MISMATCH finding keeps the candidate's outputs of the minimized case as recorded
         * outputs: `attest check FILE --recorded` judges them again where the candidate cannot
         * run (a GPU kernel's finding on a machine without the GPU). One more judgement, for a
         * MISMATCH only: other verdicts are not properties of the outputs (a crash's or a
         * hang's are poison), and judging a hang again would wait out its time limit. */
        attest_case_record last;
        attest_case_outputs kept;
        memset(&kept, 0, sizeof kept);
        memset(&last, 0, sizeof last);
        attest_cli_recorded rd;
        attest_casefile_extras rx;
        memset(&rx, 0, sizeof rx);
        attest_policy *embedded = NULL; /* what a NULL policy judges under, for its name */
        int outputs_tell = 0;
        if (rec.verdict == ATTEST_VERDICT_MISMATCH) {
            st = attest_runner_judge(runner, &small, &last, &kept);
            if (st == ATTEST_OK && ropt->policy == NULL) st = attest_policy_default(&embedded);
            outputs_tell = st == ATTEST_OK && last.verdict == ATTEST_VERDICT_MISMATCH;
        }
        if (outputs_tell)
            attest_cli_recorded_extras(&rd, cand, &small, &last, &kept,
                                       ropt->policy ? ropt->policy : embedded, &rx);
        if (st == ATTEST_OK)
            st = attest_fuzz_save_case(path, &small, note, replay, outputs_tell ? &rx : NULL);
        attest_policy_free(embedded);
        attest_case_outputs_free(&kept);
    }
    /* What attest check will see: the file, loaded back, judged once more. */
    attest_case loaded;
    memset(&loaded, 0, sizeof loaded);
    attest_case_record again;
    memset(&again, 0, sizeof again);
    if (st == ATTEST_OK) st = attest_casefile_load(path, NULL, &loaded);
    if (st == ATTEST_OK) st = judge(runner, &loaded, &again);
    if (st == ATTEST_OK) {
        if (attest_case_param_string(&loaded, params, sizeof params) != ATTEST_OK) params[0] = '\0';
        printf("finding %d: %s%s%s%s, %s\n", number, attest_verdict_name(rec.verdict),
               gates[0] ? " (" : "", gates, gates[0] ? ")" : "", o->what);
        /* What went wrong in the saved case, as attest check prints it: the deciding output,
         * its metrics and where (a crash's or a hang's message). */
        char brief[1024];
        attest_report_brief_string(&again, brief, sizeof brief);
        if (brief[0]) printf("  what: %s\n", brief);
        printf("  minimized: %s -> %s (%u judgements, %u reductions kept)\n", before, after,
               ms.tries, ms.accepted);
        printf("  saved: %s\n  %s\n", path, params);
        if (again.verdict == rec.verdict && again.failed_gates == rec.failed_gates)
            printf("  check: %s   (fails the same way)\n", replay);
        else
            printf("  check: %s   (WARNING: the saved case judged %s, not %s)\n", replay,
                   attest_verdict_name(again.verdict), attest_verdict_name(rec.verdict));
    }
    attest_case_free(&loaded);
    attest_case_free(&small);
    attest_runner_destroy(runner);
    return st;
}

