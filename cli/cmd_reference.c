/* attest reference: computes the CPU reference outputs of the cases in a case file and writes
 * them, as float64, to an output file that mirrors the case file's groups. Policy-free: no
 * tolerance is applied here, the file records only what was computed and how. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/build_info.h"
#include "attest/case.h"
#include "attest/casefile.h"
#include "attest/reference.h"
#include "attest/files.h"
#include "commands.h"

#define VERB "reference"

typedef enum ref_modes { MODES_AUTO, MODES_SIMULATED, MODES_TRUE, MODES_BOTH } ref_modes;

typedef struct ref_opts {
    const char *input;
    const char *group;
    const char *out;
    ref_modes modes;
    attest_indexer_order order;
    int order_given; /* --order: else each case's relu_nan picks it, as the judge's reference */
    int force;
} ref_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: attest reference CASE.h5 [--group G] --out OUT.h5 [--force] [--mode M] [--order O]\n"
            "\n"
            "Computes the CPU reference outputs of every case in CASE.h5 (or of group G) and\n"
            "writes them to OUT.h5 as float64 datasets, mirroring the case file's groups:\n"
            "  indexer:    logits [b*next_n, max_len] (+ topk_indices int32 when the case has topk)\n"
            "  mla-decode: out [b, s_q, h_q, d_v], lse [b, s_q, h_q] (natural log)\n"
            "True-mode outputs (on the unquantized truth tensors) go under <group>/true/.\n"
            "\n"
            "options:\n"
            "  --group G     only the case in group G (default: every case in the file)\n"
            "  --out OUT.h5  output file (required; written whole or not at all)\n"
            "  --force       replace OUT.h5 when it exists (an HDF5 file, never the input)\n"
            "  --max-case-mb M  refuse cases declaring more than M MiB of tensors (default 4096)\n"
            "  --mode M      simulated: on the cache bytes as stored; true: on the truth tensors;\n"
            "                both; auto (default): simulated, plus true when the file holds truth\n"
            "  --order O     indexer order of operations: kernel (kscale applied last, as\n"
            "                DeepGEMM's kernel) or readme (relu(dot(q, k*kscale))); default: the\n"
            "                case's relu_nan (propagates: readme, else kernel), as attest run\n"
            "\n"
            "The case-file schema is docs/case-format.md. Exit status: 0 written, 2 usage or\n"
            "input error (one line on stderr naming the file and field).\n");
}

/* Reads option `name` at argv[*i] (attest_cli_option_value); *err receives the exit status
 * when its value is missing. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **value, int *err)
{
    const int found = attest_cli_option_value(argc, argv, i, name, value);
    if (found < 0) *err = attest_cli_usage_error(VERB, "%s: missing value", name);
    return found != 0;
}

static int parse(int argc, char **argv, ref_opts *o, int *done)
{
    *done = 0;
    memset(o, 0, sizeof *o);
    o->modes = MODES_AUTO;
    o->order = ATTEST_INDEXER_ORDER_KERNEL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int err = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            *done = 1;
            return ATTEST_EXIT_OK;
        }
        if (!strcmp(argv[i], "--force")) {
            o->force = 1;
        } else if (opt_value(argc, argv, &i, "--max-case-mb", &v, &err)) {
            if (err) return err;
            int rc = attest_cli_max_case_mb(VERB, v);
            if (rc >= 0) return rc;
        } else if (opt_value(argc, argv, &i, "--group", &v, &err)) {
            if (err) return err;
            o->group = v;
        } else if (opt_value(argc, argv, &i, "--out", &v, &err)) {
            if (err) return err;
            o->out = v;
        } else if (opt_value(argc, argv, &i, "--mode", &v, &err)) {
            if (err) return err;
            if (!strcmp(v, "auto")) o->modes = MODES_AUTO;
            else if (!strcmp(v, "simulated")) o->modes = MODES_SIMULATED;
            else if (!strcmp(v, "true")) o->modes = MODES_TRUE;
            else if (!strcmp(v, "both")) o->modes = MODES_BOTH;
            else
                return attest_cli_usage_error(
                    VERB, "--mode: unknown mode '%s' (simulated, true, both or auto)", v);
        } else if (opt_value(argc, argv, &i, "--order", &v, &err)) {
            if (err) return err;
            o->order_given = 1;
            if (!strcmp(v, "kernel")) o->order = ATTEST_INDEXER_ORDER_KERNEL;
            else if (!strcmp(v, "readme")) o->order = ATTEST_INDEXER_ORDER_README;
            else
                return attest_cli_usage_error(VERB, "--order: unknown order '%s' (kernel or readme)",
                                              v);
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return attest_cli_usage_error(VERB, "%s: unknown option (try --help)", argv[i]);
        } else if (!o->input) {
            o->input = argv[i];
        } else {
            return attest_cli_usage_error(VERB, "%s: only one case file may be given", argv[i]);
        }
    }
    if (!o->input) return attest_cli_usage_error(VERB, "CASE.h5: missing (try --help)");
    if (!o->out) return attest_cli_usage_error(VERB, "--out: required (the output file)");
    const char *inputs[] = {o->input};
    int rc = attest_cli_check_output(VERB, o->out, ATTEST_OUTPUT_HDF5, o->force, inputs, 1);
    if (rc >= 0) return rc;
    return ATTEST_EXIT_OK;
}

/* The groups to process, collected by attest_casefile_list_groups. */
typedef struct group_list {
    char **names;
    size_t count, cap;
} group_list;

