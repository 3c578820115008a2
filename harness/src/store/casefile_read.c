/* attest case files: reading and validating a case, and listing the cases of a file.
 *
 * The order of checks gives the most useful message first: the kind, then each parameter (type,
 * range, defaults), then the parameters together (attest_case_define_tensors), then each dataset
 * (presence, dtype, shape) before any data is read, then the data (attest_case_check_inputs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/casefile_h5.h"
#include "casefile_internal.h"

/* A case larger than this is taken for a corrupt file, not a test. */
/* The cap on a case's declared bytes (casefile.h). */
static unsigned long long max_case_bytes;

void attest_casefile_set_max_bytes(unsigned long long bytes) { max_case_bytes = bytes; }

unsigned long long attest_casefile_max_bytes(void)
{
    if (max_case_bytes) return max_case_bytes;
    const char *env = getenv("ATTEST_MAX_CASE_MB");
    char *end = NULL;
    unsigned long long mb = env && *env ? strtoull(env, &end, 10) : 0;
    if (!env || !*env || *end || mb == 0 || mb > (1ull << 24)) mb = ATTEST_CASEFILE_DEFAULT_MAX_MB;
    return mb << 20;
}
/* Deflate cannot shrink data by more than about 1032:1; a dataset claiming more is corrupt. */
#define MAX_COMPRESSION_RATIO 1100u

attest_status attest_cf_case_kind(hid_t loc, const char *where, int *is_case, attest_kernel *kernel)
{
    char kind[64] = "", kern[64] = "";
    int has_kind = attest_h5_attr_exists(loc, "kind");
    int has_kernel = attest_h5_attr_exists(loc, "kernel");
    *is_case = 0;
    if (has_kind < 0 || has_kernel < 0)
        return attest_fail(ATTEST_ERR_FORMAT, "%skind: attributes cannot be listed", where);
    if (!has_kind && !has_kernel) return ATTEST_OK;
    /* A results file's /provenance group names its campaign's "kernel" too: without "kind" (which
     * every case file and oracle group has) a group is a case only if it holds a cache. */
    if (!has_kind && H5Lexists(loc, "cache_bytes", H5P_DEFAULT) <= 0) return ATTEST_OK;
    if (has_kind) ATTEST_FORWARD(attest_h5_read_attr_string(loc, where, "kind", kind, sizeof kind,
                                                             ATTEST_H5_ONE_LINE));
    if (has_kernel)
        ATTEST_FORWARD(attest_h5_read_attr_string(loc, where, "kernel", kern, sizeof kern,
                                                  ATTEST_H5_ONE_LINE));
    if (has_kind && has_kernel && strcmp(kind, kern))
        return attest_fail(ATTEST_ERR_FORMAT, "%skernel: '%s' disagrees with kind '%s'", where,
                           kern, kind);
    const char *name = has_kind ? kind : kern;
    if (attest_kernel_from_name(name, kernel) != ATTEST_OK)
        return attest_fail(ATTEST_ERR_FORMAT,
                           "%s%s: unknown kernel family '%s' (expected indexer or mla-decode)",
                           where, has_kind ? "kind" : "kernel", name);
    *is_case = 1;
    return ATTEST_OK;
}

/* Parameter readers --------------------------------------------------------------------------- */

typedef struct reader {
    hid_t loc;
    const char *where;
} reader;

static int has_attr(const reader *r, const char *name)
{
    return attest_h5_attr_exists(r->loc, name) == 1;
}

static int has_dset(const reader *r, const char *name)
{
    return attest_h5_link_exists(r->loc, name) == 1;
}

static attest_status get_i64(const reader *r, const char *name, int required, int64_t def,
                             int64_t *v)
{
    if (!has_attr(r, name)) {
        if (required)
            return attest_fail(ATTEST_ERR_FORMAT, "%s%s: required attribute is missing", r->where,
                               name);
        *v = def;
        return ATTEST_OK;
    }
    return attest_h5_read_attr_int(r->loc, r->where, name, v);
}

static attest_status get_i32(const reader *r, const char *name, int required, int32_t def,
                             int32_t *v)
{
    int64_t x;
    ATTEST_FORWARD(get_i64(r, name, required, def, &x));
    if (x < INT32_MIN || x > INT32_MAX)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: value %lld out of range", r->where, name,
                           (long long)x);
    *v = (int32_t)x;
    return ATTEST_OK;
}

/* A has_* flag: absent means "derived from the dataset's presence"; present must be 0 or 1 and
 * agree with the dataset. */
static attest_status get_flag(const reader *r, const char *flag, const char *dset, int32_t *v)
{
    int present = has_dset(r, dset);
    if (!has_attr(r, flag)) {
        *v = present;
        return ATTEST_OK;
    }
    int64_t x;
    ATTEST_FORWARD(attest_h5_read_attr_int(r->loc, r->where, flag, &x));
    if (x != 0 && x != 1)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: %lld, expected 0 or 1", r->where, flag,
                           (long long)x);
    if (x && !present)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: required dataset is missing (%s = 1)",
                           r->where, dset, flag);
    if (!x && present)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: present but %s = 0", r->where, dset, flag);
    *v = (int32_t)x;
    return ATTEST_OK;
}

