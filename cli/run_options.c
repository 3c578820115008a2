/* The options the run-like verbs share (run_options.h). */
#include "run_options.h"

#include <string.h>

#include "attest/usage.h"
#include "commands.h"

void attest_cli_run_defaults(attest_cli_run_args *a)
{
    memset(a, 0, sizeof *a);
    a->cases = 100;
    a->seed = 1;
    a->print_failures = 20;
    a->reruns = 2;
    a->jobs = 1;
    a->max_jobs = 4096;
    a->timeout = 10.0;
}

int attest_cli_run_is_option(int ch)
{
    return (ch >= ATTEST_CLI_RUN_CANDIDATE && ch < ATTEST_CLI_RUN_END_) ||
           attest_cli_gen_is_option(ch);
}

#define BAD(what) return attest_cli_bad_value(verb, what, arg)

int attest_cli_run_option(const char *verb, int ch, const char *arg, attest_cli_run_args *a)
{
    if (attest_cli_gen_is_option(ch)) return attest_cli_gen_option(verb, ch, arg, &a->gen);
    switch (ch) {
    case ATTEST_CLI_RUN_CANDIDATE: a->candidate = arg; break;
    case ATTEST_CLI_RUN_BASELINE: a->baseline = arg; break;
    case ATTEST_CLI_RUN_KERNEL: a->kernel = arg; break;
    case ATTEST_CLI_RUN_FILTER: a->filter = arg; break;
    case ATTEST_CLI_RUN_OUT: a->out = arg; break;
    case ATTEST_CLI_RUN_POLICY: a->policy = arg; break;
    case ATTEST_CLI_RUN_SAVE_FAILURES: a->save_dir = arg; break;
    case ATTEST_CLI_RUN_JUNIT: a->junit = arg; break;
    case ATTEST_CLI_RUN_JSON: a->json = arg; break;
    case ATTEST_CLI_RUN_FORCE: a->force = 1; break;
    case ATTEST_CLI_RUN_NO_ISOLATE: a->no_isolate = 1; break;
    case ATTEST_CLI_RUN_QUIET: a->quiet = 1; break;
    case ATTEST_CLI_RUN_CASES:
        if (attest_cli_parse_u64(arg, &a->cases) || a->cases == 0 ||
            (a->max_cases && a->cases > a->max_cases))
            BAD("cases");
        break;
    case ATTEST_CLI_RUN_SEED:
        if (attest_cli_parse_u64(arg, &a->seed)) BAD("seed");
        a->seed_given = 1;
        break;
    case ATTEST_CLI_RUN_CASE_SEED:
        if (attest_cli_parse_u64(arg, &a->case_seed)) BAD("case-seed");
        a->use_case_seed = 1;
        break;
    case ATTEST_CLI_RUN_SAME:
        if (strcmp(arg, "bitwise") == 0) a->bitwise = 1;
        else if (strcmp(arg, "bounds") == 0) a->bitwise = 0;
        else BAD("same");
        a->same_given = 1;
        break;
    case ATTEST_CLI_RUN_RERUNS:
        if (attest_cli_parse_i32(arg, 1, 1000, &a->reruns)) BAD("reruns");
        break;
    case ATTEST_CLI_RUN_JOBS:
        if (attest_cli_parse_i32(arg, 1, a->max_jobs, &a->jobs)) BAD("jobs");
        break;
    case ATTEST_CLI_RUN_TIMEOUT:
        if (attest_cli_parse_double(arg, 0.01, 86400.0, &a->timeout)) BAD("timeout");
        break;
    case ATTEST_CLI_RUN_PRINT_FAILURES:
        if (attest_cli_parse_u64(arg, &a->print_failures)) BAD("print-failures");
        break;
    default: break; /* not one of these: attest_cli_run_is_option says so first */
    }
    return -1;
}
