#!/usr/bin/env python3
"""`--jobs N`: cases sharded over N worker processes give the results file and the report of one
process: the same rows in the same order (every field but the timings), the same repros byte for
byte, the same printed failures; a worker's crash isolation and a stop by signal still work."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from attest_testlib import CLI, check, one_line_error, run, summary

try:
    import h5py
    import numpy as np
except ImportError:  # ci/setup.sh --with-python installs them
    h5py = None


def rows(path):
    with h5py.File(path, "r") as f:
        cases = f["cases"][:]
        state = f["provenance"].attrs["state"]
        state = state.decode() if isinstance(state, bytes) else str(state)
        repros = {}
        if "repro" in f:
            for cid, g in f["repro"].items():
                data = {}
                g.visititems(lambda name, obj: data.__setitem__(name, obj[()])
                             if isinstance(obj, h5py.Dataset) else None)
                repros[cid] = data
    return cases, state, repros


def same_results(a, b, what):
    ca, sa, ra = rows(a)
    cb, sb, rb = rows(b)
    check(len(ca) == len(cb) and len(ca) > 0, f"{what}: {len(ca)} rows vs {len(cb)}")
    check(sa == sb == "complete", f"{what}: states {sa}, {sb}")
    for name in ca.dtype.names:
        if name.endswith("_seconds") or len(ca) != len(cb):
            continue
        check(np.array_equal(ca[name], cb[name]), f"{what}: column {name} differs")
    check(sorted(ra) == sorted(rb), f"{what}: repro ids {sorted(ra)} vs {sorted(rb)}")
    for cid in ra:
        if cid not in rb:
            continue
        check(sorted(ra[cid]) == sorted(rb[cid]), f"{what}: repro {cid} datasets differ")
        for name, value in ra[cid].items():
            other = rb[cid].get(name)
            equal = other is not None and np.asarray(value).tobytes() == np.asarray(other).tobytes()
            check(equal, f"{what}: repro {cid}/{name} differs")
    return ca


def printed(out, path):
    """The report without what legitimately differs: the file name and the timings."""
    out = out.replace(path, "RESULTS")
    return [l for l in out.splitlines()
            if not re.match(r"attest: \d+ cases in|  time in:", l)]


def main():
    if not CLI or not os.path.exists(CLI):
        print("ATTEST_CLI not set or missing; skipping")
        return 77
    if h5py is None:
        print("h5py/numpy missing; skipping")
        return 77
    tmp = tempfile.mkdtemp(prefix="attest-jobs-")

    # Failing candidates of both kernels, with a filter that skips cases, a crash mutant (its
    # worker restarts inside a shard): 1 job and 2 or 3 jobs agree on everything.
    for cand, extra in (("mutant-mla-no-merge-guard", ["--filter", "layout=mla-v4"]),
                        ("mutant-indexer-scale-off-by-one", []),
                        ("mutant-indexer-crash", []),
                        ("cpu-mla-decode", [])):
        outs = {}
        for jobs in ("1", "2", "3"):
            path = os.path.join(tmp, f"{cand}-{jobs}.h5")
            rc, out, err = run("run", "--candidate", cand, "--cases", "45", "--seed", "5",
                               "--out", path, "--jobs", jobs, *extra)
            want = 0 if cand.startswith("cpu-") else 1
            check(rc == want, f"{cand} --jobs {jobs}: exit {rc}, expected {want}\n{err}")
            outs[jobs] = (path, printed(out, path))
        for jobs in ("2", "3"):
            same_results(outs["1"][0], outs[jobs][0], f"{cand} --jobs 1 vs {jobs}")
            check(outs["1"][1] == outs[jobs][1],
                  f"{cand}: report of --jobs {jobs} differs:\n{outs['1'][1]}\n{outs[jobs][1]}")

    # A repro written by a sharded run replays to the same verdict.
    path = os.path.join(tmp, "mutant-indexer-scale-off-by-one-2.h5")
    cases, _, repros = rows(path)
    cid = sorted(repros, key=int)[0]
    rc, out, err = run("replay", path, "--case", cid, "--candidate",
                       "mutant-indexer-scale-off-by-one")
    check(rc == 1 and "(reproduced)" in out, f"replay of a sharded repro: exit {rc}\n{out}{err}")

    # The campaign (two jobs of two kernels) is the same with --jobs 2.
    a, b = os.path.join(tmp, "c1.h5"), os.path.join(tmp, "c2.h5")
    rc1, _, _ = run("campaign", "--cases", "40", "--out", a)
    rc2, _, _ = run("campaign", "--cases", "40", "--out", b, "--jobs", "2")
    check(rc1 == 0 and rc2 == 0, f"campaign: exit {rc1}, {rc2}")
    c = same_results(a, b, "campaign --jobs 1 vs 2")
    check(len(c) == 80, f"campaign: {len(c)} rows, expected 80")

    # --max-failures stops a sharded run at the same case as one process.
    outs = []
    for jobs in ("1", "2"):
        path = os.path.join(tmp, f"max-{jobs}.h5")
        rc, out, err = run("run", "--candidate", "mutant-indexer-scale-off-by-one", "--cases",
                           "200", "--max-failures", "3", "--out", path, "--jobs", jobs)
        check(rc == 1, f"--max-failures --jobs {jobs}: exit {rc}")
        with h5py.File(path, "r") as f:
            outs.append(list(f["cases"]["seed"][:]))
    check(outs[0] == outs[1], f"--max-failures: rows {outs[0]} vs {outs[1]}")

    # SIGTERM to a sharded run of a hanging candidate: it stops, keeps what it judged, leaves
    # no worker behind, and the file says interrupted.
    path = os.path.join(tmp, "term.h5")
    p = subprocess.Popen([CLI, "run", "--candidate", "mutant-indexer-hang", "--cases", "400",
                          "--timeout", "0.5", "--out", path, "--jobs", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "CI": "1"}, start_new_session=True)
    time.sleep(2.0)
    p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        check(False, "SIGTERM: the sharded run did not stop within 30 s")
    check(p.returncode == 143, f"SIGTERM: exit {p.returncode} (128 + SIGTERM)\n{err}")
    try:
        os.killpg(p.pid, 0)
        left = subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout
        check(left.strip() == "", f"SIGTERM: processes left behind: {left}")
    except ProcessLookupError:
        pass
    with h5py.File(path, "r") as f:
        state = f["provenance"].attrs["state"]
        state = state.decode() if isinstance(state, bytes) else str(state)
        check(state == "interrupted", f"SIGTERM: state {state}")

    # Bad values: one line, exit 2.
    for verb in ("run", "campaign"):
        for bad in ("0", "x", "-2"):
            args = ["--candidate", "cpu-indexer"] if verb == "run" else []
            rc, out, err = run(verb, *args, "--jobs", bad)
            one_line_error(rc, out, err, f"{verb} --jobs {bad}")
    return summary("test_jobs")


if __name__ == "__main__":
    sys.exit(main())
