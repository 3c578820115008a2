/* Tests of the results store: rows written and read back equal, rows surviving reopen and an
 * unclosed writer, clean errors for truncated and foreign files, repros stored and loaded while
 * the campaign runs and after close, repro limits, the flush policy, provenance, replay commands.
 * The SIGKILL test and the h5py/h5dump checks are tests/py/results_sigkill.py and
 * tests/py/test_results_h5py.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"
#include <hdf5.h>

#include "attest/casefile.h"
#include "attest/generator.h"
#include "attest/results.h"
#include "results_fixture.h"

static char g_tmp[256];

static const char *tmp_path(const char *name)
{
    static char buf[16][512];
    static int next;
    char *p = buf[next++ % 16];
    snprintf(p, 512, "%s/%s", g_tmp, name);
    return p;
}

static void provenance(attest_results_provenance *p)
{
    attest_results_provenance_init(p);
    snprintf(p->kernel, sizeof p->kernel, "indexer");
    snprintf(p->candidate, sizeof p->candidate, "cand-0");
    snprintf(p->cuda_version, sizeof p->cuda_version, "12.4");
    snprintf(p->device, sizeof p->device, "NVIDIA H200 (sm_90)");
    snprintf(p->policy_name, sizeof p->policy_name, "default");
    snprintf(p->policy_hash, sizeof p->policy_hash, "00112233aabbccdd");
    snprintf(p->policy_origin, sizeof p->policy_origin, "<embedded>");
    snprintf(p->command_line, sizeof p->command_line, "attest run --kernel indexer --seed 7");
    p->seed = 7;
    p->cases_planned = 123;
    p->policy_text = "{ \"name\": \"default\", \"entries\": [] }\n";
}

static attest_results_writer *create(const char *path, const attest_results_options *opt)
{
    attest_results_provenance p;
    provenance(&p);
    attest_results_writer *w = NULL;
    attest_status st = attest_results_create(path, &p, opt, &w);
    if (st != ATTEST_OK) fail_msg("create: %s", attest_last_error());
    return w;
}

static void append_fixture_rows(attest_results_writer *w, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        attest_case_record rec;
        fixture_record(i, &rec);
        attest_status st = attest_results_append(w, &rec, NULL, NULL);
        if (st != ATTEST_OK) fail_msg("append %llu: %s", (unsigned long long)i, attest_last_error());
    }
}

static attest_results_reader *open_read(const char *path)
{
    attest_results_reader *r = NULL;
    attest_status st = attest_results_open_read(path, &r);
    if (st != ATTEST_OK) fail_msg("open_read: %s", attest_last_error());
    return r;
}

/* Every row read back equals the fixture record byte for byte. */
static void assert_fixture_rows(attest_results_reader *r, uint64_t n)
{
    assert_int_equal(attest_results_num_cases(r), n);
    attest_results_rewind(r);
    for (uint64_t i = 0;; i++) {
        attest_case_record got, want;
        int done = 0, has_repro = -1;
        assert_ok(attest_results_next(r, &got, &has_repro, &done));
        if (done) {
            assert_int_equal(i, n);
            break;
        }
        fixture_record(i, &want);
        assert_memory_equal(&got, &want, sizeof got);
        assert_int_equal(has_repro, 0);
    }
}

