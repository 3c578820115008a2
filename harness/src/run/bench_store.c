/* Bench files (attest/bench.h): one HDF5 table of measured rows. */
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/bench.h"
#include "attest/build_info.h"
#include "child_probe.h"

/* The flat row as stored: strings fixed-size, numbers native in memory, little-endian on file. */
typedef struct stored_row {
    char shape[96];
    char candidate[64];
    int32_t iters, device_timed;
    double median_us, p10_us, p90_us, min_us, max_us, read_bytes, write_bytes, gbps, pct_peak,
        peak_gbps;
    char device[96];
} stored_row;

static hid_t make_type(int file)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(stored_row));
    hid_t s96 = H5Tcopy(H5T_C_S1), s64 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s96, 96);
    H5Tset_size(s64, 64);
    const hid_t i32 = file ? H5T_STD_I32LE : H5T_NATIVE_INT32;
    const hid_t f64 = file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
    H5Tinsert(t, "shape", offsetof(stored_row, shape), s96);
    H5Tinsert(t, "candidate", offsetof(stored_row, candidate), s64);
    H5Tinsert(t, "iters", offsetof(stored_row, iters), i32);
    H5Tinsert(t, "device_timed", offsetof(stored_row, device_timed), i32);
    static const struct {
        const char *name;
        size_t off;
    } doubles[] = {
        {"median_us", offsetof(stored_row, median_us)},
        {"p10_us", offsetof(stored_row, p10_us)},
        {"p90_us", offsetof(stored_row, p90_us)},
        {"min_us", offsetof(stored_row, min_us)},
        {"max_us", offsetof(stored_row, max_us)},
        {"read_bytes", offsetof(stored_row, read_bytes)},
        {"write_bytes", offsetof(stored_row, write_bytes)},
        {"gbps", offsetof(stored_row, gbps)},
        {"pct_peak", offsetof(stored_row, pct_peak)},
        {"peak_gbps", offsetof(stored_row, peak_gbps)},
    };
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++)
        H5Tinsert(t, doubles[i].name, doubles[i].off, f64);
    H5Tinsert(t, "device", offsetof(stored_row, device), s96);
    H5Tclose(s96);
    H5Tclose(s64);
    return t;
}

static int write_str_attr(hid_t obj, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, t, value) < 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    return rc;
}

attest_status attest_bench_write(const char *path, const attest_bench_row *rows, size_t n,
                                 const char *command_line)
{
    ATTEST_RETURN_IF(!path || (!rows && n), ATTEST_ERR_INVALID_ARGUMENT, "bench: no file or rows");
    stored_row *flat = calloc(n ? n : 1, sizeof *flat);
    ATTEST_RETURN_IF(!flat, ATTEST_ERR_OUT_OF_MEMORY, "bench: out of memory");
    for (size_t i = 0; i < n; i++) {
        const attest_bench_result *r = &rows[i].result;
        snprintf(flat[i].shape, sizeof flat[i].shape, "%s", rows[i].shape);
        snprintf(flat[i].candidate, sizeof flat[i].candidate, "%s", rows[i].candidate);
        snprintf(flat[i].device, sizeof flat[i].device, "%s", r->device);
        flat[i].iters = r->iters;
        flat[i].device_timed = r->device_timed;
        flat[i].median_us = r->median_us;
        flat[i].p10_us = r->p10_us;
        flat[i].p90_us = r->p90_us;
        flat[i].min_us = r->min_us;
        flat[i].max_us = r->max_us;
        flat[i].read_bytes = r->read_bytes;
        flat[i].write_bytes = r->write_bytes;
        flat[i].gbps = r->gbps;
        flat[i].pct_peak = r->pct_peak;
        flat[i].peak_gbps = rows[i].peak_gbps;
    }
    H5E_auto2_t old_fn;
    void *old_data;
    H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    attest_status st = ATTEST_OK;
    /* A temporary sibling renamed into place: an interrupted write leaves no half file. */
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        free(flat);
        H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
        return attest_fail(ATTEST_ERR_IO, "bench: path too long: '%s'", path);
    }
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        st = attest_fail(ATTEST_ERR_IO, "bench: cannot create '%s'", path);
    } else {
        hid_t mem = make_type(0), file = make_type(1);
        hsize_t dims[1] = {n};
        hid_t sp = H5Screate_simple(1, dims, NULL);
        hid_t d = H5Dcreate2(f, "bench", file, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d < 0 || (n && H5Dwrite(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, flat) < 0) ||
            write_str_attr(f, "attest_version", ATTEST_VERSION) ||
            write_str_attr(f, "command_line", command_line ? command_line : ""))
            st = attest_fail(ATTEST_ERR_IO, "bench: cannot write the table to '%s'", path);
        if (d >= 0) H5Dclose(d);
        H5Sclose(sp);
        H5Tclose(mem);
        H5Tclose(file);
        if (H5Fclose(f) < 0 && st == ATTEST_OK)
            st = attest_fail(ATTEST_ERR_IO, "bench: cannot close '%s'", path);
        if (st == ATTEST_OK && rename(tmp, path) != 0)
            st = attest_fail(ATTEST_ERR_IO, "bench: cannot rename the table into '%s'", path);
        if (st != ATTEST_OK) remove(tmp);
    }
    H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
    free(flat);
    return st;
}

