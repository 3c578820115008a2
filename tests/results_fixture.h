/* Shared by the results-store tests (test_results.c, results_writer.c): a synthetic record whose
 * every field is a simple function of its case id, so a reader can check any row without the
 * writer's help. tests/py/results_expect.py computes the same values for h5py. Header-only: each
 * test file is one program.
 */
#ifndef ATTEST_TEST_RESULTS_FIXTURE_H
#define ATTEST_TEST_RESULTS_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attest/compare.h"
#include "attest/record.h"
#include "attest/verdict.h"

/* Verdict of case i: every 7th (i % 7 == 3) a MISMATCH, every 11th (i % 11 == 5) a CRASH (when
 * not already a mismatch), the rest OK. */
static inline attest_verdict fixture_verdict(uint64_t i)
{
    if (i % 7 == 3) return ATTEST_VERDICT_MISMATCH;
    if (i % 11 == 5) return ATTEST_VERDICT_CRASH;
    return ATTEST_VERDICT_OK;
}

static inline void fixture_record(uint64_t i, attest_case_record *r)
{
    memset(r, 0, sizeof *r);
    r->case_id = i;
    r->seed = i * 2654435761ull + 12345ull;
    snprintf(r->params, sizeof r->params, "kernel=indexer,b=%llu,next_n=2,h=64,max_len=%llu",
             (unsigned long long)(i % 5 + 1), (unsigned long long)(64 * (i % 9 + 1)));
    snprintf(r->candidate, sizeof r->candidate, "cand-%llu", (unsigned long long)(i % 3));
    r->verdict = fixture_verdict(i);
    r->failed_gates = r->verdict == ATTEST_VERDICT_MISMATCH
                          ? ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT) | ATTEST_GATE_BIT(ATTEST_GATE_COSINE)
                          : 0;
    r->integrity_flags = r->verdict == ATTEST_VERDICT_CRASH ? ATTEST_INTEGRITY_CANARY : 0;
    r->vacuous = (int32_t)(i % 13 == 0);
    r->reruns = 2;
    r->num_outputs = 2;
    for (int k = 0; k < 2; k++) {
        attest_tensor_metrics *m = &r->outputs[k];
        snprintf(m->output, sizeof m->output, "%s", k ? "lse" : "out_bf16");
        m->count = 1000 + i + (uint64_t)k;
        m->ref_posinf = (uint64_t)k;
        m->ref_neginf = 2 * (uint64_t)k;
        m->ref_nan = i % 4;
        m->cand_posinf = (uint64_t)k;
        m->cand_neginf = 2 * (uint64_t)k;
        m->cand_nan = i % 4;
        m->nonfinite_mismatches = 0;
        m->first_nonfinite_mismatch.rank = -1;
        m->element_failures = r->verdict == ATTEST_VERDICT_MISMATCH ? i % 17 + 1 : 0;
        m->element_fail_fraction = (double)m->element_failures / (double)m->count;
        m->worst.rank = k ? 3 : 4;
        m->worst.index[0] = (int64_t)(i % 5);
        m->worst.index[1] = 0;
        m->worst.index[2] = (int64_t)(i % 64);
        m->worst.index[3] = k ? 0 : (int64_t)(i % 512);
        m->worst_ref = 0.5 + (double)i;
        m->worst_cand = 0.5 + (double)i + 1.0 / 1024.0;
        m->max_abs = 1.0 / 1024.0;
        m->max_rel = 1.0 / (1024.0 * (0.5 + (double)i));
        m->cos_diff = 1e-7 * (double)(i % 100);
        m->nmse = 1e-9 * (double)(i % 10);
        m->max_code_distance = (double)(i % 3);
        m->unwritten = 0;
        m->topk_recall = 1.0;
        m->topk_checked = 0;
        m->vacuous = r->vacuous;
        m->failed_gates = k == 0 ? r->failed_gates : 0;
        m->finite_pairs = m->count - m->ref_nan;
        m->atol_effective = 1e-3;
        m->topk_worst_row = -1;
    }
    r->gen_seconds = 1e-3 * (double)(i % 10);
    r->ref_seconds = 2e-3;
    r->run_seconds = 3e-3;
    r->compare_seconds = 4e-4;
    if (r->verdict == ATTEST_VERDICT_CRASH)
        snprintf(r->message, sizeof r->message, "worker killed by signal 11 (case %llu)",
                 (unsigned long long)i);
}

#endif /* ATTEST_TEST_RESULTS_FIXTURE_H */