/* 1000 rows written through a closed writer read back equal, in order, with verdict counts. */
static void rows_round_trip(void **state)
{
    (void)state;
    const char *path = tmp_path("round.h5");
    attest_results_options opt = attest_results_defaults();
    opt.flush_rows = 37; /* flush boundaries that do not line up with chunks */
    opt.chunk_rows = 64;
    attest_results_writer *w = create(path, &opt);
    append_fixture_rows(w, 0, 1000);
    assert_int_equal(attest_results_rows_appended(w), 1000);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));

    attest_results_reader *r = open_read(path);
    assert_fixture_rows(r, 1000);
    uint64_t counts[ATTEST_VERDICT_COUNT_], unknown = 9;
    assert_ok(attest_results_count_verdicts(r, counts, &unknown));
    /* by the fixture's rule: i%7==3 mismatch; else i%11==5 crash */
    uint64_t mismatch = 0, crash = 0;
    for (uint64_t i = 0; i < 1000; i++) {
        if (i % 7 == 3) mismatch++;
        else if (i % 11 == 5) crash++;
    }
    assert_int_equal(counts[ATTEST_VERDICT_MISMATCH], mismatch);
    assert_int_equal(counts[ATTEST_VERDICT_CRASH], crash);
    assert_int_equal(counts[ATTEST_VERDICT_OK], 1000 - mismatch - crash);
    assert_int_equal(unknown, 0);

    attest_case_record rec;
    int has_repro;
    assert_ok(attest_results_find_case(r, 777, &rec, &has_repro));
    assert_int_equal(rec.case_id, 777);
    assert_int_equal(attest_results_find_case(r, 5000, &rec, &has_repro), ATTEST_ERR_NOT_FOUND);
    assert_non_null(strstr(attest_last_error(), "5000"));
    assert_int_equal(attest_results_read_row(r, 1000, &rec, NULL), ATTEST_ERR_NOT_FOUND);
    attest_results_close_read(r);
}

/* Provenance written at creation and the end state written at close read back. */
static void provenance_round_trip(void **state)
{
    (void)state;
    const char *path = tmp_path("prov.h5");
    attest_results_writer *w = create(path, NULL);
    append_fixture_rows(w, 0, 3);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_INTERRUPTED));
    attest_results_reader *r = open_read(path);
    const attest_results_provenance *p = attest_results_provenance_of(r);
    attest_results_provenance want;
    provenance(&want);
    assert_string_equal(p->attest_version, want.attest_version);
    assert_string_equal(p->git_commit, want.git_commit);
    assert_string_equal(p->c_compiler, want.c_compiler);
    assert_string_equal(p->host, want.host);
    assert_true(strlen(p->host) > 0);
    assert_string_equal(p->cuda_version, "12.4");
    assert_string_equal(p->device, "NVIDIA H200 (sm_90)");
    assert_string_equal(p->kernel, "indexer");
    assert_string_equal(p->candidate, "cand-0");
    assert_string_equal(p->policy_name, "default");
    assert_string_equal(p->policy_hash, "00112233aabbccdd");
    assert_string_equal(p->policy_origin, "<embedded>");
    assert_string_equal(p->command_line, "attest run --kernel indexer --seed 7");
    assert_string_equal(p->policy_text, want.policy_text);
    assert_int_equal(p->seed, 7);
    assert_int_equal(p->cases_planned, 123);
    assert_int_equal(p->schema_version, ATTEST_RESULTS_SCHEMA_VERSION);
    assert_string_equal(p->state, "interrupted");
    assert_true(p->duration_s > 0 && p->duration_s < 600);
    assert_int_equal(strlen(p->end_time), 20); /* 2025-01-31T12:00:00Z */
    assert_int_equal(p->start_time[10], 'T');
    attest_results_close_read(r);
}

/* An unclosed writer's rows are readable after each flush, by a reader in the same process (no
 * file locks), and a second reader; after close, a reopen still reads the same rows. */
static void rows_survive_reopen(void **state)
{
    (void)state;
    const char *path = tmp_path("reopen.h5");
    attest_results_options opt = attest_results_defaults();
    opt.flush_rows = 1000;
    opt.flush_interval_s = 3600.0;
    attest_results_writer *w = create(path, &opt);
    append_fixture_rows(w, 0, 250);
    assert_int_equal(attest_results_rows_flushed(w), 0); /* buffered: nothing due yet */
    assert_ok(attest_results_flush(w));
    assert_int_equal(attest_results_rows_flushed(w), 250);

    attest_results_reader *r = open_read(path);
    assert_fixture_rows(r, 250);
    assert_string_equal(attest_results_provenance_of(r)->state, "running");
    assert_string_equal(attest_results_provenance_of(r)->end_time, "");
    assert_true(attest_results_provenance_of(r)->duration_s == 0.0);
    attest_results_close_read(r);

    append_fixture_rows(w, 250, 400);
    assert_ok(attest_results_flush(w));
    r = open_read(path);
    assert_fixture_rows(r, 400);
    attest_results_close_read(r);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));

    for (int round = 0; round < 2; round++) {
        r = open_read(path);
        assert_fixture_rows(r, 400);
        assert_string_equal(attest_results_provenance_of(r)->state, "complete");
        attest_results_close_read(r);
    }
}

