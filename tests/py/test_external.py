#!/usr/bin/env python3
"""External-process candidates end to end (docs/external-candidates.md): the numpy examples and
their broken variants through `attest run`, every fault a process can have as a verdict with its
output quoted, the process replaced and none left behind, and bad input as one line, exit 2."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from attest_testlib import CLI, check, one_line_error, run, summary

SRC = os.environ.get("ATTEST_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
EX = os.path.join(SRC, "python", "examples")
FAULTS = os.path.join(SRC, "tests", "py", "external", "faults.py")


def verdicts(out):
    m = re.search(r"verdicts: (.*)", out)
    return dict((v, int(n)) for v, n in re.findall(r"([A-Z_]+) (\d+)", m.group(1))) if m else {}


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes only once reaped by its parent; read its state.
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
    tmp = tempfile.mkdtemp(prefix="attest-external-")
    every_pid = []

    def fault_run(name, *extra, at=None, cases=4):
        state = os.path.join(tmp, f"state-{name}-{at}")
        env = {"ATTEST_TEST_STATE": state}
        if at:
            env["ATTEST_TEST_FAULT_AT"] = str(at)
        os.environ.update(env)
        try:
            rc, out, err = run("run", "--candidate", f"py:{FAULTS}:{name}", "--cases", str(cases),
                               "--seed", "1", *extra)
        finally:
            for k in env:
                del os.environ[k]
        every_pid.extend(pids_of(state))
        return rc, out, err, pids_of(state)

    # 1. The examples: correct ones pass, broken ones fail, through the bridge.
    for spec, cases in ((f"py:{EX}/numpy_indexer.py:indexer", 150),
                        (f"py:{EX}/numpy_mla_decode.py:mla_decode", 80)):
        rc, out, err = run("run", "--candidate", spec, "--cases", str(cases), "--seed", "7")
        check(rc == 0 and f"result: PASS ({cases} cases)" in out, f"{spec}: exit {rc}\n{out}{err}")
    for spec in (f"py:{EX}/numpy_indexer.py:indexer_scale_shift",
                 f"py:{EX}/numpy_mla_decode.py:mla_decode_log2_lse"):
        rc, out, err = run("run", "--candidate", spec, "--cases", "20", "--seed", "7")
        v = verdicts(out)
        check(rc == 1 and v.get("MISMATCH", 0) >= 10, f"{spec}: exit {rc}, verdicts {v}")
    rc, out, err = run("run", "--candidate", f"exec:{sys.executable} "
                       f"{SRC}/tests/py/external/exec_candidate.py", "--cases", "20")
    check(rc == 0 and "result: PASS (20 cases)" in out, f"exec: candidate: exit {rc}\n{out}{err}")
    rc, out, err = run("run", "--candidate", f"exec:{sys.executable} "
                       f"{SRC}/tests/py/external/exec_wrong_case.py", "--cases", "2")
    check(rc == 1 and verdicts(out) == {"HARNESS_ERROR": 2} and
          "the process answered case 6 to run message 1" in out,
          f"exec: a reply to another case: exit {rc}\n{out}{err}")
    rc, out, err = run("run", "--no-isolate", "--candidate", f"py:{EX}/numpy_indexer.py:indexer",
                       "--cases", "20")
    check(rc == 0, f"--no-isolate: exit {rc}\n{out}{err}")

    # 1b. Pools moved past 2^31 bytes, held sparsely (--high-pools 1000: every case): the
    # process maps the region sparsely with only the placed pages accessible, so the correct
    # kernels pass and one whose page offsets wrap in 32 bits dies on an unplaced page.
    for spec in (f"py:{EX}/numpy_indexer.py:indexer", f"py:{EX}/numpy_mla_decode.py:mla_decode"):
        rc, out, err = run("run", "--candidate", spec, "--cases", "8", "--seed", "3",
                           "--high-pools", "1000", "--timeout", "60")
        check(rc == 0 and verdicts(out) == {"OK": 8}, f"{spec} on moved pools: exit {rc}, "
              f"verdicts {verdicts(out)}\n{out}{err}")
    rc, out, err = run("run", "--candidate", f"py:{EX}/numpy_mla_decode.py:mla_decode_int32_offsets",
                       "--cases", "3", "--seed", "3", "--high-pools", "1000", "--timeout", "60")
    check(rc == 1 and verdicts(out) == {"CRASH": 3} and "killed by SIGSEGV" in out,
          f"int32 offsets on moved pools: exit {rc}, verdicts {verdicts(out)}\n{out}")

    # 2. Integrity checks apply unchanged across the bridge.
    for name, verdict, text in (
            ("clamps_table", "INPUT_MODIFIED", "input 'block_table' modified"),
            ("writes_nothing", "MISMATCH", "unwritten"),
            ("noisy", "NONDETERMINISTIC", "differs bitwise"),
            ("wrong_dtype", "HARNESS_ERROR", "'logits' is float64"),
            ("wrong_shape", "HARNESS_ERROR", "expected float32"),
            ("garbage", "HARNESS_ERROR", "garbage on the control channel")):
        rc, out, err, _ = fault_run(name)
        check(rc == 1 and verdicts(out).get(verdict) == 4 and text in out,
              f"{name}: exit {rc}, expected 4 x {verdict} with '{text}'\n{out}")
    rc, out, err, _ = fault_run("returns_copy")
    check(rc == 0, f"returns_copy: outputs returned instead of written: exit {rc}\n{out}")
    rc, out, err, _ = fault_run("declines", cases=12)
    v = verdicts(out)
    check(rc == 0 and v.get("UNSUPPORTED", 0) > 0 and v.get("OK", 0) > 0,
          f"declines: exit {rc}, verdicts {v}")
    # Declining every case checks nothing: exit 1, as `attest check` fails such a run.
    rc, out, err, _ = fault_run("declines_all")
    check(rc == 1 and verdicts(out).get("UNSUPPORTED") == 4 and "declined every case" in out,
          f"declines_all: exit {rc}, expected 1 with 'declined every case'\n{out}")

    # 3. Faults are verdicts with the last lines of the process's output; one fault replaces the
    # process and the campaign goes on.
    for name, verdict, quoted in (
            ("raises", "CRASH", "ZeroDivisionError: the kernel divided by zero"),
            ("exits", "CRASH", "exited with status 3"),
            ("segfault", "CRASH", "killed by SIGSEGV"),
            ("hangs", "TIMEOUT", "no answer within the time limit")):
        extra = ("--timeout", "4") if name == "hangs" else ()
        rc, out, err, pids = fault_run(name, *extra, at=3, cases=6)
        v = verdicts(out)
        check(rc == 1 and v.get(verdict) == 1 and v.get("OK") == 5,
              f"{name}: exit {rc}, expected one {verdict} and 5 OK, got {v}\n{out}")
        check(quoted in out, f"{name}: '{quoted}' not in the verdict\n{out}")
        printed = {"raises": "in raises", "exits": "exiting mid-case",
                   "segfault": "dereferencing NULL", "hangs": "hanging"}[name]
        check(re.search(rf"{verdict} .*output: .*{printed}", out) is not None,
              f"{name}: the verdict does not quote the process's output '{printed}'\n{out}")
        check(printed in err, f"{name}: the output tail is not printed on stderr\n{err}")
        # load + first server + the replacement after the fault
        check(len(set(pids)) == 3, f"{name}: expected 3 processes (load, first, replacement), "
              f"got {pids}")

    # The serving process fails to import though loading worked: HARNESS_ERROR, then no retry.
    state = os.path.join(tmp, "import-once")
    os.environ["ATTEST_TEST_STATE"] = state
    rc, out, err = run("run", "--candidate", f"py:{SRC}/tests/py/external/import_once.py:cand",
                       "--cases", "5")
    del os.environ["ATTEST_TEST_STATE"]
    check(rc == 1 and verdicts(out).get("HARNESS_ERROR") == 5 and
          "the second import fails" in out and "not started again after 3 failures" in out,
          f"import in the serving process: exit {rc}\n{out}")

    # 4. A SIGKILLed attest leaves no candidate process behind.
    state = os.path.join(tmp, "state-killed")
    env = {**os.environ, "CI": "1", "ATTEST_TEST_STATE": state}
    p = subprocess.Popen([CLI, "run", "--candidate", f"py:{FAULTS}:hangs", "--cases", "3",
                          "--timeout", "60"], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while len(pids_of(state)) < 2 and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the serving process is in its sleep now
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

    # 5. Bad input: one line, exit 2.
    ext = f"{SRC}/tests/py/external"
    for spec, text in ((f"py:{ext}/no_such_file.py:f", "No such file"),
                       (f"py:{FAULTS}:no_such_name", "has no attribute 'no_such_name'"),
                       (f"py:{FAULTS}:one_arg", "wrong signature"),
                       (f"py:{FAULTS}:not_declared", "not declared as a candidate"),
                       (f"py:{ext}/import_error.py:f", "ModuleNotFoundError"),
                       (f"py:{FAULTS}", "expected py:PATH.py:NAME"),
                       ("exec:no-such-command-for-attest", "cannot run"),
                       ("exec:", "expected exec:COMMAND")):
        rc, out, err = run("run", "--candidate", spec, "--cases", "1")
        one_line_error(rc, out, err, spec)
        check(text in err, f"{spec}: '{text}' not in {err!r}")

    # 6. attest list shows an external candidate with its declaration.
    rc, out, err = run("list", "--candidate", f"py:{EX}/numpy_mla_decode.py:mla_decode")
    check(rc == 0 and re.search(r"numpy-mla-decode +mla-decode .*lse=excludes_sink", out)
          is not None and "python process, host" in out, f"list: exit {rc}\n{out}")

    # 7. replay of a stored case with an external candidate.
    res = os.path.join(tmp, "r.h5")
    rc, out, err = run("run", "--candidate", f"py:{EX}/numpy_indexer.py:indexer_scale_shift",
                       "--cases", "5", "--out", res)
    m = re.search(r"#(\d+) MISMATCH", out)
    check(rc == 1 and m is not None, f"replay setup: exit {rc}\n{out}")
    if m:
        rc, out, err = run("replay", res, "--case", m.group(1), "--candidate",
                           f"py:{EX}/numpy_indexer.py:indexer_scale_shift")
        check(rc == 1 and "MISMATCH (reproduced)" in out, f"replay: exit {rc}\n{out}{err}")
        rc, out, err = run("replay", res, "--case", m.group(1), "--candidate",
                           f"py:{EX}/numpy_indexer.py:indexer")
        check(rc == 0, f"replay with the correct candidate: exit {rc}\n{out}{err}")
    # 8. Declared conventions: the reference follows each candidate's declaration. The same
    # outputs pass when the candidate declares the choice it makes and fail when it does not.
    conv = f"{SRC}/tests/py/external/conventions.py"
    for name, cases in (("relu_propagates", 300), ("lonely_declared", 60), ("ends_declared", 60)):
        rc, out, err = run("run", "--candidate", f"py:{conv}:{name}", "--cases", str(cases),
                           "--seed", "1")
        check(rc == 0, f"{name}: exit {rc}\n{out}{err}")
        rc, out, err = run("run", "--candidate", f"py:{conv}:{name.split('_')[0]}_"
                           f"{'propagates_' if name.startswith('relu') else ''}undeclared",
                           "--cases", str(cases), "--seed", "1")
        check(rc == 1 and verdicts(out).get("MISMATCH", 0) > 0,
              f"{name} undeclared: exit {rc}, verdicts {verdicts(out)}")
    rc, out, err = run("list", "--candidate", f"py:{conv}:ends_declared")
    check("minus_one=ends_list" in out, f"list does not show the declared minus_one:\n{out}")
    # A fixture made from a candidate's outputs stores the conventions they follow.
    fx = os.path.join(tmp, "lonely.h5")
    rc, out, err = run("fixture", "make", fx, "--kernel", "mla-decode", "--cases", "6",
                       "--seed", "3", "--expected", f"py:{conv}:lonely_declared")
    check(rc == 0, f"fixture make: exit {rc}\n{err}")
    try:
        import h5py
        with h5py.File(fx) as f:
            got = {f[g].attrs.get("lonely_lse") for g in f}
        check(got == {"-inf"}, f"fixture lonely_lse attributes: {got}")
    except ImportError:
        pass
    rc, out, err = run("check", fx, "--candidate", f"py:{conv}:lonely_declared", "--against",
                       "stored")
    check(rc == 0, f"check against its own stored outputs: exit {rc}\n{out}")
    rc, out, err = run("check", fx, "--candidate", "cpu-mla-decode", "--against", "stored")
    check("lse not compared (fixture lonely_lse -inf, candidate +inf)" in out,
          f"check with another lonely convention does not say lse was left out:\n{out}")
    return summary("test_external")


if __name__ == "__main__":
    sys.exit(main())
