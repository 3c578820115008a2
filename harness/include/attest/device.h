/* attest: the device-ops hook, how the harness moves a case to a GPU without linking CUDA.
 *
 * Device code (kernels/cuda) registers a table of operations. The runner's crash-isolation worker
 * uses it to mirror the whole guarded arena (every tensor with its canaries) into one device
 * allocation, run a device-domain candidate on the mirror, synchronize and copy everything back,
 * so canaries, input checksums and poison are checked on the host exactly as for a CPU candidate.
 *
 * No op is ever called in the parent process of an isolated runner: CUDA is initialized only in
 * the forked worker (fork after CUDA initialization is not supported by CUDA), and a fault that
 * poisons the context dies with the worker. With no ops registered, or when open() fails (no
 * device), every device candidate gets the verdict UNSUPPORTED with open()'s reason.
 * Every op is called from one thread; ops return 0 on success.
 */
#ifndef ATTEST_DEVICE_H
#define ATTEST_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attest_device_ops {
    uint32_t struct_size;  /* sizeof(attest_device_ops) as compiled by the registrant */
    const char *name;      /* short, e.g. "cuda" */
    /* Opens the device in the calling process (first use in a worker). Returns 0 when a usable
     * device exists; otherwise nonzero with a one-line reason in msg ("no CUDA device: ..."). */
    int (*open)(char *msg, size_t cap);
    /* Optional: one line naming the device and runtime ("NVIDIA H200, CUDA 12.4"), for records. */
    int (*describe)(char *buf, size_t cap);
    /* Allocates `bytes` of device memory, 256-byte aligned, into *dptr. */
    int (*alloc)(void **dptr, size_t bytes);
    /* Frees memory from alloc (NULL is a no-op). */
    void (*free)(void *dptr);
    /* Synchronous copies. */
    int (*copy_h2d)(void *dst, const void *src, size_t bytes);
    int (*copy_d2h)(void *dst, const void *src, size_t bytes);
    /* Waits for all work the candidate queued; nonzero = the device reported a fault. */
    int (*synchronize)(void);
    /* The text of the last failure ("an illegal memory access was encountered"); never NULL. */
    const char *(*last_error)(void);

    /* Optional, for `attest bench`: a device timer around queued work. timer_start marks the
     * start; timer_stop marks the end, waits for it and sets *ms to the device time between. */
    int (*timer_start)(void);
    int (*timer_stop)(double *ms);

    /* Optional, for the graph check (`--graph`): capture what a candidate's run() queues into
     * one graph (graph_begin ... graph_end, which also instantiates it), replay it
     * (graph_launch, then synchronize) and drop it (graph_release, safe when none exists). */
    int (*graph_begin)(void);
    int (*graph_end)(void);
    int (*graph_launch)(void);
    void (*graph_release)(void);
} attest_device_ops;

/* Whether a registered table has the optional op `field` (a newer struct member). */
#define ATTEST_DEVICE_HAS_OP(ops, field)                                                   \
    ((ops) != NULL &&                                                                     \
     (ops)->struct_size >= offsetof(attest_device_ops, field) + sizeof((ops)->field) &&   \
     (ops)->field != NULL)

/* Registers the device ops (the table must outlive its use; NULL unregisters). Registration
 * only stores the pointer: it is safe in the parent and must happen there, before the first case
 * is judged, since workers inherit the table when they are forked (e.g. from the function that
 * lists the CUDA candidates). Returns 0, or -1 when the table is too old (struct_size) or misses
 * a required op. */
int attest_register_device_ops(const attest_device_ops *ops);

/* Returns the registered ops, or NULL. */
const attest_device_ops *attest_device_ops_get(void);

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_DEVICE_H */
