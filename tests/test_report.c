/* Tests of the report printers with hand-built records: the summary, severity order, failures
 * grouped by verdict and gate, the detailed mismatch report (coordinates, blocks and byte offsets
 * computed by hand from docs/kernels.md sections 4-6), the failure and progress lines, and `attest show` on
 * a results file. Output is captured with open_memstream. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/report.h"
#include "attest/results.h"

typedef struct capture {
    char *buf;
    size_t len;
    FILE *f;
} capture;

static FILE *cap_open(capture *c)
{
    memset(c, 0, sizeof *c);
    c->f = open_memstream(&c->buf, &c->len);
    assert_non_null(c->f);
    return c->f;
}

static const char *cap_text(capture *c)
{
    fflush(c->f);
    return c->buf;
}

static void cap_close(capture *c)
{
    fclose(c->f);
    free(c->buf);
}

#define assert_contains(text, needle)                                                             \
    do {                                                                                           \
        if (!strstr((text), (needle))) fail_msg("missing \"%s\" in:\n%s", (needle), (text));       \
    } while (0)

static attest_case_record make_rec(uint64_t id, attest_verdict v, uint32_t gates, double max_rel)
{
    attest_case_record r;
    memset(&r, 0, sizeof r);
    r.case_id = id;
    r.seed = 0x1000 + id;
    snprintf(r.params, sizeof r.params, "kernel=mla-decode,layout=mla-v4,b=2,case=%llu",
             (unsigned long long)id);
    snprintf(r.candidate, sizeof r.candidate, "cpu-mla");
    r.verdict = v;
    r.failed_gates = gates;
    r.reruns = 2;
    r.num_outputs = 2;
    snprintf(r.outputs[0].output, sizeof r.outputs[0].output, "out_bf16");
    snprintf(r.outputs[1].output, sizeof r.outputs[1].output, "lse");
    r.outputs[0].failed_gates = gates;
    r.outputs[0].max_rel = max_rel;
    r.outputs[0].count = 1000;
    r.outputs[0].finite_pairs = 1000;
    r.outputs[0].worst.rank = 4;
    r.outputs[0].worst.index[0] = 1;
    r.outputs[0].worst.index[2] = 3;
    r.outputs[0].worst.index[3] = 77;
    r.outputs[1].worst.rank = -1;
    r.gen_seconds = 0.25;
    r.run_seconds = 0.5;
    return r;
}

enum { ELEM = 1u << ATTEST_GATE_ELEMENT, COS = 1u << ATTEST_GATE_COSINE };

/* The summary counts verdicts (worst class first), failures, gates, integrity, rate and names
 * the worst cases, crash first, with their replay commands. */
static void summary_counts_and_worst(void **state)
{
    (void)state;
    attest_summary s;
    attest_summary_init(&s);
    attest_case_record recs[8] = {
        make_rec(0, ATTEST_VERDICT_OK, 0, 0.0),
        make_rec(1, ATTEST_VERDICT_MISMATCH, ELEM, 0.01),
        make_rec(2, ATTEST_VERDICT_OK, 0, 0.0),
        make_rec(3, ATTEST_VERDICT_MISMATCH, ELEM | COS, 0.5),
        make_rec(4, ATTEST_VERDICT_UNSUPPORTED, 0, 0.0),
        make_rec(5, ATTEST_VERDICT_CRASH, 0, 0.0),
        make_rec(6, ATTEST_VERDICT_OK, 0, 0.0),
        make_rec(7, ATTEST_VERDICT_OK, 0, 0.0),
    };
    recs[5].integrity_flags = ATTEST_INTEGRITY_CANARY;
    snprintf(recs[5].message, sizeof recs[5].message, "worker killed by signal 11");
    recs[6].vacuous = 1;
    for (int i = 0; i < 8; i++) attest_summary_add(&s, &recs[i]);
    assert_int_equal(s.cases, 8);
    assert_int_equal(s.failures, 3);
    assert_int_equal(s.num_worst, 3);
    assert_int_equal(s.worst[0].case_id, 5);
    assert_int_equal(s.worst[1].case_id, 3);
    assert_int_equal(s.worst[2].case_id, 1);

    capture c;
    attest_report_summary(cap_open(&c), &s, "r.h5", 2.0);
    const char *t = cap_text(&c);
    assert_contains(t, "attest: 8 cases in 2.00 s (4 cases/s)");
    assert_contains(t, "verdicts: CRASH 1, MISMATCH 2, UNSUPPORTED 1, OK 4");
    assert_contains(t, "failures: 3 (37.50%); vacuous: 1");
    assert_contains(t, "failing gates: element 2, cosine 1");
    assert_contains(t, "integrity findings: canary 1");
    assert_contains(t, "time in: generate 2.00 s, reference 0.00 s, candidate 4.00 s");
    assert_contains(t, "#5 CRASH cpu-mla  worker killed by signal 11");
    assert_contains(t, "replay: attest replay r.h5 --case 5 --candidate cpu-mla");
    assert_contains(t, "#3 MISMATCH [element+cosine] cpu-mla  out_bf16: max_rel 5.000e-01");
    assert_contains(t, "worst at out_bf16[request 1, query 0, head 3, dim 77]");
    assert_contains(t, "result: FAIL (3 of 8 cases failed)");
    assert_true(strstr(t, "#5 CRASH") < strstr(t, "#3 MISMATCH"));
    assert_true(strstr(t, "#3 MISMATCH") < strstr(t, "#1 MISMATCH"));
    cap_close(&c);

    attest_summary_init(&s);
    attest_report_summary(cap_open(&c), &s, NULL, 0);
    assert_contains(cap_text(&c), "result: EMPTY");
    cap_close(&c);
    attest_summary_add(&s, &recs[0]);
    attest_summary_add(&s, &recs[4]);
    attest_report_summary(cap_open(&c), &s, NULL, 0);
    assert_contains(cap_text(&c), "result: PASS (2 cases)");
    assert_null(strstr(cap_text(&c), " in ")); /* no rate without a wall time */
    cap_close(&c);
}

