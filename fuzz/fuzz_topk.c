/* Fuzz target: the top-k family (attest/topk.h). What an input means is fuzz_topk_decode
 * (fuzz/inputs_topk.c, shared with `attest fuzz --kernel topk`): the tail picks a generated case
 * and its bounds, the head's 7-byte operations set logits to any bit pattern, copy logits (ties),
 * fill runs with NaN, -inf, +inf, +-0 or huge values, set lengths and swap block-table entries.
 * Candidate: $ATTEST_FUZZ_CANDIDATE (a built-in top-k name, path.so:NAME, py:... or exec:...)
 * or cpu-topk. Every
 * judged input is a row of $ATTEST_FUZZ_RESULTS when set; $ATTEST_FUZZ_STATS,
 * $ATTEST_FUZZ_RERUNS and $ATTEST_FUZZ_STRUCTURE are read as the kernel targets read them
 * (fuzz_inputs.h); the semantic classes of fuzz_topk_features are libFuzzer's extra counters. Any failing check
 * prints the verdict, saves the case as a top-k case file $ATTEST_FUZZ_ARTIFACTS/fuzz-topk-SEED.h5
 * (attest check replays it) and aborts, so libFuzzer keeps the input. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/clock.h"
#include "attest/external.h"
#include "attest/reference_topk.h"
#include "attest/topk.h"
#include "attest/topk_candidates.h"
#include "attest/topk_casefile.h"
#include "attest/topk_results.h"
#include "attest/topk_runner.h"
#include "fuzz_common.h"

static const attest_topk_candidate *topk_candidate(const char **spec_out)
{
    static const attest_topk_candidate *cand;
    static const char *spec;
    if (cand) {
        *spec_out = spec;
        return cand;
    }
    spec = getenv(FUZZ_ENV_CANDIDATE);
    if (spec == NULL || *spec == '\0') spec = "cpu-topk";
    cand = attest_topk_builtin_find(spec);
    const attest_status st = cand                           ? ATTEST_OK
                             : attest_external_is_spec(spec) ? attest_external_topk_load(spec, &cand)
                             : strchr(spec, ':')             ? attest_topk_plugin_load(spec, &cand)
                                                             : ATTEST_ERR_NOT_FOUND;
    if (st != ATTEST_OK || cand == NULL) {
        /* A misconfigured campaign must not look like a clean one. */
        fprintf(stderr, "fuzz_topk: no top-k candidate '%s': %s\n", spec, attest_last_error());
        abort();
    }
    *spec_out = spec;
    return cand;
}

static int32_t reruns_of_env(void)
{
    const char *reruns = getenv(FUZZ_ENV_RERUNS);
    if (reruns == NULL || *reruns == '\0') return 1;
    char *end = NULL;
    const long n = strtol(reruns, &end, 10);
    if (*end != '\0' || n < 1 || n > 1000) {
        fprintf(stderr, "fuzz_topk: %s=%s is not a run count in [1, 1000]\n", FUZZ_ENV_RERUNS, reruns);
        abort();
    }
    return (int32_t)n;
}

/* Semantic classes of the decoded case (fuzz_topk_features) as extra coverage: an input that
 * reaches a class first, or a new count bucket of one, stays in the corpus (libFuzzer clears the
 * section before each input). ATTEST_FUZZ_STRUCTURE=0 leaves them at zero. */
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t
    topk_counters[FUZZ_MAX_FEATURES];
static uint8_t reached[FUZZ_MAX_FEATURES];
static uint64_t classes;

static void count_features(const attest_topk_case *c, fuzz_stats *stats)
{
    static int structure = -1;
    if (structure < 0) {
        const char *e = getenv(FUZZ_ENV_STRUCTURE);
        structure = !(e && strcmp(e, "0") == 0);
    }
    uint8_t hits[FUZZ_MAX_FEATURES];
    fuzz_topk_features(c, hits);
    for (int i = 0; i < fuzz_topk_feature_count(); i++) {
        if (hits[i] && !reached[i]) {
            reached[i] = 1;
            classes++;
        }
        if (structure) topk_counters[i] = hits[i];
    }
    if (stats) __atomic_store_n(&stats->classes, classes, __ATOMIC_RELAXED);
}

static attest_results_writer *results;
static uint64_t judged;

static void results_close_as(attest_results_end end)
{
    if (results && attest_results_close(results, end) != ATTEST_OK)
        fprintf(stderr, "fuzz_topk: closing results: %s\n", attest_last_error());
    results = NULL;
}

/* libFuzzer runs atexit handlers only when it ends normally (-runs, -max_total_time). */
static void results_close(void) { results_close_as(ATTEST_RESULTS_COMPLETE); }

