/* Shared by the HDF5 reader targets (fuzz_casefile, fuzz_results): run a reader on an input in
 * a forked child first and classify how it ended by its crash or hang report (the sanitizer's,
 * or a backtrace in builds without one). HDF5 1.10 itself crashes and loops on some corrupt
 * metadata, and attest cannot validate what HDF5 parses before handing it over; a report whose
 * innermost frame outside the C library and the sanitizer runtime lies in libhdf5 is HDF5's
 * (the input is skipped, counted and summarized at exit). Any other crash is a finding: the
 * target reruns the input in its own process, where libFuzzer sees it, and aborts. */
#ifndef ATTEST_FUZZ_HDF5_CHILD_H
#define ATTEST_FUZZ_HDF5_CHILD_H

#include <stddef.h>

typedef enum fuzz_child_outcome {
    FUZZ_CHILD_OK,
    FUZZ_CHILD_HDF5_CRASH,  /* crashed or hung inside HDF5: skip the input */
    FUZZ_CHILD_OTHER_CRASH, /* crashed elsewhere: this process must crash too */
    FUZZ_CHILD_OTHER_HANG   /* slow elsewhere: libFuzzer's -timeout judges it in this process */
} fuzz_child_outcome;

/* Runs read(path) in a child with a 500 ms deadline; `target` names the summary's lines
 * ("fuzz casefile: ..."). On a crash or hang that is not HDF5's the report is left in `report`
 * (cap bytes, NUL-terminated). Aborts when it cannot fork or write its report file. */
fuzz_child_outcome fuzz_child_run(const char *target, void (*read)(const char *path),
                                  const char *path, char *report, size_t cap);

/* Returns 1 when the first stack of the report blames libhdf5 (its innermost frame outside the
 * runtime), copies that frame into `frame` and, into `site`, the first named HDF5 function from
 * there outward that is not a generic layer (H5HG_read, H5HG__protect), for the summary. */
int fuzz_child_blames_hdf5(const char *report, char *frame, size_t cap, char *site,
                           size_t site_cap);

#endif
