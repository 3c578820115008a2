/* attest: shell quoting (shell.h). One safe set for every printed command line. */
#include "attest/shell.h"

#include <string.h>

static const char safe_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=+,-@%";

void attest_shell_append_arg(char *buf, size_t cap, size_t *used, const char *arg)
{
    if (buf == NULL || cap == 0 || used == NULL) return;
    if (arg == NULL) arg = "";
    int plain = arg[0] != '\0';
    for (const char *p = arg; *p; p++)
        if (!strchr(safe_chars, *p)) plain = 0;
    size_t u = *used < cap ? *used : cap - 1;
    if (plain) {
        for (const char *p = arg; *p && u + 1 < cap; p++) buf[u++] = *p;
    } else {
        if (u + 1 < cap) buf[u++] = '\'';
        for (const char *p = arg; *p && u + 1 < cap; p++) {
            if (*p == '\'') {
                /* close, escaped quote, reopen: 'it'\''s' */
                for (const char *e = "'\\''"; *e && u + 1 < cap; e++) buf[u++] = *e;
            } else {
                buf[u++] = *p;
            }
        }
        if (u + 1 < cap) buf[u++] = '\'';
    }
    buf[u] = '\0';
    *used = u;
}
