/* Top-k case files (topk_casefile.h): written through the tensor-file layer, read through the
 * store's checked attribute and dataset readers, probed in a child as case files are. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "attest/casefile.h"
#include "attest/topk_casefile.h"
#include "child_probe.h"
#include "h5.h"

#define TOPK_MARK "attest_topk"
#define TOPK_MARK_TEXT "one top-k case (docs/case-format.md, top-k case files)"

static attest_casefile_output i32_2d(const char *name, const int32_t *data, int64_t rows,
                                     int64_t cols)
{
    attest_casefile_output o;
    memset(&o, 0, sizeof o);
    o.name = name;
    o.dtype = ATTEST_DTYPE_I32;
    o.rank = 2;
    o.shape[0] = rows;
    o.shape[1] = cols;
    o.data = data;
    return o;
}

attest_status attest_topk_casefile_save(const char *path, const attest_topk_case *c,
                                        const attest_topk_casefile_extras *extras)
{
    ATTEST_RETURN_IF(path == NULL || c == NULL || c->logits == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk case file: NULL path or case");
    attest_topk_casefile_extras none;
    memset(&none, 0, sizeof none);
    const attest_topk_casefile_extras *x = extras ? extras : &none;
    const attest_topk_params *p = &c->p;
    const int64_t rows = attest_topk_rows(p);
    attest_tensorfile *f = NULL;
    ATTEST_FORWARD(attest_tensorfile_create(path, &f));
    char seed[24];
    snprintf(seed, sizeof seed, "0x%016" PRIx64, c->seed);
    attest_status st = attest_tensorfile_set_string(f, NULL, TOPK_MARK, TOPK_MARK_TEXT);
    if (st == ATTEST_OK)
        st = attest_tensorfile_set_int(f, NULL, "schema_version", ATTEST_TOPK_CASEFILE_SCHEMA_VERSION);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "seed", seed);
    const struct { const char *name; int32_t v; } ints[] = {
        {"b", p->b}, {"next_n", p->next_n}, {"width", p->width}, {"k", p->k},
        {"blocks_per_req", p->blocks_per_req}, {"num_blocks", p->num_blocks}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0] && st == ATTEST_OK; i++)
        st = attest_tensorfile_set_int(f, NULL, ints[i].name, ints[i].v);
    attest_casefile_output o;
    memset(&o, 0, sizeof o);
    o.name = "logits";
    o.dtype = ATTEST_DTYPE_F32;
    o.rank = 2;
    o.shape[0] = rows;
    o.shape[1] = p->width;
    o.data = c->logits;
    if (st == ATTEST_OK) st = attest_tensorfile_write(f, NULL, &o);
    o.name = "context_lens";
    o.dtype = ATTEST_DTYPE_I32;
    o.rank = 1;
    o.shape[0] = p->b;
    o.data = c->context_lens;
    if (st == ATTEST_OK) st = attest_tensorfile_write(f, NULL, &o);
    o = i32_2d("block_table", c->block_table, p->b, p->blocks_per_req);
    if (st == ATTEST_OK) st = attest_tensorfile_write(f, NULL, &o);
    if (st == ATTEST_OK && x->ref_indices) {
        o = i32_2d("topk_indices", x->ref_indices, rows, p->k);
        st = attest_tensorfile_write(f, NULL, &o);
    }
    if (st == ATTEST_OK && x->cand_indices) {
        o = i32_2d("topk_indices", x->cand_indices, rows, p->k);
        st = attest_tensorfile_write(f, "candidate", &o);
    }
    if (st == ATTEST_OK && x->cand_physical) {
        o = i32_2d("topk_physical", x->cand_physical, rows, p->k);
        st = attest_tensorfile_write(f, "candidate", &o);
    }
    if (st == ATTEST_OK && x->candidate_name)
        st = attest_tensorfile_set_string(f, NULL, "candidate", x->candidate_name);
    if (st == ATTEST_OK && x->note) st = attest_tensorfile_set_string(f, NULL, "note", x->note);
    if (st == ATTEST_OK && x->replay)
        st = attest_tensorfile_set_string(f, NULL, "replay", x->replay);
    const attest_status cst = attest_tensorfile_close(f);
    return st != ATTEST_OK ? st : cst;
}

/* Reads dataset `name` of dtype `dtype` and shape [d0] or [d0, d1] (d1 < 0: rank 1) into dst. */
static attest_status read_dataset(const char *path, const char *name, attest_dtype dtype,
                                  int64_t d0, int64_t d1, void *dst, size_t elem)
{
    attest_stored_tensor s;
    memset(&s, 0, sizeof s);
    attest_status st = attest_casefile_load_output(path, NULL, name, &s);
    if (st == ATTEST_ERR_NOT_FOUND)
        return attest_fail(ATTEST_ERR_FORMAT, "%s: %s: missing", path, name);
    ATTEST_FORWARD(st);
    const int rank = d1 < 0 ? 1 : 2;
    if (s.dtype != dtype)
        st = attest_fail(ATTEST_ERR_FORMAT, "%s: %s: dtype %s, expected %s", path, name,
                         attest_dtype_name(s.dtype), attest_dtype_name(dtype));
    else if (s.rank != rank || s.shape[0] != d0 || (rank == 2 && s.shape[1] != d1))
        st = attest_fail(ATTEST_ERR_FORMAT, "%s: %s: shape does not match the parameters "
                         "(expected [%" PRId64 "%s%" PRId64 "])", path, name, d0,
                         rank == 2 ? ", " : "", rank == 2 ? d1 : (int64_t)0);
    else
        memcpy(dst, s.data, (size_t)d0 * (size_t)(rank == 2 ? d1 : 1) * elem);
    attest_stored_tensor_free(&s);
    return st;
}

