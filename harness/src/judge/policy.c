/* attest: tolerance policies (docs/policy.md documents the schema). jansson parses the JSON and
 * reports syntax errors with positions; the schema checks below name the field, and a small
 * position finder walks the already-validated text so those messages carry file:line:column too.
 */
#include "attest/policy.h"
#include "attest/files.h"

#include "attest/bound.h"
#include "attest/sha256.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attest/default_policy.h"

#define POLICY_NAME_MAX 64
#define POLICY_ORIGIN_MAX 256
#define POLICY_MAX_BYTES (4u << 20) /* a policy is a few KiB; anything this large is a mistake */

typedef struct policy_entry {
    attest_kernel kernel;
    char output[32];
    attest_tolerance tol;
} policy_entry;

struct attest_policy {
    char name[POLICY_NAME_MAX];
    char version[POLICY_NAME_MAX];
    char origin[POLICY_ORIGIN_MAX];
    char hash[ATTEST_SHA256_HEX_LEN + 1];
    char *text;
    size_t num_entries;
    policy_entry *entries;
    int is_static; /* the embedded default: shared, never freed */
};

/* Outputs each kernel family writes (case.h's tensor table); an entry for anything else is a
 * typo that would otherwise surface only as a failed lookup in the middle of a campaign. */
static const struct {
    attest_kernel kernel;
    const char *output;
} known_outputs[] = {
    {ATTEST_KERNEL_INDEXER, "logits"},
    {ATTEST_KERNEL_MLA_DECODE, "out_bf16"},
    {ATTEST_KERNEL_MLA_DECODE, "lse"},
};

/* --- positions of keys in valid JSON text --------------------------------------------------- */

typedef struct text_view {
    const char *t;
    size_t n;
} text_view;

static size_t skip_ws(text_view v, size_t i)
{
    while (i < v.n && (v.t[i] == ' ' || v.t[i] == '\t' || v.t[i] == '\n' || v.t[i] == '\r')) ++i;
    return i;
}

/* i at an opening quote; returns the index just past the closing quote. */
static size_t skip_string(text_view v, size_t i)
{
    for (++i; i < v.n; ++i) {
        if (v.t[i] == '\\') ++i;
        else if (v.t[i] == '"') return i + 1;
    }
    return v.n;
}

static size_t skip_value(text_view v, size_t i)
{
    if (i >= v.n) return v.n;
    if (v.t[i] == '"') return skip_string(v, i);
    if (v.t[i] == '{' || v.t[i] == '[') {
        int depth = 0;
        while (i < v.n) {
            char ch = v.t[i];
            if (ch == '"') {
                i = skip_string(v, i);
                continue;
            }
            if (ch == '{' || ch == '[') ++depth;
            if (ch == '}' || ch == ']') {
                if (--depth == 0) return i + 1;
            }
            ++i;
        }
        return v.n;
    }
    while (i < v.n && v.t[i] != ',' && v.t[i] != '}' && v.t[i] != ']' && v.t[i] != ' ' &&
           v.t[i] != '\n' && v.t[i] != '\t' && v.t[i] != '\r')
        ++i;
    return i;
}

/* obj at '{'. Finds member `key` (raw bytes, no escapes); *key_at = its opening quote, *val_at =
 * its value. Returns 1 when found. */
static int find_member(text_view v, size_t obj, const char *key, size_t *key_at, size_t *val_at)
{
    if (obj >= v.n || v.t[obj] != '{') return 0;
    size_t klen = strlen(key), i = obj + 1;
    for (;;) {
        i = skip_ws(v, i);
        if (i >= v.n || v.t[i] != '"') return 0;
        size_t kbeg = i, kend = skip_string(v, i);
        i = skip_ws(v, kend);
        if (i >= v.n || v.t[i] != ':') return 0;
        i = skip_ws(v, i + 1);
        if (kend - kbeg == klen + 2 && memcmp(v.t + kbeg + 1, key, klen) == 0) {
            *key_at = kbeg;
            *val_at = i;
            return 1;
        }
        i = skip_ws(v, skip_value(v, i));
        if (i >= v.n || v.t[i] != ',') return 0;
        ++i;
    }
}

