/* Option parsing stays getopt_long: each verb's options are one table (the generator's entries
 * shared through gen_options.c), its behaviour is what users of other GNU tools expect, and it is
 * in libc, so the executable needs no argument-parsing library. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attest/casefile.h"
#include "attest/files.h"
#include "attest/report.h"
#include "attest/results.h"
#include "commands.h"

int attest_cli_interactive(void)
{
    const char *ci = getenv("CI");
    return isatty(STDERR_FILENO) && (ci == NULL || *ci == '\0');
}

/* The last prefix attest_cli_getopt refused, and the option it would have been taken for. */
static struct {
    const char *word;
    const char *meant;
} refused_prefix;

int attest_cli_getopt(int argc, char **argv, const char *optstring, const struct option *options)
{
    refused_prefix.word = NULL;
    int index = -1;
    const int ch = getopt_long(argc, argv, optstring, options, &index);
    if (ch == -1 || ch == '?' || ch == ':' || index < 0) return ch;
    /* The word getopt_long just took: the option's own, or the one before its separate value. */
    const char *word = optarg != NULL && optind >= 2 && optarg == argv[optind - 1]
                           ? argv[optind - 2]
                           : argv[optind - 1];
    const char *name = options[index].name;
    const size_t n = strlen(name);
    if (strncmp(word, "--", 2) == 0 && strncmp(word + 2, name, n) == 0 &&
        (word[2 + n] == '\0' || word[2 + n] == '='))
        return ch;
    refused_prefix.word = word;
    refused_prefix.meant = name;
    return '?';
}

int attest_cli_getopt_error(const char *verb, int ch, char **argv)
{
    if (refused_prefix.word != NULL)
        return attest_cli_usage_error(verb, "unknown option '%s' (options are not abbreviated: "
                                            "--%s? attest %s --help)",
                                      refused_prefix.word, refused_prefix.meant, verb);
    if (ch == ':') return attest_cli_usage_error(verb, "option %s needs a value", argv[optind - 1]);
    return attest_cli_usage_error(verb, "unknown option '%s' (attest %s --help)", argv[optind - 1],
                                  verb);
}

int attest_cli_option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0') return 0;
    if (*i + 1 >= argc) return -1;
    *value = argv[++*i];
    return 1;
}

int attest_cli_check_output(const char *verb, const char *path, int kind, int force,
                            const char *const *inputs, size_t num_inputs)
{
    if (attest_output_check(path, (attest_output_kind)kind, force, inputs, num_inputs) !=
        ATTEST_OK)
        return attest_cli_usage_error(verb, "%s", attest_last_error());
    return -1;
}

int attest_cli_check_reports(const char *verb, const char *out, const char *junit,
                             const char *json, const char *const *inputs, size_t num_inputs)
{
    const char *const reports[2] = {junit, json};
    const int kinds[2] = {ATTEST_OUTPUT_JUNIT, ATTEST_OUTPUT_JSON};
    const char *const flags[2] = {"--junit", "--json"};
    for (int k = 0; k < 2; k++) {
        if (reports[k] == NULL) continue;
        const char *other = reports[1 - k];
        if ((out && !strcmp(reports[k], out)) || (other && !strcmp(reports[k], other)))
            return attest_cli_usage_error(verb, "%s %s: names another output of this command",
                                          flags[k], reports[k]);
        /* The other outputs count as inputs: an existing results file is not a report. */
        const char **all = calloc(num_inputs + 2, sizeof *all);
        if (all == NULL) return attest_cli_usage_error(verb, "out of memory");
        for (size_t i = 0; i < num_inputs; i++) all[i] = inputs[i];
        all[num_inputs] = out;
        all[num_inputs + 1] = other;
        const int rc = attest_cli_check_output(verb, reports[k], kinds[k], 0, all, num_inputs + 2);
        free(all);
        if (rc >= 0) return rc;
    }
    return -1;
}

