/* Tests of the fuzz-input library (fuzz/fuzz_inputs.h): an operation lands where its bytes say,
 * read in the order the format lists (index, then value: the same case under gcc and clang),
 * the semantic features see what a case holds, and the structure-aware mutator only writes
 * inputs that decode to valid cases, within max_size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "fuzz_inputs.h"

/* head bytes, then the tail: knobs, then the seed's bytes most significant first. */
static size_t make_input(uint8_t *buf, const uint8_t *head, size_t n, uint8_t knobs, uint64_t seed)
{
    memcpy(buf, head, n);
    buf[n] = knobs;
    for (int i = 0; i < 8; i++) buf[n + 1 + i] = (uint8_t)(seed >> (8 * (7 - i)));
    return n + FUZZ_TAIL_BYTES;
}

static int has_feature(const attest_case *c, const char *name)
{
    uint8_t hits[FUZZ_MAX_FEATURES];
    fuzz_case_features(c, hits);
    for (int i = 0; i < fuzz_feature_count(c->kernel); i++)
        if (strcmp(fuzz_feature_name(c->kernel, i), name) == 0) return hits[i] > 0;
    fail_msg("no feature named %s", name);
    return 0;
}

/* Decode op 8 (a q value): 4 bytes of index 0, then the bf16 NaN 0x7FC1. */
static void test_mla_q_op_reads_index_then_value(void **state)
{
    (void)state;
    const uint8_t head[] = {8, 0, 0, 0, 0, 0xC1, 0x7F};
    uint8_t buf[64];
    const size_t n = make_input(buf, head, sizeof head, 0, 12345);
    attest_case c;
    int valid = 0;
    assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, buf, n, &c, &valid));
    assert_int_equal(valid, 1);
    const uint16_t *q = attest_case_tensor(&c, "q_bf16")->data;
    assert_int_equal(q[0], 0x7FC1);
    assert_true(has_feature(&c, "q-nan"));
    attest_case_free(&c);
    /* The same case without the operation holds no NaN q. */
    const size_t m = make_input(buf, head, 0, 0, 12345);
    assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, buf, m, &c, &valid));
    assert_false(has_feature(&c, "q-nan"));
    attest_case_free(&c);
}

/* Indexer op 0 (a length): request 0, then the length 1 (little-endian, 2 bytes). */
static void test_indexer_length_op(void **state)
{
    (void)state;
    const uint8_t head[] = {0, 0, 1, 0};
    uint8_t buf[64];
    const size_t n = make_input(buf, head, sizeof head, 0, 99);
    attest_case c;
    int valid = 0;
    assert_ok(fuzz_decode(ATTEST_KERNEL_INDEXER, buf, n, &c, &valid));
    assert_int_equal(valid, 1);
    assert_int_equal(((const int32_t *)attest_case_tensor(&c, "context_lens")->data)[0], 1);
    assert_true(has_feature(&c, "len=1"));
    attest_case_free(&c);
}

/* Decode extended op 0 (an all-invalid tile) on row 0, tile 0. */
static void test_mla_invalid_tile_op(void **state)
{
    (void)state;
    const uint8_t head[] = {126, 0, 0, 0, 0};
    uint8_t buf[64];
    const size_t n = make_input(buf, head, sizeof head, 0, 7);
    attest_case c;
    int valid = 0;
    assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, buf, n, &c, &valid));
    const attest_tensor *t = attest_case_tensor(&c, "indices");
    const int32_t w = (int32_t)t->shape[t->rank - 1];
    const int32_t *idx = t->data;
    for (int32_t i = 0; i < w && i < 64; i++) assert_int_equal(idx[i], -1);
    attest_case_free(&c);
}

/* Decode extended op 4 (two pages swapped) on pages 0 and 1: each page holds the other's bytes,
 * padding included, and each index follows its token to the other page. */
