/* attest case files: writing a case (parameters as attributes, tensors as datasets) and the
 * optional outputs beside it. The schema is docs/case-format.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attest/casefile_h5.h"
#include "attest/conventions.h"
#include "casefile_internal.h"

attest_casefile_output attest_casefile_output_of(const attest_tensor *t)
{
    attest_casefile_output o;
    memset(&o, 0, sizeof o);
    o.name = t->name;
    o.dtype = t->dtype;
    o.rank = t->rank;
    for (int32_t i = 0; i < t->rank && i < ATTEST_TENSOR_MAX_RANK; i++) o.shape[i] = t->shape[i];
    o.data = t->data;
    return o;
}

/* Attribute writers that stop at the first failure: keeps the long attribute lists readable. */
typedef struct attr_writer {
    hid_t loc;
    const char *where;
    attest_status st;
} attr_writer;

static void w_int(attr_writer *w, const char *name, int64_t v)
{
    if (w->st == ATTEST_OK) w->st = attest_h5_write_attr_int(w->loc, w->where, name, v);
}

static void w_str(attr_writer *w, const char *name, const char *v)
{
    if (w->st == ATTEST_OK) w->st = attest_h5_write_attr_string(w->loc, w->where, name, v);
}

static void w_double(attr_writer *w, const char *name, double v)
{
    if (w->st == ATTEST_OK) w->st = attest_h5_write_attr_double(w->loc, w->where, name, v);
}

/* The parameters, one attribute per field of the family's table (case.h). */
static attest_status write_params(attr_writer *w, const attest_case *c)
{
    const attest_conventions conv = attest_conventions_of_case(c);
    if (attest_conventions_validate(&conv) != ATTEST_OK)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%sa convention is out of range", w->where);
    size_t n;
    const attest_param_field *fields = attest_case_param_fields(c->kernel, &n);
    for (size_t i = 0; i < n && w->st == ATTEST_OK; i++) {
        const attest_param_field *f = &fields[i];
        if (!attest_param_present(c, f)) continue;
        const int64_t v = attest_param_get(c, f);
        switch (f->type) {
        case ATTEST_PARAM_ENUM:
        case ATTEST_PARAM_LAYOUT:
        case ATTEST_PARAM_FIXED_LAYOUT: {
            const char *name = attest_param_value_name(f, v, 0);
            if (!name)
                return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s%s: %lld is out of range",
                                   w->where, f->attr, (long long)v);
            w_str(w, f->attr, name);
            break;
        }
        case ATTEST_PARAM_F32: w_double(w, f->attr, attest_param_get_real(c, f)); break;
        case ATTEST_PARAM_FLAG: w_int(w, f->attr, v != 0); break;
        case ATTEST_PARAM_I32:
        case ATTEST_PARAM_I64:
        case ATTEST_PARAM_FIXED: w_int(w, f->attr, v); break;
        }
    }
    return w->st;
}

/* A stored name must stay inside the case group and must not shadow a case dataset. */
static attest_status check_output_name(const attest_case *c, const char *where, const char *name,
                                       int candidate)
{
    if (!name || !name[0] || name[0] == '/' || strlen(name) >= 96 || strstr(name, "//") ||
        strstr(name, "..") || name[strlen(name) - 1] == '/')
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s%s: invalid output name", where,
                           name ? name : "(null)");
    if (candidate) return ATTEST_OK;
    if (!strncmp(name, "candidate/", 10) || !strcmp(name, "candidate"))
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                           "%s%s: expected outputs may not live under candidate/", where, name);
    for (size_t i = 0; i < c->num_tensors; i++)
        if (c->tensors[i].role != ATTEST_ROLE_OUTPUT && !strcmp(c->tensors[i].name, name))
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT,
                               "%s%s: an output may not replace the case's %s tensor", where, name,
                               c->tensors[i].role == ATTEST_ROLE_INPUT ? "input" : "truth");
    return ATTEST_OK;
}

static attest_status write_output(hid_t loc, const char *where, const char *prefix,
                                  const attest_casefile_output *o)
{
    char name[128];
    snprintf(name, sizeof name, "%s%s", prefix, o->name);
    if (attest_dtype_size(o->dtype) == 0)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s%s: unknown dtype", where, name);
    return attest_cf_dset_write(loc, where, name, o->dtype, o->rank, o->shape, o->data, 0);
}