/* Reads an enum stored as a string by matching the names its field gives for each value. */
static attest_status get_enum(const reader *r, const attest_param_field *f, int *v)
{
    if (!has_attr(r, f->attr)) {
        *v = (int)f->fallback;
        return ATTEST_OK;
    }
    char s[64];
    ATTEST_FORWARD(attest_h5_read_attr_string(r->loc, r->where, f->attr, s, sizeof s,
                                              ATTEST_H5_ONE_LINE));
    char expected[160] = "";
    size_t used = 0;
    for (int i = 0; i < f->num_values; i++) {
        if (!strcmp(s, f->value_name(i))) {
            *v = i;
            return ATTEST_OK;
        }
        const char *sep = i == 0 ? "" : i + 1 == f->num_values ? " or " : ", ";
        int w = snprintf(expected + used, sizeof expected - used, "%s%s", sep, f->value_name(i));
        if (w > 0 && (size_t)w < sizeof expected - used) used += (size_t)w;
    }
    return attest_fail(ATTEST_ERR_FORMAT, "%s%s: unknown value '%s' (expected %s)", r->where,
                       f->attr, s, expected);
}

/* Reads a fixed attribute that, when present, must hold one value. */
static attest_status check_fixed(const reader *r, const char *name, int64_t want)
{
    if (!has_attr(r, name)) return ATTEST_OK;
    int64_t x;
    ATTEST_FORWARD(attest_h5_read_attr_int(r->loc, r->where, name, &x));
    if (x != want)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: %lld, the c4-indexer layout fixes it at %lld",
                           r->where, name, (long long)x, (long long)want);
    return ATTEST_OK;
}

/* The width of the block_table dataset, for files that leave blocks_per_req implicit. */
static attest_status table_width(const reader *r, const char *dset, int32_t *v)
{
    if (!has_dset(r, dset))
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: required dataset is missing", r->where, dset);
    hid_t d = H5Dopen2(r->loc, dset, H5P_DEFAULT);
    if (d < 0) return attest_fail(ATTEST_ERR_FORMAT, "%s%s: not a dataset", r->where, dset);
    attest_cf_dset_info info;
    attest_status st = attest_cf_dset_describe(d, r->where, dset, &info);
    H5Dclose(d);
    ATTEST_FORWARD(st);
    if (info.rank != 2 || info.dims[1] < 1 || info.dims[1] > INT32_MAX)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: rank %d, expected [b, blocks_per_req]",
                           r->where, dset, info.rank);
    *v = (int32_t)info.dims[1];
    return ATTEST_OK;
}

/* A layout field: required, one of the layouts a decode case uses; *L its descriptor at page
 * size 1, for the dimensions that default from it. */
static attest_status get_layout(const reader *r, const attest_param_field *f, attest_layout_id *id,
                                attest_layout *L)
{
    char s[64];
    if (!has_attr(r, f->attr))
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: required attribute is missing", r->where,
                           f->attr);
    ATTEST_FORWARD(attest_h5_read_attr_string(r->loc, r->where, f->attr, s, sizeof s,
                                              ATTEST_H5_ONE_LINE));
    if (attest_layout_from_name(s, id) != ATTEST_OK ||
        (*id != ATTEST_LAYOUT_MLA_V4 && *id != ATTEST_LAYOUT_MLA_V32))
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: '%s', expected mla-v4 or mla-v32", r->where,
                           f->attr, s);
    if (attest_layout_make(*id, 1, 0, L) != ATTEST_OK)
        return attest_cf_rewrap(ATTEST_ERR_FORMAT, r->where, f->attr);
    return ATTEST_OK;
}