static void test_mla_page_swap_op(void **state)
{
    (void)state;
    const uint8_t head[] = {126, 4, 0, 0, 1, 0};
    uint8_t buf[64];
    int tried = 0;
    for (uint64_t seed = 1; seed < 64; seed++) {
        attest_case plain, swapped;
        int valid = 0;
        assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, buf, make_input(buf, head, 0, 0, seed),
                              &plain, &valid));
        const attest_mla_params *p = &plain.params.mla;
        if (p->num_pages < 2) {
            attest_case_free(&plain);
            continue;
        }
        assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, buf,
                              make_input(buf, head, sizeof head, 0, seed), &swapped, &valid));
        assert_int_equal(valid, 1);
        const size_t stride = (size_t)p->page_stride;
        const uint8_t *a = attest_case_tensor(&plain, "cache_bytes")->data;
        const uint8_t *b = attest_case_tensor(&swapped, "cache_bytes")->data;
        assert_memory_equal(b, a + stride, stride);
        assert_memory_equal(b + stride, a, stride);
        if (p->num_pages > 2)
            assert_memory_equal(b + 2 * stride, a + 2 * stride, stride);
        const attest_tensor *ti = attest_case_tensor(&plain, "indices");
        const int32_t *ia = ti->data;
        const int32_t *ib = attest_case_tensor(&swapped, "indices")->data;
        const int32_t P = p->page_size;
        for (size_t i = 0; i < attest_tensor_count(ti); i++) {
            const int32_t v = ia[i];
            const int32_t want = v < 0 || v >= 2 * P ? v : v < P ? v + P : v - P;
            assert_int_equal(ib[i], want);
        }
        attest_case_free(&plain);
        attest_case_free(&swapped);
        tried++;
        if (tried == 3) break;
    }
    assert_int_equal(tried, 3);
}

/* Many rounds of the mutator from an empty input: sizes within max_size, every indexer input
 * decodes (valid or skipped), every decode input decodes to a valid case (its decoder aborts on
 * an invalid one), and the operations change the cases. */
static void test_mutator_keeps_inputs_decodable(void **state)
{
    (void)state;
    const attest_kernel kernels[] = {ATTEST_KERNEL_INDEXER, ATTEST_KERNEL_MLA_DECODE};
    for (size_t k = 0; k < 2; k++) {
        enum { MAX = 512 };
        uint8_t buf[MAX];
        size_t n = 0;
        int changed = 0;
        for (unsigned round = 0; round < 300; round++) {
            n = fuzz_mutate(kernels[k], buf, n, MAX, round * 2654435761u, NULL);
            assert_true(n >= FUZZ_TAIL_BYTES && n <= MAX);
            attest_case c;
            int valid = 0;
            assert_ok(fuzz_decode(kernels[k], buf, n, &c, &valid));
            if (kernels[k] == ATTEST_KERNEL_MLA_DECODE) assert_int_equal(valid, 1);
            if (valid) {
                changed |= n > FUZZ_TAIL_BYTES;
                attest_case_free(&c);
            }
        }
        assert_true(changed);
    }
}

/* Whether an index slot within its row's length (either scope) selects a page that starts 2^31
 * bytes or more into its pool: written from the case's fields alone. */
static int mla_reads_past_2g(attest_case *c)
{
    const attest_mla_params *p = &c->params.mla;
    for (int extra = 0; extra < (p->has_extra ? 2 : 1); extra++) {
        const attest_tensor *it = attest_case_tensor(c, extra ? "extra_indices" : "indices");
        const attest_tensor *lt = attest_case_tensor(c, extra ? "extra_topk_length" : "topk_length");
        const int64_t w = it->shape[2];
        const int64_t page_size = extra ? p->extra_page_size : p->page_size;
        const uint64_t stride = (uint64_t)(extra ? p->extra_page_stride : p->page_stride);
        const int32_t *idx = it->data;
        for (int64_t r = 0; r < (int64_t)p->b * p->s_q; r++) {
            const int64_t used = lt ? ((const int32_t *)lt->data)[r / p->s_q] : w;
            for (int64_t i = 0; i < used; i++) {
                const int32_t v = idx[r * w + i];
                if (v >= 0 && (uint64_t)(v / page_size) * stride >= (UINT64_C(1) << 31)) return 1;
            }
        }
    }
    return 0;
}

/* The class "read-page>=2^31" marks exactly the cases where 32-bit page offsets wrap (what
 * mutant-mla-int32-offsets gets wrong), moved pools (knobs bits 3 to 6) or not. */
static void test_mla_read_past_2g_feature(void **state)
{
    (void)state;
    int with = 0, without = 0;
    for (uint64_t seed = 1; seed <= 40; seed++)
        for (int k = 0; k < 2; k++) {
            uint8_t buf[64], none[1] = {0};
            const size_t n = make_input(buf, none, 0, k ? 0x78 : 0x00, seed);
            attest_case c;
            int valid = 0;
            assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, buf, n, &c, &valid));
            assert_int_equal(valid, 1);
            const int expect = mla_reads_past_2g(&c);
            assert_int_equal(has_feature(&c, "read-page>=2^31"), expect);
            if (expect) with++;
            else if (c.sparse_pools) without++;
            attest_case_free(&c);
        }
    assert_true(with > 0);
    assert_true(without > 0); /* a moved pool alone is not the class */
}

