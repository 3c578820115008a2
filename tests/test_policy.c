/* Tests of the tolerance policy: the embedded default, lookups, every schema error (status, field
 * and file:line:column in the message) and the content hash. Expected hashes are what sha256sum
 * prints for the texts' bytes; expected positions were counted by hand from the texts below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/policy.h"

/* A valid two-entry policy; line numbers matter to the error tests. */
static const char BASE[] =
    "{\n"
    "  \"schema\": 1,\n"
    "  \"name\": \"t\",\n"
    "  \"version\": \"7\",\n"
    "  \"entries\": [\n"
    "    {\"kernel\": \"mla-decode\", \"output\": \"out_bf16\", \"atol\": 0.001, \"rtol\": 0.5,\n"
    "     \"max_fail_fraction\": 0, \"cos_diff_max\": 5e-6, \"nmse_max\": null,\n"
    "     \"max_code_distance\": 2, \"vacuity_factor\": 10, \"source\": \"test\"},\n"
    "    {\"kernel\": \"indexer\", \"output\": \"logits\", \"atol\": 1e-6, \"rtol\": 2e-5,\n"
    "     \"max_fail_fraction\": 0.25, \"cos_diff_max\": 1e-7, \"nmse_max\": 1e-5,\n"
    "     \"max_code_distance\": null, \"vacuity_factor\": 0, \"topk_min_recall\": 1,\n"
    "     \"source\": \"test2\"}\n"
    "  ]\n"
    "}\n";

/* SHA-256 of BASE, and of BASE with its first space turned into a tab, as sha256sum prints them
 * for those bytes. */
#define BASE_HASH "7b2222d1307a2e32e0e415d51176afbf612103bb3f476b4b60c12919291ff925"
#define BASE_TAB_HASH "e90ad84b51c724620fbc99a25036bf53f97aaec4d97aed685d8b164282556e1f"

/* Returns a malloc'ed copy of BASE with the first `from` replaced by `to`. */
static char *variant(const char *from, const char *to)
{
    const char *at = strstr(BASE, from);
    assert_non_null(at);
    size_t pre = (size_t)(at - BASE), flen = strlen(from), tlen = strlen(to);
    char *out = malloc(sizeof BASE + tlen);
    assert_non_null(out);
    memcpy(out, BASE, pre);
    memcpy(out + pre, to, tlen);
    strcpy(out + pre + tlen, at + flen);
    return out;
}

/* Parses `text` as "t.json" and checks FORMAT with every `needle` (NULL-terminated) in the message. */
static void expect_format_error(const char *text, size_t len, ...)
{
    attest_policy *p = (attest_policy *)0x1;
    attest_clear_error();
    assert_int_equal(attest_policy_parse(text, len, "t.json", &p), ATTEST_ERR_FORMAT);
    assert_null(p);
    const char *msg = attest_last_error();
    va_list ap;
    va_start(ap, len);
    for (const char *needle = va_arg(ap, const char *); needle; needle = va_arg(ap, const char *)) {
        if (strstr(msg, needle) == NULL) fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
    }
    va_end(ap);
}

static void expect_variant_error(const char *from, const char *to, const char *n1, const char *n2,
                                 const char *n3)
{
    char *text = variant(from, to);
    expect_format_error(text, strlen(text), n1, n2, n3, (const char *)NULL);
    free(text);
}

/* The embedded default parses: computed bounds in the float32 model, and the upstream cosine
 * figures (FlashMLA, DeepGEMM). */
