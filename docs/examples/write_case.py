#!/usr/bin/env python3
"""Write attest case files from raw numpy buffers with h5py alone (no attest code).

    python3 docs/examples/write_case.py [OUT_DIR]

writes OUT_DIR/mla_v4_case.h5 (sparse MLA decode over a DeepSeek-V4 paged fp8 KV cache) and
OUT_DIR/indexer_case.h5 (DSA indexer logits over a c4-indexer key cache), then prints the
`attest reference` commands that compute their reference outputs. The schema is
docs/case-format.md.

The buffers here are made up, but they are exactly what you would capture from your own kernel
launch: the cache pool bytes as the kernel reads them, q as bf16 bit patterns or fp8 bytes, the
indices / page table and lengths as int32. Only numpy and h5py are needed; the fp8 bytes are
chosen directly (any byte but 0x7F / 0xFF, the two NaN codes) so no fp8 library is required.
"""
import math
import os
import sys

import h5py
import numpy as np


def bf16_bits(x):
    """float32 values -> bf16 bit patterns (uint16) by truncation; exact for bf16 values."""
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def random_fp8_bytes(rng, shape):
    """Random finite e4m3fn bytes: magnitude codes 0x00..0x7E (0x7F is NaN), random sign."""
    mag = rng.integers(0, 0x7F, size=shape, dtype=np.uint8)
    sign = rng.integers(0, 2, size=shape, dtype=np.uint8) << 7
    return mag | sign


def write_mla_v4_case(path, seed=1):
    """One sparse-MLA decode case over an mla-v4 cache (584 bytes per token, page-major)."""
    rng = np.random.default_rng(seed)
    P, num_pages = 64, 4                        # tokens per page, pages in the pool
    stride = math.ceil(P * 584 / 576) * 576     # page stride: 37440 for P = 64
    b, s_q, h_q, d_qk, d_v, topk = 2, 1, 8, 512, 512, 32

    # The pool: every byte starts as 0xFF (NaN as fp8, UE8M0 and bf16), so a kernel that reads a
    # slot or padding it should not gets NaN. Then each used token is written at its offsets.
    pool = np.full(num_pages * stride, 0xFF, np.uint8)
    page_table = np.array([[2, 0], [3, 1]], np.int32)   # request r, logical page j -> physical
    seq_len = [100, 64]                                  # tokens per request
    for r in range(b):
        for t in range(seq_len[r]):
            page, slot = page_table[r, t // P], t % P
            base = page * stride
            tok = base + slot * 576
            pool[tok:tok + 448] = random_fp8_bytes(rng, 448)                  # nope, fp8
            rope = bf16_bits(rng.standard_normal(64).astype(np.float32))     # rope, bf16
            pool[tok + 448:tok + 576] = rope.astype("<u2").view(np.uint8)
            sc = base + P * 576 + slot * 8                                   # 7 UE8M0 scales
            pool[sc:sc + 7] = rng.integers(120, 128, size=7, dtype=np.uint8)  # 2^-7 .. 2^0
            # byte sc + 7 is per-token padding: left as 0xFF

    # indices: physical token = page * P + slot, or -1; here each query picks topk tokens of its
    # request (the first one is always its newest token).
    indices = np.full((b, s_q, topk), -1, np.int32)
    for r in range(b):
        logical = rng.choice(seq_len[r], size=min(topk, seq_len[r]), replace=False)
        phys = page_table[r, logical // P] * P + logical % P
        indices[r, 0, :len(phys)] = phys
    q = bf16_bits(rng.standard_normal((b, s_q, h_q, d_qk)).astype(np.float32))
    sink = rng.standard_normal(h_q).astype(np.float32)

    with h5py.File(path, "w") as f:
        f.attrs["attest_schema_version"] = 1
        f.attrs["kind"] = "mla-decode"
        f.attrs["layout"] = "mla-v4"
        f.attrs["page_size"] = P
        f.attrs["page_stride"] = stride
        f.attrs["num_pages"] = num_pages
        for k, v in dict(b=b, s_q=s_q, h_q=h_q, d_qk=d_qk, d_v=d_v, topk=topk).items():
            f.attrs[k] = v
        f.attrs["sm_scale"] = 1.0 / math.sqrt(d_qk)
        f.attrs["lse_convention"] = "excludes_sink"   # FlashMLA's: the returned LSE omits the sink
        f.create_dataset("cache_bytes", data=pool, compression="gzip")
        f.create_dataset("q_bf16", data=q)              # uint16 bit patterns
        f.create_dataset("indices", data=indices)
        f.create_dataset("attn_sink", data=sink)        # optional: its presence turns the sink on


def write_indexer_case(path, seed=2):
    """One DSA indexer case over a c4-indexer cache (8448-byte blocks of 64 positions)."""
    rng = np.random.default_rng(seed)
    num_blocks, b, next_n, heads, head_dim, max_len = 6, 2, 1, 16, 128, 256
    context_lens = np.array([200, 37], np.int32)             # compressed positions per request
    block_table = np.array([[5, 0, 3, 1], [2, 4, 4, 4]], np.int32)

    # Block layout: 64 positions x 128 fp8 bytes, then 64 float32 scales (little-endian).
    cache = np.full((num_blocks, 8448), 0xFF, np.uint8)
    for r in range(b):
        for t in range(context_lens[r]):
            blk, slot = block_table[r, t // 64], t % 64
            cache[blk, slot * 128:(slot + 1) * 128] = random_fp8_bytes(rng, 128)
            scale = np.float32(rng.uniform(0.01, 0.1))
            cache[blk, 8192 + 4 * slot:8192 + 4 * slot + 4] = np.array([scale], "<f4").view(np.uint8)
    q = random_fp8_bytes(rng, (b, next_n, heads, head_dim))
    weights = rng.standard_normal((b * next_n, heads)).astype(np.float32)

    with h5py.File(path, "w") as f:
        f.attrs["attest_schema_version"] = 1
        f.attrs["kind"] = "indexer"
        f.attrs["layout"] = "c4-indexer"
        for k, v in dict(num_blocks=num_blocks, b=b, next_n=next_n, heads=heads,
                         head_dim=head_dim, max_len=max_len).items():
            f.attrs[k] = v
        f.attrs["masking"] = "-inf"       # what logits past a row's length hold
        f.attrs["topk"] = 32              # optional: also select the top 32 positions per row
        f.create_dataset("cache_bytes", data=cache, compression="gzip")
        f.create_dataset("block_table", data=block_table)
        f.create_dataset("context_lens", data=context_lens)
        f.create_dataset("q_fp8", data=q)
        f.create_dataset("weights", data=weights)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    mla = os.path.join(out_dir, "mla_v4_case.h5")
    idx = os.path.join(out_dir, "indexer_case.h5")
    write_mla_v4_case(mla)
    write_indexer_case(idx)
    print(f"wrote {mla} and {idx}; compute their reference outputs with:")
    print(f"  build/attest reference {mla} --out {os.path.join(out_dir, 'mla_v4_ref.h5')}")
    print(f"  build/attest reference {idx} --out {os.path.join(out_dir, 'indexer_ref.h5')}")


if __name__ == "__main__":
    main()