/* Severity: verdict class first, then inf/nan mismatches, max_rel (NaN worst), cos_diff, case id. */
static void severity_order(void **state)
{
    (void)state;
    attest_case_record crash = make_rec(9, ATTEST_VERDICT_CRASH, 0, 0);
    attest_case_record oob = make_rec(8, ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE, 0, 0);
    attest_case_record small = make_rec(1, ATTEST_VERDICT_MISMATCH, ELEM, 0.01);
    attest_case_record big = make_rec(2, ATTEST_VERDICT_MISMATCH, ELEM, 0.9);
    attest_case_record nan_rel = make_rec(3, ATTEST_VERDICT_MISMATCH, ELEM, NAN);
    attest_case_record inf_pos = make_rec(4, ATTEST_VERDICT_MISMATCH, ELEM, 0.001);
    inf_pos.outputs[1].nonfinite_mismatches = 1;
    attest_case_record ok = make_rec(0, ATTEST_VERDICT_OK, 0, 0);
    attest_case_record same = make_rec(5, ATTEST_VERDICT_MISMATCH, ELEM, 0.01);
    assert_true(attest_report_severity_cmp(&crash, &oob) < 0);
    assert_true(attest_report_severity_cmp(&oob, &big) < 0);
    assert_true(attest_report_severity_cmp(&inf_pos, &nan_rel) < 0);
    assert_true(attest_report_severity_cmp(&nan_rel, &big) < 0);
    assert_true(attest_report_severity_cmp(&big, &small) < 0);
    assert_true(attest_report_severity_cmp(&small, &same) < 0); /* tie: lower case id first */
    assert_true(attest_report_severity_cmp(&small, &ok) < 0);
    assert_true(attest_report_severity_cmp(&ok, &crash) > 0);
    assert_int_equal(attest_report_severity_cmp(&small, &small), 0);
    assert_int_equal(attest_report_verdict_rank(ATTEST_VERDICT_CRASH), 0);
    assert_int_equal(attest_report_verdict_rank(ATTEST_VERDICT_OK), 8);
    assert_int_equal(attest_report_verdict_rank((attest_verdict)42),
                     attest_report_verdict_rank(ATTEST_VERDICT_HARNESS_ERROR));
}

/* Groups by (verdict, gates), worst group first, worst cases first, "... and N more". */
static void grouped_failures(void **state)
{
    (void)state;
    attest_failure_groups *g = NULL;
    assert_ok(attest_failure_groups_create(2, &g));
    const double rels[5] = {0.1, 0.7, 0.3, 0.9, 0.2};
    for (uint64_t i = 0; i < 5; i++) {
        attest_case_record r = make_rec(10 + i, ATTEST_VERDICT_MISMATCH, ELEM, rels[i]);
        assert_ok(attest_failure_groups_add(g, &r));
    }
    attest_case_record both = make_rec(20, ATTEST_VERDICT_MISMATCH, ELEM | COS, 0.05);
    attest_case_record crash = make_rec(30, ATTEST_VERDICT_CRASH, 0, 0);
    attest_case_record ok = make_rec(40, ATTEST_VERDICT_OK, 0, 0);
    attest_case_record unsupported = make_rec(41, ATTEST_VERDICT_UNSUPPORTED, 0, 0);
    assert_ok(attest_failure_groups_add(g, &both));
    assert_ok(attest_failure_groups_add(g, &crash));
    assert_ok(attest_failure_groups_add(g, &ok));
    assert_ok(attest_failure_groups_add(g, &unsupported));
    assert_int_equal(attest_failure_groups_count(g), 7);

    capture c;
    attest_report_failures(cap_open(&c), g, "runs/a b.h5");
    const char *t = cap_text(&c);
    assert_contains(t, "(7 cases in 3 groups)");
    assert_contains(t, "  CRASH: 1 case\n");
    assert_contains(t, "  MISMATCH [element]: 5 cases\n");
    assert_contains(t, "  MISMATCH [element+cosine]: 1 case\n");
    assert_contains(t, "    ... and 3 more\n");
    assert_contains(t, "replay: attest replay 'runs/a b.h5' --case 13 --candidate cpu-mla");
    /* groups by their worst case: crash, then element (worst 0.9) before element+cosine (0.05) */
    const char *crash_at = strstr(t, "CRASH: 1");
    const char *elem_at = strstr(t, "MISMATCH [element]:");
    const char *both_at = strstr(t, "MISMATCH [element+cosine]:");
    assert_true(crash_at < elem_at && elem_at < both_at);
    /* within [element]: case 13 (0.9) then case 11 (0.7); 12, 14, 10 are counted only */
    const char *c13 = strstr(t, "#13 MISMATCH"), *c11 = strstr(t, "#11 MISMATCH");
    assert_non_null(c13);
    assert_non_null(c11);
    assert_true(c13 < c11);
    assert_null(strstr(t, "#12 MISMATCH"));
    assert_null(strstr(t, "#40 "));
    cap_close(&c);
    attest_failure_groups_free(g);
}

