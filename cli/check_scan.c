/* attest check: finding fixture files and reading them in a child process (check.h).
 *
 * Why a child: HDF5 1.10 trusts some on-disk structures, so a corrupt fixture can crash the
 * library (casefile_probe.c explains). A CI gate must turn that into a failure that names the
 * file, and still check the other fixtures. attest_casefile_probe_cases reads everything check
 * will read (the listing, every case, every stored output) in one child per file and reports per
 * case, so a single bad group costs only itself. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attest/results.h"
#include "check.h"

/* --- collecting files ------------------------------------------------------------------------ */

static attest_status push_path(check_files *f, const char *path)
{
    if (f->count == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        char **p = realloc(f->paths, cap * sizeof *p);
        if (!p) return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "listing fixtures");
        f->paths = p;
        f->cap = cap;
    }
    if (!(f->paths[f->count] = strdup(path)))
        return attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "listing fixtures");
    f->count++;
    return ATTEST_OK;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The results file of this run and its live repro directory are never fixtures. */
static int excluded(const char *path, const char *exclude)
{
    if (!exclude || !*exclude) return 0;
    char real[PATH_MAX];
    if (!realpath(path, real)) return 0;
    size_t n = strlen(exclude);
    if (!strcmp(real, exclude)) return 1;
    return !strncmp(real, exclude, n) &&
           !strncmp(real + n, ATTEST_RESULTS_REPRO_DIR_SUFFIX "/",
                    strlen(ATTEST_RESULTS_REPRO_DIR_SUFFIX) + 1);
}

static attest_status walk(check_files *f, const char *dir, const char *exclude, int depth)
{
    ATTEST_RETURN_IF(depth > 32, ATTEST_ERR_INVALID_ARGUMENT, "%s: directories nest too deep",
                     dir);
    DIR *d = opendir(dir);
    if (!d) return push_path(f, dir); /* unreadable: fails later as a fixture, naming it */
    attest_status st = ATTEST_OK;
    struct dirent *e;
    while (st == ATTEST_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/",
                         e->d_name);
        if (n < 0 || (size_t)n >= sizeof path) {
            st = attest_fail(ATTEST_ERR_INVALID_ARGUMENT, "%s/%s: path too long", dir, e->d_name);
            break;
        }
        struct stat ls;
        if (lstat(path, &ls) != 0) continue;
        if (S_ISDIR(ls.st_mode)) {
            st = walk(f, path, exclude, depth + 1); /* symlinked directories are not followed */
        } else if (ends_with(e->d_name, ".h5") && !excluded(path, exclude)) {
            /* Not only regular files: a FIFO or device named *.h5 is reported as unreadable
             * (the loader refuses it), not skipped without a word. */
            st = push_path(f, path);
        }
    }
    closedir(d);
    return st;
}

static int cmp_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

attest_status check_files_collect(char *const *args, size_t num_args, const char *exclude,
                                  check_files *out)
{
    memset(out, 0, sizeof *out);
    /* The excluded file may not exist yet: canonicalize its directory. */
    char ex[PATH_MAX] = "";
    if (exclude && *exclude) {
        char dir[PATH_MAX], real[PATH_MAX];
        const char *slash = strrchr(exclude, '/');
        const char *base = slash ? slash + 1 : exclude;
        size_t dlen = slash ? (size_t)(slash - exclude) : 0;
        if (slash && dlen == 0) dlen = 1; /* "/name" */
        snprintf(dir, sizeof dir, "%.*s", (int)dlen, slash ? exclude : ".");
        if (!slash) snprintf(dir, sizeof dir, ".");
        if (realpath(dir, real)) {
            int n = snprintf(ex, sizeof ex, "%s%s%s", real, ends_with(real, "/") ? "" : "/", base);
            if (n < 0 || (size_t)n >= sizeof ex) ex[0] = '\0'; /* too long to be a real path */
        }
    }
    attest_status st = ATTEST_OK;
    for (size_t i = 0; i < num_args && st == ATTEST_OK; i++) {
        struct stat s;
        if (stat(args[i], &s) == 0 && S_ISDIR(s.st_mode)) {
            size_t first = out->count;
            st = walk(out, args[i], ex, 0);
            if (st == ATTEST_OK && out->count > first)
                qsort(out->paths + first, out->count - first, sizeof *out->paths, cmp_paths);
        } else {
            st = push_path(out, args[i]);
        }
    }
    if (st != ATTEST_OK) check_files_free(out);
    return st;
}

void check_files_free(check_files *f)
{
    for (size_t i = 0; i < f->count; i++) free(f->paths[i]);
    free(f->paths);
    memset(f, 0, sizeof *f);
}

/* --- reading one file in a child ----------------------------------------------------------- */

static attest_status load_expected(const char *path, const char *group, const attest_case *c,
                                   int32_t *found, void *user)
{
    (void)user;
    check_expected e;
    attest_status st = check_expected_load(path, group, c, &e);
    *found = e.count;
    if (st == ATTEST_OK) check_expected_free(&e);
    return st;
}

attest_status check_scan_file(const char *path, int with_expected, check_scan *out)
{
    return attest_casefile_probe_cases(path, with_expected ? load_expected : NULL, NULL, out);
}
