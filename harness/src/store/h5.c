/* The store's one HDF5 helper layer (h5.h): silencing and reading HDF5's error stack, link
 * lookups, and checked scalar attributes for case files and results files alike.
 *
 * Integers are read whatever their size, sign or enum wrapping (h5py stores numpy bools as an
 * enum), then range-checked here rather than by an HDF5 conversion that would clip silently.
 */
#include "h5.h"

#include <hdf5_hl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* HDF5 closes whatever is still open from an atexit handler. After a write failed (a full
 * disk), a file whose H5Fclose failed stays in its table half torn down, and that handler
 * crashed in H5F__close_cb: `attest fixture make` and `attest reference` printed their one-line
 * error and then died of SIGSEGV. attest closes what it opens and reports what fails, so the
 * handler has nothing to do; H5dont_atexit must come before HDF5's first call, hence a
 * constructor of the one object every HDF5 user in the store links. */
__attribute__((constructor)) static void no_exit_cleanup(void) { (void)H5dont_atexit(); }

/* The error stack ------------------------------------------------------------------------- */

void attest_h5_quiet_begin(attest_h5_quiet *q)
{
    q->saved = H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data) >= 0;
    (void)H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void attest_h5_quiet_end(const attest_h5_quiet *q)
{
    (void)H5Eclear2(H5E_DEFAULT);
    if (q->saved) (void)H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

typedef struct detail_state {
    char *buf;
    size_t cap;
    int done;
} detail_state;

static herr_t detail_cb(unsigned n, const H5E_error2_t *err, void *user)
{
    detail_state *st = user;
    (void)n;
    if (st->done || !err) return 0;
    const char *msg = (err->desc && err->desc[0]) ? err->desc : err->func_name;
    if (!msg || !msg[0]) return 0;
    /* The file driver's "file write failed: time = ..., filename = ..., errno = 27, error
     * message = 'File too large', buf = 0x..., ...": its head and the OS's message are the news. */
    const char *head_end = strchr(msg, ':');
    const char *os = strstr(msg, "error message = '");
    const char *os_end = os ? strchr(os + 17, '\'') : NULL;
    if (head_end && os && os_end)
        snprintf(st->buf, st->cap, "%.*s: %.*s", (int)(head_end - msg), msg,
                 (int)(os_end - (os + 17)), os + 17);
    else
        snprintf(st->buf, st->cap, "%s", msg);
    st->done = 1;
    return 0;
}

void attest_h5_detail(char *buf, size_t cap)
{
    if (!cap) return;
    buf[0] = '\0';
    detail_state st = {buf, cap, 0};
    /* Upward: the most specific error comes first. */
    (void)H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, detail_cb, &st);
    (void)H5Eclear2(H5E_DEFAULT);
    if (!buf[0]) snprintf(buf, cap, "HDF5 error");
    /* HDF5's descriptions may hold newlines (and the OS's error text): one line, always. */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f) *p = ' ';
}

attest_status attest_h5_fail(attest_status st, const char *path, const char *what)
{
    char detail[200];
    attest_h5_detail(detail, sizeof detail);
    return attest_fail(st, "%s: %s: %s", path, what, detail);
}

attest_status attest_h5_fail_at(attest_status st, const char *where, const char *name,
                               const char *what)
{
    char detail[200];
    attest_h5_detail(detail, sizeof detail);
    return attest_fail(st, "%s%s: %s: %s", where, name, what, detail);
}

/* Links ------------------------------------------------------------------------------------ */

int attest_h5_link_exists(hid_t loc, const char *name)
{
    if (!name || !name[0]) return 0;
    /* H5Lexists on "a/b" fails rather than answering when "a" is missing; H5LTpath_valid walks
     * the components. */
    htri_t ex = H5LTpath_valid(loc, name, 0);
    if (ex < 0) {
        (void)H5Eclear2(H5E_DEFAULT);
        return -1;
    }
    return ex > 0;
}

