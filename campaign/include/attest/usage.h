/* attest: what every command-line verb and the campaign engine share when they read words a user
 * wrote (options, and the generator flags of a results file's job lines): exit statuses, one-line
 * usage errors and strict number parsing. */
#ifndef ATTEST_USAGE_H
#define ATTEST_USAGE_H

#include <stdint.h>

/* The process exit status of every verb: 0 success (every case passed), 1 a candidate failed,
 * 2 usage or input error. */
#define ATTEST_EXIT_OK 0
#define ATTEST_EXIT_FAILED 1
#define ATTEST_EXIT_USAGE 2

/* Prints "attest VERB: message" on stderr as one line and returns ATTEST_EXIT_USAGE. */
int attest_cli_usage_error(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Strict number parsing for options: the whole string must be a number in range. Return 0 on
 * success, -1 otherwise (the caller reports the option). Integers accept 0x hex. */
int attest_cli_parse_u64(const char *s, uint64_t *out);
int attest_cli_parse_i32(const char *s, int32_t min, int32_t max, int32_t *out);
int attest_cli_parse_double(const char *s, double min, double max, double *out);

/* Strict decimal parsing: digits only (no sign, space, suffix or 0x), no overflow. Returns 0 on
 * success, -1 otherwise. */
int attest_cli_parse_dec_u64(const char *s, uint64_t *out);

/* Prints "attest VERB: bad value for --OPTION: 'VALUE'"; returns ATTEST_EXIT_USAGE. */
int attest_cli_bad_value(const char *verb, const char *option, const char *value);

#endif /* ATTEST_USAGE_H */
