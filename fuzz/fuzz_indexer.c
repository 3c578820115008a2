/* Fuzz target: indexer logits. The tail picks a generated case; the head mutates context
 * lengths (0, page boundaries, the block-table limit), block-table entries (any block of the
 * pool, so pages repeat or permute), fp8 bit patterns of keys and queries (NaN codes included),
 * fp32 scales and weights. Candidate: $ATTEST_FUZZ_CANDIDATE or cpu-indexer.
 *
 * The domain: fp8 bytes take any of the 256 patterns, but the fp32 scales and weights take only
 * values real caches hold (pick_float: zeros, small and large finite values, NaN for scales).
 * A raw byte written into a scale could make it 1e38 or inf: the float32 candidate's logit
 * kscale * sum_h w * relu(dot) then overflows where the double reference does not, a verdict
 * on float32 itself rather than on the kernel (fuzz_mla_decode.c explains the same for decode). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/generator.h"
#include "attest/layout.h"
#include "fuzz_common.h"

#define MAX_MUTATIONS 64

static float pick_float(fuzz_input *in)
{
    static const float choices[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, 1e4f, 0.5f, 448.0f};
    uint8_t k = (uint8_t)fuzz_head_uint(in, 1);
    if (k < 128) return choices[k % (sizeof choices / sizeof choices[0])];
    return ((float)fuzz_head_uint(in, 2) - 32768.0f) / 1024.0f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_input_make(data, size);
    attest_gen_options opt = attest_gen_fuzz_defaults(ATTEST_KERNEL_INDEXER);
    uint64_t seed = fuzz_tail_uint(&in, 8);
    uint8_t knobs = (uint8_t)fuzz_tail_uint(&in, 1);
    opt.edge_bytes = (knobs & 1) ? 0 : 1;

    attest_case c;
    memset(&c, 0, sizeof c);
    if (attest_generate_case(&opt, seed, &c) != ATTEST_OK) abort();
    const attest_indexer_params *p = &c.params.indexer;
    attest_tensor *cache = attest_case_tensor(&c, "cache_bytes");
    attest_tensor *table = attest_case_tensor(&c, "block_table");
    attest_tensor *lens = attest_case_tensor(&c, "context_lens");
    attest_tensor *q = attest_case_tensor(&c, "q_fp8");
    attest_tensor *w = attest_case_tensor(&c, "weights");
    attest_layout L; /* where a block's keys and scales lie */
    if (attest_layout_make(ATTEST_LAYOUT_C4_INDEXER, ATTEST_INDEXER_BLOCK, 0, &L) != ATTEST_OK)
        abort();
    const uint64_t keys = (uint64_t)L.page_size * L.fp8_dim;
    int64_t max_ctx = (int64_t)p->blocks_per_req * ATTEST_INDEXER_BLOCK;
    if (max_ctx > p->max_len) max_ctx = p->max_len;
    for (int m = 0; m < MAX_MUTATIONS && fuzz_remaining(&in) > 0; m++) {
        switch (fuzz_head_uint(&in, 1) % 6) {
        case 0: { /* a context length: anything the block table can hold */
            int32_t *l = lens->data;
            l[fuzz_head_uint(&in, 1) % (uint64_t)p->b] =
                (int32_t)(fuzz_head_uint(&in, 2) % (uint64_t)(max_ctx + 1));
            break;
        }
        case 1: { /* a block-table entry: any physical block, repeats allowed */
            int32_t *t = table->data;
            t[fuzz_head_uint(&in, 2) % attest_tensor_count(table)] =
                (int32_t)(fuzz_head_uint(&in, 4) % (uint64_t)p->num_blocks);
            break;
        }
        case 2: { /* a key fp8 byte: block-major, the keys' fp8 bytes then the fp32 scales */
            uint8_t *b = cache->data;
            uint64_t blk = fuzz_head_uint(&in, 4) % (uint64_t)p->num_blocks;
            b[blk * L.page_stride + fuzz_head_uint(&in, 2) % keys] = (uint8_t)fuzz_head_uint(&in, 1);
            break;
        }
        case 3: { /* a query fp8 pattern */
            uint8_t *b = q->data;
            b[fuzz_head_uint(&in, 4) % q->nbytes] = (uint8_t)fuzz_head_uint(&in, 1);
            break;
        }
        case 4: { /* a weight */
            float *f = w->data;
            f[fuzz_head_uint(&in, 2) % attest_tensor_count(w)] = pick_float(&in);
            break;
        }
        default: { /* a position's fp32 scale, written at its exact byte offset */
            uint64_t blk = fuzz_head_uint(&in, 4) % (uint64_t)p->num_blocks;
            uint64_t pos = fuzz_head_uint(&in, 1) % L.page_size;
            uint8_t nan = (uint8_t)fuzz_head_uint(&in, 1) == 0; /* a NaN scale, now and then */
            float s = nan ? NAN : fabsf(pick_float(&in));
            attest_token_offsets o;
            if (attest_layout_token_offsets(&L, (uint32_t)pos, &o) != ATTEST_OK) break;
            memcpy((uint8_t *)cache->data + blk * L.page_stride + o.scale[0], &s, 4);
            break;
        }
        }
    }
    /* Lengths and table edits can make a used block invalid only through a -1 the generator
     * left in unused slots: such a case is not a valid input, so skip it rather than judge it. */
    if (attest_case_check_inputs(&c) != ATTEST_OK) {
        attest_case_free(&c);
        return 0;
    }
    fuzz_judge("indexer", fuzz_candidate("cpu-indexer"), &c);
    attest_case_free(&c);
    return 0;
}