/* Flush policy: by row count, by elapsed interval (0 s: every row), and nothing early. */
static void flush_policy(void **state)
{
    (void)state;
    attest_results_options opt = attest_results_defaults();
    opt.flush_rows = 10;
    opt.flush_interval_s = 3600.0;
    attest_results_writer *w = create(tmp_path("policy.h5"), &opt);
    append_fixture_rows(w, 0, 9);
    assert_int_equal(attest_results_rows_flushed(w), 0);
    append_fixture_rows(w, 9, 10);
    assert_int_equal(attest_results_rows_flushed(w), 10);
    append_fixture_rows(w, 10, 25);
    assert_int_equal(attest_results_rows_flushed(w), 20);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));

    opt.flush_rows = 1000;
    opt.flush_interval_s = 0.0;
    w = create(tmp_path("policy0.h5"), &opt);
    append_fixture_rows(w, 0, 5);
    assert_int_equal(attest_results_rows_flushed(w), 5);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));

    /* Cases slower than the interval are flushed as they come. */
    opt.flush_rows = 1000;
    opt.flush_interval_s = 0.05;
    w = create(tmp_path("slow.h5"), &opt);
    usleep(60000);
    append_fixture_rows(w, 0, 1);
    assert_int_equal(attest_results_rows_flushed(w), 1);
    append_fixture_rows(w, 1, 2); /* right after: buffered */
    assert_int_equal(attest_results_rows_flushed(w), 1);
    usleep(60000);
    append_fixture_rows(w, 2, 3);
    assert_int_equal(attest_results_rows_flushed(w), 3);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));

    opt.flush_interval_s = -1.0;
    attest_results_provenance p;
    provenance(&p);
    assert_int_equal(attest_results_create(tmp_path("bad.h5"), &p, &opt, &w),
                     ATTEST_ERR_INVALID_ARGUMENT);
    opt.flush_interval_s = 1.0;
    opt.chunk_rows = 0;
    assert_int_equal(attest_results_create(tmp_path("bad.h5"), &p, &opt, &w),
                     ATTEST_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attest_last_error(), "chunk_rows"));
}

static void copy_prefix(const char *from, const char *to, long bytes)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    for (long i = 0; i < bytes; i++) {
        int ch = fgetc(in);
        if (ch == EOF) break;
        fputc(ch, out);
    }
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* Missing, truncated, non-HDF5 and foreign HDF5 files give one clean line naming the file. */
static void bad_files_clean_errors(void **state)
{
    (void)state;
    const char *good = tmp_path("good.h5");
    attest_results_writer *w = create(good, NULL);
    append_fixture_rows(w, 0, 300);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));
    struct stat sb;
    assert_int_equal(stat(good, &sb), 0);

    attest_results_reader *r = (attest_results_reader *)0x1;
    const char *missing = tmp_path("missing.h5");
    assert_int_equal(attest_results_open_read(missing, &r), ATTEST_ERR_IO);
    assert_null(r);
    assert_non_null(strstr(attest_last_error(), missing));

    const long cuts[] = {0, 7, 100, (long)sb.st_size / 2, (long)sb.st_size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        const char *cut = tmp_path("cut.h5");
        copy_prefix(good, cut, cuts[i]);
        attest_status st = attest_results_open_read(cut, &r);
        if (st == ATTEST_OK) {
            /* A cut that leaves the metadata whole may open; reading the rows must then fail
             * cleanly or succeed, never crash. */
            attest_case_record rec;
            int done = 0;
            while (attest_results_next(r, &rec, NULL, &done) == ATTEST_OK && !done) {
            }
            attest_results_close_read(r);
            fail_msg("a file cut to %ld of %ld bytes opened", cuts[i], (long)sb.st_size);
        }
        assert_int_equal(st, ATTEST_ERR_FORMAT);
        assert_non_null(strstr(attest_last_error(), cut));
        assert_null(r);
    }

    const char *text = tmp_path("text.h5");
    FILE *f = fopen(text, "w");
    assert_non_null(f);
    fputs("not hdf5 at all\n", f);
    fclose(f);
    assert_int_equal(attest_results_open_read(text, &r), ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), "not an HDF5 file"));

    const char *foreign = tmp_path("foreign.h5");
    hid_t fid = H5Fcreate(foreign, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(fid >= 0);
    H5Fclose(fid);
    assert_int_equal(attest_results_open_read(foreign, &r), ATTEST_ERR_FORMAT);
    assert_non_null(strstr(attest_last_error(), "not an attest results file"));
}

