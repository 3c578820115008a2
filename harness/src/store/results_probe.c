/* attest results store: the reader run first in a child process (results.h,
 * attest_results_probe), as case files are (casefile_probe.c): HDF5 1.10 crashes or loops on
 * some corrupt metadata before attest can validate anything. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "attest/results.h"
#include "child_probe.h"

typedef struct probe_report {
    int32_t status;
    char message[512];
} probe_report;

typedef struct probe_target {
    const char *path;
    int all_rows;
} probe_target;

static attest_status read_everything(const probe_target *t)
{
    attest_results_reader *r = NULL;
    ATTEST_FORWARD(attest_results_open_read(t->path, &r));
    attest_status st = ATTEST_OK;
    if (t->all_rows) {
        uint64_t counts[ATTEST_VERDICT_COUNT_], unknown = 0;
        st = attest_results_count_verdicts(r, counts, &unknown);
    }
    attest_results_close_read(r);
    return st;
}

static int probe_child(int fd, void *arg)
{
    probe_report rep;
    memset(&rep, 0, sizeof rep);
    rep.status = (int32_t)read_everything(arg);
    snprintf(rep.message, sizeof rep.message, "%s", rep.status ? attest_last_error() : "");
    return child_probe_write_all(fd, &rep, sizeof rep) == 0 ? 0 : 1;
}

attest_status attest_results_probe(const char *path, int all_rows)
{
    ATTEST_RETURN_IF(!path, ATTEST_ERR_INVALID_ARGUMENT, "attest_results_probe: NULL path");
    probe_target t = {path, all_rows};
    child_probe p;
    ATTEST_FORWARD(child_probe_spawn(path, "probe the file", probe_child, &t, &p));
    probe_report rep;
    size_t got = child_probe_read(&p, &rep, sizeof rep);
    int wstatus = child_probe_finish(&p);
    return child_probe_file_status(path, &p, wstatus, got == sizeof rep, rep.status, rep.message,
                                   sizeof rep.message);
}