/* The dataset that lists a sparse pool's stored pages: cache_pages, extra_cache_pages. */
void attest_cf_pages_name(const char *pool_name, char *buf, size_t cap)
{
    const size_t n = strlen(pool_name);
    if (n >= 6 && !strcmp(pool_name + n - 6, "_bytes"))
        snprintf(buf, cap, "%.*s_pages", (int)(n - 6), pool_name);
    else
        snprintf(buf, cap, "%s_pages", pool_name);
}

/* A sparse pool: the pages the case reaches, ascending ("cache_pages" int32 [n]), and their
 * bytes, page after page ("cache_bytes" uint8 [n, page_stride]). */
static attest_status write_sparse_pool(hid_t loc, const char *where, const attest_case *c, size_t i,
                                       unsigned pool, int compress)
{
    const attest_tensor *t = &c->tensors[i];
    uint64_t stride = 0;
    (void)attest_case_pool_tensor(c, pool, &stride, NULL);
    int32_t *pages = NULL;
    size_t n = 0;
    ATTEST_FORWARD(attest_case_pool_pages(c, pool, &pages, &n));
    uint8_t *bytes = malloc(n ? n * stride : 1);
    if (bytes == NULL) {
        free(pages);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s%s: %zu pages", where, t->name, n);
    }
    for (size_t k = 0; k < n; k++)
        memcpy(bytes + k * stride, (const uint8_t *)t->data + (uint64_t)pages[k] * stride, stride);
    char name[48];
    attest_cf_pages_name(t->name, name, sizeof name);
    const int64_t list_shape[1] = {(int64_t)n}, byte_shape[2] = {(int64_t)n, (int64_t)stride};
    attest_status st = attest_cf_dset_write(loc, where, name, ATTEST_DTYPE_I32, 1, list_shape,
                                            pages, 0);
    if (st == ATTEST_OK)
        st = attest_cf_dset_write(loc, where, t->name, ATTEST_DTYPE_U8, 2, byte_shape, bytes,
                                  compress);
    free(bytes);
    free(pages);
    return st;
}

attest_status attest_cf_write_case(hid_t loc, const char *where, const attest_case *c,
                                   const attest_casefile_extras *x)
{
    const char *kernel = attest_kernel_name(c->kernel);
    if (!kernel) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%skind: unknown kernel", where);
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role != ATTEST_ROLE_OUTPUT && !t->data)
            return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s%s: tensor is not placed", where,
                               t->name);
    }
    if (x) {
        for (size_t i = 0; i < x->num_expected; i++)
            ATTEST_FORWARD(check_output_name(c, where, x->expected[i].name, 0));
        for (size_t i = 0; i < x->num_candidate; i++)
            ATTEST_FORWARD(check_output_name(c, where, x->candidate[i].name, 1));
    }
    char params[1024];
    ATTEST_FORWARD(attest_case_param_string(c, params, sizeof params));

    attr_writer w = {loc, where, ATTEST_OK};
    /* Version 2 only where it is needed: a dense case stays readable by version-1 readers. */
    w_int(&w, "attest_schema_version", c->sparse_pools ? ATTEST_CASEFILE_SCHEMA_VERSION : 1);
    w_str(&w, "kind", kernel);
    w_str(&w, "kernel", kernel);
    if (w.st == ATTEST_OK) w.st = attest_h5_write_attr_u64(loc, where, "seed", c->seed);
    w_str(&w, "params", params);
    if (x && x->note) w_str(&w, "note", x->note);
    if (x && x->replay) w_str(&w, "replay", x->replay);
    ATTEST_FORWARD(w.st);
    ATTEST_FORWARD(write_params(&w, c));

    int compress = !(x && x->no_compress);
    for (size_t i = 0; i < c->num_tensors; i++) {
        const attest_tensor *t = &c->tensors[i];
        if (t->role == ATTEST_ROLE_OUTPUT) continue;
        /* Cache pools are most of a case and compress well (poisoned padding, unused slots). */
        size_t n = strlen(t->name);
        int is_cache = n >= 11 && !strcmp(t->name + n - 11, "cache_bytes");
        const unsigned pool = attest_case_tensor_pool(c, i);
        if (pool && (c->sparse_pools & pool)) {
            ATTEST_FORWARD(write_sparse_pool(loc, where, c, i, pool, compress));
            continue;
        }
        ATTEST_FORWARD(attest_cf_dset_write(loc, where, t->name, t->dtype, t->rank, t->shape,
                                            t->data, compress && is_cache));
    }
    if (!x) return ATTEST_OK;
    for (size_t i = 0; i < x->num_expected; i++)
        ATTEST_FORWARD(write_output(loc, where, "", &x->expected[i]));
    if (x->num_candidate > 0 || x->candidate_name || x->recorded) {
        hid_t g;
        ATTEST_FORWARD(attest_cf_require_group(loc, where, "candidate", &g));
        attest_status st = ATTEST_OK;
        if (x->candidate_name)
            st = attest_h5_write_attr_string(g, where, "candidate", x->candidate_name);
        if (st == ATTEST_OK && x->recorded) st = attest_cf_write_recorded(g, where, x->recorded);
        H5Gclose(g);
        ATTEST_FORWARD(st);
    }
    for (size_t i = 0; i < x->num_candidate; i++)
        ATTEST_FORWARD(write_output(loc, where, "candidate/", &x->candidate[i]));
    return ATTEST_OK;
}