/* arr at '['. Finds element `index`; returns 1 when found. */
static int find_element(text_view v, size_t arr, size_t index, size_t *at)
{
    if (arr >= v.n || v.t[arr] != '[') return 0;
    size_t i = skip_ws(v, arr + 1);
    for (size_t e = 0;; ++e) {
        if (i >= v.n || v.t[i] == ']') return 0;
        if (e == index) {
            *at = i;
            return 1;
        }
        i = skip_ws(v, skip_value(v, i));
        if (i >= v.n || v.t[i] != ',') return 0;
        i = skip_ws(v, i + 1);
    }
}

/* Byte offset of top-level key (entry < 0) or of entries[entry].key (key NULL: the entry). Falls
 * back to the closest enclosing thing found, or 0. */
static size_t locate(text_view v, long entry, const char *key)
{
    size_t top = skip_ws(v, 0), key_at = top, val_at = 0, elem = 0;
    if (entry < 0) {
        if (key != NULL && find_member(v, top, key, &key_at, &val_at)) return key_at;
        return top;
    }
    if (!find_member(v, top, "entries", &key_at, &val_at)) return top;
    if (!find_element(v, val_at, (size_t)entry, &elem)) return key_at;
    if (key != NULL && find_member(v, elem, key, &key_at, &val_at)) return key_at;
    return elem;
}

static void line_col(text_view v, size_t pos, int *line, int *col)
{
    *line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < pos && i < v.n; ++i) {
        if (v.t[i] == '\n') {
            ++*line;
            line_start = i + 1;
        }
    }
    *col = (int)(pos - line_start) + 1;
}

/* --- schema ------------------------------------------------------------------------------- */

typedef struct parse_ctx {
    text_view v;
    const char *origin;
} parse_ctx;

/* Records "origin:line:col: where: message" for entry `entry` (-1: top level), field `key`. */
static attest_status schema_error(const parse_ctx *ctx, long entry, const char *key, const char *what)
{
    int line, col;
    line_col(ctx->v, locate(ctx->v, entry, key), &line, &col);
    if (entry < 0)
        return attest_fail(ATTEST_ERR_FORMAT, "%s:%d:%d: %s: %s", ctx->origin, line, col,
                           key ? key : "policy", what);
    return attest_fail(ATTEST_ERR_FORMAT, "%s:%d:%d: entries[%ld]%s%s: %s", ctx->origin, line, col,
                       entry, key ? "." : "", key ? key : "", what);
}

enum field_kind {
    FIELD_STRING,   /* non-empty string */
    FIELD_BOUND,    /* number >= 0 */
    FIELD_FRACTION, /* number in [0, 1] */
    FIELD_BOUND_OR_NULL,
    FIELD_FRACTION_OR_NULL,
    FIELD_FORMAT    /* a format name of bound.h, stored as its unit roundoff */
};

typedef struct field_spec {
    const char *key;
    enum field_kind kind;
    int required;
    size_t offset;    /* into attest_tolerance for numbers */
    double fallback;  /* value when absent (optional) or null (gate off) */
} field_spec;

