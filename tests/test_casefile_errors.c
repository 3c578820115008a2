/* Tests of case files on bad input: missing, empty, non-HDF5 and truncated files, each kind of
 * malformed or inconsistent content, and random byte flips. Every failure must be an error whose
 * one-line message names the file and the field; nothing may crash. */
#include "casefile_fixtures.h"
#include "assert_ok.h"

/* Counts the cases a listing reports. */
static attest_status count_group(const char *group, attest_kernel kernel, void *user)
{
    (void)group;
    (void)kernel;
    ++*(int *)user;
    return ATTEST_OK;
}

/* Expects a failed load whose message is one line naming the file and containing `field`. */
static void expect_load_error(const char *path, const char *group, const char *field)
{
    attest_case c;
    memset(&c, 0xAB, sizeof c); /* a failed load must leave a freeable, empty case */
    attest_status st = attest_casefile_load(path, group, &c);
    if (st == ATTEST_OK) fail_msg("%s loaded, expected an error naming %s", path, field);
    assert_true(st == ATTEST_ERR_FORMAT || st == ATTEST_ERR_IO || st == ATTEST_ERR_NOT_FOUND);
    const char *msg = attest_last_error();
    if (!strstr(msg, path) || !strstr(msg, field) || strchr(msg, '\n'))
        fail_msg("message for %s does not name %s on one line: '%s'", path, field, msg);
    assert_null(c.heap_block_);
    attest_case_free(&c);
}

static void copy_file(const char *from, const char *to, long keep)
{
    FILE *in = fopen(from, "rb");
    FILE *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    long done = 0;
    size_t n;
    while ((keep < 0 || done < keep) && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (keep >= 0 && done + (long)n > keep) n = (size_t)(keep - done);
        assert_int_equal(fwrite(buf, 1, n, out), n);
        done += (long)n;
    }
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

static long file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

/* Files that are missing, not HDF5, empty or truncated give errors naming the file. */
static void unreadable_files(void **state)
{
    (void)state;
    attest_case c;
    make_mla_v4(&c);
    const char *good = tmp_path("good.h5");
    assert_ok(attest_casefile_save(good, NULL, &c, NULL));
    attest_case_free(&c);

    attest_case l;
    assert_int_equal(attest_casefile_load(tmp_path("missing.h5"), NULL, &l), ATTEST_ERR_IO);
    expect_load_error(tmp_path("missing.h5"), NULL, "cannot open");
    expect_load_error(g_tmp, NULL, "not a regular file");
    const char *text = tmp_path("text.h5");
    FILE *f = fopen(text, "w");
    assert_non_null(f);
    fputs("this is not hdf5\n", f);
    fclose(f);
    expect_load_error(text, NULL, "HDF5");
    const char *empty = tmp_path("empty.h5");
    copy_file(good, empty, 0);
    expect_load_error(empty, NULL, "empty");
    const char *half = tmp_path("half.h5");
    copy_file(good, half, file_size(good) / 2);
    expect_load_error(half, NULL, "truncated");
    const char *tiny = tmp_path("tiny.h5");
    copy_file(good, tiny, 100);
    expect_load_error(tiny, NULL, "HDF5");
    /* A missing group is named. */
    expect_load_error(good, "no_such_group", "no_such_group");
    /* Listing a file without a case says so. */
    int count = 0;
    hid_t fid = H5Fcreate(tmp_path("nocase.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t g = H5Gcreate2(fid, "not_a_case", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(g >= 0);
    H5Gclose(g);
    H5Fclose(fid);
    assert_int_equal(attest_casefile_list_groups(tmp_path("nocase.h5"), count_group, &count),
                     ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), "no case"));
    expect_load_error(tmp_path("nocase.h5"), NULL, "kind");
}

/* Edits one saved file through the HDF5 API. */
typedef void (*edit_fn)(hid_t root);

static void broken_case(const char *name, attest_kernel kernel, edit_fn edit, const char *field)
{
    attest_case c;
    if (kernel == ATTEST_KERNEL_INDEXER)
        make_indexer(&c);
    else
        make_mla_v4(&c);
    const char *path = tmp_path(name);
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.no_compress = 1;
    assert_ok(attest_casefile_save(path, NULL, &c, &x));
    attest_case_free(&c);
    hid_t fid = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(fid >= 0);
    edit(fid);
    assert_true(H5Fclose(fid) >= 0);
    expect_load_error(path, NULL, field);
}

static void write_int_attr(hid_t loc, const char *name, long long v)
{
    if (H5Aexists(loc, name) > 0) assert_true(H5Adelete(loc, name) >= 0);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(loc, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, H5T_NATIVE_LLONG, &v) >= 0);
    H5Aclose(a);
    H5Sclose(s);
}

