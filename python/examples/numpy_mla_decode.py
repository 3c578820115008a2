"""A sparse MLA decode candidate in numpy, and a broken variant, served through the bridge.

    attest run --candidate py:python/examples/numpy_mla_decode.py:mla_decode --cases 200
    attest run --candidate py:python/examples/numpy_mla_decode.py:mla_decode_log2_lse  # fails
    attest run --candidate py:python/examples/numpy_mla_decode.py:mla_decode_int32_offsets \
        --high-pools 1000                      # fails: every case's pool moved past 2^31 bytes

Each query attends over the valid slots of its top-k list (index != -1, slot < topk_length)
and, when the case has one, of the extra scope's list, in one softmax of sm_scale * q . K in
float32. K is dequantized from the cache bytes at the layout's offsets (mla-v4: 576-byte token
records then 8 bytes of UE8M0 scales per token at 576 * page_size; mla-v32: 656-byte records of
512 fp8, 4 float32 scales, 64 bf16 rope). V is K's first 512 dims. A sink scales the output by
1 / (1 + exp(sink - lse)); the returned LSE excludes it. A query with no valid slot returns
out = 0 and lse = +inf (FlashMLA).
"""
import numpy as np

import attest_candidate as ac
from attest_candidate.numerics import E4M3FN, UE8M0, bf16_to_f32, f32_to_bf16


def dequant(cache, layout, page_size, stride, idx, int32_offsets=False):
    """K rows of physical tokens idx (int64 array) as float32 [len(idx), k_dim]. int32_offsets:
    the page's byte offset wraps in 32 bits, as in a kernel that multiplies int32 indices."""
    page, slot = idx // page_size, idx % page_size
    base = page * stride
    if int32_offsets:
        base = base.astype(np.int32).astype(np.int64)
    if layout == "mla-v4":
        rec = cache[(base + slot * 576)[:, None] + np.arange(576)]
        sc = UE8M0[cache[(base + 576 * page_size + slot * 8)[:, None] + np.arange(7)]]
        nope = E4M3FN[rec[:, :448]] * np.repeat(sc, 64, axis=1)
        rope = bf16_to_f32(np.ascontiguousarray(rec[:, 448:576]).view(np.uint16))
    else:
        rec = cache[(base + slot * 656)[:, None] + np.arange(656)]
        sc = np.ascontiguousarray(rec[:, 512:528]).view(np.float32)
        nope = E4M3FN[rec[:, :512]] * np.repeat(sc, 128, axis=1)
        rope = bf16_to_f32(np.ascontiguousarray(rec[:, 528:656]).view(np.uint16))
    return np.concatenate([nope, rope], axis=1).astype(np.float32)


def valid_slots(indices, length, ends_list=False):
    """Indices of the slots that count: below length and not -1 (with ends_list, only those
    before the first -1: declare minus_one=ends_list)."""
    if ends_list:
        holes = np.flatnonzero(indices[:length] == -1)
        length = holes[0] if holes.size else length
    slots = np.arange(indices.shape[0])
    return indices[(slots < length) & (indices != -1)].astype(np.int64)


def compute(t, p, log2_lse=False, lonely_lse=np.inf, ends_list=False, int32_offsets=False):
    """lonely_lse: the LSE of a query with no valid slot (declare lonely_lse to match)."""
    q = bf16_to_f32(t["q_bf16"])                 # [b, s_q, h, d_qk]
    out, lse = t["out_bf16"], t["lse"]
    sink = t["attn_sink"] if p.has_sink else None
    for b in range(p.b):
        n_main = int(np.clip(t["topk_length"][b], 0, p.topk)) if p.has_topk_length else p.topk
        if p.has_extra:
            n_extra = (int(np.clip(t["extra_topk_length"][b], 0, p.extra_topk))
                       if p.has_extra_topk_length else p.extra_topk)
        for s in range(p.s_q):
            keys = [dequant(t["cache_bytes"], p.layout, p.page_size, p.page_stride,
                            valid_slots(t["indices"][b, s], n_main, ends_list), int32_offsets)]
            if p.has_extra:
                keys.append(dequant(t["extra_cache_bytes"], p.layout, p.extra_page_size,
                                    p.extra_page_stride,
                                    valid_slots(t["extra_indices"][b, s], n_extra, ends_list),
                                    int32_offsets))
            k = np.concatenate(keys, axis=0)
            if k.shape[0] == 0:
                out[b, s] = 0
                lse[b, s] = lonely_lse
                continue
            scores = np.float32(p.sm_scale) * (q[b, s] @ k.T)     # [h, n]
            m = scores.max(axis=1, keepdims=True)
            e = np.exp(scores - m)
            l = e.sum(axis=1, keepdims=True)
            o = (e @ k[:, :p.d_v]) / l
            row_lse = (m + np.log(l))[:, 0]
            if sink is not None:
                o = o / (1.0 + np.exp(sink - row_lse))[:, None]
            out[b, s] = f32_to_bf16(o.astype(np.float32))
            lse[b, s] = row_lse / np.log(2.0) if log2_lse else row_lse


@ac.candidate(family="mla-decode", name="numpy-mla-decode",
              conventions={"lse": "excludes_sink"}, description="numpy float32 sparse MLA decode")
def mla_decode(t, p):
    compute(t, p)


@ac.candidate(family="mla-decode", name="numpy-mla-decode-log2-lse",
              conventions={"lse": "excludes_sink"},
              description="BROKEN: returns the LSE in base 2")
def mla_decode_log2_lse(t, p):
    compute(t, p, log2_lse=True)


@ac.candidate(family="mla-decode", name="numpy-mla-decode-int32-offsets",
              conventions={"lse": "excludes_sink"},
              description="BROKEN: page byte offsets in 32 bits (wrap past 2^31 bytes)")
def mla_decode_int32_offsets(t, p):
    compute(t, p, int32_offsets=True)