/* A small generated indexer case, with reference and candidate outputs filled by position. */
static void make_failing_case(uint64_t seed, attest_case *c, attest_case_outputs *o)
{
    attest_gen_options gen = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    assert_ok(attest_generate_case(&gen, seed, c));
    memset(o, 0, sizeof *o);
    attest_tensor *logits = attest_case_tensor(c, "logits");
    assert_non_null(logits);
    size_t n = attest_tensor_count(logits);
    o->num_outputs = 1;
    o->reference[0] = malloc(n * sizeof(double));
    o->candidate[0] = malloc(logits->nbytes);
    o->candidate_bytes[0] = logits->nbytes;
    assert_non_null(o->reference[0]);
    assert_non_null(o->candidate[0]);
    for (size_t i = 0; i < n; i++) {
        o->reference[0][i] = 0.25 * (double)i - 3.0;
        ((float *)o->candidate[0])[i] = (float)(0.25 * (double)i - 3.0) + (i == 5 ? 1.0f : 0.0f);
    }
}

static void failing_record(uint64_t id, uint64_t seed, attest_case_record *rec)
{
    fixture_record(id, rec);
    rec->seed = seed;
    rec->verdict = ATTEST_VERDICT_MISMATCH;
    rec->failed_gates = ATTEST_GATE_BIT(ATTEST_GATE_ELEMENT);
    rec->num_outputs = 1;
    snprintf(rec->outputs[0].output, sizeof rec->outputs[0].output, "logits");
}

/* The repro loaded back equals the case byte for byte, and holds the stored outputs. */
static void assert_repro(attest_results_reader *r, uint64_t id, const attest_case *c,
                         const attest_case_outputs *o, const char *want_path,
                         const char *want_group)
{
    char path[1024], group[64];
    attest_status st = attest_results_repro_location(r, id, path, sizeof path, group,
                                                     sizeof group);
    if (st != ATTEST_OK) fail_msg("location: %s", attest_last_error());
    assert_string_equal(path, want_path);
    assert_string_equal(group, want_group);
    attest_case back;
    st = attest_results_load_repro(r, id, &back);
    if (st != ATTEST_OK) fail_msg("load_repro: %s", attest_last_error());
    assert_int_equal(back.kernel, c->kernel);
    assert_true(back.seed == c->seed);
    assert_int_equal(back.num_tensors, c->num_tensors);
    for (size_t i = 0; i < c->num_tensors; i++) {
        if (c->tensors[i].role == ATTEST_ROLE_OUTPUT) continue;
        assert_string_equal(back.tensors[i].name, c->tensors[i].name);
        assert_int_equal(back.tensors[i].nbytes, c->tensors[i].nbytes);
        assert_memory_equal(back.tensors[i].data, c->tensors[i].data, c->tensors[i].nbytes);
    }
    attest_case_free(&back);
    attest_stored_tensor t;
    memset(&t, 0, sizeof t);
    st = attest_casefile_load_output(path, group, "candidate/logits", &t);
    if (st != ATTEST_OK) fail_msg("candidate output: %s", attest_last_error());
    assert_int_equal(t.nbytes, o->candidate_bytes[0]);
    assert_memory_equal(t.data, o->candidate[0], t.nbytes);
    attest_stored_tensor_free(&t);
    st = attest_casefile_load_output(path, group, "logits", &t);
    if (st != ATTEST_OK) fail_msg("expected output: %s", attest_last_error());
    assert_int_equal(t.dtype, ATTEST_DTYPE_F64);
    assert_memory_equal(t.data, o->reference[0], t.nbytes);
    attest_stored_tensor_free(&t);
}