/* Whether a name is used: the path itself or one of its siblings (PATH + suffix) exists. */
static int name_used(const char *path, const char *const *siblings)
{
    struct stat sb;
    if (lstat(path, &sb) == 0 || errno != ENOENT) return 1;
    for (size_t i = 0; siblings && siblings[i]; i++) {
        char sib[4096];
        snprintf(sib, sizeof sib, "%s%s", path, siblings[i]);
        if (lstat(sib, &sb) == 0 || errno != ENOENT) return 1;
    }
    return 0;
}

int attest_cli_free_path(char *path, size_t cap, const char *const *siblings)
{
    if (!name_used(path, siblings)) return 0;
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    const size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
    char *numbered = malloc(cap);
    if (numbered == NULL) {
        attest_fail(ATTEST_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        return -1;
    }
    for (int n = 2; n <= 1000; n++) {
        const int w = snprintf(numbered, cap, "%.*s-%d%s", (int)stem, path, n, path + stem);
        if (w < 0 || (size_t)w >= cap) break;
        if (!name_used(numbered, siblings)) {
            memcpy(path, numbered, (size_t)w + 1);
            free(numbered);
            return 0;
        }
    }
    free(numbered);
    attest_fail(ATTEST_ERR_IO, "%s: no free name beside it (up to -1000)", path);
    return -1;
}

int attest_cli_result_line(uint64_t failed, uint64_t judged, uint64_t unreadable,
                           const char *unit)
{
    if (failed || unreadable) {
        printf("result: FAIL (%" PRIu64 " of %" PRIu64 " %ss failed", failed, judged, unit);
        if (unreadable) printf(", %" PRIu64 " unreadable", unreadable);
        printf(")\n");
        return ATTEST_EXIT_FAILED;
    }
    if (judged == 0) {
        printf("result: EMPTY (no %s was judged)\n", unit);
        return ATTEST_EXIT_FAILED;
    }
    printf("result: PASS (%" PRIu64 " %ss)\n", judged, unit);
    return ATTEST_EXIT_OK;
}

const char *attest_cli_default_results(const char *name, char *buf, size_t cap)
{
    static const char *const siblings[] = {".rows", ATTEST_RESULTS_REPRO_DIR_SUFFIX, NULL};
    snprintf(buf, cap, "%s", name);
    if (attest_cli_free_path(buf, cap, siblings) != 0) {
        attest_clear_error();
        snprintf(buf, cap, "%s", name); /* all taken: the output check says what is there */
    }
    return buf;
}

void attest_cli_print_case_detail(const attest_case_record *rec, const attest_case *c,
                                  const attest_policy *policy, const attest_case_outputs *kept)
{
    attest_tolerance tol[ATTEST_RECORD_MAX_OUTPUTS];
    int have_tol = 1;
    for (int32_t k = 0; k < rec->num_outputs && k < ATTEST_RECORD_MAX_OUTPUTS; k++)
        if (attest_policy_lookup(policy, c->kernel, rec->outputs[k].output, &tol[k]) != ATTEST_OK)
            have_tol = 0;
    attest_clear_error();
    attest_report_case_detail_outputs(stdout, rec, c, have_tol ? tol : NULL, kept);
}

int attest_cli_output_dir(const char *verb, const char *option, const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        if (errno != ENOENT || mkdir(dir, 0777) != 0)
            return attest_cli_usage_error(verb, "--%s %s: cannot make the folder: %s", option,
                                          dir, strerror(errno));
        if (stat(dir, &sb) != 0)
            return attest_cli_usage_error(verb, "--%s %s: %s", option, dir, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode))
        return attest_cli_usage_error(verb, "--%s %s: exists and is not a folder", option, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return attest_cli_usage_error(verb, "--%s %s: not writable: %s", option, dir,
                                      strerror(errno));
    return -1;
}

int attest_cli_max_case_mb(const char *verb, const char *value)
{
    uint64_t mb = 0;
    if (attest_cli_parse_u64(value, &mb) || mb == 0 || mb > (1ull << 24))
        return attest_cli_bad_value(verb, "max-case-mb", value);
    attest_casefile_set_max_bytes((unsigned long long)mb << 20);
    return -1;
}
