/* assert_ok (assert_ok.h) names the failing call, its status and the library's message: a child
 * runs a cmocka test whose call fails, and the parent reads what it printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

static void failing_call(void **state)
{
    (void)state;
    assert_ok(attest_fail(ATTEST_ERR_IO, "results.h5: disk on fire"));
}

static void passing_call(void **state)
{
    (void)state;
    attest_clear_error();
    assert_ok(ATTEST_OK);
}

/* Runs `test` in a child with stdout and stderr into a pipe; returns its exit status. */
static int run_child(CMUnitTestFunction test, char *out, size_t cap)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        const struct CMUnitTest t[] = {cmocka_unit_test(test)};
        _exit(_cmocka_run_group_tests("child", t, 1, NULL, NULL) ? 1 : 0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fds[0], out + n, cap - 1 - n)) > 0) n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_failure_names_call_status_and_message(void **state)
{
    (void)state;
    char out[8192];
    assert_int_equal(run_child(failing_call, out, sizeof out), 1);
    assert_non_null(strstr(out, "attest_fail(ATTEST_ERR_IO, \"results.h5: disk on fire\")"));
    assert_non_null(strstr(out, "returned io (3): results.h5: disk on fire"));
    assert_non_null(strstr(out, "test_assert_ok.c:"));
}

static void test_ok_passes(void **state)
{
    (void)state;
    char out[8192];
    assert_int_equal(run_child(passing_call, out, sizeof out), 0);
    assert_null(strstr(out, "returned"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failure_names_call_status_and_message),
        cmocka_unit_test(test_ok_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
