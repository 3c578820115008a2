/* attest (internal): one external candidate process and its channels (external.h).
 *
 * The process gets, besides its arguments and environment:
 *   fd 0  /dev/null
 *   fd 1, 2  one anonymous file (memfd) that collects its stdout and stderr, so the last lines
 *        can be quoted in a verdict without a reader thread (a full pipe would block it);
 *   fd 3  its end of a stream socketpair: the control channel, one line per message;
 *   fd 4  the shared-memory file (memfd) holding the case's data region, grown with ftruncate
 *        (the process re-maps it when a message announces a larger size).
 * It dies with the process that started it (PR_SET_PDEATHSIG) and stays in its process group,
 * so the runner's group kill of a worker takes it along.
 */
#ifndef ATTEST_EXTERNAL_PROC_H
#define ATTEST_EXTERNAL_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attest/status.h"

#define EXT_LINE_MAX 65536

typedef struct ext_proc {
    pid_t pid;        /* 0 when not running */
    pid_t last_pid;   /* the most recent process, for messages after it is gone */
    int sock;         /* our end of the control channel */
    int pidfd;        /* readable when the process exits (-1 without pidfd_open) */
    int out_fd;       /* the stdout/stderr file */
    int shm_fd;       /* the shared data region */
    uint8_t *shm;     /* our mapping of it */
    size_t shm_cap;   /* its size */
    int exit_status;  /* wait status once reaped (-1 unknown) */
    size_t rlen;      /* bytes buffered in rbuf */
    size_t consumed;  /* bytes of the line handed out last, dropped at the next read */
    char rbuf[EXT_LINE_MAX];
} ext_proc;

void ext_proc_init(ext_proc *p);

/* Starts argv[0] (searched in PATH) with `env_add` ("K=V" strings, NULL-terminated) added to the
 * environment. ATTEST_ERR_NOT_FOUND when the program cannot be executed, ATTEST_ERR_CHILD when a
 * resource fails; the message says which. */
attest_status ext_proc_start(ext_proc *p, char *const argv[], char *const env_add[])
    ATTEST_MUST_CHECK;

/* Makes the shared region at least `bytes` long (ftruncate and re-map). */
attest_status ext_proc_reserve(ext_proc *p, size_t bytes) ATTEST_MUST_CHECK;

/* Sends one line (the '\n' is added). Returns 0, or -1 when the process is gone. */
int ext_proc_send(ext_proc *p, const char *line, size_t len);

/* What reading a line came to. */
typedef enum ext_read {
    EXT_READ_LINE = 0,     /* a line, without its '\n', NUL-terminated, in *line */
    EXT_READ_EOF = 1,      /* the channel closed or the process exited */
    EXT_READ_TIMEOUT = 2,  /* nothing complete before the deadline */
    EXT_READ_TOO_LONG = 3  /* more than EXT_LINE_MAX bytes without a newline */
} ext_read;

/* Reads one line until `deadline` (CLOCK_MONOTONIC seconds; 0 waits forever). *line points
 * into the buffer and stays valid until the next read. */
ext_read ext_proc_read_line(ext_proc *p, double deadline, char **line);

/* Stops the process: closes the channel (a polite stop), waits up to `grace` seconds, then
 * SIGKILLs its process and reaps it. Keeps the output file until ext_proc_release. */
void ext_proc_stop(ext_proc *p, double grace);

/* Stop, then close the output file and the shared region. */
void ext_proc_release(ext_proc *p);

/* Describes how the process ended ("exited with status 1", "killed by SIGSEGV"); reaps it if it
 * has exited (waiting up to `wait` seconds). */
void ext_proc_describe_exit(ext_proc *p, double wait, char *buf, size_t cap);

/* The last `max_lines` non-empty lines of its stdout/stderr, joined with " | " and clipped from
 * the front to fit `cap`; "" when it wrote nothing. */
void ext_proc_output_tail(const ext_proc *p, int max_lines, char *buf, size_t cap);

/* Prints the last `max_lines` lines of its output to stderr under a heading naming `who`. */
void ext_proc_print_tail(const ext_proc *p, const char *who, int max_lines);

/* Empties the output file when it grew past `limit` bytes (a chatty process must not fill the
 * disk); the tail of a later fault is still there. */
void ext_proc_trim_output(ext_proc *p, size_t limit);

double ext_now(void);

#endif /* ATTEST_EXTERNAL_PROC_H */
