/* attest case files: stored outputs (expected, candidate, reference) and plain tensor files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/numerics.h"
#include "casefile_internal.h"

attest_status attest_casefile_load_output(const char *path, const char *group, const char *name,
                                          attest_stored_tensor *out)
{
    if (!out || !path || !name)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_load_output: NULL argument");
    memset(out, 0, sizeof *out);
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    char where[600];
    attest_cf_prefix(where, sizeof where, path, group);
    hid_t fid = H5I_INVALID_HID, g = H5I_INVALID_HID, d = H5I_INVALID_HID;
    attest_status st = attest_cf_open_read(path, &fid);
    if (st == ATTEST_OK) st = attest_cf_open_group(fid, path, group, &g);
    if (st == ATTEST_OK && !attest_h5_link_exists(g, name))
        st = attest_fail(ATTEST_ERR_NOT_FOUND, "%s%s: no such dataset", where, name);
    if (st == ATTEST_OK) {
        d = H5Dopen2(g, name, H5P_DEFAULT);
        if (d < 0) st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: not a dataset", where, name);
    }
    attest_cf_dset_info info;
    attest_dtype dtype = (attest_dtype)0;
    if (st == ATTEST_OK) st = attest_cf_dset_describe(d, where, name, &info);
    if (st == ATTEST_OK) {
        dtype = attest_cf_dtype_of(&info);
        if (!dtype)
            st = attest_fail(ATTEST_ERR_FORMAT,
                             "%s%s: dtype %s is not one attest reads (uint8, int32, float32, "
                             "float64, uint16 for bf16)",
                             where, name, info.type_desc);
        else if (info.rank < 1 || info.rank > ATTEST_TENSOR_MAX_RANK)
            st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: rank %d, expected 1 to %d", where, name,
                             info.rank, ATTEST_TENSOR_MAX_RANK);
    }
    size_t nbytes = 0;
    if (st == ATTEST_OK) {
        unsigned long long n = attest_dtype_size(dtype);
        for (int i = 0; i < info.rank && st == ATTEST_OK; i++) {
            if (info.dims[i] != 0 && n > attest_casefile_max_bytes() / (unsigned long long)info.dims[i])
                st = attest_fail(ATTEST_ERR_FORMAT,
                                 "%s%s: larger than the %llu MiB a case may take (raise it with "
                                 "--max-case-mb or $ATTEST_MAX_CASE_MB)",
                                 where, name, attest_casefile_max_bytes() >> 20);
            n *= (unsigned long long)info.dims[i];
        }
        nbytes = (size_t)n;
    }
    if (st == ATTEST_OK) {
        out->data = malloc(nbytes ? nbytes : 1);
        if (!out->data) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s%s: %zu bytes", where, name, nbytes);
    }
    if (st == ATTEST_OK) st = attest_cf_dset_read(d, where, name, &info, dtype, out->data, nbytes);
    if (st == ATTEST_OK) {
        snprintf(out->name, sizeof out->name, "%s", name);
        out->dtype = dtype;
        out->rank = info.rank;
        for (int i = 0; i < info.rank; i++) out->shape[i] = info.dims[i];
        out->nbytes = nbytes;
    } else {
        attest_stored_tensor_free(out);
        memset(out, 0, sizeof *out);
    }
    if (d >= 0) H5Dclose(d);
    if (g >= 0) H5Oclose(g);
    if (fid >= 0) H5Fclose(fid);
    attest_h5_quiet_end(&q);
    return st;
}

int attest_stored_tensor_matches(const attest_stored_tensor *s, const attest_tensor *t)
{
    if (!s || !t || s->rank != t->rank) return 0;
    for (int32_t i = 0; i < s->rank; i++)
        if (s->shape[i] != t->shape[i]) return 0;
    return 1;
}

attest_status attest_stored_tensor_to_f64(const attest_stored_tensor *s, double *dst)
{
    size_t n = 1;
    for (int32_t i = 0; i < s->rank; i++) n *= (size_t)s->shape[i];
    if (n > 0 && !s->data)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: no data", s->name);
    switch (s->dtype) {
    case ATTEST_DTYPE_U8: {
        const uint8_t *p = s->data;
        for (size_t i = 0; i < n; i++) dst[i] = p[i];
        return ATTEST_OK;
    }
    case ATTEST_DTYPE_I32: {
        const int32_t *p = s->data;
        for (size_t i = 0; i < n; i++) dst[i] = p[i];
        return ATTEST_OK;
    }
    case ATTEST_DTYPE_F32: {
        const float *p = s->data;
        for (size_t i = 0; i < n; i++) dst[i] = (double)p[i];
        return ATTEST_OK;
    }
    case ATTEST_DTYPE_BF16: {
        const uint16_t *p = s->data;
        for (size_t i = 0; i < n; i++) dst[i] = (double)attest_bf16_decode(p[i]);
        return ATTEST_OK;
    }
    case ATTEST_DTYPE_F64:
        memcpy(dst, s->data, n * sizeof(double));
        return ATTEST_OK;
    }
    return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", s->name, (int)s->dtype);
}

void attest_stored_tensor_free(attest_stored_tensor *s)
{
    if (!s) return;
    free(s->data);
    s->data = NULL;
}

/* Tensor files -------------------------------------------------------------------------------- */