#define TOL_AT(f) offsetof(attest_tolerance, f)
static const field_spec entry_fields[] = {
    {"kernel", FIELD_STRING, 1, 0, 0},
    {"output", FIELD_STRING, 1, 0, 0},
    /* atol and rtol are required unless bound_factor is given (checked after the table). */
    {"atol", FIELD_BOUND, 0, TOL_AT(atol), 0},
    {"rtol", FIELD_BOUND, 0, TOL_AT(rtol), 0},
    {"max_fail_fraction", FIELD_FRACTION, 1, TOL_AT(max_fail_fraction), 0},
    {"cos_diff_max", FIELD_BOUND, 1, TOL_AT(cos_diff_max), 0},
    {"nmse_max", FIELD_BOUND_OR_NULL, 1, TOL_AT(nmse_max), -1},
    {"max_code_distance", FIELD_BOUND_OR_NULL, 1, TOL_AT(max_code_distance), -1},
    {"vacuity_factor", FIELD_BOUND, 0, TOL_AT(vacuity_factor), 0},
    {"atol_ref_scale", FIELD_BOUND, 0, TOL_AT(atol_ref_scale), 0},
    {"topk_min_recall", FIELD_FRACTION_OR_NULL, 0, TOL_AT(topk_min_recall), -1},
    {"topk_tie_atol", FIELD_BOUND, 0, TOL_AT(topk_tie_atol), 0},
    {"topk_tie_rtol", FIELD_BOUND, 0, TOL_AT(topk_tie_rtol), 0},
    {"bound_factor", FIELD_BOUND_OR_NULL, 0, TOL_AT(bound_factor), -1},
    {"accumulation", FIELD_FORMAT, 0, TOL_AT(model.u_accum), 0x1p-24},
    {"probabilities", FIELD_FORMAT, 0, TOL_AT(model.u_probs), 0x1p-24},
    {"dequantized_kv", FIELD_FORMAT, 0, TOL_AT(model.u_kv), 0.0},
    {"source", FIELD_STRING, 1, 0, 0},
};
#define NUM_ENTRY_FIELDS (sizeof entry_fields / sizeof entry_fields[0])

static const char *const top_keys[] = {"schema", "name", "version", "description", "entries"};

static attest_status check_number(const parse_ctx *ctx, long entry, const field_spec *f,
                                  json_t *val, double *out)
{
    int nullable = f->kind == FIELD_BOUND_OR_NULL || f->kind == FIELD_FRACTION_OR_NULL;
    if (json_is_null(val) && nullable) {
        *out = f->fallback;
        return ATTEST_OK;
    }
    if (!json_is_number(val))
        return schema_error(ctx, entry, f->key,
                            nullable ? "must be a number or null (gate off)" : "must be a number");
    double x = json_number_value(val);
    if (!isfinite(x) || x < 0) return schema_error(ctx, entry, f->key, "must not be negative");
    if ((f->kind == FIELD_FRACTION || f->kind == FIELD_FRACTION_OR_NULL) && x > 1)
        return schema_error(ctx, entry, f->key, "must be in [0, 1]");
    *out = x;
    return ATTEST_OK;
}

