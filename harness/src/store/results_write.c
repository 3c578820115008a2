/* attest results store: the writer. A campaign writes a "live" file that survives SIGKILL at any
 * moment; closing it rebuilds the final file (compressed table, repros inside) and renames it over
 * the live one, so the published file is always whole.
 *
 * Why the live file survives a kill:
 *  - Superblock version 0 (libver bounds earliest..1.8). Version 3 superblocks (libver 1.10+,
 *    required by SWMR) carry an "open for write" flag that a dead writer leaves set; HDF5 then
 *    refuses the file until h5clear runs. Checked after creation; a file that has one is refused.
 *  - The table's rows live in an external raw file (RESULTS.h5.rows, HDF5 external storage,
 *    contiguous, unlimited) instead of chunks. A chunked table needs a chunk index whose nodes,
 *    the dataset's extent and the superblock are separate metadata blocks that H5Fflush writes in
 *    address order: a kill between them was seen to leave an extent covering rows whose chunks
 *    were not indexed yet (they read back as zeros), and can leave an index node pointing at a
 *    node never written. With external storage a commit is: the rows are written to the raw file
 *    (H5Dwrite does that at once), then H5Fflush writes the dataset's object header with the new
 *    extent, one pwrite of a few hundred bytes, which a kill cannot split. Nothing else in the
 *    HDF5 file changes while the campaign runs (its end of allocation stays put), so every prefix
 *    of a commit leaves a file whose extent covers only rows already in the raw file.
 *  - The HDF5 file is created under a temporary name and renamed once it opens.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attest/clock.h"
#include "attest/casefile.h"
#include "attest/files.h"
#include "child_probe.h"
#include "results_internal.h"

typedef struct signature_count {
    int32_t verdict;
    uint32_t gates;
    uint32_t count;
} signature_count;

struct attest_results_writer {
    char path[PATH_MAX];
    char live_tmp[PATH_MAX + 32];
    hid_t file, cases, mem_type, file_type;
    char rows_path[PATH_MAX + 16];  /* the external raw file of the live table */
    char rows_name[PATH_MAX + 16];  /* its name relative to the file's directory */
    attest_output_lock *lock;       /* held from create to close */
    int fd;                       /* the sec2 driver's descriptor (for fsync) */
    attest_results_options opt;
    attest_results_provenance prov;
    char *policy_text;            /* owned copy */
    attest_results_row *buf;
    void *bkg;                    /* conversion scratch, flush_rows file rows */
    size_t buf_len;
    uint64_t appended, flushed;
    double created, first_buffered, last_append, last_gap;
    signature_count *sigs;
    size_t num_sigs, cap_sigs;
    uint64_t *repro_ids;          /* stored repros, in append order */
    size_t num_repros, cap_repros;
    int repro_dir_made;
    attest_status sticky;         /* a failed flush makes every later call fail */
};


attest_results_options attest_results_defaults(void)
{
    attest_results_options o;
    memset(&o, 0, sizeof o);
    o.flush_interval_s = 1.0;
    o.flush_rows = 256;
    o.chunk_rows = 128;
    o.fsync = 0;
    o.max_repros = 1000;
    o.repros_per_signature = 32;
    return o;
}


/* --- creation ------------------------------------------------------------------------------ */

/* A version 3 superblock would carry the "open for write" flag a killed writer leaves set. */
static attest_status check_superblock(attest_results_writer *w)
{
    H5F_info2_t info;
    if (H5Fget_info2(w->file, &info) < 0)
        return attest_h5_fail(ATTEST_ERR_IO, w->path, "cannot read the superblock version");
    if (info.super.version >= 3)
        return attest_fail(ATTEST_ERR_UNSUPPORTED,
                           "%s: cannot be made crash-safe: HDF5 %u.%u.%u wrote superblock version "
                           "%u, which a killed writer leaves unreadable",
                           w->path, H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE,
                           info.super.version);
    return ATTEST_OK;
}