/* The indexer case both detail tests read: 3 requests of next_n 2, one head, 12 blocks of which
 * each request's table holds 3. */
static void indexer_case(attest_case *cs)
{
    memset(cs, 0, sizeof *cs);
    cs->kernel = ATTEST_KERNEL_INDEXER;
    attest_indexer_params *p = &cs->params.indexer;
    p->b = 3;
    p->next_n = 2;
    p->heads = 1;
    p->head_dim = 128;
    p->num_blocks = 12;
    p->blocks_per_req = 3;
    p->max_len = 192;
    p->masking = ATTEST_MASK_NEG_INF;
    assert_ok(attest_case_define_tensors(cs, 0));
    assert_ok(attest_case_alloc_heap(cs));
}

/* Indexer logits in detail. Hand computation (docs/kernels.md sections 4, 5): row 5 with next_n 2 is request 2,
 * slot 1; position 77 is logical block 1 (77 / 64), slot 13 in it; block_table[2][1] = 9, so its
 * fp8 row is at 9*8448 + 13*128 = 77696 and its scale at 9*8448 + 8192 + 4*13 = 84276. With
 * L = 150 the row sees t <= 150 - 2 + 1, i.e. t < 150. */
static void detail_indexer(void **state)
{
    (void)state;
    attest_case cs;
    indexer_case(&cs);
    int32_t *bt = attest_case_tensor(&cs, "block_table")->data;
    bt[2 * 3 + 1] = 9;
    ((int32_t *)attest_case_tensor(&cs, "context_lens")->data)[2] = 150;
    float scale = 0.0078125f;
    memcpy((uint8_t *)attest_case_tensor(&cs, "cache_bytes")->data + 84276, &scale, 4);

    attest_case_record r;
    memset(&r, 0, sizeof r);
    r.case_id = 17;
    r.seed = 0xabc;
    snprintf(r.params, sizeof r.params, "kernel=indexer,b=3,next_n=2");
    snprintf(r.candidate, sizeof r.candidate, "cpu-mutant-scale");
    r.verdict = ATTEST_VERDICT_MISMATCH;
    r.failed_gates = ELEM | COS;
    r.num_outputs = 1;
    r.reruns = 2;
    attest_tensor_metrics *m = &r.outputs[0];
    snprintf(m->output, sizeof m->output, "logits");
    m->count = 1152;
    m->finite_pairs = 900;
    m->element_failures = 12;
    m->element_fail_fraction = 12.0 / 900.0;
    m->cos_diff = 1.25e-3;
    m->nmse = 2e-7;
    m->max_code_distance = 3;
    m->worst.rank = 2;
    m->worst.index[0] = 5;
    m->worst.index[1] = 77;
    m->worst_ref = 1.5;
    m->worst_cand = 1.75;
    m->failed_gates = ELEM | COS;
    m->atol_effective = 1e-5;
    m->topk_worst_row = -1;
    attest_tolerance tol;
    memset(&tol, 0, sizeof tol);
    tol.atol = 1e-5;
    tol.rtol = 2e-3;
    tol.cos_diff_max = 5e-6;
    tol.nmse_max = -1;
    tol.max_code_distance = 4;
    tol.bound_factor = -1; /* fixed atol/rtol bounds, not computed ones */
    snprintf(tol.source, sizeof tol.source, "DeepGEMM test_attention.py");

    capture c;
    attest_report_case_detail(cap_open(&c), &r, &cs, &tol);
    const char *t = cap_text(&c);
    assert_contains(t, "case #17 MISMATCH [element+cosine] cpu-mutant-scale");
    assert_contains(t, "output logits: 1152 elements compared, 900 finite pairs: FAIL (element+cosine)");
    assert_contains(t, "worst element logits[row 5, t 77] (largest error / tolerance): reference 1.5, candidate 1.75");
    assert_contains(t, "(|diff| 2.500e-01, rel 1.667e-01;");
    assert_contains(t, "row 5 = request 2, next_n slot 1; position t = 77");
    assert_contains(t, "request length L = 150; this row sees t < 150");
    assert_contains(t, "position inside the row");
    assert_contains(t, "logical block 1 (positions 64..127), slot 13 in it; physical block 9 = "
                       "block_table[2][1]");
    assert_contains(t, "block_table[2] = [0, 9, 0] (3 blocks hold the request's 150 positions)\n");
    assert_contains(t, "fp8 row at byte 77696 (9 * 8448 + 1664, 128 bytes)");
    assert_contains(t, "scale at byte 84276 (9 * 8448 + 8244, float32) = 0.0078125");
    assert_contains(t, "12 of 900 off (1.333%)");
    assert_contains(t, "|d| <= 1.000e-05 or 2.000e-03*|r|");
    assert_contains(t, "cosine     1.250e-03");
    assert_contains(t, "<= 5.000e-06");
    assert_contains(t, "nmse       2.000e-07                          off                                          off");
    assert_contains(t, "code       3 steps                            <= 4 steps");
    assert_contains(t, "topk       not run");
    assert_contains(t, "bounds from: DeepGEMM test_attention.py");
    /* result column: element and cosine fail, code passes */
    const char *line = strstr(t, "    element ");
    assert_non_null(line);
    assert_contains(line, "FAIL\n");
    line = strstr(t, "    code ");
    assert_true(strncmp(strchr(line, '\n') - 4, "pass", 4) == 0);
    cap_close(&c);

    /* A masked position says so. */
    ((int32_t *)attest_case_tensor(&cs, "context_lens")->data)[2] = 60;
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_contains(cap_text(&c), "this row sees t < 60"); /* t <= 60 - 2 + 1 */
    assert_contains(cap_text(&c), "masked (past the row's length)");
    /* '|' where the request's blocks end: the entries past it are not the request's */
    assert_contains(cap_text(&c), "block_table[2] = [0 | 9, 0] (1 block holds the request's 60 "
                                  "positions)\n");
    cap_close(&c);
    attest_case_free(&cs);
}

