/* attest: the monotonic clock (clock.h). */
#include "attest/clock.h"

#include <time.h>

double attest_monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
