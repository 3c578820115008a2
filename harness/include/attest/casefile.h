/* attest: case files, one case (or several, one per group) in HDF5 as raw data.
 *
 * The schema (docs/case-format.md, version ATTEST_CASEFILE_SCHEMA_VERSION) is a superset of the
 * upstream-oracle schema in ../shared/oracles: every oracle group loads as a case. A case lives
 * either at the file's root or in a group; its parameters are attributes of that group, its tensors
 * datasets named as in case.h. Datasets at the group's root named like an output ("out_bf16",
 * "lse", "logits", "topk512_set", ...) are stored expected outputs; "candidate/<name>" holds a
 * candidate's outputs beside them. Anything else (attributes such as "source", datasets such as an
 * mla "block_table") is kept by the file and ignored by attest.
 *
 * Every failure is one attest_fail() line naming the file, the group when there is one, and the
 * attribute or dataset: "case.h5: v4_basic/indices: dtype int64, expected int32". Files that do
 * not open, are truncated or are not HDF5 give ATTEST_ERR_IO (cannot open at all) or
 * ATTEST_ERR_FORMAT (opened, content malformed or inconsistent). HDF5's own error printing is
 * silenced for the duration of each call.
 */
#ifndef ATTEST_CASEFILE_H
#define ATTEST_CASEFILE_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: sparse pools (cache_pages); dense cases are still written as version 1. */
#define ATTEST_CASEFILE_SCHEMA_VERSION 2

/* One named tensor to write beside a case (an expected or a candidate output) or into a tensor
 * file. The data is borrowed, never freed by attest. */
typedef struct attest_casefile_output {
    const char *name;        /* dataset name relative to the case group, e.g. "lse" */
    attest_dtype dtype;
    int32_t rank;            /* 1..ATTEST_TENSOR_MAX_RANK */
    int64_t shape[ATTEST_TENSOR_MAX_RANK];
    const void *data;        /* rank/shape/dtype elements, row-major, native byte order */
} attest_casefile_output;

/* Optional content of a case file beyond the case itself. Zero-initialize, then fill. */
typedef struct attest_casefile_extras {
    const attest_casefile_output *expected; /* written at the group's root under their own names */
    size_t num_expected;
    const attest_casefile_output *candidate; /* written as "candidate/<name>" */
    size_t num_candidate;
    const char *candidate_name; /* attribute "candidate" of the candidate/ group (NULL: none) */
    const char *note;           /* attribute "note": free text (NULL: none) */
    const char *replay;         /* attribute "replay": the command that replays it (NULL: none) */
    int no_compress;            /* 1: store cache bytes uncompressed (default: deflate if usable) */
    /* Optional: marks the candidate/ outputs as *recorded outputs*, a failing run kept so it can
     * be judged again without the candidate (`attest check FILE --recorded`): written as
     * attributes of the candidate/ group. NULL: plain candidate outputs. */
    const struct attest_casefile_recorded *recorded;
} attest_casefile_extras;

/* What a recorded run was judged under (docs/case-format.md, "Recorded outputs"). Strings are
 * borrowed when writing; NULL writes none. */
typedef struct attest_casefile_recorded {
    const char *verdict;      /* "MISMATCH", ... */
    const char *failed_gates; /* attest_gate_mask_string of the record ("" for none) */
    const char *message;      /* the record's one-line detail */
    const char *conventions;  /* attest_conventions_format of the candidate's conventions */
    const char *policy_name, *policy_hash, *policy_text;
} attest_casefile_recorded;

/* The same, read back (attest_casefile_load_recorded). */
typedef struct attest_casefile_recorded_info {
    char candidate[128];
    char verdict[32];
    char failed_gates[96];
    char message[512];
    char conventions[256];
    char policy_name[128];
    char policy_hash[72];
    char *policy_text; /* owned, NULL when the file holds none; attest_casefile_recorded_free */
} attest_casefile_recorded_info;

/* Reads the recorded-run attributes of the case group (NULL, "" or "/": the root). Returns
 * ATTEST_ERR_NOT_FOUND ("no recorded outputs") when the case has no candidate/ group or it is
 * not marked `recorded`, ATTEST_ERR_FORMAT for a malformed attribute. */
attest_status attest_casefile_load_recorded(const char *path, const char *group,
                                            attest_casefile_recorded_info *out) ATTEST_MUST_CHECK;
void attest_casefile_recorded_free(attest_casefile_recorded_info *r);

