/* assert_ok(expr): fails the test when an attest call does not return ATTEST_OK, naming the
 * call, the status and the one-line message the library recorded, instead of cmocka's bare
 * "0x5 != 0x0". Include after <cmocka.h>. */
#ifndef ATTEST_TESTS_ASSERT_OK_H
#define ATTEST_TESTS_ASSERT_OK_H

#include "attest/status.h"

static inline void attest_assert_ok_at(attest_status st, const char *call, const char *file,
                                       int line)
{
    if (st == ATTEST_OK) return;
    print_error("%s returned %s (%d): %s\n", call, attest_status_name(st), (int)st,
                attest_last_error()[0] ? attest_last_error() : "(no message recorded)");
    _fail(file, line);
}

#define assert_ok(expr) attest_assert_ok_at((expr), #expr, __FILE__, __LINE__)

#endif /* ATTEST_TESTS_ASSERT_OK_H */
