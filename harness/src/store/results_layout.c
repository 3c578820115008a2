/* attest results store: what every results file holds, live or final: the provenance group and
 * the (empty) cases table with its legends.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "attest/build_info.h"
#include "attest/compare.h"
#include "results_internal.h"

void attest_results_utc_now(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "unknown");
}

void attest_results_provenance_init(attest_results_provenance *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->attest_version, sizeof p->attest_version, "%s", ATTEST_VERSION);
    snprintf(p->git_commit, sizeof p->git_commit, "%s", ATTEST_GIT_COMMIT);
    snprintf(p->c_compiler, sizeof p->c_compiler, "%s", ATTEST_C_COMPILER);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(p->host, sizeof p->host, "%.48s %.64s %.64s %.32s", u.sysname, u.nodename,
                 u.release, u.machine);
    attest_results_utc_now(p->start_time, sizeof p->start_time);
}

/* --- provenance (shared with the final file) --------------------------------------------- */

attest_status attest_results_write_provenance(hid_t file, const char *path,
                                              const attest_results_provenance *p,
                                              const char *policy_text, const char *state,
                                              const char *end_time, double duration_s)
{
    char where[ATTEST_RESULTS_WHERE_MAX];
    snprintf(where, sizeof where, "%s: ", path);
    ATTEST_FORWARD(attest_h5_write_attr_string(file, where, "format", ATTEST_RESULTS_FORMAT_NAME));
    ATTEST_FORWARD(
        attest_h5_write_attr_int(file, where, "schema_version", ATTEST_RESULTS_SCHEMA_VERSION));
    hid_t g = H5Gcreate2(file, ATTEST_RESULTS_PROVENANCE, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return attest_h5_fail(ATTEST_ERR_IO, path, "cannot create group provenance");
    const struct {
        const char *name, *value;
    } strs[] = {
        {"attest_version", p->attest_version}, {"git_commit", p->git_commit},
        {"c_compiler", p->c_compiler},         {"host", p->host},
        {"cuda_version", p->cuda_version},     {"device", p->device},
        {"kernel", p->kernel},                 {"candidate", p->candidate},
        {"policy_name", p->policy_name},       {"policy_hash", p->policy_hash},
        {"policy_origin", p->policy_origin},   {"command_line", p->command_line},
        {"jobs", p->jobs},                     {"start_time", p->start_time},         {"end_time", end_time},
        {"state", state},
    };
    attest_status st = ATTEST_OK;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0] && st == ATTEST_OK; i++)
        st = attest_h5_write_attr_string(g, where, strs[i].name, strs[i].value);
    if (st == ATTEST_OK) st = attest_h5_write_attr_u64(g, where, "seed", p->seed);
    if (st == ATTEST_OK)
        st = attest_h5_write_attr_u64(g, where, "cases_planned", p->cases_planned);
    if (st == ATTEST_OK)
        st = attest_h5_write_attr_double(g, where, "duration_seconds", duration_s);
    if (st == ATTEST_OK) {
        /* The policy text can exceed an attribute's 64 KiB: a scalar string dataset. */
        const char *text = policy_text ? policy_text : "";
        hid_t t = H5Tcopy(H5T_C_S1);
        hid_t s = H5Screate(H5S_SCALAR);
        hid_t d = H5I_INVALID_HID;
        if (t < 0 || s < 0 || H5Tset_size(t, strlen(text) + 1) < 0 ||
            H5Tset_cset(t, H5T_CSET_UTF8) < 0 ||
            (d = H5Dcreate2(g, ATTEST_RESULTS_POLICY_TEXT, t, s, H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT)) < 0 ||
            H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) < 0)
            st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot write provenance/policy_text");
        if (d >= 0 && H5Dclose(d) < 0 && st == ATTEST_OK)
            st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot close provenance/policy_text");
        if (s >= 0) H5Sclose(s);
        if (t >= 0) H5Tclose(t);
    }
    if (H5Gclose(g) < 0 && st == ATTEST_OK)
        st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot close group provenance");
    return st;
}

