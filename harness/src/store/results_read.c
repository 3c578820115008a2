/* attest results store: the reader (what `attest show` and `attest replay` use). It reads the
 * final file and a live or crashed one alike; the only difference is where repros live.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attest/casefile.h"
#include "attest/files.h"
#include "results_internal.h"

#define READ_BLOCK_ROWS 256
/* A policy is a few KiB of JSON; a file that declares more is damaged or hostile. */
#define ATTEST_RESULTS_MAX_POLICY_TEXT (16 << 20)

struct attest_results_reader {
    char path[PATH_MAX];
    hid_t file, cases, mem_type;
    attest_results_provenance prov;
    char *policy_text;
    uint64_t num_rows;
    attest_results_row *block;   /* rows [block_start, block_start + block_len) */
    uint64_t block_start;
    size_t block_len;
    uint64_t cursor;             /* next row for attest_results_next */
};

/* Reads an optional string attribute: absent gives "". */
static attest_status opt_str(hid_t loc, const char *path, const char *name, char *buf, size_t cap)
{
    char where[ATTEST_RESULTS_WHERE_MAX];
    snprintf(where, sizeof where, "%s: ", path);
    attest_status st = attest_h5_read_attr_string(loc, where, name, buf, cap, 0);
    if (st == ATTEST_ERR_NOT_FOUND) {
        buf[0] = '\0';
        attest_clear_error();
        return ATTEST_OK;
    }
    return st;
}

static attest_status read_policy_text(attest_results_reader *r, hid_t g)
{
    htri_t ex = H5Lexists(g, ATTEST_RESULTS_POLICY_TEXT, H5P_DEFAULT);
    if (ex <= 0) {
        r->policy_text = strdup("");
        ATTEST_RETURN_IF(!r->policy_text, ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);
        return ATTEST_OK;
    }
    hid_t d = H5Dopen2(g, ATTEST_RESULTS_POLICY_TEXT, H5P_DEFAULT);
    hid_t ft = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    hid_t mt = H5I_INVALID_HID;
    attest_status st = ATTEST_OK;
    if (ft < 0 || H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) != 0) {
        st = attest_fail(ATTEST_ERR_FORMAT, "%s: provenance/policy_text is not a fixed string",
                         r->path);
        goto out;
    }
    size_t n = H5Tget_size(ft);
    if (n > ATTEST_RESULTS_MAX_POLICY_TEXT) {
        st = attest_fail(ATTEST_ERR_FORMAT, "%s: provenance/policy_text declares %zu bytes (at "
                         "most %d)", r->path, n, ATTEST_RESULTS_MAX_POLICY_TEXT);
        goto out;
    }
    r->policy_text = calloc(n + 1, 1);
    mt = H5Tcopy(H5T_C_S1);
    if (!r->policy_text) {
        st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);
        goto out;
    }
    if (mt < 0 || H5Tset_size(mt, n + 1) < 0 || H5Tset_cset(mt, H5Tget_cset(ft)) < 0 ||
        H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->policy_text) < 0)
        st = attest_h5_fail(ATTEST_ERR_IO, r->path, "cannot read provenance/policy_text");
out:
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    if (d >= 0) H5Dclose(d);
    return st;
}