/* The worst indexer logit checked against the classic misreads, with bytes computed here from
 * the c4-indexer layout (docs/kernels.md: block b at b * 8448, slot s's fp8 row at + 128 s, its
 * float32 scale at + 8192 + 4 s). Row 5 = request 2, slot 1; t = 77 is slot 13 of block 9. q and
 * k are fp8 1.0 (0x38) in every dim, so the logit is 128 * scale. */
static void detail_indexer_explain(void **state)
{
    (void)state;
    attest_case cs;
    indexer_case(&cs);
    uint8_t *pool = attest_case_tensor(&cs, "cache_bytes")->data;
    memset(pool, 0, attest_case_tensor(&cs, "cache_bytes")->nbytes);
    ((int32_t *)attest_case_tensor(&cs, "block_table")->data)[2 * 3 + 1] = 9;
    ((int32_t *)attest_case_tensor(&cs, "context_lens")->data)[2] = 150;
    memset((uint8_t *)attest_case_tensor(&cs, "q_fp8")->data + 5 * 128, 0x38, 128);
    ((float *)attest_case_tensor(&cs, "weights")->data)[5] = 1.0f;
    const size_t blk = 9 * 8448;
    memset(pool + blk + 13 * 128, 0x38, 128); /* slot 13's row: 1.0s */
    memset(pool + blk + 20 * 128, 0x40, 128); /* slot 20's row: 2.0s */
    const float s13 = 0.0078125f, s14 = 0.5f;
    memcpy(pool + blk + 8192 + 4 * 13, &s13, 4);
    memcpy(pool + blk + 8192 + 4 * 14, &s14, 4);

    attest_case_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.params, sizeof r.params, "kernel=indexer,b=3,next_n=2");
    r.verdict = ATTEST_VERDICT_MISMATCH;
    r.failed_gates = ELEM;
    r.num_outputs = 1;
    attest_tensor_metrics *m = &r.outputs[0];
    snprintf(m->output, sizeof m->output, "logits");
    m->finite_pairs = 1;
    m->element_failures = 1;
    m->failed_gates = ELEM;
    m->worst.rank = 2;
    m->worst.index[0] = 5;
    m->worst.index[1] = 77;
    m->worst_ref = 1.0; /* 128 * s13 */
    m->worst_tol = 1e-5;
    m->worst_ratio = 1e6;
    m->topk_worst_row = -1;
    capture c;
    m->worst_cand = 64.0; /* 128 * s14 */
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_contains(cap_text(&c), "localization: the candidate's logit is this position's fp8 row "
                                  "times the scale of slot 14 (byte 84280 = 0.5) instead of slot "
                                  "13's (byte 84276): a scale read off by +1\n");
    cap_close(&c);
    m->worst_cand = 2.0; /* 256 * s13: slot 20's row */
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_contains(cap_text(&c), "localization: the candidate's logit is the fp8 row of slot 20 "
                                  "(bytes [78592, 78720)) times this position's scale: a row read "
                                  "off by +7");
    cap_close(&c);
    /* The [64, 132] record view: slot 13's record is bytes [1716, 1844) of the block (76 bytes
     * of slot 13's row, 52 of slot 14's), its scale the float at 1844, set to 0.25: 76 * 0.25. */
    const float rec_scale = 0.25f;
    memcpy(pool + blk + 1844, &rec_scale, 4);
    m->worst_cand = 19.0;
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_contains(cap_text(&c), "localization: the candidate's logit is the block read as 64 "
                                  "records of 132 bytes (row at byte 77748, scale at byte 77876)");
    cap_close(&c);
    /* Slot 13 of block 3, which request 0's first entry names: 128 * 0.125. */
    ((int32_t *)attest_case_tensor(&cs, "block_table")->data)[0] = 3;
    memset(pool + 3 * 8448 + 13 * 128, 0x38, 128);
    const float s3 = 0.125f;
    memcpy(pool + 3 * 8448 + 8192 + 4 * 13, &s3, 4);
    m->worst_cand = 16.0;
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_contains(cap_text(&c), "localization: the candidate's logit is slot 13 of physical "
                                  "block 3 (bytes from 25344), not of block 9 = "
                                  "block_table[2][1]: a wrong block\n");
    cap_close(&c);
    m->worst_cand = 3.0; /* nothing gives it */
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_contains(cap_text(&c), "localization: no other slot's scale or row of the block");
    cap_close(&c);
    m->worst_ratio = 0.5; /* a passing worst element: nothing to explain */
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_null(strstr(cap_text(&c), "localization"));
    cap_close(&c);
    attest_case_free(&cs);
}

