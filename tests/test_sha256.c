/* SHA-256 (sha256.h) against known answers: the FIPS 180-4 examples (NIST's published digests
 * of "abc", the 448-bit message and one million 'a'), the empty message, and the lengths where
 * the padding takes a second block (digests as sha256sum prints them for those bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attest/sha256.h"

static void expect_hex(const void *data, size_t n, const char *want)
{
    char hex[ATTEST_SHA256_HEX_LEN + 1];
    memset(hex, 'x', sizeof hex);
    attest_sha256_hex(data, n, hex);
    assert_string_equal(hex, want);
}

static void test_fips_examples(void **state)
{
    (void)state;
    expect_hex("abc", 3,
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect_hex(two, strlen(two),
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *million = malloc(1000000);
    assert_non_null(million);
    memset(million, 'a', 1000000);
    expect_hex(million, 1000000,
               "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}

static void test_padding_boundaries(void **state)
{
    (void)state;
    static const struct {
        size_t n;
        const char *hex;
    } cases[] = {
        {0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
    };
    char a[128];
    memset(a, 'a', sizeof a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_hex(a, cases[i].n, cases[i].hex);
}

static void test_raw_digest(void **state)
{
    (void)state;
    uint8_t d[32];
    attest_sha256("abc", 3, d);
    assert_int_equal(d[0], 0xba);
    assert_int_equal(d[31], 0xad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_examples),
        cmocka_unit_test(test_padding_boundaries),
        cmocka_unit_test(test_raw_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
