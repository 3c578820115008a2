/* The CPU top-k candidates' shared selection: a sorted buffer of the best k so far, filled in
 * one pass over the row. Written apart from the reference's full sort (references/src/topk.c)
 * so the two can disagree. */
#ifndef ATTEST_KERNELS_TOPK_SELECT_H
#define ATTEST_KERNELS_TOPK_SELECT_H

#include <stdint.h>

#include "attest/topk.h"

/* Ways to select; the correct kernels use the first three, the mutants the rest. */
typedef enum topk_select_flags {
    TOPK_TIES_HIGH = 1,        /* equal scores go to the higher position (still correct) */
    TOPK_SHORT_IDENTITY = 2,   /* len <= k gives 0..len-1 */
    TOPK_DROP_TIES = 4,        /* mutant: a score already held is skipped */
    TOPK_IGNORE_LENGTH = 8,    /* mutant: selects over the whole row width */
    TOPK_NAN_UNAWARE = 16,     /* mutant: comparisons that let NaN in */
    TOPK_BY_POSITION = 32,     /* the selected slots sorted by position (an unsorted kernel) */
    TOPK_PAGE_OFF_BY_ONE = 64  /* mutant: the block of position l taken as (l + 1) / 64 */
} topk_select_flags;

/* Runs the selection over every row of args with `flags`, writing the outputs args declares. */
int topk_select_run(const attest_topk_args *args, unsigned flags);

#endif /* ATTEST_KERNELS_TOPK_SELECT_H */