static hid_t make_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return fapl;
    if (H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
        H5Pclose(fapl);
        return H5I_INVALID_HID;
    }
    return fapl;
}

/* Opens the file for adding a group: an existing file read-write, else a new one. */
static attest_status open_for_append(const char *path, hid_t fapl, hid_t *fid)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        *fid = H5Fopen(path, H5F_ACC_RDWR, fapl);
        if (*fid < 0) {
            return attest_h5_fail(ATTEST_ERR_IO, path, "cannot open for writing");
        }
        return ATTEST_OK;
    }
    *fid = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    if (*fid < 0) {
        return attest_h5_fail(ATTEST_ERR_IO, path, "cannot create");
    }
    return ATTEST_OK;
}

attest_status attest_casefile_save(const char *path, const char *group, const attest_case *c,
                                   const attest_casefile_extras *extras)
{
    if (!path || !c)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_save: NULL argument");
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    int root = attest_cf_is_root(group);
    const char *gname = root ? NULL : (group[0] == '/' ? group + 1 : group);
    char where[600];
    attest_cf_prefix(where, sizeof where, path, gname);
    attest_status st = ATTEST_OK;
    hid_t fid = H5I_INVALID_HID, loc = H5I_INVALID_HID;
    int created_group = 0;
    hid_t fapl = make_fapl();
    if (fapl < 0) {
        st = attest_fail(ATTEST_ERR_IO, "%s: cannot create HDF5 file properties", path);
        goto out;
    }
    if (root) {
        fid = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        if (fid < 0) {
            st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot create");
            goto out;
        }
        loc = H5Gopen2(fid, "/", H5P_DEFAULT);
        if (loc < 0) {
            st = attest_fail(ATTEST_ERR_IO, "%s: cannot open the root group", path);
            goto out;
        }
    } else {
        st = open_for_append(path, fapl, &fid);
        if (st != ATTEST_OK) goto out;
        if (attest_h5_link_exists(fid, gname)) {
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: group '%s' already exists", path,
                             gname);
            goto out;
        }
        st = attest_cf_require_group(fid, where, gname, &loc);
        if (st != ATTEST_OK) goto out;
        created_group = 1;
    }
    st = attest_cf_write_case(loc, where, c, extras);
out:
    if (loc >= 0) H5Gclose(loc);
    if (st != ATTEST_OK && created_group && fid >= 0) (void)H5Ldelete(fid, gname, H5P_DEFAULT);
    if (fid >= 0 && H5Fclose(fid) < 0 && st == ATTEST_OK) {
        st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot close (disk full?)");
    }
    if (fapl >= 0) H5Pclose(fapl);
    /* A half-written new file is worse than none. */
    if (st != ATTEST_OK && root && fid >= 0) (void)remove(path);
    attest_h5_quiet_end(&q);
    return st;
}

attest_status attest_casefile_write_at(hid_t loc, const char *label, const attest_case *c,
                                       const attest_casefile_extras *extras)
{
    if (!c) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_write_at: NULL case");
    char where[600];
    snprintf(where, sizeof where, "%s/", label ? label : "");
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    attest_status st = attest_cf_write_case(loc, where, c, extras);
    attest_h5_quiet_end(&q);
    return st;
}
