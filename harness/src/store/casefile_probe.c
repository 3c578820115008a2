/* attest case files: loading in a child process first, so that a file whose corrupt HDF5
 * metadata crashes the HDF5 library gives an error instead of killing the caller.
 *
 * Why: HDF5 1.10 trusts some on-disk structures. A flipped byte in a variable-length string's
 * heap descriptor makes H5HG_read copy from a wild address; a corrupt attribute message can crash
 * H5Aexists. attest validates everything it reads through the HDF5 API, but cannot validate what
 * the library parses before handing it over. Loading is deterministic, so a file that loads in a
 * child loads in the caller too.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/casefile.h"
#include "child_probe.h"

/* What the child reports: its status, then the one-line message. */
typedef struct probe_report {
    int32_t status;
    char message[512];
} probe_report;

static attest_status load_one(const char *path, const char *group)
{
    attest_case c;
    attest_status st = attest_casefile_load(path, group, &c);
    if (st == ATTEST_OK) attest_case_free(&c);
    return st;
}

static attest_status load_each(const char *group, attest_kernel kernel, void *user)
{
    (void)kernel;
    return load_one(user, group);
}

static attest_status probe_in_child(const char *path, const char *group)
{
    if (group) return load_one(path, group);
    return attest_casefile_list_groups(path, load_each, (void *)path);
}

/* --- one status for the whole file ----------------------------------------------------------- */

typedef struct probe_target {
    const char *path, *group;
} probe_target;

static int probe_child(int fd, void *arg)
{
    const probe_target *t = arg;
    probe_report r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)probe_in_child(t->path, t->group);
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
}

attest_status attest_casefile_probe(const char *path, const char *group)
{
    if (!path) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_probe: NULL path");
    probe_target t = {path, group};
    child_probe p;
    attest_status st = child_probe_spawn(path, "probe the file", probe_child, &t, &p);
    if (st != ATTEST_OK) return st;
    probe_report r;
    size_t got = child_probe_read(&p, &r, sizeof r);
    int wstatus = child_probe_finish(&p);
    if (got == sizeof r && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        r.message[sizeof r.message - 1] = '\0';
        if (r.status == ATTEST_OK) return ATTEST_OK;
        if (r.status < 0 || r.status >= ATTEST_STATUS_COUNT_) r.status = ATTEST_ERR_INTERNAL;
        return attest_fail((attest_status)r.status, "%s", r.message);
    }
    char end[96];
    if (WIFSIGNALED(wstatus) || p.timed_out)
        return attest_fail(ATTEST_ERR_FORMAT, "%s: reading it %s: its HDF5 metadata is corrupt",
                           path, child_probe_file_end(&p, wstatus, end, sizeof end));
    return attest_fail(ATTEST_ERR_FORMAT,
                       "%s: reading it stopped a probe process (exit %d): its HDF5 metadata is "
                       "corrupt",
                       path, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}

/* --- a status per case ----------------------------------------------------------------------- */

/* The child streams: REC_BEGIN before loading a case (so a crash names it), REC_CASE with its
 * outcome, then REC_END; or REC_FILE_ERROR when the cases cannot be listed. */
enum { REC_BEGIN = 1, REC_CASE = 2, REC_FILE_ERROR = 3, REC_END = 4 };

typedef struct case_record {
    int32_t type;
    attest_casefile_probe_case c;
} case_record;

typedef struct case_list {
    attest_casefile_probe_case *items;
    size_t count, cap;
} case_list;

static attest_status push_case(case_list *l, const attest_casefile_probe_case *c, const char *what)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        attest_casefile_probe_case *p = realloc(l->items, cap * sizeof *p);
        if (!p) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s", what);
        l->items = p;
        l->cap = cap;
    }
    l->items[l->count++] = *c;
    return ATTEST_OK;
}

static attest_status collect_case(const char *group, attest_kernel kernel, void *user)
{
    attest_casefile_probe_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", group);
    c.kernel = kernel;
    return push_case(user, &c, "listing cases");
}

