#!/usr/bin/env python3
"""Cross-check of attest's C references against a second, independent numpy implementation.

The numpy side works from the raw bytes of a case with its own decoding (ml_dtypes for fp8 e4m3fn,
UE8M0 and bf16; little-endian float32 scales read by numpy) and vectorised float64 math, so it
shares no code and no loop structure with references/src/*.c.

1. It is anchored first: on every group of ../shared/oracles (FlashMLA's and DeepGEMM's own
   reference outputs) it must agree as the oracle README says a float64 reference does.
2. It then draws random cases that aim at the corners (NaN fp8 bytes, subnormals, +-448, zero-length
   requests, lengths at page boundaries +-1, all-invalid index rows, +-inf sinks, garbage past
   topk_length, both LSE conventions, all masking conventions, MTP rows, extra scopes), writes each
   as a case file with h5py alone, runs `$ATTEST_CLI reference CASE.h5 --out OUT.h5` and compares.

Exit 0 on agreement, 1 on disagreement, 77 (skip) when the CLI is not available.
"""
import os
import subprocess
import sys
import tempfile

import h5py
import ml_dtypes
import numpy as np

FP8 = ml_dtypes.float8_e4m3fn
E8M0 = ml_dtypes.float8_e8m0fnu
BF16 = ml_dtypes.bfloat16

IDX_BLOCK = 64          # positions per c4-indexer block
IDX_BLOCK_BYTES = 8448  # 64 * 128 fp8 + 64 * fp32 scales


# --------------------------------------------------------------------------------------------
# Decoding raw bytes
# --------------------------------------------------------------------------------------------
def dec_fp8(u8):
    return np.ascontiguousarray(u8, dtype=np.uint8).view(FP8).astype(np.float64)


def dec_ue8m0(u8):
    return np.ascontiguousarray(u8, dtype=np.uint8).view(E8M0).astype(np.float64)


def dec_bf16_u16(u16):
    return np.ascontiguousarray(u16, dtype=np.uint16).view(BF16).astype(np.float64)


def dec_bf16_bytes(u8):
    return np.ascontiguousarray(u8, dtype=np.uint8).view("<u2").view(BF16).astype(np.float64)


def dec_f32le(u8):
    return np.ascontiguousarray(u8, dtype=np.uint8).view("<f4").astype(np.float64)


# --------------------------------------------------------------------------------------------
# Indexer (docs/kernels.md sections 4-5)
# --------------------------------------------------------------------------------------------
def idx_row_length(L, next_n, j, max_len):
    return int(max(0, min(L - next_n + j + 1, L, max_len)))


