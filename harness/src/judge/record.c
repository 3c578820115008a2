/* The names and buffers of a judged case's record (record.h). */
#include "attest/record.h"

#include <stdlib.h>
#include <string.h>

static const char *const integrity_names[ATTEST_INTEGRITY_COUNT_] = {
    "canary", "input_modified", "nondeterminism", "candidate_error", "sanitizer", "graph"};

const char *attest_integrity_name(unsigned bit)
{
    return bit < ATTEST_INTEGRITY_COUNT_ ? integrity_names[bit] : NULL;
}

void attest_case_outputs_free(attest_case_outputs *o)
{
    if (o == NULL) return;
    for (int i = 0; i < ATTEST_RECORD_MAX_OUTPUTS; i++) {
        free(o->reference[i]);
        free(o->bound[i]);
        free(o->candidate[i]);
    }
    memset(o, 0, sizeof *o);
}