static void test_default_loads(void **state)
{
    (void)state;
    attest_policy *p = NULL;
    assert_ok(attest_policy_default(&p));
    assert_non_null(p);
    assert_string_equal(attest_policy_name(p), "default");
    assert_string_equal(attest_policy_origin(p), "<embedded>");
    assert_int_equal(strlen(attest_policy_hash(p)), 64);
    assert_true(attest_policy_num_entries(p) >= 3);

    attest_tolerance t;
    assert_ok(attest_policy_lookup(p, ATTEST_KERNEL_MLA_DECODE, "out_bf16", &t));
    assert_true(t.bound_factor == 1);
    assert_true(t.model.u_accum == 0x1p-24 && t.model.u_probs == 0x1p-24 && t.model.u_kv == 0);
    assert_true(t.cos_diff_max == 5e-6);
    assert_true(t.max_fail_fraction == 0);
    assert_true(strlen(t.source) > 0);
    assert_ok(attest_policy_lookup(p, ATTEST_KERNEL_MLA_DECODE, "lse", &t));
    assert_true(t.bound_factor == 1);
    assert_true(t.cos_diff_max == 1e-7);
    assert_ok(attest_policy_lookup(p, ATTEST_KERNEL_INDEXER, "logits", &t));
    assert_true(t.bound_factor == 1 && t.model.u_accum == 0x1p-24);
    assert_true(t.cos_diff_max == 5e-6);
    assert_true(t.topk_min_recall == 1.0);

    /* Shared: a second call returns the same object and freeing it is ignored. */
    attest_policy *again = NULL;
    attest_policy_free(p);
    assert_ok(attest_policy_default(&again));
    assert_ptr_equal(again, p);
    assert_string_equal(attest_policy_name(again), "default");
}

/* The embedded text is byte-for-byte policies/default.json. */
static void test_default_matches_file(void **state)
{
    (void)state;
    const char *src = getenv("ATTEST_SOURCE_DIR");
    if (src == NULL) skip();
    char path[1024];
    snprintf(path, sizeof path, "%s/policies/default.json", src);
    attest_policy *file = NULL, *def = NULL;
    assert_ok(attest_policy_load(path, &file));
    assert_ok(attest_policy_default(&def));
    assert_string_equal(attest_policy_text(file), attest_policy_text(def));
    assert_string_equal(attest_policy_hash(file), attest_policy_hash(def));
    assert_string_equal(attest_policy_origin(file), path);
    attest_policy_free(file);
}

/* Lookup returns each entry's numbers; null gates read as off (-1); absent optionals default. */
static void test_lookup(void **state)
{
    (void)state;
    attest_policy *p = NULL;
    assert_ok(attest_policy_parse(BASE, strlen(BASE), "t.json", &p));
    assert_string_equal(attest_policy_name(p), "t");
    assert_string_equal(attest_policy_version(p), "7");
    assert_int_equal(attest_policy_num_entries(p), 2);
    attest_tolerance t;
    assert_ok(attest_policy_lookup(p, ATTEST_KERNEL_MLA_DECODE, "out_bf16", &t));
    assert_true(t.atol == 0.001 && t.rtol == 0.5 && t.cos_diff_max == 5e-6);
    assert_true(t.nmse_max == -1 && t.max_code_distance == 2 && t.vacuity_factor == 10);
    assert_true(t.topk_min_recall == -1 && t.topk_tie_atol == 0 && t.atol_ref_scale == 0);
    assert_string_equal(t.source, "test");
    assert_ok(attest_policy_lookup(p, ATTEST_KERNEL_INDEXER, "logits", &t));
    assert_true(t.max_fail_fraction == 0.25 && t.nmse_max == 1e-5 && t.max_code_distance == -1);
    assert_true(t.topk_min_recall == 1);
    assert_string_equal(t.source, "test2");
    assert_int_equal(attest_policy_lookup(p, ATTEST_KERNEL_MLA_DECODE, "lse", &t),
                     ATTEST_ERR_NOT_FOUND);
    assert_non_null(strstr(attest_last_error(), "lse"));

    attest_kernel k;
    const char *out = NULL;
    assert_ok(attest_policy_entry_at(p, 1, &k, &out, NULL));
    assert_int_equal(k, ATTEST_KERNEL_INDEXER);
    assert_string_equal(out, "logits");
    assert_int_equal(attest_policy_entry_at(p, 2, &k, &out, NULL), ATTEST_ERR_NOT_FOUND);
    assert_string_equal(attest_policy_text(p), BASE);
    attest_policy_free(p);
}

/* Truncated JSON: jansson's syntax error, with the origin and a line. */
static void test_truncated(void **state)
{
    (void)state;
    expect_format_error(BASE, strlen(BASE) / 2, "t.json:", (const char *)NULL);
    expect_format_error(BASE, strlen(BASE) - 3, "t.json:13:", (const char *)NULL);
    expect_format_error("", 0, "t.json:", (const char *)NULL);
}

