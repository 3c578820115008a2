/* attest results store: the table schema (one field list for the memory and the file compound
 * types), the derived columns, and the HDF5 attribute helpers the writer and reader share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/compare.h"
#include "attest/shell.h"
#include "results_internal.h"

/* The schema maps the record's fields one by one. When record.h or compare.h gains a field, these
 * sizes change: add the field below, bump ATTEST_RESULTS_SCHEMA_VERSION and document it in
 * docs/results-format.md. */
_Static_assert(sizeof(attest_verdict) == sizeof(int32_t), "verdict is stored as int32");
_Static_assert(sizeof(attest_tensor_metrics) == 320,
               "attest_tensor_metrics changed: update the results schema (results_schema.c)");
_Static_assert(sizeof(attest_case_record) == 1416,
               "attest_case_record changed: update the results schema (results_schema.c)");

typedef enum field_kind { F_U64, F_I64, F_U32, F_I32, F_F64, F_STR, F_VERDICT } field_kind;

typedef struct field_def {
    const char *name;
    field_kind kind;
    size_t offset;  /* in attest_results_row (case fields) or attest_tensor_metrics (outputs) */
    size_t size;    /* strings only: bytes including the terminator */
} field_def;

#define ROW(field) offsetof(attest_results_row, field)
#define REC(field) offsetof(attest_results_row, rec.field)
#define RSTR(field) REC(field), sizeof(((attest_case_record *)0)->field)
#define XSTR(field) ROW(field), sizeof(((attest_results_row *)0)->field)

static const field_def case_fields[] = {
    {"case_id", F_U64, REC(case_id), 0},
    {"seed", F_U64, REC(seed), 0},
    {"params", F_STR, RSTR(params)},
    {"candidate", F_STR, RSTR(candidate)},
    {"verdict", F_VERDICT, REC(verdict), 0},
    {"verdict_name", F_STR, XSTR(verdict_name)},
    {"failed_gates", F_U32, REC(failed_gates), 0},
    {"gates", F_STR, XSTR(gates)},
    {"integrity_flags", F_U32, REC(integrity_flags), 0},
    {"integrity", F_STR, XSTR(integrity)},
    {"vacuous", F_I32, REC(vacuous), 0},
    {"reruns", F_I32, REC(reruns), 0},
    {"num_outputs", F_I32, REC(num_outputs), 0},
    {"repro", F_I32, ROW(repro), 0},
    {"gen_seconds", F_F64, REC(gen_seconds), 0},
    {"ref_seconds", F_F64, REC(ref_seconds), 0},
    {"run_seconds", F_F64, REC(run_seconds), 0},
    {"compare_seconds", F_F64, REC(compare_seconds), 0},
    {"message", F_STR, RSTR(message)},
};

#define MET(field) offsetof(attest_tensor_metrics, field)

/* Per output k, stored as "out<k>_<name>". */
static const field_def output_fields[] = {
    {"output", F_STR, MET(output), sizeof(((attest_tensor_metrics *)0)->output)},
    {"count", F_U64, MET(count), 0},
    {"ref_posinf", F_U64, MET(ref_posinf), 0},
    {"ref_neginf", F_U64, MET(ref_neginf), 0},
    {"ref_nan", F_U64, MET(ref_nan), 0},
    {"cand_posinf", F_U64, MET(cand_posinf), 0},
    {"cand_neginf", F_U64, MET(cand_neginf), 0},
    {"cand_nan", F_U64, MET(cand_nan), 0},
    {"nonfinite_mismatches", F_U64, MET(nonfinite_mismatches), 0},
    {"first_nonfinite_rank", F_I32, MET(first_nonfinite_mismatch.rank), 0},
    /* Coordinates as four scalar columns, not one array field: pandas.DataFrame(table) takes
     * only one-dimensional fields. */
    {"first_nonfinite_index_0", F_I64, MET(first_nonfinite_mismatch.index[0]), 0},
    {"first_nonfinite_index_1", F_I64, MET(first_nonfinite_mismatch.index[1]), 0},
    {"first_nonfinite_index_2", F_I64, MET(first_nonfinite_mismatch.index[2]), 0},
    {"first_nonfinite_index_3", F_I64, MET(first_nonfinite_mismatch.index[3]), 0},
    {"element_failures", F_U64, MET(element_failures), 0},
    {"element_fail_fraction", F_F64, MET(element_fail_fraction), 0},
    {"finite_pairs", F_U64, MET(finite_pairs), 0},
    {"atol_effective", F_F64, MET(atol_effective), 0},
    {"worst_rank", F_I32, MET(worst.rank), 0},
    {"worst_index_0", F_I64, MET(worst.index[0]), 0},
    {"worst_index_1", F_I64, MET(worst.index[1]), 0},
    {"worst_index_2", F_I64, MET(worst.index[2]), 0},
    {"worst_index_3", F_I64, MET(worst.index[3]), 0},
    {"worst_ref", F_F64, MET(worst_ref), 0},
    {"worst_cand", F_F64, MET(worst_cand), 0},
    {"worst_ratio", F_F64, MET(worst_ratio), 0},
    {"worst_tol", F_F64, MET(worst_tol), 0},
    {"max_abs", F_F64, MET(max_abs), 0},
    {"max_rel", F_F64, MET(max_rel), 0},
    {"cos_diff", F_F64, MET(cos_diff), 0},
    {"nmse", F_F64, MET(nmse), 0},
    {"max_code_distance", F_F64, MET(max_code_distance), 0},
    {"unwritten", F_U64, MET(unwritten), 0},
    {"topk_recall", F_F64, MET(topk_recall), 0},
    {"topk_checked", F_I32, MET(topk_checked), 0},
    {"topk_worst_row", F_I32, MET(topk_worst_row), 0},
    {"vacuous", F_I32, MET(vacuous), 0},
    {"failed_gates", F_U32, MET(failed_gates), 0},
};