/* A failing case's repro lives beside the live file while the campaign runs and inside the
 * results file after close; both load back equal, and the directory is gone after close. */
static void repro_round_trip(void **state)
{
    (void)state;
    const char *path = tmp_path("repro.h5");
    attest_results_writer *w = create(path, NULL);
    append_fixture_rows(w, 0, 3);
    attest_case c;
    attest_case_outputs o;
    make_failing_case(99, &c, &o);
    attest_case_record rec;
    failing_record(3, 99, &rec);
    attest_status st = attest_results_append(w, &rec, &c, &o);
    if (st != ATTEST_OK) fail_msg("append: %s", attest_last_error());
    /* A passing case given with its case stores nothing. */
    attest_case_record ok;
    fixture_record(4, &ok);
    assert_ok(attest_results_append(w, &ok, &c, &o));
    assert_ok(attest_results_flush(w));

    char sibling[1024];
    snprintf(sibling, sizeof sibling, "%s.repro/case-3.h5", path);
    attest_results_reader *r = open_read(path);
    assert_repro(r, 3, &c, &o, sibling, "/");
    char p[1024], g[64];
    assert_int_equal(attest_results_repro_location(r, 4, p, sizeof p, g, sizeof g),
                     ATTEST_ERR_NOT_FOUND);
    assert_non_null(strstr(attest_last_error(), "passed"));
    attest_results_close_read(r);

    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));
    char dir[1024];
    snprintf(dir, sizeof dir, "%s.repro", path);
    struct stat sb;
    assert_int_not_equal(stat(dir, &sb), 0);
    r = open_read(path);
    assert_repro(r, 3, &c, &o, path, "repro/3");
    attest_case_record back;
    int has_repro = 0;
    assert_ok(attest_results_find_case(r, 3, &back, &has_repro));
    assert_int_equal(has_repro, 1);
    attest_results_close_read(r);
    attest_case_outputs_free(&o);
    attest_case_free(&c);
}

/* A repro that cannot be written is an error, but its row is still recorded (without repro). */
static void repro_failure_keeps_row(void **state)
{
    (void)state;
    const char *path = tmp_path("repro_fail.h5");
    attest_results_writer *w = create(path, NULL);
    attest_case c;
    memset(&c, 0, sizeof c);
    c.kernel = ATTEST_KERNEL_INDEXER;
    c.params.indexer.b = 1;
    c.params.indexer.next_n = 1;
    c.params.indexer.heads = 1;
    c.params.indexer.head_dim = 128;
    c.params.indexer.num_blocks = 1;
    c.params.indexer.blocks_per_req = 1;
    c.params.indexer.max_len = 64;
    assert_ok(attest_case_define_tensors(&c, 0)); /* tensors not placed */
    attest_case_record rec;
    failing_record(0, 1, &rec);
    assert_int_not_equal(attest_results_append(w, &rec, &c, NULL), ATTEST_OK);
    assert_non_null(strstr(attest_last_error(), "not placed"));
    assert_int_equal(attest_results_rows_appended(w), 1);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));
    attest_results_reader *r = open_read(path);
    attest_case_record back;
    int has_repro = -1;
    assert_ok(attest_results_read_row(r, 0, &back, &has_repro));
    assert_int_equal(has_repro, 0);
    assert_int_equal(back.verdict, ATTEST_VERDICT_MISMATCH);
    attest_results_close_read(r);
}

