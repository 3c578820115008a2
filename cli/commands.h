/* attest CLI: one function per verb, each in cli/cmd_<verb>.c. Each returns the process exit
 * status: 0 success (every case passed), 1 a candidate failed, 2 usage or input error. */
#ifndef ATTEST_CLI_COMMANDS_H
#define ATTEST_CLI_COMMANDS_H

#include <stdint.h>

#define ATTEST_EXIT_OK 0
#define ATTEST_EXIT_FAILED 1
#define ATTEST_EXIT_USAGE 2

int attest_cmd_layout(int argc, char **argv);
int attest_cmd_reference(int argc, char **argv);
int attest_cmd_run(int argc, char **argv);
int attest_cmd_campaign(int argc, char **argv);
int attest_cmd_show(int argc, char **argv);
int attest_cmd_replay(int argc, char **argv);
int attest_cmd_list(int argc, char **argv);
int attest_cmd_check(int argc, char **argv);
int attest_cmd_fixture(int argc, char **argv);

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

/* Returns 1 when progress lines suit stderr: a terminal, and not under CI (env CI set). */
int attest_cli_interactive(void);

#endif