/* One mla operation writing the fp8 element 0 of token t (op 0, "any token": 4 bytes of t). */
static size_t token_write_input(uint8_t *buf, uint32_t t, uint8_t value, uint64_t seed)
{
    const uint8_t head[] = {0, 0, (uint8_t)t, (uint8_t)(t >> 8), (uint8_t)(t >> 16),
                            (uint8_t)(t >> 24), 0, 0, value};
    return make_input(buf, head, sizeof head, 0x78, seed);
}

static const uint8_t *pool_page(const attest_case *c, uint32_t t)
{
    const attest_tensor *pool = attest_case_tensor((attest_case *)c, "cache_bytes");
    return (const uint8_t *)pool->data + (uint64_t)(t / (uint32_t)c->params.mla.page_size) *
                                             (uint64_t)c->params.mla.page_stride;
}

/* A reused workspace keeps a moved pool's reservation from one decode to the next of the same
 * generated case: what the last input's operation wrote there must not show in the next one.
 * Decoding A (writing token a's page), then B (writing token b's) into one workspace gives B's
 * pool bytes as decoding B alone does, on both pages. */
static void test_reused_sparse_pool_forgets_writes(void **state)
{
    (void)state;
    uint64_t seed = 0;
    attest_case plain;
    int valid = 0;
    uint32_t a = 0, b = 0;
    for (uint64_t s = 1; s <= 40 && seed == 0; s++) { /* a moved pool with two reached pages */
        uint8_t buf[64], none[1] = {0};
        assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, buf, make_input(buf, none, 0, 0x78, s),
                              &plain, &valid));
        assert_int_equal(valid, 1);
        const attest_tensor *it = attest_case_tensor(&plain, "indices");
        const int32_t *idx = it->data;
        const int32_t P = plain.params.mla.page_size;
        int have_a = 0;
        for (size_t i = 0; plain.sparse_pools && i < attest_tensor_count(it); i++) {
            if (idx[i] < 0) continue;
            if (!have_a) {
                a = (uint32_t)idx[i];
                have_a = 1;
            } else if (idx[i] / P != (int32_t)a / P) {
                b = (uint32_t)idx[i];
                seed = s;
                break;
            }
        }
        attest_case_free(&plain);
    }
    assert_true(seed != 0);
    uint8_t in_a[64], in_b[64];
    const size_t na = token_write_input(in_a, a, 0x7F, seed);
    const size_t nb = token_write_input(in_b, b, 0x7F, seed);
    attest_case alone;
    assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, in_b, nb, &alone, &valid));
    assert_int_equal(valid, 1);
    const size_t page_bytes = (size_t)alone.params.mla.page_stride;
    fuzz_workspace ws;
    memset(&ws, 0, sizeof ws);
    attest_case c;
    for (int round = 0; round < 3; round++) {
        assert_ok(fuzz_decode_reuse(&ws, ATTEST_KERNEL_MLA_DECODE, in_a, na, &c, &valid));
        assert_int_equal(valid, 1);
        assert_memory_not_equal(pool_page(&c, a), pool_page(&alone, a), page_bytes); /* it wrote */
        attest_case_free(&c);
        assert_ok(fuzz_decode_reuse(&ws, ATTEST_KERNEL_MLA_DECODE, in_b, nb, &c, &valid));
        assert_int_equal(valid, 1);
        assert_memory_equal(pool_page(&c, a), pool_page(&alone, a), page_bytes);
        assert_memory_equal(pool_page(&c, b), pool_page(&alone, b), page_bytes);
        attest_case_free(&c);
    }
    fuzz_workspace_free(&ws);
    attest_case_free(&alone);
}

/* token_write_input without a moved pool (knobs 0: the pool is dense). */
static size_t dense_token_input(uint8_t *buf, uint32_t t, uint8_t value, uint64_t seed)
{
    const uint8_t head[] = {0, 0, (uint8_t)t, (uint8_t)(t >> 8), (uint8_t)(t >> 16),
                            (uint8_t)(t >> 24), 0, 0, value};
    return make_input(buf, head, sizeof head, 0, seed);
}

/* Decoding buf into the reused workspace gives every tensor's bytes that decoding it alone
 * gives. */
static void reuse_matches_alone(fuzz_workspace *ws, const uint8_t *buf, size_t n)
{
    attest_case alone, c;
    int valid = 0, valid_reuse = 0;
    assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, buf, n, &alone, &valid));
    assert_ok(fuzz_decode_reuse(ws, ATTEST_KERNEL_MLA_DECODE, buf, n, &c, &valid_reuse));
    assert_int_equal(valid, valid_reuse);
    assert_int_equal(c.num_tensors, alone.num_tensors);
    for (size_t i = 0; i < c.num_tensors; i++) {
        assert_int_equal(c.tensors[i].nbytes, alone.tensors[i].nbytes);
        if (alone.tensors[i].role != ATTEST_ROLE_OUTPUT && alone.tensors[i].nbytes > 0)
            assert_memory_equal(c.tensors[i].data, alone.tensors[i].data, alone.tensors[i].nbytes);
    }
    attest_case_free(&c);
    if (valid) attest_case_free(&alone);
}

