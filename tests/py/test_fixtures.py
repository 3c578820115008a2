#!/usr/bin/env python3
"""Golden fixtures and the commands that gate on them (docs/fixtures.md): `attest check` on the
committed set (fixtures/golden) passes with the CPU candidates and fails with mutants, fails loudly
on corrupt fixtures while checking the others, compares with stored outputs under both
conventions; the stored references still equal a fresh `attest reference`; every fixture holds
the edges its note and fixtures/README.md claim, checked on the data with numpy."""
import os
import re
import shutil
import sys
import tempfile

try:
    import h5py
    import numpy as np
except ImportError:  # the test needs both; say so instead of failing
    print("h5py/numpy missing; skipping")
    sys.exit(77)

from attest_testlib import CLI, check, run, summary

SRC = os.environ.get("ATTEST_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("ATTEST_SHARED_DIR", "")
GOLDEN = os.path.join(SRC, "fixtures", "golden")
FILES = {"indexer": ["indexer-edges.h5"], "mla-decode": ["mla-v4-edges.h5", "mla-v32-edges.h5"]}


def case_lines(out):
    """{label: verdict} of the per-case lines of attest check."""
    res = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+)\s+(\S+)\s+(OK|MISMATCH|CRASH|TIMEOUT|UNSUPPORTED|HARNESS_ERROR|"
                     r"OUT_OF_BOUNDS_WRITE|INPUT_MODIFIED|NONDETERMINISTIC|UNREADABLE|SKIPPED)", line)
        if m:
            res[m.group(1)] = m.group(3)
    return res


def golden(name):
    return os.path.join(GOLDEN, name)


def test_golden_passes():
    total = sum(os.path.getsize(golden(f)) for fs in FILES.values() for f in fs)
    check(total < 1_500_000, f"golden set is {total} bytes, over the 1.5 MB budget")
    for kernel, cand in (("indexer", "cpu-indexer"), ("mla-decode", "cpu-mla-decode")):
        for against in ("reference", "stored", "both"):
            rc, out, err = run("check", GOLDEN, "--candidate", cand, "--against", against)
            check(rc == 0 and "result: PASS" in out, f"{cand} --against {against}: exit {rc}\n{out}{err}")
            lines = case_lines(out)
            judged = [l for l, v in lines.items() if v == "OK"]
            check(judged and all(any(f in l for f in FILES[kernel]) for l in judged),
                  f"{cand}: judged cases of another kernel: {judged}")
            for other, fs in FILES.items():
                if other != kernel:
                    for f in fs:
                        check(lines.get(os.path.join(GOLDEN, f)) == "SKIPPED",
                              f"{cand}: {f} not reported SKIPPED\n{out}")
            if against != "reference":
                check(re.search(r"stored expected outputs: compared on (\d+)", out) and
                      "store none" not in out, f"{cand} --against {against}: stored not compared\n{out}")
    # Both kernels in one run, every case judged.
    rc, out, err = run("check", GOLDEN, "--candidate", "cpu-indexer", "--candidate",
                       "cpu-mla-decode", "--against", "both")
    n = sum(len(h5py.File(golden(f), "r").keys()) for fs in FILES.values() for f in fs)
    check(rc == 0 and f"result: PASS ({n} cases)" in out, f"both candidates: exit {rc}\n{out}")


