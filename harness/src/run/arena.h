/* attest (internal): the guarded arena where a case lives while a candidate runs.
 *
 * One MAP_SHARED anonymous mapping: a forked worker sees the same bytes at the same addresses,
 * so a case placed by the parent needs no copy to reach the worker. Layout:
 *
 *   [control page: the placed case] [canary][tensor 0][canary] [canary][tensor 1][canary] ...
 *
 * Every tensor starts at a 256-byte aligned offset (what cudaMalloc gives) with at least
 * ARENA_CANARY_BYTES of a position-dependent pattern before and after it; outputs are filled with
 * a NaN poison pattern; inputs are checksummed. Truth tensors are not placed (a candidate never
 * sees them). The data region [data_begin, used) is contiguous, so a device mirror is one copy.
 * Growing re-maps the arena: a worker forked before that still sees the old mapping and must be
 * restarted (compare `generation`).
 */
#ifndef ATTEST_ARENA_H
#define ATTEST_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "attest/case.h"
#include "attest/status.h"

#define ARENA_ALIGN 256u
#define ARENA_CANARY_BYTES 256u

/* Shared with the worker: everything it needs to run a case lives here, not in the parent's
 * heap (the worker's copy of that is frozen at fork time). */
typedef struct arena_control {
    attest_case placed;   /* tensors point into the arena; truth tensors are NULL */
    size_t data_begin;    /* offset of the first canary */
    size_t used;          /* end of the last canary */
    uint64_t generation;  /* the mapping's generation when the case was placed */
} arena_control;

/* The parent's own record of where each tensor lives. The worker can make the control page
 * writable again and rewrite it, so the parent never follows a pointer or name stored there:
 * everything it reads about the layout comes from these slots, in its private memory. */
typedef struct arena_slot {
    int32_t tensor;       /* index in the case's tensor table */
    char name[32];        /* the tensor's name, for messages */
    attest_tensor_role role;
    attest_dtype dtype;
    size_t pre_begin;     /* canary before: [pre_begin, data) */
    size_t data;          /* offset of the tensor's first byte */
    size_t nbytes;
    size_t post_end;      /* canary after: [data + nbytes, post_end) */
    uint64_t checksum;    /* inputs: checksum of the source bytes */
    int modified;         /* inputs: the last check found it changed */
} arena_slot;

typedef struct arena {
    uint8_t *base;        /* NULL until the first case */
    size_t capacity;      /* mapped bytes */
    uint64_t generation;  /* bumped by every re-map */
    arena_control *control;
    size_t num_slots;
    arena_slot slots[ATTEST_CASE_MAX_TENSORS];
} arena;

void arena_init(arena *a);
void arena_release(arena *a);

/* Places a case's inputs and outputs: grows the mapping when needed (*remapped = 1 then),
 * copies inputs, poisons outputs, writes canaries and takes input checksums. The placed case
 * (a copy of `src` with arena pointers) is a->control->placed. */
attest_status arena_place(arena *a, const attest_case *src, int *remapped) ATTEST_MUST_CHECK;

/* Prepares a re-run: re-poisons outputs, rewrites every canary and restores, from `src`, the
 * inputs the last arena_check_inputs found modified. */
void arena_reset_run(arena *a, const attest_case *src);

/* Checks every canary. Returns the number of damaged canary regions and describes the first in
 * msg ("canary after 'logits' changed at +0 (4 bytes)"). */
int arena_check_canaries(const arena *a, char *msg, size_t cap);

/* Checks every input against its checksum. Returns the number of modified inputs and describes
 * the first in msg, with the first changed byte found by comparing with `src`. */
int arena_check_inputs(arena *a, const attest_case *src, char *msg, size_t cap);

/* Returns the arena's copy of tensor `index` of the case (NULL for truth tensors). */
void *arena_tensor(const arena *a, size_t index);

/* Returns the poison pattern of an output dtype: the bits the unwritten gate looks for. */
uint32_t arena_poison_bits(attest_dtype dtype);

/* The 64-bit checksum of the input bytes: XXH3 (xxHash). */
uint64_t arena_checksum(const void *data, size_t n);

#endif /* ATTEST_ARENA_H */