/* Writes the case at the root of a NEW file `path`, never replacing one: the file is written
 * beside it (path.tmp-PID) by a child process (a write that fails on a full disk can leave HDF5
 * 1.10 crashing in its exit-time clean-up, which must not be the caller's process), then linked
 * into place, which fails when the path exists. *existed = 1 (and ATTEST_OK) when `path` already
 * existed: it is kept as it is. ATTEST_ERR_IO with one line naming the path otherwise. */
attest_status attest_casefile_save_new(const char *path, const attest_case *c,
                                       const attest_casefile_extras *extras, int *existed)
    ATTEST_MUST_CHECK;

/* Returns a borrowed view of a placed case tensor as an output record (name, dtype, shape, data)
 * for attest_casefile_extras. */
attest_casefile_output attest_casefile_output_of(const attest_tensor *t);

/* Writes the case's parameters as attributes and its placed input and truth tensors as datasets
 * (output tensors are not written: store outputs through `extras`). group NULL, "" or "/" writes
 * the case at the root of a new file (an existing file is replaced); a group name ("a" or "a/b")
 * adds the case to the file, creating the file if missing; the group must not exist yet.
 * extras may be NULL. Returns ATTEST_ERR_INVALID_ARGUMENT for an unplaced tensor, a clashing
 * name or an existing group, ATTEST_ERR_IO when HDF5 cannot write. */
attest_status attest_casefile_save(const char *path, const char *group, const attest_case *c,
                                   const attest_casefile_extras *extras) ATTEST_MUST_CHECK;

/* The most memory a loaded case may take, summed over its tensors as the file declares them
 * (a few MB of gzip can declare gigabytes). Default: $ATTEST_MAX_CASE_MB MiB when set, else
 * ATTEST_CASEFILE_DEFAULT_MAX_MB; the CLI's --max-case-mb sets it. A case over it is refused
 * with ATTEST_ERR_FORMAT naming both sizes. 0 restores the default. */
#define ATTEST_CASEFILE_DEFAULT_MAX_MB 4096u
void attest_casefile_set_max_bytes(unsigned long long bytes);
unsigned long long attest_casefile_max_bytes(void);

/* Reads the case at the root (group NULL, "" or "/") or in `group` into *out: validates every
 * attribute and dataset (dtype class and size, rank, shape against the parameters, required vs
 * optional, documented defaults), places the tensors on the heap (truth tensors too when the file
 * holds all of them; output tensors are left zero), and runs attest_case_check_inputs. On error
 * *out holds no memory. The caller frees with attest_case_free. */
attest_status attest_casefile_load(const char *path, const char *group, attest_case *out)
    ATTEST_MUST_CHECK;

/* Loads the case in `group` (NULL: every case the file lists) in a forked child process and
 * returns what that load returned, with its message. A file whose corrupt HDF5 metadata crashes
 * the HDF5 library (1.10 trusts some on-disk structures) gives ATTEST_ERR_FORMAT "reading it
 * crashed the HDF5 library" instead of killing the caller, and one that makes it loop forever
 * gives "reading it did not finish within N s" (N: $ATTEST_PROBE_TIMEOUT, default 60; 0: no
 * limit; attest_casefile_probe_cases too). Loading is deterministic: after
 * ATTEST_OK, attest_casefile_load of the same file cannot crash. Costs one extra load and a fork;
 * for commands that open user-supplied files (the CLI), not for hot loops. */
attest_status attest_casefile_probe(const char *path, const char *group) ATTEST_MUST_CHECK;

/* Called once per case found by attest_casefile_list_groups: `group` is "/" for a case at the
 * root, else its path without a leading slash ("v4_basic", "repro/17"). A non-OK return stops
 * the walk and is returned by attest_casefile_list_groups. */
typedef attest_status (*attest_casefile_group_fn)(const char *group, attest_kernel kernel,
                                                  void *user);

/* Enumerates the cases of a file in name order: the root when it holds a case, else every group
 * (searched up to 4 levels deep, never inside a case) whose "kind" or "kernel" attribute names a
 * kernel family. Reports ATTEST_ERR_FORMAT when the file holds no case. */
attest_status attest_casefile_list_groups(const char *path, attest_casefile_group_fn fn,
                                          void *user) ATTEST_MUST_CHECK;

/* One case as attest_casefile_probe_cases read it in the child process. */
typedef struct attest_casefile_probe_case {
    char name[256];          /* "/" for a root case, else the group path */
    attest_kernel kernel;
    attest_status status;    /* ATTEST_OK: the case, and what the check function read, read cleanly */
    int32_t found;           /* what the check function counted (0 without one) */
    char message[512];       /* the one-line error when status != ATTEST_OK */
} attest_casefile_probe_case;