static void write_str_attr(hid_t loc, const char *name, const char *v)
{
    if (H5Aexists(loc, name) > 0) assert_true(H5Adelete(loc, name) >= 0);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, t, v) >= 0);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
}

static void replace_dataset(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int rank,
                            const hsize_t *dims, const void *data)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) > 0) assert_true(H5Ldelete(loc, name, H5P_DEFAULT) >= 0);
    hid_t s = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(loc, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    assert_true(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d);
    H5Sclose(s);
}

static void drop_attr_b(hid_t r) { assert_true(H5Adelete(r, "b") >= 0); }
static void drop_indices(hid_t r) { assert_true(H5Ldelete(r, "indices", H5P_DEFAULT) >= 0); }
static void indices_int64(hid_t r)
{
    static long long v[2 * 2 * 6];
    memset(v, 0, sizeof v);
    hsize_t dims[3] = {2, 2, 6};
    replace_dataset(r, "indices", H5T_STD_I64LE, H5T_NATIVE_LLONG, 3, dims, v);
}
static void indices_wrong_shape(hid_t r)
{
    static int v[2 * 2 * 5];
    memset(v, 0, sizeof v);
    hsize_t dims[3] = {2, 2, 5};
    replace_dataset(r, "indices", H5T_STD_I32LE, H5T_NATIVE_INT, 3, dims, v);
}
static void indices_beyond_pool(hid_t r)
{
    static int v[2 * 2 * 6];
    memset(v, 0, sizeof v);
    v[7] = 10; /* the pool holds 5 pages of 2 tokens: 0..9 */
    hsize_t dims[3] = {2, 2, 6};
    replace_dataset(r, "indices", H5T_STD_I32LE, H5T_NATIVE_INT, 3, dims, v);
}
static void stride_below_payload(hid_t r) { write_int_attr(r, "page_stride", 1000); }
static void unknown_kind(hid_t r)
{
    write_str_attr(r, "kind", "flash-attention");
    assert_true(H5Adelete(r, "kernel") >= 0);
}
static void future_version(hid_t r)
{
    write_int_attr(r, "attest_schema_version", ATTEST_CASEFILE_SCHEMA_VERSION + 1);
}
static void sink_flag_without_data(hid_t r) { assert_true(H5Ldelete(r, "attn_sink", H5P_DEFAULT) >= 0); }
static void bad_convention(hid_t r) { write_str_attr(r, "lse_convention", "sometimes"); }
static void string_for_int(hid_t r) { write_str_attr(r, "h_q", "three"); }
static void half_truth(hid_t r) { assert_true(H5Ldelete(r, "q_true", H5P_DEFAULT) >= 0); }
static void block_outside_pool(hid_t r)
{
    int v[6] = {4, 0, 9, 1, 3, -1};
    hsize_t dims[2] = {2, 3};
    replace_dataset(r, "block_table", H5T_STD_I32LE, H5T_NATIVE_INT, 2, dims, v);
}
static void length_beyond_table(hid_t r)
{
    int v[2] = {150, 193};
    hsize_t dims[1] = {2};
    replace_dataset(r, "context_lens", H5T_STD_I32LE, H5T_NATIVE_INT, 1, dims, v);
}
static void weights_as_f64(hid_t r)
{
    static double v[4 * 4];
    hsize_t dims[2] = {4, 4};
    replace_dataset(r, "weights", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, dims, v);
}
static void block_bytes_wrong(hid_t r) { write_int_attr(r, "block_bytes", 8192); }
static void cache_wrong_rows(hid_t r)
{
    static unsigned char v[4 * 8448];
    hsize_t dims[2] = {4, 8448};
    replace_dataset(r, "cache_bytes", H5T_STD_U8LE, H5T_NATIVE_UCHAR, 2, dims, v);
}
static void heads_huge(hid_t r) { write_int_attr(r, "heads", 1LL << 40); }
static void masking_unknown(hid_t r) { write_str_attr(r, "masking", "nan"); }

