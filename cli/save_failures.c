/* attest run and campaign --save-failures for indexer and mla-decode (save_failures.h). */
#include "save_failures.h"

#include <inttypes.h>
#include <string.h>

#include "attest/casefile.h"
#include "attest/conventions.h"
#include "commands.h"

int attest_cli_saver_init(attest_cli_saver *s, const char *verb, const char *dir,
                          const attest_policy *policy)
{
    memset(s, 0, sizeof *s);
    const int rc = attest_cli_output_dir(verb, "save-failures", dir);
    if (rc >= 0) return rc;
    s->dir = dir;
    s->verb = verb;
    s->policy = policy;
    return -1;
}

/* The case tensor of kept output k: the record names it; a record without metrics (a crash)
 * falls back to table order, which is the order the runner keeps outputs in. */
static const attest_tensor *output_tensor(const attest_case *c, const attest_case_record *rec,
                                          int k)
{
    if (k < rec->num_outputs) {
        const attest_tensor *t = attest_case_tensor_const(c, rec->outputs[k].output);
        if (t && t->role == ATTEST_ROLE_OUTPUT) return t;
    }
    int seen = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        if (c->tensors[i].role != ATTEST_ROLE_OUTPUT) continue;
        if (seen++ == k) return &c->tensors[i];
    }
    return NULL;
}

void attest_cli_recorded_extras(attest_cli_recorded *r, const attest_candidate *cand,
                                const attest_case *c, const attest_case_record *rec,
                                const attest_case_outputs *kept, const attest_policy *policy,
                                attest_casefile_extras *x)
{
    memset(r, 0, sizeof *r);
    /* Only the candidate's bytes: the reference is recomputed when the file is judged again, so
     * a judge or reference fix is what the recheck tests. */
    size_t nc = 0;
    const int n = kept && kept->num_outputs < ATTEST_RECORD_MAX_OUTPUTS ? kept->num_outputs
                  : kept                                                ? ATTEST_RECORD_MAX_OUTPUTS
                                                                        : 0;
    for (int k = 0; k < n; k++) {
        const attest_tensor *t = output_tensor(c, rec, k);
        if (!t || !kept->candidate[k] || kept->candidate_bytes[k] != t->nbytes) continue;
        r->cand[nc] = attest_casefile_output_of(t);
        r->cand[nc].data = kept->candidate[k];
        nc++;
    }
    attest_gate_mask_string(rec->failed_gates, r->gates, sizeof r->gates);
    attest_conventions_format(&cand->conventions, c->kernel, r->conventions,
                              sizeof r->conventions);
    snprintf(r->message, sizeof r->message, "%.*s", (int)sizeof rec->message, rec->message);
    r->info = (attest_casefile_recorded){
        .verdict = attest_verdict_name(rec->verdict),
        .failed_gates = r->gates,
        .message = r->message,
        .conventions = r->conventions,
        .policy_name = attest_policy_name(policy),
        .policy_hash = attest_policy_hash(policy),
        .policy_text = attest_policy_text(policy),
    };
    x->candidate = r->cand;
    x->num_candidate = nc;
    x->candidate_name = cand->name;
    x->recorded = &r->info;
}

attest_status attest_cli_saver_hook(void *ctx, const attest_job *job, const attest_case *c,
                                    const attest_case_record *rec, const attest_case_outputs *kept)
{
    attest_cli_saver *s = ctx;
    char path[4096], who[80] = "";
    if (s->by_candidate) {
        /* A plugin's name may hold any printable byte; a file name gets [A-Za-z0-9._-]. */
        size_t n = 0;
        who[n++] = '-';
        for (const char *p = job->candidate->name; *p && n + 1 < sizeof who; p++) {
            const char ch = *p;
            const int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                              (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
            who[n++] = plain ? ch : '_';
        }
        who[n] = '\0';
    }
    snprintf(path, sizeof path, "%s/%s%s-%016" PRIx64 ".h5", s->dir,
             attest_kernel_name(c->kernel), who, rec->seed);
    char note[512], replay[4200];
    attest_cli_recorded rd;
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    attest_cli_recorded_extras(&rd, job->candidate, c, rec, kept, s->policy, &x);
    snprintf(note, sizeof note, "attest %s --save-%s: %s%s%s%s", s->verb ? s->verb : "run",
             s->passing ? "passing" : "failures", attest_verdict_name(rec->verdict),
             rd.gates[0] ? " (" : "", rd.gates, rd.gates[0] ? ")" : "");
    snprintf(replay, sizeof replay, "attest check %s --recorded", path);
    x.note = note;
    x.replay = replay;
    int existed = 0;
    attest_status st = attest_casefile_save_new(path, c, &x, &existed);
    if (st != ATTEST_OK) {
        s->failed++;
        fprintf(stderr, "attest %s: --save-failures: %s\n", s->verb ? s->verb : "run",
                attest_last_error());
    } else if (existed) {
        s->kept++;
    } else {
        s->saved++;
    }
    return ATTEST_OK;
}

void attest_cli_saver_report(const attest_cli_saver *s, FILE *f)
{
    if (!s->dir || s->saved + s->kept + s->failed == 0) return;
    fprintf(f, "saved %s: %" PRIu64 " written to %s", s->passing ? "cases" : "failures", s->saved,
            s->dir);
    if (s->kept) fprintf(f, ", %" PRIu64 " kept (a file of that name existed)", s->kept);
    if (s->failed) fprintf(f, ", %" PRIu64 " not written (see above)", s->failed);
    fprintf(f, "; judge again with: attest check FILE --recorded\n");
}