static attest_status read_provenance(attest_results_reader *r)
{
    char format[64], where[ATTEST_RESULTS_WHERE_MAX];
    snprintf(where, sizeof where, "%s: ", r->path);
    attest_status st =
        attest_h5_read_attr_string(r->file, where, "format", format, sizeof format, 0);
    if (st == ATTEST_ERR_NOT_FOUND || (st == ATTEST_OK && strcmp(format, ATTEST_RESULTS_FORMAT_NAME)))
        return attest_fail(ATTEST_ERR_FORMAT, "%s: not an attest results file (no format=\"%s\")",
                           r->path, ATTEST_RESULTS_FORMAT_NAME);
    ATTEST_FORWARD(st);
    int64_t version = 0;
    ATTEST_FORWARD(attest_h5_read_attr_int(r->file, where, "schema_version", &version));
    ATTEST_RETURN_IF(version < 1 || version > ATTEST_RESULTS_SCHEMA_VERSION, ATTEST_ERR_FORMAT,
                     "%s: results schema version %lld, this attest reads up to %d", r->path,
                     (long long)version, ATTEST_RESULTS_SCHEMA_VERSION);
    attest_results_provenance *p = &r->prov;
    p->schema_version = (int32_t)version;
    hid_t g = H5Gopen2(r->file, ATTEST_RESULTS_PROVENANCE, H5P_DEFAULT);
    if (g < 0) return attest_h5_fail(ATTEST_ERR_FORMAT, r->path, "no provenance group");
    const struct {
        const char *name;
        char *buf;
        size_t cap;
    } strs[] = {
        {"attest_version", p->attest_version, sizeof p->attest_version},
        {"git_commit", p->git_commit, sizeof p->git_commit},
        {"c_compiler", p->c_compiler, sizeof p->c_compiler},
        {"host", p->host, sizeof p->host},
        {"cuda_version", p->cuda_version, sizeof p->cuda_version},
        {"device", p->device, sizeof p->device},
        {"kernel", p->kernel, sizeof p->kernel},
        {"candidate", p->candidate, sizeof p->candidate},
        {"policy_name", p->policy_name, sizeof p->policy_name},
        {"policy_hash", p->policy_hash, sizeof p->policy_hash},
        {"policy_origin", p->policy_origin, sizeof p->policy_origin},
        {"command_line", p->command_line, sizeof p->command_line},
        {"jobs", p->jobs, sizeof p->jobs},
        {"start_time", p->start_time, sizeof p->start_time},
        {"end_time", p->end_time, sizeof p->end_time},
        {"state", p->state, sizeof p->state},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0] && st == ATTEST_OK; i++)
        st = opt_str(g, r->path, strs[i].name, strs[i].buf, strs[i].cap);
    if (st == ATTEST_OK) st = attest_h5_read_attr_u64(g, where, "seed", &p->seed);
    if (st == ATTEST_OK)
        st = attest_h5_read_attr_u64(g, where, "cases_planned", &p->cases_planned);
    if (st == ATTEST_OK) {
        st = attest_h5_read_attr_double(g, where, "duration_seconds", &p->duration_s);
        if (st == ATTEST_ERR_NOT_FOUND) {
            p->duration_s = 0.0;
            attest_clear_error();
            st = ATTEST_OK;
        }
    }
    if (st == ATTEST_OK) st = read_policy_text(r, g);
    H5Gclose(g);
    p->policy_text = r->policy_text;
    return st;
}

/* The fields a row cannot do without: a missing one would read back as zeros (a missing
 * "verdict" as OK). Files of the current schema must have every field; older ones (whose
 * metrics columns were laid out differently) these. */
static const char *const required_fields[] = {"case_id", "seed",         "params",
                                              "candidate", "verdict",    "verdict_name",
                                              "failed_gates", "num_outputs", "repro",
                                              "message"};

/* Whether a file field of class `have` reads into a memory field of class `want`. */
static int class_fits(H5T_class_t want, H5T_class_t have)
{
    if (want == H5T_INTEGER) return have == H5T_INTEGER || have == H5T_ENUM;
    return want == have;
}

