/* attest: the results store. One HDF5 file per campaign (docs/results-format.md): provenance, a
 * table "cases" with one row per judged case (attest_case_record), and a self-contained repro
 * (a case file, docs/case-format.md) per failing case.
 *
 * Crash safety: rows are buffered in memory and flushed at least every flush_interval_s or every
 * flush_rows rows. A writer killed at any moment (SIGKILL included) leaves a file that plain HDF5
 * (h5py, h5dump) opens and that holds every row up to the last flush; results_write.c explains
 * how. SWMR is not used: a killed SWMR writer leaves a file that h5dump and a plain h5py open
 * refuse until h5clear runs.
 *
 * While the campaign runs, the table's rows live in an external raw file beside it
 * ("RESULTS.h5.rows") and each failing case's repro is its own case file in the sibling directory
 * "RESULTS.h5.repro/case-<id>.h5" (renamed into place when whole). attest_results_close() rebuilds
 * the file with the table chunked and compressed and the repros inside as "repro/<id>", renames it
 * over the live file and removes the raw file and the directory: a finished campaign is one file.
 * After a crash they stay and the reader (and h5py) find them. Either way
 * `attest replay RESULTS.h5 --case ID --candidate NAME` is one command:
 * attest_results_repro_location() says where the case lives.
 *
 * Every failure is one attest_fail() line naming the file and what is wrong; HDF5's own error
 * printing is silenced during each call.
 */
#ifndef ATTEST_RESULTS_H
#define ATTEST_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/record.h"
#include "attest/status.h"
#include "attest/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a field is added, removed or changes meaning. Readers accept files whose
 * version is <= theirs. */
#define ATTEST_RESULTS_SCHEMA_VERSION 4 /* 2: worst_ratio, worst_tol per output; 3: coordinates
                                           as scalar columns, verdict an HDF5 enum; 4: policy_hash
                                           is SHA-256 (was FNV-1a 64) */
#define ATTEST_RESULTS_FORMAT_NAME "attest-results"
/* Suffix of the sibling directory that holds repros while a campaign runs. */
#define ATTEST_RESULTS_REPRO_DIR_SUFFIX ".repro"

/* What made the campaign. The writer copies it into the "provenance" group; the reader fills it.
 * Strings are NUL-terminated; empty means "not applicable" (e.g. no CUDA on a CPU run). */
typedef struct attest_results_provenance {
    char attest_version[32];    /* ATTEST_VERSION */
    char git_commit[64];        /* ATTEST_GIT_COMMIT */
    char c_compiler[128];       /* ATTEST_C_COMPILER */
    char host[256];             /* uname: "Linux node 6.1.0 x86_64" */
    char cuda_version[64];      /* "12.4" (driver/runtime as the caller words it), or "" */
    char device[128];           /* "NVIDIA H200 (sm_90)", or "" */
    char kernel[32];            /* "indexer", "mla-decode" or "" when mixed */
    char candidate[256];        /* candidate name(s), comma separated */
    char policy_name[64];
    char policy_hash[72];         /* schema 4 on: SHA-256, 64 hex digits; before: FNV-1a 64, 16 */
    char policy_origin[256];    /* path or "<embedded>" */
    char command_line[2048];
    char jobs[4096];            /* one line per job: "--kernel K <generator flags> --candidate
                                   SPEC" (all bounds, library paths absolute), so a case
                                   regenerates from its seed alone; "" when not generated */
    char start_time[32];        /* ISO 8601 UTC, "2025-01-31T12:00:00Z" */
    uint64_t seed;              /* campaign seed */
    uint64_t cases_planned;     /* cases the campaign meant to run (0: unknown) */
    const char *policy_text;    /* writer: borrowed, may be NULL; reader: owned by the reader */
    /* Filled by the reader only: */
    char end_time[32];          /* "" when the writer never closed the file */
    char state[16];             /* "running" (writer died or still runs), "complete", "interrupted" */
    double duration_s;          /* create to close, monotonic clock; 0 when never closed */
    int32_t schema_version;
} attest_results_provenance;