/* The raw file: a sibling named "<file name>.rows". The table records it by that relative name
 * (resolved against the file's own directory), so the pair survives a move; the writer keeps
 * the path it was given for its own fsync and removal. */
static attest_status make_rows_path(attest_results_writer *w)
{
    const char *slash = strrchr(w->path, '/');
    const char *base = slash ? slash + 1 : w->path;
    int n = snprintf(w->rows_path, sizeof w->rows_path, "%s%s", w->path,
                     ATTEST_RESULTS_ROWS_SUFFIX);
    int m = snprintf(w->rows_name, sizeof w->rows_name, "%s%s", base, ATTEST_RESULTS_ROWS_SUFFIX);
    ATTEST_RETURN_IF(n < 0 || (size_t)n >= sizeof w->rows_path || m < 0 ||
                         (size_t)m >= sizeof w->rows_name || !base[0],
                     ATTEST_ERR_INVALID_ARGUMENT, "%s: bad results path", w->path);
    /* Created empty now (replacing any left by a killed campaign: the output check allowed
     * that), so the pair exists together. Never through a symlink or into a FIFO. */
    struct stat sb;
    if (lstat(w->rows_path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return attest_fail(ATTEST_ERR_IO, "%s: exists and is not a regular file; not replaced",
                           w->rows_path);
    int fd = open(w->rows_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 || close(fd) != 0)
        return attest_fail(ATTEST_ERR_IO, "%s: cannot create: %s", w->rows_path, strerror(errno));
    return ATTEST_OK;
}

/* Removes "<file>.tmp<pid>" and "<file>.final<pid>" siblings whose writer is dead: what a
 * killed create or close left (the lock is held, so no live writer of this path owns them). */
static void remove_stale_siblings(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? path + (slash - dir) + 1 : path;
    if (slash == dir) dir[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    const size_t blen = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, base, blen) != 0) continue;
        const char *rest = e->d_name + blen;
        if (!strncmp(rest, ".tmp", 4)) rest += 4;
        else if (!strncmp(rest, ".final", 6)) rest += 6;
        else continue;
        char *end;
        long pid = strtol(rest, &end, 10);
        if (end == rest || *end != '\0' || pid <= 0) continue;
        if (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
            continue; /* its writer lives */
        char f[PATH_MAX + 300];
        snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(f, &sb) == 0 && S_ISREG(sb.st_mode)) (void)unlink(f);
    }
    closedir(d);
}

static attest_status open_live(attest_results_writer *w)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    attest_status st = ATTEST_OK;
    if (fapl < 0 || H5Pset_fapl_sec2(fapl) < 0 ||
        H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18) < 0 ||
        H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
        st = attest_h5_fail(ATTEST_ERR_IO, w->path, "cannot set up file access");
        goto out;
    }
    w->file = H5Fcreate(w->live_tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (w->file < 0) {
        st = attest_h5_fail(ATTEST_ERR_IO, w->path, "cannot create");
        goto out;
    }
    void *handle = NULL;
    if (H5Fget_vfd_handle(w->file, fapl, &handle) < 0 || !handle) {
        st = attest_h5_fail(ATTEST_ERR_UNSUPPORTED, w->path,
                     "cannot be made crash-safe: no file descriptor from HDF5");
        goto out;
    }
    w->fd = *(int *)handle;
out:
    if (fapl >= 0) H5Pclose(fapl);
    return st;
}

/* Writes buffered rows (into the raw file, at once), then flushes the new extent (see the file
 * comment). */
