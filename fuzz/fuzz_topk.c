/* Fuzz target: the top-k family (attest/topk.h). The input is read from both ends, as the
 * kernel targets' are: the last 8 bytes are the generator seed (little-endian from the end), the
 * byte before them the shape knobs (bit 0: the default bounds, else small ones); the head is a
 * list of 7-byte operations on the generated case: set a logit to any float32, copy one logit
 * over another (ties), fill a run with one value class (NaN, -inf, +inf, +-0, huge), set a
 * request's length, swap two block-table entries (they stay distinct, so a translation through
 * the wrong entry still lands elsewhere). Candidate: $ATTEST_FUZZ_CANDIDATE (a built-in top-k
 * name or path.so:NAME) or cpu-topk. Any failing check prints the verdict, saves the case as a
 * top-k case file $ATTEST_FUZZ_ARTIFACTS/fuzz-topk-SEED.h5 (attest check replays it) and
 * aborts, so libFuzzer keeps the input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/reference_topk.h"
#include "attest/topk.h"
#include "attest/topk_candidates.h"
#include "attest/topk_casefile.h"
#include "attest/topk_runner.h"
#include "fuzz_common.h"

#define OP_BYTES 7

static const attest_topk_candidate *topk_candidate(void)
{
    static const attest_topk_candidate *cand;
    if (cand) return cand;
    const char *spec = getenv("ATTEST_FUZZ_CANDIDATE");
    if (spec == NULL || *spec == '\0') spec = "cpu-topk";
    cand = attest_topk_builtin_find(spec);
    if (cand == NULL && (strchr(spec, ':') == NULL || attest_topk_plugin_load(spec, &cand) != ATTEST_OK)) {
        /* A misconfigured campaign must not look like a clean one. */
        fprintf(stderr, "fuzz_topk: no top-k candidate '%s': %s\n", spec, attest_last_error());
        abort();
    }
    return cand;
}

static uint32_t rd(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static void apply(attest_topk_case *c, const uint8_t *op)
{
    const size_t n = (size_t)attest_topk_rows(&c->p) * (size_t)c->p.width;
    const uint32_t a = rd(op + 1, 2), b = rd(op + 3, 4);
    switch (op[0] % 5) {
    case 0: { /* any float32 bit pattern */
        float f;
        memcpy(&f, &b, sizeof f);
        c->logits[a % n] = f;
        break;
    }
    case 1: c->logits[a % n] = c->logits[b % n]; break;
    case 2: {
        static const float classes[] = {NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 3.0e38f, -3.0e38f, 1.0f};
        const size_t at = a % n, len = 1 + (b >> 8) % 128;
        for (size_t i = at; i < at + len && i < n; i++) c->logits[i] = classes[b % 8];
        break;
    }
    case 3: c->context_lens[a % (uint32_t)c->p.b] = (int32_t)(b % (uint32_t)(c->p.width + 1)); break;
    default: {
        const size_t m = (size_t)c->p.b * (size_t)c->p.blocks_per_req;
        const size_t i = a % m, j = b % m;
        const int32_t t = c->block_table[i];
        c->block_table[i] = c->block_table[j];
        c->block_table[j] = t;
        break;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 9) return 0;
    const attest_topk_candidate *cand = topk_candidate();
    uint64_t seed = 0;
    for (int i = 0; i < 8; i++) seed |= (uint64_t)data[size - 1 - i] << (8 * i);
    const uint8_t knobs = data[size - 9];
    attest_topk_gen_bounds g = attest_topk_gen_defaults();
    if (!(knobs & 1)) { /* small cases: many per second */
        g.max_batch = 2;
        g.max_width = 200;
        g.max_k = 64;
    }
    attest_topk_case c;
    if (attest_topk_generate(seed, &g, &c) != ATTEST_OK) return 0;
    for (size_t at = 0; at + OP_BYTES <= size - 9; at += OP_BYTES) apply(&c, data + at);
    const size_t n = (size_t)attest_topk_rows(&c.p) * (size_t)c.p.k;
    int32_t *ref = malloc(n * sizeof *ref + 1), *idx = malloc(n * sizeof *idx + 1),
            *phys = malloc(n * sizeof *phys + 1);
    if (!ref || !idx || !phys) abort();
    attest_topk_run_options ro = attest_topk_run_defaults();
    ro.isolate = 0; /* libFuzzer catches the crash itself and keeps the input */
    ro.reruns = 1;
    attest_topk_run_result rr;
    attest_topk_verdict v;
    for (size_t i = 0; i < n; i++) idx[i] = phys[i] = ATTEST_TOPK_POISON;
    if (attest_ref_topk_case(&c, cand->rule, ref, NULL) != ATTEST_OK ||
        attest_topk_run(cand, &c, &ro, (cand->outputs & ATTEST_TOPK_OUT_LOGICAL) ? idx : NULL,
                        (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) ? phys : NULL, &rr) != ATTEST_OK ||
        attest_topk_judge(&c, ref, (cand->outputs & ATTEST_TOPK_OUT_LOGICAL) ? idx : NULL,
                          (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) ? phys : NULL, cand->order,
                          cand->rule, &v) != ATTEST_OK) {
        fprintf(stderr, "fuzz_topk: harness error: %s\n", attest_last_error());
        abort();
    }
    v.failed |= rr.failed;
    if (v.failed) {
        char checks[160], params[160], path[4200];
        attest_topk_check_mask_string(v.failed, checks, sizeof checks);
        if (attest_topk_param_string(&c, params, sizeof params) != ATTEST_OK) params[0] = '\0';
        const char *dir = getenv("ATTEST_FUZZ_ARTIFACTS");
        snprintf(path, sizeof path, "%s/fuzz-topk-%016llx.h5", dir && *dir ? dir : ".",
                 (unsigned long long)seed);
        attest_topk_casefile_extras x;
        memset(&x, 0, sizeof x);
        x.ref_indices = ref;
        x.candidate_name = cand->name;
        x.cand_indices = (cand->outputs & ATTEST_TOPK_OUT_LOGICAL) ? idx : NULL;
        x.cand_physical = (cand->outputs & ATTEST_TOPK_OUT_PHYSICAL) ? phys : NULL;
        x.note = rr.failed ? rr.detail : v.detail;
        const int saved = attest_topk_casefile_save(path, &c, &x) == ATTEST_OK;
        fprintf(stderr, "fuzz_topk: %s FAIL [%s] %s\n  %s\n  case file: %s (attest check %s "
                        "--candidate %s)\n", cand->name, checks, params,
                rr.failed ? rr.detail : v.detail, saved ? path : "(not written)", path, cand->name);
        abort();
    }
    free(ref);
    free(idx);
    free(phys);
    attest_topk_case_free(&c);
    return 0;
}
