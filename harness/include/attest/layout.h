/* attest: the production KV-cache byte layouts as data (docs/kernels.md sections 2-4).
 *
 * A layout is a plain descriptor: every size, stride and offset a kernel uses to find a byte is a
 * field here or computed from one by attest_layout_token_offsets(). The codec functions write and
 * read tokens at exactly those offsets, through a page table, in a pool of pages.
 */
#ifndef ATTEST_LAYOUT_H
#define ATTEST_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "attest/numerics.h"
#include "attest/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attest_layout_id {
    ATTEST_LAYOUT_MLA_V4 = 1,     /* "mla-v4": 584-byte tokens, page-major, stride rounded to 576 */
    ATTEST_LAYOUT_MLA_V32 = 2,    /* "mla-v32": 656-byte interleaved token records */
    ATTEST_LAYOUT_C4_INDEXER = 3  /* "c4-indexer": 8448-byte blocks of 64 positions */
} attest_layout_id;

typedef enum attest_scale_format {
    ATTEST_SCALE_UE8M0 = 1, /* one byte, 2^(b-127) */
    ATTEST_SCALE_F32 = 2    /* little-endian float32 */
} attest_scale_format;

/* Bytes of one c4-indexer block (64 positions x 128 fp8 keys, then 64 float32 scales): a
 * compile-time constant because the indexer's cache shape [num_blocks, 8448] is built from it. */
#define ATTEST_LAYOUT_C4_BLOCK_BYTES 8448u

#define ATTEST_LAYOUT_MAX_SCALES 8
#define ATTEST_LAYOUT_MAX_PAGE_SIZE 4096u
#define ATTEST_LAYOUT_MAX_PAGE_STRIDE (64ull << 20) /* 64 MiB: anything larger is a typo */

typedef struct attest_layout {
    attest_layout_id id;
    uint32_t page_size;      /* tokens (positions) per page; fixed at 64 for c4-indexer */
    uint64_t page_stride;    /* bytes from one page's base to the next */
    uint64_t page_payload;   /* bytes of a page that belong to tokens: P*584, P*656, 8448 */
    uint32_t token_bytes;    /* bytes per token over all its regions: 584, 656, 132 */
    uint32_t fp8_dim;        /* fp8 elements per token: 448, 512, 128 */
    uint32_t rope_dim;       /* unquantized bf16 elements per token: 64, 64, 0 */
    uint32_t num_scales;     /* scales per token: 7, 4, 1 */
    uint32_t scale_tile;     /* fp8 elements covered by one scale: 64, 128, 128 */
    attest_scale_format scale_format;
    uint32_t k_dim;          /* dequantized K width: fp8_dim + rope_dim (512, 576, 128) */
    uint32_t v_dim;          /* V width used by MLA decode: 512, 512; 0 for the indexer */
} attest_layout;

/* Returns the layout's CLI name ("mla-v4", "mla-v32", "c4-indexer") or NULL if unknown. */
const char *attest_layout_name(attest_layout_id id);

/* Looks up a layout by CLI name. Returns ATTEST_ERR_NOT_FOUND for an unknown name. */
attest_status attest_layout_from_name(const char *name, attest_layout_id *id) ATTEST_MUST_CHECK;

/* Returns the default page stride for a layout and page size (mla-v4: ceil(P*584/576)*576;
 * mla-v32: P*656; c4-indexer: 8448), or 0 when the page size is invalid for the layout. */
uint64_t attest_layout_default_stride(attest_layout_id id, uint32_t page_size);

/* Fills a descriptor. page_stride 0 asks for the default; a non-zero stride must be >= the page
 * payload, <= ATTEST_LAYOUT_MAX_PAGE_STRIDE and a multiple of 4 (fp32 scales stay aligned in
 * every page), and for mla-v4 equal to the default rounding, since kernels derive it. Page sizes
 * are 1..ATTEST_LAYOUT_MAX_PAGE_SIZE; c4-indexer accepts only 64. Returns
 * ATTEST_ERR_INVALID_ARGUMENT with a message otherwise. */
attest_status attest_layout_make(attest_layout_id id, uint32_t page_size, uint64_t page_stride,
                                 attest_layout *out) ATTEST_MUST_CHECK;

/* Byte offsets, from the page's base, of every field of token t (t < page_size). */
typedef struct attest_token_offsets {
    uint64_t fp8;                              /* first fp8 byte */
    uint64_t rope;                             /* first bf16 rope byte (rope_dim > 0 only) */
    uint64_t scale[ATTEST_LAYOUT_MAX_SCALES];  /* first byte of scale i */
    uint64_t pad;                              /* first per-token pad byte (pad_bytes > 0 only) */
    uint32_t pad_bytes;                        /* 1 for mla-v4, 0 otherwise */
} attest_token_offsets;

/* Computes the offsets of token t within a page. Returns ATTEST_ERR_INVALID_ARGUMENT if t is out
 * of range. */
