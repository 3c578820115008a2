/* attest: the record of one judged case, as the runner produces it, the results store keeps it
 * (one table row) and reports print it: plain data, fixed size, no pointers. Also the outputs a
 * judged case leaves behind (attest_case_outputs) and the poison they start as, which the runner
 * writes and the results store keeps in repro files.
 */
#ifndef ATTEST_RECORD_H
#define ATTEST_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "attest/compare.h"
#include "attest/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATTEST_RECORD_MAX_OUTPUTS 2
#define ATTEST_PARAM_STRING_MAX 384

typedef struct attest_case_record {
    uint64_t case_id;                       /* index within the campaign */
    uint64_t seed;                          /* the case's own seed: replays it alone */
    char params[ATTEST_PARAM_STRING_MAX];   /* canonical parameter string */
    char candidate[64];
    attest_verdict verdict;                 /* the deciding verdict (see runner.h for priority) */
    uint32_t failed_gates;                  /* union of the outputs' failed gates */
    uint32_t integrity_flags;               /* ATTEST_INTEGRITY_* bits seen on any re-run */
    int32_t vacuous;                        /* 1 if any output was vacuous */
    int32_t reruns;                         /* runs performed */
    int32_t num_outputs;
    attest_tensor_metrics outputs[ATTEST_RECORD_MAX_OUTPUTS];
    double gen_seconds, ref_seconds, run_seconds, compare_seconds;
    char message[256];                      /* what happened, one line (crash signal, error) */
} attest_case_record;

/* Integrity findings, recorded as bits so a case that fails several checks shows all of them. */
enum {
    ATTEST_INTEGRITY_CANARY = 1u << 0,         /* a canary around a buffer changed */
    ATTEST_INTEGRITY_INPUT_MODIFIED = 1u << 1, /* an input checksum changed */
    ATTEST_INTEGRITY_NONDETERMINISM = 1u << 2, /* re-runs differ bitwise */
    ATTEST_INTEGRITY_CANDIDATE_ERROR = 1u << 3, /* run() returned nonzero */
    ATTEST_INTEGRITY_SANITIZER = 1u << 4,      /* compute-sanitizer reported an error */
    ATTEST_INTEGRITY_GRAPH = 1u << 5           /* a CUDA-graph replay differed from eager */
};
#define ATTEST_INTEGRITY_COUNT_ 6 /* number of ATTEST_INTEGRITY_* bits */

/* The short name of integrity bit `bit` (0 = canary, 1 = input_modified, 2 = nondeterminism,
 * 3 = candidate_error), as results files, reports and JSON print it; NULL past the last. */
const char *attest_integrity_name(unsigned bit);

/* Output poison: every output element holds this before each run, so an element the candidate
 * never wrote is caught by the comparator's unwritten gate. Signalling NaNs: no arithmetic
 * produces them (any operation on a NaN returns a quiet one). */
#define ATTEST_POISON_F32 0x7FA5A5A5u
#define ATTEST_POISON_BF16 0x7FA5u
#define ATTEST_POISON_BYTE 0xA5u /* outputs of other dtypes */

/* What the runner keeps of a judged case when asked (for repro files and detailed replay). */
typedef struct attest_case_outputs {
    int32_t num_outputs;
    double *reference[ATTEST_RECORD_MAX_OUTPUTS];  /* reference values, malloc'ed */
    double *bound[ATTEST_RECORD_MAX_OUTPUTS];      /* their error bounds (NULL: policy has none) */
    void *candidate[ATTEST_RECORD_MAX_OUTPUTS];    /* candidate bytes of the first run, malloc'ed */
    size_t candidate_bytes[ATTEST_RECORD_MAX_OUTPUTS];
} attest_case_outputs;

void attest_case_outputs_free(attest_case_outputs *o);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_RECORD_H */
