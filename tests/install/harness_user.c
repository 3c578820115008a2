/* A program using the installed harness library: draws a case from a seed and prints its
 * canonical parameter string (the test compares it with what attest itself prints). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "attest/generator.h"

int main(int argc, char **argv)
{
    const uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    attest_gen_options g = attest_gen_defaults(ATTEST_KERNEL_INDEXER);
    attest_case c;
    char params[512];
    if (attest_generate_case(&g, seed, &c) != ATTEST_OK ||
        attest_case_param_string(&c, params, sizeof params) != ATTEST_OK) {
        fprintf(stderr, "harness_user: %s\n", attest_last_error());
        return 2;
    }
    printf("%s\n", params);
    attest_case_free(&c);
    return 0;
}
