/* attest CLI (internal): the DSA chain judged seam by seam (docs/pipeline.md). One pipeline case
 * (attest/pipeline.h) runs through three stages, each a candidate or the reference: the indexer
 * on its inputs, the top-k on the indexer's logits, the decode on the top-k's physical indices.
 * Each seam is judged where it is: the logits against the reference within the indexer's bounds,
 * the selection against the exact reference selection of the logits it was given, the decode
 * output against the reference decode over the same indices. Then the end result: the
 * selection against the reference chain's (reference logits, tie band from the indexer's
 * bounds); where they differ only within ties, the decode output difference that the selection
 * alone causes is measured and reported, not failed. */
#ifndef ATTEST_CLI_PIPELINE_JUDGE_H
#define ATTEST_CLI_PIPELINE_JUDGE_H

#include <stdint.h>

#include "attest/candidate.h"
#include "attest/pipeline.h"
#include "attest/policy.h"
#include "attest/record.h"
#include "attest/runner.h"
#include "attest/status.h"
#include "attest/topk.h"
#include "attest/topk_runner.h"

/* The seams, in chain order; the first that broke names the failure. */
typedef enum pipe_seam {
    PIPE_SEAM_NONE = 0,
    PIPE_SEAM_INDEXER = 1,    /* logits outside the indexer's bounds (or a crash, ...) */
    PIPE_SEAM_TOPK = 2,       /* the selection breaks a top-k rule on the logits it was given */
    PIPE_SEAM_DECODE = 3,     /* the decode output is wrong for the indices it was given */
    PIPE_SEAM_END_TO_END = 4  /* every stage passes, yet the selection differs from the reference
                                 chain's beyond ties */
} pipe_seam;

/* "indexer", "topk", "decode", "end-to-end", or "none". */
const char *pipe_seam_name(pipe_seam s);

/* The stages: a candidate each, NULL for the reference. */
typedef struct pipe_stages {
    const attest_candidate *indexer;
    const attest_topk_candidate *topk;
    const attest_candidate *decode;
    const char *spec[3];          /* as given on the command line ("reference" for NULL) */
    attest_runner *runner[2];     /* indexer's, decode's (NULL for the reference) */
    attest_topk_run_options topk_run; /* how the top-k stage runs (set by pipe_stages_open) */
    const attest_policy *policy;
} pipe_stages;

typedef struct pipe_result {
    pipe_seam broke;              /* the first seam that failed, PIPE_SEAM_NONE when none */
    uint32_t failed;              /* bit (1u << seam) for every seam that failed */
    attest_case_record indexer, decode; /* the stages' records (verdict OK for the reference) */
    attest_topk_verdict topk;
    int decode_ran;               /* 0: the selection held indices outside the pool */
    /* the selection against the reference chain's */
    int32_t rows, rows_equal, rows_ties, rows_beyond;
    int32_t first_beyond_row;     /* -1 when none */
    double beyond_recall;         /* its recall */
    /* the end-to-end difference the selection alone causes (rows_ties > 0) */
    double e2e_out_max, e2e_lse_max;  /* max |difference| of out and lse over finite pairs */
    int32_t e2e_at[3];            /* request, query, head of the largest out difference */
    char detail[4][640];          /* one line per seam 1..4 (index seam - 1) */
} pipe_result;

/* Creates the runners of the candidate stages (policy, timeout, isolation as given). */
attest_status pipe_stages_open(pipe_stages *s, double timeout, int isolate) ATTEST_MUST_CHECK;
void pipe_stages_close(pipe_stages *s);

/* Runs case pc through the chain and judges every seam into *r. pc's decode indices are
 * overwritten with the selection. Errors only when the harness cannot go on. */
attest_status pipe_judge(pipe_stages *s, attest_pipeline_case *pc, pipe_result *r)
    ATTEST_MUST_CHECK;

#endif /* ATTEST_CLI_PIPELINE_JUDGE_H */