static void read_str_attr(hid_t obj, const char *name, char *out, size_t cap)
{
    out[0] = '\0';
    if (H5Aexists(obj, name) <= 0) return;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, cap);
    if (a >= 0 && H5Aread(a, t, out) < 0) out[0] = '\0';
    out[cap - 1] = '\0';
    H5Tclose(t);
    if (a >= 0) H5Aclose(a);
}

attest_status attest_bench_read(const char *path, attest_bench_row **rows, size_t *n,
                                char *command_line, size_t cap)
{
    ATTEST_RETURN_IF(!path || !rows || !n || (!command_line && cap), ATTEST_ERR_INVALID_ARGUMENT,
                     "bench: no file or outputs");
    *rows = NULL;
    *n = 0;
    if (cap) command_line[0] = '\0';
    H5E_auto2_t old_fn;
    void *old_data;
    H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    attest_status st = ATTEST_OK;
    hid_t f = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
    hid_t d = f >= 0 && H5Lexists(f, "bench", H5P_DEFAULT) > 0 ? H5Dopen2(f, "bench", H5P_DEFAULT) : -1;
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[1] = {0};
    if (f < 0)
        st = attest_fail(ATTEST_ERR_IO, "'%s' is not an HDF5 file", path);
    else if (d < 0 || sp < 0 || H5Sget_simple_extent_ndims(sp) != 1)
        st = attest_fail(ATTEST_ERR_FORMAT, "'%s' is not a bench file (no table /bench)", path);
    else
        H5Sget_simple_extent_dims(sp, dims, NULL);
    stored_row *flat = NULL;
    if (st == ATTEST_OK && dims[0] > (hsize_t)1 << 20)
        st = attest_fail(ATTEST_ERR_FORMAT, "'%s': %llu bench rows is not plausible", path,
                         (unsigned long long)dims[0]);
    if (st == ATTEST_OK && !(flat = calloc(dims[0] ? dims[0] : 1, sizeof *flat)))
        st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "bench: out of memory");
    if (st == ATTEST_OK && !(*rows = calloc(dims[0] ? dims[0] : 1, sizeof **rows)))
        st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "bench: out of memory");
    if (st == ATTEST_OK) {
        /* Read through the memory type: fields are matched by name, so a table written with
         * another field order (or a missing field, left zero) still reads. */
        hid_t mem = make_type(0);
        if (dims[0] && H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, flat) < 0)
            st = attest_fail(ATTEST_ERR_FORMAT, "'%s': the /bench table cannot be read", path);
        H5Tclose(mem);
    }
    if (st == ATTEST_OK) {
        for (size_t i = 0; i < dims[0]; i++) {
            attest_bench_row *r = &(*rows)[i];
            flat[i].shape[sizeof flat[i].shape - 1] = '\0';
            flat[i].candidate[sizeof flat[i].candidate - 1] = '\0';
            flat[i].device[sizeof flat[i].device - 1] = '\0';
            snprintf(r->shape, sizeof r->shape, "%s", flat[i].shape);
            snprintf(r->candidate, sizeof r->candidate, "%s", flat[i].candidate);
            snprintf(r->result.device, sizeof r->result.device, "%s", flat[i].device);
            r->result.iters = flat[i].iters;
            r->result.device_timed = flat[i].device_timed;
            r->result.median_us = flat[i].median_us;
            r->result.p10_us = flat[i].p10_us;
            r->result.p90_us = flat[i].p90_us;
            r->result.min_us = flat[i].min_us;
            r->result.max_us = flat[i].max_us;
            r->result.read_bytes = flat[i].read_bytes;
            r->result.write_bytes = flat[i].write_bytes;
            r->result.gbps = flat[i].gbps;
            r->result.pct_peak = flat[i].pct_peak;
            r->peak_gbps = flat[i].peak_gbps;
        }
        *n = (size_t)dims[0];
        if (cap) read_str_attr(f, "command_line", command_line, cap);
    } else {
        free(*rows);
        *rows = NULL;
    }
    free(flat);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
    return st;
}

/* The reader first in a child (as attest_results_probe does): corrupt HDF5 metadata can crash
 * or hang libhdf5 before anything can be validated. */
typedef struct bench_probe_report {
    int32_t status;
    char message[512];
} bench_probe_report;

static int bench_probe_child(int fd, void *arg)
{
    bench_probe_report rep;
    memset(&rep, 0, sizeof rep);
    attest_bench_row *rows = NULL;
    size_t n = 0;
    rep.status = (int32_t)attest_bench_read(arg, &rows, &n, NULL, 0);
    free(rows);
    snprintf(rep.message, sizeof rep.message, "%s", rep.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &rep, sizeof rep) == 0 ? 0 : 1;
}

attest_status attest_bench_probe(const char *path)
{
    ATTEST_RETURN_IF(!path, ATTEST_ERR_INVALID_ARGUMENT, "attest_bench_probe: NULL path");
    child_probe p;
    ATTEST_FORWARD(child_probe_spawn(path, "probe the file", bench_probe_child, (void *)path, &p));
    bench_probe_report rep;
    size_t got = child_probe_read(&p, &rep, sizeof rep);
    int wstatus = child_probe_finish(&p);
    return child_probe_file_status(path, &p, wstatus, got == sizeof rep, rep.status, rep.message,
                                   sizeof rep.message);
}
