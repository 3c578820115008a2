/* attest CLI: one function per verb, each in cli/cmd_<verb>.c. Each returns the process exit
 * status: 0 success (every case passed), 1 a candidate failed, 2 usage or input error. */
#ifndef ATTEST_CLI_COMMANDS_H
#define ATTEST_CLI_COMMANDS_H

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

/* Prints "attest VERB: message" on stderr as one line and returns ATTEST_EXIT_USAGE. */
int attest_cli_usage_error(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