/* Reads one field of the table (case.h) into the case. `L` is the layout read so far. */
static attest_status read_field(const reader *r, const attest_param_field *f, attest_case *c,
                                attest_layout *L)
{
    int64_t x = f->fallback;
    switch (f->type) {
    case ATTEST_PARAM_FIXED: return check_fixed(r, f->attr, f->fallback);
    case ATTEST_PARAM_FIXED_LAYOUT: {
        if (!has_attr(r, f->attr)) return ATTEST_OK;
        char s[64];
        const char *want = attest_layout_name((attest_layout_id)f->fallback);
        ATTEST_FORWARD(attest_h5_read_attr_string(r->loc, r->where, f->attr, s, sizeof s,
                                              ATTEST_H5_ONE_LINE));
        if (strcmp(s, want))
            return attest_fail(ATTEST_ERR_FORMAT, "%s%s: '%s', an %s case uses %s", r->where,
                               f->attr, s, attest_kernel_name(c->kernel), want);
        return ATTEST_OK;
    }
    case ATTEST_PARAM_LAYOUT: {
        attest_layout_id id;
        ATTEST_FORWARD(get_layout(r, f, &id, L));
        attest_param_set(c, f, id);
        return ATTEST_OK;
    }
    case ATTEST_PARAM_ENUM: {
        int v = 0;
        ATTEST_FORWARD(get_enum(r, f, &v));
        attest_param_set(c, f, v);
        return ATTEST_OK;
    }
    case ATTEST_PARAM_FLAG: {
        int32_t v = 0;
        ATTEST_FORWARD(get_flag(r, f->attr, f->dataset, &v));
        attest_param_set(c, f, v);
        return ATTEST_OK;
    }
    case ATTEST_PARAM_F32: {
        const int32_t d_qk = c->params.mla.d_qk;
        double v = d_qk > 0 ? 1.0 / sqrt((double)d_qk) : 0.0;
        if (has_attr(r, f->attr))
            ATTEST_FORWARD(attest_h5_read_attr_double(r->loc, r->where, f->attr, &v));
        if (!(v > 0.0 && v < 1e30))
            return attest_fail(ATTEST_ERR_FORMAT, "%s%s: %g must be positive and finite",
                               r->where, f->attr, v);
        attest_param_set_real(c, f, v);
        return ATTEST_OK;
    }
    case ATTEST_PARAM_I32:
    case ATTEST_PARAM_I64: break;
    }
    if (f->absent == ATTEST_ABSENT_TABLE_WIDTH && !has_attr(r, f->attr)) {
        int32_t v = 0;
        ATTEST_FORWARD(table_width(r, f->dataset, &v));
        attest_param_set(c, f, v);
        return ATTEST_OK;
    }
    if (f->absent == ATTEST_ABSENT_K_DIM) x = L->k_dim;
    if (f->absent == ATTEST_ABSENT_V_DIM) x = L->v_dim;
    if (f->type == ATTEST_PARAM_I64) {
        ATTEST_FORWARD(get_i64(r, f->attr, f->absent == ATTEST_ABSENT_REQUIRED, x, &x));
    } else {
        int32_t v = 0;
        ATTEST_FORWARD(get_i32(r, f->attr, f->absent == ATTEST_ABSENT_REQUIRED, (int32_t)x, &v));
        x = v;
    }
    attest_param_set(c, f, x);
    return ATTEST_OK;
}

/* A page pool's size and stride (read by the table): the size within range, the stride one the
 * layout accepts, 0 replaced by the layout's default. */
static attest_status check_pool(const reader *r, const char *prefix, attest_layout_id layout,
                                int32_t page_size, int64_t *page_stride)
{
    if (page_size <= 0 || (uint32_t)page_size > ATTEST_LAYOUT_MAX_PAGE_SIZE)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%spage_size: %d is outside [1, %u]", r->where,
                           prefix, page_size, ATTEST_LAYOUT_MAX_PAGE_SIZE);
    char name[48];
    snprintf(name, sizeof name, "%spage_stride", prefix);
    if (*page_stride < 0)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: %lld is negative", r->where, name,
                           (long long)*page_stride);
    /* The stride must hold a page's payload; attest_layout_make says so in its own words. */
    attest_layout L;
    if (attest_layout_make(layout, (uint32_t)page_size, (uint64_t)*page_stride, &L) != ATTEST_OK)
        return attest_cf_rewrap(ATTEST_ERR_FORMAT, r->where, *page_stride ? name : "page_size");
    *page_stride = (int64_t)L.page_stride;
    return ATTEST_OK;
}

/* Reads the parameters of the case's family, field by field in table order, then what ties
 * fields and datasets together. *truth: the case has its truth tensors. */