static attest_status copy_string(const parse_ctx *ctx, long entry, const char *key, json_t *val,
                                 char *dst, size_t cap)
{
    if (!json_is_string(val)) return schema_error(ctx, entry, key, "must be a string");
    size_t len = json_string_length(val);
    if (len == 0) return schema_error(ctx, entry, key, "must not be empty");
    if (len >= cap || strlen(json_string_value(val)) != len) {
        char what[96];
        snprintf(what, sizeof what, "must be under %zu bytes, without NUL", cap);
        return schema_error(ctx, entry, key, what);
    }
    /* Names are printed in summaries, provenance and messages: a newline or a terminal escape
     * would forge lines there. */
    for (const unsigned char *c = (const unsigned char *)json_string_value(val); *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return schema_error(ctx, entry, key, "must not hold control characters");
    memcpy(dst, json_string_value(val), len + 1);
    return ATTEST_OK;
}

static attest_status parse_entry(const parse_ctx *ctx, long idx, json_t *obj, policy_entry *e)
{
    if (!json_is_object(obj)) return schema_error(ctx, idx, NULL, "must be an object");
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        size_t f = 0;
        while (f < NUM_ENTRY_FIELDS && strcmp(entry_fields[f].key, key) != 0) ++f;
        if (f == NUM_ENTRY_FIELDS) {
            char what[96];
            snprintf(what, sizeof what, "unknown key \"%.40s\"", key);
            return schema_error(ctx, idx, key, what);
        }
    }
    memset(e, 0, sizeof *e);
    char kernel_name[32] = "";
    for (size_t f = 0; f < NUM_ENTRY_FIELDS; ++f) {
        const field_spec *spec = &entry_fields[f];
        val = json_object_get(obj, spec->key);
        if (val == NULL) {
            if (spec->required) return schema_error(ctx, idx, spec->key, "required field is missing");
            *(double *)((char *)&e->tol + spec->offset) = spec->fallback;
            continue;
        }
        if (strcmp(spec->key, "kernel") == 0) {
            ATTEST_FORWARD(copy_string(ctx, idx, spec->key, val, kernel_name, sizeof kernel_name));
            if (attest_kernel_from_name(kernel_name, &e->kernel) != ATTEST_OK)
                return schema_error(ctx, idx, spec->key,
                                    "unknown kernel family (expected \"indexer\" or \"mla-decode\")");
        } else if (strcmp(spec->key, "output") == 0) {
            ATTEST_FORWARD(copy_string(ctx, idx, spec->key, val, e->output, sizeof e->output));
        } else if (strcmp(spec->key, "source") == 0) {
            ATTEST_FORWARD(copy_string(ctx, idx, spec->key, val, e->tol.source, sizeof e->tol.source));
        } else if (spec->kind == FIELD_FORMAT) {
            char format[32];
            ATTEST_FORWARD(copy_string(ctx, idx, spec->key, val, format, sizeof format));
            double *dst = (double *)((char *)&e->tol + spec->offset);
            if (attest_format_unit_roundoff(format, dst) != ATTEST_OK)
                return schema_error(ctx, idx, spec->key,
                                    "unknown format (expected fp32, tf32, fp16, bf16, "
                                    "hopper-fp8-mma or exact)");
        } else {
            double *dst = (double *)((char *)&e->tol + spec->offset);
            ATTEST_FORWARD(check_number(ctx, idx, spec, val, dst));
        }
    }
    /* Without computed bounds the element gate is atol OR rtol, so both must be stated. */
    if (e->tol.bound_factor < 0) {
        if (json_object_get(obj, "atol") == NULL)
            return schema_error(ctx, idx, "atol", "required field is missing (no bound_factor)");
        if (json_object_get(obj, "rtol") == NULL)
            return schema_error(ctx, idx, "rtol", "required field is missing (no bound_factor)");
        if (json_object_get(obj, "vacuity_factor") == NULL)
            return schema_error(ctx, idx, "vacuity_factor",
                                "required field is missing (no bound_factor)");
    }
    int known = 0;
    for (size_t i = 0; i < sizeof known_outputs / sizeof known_outputs[0]; ++i)
        known |= known_outputs[i].kernel == e->kernel && strcmp(known_outputs[i].output, e->output) == 0;
    if (!known) {
        char what[128];
        snprintf(what, sizeof what, "kernel \"%s\" has no output \"%s\"", kernel_name, e->output);
        return schema_error(ctx, idx, "output", what);
    }
    return ATTEST_OK;
}

