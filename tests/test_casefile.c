/* Tests of case files: save/load round trips of hand-built cases of both kernels, the upstream
 * oracle groups loading as cases, stored outputs beside a case, cases inside a caller's open file
 * and tensor files. Malformed input is test_casefile_errors.c. */
#include "casefile_fixtures.h"
#include "assert_ok.h"

/* Every parameter, every tensor's metadata and every input/truth byte equal. */
static void assert_same_case(const attest_case *a, const attest_case *b)
{
    assert_int_equal(a->kernel, b->kernel);
    assert_true(a->seed == b->seed);
    char pa[1024], pb[1024];
    assert_ok(attest_case_param_string(a, pa, sizeof pa));
    assert_ok(attest_case_param_string(b, pb, sizeof pb));
    assert_string_equal(pa, pb);
    assert_memory_equal(&a->params, &b->params, sizeof a->params);
    assert_int_equal(a->num_tensors, b->num_tensors);
    for (size_t i = 0; i < a->num_tensors; i++) {
        const attest_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->role, y->role);
        assert_int_equal(x->rank, y->rank);
        for (int32_t d = 0; d < x->rank; d++) assert_int_equal(x->shape[d], y->shape[d]);
        assert_int_equal(x->nbytes, y->nbytes);
        assert_non_null(y->data);
        if (x->role != ATTEST_ROLE_OUTPUT) assert_memory_equal(x->data, y->data, x->nbytes);
    }
}

static void round_trip(attest_case *c, const char *file, const char *group)
{
    const char *path = tmp_path(file);
    assert_ok(attest_casefile_save(path, group, c, NULL));
    attest_case back;
    attest_status st = attest_casefile_load(path, group, &back);
    if (st != ATTEST_OK) fail_msg("load: %s", attest_last_error());
    assert_same_case(c, &back);
    attest_case_free(&back);
}

/* mla-v4 with sink, topk_length, extra scope and truth survives a save and a load bit for bit. */
static void round_trip_mla_v4(void **state)
{
    (void)state;
    attest_case c;
    make_mla_v4(&c);
    round_trip(&c, "mla_v4.h5", NULL);
    attest_case_free(&c);
}

/* Several cases in groups of one file: each round-trips and the listing finds them in order. */
typedef struct seen {
    char names[8][64];
    attest_kernel kernels[8];
    int count;
} seen;

static attest_status record_group(const char *group, attest_kernel kernel, void *user)
{
    seen *s = user;
    if (s->count >= 8) return attest_fail(ATTEST_ERR_INTERNAL, "too many groups");
    snprintf(s->names[s->count], sizeof s->names[0], "%s", group);
    s->kernels[s->count++] = kernel;
    return ATTEST_OK;
}

static void round_trip_groups(void **state)
{
    (void)state;
    attest_case a, b, c;
    make_mla_v32(&a);
    make_indexer(&b);
    make_mla_v4(&c);
    const char *path = tmp_path("multi.h5");
    (void)remove(path);
    round_trip(&a, "multi.h5", "z_v32");
    round_trip(&b, "multi.h5", "a_indexer");
    round_trip(&c, "multi.h5", "nested/deeper/v4");
    /* A group is never overwritten. */
    assert_int_equal(attest_casefile_save(path, "a_indexer", &b, NULL), ATTEST_ERR_INVALID_ARGUMENT);
    seen s = {0};
    assert_ok(attest_casefile_list_groups(path, record_group, &s));
    assert_int_equal(s.count, 3);
    assert_string_equal(s.names[0], "a_indexer");
    assert_int_equal(s.kernels[0], ATTEST_KERNEL_INDEXER);
    assert_string_equal(s.names[1], "nested/deeper/v4");
    assert_int_equal(s.kernels[1], ATTEST_KERNEL_MLA_DECODE);
    assert_string_equal(s.names[2], "z_v32");
    /* A root case lists as "/". */
    round_trip(&a, "root.h5", NULL);
    memset(&s, 0, sizeof s);
    assert_ok(attest_casefile_list_groups(tmp_path("root.h5"), record_group, &s));
    assert_int_equal(s.count, 1);
    assert_string_equal(s.names[0], "/");
    attest_case_free(&a);
    attest_case_free(&b);
    attest_case_free(&c);
}

