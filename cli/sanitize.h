/* attest CLI: `--sanitize TOOL`, running the whole attest process under compute-sanitizer.
 *
 * The runner's worker is forked, not executed, so it cannot be started under the tool on its
 * own; instead the verb re-executes itself as `compute-sanitizer --tool TOOL --log-file
 * DIR/attest.%p.log ... attest VERB ARGS`, with $ATTEST_SANITIZER_LOG naming the log pattern.
 * The parent never touches CUDA; each worker inherits the tool's injection and reports in its
 * own log file, which the runner reads after every run (attest_runner_options.sanitizer_log).
 */
#ifndef ATTEST_CLI_SANITIZE_H
#define ATTEST_CLI_SANITIZE_H

/* The tools `--sanitize` accepts: memcheck, racecheck, initcheck, synccheck. */
int attest_cli_sanitize_tool_ok(const char *tool);

/* Already under the tool: returns the log pattern (from the environment), else NULL. */
const char *attest_cli_sanitize_log(void);

/* Re-executes argv (argv[0] = the verb) under compute-sanitizer; returns only on failure, with
 * the exit status of a usage error (one line on stderr). The tool is found in
 * $ATTEST_COMPUTE_SANITIZER, on PATH, or in /usr/local/cuda/bin. */
int attest_cli_sanitize_exec(const char *verb, const char *tool, int argc, char **argv);

#endif