/* An unknown key is named, at its exact line and column. */
static void test_unknown_key(void **state)
{
    (void)state;
    /* "atoll" starts at column 80 of line 6 (after the inserted ", "). */
    expect_variant_error("\"rtol\": 0.5,", "\"rtol\": 0.5, \"atoll\": 1,", "t.json:6:80:",
                         "entries[0]", "\"atoll\"");
    expect_variant_error("\"name\": \"t\",", "\"name\": \"t\", \"nme\": 1,", "t.json:3:16:",
                         "\"nme\"", "unknown");
}

/* Negative tolerances are refused, naming the field. */
static void test_negative(void **state)
{
    (void)state;
    expect_variant_error("\"atol\": 0.001", "\"atol\": -0.001", "t.json:6:", "entries[0].atol",
                         "negative");
    expect_variant_error("\"nmse_max\": 1e-5", "\"nmse_max\": -1", "t.json:10:",
                         "entries[1].nmse_max", "negative");
    expect_variant_error("\"max_fail_fraction\": 0.25", "\"max_fail_fraction\": 1.5", "t.json:10:",
                         "entries[1].max_fail_fraction", "[0, 1]");
}

/* A missing required field is named, located at its entry. */
static void test_missing(void **state)
{
    (void)state;
    expect_variant_error("\"cos_diff_max\": 1e-7, ", "", "t.json:9:5:", "entries[1].cos_diff_max",
                         "missing");
    expect_variant_error(", \"source\": \"test\"", "", "t.json:6:5:", "entries[0].source",
                         "missing");
    expect_variant_error("\"version\": \"7\",", "", "t.json:1:1:", "version", "missing");
}

/* Computed bounds: bound_factor with format names replaces atol/rtol; without it atol, rtol and
 * vacuity_factor are required; an unknown format is named. */
static void test_bound_keys(void **state)
{
    (void)state;
    char *text = variant("\"atol\": 0.001, \"rtol\": 0.5,",
                         "\"bound_factor\": 2, \"accumulation\": \"fp32\", "
                         "\"probabilities\": \"bf16\", \"dequantized_kv\": \"bf16\",");
    attest_policy *p = NULL;
    assert_ok(attest_policy_parse(text, strlen(text), "t.json", &p));
    attest_tolerance t;
    assert_ok(attest_policy_lookup(p, ATTEST_KERNEL_MLA_DECODE, "out_bf16", &t));
    assert_true(t.bound_factor == 2);
    assert_true(t.model.u_accum == 0x1p-24 && t.model.u_probs == 0x1p-8 && t.model.u_kv == 0x1p-8);
    /* An entry without bound_factor keeps the fixed gate: bound_factor < 0. */
    assert_ok(attest_policy_lookup(p, ATTEST_KERNEL_INDEXER, "logits", &t));
    assert_true(t.bound_factor < 0 && t.rtol == 2e-5);
    attest_policy_free(p);
    free(text);
    expect_variant_error("\"atol\": 0.001, \"rtol\": 0.5,",
                         "\"bound_factor\": 1, \"accumulation\": \"fp31\",", "t.json:",
                         "entries[0].accumulation", "unknown format");
    expect_variant_error("\"atol\": 0.001, ", "", "t.json:", "entries[0].atol",
                         "no bound_factor");
    expect_variant_error("\"atol\": 0.001, \"rtol\": 0.5,", "\"bound_factor\": -1,", "t.json:",
                         "entries[0].bound_factor", "negative");
}

/* Two entries for one (kernel, output), and a repeated JSON key, are refused. */
static void test_duplicates(void **state)
{
    (void)state;
    expect_variant_error("\"kernel\": \"indexer\", \"output\": \"logits\"",
                         "\"kernel\": \"mla-decode\", \"output\": \"out_bf16\"", "t.json:9:",
                         "entries[1].output", "duplicate");
    expect_variant_error("\"rtol\": 0.5,", "\"rtol\": 0.5, \"atol\": 0.002,", "t.json:6:",
                         "atol", "duplicate");
}

