/* attest store (internal): the one HDF5 helper layer of case files and results files (h5.c).
 *
 * One rule for HDF5's error stack: every entry point of the store that calls HDF5 runs between
 * attest_h5_quiet_begin and attest_h5_quiet_end, so HDF5 never prints; a failure's message is
 * taken off the stack with attest_h5_detail (which clears it) before any other HDF5 call, since
 * a later successful call may clear it; attest_h5_quiet_end clears whatever a caller left.
 *
 * Attribute helpers turn a failure into one attest_fail() line that starts with the caller's
 * `where` prefix ("case.h5: ", "case.h5: v4_basic/", "results.h5: ") followed by the name.
 */
#ifndef ATTEST_STORE_H5_H
#define ATTEST_STORE_H5_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "attest/status.h"

typedef struct attest_h5_quiet {
    H5E_auto2_t func;
    void *data;
    int saved;
} attest_h5_quiet;

void attest_h5_quiet_begin(attest_h5_quiet *q);
void attest_h5_quiet_end(const attest_h5_quiet *q);

/* Copies the most specific message of HDF5's error stack into buf ("HDF5 error" when the stack
 * is empty), on one line, and clears the stack. */
void attest_h5_detail(char *buf, size_t cap);

/* Records "path: what: <HDF5's message>" with attest_fail and returns st. */
attest_status attest_h5_fail(attest_status st, const char *path, const char *what);

/* Records "<where>name: what: <HDF5's message>" (where: a prefix such as "f.h5: g/"). */
attest_status attest_h5_fail_at(attest_status st, const char *where, const char *name,
                               const char *what);

/* 1 if link `name` (one name or a slash-separated path) exists below loc, following each
 * component; 0 if not; -1 on an HDF5 failure. */
int attest_h5_link_exists(hid_t loc, const char *name);

/* Describes an HDF5 datatype for messages: "int64", "float32", "string", ... */
void attest_h5_describe_type(hid_t type, char *buf, size_t cap);

/* 1 if attribute `name` exists on loc, 0 if not, -1 on failure. */
int attest_h5_attr_exists(hid_t loc, const char *name);

/* Scalar attribute readers: ATTEST_ERR_NOT_FOUND when absent, ATTEST_ERR_FORMAT naming the
 * attribute for a value of the wrong class, a non-scalar or one out of range, ATTEST_ERR_IO
 * when HDF5 cannot read it. Integers: any size or sign, or an enum over integers (h5py's
 * bools); an unsigned value above INT64_MAX is out of range for _int, a negative one for _u64.
 * _double takes floats and integers. */
attest_status attest_h5_read_attr_int(hid_t loc, const char *where, const char *name, int64_t *v)
    ATTEST_MUST_CHECK;
attest_status attest_h5_read_attr_u64(hid_t loc, const char *where, const char *name,
                                      uint64_t *v) ATTEST_MUST_CHECK;
attest_status attest_h5_read_attr_double(hid_t loc, const char *where, const char *name,
                                         double *v) ATTEST_MUST_CHECK;

#define ATTEST_H5_ONE_LINE 1u /* control characters come back as '?' (names for messages) */

/* Reads a scalar string attribute (variable or fixed length, ASCII or UTF-8; fixed ones lose
 * their space padding) into buf; ATTEST_ERR_FORMAT when it does not fit in cap. */
attest_status attest_h5_read_attr_string(hid_t loc, const char *where, const char *name,
                                         char *buf, size_t cap, unsigned flags) ATTEST_MUST_CHECK;

/* Scalar attribute writers, with explicit little-endian file types; an existing attribute of
 * the name is replaced. */
attest_status attest_h5_write_attr_int(hid_t loc, const char *where, const char *name, int64_t v)
    ATTEST_MUST_CHECK;
attest_status attest_h5_write_attr_u64(hid_t loc, const char *where, const char *name,
                                       uint64_t v) ATTEST_MUST_CHECK;
attest_status attest_h5_write_attr_double(hid_t loc, const char *where, const char *name,
                                          double v) ATTEST_MUST_CHECK;
/* A variable-length UTF-8 string (what h5py writes and reads back as str); NULL writes "". */
attest_status attest_h5_write_attr_string(hid_t loc, const char *where, const char *name,
                                          const char *v) ATTEST_MUST_CHECK;

#endif /* ATTEST_STORE_H5_H */
