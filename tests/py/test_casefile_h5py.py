#!/usr/bin/env python3
"""Case files written by h5py alone, through `attest reference`.

1. Runs the documented example (docs/examples/write_case.py), then `attest reference` on both of
   its files, and checks the outputs against a numpy computation from the raw bytes written here
   (ml_dtypes decodes fp8 and bf16; nothing is shared with attest's C code).
2. Writes mla-v4 and mla-v32 cases where every query has one valid index (or none): out must be
   exactly that token's V row (the softmax weight is exactly 1), lse = sm_scale * dot(q, K), a query
   with no valid index gives out = 0 and lse = +inf; in true mode the same on the truth tensors.
3. A file of several groups gives an output file that mirrors them.
4. Broken files (missing dataset or attribute, wrong dtype, wrong shape, indices out of range,
   inconsistent attributes, truncated, not HDF5) give exit status 2 and ONE line on stderr that
   names the file and the field, and leave no output file behind.

Exit 0 when every check passes, 1 otherwise, 77 (skip) without the CLI or numpy/h5py/ml_dtypes.
"""
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import h5py
    import ml_dtypes
    import numpy as np
except ImportError as e:
    print(f"skipping: {e}")
    sys.exit(77)

CLI = os.environ.get("ATTEST_CLI", "")
SRC = os.environ.get("ATTEST_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
if not CLI or not os.access(CLI, os.X_OK):
    print("skipping: ATTEST_CLI is not set to the attest executable")
    sys.exit(77)

failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def run(args):
    p = subprocess.run([CLI] + args, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


# Independent decoding --------------------------------------------------------------------------

def fp8(u8):
    return np.asarray(u8, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def bf16(u16):
    return np.asarray(u16, np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)


def token_k(layout, pool, P, stride, idx):
    """The dequantized K row of physical token idx, straight from the spec's byte tables."""
    page, slot = divmod(int(idx), P)
    base = page * stride
    if layout == "mla-v4":
        t = base + slot * 576
        nope = fp8(pool[t:t + 448])
        sc = 2.0 ** (pool[base + P * 576 + slot * 8:base + P * 576 + slot * 8 + 7].astype(np.float64) - 127)
        rope = bf16(pool[t + 448:t + 576].view("<u2"))
        return np.concatenate([nope * np.repeat(sc, 64), rope])
    t = base + slot * 656
    nope = fp8(pool[t:t + 512])
    sc = pool[t + 512:t + 528].view("<f4").astype(np.float64)
    rope = bf16(pool[t + 528:t + 656].view("<u2"))
    return np.concatenate([nope * np.repeat(sc, 128), rope])


def np_mla(f):
    """Full sparse decode from the raw case file (single scope, optional sink / topk_length)."""
    a = f.attrs
    layout = a["layout"] if isinstance(a["layout"], str) else a["layout"].decode()
    P, stride = int(a["page_size"]), int(a["page_stride"])
    b, s_q, h_q, d_v = int(a["b"]), int(a["s_q"]), int(a["h_q"]), int(a["d_v"])
    sm = float(np.float32(a["sm_scale"]))
    pool = f["cache_bytes"][...].reshape(-1)
    q = bf16(f["q_bf16"][...])
    idx = f["indices"][...]
    tl = f["topk_length"][...] if "topk_length" in f else None
    sink = f["attn_sink"][...].astype(np.float64) if "attn_sink" in f else None
    out = np.zeros((b, s_q, h_q, d_v))
    lse = np.zeros((b, s_q, h_q))
    for bi in range(b):
        for si in range(s_q):
            row = idx[bi, si]
            lim = len(row) if tl is None else int(tl[bi])
            valid = [int(i) for i in row[:lim] if i != -1]
            if not valid:
                lse[bi, si] = np.inf
                continue
            K = np.stack([token_k(layout, pool, P, stride, i) for i in valid])
            s = sm * (q[bi, si] @ K.T)                       # [h_q, n]
            m = s.max(axis=1, keepdims=True)
            l = np.log(np.exp(s - m).sum(axis=1)) + m[:, 0]
            o = np.exp(s - l[:, None]) @ K[:, :d_v]
            if sink is not None:
                o = o / (1.0 + np.exp(sink - l))[:, None]
            out[bi, si], lse[bi, si] = o, l
    return out, lse


def np_indexer(f):
    a = f.attrs
    b, nn, H, D, max_len = (int(a[k]) for k in ("b", "next_n", "heads", "head_dim", "max_len"))
    cache = f["cache_bytes"][...].reshape(-1, 8448)
    bt, lens = f["block_table"][...], f["context_lens"][...]
    q = fp8(f["q_fp8"][...]).reshape(b, nn, H, D)
    w = f["weights"][...].astype(np.float64)
    logits = np.full((b * nn, max_len), -np.inf)
    for r in range(b):
        for j in range(nn):
            L = min(max(int(lens[r]) - nn + j + 1, 0), max_len)
            for t in range(L):
                blk, slot = int(bt[r, t // 64]), t % 64
                k = fp8(cache[blk, slot * 128:(slot + 1) * 128])
                scale = float(cache[blk, 8192 + 4 * slot:8196 + 4 * slot].view("<f4")[0])
                logits[r * nn + j, t] = scale * np.sum(w[r * nn + j] * np.maximum(q[r, j] @ k, 0.0))
    return logits


def close(a, b, rtol=1e-9, atol=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    same_inf = np.array_equal(np.isinf(a) & (a > 0), np.isinf(b) & (b > 0)) and \
        np.array_equal(np.isinf(a) & (a < 0), np.isinf(b) & (b < 0))
    fin = np.isfinite(a) & np.isfinite(b)
    return same_inf and not np.isnan(a).any() and not np.isnan(b).any() and \
        np.allclose(a[fin], b[fin], rtol=rtol, atol=atol)


# 1. The documented example ---------------------------------------------------------------------

def check_example(tmp):
    ex = os.path.join(SRC, "docs", "examples", "write_case.py")
    p = subprocess.run([sys.executable, ex, tmp], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"example exits 0 ({p.stderr.strip()})")
    check("attest reference" in p.stdout, "example prints the attest reference command")
    mla, idx = os.path.join(tmp, "mla_v4_case.h5"), os.path.join(tmp, "indexer_case.h5")
    rc, out, err = run(["reference", mla, "--out", os.path.join(tmp, "mla_ref.h5")])
    check(rc == 0, f"attest reference on the example mla case exits 0 ({err.strip()})")
    if rc == 0:
        with h5py.File(mla) as f, h5py.File(os.path.join(tmp, "mla_ref.h5")) as r:
            eo, el = np_mla(f)
            check(r["out"].dtype == np.float64 and r["out"].shape == eo.shape, "mla out float64 shape")
            check(close(r["out"][...], eo), "example mla out agrees with numpy")
            check(close(r["lse"][...], el), "example mla lse agrees with numpy")
            check(r.attrs["reference_mode"] == "simulated", "reference_mode attribute")
            check(len(r.attrs["attest_version"]) > 0, "attest_version attribute")
    rc, out, err = run(["reference", idx, "--out", os.path.join(tmp, "idx_ref.h5")])
    check(rc == 0, f"attest reference on the example indexer case exits 0 ({err.strip()})")
    if rc == 0:
        with h5py.File(idx) as f, h5py.File(os.path.join(tmp, "idx_ref.h5")) as r:
            el = np_indexer(f)
            got = r["logits"][...]
            check(close(got, el), "example indexer logits agree with numpy (and -inf mask)")
            k = int(f.attrs["topk"])
            tk = r["topk_indices"][...]
            lens = f["context_lens"][...]
            for row in range(el.shape[0]):
                L = int(lens[row])
                want = set(np.argsort(-el[row, :L], kind="stable")[:k].tolist())
                have = tk[row]
                check(set(have[have >= 0].tolist()) == want and (have == -1).sum() == max(k - L, 0),
                      f"indexer top-{k} of row {row} is the numpy set")


# 2. One valid index per query ------------------------------------------------------------------

def rand_fp8(rng, n):
    mag = rng.integers(0, 0x7F, size=n, dtype=np.uint8)  # 0x7F is NaN
    return mag | (rng.integers(0, 2, size=n, dtype=np.uint8) << 7)


def write_single_index_case(path, layout, rng, group=None, with_truth=True):
    P, num_pages = (64, 2) if layout == "mla-v4" else (61, 2)
    stride = math.ceil(P * 584 / 576) * 576 if layout == "mla-v4" else (P + 1) * 656
    d_qk = 512 if layout == "mla-v4" else 576
    b, s_q, h_q, topk = 2, 2, 4, 8
    pool = np.full(num_pages * stride, 0xFF, np.uint8)
    tokens = num_pages * P
    truth = np.zeros((tokens, d_qk), np.float32)
    for i in range(tokens):
        page, slot = divmod(i, P)
        base = page * stride
        if layout == "mla-v4":
            t = base + slot * 576
            pool[t:t + 448] = rand_fp8(rng, 448)
            pool[t + 448:t + 576] = (rng.standard_normal(64).astype(np.float32).view(np.uint32) >> 16
                                     ).astype("<u2").view(np.uint8)
            sc = base + P * 576 + slot * 8
            pool[sc:sc + 7] = rng.integers(118, 130, size=7, dtype=np.uint8)
        else:
            t = base + slot * 656
            pool[t:t + 512] = rand_fp8(rng, 512)
            pool[t + 512:t + 528] = (2.0 ** rng.integers(-8, 2, size=4)).astype("<f4").view(np.uint8)
            pool[t + 528:t + 656] = (rng.standard_normal(64).astype(np.float32).view(np.uint32) >> 16
                                     ).astype("<u2").view(np.uint8)
        truth[i] = rng.standard_normal(d_qk).astype(np.float32)
    indices = np.full((b, s_q, topk), -1, np.int32)
    chosen = {}
    for bi in range(b):
        for si in range(s_q):
            if (bi, si) == (1, 1):
                continue                                  # a query with no valid index
            slot_pos, tok = int(rng.integers(0, topk)), int(rng.integers(0, tokens))
            indices[bi, si, slot_pos] = tok
            chosen[(bi, si)] = tok
    q = (rng.standard_normal((b, s_q, h_q, d_qk)).astype(np.float32).view(np.uint32) >> 16
         ).astype(np.uint16)
    with h5py.File(path, "a") as f:
        g = f.require_group(group) if group else f
        g.attrs.update(dict(kind="mla-decode", layout=layout, page_size=P, page_stride=stride,
                            num_pages=num_pages, b=b, s_q=s_q, h_q=h_q, d_qk=d_qk, d_v=512,
                            topk=topk, sm_scale=d_qk ** -0.5))
        g["cache_bytes"] = pool
        g["q_bf16"] = q
        g["indices"] = indices
        if with_truth:
            g["kv_true"] = truth
    return chosen, pool, truth, q, (P, stride, d_qk)


def check_single_index(tmp, layout, rng):
    case = os.path.join(tmp, f"single_{layout}.h5")
    chosen, pool, truth, q, (P, stride, d_qk) = write_single_index_case(case, layout, rng)
    ref = os.path.join(tmp, f"single_{layout}_ref.h5")
    rc, out, err = run(["reference", case, "--out", ref])
    check(rc == 0, f"{layout} single-index case: exit 0 ({err.strip()})")
    if rc != 0:
        return
    sm = float(np.float32(d_qk ** -0.5))
    qd = bf16(q)
    with h5py.File(ref) as r:
        check("true" in r and "out" in r["true"], f"{layout}: auto mode also wrote true/ outputs")
        for mode, grp in (("simulated", r), ("true", r["true"])):
            o, l = grp["out"][...], grp["lse"][...]
            for bi in range(2):
                for si in range(2):
                    if (bi, si) not in chosen:
                        check(np.all(o[bi, si] == 0) and np.all(np.isposinf(l[bi, si])),
                              f"{layout} {mode}: no valid index gives out 0, lse +inf")
                        continue
                    tok = chosen[(bi, si)]
                    K = token_k(layout, pool, P, stride, tok) if mode == "simulated" \
                        else truth[tok].astype(np.float64)
                    check(np.array_equal(o[bi, si], np.broadcast_to(K[:512], (4, 512))),
                          f"{layout} {mode}: out is exactly the token's V row")
                    # Rounded to bf16 the way a kernel would store it, it is V rounded.
                    check(np.array_equal(o[bi, si].astype(ml_dtypes.bfloat16),
                                         np.broadcast_to(K[:512], (4, 512)).astype(ml_dtypes.bfloat16)),
                          f"{layout} {mode}: bf16(out) = bf16(V)")
                    check(close(l[bi, si], sm * (qd[bi, si] @ K), rtol=1e-12, atol=1e-12),
                          f"{layout} {mode}: lse = sm_scale * dot(q, K)")
    rc, _, err = run(["reference", case, "--out", ref, "--force", "--mode", "simulated"])
    with h5py.File(ref) as r:
        check(rc == 0 and "true" not in r, f"{layout}: --mode simulated writes no true/ group")


# 3. Several groups -----------------------------------------------------------------------------

def check_groups(tmp, rng):
    case = os.path.join(tmp, "groups.h5")
    write_single_index_case(case, "mla-v4", rng, group="first", with_truth=False)
    write_single_index_case(case, "mla-v32", rng, group="more/second", with_truth=False)
    ref = os.path.join(tmp, "groups_ref.h5")
    rc, out, err = run(["reference", case, "--out", ref, "--force"])
    check(rc == 0, f"multi-group file: exit 0 ({err.strip()})")
    if rc == 0:
        with h5py.File(ref) as r:
            check("first/out" in r and "more/second/lse" in r, "output mirrors the groups")
            check(r["more/second"].attrs["kind"] == "mla-decode", "group attributes written")
    rc, out, err = run(["reference", case, "--group", "more/second", "--out", ref, "--force"])
    with h5py.File(ref) as r:
        check(rc == 0 and "more/second/out" in r and "first" not in r, "--group selects one case")


# 4. Broken files -------------------------------------------------------------------------------

def expect_error(tmp, path, field, extra=()):
    out = os.path.join(tmp, "should_not_exist.h5")
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = run(["reference", path, "--out", out] + list(extra))
    lines = se.strip().splitlines()
    ok = rc == 2 and len(lines) == 1 and lines[0].startswith("attest reference: ") and \
        path in lines[0] and field in lines[0]
    check(ok, f"{os.path.basename(path)}: exit 2 and one line naming '{field}' "
              f"(got rc={rc}: {se.strip()!r})")
    check(not os.path.exists(out), f"{os.path.basename(path)}: no output file left behind")


def broken(tmp, base, name, edit):
    path = os.path.join(tmp, name)
    shutil.copy(base, path)
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


def replace(f, name, data):
    del f[name]
    f[name] = data


def check_broken(tmp, rng):
    mla = os.path.join(tmp, "good_mla.h5")
    write_single_index_case(mla, "mla-v4", rng, with_truth=False)
    idx = os.path.join(tmp, "indexer_case.h5")  # from the example
    rc, _, _ = run(["reference", mla, "--out", os.path.join(tmp, "good_ref.h5")])
    check(rc == 0, "the unbroken mla case passes")

    def set_attr(k, v):
        return lambda f: f.attrs.__setitem__(k, v)

    cases = [
        (mla, "no_indices.h5", lambda f: f.__delitem__("indices"), "indices"),
        (mla, "no_b.h5", lambda f: f.attrs.__delitem__("b"), "b"),
        (mla, "q_f32.h5", lambda f: replace(f, "q_bf16", f["q_bf16"][...].astype(np.float32)),
         "q_bf16"),
        (mla, "idx_i64.h5", lambda f: replace(f, "indices", f["indices"][...].astype(np.int64)),
         "indices"),
        (mla, "idx_shape.h5", lambda f: replace(f, "indices", f["indices"][..., :5]), "indices"),
        (mla, "idx_range.h5",
         lambda f: replace(f, "indices", np.where(f["indices"][...] >= 0, 128, -1).astype(np.int32)),
         "indices["),
        (mla, "stride.h5", set_attr("page_stride", 36000), "page_stride"),
        (mla, "hq.h5", set_attr("h_q", 5), "q_bf16"),
        (mla, "layout.h5", set_attr("layout", "mla-v5"), "layout"),
        (mla, "sink_flag.h5", set_attr("has_sink", 1), "attn_sink"),
        (mla, "scale.h5", set_attr("sm_scale", float("nan")), "sm_scale"),
        (mla, "half_extra.h5", lambda f: f.__setitem__("extra_indices", f["indices"][...]),
         "extra_indices"),
        (idx, "mask.h5", set_attr("masking", "nan"), "masking"),
        (idx, "table.h5",
         lambda f: replace(f, "block_table", np.full(f["block_table"].shape, 99, np.int32)),
         "block_table["),
        (idx, "lens.h5", lambda f: replace(f, "context_lens", np.array([300, 1], np.int32)),
         "context_lens["),
        (idx, "weights.h5", lambda f: replace(f, "weights", f["weights"][:, :8]), "weights"),
        (idx, "kind.h5", set_attr("kind", "attention"), "kind"),
        (idx, "no_cache.h5", lambda f: f.__delitem__("cache_bytes"), "cache_bytes"),
    ]
    for base, name, edit, field in cases:
        expect_error(tmp, broken(tmp, base, name, edit), field)

    size = os.path.getsize(mla)
    for name, keep in (("trunc_half.h5", size // 2), ("trunc_100.h5", 100)):
        path = os.path.join(tmp, name)
        with open(mla, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read(keep))
        expect_error(tmp, path, "HDF5")
    text = os.path.join(tmp, "text.h5")
    with open(text, "w") as f:
        f.write("not an hdf5 file\n")
    expect_error(tmp, text, "HDF5")
    expect_error(tmp, os.path.join(tmp, "missing.h5"), "cannot open")
    expect_error(tmp, mla, "kv_true", ["--mode", "true"])
    expect_error(tmp, mla, "no_such", ["--group", "no_such"])


def check_usage(tmp):
    rc, out, _ = run(["reference", "--help"])
    check(rc == 0 and "usage: attest reference" in out, "--help exits 0 with usage")
    for args, what in (([], "no case file"), ([os.path.join(tmp, "x.h5")], "no --out"),
                       (["a.h5", "--out", "b.h5", "--mode", "odd"], "bad --mode"),
                       (["a.h5", "--out", "b.h5", "--bogus"], "unknown option")):
        rc, _, err = run(["reference"] + args)
        check(rc == 2 and len(err.strip().splitlines()) == 1, f"usage error ({what}) exits 2, one line")


# 5. Sparse pools (schema version 2: cache_pages) -------------------------------------------------

def check_sparse(tmp, rng):
    """A sparse pool written with h5py as docs/case-format.md says: page 1 of a dense two-page
    case moved to page 60000 of a 70000-page pool (2.6 GB, the page past 2^31 bytes), only the
    two pages stored. Its reference is the dense case's, and a file that misses a reached page
    or lists pages out of order is refused naming cache_pages."""
    dense = os.path.join(tmp, "sparse_dense.h5")
    write_single_index_case(dense, "mla-v4", rng, with_truth=False)
    P, stride, far, num_pages = 64, math.ceil(64 * 584 / 576) * 576, 60000, 70000
    check(far * stride > 2 ** 31, "the moved page starts past 2^31 bytes")
    sparse = os.path.join(tmp, "sparse.h5")
    with h5py.File(dense) as d, h5py.File(sparse, "w") as f:
        f.attrs.update({k: v for k, v in d.attrs.items()})
        f.attrs["num_pages"] = num_pages
        pool = d["cache_bytes"][...].reshape(2, stride)
        pages = np.array([0, far], np.int32)
        f["cache_pages"] = pages
        f["cache_bytes"] = pool
        idx = d["indices"][...]
        moved = np.where(idx >= P, idx - P + far * P, idx).astype(np.int32)
        f["indices"] = moved
        f["q_bf16"] = d["q_bf16"][...]
    refs = []
    for case in (dense, sparse):
        out = case.replace(".h5", "_ref.h5")
        rc, _, err = run(["reference", case, "--out", out, "--mode", "simulated"])
        check(rc == 0, f"{os.path.basename(case)}: reference exit 0 ({err.strip()})")
        if rc != 0:
            return
        with h5py.File(out) as r:
            refs.append((r["out"][...], r["lse"][...]))
    check(np.array_equal(refs[0][0], refs[1][0]) and np.array_equal(refs[0][1], refs[1][1]),
          "the sparse pool's reference is the dense case's, bit for bit")
    if os.path.getsize(sparse) > 1 << 20:
        check(False, "a sparse file stores the pages, not the pool")
    rc, out, err = run(["check", sparse, "--candidate", "cpu-mla-decode"])
    check(rc == 0, f"cpu-mla-decode passes the sparse case: exit {rc}\n{out}{err}")
    missing = broken(tmp, sparse, "sparse_missing.h5", lambda f: (
        replace(f, "cache_pages", np.array([0], np.int32)),
        replace(f, "cache_bytes", f["cache_bytes"][...][:1])))
    expect_error(tmp, missing, "cache_pages: page 60000 is reached")
    unsorted = broken(tmp, sparse, "sparse_unsorted.h5", lambda f: replace(
        f, "cache_pages", np.array([far, 0], np.int32)))
    expect_error(tmp, unsorted, "cache_pages[1]")
    short = broken(tmp, sparse, "sparse_short.h5", lambda f: replace(
        f, "cache_bytes", f["cache_bytes"][...][:1]))
    expect_error(tmp, short, "cache_bytes")


def main():
    rng = np.random.default_rng(20240611)
    tmp = tempfile.mkdtemp(prefix="attest-casefile-py-")
    try:
        check_example(tmp)
        check_single_index(tmp, "mla-v4", rng)
        check_single_index(tmp, "mla-v32", rng)
        check_groups(tmp, rng)
        check_broken(tmp, rng)
        check_sparse(tmp, rng)
        check_usage(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checks} checks, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