/* A dense pool's copy in a reused workspace is kept from one decode of a generated case to the
 * next and only the ranges written since are copied back: inputs writing tokens a and b (the
 * last page), c (the first), nothing, cases of other seeds taking the block (one writing its
 * pool, one only its other tensors, over this pool's copy), and a and b again, in turn, each
 * decode as decoding it alone gives (a copy-back that missed a range or outlived another case
 * shows here). */
static void test_reused_dense_pool_forgets_writes(void **state)
{
    (void)state;
    int overlapped = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        uint8_t probe[64], none[1] = {0};
        attest_case plain;
        int valid = 0;
        assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, probe, make_input(probe, none, 0, 0, seed),
                              &plain, &valid));
        assert_int_equal(valid, 1);
        assert_int_equal(plain.sparse_pools, 0);
        const uint32_t P = (uint32_t)plain.params.mla.page_size;
        const uint32_t pages = (uint32_t)plain.params.mla.num_pages, tokens = pages * P;
        const size_t last_page = (size_t)(pages - 1) * (size_t)plain.params.mla.page_stride;
        const size_t pool_bytes = attest_case_tensor(&plain, "cache_bytes")->nbytes;
        attest_case_free(&plain);
        /* a and b on the last page, c on the first: the last page's copy-backs leave the rest */
        const uint32_t a = tokens - 1, b = tokens - 2, c = 1;
        uint8_t in_a[64], in_a2[64], in_b[64], in_c[64], in_none[64], in_other[64];
        const size_t na = dense_token_input(in_a, a, 0x7F, seed);
        const size_t na2 = dense_token_input(in_a2, a, 0x11, seed);
        const size_t nb = dense_token_input(in_b, b, 0x7E, seed);
        const size_t nc = dense_token_input(in_c, c, 0x7D, seed);
        const size_t nn = make_input(in_none, none, 0, 0, seed);
        const size_t no = dense_token_input(in_other, 1, 0x7F, seed + 100);
        /* Another case that writes no pool, only the rest of the block, over this case's pool
         * copy before its last page: its tensors (pool included) end there. */
        uint8_t in_over[64];
        size_t nover = 0;
        for (uint64_t s2 = seed + 200; nover == 0 && s2 < seed + 300; s2++) {
            attest_case o;
            const size_t n2 = make_input(in_over, none, 0, 0, s2);
            assert_ok(fuzz_decode(ATTEST_KERNEL_MLA_DECODE, in_over, n2, &o, &valid));
            assert_int_equal(valid, 1);
            size_t total = 0;
            for (size_t i = 0; i < o.num_tensors; i++) total += (o.tensors[i].nbytes + 255) / 256 * 256;
            const size_t own_pool = attest_case_tensor(&o, "cache_bytes")->nbytes;
            if (!o.sparse_pools && own_pool < pool_bytes && total <= last_page) nover = n2;
            attest_case_free(&o);
        }
        overlapped += nover > 0;
        fuzz_workspace ws;
        memset(&ws, 0, sizeof ws);
        for (int round = 0; round < 2; round++) {
            reuse_matches_alone(&ws, in_a, na);
            reuse_matches_alone(&ws, in_b, nb);
            reuse_matches_alone(&ws, in_none, nn);
            reuse_matches_alone(&ws, in_a2, na2);
            reuse_matches_alone(&ws, in_c, nc);
            reuse_matches_alone(&ws, in_b, nb);
            reuse_matches_alone(&ws, in_other, no);
            reuse_matches_alone(&ws, in_a, na);
            if (nover) reuse_matches_alone(&ws, in_over, nover);
            reuse_matches_alone(&ws, in_b, nb);
            reuse_matches_alone(&ws, in_none, nn);
        }
        fuzz_workspace_free(&ws);
    }
    assert_true(overlapped > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mla_q_op_reads_index_then_value),
        cmocka_unit_test(test_indexer_length_op),
        cmocka_unit_test(test_mla_invalid_tile_op),
        cmocka_unit_test(test_mla_page_swap_op),
        cmocka_unit_test(test_mutator_keeps_inputs_decodable),
        cmocka_unit_test(test_mla_read_past_2g_feature),
        cmocka_unit_test(test_reused_sparse_pool_forgets_writes),
        cmocka_unit_test(test_reused_dense_pool_forgets_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
