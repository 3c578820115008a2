/* Reading compute-sanitizer's per-process logs (sanitizer_log.h). */
#include "sanitizer_log.h"

#include <stdio.h>
#include <string.h>

#define TOOL_PREFIX "========="

/* The report lines kept in a verdict's message: a headline and where it happened. */
#define MAX_LINES_KEPT 3

int sanitizer_log_is_report(const char *line)
{
    if (strncmp(line, TOOL_PREFIX, strlen(TOOL_PREFIX)) != 0) return 0;
    const char *p = line + strlen(TOOL_PREFIX);
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\0') return 0;
    /* The banner, the per-process summaries and the exit notes say nothing about a run. */
    static const char *const not_reports[] = {"COMPUTE-SANITIZER", "ERROR SUMMARY:",
                                              "LEAK SUMMARY:", "RACECHECK SUMMARY:",
                                              "Target application returned"};
    for (size_t i = 0; i < sizeof not_reports / sizeof not_reports[0]; i++)
        if (strncmp(p, not_reports[i], strlen(not_reports[i])) == 0) return 0;
    return 1;
}

static int expand(const char *pattern, pid_t pid, char *path, size_t cap)
{
    size_t used = 0;
    for (const char *p = pattern; *p; p++) {
        int w;
        if (p[0] == '%' && p[1] == 'p') {
            w = snprintf(path + used, cap - used, "%ld", (long)pid);
            p++;
        } else {
            w = snprintf(path + used, cap - used, "%c", *p);
        }
        if (w < 0 || (size_t)w >= cap - used) return -1;
        used += (size_t)w;
    }
    return 0;
}

int sanitizer_log_read(const char *pattern, pid_t pid, long *offset, char *lines, size_t cap)
{
    char path[512];
    if (cap) lines[0] = '\0';
    if (expand(pattern, pid, path, sizeof path) != 0) return -1;
    FILE *f = fopen(path, "r");
    if (!f) return 0; /* not written yet: nothing reported */
    if (fseek(f, *offset, SEEK_SET) != 0) {
        fclose(f);
        return 0;
    }
    char line[512];
    int found = 0, kept = 0;
    size_t used = 0;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n == 0 || line[n - 1] != '\n') break; /* a line still being written: next time */
        *offset += (long)n;
        line[n - 1] = '\0';
        if (!sanitizer_log_is_report(line)) continue;
        found++;
        if (kept == MAX_LINES_KEPT || used + 3 >= cap) continue;
        const char *text = line + strlen(TOOL_PREFIX);
        while (*text == ' ' || *text == '\t') text++;
        int w = snprintf(lines + used, cap - used, "%s%s", kept ? "; " : "", text);
        if (w > 0) used = (size_t)w + used < cap ? used + (size_t)w : cap - 1;
        kept++;
    }
    fclose(f);
    return found;
}