/* The indexer (MTP, top-k rule, masking 0.0, truth) round-trips bit for bit. */
static void round_trip_indexer(void **state)
{
    (void)state;
    attest_case c;
    make_indexer(&c);
    round_trip(&c, "indexer.h5", NULL);
    attest_case_free(&c);
}

/* Expected and candidate outputs come back with their dtype, shape and bytes; absent ones are
 * NOT_FOUND; bf16 converts exactly. */
static void stored_outputs_round_trip(void **state)
{
    (void)state;
    attest_case c;
    make_mla_v32(&c);
    uint16_t out_bits[2 * 3] = {0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x0001, 0x7FC0};
    float lse[3] = {1.5f, -INFINITY, 0.25f};
    double ref[2] = {3.25, -0.5};
    int32_t set[4] = {-1, 0, 7, 123456};
    attest_casefile_output expected[3] = {
        {"out_bf16", ATTEST_DTYPE_BF16, 2, {2, 3, 0, 0}, out_bits},
        {"lse", ATTEST_DTYPE_F32, 1, {3, 0, 0, 0}, lse},
        {"topk512_set", ATTEST_DTYPE_I32, 2, {2, 2, 0, 0}, set}};
    attest_casefile_output cand[1] = {{"out", ATTEST_DTYPE_F64, 1, {2, 0, 0, 0}, ref}};
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.expected = expected;
    x.num_expected = 3;
    x.candidate = cand;
    x.num_candidate = 1;
    x.candidate_name = "cpu-mutant";
    x.note = "written by test_casefile";
    x.replay = "attest replay out.h5 --candidate cpu-mutant";
    const char *path = tmp_path("outputs.h5");
    attest_status st = attest_casefile_save(path, NULL, &c, &x);
    if (st != ATTEST_OK) fail_msg("%s", attest_last_error());

    attest_stored_tensor s;
    assert_ok(attest_casefile_load_output(path, NULL, "out_bf16", &s));
    assert_int_equal(s.dtype, ATTEST_DTYPE_BF16);
    assert_int_equal(s.rank, 2);
    assert_int_equal(s.shape[1], 3);
    assert_memory_equal(s.data, out_bits, sizeof out_bits);
    double v[6];
    assert_ok(attest_stored_tensor_to_f64(&s, v));
    assert_true(v[0] == 1.0 && v[1] == -1.0 && v[2] == INFINITY && v[3] == -INFINITY);
    assert_true(v[4] == 0x1p-133 && v[5] != v[5]);
    attest_stored_tensor_free(&s);

    assert_ok(attest_casefile_load_output(path, "/", "lse", &s));
    assert_int_equal(s.dtype, ATTEST_DTYPE_F32);
    assert_memory_equal(s.data, lse, sizeof lse);
    assert_true(attest_stored_tensor_matches(&s, attest_case_tensor(&c, "lse")) == 0); /* [3] vs [1,1,2] */
    attest_stored_tensor_free(&s);

    assert_ok(attest_casefile_load_output(path, NULL, "topk512_set", &s));
    assert_int_equal(s.dtype, ATTEST_DTYPE_I32);
    assert_memory_equal(s.data, set, sizeof set);
    attest_stored_tensor_free(&s);

    assert_ok(attest_casefile_load_output(path, NULL, "candidate/out", &s));
    assert_int_equal(s.dtype, ATTEST_DTYPE_F64);
    assert_memory_equal(s.data, ref, sizeof ref);
    attest_stored_tensor_free(&s);

    assert_int_equal(attest_casefile_load_output(path, NULL, "logits", &s), ATTEST_ERR_NOT_FOUND);
    assert_null(s.data);
    /* The case itself still loads, outputs and attributes beside it are ignored. */
    attest_case back;
    assert_ok(attest_casefile_load(path, NULL, &back));
    assert_same_case(&c, &back);
    attest_case_free(&back);

    /* An output may not shadow an input. */
    attest_casefile_output clash = {"indices", ATTEST_DTYPE_I32, 1, {4, 0, 0, 0}, set};
    x.expected = &clash;
    x.num_expected = 1;
    assert_int_equal(attest_casefile_save(tmp_path("clash.h5"), NULL, &c, &x),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "indices"));
    attest_case_free(&c);
}

