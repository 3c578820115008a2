/* attest: the single error channel.
 *
 * A status says whether the harness could do its job. It never says whether a candidate kernel is
 * right: that is a verdict (see verdict.h). Values are pinned: they appear in result files and exit
 * paths, so never renumber one; add new codes at the end.
 */
#ifndef ATTEST_STATUS_H
#define ATTEST_STATUS_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ATTEST_MUST_CHECK __attribute__((warn_unused_result))
#define ATTEST_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define ATTEST_MUST_CHECK
#define ATTEST_PRINTF(fmt, args)
#endif

typedef enum attest_status {
    ATTEST_OK = 0,
    ATTEST_ERR_INVALID_ARGUMENT = 1, /* a parameter is out of range or inconsistent */
    ATTEST_ERR_OUT_OF_MEMORY = 2,
    ATTEST_ERR_IO = 3,               /* a file could not be opened, read or written */
    ATTEST_ERR_FORMAT = 4,           /* a file opened but its content is malformed */
    ATTEST_ERR_UNSUPPORTED = 5,      /* a feature the harness does not implement */
    ATTEST_ERR_NOT_FOUND = 6,        /* a named thing (layout, candidate, field) does not exist */
    ATTEST_ERR_DEVICE = 7,           /* no usable GPU, or the CUDA runtime failed */
    ATTEST_ERR_INTERNAL = 8,         /* a harness invariant broke: a bug in attest */
    ATTEST_ERR_CHILD = 9,            /* a worker process could not be started or talked to */
    ATTEST_STATUS_COUNT_
} attest_status;

/* Returns a static, lower-case name for a status ("invalid-argument"); never NULL. */
const char *attest_status_name(attest_status status);

/* Records a one-line message describing the last error of this thread (printf format). The CLI
 * prints it; library callers can read it with attest_last_error(). Returns `status` so a call can
 * be written `return attest_fail(ATTEST_ERR_FORMAT, "...")`. */
attest_status attest_fail(attest_status status, const char *fmt, ...) ATTEST_PRINTF(2, 3);

/* Returns the message recorded by the last attest_fail() of this thread, or "" if none. */
const char *attest_last_error(void);

/* Clears the thread's last error message. */
void attest_clear_error(void);

/* Internal helpers in the style of zstd's RETURN_ERROR_IF / FORWARD_IF_ERROR. */
#define ATTEST_RETURN_IF(cond, status, ...)                                                        \
    do {                                                                                           \
        if (cond) return attest_fail((status), __VA_ARGS__);                                       \
    } while (0)

#define ATTEST_FORWARD(expr)                                                                       \
    do {                                                                                           \
        attest_status attest_forward_st_ = (expr);                                                 \
        if (attest_forward_st_ != ATTEST_OK) return attest_forward_st_;                           \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_STATUS_H */
