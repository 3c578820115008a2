#!/usr/bin/env python3
"""`attest fuzz --candidate NEW --baseline OLD [--same bitwise|bounds]`: a finding is a case on
which NEW and OLD disagree as `attest run --baseline` judges a pair. A mutant against its correct
kernel (and a crashing one) is found, minimized and saved as a case file that
`attest check --candidate NEW --baseline OLD` reports as differing the same way; an other-order
control differs from its kernel bitwise (found with --same bitwise) but never within both
bounds, and a kernel never differs from itself bitwise; the jobs' rows are one results file
`attest show` reads; bad input is one line and exit 2."""
import glob
import os
import re
import shutil
import sys
import tempfile

from attest_testlib import CLI, check, one_line_error, run, summary


def fuzz(tmp, name, new, old, *extra, time="60"):
    d = os.path.join(tmp, name)
    os.mkdir(d)
    res = os.path.join(d, "r.h5")
    rc, out, err = run("fuzz", "--candidate", new, "--baseline", old, "--time", time, "--jobs", "2",
                       "--seed", "1", "--timeout", "1", "--findings", d, "--out", res, *extra)
    return d, res, rc, out, err


def main():
    if not CLI or not os.path.exists(CLI):
        print("ATTEST_CLI not set or missing; skipping")
        return 77
    tmp = tempfile.mkdtemp(prefix="attest-fuzz-baseline-")
    os.environ["TMPDIR"] = tmp

    # NEW differs from OLD: found, minimized, saved; attest check sees the same difference.
    found = [("mutant-indexer-scale-off-by-one", "cpu-indexer", []),
             ("mutant-mla-scale-off-by-one", "cpu-mla-decode", []),
             ("mutant-indexer-crash", "cpu-indexer", []),
             ("cpu-indexer-pairwise", "cpu-indexer", ["--same", "bitwise"])]
    for i, (new, old, extra) in enumerate(found):
        d, res, rc, out, err = fuzz(tmp, f"f{i}", new, old, *extra)
        what = f"{new} vs {old} {' '.join(extra)}"
        check(rc == 1, f"{what}: fuzz exit {rc}, expected 1\n{out}{err}")
        files = glob.glob(os.path.join(d, "finding-*-differs-*.h5"))
        check(len(files) == 1, f"{what}: {len(files)} finding files\n{out}{err}")
        check("(differs the same way)" in out, f"{what}: not the same difference\n{out}")
        check(re.search(r"^time to first finding: [0-9.]+ s \(\d+ cases\)", out, re.M) is not None,
              f"{what}: no time to first finding\n{out}")
        if not files:
            continue
        rc, cout, cerr = run("check", files[0], "--candidate", new, "--baseline", old, *extra,
                             "--timeout", "1")
        check(rc == 1 and "DIFFERS from" in cout and "1 differing from the baseline" in cout,
              f"{what}: attest check --baseline exit {rc}\n{cout}{cerr}")
        rc, cout, cerr = run("check", files[0], "--candidate", old)
        check(rc == 0, f"{what}: the baseline {old} fails the saved case: exit {rc}\n{cout}{cerr}")
        if extra:  # bitwise apart, but within both bounds: attest check agrees
            rc, cout, cerr = run("check", files[0], "--candidate", new, "--baseline", old)
            check(rc == 0 and "AGREES with" in cout, f"{what}: within bounds exit {rc}\n{cout}")
        rc, sout, serr = run("show", res)
        check(rc == 1 and f"{new} vs {old}" in sout, f"{what}: attest show {rc}\n{sout}{serr}")

    # Same function: nothing found, every case's two rows merged.
    same = [("cpu-indexer-pairwise", "cpu-indexer", []),
            ("cpu-mla-decode-tile16", "cpu-mla-decode", []),
            ("cpu-indexer", "cpu-indexer", ["--same", "bitwise"])]
    for i, (new, old, extra) in enumerate(same):
        d, res, rc, out, err = fuzz(tmp, f"s{i}", new, old, *extra, "--reruns", "2", time="5")
        what = f"{new} vs {old} {' '.join(extra)}"
        check(rc == 0 and re.search(r", 0 findings$", out, re.M) is not None,
              f"{what}: fuzz exit {rc}\n{out}{err}")
        check(not glob.glob(os.path.join(d, "finding-*")), f"{what}: a finding file was saved")
        m = re.search(r"^attest fuzz: (\d+) cases in", out, re.M)
        rows = re.search(r"^results: (\d+) rows", out, re.M)
        check(m and rows and int(m.group(1)) >= 20 and int(rows.group(1)) == 2 * int(m.group(1)),
              f"{what}: rows are not two per case\n{out}")
        rc, sout, serr = run("show", res)
        check(rc == 0 and "complete" in sout and "PASS" in sout,
              f"{what}: attest show of the merged file (exit {rc})\n{sout}{serr}")

    bad = [["--candidate", "cpu-indexer", "--same", "bitwise"],
           ["--candidate", "cpu-mla-decode", "--baseline", "cpu-indexer"],
           ["--candidate", "cpu-indexer-scale-first", "--baseline", "cpu-indexer"],
           ["--candidate", "cpu-indexer", "--baseline", "cpu-indexer", "--engine", "libfuzzer"],
           ["--candidate", "cpu-indexer", "--baseline", "no-such-kernel"],
           ["--candidate", "cpu-topk", "--baseline", "cpu-topk-ties-high"],
           ["--candidate", "cpu-indexer", "--baseline", "cpu-indexer", "--same", "closely"]]
    for args in bad:
        rc, out, err = run("fuzz", *args, "--time", "1", "--out", os.path.join(tmp, "never.h5"))
        one_line_error(rc, out, err, f"fuzz {' '.join(args)}")
    check(not os.path.exists(os.path.join(tmp, "never.h5")), "a refused fuzz wrote its results file")
    check(not glob.glob(os.path.join(tmp, "attest-fuzz-*")), "a scratch folder was left behind")
    rc = summary("test_fuzz_baseline")
    if rc == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
