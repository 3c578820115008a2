/* Conventions by name (conventions.h). One table: adding a convention is one row; the value
 * names are the case parameter's (case_fields.c), so a file, a parameter string and a
 * --convention flag spell a value alike. */
#include "attest/conventions.h"

#include <stdio.h>
#include <string.h>

typedef struct convention_row {
    const char *key;
    attest_kernel kernel;
    size_t offset;           /* of the int-sized enum field in attest_conventions */
    const char *attr;        /* the case parameter it sets (its values and their names) */
} convention_row;

#define FIELD(f) offsetof(attest_conventions, f)

static const convention_row rows[] = {
    {"masking", ATTEST_KERNEL_INDEXER, FIELD(masking), "masking"},
    {"relu_nan", ATTEST_KERNEL_INDEXER, FIELD(relu_nan), "relu_nan"},
    {"lse", ATTEST_KERNEL_MLA_DECODE, FIELD(lse_convention), "lse_convention"},
    {"lonely_lse", ATTEST_KERNEL_MLA_DECODE, FIELD(lonely_lse), "lonely_lse"},
    {"minus_one", ATTEST_KERNEL_MLA_DECODE, FIELD(invalid_index), "minus_one"},
};

#define NUM_ROWS (sizeof rows / sizeof rows[0])

static int *field(attest_conventions *c, const convention_row *r)
{
    return (int *)(void *)((char *)c + r->offset);
}

static int field_value(const attest_conventions *c, const convention_row *r)
{
    int v;
    memcpy(&v, (const char *)c + r->offset, sizeof v);
    return v;
}

/* The case parameter a row mirrors (NULL only for a row naming no parameter). */
static const attest_param_field *param_of(const convention_row *r)
{
    size_t n;
    const attest_param_field *f = attest_case_param_fields(r->kernel, &n);
    for (size_t i = 0; i < n; i++)
        if (f[i].type == ATTEST_PARAM_ENUM && !strcmp(f[i].attr, r->attr)) return &f[i];
    return NULL;
}

static int num_values(const convention_row *r)
{
    const attest_param_field *f = param_of(r);
    return f ? f->num_values : 0;
}

static const char *value_name(const convention_row *r, int v)
{
    const char *name = attest_param_value_name(param_of(r), v, 0);
    return name ? name : "unknown";
}

attest_conventions attest_conventions_default(void)
{
    attest_conventions c;
    memset(&c, 0, sizeof c); /* every default is the enum's 0 */
    return c;
}

attest_status attest_convention_set(attest_conventions *c, const char *key, const char *value)
{
    for (size_t i = 0; i < NUM_ROWS; i++) {
        if (strcmp(rows[i].key, key) != 0) continue;
        char known[128] = "";
        size_t used = 0;
        for (int v = 0; v < num_values(&rows[i]); v++) {
            if (strcmp(value_name(&rows[i], v), value) == 0) {
                *field(c, &rows[i]) = v;
                return ATTEST_OK;
            }
            int w = snprintf(known + used, sizeof known - used, "%s%s", v ? ", " : "",
                             value_name(&rows[i], v));
            if (w > 0 && (size_t)w < sizeof known - used) used += (size_t)w;
        }
        return attest_fail(ATTEST_ERR_NOT_FOUND, "convention %s: unknown value '%s' (known: %s)",
                           key, value, known);
    }
    char keys[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < NUM_ROWS; i++) {
        int w = snprintf(keys + used, sizeof keys - used, "%s%s", i ? ", " : "", rows[i].key);
        if (w > 0 && (size_t)w < sizeof keys - used) used += (size_t)w;
    }
    return attest_fail(ATTEST_ERR_NOT_FOUND, "unknown convention '%s' (known: %s)", key, keys);
}

size_t attest_conventions_format(const attest_conventions *c, attest_kernel kernel, char *buf,
                                 size_t cap)
{
    size_t used = 0;
    if (cap) buf[0] = '\0';
    for (size_t i = 0; i < NUM_ROWS; i++) {
        if (rows[i].kernel != kernel) continue;
        const int v = field_value(c, &rows[i]);
        const char *name = value_name(&rows[i], v);
        int w = snprintf(buf + used, cap > used ? cap - used : 0, "%s%s=%s", used ? "," : "",
                         rows[i].key, name);
        if (w < 0) break;
        used += (size_t)w;
        if (used >= cap) return cap ? cap - 1 : 0;
    }
    return used;
}

attest_status attest_conventions_validate(const attest_conventions *c)
{
    for (size_t i = 0; i < NUM_ROWS; i++) {
        const int v = field_value(c, &rows[i]);
        ATTEST_RETURN_IF(v < 0 || v >= num_values(&rows[i]), ATTEST_ERR_FORMAT,
                         "unknown %s convention %d", rows[i].key, v);
    }
    return ATTEST_OK;
}

void attest_conventions_apply(const attest_conventions *c, attest_case *cc)
{
    if (cc->kernel == ATTEST_KERNEL_INDEXER) {
        cc->params.indexer.masking = c->masking;
        cc->params.indexer.relu_nan = c->relu_nan;
    } else {
        cc->params.mla.lse_convention = c->lse_convention;
        cc->params.mla.lonely_lse = c->lonely_lse;
        cc->params.mla.invalid_index = c->invalid_index;
    }
}

attest_conventions attest_conventions_of_case(const attest_case *c)
{
    attest_conventions k = attest_conventions_default();
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        k.masking = c->params.indexer.masking;
        k.relu_nan = c->params.indexer.relu_nan;
    } else {
        k.lse_convention = c->params.mla.lse_convention;
        k.lonely_lse = c->params.mla.lonely_lse;
        k.invalid_index = c->params.mla.invalid_index;
    }
    return k;
}