void attest_h5_describe_type(hid_t type, char *buf, size_t cap)
{
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    switch (cls) {
    case H5T_INTEGER:
        snprintf(buf, cap, "%sint%zu", H5Tget_sign(type) == H5T_SGN_NONE ? "u" : "", size * 8);
        break;
    case H5T_FLOAT: snprintf(buf, cap, "float%zu", size * 8); break;
    case H5T_STRING: snprintf(buf, cap, "string"); break;
    case H5T_ENUM: snprintf(buf, cap, "enum%zu", size * 8); break;
    case H5T_COMPOUND: snprintf(buf, cap, "compound"); break;
    case H5T_OPAQUE: snprintf(buf, cap, "opaque%zu", size * 8); break;
    case H5T_ARRAY: snprintf(buf, cap, "array"); break;
    case H5T_VLEN: snprintf(buf, cap, "vlen"); break;
    case H5T_BITFIELD: snprintf(buf, cap, "bitfield%zu", size * 8); break;
    case H5T_REFERENCE: snprintf(buf, cap, "reference"); break;
    case H5T_TIME: snprintf(buf, cap, "time"); break;
    default: snprintf(buf, cap, "unknown type"); break;
    }
}

/* Attributes ------------------------------------------------------------------------------- */

int attest_h5_attr_exists(hid_t loc, const char *name)
{
    htri_t ex = H5Aexists(loc, name);
    if (ex < 0) {
        (void)H5Eclear2(H5E_DEFAULT);
        return -1;
    }
    return ex > 0;
}

/* Opens attribute `name` and checks it holds exactly one value; returns its file type. */
static attest_status open_scalar_attr(hid_t loc, const char *where, const char *name, hid_t *attr,
                                      hid_t *type)
{
    *attr = H5I_INVALID_HID;
    *type = H5I_INVALID_HID;
    const int exists = attest_h5_attr_exists(loc, name);
    if (exists == 0)
        return attest_fail(ATTEST_ERR_NOT_FOUND, "%s%s: required attribute is missing", where,
                           name);
    if (exists > 0) *attr = H5Aopen(loc, name, H5P_DEFAULT);
    if (*attr < 0) {
        (void)H5Eclear2(H5E_DEFAULT);
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: attribute cannot be opened", where, name);
    }
    hid_t space = H5Aget_space(*attr);
    hssize_t npoints = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    H5S_class_t scls = space >= 0 ? H5Sget_simple_extent_type(space) : H5S_NO_CLASS;
    if (space >= 0) H5Sclose(space);
    if (scls == H5S_NULL || npoints != 1) {
        H5Aclose(*attr);
        *attr = H5I_INVALID_HID;
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: expected one value, found %lld", where, name,
                           (long long)(scls == H5S_NULL ? 0 : npoints));
    }
    *type = H5Aget_type(*attr);
    if (*type < 0) {
        H5Aclose(*attr);
        *attr = H5I_INVALID_HID;
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: attribute type unreadable", where, name);
    }
    return ATTEST_OK;
}

