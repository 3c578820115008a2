/* attest results store: what results_schema.c, results_write.c and results_read.c share (not a
 * public header). The table schema is one list of fields (results_schema.c); the memory and file
 * compound types are both built from it, so they cannot drift apart.
 */
#ifndef ATTEST_RESULTS_INTERNAL_H
#define ATTEST_RESULTS_INTERNAL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/record.h"
#include "attest/results.h"
#include "attest/status.h"
#include "h5.h"

/* One table row in memory: the record plus the derived columns that make the file readable
 * without attest (names next to numbers) and the repro flag. */
typedef struct attest_results_row {
    attest_case_record rec;
    char verdict_name[24];
    char gates[96];       /* failed gate names joined by '+', "" when none */
    char integrity[96];   /* integrity finding names joined by '+', "" when none */
    int32_t repro;        /* ATTEST_RESULTS_REPRO_* */
} attest_results_row;

enum {
    ATTEST_RESULTS_REPRO_NONE = 0,    /* passing case, or no case given */
    ATTEST_RESULTS_REPRO_STORED = 1,  /* repro written */
    ATTEST_RESULTS_REPRO_SKIPPED = 2  /* failing, but a repro limit was reached */
};

/* Fills the derived columns of a row from its record. */
void attest_results_row_from_record(attest_results_row *row, const attest_case_record *rec);

/* Writes the integrity bit names joined by '+' ("canary+nondeterminism"; "" for 0). */
void attest_results_integrity_string(uint32_t flags, char *buf, size_t cap);

/* Builds the native memory compound type of attest_results_row and the packed little-endian
 * file type. Both are closed with H5Tclose by the caller. */
attest_status attest_results_make_types(hid_t *mem_type, hid_t *file_type) ATTEST_MUST_CHECK;

/* The memory type for reading a table: as above, with the verdict as plain int32 (HDF5 converts
 * the file's enum to it, and the int32 of schema-1 files). */
attest_status attest_results_make_read_type(hid_t *mem_type) ATTEST_MUST_CHECK;

/* Number of fields in the table (for tests and docs). */
size_t attest_results_num_fields(void);

/* Names of the groups and datasets (docs/results-format.md). */
#define ATTEST_RESULTS_CASES "cases"
#define ATTEST_RESULTS_PROVENANCE "provenance"
#define ATTEST_RESULTS_POLICY_TEXT "policy_text"
#define ATTEST_RESULTS_REPRO_GROUP "repro"
/* Suffix of the live table's external raw file (results.h has it too). */
#define ATTEST_RESULTS_ROWS_SUFFIX ".rows"

/* Room for the "path: " prefix of attribute messages (h5.h). */
#define ATTEST_RESULTS_WHERE_MAX 4200

/* The sibling repro directory of a results file, and the repro file of a case in it. */
attest_status attest_results_repro_dir(const char *results_path, char *buf, size_t cap)
    ATTEST_MUST_CHECK;
attest_status attest_results_repro_file(const char *results_path, uint64_t case_id, char *buf,
                                        size_t cap) ATTEST_MUST_CHECK;

/* --- writer helpers shared by results_write.c and results_final.c ------------------------ */

/* The current UTC time as ISO 8601 ("2025-01-31T12:00:00Z"). */
void attest_results_utc_now(char *buf, size_t cap);

/* Writes the root attributes and the "provenance" group (with its policy_text dataset). */
attest_status attest_results_write_provenance(hid_t file, const char *path,
                                              const attest_results_provenance *p,
                                              const char *policy_text, const char *state,
                                              const char *end_time, double duration_s)
    ATTEST_MUST_CHECK;

/* A dataset access list that resolves external raw files against the results file's own
 * directory ("${ORIGIN}"). Closed with H5Pclose by the caller; < 0 on failure. */
hid_t attest_results_external_dapl(void);

/* Creates the empty "cases" table: rows in the external raw file `external` (a name relative to
 * the file's directory: the live table), or
 * chunked with deflate (< 0: none) when external is NULL (the final table). */
attest_status attest_results_create_table(hid_t file, const char *path, hid_t file_type,
                                          const char *external, uint32_t chunk_rows, int deflate,
                                          hid_t *out) ATTEST_MUST_CHECK;

/* Writes the repro of a failing case as RESULTS.h5.repro/case-<id>.h5 (under a temporary name,
 * then renamed), creating the directory when *dir_made is 0. */
attest_status attest_results_write_repro_file(const char *results_path, int *dir_made,
                                              const attest_case_record *rec, const attest_case *c,
                                              const attest_case_outputs *outputs)
    ATTEST_MUST_CHECK;

/* Removes the repro directory of a results file and the repro files in it (nothing else: a
 * foreign file in it is an error). A missing directory is fine. */
attest_status attest_results_remove_repro_dir(const char *results_path) ATTEST_MUST_CHECK;

/* What the final file is built from. */
typedef struct attest_results_final_spec {
    const char *path;                       /* the live file, replaced by the final one */
    const char *rows_path;                  /* the live table's raw file, removed at the end */
    const attest_results_provenance *prov;
    const char *policy_text;
    const char *state, *end_time;
    double duration_s;
    const uint64_t *repro_ids;              /* cases whose repro file exists */
    size_t num_repros;
    uint32_t chunk_rows;
    int fsync;
} attest_results_final_spec;

/* Builds the final file beside the closed live file (provenance with the end state, the table
 * compressed, the repros copied in as repro/<id>), renames it over the live file and removes the
 * repro directory. On failure the live file and the repro directory are left as they were. */
attest_status attest_results_build_final(const attest_results_final_spec *s) ATTEST_MUST_CHECK;

#endif /* ATTEST_RESULTS_INTERNAL_H */