def np_indexer_logits(c):
    """logits [rows, max_len] float64 in the kernel order; masked per c['masking']."""
    a = c["attrs"]
    nb, b, nn, H, D, max_len = (int(a[k]) for k in
                                ("num_blocks", "b", "next_n", "heads", "head_dim", "max_len"))
    blocks = np.asarray(c["cache_bytes"], np.uint8).reshape(nb, IDX_BLOCK_BYTES)
    kfp8 = dec_fp8(blocks[:, :IDX_BLOCK * 128]).reshape(nb * IDX_BLOCK, 128)
    kscale = dec_f32le(blocks[:, IDX_BLOCK * 128:]).reshape(nb * IDX_BLOCK)
    q = dec_fp8(c["q_fp8"]).reshape(b * nn, H, D)
    w = np.asarray(c["weights"], np.float64).reshape(b * nn, H)
    bt = np.asarray(c["block_table"]).reshape(b, -1)
    lens = np.asarray(c["context_lens"]).reshape(b)
    fill = {"-inf": -np.inf, "0.0": 0.0}.get(a.get("masking", "-inf"), np.nan)
    out = np.full((b * nn, max_len), fill)
    bound = np.zeros((b * nn, max_len))  # sum of |terms|, for a rounding-error tolerance
    for r in range(b * nn):
        L = idx_row_length(int(lens[r // nn]), nn, r % nn, max_len)
        t = np.arange(L)
        phys = bt[r // nn, t // IDX_BLOCK].astype(np.int64) * IDX_BLOCK + t % IDX_BLOCK
        with np.errstate(invalid="ignore"):
            dots = np.einsum("hd,td->ht", q[r], kfp8[phys])
            if a.get("relu_nan", "to_zero") == "propagates":
                # README order, torch's relu: relu(dot(q, k * kscale)), a NaN dot stays NaN
                # (np.maximum propagates it) and a negative scale flips the sign first.
                relu = np.maximum(dots * kscale[phys], 0.0)
                out[r, :L] = (w[r][:, None] * relu).sum(axis=0)
                bound[r, :L] = (np.abs(w[r])[:, None] * relu).sum(axis=0)
            else:
                relu = np.where(np.isnan(dots), 0.0, np.maximum(dots, 0.0))  # fmaxf(dot, 0)
                out[r, :L] = (w[r][:, None] * relu).sum(axis=0) * kscale[phys]
                bound[r, :L] = (np.abs(w[r])[:, None] * relu).sum(axis=0) * np.abs(kscale[phys])
    return out, bound


def np_topk(row, L, k, short_identity):
    """The k largest of row[:L] (NaN and -inf never chosen), score desc then position asc."""
    if short_identity and L <= k:
        sel = np.arange(L)
    else:
        v = row[:L]
        ok = np.nonzero(~np.isnan(v) & (v != -np.inf))[0]
        order = np.lexsort((ok, -v[ok]))
        sel = ok[order][:k]
    res = np.full(k, -1, np.int64)
    res[:len(sel)] = sel
    return res


# --------------------------------------------------------------------------------------------
# Sparse MLA decode (docs/kernels.md sections 2, 3, 6)
# --------------------------------------------------------------------------------------------
def decode_pool(layout, pool, P, stride, num_pages):
    """Every token of a pool dequantized: [num_pages * P, k_dim] float64."""
    pages = np.asarray(pool, np.uint8).reshape(num_pages, stride)
    if layout == "mla-v4":
        data = pages[:, :P * 576].reshape(num_pages, P, 576)
        nope = dec_fp8(data[:, :, :448]).reshape(num_pages, P, 7, 64)
        rope = dec_bf16_bytes(data[:, :, 448:576]).reshape(num_pages, P, 64)
        sc = dec_ue8m0(pages[:, P * 576:P * 584].reshape(num_pages, P, 8)[:, :, :7])
        with np.errstate(invalid="ignore", over="ignore"):
            k = np.concatenate([(nope * sc[..., None]).reshape(num_pages, P, 448), rope], axis=2)
        return k.reshape(num_pages * P, 512)
    if layout == "mla-v32":
        rec = pages[:, :P * 656].reshape(num_pages, P, 656)
        nope = dec_fp8(rec[:, :, :512]).reshape(num_pages, P, 4, 128)
        sc = dec_f32le(rec[:, :, 512:528]).reshape(num_pages, P, 4)
        rope = dec_bf16_bytes(rec[:, :, 528:656]).reshape(num_pages, P, 64)
        with np.errstate(invalid="ignore", over="ignore"):
            k = np.concatenate([(nope * sc[..., None]).reshape(num_pages, P, 512), rope], axis=2)
        return k.reshape(num_pages * P, 576)
    raise ValueError("unknown layout " + str(layout))


def np_mla_decode(c, true_mode=False):
    """out [b, s_q, h_q, d_v] and lse [b, s_q, h_q] in float64; true_mode reads kv_true rows
    (by physical token index) instead of the dequantized cache."""
    a = c["attrs"]
    layout = a["layout"]
    b, s_q, h_q, d_qk, d_v = (int(a[k]) for k in ("b", "s_q", "h_q", "d_qk", "d_v"))
    sm = float(np.float32(a["sm_scale"]))
    scopes = [("", int(a["page_size"]), int(a["page_stride"]), int(a["num_pages"]), int(a["topk"]))]
    if "extra_indices" in c:
        scopes.append(("extra_", int(a["extra_page_size"]), int(a["extra_page_stride"]),
                       int(a["extra_num_pages"]), int(a["extra_topk"])))
    pools = []
    for pre, P, stride, npages, topk in scopes:
        if true_mode:
            K = np.asarray(c[pre + "kv_true"], np.float64).reshape(npages * P, d_qk)
        else:
            K = decode_pool(layout, c[pre + "cache_bytes"], P, stride, npages)
        idx = np.asarray(c[pre + "indices"]).reshape(b, s_q, topk)
        tl = c.get(pre + "topk_length")
        pools.append((K, idx, None if tl is None else np.asarray(tl).reshape(b), topk))
    q = dec_bf16_u16(c["q_bf16"]).reshape(b, s_q, h_q, d_qk)
    sink = c.get("attn_sink")
    includes = a.get("lse_convention", "excludes_sink") == "includes_sink"
    out = np.zeros((b, s_q, h_q, d_v))
    lse = np.zeros((b, s_q, h_q))
    for bi in range(b):
        for si in range(s_q):
            rows = []
            for K, idx, tl, topk in pools:
                lim = topk if tl is None else min(max(int(tl[bi]), 0), topk)
                sel = idx[bi, si, :lim]
                rows.append(K[sel[sel != -1]])
            Ks = np.concatenate(rows, axis=0)
            if Ks.shape[0] == 0:
                lse[bi, si, :] = np.inf  # lonely query: out stays 0
                continue
            with np.errstate(invalid="ignore", over="ignore"):
                s = sm * (q[bi, si] @ Ks.T)                       # [h_q, n]
                m = np.max(np.where(np.isnan(s), -np.inf, s), axis=1, keepdims=True)
                e = np.exp(s - m)
                tot = e.sum(axis=1)
                l = m[:, 0] + np.log(tot)
                o = (e @ Ks[:, :d_v]) / tot[:, None]
                if sink is not None:
                    sk = np.asarray(sink, np.float64)
                    o = o / (1.0 + np.exp(sk - l))[:, None]
                    if includes:
                        l = np.logaddexp(l, sk)
            out[bi, si] = o
            lse[bi, si] = l
    return out, lse


def np_indexer_true(c):
    """True-mode logits: sum_h w * relu(q_true . k_true), k_true by physical position."""
    a = c["attrs"]
    b, nn, H, D, max_len = (int(a[k]) for k in ("b", "next_n", "heads", "head_dim", "max_len"))
    kt = np.asarray(c["k_true"], np.float64).reshape(-1, D)
    qt = np.asarray(c["q_true"], np.float64).reshape(b * nn, H, D)
    w = np.asarray(c["weights"], np.float64).reshape(b * nn, H)
    bt = np.asarray(c["block_table"]).reshape(b, -1)
    fill = {"-inf": -np.inf, "0.0": 0.0}.get(a.get("masking", "-inf"), np.nan)
    out = np.full((b * nn, max_len), fill)
    bound = np.zeros((b * nn, max_len))
    for r in range(b * nn):
        L = idx_row_length(int(c["context_lens"][r // nn]), nn, r % nn, max_len)
        t = np.arange(L)
        phys = bt[r // nn, t // IDX_BLOCK].astype(np.int64) * IDX_BLOCK + t % IDX_BLOCK
        with np.errstate(invalid="ignore"):
            dots = qt[r] @ kt[phys].T
            relu = np.where(np.isnan(dots), 0.0, np.maximum(dots, 0.0))
            out[r, :L] = (w[r][:, None] * relu).sum(axis=0)
            bound[r, :L] = (np.abs(w[r])[:, None] * relu).sum(axis=0)
    return out, bound


# --------------------------------------------------------------------------------------------
# Anchor: the numpy implementation against the upstream oracles
# --------------------------------------------------------------------------------------------
def bf16_step(x):
    x = np.abs(x)
    e = np.floor(np.log2(np.where(x >= 2.0 ** -126, x, 1.0)))
    return np.where(x >= 2.0 ** -126, 2.0 ** (e - 7), 2.0 ** -133)


def load_group(g):
    c = {"attrs": dict(g.attrs)}
    for k in g:
        if isinstance(g[k], h5py.Dataset):
            c[k] = g[k][()]
    return c


def anchor_on_oracles(shared):
    """Returns the number of oracle groups the numpy implementation failed."""
    bad = 0
    folder = os.path.join(shared, "oracles")
    with h5py.File(os.path.join(folder, "upstream_indexer.h5"), "r") as f:
        for name in sorted(f):
            c = load_group(f[name])
            lg, _ = np_indexer_logits(c)
            ref = c["logits"].astype(np.float64)
            fin = np.isfinite(ref)
            ok = bool((np.isfinite(lg) == fin).all() and (lg[~fin] == ref[~fin]).all())
            rowmax = np.max(np.where(fin, np.abs(ref), 0), axis=1, keepdims=True)
            dev = np.max(np.where(fin, np.abs(np.where(fin, lg, 0) - np.where(fin, ref, 0)), 0)
                         / np.maximum(rowmax, 1e-300))
            ok &= dev <= 1e-6
            nn, ml = int(c["attrs"]["next_n"]), int(c["attrs"]["max_len"])
            for r in range(lg.shape[0]):
                L = idx_row_length(int(c["context_lens"][r // nn]), nn, r % nn, ml)
                mine = np_topk(lg[r], L, 512, False)
                theirs = c["topk512_set"][r]
                ok &= set(mine[mine >= 0].tolist()) == set(theirs[theirs >= 0].tolist())
            print(f"  numpy vs oracle {name:22s} logits max|d|/row max {dev:.2e}, top-512 sets "
                  f"{'equal' if ok else 'DIFFER'}")
            bad += not ok
    for fn in ("upstream_mla_v4.h5", "upstream_mla_v32.h5"):
        with h5py.File(os.path.join(folder, fn), "r") as f:
            for name in sorted(f):
                c = load_group(f[name])
                out, lse = np_mla_decode(c)
                rl = c["lse"].astype(np.float64)
                ro = dec_bf16_u16(c["out_bf16"])
                fl = np.isfinite(rl)
                ok = bool((np.isinf(lse) == np.isinf(rl)).all() and (lse[~fl] == rl[~fl]).all())
                rel = float(np.max(np.abs(lse[fl] - rl[fl]) / np.abs(rl[fl]))) if fl.any() else 0.0
                d = np.abs(out - ro)
                excess = float(np.max(d - bf16_step(ro)))
                ok &= rel <= 5e-7 and excess <= 1e-5 * np.abs(ro).max()
                print(f"  numpy vs oracle {name:22s} lse max rel {rel:.2e}, out beyond one bf16 "
                      f"step {max(excess, 0) / np.abs(ro).max():.2e} of max|out|"
                      f"{'' if ok else '  DIFFER'}")
                bad += not ok
    return bad


# --------------------------------------------------------------------------------------------
# Random cases aimed at the corners
# --------------------------------------------------------------------------------------------
SUBNORMALS = np.array([s | m for s in (0x00, 0x80) for m in range(1, 8)], np.uint8)


def fp8_bytes(rng, n, nan_frac, cov):
    """Random e4m3fn bytes mixing ordinary values, subnormals, +-448, zeros and (optionally) NaN."""
    u = rng.random(n)
    b = rng.integers(0, 256, n, dtype=np.uint8)
    b[(b & 0x7F) == 0x7F] = 0x3C  # ordinary values only, specials added below
    sub = u < 0.06
    b[sub] = rng.choice(SUBNORMALS, int(sub.sum()))
    big = (u >= 0.06) & (u < 0.10)
    b[big] = rng.choice(np.array([0x7E, 0xFE], np.uint8), int(big.sum()))
    zero = (u >= 0.10) & (u < 0.14)
    b[zero] = rng.choice(np.array([0x00, 0x80], np.uint8), int(zero.sum()))
    nan = u >= 1.0 - nan_frac
    b[nan] = rng.choice(np.array([0x7F, 0xFF], np.uint8), int(nan.sum()))
    cov["fp8 subnormal bytes"] += int(sub.sum())
    cov["fp8 +-448 bytes"] += int(big.sum())
    cov["fp8 NaN bytes"] += int(nan.sum())
    return b


def rand_indexer_case(rng, cov):
    b = int(rng.integers(1, 4))
    nn = int(rng.choice([1, 1, 2, 3]))
    H = int(rng.choice([1, 2, 4, 8]))
    edges = [0, 1, 63, 64, 65, 127, 128, 129]
    lens = np.array([int(rng.choice(edges)) if rng.random() < 0.6 else int(rng.integers(0, 260))
                     for _ in range(b)], np.int32)
    lens[rng.random(b) < 0.1] = 0
    bpr = max(1, -(-int(lens.max()) // IDX_BLOCK)) + int(rng.integers(0, 2))
    max_len = max(1, int(lens.max())) + int(rng.integers(0, 70))
    nb = b * bpr + int(rng.integers(0, 3))
    perm = rng.permutation(nb)[:b * bpr].astype(np.int32).reshape(b, bpr)
    cache = np.full((nb, IDX_BLOCK_BYTES), 0xFF, np.uint8)  # NaN data and NaN scales
    nan_frac = 0.02 if rng.random() < 0.4 else 0.0
    for r in range(b):
        t = np.arange(int(lens[r]))
        blk, slot = perm[r, t // IDX_BLOCK], t % IDX_BLOCK
        data = fp8_bytes(rng, len(t) * 128, nan_frac, cov).reshape(len(t), 128)
        cache[blk[:, None], slot[:, None] * 128 + np.arange(128)] = data
        u = rng.random(len(t))
        sc = (rng.random(len(t)) * 0.05).astype(np.float32)  # raw amax/448 style
        sc[u < 0.3] = 2.0 ** rng.integers(-12, 0, int((u < 0.3).sum()))
        sc[(u >= 0.30) & (u < 0.33)] = 1e-40    # float32 subnormal
        sc[(u >= 0.33) & (u < 0.35)] = 0.0
        sc[(u >= 0.35) & (u < 0.37)] = -0.5     # kernel and README orders part here
        if nan_frac:
            sc[(u >= 0.37) & (u < 0.38)] = np.nan
        cov["float32 subnormal / zero / negative scales"] += int(((u >= 0.3) & (u < 0.37)).sum())
        sb = np.frombuffer(sc.astype("<f4").tobytes(), np.uint8).reshape(len(t), 4)
        cache[blk[:, None], 8192 + slot[:, None] * 4 + np.arange(4)] = sb
    w = rng.standard_normal((b * nn, H)).astype(np.float32)
    w[rng.random(w.shape) < 0.1] = 0.0
    if rng.random() < 0.3:  # -inf logits inside the valid length: top-k must skip them
        rows = rng.permutation(b * nn)
        w[rows[0], int(rng.integers(0, H))] = -np.inf
        if len(rows) > 1:
            w[rows[1], int(rng.integers(0, H))] = np.inf
        cov["cases with +-inf weights"] += 1
    masking = str(rng.choice(["-inf", "0.0", "unspecified"]))
    topk = int(rng.choice([0, 1, 8, 64, 200, 300]))
    rule = "short_identity" if rng.random() < 0.3 else "by_score"
    if rng.random() < 0.25 and lens.max() > 0:
        topk = int(lens.max())  # the last MTP row of the longest request has L == k exactly
        cov["top-k with L == k"] += 1
    attrs = dict(kind="indexer", layout="c4-indexer", block_size=64, block_bytes=8448,
                 num_blocks=nb, b=b, next_n=nn, heads=H, head_dim=128, max_len=max_len,
                 blocks_per_req=bpr, masking=masking, topk=topk, topk_rule=rule)
    # The case's relu_nan picks the order `attest reference` computes (without --order), as the
    # judge's reference does: a file's reference is the one its cases are judged against.
    if rng.random() < 0.35:
        attrs["relu_nan"] = "propagates"
        cov["relu_nan propagates (README order)"] += 1
    c = {"attrs": attrs, "cache_bytes": cache, "block_table": perm, "context_lens": lens,
         "q_fp8": fp8_bytes(rng, b * nn * H * 128, nan_frac, cov).reshape(b, nn, H, 128),
         "weights": w}
    if rng.random() < 0.4:
        c["k_true"] = rng.standard_normal((nb * IDX_BLOCK, 128)).astype(np.float32)
        c["q_true"] = rng.standard_normal((b, nn, H, 128)).astype(np.float32)
        cov["true-mode cases"] += 1
    cov["indexer cases"] += 1
    cov["masking " + masking] += 1
    cov["MTP cases (next_n > 1)"] += nn > 1
    cov["zero-length requests"] += int((lens == 0).sum())
    cov["lengths at a block edge +-1"] += int(np.isin(lens, [63, 64, 65, 127, 128, 129]).sum())
    return c


def mla_pool(rng, layout, P, stride, npages, used, nan_frac, cov):
    pool = np.full((npages, stride), 0xFF, np.uint8)  # every unused byte is NaN
    pg, t = np.divmod(np.asarray(used, np.int64), P)
    n = len(pg)
    rope = rng.standard_normal((n, 64)).astype(np.float32)
    rope[rng.random(n) < 0.1, :4] = np.float32(1e-39)  # bf16 subnormals
    rope_b = np.frombuffer(rope.astype(BF16).tobytes(), np.uint8).reshape(n, 128)
    if layout == "mla-v4":
        base = t[:, None] * 576
        pool[pg[:, None], base + np.arange(448)] = fp8_bytes(rng, n * 448, nan_frac,
                                                             cov).reshape(n, 448)
        pool[pg[:, None], base + 448 + np.arange(128)] = rope_b
        sc = rng.integers(118, 126, (n, 7)).astype(np.uint8)
        sc[rng.random(n) < 0.05, 0] = 0  # 2^-127
        pool[pg[:, None], P * 576 + t[:, None] * 8 + np.arange(7)] = sc
    else:
        base = t[:, None] * 656
        pool[pg[:, None], base + np.arange(512)] = fp8_bytes(rng, n * 512, nan_frac,
                                                             cov).reshape(n, 512)
        sc = (2.0 ** rng.integers(-9, -2, (n, 4))).astype(np.float32)
        raw = rng.random(n) < 0.5  # raw amax/448 style, not powers of two
        sc[raw] = (rng.random((int(raw.sum()), 4)) * 0.05).astype(np.float32)
        sb = np.frombuffer(sc.astype("<f4").tobytes(), np.uint8).reshape(n, 16)
        pool[pg[:, None], base + 512 + np.arange(16)] = sb
        pool[pg[:, None], base + 528 + np.arange(128)] = rope_b
    return pool.reshape(-1)


def mla_scope(rng, layout, b, s_q, cov):
    P = int(rng.choice([1, 2, 3, 61, 64]))
    if layout == "mla-v4":
        stride = -(-P * 584 // 576) * 576
    else:
        stride = P * 656 + (656 if rng.random() < 0.5 else 0)
    npages = int(rng.integers(1, 5)) if P > 8 else int(rng.integers(2, 12))
    ntok = npages * P
    nused = max(1, int(ntok * rng.uniform(0.2, 0.7)))
    used = rng.choice(ntok, nused, replace=False)
    unused = np.setdiff1d(np.arange(ntok), used)
    topk = int(rng.integers(1, 40))
    idx = rng.choice(used, (b, s_q, topk)).astype(np.int32)
    idx[rng.random(idx.shape) < 0.2] = -1
    for bi in range(b):
        for si in range(s_q):
            if rng.random() < 0.15:
                idx[bi, si] = -1
                cov["all-invalid index rows"] += 1
    tl = None
    if rng.random() < 0.5:
        tl = rng.integers(0, topk + 1, b).astype(np.int32)
        tl[rng.random(b) < 0.25] = 0
        cov["topk_length = 0 (zero-length) requests"] += int((tl == 0).sum())
        for bi in range(b):  # past topk_length: NaN tokens that must not be read
            if len(unused):
                idx[bi, :, tl[bi]:] = rng.choice(unused, idx[bi, :, tl[bi]:].shape)
        cov["slots past topk_length pointing at NaN tokens"] += int(
            sum(topk - t for t in tl) * s_q)
    return dict(P=P, stride=stride, npages=npages, used=used, idx=idx, tl=tl, topk=topk)


def rand_mla_case(rng, cov):
    layout = str(rng.choice(["mla-v4", "mla-v32"]))
    b, s_q = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    h_q = int(rng.choice([1, 2, 4, 8]))
    d_qk = 512 if layout == "mla-v4" else 576
    nan_frac = 0.001 if rng.random() < 0.25 else 0.0
    scopes = [mla_scope(rng, layout, b, s_q, cov)]
    if rng.random() < 0.3:
        scopes.append(mla_scope(rng, layout, b, s_q, cov))
        cov["extra-scope cases"] += 1
    sm = float(np.float32(d_qk ** -0.5 if rng.random() < 0.5 else rng.uniform(0.01, 0.2)))
    conv = str(rng.choice(["excludes_sink", "includes_sink"]))
    attrs = dict(kind="mla-decode", layout=layout, b=b, s_q=s_q, h_q=h_q, d_qk=d_qk, d_v=512,
                 sm_scale=sm, lse_convention=conv)
    c = {"attrs": attrs}
    for pre, s in zip(("", "extra_"), scopes):
        attrs[pre + "page_size"] = s["P"]
        attrs[pre + "page_stride"] = s["stride"]
        attrs[pre + "num_pages"] = s["npages"]
        attrs[pre + "topk"] = s["topk"]
        c[pre + "cache_bytes"] = mla_pool(rng, layout, s["P"], s["stride"], s["npages"],
                                          s["used"], nan_frac, cov)
        c[pre + "indices"] = s["idx"]
        if s["tl"] is not None:
            c[pre + "topk_length"] = s["tl"]
    q = rng.standard_normal((b, s_q, h_q, d_qk)).astype(np.float32)
    c["q_bf16"] = q.astype(BF16).view(np.uint16)
    if rng.random() < 0.5:
        sink = (rng.standard_normal(h_q) * 3).astype(np.float32)
        u = rng.random(h_q)
        sink[u < 0.2] = np.inf
        sink[(u >= 0.2) & (u < 0.4)] = -np.inf
        c["attn_sink"] = sink
        cov["+inf sinks"] += int(np.isposinf(sink).sum())
        cov["-inf sinks"] += int(np.isneginf(sink).sum())
        cov["sink cases " + conv] += 1
    if rng.random() < 0.3:
        for pre, s in zip(("", "extra_"), scopes):
            c[pre + "kv_true"] = rng.standard_normal((s["npages"] * s["P"], d_qk)).astype(
                np.float32)
        cov["true-mode cases"] += 1
    cov["mla cases " + layout] += 1
    cov["cases with NaN fp8 bytes in selected tokens"] += nan_frac > 0
    return c


def write_case(f, name, c):
    g = f.create_group(name)
    g.attrs["attest_schema_version"] = 1
    for k, v in c["attrs"].items():
        g.attrs[k] = v
    for k, v in c.items():
        if k != "attrs":
            g.create_dataset(k, data=v)


# --------------------------------------------------------------------------------------------
# Comparison with the CLI's output
# --------------------------------------------------------------------------------------------
def close(mine, theirs, tol, skip=None):
    """Same non-finite pattern and |d| <= tol elementwise; returns a failure string or ''."""
    mine = np.asarray(mine, np.float64)
    theirs = np.asarray(theirs, np.float64)
    if mine.shape != theirs.shape:
        return f"shape {theirs.shape} != {mine.shape}"
    keep = np.ones(mine.shape, bool) if skip is None else ~skip
    for what, f in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        if ((f(mine) != f(theirs)) & keep).any():
            i = np.argwhere((f(mine) != f(theirs)) & keep)[0]
            return f"{what} pattern differs at {tuple(i)}: numpy {mine[tuple(i)]}, C {theirs[tuple(i)]}"
    fin = np.isfinite(mine) & keep
    d = np.where(fin, np.abs(np.where(fin, mine, 0) - np.where(fin, theirs, 0)), 0)
    bad = d > np.broadcast_to(tol, d.shape)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return f"differs at {i}: numpy {mine[i]!r}, C {theirs[i]!r} (tol {np.broadcast_to(tol, d.shape)[i]:.3g})"
    return ""


def check_indexer(c, g):
    a = c["attrs"]
    errs = []
    for sub, fn in (("", np_indexer_logits), ("true/", np_indexer_true)):
        if sub and "k_true" not in c:
            continue
        lg, bound = fn(c)
        skip = None
        if a["masking"] == "unspecified":  # nothing may depend on those values
            skip = np.zeros(lg.shape, bool)
            for r in range(lg.shape[0]):
                L = idx_row_length(int(c["context_lens"][r // a["next_n"]]), a["next_n"],
                                   r % a["next_n"], a["max_len"])
                skip[r] = np.arange(lg.shape[1]) >= L
        e = close(lg, g[sub + "logits"][()], 1e-12 * bound + 1e-300, skip)
        if e:
            errs.append(sub + "logits: " + e)
        if a["topk"] > 0 and sub + "topk_indices" in g:
            e = check_topk(c, lg, bound, g[sub + "topk_indices"][()])
            if e:
                errs.append(sub + "topk_indices: " + e)
    return errs


def check_topk(c, lg, bound, got):
    """The C list must equal numpy's (score descending, ties to the lower position), except that
    two positions whose scores differ by less than their rounding bound may swap: the two
    implementations sum in different orders. Exact ties (scores that are exactly 0 because every
    term is) must follow the position rule."""
    a = c["attrs"]
    k, nn = a["topk"], a["next_n"]
    for r in range(lg.shape[0]):
        L = idx_row_length(int(c["context_lens"][r // nn]), nn, r % nn, a["max_len"])
        want = np_topk(lg[r], L, k, a["topk_rule"] == "short_identity")
        g = got[r]
        if np.array_equal(want, g):
            continue
        if a["topk_rule"] == "short_identity" and L <= k:
            return f"row {r}: short rule wants 0..{L - 1}, C {g[:8]}..."
        if not np.array_equal(want == -1, g == -1) or (g >= max(L, 1)).any() or (g < -1).any():
            return f"row {r}: numpy {want[:8]}..., C {g[:8]}... (padding or range)"
        for i in np.nonzero(want != g)[0]:
            x, y = int(want[i]), int(g[i])
            exact = bound[r][x] == 0 and bound[r][y] == 0
            if exact or abs(lg[r][x] - lg[r][y]) > 1e-12 * max(bound[r][x], bound[r][y]):
                return (f"row {r} slot {i}: numpy picks {x} ({lg[r][x]!r}), C picks {y} "
                        f"({lg[r][y]!r})")
    return ""


def check_mla(c, g):
    errs = []
    for sub, tm in (("", False), ("true/", True)):
        if tm and "kv_true" not in c:
            continue
        out, lse = np_mla_decode(c, true_mode=tm)
        vmax = max(1.0, float(np.nanmax(np.abs(np.where(np.isfinite(out), out, 0)))))
        e = close(out, g[sub + "out"][()], 1e-12 * vmax)
        if e:
            errs.append(sub + "out: " + e)
        e = close(lse, g[sub + "lse"][()], 1e-12 * (1.0 + np.abs(np.where(np.isfinite(lse), lse, 0))) * 10)
        if e:
            errs.append(sub + "lse: " + e)
    return errs


def main():
    shared = os.environ.get("ATTEST_SHARED_DIR", "")
    cli = os.environ.get("ATTEST_CLI", "")
    seed = int(os.environ.get("ATTEST_CHECK_SEED", "20240603"))
    n_cases = int(os.environ.get("ATTEST_CHECK_CASES", "120"))
    failures = 0
    if shared and os.path.exists(os.path.join(shared, "oracles", "upstream_indexer.h5")):
        print("anchoring the numpy references on the upstream oracles:")
        failures += anchor_on_oracles(shared)
    else:
        print("oracles not found: the numpy references are not anchored this run")
    if not cli or not os.access(cli, os.X_OK):
        print("ATTEST_CLI is not set or not executable: skipping the CLI cross-check")
        return 1 if failures else 77
    rng = np.random.default_rng(seed)
    from collections import Counter
    cov = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        case_path, out_path = os.path.join(tmp, "cases.h5"), os.path.join(tmp, "out.h5")
        cases = {}
        with h5py.File(case_path, "w") as f:
            for i in range(n_cases):
                c = rand_indexer_case(rng, cov) if i % 3 == 0 else rand_mla_case(rng, cov)
                name = f"c{i:03d}_{c['attrs']['kind']}"
                write_case(f, name, c)
                cases[name] = c
        r = subprocess.run([cli, "reference", case_path, "--out", out_path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: attest reference exited {r.returncode}: {r.stderr.strip()}")
            return 1
        with h5py.File(out_path, "r") as o:
            for name, c in cases.items():
                errs = (check_indexer if c["attrs"]["kind"] == "indexer" else check_mla)(c, o[name])
                for e in errs:
                    print(f"FAIL {name}: {e}")
                failures += bool(errs)
    print(f"numpy vs C references on {n_cases} random cases (seed {seed}), covering:")
    for k in sorted(cov):
        print(f"  {k:48s} {cov[k]}")
    print("result:", "all agree" if not failures else f"{failures} case(s) disagree")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