#define NCASE (sizeof case_fields / sizeof case_fields[0])
#define NOUT (sizeof output_fields / sizeof output_fields[0])

size_t attest_results_num_fields(void) { return NCASE + ATTEST_RECORD_MAX_OUTPUTS * NOUT; }

/* Creates the memory (native) or file (little-endian) type of one field. */
static hid_t field_type(const field_def *f, int file, int reading)
{
    switch (f->kind) {
    case F_U64: return H5Tcopy(file ? H5T_STD_U64LE : H5T_NATIVE_UINT64);
    case F_I64: return H5Tcopy(file ? H5T_STD_I64LE : H5T_NATIVE_INT64);
    case F_U32: return H5Tcopy(file ? H5T_STD_U32LE : H5T_NATIVE_UINT32);
    case F_I32: return H5Tcopy(file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
    case F_F64: return H5Tcopy(file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
    case F_VERDICT: {
        if (reading && !file) return H5Tcopy(H5T_NATIVE_INT32);
        /* An HDF5 enum, so h5dump and h5py show the verdict's name (the values are pinned by
         * verdict.h); files written before the enum (int32) read the same. */
        hid_t t = H5Tenum_create(file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
        /* HDF5 converts enum to integer but not integer to enum: the writer's memory side is
         * an enum too, the reader's (attest_results_make_read_type) plain int32. */
        for (int v = 0; t >= 0 && v < ATTEST_VERDICT_COUNT_; v++) {
            const int32_t value = v;
            if (H5Tenum_insert(t, attest_verdict_name((attest_verdict)v), &value) < 0) {
                H5Tclose(t);
                return H5I_INVALID_HID;
            }
        }
        return t;
    }
    case F_STR: {
        hid_t t = H5Tcopy(H5T_C_S1);
        if (t < 0) return t;
        if (H5Tset_size(t, f->size) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
            H5Tclose(t);
            return H5I_INVALID_HID;
        }
        return t;
    }
    }
    return H5I_INVALID_HID;
}

/* Inserts one field into the compound `t`: memory at `mem_offset`, file packed at *file_offset. */
static int insert_field(hid_t t, const char *name, const field_def *f, int file, int reading,
                        size_t mem_offset, size_t *file_offset)
{
    hid_t ft = field_type(f, file, reading);
    if (ft < 0) return -1;
    size_t size = H5Tget_size(ft);
    size_t at = file ? *file_offset : mem_offset;
    herr_t e = H5Tinsert(t, name, at, ft);
    H5Tclose(ft);
    if (e < 0 || size == 0) return -1;
    *file_offset += size;
    return 0;
}

/* Builds one compound: file = 0 gives the memory layout of attest_results_row, file = 1 the
 * packed little-endian layout (its size is the sum of the field sizes). */
static hid_t build_type(int file, int reading)
{
    size_t packed = 0;
    if (file) {
        /* First pass: the packed size, since a compound's size is fixed at creation. */
        for (size_t i = 0; i < NCASE + ATTEST_RECORD_MAX_OUTPUTS * NOUT; i++) {
            const field_def *f = i < NCASE ? &case_fields[i] : &output_fields[(i - NCASE) % NOUT];
            hid_t ft = field_type(f, 1, 0);
            if (ft < 0) return H5I_INVALID_HID;
            packed += H5Tget_size(ft);
            H5Tclose(ft);
        }
    }
    hid_t t = H5Tcreate(H5T_COMPOUND, file ? packed : sizeof(attest_results_row));
    if (t < 0) return t;
    size_t file_offset = 0;
    for (size_t i = 0; i < NCASE; i++)
        if (insert_field(t, case_fields[i].name, &case_fields[i], file, reading,
                         case_fields[i].offset, &file_offset) < 0)
            goto fail;
    for (int k = 0; k < ATTEST_RECORD_MAX_OUTPUTS; k++) {
        size_t base = offsetof(attest_results_row, rec.outputs) +
                      (size_t)k * sizeof(attest_tensor_metrics);
        for (size_t i = 0; i < NOUT; i++) {
            char name[64];
            snprintf(name, sizeof name, "out%d_%s", k, output_fields[i].name);
            if (insert_field(t, name, &output_fields[i], file, reading,
                             base + output_fields[i].offset, &file_offset) < 0)
                goto fail;
        }
    }
    return t;
fail:
    H5Tclose(t);
    return H5I_INVALID_HID;
}

attest_status attest_results_make_read_type(hid_t *mem_type)
{
    *mem_type = build_type(0, 1);
    if (*mem_type < 0)
        return attest_fail(ATTEST_ERR_INTERNAL, "results: cannot build the table's HDF5 type");
    return ATTEST_OK;
}

attest_status attest_results_make_types(hid_t *mem_type, hid_t *file_type)
{
    *mem_type = build_type(0, 0);
    *file_type = build_type(1, 0);
    if (*mem_type < 0 || *file_type < 0) {
        if (*mem_type >= 0) H5Tclose(*mem_type);
        if (*file_type >= 0) H5Tclose(*file_type);
        *mem_type = *file_type = H5I_INVALID_HID;
        return attest_fail(ATTEST_ERR_INTERNAL, "results: cannot build the table's HDF5 types");
    }
    return ATTEST_OK;
}

void attest_results_integrity_string(uint32_t flags, char *buf, size_t cap)
{
    if (cap == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    for (unsigned bit = 0; bit < 32; bit++) {
        if (!(flags & (1u << bit))) continue;
        char unknown[16];
        const char *name = attest_integrity_name(bit);
        if (name == NULL) {
            snprintf(unknown, sizeof unknown, "bit%u", bit);
            name = unknown;
        }
        int n = snprintf(buf + used, cap - used, "%s%s", used ? "+" : "", name);
        if (n < 0 || (size_t)n >= cap - used) {
            buf[used] = '\0';  /* keep whole names only */
            return;
        }
        used += (size_t)n;
    }
}

void attest_results_row_from_record(attest_results_row *row, const attest_case_record *rec)
{
    memset(row, 0, sizeof *row);
    row->rec = *rec;
    /* Fixed-length strings must end inside their field whatever the producer wrote. */
    row->rec.params[sizeof row->rec.params - 1] = '\0';
    row->rec.candidate[sizeof row->rec.candidate - 1] = '\0';
    row->rec.message[sizeof row->rec.message - 1] = '\0';
    for (int k = 0; k < ATTEST_RECORD_MAX_OUTPUTS; k++)
        row->rec.outputs[k].output[sizeof row->rec.outputs[k].output - 1] = '\0';
    snprintf(row->verdict_name, sizeof row->verdict_name, "%s", attest_verdict_name(rec->verdict));
    attest_gate_mask_string(rec->failed_gates, row->gates, sizeof row->gates);
    attest_results_integrity_string(rec->integrity_flags, row->integrity, sizeof row->integrity);
}

/* --- paths ---------------------------------------------------------------------------------- */

attest_status attest_results_repro_dir(const char *results_path, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s%s", results_path, ATTEST_RESULTS_REPRO_DIR_SUFFIX);
    if (n < 0 || (size_t)n >= cap)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: path too long", results_path);
    return ATTEST_OK;
}

attest_status attest_results_repro_file(const char *results_path, uint64_t case_id, char *buf,
                                        size_t cap)
{
    int n = snprintf(buf, cap, "%s%s/case-%llu.h5", results_path, ATTEST_RESULTS_REPRO_DIR_SUFFIX,
                     (unsigned long long)case_id);
    if (n < 0 || (size_t)n >= cap)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s: path too long", results_path);
    return ATTEST_OK;
}

void attest_results_replay_command(const char *results_path, uint64_t case_id,
                                   const char *candidate, char *buf, size_t cap)
{
    if (cap == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    char id[32];
    snprintf(id, sizeof id, "%llu", (unsigned long long)case_id);
    const char *parts[] = {"attest replay ", NULL, " --case ", id, " --candidate ", NULL};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (i == 1) {
            attest_shell_append_arg(buf, cap, &used, results_path ? results_path : "");
        } else if (i == 5) {
            attest_shell_append_arg(buf, cap, &used, candidate && candidate[0] ? candidate : "NAME");
        } else {
            for (const char *p = parts[i]; *p && used + 1 < cap; p++) buf[used++] = *p;
            buf[used] = '\0';
        }
    }
}