/* Repros stop at the per-signature limit; the row says so and the reader explains. */
static void repro_limits(void **state)
{
    (void)state;
    const char *path = tmp_path("limits.h5");
    attest_results_options opt = attest_results_defaults();
    opt.repros_per_signature = 2;
    opt.max_repros = 3;
    attest_results_writer *w = create(path, &opt);
    attest_case c;
    attest_case_outputs o;
    make_failing_case(5, &c, &o);
    for (uint64_t id = 0; id < 4; id++) {
        attest_case_record rec;
        failing_record(id, 5, &rec);
        if (id == 3) rec.failed_gates = ATTEST_GATE_BIT(ATTEST_GATE_COSINE); /* new signature */
        assert_ok(attest_results_append(w, &rec, &c, &o));
    }
    attest_case_record rec;
    failing_record(4, 5, &rec);
    rec.verdict = ATTEST_VERDICT_CRASH; /* a third signature, past max_repros */
    assert_ok(attest_results_append(w, &rec, &c, &o));
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));
    attest_results_reader *r = open_read(path);
    const int want[5] = {1, 1, 0, 1, 0};
    for (uint64_t id = 0; id < 5; id++) {
        attest_case_record back;
        int has_repro = -1;
        assert_ok(attest_results_find_case(r, id, &back, &has_repro));
        assert_int_equal(has_repro, want[id]);
    }
    char p[1024], g[64];
    assert_int_equal(attest_results_repro_location(r, 2, p, sizeof p, g, sizeof g),
                     ATTEST_ERR_NOT_FOUND);
    assert_non_null(strstr(attest_last_error(), "limit"));
    assert_non_null(strstr(attest_last_error(), "seed 5"));
    attest_results_close_read(r);
    attest_case_outputs_free(&o);
    attest_case_free(&c);
}

/* A leftover repro directory of a killed campaign is cleared by the next create; one holding a
 * file attest did not write is refused. */
static void leftover_repro_dir(void **state)
{
    (void)state;
    const char *path = tmp_path("left.h5");
    char dir[1024], f[1200];
    snprintf(dir, sizeof dir, "%s.repro", path);
    assert_int_equal(mkdir(dir, 0777), 0);
    snprintf(f, sizeof f, "%s/case-12.h5", dir);
    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fclose(fp);
    attest_results_writer *w = create(path, NULL);
    struct stat sb;
    assert_int_not_equal(stat(dir, &sb), 0);
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));

    assert_int_equal(mkdir(dir, 0777), 0);
    snprintf(f, sizeof f, "%s/notes.txt", dir);
    fp = fopen(f, "w");
    assert_non_null(fp);
    fclose(fp);
    attest_results_provenance p;
    provenance(&p);
    assert_int_equal(attest_results_create(path, &p, NULL, &w), ATTEST_ERR_IO);
    assert_non_null(strstr(attest_last_error(), "notes.txt"));
}

/* The replay command names the file, the case and the candidate, quoting what a shell would
 * split. */
static void replay_command(void **state)
{
    (void)state;
    char buf[512];
    attest_results_replay_command("runs/r.h5", 17, "cpu-indexer", buf, sizeof buf);
    assert_string_equal(buf, "attest replay runs/r.h5 --case 17 --candidate cpu-indexer");
    attest_results_replay_command("my runs/it's.h5", 3, NULL, buf, sizeof buf);
    assert_string_equal(buf, "attest replay 'my runs/it'\\''s.h5' --case 3 --candidate NAME");
    attest_results_replay_command("r.h5", 1, "lib/x.so:cand", buf, 20);
    assert_int_equal(strlen(buf), 19); /* truncated, terminated */
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/attest-test-results-XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_round_trip),
        cmocka_unit_test(provenance_round_trip),
        cmocka_unit_test(rows_survive_reopen),
        cmocka_unit_test(flush_policy),
        cmocka_unit_test(bad_files_clean_errors),
        cmocka_unit_test(repro_round_trip),
        cmocka_unit_test(repro_failure_keeps_row),
        cmocka_unit_test(repro_limits),
        cmocka_unit_test(leftover_repro_dir),
        cmocka_unit_test(replay_command),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