/* The parameters of a small mla-v4 case (pages of 64, one query row per request); the caller
 * sets the optional tensors' flags and defines the tensors. */
static attest_mla_params *mla_case_params(attest_case *cs, int32_t pages, int32_t b, int32_t heads,
                                          int32_t topk)
{
    memset(cs, 0, sizeof *cs);
    cs->kernel = ATTEST_KERNEL_MLA_DECODE;
    attest_mla_params *p = &cs->params.mla;
    p->layout = ATTEST_LAYOUT_MLA_V4;
    p->page_size = 64;
    p->num_pages = pages;
    p->b = b;
    p->s_q = 1;
    p->h_q = heads;
    p->d_qk = 512;
    p->d_v = 512;
    p->topk = topk;
    p->sm_scale = 0.04f;
    return p;
}

/* mla-decode in detail: out coordinates by request/query/head/dim, lse by request/query/head,
 * and the valid indices of the query (entries past topk_length and -1 do not count). */
static void detail_mla(void **state)
{
    (void)state;
    attest_case cs;
    attest_mla_params *p = mla_case_params(&cs, 2, 2, 4, 8);
    p->has_topk_length = 1;
    p->has_sink = 1;
    assert_ok(attest_case_define_tensors(&cs, 0));
    assert_ok(attest_case_alloc_heap(&cs));
    int32_t *idx = attest_case_tensor(&cs, "indices")->data;
    const int32_t req1[8] = {0, 5, -1, 7, 9, -1, 11, 3}; /* first 6: 0,5,7,9 valid */
    memcpy(idx + 8, req1, sizeof req1);
    ((int32_t *)attest_case_tensor(&cs, "topk_length")->data)[1] = 6;
    ((float *)attest_case_tensor(&cs, "attn_sink")->data)[3] = -0.5f;

    attest_case_record r = make_rec(3, ATTEST_VERDICT_MISMATCH, ELEM, 0.25);
    r.outputs[0].worst_ref = 0.5;
    r.outputs[0].worst_cand = 0.625;
    r.outputs[1].worst.rank = 3;
    r.outputs[1].worst.index[0] = 1;
    r.outputs[1].worst.index[2] = 2;
    r.outputs[1].nonfinite_mismatches = 1;
    r.outputs[1].first_nonfinite_mismatch.rank = 3;
    r.outputs[1].first_nonfinite_mismatch.index[0] = 1;
    r.outputs[1].first_nonfinite_mismatch.index[2] = 3;
    r.outputs[1].failed_gates = 1u << ATTEST_GATE_NONFINITE;
    capture c;
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    const char *t = cap_text(&c);
    assert_contains(t, "worst element out_bf16[request 1, query 0, head 3, dim 77] (largest error / "
                       "tolerance): reference 0.5, candidate 0.625");
    /* A short row is listed whole, '|' at topk_length: the -1 holes a kernel mishandles. */
    assert_contains(t, "indices[1, 0]: 4 of 8 slots valid (topk_length = 6): "
                       "[0, 5, -1, 7, 9, -1 | 11, 3]\n");
    assert_contains(t, "attn_sink[3] = -0.5 (lse excludes the sink)");
    /* lse fails on inf/nan alone: the mismatch is what the reader needs first; the worst finite
     * element, within every gate of finite pairs, comes after it and says so. */
    assert_contains(t, "first inf/nan mismatch at lse[request 1, query 0, head 3]");
    assert_contains(t, "worst finite element lse[request 1, query 0, head 2] (largest error / "
                       "tolerance; the gates of finite pairs pass)");
    assert_true(strstr(t, "first inf/nan mismatch at lse") < strstr(t, "worst finite element lse"));
    assert_contains(t, "output lse: 0 elements compared, 0 finite pairs: FAIL (nonfinite)");
    assert_contains(t, "bound"); /* the table header prints with no tolerance given */
    cap_close(&c);
    /* With the run's outputs kept (replay, check), the mismatch shows both values: which side
     * is inf or nan is what the reader needs next. lse is [b, s_q, h]: [1, 0, 3] is flat 7. */
    double lse_ref[8] = {0};
    float lse_cand[8] = {0};
    lse_ref[7] = -INFINITY;
    lse_cand[7] = 2.5f;
    attest_case_outputs kept;
    memset(&kept, 0, sizeof kept);
    kept.num_outputs = 2;
    kept.reference[1] = lse_ref;
    kept.candidate[1] = lse_cand;
    kept.candidate_bytes[1] = sizeof lse_cand;
    attest_report_case_detail_outputs(cap_open(&c), &r, &cs, NULL, &kept);
    assert_contains(cap_text(&c), "first inf/nan mismatch at lse[request 1, query 0, head 3]: "
                                  "reference -inf, candidate 2.5\n");
    cap_close(&c);
    kept.candidate_bytes[1] = 7 * sizeof(float); /* too short for flat 7: no values, no read */
    attest_report_case_detail_outputs(cap_open(&c), &r, &cs, NULL, &kept);
    assert_contains(cap_text(&c), "first inf/nan mismatch at lse[request 1, query 0, head 3]\n");
    cap_close(&c);
    attest_case_free(&cs);

    /* Without the case: coordinates still named, no memory details. */
    attest_report_case_detail(cap_open(&c), &r, NULL, NULL);
    assert_contains(cap_text(&c), "out_bf16[request 1, query 0, head 3, dim 77]");
    assert_null(strstr(cap_text(&c), "slots valid"));
    cap_close(&c);
}