static attest_status commit(attest_results_writer *w)
{
    if (w->buf_len > 0) {
        hsize_t start = w->flushed, count = w->buf_len, total = w->flushed + w->buf_len;
        if (H5Dset_extent(w->cases, &total) < 0)
            return attest_h5_fail(ATTEST_ERR_IO, w->path, "cannot extend the cases table");
        hid_t fs = H5Dget_space(w->cases);
        hid_t ms = H5Screate_simple(1, &count, NULL);
        herr_t e = -1;
        /* Converted here, in place, to the file's packed layout: a conversion inside H5Dwrite
         * would first read the rows' destination back from the raw file. */
        memset(w->bkg, 0, w->buf_len * H5Tget_size(w->file_type));
        if (fs >= 0 && ms >= 0 &&
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0 &&
            H5Tconvert(w->mem_type, w->file_type, w->buf_len, w->buf, w->bkg, H5P_DEFAULT) >= 0)
            e = H5Dwrite(w->cases, w->file_type, ms, fs, H5P_DEFAULT, w->buf);
        /* Take HDF5's message before the closes below clear its error stack. */
        attest_status st = e < 0 ? attest_h5_fail(ATTEST_ERR_IO, w->path, "cannot write rows (disk full?)")
                                 : ATTEST_OK;
        /* The extent must never cover rows that are not in the raw file: they would read
         * back as zeros. */
        if (st != ATTEST_OK) {
            hsize_t kept = w->flushed;
            (void)H5Dset_extent(w->cases, &kept);
        }
        if (fs >= 0) H5Sclose(fs);
        if (ms >= 0) H5Sclose(ms);
        if (st != ATTEST_OK) return st;
    }
    if (w->opt.fsync && w->buf_len > 0) {
        /* The rows reach the disk before the extent that makes them visible. */
        int fd = open(w->rows_path, O_RDONLY);
        int ok = fd >= 0 && fsync(fd) == 0;
        if (fd >= 0) close(fd);
        if (!ok) return attest_fail(ATTEST_ERR_IO, "%s: fsync: %s", w->rows_path, strerror(errno));
    }
    if (H5Fflush(w->file, H5F_SCOPE_LOCAL) < 0)
        return attest_h5_fail(ATTEST_ERR_IO, w->path, "cannot flush (disk full?)");
    if (w->opt.fsync && fsync(w->fd) != 0)
        return attest_fail(ATTEST_ERR_IO, "%s: fsync: %s", w->path, strerror(errno));
    w->flushed += w->buf_len;
    w->buf_len = 0;
    return ATTEST_OK;
}

static attest_status check_options(const attest_results_options *o)
{
    ATTEST_RETURN_IF(!(o->flush_interval_s >= 0.0), ATTEST_ERR_INVALID_ARGUMENT,
                     "results: flush_interval_s must be >= 0");
    ATTEST_RETURN_IF(o->flush_rows < 1 || o->flush_rows > (1u << 20), ATTEST_ERR_INVALID_ARGUMENT,
                     "results: flush_rows must be in [1, 1048576]");
    ATTEST_RETURN_IF(o->chunk_rows < 1 || o->chunk_rows > 65536, ATTEST_ERR_INVALID_ARGUMENT,
                     "results: chunk_rows must be in [1, 65536]");
    return ATTEST_OK;
}

static void writer_free(attest_results_writer *w)
{
    if (!w) return;
    if (w->cases >= 0) H5Dclose(w->cases);
    if (w->file >= 0) H5Fclose(w->file);
    if (w->mem_type >= 0) H5Tclose(w->mem_type);
    if (w->file_type >= 0) H5Tclose(w->file_type);
    free(w->buf);
    free(w->bkg);
    free(w->sigs);
    free(w->repro_ids);
    free(w->policy_text);
    attest_output_lock_release(w->lock);
    free(w);
}