/* Reads an integer or integer-based enum attribute as a signed or unsigned 64-bit value. */
static attest_status read_attr_integer(hid_t loc, const char *where, const char *name,
                                       int64_t *sv, uint64_t *uv, int *is_signed)
{
    hid_t attr, ftype;
    ATTEST_FORWARD(open_scalar_attr(loc, where, name, &attr, &ftype));
    attest_status st = ATTEST_OK;
    hid_t mtype = H5I_INVALID_HID, base = H5I_INVALID_HID;
    H5T_class_t cls = H5Tget_class(ftype);
    char desc[32];
    attest_h5_describe_type(ftype, desc, sizeof desc);
    if (cls != H5T_INTEGER && cls != H5T_ENUM) {
        st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: expected an integer, found %s", where, name, desc);
        goto done;
    }
    mtype = H5Tget_native_type(ftype, H5T_DIR_ASCEND);
    base = cls == H5T_ENUM ? H5Tget_super(mtype) : H5Tcopy(mtype);
    if (mtype < 0 || base < 0 || H5Tget_class(base) != H5T_INTEGER || H5Tget_size(mtype) > 8) {
        st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: unsupported integer type %s", where, name, desc);
        goto done;
    }
    size_t size = H5Tget_size(mtype);
    int sgn = H5Tget_sign(base) != H5T_SGN_NONE;
    unsigned char raw[8] = {0};
    if (H5Aread(attr, mtype, raw) < 0) {
        st = attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot read attribute");
        goto done;
    }
    *is_signed = sgn;
    if (sgn) {
        int64_t v = 0;
        if (size == 1) { int8_t x; memcpy(&x, raw, 1); v = x; }
        else if (size == 2) { int16_t x; memcpy(&x, raw, 2); v = x; }
        else if (size == 4) { int32_t x; memcpy(&x, raw, 4); v = x; }
        else if (size == 8) { memcpy(&v, raw, 8); }
        else { st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: unsupported integer size", where, name); goto done; }
        *sv = v;
        *uv = (uint64_t)v;
    } else {
        uint64_t v = 0;
        if (size == 1) { uint8_t x; memcpy(&x, raw, 1); v = x; }
        else if (size == 2) { uint16_t x; memcpy(&x, raw, 2); v = x; }
        else if (size == 4) { uint32_t x; memcpy(&x, raw, 4); v = x; }
        else if (size == 8) { memcpy(&v, raw, 8); }
        else { st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: unsupported integer size", where, name); goto done; }
        *uv = v;
        *sv = (int64_t)v;
    }
done:
    if (base >= 0) H5Tclose(base);
    if (mtype >= 0) H5Tclose(mtype);
    H5Tclose(ftype);
    H5Aclose(attr);
    return st;
}

attest_status attest_h5_read_attr_int(hid_t loc, const char *where, const char *name, int64_t *v)
{
    int64_t sv = 0;
    uint64_t uv = 0;
    int sgn = 1;
    ATTEST_FORWARD(read_attr_integer(loc, where, name, &sv, &uv, &sgn));
    if (!sgn && uv > (uint64_t)INT64_MAX)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: value %llu out of range", where, name,
                           (unsigned long long)uv);
    *v = sv;
    return ATTEST_OK;
}

attest_status attest_h5_read_attr_u64(hid_t loc, const char *where, const char *name, uint64_t *v)
{
    int64_t sv = 0;
    uint64_t uv = 0;
    int sgn = 0;
    ATTEST_FORWARD(read_attr_integer(loc, where, name, &sv, &uv, &sgn));
    if (sgn && sv < 0)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: negative value %lld", where, name,
                           (long long)sv);
    *v = uv;
    return ATTEST_OK;
}

attest_status attest_h5_read_attr_double(hid_t loc, const char *where, const char *name, double *v)
{
    hid_t attr, ftype;
    ATTEST_FORWARD(open_scalar_attr(loc, where, name, &attr, &ftype));
    H5T_class_t cls = H5Tget_class(ftype);
    H5Tclose(ftype);
    if (cls == H5T_INTEGER || cls == H5T_ENUM) {
        H5Aclose(attr);
        int64_t iv;
        ATTEST_FORWARD(attest_h5_read_attr_int(loc, where, name, &iv));
        *v = (double)iv;
        return ATTEST_OK;
    }
    if (cls != H5T_FLOAT) {
        H5Aclose(attr);
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: expected a number", where, name);
    }
    double d = 0;
    herr_t e = H5Aread(attr, H5T_NATIVE_DOUBLE, &d);
    H5Aclose(attr);
    if (e < 0) {
        return attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot read attribute");
    }
    *v = d;
    return ATTEST_OK;
}