/* A row too long to list whole still names the tokens past topk_length, which a kernel that
 * ignores the length reads (the minimized finding of a lonely query showed "0 of 64 slots
 * valid" and nothing of slot 46, the one the kernel read). */
static void detail_mla_past_length(void **state)
{
    (void)state;
    attest_case cs;
    attest_mla_params *p = mla_case_params(&cs, 1, 1, 1, 40);
    p->has_topk_length = 1;
    assert_ok(attest_case_define_tensors(&cs, 0));
    assert_ok(attest_case_alloc_heap(&cs));
    int32_t *idx = attest_case_tensor(&cs, "indices")->data;
    for (int k = 0; k < 40; k++) idx[k] = -1;
    idx[2] = 9;                                  /* valid, inside the length */
    idx[5] = 13, idx[7] = 30, idx[8] = 31, idx[20] = 2, idx[39] = 63; /* past it */
    ((int32_t *)attest_case_tensor(&cs, "topk_length")->data)[0] = 5;
    attest_case_record r = make_rec(3, ATTEST_VERDICT_MISMATCH, ELEM, 0.25);
    r.outputs[0].worst.index[0] = 0;
    r.outputs[0].worst.index[2] = 0;
    capture c;
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_contains(cap_text(&c), "indices[0, 0]: 1 of 40 slots valid (topk_length = 5); past "
                                  "topk_length, 5 slots name a token (slot 5 -> 13, slot 7 -> 30, "
                                  "slot 8 -> 31, slot 20 -> 2, ...): a kernel that ignores "
                                  "topk_length reads them\n");
    cap_close(&c);
    ((int32_t *)attest_case_tensor(&cs, "topk_length")->data)[0] = 40; /* nothing past it */
    attest_report_case_detail(cap_open(&c), &r, &cs, NULL);
    assert_contains(cap_text(&c), "indices[0, 0]: 6 of 40 slots valid (topk_length = 40)\n");
    cap_close(&c);
    attest_case_free(&cs);
}

/* A vacuous output says what could not show a difference: with inf/nan positions in the
 * reference (a masked row) the nonfinite gate still checked those, and the line says so; it
 * said "this output could not show a difference" of an all-masked row whose candidate wrote
 * finite values there and failed. */
static void detail_vacuous(void **state)
{
    (void)state;
    attest_case_record r = make_rec(5, ATTEST_VERDICT_MISMATCH, ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE), 0);
    attest_tensor_metrics *m = &r.outputs[0];
    m->vacuous = 1;
    m->finite_pairs = 0;
    m->ref_neginf = 35;
    m->nonfinite_mismatches = 35;
    m->worst.rank = 0;
    capture c;
    attest_report_case_detail(cap_open(&c), &r, NULL, NULL);
    assert_contains(cap_text(&c), "vacuous: no finite reference value exceeds its own tolerance, "
                                  "so the value gates could not show a difference; only the 35 "
                                  "inf/nan positions were checked\n");
    assert_null(strstr(cap_text(&c), "this output could not show a difference"));
    cap_close(&c);
    m->ref_neginf = 0;
    m->nonfinite_mismatches = 0;
    m->failed_gates = r.failed_gates = 0;
    r.verdict = ATTEST_VERDICT_OK;
    attest_report_case_detail(cap_open(&c), &r, NULL, NULL);
    assert_contains(cap_text(&c), "this output could not show a difference\n");
    cap_close(&c);
}

