/* Top-k case files (attest/topk_casefile.h): a generated case comes back byte for byte with its
 * seed, parameters and stored selections; each malformed file is refused with a line naming
 * what is wrong; the probe and the file-kind test survive files that are not top-k case files. */
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

#include "attest/casefile.h"
#include "attest/topk.h"
#include "attest/topk_casefile.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_topk_casefile.XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_of(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

static void test_round_trip(void **state)
{
    (void)state;
    const attest_topk_gen_bounds g = attest_topk_gen_defaults();
    attest_topk_case c, back;
    assert_ok(attest_topk_generate(0xfeedbeefcafe1234ull, &g, &c));
    const size_t n = (size_t)attest_topk_rows(&c.p) * (size_t)c.p.k;
    int32_t *sel = malloc(n * sizeof *sel);
    assert_non_null(sel);
    for (size_t i = 0; i < n; i++) sel[i] = (int32_t)(i % 7) - 1;
    attest_topk_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.ref_indices = sel;
    x.cand_physical = sel;
    x.candidate_name = "someone";
    x.replay = "attest run --kernel topk ...";
    char path[300];
    path_of("round.h5", path, sizeof path);
    assert_ok(attest_topk_casefile_save(path, &c, &x));
    assert_ok(attest_topk_casefile_probe(path));
    assert_int_equal(attest_topk_casefile_is(path), 1);
    assert_ok(attest_topk_casefile_load(path, &back));
    assert_true(back.seed == c.seed);
    assert_memory_equal(&back.p, &c.p, sizeof c.p);
    const size_t rows = (size_t)attest_topk_rows(&c.p);
    /* Bytes, not values: NaN payloads and signed zeros the generator drew must survive. */
    assert_memory_equal(back.logits, c.logits, rows * (size_t)c.p.width * sizeof(float));
    assert_memory_equal(back.context_lens, c.context_lens, (size_t)c.p.b * sizeof(int32_t));
    assert_memory_equal(back.block_table, c.block_table,
                        (size_t)c.p.b * (size_t)c.p.blocks_per_req * sizeof(int32_t));
    attest_stored_tensor s;
    assert_ok(attest_casefile_load_output(path, NULL, "candidate/topk_physical", &s));
    assert_int_equal(s.rank, 2);
    assert_int_equal(s.shape[1], c.p.k);
    assert_memory_equal(s.data, sel, n * sizeof *sel);
    attest_stored_tensor_free(&s);
    assert_int_equal(attest_casefile_load_output(path, NULL, "candidate/topk_indices", &s),
                     ATTEST_ERR_NOT_FOUND);
    free(sel);
    attest_topk_case_free(&back);
    attest_topk_case_free(&c);
}

/* Writes a small valid case, then lets `spoil` change one thing before saving. */
static void hand_case(attest_topk_case *c)
{
    memset(c, 0, sizeof *c);
    c->p = (attest_topk_params){.b = 2, .next_n = 1, .width = 100, .k = 8, .blocks_per_req = 2,
                                .num_blocks = 4};
    assert_ok(attest_topk_case_alloc(c));
    c->context_lens[0] = 100;
    c->context_lens[1] = 3;
}

static void expect_refused(const char *name, const char *want)
{
    char path[300];
    path_of(name, path, sizeof path);
    attest_topk_case back;
    assert_int_equal(attest_topk_casefile_load(path, &back), ATTEST_ERR_FORMAT);
    if (strstr(attest_last_error(), want) == NULL) fail_msg("%s: got '%s'", want, attest_last_error());
    assert_null(back.logits);
    /* The probe says the same, from its child. */
    assert_int_equal(attest_topk_casefile_probe(path), ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), want));
}

static void test_bad_contents(void **state)
{
    (void)state;
    attest_topk_case c;
    char path[300];
    hand_case(&c);
    c.block_table[3] = 4; /* one past the pool */
    path_of("block.h5", path, sizeof path);
    assert_ok(attest_topk_casefile_save(path, &c, NULL));
    expect_refused("block.h5", "block_table[1][1] = 4 outside [0, num_blocks = 4)");
    c.block_table[3] = 1;
    c.context_lens[1] = 101;
    path_of("lens.h5", path, sizeof path);
    assert_ok(attest_topk_casefile_save(path, &c, NULL));
    expect_refused("lens.h5", "context_lens[1] = 101 outside [0, width = 100]");
    c.context_lens[1] = 3;
    c.p.k = 0; /* out of range: refused with the file's name */
    path_of("k.h5", path, sizeof path);
    assert_ok(attest_topk_casefile_save(path, &c, NULL));
    expect_refused("k.h5", "k = 0 must be in");
    c.p.k = 8;
    /* Parameters say width 90, the logits are [2, 100]. */
    path_of("shape.h5", path, sizeof path);
    attest_tensorfile *f = NULL;
    assert_ok(attest_tensorfile_create(path, &f));
    assert_ok(attest_tensorfile_set_string(f, NULL, "attest_topk", "x"));
    const char *names[] = {"schema_version", "b", "next_n", "width", "k", "blocks_per_req",
                           "num_blocks"};
    const int64_t values[] = {1, 2, 1, 90, 8, 2, 4};
    for (int i = 0; i < 7; i++) assert_ok(attest_tensorfile_set_int(f, NULL, names[i], values[i]));
    attest_casefile_output o = {.name = "logits", .dtype = ATTEST_DTYPE_F32, .rank = 2,
                                .shape = {2, 100}, .data = c.logits};
    assert_ok(attest_tensorfile_write(f, NULL, &o));
    assert_ok(attest_tensorfile_close(f));
    expect_refused("shape.h5", "logits: shape does not match the parameters (expected [2, 90])");
    attest_topk_case_free(&c);
}

static void test_not_topk(void **state)
{
    (void)state;
    char path[300];
    path_of("plain.h5", path, sizeof path);
    attest_tensorfile *f = NULL;
    assert_ok(attest_tensorfile_create(path, &f));
    assert_ok(attest_tensorfile_set_int(f, NULL, "k", 8));
    assert_ok(attest_tensorfile_close(f));
    assert_int_equal(attest_topk_casefile_is(path), 0);
    expect_refused("plain.h5", "not a top-k case file");
    /* Missing attribute. */
    path_of("nob.h5", path, sizeof path);
    assert_ok(attest_tensorfile_create(path, &f));
    assert_ok(attest_tensorfile_set_string(f, NULL, "attest_topk", "x"));
    assert_ok(attest_tensorfile_set_int(f, NULL, "schema_version", 1));
    assert_ok(attest_tensorfile_close(f));
    expect_refused("nob.h5", "attribute b: missing");
    /* Not HDF5, and not there. */
    path_of("text.h5", path, sizeof path);
    FILE *t = fopen(path, "w");
    assert_non_null(t);
    fputs("not hdf5\n", t);
    fclose(t);
    assert_int_equal(attest_topk_casefile_is(path), 0);
    attest_topk_case back;
    assert_int_equal(attest_topk_casefile_load(path, &back), ATTEST_ERR_IO);
    path_of("missing.h5", path, sizeof path);
    assert_int_equal(attest_topk_casefile_is(path), 0);
    assert_int_not_equal(attest_topk_casefile_probe(path), ATTEST_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_contents),
        cmocka_unit_test(test_not_topk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
