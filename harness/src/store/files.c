/* The output file policy of every verb (files.h): it needs the results probe, so it lives in
 * store/; the input check, which the judge's policy loader needs too, is core/files_input.c. */
#include "attest/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attest/results.h"

/* Whether the file starts with the HDF5 signature (at offset 0, where attest writes it). */
static int has_hdf5_signature(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    unsigned char head[8];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n == (ssize_t)sizeof head && memcmp(head, sig, sizeof sig) == 0;
}

/* Whether path holds a report of `kind` that attest wrote: the opening its writers give each
 * (report_ci.c, report_html.c). A report's name is the user's to choose, so its content decides:
 * `--json notes.txt`, `report r.h5 --html r.h5` and `--json /dev/stdout` replaced what they
 * named. */
static int is_attest_report(const char *path, attest_output_kind kind)
{
    char head[1024];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n <= 0) return 0;
    head[n] = '\0';
    switch (kind) {
    case ATTEST_OUTPUT_JUNIT:
        return !strncmp(head, "<?xml", 5) && strstr(head, "<testsuite name=\"attest ") != NULL;
    case ATTEST_OUTPUT_JSON: return !strncmp(head, "{\n  \"attest\": \"", 15);
    case ATTEST_OUTPUT_HTML:
        return !strncmp(head, "<!DOCTYPE html>", 15) && strstr(head, "<title>attest: ") != NULL;
    default: return 0;
    }
}

static const char *report_name(attest_output_kind kind)
{
    switch (kind) {
    case ATTEST_OUTPUT_JUNIT: return "a JUnit report";
    case ATTEST_OUTPUT_JSON: return "a JSON summary";
    default: return "an HTML report";
    }
}

static int exists(const char *path, struct stat *sb)
{
    return lstat(path, sb) == 0;
}

/* A new file's folder must be there and writable before any work: a campaign of hours whose
 * --junit named a missing folder ran every case, then could not write its report. */
static attest_status folder_check(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: its folder %s %s", path, dir,
                           errno == ENOENT ? "does not exist" : strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: %s is not a folder", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: its folder %s is not writable: %s",
                           path, dir, strerror(errno));
    return ATTEST_OK;
}

attest_status attest_output_check(const char *path, attest_output_kind kind, int force,
                                  const char *const *inputs, size_t num_inputs)
{
    ATTEST_RETURN_IF(!path || !path[0], ATTEST_ERR_INVALID_ARGUMENT,
                     "an empty output path (name the file to write)");
    ATTEST_RETURN_IF(strlen(path) + 64 >= PATH_MAX, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s: path too long", path);
    struct stat sb;
    const int present = exists(path, &sb);
    if (present && !S_ISREG(sb.st_mode))
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                           "%s: is %s; attest writes only regular files and replaces nothing else",
                           path, attest_file_type_name(sb.st_mode));
    if (present) {
        for (size_t i = 0; i < num_inputs; i++) {
            struct stat in;
            if (!inputs[i] || stat(inputs[i], &in) != 0) continue;
            if (in.st_dev == sb.st_dev && in.st_ino == sb.st_ino)
                return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                                   "%s: is also an input of this command (%s); choose another "
                                   "output",
                                   path, inputs[i]);
        }
    }
    if (kind == ATTEST_OUTPUT_RESULTS) {
        /* A killed campaign's rows and repros belong to the file of the same name. */
        char sib[PATH_MAX + 16];
        static const char *const sibs[] = {".rows", ATTEST_RESULTS_REPRO_DIR_SUFFIX};
        for (size_t i = 0; i < 2; i++) {
            struct stat s2;
            snprintf(sib, sizeof sib, "%s%s", path, sibs[i]);
            if (exists(sib, &s2) && !force)
                return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                                   "%s: holds results of an earlier campaign (%s exists); use "
                                   "--force to replace them, or choose another output path",
                                   path, sib);
        }
    }
    if (!present) return folder_check(path);
    if (kind == ATTEST_OUTPUT_JUNIT || kind == ATTEST_OUTPUT_JSON || kind == ATTEST_OUTPUT_HTML) {
        if (!is_attest_report(path, kind))
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                               "%s: exists and is not %s attest wrote; not replaced", path,
                               report_name(kind));
        attest_clear_error();
        return ATTEST_OK;
    }
    if (kind == ATTEST_OUTPUT_RESULTS) {
        if (!has_hdf5_signature(path) || attest_results_probe(path, 0) != ATTEST_OK)
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                               "%s: exists and is not an attest results file; not replaced", path);
    } else if (!has_hdf5_signature(path)) {
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                           "%s: exists and is not an HDF5 file; not replaced", path);
    }
    if (!force)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                           "%s: exists; use --force to replace it, or choose another output path",
                           path);
    attest_clear_error();
    return ATTEST_OK;
}

struct attest_output_lock {
    int fd;
    char path[PATH_MAX + 8];
};

attest_status attest_output_lock_take(const char *path, const char *holder,
                                      attest_output_lock **out)
{
    ATTEST_RETURN_IF(!path || !out, ATTEST_ERR_INVALID_ARGUMENT, "lock: NULL argument");
    *out = NULL;
    attest_output_lock *l = calloc(1, sizeof *l);
    ATTEST_RETURN_IF(!l, ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    int n = snprintf(l->path, sizeof l->path, "%s.lock", path);
    if (n < 0 || (size_t)n >= sizeof l->path) {
        free(l);
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: path too long", path);
    }
    /* A lock file unlinked by its holder between our open and flock is a lock on nothing:
     * take it again until the locked file is the one the name points at. */
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(l->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);
        if (fd < 0) {
            int e = errno;
            /* Named by the output path: the user asked for it, not for its lock beside it (a
             * missing folder is refused earlier, by attest_output_check). */
            attest_status st = attest_fail(ATTEST_ERR_IO,
                                           "%s: cannot be written there (its lock file %s: %s)",
                                           path, l->path, strerror(e));
            free(l);
            return st;
        }
        struct stat a, b;
        if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
            close(fd);
            free(l);
            return attest_fail(ATTEST_ERR_IO, "%s.lock: is not a regular file", path);
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            char who[512] = "";
            ssize_t k = pread(fd, who, sizeof who - 1, 0);
            close(fd);
            free(l);
            who[k > 0 ? k : 0] = '\0';
            char *nl = strchr(who, '\n');
            if (nl) *nl = '\0';
            for (char *p = who; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
            return attest_fail(ATTEST_ERR_IO,
                               "%s: is being written by another attest (%s); wait for it or "
                               "choose another output path",
                               path, who[0] ? who : "holder unknown");
        }
        if (stat(l->path, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
            close(fd);
            continue;
        }
        char line[600];
        int len = snprintf(line, sizeof line, "pid %ld: %.500s\n", (long)getpid(),
                           holder && holder[0] ? holder : "attest");
        if (len > (int)sizeof line - 1) len = (int)sizeof line - 1;
        if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != (ssize_t)len) {
            /* The lock holds without the note; only the message of a second writer suffers. */
        }
        l->fd = fd;
        *out = l;
        return ATTEST_OK;
    }
    free(l);
    return attest_fail(ATTEST_ERR_IO, "%s.lock: keeps changing; another attest is using it", path);
}

void attest_output_lock_release(attest_output_lock *l)
{
    if (!l) return;
    (void)unlink(l->path);
    close(l->fd);
    free(l);
}
