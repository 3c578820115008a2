#include "attest/verdict.h"

static const char *const verdict_names[ATTEST_VERDICT_COUNT_] = {
    [ATTEST_VERDICT_OK] = "OK",
    [ATTEST_VERDICT_MISMATCH] = "MISMATCH",
    [ATTEST_VERDICT_NONDETERMINISTIC] = "NONDETERMINISTIC",
    [ATTEST_VERDICT_OUT_OF_BOUNDS_WRITE] = "OUT_OF_BOUNDS_WRITE",
    [ATTEST_VERDICT_INPUT_MODIFIED] = "INPUT_MODIFIED",
    [ATTEST_VERDICT_CRASH] = "CRASH",
    [ATTEST_VERDICT_TIMEOUT] = "TIMEOUT",
    [ATTEST_VERDICT_UNSUPPORTED] = "UNSUPPORTED",
    [ATTEST_VERDICT_HARNESS_ERROR] = "HARNESS_ERROR",
    [ATTEST_VERDICT_GRAPH_MISMATCH] = "GRAPH_MISMATCH",
    [ATTEST_VERDICT_SANITIZER] = "SANITIZER",
};

const char *attest_verdict_name(attest_verdict v)
{
    if ((unsigned)v >= ATTEST_VERDICT_COUNT_) return "UNKNOWN";
    return verdict_names[v];
}

int attest_verdict_is_failure(attest_verdict v)
{
    return v != ATTEST_VERDICT_OK && v != ATTEST_VERDICT_UNSUPPORTED;
}
