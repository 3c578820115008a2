/* attest (internal): what the external-process bridges share (external.h). The indexer and
 * mla-decode bridge (external.c) and the top-k one (external_topk.c) parse the same spec, start
 * the process the same way, read the same hello and quote its output the same way on a fault;
 * they differ in the case they hand over and the verdicts a fault becomes.
 */
#ifndef ATTEST_EXTERNAL_DEF_H
#define ATTEST_EXTERNAL_DEF_H

#include <jansson.h>
#include <stddef.h>

#include "attest/candidate.h"
#include "attest/status.h"
#include "attest/topk.h"
#include "attest/topk_runner.h"
#include "external_proc.h"

#define EXT_MAX_ARGS 32
#define EXT_OUTPUT_LIMIT ((size_t)1 << 20)  /* trim the output file past 1 MiB */
#define EXT_START_TIMEOUT_S 120.0           /* load: importing torch and triton can be slow */
#define EXT_STOP_GRACE_S 2.0
#define EXT_FAULTS_PRINTED 3                /* faults whose output tail goes to stderr */
#define EXT_START_RETRIES 3                 /* consecutive start failures before giving up */

typedef struct external_def {
    attest_candidate cand;                  /* first: run() finds the definition from it */
    attest_topk_candidate topk;             /* the top-k family's candidate (is_topk) */
    int is_topk;                            /* loaded as a top-k candidate */
    void *topk_state;                       /* external_topk.c's process, made on first use */
    char spec[1024];
    char name[64];
    char description[200];
    char domain[8];                         /* "host" or "cuda", as declared */
    char *argv[EXT_MAX_ARGS + 1];
    char args[1024];                        /* storage of argv's strings */
    char *env[6];
    char env_store[4][4200];
    struct external_def *next;              /* every loaded candidate */
} external_def;

/* Parses the spec, starts the process once, reads its declaration and stops it. `topk` says
 * which family the caller expects: a process declaring the other one is refused with a line
 * that says how to run it. The definition lives for the rest of the process. */
attest_status ext_def_load(const char *spec, int topk, external_def **out) ATTEST_MUST_CHECK;

/* Starts the serving process and checks its hello against the loaded declaration. On failure
 * the message is "WHY: OUTPUT TAIL". */
attest_status ext_def_start(external_def *d, ext_proc *p, double deadline) ATTEST_MUST_CHECK;

/* The line a fault is reported with: `what`, then the last lines of the process's output. The
 * full tail goes to stderr while *printed < EXT_FAULTS_PRINTED; then the process is stopped. */
void ext_def_fault_line(const external_def *d, ext_proc *p, int *printed, const char *what,
                        char *buf, size_t cap);

const char *ext_json_str(json_t *o, const char *key);

/* 1 when reply `o` (parsed from `line`, NULL when it is not JSON) has an "op" and answers run
 * message `sequence`; else 0, with what is wrong in what: "garbage on the control channel:
 * '...'" or "the process answered case 6 to run message 1: '...'" (a server that lost count). */
int ext_reply_answers(const char *line, json_t *o, uint64_t sequence, char *what, size_t cap);

/* FNV-1a: names a tensor table, so the process can reuse its views of an unchanged one. */
uint64_t ext_layout_key(const char *s, size_t n, size_t region_bytes);

typedef struct ext_strbuf {
    char *p;
    size_t used, cap;
    int overflow;
} ext_strbuf;

void ext_sb_add(ext_strbuf *b, const char *fmt, ...) ATTEST_PRINTF(2, 3);

/* Runs an external top-k candidate's o->reruns runs of case c (attest_topk_run's contract;
 * `isolate` does not apply: the process is the isolation). */
attest_status ext_topk_run(const attest_topk_candidate *cand, const attest_topk_case *c,
                           const attest_topk_run_options *o, int32_t *idx, int32_t *phys,
                           attest_topk_run_result *res) ATTEST_MUST_CHECK;

#endif /* ATTEST_EXTERNAL_DEF_H */