static attest_status parse_document(const parse_ctx *ctx, json_t *root, attest_policy *p)
{
    if (!json_is_object(root)) return schema_error(ctx, -1, NULL, "top level must be an object");
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        size_t k = 0;
        while (k < sizeof top_keys / sizeof top_keys[0] && strcmp(top_keys[k], key) != 0) ++k;
        if (k == sizeof top_keys / sizeof top_keys[0]) {
            char what[96];
            snprintf(what, sizeof what, "unknown top-level key \"%.40s\"", key);
            return schema_error(ctx, -1, key, what);
        }
    }
    json_t *schema = json_object_get(root, "schema");
    if (schema == NULL) return schema_error(ctx, -1, "schema", "required field is missing");
    if (!json_is_integer(schema) || json_integer_value(schema) != 1)
        return schema_error(ctx, -1, "schema", "unsupported schema version (this build reads 1)");
    val = json_object_get(root, "name");
    if (val == NULL) return schema_error(ctx, -1, "name", "required field is missing");
    ATTEST_FORWARD(copy_string(ctx, -1, "name", val, p->name, sizeof p->name));
    val = json_object_get(root, "version");
    if (val == NULL) return schema_error(ctx, -1, "version", "required field is missing");
    ATTEST_FORWARD(copy_string(ctx, -1, "version", val, p->version, sizeof p->version));
    val = json_object_get(root, "description");
    if (val != NULL && !json_is_string(val))
        return schema_error(ctx, -1, "description", "must be a string");

    json_t *entries = json_object_get(root, "entries");
    if (entries == NULL) return schema_error(ctx, -1, "entries", "required field is missing");
    if (!json_is_array(entries) || json_array_size(entries) == 0)
        return schema_error(ctx, -1, "entries", "must be a non-empty array");
    size_t n = json_array_size(entries);
    p->entries = calloc(n, sizeof *p->entries);
    ATTEST_RETURN_IF(p->entries == NULL, ATTEST_ERR_OUT_OF_MEMORY, "policy %s: out of memory",
                     ctx->origin);
    for (size_t i = 0; i < n; ++i) {
        policy_entry *e = &p->entries[i];
        ATTEST_FORWARD(parse_entry(ctx, (long)i, json_array_get(entries, i), e));
        for (size_t j = 0; j < i; ++j) {
            if (p->entries[j].kernel == e->kernel && strcmp(p->entries[j].output, e->output) == 0) {
                char what[160];
                snprintf(what, sizeof what, "duplicate entry for (kernel \"%s\", output \"%s\"), first "
                         "at entries[%zu]", attest_kernel_name(e->kernel), e->output, j);
                return schema_error(ctx, (long)i, "output", what);
            }
        }
        p->num_entries = i + 1;
    }
    return ATTEST_OK;
}

attest_status attest_policy_parse(const char *text, size_t len, const char *origin,
                                  attest_policy **out)
{
    ATTEST_RETURN_IF(out == NULL || (text == NULL && len > 0), ATTEST_ERR_INVALID_ARGUMENT,
                     "policy: NULL argument");
    *out = NULL;
    if (origin == NULL) origin = "<memory>";
    ATTEST_RETURN_IF(len > POLICY_MAX_BYTES, ATTEST_ERR_FORMAT,
                     "%s: policy is %zu bytes, over the %u-byte limit", origin, len,
                     POLICY_MAX_BYTES);
    attest_policy *p = calloc(1, sizeof *p);
    char *copy = malloc(len + 1);
    if (p == NULL || copy == NULL) {
        free(p);
        free(copy);
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", origin);
    }
    if (len > 0) memcpy(copy, text, len);
    copy[len] = '\0';
    p->text = copy;
    snprintf(p->origin, sizeof p->origin, "%s", origin);
    attest_sha256_hex(copy, len, p->hash);

    /* jansson 2.14 skips a NUL byte right after a number ("1e-6\0,"), so such a text parses,
     * but the policy's text (kept for provenance, read as a C string) would end at the NUL and no
     * longer match its hash. JSON has no NUL outside strings, and jansson refuses it inside. */
    const char *nul = memchr(copy, '\0', len);
    if (nul != NULL) {
        text_view v = {copy, len};
        int line, col;
        line_col(v, (size_t)(nul - copy), &line, &col);
        attest_status st = attest_fail(ATTEST_ERR_FORMAT, "%s:%d:%d: NUL byte in the policy text",
                                       origin, line, col);
        attest_policy_free(p);
        return st;
    }
    json_error_t jerr;
    json_t *root = json_loadb(copy, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        attest_status st = attest_fail(ATTEST_ERR_FORMAT, "%s:%d:%d: %s", origin, jerr.line,
                                       jerr.column, jerr.text);
        attest_policy_free(p);
        return st;
    }
    parse_ctx ctx = {{copy, len}, p->origin};
    attest_status st = parse_document(&ctx, root, p);
    json_decref(root);
    if (st != ATTEST_OK) {
        attest_policy_free(p);
        return st;
    }
    *out = p;
    return ATTEST_OK;
}