def test_mutants_fail():
    for cand, kernel in (("mutant-indexer-scale-off-by-one", "indexer"),
                         ("mutant-indexer-no-mtp-causal", "indexer"),
                         ("mutant-mla-ignores-topk-length", "mla-decode"),
                         ("mutant-mla-reads-nan-slot", "mla-decode"),
                         ("mutant-mla-payload-stride", "mla-decode")):
        for against in ("reference", "stored", "both"):
            rc, out, err = run("check", GOLDEN, "--candidate", cand, "--against", against)
            check(rc == 1 and "result: FAIL" in out, f"{cand} --against {against}: exit {rc}\n{out}")
            check("MISMATCH" in out and "replay: attest replay" in out,
                  f"{cand}: no MISMATCH line with a replay command\n{out}")
            # the failing element by name, as attest run prints it (check printed "[0,0,0,0]")
            named = "out_bf16[request " if kernel == "mla-decode" else "logits[row "
            check(named in out and not re.search(r"first at \[\d", out),
                  f"{cand} --against {against}: no named coordinates in the failure lines\n{out}")
    rc, out, err = run("check", GOLDEN, "--candidate", "mutant-mla-crash", "--against", "both")
    check(rc == 1 and "CRASH" in out, f"mutant-mla-crash: exit {rc}\n{out}")