static int send_record(int fd, int32_t type, const attest_casefile_probe_case *c)
{
    case_record r;
    memset(&r, 0, sizeof r);
    r.type = type;
    if (c) r.c = *c;
    return child_probe_write_all(fd, &r, sizeof r);
}

typedef struct cases_target {
    const char *path;
    attest_casefile_probe_fn check;
    void *user;
} cases_target;

static int cases_child(int fd, void *arg)
{
    const cases_target *t = arg;
    case_list l = {0};
    attest_status st = attest_casefile_list_groups(t->path, collect_case, &l);
    if (st != ATTEST_OK) {
        attest_casefile_probe_case c;
        memset(&c, 0, sizeof c);
        c.status = st;
        snprintf(c.message, sizeof c.message, "%s", attest_last_error());
        (void)send_record(fd, REC_FILE_ERROR, &c);
        return 0;
    }
    for (size_t i = 0; i < l.count; i++) {
        attest_casefile_probe_case *g = &l.items[i];
        if (send_record(fd, REC_BEGIN, g)) return 0;
        attest_case c;
        g->status = attest_casefile_load(t->path, g->name, &c);
        if (g->status == ATTEST_OK) {
            if (t->check) g->status = t->check(t->path, g->name, &c, &g->found, t->user);
            attest_case_free(&c);
        }
        if (g->status != ATTEST_OK) snprintf(g->message, sizeof g->message, "%s", attest_last_error());
        if (send_record(fd, REC_CASE, g)) return 0;
    }
    (void)send_record(fd, REC_END, NULL);
    return 0;
}

attest_status attest_casefile_probe_cases(const char *path, attest_casefile_probe_fn check,
                                          void *user, attest_casefile_probe_result *out)
{
    if (!out) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_probe_cases: NULL out");
    memset(out, 0, sizeof *out);
    if (!path)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_probe_cases: NULL path");
    cases_target t = {path, check, user};
    child_probe p;
    attest_status st = child_probe_spawn(path, "read it", cases_child, &t, &p);
    if (st != ATTEST_OK) return st;
    case_list l = {0};
    int ended = 0, open_case = 0;
    attest_casefile_probe_case begun;
    memset(&begun, 0, sizeof begun);
    for (;;) {
        case_record r;
        if (child_probe_read(&p, &r, sizeof r) < sizeof r) break;
        r.c.name[sizeof r.c.name - 1] = '\0';
        r.c.message[sizeof r.c.message - 1] = '\0';
        /* Messages quote names from the file, which a corrupt file fills with any bytes. */
        for (char *p = r.c.message; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
        if (r.type == REC_BEGIN) {
            begun = r.c;
            open_case = 1;
        } else if (r.type == REC_CASE) {
            open_case = 0;
            if (st == ATTEST_OK) st = push_case(&l, &r.c, "probing a case file");
        } else if (r.type == REC_FILE_ERROR) {
            out->file_status = r.c.status ? r.c.status : ATTEST_ERR_FORMAT;
            snprintf(out->file_message, sizeof out->file_message, "%s", r.c.message);
            ended = 1;
        } else if (r.type == REC_END) {
            ended = 1;
        }
    }
    int wstatus = child_probe_finish(&p);
    out->cases = l.items;
    out->count = l.count;
    if (st != ATTEST_OK) {
        attest_casefile_probe_result_free(out);
        return st;
    }
    if (ended) return ATTEST_OK;
    char end[96];
    (void)child_probe_file_end(&p, wstatus, end, sizeof end);
    out->file_status = ATTEST_ERR_FORMAT;
    if (open_case)
        snprintf(out->file_message, sizeof out->file_message,
                 "%s: %s: reading this case %s: the file's HDF5 metadata is corrupt", path,
                 begun.name, end);
    else
        snprintf(out->file_message, sizeof out->file_message,
                 "%s: listing its cases %s: the file's HDF5 metadata is corrupt", path, end);
    return ATTEST_OK;
}

void attest_casefile_probe_result_free(attest_casefile_probe_result *r)
{
    if (!r) return;
    free(r->cases);
    memset(r, 0, sizeof *r);
}