static attest_status check_fields(attest_results_reader *r)
{
    hid_t ft = H5Dget_type(r->cases);
    if (ft < 0 || H5Tget_class(ft) != H5T_COMPOUND) {
        if (ft >= 0) H5Tclose(ft);
        return attest_fail(ATTEST_ERR_FORMAT, "%s: the cases table is not a compound table",
                           r->path);
    }
    attest_status st = ATTEST_OK;
    /* Since schema 3 the cases table has every field it has today (4 changed provenance only). */
    const int all = r->prov.schema_version >= 3;
    int n = H5Tget_nmembers(r->mem_type);
    for (int i = 0; i < n && st == ATTEST_OK; i++) {
        char *name = H5Tget_member_name(r->mem_type, (unsigned)i);
        if (!name) {
            st = attest_fail(ATTEST_ERR_INTERNAL, "%s: cannot name a field", r->path);
            break;
        }
        int required = all;
        for (size_t k = 0; !required && k < sizeof required_fields / sizeof *required_fields; k++)
            required = !strcmp(name, required_fields[k]);
        int at = H5Tget_member_index(ft, name);
        if (at < 0 && required)
            st = attest_fail(ATTEST_ERR_FORMAT, "%s: the cases table has no field '%s'", r->path,
                             name);
        else if (at >= 0 && !class_fits(H5Tget_member_class(r->mem_type, (unsigned)i),
                                        H5Tget_member_class(ft, (unsigned)at)))
            st = attest_fail(ATTEST_ERR_FORMAT, "%s: field '%s' of the cases table has the wrong "
                             "type", r->path, name);
        H5free_memory(name);
    }
    H5Tclose(ft);
    H5Eclear2(H5E_DEFAULT);
    return st;
}

/* The table's rows must be in the file: in chunks (the final file) or in the one external raw
 * file a live or killed campaign keeps beside it, "<file name>.rows", which must be a regular
 * file that holds every row the table declares. Storage anywhere else is refused: reading it
 * would show whatever that file holds as rows. */
static attest_status check_storage(attest_results_reader *r, hid_t dcpl, size_t row_bytes)
{
    int count = H5Pget_external_count(dcpl);
    ATTEST_RETURN_IF(count < 0, ATTEST_ERR_FORMAT, "%s: cannot read the table's storage", r->path);
    if (count == 0) {
        if (H5Pget_layout(dcpl) != H5D_CHUNKED) {
            ATTEST_RETURN_IF(r->num_rows > 0 && H5Dget_storage_size(r->cases) <
                                                    (hsize_t)r->num_rows * row_bytes,
                             ATTEST_ERR_FORMAT,
                             "%s: the cases table declares %llu rows but stores fewer", r->path,
                             (unsigned long long)r->num_rows);
            return ATTEST_OK;
        }
        hsize_t chunk = 0, nchunks = 0;
        hid_t space = H5Dget_space(r->cases);
        int ok = space >= 0 && H5Pget_chunk(dcpl, 1, &chunk) == 1 && chunk > 0 &&
                 H5Dget_num_chunks(r->cases, space, &nchunks) >= 0;
        if (space >= 0) H5Sclose(space);
        ATTEST_RETURN_IF(!ok, ATTEST_ERR_FORMAT, "%s: cannot read the table's chunks", r->path);
        const uint64_t want = (r->num_rows + chunk - 1) / chunk;
        ATTEST_RETURN_IF(nchunks < want, ATTEST_ERR_FORMAT,
                         "%s: the cases table declares %llu rows in %llu chunks but only %llu "
                         "are stored (truncated?)",
                         r->path, (unsigned long long)r->num_rows, (unsigned long long)want,
                         (unsigned long long)nchunks);
        return ATTEST_OK;
    }
    char name[PATH_MAX];
    off_t offset = 0;
    hsize_t size = 0;
    ATTEST_RETURN_IF(count != 1 || H5Pget_external(dcpl, 0, sizeof name, name, &offset, &size) < 0,
                     ATTEST_ERR_FORMAT, "%s: the cases table names %d external files (attest "
                     "writes one)", r->path, count);
    name[sizeof name - 1] = '\0';
    const char *slash = strrchr(r->path, '/');
    const char *base = slash ? slash + 1 : r->path;
    char sibling[PATH_MAX + 16], expect[PATH_MAX + 16];
    snprintf(expect, sizeof expect, "%s%s", base, ATTEST_RESULTS_ROWS_SUFFIX);
    snprintf(sibling, sizeof sibling, "%s%s", r->path, ATTEST_RESULTS_ROWS_SUFFIX);
    /* Files of earlier attest versions name the sibling by its absolute path. */
    int is_sibling = strcmp(name, expect) == 0;
    if (!is_sibling && name[0] == '/') {
        char a[PATH_MAX], b[PATH_MAX];
        is_sibling = realpath(name, a) && realpath(sibling, b) && !strcmp(a, b);
    }
    for (char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) *p = '?';
    ATTEST_RETURN_IF(!is_sibling || offset != 0, ATTEST_ERR_FORMAT,
                     "%s: its rows are declared in '%.200s'; attest reads rows only from the "
                     "file's own sibling %s",
                     r->path, name, expect);
    struct stat sb;
    if (lstat(sibling, &sb) != 0)
        return attest_fail(ATTEST_ERR_FORMAT,
                           "%s: its rows are in %s, which is missing (move the two together)",
                           r->path, sibling);
    ATTEST_RETURN_IF(!S_ISREG(sb.st_mode), ATTEST_ERR_FORMAT,
                     "%s: %s is not a regular file", r->path, sibling);
    const uint64_t have = (uint64_t)sb.st_size / row_bytes;
    ATTEST_RETURN_IF(have < r->num_rows, ATTEST_ERR_FORMAT,
                     "%s: the cases table declares %llu rows but %s holds %llu (truncated?)",
                     r->path, (unsigned long long)r->num_rows, sibling, (unsigned long long)have);
    return ATTEST_OK;
}

