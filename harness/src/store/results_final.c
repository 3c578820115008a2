/* attest results store: repro files while a campaign runs, and the final file built at close.
 *
 * A repro is written as its own case file (RESULTS.h5.repro/case-<id>.h5, renamed into place when
 * whole) rather than into the live results file: adding groups and datasets to the live file
 * between flushes would give a kill more to interrupt than an appended row does. At close the
 * final file gathers everything: provenance with the end state, the table (compressed), and each
 * repro copied in as "repro/<id>". It replaces the live file by rename, so readers see either the
 * live file or the whole final one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attest/casefile.h"
#include "casefile_internal.h"
#include "results_internal.h"

#define COPY_BLOCK_ROWS 1024
#define FINAL_DEFLATE_LEVEL 4

/* --- repro files ------------------------------------------------------------------------- */

/* The case tensor that holds output k of a record: by name, else the k-th output tensor. */
static const attest_tensor *output_tensor(const attest_case *c, const attest_case_record *rec,
                                          int k)
{
    const attest_tensor *t = attest_case_tensor_const(c, rec->outputs[k].output);
    if (t && t->role == ATTEST_ROLE_OUTPUT) return t;
    int seen = 0;
    for (size_t i = 0; i < c->num_tensors; i++) {
        if (c->tensors[i].role != ATTEST_ROLE_OUTPUT) continue;
        if (seen++ == k) return &c->tensors[i];
    }
    return NULL;
}

attest_status attest_results_write_repro_file(const char *results_path, int *dir_made,
                                              const attest_case_record *rec, const attest_case *c,
                                              const attest_case_outputs *outputs)
{
    char dir[PATH_MAX], file[PATH_MAX], tmp[PATH_MAX + 8];
    ATTEST_FORWARD(attest_results_repro_dir(results_path, dir, sizeof dir));
    ATTEST_FORWARD(attest_results_repro_file(results_path, rec->case_id, file, sizeof file));
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    if (!*dir_made) {
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return attest_fail(ATTEST_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
        *dir_made = 1;
    }

    /* Reference outputs as float64 under the output's own name (the stored expected output),
     * the candidate's bytes under candidate/<name>, as docs/case-format.md describes. */
    attest_casefile_output expected[ATTEST_RECORD_MAX_OUTPUTS], candidate[ATTEST_RECORD_MAX_OUTPUTS];
    size_t ne = 0, nc = 0;
    int n = outputs ? outputs->num_outputs : 0;
    if (n > ATTEST_RECORD_MAX_OUTPUTS) n = ATTEST_RECORD_MAX_OUTPUTS;
    for (int k = 0; k < n; k++) {
        const attest_tensor *t = output_tensor(c, rec, k);
        if (!t) continue;
        attest_casefile_output o = attest_casefile_output_of(t);
        if (outputs->reference[k]) {
            expected[ne] = o;
            expected[ne].dtype = ATTEST_DTYPE_F64;
            expected[ne].data = outputs->reference[k];
            ne++;
        }
        if (outputs->candidate[k] && outputs->candidate_bytes[k] == t->nbytes) {
            candidate[nc] = o;
            candidate[nc].data = outputs->candidate[k];
            nc++;
        }
    }
    char note[512], replay[PATH_MAX + 128], gates[96];
    attest_gate_mask_string(rec->failed_gates, gates, sizeof gates);
    snprintf(note, sizeof note, "case %llu: %s%s%s%s", (unsigned long long)rec->case_id,
             attest_verdict_name(rec->verdict), gates[0] ? " (" : "", gates, gates[0] ? ")" : "");
    if (rec->message[0]) {
        size_t used = strlen(note);
        snprintf(note + used, sizeof note - used, ": %.*s", (int)sizeof rec->message,
                 rec->message);
    }
    attest_results_replay_command(results_path, rec->case_id, rec->candidate, replay,
                                  sizeof replay);
    attest_casefile_extras x;
    memset(&x, 0, sizeof x);
    x.expected = expected;
    x.num_expected = ne;
    x.candidate = candidate;
    x.num_candidate = nc;
    x.candidate_name = rec->candidate[0] ? rec->candidate : NULL;
    x.note = note;
    x.replay = replay;
    (void)remove(tmp);
    attest_status st = attest_cf_save_in_child(tmp, tmp, "write a repro", c, &x);
    if (st != ATTEST_OK) {
        (void)remove(tmp);
        return st;
    }
    if (rename(tmp, file) != 0) {
        int e = errno;
        (void)remove(tmp);
        return attest_fail(ATTEST_ERR_IO, "%s: cannot rename into place: %s", file, strerror(e));
    }
    return ATTEST_OK;
}

/* Returns 1 for the names the writer puts into a repro directory. */
static int is_repro_name(const char *name)
{
    if (strncmp(name, "case-", 5) != 0) return 0;
    const char *p = name + 5;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return !strcmp(p, ".h5") || !strcmp(p, ".h5.tmp");
}

attest_status attest_results_remove_repro_dir(const char *results_path)
{
    char dir[PATH_MAX];
    ATTEST_FORWARD(attest_results_repro_dir(results_path, dir, sizeof dir));
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return ATTEST_OK;
        return attest_fail(ATTEST_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    }
    attest_status st = ATTEST_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!is_repro_name(e->d_name)) {
            st = attest_fail(ATTEST_ERR_IO, "%s: holds %s, which attest did not write; not removed",
                             dir, e->d_name);
            break;
        }
        char f[PATH_MAX + 300];
        snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
        if (unlink(f) != 0 && errno != ENOENT) {
            st = attest_fail(ATTEST_ERR_IO, "%s: cannot remove: %s", f, strerror(errno));
            break;
        }
    }
    closedir(d);
    if (st == ATTEST_OK && rmdir(dir) != 0 && errno != ENOENT)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot remove: %s", dir, strerror(errno));
    return st;
}

