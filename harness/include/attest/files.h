/* attest: what every verb does before it reads or writes a file the user named.
 *
 * Inputs: regular files only (a FIFO would block a loader forever, a device node would be read
 * without end). Outputs: one policy for every verb:
 *  - an existing path that is not a regular file (FIFO, device, directory, symlink) is refused;
 *  - a path that is also an input of the same command is refused;
 *  - an existing regular file is replaced only when the caller says so (--force), and only when
 *    it is a file of the kind being written (a results file for results, HDF5 for case files):
 *    a text file, a fixture given as a results path, is never replaced;
 *  - writers write a temporary sibling and rename it into place, and hold an advisory lock on
 *    a sibling "PATH.lock" that names its holder, so a second writer of the same path is told
 *    who has it instead of mixing its rows into the first one's file.
 */
#ifndef ATTEST_FILES_H
#define ATTEST_FILES_H

#include <stddef.h>
#include <sys/types.h>

#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What kind of file a st_mode names, for messages ("a FIFO", "a directory", ...). */
const char *attest_file_type_name(mode_t mode);

/* ATTEST_OK when path names a regular file (symlinks followed); ATTEST_ERR_IO when it cannot be
 * found or is something else ("X: is a FIFO, not a regular file"). `what` names it in messages
 * ("policy", "case file"); may be NULL. */
attest_status attest_file_check_regular(const char *path, const char *what) ATTEST_MUST_CHECK;

/* The kind of file an output path receives. */
typedef enum attest_output_kind {
    ATTEST_OUTPUT_RESULTS = 0,  /* an attest results file (and its .rows/.repro siblings) */
    ATTEST_OUTPUT_HDF5 = 1,     /* a case or fixture file: any HDF5 file may be replaced */
    /* Reports derived from a run (--junit, --json, report --html): an earlier report of the same
     * kind that attest wrote is replaced without --force (a re-run writes its report again);
     * any other file never, --force or not. */
    ATTEST_OUTPUT_JUNIT = 2,
    ATTEST_OUTPUT_JSON = 3,
    ATTEST_OUTPUT_HTML = 4
} attest_output_kind;

/* Applies the output policy above to `path` before a verb writes it. inputs[0..num_inputs) are
 * the files the command reads (NULL entries ignored). force: replace an existing file of the
 * kind. A new file's folder must exist and be writable. ATTEST_ERR_INVALID_ARGUMENT with a
 * one-line reason when the path may not be written. */
attest_status attest_output_check(const char *path, attest_output_kind kind, int force,
                                  const char *const *inputs, size_t num_inputs)
    ATTEST_MUST_CHECK;

/* An advisory lock on "PATH.lock" (flock), holding "pid N: HOLDER" for whoever finds it taken. */
typedef struct attest_output_lock attest_output_lock;

/* Takes the lock without waiting. ATTEST_ERR_IO naming the holder when another process has it
 * ("r.h5 is being written by another attest (pid 123: attest run ...)"). */
attest_status attest_output_lock_take(const char *path, const char *holder,
                                      attest_output_lock **out) ATTEST_MUST_CHECK;

/* Removes the lock file and releases the lock (NULL is ignored). */
void attest_output_lock_release(attest_output_lock *lock);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_FILES_H */