/* Coordinates of unknown outputs are generic; a record without an element says so. */
static void coord_strings(void **state)
{
    (void)state;
    attest_coord co = {2, {4, 9, 0, 0}};
    char buf[128];
    attest_coord_string(ATTEST_KERNEL_INDEXER, "logits", &co, buf, sizeof buf);
    assert_string_equal(buf, "logits[row 4, t 9]");
    attest_coord_string(ATTEST_KERNEL_MLA_DECODE, "other", &co, buf, sizeof buf);
    assert_string_equal(buf, "other[4, 9]");
    attest_coord_string(ATTEST_KERNEL_MLA_DECODE, "out_bf16", &co, buf, sizeof buf);
    assert_string_equal(buf, "out_bf16[4, 9]"); /* wrong rank: no names */
    co.rank = -1;
    attest_coord_string(ATTEST_KERNEL_MLA_DECODE, "lse", &co, buf, sizeof buf);
    assert_string_equal(buf, "lse (no element)");
    co.rank = 4;
    attest_coord_string(ATTEST_KERNEL_MLA_DECODE, "out_bf16", &co, buf, 12);
    assert_int_equal(strlen(buf), 11);
}

/* The failure line: headline, seed, params and replay command. */
static void failure_line(void **state)
{
    (void)state;
    attest_case_record r = make_rec(42, ATTEST_VERDICT_MISMATCH, ELEM, 0.125);
    r.outputs[0].element_failures = 3;
    capture c;
    attest_report_failure_line(cap_open(&c), &r, "attest replay r.h5 --case 42 --candidate x");
    const char *t = cap_text(&c);
    assert_contains(t, "#42 MISMATCH [element] cpu-mla  out_bf16: max_rel 1.250e-01, cos_diff 0, "
                       "3/1000 elements off, worst at out_bf16[request 1, query 0, head 3, dim 77]\n");
    assert_contains(t, "    seed 0x000000000000102a  kernel=mla-decode,layout=mla-v4,b=2,case=42\n");
    assert_contains(t, "    replay: attest replay r.h5 --case 42 --candidate x\n");
    cap_close(&c);
}

/* An output failing on inf/nan alone has no finite pair to rank: its line names the first
 * inf/nan mismatch instead (it named no element at all), and says there is no finite pair
 * rather than "max_rel 0, cos_diff 0", which read as a measured zero error. */
static void failure_line_nonfinite_only(void **state)
{
    (void)state;
    attest_case_record r = make_rec(7, ATTEST_VERDICT_MISMATCH, ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE), 0);
    attest_tensor_metrics *m = &r.outputs[0];
    m->worst.rank = 0;
    m->finite_pairs = 0; /* the metrics of finite pairs are 0 by default, not by measurement */
    m->max_rel = m->cos_diff = 0;
    m->nonfinite_mismatches = 1024;
    m->first_nonfinite_mismatch = (attest_coord){4, {0, 0, 1, 5}};
    capture c;
    attest_report_failure_line(cap_open(&c), &r, NULL);
    assert_contains(cap_text(&c), "cpu-mla  out_bf16: no finite pair, 1024 inf/nan mismatches, "
                                  "first at out_bf16[request 0, query 0, head 1, dim 5]\n");
    cap_close(&c);
    /* A second failing output is named after the first (the line described one output only). */
    r.outputs[1].failed_gates = ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE) | ELEM;
    attest_report_failure_line(cap_open(&c), &r, NULL);
    assert_contains(cap_text(&c), "dim 5]; lse fails too (nonfinite+element)\n");
    cap_close(&c);
}

/* An output failing on inf/nan while its finite pairs pass: the line names the first inf/nan
 * mismatch, not the worst finite element (which is within its tolerance: a reader sent there
 * finds nothing wrong). With the element gate failing too, the worst element is named. */
static void failure_line_nonfinite_with_finite_pairs(void **state)
{
    (void)state;
    attest_case_record r = make_rec(9, ATTEST_VERDICT_MISMATCH, ATTEST_GATE_BIT(ATTEST_GATE_NONFINITE), 0.004);
    attest_tensor_metrics *m = &r.outputs[0];
    m->finite_pairs = 600;
    m->nonfinite_mismatches = 400;
    m->first_nonfinite_mismatch = (attest_coord){4, {1, 0, 0, 0}};
    capture c;
    attest_report_failure_line(cap_open(&c), &r, NULL);
    const char *t = cap_text(&c);
    assert_contains(t, "out_bf16: max_rel 4.000e-03, cos_diff 0, 400 inf/nan mismatches, "
                       "first at out_bf16[request 1, query 0, head 0, dim 0]\n");
    assert_null(strstr(t, "worst at"));
    cap_close(&c);
    m->failed_gates |= ELEM;
    r.failed_gates |= ELEM;
    m->element_failures = 2;
    attest_report_failure_line(cap_open(&c), &r, NULL);
    assert_contains(cap_text(&c), "worst at out_bf16[request 1, query 0, head 3, dim 77]");
    cap_close(&c);
}