static attest_status read_params(const char *path, attest_topk_case *out)
{
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    attest_status st = ATTEST_OK;
    const hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        st = attest_h5_fail(ATTEST_ERR_IO, path, "cannot open as HDF5");
        attest_h5_quiet_end(&q);
        return st;
    }
    char where[4200];
    snprintf(where, sizeof where, "%s: ", path);
    const int mark = attest_h5_attr_exists(file, TOPK_MARK);
    if (mark <= 0)
        st = attest_fail(ATTEST_ERR_FORMAT, "%s: not a top-k case file (no '%s' attribute)", path,
                         TOPK_MARK);
    int64_t version = 0;
    if (st == ATTEST_OK) st = attest_h5_read_attr_int(file, where, "schema_version", &version);
    if (st == ATTEST_OK && (version < 1 || version > ATTEST_TOPK_CASEFILE_SCHEMA_VERSION))
        st = attest_fail(ATTEST_ERR_FORMAT, "%s: schema_version %" PRId64 ", this attest reads 1..%d",
                         path, version, ATTEST_TOPK_CASEFILE_SCHEMA_VERSION);
    struct { const char *name; int32_t *v; } ints[] = {
        {"b", &out->p.b}, {"next_n", &out->p.next_n}, {"width", &out->p.width}, {"k", &out->p.k},
        {"blocks_per_req", &out->p.blocks_per_req}, {"num_blocks", &out->p.num_blocks}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0] && st == ATTEST_OK; i++) {
        int64_t v = 0;
        st = attest_h5_read_attr_int(file, where, ints[i].name, &v);
        if (st == ATTEST_ERR_NOT_FOUND)
            st = attest_fail(ATTEST_ERR_FORMAT, "%s: attribute %s: missing", path, ints[i].name);
        else if (st == ATTEST_OK && (v < INT32_MIN || v > INT32_MAX))
            st = attest_fail(ATTEST_ERR_FORMAT, "%s: attribute %s = %" PRId64 " out of range",
                             path, ints[i].name, v);
        if (st == ATTEST_OK) *ints[i].v = (int32_t)v;
    }
    char seed[64];
    if (st == ATTEST_OK) {
        const attest_status sst =
            attest_h5_read_attr_string(file, where, "seed", seed, sizeof seed, ATTEST_H5_ONE_LINE);
        char *end = NULL;
        if (sst == ATTEST_OK) out->seed = strtoull(seed, &end, 0);
        if (sst == ATTEST_OK && (end == seed || *end != '\0'))
            st = attest_fail(ATTEST_ERR_FORMAT, "%s: attribute seed '%s' is not a number", path,
                             seed);
        else if (sst != ATTEST_ERR_NOT_FOUND)
            st = sst;
    }
    H5Fclose(file);
    attest_h5_quiet_end(&q);
    return st;
}

