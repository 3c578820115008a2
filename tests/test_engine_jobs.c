/* Tests of the sharded engine's GPU placement: which device a `--jobs` worker is given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "attest/campaign.h"

/* Returns the value worker w gets, or "(none)". */
static const char *gpu_of(const char *visible, unsigned driver, uint32_t w)
{
    static char buf[64];
    if (!attest_engine_worker_gpu(visible, driver, w, buf, sizeof buf)) return "(none)";
    return buf;
}

/* No device anywhere: nothing is set, so CPU workers stay as they are. */
static void test_no_device(void **state)
{
    (void)state;
    assert_string_equal(gpu_of(NULL, 0, 0), "(none)");
    assert_string_equal(gpu_of(NULL, 0, 5), "(none)");
    assert_string_equal(gpu_of("", 8, 3), "(none)"); /* "" hides every device */
    assert_string_equal(gpu_of(",,", 8, 3), "(none)");
}

/* Unset: round-robin over the devices the driver lists, for any number of them. */
static void test_driver_count(void **state)
{
    (void)state;
    assert_string_equal(gpu_of(NULL, 1, 0), "0");
    assert_string_equal(gpu_of(NULL, 1, 7), "0");
    for (uint32_t w = 0; w < 40; w++) {
        char want[16];
        snprintf(want, sizeof want, "%u", w % 16);
        assert_string_equal(gpu_of(NULL, 16, w), want);
    }
    assert_string_equal(gpu_of(NULL, 3, 4), "1");
}

/* Set: round-robin over its entries as written (indices or UUIDs); empty entries skipped. */
static void test_visible_list(void **state)
{
    (void)state;
    assert_string_equal(gpu_of("3", 8, 0), "3");
    assert_string_equal(gpu_of("3", 8, 9), "3");
    assert_string_equal(gpu_of("2,5,7", 0, 0), "2");
    assert_string_equal(gpu_of("2,5,7", 0, 1), "5");
    assert_string_equal(gpu_of("2,5,7", 0, 2), "7");
    assert_string_equal(gpu_of("2,5,7", 0, 3), "2");
    assert_string_equal(gpu_of("GPU-aa11,GPU-bb22", 2, 1), "GPU-bb22");
    assert_string_equal(gpu_of("4,,6,", 8, 1), "6");
    char small[3];
    assert_int_equal(attest_engine_worker_gpu("GPU-aa11", 1, 0, small, sizeof small), 0);
}

/* How many devices the workers are spread over: the list's entries, else the driver's count. */
static void test_visible_count(void **state)
{
    (void)state;
    assert_int_equal(attest_engine_visible_gpus(NULL, 0), 0);
    assert_int_equal(attest_engine_visible_gpus(NULL, 8), 8);
    assert_int_equal(attest_engine_visible_gpus("", 8), 0);
    assert_int_equal(attest_engine_visible_gpus("3", 8), 1);
    assert_int_equal(attest_engine_visible_gpus("4,,6,", 8), 2);
    assert_int_equal(attest_engine_visible_gpus("GPU-aa11,GPU-bb22,GPU-cc33", 1), 3);
}

/* The --jobs default: one per visible GPU for device candidates (at least one, at most max),
 * one per online core otherwise. */
static void test_default_workers(void **state)
{
    (void)state;
    const char *was = getenv("CUDA_VISIBLE_DEVICES");
    char saved[256] = "";
    if (was) snprintf(saved, sizeof saved, "%s", was);
    setenv("CUDA_VISIBLE_DEVICES", "2,5,7", 1);
    assert_int_equal(attest_engine_default_workers(1, 16), 3);
    assert_int_equal(attest_engine_default_workers(1, 2), 2);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    assert_int_equal(attest_engine_default_workers(1, 16), 1); /* none visible: one */
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(cores >= 1);
    assert_int_equal(attest_engine_default_workers(0, 4096), (uint32_t)cores);
    assert_int_equal(attest_engine_default_workers(0, 1), 1);
    assert_int_equal(attest_engine_default_workers(0, 0), 1);
    if (was)
        setenv("CUDA_VISIBLE_DEVICES", saved, 1);
    else
        unsetenv("CUDA_VISIBLE_DEVICES");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_device),
        cmocka_unit_test(test_driver_count),
        cmocka_unit_test(test_visible_list),
        cmocka_unit_test(test_visible_count),
        cmocka_unit_test(test_default_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
