/* attest: what a case says about a candidate. Verdicts are results, not errors (status.h).
 * Values are pinned: they are stored in result files. Add new ones at the end.
 */
#ifndef ATTEST_VERDICT_H
#define ATTEST_VERDICT_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attest_verdict {
    ATTEST_VERDICT_OK = 0,
    ATTEST_VERDICT_MISMATCH = 1,           /* outputs disagree with the reference (see gates) */
    ATTEST_VERDICT_NONDETERMINISTIC = 2,   /* re-runs on identical inputs differ bitwise */
    ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE = 3,/* a canary around a buffer changed */
    ATTEST_VERDICT_INPUT_MODIFIED = 4,     /* an input buffer's checksum changed */
    ATTEST_VERDICT_CRASH = 5,              /* the worker died (signal, abort, CUDA fault) */
    ATTEST_VERDICT_TIMEOUT = 6,            /* the worker exceeded the per-case time limit */
    ATTEST_VERDICT_UNSUPPORTED = 7,        /* the candidate declined the case */
    ATTEST_VERDICT_HARNESS_ERROR = 8,      /* attest could not judge the case (see message) */
    ATTEST_VERDICT_GRAPH_MISMATCH = 9,     /* a CUDA-graph replay differs from the eager run */
    ATTEST_VERDICT_SANITIZER = 10,         /* compute-sanitizer reported an error in the run */
    ATTEST_VERDICT_COUNT_
} attest_verdict;

/* Returns the upper-case name ("OK", "MISMATCH", ...) or "UNKNOWN". */
const char *attest_verdict_name(attest_verdict v);

/* Returns 1 for verdicts that fail a campaign (everything but OK and UNSUPPORTED). */
int attest_verdict_is_failure(attest_verdict v);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_VERDICT_H */
