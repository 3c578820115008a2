#include "attest/status.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char last_error[512];

static const char *const status_names[ATTEST_STATUS_COUNT_] = {
    [ATTEST_OK] = "ok",
    [ATTEST_ERR_INVALID_ARGUMENT] = "invalid-argument",
    [ATTEST_ERR_OUT_OF_MEMORY] = "out-of-memory",
    [ATTEST_ERR_IO] = "io",
    [ATTEST_ERR_FORMAT] = "format",
    [ATTEST_ERR_UNSUPPORTED] = "unsupported",
    [ATTEST_ERR_NOT_FOUND] = "not-found",
    [ATTEST_ERR_DEVICE] = "device",
    [ATTEST_ERR_INTERNAL] = "internal",
    [ATTEST_ERR_CHILD] = "child",
};

const char *attest_status_name(attest_status status)
{
    if ((unsigned)status >= ATTEST_STATUS_COUNT_) return "unknown-status";
    return status_names[status];
}

attest_status attest_fail(attest_status status, const char *fmt, ...)
{
    /* Format into a local buffer first: callers often pass attest_last_error() as an argument
     * to add context, and formatting straight into last_error would overlap with it. */
    char message[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(last_error, message, sizeof last_error);
    return status;
}

const char *attest_last_error(void) { return last_error; }

void attest_clear_error(void) { last_error[0] = '\0'; }
