/* attest (internal): the guarded arena where a case lives while a candidate runs.
 *
 * One MAP_SHARED anonymous mapping: a forked worker sees the same bytes at the same addresses,
 * so a case placed by the parent needs no copy to reach the worker. Layout:
 *
 *   [control page: the placed case] [canary][tensor 0][canary] [canary][tensor 1][canary] ...
 *
 * Every tensor starts at a 256-byte aligned offset (what cudaMalloc gives) with at least
 * ARENA_CANARY_BYTES of a position-dependent pattern before and after it; outputs are filled with
 * a NaN poison pattern; inputs are compared with the case's own after each run. Truth tensors are not placed (a candidate never
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

/* Sparse pools (case.h): a pool the case holds sparsely is placed page-aligned, and only the OS
 * pages covering the pool pages the case reaches are written; those runs are its extents. While
 * a candidate runs, the rest of the pool is PROT_NONE (exec_run), so an access there faults. */
#define ARENA_MAX_EXTENTS 4096u
#define ARENA_MAX_SPARSE 2u
/* Below a sparse pool, 2^31 bytes never placed (PROT_NONE during a run too): a page offset that
 * wraps in 32-bit signed arithmetic lands in [pool - 2^31, pool + 2^31), so it faults in the
 * guard or on an unplaced page, in every process alike, instead of reading whatever the
 * process happens to have mapped there (a verdict that would change with the address layout). */
#define ARENA_SPARSE_GUARD (UINT64_C(1) << 31)

typedef struct arena_extent {
    uint64_t at;   /* arena offset (OS-page aligned but for the pool's partial last page) */
    uint64_t len;
} arena_extent;

/* A sparse pool as the worker needs it: what to protect and where its extents are listed. */
typedef struct arena_sparse {
    uint64_t guard;         /* [guard, guard + ARENA_SPARSE_GUARD): the guard below the pool */
    uint64_t pre_begin;     /* the pool's canary: [pre_begin, data) */
    uint64_t data;          /* the pool's arena offset (OS-page aligned) */
    uint64_t nbytes;        /* the pool's size */
    uint64_t protect_end;   /* [data, protect_end): OS pages outside every extent get PROT_NONE */
    uint64_t page_bytes;    /* the pool's page (block) stride, for messages */
    uint32_t first_extent, num_extents;
    char name[32];
} arena_sparse;

/* Shared with the worker: everything it needs to run a case lives here, not in the parent's
 * heap (the worker's copy of that is frozen at fork time). */
typedef struct arena_control {
    attest_case placed;   /* tensors point into the arena; truth tensors are NULL */
    size_t data_begin;    /* offset of the first canary */
    size_t used;          /* end of the last canary */
    uint64_t generation;  /* the mapping's generation when the case was placed */
    uint32_t num_sparse;  /* sparse pools placed (sparse[]), their extents in extents[] */
    uint32_t num_extents;
    arena_sparse sparse[ARENA_MAX_SPARSE];
    arena_extent extents[ARENA_MAX_EXTENTS];
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
    int modified;         /* inputs: the last check found it changed */
    int sparse;           /* a sparse pool: only extents [first_extent, +num_extents) placed */
    size_t first_extent, num_extents;
} arena_slot;

typedef struct arena {
    uint8_t *base;        /* NULL until the first case */
    size_t capacity;      /* mapped bytes */
    uint64_t generation;  /* bumped by every re-map */
    arena_control *control;
    size_t num_slots;
    arena_slot slots[ATTEST_CASE_MAX_TENSORS];
    size_t num_extents;   /* the sparse pools' extents, parent-private (the control page's copy
                           * is the worker's); released (MADV_REMOVE) when the next case lands */
    arena_extent extents[ARENA_MAX_EXTENTS];
    size_t sparse_begin, sparse_end; /* [begin, end): what the last case placed from its first
                                        sparse pool's guard on (sparse_release) */
    size_t num_prev;      /* the last case's extents while the next one is laid out: the pages
                           * both place stay (sparse_keep) */
    arena_extent prev[ARENA_MAX_EXTENTS];
    int guarded;          /* this process keeps the placed case's unplaced pages PROT_NONE
                           * between runs (arena_guard) */
    size_t dense_end;     /* the end of the largest case without sparse pools placed since the
                           * last re-map: a sparse pool's guard starts past it */
} arena;