attest_status attest_results_create(const char *path, const attest_results_provenance *prov,
                                    const attest_results_options *options,
                                    attest_results_writer **out)
{
    ATTEST_RETURN_IF(!path || !path[0] || !prov || !out, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_results_create: NULL argument");
    *out = NULL;
    attest_results_options opt = options ? *options : attest_results_defaults();
    ATTEST_FORWARD(check_options(&opt));
    ATTEST_RETURN_IF(strlen(path) + 64 >= PATH_MAX, ATTEST_ERR_INVALID_ARGUMENT,
                     "%s: path too long", path);
    attest_results_writer *w = calloc(1, sizeof *w);
    ATTEST_RETURN_IF(!w, ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    w->file = w->cases = w->mem_type = w->file_type = H5I_INVALID_HID;
    w->fd = -1;
    w->opt = opt;
    w->prov = *prov;
    w->prov.policy_text = NULL;
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->live_tmp, sizeof w->live_tmp, "%s.tmp%ld", path, (long)getpid());
    w->policy_text = strdup(prov->policy_text ? prov->policy_text : "");
    w->buf = calloc(opt.flush_rows, sizeof *w->buf);
    if (!w->policy_text || !w->buf) {
        writer_free(w);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }

    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    /* The lock first: nothing of an earlier campaign is touched while another writer has it. */
    attest_status st = attest_output_lock_take(path, prov->command_line, &w->lock);
    if (st == ATTEST_OK) remove_stale_siblings(path);
    if (st == ATTEST_OK) st = attest_results_remove_repro_dir(path);
    if (st == ATTEST_OK) st = make_rows_path(w);
    if (st == ATTEST_OK) st = attest_results_make_types(&w->mem_type, &w->file_type);
    if (st == ATTEST_OK && !(w->bkg = calloc(opt.flush_rows, H5Tget_size(w->file_type))))
        st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    if (st == ATTEST_OK) st = open_live(w);
    if (st == ATTEST_OK)
        st = attest_results_write_provenance(w->file, path, &w->prov, w->policy_text, "running",
                                             "", 0.0);
    if (st == ATTEST_OK)
        st = attest_results_create_table(w->file, path, w->file_type, w->rows_name,
                                         opt.chunk_rows, -1, &w->cases);
    if (st == ATTEST_OK && H5Fflush(w->file, H5F_SCOPE_LOCAL) < 0)
        st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot flush");
    if (st == ATTEST_OK) st = check_superblock(w);
    if (st == ATTEST_OK && rename(w->live_tmp, path) != 0)
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot rename %s into place: %s", path, w->live_tmp,
                         strerror(errno));
    if (st != ATTEST_OK) {
        char tmp[PATH_MAX + 32], rows[PATH_MAX + 16];
        snprintf(tmp, sizeof tmp, "%s", w->live_tmp);
        snprintf(rows, sizeof rows, "%s", w->rows_path);
        writer_free(w);
        (void)remove(tmp);
        if (rows[0]) (void)remove(rows);
        attest_h5_quiet_end(&q);
        return st;
    }
    double t = attest_monotonic_seconds();
    w->created = t;
    w->last_append = t;
    w->first_buffered = t;
    attest_h5_quiet_end(&q);
    *out = w;
    return ATTEST_OK;
}

/* --- appending ----------------------------------------------------------------------------- */

/* Returns 1 when a repro for this (verdict, gates) signature is still within the limits, and
 * counts it. */
static int take_repro_slot(attest_results_writer *w, const attest_case_record *rec)
{
    if (w->opt.max_repros && w->num_repros >= w->opt.max_repros) return 0;
    signature_count *s = NULL;
    for (size_t i = 0; i < w->num_sigs; i++)
        if (w->sigs[i].verdict == (int32_t)rec->verdict && w->sigs[i].gates == rec->failed_gates)
            s = &w->sigs[i];
    if (!s) {
        if (w->num_sigs == w->cap_sigs) {
            size_t cap = w->cap_sigs ? 2 * w->cap_sigs : 16;
            signature_count *n = realloc(w->sigs, cap * sizeof *n);
            if (!n) return 0;
            w->sigs = n;
            w->cap_sigs = cap;
        }
        s = &w->sigs[w->num_sigs++];
        s->verdict = (int32_t)rec->verdict;
        s->gates = rec->failed_gates;
        s->count = 0;
    }
    if (w->opt.repros_per_signature && s->count >= w->opt.repros_per_signature) return 0;
    s->count++;
    return 1;
}