static attest_status read_params(const reader *r, attest_case *c, int *truth)
{
    size_t n;
    const attest_param_field *fields = attest_case_param_fields(c->kernel, &n);
    attest_layout L;
    memset(&L, 0, sizeof L);
    for (size_t i = 0; i < n; i++) {
        if (!attest_param_present(c, &fields[i])) continue;
        ATTEST_FORWARD(read_field(r, &fields[i], c, &L));
    }
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        int kt = has_dset(r, "k_true"), qt = has_dset(r, "q_true");
        if (kt != qt)
            return attest_fail(ATTEST_ERR_FORMAT,
                               "%s%s: required dataset is missing (the truth tensors come "
                               "together)",
                               r->where, kt ? "q_true" : "k_true");
        *truth = kt;
        return ATTEST_OK;
    }
    attest_mla_params *p = &c->params.mla;
    ATTEST_FORWARD(check_pool(r, "", p->layout, p->page_size, &p->page_stride));
    if (p->has_extra) {
        ATTEST_FORWARD(check_pool(r, "extra_", p->layout, p->extra_page_size,
                                  &p->extra_page_stride));
        if (!has_dset(r, "extra_indices"))
            return attest_fail(ATTEST_ERR_FORMAT, "%sextra_indices: required dataset is missing",
                               r->where);
    } else {
        /* Half an extra scope is a mistake, never something to ignore. */
        static const char *const extra_fields[] = {"extra_indices", "extra_topk_length",
                                                   "extra_kv_true"};
        for (size_t i = 0; i < sizeof extra_fields / sizeof extra_fields[0]; i++)
            if (has_dset(r, extra_fields[i]))
                return attest_fail(ATTEST_ERR_FORMAT,
                                   "%s%s: present without extra_cache_bytes", r->where,
                                   extra_fields[i]);
        for (size_t i = 0; i < n; i++)
            if ((fields[i].flags & ATTEST_PARAM_IF_EXTRA) && fields[i].type != ATTEST_PARAM_FLAG &&
                has_attr(r, fields[i].attr))
                return attest_fail(ATTEST_ERR_FORMAT,
                                   "%sextra_cache_bytes: required dataset is missing (%s is set)",
                                   r->where, fields[i].attr);
    }
    int kv = has_dset(r, "kv_true");
    int ekv = p->has_extra ? has_dset(r, "extra_kv_true") : kv;
    if (kv != ekv)
        return attest_fail(ATTEST_ERR_FORMAT,
                           "%s%s: required dataset is missing (the truth tensors come together)",
                           r->where, kv ? "extra_kv_true" : "kv_true");
    *truth = kv;
    return ATTEST_OK;
}

/* Datasets ------------------------------------------------------------------------------------ */

/* The parameters each tensor's shape is made of, for messages. */
static const char *shape_names(const attest_case *c, const char *name)
{
    static const struct {
        attest_kernel k;
        const char *name, *dims;
    } table[] = {
        {ATTEST_KERNEL_INDEXER, "cache_bytes", "num_blocks, block_bytes"},
        {ATTEST_KERNEL_INDEXER, "block_table", "b, blocks_per_req"},
        {ATTEST_KERNEL_INDEXER, "context_lens", "b"},
        {ATTEST_KERNEL_INDEXER, "q_fp8", "b, next_n, heads, head_dim"},
        {ATTEST_KERNEL_INDEXER, "weights", "b*next_n, heads"},
        {ATTEST_KERNEL_INDEXER, "k_true", "num_blocks*64, head_dim"},
        {ATTEST_KERNEL_INDEXER, "q_true", "b, next_n, heads, head_dim"},
        {ATTEST_KERNEL_MLA_DECODE, "cache_bytes", "num_pages*page_stride"},
        {ATTEST_KERNEL_MLA_DECODE, "q_bf16", "b, s_q, h_q, d_qk"},
        {ATTEST_KERNEL_MLA_DECODE, "indices", "b, s_q, topk"},
        {ATTEST_KERNEL_MLA_DECODE, "topk_length", "b"},
        {ATTEST_KERNEL_MLA_DECODE, "attn_sink", "h_q"},
        {ATTEST_KERNEL_MLA_DECODE, "extra_cache_bytes", "extra_num_pages*extra_page_stride"},
        {ATTEST_KERNEL_MLA_DECODE, "extra_indices", "b, s_q, extra_topk"},
        {ATTEST_KERNEL_MLA_DECODE, "extra_topk_length", "b"},
        {ATTEST_KERNEL_MLA_DECODE, "kv_true", "num_pages*page_size, d_qk"},
        {ATTEST_KERNEL_MLA_DECODE, "extra_kv_true", "extra_num_pages*extra_page_size, d_qk"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].k == c->kernel && !strcmp(table[i].name, name)) return table[i].dims;
    return "from the parameters";
}

