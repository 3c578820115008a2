/* attest: the command-line entry point; every verb lives in cli/cmd_<verb>.c. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "attest/build_info.h"
#include "attest/runner.h"
#include "commands.h"

typedef struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} verb;

static const verb verbs[] = {
    {"campaign", attest_cmd_campaign, "run the embedded default campaign (CPU candidates, no GPU)"},
    {"run", attest_cmd_run, "run one candidate against the reference on generated cases"},
    {"show", attest_cmd_show, "summarize a results file: failures by verdict and gate"},
    {"report", attest_cmd_report, "write a results file as one self-contained HTML page"},
    {"replay", attest_cmd_replay, "run one stored case file against a candidate, in detail"},
    {"check", attest_cmd_check, "gate CI on golden fixtures: judge every case of fixture files"},
    {"fixture", attest_cmd_fixture, "make golden fixtures: generated cases with expected outputs"},
    {"fuzz", attest_cmd_fuzz, "search for a failing case for a time, minimize and save each finding"},
    {"bench", attest_cmd_bench, "perf mode: time per launch and achieved bandwidth per shape"},
    {"reference", attest_cmd_reference, "compute reference outputs for a case file"},
    {"layout", attest_cmd_layout, "describe a KV-cache byte layout"},
    {"list", attest_cmd_list, "list kernels, layouts, candidates and policies"},
};

static void print_usage(FILE *f)
{
    fprintf(f, "attest %s: regression and fuzz testing of GPU attention kernels\n\n", ATTEST_VERSION);
    fprintf(f, "usage: attest VERB [options]   (attest VERB --help for each verb)\n\nverbs:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return ATTEST_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_usage(stdout);
        return ATTEST_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("attest %s (%s)\n", ATTEST_VERSION, ATTEST_GIT_COMMIT);
        return ATTEST_EXIT_OK;
    }
    /* A reader that stops early (`attest run ... | head`) must not end the campaign half
     * written: SIGPIPE's default action killed attest before its results file held a row.
     * Output to a closed pipe is dropped instead and the run finishes what it was asked to do.
     * Children get the default back (child_isolate, and before each exec). */
    signal(SIGPIPE, SIG_IGN);
    /* Whatever a candidate starts ends with its worker, even after a crash (runner.h). */
    attest_runner_reap_orphans();
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(argv[1], verbs[i].name)) return verbs[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "attest: unknown verb '%s' (try attest --help)\n", argv[1]);
    return ATTEST_EXIT_USAGE;
}