void arena_init(arena *a);
void arena_release(arena *a);

/* Places a case's inputs and outputs: grows the mapping when needed (*remapped = 1 then),
 * copies inputs (a sparse pool: only its extents), poisons outputs and writes canaries. The
 * case's tensors must keep their bytes until its last arena_check_inputs. The placed case (a copy of `src` with arena pointers) is
 * a->control->placed. */
attest_status arena_place(arena *a, const attest_case *src, int *remapped) ATTEST_MUST_CHECK;

/* Prepares a re-run: re-poisons outputs, rewrites every canary and restores, from `src`, the
 * inputs the last arena_check_inputs found modified. */
void arena_reset_run(arena *a, const attest_case *src);

/* Checks every canary. Returns the number of damaged canary regions and describes the first in
 * msg ("canary after 'logits' changed at +0 (4 bytes)"). */
int arena_check_canaries(const arena *a, char *msg, size_t cap);

/* Compares every input (a sparse pool: its extents) with `src`, the case given to arena_place.
 * Returns the number of modified inputs and describes the first in msg. */
int arena_check_inputs(arena *a, const attest_case *src, char *msg, size_t cap);

/* Returns the arena's copy of tensor `index` of the case (NULL for truth tensors). */
void *arena_tensor(const arena *a, size_t index);

/* Returns the poison pattern of an output dtype: the bits the unwritten gate looks for. */
uint32_t arena_poison_bits(attest_dtype dtype);

/* Makes the placed case's sparse pools' unplaced pages (and their guards) PROT_NONE in this
 * process and keeps them so, for a host candidate run in this process: the next arena_place
 * changes only what differs when it lays the case out at the same offsets (a fuzz target's
 * mutations of one case), so the runs of such cases need no mprotect at all, where protecting
 * around each run cost most of a sparse case's time. The harness never touches an unplaced
 * page. Returns 0, or -1 when mprotect failed (then nothing is kept protected). */
int arena_guard(arena *a) ATTEST_MUST_CHECK;

/* Makes every sparse pool's unplaced pages PROT_NONE (protect = 1) or accessible again (0) in
 * this process: around a candidate's run (exec_run). Returns 0, or -1 when mprotect failed. */
int arena_protect_sparse(const arena_control *ctl, int protect);

/* Describes an address of a faulting access when it lies in a sparse pool's unplaced pages:
 * writes "read or write of unplaced page N of 'cache_bytes' (byte offset X, past 2^31)" and
 * returns 1; 0 when it is elsewhere. Async-signal-safe (the worker's SIGSEGV handler). */
int arena_describe_fault(const arena_control *ctl, const void *addr, char *msg, size_t cap);

/* Calls fn(ctx, at, len) for every range of the data region [data_begin, used) that holds
 * placed bytes, in order, at arena offsets: all of it for a dense case; with sparse pools,
 * everything but their guards and their unplaced pages (what a copy of the case must move).
 * Returns the first nonzero return of fn, else 0. */
int arena_for_each_placed(const arena_control *ctl, int (*fn)(void *ctx, uint64_t at, uint64_t len),
                          void *ctx);

/* Calls fn(ctx, at, len) for every range arena_protect_sparse makes PROT_NONE (each sparse
 * pool's guard, then its unplaced OS pages), in order, at arena offsets; the same return. */
int arena_for_each_unplaced(const arena_control *ctl,
                            int (*fn)(void *ctx, uint64_t at, uint64_t len), void *ctx);

#endif /* ATTEST_ARENA_H */
