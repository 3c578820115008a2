/* attest (internal): reading compute-sanitizer's per-process log files.
 *
 * Under `attest run --sanitize TOOL` the whole attest process runs under compute-sanitizer with
 * --log-file PATTERN, where %p in PATTERN is each process's pid; the forked worker inherits the
 * tool's injection, so its CUDA work is checked and reported in its own file. The runner reads
 * what a worker's file gained after each run and turns an error report into a verdict.
 */
#ifndef ATTEST_SANITIZER_LOG_H
#define ATTEST_SANITIZER_LOG_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the log of `pid` (PATTERN with %p replaced) from *offset on and advances *offset past
 * the complete lines read. Returns the number of report lines found (lines of the tool's
 * "========= " prefix other than its banner, blank lines and summaries), with the first ones
 * joined by "; " into `lines`; 0 when none (or no file yet); -1 when the path is unusable. */
int sanitizer_log_read(const char *pattern, pid_t pid, long *offset, char *lines, size_t cap);

/* Whether one line (without its newline) is part of an error report. */
int sanitizer_log_is_report(const char *line);

#endif