/* Progress: done/total, percent, rate, failures, ETA in seconds or minutes; no ETA without a
 * total. */
static void progress_line(void **state)
{
    (void)state;
    capture c;
    attest_report_progress(cap_open(&c), 250, 1000, 3, 2.0);
    assert_string_equal(cap_text(&c),
                        "\r  250/1000   25.0%  125 cases/s  failures 3  ETA 6.0 s\033[K");
    cap_close(&c);
    attest_report_progress(cap_open(&c), 10, 10000, 0, 1.0);
    assert_contains(cap_text(&c), "ETA 16m39s"); /* 9990 cases at 10/s */
    cap_close(&c);
    attest_report_progress(cap_open(&c), 250, 0, 1, 0.0);
    assert_string_equal(cap_text(&c), "\r  250 cases  failures 1\033[K");
    attest_report_progress_end(c.f);
    assert_string_equal(cap_text(&c), "\r  250 cases  failures 1\033[K\n");
    cap_close(&c);
}

/* `attest show` on a results file: provenance, summary with the campaign's duration, groups. */
static void show_results_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/attest-test-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/show.h5", dir);
    attest_results_provenance prov;
    attest_results_provenance_init(&prov);
    snprintf(prov.kernel, sizeof prov.kernel, "mla-decode");
    snprintf(prov.candidate, sizeof prov.candidate, "cpu-mla");
    snprintf(prov.policy_name, sizeof prov.policy_name, "default");
    snprintf(prov.start_time, sizeof prov.start_time, "2025-01-31T12:00:00Z");
    prov.seed = 9;
    prov.cases_planned = 4;
    attest_results_writer *w = NULL;
    assert_ok(attest_results_create(path, &prov, NULL, &w));
    attest_case_record recs[3] = {make_rec(0, ATTEST_VERDICT_OK, 0, 0),
                                  make_rec(1, ATTEST_VERDICT_MISMATCH, ELEM, 0.5),
                                  make_rec(2, ATTEST_VERDICT_OK, 0, 0)};
    for (int i = 0; i < 3; i++)
        assert_ok(attest_results_append(w, &recs[i], NULL, NULL));
    assert_ok(attest_results_close(w, ATTEST_RESULTS_INTERRUPTED));

    attest_results_reader *r = NULL;
    assert_ok(attest_results_open_read(path, &r));
    capture c;
    assert_ok(attest_report_show(cap_open(&c), r, 0));
    const char *t = cap_text(&c);
    assert_contains(t, "(schema 4, interrupted)");
    assert_contains(t, "campaign: kernel mla-decode, candidate cpu-mla, seed 9, 3 cases of 4 planned");
    assert_contains(t, "note: the campaign stopped early (a signal, an error, --max-failures or a "
                       "fuzz finding)");
    assert_contains(t, "verdicts: MISMATCH 1, OK 2");
    assert_contains(t, "MISMATCH [element]: 1 case");
    char want[512];
    snprintf(want, sizeof want, "replay: attest replay %s --case 1 --candidate cpu-mla", path);
    assert_contains(t, want);
    assert_contains(t, "result: FAIL (1 of 3 cases failed)");
    cap_close(&c);
    const attest_results_provenance *p = attest_results_provenance_of(r);
    assert_true(attest_report_campaign_seconds(p) >= 0);
    attest_results_close_read(r);

    attest_results_provenance q;
    memset(&q, 0, sizeof q);
    snprintf(q.start_time, sizeof q.start_time, "2025-01-31T23:59:30Z");
    snprintf(q.end_time, sizeof q.end_time, "2025-02-01T00:01:00Z");
    assert_true(attest_report_campaign_seconds(&q) == 90.0);
    q.end_time[0] = '\0';
    assert_true(attest_report_campaign_seconds(&q) < 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_counts_and_worst),
        cmocka_unit_test(severity_order),
        cmocka_unit_test(grouped_failures),
        cmocka_unit_test(detail_indexer),
        cmocka_unit_test(detail_indexer_explain),
        cmocka_unit_test(detail_mla),
        cmocka_unit_test(detail_mla_past_length),
        cmocka_unit_test(detail_vacuous),
        cmocka_unit_test(coord_strings),
        cmocka_unit_test(failure_line),
        cmocka_unit_test(failure_line_nonfinite_only),
        cmocka_unit_test(failure_line_nonfinite_with_finite_pairs),
        cmocka_unit_test(progress_line),
        cmocka_unit_test(show_results_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
