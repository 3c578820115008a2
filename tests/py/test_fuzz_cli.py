#!/usr/bin/env python3
"""`attest fuzz`: on every shipped CPU mutant it finds a failing case, minimizes it and saves a
case file that `attest check` fails the same way (and the correct candidate passes); on the
correct candidates it finds nothing; bad input is one line and exit 2."""
import glob
import os
import re
import sys
import tempfile

from attest_testlib import CLI, check, host_mutants, one_line_error, run, summary

CORRECT = {"indexer": "cpu-indexer", "mla-decode": "cpu-mla-decode"}




def main():
    if not CLI or not os.path.exists(CLI):
        print("ATTEST_CLI not set or missing; skipping")
        return 77
    tmp = tempfile.mkdtemp(prefix="attest-fuzz-")
    muts = host_mutants(("indexer", "mla-decode"))
    check(len(muts) >= 10, f"attest list shows {len(muts)} host mutants")

    for name, kernel in muts:
        d = os.path.join(tmp, name)
        os.mkdir(d)
        res = os.path.join(d, "r.h5")
        fd = os.path.join(d, "findings")  # missing: fuzz makes it
        rc, out, err = run("fuzz", "--engine", "search", "--candidate", name, "--time", "30", "--jobs", "2",
                           "--seed", "1", "--timeout", "0.5", "--findings", fd, "--out", res)
        check(rc == 1, f"{name}: fuzz exit {rc}, expected 1 (a finding)\n{out}{err}")
        files = glob.glob(os.path.join(fd, "finding-*.h5"))
        check(len(files) == 1, f"{name}: {len(files)} finding files")
        check("(fails the same way)" in out, f"{name}: the saved case does not fail the same way\n{out}")
        m = re.search(r"finding 1: (\S+)", out)
        if not files or not m:
            continue
        verdict = m.group(1).rstrip(",")
        # the finding says what went wrong: a MISMATCH where, any other verdict its message
        what = re.search(r"^  what: (.+)$", out, re.M)
        check(what is not None and (verdict != "MISMATCH" or
                                    re.search(r"(worst|first) at \w+\[", what.group(1))),
              f"{name}: no 'what:' line naming where\n{out}")
        mini = re.search(r"minimized: .* -> b=(\d+) \S+=(\d+) \S+=(\d+)", out)
        check(mini is not None and mini.group(1) == "1",
              f"{name}: not minimized to one request:\n{out}")
        rc, cout, cerr = run("check", files[0], "--candidate", name, "--against", "both",
                             "--timeout", "0.5")
        check(rc == 1 and verdict in cout, f"{name}: attest check exit {rc}, verdict {verdict} "
                                           f"not in\n{cout}{cerr}")
        rc, cout, cerr = run("check", files[0], "--candidate", CORRECT[kernel], "--against", "both")
        check(rc == 0, f"{name}: the correct {CORRECT[kernel]} fails the saved case: exit {rc}\n{cout}")
        rc, rout, rerr = run("replay", files[0], "--candidate", name, "--timeout", "0.5")
        check(rc == 1 and verdict in rout, f"{name}: attest replay exit {rc}\n{rout}{rerr}")
        # A MISMATCH finding holds the candidate's outputs as recorded outputs: judged again
        # with no candidate (a GPU kernel's finding on a machine without the GPU).
        rc, kout, kerr = run("check", files[0], "--recorded")
        if verdict == "MISMATCH":
            check(rc == 1 and "MISMATCH" in kout and "differ from the recorded verdict: 0" in kout,
                  f"{name}: check --recorded exit {rc}\n{kout}{kerr}")
            # without --candidate, the refusal points at --recorded and names whose outputs
            rc, kout, kerr = run("check", files[0])
            check(rc == 2 and f"holds {name}'s recorded outputs" in kerr and "--recorded" in kerr,
                  f"{name}: check without --candidate: exit {rc} {kerr!r}")
        else:
            check(rc == 1 and "no recorded outputs" in kout,
                  f"{name}: a {verdict} finding records no outputs: exit {rc}\n{kout}{kerr}")

    # A finding never replaces a file: the same search again (the same seed, so the same case
    # and name) saves beside the first, which stays as it was; a link of that name is left alone.
    d = os.path.join(tmp, "again")
    os.mkdir(d)
    names = []
    for i in range(2):
        rc, out, err = run("fuzz", "--engine", "search", "--candidate",
                           "mutant-mla-scale-off-by-one", "--time", "10", "--jobs", "1",
                           "--seed", "2", "--findings", d, "--out", os.path.join(d, f"r{i}.h5"))
        m = re.search(r"saved: (\S+)", out)
        check(rc == 1 and m is not None, f"fuzz again {i}: exit {rc}\n{out}{err}")
        names.append(m.group(1) if m else "")
        if i == 0 and m:
            with open(m.group(1), "rb") as f:
                first = f.read()
    check(names[0] != names[1] and names[1].endswith("-2.h5"),
          f"the second finding's name: {names}")
    if names[0]:
        with open(names[0], "rb") as f:
            check(f.read() == first, "the second finding replaced the first")
    for n in names[1:]:
        rc, cout, cerr = run("check", n, "--candidate", "mutant-mla-scale-off-by-one")
        check(rc == 1, f"attest check {n}: exit {rc}")

    # The correct candidates: nothing found, no file saved, exit 0.
    for kernel, cand in CORRECT.items():
        d = os.path.join(tmp, cand)
        os.mkdir(d)
        # seed 1: its first 5000 cases pass (a clock seed meets the rare false alarms that
        # docs/notes.md lists, which belong to the comparator's bounds, not to this verb)
        rc, out, err = run("fuzz", "--engine", "search", "--candidate", cand, "--time", "3", "--jobs", "2", "--seed", "1",
                           "--findings", d, "--out", os.path.join(d, "r.h5"), "--reruns", "2")
        check(rc == 0, f"{cand}: fuzz exit {rc}\n{out}{err}")
        check(re.search(r", 0 findings", out) is not None, f"{cand}: findings reported\n{out}")
        check(not glob.glob(os.path.join(d, "finding-*")), f"{cand}: a finding file was saved")
        m = re.search(r"attest fuzz: (\d+) cases in", out)
        check(m is not None and int(m.group(1)) >= 20, f"{cand}: too few cases judged\n{out}")

    # --jobs left out: one job per online core for a host candidate, one per visible GPU for a
    # device candidate (several processes on one GPU take turns at it).
    cores = os.sysconf("SC_NPROCESSORS_ONLN")
    rc, out, err = run("fuzz", "--engine", "search", "--candidate", "cpu-indexer", "--time", "0.5",
                       "--seed", "1", "--out", os.path.join(tmp, "default-jobs.h5"))
    check(rc == 0 and f"over {cores} job" in out,
          f"fuzz without --jobs: exit {rc}, expected 'over {cores} job'\n{out}{err}")
    if any(line.split()[:1] == ["cuda-indexer-paged"] for line in run("list")[1].splitlines()):
        saved = os.environ.get("CUDA_VISIBLE_DEVICES")
        # cores + 1 GPUs named (none need exist): as many jobs, which no core count gives
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(cores + 1))
        try:
            rc, out, err = run("fuzz", "--engine", "search", "--candidate", "cuda-indexer-paged",
                               "--time", "0.5", "--seed", "1",
                               "--out", os.path.join(tmp, "device-jobs.h5"))
        finally:
            if saved is None:
                del os.environ["CUDA_VISIBLE_DEVICES"]
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = saved
        check(f"over {cores + 1} jobs" in out,
              f"device candidate without --jobs: expected 'over {cores + 1} jobs'\n{out}{err}")

    # Bad input: one line, exit 2, nothing written.
    bad = [["--candidate", "cpu-indexer", "--time", "0"],
           ["--candidate", "cpu-indexer", "--jobs", "0"],
           ["--candidate", "no-such-kernel"],
           ["--candidate", "cpu-indexer", "--kernel", "mla-decode"],
           ["--candidate", "cpu-indexer", "--findings", os.path.join(tmp, "missing", "sub")],
           ["--candidate", "cpu-indexer", "--findings", os.path.join(tmp, "a-file")],
           ["--time", "3"]]
    with open(os.path.join(tmp, "a-file"), "w") as f:
        f.write("kept\n")
    for args in bad:
        rc, out, err = run("fuzz", *args, "--out", os.path.join(tmp, "never.h5"))
        one_line_error(rc, out, err, f"fuzz {' '.join(args)}")
    check(not os.path.exists(os.path.join(tmp, "never.h5")), "a refused fuzz wrote its results file")
    check(not os.path.exists(os.path.join(tmp, "missing")), "a refused --findings made a parent")
    with open(os.path.join(tmp, "a-file")) as f:
        check(f.read() == "kept\n", "a refused --findings changed the file it named")
    return summary("test_fuzz_cli")


if __name__ == "__main__":
    sys.exit(main())
