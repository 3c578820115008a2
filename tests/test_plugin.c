/* Tests of plugin loading (attest_plugin_load) and candidate validation, with a fixture plugin
 * built by tests/runner.cmake (runner_plugin_fixture.c). */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/runner.h"

static int run_nothing(void *ctx, const attest_kernel_args *a)
{
    (void)ctx;
    (void)a;
    return 0;
}

static const attest_candidate valid = {
    .abi_version = ATTEST_CANDIDATE_ABI_VERSION,
    .struct_size = sizeof(attest_candidate),
    .name = "valid",
    .kernel = ATTEST_KERNEL_MLA_DECODE,
    .domain = ATTEST_DOMAIN_DEVICE,
    .run = run_nothing,
};

static void expect_invalid(const attest_candidate *c, const char *needle)
{
    assert_int_equal(attest_candidate_validate(c), ATTEST_ERR_FORMAT);
    if (!strstr(attest_last_error(), needle))
        fail_msg("message '%s' lacks '%s'", attest_last_error(), needle);
}

/* Each malformed field is refused with a message naming it. */
static void test_validate(void **state)
{
    (void)state;
    assert_ok(attest_candidate_validate(&valid));
    assert_int_equal(attest_candidate_validate(NULL), ATTEST_ERR_INVALID_ARGUMENT);
    attest_candidate c = valid;
    c.abi_version = ATTEST_CANDIDATE_ABI_VERSION + 1;
    expect_invalid(&c, "ABI version 3");
    c = valid;
    c.struct_size = 16;
    expect_invalid(&c, "struct_size 16");
    c = valid;
    c.name = "";
    expect_invalid(&c, "no name");
    c = valid;
    c.kernel = (attest_kernel)9;
    expect_invalid(&c, "unknown kernel family 9");
    c = valid;
    c.domain = (attest_memory_domain)4;
    expect_invalid(&c, "memory domain 4");
    c = valid;
    c.conventions.masking = (attest_masking)7;
    expect_invalid(&c, "masking");
    c = valid;
    c.run = NULL;
    expect_invalid(&c, "'valid' has no run function");
}

static int loaded_here(void)
{
    void *h = dlopen(ATTEST_TEST_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

static void one_indexer_case(attest_case *cs, attest_kernel_args *args)
{
    memset(cs, 0, sizeof *cs);
    cs->kernel = ATTEST_KERNEL_INDEXER;
    cs->params.indexer = (attest_indexer_params){1, 1, 1, 128, 1, 1, 8, ATTEST_MASK_NEG_INF, 0,
                                                 ATTEST_TOPK_BY_SCORE, ATTEST_RELU_NAN_TO_ZERO};
    assert_ok(attest_case_define_tensors(cs, 0));
    assert_ok(attest_case_alloc_heap(cs));
    assert_ok(attest_case_args(cs, args));
}

/* Loading a plugin candidate leaves the library out of the caller's process (a corrupt library
 * can damage whatever process maps it): its declared fields come from the probe child, and the
 * library is loaded by the (forked) process that first calls one of its functions. */
static void test_plugin_not_loaded_here(void **state)
{
    (void)state;
    const attest_candidate *c = NULL;
    assert_ok(attest_plugin_load(ATTEST_TEST_PLUGIN_PATH ":fixture-good", &c));
    assert_false(loaded_here());
    assert_string_equal(c->name, "fixture-good");
    assert_string_equal(c->description, "test plugin candidate");
    assert_int_equal(c->kernel, ATTEST_KERNEL_INDEXER);
    assert_int_equal(c->domain, ATTEST_DOMAIN_HOST);
    assert_ok(attest_candidate_validate(c));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        attest_case cs;
        attest_kernel_args args;
        one_indexer_case(&cs, &args);
        void *ctx = NULL;
        int ok = c->init(&ctx) == 0 && c->supports(ctx, &args) == 1 && c->run(ctx, &args) == 0 &&
                 args.u.indexer.logits[7] == 7.0f && loaded_here();
        c->fini(ctx);
        _exit(ok ? 0 : 1);
    }
    int wstatus = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    assert_false(loaded_here());
}

/* A plugin candidate loads by name, runs, and stays loaded. */
static void test_plugin_good(void **state)
{
    (void)state;
    const attest_candidate *c = NULL;
    assert_ok(attest_plugin_load(ATTEST_TEST_PLUGIN_PATH ":fixture-good", &c));
    assert_non_null(c);
    assert_string_equal(c->name, "fixture-good");
    attest_case cs;
    attest_kernel_args args;
    one_indexer_case(&cs, &args);
    assert_int_equal(c->run(NULL, &args), 0);
    assert_true(loaded_here()); /* a direct call loads it here */
    assert_true(args.u.indexer.logits[7] == 7.0f);
    attest_case_free(&cs);

    /* A bare file name is looked up in the working directory, not the library path. */
    char dir[PATH_MAX], cwd[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", ATTEST_TEST_PLUGIN_PATH);
    char *slash = strrchr(dir, '/');
    assert_non_null(slash);
    *slash = '\0';
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    char spec[PATH_MAX + 32];
    snprintf(spec, sizeof spec, "%s:fixture-good", slash + 1);
    const attest_candidate *again = NULL;
    attest_status st = attest_plugin_load(spec, &again);
    assert_int_equal(chdir(cwd), 0);
    assert_ok(st);
    assert_ptr_equal(again, c);
}

static void expect_load_error(const char *spec, attest_status want, const char *needle)
{
    const attest_candidate *c = &valid;
    attest_status st = attest_plugin_load(spec, &c);
    if (st != want)
        fail_msg("%s: status %s, expected %s (%s)", spec, attest_status_name(st),
                 attest_status_name(want), attest_last_error());
    assert_null(c);
    if (!strstr(attest_last_error(), needle))
        fail_msg("%s: message '%s' lacks '%s'", spec, attest_last_error(), needle);
}

/* Every way a plugin spec can fail gives a one-line error naming the problem. */
static void test_plugin_errors(void **state)
{
    (void)state;
    expect_load_error(ATTEST_TEST_PLUGIN_PATH ":no-such", ATTEST_ERR_NOT_FOUND,
                      "has no candidate 'no-such' (it has: fixture-good, fixture-old-abi)");
    expect_load_error(ATTEST_TEST_PLUGIN_PATH ":fixture-old-abi", ATTEST_ERR_FORMAT,
                      "ABI version 100");
    expect_load_error("/no/such/dir/libx.so:x", ATTEST_ERR_NOT_FOUND, "cannot be loaded");
    expect_load_error("libc.so.6:x", ATTEST_ERR_FORMAT, "does not export attest_plugin_candidates");
    expect_load_error(ATTEST_TEST_PLUGIN_PATH, ATTEST_ERR_INVALID_ARGUMENT, "path/libfoo.so:NAME");
    expect_load_error("libx.so:", ATTEST_ERR_INVALID_ARGUMENT, "path/libfoo.so:NAME");
    for (const char *m = attest_last_error(); *m; m++) assert_true(*m != '\n');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_plugin_not_loaded_here),
        cmocka_unit_test(test_plugin_good),
        cmocka_unit_test(test_plugin_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