/* Wrong types, unknown kernels, outputs a kernel does not have, schema versions, empty lists. */
static void test_other_schema_errors(void **state)
{
    (void)state;
    expect_variant_error("\"rtol\": 0.5", "\"rtol\": \"0.5\"", "t.json:6:", "entries[0].rtol",
                         "number");
    expect_variant_error("\"indexer\"", "\"indexr\"", "t.json:9:", "entries[1].kernel", "unknown");
    expect_variant_error("\"output\": \"logits\"", "\"output\": \"lse\"", "t.json:9:",
                         "entries[1].output", "no output");
    expect_variant_error("\"schema\": 1", "\"schema\": 2", "t.json:2:3:", "schema", "version");
    expect_variant_error("\"source\": \"test\"", "\"source\": \"\"", "t.json:8:", "source",
                         "empty");
    const char *empty = "{\"schema\":1,\"name\":\"e\",\"version\":\"1\",\"entries\":[]}";
    expect_format_error(empty, strlen(empty), "t.json:1:", "entries", (const char *)NULL);
    const char *array = "[1, 2]";
    expect_format_error(array, strlen(array), "t.json:1:1:", "object", (const char *)NULL);
}

/* The hash is SHA-256 of the exact bytes: stable, and one changed byte changes it. */
static void test_hash(void **state)
{
    (void)state;
    attest_policy *a = NULL, *b = NULL, *c = NULL;
    assert_ok(attest_policy_parse(BASE, strlen(BASE), "a", &a));
    assert_ok(attest_policy_parse(BASE, strlen(BASE), "b", &b));
    assert_string_equal(attest_policy_hash(a), BASE_HASH);
    assert_string_equal(attest_policy_hash(b), BASE_HASH);
    char *tab = variant(" ", "\t"); /* same JSON, one byte different */
    assert_ok(attest_policy_parse(tab, strlen(tab), "c", &c));
    assert_string_equal(attest_policy_hash(c), BASE_TAB_HASH);
    assert_string_not_equal(attest_policy_hash(a), attest_policy_hash(c));
    free(tab);
    attest_policy_free(a);
    attest_policy_free(b);
    attest_policy_free(c);
}

/* Files: a written file loads with its path as origin; a missing one is an I/O error. */
static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/attest_policy_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(BASE, 1, strlen(BASE), f), strlen(BASE));
    assert_int_equal(fclose(f), 0);
    attest_policy *p = NULL;
    assert_ok(attest_policy_load(path, &p));
    assert_string_equal(attest_policy_origin(p), path);
    assert_string_equal(attest_policy_hash(p), BASE_HASH);
    attest_policy_free(p);
    assert_int_equal(remove(path), 0);
    assert_int_equal(attest_policy_load(path, &p), ATTEST_ERR_IO);
    assert_non_null(strstr(attest_last_error(), path));
}

/* policies/strict.json loads and no bound of it is looser than the default's. */
static void test_strict_is_tighter(void **state)
{
    (void)state;
    const char *src = getenv("ATTEST_SOURCE_DIR");
    if (src == NULL) skip();
    char path[1024];
    snprintf(path, sizeof path, "%s/policies/strict.json", src);
    attest_policy *strict = NULL, *def = NULL;
    assert_ok(attest_policy_load(path, &strict));
    assert_ok(attest_policy_default(&def));
    assert_string_equal(attest_policy_name(strict), "strict");
    for (size_t i = 0; i < attest_policy_num_entries(strict); ++i) {
        attest_kernel k;
        const char *out;
        attest_tolerance s, d;
        assert_ok(attest_policy_entry_at(strict, i, &k, &out, &s));
        assert_ok(attest_policy_lookup(def, k, out, &d));
        /* strict keeps fixed atol/rtol bounds (measured, not derived); the default derives
         * them, so only the gates both share are compared. */
        assert_true(s.bound_factor < 0 && d.bound_factor >= 0);
        assert_true(s.cos_diff_max <= d.cos_diff_max);
        assert_true(s.max_fail_fraction <= d.max_fail_fraction);
        assert_true(d.nmse_max < 0 || (s.nmse_max >= 0 && s.nmse_max <= d.nmse_max));
        assert_true(d.max_code_distance < 0 ||
                    (s.max_code_distance >= 0 && s.max_code_distance <= d.max_code_distance));
        assert_true(s.topk_min_recall >= d.topk_min_recall);
    }
    attest_policy_free(strict);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_loads),   cmocka_unit_test(test_default_matches_file),
        cmocka_unit_test(test_lookup),          cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_unknown_key),     cmocka_unit_test(test_negative),
        cmocka_unit_test(test_missing),         cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_bound_keys),
        cmocka_unit_test(test_other_schema_errors), cmocka_unit_test(test_hash),
        cmocka_unit_test(test_load_file),       cmocka_unit_test(test_strict_is_tighter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
