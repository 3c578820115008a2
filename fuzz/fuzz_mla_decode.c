/* Fuzz target: sparse MLA decode. The tail picks a generated case (seed, layout, shape knobs);
 * the head mutates it: fp8 bit patterns and scale bytes of cached tokens, top-k index slots
 * (-1 holes, duplicates, any valid token), topk_length, sinks (+-inf, huge, tiny) and q bits.
 * Every mutation keeps the case valid (indices stay in the pool), so any failing verdict is the
 * candidate's fault. Candidate: $ATTEST_FUZZ_CANDIDATE or cpu-mla-decode. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attest/generator.h"
#include "attest/layout.h"
#include "fuzz_common.h"

#define MAX_MUTATIONS 64

static void mutate_cache_byte(attest_case *c, fuzz_input *in)
{
    attest_tensor *t = attest_case_tensor(c, "cache_bytes");
    uint64_t at = fuzz_head_uint(in, 4) % t->nbytes;
    ((uint8_t *)t->data)[at] = (uint8_t)fuzz_head_uint(in, 1);
}

static void mutate_index(attest_case *c, fuzz_input *in, const char *name, int64_t pool_tokens)
{
    attest_tensor *t = attest_case_tensor(c, name);
    if (t == NULL) return;
    size_t n = attest_tensor_count(t);
    int32_t *idx = t->data;
    uint64_t slot = fuzz_head_uint(in, 2) % n;
    uint8_t how = (uint8_t)fuzz_head_uint(in, 1);
    if (how % 3 == 0) {
        idx[slot] = -1;
    } else if (how % 3 == 1) {
        idx[slot] = idx[fuzz_head_uint(in, 2) % n]; /* a duplicate (or a -1) */
    } else {
        idx[slot] = (int32_t)(fuzz_head_uint(in, 4) % (uint64_t)pool_tokens);
    }
}

static void mutate_length(attest_case *c, fuzz_input *in, const char *name, int32_t topk)
{
    attest_tensor *t = attest_case_tensor(c, name);
    if (t == NULL) return;
    int32_t *len = t->data;
    len[fuzz_head_uint(in, 1) % attest_tensor_count(t)] =
        (int32_t)(fuzz_head_uint(in, 2) % (uint64_t)(topk + 1));
}

static void mutate_sink(attest_case *c, fuzz_input *in)
{
    attest_tensor *t = attest_case_tensor(c, "attn_sink");
    if (t == NULL) return;
    static const float choices[] = {INFINITY, -INFINITY, 0.0f, -0.0f, 30.0f, -30.0f, 1e-30f, 5.0f};
    float *sink = t->data;
    sink[fuzz_head_uint(in, 1) % attest_tensor_count(t)] =
        choices[fuzz_head_uint(in, 1) % (sizeof choices / sizeof choices[0])];
}

static void mutate_q(attest_case *c, fuzz_input *in)
{
    attest_tensor *t = attest_case_tensor(c, "q_bf16");
    uint16_t *q = t->data;
    q[fuzz_head_uint(in, 4) % attest_tensor_count(t)] = (uint16_t)fuzz_head_uint(in, 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_input_make(data, size);
    attest_gen_options opt = attest_gen_defaults(ATTEST_KERNEL_MLA_DECODE);
    uint64_t seed = fuzz_tail_uint(&in, 8);
    uint8_t knobs = (uint8_t)fuzz_tail_uint(&in, 1);
    if (knobs & 1) opt.layout = (knobs & 2) ? ATTEST_LAYOUT_MLA_V32 : ATTEST_LAYOUT_MLA_V4;
    opt.edge_bytes = (knobs & 4) ? 0 : 1;

    attest_case c;
    memset(&c, 0, sizeof c);
    if (attest_generate_case(&opt, seed, &c) != ATTEST_OK) abort(); /* generator must not fail */
    const attest_mla_params *p = &c.params.mla;
    const int64_t tokens = (int64_t)p->num_pages * p->page_size;
    const int64_t extra_tokens = p->has_extra ? (int64_t)p->extra_num_pages * p->extra_page_size : 1;
    for (int m = 0; m < MAX_MUTATIONS && fuzz_remaining(&in) > 0; m++) {
        switch (fuzz_head_uint(&in, 1) % 8) {
        case 0: mutate_cache_byte(&c, &in); break;
        case 1: mutate_index(&c, &in, "indices", tokens); break;
        case 2: mutate_index(&c, &in, "extra_indices", extra_tokens); break;
        case 3: mutate_length(&c, &in, "topk_length", p->topk); break;
        case 4: mutate_length(&c, &in, "extra_topk_length", p->has_extra ? p->extra_topk : 0); break;
        case 5: mutate_sink(&c, &in); break;
        case 6: mutate_q(&c, &in); break;
        default: mutate_cache_byte(&c, &in); break;
        }
    }
    if (attest_case_check_inputs(&c) != ATTEST_OK) abort(); /* a mutation broke validity: a bug here */
    fuzz_judge("mla_decode", fuzz_candidate("cpu-mla-decode"), &c);
    attest_case_free(&c);
    return 0;
}
