/* attest: the one clock every timing in attest reads (phase times, deadlines, rates). */
#ifndef ATTEST_CLOCK_H
#define ATTEST_CLOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds on CLOCK_MONOTONIC: only differences mean anything; never steps with the wall clock. */
double attest_monotonic_seconds(void);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_CLOCK_H */