/* Each kind of malformed or inconsistent file gives an error naming its field. */
static void malformed_files(void **state)
{
    (void)state;
    broken_case("no_b.h5", ATTEST_KERNEL_MLA_DECODE, drop_attr_b, "b: required attribute");
    broken_case("no_indices.h5", ATTEST_KERNEL_MLA_DECODE, drop_indices, "indices: required dataset");
    broken_case("idx64.h5", ATTEST_KERNEL_MLA_DECODE, indices_int64, "indices: dtype int64");
    broken_case("idxshape.h5", ATTEST_KERNEL_MLA_DECODE, indices_wrong_shape, "indices: shape");
    broken_case("idxpool.h5", ATTEST_KERNEL_MLA_DECODE, indices_beyond_pool, "indices[");
    broken_case("stride.h5", ATTEST_KERNEL_MLA_DECODE, stride_below_payload, "page_stride");
    broken_case("kind.h5", ATTEST_KERNEL_MLA_DECODE, unknown_kind, "kind");
    broken_case("version.h5", ATTEST_KERNEL_MLA_DECODE, future_version, "attest_schema_version");
    broken_case("sink.h5", ATTEST_KERNEL_MLA_DECODE, sink_flag_without_data, "attn_sink");
    broken_case("lseconv.h5", ATTEST_KERNEL_MLA_DECODE, bad_convention, "lse_convention");
    broken_case("hq.h5", ATTEST_KERNEL_MLA_DECODE, string_for_int, "h_q: expected an integer");
    broken_case("truth.h5", ATTEST_KERNEL_INDEXER, half_truth, "q_true");
    broken_case("table.h5", ATTEST_KERNEL_INDEXER, block_outside_pool, "block_table[");
    broken_case("lens.h5", ATTEST_KERNEL_INDEXER, length_beyond_table, "context_lens[");
    broken_case("wf64.h5", ATTEST_KERNEL_INDEXER, weights_as_f64, "weights: dtype float64");
    broken_case("bbytes.h5", ATTEST_KERNEL_INDEXER, block_bytes_wrong, "block_bytes");
    broken_case("rows.h5", ATTEST_KERNEL_INDEXER, cache_wrong_rows, "cache_bytes: shape");
    broken_case("heads.h5", ATTEST_KERNEL_INDEXER, heads_huge, "heads");
    broken_case("mask.h5", ATTEST_KERNEL_INDEXER, masking_unknown, "masking");
}

/* Flipping bytes anywhere in a valid file gives an error or a valid case, never a crash of the
 * caller (HDF5's own crashes on corrupt metadata are confined to attest_casefile_probe's child). */
static void corrupted_bytes_never_crash(void **state)
{
    (void)state;
    attest_case c;
    make_indexer(&c);
    const char *good = tmp_path("corrupt_src.h5");
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.no_compress = 1;
    assert_ok(attest_casefile_save(good, NULL, &c, &x));
    attest_case_free(&c);
    long size = file_size(good);
    unsigned char *bytes = malloc((size_t)size);
    assert_non_null(bytes);
    FILE *f = fopen(good, "rb");
    assert_non_null(f);
    assert_int_equal(fread(bytes, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    const char *bad = tmp_path("corrupt.h5");
    int ok = 0, failed = 0, crashed = 0;
    uint32_t x32 = 12345;
    for (int trial = 0; trial < 300; trial++) {
        x32 = x32 * 1664525u + 1013904223u;
        /* Most trials hit the metadata at the front, where HDF5's parsers are. */
        long pos = trial % 3 ? (long)(x32 % 4096u) % size : (long)(x32 % (uint32_t)size);
        unsigned char saved = bytes[pos];
        bytes[pos] ^= (unsigned char)(1u << (trial % 8));
        f = fopen(bad, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        bytes[pos] = saved;
        /* The probe takes the crashes HDF5 itself has on corrupt metadata; what it passes must
         * load in this process. */
        if (attest_casefile_probe(bad, NULL) != ATTEST_OK) {
            if (strchr(attest_last_error(), '\n'))
                fail_msg("message on several lines: %s", attest_last_error());
            if (strstr(attest_last_error(), "crashed") || strstr(attest_last_error(), "probe"))
                crashed++;
            failed++;
            continue;
        }
        attest_case l;
        attest_status st = attest_casefile_load(bad, NULL, &l);
        if (st != ATTEST_OK) fail_msg("probe passed, load failed: %s", attest_last_error());
        assert_ok(attest_case_check_inputs(&l));
        attest_case_free(&l);
        ok++;
    }
    print_message("300 corrupted files: %d loaded (flip in unused or data bytes), %d rejected, "
                  "%d of them by crashing HDF5 in the probe process\n",
                  ok, failed, crashed);
    assert_true(failed > 0);
    free(bytes);
}

int main(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unreadable_files),
        cmocka_unit_test(malformed_files),
        cmocka_unit_test(corrupted_bytes_never_crash),
    };
    return cmocka_run_group_tests(tests, casefile_setup, casefile_teardown);
}
