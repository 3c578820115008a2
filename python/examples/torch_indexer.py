"""A PyTorch indexer written the way reference code is (gather the request's pages, dequantize,
one einsum), run on the GPU through the bridge with device="cuda".

    attest run --candidate py:python/examples/torch_indexer.py:indexer --cases 2000

attest_candidate copies the whole case to the GPU (the cache as one flat uint8 tensor with its
production bytes, outputs poisoned, canaries around every tensor) and copies it all back after
the function returns, so unwritten outputs, stray writes and modified inputs are still caught.
"""
import torch

import attest_candidate as ac

torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, as the policy expects

BLOCK, DIM, SCALES = 64, 128, 64 * 128


@ac.candidate(family="indexer", name="torch-indexer", conventions={"masking": "-inf"},
              device="cuda", description="PyTorch reference-style indexer")
def indexer(t, p):
    cache, table, lens = t["cache_bytes"], t["block_table"], t["context_lens"].tolist()
    q = t["q_fp8"].view(torch.float8_e4m3fn).float()          # [b, next_n, heads, 128]
    w, out = t["weights"], t["logits"]
    n = p.next_n
    out.fill_(float("-inf"))
    for req in range(p.b):
        longest = min(lens[req], p.max_len)
        if longest <= 0:
            continue
        nblk = (longest + BLOCK - 1) // BLOCK
        blocks = cache[table[req, :nblk].long()]                 # [nblk, 8448] uint8
        keys = blocks[:, :SCALES].reshape(-1, DIM)[:longest].view(torch.float8_e4m3fn).float()
        scales = blocks[:, SCALES:SCALES + 4 * BLOCK].contiguous().view(torch.float32)
        scales = scales.reshape(-1)[:longest]
        dots = torch.einsum("jhd,td->jht", q[req], keys)
        # DeepGEMM's order: a NaN dot counts as 0 (torch.relu would keep the NaN)
        relu = torch.where(dots > 0, dots, torch.zeros_like(dots))
        logits = (relu * w[req * n:(req + 1) * n, :, None]).sum(dim=1) * scales
        for j in range(n):
            row_len = max(0, min(lens[req] - n + j + 1, lens[req], p.max_len))
            out[req * n + j, :row_len] = logits[j, :row_len]