/* Zeroes p and fills attest_version, git_commit, c_compiler, host (uname) and start_time (now). */
void attest_results_provenance_init(attest_results_provenance *p);

/* A flush happens at an append when the oldest buffered row is flush_interval_s old, when
 * flush_rows rows are buffered, or when the case before took longer than flush_interval_s (slow
 * campaigns flush every row as it comes, so no row waits for a later case that never ends). */
typedef struct attest_results_options {
    double flush_interval_s;        /* (1.0) */
    uint32_t flush_rows;            /* (256) */
    uint32_t chunk_rows;            /* rows per HDF5 chunk of the table (128) */
    int32_t fsync;                  /* 1: fsync after every flush (power-loss safety; off) */
    uint32_t max_repros;            /* repros kept per campaign; 0: no limit (1000) */
    uint32_t repros_per_signature;  /* per (verdict, failed gates) pair; 0: no limit (32) */
} attest_results_options;

/* Returns the defaults shown above. */
attest_results_options attest_results_defaults(void);

/* Campaign end states, stored as the provenance attribute "state". */
typedef enum attest_results_end {
    ATTEST_RESULTS_COMPLETE = 0,    /* every planned case ran */
    ATTEST_RESULTS_INTERRUPTED = 1  /* stopped early (signal, error, --max-failures) */
} attest_results_end;

/* --- writing ----------------------------------------------------------------------------- */

typedef struct attest_results_writer attest_results_writer; /* opaque */

/* Creates (replacing) a results file with its provenance and an empty table, flushed: the file
 * opens from the moment this returns. Fails loudly (ATTEST_ERR_IO / ATTEST_ERR_UNSUPPORTED)
 * rather than create a file that a crash could leave unreadable. options NULL: defaults. A
 * leftover repro directory of an earlier file of the same name is removed. */
attest_status attest_results_create(const char *path, const attest_results_provenance *prov,
                                    const attest_results_options *options,
                                    attest_results_writer **out) ATTEST_MUST_CHECK;

/* Appends one row. When the record's verdict is a failure and `c` is not NULL (its input tensors
 * placed), also writes the case's repro with the reference and candidate outputs of `outputs`
 * (may be NULL: the repro then holds the case alone), unless a repro limit is reached; the row's
 * "repro" field says which. Flushes when a flush is due (see the options). */
attest_status attest_results_append(attest_results_writer *w, const attest_case_record *rec,
                                    const attest_case *c, const attest_case_outputs *outputs)
    ATTEST_MUST_CHECK;

/* Writes every buffered row to the file and flushes it now. */
attest_status attest_results_flush(attest_results_writer *w) ATTEST_MUST_CHECK;

/* Rows appended so far, and rows known to be in the file (the last flush). */
uint64_t attest_results_rows_appended(const attest_results_writer *w);
uint64_t attest_results_rows_flushed(const attest_results_writer *w);

/* Records the device a device candidate ran on, as its worker describes it ("NVIDIA H200 (sm_90,
 * 139 GiB), CUDA runtime 13.0, driver 13.0", attest_runner_device): provenance "device" gets the
 * part before ", CUDA " and "cuda_version" the rest ("runtime 13.0, driver 13.0"). Written into the file when it is closed. */
void attest_results_set_device(attest_results_writer *w, const char *description);

/* Flushes, copies the repros into the file, records the end time and state, closes and frees w
 * (also after an error; then the file keeps what the last flush held). */
attest_status attest_results_close(attest_results_writer *w, attest_results_end end)
    ATTEST_MUST_CHECK;

/* --- reading ----------------------------------------------------------------------------- */

typedef struct attest_results_reader attest_results_reader; /* opaque */

/* Opens a results file read-only (also one whose campaign still runs, or was killed) and reads
 * its provenance. ATTEST_ERR_IO when the path cannot be read, ATTEST_ERR_FORMAT when it is not
 * HDF5, is truncated or damaged, is not an attest results file, or has a newer schema. */