static attest_status collect(const char *group, attest_kernel kernel, void *user)
{
    (void)kernel;
    group_list *l = user;
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **n = realloc(l->names, cap * sizeof *n);
        if (!n) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "listing cases");
        l->names = n;
        l->cap = cap;
    }
    l->names[l->count] = strdup(group);
    if (!l->names[l->count]) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "listing cases");
    l->count++;
    return ATTEST_OK;
}

static void group_list_free(group_list *l)
{
    for (size_t i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
}

static int has_truth(const attest_case *c)
{
    return attest_case_tensor_const(c, c->kernel == ATTEST_KERNEL_INDEXER ? "k_true" : "kv_true") !=
           NULL;
}

static attest_casefile_output f64_output(const char *name, const attest_tensor *shape_of,
                                         const double *data)
{
    attest_casefile_output o = attest_casefile_output_of(shape_of);
    o.name = name;
    o.dtype = ATTEST_DTYPE_F64;
    o.data = data;
    return o;
}

static attest_status write_indexer(attest_tensorfile *f, const char *group, const attest_case *c,
                                   attest_ref_mode mode, attest_indexer_order order)
{
    const attest_tensor *lt = attest_case_tensor_const(c, "logits");
    const attest_tensor *ct = attest_case_tensor_const(c, "context_lens");
    if (!lt || !ct) return attest_fail(ATTEST_ERR_INTERNAL, "indexer case without logits");
    const attest_indexer_params *p = &c->params.indexer;
    size_t n = attest_tensor_count(lt);
    double *logits = malloc(n * sizeof *logits);
    int32_t *topk = NULL;
    if (!logits) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "logits: %zu values", n);
    attest_status st = attest_ref_indexer_logits(c, mode, order, logits);
    attest_casefile_output o = f64_output("logits", lt, logits);
    if (st == ATTEST_OK) st = attest_tensorfile_write(f, group, &o);
    if (st == ATTEST_OK && p->topk > 0) {
        int64_t rows = lt->shape[0], width = lt->shape[1];
        topk = malloc((size_t)rows * (size_t)p->topk * sizeof *topk);
        if (!topk) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "topk_indices");
        for (int64_t r = 0; r < rows && st == ATTEST_OK; r++) {
            int32_t len = attest_indexer_row_length(p, ct->data, (int32_t)r);
            st = attest_ref_topk_row_skip_neg_inf(logits + r * width, len, p->topk, p->topk_rule,
                                     topk + r * p->topk);
        }
        attest_casefile_output t = {"topk_indices", ATTEST_DTYPE_I32, 2, {rows, p->topk, 0, 0}, topk};
        if (st == ATTEST_OK) st = attest_tensorfile_write(f, group, &t);
    }
    free(topk);
    free(logits);
    return st;
}

static attest_status write_mla(attest_tensorfile *f, const char *group, const attest_case *c,
                               attest_ref_mode mode)
{
    const attest_tensor *ot = attest_case_tensor_const(c, "out_bf16");
    const attest_tensor *lt = attest_case_tensor_const(c, "lse");
    if (!ot || !lt) return attest_fail(ATTEST_ERR_INTERNAL, "mla case without out_bf16 / lse");
    double *out = malloc(attest_tensor_count(ot) * sizeof *out);
    double *lse = malloc(attest_tensor_count(lt) * sizeof *lse);
    attest_status st = ATTEST_OK;
    if (!out || !lse) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "out / lse buffers");
    if (st == ATTEST_OK) st = attest_ref_mla_decode(c, mode, out, lse);
    attest_casefile_output o = f64_output("out", ot, out), l = f64_output("lse", lt, lse);
    if (st == ATTEST_OK) st = attest_tensorfile_write(f, group, &o);
    if (st == ATTEST_OK) st = attest_tensorfile_write(f, group, &l);
    free(out);
    free(lse);
    return st;
}

static attest_status write_mode(attest_tensorfile *f, const char *group, const attest_case *c,
                                attest_ref_mode mode, attest_indexer_order order)
{
    const char *mode_name = mode == ATTEST_REF_TRUE ? "true" : "simulated";
    ATTEST_FORWARD(attest_tensorfile_set_string(f, group, "reference_mode", mode_name));
    if (c->kernel == ATTEST_KERNEL_INDEXER) {
        ATTEST_FORWARD(attest_tensorfile_set_string(
            f, group, "indexer_order", order == ATTEST_INDEXER_ORDER_README ? "readme" : "kernel"));
        return write_indexer(f, group, c, mode, order);
    }
    return write_mla(f, group, c, mode);
}