static void format_dims(char *buf, size_t cap, int rank, const int64_t *dims)
{
    size_t len = 0;
    buf[0] = '\0';
    len += (size_t)snprintf(buf + len, cap - len, "[");
    for (int i = 0; i < rank && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

static const char *dtype_expected(attest_dtype d)
{
    return d == ATTEST_DTYPE_BF16 ? "uint16 (bf16 bit patterns)" : attest_dtype_name(d);
}

/* The pool rows a cache dataset may also be shaped as: [pages, stride] instead of [bytes]. */
static void cache_rows(const attest_case *c, const char *name, int64_t *pages, int64_t *stride)
{
    *pages = *stride = -1;
    if (c->kernel == ATTEST_KERNEL_INDEXER && !strcmp(name, "cache_bytes")) {
        *pages = c->params.indexer.num_blocks;
        *stride = ATTEST_LAYOUT_C4_BLOCK_BYTES;
    } else if (c->kernel == ATTEST_KERNEL_MLA_DECODE && !strcmp(name, "cache_bytes")) {
        *pages = c->params.mla.num_pages;
        *stride = c->params.mla.page_stride;
    } else if (c->kernel == ATTEST_KERNEL_MLA_DECODE && !strcmp(name, "extra_cache_bytes")) {
        *pages = c->params.mla.extra_num_pages;
        *stride = c->params.mla.extra_page_stride;
    }
}

static int shape_ok(const attest_case *c, const attest_tensor *t, const attest_cf_dset_info *info)
{
    if (info->rank == t->rank) {
        int same = 1;
        for (int i = 0; i < t->rank; i++) same &= info->dims[i] == t->shape[i];
        if (same) return 1;
    }
    int64_t pages, stride;
    cache_rows(c, t->name, &pages, &stride);
    if (pages < 0) return 0;
    if (info->rank == 1) return info->dims[0] == pages * stride;
    return info->rank == 2 && info->dims[0] == pages && info->dims[1] == stride;
}

/* Rejects storage that would let a small file claim a huge tensor or read other files. */
static attest_status check_storage(hid_t d, const char *where, const char *name, size_t nbytes)
{
    hid_t dcpl = H5Dget_create_plist(d);
    if (dcpl < 0) return attest_fail(ATTEST_ERR_FORMAT, "%s%s: creation properties unreadable", where, name);
    H5D_layout_t layout = H5Pget_layout(dcpl);
    int external = H5Pget_external_count(dcpl);
    int nfilters = H5Pget_nfilters(dcpl);
    H5Pclose(dcpl);
    (void)H5Eclear2(H5E_DEFAULT);
    if (external != 0)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: data in external files is not accepted",
                           where, name);
    if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: unsupported storage layout (virtual?)", where,
                           name);
    if (nbytes < (1u << 20)) return ATTEST_OK;
    hsize_t stored = H5Dget_storage_size(d);
    hsize_t need = nfilters > 0 ? nbytes / MAX_COMPRESSION_RATIO : nbytes;
    if (stored < need)
        return attest_fail(ATTEST_ERR_FORMAT,
                           "%s%s: only %llu bytes stored for %zu bytes of data (unwritten or "
                           "corrupt)",
                           where, name, (unsigned long long)stored, nbytes);
    return ATTEST_OK;
}

static attest_status check_dataset(const attest_case *c, hid_t loc, const char *where,
                                   const attest_tensor *t, hid_t *out, attest_cf_dset_info *info)
{
    *out = H5I_INVALID_HID;
    if (!attest_h5_link_exists(loc, t->name))
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: required dataset is missing", where, t->name);
    hid_t d = H5Dopen2(loc, t->name, H5P_DEFAULT);
    if (d < 0) {
        (void)H5Eclear2(H5E_DEFAULT);
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: not a dataset", where, t->name);
    }
    attest_status st = attest_cf_dset_describe(d, where, t->name, info);
    if (st == ATTEST_OK && attest_cf_dtype_of(info) != t->dtype)
        st = attest_fail(ATTEST_ERR_FORMAT, "%s%s: dtype %s, expected %s", where, t->name,
                         info->type_desc, dtype_expected(t->dtype));
    if (st == ATTEST_OK && !shape_ok(c, t, info)) {
        char have[96], want[96];
        format_dims(have, sizeof have, info->rank, info->dims);
        format_dims(want, sizeof want, t->rank, t->shape);
        st = attest_fail(ATTEST_ERR_FORMAT,
                         "%s%s: shape %s disagrees with the attributes, expected %s (%s)", where,
                         t->name, have, want, shape_names(c, t->name));
    }
    if (st == ATTEST_OK) st = check_storage(d, where, t->name, t->nbytes);
    if (st != ATTEST_OK) {
        H5Dclose(d);
        return st;
    }
    *out = d;
    return ATTEST_OK;
}

/* Sparse pools --------------------------------------------------------------------------------- */

/* A sparse pool in a file: its page list and its bytes, page after page. */
typedef struct sparse_in {
    int tensor;          /* index in the case's table; -1: none */
    unsigned pool;
    char list_name[48];
    hid_t list;          /* the page list dataset */
    attest_cf_dset_info list_info;
    int64_t count;       /* pages stored */
    uint64_t stride;
    int32_t *pages;
} sparse_in;

/* Opens a sparse pool's two datasets and checks their types and shapes before anything is
 * read: the list int32 [n] with n <= the pool's pages, the bytes [n, stride] or [n * stride]. */
