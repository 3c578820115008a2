/* Which copy of the vector loops runs (attest/isa.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/isa.h"

static const char *const names[ATTEST_ISA_COUNT_] = {"portable", "avx2", "avx512f"};

/* -1 until the first call decides; then the ISA in use. */
static _Atomic int active = -1;

const char *attest_isa_name(attest_isa isa)
{
    return (int)isa >= 0 && isa < ATTEST_ISA_COUNT_ ? names[isa] : NULL;
}

int attest_isa_available(attest_isa isa)
{
    switch (isa) {
    case ATTEST_ISA_PORTABLE: return 1;
#if ATTEST_ISA_HAVE_X86
    case ATTEST_ISA_AVX2: return __builtin_cpu_supports("avx2") != 0;
    case ATTEST_ISA_AVX512F: return __builtin_cpu_supports("avx512f") != 0;
#endif
    default: return 0;
    }
}

static int choose(void)
{
    const char *env = getenv("ATTEST_ISA");
    if (env && *env) {
        for (int i = 0; i < ATTEST_ISA_COUNT_; i++)
            if (!strcmp(env, names[i])) {
                if (attest_isa_available((attest_isa)i)) return i;
                fprintf(stderr, "attest: ATTEST_ISA=%s is not available here; ignored\n", env);
                env = NULL;
                break;
            }
        if (env) fprintf(stderr, "attest: ATTEST_ISA=%s is not portable, avx2 or avx512f; "
                         "ignored\n", env);
    }
    for (int i = ATTEST_ISA_COUNT_ - 1; i > 0; i--)
        if (attest_isa_available((attest_isa)i)) return i;
    return ATTEST_ISA_PORTABLE;
}

attest_isa attest_isa_active(void)
{
    int v = atomic_load_explicit(&active, memory_order_relaxed);
    if (v < 0) {
        /* Racing first calls decide alike; the first store wins. */
        int expected = -1;
        const int chosen = choose();
        if (!atomic_compare_exchange_strong(&active, &expected, chosen)) return (attest_isa)expected;
        v = chosen;
    }
    return (attest_isa)v;
}

attest_status attest_isa_pin(attest_isa isa)
{
    ATTEST_RETURN_IF((int)isa < 0 || isa >= ATTEST_ISA_COUNT_, ATTEST_ERR_INVALID_ARGUMENT,
                     "isa: %d is not an instruction set", (int)isa);
    ATTEST_RETURN_IF(!attest_isa_available(isa), ATTEST_ERR_UNSUPPORTED,
                     "isa: %s is not available on this machine or in this build",
                     attest_isa_name(isa));
    atomic_store(&active, (int)isa);
    return ATTEST_OK;
}
