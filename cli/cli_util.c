/* Option parsing stays getopt_long: each verb's options are one table (the generator's entries
 * shared through gen_options.c), its behaviour is what users of other GNU tools expect, and it is
 * in libc, so the executable needs no argument-parsing library. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/casefile.h"
#include "attest/files.h"
#include "commands.h"

int attest_cli_interactive(void)
{
    const char *ci = getenv("CI");
    return isatty(STDERR_FILENO) && (ci == NULL || *ci == '\0');
}

int attest_cli_getopt_error(const char *verb, int ch, char **argv)
{
    if (ch == ':') return attest_cli_usage_error(verb, "option %s needs a value", argv[optind - 1]);
    return attest_cli_usage_error(verb, "unknown option '%s' (attest %s --help)", argv[optind - 1],
                                  verb);
}

int attest_cli_option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0') return 0;
    if (*i + 1 >= argc) return -1;
    *value = argv[++*i];
    return 1;
}

int attest_cli_check_output(const char *verb, const char *path, int kind, int force,
                            const char *const *inputs, size_t num_inputs)
{
    if (attest_output_check(path, (attest_output_kind)kind, force, inputs, num_inputs) !=
        ATTEST_OK)
        return attest_cli_usage_error(verb, "%s", attest_last_error());
    return -1;
}

int attest_cli_max_case_mb(const char *verb, const char *value)
{
    uint64_t mb = 0;
    if (attest_cli_parse_u64(value, &mb) || mb == 0 || mb > (1ull << 24))
        return attest_cli_bad_value(verb, "max-case-mb", value);
    attest_casefile_set_max_bytes((unsigned long long)mb << 20);
    return -1;
}
