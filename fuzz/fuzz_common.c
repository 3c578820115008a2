#include "fuzz_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attest/campaign.h"
#include "attest/casefile.h"
#include "attest/policy.h"
#include "attest/reference.h"
#include "attest/results.h"
#include "attest/registry.h"
#include "attest/runner.h"

const attest_candidate *fuzz_candidate(const char *fallback)
{
    static const attest_candidate *cached;
    if (cached) return cached;
    const char *spec = getenv(FUZZ_ENV_CANDIDATE);
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

const char *fuzz_started_as(void) { return fuzz_command_line; }

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
        const char *env = getenv(FUZZ_ENV_RESULTS);
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
    const char *policy = getenv(FUZZ_ENV_POLICY);
    if (state.policy == NULL &&
        (policy && *policy ? attest_policy_load(policy, &state.policy)
                           : attest_policy_default(&state.policy)) != ATTEST_OK) {
        fprintf(stderr, "fuzz: policy: %s\n", attest_last_error());
        abort();
    }
    attest_runner_options opt = attest_runner_defaults();
    /* In-process: libFuzzer wants the candidate's own crash and speed. One run unless the
     * driver asks for the bitwise re-run check (`attest fuzz --reruns 2`). */
    opt.isolate = 0;
    opt.reruns = 1;
    const char *reruns = getenv(FUZZ_ENV_RERUNS);
    if (reruns && *reruns) {
        char *end = NULL;
        long n = strtol(reruns, &end, 10);
        if (*end != '\0' || n < 1 || n > 1000) {
            fprintf(stderr, "fuzz: %s=%s is not a run count in [1, 1000]\n", FUZZ_ENV_RERUNS, reruns);
            abort();
        }
        opt.reruns = (int32_t)n;
    }
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
    const char *dir = getenv(FUZZ_ENV_ARTIFACTS);
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

/* --- kernel targets: semantic counters, live stats, structure-aware mutation --------------- */

/* libFuzzer treats every byte of this section as coverage: a semantic class an input reaches
 * for the first time (or with a new count bucket) keeps the input in the corpus, as a new edge
 * would. libFuzzer clears the section before each input. */
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t
    extra_counters[FUZZ_MAX_FEATURES];

static struct {
    int init, structure;
    fuzz_stats *stats;
    attest_kernel kernel;
    uint64_t reached[FUZZ_MAX_FEATURES]; /* 1 + the exec that first reached a class; 0: never */
    uint64_t classes, execs;
} kt;

static void classes_write(void)
{
    const char *path = getenv(FUZZ_ENV_CLASSES);
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    if (f == NULL) return;
    for (int i = 0; i < fuzz_feature_count(kt.kernel); i++)
        if (kt.reached[i]) fprintf(f, "%s %" PRIu64 "\n", fuzz_feature_name(kt.kernel, i), kt.reached[i]);
    fclose(f);
}

fuzz_stats *fuzz_stats_slot(void)
{
    static int mapped;
    static fuzz_stats *slot;
    if (mapped) return slot;
    mapped = 1;
    const char *stats = getenv(FUZZ_ENV_STATS);
    const char *colon = stats ? strrchr(stats, ':') : NULL;
    if (colon) {
        char path[1024];
        snprintf(path, sizeof path, "%.*s", (int)(colon - stats), stats);
        const long n = strtol(colon + 1, NULL, 10);
        int fd = open(path, O_RDWR);
        const size_t len = (size_t)(n + 1) * sizeof(fuzz_stats);
        void *m = fd >= 0 && n >= 0 ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                       : MAP_FAILED;
        if (fd >= 0) close(fd);
        if (m == MAP_FAILED) {
            fprintf(stderr, "fuzz: %s=%s: cannot map the stats slot\n", FUZZ_ENV_STATS, stats);
            abort();
        }
        slot = (fuzz_stats *)m + n;
    }
    return slot;
}

static void kernel_target_init(attest_kernel kernel)
{
    if (kt.init) return;
    kt.init = 1;
    kt.kernel = kernel;
    const char *structure = getenv(FUZZ_ENV_STRUCTURE);
    kt.structure = !(structure && strcmp(structure, "0") == 0);
    kt.stats = fuzz_stats_slot();
    if (getenv(FUZZ_ENV_CLASSES)) atexit(classes_write);
}

int fuzz_kernel_input(attest_kernel kernel, const char *target, const char *fallback,
                      const uint8_t *data, size_t size)
{
    kernel_target_init(kernel);
    const attest_candidate *cand = fuzz_candidate(fallback);
    /* One workspace for every exec: decoding allocates nothing once it has the largest case. */
    static fuzz_workspace ws;
    attest_case c;
    int valid = 0;
    if (fuzz_decode_reuse(&ws, kernel, data, size, &c, &valid) != ATTEST_OK) {
        fprintf(stderr, "fuzz %s: decoding: %s\n", target, attest_last_error());
        abort();
    }
    if (kt.stats) {
        if (__atomic_load_n(&kt.stats->closed, __ATOMIC_RELAXED)) { /* stopping: no count */
            attest_case_free(&c);
            return 0;
        }
        __atomic_fetch_add(&kt.stats->execs, 1, __ATOMIC_RELAXED);
        /* The driver stops this job with SIGINT, which libFuzzer ends with _Exit: rows still
         * buffered would be lost, so the file is closed first, when asked. */
        if (__atomic_load_n(&kt.stats->stop, __ATOMIC_RELAXED) &&
            !__atomic_load_n(&kt.stats->closed, __ATOMIC_RELAXED)) {
            fuzz_results_close_as(ATTEST_RESULTS_INTERRUPTED);
            __atomic_store_n(&kt.stats->closed, 1, __ATOMIC_RELEASE);
            attest_case_free(&c);
            return 0;
        }
    }
    kt.execs++;
    if (!valid) {
        attest_case_free(&c);
        return 0;
    }
    uint8_t hits[FUZZ_MAX_FEATURES];
    fuzz_case_features(&c, hits);
    for (int i = 0; i < FUZZ_MAX_FEATURES; i++) {
        if (hits[i] && !kt.reached[i]) {
            kt.reached[i] = kt.execs;
            kt.classes++;
        }
        if (kt.structure) extra_counters[i] = hits[i];
    }
    if (kt.stats) {
        __atomic_store_n(&kt.stats->classes, kt.classes, __ATOMIC_RELAXED);
        __atomic_fetch_add(&kt.stats->judged, 1, __ATOMIC_RELAXED);
    }
    fuzz_judge(target, cand, &c);
    attest_case_free(&c); /* frees nothing unless the pool is held sparsely */
    return 0;
}

size_t fuzz_kernel_mutate(attest_kernel kernel, uint8_t *data, size_t size, size_t max_size,
                          unsigned int seed)
{
    kernel_target_init(kernel);
    if (!kt.structure) return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size;
    return fuzz_mutate(kernel, data, size, max_size, seed, LLVMFuzzerMutate);
}
