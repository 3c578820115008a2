/* attest: top-k case files, one top-k case (attest/topk.h) in HDF5 (docs/case-format.md, "Top-k
 * case files").
 *
 * The file's root holds the case: attribute "attest_topk" (what the file is), "schema_version",
 * the parameters (b, next_n, width, k, blocks_per_req, num_blocks as integers; seed as a hex
 * string, h5py reads it as str), datasets logits f32 [rows, width], context_lens i32 [b],
 * block_table i32 [b, blocks_per_req]; optionally the reference selection "topk_indices" and a
 * candidate's outputs under "candidate/" (topk_indices and/or topk_physical, i32 [rows, k]),
 * with attributes "candidate", "note" and "replay" (the command that replays it).
 *
 * Every failure is one attest_fail() line naming the file and the attribute or dataset.
 */
#ifndef ATTEST_TOPK_CASEFILE_H
#define ATTEST_TOPK_CASEFILE_H

#include <stdint.h>

#include "attest/status.h"
#include "attest/topk.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATTEST_TOPK_CASEFILE_SCHEMA_VERSION 1

/* What a file may hold beside the case. Zero-initialize, then fill; every pointer may be NULL. */
typedef struct attest_topk_casefile_extras {
    const int32_t *ref_indices;    /* [rows, k]: the reference selection, as "topk_indices" */
    const char *candidate_name;    /* attribute "candidate" */
    const int32_t *cand_indices;   /* [rows, k]: "candidate/topk_indices" */
    const int32_t *cand_physical;  /* [rows, k]: "candidate/topk_physical" */
    const char *note;              /* attribute "note": free text */
    const char *replay;            /* attribute "replay" */
} attest_topk_casefile_extras;

/* Writes case c as a new file at `path` (an existing file is replaced: the caller decides
 * whether to keep one). ATTEST_ERR_IO when HDF5 cannot write. */
attest_status attest_topk_casefile_save(const char *path, const attest_topk_case *c,
                                        const attest_topk_casefile_extras *extras)
    ATTEST_MUST_CHECK;

/* Reads and validates the case of a top-k case file into *out (parameters in range, every
 * dataset of its dtype and shape, lengths in [0, width], block-table entries in [0,
 * num_blocks)); on error *out holds no memory. Free with attest_topk_case_free. A file that is
 * not a top-k case file (no "attest_topk" attribute) is ATTEST_ERR_FORMAT saying so. */
attest_status attest_topk_casefile_load(const char *path, attest_topk_case *out)
    ATTEST_MUST_CHECK;

/* attest_topk_casefile_load in a forked child with a deadline first ($ATTEST_PROBE_TIMEOUT),
 * so a file whose corrupt HDF5 metadata crashes or hangs the HDF5 library is an error
 * (ATTEST_ERR_FORMAT) instead of the caller's end. Returns what the load returned. */
attest_status attest_topk_casefile_probe(const char *path) ATTEST_MUST_CHECK;

/* 1 when `path` opens as HDF5 and its root carries the "attest_topk" attribute (read in a
 * probe child), else 0. For choosing a verb's mode from its files. */
int attest_topk_casefile_is(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_TOPK_CASEFILE_H */