struct attest_tensorfile {
    hid_t file;
    char path[4096];
};

attest_status attest_tensorfile_create(const char *path, attest_tensorfile **out)
{
    if (!path || !out)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_tensorfile_create: NULL argument");
    *out = NULL;
    attest_tensorfile *f = calloc(1, sizeof *f);
    if (!f) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: cannot allocate a tensor file", path);
    snprintf(f->path, sizeof f->path, "%s", path);
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    f->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    attest_status st = ATTEST_OK;
    if (f->file < 0) {
        st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot create");
        free(f);
        f = NULL;
    }
    attest_h5_quiet_end(&q);
    *out = f;
    return st;
}

/* Opens the group (root for NULL or "/"), creating it with its parents when missing. */
static attest_status tf_group(attest_tensorfile *f, const char *group, char *where, size_t cap,
                              hid_t *g)
{
    attest_cf_prefix(where, cap, f->path, group);
    if (attest_cf_is_root(group)) {
        *g = H5Gopen2(f->file, "/", H5P_DEFAULT);
        if (*g < 0) return attest_fail(ATTEST_ERR_IO, "%s: cannot open the root group", f->path);
        return ATTEST_OK;
    }
    return attest_cf_require_group(f->file, where, group[0] == '/' ? group + 1 : group, g);
}

/* What one tensorfile call writes into a group: a dataset, or a string or integer attribute. */
typedef enum tf_kind { TF_TENSOR, TF_STRING, TF_INT } tf_kind;

typedef struct tf_item {
    tf_kind kind;
    const attest_casefile_output *tensor;
    const char *key, *text;
    int64_t number;
} tf_item;

static attest_status tf_put(attest_tensorfile *f, const char *group, const tf_item *it)
{
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    char where[600];
    hid_t g;
    attest_status st = tf_group(f, group, where, sizeof where, &g);
    if (st == ATTEST_OK) {
        const attest_casefile_output *t = it->tensor;
        if (it->kind == TF_TENSOR)
            st = attest_cf_dset_write(g, where, t->name, t->dtype, t->rank, t->shape, t->data, 0);
        else if (it->kind == TF_STRING)
            st = attest_h5_write_attr_string(g, where, it->key, it->text);
        else
            st = attest_h5_write_attr_int(g, where, it->key, it->number);
        H5Gclose(g);
    }
    attest_h5_quiet_end(&q);
    return st;
}

attest_status attest_tensorfile_write(attest_tensorfile *f, const char *group,
                                      const attest_casefile_output *t)
{
    if (!f || !t || !t->name)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_tensorfile_write: NULL argument");
    const tf_item it = {TF_TENSOR, t, NULL, NULL, 0};
    return tf_put(f, group, &it);
}

attest_status attest_tensorfile_set_string(attest_tensorfile *f, const char *group,
                                           const char *key, const char *value)
{
    if (!f || !key)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_tensorfile_set_string: NULL argument");
    const tf_item it = {TF_STRING, NULL, key, value, 0};
    return tf_put(f, group, &it);
}

attest_status attest_tensorfile_set_int(attest_tensorfile *f, const char *group, const char *key,
                                        int64_t value)
{
    if (!f || !key)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_tensorfile_set_int: NULL argument");
    const tf_item it = {TF_INT, NULL, key, NULL, value};
    return tf_put(f, group, &it);
}

attest_status attest_tensorfile_close(attest_tensorfile *f)
{
    if (!f) return ATTEST_OK;
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    attest_status st = ATTEST_OK;
    if (H5Fclose(f->file) < 0) {
        st = attest_h5_fail(ATTEST_ERR_IO, f->path, "cannot close (disk full?)");
    }
    attest_h5_quiet_end(&q);
    free(f);
    return st;
}
