/* Tests of recorded outputs in case files (attest run --save-failures): the recorded-run
 * attributes round-trip, a case without them is NOT_FOUND (old files still load as cases), and
 * attest_casefile_save_new never replaces an existing path and leaves nothing behind when the
 * write fails. */
#include <sys/stat.h>
#include <unistd.h>

#include "casefile_fixtures.h"
#include "assert_ok.h"

static void save_recorded(const char *path, const attest_case *c, const attest_casefile_recorded *r,
                          int *existed)
{
    const attest_tensor *logits = attest_case_tensor_const(c, "logits");
    assert_non_null(logits);
    static float values[1 << 16];
    assert_true(logits->nbytes <= sizeof values);
    for (size_t i = 0; i < logits->nbytes / sizeof(float); i++) values[i] = (float)i * 0.5f;
    attest_casefile_output out = attest_casefile_output_of(logits);
    out.data = values;
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.candidate = &out;
    x.num_candidate = 1;
    x.candidate_name = "mutant-x";
    x.recorded = r;
    attest_status st = attest_casefile_save_new(path, c, &x, existed);
    if (st != ATTEST_OK) fail_msg("save_new: %s", attest_last_error());
}

/* What the run recorded is read back; the recorded logits load as candidate/logits. */
static void recorded_round_trip(void **state)
{
    (void)state;
    attest_case c;
    make_indexer(&c);
    const char *path = tmp_path("rec.h5");
    (void)remove(path);
    attest_casefile_recorded r = {.verdict = "MISMATCH",
                                  .failed_gates = "element+cosine",
                                  .message = "",
                                  .conventions = "masking=-inf,relu_nan=to_zero",
                                  .policy_name = "default",
                                  .policy_hash = "ab12",
                                  .policy_text = "{\"name\": \"x\"}"};
    int existed = -1;
    save_recorded(path, &c, &r, &existed);
    assert_int_equal(existed, 0);
    attest_casefile_recorded_info info;
    assert_ok(attest_casefile_load_recorded(path, NULL, &info));
    assert_string_equal(info.candidate, "mutant-x");
    assert_string_equal(info.verdict, "MISMATCH");
    assert_string_equal(info.failed_gates, "element+cosine");
    assert_string_equal(info.conventions, "masking=-inf,relu_nan=to_zero");
    assert_string_equal(info.policy_name, "default");
    assert_string_equal(info.policy_hash, "ab12");
    assert_non_null(info.policy_text);
    assert_string_equal(info.policy_text, "{\"name\": \"x\"}");
    attest_casefile_recorded_free(&info);
    attest_stored_tensor t;
    assert_ok(attest_casefile_load_output(path, NULL, "candidate/logits", &t));
    assert_true(attest_stored_tensor_matches(&t, attest_case_tensor_const(&c, "logits")));
    assert_true(((const float *)t.data)[3] == 1.5f);
    attest_stored_tensor_free(&t);
    attest_case back; /* still an ordinary case file */
    assert_ok(attest_casefile_load(path, NULL, &back));
    attest_case_free(&back);
    attest_case_free(&c);
}

/* Candidate outputs without the recorded marking, and a case with no candidate/ at all, are
 * NOT_FOUND with the one line the CLI prints. */
static void unmarked_is_not_found(void **state)
{
    (void)state;
    attest_case c;
    make_indexer(&c);
    const char *path = tmp_path("plain.h5");
    assert_ok(attest_casefile_save(path, NULL, &c, NULL));
    attest_casefile_recorded_info info;
    assert_int_equal(attest_casefile_load_recorded(path, NULL, &info), ATTEST_ERR_NOT_FOUND);
    assert_non_null(strstr(attest_last_error(), "no recorded outputs"));
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.candidate_name = "someone";
    assert_ok(attest_casefile_save(path, NULL, &c, &x));
    assert_int_equal(attest_casefile_load_recorded(path, NULL, &info), ATTEST_ERR_NOT_FOUND);
    attest_case_free(&c);
}

/* An existing path is kept byte for byte, and reported. */
static void save_new_keeps_existing(void **state)
{
    (void)state;
    attest_case c;
    make_indexer(&c);
    const char *path = tmp_path("taken.h5");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("mine", f);
    fclose(f);
    attest_casefile_recorded r = {.verdict = "MISMATCH"};
    int existed = 0;
    save_recorded(path, &c, &r, &existed);
    assert_int_equal(existed, 1);
    char buf[16] = "";
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(buf, 1, sizeof buf - 1, f), 4);
    fclose(f);
    assert_string_equal(buf, "mine");
    attest_case_free(&c);
}

/* A directory that cannot be written: an IO error naming the path, and no file left. */
static void save_new_reports_failure(void **state)
{
    (void)state;
    attest_case c;
    make_indexer(&c);
    const char *path = tmp_path("no-such-dir/x.h5");
    int existed = 0;
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    assert_int_equal(attest_casefile_save_new(path, &c, &x, &existed), ATTEST_ERR_IO);
    assert_non_null(strstr(attest_last_error(), "no-such-dir/x.h5"));
    struct stat sb;
    assert_int_not_equal(lstat(path, &sb), 0);
    attest_case_free(&c);
}

int main(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recorded_round_trip),
        cmocka_unit_test(unmarked_is_not_found),
        cmocka_unit_test(save_new_keeps_existing),
        cmocka_unit_test(save_new_reports_failure),
    };
    return cmocka_run_group_tests(tests, casefile_setup, casefile_teardown);
}
