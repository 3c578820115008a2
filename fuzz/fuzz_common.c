#include "fuzz_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/campaign.h"
#include "attest/casefile.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/results.h"
#include "attest/registry.h"
#include "attest/runner.h"

fuzz_input fuzz_input_make(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, 0, size};
    return in;
}

size_t fuzz_remaining(const fuzz_input *in) { return in->tail - in->head; }

uint64_t fuzz_tail_uint(fuzz_input *in, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && fuzz_remaining(in) > 0; i++)
        v |= (uint64_t)in->data[--in->tail] << (8 * i);
    return v;
}

uint64_t fuzz_head_uint(fuzz_input *in, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && fuzz_remaining(in) > 0; i++)
        v |= (uint64_t)in->data[in->head++] << (8 * i);
    return v;
}

const attest_candidate *fuzz_candidate(const char *fallback)
{
    static const attest_candidate *cached;
    if (cached) return cached;
    const char *spec = getenv("ATTEST_FUZZ_CANDIDATE");
    if (spec == NULL || *spec == '\0') spec = fallback;
    if (attest_candidate_resolve(spec, &cached) != ATTEST_OK) {
        fprintf(stderr, "fuzz: cannot use candidate '%s': %s\n", spec, attest_last_error());
        abort();
    }
    return cached;
}

static attest_results_writer *fuzz_results;
static char fuzz_command_line[2048] = "libFuzzer target";

/* Defined here so every target records how it was started (libFuzzer and replay_main.c call it
 * before the first input). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    size_t len = 0;
    for (int i = 0; i < *argc && len < sizeof fuzz_command_line; i++) {
        int n = snprintf(fuzz_command_line + len, sizeof fuzz_command_line - len, "%s%s",
                         i ? " " : "", (*argv)[i]);
        if (n < 0) break;
        len += (size_t)n;
    }
    return 0;
}

static void fuzz_results_close_as(attest_results_end end)
{
    if (fuzz_results && attest_results_close(fuzz_results, end) != ATTEST_OK)
        fprintf(stderr, "fuzz: closing results: %s\n", attest_last_error());
    fuzz_results = NULL;
}

/* libFuzzer runs atexit handlers only when it ends normally (-runs, -max_total_time); a crash
 * or a signal leaves the file as the store's crash safety does (rows up to the last flush). */
static void fuzz_results_close(void) { fuzz_results_close_as(ATTEST_RESULTS_COMPLETE); }

/* Every judged input's tolerance record goes to $ATTEST_FUZZ_RESULTS (flushed every second by
 * the store, so a crash that ends the fuzzer loses at most the last second). */
static void fuzz_record_append(const attest_case_record *rec, const attest_case *c,
                               const attest_policy *policy)
{
    static int opened;
    if (!opened) {
        opened = 1;
        const char *env = getenv("ATTEST_FUZZ_RESULTS");
        char path[1024];
        /* "%p" becomes the process id: libFuzzer's -jobs/-fork run several processes, and two
         * writers must not share one file. */
        const char *pid_at = env ? strstr(env, "%p") : NULL;
        if (pid_at)
            snprintf(path, sizeof path, "%.*s%d%s", (int)(pid_at - env), env, (int)getpid(),
                     pid_at + 2);
        else
            snprintf(path, sizeof path, "%s", env ? env : "");
        if (path[0]) {
            attest_results_provenance prov;
            attest_campaign_provenance(&prov, policy, fuzz_command_line);
            snprintf(prov.candidate, sizeof prov.candidate, "%s", rec->candidate);
            snprintf(prov.kernel, sizeof prov.kernel, "%s", attest_kernel_name(c->kernel));
            if (attest_results_create(path, &prov, NULL, &fuzz_results) != ATTEST_OK) {
                fprintf(stderr, "fuzz: results file %s: %s\n", path, attest_last_error());
                abort();
            }
            atexit(fuzz_results_close);
        }
    }
    if (fuzz_results && attest_results_append(fuzz_results, rec, c, NULL) != ATTEST_OK) {
        fprintf(stderr, "fuzz: appending to results: %s\n", attest_last_error());
        abort();
    }
}

typedef struct fuzz_state {
    attest_policy *policy;
    attest_runner *runner;
    const attest_candidate *cand;
    uint64_t judged;
} fuzz_state;

static fuzz_state state;

static void fuzz_state_init(const attest_candidate *cand)
{
    if (state.runner && state.cand == cand) return;
    if (state.policy == NULL && attest_policy_default(&state.policy) != ATTEST_OK) {
        fprintf(stderr, "fuzz: default policy: %s\n", attest_last_error());
        abort();
    }
    attest_runner_options opt = attest_runner_defaults();
    /* In-process and one run: libFuzzer wants the candidate's own crash and speed; nondeterminism
     * campaigns belong to `attest run --reruns`. */
    opt.isolate = 0;
    opt.reruns = 1;
    opt.policy = state.policy;
    opt.reference = attest_ref_simulated;
    if (attest_runner_create(cand, &opt, &state.runner) != ATTEST_OK) {
        fprintf(stderr, "fuzz: runner: %s\n", attest_last_error());
        abort();
    }
    state.cand = cand;
}

void fuzz_judge(const char *target, const attest_candidate *cand, attest_case *c)
{
    fuzz_state_init(cand);
    attest_case_record rec;
    memset(&rec, 0, sizeof rec);
    if (attest_runner_judge(state.runner, c, &rec, NULL) != ATTEST_OK) {
        fprintf(stderr, "fuzz: harness error: %s\n", attest_last_error());
        abort();
    }
    rec.case_id = state.judged++;
    fuzz_record_append(&rec, c, state.policy);
    if (!attest_verdict_is_failure(rec.verdict)) return;
    /* The abort below skips atexit: close now, so the failing row and its repro are in. */
    fuzz_results_close_as(ATTEST_RESULTS_INTERRUPTED);
    char gates[128];
    attest_gate_mask_string(rec.failed_gates, gates, sizeof gates);
    const char *dir = getenv("ATTEST_FUZZ_ARTIFACTS");
    char path[1024];
    snprintf(path, sizeof path, "%s/fuzz-%s-%016" PRIx64 ".h5", dir && *dir ? dir : ".", target,
             c->seed);
    attest_casefile_extras extras;
    memset(&extras, 0, sizeof extras);
    extras.note = "written by an attest fuzz target on a failing verdict";
    attest_status saved = attest_casefile_save(path, NULL, c, &extras);
    fprintf(stderr,
            "fuzz %s: %s (gates: %s) candidate=%s\n  params: %s\n  message: %s\n  case: %s%s\n",
            target, attest_verdict_name(rec.verdict), gates[0] ? gates : "-", cand->name,
            rec.params, rec.message, saved == ATTEST_OK ? path : "not saved: ",
            saved == ATTEST_OK ? "" : attest_last_error());
    abort();
}