/* Saving needs placed tensors. */
static void save_rejects_unplaced(void **state)
{
    (void)state;
    attest_case c;
    make_indexer(&c);
    attest_case_free(&c); /* tensors now NULL */
    assert_int_equal(attest_casefile_save(tmp_path("unplaced.h5"), NULL, &c, NULL),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "cache_bytes"));
}

/* Every group of every upstream oracle file loads as a valid case with its stored outputs. */
typedef struct oracle_seen {
    char names[16][64];
    int count;
} oracle_seen;

static attest_status oracle_group(const char *group, attest_kernel kernel, void *user)
{
    (void)kernel;
    oracle_seen *s = user;
    if (s->count >= 16) return attest_fail(ATTEST_ERR_INTERNAL, "too many groups");
    snprintf(s->names[s->count++], 64, "%s", group);
    return ATTEST_OK;
}

static void oracle_groups_load(void **state)
{
    (void)state;
    const char *dir = getenv("ATTEST_SHARED_DIR");
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/oracles/upstream_indexer.h5", dir ? dir : "");
    if (!dir || access(probe, R_OK) != 0) {
        print_message("ATTEST_SHARED_DIR/oracles not found: oracle loading skipped\n");
        skip();
    }
    static const struct {
        const char *file;
        attest_kernel kernel;
        int groups;
        const char *outputs[2];
    } files[] = {
        {"upstream_indexer.h5", ATTEST_KERNEL_INDEXER, 6, {"logits", "topk512_set"}},
        {"upstream_mla_v4.h5", ATTEST_KERNEL_MLA_DECODE, 8, {"out_bf16", "lse"}},
        {"upstream_mla_v32.h5", ATTEST_KERNEL_MLA_DECODE, 4, {"out_bf16", "lse"}},
    };
    int total = 0;
    for (size_t f = 0; f < 3; f++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/oracles/%s", dir, files[f].file);
        oracle_seen s = {0};
        attest_status st = attest_casefile_list_groups(path, oracle_group, &s);
        if (st != ATTEST_OK) fail_msg("%s", attest_last_error());
        assert_int_equal(s.count, files[f].groups);
        for (int g = 0; g < s.count; g++) {
            attest_case c;
            st = attest_casefile_load(path, s.names[g], &c);
            if (st != ATTEST_OK) fail_msg("%s", attest_last_error());
            assert_int_equal(c.kernel, files[f].kernel);
            assert_true(c.seed > 0); /* the oracle's seed attribute is kept */
            if (c.kernel == ATTEST_KERNEL_MLA_DECODE) {
                const attest_mla_params *p = &c.params.mla;
                assert_int_equal(attest_case_tensor(&c, "cache_bytes")->nbytes,
                                 (size_t)p->num_pages * (size_t)p->page_stride);
                /* has_* flags are derived from the datasets present. */
                if (!strcmp(s.names[g], "v4_extra_c4")) {
                    assert_true(p->has_extra && p->has_extra_topk_length && p->has_sink);
                    assert_int_equal(p->extra_page_stride, 37440);
                }
                if (!strcmp(s.names[g], "v4_basic"))
                    assert_true(!p->has_extra && !p->has_sink && !p->has_topk_length);
                if (!strcmp(s.names[g], "v32_topklen_sinkinf"))
                    assert_true(p->has_sink && p->has_topk_length && p->page_size == 61);
                assert_true(p->sm_scale > 0.03f && p->sm_scale < 0.05f);
            } else {
                /* blocks_per_req comes from block_table's shape. */
                assert_int_equal(c.params.indexer.blocks_per_req,
                                 attest_case_tensor(&c, "block_table")->shape[1]);
                assert_int_equal(c.params.indexer.masking, ATTEST_MASK_NEG_INF);
            }
            for (int o = 0; o < 2; o++) {
                attest_stored_tensor t;
                st = attest_casefile_load_output(path, s.names[g], files[f].outputs[o], &t);
                if (st != ATTEST_OK) fail_msg("%s", attest_last_error());
                const attest_tensor *ct = attest_case_tensor(&c, files[f].outputs[o]);
                if (ct) assert_true(attest_stored_tensor_matches(&t, ct));
                attest_stored_tensor_free(&t);
            }
            attest_case_free(&c);
            total++;
        }
    }
    print_message("loaded %d oracle groups\n", total);
    assert_int_equal(total, 18);
}

