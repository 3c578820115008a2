/* attest: perf mode, how fast a candidate runs a case of a given shape and how close that is to
 * the memory bandwidth its bytes need.
 *
 * A bench case is built from a shape (not drawn by the generator): every request has exactly
 * the given length, the cache holds finite random fp8 bytes behind a shuffled page table, so
 * the time measured is that of a production-like launch. Device candidates are timed with the
 * device ops' timer (CUDA events around each run(), after warm-up runs); host candidates with
 * the wall clock. The bench runs in the calling process (no worker): a device candidate opens
 * CUDA here, so do not fork a runner from the same process afterwards.
 *
 * "Bytes that must move" counts what any correct kernel has to touch once. Indexer: the cache
 * pages a request's length covers (8448 bytes per 64 positions, once per request however many
 * next_n rows share them), their page-table entries, the lengths, q and the weights it reads,
 * and the logits it writes: the whole array for a candidate whose masking convention is -inf or
 * 0 (the fill past a row's length is part of its output), each row's valid positions only for
 * one that declares ATTEST_MASK_UNSPECIFIED (nothing past the length is asked of it). MLA
 * decode: see attest_bench_bytes.
 */
#ifndef ATTEST_BENCH_H
#define ATTEST_BENCH_H

#include <stdint.h>

#include "attest/candidate.h"
#include "attest/case.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default peak for "% of peak": 4.27 TB/s, the HBM bandwidth measured on an H200. */
#define ATTEST_BENCH_DEFAULT_PEAK_GBPS 4270.0

/* A shape. Indexer: "b=64,len=65536,max_len=262144,heads=64,next_n=1" (max_len defaults to
 * len, heads to 64, next_n to 1). Sparse MLA decode: "b=64,s_q=1,heads=64,topk=2048" with
 * optional ctx (tokens of each request's cache, default topk) and layout (mla-v4, the default,
 * or mla-v32): every query selects topk distinct tokens of its request, all valid, no sink, no
 * extra scope, pages of 64 tokens. */
typedef struct attest_bench_shape {
    attest_kernel kernel;
    int32_t b, len, max_len, heads, next_n; /* indexer (b and heads: both) */
    int32_t s_q, topk, ctx;                 /* mla-decode */
    int32_t layout;                         /* mla-decode: an attest_layout_id */
} attest_bench_shape;

/* Parses one indexer shape string (keys above, any order). ATTEST_ERR_INVALID_ARGUMENT naming
 * the key on a bad or missing value. */
attest_status attest_bench_parse_shape(const char *text, attest_bench_shape *out)
    ATTEST_MUST_CHECK;

/* The same for a kernel family's shapes (indexer or mla-decode); ATTEST_ERR_UNSUPPORTED for
 * another family. */
attest_status attest_bench_parse_kernel_shape(attest_kernel kernel, const char *text,
                                              attest_bench_shape *out) ATTEST_MUST_CHECK;

/* Writes the shape back in canonical form ("b=64,len=65536,max_len=262144,heads=64,next_n=1";
 * "b=64,s_q=1,heads=64,topk=2048,ctx=2048,layout=mla-v4"). */
void attest_bench_shape_string(const attest_bench_shape *s, char *buf, size_t cap);

/* Builds the case of a shape on the heap (free with attest_case_free); `seed` picks the bytes. */
attest_status attest_bench_case(const attest_bench_shape *s, uint64_t seed, attest_case *out)
    ATTEST_MUST_CHECK;

/* Bytes any correct kernel with masking convention `masking` (the candidate's; indexer only)
 * must read and write for this case. Indexer: see above. MLA decode: every distinct token the
 * queries of a request select (584 bytes in mla-v4, 656 in mla-v32: fp8 values, scales and
 * bf16 rope, once per request however many of its queries select it), the indices, the
 * queries, and the outputs and LSEs written. */
void attest_bench_bytes(const attest_case *c, attest_masking masking, double *read_bytes,
                        double *write_bytes);

typedef struct attest_bench_options {
    int32_t warmup;     /* untimed runs first (default 3) */
    int32_t iters;      /* timed runs (default 20) */
    double peak_gbps;   /* for % of peak (default ATTEST_BENCH_DEFAULT_PEAK_GBPS) */
} attest_bench_options;

attest_bench_options attest_bench_defaults(void);

typedef struct attest_bench_result {
    int32_t iters;
    int32_t device_timed;       /* 1: device timer (CUDA events); 0: wall clock */
    double median_us, p10_us, p90_us, min_us, max_us;
    double read_bytes, write_bytes;
    double gbps;                /* (read + write) / median */
    double pct_peak;            /* 100 * gbps / peak_gbps */
    char device[96];            /* the device description, "" for host candidates */
} attest_bench_result;

/* Times `cand` on case `c` (placed on the host, e.g. by attest_bench_case). UNSUPPORTED-like
 * outcomes are errors here: ATTEST_ERR_DEVICE when the device cannot be opened or a run
 * fails, ATTEST_ERR_INVALID_ARGUMENT when the candidate declines the case. */
attest_status attest_bench_run(const attest_candidate *cand, attest_case *c,
                               const attest_bench_options *opt, attest_bench_result *out)
    ATTEST_MUST_CHECK;

/* One measured row of a bench file. */
typedef struct attest_bench_row {
    char candidate[64];
    char shape[96];        /* attest_bench_shape_string */
    attest_bench_result result;
    double peak_gbps;
} attest_bench_row;

/* Writes a bench file: HDF5 with one table "/bench" (a row per candidate and shape: shape,
 * candidate, iters, device_timed, median_us, p10_us, p90_us, min_us, max_us, read_bytes,
 * write_bytes, gbps, pct_peak, peak_gbps, device) and attributes attest_version and
 * command_line on the root, written to a temporary sibling and renamed onto `path` (the caller
 * applies the output policy of attest/files.h first). ATTEST_ERR_IO. */
attest_status attest_bench_write(const char *path, const attest_bench_row *rows, size_t n,
                                 const char *command_line) ATTEST_MUST_CHECK;

/* Reads a bench file back: *rows (malloc'd, the caller frees) and *n, and the command line
 * that wrote it into command_line (cap bytes, truncated; cap 0: not read). Run
 * attest_bench_probe on a file from elsewhere first. ATTEST_ERR_IO (not HDF5), ATTEST_ERR_FORMAT
 * (no /bench table). */
attest_status attest_bench_read(const char *path, attest_bench_row **rows, size_t *n,
                                char *command_line, size_t cap) ATTEST_MUST_CHECK;

/* attest_bench_read in a child process with a deadline first: a crash or hang of the HDF5
 * library on corrupt metadata becomes ATTEST_ERR_FORMAT. */
attest_status attest_bench_probe(const char *path) ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_BENCH_H */