attest_status attest_h5_read_attr_string(hid_t loc, const char *where, const char *name, char *buf,
                                         size_t cap, unsigned flags)
{
    hid_t attr, ftype;
    ATTEST_FORWARD(open_scalar_attr(loc, where, name, &attr, &ftype));
    attest_status st = ATTEST_OK;
    hid_t mtype = H5I_INVALID_HID;
    char *tmp = NULL;
    if (H5Tget_class(ftype) != H5T_STRING) {
        char desc[32];
        attest_h5_describe_type(ftype, desc, sizeof desc);
        st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: expected a string, found %s", where, name, desc);
        goto done;
    }
    htri_t vl = H5Tis_variable_str(ftype);
    if (vl < 0) {
        st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: unreadable string type", where, name);
        goto done;
    }
    if (vl) {
        /* HDF5 does not convert between character sets: read in the file's own. */
        mtype = H5Tcopy(H5T_C_S1);
        if (mtype < 0 || H5Tset_size(mtype, H5T_VARIABLE) < 0 ||
            H5Tset_cset(mtype, H5Tget_cset(ftype)) < 0) {
            st = attest_fail(ATTEST_ERR_IO, "%s%s: cannot make a string type", where, name);
            goto done;
        }
        char *s = NULL;
        if (H5Aread(attr, mtype, &s) < 0) {
            st = attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot read attribute");
            goto done;
        }
        if (!s) {
            buf[0] = '\0';
        } else {
            size_t n = strlen(s);
            if (n >= cap)
                st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: string of %zu bytes is too long", where,
                                 name, n);
            else
                memcpy(buf, s, n + 1);
            H5free_memory(s);
        }
    } else {
        size_t n = H5Tget_size(ftype);
        if (n == 0 || n >= cap) {
            st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: string of %zu bytes is too long", where,
                             name, n);
            goto done;
        }
        mtype = H5Tcopy(ftype);
        tmp = calloc(n + 1, 1);
        if (mtype < 0 || !tmp) {
            st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s%s: cannot read string", where, name);
            goto done;
        }
        if (H5Aread(attr, mtype, tmp) < 0) {
            st = attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot read attribute");
            goto done;
        }
        tmp[n] = '\0';
        size_t len = strlen(tmp);
        while (len > 0 && tmp[len - 1] == ' ') len--; /* space-padded strings */
        memcpy(buf, tmp, len);
        buf[len] = '\0';
    }
done:
    /* Names end up in one-line messages: no control character may come through. */
    if (st == ATTEST_OK && (flags & ATTEST_H5_ONE_LINE))
        for (char *c = buf; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    free(tmp);
    if (mtype >= 0) H5Tclose(mtype);
    H5Tclose(ftype);
    H5Aclose(attr);
    return st;
}

static attest_status write_attr(hid_t loc, const char *where, const char *name, hid_t ftype,
                                hid_t mtype, const void *value)
{
    if (attest_h5_attr_exists(loc, name) == 1 && H5Adelete(loc, name) < 0)
        return attest_fail(ATTEST_ERR_IO, "%s%s: cannot replace attribute", where, name);
    hid_t space = H5Screate(H5S_SCALAR);
    if (space < 0) return attest_fail(ATTEST_ERR_IO, "%s%s: cannot create dataspace", where, name);
    hid_t attr = H5Acreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Sclose(space);
    if (attr < 0) {
        return attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot create attribute");
    }
    herr_t e = H5Awrite(attr, mtype, value);
    herr_t c = H5Aclose(attr);
    if (e < 0 || c < 0) {
        return attest_h5_fail_at(ATTEST_ERR_IO, where, name, "cannot write attribute");
    }
    return ATTEST_OK;
}

attest_status attest_h5_write_attr_int(hid_t loc, const char *where, const char *name, int64_t v)
{
    return write_attr(loc, where, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

attest_status attest_h5_write_attr_u64(hid_t loc, const char *where, const char *name, uint64_t v)
{
    return write_attr(loc, where, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}

attest_status attest_h5_write_attr_double(hid_t loc, const char *where, const char *name, double v)
{
    return write_attr(loc, where, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

attest_status attest_h5_write_attr_string(hid_t loc, const char *where, const char *name,
                                          const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        if (t >= 0) H5Tclose(t);
        return attest_fail(ATTEST_ERR_IO, "%s%s: cannot make a string type", where, name);
    }
    const char *value = v ? v : "";
    attest_status st = write_attr(loc, where, name, t, t, &value);
    H5Tclose(t);
    return st;
}
