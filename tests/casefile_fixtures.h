/* Shared by the case-file tests: hand-built cases of both kernels (every optional part used)
 * and a per-run temporary directory. Header-only on purpose: each test file is one program. */
#ifndef ATTEST_TEST_CASEFILE_FIXTURES_H
#define ATTEST_TEST_CASEFILE_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "attest/case.h"
#include "attest/casefile.h"
#include "attest/casefile_h5.h"
#include "assert_ok.h"

static char g_tmp[256];

static inline const char *tmp_path(const char *name)
{
    static char buf[32][512];
    static int next;
    char *p = buf[next++ % 32];
    snprintf(p, 512, "%s/%s", g_tmp, name);
    return p;
}

/* Deterministic filler: every byte depends on its tensor and position. */
static inline void fill_bytes(attest_tensor *t, uint32_t salt)
{
    uint8_t *p = t->data;
    uint32_t x = 2166136261u ^ salt;
    for (size_t i = 0; i < t->nbytes; i++) {
        x = x * 16777619u + (uint32_t)i;
        p[i] = (uint8_t)(x >> 13);
    }
}

static inline void fill_indices(attest_tensor *t, int32_t pool, uint32_t salt)
{
    int32_t *p = t->data;
    size_t n = attest_tensor_count(t);
    for (size_t i = 0; i < n; i++)
        p[i] = (int32_t)((i * 7919u + salt) % (uint32_t)(pool + 1)) - 1; /* -1 .. pool-1 */
}

static inline void fill_lengths(attest_tensor *t, int32_t max)
{
    int32_t *p = t->data;
    for (size_t i = 0; i < attest_tensor_count(t); i++) p[i] = (int32_t)((i * 5 + 3) % (size_t)(max + 1));
}

/* An mla-v4 case with every optional part: sink, topk_length, extra scope, truth. */
static inline void make_mla_v4(attest_case *c)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    c->seed = 0xFEEDFACECAFEBEEFull; /* above INT64_MAX: the seed is unsigned */
    c->params.mla = (attest_mla_params){
        .layout = ATTEST_LAYOUT_MLA_V4, .page_size = 2, .num_pages = 5, .b = 2, .s_q = 2,
        .h_q = 3, .d_qk = 512, .d_v = 512, .topk = 6, .sm_scale = 0.0441941738f,
        .has_topk_length = 1, .has_sink = 1, .lse_convention = ATTEST_LSE_INCLUDES_SINK,
        .has_extra = 1, .extra_page_size = 64, .extra_num_pages = 2, .extra_topk = 5,
        .has_extra_topk_length = 1};
    assert_ok(attest_case_define_tensors(c, 1));
    assert_ok(attest_case_alloc_heap(c));
    for (size_t i = 0; i < c->num_tensors; i++) fill_bytes(&c->tensors[i], (uint32_t)i);
    fill_indices(attest_case_tensor(c, "indices"), 5 * 2, 1);
    fill_indices(attest_case_tensor(c, "extra_indices"), 2 * 64, 2);
    fill_lengths(attest_case_tensor(c, "topk_length"), 6);
    fill_lengths(attest_case_tensor(c, "extra_topk_length"), 5);
    assert_ok(attest_case_check_inputs(c));
}

/* An mla-v32 case with nothing optional and a padded page stride. */
static inline void make_mla_v32(attest_case *c)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_MLA_DECODE;
    c->seed = 7;
    c->params.mla = (attest_mla_params){
        .layout = ATTEST_LAYOUT_MLA_V32, .page_size = 61, .page_stride = 62 * 656, .num_pages = 3,
        .b = 1, .s_q = 1, .h_q = 2, .d_qk = 576, .d_v = 512, .topk = 9, .sm_scale = 0.125f};
    assert_ok(attest_case_define_tensors(c, 0));
    assert_ok(attest_case_alloc_heap(c));
    for (size_t i = 0; i < c->num_tensors; i++) fill_bytes(&c->tensors[i], 100 + (uint32_t)i);
    fill_indices(attest_case_tensor(c, "indices"), 3 * 61, 3);
}

/* An indexer case with MTP rows, top-k, a non-default masking and truth. */
static inline void make_indexer(attest_case *c)
{
    memset(c, 0, sizeof *c);
    c->kernel = ATTEST_KERNEL_INDEXER;
    c->seed = 42;
    c->params.indexer = (attest_indexer_params){
        .b = 2, .next_n = 2, .heads = 4, .head_dim = 128, .num_blocks = 5, .blocks_per_req = 3,
        .max_len = 150, .masking = ATTEST_MASK_ZERO, .topk = 8,
        .topk_rule = ATTEST_TOPK_SHORT_IDENTITY};
    assert_ok(attest_case_define_tensors(c, 1));
    assert_ok(attest_case_alloc_heap(c));
    for (size_t i = 0; i < c->num_tensors; i++) fill_bytes(&c->tensors[i], 200 + (uint32_t)i);
    int32_t *bt = attest_case_tensor(c, "block_table")->data;
    const int32_t table[6] = {4, 0, 2, 1, 3, -1};
    memcpy(bt, table, sizeof table);
    int32_t *lens = attest_case_tensor(c, "context_lens")->data;
    lens[0] = 150;
    lens[1] = 70;
    assert_ok(attest_case_check_inputs(c));
}


static inline int casefile_setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/attest-test-casefile-XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static inline int casefile_teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}


#endif
