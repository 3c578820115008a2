"""A DSA indexer candidate in numpy, and a broken variant, served to attest through the bridge.

    attest run --candidate py:python/examples/numpy_indexer.py:indexer --cases 200
    attest run --candidate py:python/examples/numpy_indexer.py:indexer_scale_shift   # fails

Logit of row r at position t < len(r): sum_h w[r, h] * fmax(q[r, h] . k[t], 0) * kscale[t],
in float32, with DeepGEMM's order (relu before the scale, fmax so a NaN dot counts as 0). The
c4-indexer block of 64 positions is read at its byte offsets: 64 x 128 fp8 keys, then 64
float32 scales at byte 8192. Positions past a row's length hold -inf.
"""
import numpy as np

import attest_candidate as ac
from attest_candidate.numerics import E4M3FN

BLOCK = 64
DIM = 128
SCALES = BLOCK * DIM


def row_lengths(p, context_lens):
    """Valid positions of every logits row: MTP slot j of a request of length L sees
    t <= L - next_n + j, clamped to [0, min(L, max_len)]."""
    n = p.next_n
    L = np.repeat(context_lens.astype(np.int64), n)
    j = np.tile(np.arange(n), p.b)
    return np.clip(L - n + j + 1, 0, np.minimum(L, p.max_len))


def compute(t, p, scale_shift=0, relu=np.fmax):
    """relu=np.maximum keeps a NaN dot (torch.relu's order): declare relu_nan=propagates."""
    cache, table = t["cache_bytes"], t["block_table"]
    q, w, out = t["q_fp8"], t["weights"], t["logits"]
    n = p.next_n
    lens = row_lengths(p, t["context_lens"])
    out[...] = -np.inf
    for req in range(p.b):
        rows = slice(req * n, (req + 1) * n)
        longest = int(lens[rows].max())
        if longest == 0:
            continue  # nothing to read: the whole row stays -inf
        nblk = (longest + BLOCK - 1) // BLOCK
        blocks = cache[table[req, :nblk]]                      # [nblk, 8448] bytes
        keys = E4M3FN[blocks[:, :SCALES].reshape(nblk * BLOCK, DIM)[:longest]]
        scales = np.ascontiguousarray(blocks[:, SCALES:SCALES + 4 * BLOCK]).view(np.float32)
        scales = np.roll(scales.reshape(-1), -scale_shift)[:longest]
        qf = E4M3FN[q[req]]                                     # [n, heads, 128]
        dots = np.einsum("jhd,td->jht", qf, keys)               # float32
        logits = (relu(dots, np.float32(0)) * w[rows][:, :, None]).sum(axis=1) * scales
        for j in range(n):
            out[req * n + j, :lens[req * n + j]] = logits[j, :lens[req * n + j]]


@ac.candidate(family="indexer", name="numpy-indexer", conventions={"masking": "-inf"},
              description="numpy float32 indexer")
def indexer(t, p):
    compute(t, p)


@ac.candidate(family="indexer", name="numpy-indexer-scale-shift",
              conventions={"masking": "-inf"},
              description="BROKEN: reads the scale of the next position")
def indexer_scale_shift(t, p):
    compute(t, p, scale_shift=1)