static attest_status open_table(attest_results_reader *r)
{
    hid_t dapl = attest_results_external_dapl();
    ATTEST_RETURN_IF(dapl < 0, ATTEST_ERR_IO, "%s: cannot set up dataset access", r->path);
    r->cases = H5Dopen2(r->file, ATTEST_RESULTS_CASES, dapl);
    H5Pclose(dapl);
    if (r->cases < 0) return attest_h5_fail(ATTEST_ERR_FORMAT, r->path, "no cases table");
    hid_t space = H5Dget_space(r->cases);
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    hssize_t n = rank == 1 ? H5Sget_simple_extent_npoints(space) : -1;
    if (space >= 0) H5Sclose(space);
    ATTEST_RETURN_IF(n < 0, ATTEST_ERR_FORMAT, "%s: the cases table is not one-dimensional",
                     r->path);
    r->num_rows = (uint64_t)n;
    ATTEST_FORWARD(attest_results_make_read_type(&r->mem_type));
    hid_t file_type = H5Dget_type(r->cases);
    const size_t row_bytes = file_type >= 0 ? H5Tget_size(file_type) : 0;
    if (file_type >= 0) H5Tclose(file_type);
    ATTEST_RETURN_IF(row_bytes == 0, ATTEST_ERR_FORMAT, "%s: the cases table has no row type",
                     r->path);
    ATTEST_FORWARD(check_fields(r));
    hid_t dcpl = H5Dget_create_plist(r->cases);
    if (dcpl < 0) return attest_h5_fail(ATTEST_ERR_FORMAT, r->path, "no table properties");
    attest_status st = check_storage(r, dcpl, row_bytes);
    H5Pclose(dcpl);
    ATTEST_FORWARD(st);
    r->block = malloc(READ_BLOCK_ROWS * sizeof *r->block);
    ATTEST_RETURN_IF(!r->block, ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);
    return ATTEST_OK;
}

void attest_results_close_read(attest_results_reader *r)
{
    if (!r) return;
    if (r->cases >= 0) H5Dclose(r->cases);
    if (r->mem_type >= 0) H5Tclose(r->mem_type);
    if (r->file >= 0) H5Fclose(r->file);
    free(r->block);
    free(r->policy_text);
    free(r);
}

