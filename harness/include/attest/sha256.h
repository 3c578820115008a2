/* attest: SHA-256 (FIPS 180-4), for content hashes a user can check with `sha256sum`. */
#ifndef ATTEST_SHA256_H
#define ATTEST_SHA256_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTEST_SHA256_HEX_LEN 64 /* hex digits of a digest (the string holds one more, a NUL) */

/* The digest of data[0..n). */
void attest_sha256(const void *data, size_t n, uint8_t digest[32]);

/* The digest as 64 lowercase hex digits and a NUL, as `sha256sum` prints it. */
void attest_sha256_hex(const void *data, size_t n, char hex[ATTEST_SHA256_HEX_LEN + 1]);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_SHA256_H */