static attest_status check_sparse(const attest_case *c, hid_t loc, const char *where,
                                  sparse_in *sp, hid_t *bytes, attest_cf_dset_info *info)
{
    const attest_tensor *t = &c->tensors[sp->tensor];
    int64_t num_pages = 0;
    (void)attest_case_pool_tensor(c, sp->pool, &sp->stride, &num_pages);
    sp->list = H5Dopen2(loc, sp->list_name, H5P_DEFAULT);
    if (sp->list < 0) {
        (void)H5Eclear2(H5E_DEFAULT);
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: not a dataset", where, sp->list_name);
    }
    ATTEST_FORWARD(attest_cf_dset_describe(sp->list, where, sp->list_name, &sp->list_info));
    if (attest_cf_dtype_of(&sp->list_info) != ATTEST_DTYPE_I32 || sp->list_info.rank != 1)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: %s of rank %d, expected int32 [pages stored]",
                           where, sp->list_name, sp->list_info.type_desc, sp->list_info.rank);
    sp->count = sp->list_info.dims[0];
    if (sp->count < 0 || sp->count > num_pages)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: %lld pages listed, the pool has %lld", where,
                           sp->list_name, (long long)sp->count, (long long)num_pages);
    *bytes = H5Dopen2(loc, t->name, H5P_DEFAULT);
    if (*bytes < 0) {
        (void)H5Eclear2(H5E_DEFAULT);
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: required dataset is missing", where, t->name);
    }
    ATTEST_FORWARD(attest_cf_dset_describe(*bytes, where, t->name, info));
    if (attest_cf_dtype_of(info) != ATTEST_DTYPE_U8)
        return attest_fail(ATTEST_ERR_FORMAT, "%s%s: dtype %s, expected uint8", where, t->name,
                           info->type_desc);
    const int64_t n = sp->count, st = (int64_t)sp->stride;
    const int ok = (info->rank == 2 && info->dims[0] == n && info->dims[1] == st) ||
                   (info->rank == 1 && info->dims[0] == n * st);
    if (!ok)
        return attest_fail(ATTEST_ERR_FORMAT,
                           "%s%s: shape disagrees with %s, expected [%lld, %lld] (pages stored, "
                           "page stride)",
                           where, t->name, sp->list_name, (long long)n, (long long)st);
    return check_storage(*bytes, where, t->name, (size_t)(n * st));
}

/* Reads a sparse pool: the list (ascending, distinct, inside the pool), then each listed page's
 * bytes to its place in the case's reserved pool. */
static attest_status read_sparse(attest_case *c, const char *where, sparse_in *sp, hid_t bytes,
                                 const attest_cf_dset_info *info)
{
    int64_t num_pages = 0;
    (void)attest_case_pool_tensor(c, sp->pool, NULL, &num_pages);
    const size_t n = (size_t)sp->count;
    sp->pages = malloc(n ? n * sizeof *sp->pages : 1);
    uint8_t *buf = malloc(n ? n * sp->stride : 1);
    attest_status st = ATTEST_OK;
    if (sp->pages == NULL || buf == NULL)
        st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s%s: %zu pages", where, sp->list_name, n);
    if (st == ATTEST_OK)
        st = attest_cf_dset_read(sp->list, where, sp->list_name, &sp->list_info, ATTEST_DTYPE_I32,
                                 sp->pages, n * sizeof *sp->pages);
    for (size_t k = 0; k < n && st == ATTEST_OK; k++)
        if (sp->pages[k] < 0 || sp->pages[k] >= num_pages ||
            (k > 0 && sp->pages[k] <= sp->pages[k - 1]))
            st = attest_fail(ATTEST_ERR_FORMAT,
                             "%s%s[%zu] = %d: pages must be ascending, distinct and inside the "
                             "pool [0, %lld)",
                             where, sp->list_name, k, sp->pages[k], (long long)num_pages);
    attest_tensor *t = &c->tensors[sp->tensor];
    if (st == ATTEST_OK)
        st = attest_cf_dset_read(bytes, where, t->name, info, ATTEST_DTYPE_U8, buf, n * sp->stride);
    for (size_t k = 0; k < n && st == ATTEST_OK; k++)
        memcpy((uint8_t *)t->data + (uint64_t)sp->pages[k] * sp->stride, buf + k * sp->stride,
               sp->stride);
    free(buf);
    return st;
}

