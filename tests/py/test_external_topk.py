#!/usr/bin/env python3
"""External top-k candidates end to end (docs/topk.md, docs/external-candidates.md): the numpy
example passes and its broken variant fails through `attest run --kernel topk`, `exec:`, the
fuzz search and `attest check`; every fault a process can have is a finding with a one-line
detail quoting its output, the process is replaced and the campaign goes on, none is left
behind (also when attest is SIGKILLed), and bad input is one line, exit 2."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from attest_testlib import CLI, check, one_line_error, run, summary

SRC = os.environ.get("ATTEST_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
EX = os.path.join(SRC, "python", "examples", "numpy_topk.py")
FAULTS = os.path.join(SRC, "tests", "py", "external", "faults_topk.py")


def counts(out):
    m = re.search(r"verdicts: OK (\d+), MISMATCH (\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def failed_checks(out):
    m = re.search(r"failed checks:(.*)", out)
    return dict((k, int(n)) for k, n in re.findall(r"([a-z-]+) (\d+)", m.group(1))) if m else {}


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pids_of(state):
    try:
        with open(state + ".pids") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def main():
    if not CLI or not os.path.exists(CLI):
        print("ATTEST_CLI not set or missing; skipping")
        return 77
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("numpy missing (bash ci/setup.sh --with-python); skipping")
        return 77
    tmp = tempfile.mkdtemp(prefix="attest-external-topk-")
    every_pid = []

    def topk(spec, *extra, cases=4):
        return run("run", "--kernel", "topk", "--candidate", spec, "--cases", str(cases),
                   "--seed", "1", *extra)

    def fault_run(name, *extra, at=None, cases=4):
        state = os.path.join(tmp, f"state-{name}-{at}-{len(extra)}")
        env = {"ATTEST_TEST_STATE": state}
        if at:
            env["ATTEST_TEST_FAULT_AT"] = str(at)
        os.environ.update(env)
        try:
            rc, out, err = topk(f"py:{FAULTS}:{name}", *extra, cases=cases)
        finally:
            for k in env:
                del os.environ[k]
        every_pid.extend(pids_of(state))
        return rc, out, err, pids_of(state)

    # 1. The example passes and its broken variant fails, by py: and by exec:.
    rc, out, err = topk(f"py:{EX}:topk", cases=300)
    check(rc == 0 and "result: PASS (300 cases)" in out, f"numpy topk: exit {rc}\n{out}{err}")
    rc, out, err = topk(f"py:{EX}:topk_pads_unranked", cases=100)
    ok, bad = counts(out)
    check(rc == 1 and bad is not None and bad >= 20 and
          set(failed_checks(out)) <= {"nonfinite", "padding"} and "nonfinite" in failed_checks(out),
          f"pads_unranked: exit {rc}, {ok} OK / {bad} failing, checks {failed_checks(out)}\n{out}")
    rc, out, err = topk(f"py:{FAULTS}:physical_only", cases=60)
    check(rc == 0, f"a physical-only set (order any): exit {rc}\n{out}")
    rc, out, err = topk(f"exec:{sys.executable} {SRC}/tests/py/external/exec_topk.py", cases=40)
    check(rc == 0 and "result: PASS (40 cases)" in out, f"exec: topk: exit {rc}\n{out}{err}")
    rc, out, err = topk(f"py:{EX}:topk", "--no-isolate", cases=40)
    check(rc == 0, f"--no-isolate: exit {rc}\n{out}{err}")

    # 2. The runner's integrity checks apply across the bridge.
    for name, check_name, text in (
            ("clamps_lens", "input-modified", "input-modified: run 1 changed 'context_lens'"),
            ("writes_past", "canary", "canary: run 1 wrote past 'topk_indices'"),
            ("writes_nothing", "range", "range: row 0 slot 0"),
            ("noisy", "nondeterminism", "nondeterminism: run 2 wrote other outputs than run 1"),
            ("wrong_dtype", "run", "'topk_indices' is int64"),
            ("wrong_shape", "run", "expected int32"),
            ("garbage", "run", "garbage on the control channel")):
        rc, out, err, _ = fault_run(name)
        ok, bad = counts(out)
        check(rc == 1 and bad == 4 and failed_checks(out).get(check_name) == 4 and text in out,
              f"{name}: exit {rc}, expected 4 failing with {check_name} and '{text}'\n{out}")
    rc, out, err, _ = fault_run("returns_copy")
    check(rc == 0, f"returns_copy: outputs returned instead of written: exit {rc}\n{out}")
    rc, out, err, _ = fault_run("declines", cases=12)
    ok, bad = counts(out)
    check(rc == 1 and ok and bad and "run: the candidate declined the case" in out,
          f"declines: exit {rc}, {ok} OK / {bad} failing\n{out}")

    # 3. A fault is a finding quoting the process's output; the process is replaced and the
    # campaign goes on. With --no-isolate too: the process is the isolation.
    for name, check_name, quoted, extra in (
            ("raises", "crash", "crash: the candidate raised ZeroDivisionError: the kernel "
             "divided by zero", ()),
            ("exits", "crash", "crash: the candidate process exited with status 3", ()),
            ("segfault", "crash", "crash: the candidate process killed by SIGSEGV", ()),
            ("segfault", "crash", "killed by SIGSEGV", ("--no-isolate",)),
            ("hangs", "timeout", "timeout: no answer within 3 s", ("--timeout", "3"))):
        rc, out, err, pids = fault_run(name, *extra, at=3, cases=6)
        ok, bad = counts(out)
        check(rc == 1 and ok == 5 and bad == 1 and failed_checks(out) == {check_name: 1},
              f"{name} {extra}: exit {rc}, expected one {check_name} and 5 OK\n{out}")
        check(quoted in out, f"{name}: '{quoted}' not in the verdict\n{out}")
        printed = {"raises": "in raises", "exits": "exiting mid-case",
                   "segfault": "dereferencing NULL", "hangs": "hanging"}[name]
        check(re.search(rf"{check_name}: .*output: .*{printed}", out) is not None,
              f"{name}: the detail does not quote the process's output '{printed}'\n{out}")
        check(printed in err, f"{name}: the output tail is not printed on stderr\n{err}")
        check(len(set(pids)) == 3, f"{name}: expected 3 processes (load, first, replacement), "
              f"got {pids}")

    # A process start slower than --timeout is not a failed start: the start has the load's
    # allowance, the time limit is the run's.
    os.environ["ATTEST_TEST_SLOW_START"] = "1.5"
    try:
        rc, out, err = topk(f"py:{FAULTS}:returns_copy", "--timeout", "1", cases=3)
    finally:
        del os.environ["ATTEST_TEST_SLOW_START"]
    check(rc == 0 and "result: PASS (3 cases)" in out, f"slow start under --timeout 1: exit {rc}\n{out}")

    # 4. A SIGKILLed attest leaves no candidate process behind.
    state = os.path.join(tmp, "state-killed")
    env = {**os.environ, "CI": "1", "ATTEST_TEST_STATE": state}
    p = subprocess.Popen([CLI, "run", "--kernel", "topk", "--candidate", f"py:{FAULTS}:hangs",
                          "--cases", "3", "--timeout", "60"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while len(pids_of(state)) < 2 and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.wait()
    check(len(pids_of(state)) == 2, f"killed run: expected 2 processes, got {pids_of(state)}")
    every_pid.extend(pids_of(state))
    deadline = time.time() + 5
    while any(alive(x) for x in every_pid) and time.time() < deadline:
        time.sleep(0.05)
    left = [x for x in every_pid if alive(x)]
    check(not left, f"candidate processes left behind: {left}")
    check(len(every_pid) > 20, f"the fault runs recorded only {len(every_pid)} processes")

    # 5. The fuzz search (2 forked jobs, each with its own process) finds the broken variant,
    # and its saved case fails with it and passes with the correct one through attest check.
    res = os.path.join(tmp, "fuzz.h5")
    p = subprocess.run([CLI, "fuzz", "--kernel", "topk", "--candidate",
                        f"py:{EX}:topk_pads_unranked", "--time", "60", "--seed", "3",
                        "--out", res], capture_output=True, text=True, cwd=tmp, timeout=300,
                       env={**os.environ, "CI": "1"})
    m = re.search(r"saved: (\S+\.h5)", p.stdout)
    check(p.returncode == 1 and m is not None and "nonfinite" in p.stdout,
          f"fuzz: exit {p.returncode}\n{p.stdout}{p.stderr}")
    if m:
        found = os.path.join(tmp, m.group(1))
        rc, out, err = run("check", found, "--candidate", f"py:{EX}:topk_pads_unranked")
        check(rc == 1, f"check of the finding with the broken candidate: exit {rc}\n{out}{err}")
        rc, out, err = run("check", found, "--candidate", f"py:{EX}:topk")
        check(rc == 0, f"check of the finding with the correct candidate: exit {rc}\n{out}{err}")

    # 6. The chain takes a process as its top-k stage.
    rc, out, err = run("run", "--kernel", "pipeline", "--candidate", "indexer=cpu-indexer",
                       "--candidate", f"topk=py:{EX}:topk", "--candidate",
                       "decode=cpu-mla-decode", "--cases", "10")
    check(rc == 0 and "result: PASS (10 cases)" in out, f"pipeline: exit {rc}\n{out}{err}")

    # 7. Bad input: one line, exit 2; attest list shows the declared contract.
    for args, text in (
            (("--kernel", "topk", "--candidate", f"py:{FAULTS}:an_indexer"),
             "declares the indexer family, not topk"),
            (("--candidate", f"py:{EX}:topk"), "declares the topk family: run it with --kernel topk"),
            (("--kernel", "topk", "--candidate", f"py:{FAULTS}:nope"), "has no attribute 'nope'"),
            (("--kernel", "topk", "--candidate",
              f"exec:{sys.executable} {SRC}/tests/py/external/exec_topk.py no-order"),
             "declares order '(none)' (sorted or any)")):
        rc, out, err = run("run", *args, "--cases", "1")
        one_line_error(rc, out, err, " ".join(args))
        check(text in err, f"{args}: '{text}' not in {err!r}")
    rc, out, err = run("list", "--candidate", f"py:{EX}:topk")
    check(rc == 0 and re.search(r"numpy-topk +topk +host +order=sorted,out=both,short=by-score "
                                r".*python process, host", out) is not None,
          f"list: exit {rc}\n{out}{err}")
    return summary("test_external_topk")


if __name__ == "__main__":
    sys.exit(main())