/* Opens the file read-only. A campaign that still runs holds HDF5's file lock; the writer only
 * ever appends and keeps every state on disk consistent, so the reader then opens without the
 * lock (`attest show` on a running campaign). */
static attest_status open_file(attest_results_reader *r)
{
    char detail[200];
    for (int unlocked = 0; unlocked < 2; unlocked++) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        if (fapl < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 ||
            (unlocked && H5Pset_file_locking(fapl, 0, 1) < 0)) {
            if (fapl >= 0) H5Pclose(fapl);
            return attest_h5_fail(ATTEST_ERR_IO, r->path, "cannot set up file access");
        }
        r->file = H5Fopen(r->path, H5F_ACC_RDONLY, fapl);
        if (r->file < 0) attest_h5_detail(detail, sizeof detail);
        H5Pclose(fapl);
        if (r->file >= 0) return ATTEST_OK;
        if (!strstr(detail, "lock")) break;
    }
    return attest_fail(ATTEST_ERR_FORMAT, "%s: cannot open as HDF5 (truncated or damaged?): %s",
                       r->path, detail);
}

attest_status attest_results_open_read(const char *path, attest_results_reader **out)
{
    ATTEST_RETURN_IF(!path || !out, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_results_open_read: NULL argument");
    *out = NULL;
    ATTEST_FORWARD(attest_file_check_regular(path, "results"));
    attest_results_reader *r = calloc(1, sizeof *r);
    ATTEST_RETURN_IF(!r, ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    r->file = r->cases = r->mem_type = H5I_INVALID_HID;
    snprintf(r->path, sizeof r->path, "%s", path);
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    attest_status st = ATTEST_OK;
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        st = attest_fail(ATTEST_ERR_FORMAT, "%s: not an HDF5 file", path);
    } else {
        st = open_file(r);
    }
    if (st == ATTEST_OK) st = read_provenance(r);
    if (st == ATTEST_OK) st = open_table(r);
    attest_h5_quiet_end(&q);
    if (st != ATTEST_OK) {
        attest_results_close_read(r);
        return st;
    }
    *out = r;
    return ATTEST_OK;
}

const attest_results_provenance *attest_results_provenance_of(const attest_results_reader *r)
{
    return &r->prov;
}

uint64_t attest_results_num_cases(const attest_results_reader *r) { return r ? r->num_rows : 0; }

const char *attest_results_path(const attest_results_reader *r) { return r->path; }

/* A row is what the writer wrote or the table is damaged: its verdict is known and carries its
 * own name (a zeroed row, which a truncated table reads back, has verdict 0 = OK but no name),
 * and its counts are in range. */
static attest_status check_rows(attest_results_reader *r)
{
    for (size_t i = 0; i < r->block_len; i++) {
        const attest_results_row *row = &r->block[i];
        const int32_t v = (int32_t)row->rec.verdict;
        const char *want = v >= 0 && v < ATTEST_VERDICT_COUNT_ ? attest_verdict_name(row->rec.verdict)
                                                               : NULL;
        char got[sizeof row->verdict_name + 1];
        memcpy(got, row->verdict_name, sizeof row->verdict_name);
        got[sizeof row->verdict_name] = '\0';
        if (!want || strcmp(got, want) != 0 || row->rec.num_outputs < 0 ||
            row->rec.num_outputs > ATTEST_RECORD_MAX_OUTPUTS || row->repro < 0 ||
            row->repro > ATTEST_RESULTS_REPRO_SKIPPED) {
            r->block_len = 0;
            return attest_fail(ATTEST_ERR_FORMAT,
                               "%s: row %llu is not a row attest wrote (verdict %d): the table "
                               "is damaged or truncated",
                               r->path, (unsigned long long)(r->block_start + i), (int)v);
        }
    }
    return ATTEST_OK;
}

/* Makes row `index` available in the block cache. */
static attest_status load_block(attest_results_reader *r, uint64_t index)
{
    if (index >= r->block_start && index < r->block_start + r->block_len) return ATTEST_OK;
    hsize_t start = index - index % READ_BLOCK_ROWS;
    hsize_t count = r->num_rows - start < READ_BLOCK_ROWS ? r->num_rows - start : READ_BLOCK_ROWS;
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    hid_t fs = H5Dget_space(r->cases);
    hid_t ms = H5Screate_simple(1, &count, NULL);
    attest_status st = ATTEST_OK;
    memset(r->block, 0, (size_t)count * sizeof *r->block);
    if (fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
        H5Dread(r->cases, r->mem_type, ms, fs, H5P_DEFAULT, r->block) < 0) {
        char what[96];
        snprintf(what, sizeof what, "cannot read rows %llu..%llu", (unsigned long long)start,
                 (unsigned long long)(start + count - 1));
        st = attest_h5_fail(ATTEST_ERR_IO, r->path, what);
        r->block_len = 0;
    } else {
        r->block_start = start;
        r->block_len = (size_t)count;
        st = check_rows(r);
    }
    if (fs >= 0) H5Sclose(fs);
    if (ms >= 0) H5Sclose(ms);
    attest_h5_quiet_end(&q);
    return st;
}

static void row_to_record(const attest_results_row *row, attest_case_record *rec, int *has_repro)
{
    *rec = row->rec;
    rec->params[sizeof rec->params - 1] = '\0';
    rec->candidate[sizeof rec->candidate - 1] = '\0';
    rec->message[sizeof rec->message - 1] = '\0';
    for (int k = 0; k < ATTEST_RECORD_MAX_OUTPUTS; k++)
        rec->outputs[k].output[sizeof rec->outputs[k].output - 1] = '\0';
    if (has_repro) *has_repro = row->repro == ATTEST_RESULTS_REPRO_STORED;
}

attest_status attest_results_read_row(attest_results_reader *r, uint64_t index,
                                      attest_case_record *rec, int *has_repro)
{
    ATTEST_RETURN_IF(!r || !rec, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_results_read_row: NULL argument");
    ATTEST_RETURN_IF(index >= r->num_rows, ATTEST_ERR_NOT_FOUND,
                     "%s: row %llu is past the end (%llu rows)", r->path,
                     (unsigned long long)index, (unsigned long long)r->num_rows);
    ATTEST_FORWARD(load_block(r, index));
    row_to_record(&r->block[index - r->block_start], rec, has_repro);
    return ATTEST_OK;
}

attest_status attest_results_next(attest_results_reader *r, attest_case_record *rec,
                                  int *has_repro, int *done)
{
    ATTEST_RETURN_IF(!r || !rec || !done, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_results_next: NULL argument");
    if (r->cursor >= r->num_rows) {
        *done = 1;
        return ATTEST_OK;
    }
    ATTEST_FORWARD(attest_results_read_row(r, r->cursor, rec, has_repro));
    r->cursor++;
    *done = 0;
    return ATTEST_OK;
}

void attest_results_rewind(attest_results_reader *r)
{
    if (r) r->cursor = 0;
}

attest_status attest_results_find_case(attest_results_reader *r, uint64_t case_id,
                                       attest_case_record *rec, int *has_repro)
{
    ATTEST_RETURN_IF(!r || !rec, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_results_find_case: NULL argument");
    /* Campaigns number cases in order, so row i usually holds case i. */
    if (case_id < r->num_rows) {
        ATTEST_FORWARD(attest_results_read_row(r, case_id, rec, has_repro));
        if (rec->case_id == case_id) return ATTEST_OK;
    }
    for (uint64_t i = 0; i < r->num_rows; i++) {
        ATTEST_FORWARD(load_block(r, i));
        const attest_results_row *row = &r->block[i - r->block_start];
        if (row->rec.case_id == case_id) {
            row_to_record(row, rec, has_repro);
            return ATTEST_OK;
        }
    }
    return attest_fail(ATTEST_ERR_NOT_FOUND, "%s: no case %llu (%llu rows)", r->path,
                       (unsigned long long)case_id, (unsigned long long)r->num_rows);
}

attest_status attest_results_count_verdicts(attest_results_reader *r,
                                            uint64_t counts[ATTEST_VERDICT_COUNT_],
                                            uint64_t *unknown)
{
    ATTEST_RETURN_IF(!r || !counts, ATTEST_ERR_INVALID_ARGUMENT,
                     "attest_results_count_verdicts: NULL argument");
    memset(counts, 0, ATTEST_VERDICT_COUNT_ * sizeof counts[0]);
    uint64_t other = 0;
    for (uint64_t i = 0; i < r->num_rows; i++) {
        ATTEST_FORWARD(load_block(r, i));
        unsigned v = (unsigned)r->block[i - r->block_start].rec.verdict;
        if (v < ATTEST_VERDICT_COUNT_)
            counts[v]++;
        else
            other++;
    }
    if (unknown) *unknown = other;
    return ATTEST_OK;
}

attest_status attest_results_repro_location(attest_results_reader *r, uint64_t case_id,
                                            char *path, size_t path_cap, char *group,
                                            size_t group_cap)
{
    ATTEST_RETURN_IF(!r || !path || !group || path_cap == 0 || group_cap == 0,
                     ATTEST_ERR_INVALID_ARGUMENT, "attest_results_repro_location: bad argument");
    attest_case_record rec;
    int has_repro = 0;
    ATTEST_FORWARD(attest_results_find_case(r, case_id, &rec, &has_repro));
    ATTEST_RETURN_IF(!has_repro, ATTEST_ERR_NOT_FOUND,
                     "%s: case %llu has no stored repro (%s); replay it from its seed %llu",
                     r->path, (unsigned long long)case_id,
                     attest_verdict_is_failure(rec.verdict) ? "repro limit reached" : "it passed",
                     (unsigned long long)rec.seed);
    char name[64];
    snprintf(name, sizeof name, ATTEST_RESULTS_REPRO_GROUP "/%llu", (unsigned long long)case_id);
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    htri_t in_file = H5Lexists(r->file, ATTEST_RESULTS_REPRO_GROUP, H5P_DEFAULT) > 0 &&
                     H5Lexists(r->file, name, H5P_DEFAULT) > 0;
    H5Eclear2(H5E_DEFAULT);
    attest_h5_quiet_end(&q);
    if (in_file) {
        ATTEST_RETURN_IF((size_t)snprintf(path, path_cap, "%s", r->path) >= path_cap ||
                             (size_t)snprintf(group, group_cap, "%s", name) >= group_cap,
                         ATTEST_ERR_INVALID_ARGUMENT, "%s: buffer too small", r->path);
        return ATTEST_OK;
    }
    char file[PATH_MAX];
    ATTEST_FORWARD(attest_results_repro_file(r->path, case_id, file, sizeof file));
    struct stat sb;
    ATTEST_RETURN_IF(stat(file, &sb) != 0, ATTEST_ERR_NOT_FOUND,
                     "%s: the repro of case %llu is missing (neither %s nor %s exists)", r->path,
                     (unsigned long long)case_id, name, file);
    ATTEST_RETURN_IF((size_t)snprintf(path, path_cap, "%s", file) >= path_cap ||
                         (size_t)snprintf(group, group_cap, "/") >= group_cap,
                     ATTEST_ERR_INVALID_ARGUMENT, "%s: buffer too small", r->path);
    return ATTEST_OK;
}

attest_status attest_results_load_repro(attest_results_reader *r, uint64_t case_id,
                                        attest_case *out)
{
    char path[PATH_MAX], group[64];
    ATTEST_FORWARD(attest_results_repro_location(r, case_id, path, sizeof path, group,
                                                 sizeof group));
    return attest_casefile_load(path, group, out);
}