attest_status attest_policy_load(const char *path, attest_policy **out)
{
    ATTEST_RETURN_IF(path == NULL || out == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "policy: NULL argument");
    *out = NULL;
    ATTEST_FORWARD(attest_file_check_regular(path, "policies"));
    FILE *f = fopen(path, "rb");
    ATTEST_RETURN_IF(f == NULL, ATTEST_ERR_IO, "cannot open policy file %s: %s", path,
                     strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    attest_status st = buf ? ATTEST_OK : attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    while (st == ATTEST_OK) {
        if (len == cap) {
            if (cap > POLICY_MAX_BYTES) {
                st = attest_fail(ATTEST_ERR_FORMAT, "%s: policy file over %u bytes", path,
                                 POLICY_MAX_BYTES);
                break;
            }
            char *grown = realloc(buf, cap * 2);
            if (grown == NULL) {
                st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) st = attest_fail(ATTEST_ERR_IO, "cannot read policy file %s", path);
            break;
        }
    }
    fclose(f);
    if (st == ATTEST_OK) st = attest_policy_parse(buf, len, path, out);
    free(buf);
    return st;
}

/* The embedded default is parsed once per process and shared; callers never free it. */
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static attest_policy *default_policy;
static attest_status default_status;
static char default_error[512];

static void parse_default(void)
{
    default_status = attest_policy_parse((const char *)attest_default_policy_json,
                                         (size_t)attest_default_policy_json_size, "<embedded>",
                                         &default_policy);
    if (default_status == ATTEST_OK)
        default_policy->is_static = 1;
    else
        snprintf(default_error, sizeof default_error, "%s", attest_last_error());
}

attest_status attest_policy_default(attest_policy **out)
{
    ATTEST_RETURN_IF(out == NULL, ATTEST_ERR_INVALID_ARGUMENT, "policy: NULL argument");
    *out = NULL;
    ATTEST_RETURN_IF(pthread_once(&default_once, parse_default) != 0, ATTEST_ERR_INTERNAL,
                     "policy: pthread_once failed");
    ATTEST_RETURN_IF(default_status != ATTEST_OK, default_status,
                     "embedded default policy is broken: %s", default_error);
    *out = default_policy;
    return ATTEST_OK;
}

void attest_policy_free(attest_policy *policy)
{
    if (policy == NULL || policy->is_static) return;
    free(policy->entries);
    free(policy->text);
    free(policy);
}

attest_status attest_policy_lookup(const attest_policy *policy, attest_kernel kernel,
                                   const char *output, attest_tolerance *tol)
{
    ATTEST_RETURN_IF(policy == NULL || output == NULL || tol == NULL, ATTEST_ERR_INVALID_ARGUMENT,
                     "policy lookup: NULL argument");
    for (size_t i = 0; i < policy->num_entries; ++i) {
        if (policy->entries[i].kernel == kernel && strcmp(policy->entries[i].output, output) == 0) {
            *tol = policy->entries[i].tol;
            return ATTEST_OK;
        }
    }
    const char *kname = attest_kernel_name(kernel);
    return attest_fail(ATTEST_ERR_NOT_FOUND, "policy \"%s\" (%s) has no entry for kernel %s output %s",
                       policy->name, policy->origin, kname ? kname : "?", output);
}

size_t attest_policy_num_entries(const attest_policy *policy)
{
    return policy ? policy->num_entries : 0;
}

attest_status attest_policy_entry_at(const attest_policy *policy, size_t i, attest_kernel *kernel,
                                     const char **output, attest_tolerance *tol)
{
    ATTEST_RETURN_IF(policy == NULL || i >= policy->num_entries, ATTEST_ERR_NOT_FOUND,
                     "policy entry %zu does not exist", i);
    if (kernel) *kernel = policy->entries[i].kernel;
    if (output) *output = policy->entries[i].output;
    if (tol) *tol = policy->entries[i].tol;
    return ATTEST_OK;
}

const char *attest_policy_name(const attest_policy *policy) { return policy ? policy->name : ""; }
const char *attest_policy_version(const attest_policy *policy)
{
    return policy ? policy->version : "";
}
const char *attest_policy_origin(const attest_policy *policy) { return policy ? policy->origin : ""; }
const char *attest_policy_hash(const attest_policy *policy) { return policy ? policy->hash : ""; }
const char *attest_policy_text(const attest_policy *policy) { return policy ? policy->text : ""; }
