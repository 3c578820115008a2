/* attest: case-file I/O on an HDF5 location the caller already holds open (for stores that keep
 * cases inside a larger file, such as a results file's repro groups). Same schema and checks as
 * casefile.h; include this header only where hdf5.h is available.
 */
#ifndef ATTEST_CASEFILE_H5_H
#define ATTEST_CASEFILE_H5_H

#include <hdf5.h>

#include "attest/casefile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the case into the open group `loc` (which should be empty) as attest_casefile_save
 * does. `label` names the location in messages, e.g. "results.h5: repro/17". */
attest_status attest_casefile_write_at(hid_t loc, const char *label, const attest_case *c,
                                       const attest_casefile_extras *extras) ATTEST_MUST_CHECK;

/* Reads and validates the case stored in the open group `loc`, as attest_casefile_load does. */
attest_status attest_casefile_read_at(hid_t loc, const char *label, attest_case *out)
    ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_CASEFILE_H5_H */