def test_unreadable(tmp):
    bad = os.path.join(tmp, "bad")
    os.makedirs(bad)
    with open(golden("mla-v4-edges.h5"), "rb") as f:
        data = f.read()
    trunc = os.path.join(bad, "a-truncated.h5")
    with open(trunc, "wb") as f:
        f.write(data[: len(data) // 3])
    text = os.path.join(bad, "b-text.h5")
    with open(text, "w") as f:
        f.write("not hdf5\n")
    onegroup = os.path.join(bad, "c-onegroup.h5")
    shutil.copy(golden("indexer-edges.h5"), onegroup)
    with h5py.File(onegroup, "a") as f:
        lens = f["case-1/context_lens"][...]
        del f["case-1/context_lens"]
        f["case-1/context_lens"] = lens.astype(np.int64)
        lg = f["case-2/logits"][...]
        del f["case-2/logits"]
        f["case-2/logits"] = lg[:, :-1]
    shutil.copy(golden("indexer-edges.h5"), os.path.join(bad, "d-good.h5"))
    rc, out, err = run("check", bad, "--candidate", "cpu-indexer", "--against", "both")
    lines = case_lines(out)
    check(rc == 1 and "result: FAIL" in out, f"corrupt fixtures: exit {rc}, expected 1\n{out}{err}")
    for path in (trunc, text):
        check(lines.get(path) == "UNREADABLE", f"{path} not reported UNREADABLE\n{out}")
        check(re.search(rf"^    {re.escape(path)}: .+", out, re.M) is not None,
              f"no message naming {path}\n{out}")
    check(lines.get(onegroup + ":case-1") == "UNREADABLE" and
          f"{onegroup}: case-1/context_lens: dtype int64, expected int32" in out,
          f"bad dtype in one group not named\n{out}")
    check(lines.get(onegroup + ":case-2") == "UNREADABLE" and
          f"{onegroup}: case-2/logits: expected output of shape" in out,
          f"stored output of the wrong shape not named\n{out}")
    check(lines.get(onegroup + ":case-0") == "OK" and lines.get(onegroup + ":case-3") == "OK",
          f"the other groups of a file with a bad group did not run\n{out}")
    good = [l for l in lines if l.startswith(os.path.join(bad, "d-good.h5"))]
    check(len(good) == 8 and all(lines[l] == "OK" for l in good),
          f"the good fixture after the bad ones did not run\n{out}")
    check("4 unreadable" in out, f"summary does not count 4 unreadable\n{out}")
    # A missing path and an empty directory fail the gate too; usage errors exit 2.
    rc, out, err = run("check", os.path.join(tmp, "missing.h5"), "--candidate", "cpu-indexer")
    check(rc == 1 and "missing.h5: cannot open" in out, f"missing fixture: exit {rc}\n{out}")
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    rc, out, err = run("check", empty, "--candidate", "cpu-indexer")
    check(rc == 1 and "nothing was checked" in out, f"empty dir: exit {rc}\n{out}")
    for args in ([GOLDEN], [GOLDEN, "--candidate", "cpu-indexer", "--against", "gold"],
                 [GOLDEN, "--candidate", "no-such"], ["--candidate", "cpu-indexer"],
                 [GOLDEN, "--candidate", "cpu-indexer", "--bogus"]):
        rc, out, err = run("check", *args)
        check(rc == 2 and len(err.strip().splitlines()) == 1, f"check {args}: exit {rc}, {err!r}")


def test_stored_gate(tmp):
    """The stored comparison is live, and follows the fixture's conventions."""
    d = os.path.join(tmp, "stored")
    os.makedirs(d)
    perturbed = os.path.join(d, "perturbed.h5")
    shutil.copy(golden("indexer-edges.h5"), perturbed)
    with h5py.File(perturbed, "a") as f:
        lg = f["case-2/logits"][...]
        i = np.flatnonzero(np.isfinite(lg))[3]
        lg.flat[i] = lg.flat[i] * 1.01 + 0.5
        f["case-2/logits"][...] = lg
    rc, out, _ = run("check", perturbed, "--candidate", "cpu-indexer", "--against", "stored")
    check(rc == 1 and case_lines(out).get(perturbed + ":case-2") == "MISMATCH",
          f"perturbed stored logits not caught: exit {rc}\n{out}")
    rc, out, _ = run("check", perturbed, "--candidate", "cpu-indexer", "--against", "reference")
    check(rc == 0, f"--against reference looked at stored outputs: exit {rc}\n{out}")

    # Masking 0.0 in the fixture, -inf from the candidate: only valid positions are compared.
    masked = os.path.join(d, "mask0.h5")
    shutil.copy(golden("indexer-edges.h5"), masked)
    with h5py.File(masked, "a") as f:
        for g in f.values():
            g.attrs["masking"] = "0.0"
            lg = g["logits"][...]
            lg[np.isneginf(lg)] = 0.0
            g["logits"][...] = lg
    rc, out, _ = run("check", masked, "--candidate", "cpu-indexer", "--against", "both")
    check(rc == 0 and "logits past row lengths not compared" in out, f"masking 0.0: exit {rc}\n{out}")

    # lse that includes the sink: numpy adds it; unconverted it must fail where a sink counts.
    for conv in (True, False):
        path = os.path.join(d, f"incl-{conv}.h5")
        shutil.copy(golden("mla-v4-edges.h5"), path)
        with h5py.File(path, "a") as f:
            for g in f.values():
                if "attn_sink" not in g:
                    continue
                g.attrs["lse_convention"] = "includes_sink"
                if conv:
                    lse, sink = g["lse"][...].astype(np.float64), g["attn_sink"][...]
                    with np.errstate(all="ignore"):
                        g["lse"][...] = np.logaddexp(lse, sink[None, None, :].astype(np.float64))
        rc, out, _ = run("check", path, "--candidate", "cpu-mla-decode", "--against", "stored")
        if conv:
            check(rc == 0 and "sink added to the candidate's lse" in out,
                  f"includes_sink fixture: exit {rc}\n{out}")
        else:
            check(rc == 1 and "lse: " in out, f"unconverted includes_sink fixture passed\n{out}")

    # A fixture without stored outputs: judged against the reference, said in the summary.
    plain = os.path.join(d, "plain.h5")
    shutil.copy(golden("indexer-edges.h5"), plain)
    with h5py.File(plain, "a") as f:
        for g in f.values():
            del g["logits"]
    rc, out, _ = run("check", plain, "--candidate", "cpu-indexer", "--against", "stored")
    check(rc == 0 and "8 cases store none (judged against the reference)" in out,
          f"fixture without stored outputs: exit {rc}\n{out}")
    rc, out, _ = run("check", plain, "--candidate", "mutant-indexer-scale-off-by-one",
                     "--against", "stored")
    check(rc == 1, f"fixture without stored outputs passed a mutant: exit {rc}\n{out}")

    # Results file: one row per comparison, readable by attest show.
    res = os.path.join(d, "res.h5")
    rc, out, _ = run("check", GOLDEN, "--candidate", "mutant-indexer-scale-off-by-one",
                     "--against", "both", "--out", res)
    check(rc == 1, f"--out run: exit {rc}")
    rc, out, _ = run("show", res)
    check(rc == 1 and "16 cases of 16 planned" in out and "MISMATCH" in out,
          f"attest show of the check results:\n{out}")


def test_references_regression(tmp):
    """The float64 references stored in the fixtures equal a fresh attest reference."""
    for kernel, fs in FILES.items():
        for name in fs:
            out = os.path.join(tmp, "ref-" + name)
            rc, o, e = run("reference", golden(name), "--out", out, "--mode", "simulated")
            check(rc == 0, f"attest reference {name}: exit {rc}\n{e}")
            if rc:
                continue
            pairs = [("logits", "logits")] if kernel == "indexer" else [("out_bf16", "out"),
                                                                         ("lse", "lse")]
            with h5py.File(golden(name), "r") as fx, h5py.File(out, "r") as ref:
                for g in fx:
                    for stored_name, ref_name in pairs:
                        a, b = fx[g][stored_name][...], ref[g][ref_name][...]
                        check(a.dtype == np.float64 and a.shape == b.shape,
                              f"{name}:{g}/{stored_name}: {a.dtype} {a.shape} vs {b.shape}")
                        fa, fb = np.isfinite(a), np.isfinite(b)
                        same_nonfinite = (np.array_equal(fa, fb) and
                                          np.array_equal(a[~fa], b[~fb], equal_nan=True))
                        # Bit-equal where they were made; elsewhere libm and compilers may move
                        # the last bits: 1e-12 per element, plus 1e-13 of the tensor's largest
                        # magnitude for values that cancel to near zero.
                        scale = np.max(np.abs(b[fb]), initial=0.0)
                        diff = np.abs(a[fa] - b[fb])
                        bound = 1e-12 * np.abs(b[fb]) + 1e-13 * scale
                        worst = np.max(diff - bound, initial=-1.0)
                        check(same_nonfinite and worst <= 0,
                              f"{name}:{g}/{stored_name}: stored reference differs from attest "
                              f"reference (max diff {np.max(diff, initial=0):.3g}, scale {scale:.3g})")


def row_lengths(lens, next_n, max_len):
    rows = []
    for L in lens:
        for j in range(next_n):
            rows.append(max(0, min(L - next_n + j + 1, L, max_len)))
    return np.array(rows)


def data_tags(g):
    """The edge tags numpy can decide from a case's own datasets."""
    t = set()
    a = g.attrs
    if a["kind"] == "indexer":
        lens, nn, ml, k = g["context_lens"][...], int(a["next_n"]), int(a["max_len"]), int(a["topk"])
        rl = row_lengths(lens, nn, ml)
        if (lens == 0).any(): t.add("len-0")
        if (lens == 1).any(): t.add("len-1")
        if any(L >= 63 and L % 64 in (63, 0, 1) for L in lens): t.add("block-edge")
        if nn > 1: t.add("mtp")
        if any(rl[r] == 0 and lens[r // nn] > 0 for r in range(len(rl))): t.add("mtp-empty-row")
        if (rl == ml).any(): t.add("row-full")
        if k > 0 and ((rl > 0) & (rl < k)).any(): t.add("topk-short")
        return t
    idx, topk = g["indices"][...], int(a["topk"])
    b = idx.shape[0]
    tl = g["topk_length"][...] if "topk_length" in g else np.full(b, topk)
    lim = np.minimum(tl, topk)
    valid = (idx != -1) & (np.arange(topk)[None, None, :] < lim[:, None, None])
    nvalid = valid.sum(axis=2)
    if "extra_indices" in g:
        xi, xk = g["extra_indices"][...], int(a["extra_topk"])
        xtl = g["extra_topk_length"][...] if "extra_topk_length" in g else np.full(b, xk)
        nvalid = nvalid + ((xi != -1) & (np.arange(xk)[None, None, :] <
                                         np.minimum(xtl, xk)[:, None, None])).sum(axis=2)
        t.add("extra-scope")
    if (nvalid == 0).any(): t.add("lonely-query")
    if "topk_length" in g and (tl == 0).any(): t.add("topk-length-0")
    past = (idx != -1) & (np.arange(topk)[None, None, :] >= lim[:, None, None])
    if past.any(): t.add("past-topk-length")
    for bi in range(b):
        for q in range(idx.shape[1]):
            v = idx[bi, q][valid[bi, q]]
            if len(np.unique(v)) < len(v): t.add("duplicates")
    if "attn_sink" in g:
        s = g["attn_sink"][...]
        if np.isposinf(s).any(): t.add("sink+inf")
        if np.isneginf(s).any(): t.add("sink-inf")
    P = int(a["page_size"])
    if P <= 2: t.add("small-page")
    if a["layout"] == "mla-v32" and int(a["page_stride"]) > P * 656: t.add("padded-page")
    return t


DATA_DECIDED = {"indexer": {"len-0", "len-1", "block-edge", "mtp", "mtp-empty-row", "row-full",
                            "topk-short"},
                "mla-decode": {"extra-scope", "lonely-query", "topk-length-0", "past-topk-length",
                               "duplicates", "sink+inf", "sink-inf", "small-page", "padded-page"}}


def test_edges():
    rc, out, _ = run("fixture", "tags")
    check(rc == 0, f"attest fixture tags: exit {rc}")
    known = {}
    for line in out.splitlines():
        kernel, tag = line.split()[:2]
        known.setdefault(kernel, set()).add(tag)
    readme = open(os.path.join(SRC, "fixtures", "README.md")).read()
    for kernel, fs in FILES.items():
        for name in fs:
            layout_only = {"mla-v4-edges.h5": {"padded-page"}, "mla-v32-edges.h5": {"extra-scope"}}
            want = known[kernel] - layout_only.get(name, set())
            count = {}
            with h5py.File(golden(name), "r") as f:
                check("attest fixture make" in f.attrs["command"] and
                      f.attrs["command"] in readme,
                      f"{name}: its make command is not in fixtures/README.md")
                for g in f.values():
                    m = re.search(r"edges: ([^;]*);", g.attrs["note"])
                    noted = set(m.group(1).split(",")) if m else set()
                    derived = data_tags(g)
                    decided = DATA_DECIDED[kernel]
                    check(noted & decided == derived & decided,
                          f"{name}:{g.name}: note says {sorted(noted & decided)}, the data shows "
                          f"{sorted(derived & decided)}")
                    for tg in noted:
                        count[tg] = count.get(tg, 0) + 1
            thin = sorted(tg for tg in want if count.get(tg, 0) < 2)
            check(not thin, f"{name}: edge tags shown by fewer than 2 cases: {thin}")


def test_make(tmp):
    """fixture make: an explicit list and a candidate's outputs as the expected ones."""
    out = os.path.join(tmp, "made.h5")
    rc, o, e = run("fixture", "make", out, "--kernel", "indexer", "--cover", "len-0,mtp",
                   "--seed", "5")
    check(rc == 0 and "wrote" in o, f"make --cover len-0,mtp: exit {rc}\n{o}{e}")
    with h5py.File(out, "r") as f:
        tags = set()
        for g in f.values():
            tags |= data_tags(g)
            check(g["logits"].dtype == np.float64, f"{out}: expected logits not float64")
        check({"len-0", "mtp"} <= tags, f"make --cover len-0,mtp: the cases show only {tags}")
    cand = os.path.join(tmp, "cand.h5")
    rc, o, e = run("fixture", "make", cand, "--kernel", "mla-decode", "--cases", "3",
                   "--expected", "cpu-mla-decode")
    check(rc == 0, f"make --expected cpu-mla-decode: exit {rc}\n{o}{e}")
    with h5py.File(cand, "r") as f:
        check(sorted(f.keys()) == ["case-0", "case-1", "case-2"], f"groups {list(f.keys())}")
        check(f["case-0/out_bf16"].dtype == np.uint16 and f["case-0/lse"].dtype == np.float32,
              "candidate outputs not stored in their own dtypes")
    rc, o, e = run("check", cand, "--candidate", "cpu-mla-decode", "--against", "stored")
    check(rc == 0, f"check of a candidate-made fixture: exit {rc}\n{o}")
    rc, o, e = run("check", cand, "--candidate", "mutant-mla-scale-off-by-one", "--against",
                   "stored")
    check(rc == 1, f"mutant on a candidate-made fixture: exit {rc}\n{o}")
    for args in (["make", out], ["make", out, "--kernel", "indexer", "--cover", "page-edge"],
                 ["make", out, "--kernel", "indexer", "--cover", "mtp", "--tries", "1"],
                 ["make", out, "--kernel", "indexer", "--expected", "cpu-mla-decode"],
                 ["frobnicate"]):
        rc, o, e = run("fixture", *args)
        check(rc == 2 and len(e.strip().splitlines()) == 1, f"fixture {args}: exit {rc} {e!r}")


def test_oracles():
    """The upstream oracle files are fixtures too: their stored outputs came from FlashMLA's and
    DeepGEMM's reference functions, in bf16 / fp32."""
    oracles = os.path.join(SHARED, "oracles")
    if not os.path.isdir(oracles):
        print("no ../shared/oracles; oracle check skipped")
        return
    rc, out, _ = run("check", oracles, "--candidate", "cpu-indexer", "--candidate",
                     "cpu-mla-decode", "--against", "both", "--reruns", "1",
                     # production-sized cases (H=128, topk=1024) take seconds under ASan
                     "--timeout", "300")
    check(rc == 0 and "result: PASS" in out and "store none" not in out,
          f"oracle files as fixtures: exit {rc}\n{out}")


def test_param_keys(tmp):
    """Each fixture case's stored parameter string (written when the fixture was made) is the one
    attest computes from the loaded case today: results keyed on it keep matching."""
    dirs = [GOLDEN, os.path.join(SRC, "fixtures", "false-alarms")]
    for d in dirs:
        for name in sorted(f for f in os.listdir(d) if f.endswith(".h5")):
            path = os.path.join(d, name)
            with h5py.File(path, "r") as f:
                kernel = f[sorted(f.keys())[0]].attrs["kind"]
                kernel = kernel.decode() if isinstance(kernel, bytes) else kernel
                stored = {}
                for g in f:
                    v = f[g].attrs.get("params")
                    stored[g] = v.decode() if isinstance(v, bytes) else v
            out = os.path.join(tmp, "keys-" + name)
            cand = "cpu-indexer" if kernel == "indexer" else "cpu-mla-decode"
            rc, o, e = run("check", path, "--candidate", cand, "--out", out, "--force")
            check(rc == 0, f"check {path}: exit {rc}\n{o}{e}")
            if rc != 0:
                continue
            with h5py.File(out, "r") as r:
                got = [p.decode() for p in r["cases"]["params"]]
            check(sorted(got) == sorted(stored.values()),
                  f"{path}: parameter strings differ from the stored ones:\n"
                  f"{sorted(set(got) ^ set(stored.values()))}")


def main():
    if not CLI or not os.path.exists(CLI):
        print("ATTEST_CLI not set or missing; skipping")
        return 77
    if not os.path.isdir(GOLDEN):
        print(f"{GOLDEN} missing")
        return 1
    tmp = tempfile.mkdtemp(prefix="attest-fixtures-")
    try:
        test_golden_passes()
        test_mutants_fail()
        test_unreadable(tmp)
        test_stored_gate(tmp)
        test_references_regression(tmp)
        test_edges()
        test_make(tmp)
        test_oracles()
        test_param_keys(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary("test_fixtures")


if __name__ == "__main__":
    sys.exit(main())