/* The hid_t-level entry points write and read a case inside a caller's own file. */
static void case_inside_open_file(void **state)
{
    (void)state;
    attest_case c;
    make_mla_v32(&c);
    hid_t fid = H5Fcreate(tmp_path("store.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t g = H5Gcreate2(fid, "repro_17", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(g >= 0);
    assert_ok(attest_casefile_write_at(g, "store.h5: repro_17", &c, NULL));
    attest_case back;
    assert_ok(attest_casefile_read_at(g, "store.h5: repro_17", &back));
    assert_same_case(&c, &back);
    attest_case_free(&back);
    H5Gclose(g);
    H5Fclose(fid);
    assert_ok(attest_casefile_load(tmp_path("store.h5"), "repro_17", &back));
    attest_case_free(&back);
    attest_case_free(&c);
}

/* A tensor file holds datasets in nested groups and string / integer attributes. */
static void tensorfile_writes(void **state)
{
    (void)state;
    attest_tensorfile *tf;
    const char *path = tmp_path("tensors.h5");
    assert_ok(attest_tensorfile_create(path, &tf));
    double v[3] = {1, -INFINITY, 0.5};
    attest_casefile_output o = {"lse", ATTEST_DTYPE_F64, 1, {3, 0, 0, 0}, v};
    assert_ok(attest_tensorfile_write(tf, "g1/true", &o));
    assert_ok(attest_tensorfile_write(tf, NULL, &o));
    assert_int_equal(attest_tensorfile_write(tf, NULL, &o), ATTEST_ERR_INVALID_ARGUMENT);
    assert_ok(attest_tensorfile_set_string(tf, "g1", "mode", "simulated"));
    assert_ok(attest_tensorfile_set_string(tf, "g1", "mode", "true"));
    assert_ok(attest_tensorfile_set_int(tf, NULL, "n", 3));
    assert_ok(attest_tensorfile_close(tf));
    attest_stored_tensor s;
    assert_ok(attest_casefile_load_output(path, "g1", "true/lse", &s));
    assert_memory_equal(s.data, v, sizeof v);
    attest_stored_tensor_free(&s);
}

int main(void)
{
    /* Keep HDF5 quiet in the test's own direct calls too. */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_mla_v4),
        cmocka_unit_test(round_trip_indexer),
        cmocka_unit_test(round_trip_groups),
        cmocka_unit_test(stored_outputs_round_trip),
        cmocka_unit_test(save_rejects_unplaced),
        cmocka_unit_test(oracle_groups_load),
        cmocka_unit_test(case_inside_open_file),
        cmocka_unit_test(tensorfile_writes),
    };
    return cmocka_run_group_tests(tests, casefile_setup, casefile_teardown);
}
