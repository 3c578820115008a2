"""A top-k selection candidate in numpy, and a broken variant, served to attest through the bridge.

    attest run --kernel topk --candidate py:python/examples/numpy_topk.py:topk --cases 300
    attest run --kernel topk --candidate py:python/examples/numpy_topk.py:topk_pads_unranked  # fails

Row r belongs to request r // next_n and sees the positions t <= L - next_n + j of its request
(L its context length, j = r % next_n), clamped to the row width. It selects the k largest
logits of those positions, NaN and -inf never (they have no rank), sorted by score with equal
scores in position order, -1 padding; the physical index of position t is
block_table[request, t // 64] * 64 + t % 64 (docs/topk.md).
"""
import numpy as np

import attest_candidate as ac

BLOCK = 64


def row_lengths(p, context_lens):
    """Valid positions of every row (the indexer's MTP causal rule)."""
    n = p.next_n
    L = np.repeat(context_lens.astype(np.int64), n)
    j = np.tile(np.arange(n), p.b)
    return np.clip(L - n + j + 1, 0, np.minimum(L, p.width))


def select(t, p, ranked_only=True):
    logits, table = t["logits"], t["block_table"]
    lengths = row_lengths(p, t["context_lens"])
    idx = np.full((p.b * p.next_n, p.k), -1, dtype=np.int32)
    phys = np.full_like(idx, -1)
    for r, n in enumerate(lengths):
        x = logits[r, :n]
        pos = np.arange(n)
        if ranked_only:
            ranked = ~(np.isnan(x) | (x == -np.inf))
            x, pos = x[ranked], pos[ranked]
        # Stable on -x: the largest first, equal scores in position order (NaN sorts last).
        chosen = pos[np.argsort(-x, kind="stable")[:p.k]]
        idx[r, :len(chosen)] = chosen
        phys[r, :len(chosen)] = table[r // p.next_n, chosen // BLOCK] * BLOCK + chosen % BLOCK
    return idx, phys


@ac.candidate(family="topk", name="numpy-topk", order="sorted", outputs="both",
              short_row="by-score", description="numpy argsort per row")
def topk(t, p):
    t["topk_indices"][...], t["topk_physical"][...] = select(t, p)


@ac.candidate(family="topk", name="numpy-topk-pads-unranked", order="sorted", outputs="both",
              short_row="by-score",
              description="broken: fills a short row with its -inf and NaN positions, not -1")
def topk_pads_unranked(t, p):
    # The bug of a kernel that sorts the whole row and keeps the first min(k, len) slots:
    # where fewer than k positions have a rank, -inf and NaN positions fill the rest.
    t["topk_indices"][...], t["topk_physical"][...] = select(t, p, ranked_only=False)
