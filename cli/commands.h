/* attest CLI: one function per verb, each in cli/cmd_<verb>.c. Each returns the process exit
 * status: 0 success (every case passed), 1 a candidate failed, 2 usage or input error. */
#ifndef ATTEST_CLI_COMMANDS_H
#define ATTEST_CLI_COMMANDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attest/bench.h"
#include "attest/policy.h"
#include "attest/record.h"

#include "attest/usage.h"

int attest_cmd_layout(int argc, char **argv);
int attest_cmd_reference(int argc, char **argv);
int attest_cmd_run(int argc, char **argv);
int attest_cmd_campaign(int argc, char **argv);
int attest_cmd_show(int argc, char **argv);
int attest_cmd_report(int argc, char **argv);
int attest_cmd_replay(int argc, char **argv);
int attest_cmd_list(int argc, char **argv);
int attest_cmd_check(int argc, char **argv);
int attest_cmd_fixture(int argc, char **argv);
int attest_cmd_fuzz(int argc, char **argv);
int attest_cmd_bench(int argc, char **argv);
/* The bench table as attest bench prints it (attest show prints a bench file the same way). */
void attest_bench_print_header(FILE *f);
void attest_bench_print_row(FILE *f, const attest_bench_row *row);
void attest_bench_print_timing(FILE *f, const attest_bench_row *row);

/* getopt_long that takes long options by their whole names only. getopt_long alone takes any
 * unambiguous prefix, so `attest run --time 60` was `--timeout 60`: a run that looked
 * time-bounded ran every case with another per-run limit. A prefix is answered '?' as an unknown
 * option is (attest_cli_getopt_error names it and the option it abbreviates). */
struct option;
int attest_cli_getopt(int argc, char **argv, const char *optstring, const struct option *options);

/* The error arms of a getopt_long loop, for the option at argv[optind - 1]: after ch ':' "option
 * X needs a value", else "unknown option 'X' (attest VERB --help)". Returns ATTEST_EXIT_USAGE. */
int attest_cli_getopt_error(const char *verb, int ch, char **argv);

/* For verbs that scan argv by hand: whether argv[*i] is option `name` ("--out"), given as
 * "--out V" or "--out=V". Returns 0 when it is not; 1 when it is, with *value set and *i on the
 * last word used; -1 when it is but no value follows. */
int attest_cli_option_value(int argc, char **argv, int *i, const char *name, const char **value);

/* Applies the output-file policy (attest/files.h) to --out PATH of a verb: returns -1 when the
 * path may be written, else prints one line and returns ATTEST_EXIT_USAGE. inputs: the files the
 * command reads (NULL entries ignored). */
int attest_cli_check_output(const char *verb, const char *path, int kind, int force,
                            const char *const *inputs, size_t num_inputs);

/* Outputs named by attest, not the user (findings, the campaign's default results file), never
 * replace a file: when `path` (DIR/STEM.EXT) or a sibling of it (path + each suffix of the
 * NULL-terminated `siblings`, may be NULL) exists, path becomes the first free DIR/STEM-2.EXT,
 * DIR/STEM-3.EXT, ... A second candidate's finding on the same generated case (the same seed, so
 * the same name) replaced the first one's. 0 when path names a free name, -1 (with an attest
 * error) when none of 1000 is. */
int attest_cli_free_path(char *path, size_t cap, const char *const *siblings);

/* The closing line of a run that keeps its own counts (top-k, pipeline), in the words of
 * attest run's (attest_report_result_word): "result: PASS (N cases)", "result: FAIL (F of N
 * cases failed)", "result: FAIL (F of N case files failed, U unreadable)", "result: EMPTY (no
 * case was judged)"; `unit` names what was counted ("case", "case file"). An unreadable input
 * fails the run. Returns the exit status the line stands for. */
int attest_cli_result_line(uint64_t failed, uint64_t judged, uint64_t unreadable,
                           const char *unit);

/* The results file of a verb whose --out is left out: `name` (attest-campaign.h5,
 * attest-fuzz.h5), or the first of NAME-2.h5, -3, ... with no file, .rows or .repro/ of that
 * name, written to buf. Running the verb twice runs it twice and keeps the first results; an
 * explicit --out keeps the output policy ("exists; use --force"). Returns buf. */
const char *attest_cli_default_results(const char *name, char *buf, size_t cap);

/* One case in full (attest_report_case_detail_outputs) with the tolerances `policy` gives its
 * outputs (none when one of them has no entry): attest replay, and attest run --case-seed. */
void attest_cli_print_case_detail(const attest_case_record *rec, const attest_case *c,
                                  const attest_policy *policy, const attest_case_outputs *kept);

/* A folder an option writes files into (--save-failures, --findings): made when missing (the
 * last component only, as mkdir does; --corpus makes its folder too), refused when it is not a
 * folder or not writable, with one line naming the option. Returns -1 when usable, else the
 * exit code (usage). */
int attest_cli_output_dir(const char *verb, const char *option, const char *dir);

/* The output policy for a verb's --junit and --json (either may be NULL): neither may be an
 * input, the --out path (may be NULL) or the other, and neither replaces a file that is not an
 * earlier report of its kind (files.h). -1 when both may be written, else ATTEST_EXIT_USAGE. */
int attest_cli_check_reports(const char *verb, const char *out, const char *junit,
                             const char *json, const char *const *inputs, size_t num_inputs);

/* --max-case-mb VALUE of the verbs that load case files: sets attest_casefile_set_max_bytes.
 * Returns -1 on success, else prints one line and returns ATTEST_EXIT_USAGE. */
int attest_cli_max_case_mb(const char *verb, const char *value);
#define ATTEST_CLI_MAX_CASE_USAGE                                                                  \
    "  --max-case-mb M    refuse case files declaring more than M MiB of tensors (default 4096)\n"

/* Returns 1 when progress lines suit stderr: a terminal, and not under CI (env CI set). */
int attest_cli_interactive(void);

#endif
