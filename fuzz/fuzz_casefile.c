/* Fuzz target: the case-file loader on arbitrary bytes. Whatever the bytes, loading must end in
 * ATTEST_OK with a case that passes attest_case_check_inputs, or in a clean error; never a crash,
 * a leak or an out-of-bounds read. The bytes go through a real file because users hand attest
 * paths, and HDF5's file driver is part of what is under test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/casefile.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/attest-fuzz-casefile-%d.h5", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size > 0 && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    attest_case c;
    memset(&c, 0, sizeof c);
    if (attest_casefile_load(path, NULL, &c) == ATTEST_OK) {
        if (attest_case_check_inputs(&c) != ATTEST_OK) abort(); /* load promised a valid case */
        attest_case_free(&c);
    }
    unlink(path);
    return 0;
}
