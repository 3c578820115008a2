/* attest case files: checked HDF5 helpers for files, groups and datasets (the error stack,
 * links and attributes are the store's shared layer, h5.c).
 *
 * HDF5 converts between types on read; for raw containers (cache bytes, bf16 bit patterns) the
 * memory type keeps the file's signedness so that no value is clipped by a conversion.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "casefile_internal.h"

attest_status attest_cf_rewrap(attest_status st, const char *where, const char *field)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", attest_last_error());
    if (field) return attest_fail(st, "%s%s: %s", where, field, msg);
    return attest_fail(st, "%s%s", where, msg);
}

int attest_cf_is_root(const char *group)
{
    return !group || !group[0] || !strcmp(group, "/");
}

void attest_cf_prefix(char *buf, size_t cap, const char *path, const char *group)
{
    if (attest_cf_is_root(group))
        snprintf(buf, cap, "%s: ", path);
    else
        snprintf(buf, cap, "%s: %s/", path, group[0] == '/' ? group + 1 : group);
    /* Group names come from the file: keep the message on one line. */
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
}

attest_status attest_cf_open_read(const char *path, hid_t *file)
{
    struct stat st;
    *file = H5I_INVALID_HID;
    if (stat(path, &st) != 0)
        return attest_fail(ATTEST_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return attest_fail(ATTEST_ERR_IO, "%s: not a regular file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return attest_fail(ATTEST_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    fclose(f);
    if (st.st_size == 0) return attest_fail(ATTEST_ERR_FORMAT, "%s: empty file, not HDF5", path);

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return attest_fail(ATTEST_ERR_IO, "%s: cannot create an HDF5 property list", path);
    /* Strong close: no object left open by an error path can keep the file open. */
    herr_t e = H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
/* H5Pset_file_locking: 1.10.7+ on the 1.10 line, 1.12.1+ after it. */
#if (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7) || H5_VERSION_GE(1, 12, 1)
    /* Keep locks, but do not fail on file systems without them (read-only shares, NFS). */
    if (e >= 0) e = H5Pset_file_locking(fapl, 1, 1);
#endif
    if (e < 0) {
        H5Pclose(fapl);
        return attest_fail(ATTEST_ERR_IO, "%s: cannot set HDF5 file access properties", path);
    }
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (fid < 0) {
        char detail[256];
        attest_h5_detail(detail, sizeof detail);
        return attest_fail(ATTEST_ERR_FORMAT, "%s: not a readable HDF5 file (truncated or corrupt?)%s%s",
                           path, detail[0] ? ": " : "", detail);
    }
    *file = fid;
    return ATTEST_OK;
}

attest_status attest_cf_open_group(hid_t file, const char *path, const char *group, hid_t *out)
{
    *out = H5I_INVALID_HID;
    const char *g = attest_cf_is_root(group) ? "/" : group;
    if (!attest_cf_is_root(group) && !attest_h5_link_exists(file, g[0] == '/' ? g + 1 : g))
        return attest_fail(ATTEST_ERR_NOT_FOUND, "%s: group '%s' not found", path, group);
    hid_t obj = H5Oopen(file, g, H5P_DEFAULT);
    if (obj < 0) {
        char detail[200];
        attest_h5_detail(detail, sizeof detail);
        return attest_fail(ATTEST_ERR_FORMAT, "%s: group '%s' cannot be opened: %s", path, g,
                           detail);
    }
    if (H5Iget_type(obj) != H5I_GROUP) {
        H5Oclose(obj);
        return attest_fail(ATTEST_ERR_FORMAT, "%s: '%s' is not a group", path, g);
    }
    *out = obj;
    return ATTEST_OK;
}

attest_status attest_cf_require_group(hid_t loc, const char *where, const char *name, hid_t *out)
{
    *out = H5I_INVALID_HID;
    if (attest_h5_link_exists(loc, name)) {
        hid_t g = H5Gopen2(loc, name, H5P_DEFAULT);
        if (g < 0) return attest_fail(ATTEST_ERR_IO, "%s%s: exists and is not a group", where, name);
        *out = g;
        return ATTEST_OK;
    }
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (lcpl < 0 || H5Pset_create_intermediate_group(lcpl, 1) < 0) {
        if (lcpl >= 0) H5Pclose(lcpl);
        return attest_fail(ATTEST_ERR_IO, "%s%s: cannot create a link property list", where, name);
    }
    hid_t g = H5Gcreate2(loc, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    if (g < 0) {
        return attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot create group");
    }
    *out = g;
    return ATTEST_OK;
}

/* Datasets --------------------------------------------------------------------------------- */

attest_status attest_cf_dset_describe(hid_t dset, const char *where, const char *name,
                                      attest_cf_dset_info *info)
{
    memset(info, 0, sizeof *info);
    hid_t type = H5Dget_type(dset);
    if (type < 0) return attest_fail(ATTEST_ERR_FORMAT, "%s%s: dataset type unreadable", where, name);
    info->h5class = (int)H5Tget_class(type);
    info->elem_size = H5Tget_size(type);
    info->is_signed = info->h5class == H5T_INTEGER && H5Tget_sign(type) != H5T_SGN_NONE;
    attest_h5_describe_type(type, info->type_desc, sizeof info->type_desc);
    H5Tclose(type);
    hid_t space = H5Dget_space(dset);
    if (space < 0) return attest_fail(ATTEST_ERR_FORMAT, "%s%s: dataspace unreadable", where, name);
    H5S_class_t cls = H5Sget_simple_extent_type(space);
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[H5S_MAX_RANK];
    if (cls == H5S_SIMPLE && rank > 0 && rank <= H5S_MAX_RANK &&
        H5Sget_simple_extent_dims(space, dims, NULL) < 0)
        rank = -1;
    H5Sclose(space);
    if (cls == H5S_NULL || cls == H5S_NO_CLASS || rank < 0)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: dataset has no data space", where, name);
    info->rank = cls == H5S_SCALAR ? 0 : rank;
    for (int i = 0; i < info->rank; i++) {
        if (dims[i] > (hsize_t)INT64_MAX)
            return attest_fail(ATTEST_ERR_FORMAT, "%s%s: extent out of range", where, name);
        info->dims[i] = (int64_t)dims[i];
    }
    return ATTEST_OK;
}

attest_dtype attest_cf_dtype_of(const attest_cf_dset_info *info)
{
    if (info->h5class == H5T_INTEGER) {
        if (info->elem_size == 1) return ATTEST_DTYPE_U8;
        if (info->elem_size == 2) return ATTEST_DTYPE_BF16;
        if (info->elem_size == 4 && info->is_signed) return ATTEST_DTYPE_I32;
    } else if (info->h5class == H5T_FLOAT) {
        if (info->elem_size == 4) return ATTEST_DTYPE_F32;
        if (info->elem_size == 8) return ATTEST_DTYPE_F64;
    }
    return (attest_dtype)0;
}

static hid_t mem_type_for(attest_dtype dtype, int is_signed)
{
    switch (dtype) {
    case ATTEST_DTYPE_U8: return is_signed ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8;
    case ATTEST_DTYPE_BF16: return is_signed ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16;
    case ATTEST_DTYPE_I32: return H5T_NATIVE_INT32;
    case ATTEST_DTYPE_F32: return H5T_NATIVE_FLOAT;
    case ATTEST_DTYPE_F64: return H5T_NATIVE_DOUBLE;
    }
    return H5I_INVALID_HID;
}

static hid_t file_type_for(attest_dtype dtype)
{
    switch (dtype) {
    case ATTEST_DTYPE_U8: return H5T_STD_U8LE;
    case ATTEST_DTYPE_BF16: return H5T_STD_U16LE;
    case ATTEST_DTYPE_I32: return H5T_STD_I32LE;
    case ATTEST_DTYPE_F32: return H5T_IEEE_F32LE;
    case ATTEST_DTYPE_F64: return H5T_IEEE_F64LE;
    }
    return H5I_INVALID_HID;
}

/* Names a filter a dataset needs but this HDF5 cannot decode, so the error says why. */
static attest_status check_filters(hid_t dset, const char *where, const char *name)
{
    hid_t dcpl = H5Dget_create_plist(dset);
    if (dcpl < 0) return ATTEST_OK; /* the read itself will report */
    int n = H5Pget_nfilters(dcpl);
    attest_status st = ATTEST_OK;
    for (int i = 0; i < n && st == ATTEST_OK; i++) {
        unsigned flags = 0, config = 0;
        size_t nelem = 0;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nelem, NULL, sizeof fname,
                                         fname, &config);
        if (id < 0) continue;
        if (H5Zfilter_avail(id) <= 0)
            st = attest_fail(ATTEST_ERR_IO,
                             "%s%s: compressed with HDF5 filter %d (%s), which this HDF5 cannot "
                             "decode (rewrite it with gzip or no compression)",
                             where, name, (int)id, fname[0] ? fname : "unnamed");
    }
    (void)H5Eclear2(H5E_DEFAULT);
    H5Pclose(dcpl);
    return st;
}

attest_status attest_cf_dset_read(hid_t dset, const char *where, const char *name,
                                  const attest_cf_dset_info *info, attest_dtype dtype, void *buf,
                                  size_t nbytes)
{
    size_t count = 1;
    for (int i = 0; i < info->rank; i++) count *= (size_t)info->dims[i];
    if (count * attest_dtype_size(dtype) != nbytes)
        return attest_fail(ATTEST_ERR_INTERNAL, "%s%s: read of %zu bytes into a %zu-byte buffer",
                           where, name, count * attest_dtype_size(dtype), nbytes);
    if (count == 0) return ATTEST_OK;
    ATTEST_FORWARD(check_filters(dset, where, name));
    hid_t mtype = mem_type_for(dtype, info->is_signed);
    if (mtype < 0) return attest_fail(ATTEST_ERR_INTERNAL, "%s%s: unknown dtype", where, name);
    if (H5Dread(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        return attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot read data (file truncated or corrupt?)");
    }
    return ATTEST_OK;
}

attest_status attest_cf_dset_write(hid_t loc, const char *where, const char *name,
                                   attest_dtype dtype, int32_t rank, const int64_t *shape,
                                   const void *data, int compress)
{
    hid_t ftype = file_type_for(dtype), mtype = mem_type_for(dtype, 0);
    if (ftype < 0 || rank < 1 || rank > ATTEST_TENSOR_MAX_RANK)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s%s: bad dtype or rank %d", where, name,
                           (int)rank);
    hsize_t dims[ATTEST_TENSOR_MAX_RANK];
    size_t count = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s%s: negative extent", where, name);
        dims[i] = (hsize_t)shape[i];
        count *= (size_t)shape[i];
    }
    if (count > 0 && !data)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s%s: no data to write", where, name);
    if (attest_h5_link_exists(loc, name))
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s%s: already exists", where, name);
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    attest_status st = ATTEST_OK;
    hid_t dset = H5I_INVALID_HID;
    if (space < 0 || dcpl < 0 || lcpl < 0 || H5Pset_create_intermediate_group(lcpl, 1) < 0) {
        st = attest_fail(ATTEST_ERR_IO, "%s%s: cannot create dataspace or properties", where, name);
        goto done;
    }
    size_t elem = attest_dtype_size(dtype);
    size_t row_bytes = elem;
    for (int32_t i = 1; i < rank; i++) row_bytes *= (size_t)dims[i];
    unsigned config = 0;
    if (compress && count > 0 && row_bytes <= (1u << 26) && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 &&
        H5Zget_filter_info(H5Z_FILTER_DEFLATE, &config) >= 0 &&
        (config & H5Z_FILTER_CONFIG_ENCODE_ENABLED)) {
        /* About 1 MiB per chunk: small enough to decode quickly, large enough to compress. */
        hsize_t chunk[ATTEST_TENSOR_MAX_RANK];
        for (int32_t i = 0; i < rank; i++) chunk[i] = dims[i];
        hsize_t rows = (hsize_t)((1u << 20) / row_bytes);
        if (rows < 1) rows = 1;
        if (chunk[0] > rows) chunk[0] = rows;
        if (H5Pset_chunk(dcpl, rank, chunk) < 0 || H5Pset_deflate(dcpl, 1) < 0) {
            st = attest_fail(ATTEST_ERR_IO, "%s%s: cannot set compression", where, name);
            goto done;
        }
    }
    (void)H5Eclear2(H5E_DEFAULT);
    dset = H5Dcreate2(loc, name, ftype, space, lcpl, dcpl, H5P_DEFAULT);
    if (dset < 0) {
        st = attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot create dataset");
        goto done;
    }
    if (count > 0 && H5Dwrite(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
        st = attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot write dataset");
        goto done;
    }
done:
    if (dset >= 0 && H5Dclose(dset) < 0 && st == ATTEST_OK)
        st = attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot close dataset (disk full?)");
    if (lcpl >= 0) H5Pclose(lcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return st;
}
