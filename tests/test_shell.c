/* Shell quoting (attest/shell.h): printed command lines read back exactly by /bin/sh, quotes
 * inside arguments included (the provenance command line used to print 'it's' unbalanced). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "attest/clock.h"
#include "attest/shell.h"

static void quoted(const char *arg, const char *want)
{
    char buf[128];
    size_t used = 0;
    buf[0] = '\0';
    attest_shell_append_arg(buf, sizeof buf, &used, arg);
    assert_string_equal(buf, want);
    assert_int_equal(used, strlen(want));
}

/* Plain arguments stay as they are; anything else is single-quoted, ' as '\''. */
static void test_quoting(void **state)
{
    (void)state;
    quoted("--case-seed", "--case-seed");
    quoted("path/lib.so:NAME", "path/lib.so:NAME");
    quoted("b=4,layout=mla-v4", "b=4,layout=mla-v4");
    quoted("", "''");
    quoted("a b", "'a b'");
    quoted("it's", "'it'\\''s'");
    quoted("$HOME", "'$HOME'");
}

/* The shell reads what was printed back as the same argument (round trip through /bin/sh). */
static void test_round_trip(void **state)
{
    (void)state;
    static const char *const args[] = {"it's", "a b\tc", "$(touch nope)", "''", "\\\"", "x"};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        char cmd[512] = "printf %s ";
        size_t used = strlen(cmd);
        attest_shell_append_arg(cmd, sizeof cmd, &used, args[i]);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        char back[128] = "";
        size_t n = fread(back, 1, sizeof back - 1, p);
        back[n] = '\0';
        assert_int_equal(pclose(p), 0);
        assert_string_equal(back, args[i]);
    }
}

/* Truncation keeps the buffer terminated and never writes past cap. */
static void test_truncation(void **state)
{
    (void)state;
    char buf[8];
    memset(buf, 'Z', sizeof buf);
    size_t used = 0;
    attest_shell_append_arg(buf, 6, &used, "a long argument");
    assert_true(used < 6);
    assert_int_equal(buf[used], '\0');
    assert_int_equal(buf[6], 'Z');
}

/* The monotonic clock never goes back. */
static void test_clock(void **state)
{
    (void)state;
    double a = attest_monotonic_seconds(), b = attest_monotonic_seconds();
    assert_true(a > 0 && b >= a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quoting),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
