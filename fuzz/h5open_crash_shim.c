/* A stand-in for HDF5's H5Fopen that crashes, preloaded by the ctest
 * fuzz_replay_results_attest_crash: a crash whose innermost frame is not libhdf5's, as one in
 * attest's own reader would be. fuzz_results must report it as a finding, not skip it as
 * HDF5's. Not linked into anything. */
#include <signal.h>
#include <stdint.h>

__attribute__((visibility("default"))) int64_t H5Fopen(const char *name, unsigned flags,
                                                       int64_t fapl);
int64_t H5Fopen(const char *name, unsigned flags, int64_t fapl)
{
    (void)name;
    (void)flags;
    (void)fapl;
    raise(SIGSEGV);
    return -1;
}