static void results_append(const attest_topk_candidate *cand, const char *spec,
                           const attest_topk_case *c, const attest_topk_verdict *v, int32_t reruns,
                           double seconds)
{
    static int opened;
    if (!opened) {
        opened = 1;
        const char *path = getenv(FUZZ_ENV_RESULTS);
        if (path && *path) {
            /* No job line: a fuzz input's case is its seed plus the head's operations, which
             * no generator bound redraws. */
            if (attest_topk_results_open(path, fuzz_started_as(), spec, NULL, 0, 0, &results) !=
                ATTEST_OK) {
                fprintf(stderr, "fuzz_topk: results file %s: %s\n", path, attest_last_error());
                abort();
            }
            atexit(results_close);
        }
    }
    if (results == NULL) return;
    char params[160];
    if (attest_topk_param_string(c, params, sizeof params) != ATTEST_OK) params[0] = '\0';
    attest_case_record rec;
    attest_topk_record(cand, c, params, judged, v, reruns, seconds, &rec);
    if (attest_results_append(results, &rec, NULL, NULL) != ATTEST_OK) {
        fprintf(stderr, "fuzz_topk: appending to results: %s\n", attest_last_error());
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *spec = NULL;
    const attest_topk_candidate *cand = topk_candidate(&spec);
    fuzz_stats *stats = fuzz_stats_slot();
    if (stats) {
        if (__atomic_load_n(&stats->closed, __ATOMIC_RELAXED)) return 0; /* stopping: no count */
        __atomic_fetch_add(&stats->execs, 1, __ATOMIC_RELAXED);
        /* The driver stops this job with SIGINT, which libFuzzer ends with _Exit: rows still
         * buffered would be lost, so the file is closed first, when asked. */
        if (__atomic_load_n(&stats->stop, __ATOMIC_RELAXED)) {
            results_close_as(ATTEST_RESULTS_INTERRUPTED);
            __atomic_store_n(&stats->closed, 1, __ATOMIC_RELEASE);
            return 0;
        }
    }
    attest_topk_case c;
    int valid = 0;
    if (fuzz_topk_decode(data, size, &c, &valid) != ATTEST_OK) {
        fprintf(stderr, "fuzz_topk: decoding: %s\n", attest_last_error());
        abort();
    }
    if (!valid) return 0;
    count_features(&c, stats);
    const size_t n = (size_t)attest_topk_rows(&c.p) * (size_t)c.p.k;
    int32_t *ref = malloc(n * sizeof *ref + 1), *idx = malloc(n * sizeof *idx + 1),
            *phys = malloc(n * sizeof *phys + 1);
    if (!ref || !idx || !phys) abort();
    attest_topk_run_options ro = attest_topk_run_defaults();
    ro.isolate = 0; /* libFuzzer catches the crash itself and keeps the input */
    ro.reruns = reruns_of_env();
    attest_topk_run_result rr;
    attest_topk_verdict v;
    int32_t *want_idx = (cand->outputs & ATTEST_TOPK_OUT_LOGICAL) ? idx : NULL;
    int32_t *want_phys = (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) ? phys : NULL;
    for (size_t i = 0; i < n; i++) idx[i] = phys[i] = ATTEST_TOPK_POISON;
    const double t0 = attest_monotonic_seconds();
    if (attest_ref_topk_case(&c, cand->rule, ref, NULL) != ATTEST_OK ||
        attest_topk_run(cand, &c, &ro, want_idx, want_phys, &rr) != ATTEST_OK ||
        attest_topk_judge(&c, ref, want_idx, want_phys, cand->order, cand->rule, &v) != ATTEST_OK) {
        fprintf(stderr, "fuzz_topk: harness error: %s\n", attest_last_error());
        abort();
    }
    v.failed |= rr.failed;
    if (rr.failed) snprintf(v.detail, sizeof v.detail, "%s", rr.detail);
    results_append(cand, spec, &c, &v, ro.reruns, attest_monotonic_seconds() - t0);
    judged++;
    if (stats) __atomic_fetch_add(&stats->judged, 1, __ATOMIC_RELAXED);
    if (v.failed) {
        /* The abort below skips atexit: close now, so the failing row is in. */
        results_close_as(ATTEST_RESULTS_INTERRUPTED);
        char checks[160], params[160], path[4200];
        attest_topk_check_mask_string(v.failed, checks, sizeof checks);
        if (attest_topk_param_string(&c, params, sizeof params) != ATTEST_OK) params[0] = '\0';
        const char *dir = getenv(FUZZ_ENV_ARTIFACTS);
        snprintf(path, sizeof path, "%s/fuzz-topk-%016" PRIx64 ".h5", dir && *dir ? dir : ".",
                 c.seed);
        attest_topk_casefile_extras x;
        memset(&x, 0, sizeof x);
        x.ref_indices = ref;
        x.candidate_name = cand->name;
        x.cand_indices = want_idx;
        x.cand_physical = want_phys;
        x.note = v.detail;
        const int saved = attest_topk_casefile_save(path, &c, &x) == ATTEST_OK;
        fprintf(stderr, "fuzz_topk: %s FAIL [%s] %s\n  %s\n  case file: %s (attest check %s "
                        "--candidate %s)\n", cand->name, checks, params, v.detail,
                saved ? path : "(not written)", path, spec);
        abort();
    }
    free(ref);
    free(idx);
    free(phys);
    attest_topk_case_free(&c);
    return 0;
}
