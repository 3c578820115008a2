"""A Triton indexer in the production design, run on the GPU through the bridge.

    attest run --candidate py:python/examples/triton_indexer.py:indexer --cases 2000
    attest run --candidate py:python/examples/triton_indexer.py:indexer_scale_shift  # fails
    attest run --candidate py:python/examples/triton_indexer.py:indexer_frees_pages  # INPUT_MODIFIED

One program per (request, 64-position page); the grid is (batch, pages of the widest row), fixed
by the maximum context and not by the lengths, so one launch shape serves every step and can be
captured in a CUDA graph. A page past its request's length writes -inf without reading the page
table or the cache. Inside a page: the 64 fp8 keys and their float32 scales are loaded from the
flat c4-indexer block (keys at 128t, scales at 8192 + 4t), and for each MTP row the heads'
dots in float32, relu (Triton's maximum drops NaN: DeepGEMM's order), weighted sum, times the
position's scale.
"""
import torch
import triton
import triton.language as tl

import attest_candidate as ac

PAGE, DIM, SCALES, BLOCK_BYTES = 64, 128, 64 * 128, 8448
MAX_HEADS = 64


@triton.jit(do_not_specialize=["next_n", "heads", "max_len", "blocks_per_req", "scale_shift",
                               "free_pages"])
def _indexer_kernel(cache, table, lens, q, w, out, next_n, heads, max_len, blocks_per_req,
                    scale_shift, free_pages,
                    BLOCK_H: tl.constexpr, D: tl.constexpr, P: tl.constexpr):
    req = tl.program_id(0)
    page = tl.program_id(1)
    L = tl.load(lens + req)
    t = page * P + tl.arange(0, P)              # positions of this page
    in_row = t < max_len
    req_len = tl.minimum(L, max_len)
    if page * P >= req_len:
        # Past the length: -inf for every row, and neither the table nor the cache is read.
        if free_pages:  # the broken variant: "frees" the page in its own page table
            if page < blocks_per_req:
                tl.store(table + req * blocks_per_req + page, -1)
        for j in range(next_n):
            row = req * next_n + j
            tl.store(out + row.to(tl.int64) * max_len + t, float("-inf"), mask=in_row)
    else:
        blk = tl.load(table + req * blocks_per_req + page).to(tl.int64)
        base = cache + blk * (P * D + 4 * P)
        slot = tl.arange(0, P)
        d = tl.arange(0, D)
        kb = tl.load(base + slot[:, None] * D + d[None, :])               # uint8 [P, D]
        k = kb.to(tl.float8e4nv, bitcast=True).to(tl.float32)
        sslot = (slot + scale_shift) % P
        scale = tl.load((base + P * D + 4 * sslot).to(tl.pointer_type(tl.float32)))
        h = tl.arange(0, BLOCK_H)
        hmask = h < heads
        for j in range(next_n):
            row = req * next_n + j
            qrow = q + (row.to(tl.int64) * heads) * D
            qb = tl.load(qrow + h[:, None] * D + d[None, :], mask=hmask[:, None], other=0)
            qf = qb.to(tl.float8e4nv, bitcast=True).to(tl.float32)          # [BLOCK_H, D]
            dots = tl.dot(qf, tl.trans(k), input_precision="ieee")          # [BLOCK_H, P]
            wj = tl.load(w + row * heads + h, mask=hmask, other=0.0)
            relu = tl.maximum(dots, 0.0)
            logit = tl.sum(relu * wj[:, None], axis=0) * scale
            row_len = tl.minimum(tl.maximum(L - next_n + j + 1, 0), req_len)
            logit = tl.where(t < row_len, logit, float("-inf"))
            tl.store(out + row.to(tl.int64) * max_len + t, logit, mask=in_row)


def launch(t, p, scale_shift=0, free_pages=0):
    if p.heads > MAX_HEADS or p.head_dim != DIM:
        raise ValueError(f"heads {p.heads} > {MAX_HEADS} or head_dim {p.head_dim} != {DIM}")
    grid = (p.b, triton.cdiv(p.max_len, PAGE))
    _indexer_kernel[grid](t["cache_bytes"], t["block_table"], t["context_lens"], t["q_fp8"],
                          t["weights"], t["logits"], p.next_n, p.heads, p.max_len,
                          p.blocks_per_req, scale_shift, free_pages,
                          BLOCK_H=MAX_HEADS, D=DIM, P=PAGE)


def _supports(p):
    return p.heads <= MAX_HEADS and p.head_dim == DIM


@ac.candidate(family="indexer", name="triton-indexer", conventions={"masking": "-inf"},
              device="cuda", supports=_supports,
              description="Triton indexer, one program per (request, page)")
def indexer(t, p):
    launch(t, p)


@ac.candidate(family="indexer", name="triton-indexer-scale-shift",
              conventions={"masking": "-inf"}, device="cuda", supports=_supports,
              description="BROKEN: reads the scale of the next position")
def indexer_scale_shift(t, p):
    launch(t, p, scale_shift=1)


@ac.candidate(family="indexer", name="triton-indexer-frees-pages",
              conventions={"masking": "-inf"}, device="cuda", supports=_supports,
              description="BROKEN: writes -1 into its page table for pages past the length")
def indexer_frees_pages(t, p):
    launch(t, p, free_pages=1)