attest_status attest_topk_casefile_load(const char *path, attest_topk_case *out)
{
    ATTEST_RETURN_IF(path == NULL || out == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "topk case file: NULL argument");
    memset(out, 0, sizeof *out);
    ATTEST_FORWARD(read_params(path, out));
    attest_status st = attest_topk_case_alloc(out);
    if (st != ATTEST_OK) /* the parameters are the file's: say so */
        return attest_fail(ATTEST_ERR_FORMAT, "%s: %s", path, attest_last_error());
    const attest_topk_params *p = &out->p;
    st = read_dataset(path, "logits", ATTEST_DTYPE_F32, attest_topk_rows(p), p->width,
                      out->logits, sizeof(float));
    if (st == ATTEST_OK)
        st = read_dataset(path, "context_lens", ATTEST_DTYPE_I32, p->b, -1, out->context_lens,
                          sizeof(int32_t));
    if (st == ATTEST_OK)
        st = read_dataset(path, "block_table", ATTEST_DTYPE_I32, p->b, p->blocks_per_req,
                          out->block_table, sizeof(int32_t));
    for (int32_t i = 0; i < p->b && st == ATTEST_OK; i++)
        if (out->context_lens[i] < 0 || out->context_lens[i] > p->width)
            st = attest_fail(ATTEST_ERR_FORMAT, "%s: context_lens[%d] = %d outside [0, width = %d]",
                             path, i, out->context_lens[i], p->width);
    for (int64_t i = 0; i < (int64_t)p->b * p->blocks_per_req && st == ATTEST_OK; i++) {
        const int32_t e = out->block_table[i];
        if (e < 0 || e >= p->num_blocks)
            st = attest_fail(ATTEST_ERR_FORMAT,
                             "%s: block_table[%" PRId64 "][%" PRId64 "] = %d outside [0, "
                             "num_blocks = %d)", path, i / p->blocks_per_req,
                             i % p->blocks_per_req, e, p->num_blocks);
    }
    if (st != ATTEST_OK) attest_topk_case_free(out);
    return st;
}

/* --- in a child first ------------------------------------------------------------------------ */

typedef struct probe_report {
    int32_t status;
    char message[512];
} probe_report;

static int probe_child(int fd, void *arg)
{
    probe_report r;
    memset(&r, 0, sizeof r);
    attest_topk_case c;
    r.status = (int32_t)attest_topk_casefile_load(arg, &c);
    if (r.status == ATTEST_OK) attest_topk_case_free(&c);
    snprintf(r.message, sizeof r.message, "%s", r.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &r, sizeof r) == 0 ? 0 : 1;
}

attest_status attest_topk_casefile_probe(const char *path)
{
    ATTEST_RETURN_IF(path == NULL, ATTEST_ERR_INVALID_ARGUMENT, "topk case file: NULL path");
    child_probe p;
    ATTEST_FORWARD(child_probe_spawn(path, "probe the file", probe_child, (void *)path, &p));
    probe_report r;
    const size_t got = child_probe_read(&p, &r, sizeof r);
    const int wstatus = child_probe_finish(&p);
    if (got == sizeof r && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        r.message[sizeof r.message - 1] = '\0';
        if (r.status == ATTEST_OK) return ATTEST_OK;
        if (r.status < 0 || r.status >= ATTEST_STATUS_COUNT_) r.status = ATTEST_ERR_INTERNAL;
        return attest_fail((attest_status)r.status, "%s", r.message);
    }
    char end[96];
    return attest_fail(ATTEST_ERR_FORMAT, "%s: reading it %s: its HDF5 metadata is corrupt", path,
                       child_probe_end(&p, wstatus, end, sizeof end));
}

static int mark_child(int fd, void *arg)
{
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    int32_t is = 0;
    const hid_t file = H5Fopen(arg, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file >= 0) {
        is = attest_h5_attr_exists(file, TOPK_MARK) > 0;
        H5Fclose(file);
    }
    attest_h5_quiet_end(&q);
    return child_probe_write_all(fd, &is, sizeof is) == 0 ? 0 : 1;
}

int attest_topk_casefile_is(const char *path)
{
    if (path == NULL) return 0;
    child_probe p;
    if (child_probe_spawn(path, "probe the file", mark_child, (void *)path, &p) != ATTEST_OK)
        return 0;
    int32_t is = 0;
    const size_t got = child_probe_read(&p, &is, sizeof is);
    const int wstatus = child_probe_finish(&p);
    return got == sizeof is && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 && is == 1;
}
