/* attest (internal): run a loader in a child process with a deadline before the caller trusts
 * the input.
 *
 * Why: some inputs are read by code attest cannot validate before it runs: HDF5 parses corrupt
 * metadata (and crashes or loops on some), dlopen runs a plugin's constructors, a plugin's entry
 * point returns whatever it likes. A child that does the same work first turns a crash, a hang
 * or an exit() into an error message; the work is deterministic, so what passed in the child is
 * safe to repeat in the caller. The deadline is kept on both sides: the child gets an alarm, the
 * parent stops waiting and kills the child's whole process group when it passes (a child that
 * deadlocks inside a signal handler, or blocks SIGALRM, cannot hold the caller).
 */
#ifndef ATTEST_CHILD_PROBE_H
#define ATTEST_CHILD_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attest/status.h"

/* Which inherited descriptors a child keeps besides 0, 1, 2 and its channel. */
typedef enum child_fds {
    /* None, and the channel moves to 3: the runner's worker, where an untrusted candidate runs
     * and must not reach the parent's files. */
    CHILD_FDS_NONE,
    /* Regular files too, each at its number: the probes, whose HDF5 calls find a file the
     * parent holds open (by inode) and use the parent's descriptor for it. */
    CHILD_FDS_FILES
} child_fds;

/* What every child attest forks does first, the runner's worker and the file and plugin probes
 * alike: every signal back to its default disposition and none blocked (an inherited handler, a
 * test framework's longjmp or a sanitizer's report, would catch a crash meant to end the child),
 * SIGTTOU ignored (it may write to the terminal from its own group), its own process group
 * (killed as one), stdin from /dev/null, `channel` close-on-exec, and every other inherited
 * descriptor closed but those `keep` names (an inherited pipe end would keep some reader waiting
 * for an EOF that never comes while the child lives). Returns the channel's descriptor (3 with
 * CHILD_FDS_NONE; -1 for a child without one, channel -1, which talks through shared memory).
 * Only in a freshly forked child: it allocates nothing. */
int child_isolate(int channel, child_fds keep);

/* What a child runs: writes its reports to fd, returns its exit code. */
typedef int (*child_probe_fn)(int fd, void *arg);

typedef struct child_probe {
    pid_t pid;
    int fd;            /* read end of the child's reports */
    double deadline;   /* CLOCK_MONOTONIC seconds */
    int timed_out;     /* set by child_probe_read or child_probe_finish */
} child_probe;

/* The deadline: $ATTEST_PROBE_TIMEOUT seconds (0: none), default 60. */
unsigned child_probe_seconds(void);

/* Forks a child that runs fn(write end, arg) and _exits with its return value. The child dies
 * of crash signals (inherited handlers are reset), has stderr on /dev/null (a crash report
 * would break the one-line rule) and leads its own process group. `doing` completes "cannot
 * fork to ...". The child is isolated as child_isolate says. */
attest_status child_probe_spawn(const char *path, const char *doing, child_probe_fn fn,
                                void *arg, child_probe *p) ATTEST_MUST_CHECK;

/* The same with an explicit deadline in seconds (0: none). */
attest_status child_probe_spawn_within(const char *path, const char *doing, child_probe_fn fn,
                                       void *arg, unsigned seconds, child_probe *p)
    ATTEST_MUST_CHECK;

/* Reads up to n bytes before the deadline; returns how many arrived (short at end of file, on
 * an error or past the deadline, which sets p->timed_out). */
size_t child_probe_read(child_probe *p, void *buf, size_t n);

/* Closes the read end and reaps the child, killing its process group first when the deadline
 * passed or passes while waiting. Returns the wait status. */
int child_probe_finish(child_probe *p);

/* How a child that reported nothing ended, for messages: "crashed (signal 11)", "did not finish
 * within 60 s", "exited with status 0 without reporting". */
const char *child_probe_end(const child_probe *p, int wstatus, char *buf, size_t cap);

/* How a file probe's child that reported nothing ended: "crashed the HDF5 library (signal 11)"
 * (a signal that is not the deadline's), otherwise as child_probe_end. */
const char *child_probe_file_end(const child_probe *p, int wstatus, char *buf, size_t cap);

/* The parent's status from a file probe: the child's own status and message (made printable)
 * when it exited 0 after writing a whole report, otherwise FORMAT with "PATH: reading it <how it
 * ended>: its HDF5 metadata is corrupt". One rule for every probe of an HDF5 file. */
attest_status child_probe_file_status(const char *path, const child_probe *p, int wstatus,
                                      int whole_report, int32_t status, char *message,
                                      size_t message_size);

/* The name of a signal that ends a child, for messages ("SIGSEGV"); `other` for the rest. */
const char *child_signal_name(int sig, const char *other);

/* Writes all n bytes (EINTR-safe); 0 on success. */
int child_probe_write_all(int fd, const void *buf, size_t n);

#endif
