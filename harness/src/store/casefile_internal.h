/* attest case files: HDF5 helpers shared by casefile_read.c, casefile_write.c and
 * casefile_outputs.c, and the child-process write results_final.c uses too (not a public
 * header); casefile_h5util.c holds them, on top of the store's shared layer (h5.h: the error
 * stack, links, attributes).
 *
 * Every helper checks its HDF5 calls and turns a failure into one attest_fail() line that starts
 * with the caller's `where` prefix ("case.h5: " or "case.h5: v4_basic/") followed by the field.
 */
#ifndef ATTEST_CASEFILE_INTERNAL_H
#define ATTEST_CASEFILE_INTERNAL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/casefile.h"
#include "attest/status.h"
#include "h5.h"

/* Formats the message prefix for a file and an optional group into buf: "f.h5: " / "f.h5: g/". */
void attest_cf_prefix(char *buf, size_t cap, const char *path, const char *group);

/* Re-records the last error message behind a prefix and an optional field name ("where" +
 * "field: " + message) with status st. Copies the message first: formatting the thread's error
 * buffer into itself would overlap. */
attest_status attest_cf_rewrap(attest_status st, const char *where, const char *field);

/* Returns 1 for NULL, "" and "/": the root. */
int attest_cf_is_root(const char *group);

/* Opens a file read-only: ATTEST_ERR_IO when the path cannot be read at all, ATTEST_ERR_FORMAT
 * when it is not a readable HDF5 file (wrong format, truncated). */
attest_status attest_cf_open_read(const char *path, hid_t *file) ATTEST_MUST_CHECK;

/* Opens `group` (root when attest_cf_is_root) of an open file. ATTEST_ERR_NOT_FOUND if absent. */
attest_status attest_cf_open_group(hid_t file, const char *path, const char *group, hid_t *out)
    ATTEST_MUST_CHECK;

/* Opens `name` below loc as a group, creating it and any missing parents. */
attest_status attest_cf_require_group(hid_t loc, const char *where, const char *name, hid_t *out)
    ATTEST_MUST_CHECK;

/* Datasets --------------------------------------------------------------------------------- */

/* What a dataset holds, as far as attest cares. */
typedef struct attest_cf_dset_info {
    int h5class;           /* H5T_class_t */
    size_t elem_size;
    int is_signed;         /* integers only */
    int rank;
    int64_t dims[H5S_MAX_RANK];
    char type_desc[32];    /* "int64", "float32", "string", ... for messages */
} attest_cf_dset_info;

/* Describes dataset `name` below loc (FORMAT naming it when it is not a simple dataspace). */
attest_status attest_cf_dset_describe(hid_t dset, const char *where, const char *name,
                                      attest_cf_dset_info *info) ATTEST_MUST_CHECK;

/* Returns the attest dtype a dataset of this description can be read as, or 0. 1-byte integers
 * read as uint8 and 2-byte integers as bf16 bit patterns (either sign: raw containers), signed
 * 4-byte integers as int32, 4- and 8-byte floats as float32 / float64. */
attest_dtype attest_cf_dtype_of(const attest_cf_dset_info *info);

/* Reads the whole dataset into buf (nbytes, which must equal its element count times the dtype
 * size) without value conversion beyond byte order. IO naming the field when HDF5 cannot read
 * (truncated file, missing compression filter). */
attest_status attest_cf_dset_read(hid_t dset, const char *where, const char *name,
                                  const attest_cf_dset_info *info, attest_dtype dtype, void *buf,
                                  size_t nbytes) ATTEST_MUST_CHECK;

/* Writes a dataset with an explicit little-endian file type; compress asks for chunked deflate
 * (level 1) when the filter can encode, silently contiguous otherwise. */
attest_status attest_cf_dset_write(hid_t loc, const char *where, const char *name,
                                   attest_dtype dtype, int32_t rank, const int64_t *shape,
                                   const void *data, int compress) ATTEST_MUST_CHECK;

/* The dataset listing a sparse pool's stored pages: "cache_bytes" -> "cache_pages",
 * "extra_cache_bytes" -> "extra_cache_pages". */
void attest_cf_pages_name(const char *pool_name, char *buf, size_t cap);

/* Case I/O on an open location (the file's root or a group) --------------------------------- */

attest_status attest_cf_write_case(hid_t loc, const char *where, const attest_case *c,
                                   const attest_casefile_extras *extras) ATTEST_MUST_CHECK;
attest_status attest_cf_read_case(hid_t loc, const char *where, attest_case *out)
    ATTEST_MUST_CHECK;

/* Reads the "kind" / "kernel" attributes of a group: 1 with *kernel set when it is a case,
 * 0 when it has neither, an error when they are malformed or disagree. */
attest_status attest_cf_case_kind(hid_t loc, const char *where, int *is_case,
                                  attest_kernel *kernel) ATTEST_MUST_CHECK;

/* Writes the recorded-run attributes (casefile_recorded.c) on the open candidate/ group. */
attest_status attest_cf_write_recorded(hid_t g, const char *where,
                                       const attest_casefile_recorded *r) ATTEST_MUST_CHECK;

/* Writes c as a case file at write_path from a child process (casefile_recorded.c), for
 * attest_casefile_save_new and the results store's repro files: after a failed write (a full
 * disk) HDF5 1.10 can leave the file half closed and crash at exit in its own clean-up, which
 * must not be the caller's process. `name` is the path the child is spawned within and that
 * messages name, `doing` what a spawn failure says it was doing ("write a repro"). */
attest_status attest_cf_save_in_child(const char *write_path, const char *name, const char *doing,
                                      const attest_case *c, const attest_casefile_extras *x)
    ATTEST_MUST_CHECK;

#endif /* ATTEST_CASEFILE_INTERNAL_H */