/* The cases of one file. `file_status` != ATTEST_OK means the file as a whole could not be read
 * (not HDF5, truncated, no case, crashed the HDF5 library); `file_message` says why and `cases`
 * holds whatever was read before that. */
typedef struct attest_casefile_probe_result {
    attest_status file_status;
    char file_message[512];
    attest_casefile_probe_case *cases;
    size_t count;
} attest_casefile_probe_result;

/* Run in the child for each case that loaded, to read more of the file through the HDF5 library
 * (stored outputs, say); may set *found. A non-OK return marks the case unreadable. */
typedef attest_status (*attest_casefile_probe_fn)(const char *path, const char *group,
                                                  const attest_case *c, int32_t *found,
                                                  void *user);

/* attest_casefile_probe per case, for gates that must report every case and go on past a bad
 * one: lists the cases of `path` in a forked child, loads each and runs `check` (may be NULL) on
 * it. A crash of the HDF5 library becomes a file_message naming the file and the case it was
 * reading. Messages have bytes outside printable ASCII replaced by '?' (they quote names from the
 * file). Returns an error only when the probe could not run (pipe, fork, memory); the file's
 * problems land in *out, which the caller frees with attest_casefile_probe_result_free. */
attest_status attest_casefile_probe_cases(const char *path, attest_casefile_probe_fn check,
                                          void *user, attest_casefile_probe_result *out)
    ATTEST_MUST_CHECK;
void attest_casefile_probe_result_free(attest_casefile_probe_result *r);

/* A tensor read from a file (stored output, candidate output, reference output), on the heap. */
typedef struct attest_stored_tensor {
    char name[96];
    attest_dtype dtype;      /* uint8, int32, float32, bf16 (uint16 in the file) or float64 */
    int32_t rank;
    int64_t shape[ATTEST_TENSOR_MAX_RANK];
    size_t nbytes;
    void *data;              /* owned; free with attest_stored_tensor_free */
} attest_stored_tensor;

/* Reads dataset `name` ("lse", "candidate/out_bf16", "true/logits") of the case group (NULL, ""
 * or "/" for the root) of any attest or oracle file. Returns ATTEST_ERR_NOT_FOUND when the
 * dataset is absent (so callers can treat stored outputs as optional), ATTEST_ERR_FORMAT for an
 * unsupported dtype or rank, ATTEST_ERR_IO when it cannot be read. */
attest_status attest_casefile_load_output(const char *path, const char *group, const char *name,
                                          attest_stored_tensor *out) ATTEST_MUST_CHECK;

/* Returns 1 when a stored tensor's shape equals the case tensor's shape (rank and every extent). */
int attest_stored_tensor_matches(const attest_stored_tensor *s, const attest_tensor *t);

/* Converts every element to double into dst (count = product of shape): bf16 and float32 exactly,
 * integers by value. Returns ATTEST_ERR_INVALID_ARGUMENT for an unknown dtype. */
attest_status attest_stored_tensor_to_f64(const attest_stored_tensor *s, double *dst)
    ATTEST_MUST_CHECK;

/* Frees the tensor's data; safe on a zeroed or already freed tensor. */
void attest_stored_tensor_free(attest_stored_tensor *s);

/* A plain file of named tensors and string attributes in groups (what `attest reference`
 * writes). Opaque; not a case file. */
typedef struct attest_tensorfile attest_tensorfile;

/* Creates (replacing) a tensor file. */
attest_status attest_tensorfile_create(const char *path, attest_tensorfile **out)
    ATTEST_MUST_CHECK;

/* Writes one tensor as a dataset `t->name` in `group` (NULL or "/" for the root; created with its
 * parents when missing) with an explicit little-endian file type. */
attest_status attest_tensorfile_write(attest_tensorfile *f, const char *group,
                                      const attest_casefile_output *t) ATTEST_MUST_CHECK;

/* Sets a string attribute on `group` (NULL or "/" for the root; created when missing). */
attest_status attest_tensorfile_set_string(attest_tensorfile *f, const char *group,
                                           const char *key, const char *value) ATTEST_MUST_CHECK;

/* Sets an integer attribute on `group` (created when missing). */
attest_status attest_tensorfile_set_int(attest_tensorfile *f, const char *group, const char *key,
                                        int64_t value) ATTEST_MUST_CHECK;

/* Flushes and closes the file, freeing f (also after an earlier error). Returns ATTEST_ERR_IO
 * when the final flush fails. */
attest_status attest_tensorfile_close(attest_tensorfile *f) ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_CASEFILE_H */