/* Computes and writes one case's outputs; returns its modes for the summary line. */
static attest_status process(attest_tensorfile *f, const ref_opts *o, const char *group,
                             char *summary, size_t cap)
{
    attest_case c;
    ATTEST_FORWARD(attest_casefile_load(o->input, group, &c));
    int truth = has_truth(&c);
    int want_sim = o->modes != MODES_TRUE;
    int want_true = o->modes == MODES_TRUE || o->modes == MODES_BOTH ||
                    (o->modes == MODES_AUTO && truth);
    attest_status st = ATTEST_OK;
    if (want_true && !truth)
        st = attest_fail(ATTEST_ERR_FORMAT,
                         "%s: %s%s%s: required dataset is missing for --mode true/both", o->input,
                         strcmp(group, "/") ? group : "", strcmp(group, "/") ? "/" : "",
                         c.kernel == ATTEST_KERNEL_INDEXER ? "k_true" : "kv_true");
    /* A file's reference is the one its cases are judged against unless --order says. */
    const attest_indexer_order order =
        o->order_given || c.kernel != ATTEST_KERNEL_INDEXER ? o->order : attest_indexer_order_of(&c);
    char params[1024] = "";
    if (st == ATTEST_OK) st = attest_case_param_string(&c, params, sizeof params);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, group, "kind", attest_kernel_name(c.kernel));
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, group, "params", params);
    if (st == ATTEST_OK && want_sim) st = write_mode(f, group, &c, ATTEST_REF_SIMULATED, order);
    if (st == ATTEST_OK && want_true) {
        char tg[600];
        snprintf(tg, sizeof tg, "%s%strue", strcmp(group, "/") ? group : "",
                 strcmp(group, "/") ? "/" : "");
        st = write_mode(f, tg, &c, ATTEST_REF_TRUE, order);
    }
    if (st == ATTEST_OK)
        snprintf(summary, cap, "%s: %s, %s%s%s", group, attest_kernel_name(c.kernel),
                 want_sim ? "simulated" : "", want_sim && want_true ? " + " : "",
                 want_true ? "true" : "");
    attest_case_free(&c);
    return st;
}

static const char *modes_name(ref_modes m)
{
    switch (m) {
    case MODES_AUTO: return "auto";
    case MODES_SIMULATED: return "simulated";
    case MODES_TRUE: return "true";
    case MODES_BOTH: return "both";
    }
    return "auto";
}

int attest_cmd_reference(int argc, char **argv)
{
    ref_opts o;
    int done;
    int rc = parse(argc, argv, &o, &done);
    if (done || rc != ATTEST_EXIT_OK) return rc;

    group_list groups = {0};
    /* User files first go through a child process: corrupt HDF5 metadata can crash libhdf5. */
    attest_status st = attest_casefile_probe(o.input, o.group);
    if (st == ATTEST_OK && o.group)
        st = collect(o.group[0] ? o.group : "/", ATTEST_KERNEL_INDEXER, &groups);
    else if (st == ATTEST_OK)
        st = attest_casefile_list_groups(o.input, collect, &groups);
    /* Written under a temporary sibling and renamed: a failed run leaves what was there. */
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", o.out, (long)getpid());
    attest_tensorfile *f = NULL;
    if (st == ATTEST_OK) st = attest_tensorfile_create(tmp, &f);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "attest_version", ATTEST_VERSION);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "attest_commit", ATTEST_GIT_COMMIT);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "source", o.input);
    if (st == ATTEST_OK) st = attest_tensorfile_set_string(f, NULL, "mode", modes_name(o.modes));
    char **lines = calloc(groups.count ? groups.count : 1, sizeof *lines);
    if (!lines && st == ATTEST_OK) st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "summary");
    for (size_t i = 0; i < groups.count && st == ATTEST_OK; i++) {
        char summary[700];
        st = process(f, &o, groups.names[i], summary, sizeof summary);
        if (st == ATTEST_OK && !(lines[i] = strdup(summary)))
            st = attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "summary");
    }
    if (f) {
        attest_status cst = attest_tensorfile_close(f);
        if (st == ATTEST_OK) st = cst;
        if (st == ATTEST_OK && rename(tmp, o.out) != 0)
            st = attest_fail(ATTEST_ERR_IO, "%s: cannot rename %s into place: %s", o.out, tmp,
                             strerror(errno));
        /* A partial output file would look like a complete one. */
        if (st != ATTEST_OK) (void)remove(tmp);
    }
    if (st == ATTEST_OK) {
        for (size_t i = 0; i < groups.count; i++) printf("%s\n", lines[i]);
        printf("attest reference: wrote %zu case%s to %s\n", groups.count,
               groups.count == 1 ? "" : "s", o.out);
    }
    if (lines)
        for (size_t i = 0; i < groups.count; i++) free(lines[i]);
    free(lines);
    group_list_free(&groups);
    if (st != ATTEST_OK) return attest_cli_usage_error(VERB, "%s", attest_last_error());
    return ATTEST_EXIT_OK;
}
