/* attest: printing command lines a POSIX shell reads back exactly (replay commands, provenance). */
#ifndef ATTEST_SHELL_H
#define ATTEST_SHELL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Appends `arg` to buf at *used (advancing it), single-quoted when it holds anything outside
 * [A-Za-z0-9_./:=+,@%-] or is empty, with each ' written as '\''. Truncates at cap, always
 * NUL-terminated (cap > 0). */
void attest_shell_append_arg(char *buf, size_t cap, size_t *used, const char *arg);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_SHELL_H */
