#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "commands.h"

int attest_cli_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "attest %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
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

int attest_cli_interactive(void)
{
    const char *ci = getenv("CI");
    return isatty(STDERR_FILENO) && (ci == NULL || *ci == '\0');
}