static int cmp_page(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Every page the case's tables or indices reach must be stored: the arena places exactly those,
 * and a page read but never written would be a silent zero. */
static attest_status check_sparse_reach(const attest_case *c, const char *where,
                                        const sparse_in *sp)
{
    int32_t *reached = NULL;
    size_t n = 0;
    ATTEST_FORWARD(attest_case_pool_pages(c, sp->pool, &reached, &n));
    attest_status st = ATTEST_OK;
    for (size_t k = 0; k < n && st == ATTEST_OK; k++)
        if (!bsearch(&reached[k], sp->pages, (size_t)sp->count, sizeof *sp->pages, cmp_page))
            st = attest_fail(ATTEST_ERR_FORMAT,
                             "%s%s: page %d is reached by the case's %s but not stored", where,
                             sp->list_name, reached[k],
                             c->kernel == ATTEST_KERNEL_INDEXER ? "block_table" : "indices");
    free(reached);
    return st;
}

attest_status attest_cf_read_case(hid_t loc, const char *where, attest_case *out)
{
    memset(out, 0, sizeof *out);
    attest_case c;
    memset(&c, 0, sizeof c);
    int is_case = 0;
    ATTEST_FORWARD(attest_cf_case_kind(loc, where, &is_case, &c.kernel));
    if (!is_case)
        return attest_fail(ATTEST_ERR_FORMAT,
                           "%skind: required attribute is missing (not a case: no 'kind' or "
                           "'kernel')",
                           where);
    reader r = {loc, where};
    int64_t version = 1;
    ATTEST_FORWARD(get_i64(&r, "attest_schema_version", 0, 1, &version));
    if (version < 1 || version > ATTEST_CASEFILE_SCHEMA_VERSION)
        return attest_fail(ATTEST_ERR_FORMAT,
                           "%sattest_schema_version: %lld, this attest reads versions 1 to %d",
                           where, (long long)version, ATTEST_CASEFILE_SCHEMA_VERSION);
    if (has_attr(&r, "seed")) ATTEST_FORWARD(attest_h5_read_attr_u64(loc, where, "seed", &c.seed));
    int truth = 0;
    ATTEST_FORWARD(read_params(&r, &c, &truth));
    if (attest_case_define_tensors(&c, truth) != ATTEST_OK)
        return attest_cf_rewrap(ATTEST_ERR_FORMAT, where, NULL);

    /* A pool with a page list beside it is sparse (schema version 2). */
    sparse_in sparse[2];
    for (int k = 0; k < 2; k++) {
        memset(&sparse[k], 0, sizeof sparse[k]);
        sparse[k].pool = k == 0 ? ATTEST_POOL_MAIN : ATTEST_POOL_EXTRA;
        sparse[k].list = H5I_INVALID_HID;
        sparse[k].tensor = attest_case_pool_tensor(&c, sparse[k].pool, NULL, NULL);
        if (sparse[k].tensor < 0) continue;
        attest_cf_pages_name(c.tensors[sparse[k].tensor].name, sparse[k].list_name,
                             sizeof sparse[k].list_name);
        if (has_dset(&r, sparse[k].list_name))
            c.sparse_pools |= sparse[k].pool;
        else
            sparse[k].tensor = -1;
    }
    hid_t dsets[ATTEST_CASE_MAX_TENSORS];
    attest_cf_dset_info infos[ATTEST_CASE_MAX_TENSORS];
    for (size_t i = 0; i < ATTEST_CASE_MAX_TENSORS; i++) dsets[i] = H5I_INVALID_HID;
    attest_status st = ATTEST_OK;
    unsigned long long total = 0;
    for (size_t i = 0; i < c.num_tensors && st == ATTEST_OK; i++) {
        sparse_in *sp = NULL;
        for (int k = 0; k < 2; k++)
            if (sparse[k].tensor == (int)i) sp = &sparse[k];
        if (sp) {
            st = check_sparse(&c, loc, where, sp, &dsets[i], &infos[i]);
            total += (unsigned long long)sp->count * sp->stride; /* what the case writes */
            continue;
        }
        total += c.tensors[i].nbytes;
        if (c.tensors[i].role == ATTEST_ROLE_OUTPUT) continue;
        st = check_dataset(&c, loc, where, &c.tensors[i], &dsets[i], &infos[i]);
    }
    const unsigned long long cap = attest_casefile_max_bytes();
    if (st == ATTEST_OK && total > cap)
        st = attest_fail(ATTEST_ERR_FORMAT,
                         "%sdeclares %llu MiB of tensors, over the %llu MiB a case may take "
                         "(raise it with --max-case-mb or $ATTEST_MAX_CASE_MB)",
                         where, (total + (1u << 20) - 1) >> 20, cap >> 20);
    if (st == ATTEST_OK) st = attest_case_alloc_heap(&c);
    for (size_t i = 0; i < c.num_tensors && st == ATTEST_OK; i++) {
        const attest_tensor *t = &c.tensors[i];
        if (t->role == ATTEST_ROLE_OUTPUT) continue;
        sparse_in *sp = NULL;
        for (int k = 0; k < 2; k++)
            if (sparse[k].tensor == (int)i) sp = &sparse[k];
        if (sp)
            st = read_sparse(&c, where, sp, dsets[i], &infos[i]);
        else
            st = attest_cf_dset_read(dsets[i], where, t->name, &infos[i], t->dtype, t->data,
                                     t->nbytes);
    }
    for (size_t i = 0; i < ATTEST_CASE_MAX_TENSORS; i++)
        if (dsets[i] >= 0) H5Dclose(dsets[i]);
    if (st == ATTEST_OK && attest_case_check_inputs(&c) != ATTEST_OK)
        st = attest_cf_rewrap(ATTEST_ERR_FORMAT, where, NULL);
    for (int k = 0; k < 2; k++) {
        if (st == ATTEST_OK && sparse[k].tensor >= 0)
            st = check_sparse_reach(&c, where, &sparse[k]);
        if (sparse[k].list >= 0) H5Dclose(sparse[k].list);
        free(sparse[k].pages);
    }
    if (st != ATTEST_OK) {
        attest_case_free(&c);
        return st;
    }
    *out = c;
    return ATTEST_OK;
}

attest_status attest_casefile_load(const char *path, const char *group, attest_case *out)
{
    if (!out) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_load: NULL case");
    memset(out, 0, sizeof *out);
    if (!path) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_load: NULL path");
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    hid_t fid = H5I_INVALID_HID, g = H5I_INVALID_HID;
    attest_status st = attest_cf_open_read(path, &fid);
    if (st == ATTEST_OK) st = attest_cf_open_group(fid, path, group, &g);
    if (st == ATTEST_OK) {
        char where[600];
        attest_cf_prefix(where, sizeof where, path, group);
        st = attest_cf_read_case(g, where, out);
    }
    if (g >= 0) H5Oclose(g);
    if (fid >= 0) H5Fclose(fid);
    attest_h5_quiet_end(&q);
    return st;
}

/* Listing ------------------------------------------------------------------------------------- */

#define LIST_MAX_DEPTH 4

typedef struct walker {
    const char *path;
    attest_casefile_group_fn fn;
    void *user;
    size_t found;
} walker;

static attest_status walk(walker *w, hid_t loc, const char *prefix, int depth)
{
    H5G_info_t gi;
    if (H5Gget_info(loc, &gi) < 0)
        return attest_fail(ATTEST_ERR_FORMAT, "%s: group '%s' cannot be listed", w->path,
                           prefix[0] ? prefix : "/");
    for (hsize_t i = 0; i < gi.nlinks; i++) {
        char name[256];
        ssize_t n = H5Lget_name_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                                       H5P_DEFAULT);
        if (n < 0 || (size_t)n >= sizeof name) continue; /* unnamed or absurdly long: not a case */
        H5L_info_t li;
        if (H5Lget_info(loc, name, &li, H5P_DEFAULT) < 0 || li.type != H5L_TYPE_HARD) continue;
        hid_t obj = H5Oopen(loc, name, H5P_DEFAULT);
        if (obj < 0) continue;
        if (H5Iget_type(obj) != H5I_GROUP) {
            H5Oclose(obj);
            continue;
        }
        char full[600];
        snprintf(full, sizeof full, "%s%s%s", prefix, prefix[0] ? "/" : "", name);
        char where[700];
        attest_cf_prefix(where, sizeof where, w->path, full);
        int is_case = 0;
        attest_kernel k = ATTEST_KERNEL_INDEXER;
        attest_status st = attest_cf_case_kind(obj, where, &is_case, &k);
        if (st == ATTEST_OK && is_case) {
            w->found++;
            st = w->fn(full, k, w->user);
        } else if (st == ATTEST_OK && depth + 1 < LIST_MAX_DEPTH) {
            st = walk(w, obj, full, depth + 1);
        }
        H5Oclose(obj);
        ATTEST_FORWARD(st);
    }
    (void)H5Eclear2(H5E_DEFAULT);
    return ATTEST_OK;
}

