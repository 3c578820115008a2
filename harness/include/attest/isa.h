/* attest: which instruction set the vector loops of the references and the built-in CPU kernels
 * run. Each such loop is one always-inline body compiled three times (portable, AVX2, AVX-512)
 * behind one dispatcher, as BLAKE3 keeps its portable and per-ISA implementations, so a test can
 * run every copy on this machine and compare their bits (tests/test_isa.c): the copies run the
 * same operations in the same order without contraction (-ffp-contract=off), so they must agree
 * bit for bit. GCC's target_clones would hide the copies behind a load-time resolver that picks
 * one per machine.
 */
#ifndef ATTEST_ISA_H
#define ATTEST_ISA_H

#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attest_isa {
    ATTEST_ISA_PORTABLE = 0, /* the baseline target (SSE2 on x86-64) */
    ATTEST_ISA_AVX2 = 1,
    ATTEST_ISA_AVX512F = 2,
    ATTEST_ISA_COUNT_
} attest_isa;

/* "portable", "avx2", "avx512f"; NULL for a value out of range. */
const char *attest_isa_name(attest_isa isa);

/* 1 when this build has the ISA's copies and this CPU runs them (portable always). */
int attest_isa_available(attest_isa isa);

/* The ISA the loops run now: the one attest_isa_pin set, else $ATTEST_ISA (an ISA's name, read
 * at the first call; an unknown or unavailable one is ignored with a warning on stderr), else the
 * widest available. Thread-safe and cheap (one atomic load). */
attest_isa attest_isa_active(void);

/* Makes every later loop run `isa` (tests, benchmarks). ATTEST_ERR_UNSUPPORTED when it is not
 * available here; ATTEST_ERR_INVALID_ARGUMENT out of range. */
attest_status attest_isa_pin(attest_isa isa) ATTEST_MUST_CHECK;

/* What a vector loop's body is declared as: inlined into each ISA's copy, compiled for it. */
#define ATTEST_ISA_BODY static inline __attribute__((always_inline))

/* Defines `static void name params` dispatching on attest_isa_active() to three copies of
 * `name##_body args`, an ATTEST_ISA_BODY void function the caller defines first; each copy is
 * compiled for its ISA. Dispatch costs a load and a branch per call: put it around a loop over
 * a block, not inside one. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTEST_ISA_HAVE_X86 1
#define ATTEST_ISA_VARIANTS(name, params, args)                                                \
    __attribute__((target("avx512f"))) static void name##_avx512f params { name##_body args; } \
    __attribute__((target("avx2"))) static void name##_avx2 params { name##_body args; }       \
    static void name##_portable params { name##_body args; }                                  \
    static void name params                                                                    \
    {                                                                                          \
        switch (attest_isa_active()) {                                                         \
        case ATTEST_ISA_AVX512F: name##_avx512f args; break;                                   \
        case ATTEST_ISA_AVX2: name##_avx2 args; break;                                         \
        default: name##_portable args; break;                                                  \
        }                                                                                      \
    }
#else
#define ATTEST_ISA_HAVE_X86 0
#define ATTEST_ISA_VARIANTS(name, params, args)                                                \
    static void name params { name##_body args; }
#endif

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_ISA_H */