attest_status attest_results_open_read(const char *path, attest_results_reader **out)
    ATTEST_MUST_CHECK;

/* Opens a results file in a child process with a deadline ($ATTEST_PROBE_TIMEOUT s, default
 * 60) and, when all_rows is set, reads and validates every row, so that a file whose corrupt
 * HDF5 metadata crashes or hangs the HDF5 library gives an error instead of taking the caller
 * down. Reading is deterministic: a file that passes opens and reads the same in the caller.
 * Returns what attest_results_open_read (and the row reads) would, or ATTEST_ERR_FORMAT
 * ("reading it crashed the HDF5 library", "did not finish within N s"). */
attest_status attest_results_probe(const char *path, int all_rows) ATTEST_MUST_CHECK;

/* The file's provenance (owned by the reader). */
const attest_results_provenance *attest_results_provenance_of(const attest_results_reader *r);

/* Rows in the table. */
uint64_t attest_results_num_cases(const attest_results_reader *r);

/* Reads row `index` (0-based, file order). `has_repro` (may be NULL) receives 1 when a repro of
 * the case was stored. ATTEST_ERR_NOT_FOUND past the end. */
attest_status attest_results_read_row(attest_results_reader *r, uint64_t index,
                                      attest_case_record *rec, int *has_repro) ATTEST_MUST_CHECK;

/* Iterates the rows in file order: returns ATTEST_OK and sets *done = 0 with the next row in
 * *rec, or *done = 1 at the end. attest_results_rewind starts over. */
attest_status attest_results_next(attest_results_reader *r, attest_case_record *rec,
                                  int *has_repro, int *done) ATTEST_MUST_CHECK;
void attest_results_rewind(attest_results_reader *r);

/* Finds the row of a case id. ATTEST_ERR_NOT_FOUND naming the id when absent. */
attest_status attest_results_find_case(attest_results_reader *r, uint64_t case_id,
                                       attest_case_record *rec, int *has_repro)
    ATTEST_MUST_CHECK;

/* Counts rows per verdict into counts[ATTEST_VERDICT_COUNT_] (rows with an unknown verdict are
 * not counted; *unknown, when not NULL, receives their number). */
attest_status attest_results_count_verdicts(attest_results_reader *r,
                                            uint64_t counts[ATTEST_VERDICT_COUNT_],
                                            uint64_t *unknown) ATTEST_MUST_CHECK;

/* Where the repro of a case is, for attest_casefile_load(path, group, ...) and
 * attest_casefile_load_output(path, group, "candidate/<output>", ...): inside the results file
 * (path = the results file, group = "repro/<id>") or, after a crash, in the sibling directory
 * (path = ".../case-<id>.h5", group = "/"). ATTEST_ERR_NOT_FOUND when no repro was stored. */
attest_status attest_results_repro_location(attest_results_reader *r, uint64_t case_id,
                                            char *path, size_t path_cap, char *group,
                                            size_t group_cap) ATTEST_MUST_CHECK;

/* Loads the repro of a case (tensors on the heap; free with attest_case_free). */
attest_status attest_results_load_repro(attest_results_reader *r, uint64_t case_id,
                                        attest_case *out) ATTEST_MUST_CHECK;

/* Writes the one command that replays a case of a results file into buf:
 * "attest replay RESULTS.h5 --case 17 --candidate NAME" (arguments shell-quoted when they hold
 * anything but [A-Za-z0-9_./:=+,-]; candidate NULL or "" prints NAME). */
void attest_results_replay_command(const char *results_path, uint64_t case_id,
                                   const char *candidate, char *buf, size_t cap);

/* The path this reader was opened on. */
const char *attest_results_path(const attest_results_reader *r);

/* Closes the file and frees r (NULL is ignored). */
void attest_results_close_read(attest_results_reader *r);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_RESULTS_H */