/* --- the final file ------------------------------------------------------------------------ */

/* Copies the table in blocks, in the file's own packed type (no conversion either way). */
static attest_status copy_rows(hid_t src, hid_t dst, hid_t file_type, const char *path)
{
    hid_t space = H5Dget_space(src);
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (space >= 0) H5Sclose(space);
    if (n < 0) return attest_h5_fail(ATTEST_ERR_IO, path, "cannot read the size of the cases table");
    hsize_t total = (hsize_t)n;
    if (total == 0) return ATTEST_OK;
    if (H5Dset_extent(dst, &total) < 0)
        return attest_h5_fail(ATTEST_ERR_IO, path, "cannot size the final cases table");
    void *buf = malloc(COPY_BLOCK_ROWS * H5Tget_size(file_type));
    ATTEST_RETURN_IF(!buf, ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    attest_status st = ATTEST_OK;
    for (hsize_t start = 0; start < total && st == ATTEST_OK; start += COPY_BLOCK_ROWS) {
        hsize_t count = total - start < COPY_BLOCK_ROWS ? total - start : COPY_BLOCK_ROWS;
        hid_t ms = H5Screate_simple(1, &count, NULL);
        hid_t fs_src = H5Dget_space(src), fs_dst = H5Dget_space(dst);
        if (ms < 0 || fs_src < 0 || fs_dst < 0 ||
            H5Sselect_hyperslab(fs_src, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
            H5Sselect_hyperslab(fs_dst, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
            H5Dread(src, file_type, ms, fs_src, H5P_DEFAULT, buf) < 0 ||
            H5Dwrite(dst, file_type, ms, fs_dst, H5P_DEFAULT, buf) < 0)
            st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot copy rows into the final file");
        if (ms >= 0) H5Sclose(ms);
        if (fs_src >= 0) H5Sclose(fs_src);
        if (fs_dst >= 0) H5Sclose(fs_dst);
    }
    free(buf);
    return st;
}

/* Copies each repro file's case (its root group) to repro/<id> of the final file. */
static attest_status copy_repros(hid_t final, const attest_results_final_spec *s)
{
    hid_t g = H5Gcreate2(final, ATTEST_RESULTS_REPRO_GROUP, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return attest_h5_fail(ATTEST_ERR_IO, s->path, "cannot create group repro");
    attest_status st = ATTEST_OK;
    for (size_t i = 0; i < s->num_repros && st == ATTEST_OK; i++) {
        char file[PATH_MAX], name[32];
        st = attest_results_repro_file(s->path, s->repro_ids[i], file, sizeof file);
        if (st != ATTEST_OK) break;
        snprintf(name, sizeof name, "%llu", (unsigned long long)s->repro_ids[i]);
        hid_t src = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (src < 0) {
            st = attest_h5_fail(ATTEST_ERR_IO, file, "cannot open repro");
            break;
        }
        if (H5Ocopy(src, "/", g, name, H5P_DEFAULT, H5P_DEFAULT) < 0)
            st = attest_h5_fail(ATTEST_ERR_IO, file, "cannot copy repro into the results file");
        if (H5Fclose(src) < 0 && st == ATTEST_OK)
            st = attest_h5_fail(ATTEST_ERR_IO, file, "cannot close repro");
    }
    if (H5Gclose(g) < 0 && st == ATTEST_OK)
        st = attest_h5_fail(ATTEST_ERR_IO, s->path, "cannot close group repro");
    return st;
}

static int deflate_usable(void)
{
    unsigned config = 0;
    return H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 && H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0 &&
           H5Zget_filter_info(H5Z_FILTER_DEFLATE, &config) >= 0 &&
           (config & H5Z_FILTER_CONFIG_ENCODE_ENABLED);
}

attest_status attest_results_build_final(const attest_results_final_spec *s)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.final%ld", s->path, (long)getpid());
    hid_t mem_type = H5I_INVALID_HID, file_type = H5I_INVALID_HID;
    hid_t live = H5I_INVALID_HID, live_cases = H5I_INVALID_HID;
    hid_t final = H5I_INVALID_HID, final_cases = H5I_INVALID_HID, fapl = H5I_INVALID_HID;
    attest_status st = attest_results_make_types(&mem_type, &file_type);
    if (st != ATTEST_OK) goto out;
    hid_t dapl = attest_results_external_dapl();
    if (dapl >= 0) live = H5Fopen(s->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (live >= 0) live_cases = H5Dopen2(live, ATTEST_RESULTS_CASES, dapl);
    if (dapl >= 0) H5Pclose(dapl);
    if (live < 0 || live_cases < 0) {
        st = attest_h5_fail(ATTEST_ERR_IO, s->path, "cannot reopen to finish");
        goto out;
    }
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 ||
        (final = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) < 0) {
        st = attest_h5_fail(ATTEST_ERR_IO, tmp, "cannot create");
        goto out;
    }
    st = attest_results_write_provenance(final, s->path, s->prov, s->policy_text, s->state,
                                         s->end_time, s->duration_s);
    if (st == ATTEST_OK)
        st = attest_results_create_table(final, s->path, file_type, NULL, s->chunk_rows,
                                         deflate_usable() ? FINAL_DEFLATE_LEVEL : -1,
                                         &final_cases);
    if (st == ATTEST_OK) st = copy_rows(live_cases, final_cases, file_type, s->path);
    if (st == ATTEST_OK) st = copy_repros(final, s);
    if (final_cases >= 0 && H5Dclose(final_cases) < 0 && st == ATTEST_OK)
        st = attest_h5_fail(ATTEST_ERR_IO, tmp, "cannot close the cases table");
    final_cases = H5I_INVALID_HID;
    if (H5Fclose(final) < 0 && st == ATTEST_OK) st = attest_h5_fail(ATTEST_ERR_IO, tmp, "cannot close");
    final = H5I_INVALID_HID;
    if (st == ATTEST_OK && s->fsync) {
        int fd = open(tmp, O_RDONLY);
        if (fd < 0 || fsync(fd) != 0)
            st = attest_fail(ATTEST_ERR_IO, "%s: fsync: %s", tmp, strerror(errno));
        if (fd >= 0) close(fd);
    }
    if (st == ATTEST_OK && rename(tmp, s->path) != 0)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot rename %s into place: %s", s->path, tmp,
                         strerror(errno));
    if (st == ATTEST_OK && s->rows_path && unlink(s->rows_path) != 0 && errno != ENOENT)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot remove: %s", s->rows_path, strerror(errno));
    if (st == ATTEST_OK) st = attest_results_remove_repro_dir(s->path);
out:
    if (final_cases >= 0) H5Dclose(final_cases);
    if (final >= 0) H5Fclose(final);
    if (live_cases >= 0) H5Dclose(live_cases);
    if (live >= 0) H5Fclose(live);
    if (fapl >= 0) H5Pclose(fapl);
    if (mem_type >= 0) H5Tclose(mem_type);
    if (file_type >= 0) H5Tclose(file_type);
    (void)remove(tmp);
    return st;
}
