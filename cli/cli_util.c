#include <stdarg.h>
#include <stdio.h>

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
