/* Tests of attest_results_set_device: the device worker's description lands in the provenance
 * of the closed results file, split into device and CUDA versions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_ok.h"

#include "attest/results.h"

static void written_device_is_read_back(void **state)
{
    (void)state;
    char dir[] = "/tmp/attest-results-device-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/r.h5", dir);
    attest_results_provenance prov;
    attest_results_provenance_init(&prov);
    attest_results_writer *w = NULL;
    assert_ok(attest_results_create(path, &prov, NULL, &w));
    attest_results_set_device(w, "");   /* a host candidate's worker: nothing changes */
    attest_results_set_device(w, "NVIDIA H200 (sm_90, 140 GiB), CUDA runtime 13.0, driver 13.0");
    assert_ok(attest_results_close(w, ATTEST_RESULTS_COMPLETE));
    attest_results_reader *r = NULL;
    assert_ok(attest_results_open_read(path, &r));
    const attest_results_provenance *p = attest_results_provenance_of(r);
    assert_string_equal(p->device, "NVIDIA H200 (sm_90, 140 GiB)");
    assert_string_equal(p->cuda_version, "runtime 13.0, driver 13.0");
    attest_results_close_read(r);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(written_device_is_read_back)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
