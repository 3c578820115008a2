/* attest CLI: the options the run-like verbs share (attest run and its top-k, pipeline and
 * baseline paths, attest fuzz, attest fixture make): one getopt_long entry per option, one parse
 * of each value into one struct, and so one spelling of each "bad value" message. A verb lists
 * in its own table the entries it accepts (an option it does not list stays an unknown option
 * there) and keeps its own usage text, defaults and options; the generator bounds
 * (attest/gen_options.h) are parsed here too, for the verbs that list them. */
#ifndef ATTEST_CLI_RUN_OPTIONS_H
#define ATTEST_CLI_RUN_OPTIONS_H

#include <getopt.h>
#include <stdint.h>

#include "attest/gen_options.h"

/* getopt_long values of the options: above a verb's own (from 256), below the generator
 * bounds' (from 512). */
enum {
    ATTEST_CLI_RUN_CANDIDATE = 384, ATTEST_CLI_RUN_BASELINE, ATTEST_CLI_RUN_KERNEL,
    ATTEST_CLI_RUN_CASES, ATTEST_CLI_RUN_SEED, ATTEST_CLI_RUN_CASE_SEED, ATTEST_CLI_RUN_FILTER,
    ATTEST_CLI_RUN_OUT, ATTEST_CLI_RUN_FORCE, ATTEST_CLI_RUN_POLICY, ATTEST_CLI_RUN_SAME,
    ATTEST_CLI_RUN_RERUNS, ATTEST_CLI_RUN_TIMEOUT, ATTEST_CLI_RUN_NO_ISOLATE,
    ATTEST_CLI_RUN_JOBS, ATTEST_CLI_RUN_PRINT_FAILURES, ATTEST_CLI_RUN_SAVE_FAILURES,
    ATTEST_CLI_RUN_JUNIT, ATTEST_CLI_RUN_JSON, ATTEST_CLI_RUN_QUIET, ATTEST_CLI_RUN_END_
};

/* The getopt_long table entries, one an option. */
#define ATTEST_CLI_OPT_CANDIDATE {"candidate", required_argument, NULL, ATTEST_CLI_RUN_CANDIDATE}
#define ATTEST_CLI_OPT_BASELINE {"baseline", required_argument, NULL, ATTEST_CLI_RUN_BASELINE}
#define ATTEST_CLI_OPT_KERNEL {"kernel", required_argument, NULL, ATTEST_CLI_RUN_KERNEL}
#define ATTEST_CLI_OPT_CASES {"cases", required_argument, NULL, ATTEST_CLI_RUN_CASES}
#define ATTEST_CLI_OPT_SEED {"seed", required_argument, NULL, ATTEST_CLI_RUN_SEED}
#define ATTEST_CLI_OPT_CASE_SEED {"case-seed", required_argument, NULL, ATTEST_CLI_RUN_CASE_SEED}
#define ATTEST_CLI_OPT_FILTER {"filter", required_argument, NULL, ATTEST_CLI_RUN_FILTER}
#define ATTEST_CLI_OPT_OUT {"out", required_argument, NULL, ATTEST_CLI_RUN_OUT}
#define ATTEST_CLI_OPT_FORCE {"force", no_argument, NULL, ATTEST_CLI_RUN_FORCE}
#define ATTEST_CLI_OPT_POLICY {"policy", required_argument, NULL, ATTEST_CLI_RUN_POLICY}
#define ATTEST_CLI_OPT_SAME {"same", required_argument, NULL, ATTEST_CLI_RUN_SAME}
#define ATTEST_CLI_OPT_RERUNS {"reruns", required_argument, NULL, ATTEST_CLI_RUN_RERUNS}
#define ATTEST_CLI_OPT_TIMEOUT {"timeout", required_argument, NULL, ATTEST_CLI_RUN_TIMEOUT}
#define ATTEST_CLI_OPT_NO_ISOLATE {"no-isolate", no_argument, NULL, ATTEST_CLI_RUN_NO_ISOLATE}
#define ATTEST_CLI_OPT_JOBS {"jobs", required_argument, NULL, ATTEST_CLI_RUN_JOBS}
#define ATTEST_CLI_OPT_PRINT_FAILURES                                                              \
    {"print-failures", required_argument, NULL, ATTEST_CLI_RUN_PRINT_FAILURES}
#define ATTEST_CLI_OPT_SAVE_FAILURES                                                               \
    {"save-failures", required_argument, NULL, ATTEST_CLI_RUN_SAVE_FAILURES}
#define ATTEST_CLI_OPT_JUNIT {"junit", required_argument, NULL, ATTEST_CLI_RUN_JUNIT}
#define ATTEST_CLI_OPT_JSON {"json", required_argument, NULL, ATTEST_CLI_RUN_JSON}
#define ATTEST_CLI_OPT_QUIET {"quiet", no_argument, NULL, ATTEST_CLI_RUN_QUIET}

/* The options' values. Strings are NULL and flags 0 when not given. */
typedef struct attest_cli_run_args {
    const char *candidate, *baseline, *kernel, *filter, *out, *policy, *save_dir, *junit, *json;
    uint64_t cases, seed, case_seed, print_failures;
    int seed_given, use_case_seed, force, no_isolate, quiet;
    int bitwise, same_given; /* --same bitwise|bounds */
    int32_t reruns, jobs;
    double timeout;
    attest_cli_gen_bounds gen;
    /* Limits a verb may set before parsing: --cases at most max_cases (0: no limit), --jobs at
     * most max_jobs. */
    uint64_t max_cases;
    int32_t max_jobs;
} attest_cli_run_args;

/* Sets the defaults of attest run: 100 cases, seed 1, 20 failures printed, 2 reruns, 1 job (at
 * most 4096), a 10 s timeout; the rest not given. A verb changes what differs after. */
void attest_cli_run_defaults(attest_cli_run_args *a);

/* Returns 1 when ch (a getopt_long value) is one of these options or a generator bound. */
int attest_cli_run_is_option(int ch);

/* Records option ch with its argument. Returns -1, or ATTEST_EXIT_USAGE after reporting a bad
 * value as "attest VERB: bad value for --NAME: 'ARG'". */
int attest_cli_run_option(const char *verb, int ch, const char *arg, attest_cli_run_args *a);

#endif
