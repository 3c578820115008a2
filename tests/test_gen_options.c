/* The generator defaults a verb starts from for a candidate (attest/gen_options.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attest/gen_options.h"

static int run_nothing(void *ctx, const attest_kernel_args *args)
{
    (void)ctx;
    (void)args;
    return 0;
}

static attest_candidate fake(attest_kernel k, attest_memory_domain d)
{
    attest_candidate c;
    memset(&c, 0, sizeof c);
    c.name = "fake";
    c.kernel = k;
    c.domain = d;
    c.run = run_nothing;
    return c;
}

/* A device candidate draws no moved pools unless asked; a host candidate keeps the
 * generator's rate; every other default is the generator's own. */
static void test_device_candidates_draw_no_moved_pools(void **state)
{
    (void)state;
    const attest_kernel kernels[2] = {ATTEST_KERNEL_INDEXER, ATTEST_KERNEL_MLA_DECODE};
    for (int i = 0; i < 2; i++) {
        const attest_gen_options def = attest_gen_defaults(kernels[i]);
        assert_true(def.high_pools > 0);
        attest_candidate host = fake(kernels[i], ATTEST_DOMAIN_HOST);
        attest_candidate dev = fake(kernels[i], ATTEST_DOMAIN_DEVICE);
        attest_gen_options h = attest_cli_gen_defaults_for(&host);
        attest_gen_options d = attest_cli_gen_defaults_for(&dev);
        assert_int_equal(h.high_pools, def.high_pools);
        assert_int_equal(d.high_pools, 0);
        d.high_pools = def.high_pools;
        assert_memory_equal(&d, &def, sizeof d);

        /* --high-pools given still wins, and the 0 is written into the replay flags. */
        attest_cli_gen_bounds b;
        memset(&b, 0, sizeof b);
        attest_gen_options g = attest_cli_gen_defaults_for(&dev);
        char flags[512];
        assert_int_equal(attest_cli_gen_flags_of(&g, 0, flags, sizeof flags), 0);
        assert_non_null(strstr(flags, "--high-pools 0"));
        assert_int_equal(attest_cli_gen_option("run", ATTEST_CLI_GEN_HIGH_POOLS, "25", &b), -1);
        assert_int_equal(attest_cli_gen_apply("run", &b, &g), -1);
        assert_int_equal(g.high_pools, 25);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_candidates_draw_no_moved_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