attest_status attest_casefile_list_groups(const char *path, attest_casefile_group_fn fn, void *user)
{
    if (!path || !fn)
        return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_list_groups: NULL argument");
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    hid_t fid = H5I_INVALID_HID, root = H5I_INVALID_HID;
    attest_status st = attest_cf_open_read(path, &fid);
    if (st == ATTEST_OK) st = attest_cf_open_group(fid, path, NULL, &root);
    walker w = {path, fn, user, 0};
    if (st == ATTEST_OK) {
        char where[600];
        attest_cf_prefix(where, sizeof where, path, NULL);
        int is_case = 0;
        attest_kernel k = ATTEST_KERNEL_INDEXER;
        st = attest_cf_case_kind(root, where, &is_case, &k);
        if (st == ATTEST_OK && is_case) {
            w.found = 1;
            st = fn("/", k, user);
        } else if (st == ATTEST_OK) {
            st = walk(&w, root, "", 0);
        }
    }
    if (st == ATTEST_OK && w.found == 0)
        st = attest_fail(ATTEST_ERR_FORMAT,
                         "%s: kind: no case in this file (no group has a 'kind' attribute)", path);
    if (root >= 0) H5Oclose(root);
    if (fid >= 0) H5Fclose(fid);
    attest_h5_quiet_end(&q);
    return st;
}

attest_status attest_casefile_read_at(hid_t loc, const char *label, attest_case *out)
{
    if (!out) return attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "attest_casefile_read_at: NULL case");
    char where[600];
    snprintf(where, sizeof where, "%s/", label ? label : "");
    attest_h5_quiet q;
    attest_h5_quiet_begin(&q);
    attest_status st = attest_cf_read_case(loc, where, out);
    attest_h5_quiet_end(&q);
    return st;
}
