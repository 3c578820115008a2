#!/usr/bin/env python3
"""`attest fuzz --kernel topk` (the generated-case search; the libFuzzer engine is
test_fuzz_engine.py's): on every shipped top-k mutant, and a plugin's, it finds a failing case,
minimizes it and saves a top-k case file that `attest check` fails with the same checks while
cpu-topk passes it; on every correct top-k candidate it finds nothing, with the re-run check, and
the jobs' results are one file `attest show` and `attest replay` read; bad input is one line and
exit 2.

argv[1]: the top-k test plugin (tests/topk_plugin_fixture.c)."""
import glob
import os
import re
import shutil
import signal
import subprocess
import time
import sys
import tempfile

from attest_testlib import CLI, check, one_line_error, run, summary


def topk_candidates():
    rc, out, _ = run("list")
    found = []
    for line in out.splitlines():
        m = re.match(r"\s+(\S+)\s+topk\s+host\s", line)
        if m:
            found.append(m.group(1))
    return found


def checks_of(text):
    """The failed checks a line names: '[recall+padding]' -> {'recall', 'padding'}."""
    m = re.search(r"\[([a-z+-]+)\]", text)
    return set(m.group(1).split("+")) if m else set()


def main():
    if not CLI or not os.path.exists(CLI):
        print("ATTEST_CLI not set or missing; skipping")
        return 77
    plugin = sys.argv[1] if len(sys.argv) > 1 else None
    tmp = tempfile.mkdtemp(prefix="attest-fuzz-topk-")
    os.environ["TMPDIR"] = tmp  # the jobs' scratch folders, too
    cands = topk_candidates()
    muts = [c for c in cands if c.startswith("mutant-")]
    correct = [c for c in cands if not c.startswith("mutant-")]
    check(len(muts) >= 5 and len(correct) >= 4, f"attest list shows top-k {cands}")
    if plugin:
        muts.append(plugin + ":plugin-topk-zero-pad")
        correct.append(plugin + ":plugin-topk")

    for i, name in enumerate(muts):
        d = os.path.join(tmp, f"m{i}")
        os.mkdir(d)
        res = os.path.join(d, "r.h5")
        rc, out, err = run("fuzz", "--kernel", "topk", "--engine", "search", "--candidate", name,
                           "--time", "60", "--jobs", "2", "--seed", "1", "--findings", d,
                           "--out", res)
        check(rc == 1, f"{name}: fuzz exit {rc}, expected 1 (a finding)\n{out}{err}")
        files = glob.glob(os.path.join(d, "finding-topk-*.h5"))
        check(len(files) == 1, f"{name}: {len(files)} finding files\n{out}{err}")
        check("(fails the same way)" in out, f"{name}: the saved case does not fail the same way\n{out}")
        check(re.search(r"^time to first finding: [0-9.]+ s \(\d+ cases\)", out, re.M) is not None,
              f"{name}: no time to first finding\n{out}")
        m = re.search(r"^finding 1: (MISMATCH|CRASH|TIMEOUT|\S+) (\[[a-z+-]+\])", out, re.M)
        mm = re.search(r"minimized: .* -> b=(\d+) next_n=(\d+) width=(\d+) k=(\d+)", out)
        check(mm is not None and int(mm.group(1)) == 1 and int(mm.group(3)) <= 64,
              f"{name}: not minimized to one request of at most 64 positions\n{out}")
        if not files or not m:
            continue
        want = checks_of(m.group(2))
        rc, cout, cerr = run("check", files[0], "--candidate", name)
        check(rc == 1 and checks_of(cout) == want,
              f"{name}: attest check exit {rc}, checks {checks_of(cout)} != {want}\n{cout}{cerr}")
        rc, cout, cerr = run("check", files[0], "--candidate", "cpu-topk")
        check(rc == 0, f"{name}: cpu-topk fails the saved case: exit {rc}\n{cout}{cerr}")
        # The merged results: the failing row is in and replays from its seed.
        rc, sout, serr = run("show", res)
        check(rc == 1 and "MISMATCH" in sout, f"{name}: attest show of the results: {rc}\n{sout}{serr}")
        rows = re.search(r"^results: (\d+) judged cases", out, re.M)
        check(rows is not None and int(rows.group(1)) >= 1, f"{name}: no merged rows\n{out}")

    for i, name in enumerate(correct):
        d = os.path.join(tmp, f"c{i}")
        os.mkdir(d)
        res = os.path.join(d, "r.h5")
        rc, out, err = run("fuzz", "--kernel", "topk", "--engine", "search", "--candidate", name,
                           "--time", "4", "--jobs", "2", "--seed", "1", "--reruns", "2",
                           "--findings", d, "--out", res)
        check(rc == 0, f"{name}: fuzz exit {rc}\n{out}{err}")
        check(re.search(r", 0 findings$", out, re.M) is not None, f"{name}: findings\n{out}")
        check(not glob.glob(os.path.join(d, "finding-*")), f"{name}: a finding file was saved")
        m = re.search(r"^results: (\d+) judged cases in", out, re.M)
        check(m is not None and int(m.group(1)) >= 100, f"{name}: too few cases merged\n{out}")
        rc, sout, serr = run("show", res)
        check(rc == 0 and m is not None and f"{m.group(1)} cases" in sout and "complete" in sout,
              f"{name}: attest show of the merged file (exit {rc})\n{sout}{serr}")
        if i == 0:
            rc, rout, rerr = run("replay", res, "--case", "5")
            check(rc == 0 and "OK" in rout, f"{name}: attest replay of a merged row: {rc}\n{rout}{rerr}")

    # SIGINT: the jobs stop, their rows are merged into a file marked interrupted, exit 130.
    res = os.path.join(tmp, "int.h5")
    p = subprocess.Popen([CLI, "fuzz", "--kernel", "topk", "--candidate", "cpu-topk", "--time", "60",
                          "--jobs", "2", "--seed", "1", "--findings", tmp, "--out", res],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "CI": "1"})
    time.sleep(2)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    check(p.returncode == 130, f"SIGINT: fuzz exit {p.returncode}, expected 130\n{out}{err}")
    rc, sout, serr = run("show", res)
    check("interrupted" in sout, f"SIGINT: the merged file is not marked interrupted\n{sout}{serr}")

    # Bad input: one line, exit 2, nothing written.
    bad = [["--candidate", "cpu-topk", "--policy", "policies/default.json"],
           ["--candidate", "cpu-topk", "--max-heads", "4"],
           ["--candidate", "cpu-topk", "--engine", "search", "--corpus", tmp],
           ["--kernel", "topk", "--candidate", "no-such-topk"],
           ["--candidate", "cpu-topk", "--engine", "libfuzzer", "--fuzzer", "/nonexistent"],
           ["--candidate", "cpu-topk", "--engine", "libfuzzer", "--max-len", "64",
            "--fuzzer", "/bin/true"],
           ["--candidate", "cpu-topk", "--max-topk", "9000"],
           ["--candidate", "cpu-topk", "--findings", os.path.join(tmp, "missing", "sub")]]
    for args in bad:
        rc, out, err = run("fuzz", *args, "--time", "1", "--out", os.path.join(tmp, "never.h5"))
        one_line_error(rc, out, err, f"fuzz {' '.join(args)}")
    check(not os.path.exists(os.path.join(tmp, "never.h5")), "a refused fuzz wrote its results file")
    check(not glob.glob(os.path.join(tmp, "attest-fuzz-*")), "a scratch folder was left behind")
    rc = summary("test_fuzz_topk")
    if rc == 0:
        shutil.rmtree(tmp, ignore_errors=True)  # kept for a look when a check failed
    return rc


if __name__ == "__main__":
    sys.exit(main())