attest_status attest_layout_token_offsets(const attest_layout *layout, uint32_t t,
                                          attest_token_offsets *out) ATTEST_MUST_CHECK;

/* One region of a page's byte map, for `attest layout describe` and for poisoning checks. */
typedef struct attest_layout_region {
    char name[48];           /* "token data (fp8 nope)", "scales", "page padding", ... */
    uint64_t begin, end;     /* byte range [begin, end) within the page */
    const char *elem_type;   /* "fp8_e4m3fn", "bf16", "ue8m0", "float32", "pad" */
    uint64_t count;          /* elements in the region */
    uint32_t elem_bytes;
    int is_padding;          /* bytes that belong to no value: must keep the poison pattern */
} attest_layout_region;

/* Writes the page's regions, in byte order, covering [0, page_stride) with no gap: one region
 * per field of every token (mla-v4: 4P + 1 at most; mla-v32: 3P + 1; c4-indexer: 2 + 1) and the
 * page padding when the stride exceeds the payload. Returns ATTEST_ERR_INVALID_ARGUMENT if cap is
 * too small or regions is NULL (then *count holds the needed number). */
attest_status attest_layout_regions(const attest_layout *layout, attest_layout_region *regions,
                                    size_t cap, size_t *count) ATTEST_MUST_CHECK;

/* Returns 1 if byte `offset` of a page belongs to no value (per-token pad or page padding). */
int attest_layout_is_padding_byte(const attest_layout *layout, uint64_t offset);

/* Scale policy used when quantizing logical values into a cache. */
typedef enum attest_scale_kind {
    ATTEST_SCALE_POW2 = 1,  /* power-of-two scale by a writer's rule (UE8M0 bytes or pow2 fp32) */
    ATTEST_SCALE_RAW = 2    /* raw fp32 max(amax, 1e-4)/448, DeepGEMM's indexer cache rule
                               (only for layouts that store fp32 scales) */
} attest_scale_kind;

typedef struct attest_scale_policy {
    attest_scale_kind kind;
    attest_ue8m0_writer writer;   /* clamp rule for ATTEST_SCALE_POW2 */
    attest_fp8_overflow overflow; /* how value/scale is rounded into fp8 */
} attest_scale_policy;

/* Quantizes one token's logical values (k_dim floats: fp8_dim values then rope_dim values) into
 * the page at `page_base`, slot t: computes each tile's scale by the policy, writes scales, fp8
 * bytes (fp8(value / scale), one float32 division) and bf16 rope (RNE) at their exact offsets.
 * Touches no other byte. Fails on t out of range, an unknown policy, or a raw policy for a layout
 * that stores UE8M0 scales. */
attest_status attest_layout_encode_token(const attest_layout *layout, uint8_t *page_base,
                                         uint32_t t, const float *values,
                                         const attest_scale_policy *policy) ATTEST_MUST_CHECK;

/* Dequantizes one token into k_dim doubles: fp8 value * its scale (exact in double), then rope.
 * No checks: the layout comes from attest_layout_make and t < page_size. */
void attest_layout_decode_token(const attest_layout *layout, const uint8_t *page_base, uint32_t t,
                                double *values);

/* Returns scale i of token t as a double (UE8M0 decoded or fp32 read little-endian), or NaN when
 * t or i is out of range. */
double attest_layout_token_scale(const attest_layout *layout, const uint8_t *page_base, uint32_t t,
                                 uint32_t i);

/* Returns the base of the page holding physical token `index` (= page * P + slot) in a pool, and
 * stores the slot in *slot. The caller has range-checked index against the pool. */
const uint8_t *attest_pool_token_page(const attest_layout *layout, const uint8_t *pool,
                                      uint64_t index, uint32_t *slot);

/* Fills every byte of a pool of num_pages pages with `poison` (0xFF: NaN as fp8, UE8M0, bf16). */
void attest_pool_poison(const attest_layout *layout, uint8_t *pool, uint32_t num_pages,
                        uint8_t poison);

/* Quantizes num_tokens logical tokens (values [num_tokens, k_dim]) into a pool through a page
 * table: logical token j lives in physical page page_table[j / P], slot j % P. Pages and slots
 * not written keep whatever they held (poison them first). Fails on a page table entry outside
 * [0, num_pages) and on a physical page named twice among the ceil(num_tokens / P) entries used
 * (the second would overwrite the first). */
attest_status attest_pool_encode(const attest_layout *layout, uint8_t *pool, uint32_t num_pages,
                                 const int32_t *page_table, uint64_t num_tokens,
                                 const float *values, const attest_scale_policy *policy)
    ATTEST_MUST_CHECK;

/* Dequantizes num_tokens logical tokens back through the page table into values (doubles).
 * Fails on a page table entry outside [0, num_pages); repeated pages are fine for reading. */
attest_status attest_pool_decode(const attest_layout *layout, const uint8_t *pool,
                                 uint32_t num_pages, const int32_t *page_table,
                                 uint64_t num_tokens, double *values) ATTEST_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* ATTEST_LAYOUT_H */