hid_t attest_results_external_dapl(void)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (dapl >= 0 && H5Pset_efile_prefix(dapl, "${ORIGIN}") < 0) {
        H5Pclose(dapl);
        return H5I_INVALID_HID;
    }
    return dapl;
}

/* Creates the empty "cases" table with the legend attributes: rows in the external raw file
 * `external` (the live table), or chunked with deflate (< 0: none) when external is NULL. */
attest_status attest_results_create_table(hid_t file, const char *path, hid_t file_type,
                                          const char *external, uint32_t chunk_rows, int deflate,
                                          hid_t *out)
{
    hsize_t dims = 0, maxdims = H5S_UNLIMITED, chunk = chunk_rows;
    hid_t space = H5Screate_simple(1, &dims, &maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    attest_status st = ATTEST_OK;
    *out = H5I_INVALID_HID;
    int bad = space < 0 || dcpl < 0 || H5Pset_obj_track_times(dcpl, 0) < 0;
    if (!bad && external)
        bad = H5Pset_external(dcpl, external, 0, H5F_UNLIMITED) < 0;
    else if (!bad)
        bad = H5Pset_chunk(dcpl, 1, &chunk) < 0 ||
              (deflate >= 0 &&
               (H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, (unsigned)deflate) < 0));
    if (bad) {
        st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot set up the cases table");
        goto out;
    }
    /* The raw file is named relative to the results file (external storage resolves against
     * "${ORIGIN}", the file's own directory), so a killed campaign's pair can be moved. */
    hid_t dapl = external ? attest_results_external_dapl() : H5Pcreate(H5P_DATASET_ACCESS);
    *out = dapl < 0 ? H5I_INVALID_HID
                    : H5Dcreate2(file, ATTEST_RESULTS_CASES, file_type, space, H5P_DEFAULT, dcpl,
                                 dapl);
    if (dapl >= 0) H5Pclose(dapl);
    if (*out < 0) {
        st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot create the cases table");
        goto out;
    }
    char legend[512], where[ATTEST_RESULTS_WHERE_MAX];
    snprintf(where, sizeof where, "%s: ", path);
    size_t used = 0;
    legend[0] = '\0';
    for (int v = 0; v < ATTEST_VERDICT_COUNT_; v++) {
        int n = snprintf(legend + used, sizeof legend - used, "%s%d=%s", v ? "," : "", v,
                         attest_verdict_name((attest_verdict)v));
        if (n > 0 && (size_t)n < sizeof legend - used) used += (size_t)n;
    }
    st = attest_h5_write_attr_string(*out, where, "verdict_values", legend);
    used = 0;
    legend[0] = '\0';
    for (int g = 0; g < ATTEST_GATE_COUNT_; g++) {
        int n = snprintf(legend + used, sizeof legend - used, "%s%d=%s", g ? "," : "", g,
                         attest_gate_name((attest_gate)g));
        if (n > 0 && (size_t)n < sizeof legend - used) used += (size_t)n;
    }
    if (st == ATTEST_OK) st = attest_h5_write_attr_string(*out, where, "gate_bits", legend);
    used = 0;
    legend[0] = '\0';
    for (unsigned b = 0; b < ATTEST_INTEGRITY_COUNT_; b++) {
        int n = snprintf(legend + used, sizeof legend - used, "%s%u=%s", b ? "," : "", b,
                         attest_integrity_name(b));
        if (n > 0 && (size_t)n < sizeof legend - used) used += (size_t)n;
    }
    if (st == ATTEST_OK) st = attest_h5_write_attr_string(*out, where, "integrity_bits", legend);
    if (st == ATTEST_OK)
        st = attest_h5_write_attr_string(*out, where, "repro_values",
                                         "0=none,1=stored in repro/<case_id>,2=skipped (limit)");
out:
    if (st != ATTEST_OK && *out >= 0) {
        H5Dclose(*out);
        *out = H5I_INVALID_HID;
    }
    if (space >= 0) H5Sclose(space);
    if (dcpl >= 0) H5Pclose(dcpl);
    return st;
}
