/* The command line's shared vocabulary (usage.h): one-line usage errors and strict values. */
#include "attest/usage.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int attest_cli_usage_error(const char *verb, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line whatever the message quotes (a byte of a damaged file, HDF5's or a JSON parser's
     * text): control characters would break the line or drive the terminal. */
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f) *p = '?';
    fprintf(stderr, "attest %s: %s\n", verb, msg);
    return ATTEST_EXIT_USAGE;
}

int attest_cli_parse_u64(const char *s, uint64_t *out)
{
    if (s == NULL || *s == '\0' || *s == '-' || *s == '+') return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

int attest_cli_parse_dec_u64(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9') return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

int attest_cli_parse_i32(const char *s, int32_t min, int32_t max, int32_t *out)
{
    if (s == NULL || *s == '\0') return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno != 0 || *end != '\0' || v < min || v > max) return -1;
    *out = (int32_t)v;
    return 0;
}

int attest_cli_parse_double(const char *s, double min, double max, double *out)
{
    if (s == NULL || *s == '\0') return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= min && v <= max)) return -1;
    *out = v;
    return 0;
}

int attest_cli_bad_value(const char *verb, const char *option, const char *value)
{
    return attest_cli_usage_error(verb, "bad value for --%s: '%s'", option, value);
}