static attest_status remember_repro(attest_results_writer *w, uint64_t case_id)
{
    if (w->num_repros == w->cap_repros) {
        size_t cap = w->cap_repros ? 2 * w->cap_repros : 64;
        uint64_t *n = realloc(w->repro_ids, cap * sizeof *n);
        ATTEST_RETURN_IF(!n, ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", w->path);
        w->repro_ids = n;
        w->cap_repros = cap;
    }
    w->repro_ids[w->num_repros++] = case_id;
    return ATTEST_OK;
}

static attest_status append_row(attest_results_writer *w, const attest_results_row *row)
{
    double t = attest_monotonic_seconds();
    if (w->buf_len == 0) w->first_buffered = t;
    w->buf[w->buf_len++] = *row;
    w->appended++;
    w->last_gap = t - w->last_append;
    w->last_append = t;
    /* Rows that arrive slower than the interval are flushed as they come: a row then never
     * waits for a later case that may take long (or never finish). */
    int due = w->buf_len >= w->opt.flush_rows ||
              t - w->first_buffered >= w->opt.flush_interval_s ||
              w->last_gap >= w->opt.flush_interval_s;
    if (!due) return ATTEST_OK;
    attest_status st = commit(w);
    if (st != ATTEST_OK) w->sticky = st;
    return st;
}

attest_status attest_results_append(attest_results_writer *w, const attest_case_record *rec,
                                    const attest_case *c, const attest_case_outputs *outputs)
{
    ATTEST_RETURN_IF(!w || !rec, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_results_append: NULL argument");
    if (w->sticky != ATTEST_OK)
        return attest_fail(w->sticky, "%s: an earlier write failed; the file holds %llu rows",
                           w->path, (unsigned long long)w->flushed);
    attest_results_row row;
    attest_results_row_from_record(&row, rec);
    attest_status repro_st = ATTEST_OK;
    if (c && attest_verdict_is_failure(rec->verdict)) {
        if (take_repro_slot(w, rec)) {
            attest_h5_quiet q;
            attest_h5_quiet_begin(&q);
            repro_st = attest_results_write_repro_file(w->path, &w->repro_dir_made, rec, c,
                                                       outputs);
            attest_h5_quiet_end(&q);
            if (repro_st == ATTEST_OK) repro_st = remember_repro(w, rec->case_id);
            row.repro = repro_st == ATTEST_OK ? ATTEST_RESULTS_REPRO_STORED
                                              : ATTEST_RESULTS_REPRO_NONE;
        } else {
            row.repro = ATTEST_RESULTS_REPRO_SKIPPED;
        }
    }
    /* The row is kept even when its repro could not be written; the error is still returned. */
    char saved[512];
    if (repro_st != ATTEST_OK) snprintf(saved, sizeof saved, "%s", attest_last_error());
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    attest_status st = append_row(w, &row);
    attest_h5_quiet_end(&q);
    if (st != ATTEST_OK) return st;
    if (repro_st != ATTEST_OK) return attest_fail(repro_st, "%s", saved);
    return ATTEST_OK;
}

attest_status attest_results_flush(attest_results_writer *w)
{
    ATTEST_RETURN_IF(!w, ATTEST_ERR_INVALID_ARGUMENT, "attest_results_flush: NULL writer");
    if (w->sticky != ATTEST_OK)
        return attest_fail(w->sticky, "%s: an earlier write failed; the file holds %llu rows",
                           w->path, (unsigned long long)w->flushed);
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    attest_status st = commit(w);
    attest_h5_quiet_end(&q);
    if (st != ATTEST_OK) w->sticky = st;
    return st;
}

uint64_t attest_results_rows_appended(const attest_results_writer *w)
{
    return w ? w->appended : 0;
}

uint64_t attest_results_rows_flushed(const attest_results_writer *w) { return w ? w->flushed : 0; }

void attest_results_set_device(attest_results_writer *w, const char *description)
{
    if (w == NULL || description == NULL || description[0] == '\0') return;
    /* "NAME (sm_90, 139 GiB), CUDA runtime 13.0, driver 13.0": the device up to ", CUDA ", the
     * versions after it. */
    const char *cuda = strstr(description, ", CUDA");
    const size_t n = cuda ? (size_t)(cuda - description) : strlen(description);
    snprintf(w->prov.device, sizeof w->prov.device, "%.*s", (int)n, description);
    snprintf(w->prov.cuda_version, sizeof w->prov.cuda_version, "%s",
             cuda ? cuda + strlen(", CUDA ") : ""); /* "runtime 13.0, driver 13.0" */
}

/* --- closing ------------------------------------------------------------------------------- */

/* The final file is built in a child process: HDF5 1.10 crashes in its own error paths when a
 * write fails inside H5Ocopy (a full disk while the repros are copied), and the live file, closed
 * and whole by then, must outlive that. On any failure the live layout stays and says why. */
typedef struct final_report {
    int32_t status;
    char message[512];
} final_report;

static int final_child(int fd, void *arg)
{
    final_report r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)attest_results_build_final(arg);
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
}

static attest_status build_final_in_child(const attest_results_final_spec *spec)
{
    child_probe p;
    ATTEST_FORWARD(child_probe_spawn_within(spec->path, "build the final file", final_child,
                                            (void *)spec, 0, &p));
    final_report r;
    const pid_t child = p.pid;
    size_t got = child_probe_read(&p, &r, sizeof r);
    int wstatus = child_probe_finish(&p);
    /* What a crashed child was writing (build_final names it by its own pid). */
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.final%ld", spec->path, (long)child);
    (void)unlink(tmp);
    if (got == sizeof r && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        r.message[sizeof r.message - 1] = '\0';
        if (r.status == ATTEST_OK) return ATTEST_OK;
        if (r.status < 0 || r.status >= ATTEST_STATUS_COUNT_) r.status = ATTEST_ERR_INTERNAL;
        return attest_fail((attest_status)r.status, "%s", r.message);
    }
    char end[96];
    return attest_fail(ATTEST_ERR_IO,
                       "%s: building the final file %s (disk full?); the file keeps every row "
                       "in its live layout (%s%s)",
                       spec->path, child_probe_end(&p, wstatus, end, sizeof end), spec->path,
                       ATTEST_RESULTS_ROWS_SUFFIX);
}

attest_status attest_results_close(attest_results_writer *w, attest_results_end end)
{
    if (!w) return ATTEST_OK;
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    attest_status st = w->sticky;
    if (st == ATTEST_OK) st = commit(w);
    /* Close the live file cleanly first: whatever happens next, it holds every row. */
    if (w->cases >= 0 && H5Dclose(w->cases) < 0 && st == ATTEST_OK)
        st = attest_h5_fail(ATTEST_ERR_IO, w->path, "cannot close the cases table");
    w->cases = H5I_INVALID_HID;
    if (w->file >= 0 && H5Fclose(w->file) < 0 && st == ATTEST_OK)
        st = attest_h5_fail(ATTEST_ERR_IO, w->path, "cannot close");
    w->file = H5I_INVALID_HID;
    if (st == ATTEST_OK) {
        char end_time[32];
        attest_results_utc_now(end_time, sizeof end_time);
        attest_results_final_spec spec = {
            .path = w->path,
            .rows_path = w->rows_path,
            .prov = &w->prov,
            .policy_text = w->policy_text,
            .state = end == ATTEST_RESULTS_COMPLETE ? "complete" : "interrupted",
            .end_time = end_time,
            .duration_s = attest_monotonic_seconds() - w->created,
            .repro_ids = w->repro_ids,
            .num_repros = w->num_repros,
            .chunk_rows = w->opt.chunk_rows,
            .fsync = w->opt.fsync,
        };
        st = build_final_in_child(&spec);
    }
    attest_h5_quiet_end(&q);
    writer_free(w);
    return st;
}
