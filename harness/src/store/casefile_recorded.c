/* attest case files: recorded outputs (a failing run kept with what it was judged under) and
 * writing a new case file without ever replacing one (attest run --save-failures). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "casefile_internal.h"
#include "child_probe.h"

/* The policy text is a few KiB; the cap only keeps a corrupt attribute from asking for more. */
#define RECORDED_POLICY_MAX (1u << 20)

attest_status attest_cf_write_recorded(hid_t g, const char *where,
                                       const attest_casefile_recorded *r)
{
    ATTEST_FORWARD(attest_h5_write_attr_int(g, where, "recorded", 1));
    const struct {
        const char *key, *value;
    } attrs[] = {
        {"verdict", r->verdict},         {"failed_gates", r->failed_gates},
        {"message", r->message},         {"conventions", r->conventions},
        {"policy", r->policy_name},      {"policy_hash", r->policy_hash},
        {"policy_text", r->policy_text},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (attrs[i].value)
            ATTEST_FORWARD(attest_h5_write_attr_string(g, where, attrs[i].key, attrs[i].value));
    return ATTEST_OK;
}

/* An optional string attribute: absent leaves buf empty. */
static attest_status read_opt(hid_t g, const char *where, const char *key, char *buf, size_t cap)
{
    buf[0] = '\0';
    attest_status st = attest_h5_read_attr_string(g, where, key, buf, cap, ATTEST_H5_ONE_LINE);
    return st == ATTEST_ERR_NOT_FOUND ? ATTEST_OK : st;
}

attest_status attest_casefile_load_recorded(const char *path, const char *group,
                                            attest_casefile_recorded_info *out)
{
    if (!path || !out)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                           "attest_casefile_load_recorded: NULL argument");
    memset(out, 0, sizeof *out);
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    char where[600];
    attest_cf_prefix(where, sizeof where, path, attest_cf_is_root(group) ? NULL : group);
    hid_t fid = H5I_INVALID_HID, g = H5I_INVALID_HID, cg = H5I_INVALID_HID;
    attest_status st = attest_cf_open_read(path, &fid);
    if (st == ATTEST_OK) st = attest_cf_open_group(fid, path, group, &g);
    int64_t marked = 0;
    if (st == ATTEST_OK) {
        if (attest_h5_link_exists(g, "candidate")) cg = H5Gopen2(g, "candidate", H5P_DEFAULT);
        if (cg >= 0) st = attest_h5_read_attr_int(cg, where, "recorded", &marked);
        if (cg < 0 || st == ATTEST_ERR_NOT_FOUND || (st == ATTEST_OK && marked != 1))
            st = attest_fail(ATTEST_ERR_NOT_FOUND,
                             "%sno recorded outputs (candidate/ with attribute recorded = 1; "
                             "attest run --save-failures DIR writes them)",
                             where);
    }
    if (st == ATTEST_OK) st = read_opt(cg, where, "candidate", out->candidate, sizeof out->candidate);
    if (st == ATTEST_OK) st = read_opt(cg, where, "verdict", out->verdict, sizeof out->verdict);
    if (st == ATTEST_OK)
        st = read_opt(cg, where, "failed_gates", out->failed_gates, sizeof out->failed_gates);
    if (st == ATTEST_OK) st = read_opt(cg, where, "message", out->message, sizeof out->message);
    if (st == ATTEST_OK)
        st = read_opt(cg, where, "conventions", out->conventions, sizeof out->conventions);
    if (st == ATTEST_OK) st = read_opt(cg, where, "policy", out->policy_name, sizeof out->policy_name);
    if (st == ATTEST_OK)
        st = read_opt(cg, where, "policy_hash", out->policy_hash, sizeof out->policy_hash);
    if (st == ATTEST_OK && attest_h5_attr_exists(cg, "policy_text") == 1) {
        out->policy_text = malloc(RECORDED_POLICY_MAX);
        if (!out->policy_text) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%spolicy_text", where);
        else
            st = attest_h5_read_attr_string(cg, where, "policy_text", out->policy_text,
                                            RECORDED_POLICY_MAX, 0);
    }
    if (cg >= 0) H5Gclose(cg);
    if (g >= 0) H5Gclose(g);
    if (fid >= 0) H5Fclose(fid);
    attest_h5_quiet_end(&q);
    if (st != ATTEST_OK) attest_casefile_recorded_free(out);
    return st;
}

void attest_casefile_recorded_free(attest_casefile_recorded_info *r)
{
    if (!r) return;
    free(r->policy_text);
    r->policy_text = NULL;
}

/* --- a case file written in a child process ------------------------------------------------ */

typedef struct save_job {
    const char *path;
    const attest_case *c;
    const attest_casefile_extras *x;
} save_job;

typedef struct save_report {
    int32_t status;
    char message[512];
} save_report;

static int save_child(int fd, void *arg)
{
    const save_job *j = arg;
    save_report r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)attest_casefile_save(j->path, NULL, j->c, j->x);
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    (void)child_probe_write_all(fd, &r, sizeof r);
    _exit(0); /* HDF5's exit-time clean-up after a failed write is what must not run */
}

attest_status attest_cf_save_in_child(const char *write_path, const char *name, const char *doing,
                                      const attest_case *c, const attest_casefile_extras *x)
{
    save_job j = {write_path, c, x};
    child_probe p;
    ATTEST_FORWARD(child_probe_spawn_within(name, doing, save_child, &j, 0, &p));
    save_report r;
    size_t got = child_probe_read(&p, &r, sizeof r);
    int wstatus = child_probe_finish(&p);
    if (got != sizeof r) {
        char end[96];
        return attest_fail(ATTEST_ERR_IO, "%s: writing it %s (disk full?)", name,
                           child_probe_end(&p, wstatus, end, sizeof end));
    }
    if (r.status == ATTEST_OK) return ATTEST_OK;
    r.message[sizeof r.message - 1] = '\0';
    if (r.status < 0 || r.status >= ATTEST_STATUS_COUNT_) r.status = ATTEST_ERR_INTERNAL;
    return attest_fail((attest_status)r.status, "%s", r.message);
}

/* --- a new file, linked into place ----------------------------------------------------------- */

attest_status attest_casefile_save_new(const char *path, const attest_case *c,
                                       const attest_casefile_extras *extras, int *existed)
{
    if (!path || !c || !existed)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_save_new: NULL argument");
    struct stat sb;
    *existed = lstat(path, &sb) == 0;
    if (*existed) return ATTEST_OK; /* the common case, without writing a file for nothing */
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return attest_fail(ATTEST_ERR_IO, "%s: path too long", path);
    (void)remove(tmp);
    attest_status st = attest_cf_save_in_child(tmp, path, "write a case file", c, extras);
    /* link() refuses an existing name: a file that appeared meanwhile (another run saving the
     * same seed) is kept, which rename() would have replaced. */
    if (st == ATTEST_OK && link(tmp, path) != 0) {
        if (errno == EEXIST) *existed = 1;
        else st = attest_fail(ATTEST_ERR_IO, "%s: cannot link into place: %s", path, strerror(errno));
    }
    (void)remove(tmp);
    return st;
}
