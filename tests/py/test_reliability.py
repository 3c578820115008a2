#!/usr/bin/env python3
"""Reliability, end to end: nothing lost, nothing silently wrong, nothing run or read that the user
did not name. One section per finding; each check failed on the code before the fix.

usage: test_reliability.py HOSTILE_PLUGIN.so HAZARD1.so,HAZARD2.so,...
"""
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from attest_testlib import CLI, check, one_line_error, run, summary

os.environ["HDF5_EXTFILE_PREFIX"] = "${ORIGIN}"  # h5py reads a killed run's rows like attest
try:
    import h5py
    import numpy as np
except ImportError:
    h5py = None

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
GOLDEN = os.path.join(SOURCE, "fixtures", "golden", "indexer-edges.h5")


def run_to(timeout, *args, env=None):
    """run() with a deadline: a hang is a failed check, not a stuck test."""
    try:
        p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "CI": "1", **(env or {})})
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "hang", "", ""


def read(path):
    with open(path, "rb") as f:
        return f.read()


def start_long_run(out, cand="cpu-indexer", extra=()):
    """A campaign that runs until stopped; returns once its results file exists."""
    proc = subprocess.Popen([CLI, "run", "--candidate", cand, "--cases", "1000000", "--out", out,
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CI": "1"})
    for _ in range(200):
        if os.path.exists(out) and os.path.exists(out + ".rows") and \
                os.path.getsize(out + ".rows") > 0:
            break
        time.sleep(0.05)
    return proc


def killed_campaign(tmp, name, cand="mutant-indexer-scale-off-by-one", seconds=2.0):
    """A campaign SIGKILLed mid-run: its live file, .rows and .repro/ stay."""
    out = os.path.join(tmp, name)
    proc = start_long_run(out, cand)
    time.sleep(seconds)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    return out


def finding_1_outputs(tmp):
    """--out replaces nothing it was not asked to; inputs are never outputs."""
    text = os.path.join(tmp, "notes.txt")
    with open(text, "w") as f:
        f.write("my notes\n")
    rc, out, err = run_to(60, "run", "--candidate", "cpu-indexer", "--cases", "2", "--out", text)
    one_line_error(rc, out, err, "--out over a text file")
    check(read(text) == b"my notes\n", "--out replaced a text file")

    fifo = os.path.join(tmp, "fifo.h5")
    os.mkfifo(fifo)
    rc, out, err = run_to(60, "run", "--candidate", "cpu-indexer", "--cases", "2", "--out", fifo)
    one_line_error(rc, out, err, "--out over a FIFO")
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "--out replaced a FIFO")

    link = os.path.join(tmp, "link.h5")
    os.symlink(text, link)
    rc, out, err = run_to(60, "run", "--candidate", "cpu-indexer", "--cases", "2", "--out", link)
    one_line_error(rc, out, err, "--out over a symlink")
    check(read(text) == b"my notes\n" and os.path.islink(link), "--out wrote through a symlink")

    res = os.path.join(tmp, "res.h5")
    rc, _, err = run_to(120, "run", "--candidate", "cpu-indexer", "--cases", "3", "--out", res)
    check(rc == 0, f"first results file: exit {rc} {err}")
    before = read(res)
    rc, out, err = run_to(120, "run", "--candidate", "cpu-indexer", "--cases", "5", "--out", res)
    one_line_error(rc, out, err, "--out over a results file without --force")
    check("--force" in err and read(res) == before, "an earlier results file was replaced")
    rc, out, err = run_to(120, "run", "--candidate", "cpu-indexer", "--cases", "5", "--out", res,
                          "--force")
    check(rc == 0 and read(res) != before, f"--force did not replace the results file: {err}")

    # check g.h5 --out g.h5: the fixture it is checking.
    fixture = os.path.join(tmp, "g.h5")
    shutil.copy(GOLDEN, fixture)
    golden = read(fixture)
    for force in ([], ["--force"]):
        rc, out, err = run_to(120, "check", fixture, "--candidate", "cpu-indexer", "--out",
                              fixture, *force)
        one_line_error(rc, out, err, f"check FIXTURE --out FIXTURE {force}")
        check(read(fixture) == golden, f"check --out overwrote its fixture {force}")
    rc, out, err = run_to(120, "reference", fixture, "--out", fixture, "--force")
    one_line_error(rc, out, err, "reference CASE --out CASE")
    check(read(fixture) == golden, "reference --out overwrote its input")

    # A killed campaign's rows and repros are not deleted by a new run without --force.
    killed = killed_campaign(tmp, "killed-keep.h5")
    rows = read(killed + ".rows")
    os.rename(killed, killed + ".moved")
    rc, out, err = run_to(120, "run", "--candidate", "cpu-indexer", "--cases", "2", "--out", killed)
    one_line_error(rc, out, err, "--out where a killed campaign's .rows lies")
    check(read(killed + ".rows") == rows and os.path.isdir(killed + ".repro"),
          "a new run deleted a killed campaign's .rows or .repro/")

    rc, out, err = run_to(60, "run", "--candidate", "cpu-indexer", "--out", "")
    one_line_error(rc, out, err, "--out ''")
    check("NULL" not in err and "empty" in err, f"--out '' message: {err!r}")

    # The reports follow the same policy: --json, --junit and report --html replaced any file
    # they were given (a text file, the results file being reported on, /dev/stdout's link).
    for flag, verb_args in (("--json", ["run", "--candidate", "cpu-indexer", "--cases", "2"]),
                            ("--junit", ["run", "--candidate", "cpu-indexer", "--cases", "2"]),
                            ("--html", ["report", res])):
        rc, out, err = run_to(120, *verb_args, flag, text)
        one_line_error(rc, out, err, f"{flag} over a text file")
        check(read(text) == b"my notes\n", f"{flag} replaced a text file")
        rc, out, err = run_to(120, *verb_args, flag, link)
        one_line_error(rc, out, err, f"{flag} over a symlink")
        check(read(text) == b"my notes\n" and os.path.islink(link), f"{flag} wrote through a link")
        mine = os.path.join(tmp, "report" + flag)
        for again in range(2):  # an earlier report of its own kind is replaced: a re-run's
            rc, out, err = run_to(120, *verb_args, flag, mine)
            check(rc == 0 and os.path.getsize(mine) > 0, f"{flag} {mine} (run {again}): {err}")
    before = read(res)
    rc, out, err = run_to(120, "report", res, "--html", res)
    one_line_error(rc, out, err, "report R --html R")
    check(read(res) == before, "report --html overwrote the results file it reported on")
    rc, out, err = run_to(120, "run", "--candidate", "cpu-indexer", "--cases", "2", "--json",
                          os.path.join(tmp, "same"), "--junit", os.path.join(tmp, "same"))
    one_line_error(rc, out, err, "--json and --junit on one path")


def finding_2_lock(tmp):
    """Two runs of one --out: the second is told who holds it; nothing mixes."""
    out = os.path.join(tmp, "shared.h5")
    first = start_long_run(out)
    rc, o, err = run_to(60, "run", "--candidate", "cpu-indexer", "--cases", "5", "--out", out,
                        "--force")
    one_line_error(rc, o, err, "a second writer of the same --out")
    check(f"pid {first.pid}" in err, f"the lock message does not name the holder: {err!r}")
    # The interrupted first run does not pass: INTERRUPTED, exit 130.
    first.send_signal(signal.SIGINT)
    o, err = first.communicate(timeout=60)
    check(first.returncode == 130, f"SIGINT: exit {first.returncode}, expected 130")
    check("result: INTERRUPTED" in o and "PASS" not in o, f"SIGINT summary:\n{o[-400:]}")
    rc, o, err = run_to(60, "show", out)
    check(rc == 0 and "interrupted" in o, f"show of the interrupted run: exit {rc} {err}")
    check(not os.path.exists(out + ".lock"), "the lock file outlived its writer")


def finding_3_truncated(tmp):
    """Rows that are not in the file never read back as OK."""
    killed = killed_campaign(tmp, "killed-trunc.h5")
    rc, out, err = run_to(60, "show", killed)
    check(rc == 1 and "MISMATCH" in out, f"show of a killed failing campaign: exit {rc} {err}")
    with open(killed + ".rows", "r+b") as f:
        f.truncate(0)
    rc, out, err = run_to(60, "show", killed)
    one_line_error(rc, out, err, "show with an emptied .rows")
    check("PASS" not in out and "truncated" in err, f"emptied .rows: {out[-200:]} {err}")
    if h5py is None:
        return
    # A table without its verdict field.
    src = os.path.join(tmp, "whole.h5")
    rc, _, _ = run_to(120, "run", "--candidate", "mutant-indexer-scale-off-by-one", "--cases",
                      "20", "--out", src)
    bad = os.path.join(tmp, "no-verdict.h5")
    shutil.copy(src, bad)
    with h5py.File(bad, "r+") as f:
        rows = f["cases"][:]
        names = [n for n in rows.dtype.names if n != "verdict"]
        del f["cases"]
        f.create_dataset("cases", data=np.array(rows[names].tolist(),
                                                dtype=[(n, rows.dtype[n]) for n in names]))
    rc, out, err = run_to(60, "show", bad)
    one_line_error(rc, out, err, "show of a table without its verdict field")
    check("verdict" in err and "PASS" not in out, f"no verdict field: {err!r}")


def finding_4_external(tmp):
    """External storage only in the file's own sibling; a killed pair can be moved."""
    killed = killed_campaign(tmp, "killed-move.h5", cand="cpu-indexer")
    moved_dir = os.path.join(tmp, "elsewhere")
    os.mkdir(moved_dir)
    for suffix in ("", ".rows", ".repro"):
        if os.path.exists(killed + suffix):
            shutil.move(killed + suffix, os.path.join(moved_dir, "killed-move.h5" + suffix))
    rc, out, err = run_to(60, "show", os.path.join(moved_dir, "killed-move.h5"))
    m = re.search(r"attest: (\d+) cases", out)
    check(rc == 0 and m and int(m.group(1)) > 0, f"show after moving the pair: exit {rc} {err}")
    if h5py is None:
        return
    src = os.path.join(moved_dir, "killed-move.h5")
    evil = os.path.join(tmp, "evil.h5")
    with h5py.File(src, "r") as f:
        dt = f["cases"].dtype
        with h5py.File(evil, "w") as g:
            for k, v in f.attrs.items():
                g.attrs[k] = v
            f.copy("provenance", g)
            g.create_dataset("cases", shape=(3,), dtype=dt,
                             external=[("/etc/passwd", 0, h5py.h5f.UNLIMITED)])
    rc, out, err = run_to(60, "show", evil)
    one_line_error(rc, out, err, "show of a file whose rows are /etc/passwd")
    check("root:" not in out + err and "sibling" in err, f"external /etc/passwd: {err!r}")


def finding_5_nothing_judged(tmp, hostile):
    """Nothing judged is never a pass; exit() and fini crashes lose nothing."""
    res = os.path.join(tmp, "empty.h5")
    # A key no case has is a typo, refused before anything runs (it ran and matched none).
    rc, out, err = run_to(120, "run", "--candidate", "cpu-mla-decode", "--cases", "5", "--filter",
                          "layuot=mla-v4", "--out", res)
    one_line_error(rc, out, err, "--filter with a key no case has")
    check("'layuot'" in err and not os.path.exists(res), f"--filter typo: {err!r}")
    rc, out, err = run_to(120, "run", "--candidate", "cpu-mla-decode", "--cases", "5", "--filter",
                          "b=999", "--out", res)
    check(rc == 1 and "matched none" in out, f"--filter matching nothing: exit {rc}\n{out[-300:]}")
    rc, out, err = run_to(60, "show", res)
    check(rc == 1, f"show of a 0-row results file: exit {rc}")
    res = os.path.join(tmp, "exit0.h5")
    rc, out, err = run_to(120, "run", "--candidate", hostile + ":hostile-exit0", "--cases", "3",
                          "--no-isolate", "--out", res)
    check(rc not in (0, "hang") and "exit()" in err, f"--no-isolate exit(0): exit {rc} {err!r}")
    res = os.path.join(tmp, "fini.h5")
    rc, out, err = run_to(120, "run", "--candidate", hostile + ":hostile-fini-crash", "--cases",
                          "4", "--no-isolate", "--out", res)
    check(rc not in (0, "hang"), f"fini crash: exit {rc}")
    rc, out, err = run_to(60, "show", res)
    check("attest: 4 cases" in out, f"fini crash after the last case lost rows: {out[:300]} {err}")


def finding_6_control_page(hostile):
    rc, out, err = run_to(120, "run", "--candidate", hostile + ":hostile-control-page", "--cases",
                          "3")
    check(rc == 1, f"a candidate rewriting the control page: exit {rc} (parent crashed?) {err}")


def finding_7_plugins(hazards, tmp):
    """Every load hazard is a one-line error within the deadline, never a crash or a hang."""
    env = {"ATTEST_PROBE_TIMEOUT": "3"}
    for i, lib in enumerate(hazards, 1):
        rc, out, err = run_to(60, "run", "--candidate", lib + ":x", "--cases", "1", env=env)
        one_line_error(rc, out, err, f"plugin hazard {i} ({os.path.basename(lib)})")
    truncated = os.path.join(tmp, "libtrunc.so")
    data = read(hazards[0])
    with open(truncated, "wb") as f:
        f.write(data[:len(data) // 2])
    rc, out, err = run_to(60, "run", "--candidate", truncated + ":x", "--cases", "1", env=env)
    one_line_error(rc, out, err, "a truncated plugin")


def finding_9_disk_full(tmp):
    """A full disk (RLIMIT_FSIZE: writes past 300 kB fail with EFBIG) is one error line and a
    readable file, never a crash in HDF5's clean-up."""
    import resource

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300000, 300000))
    out = os.path.join(tmp, "full.h5")
    p = subprocess.run([CLI, "run", "--candidate", "mutant-mla-scale-off-by-one", "--cases", "40",
                        "--out", out], capture_output=True, text=True, preexec_fn=small_disk,
                       env={**os.environ, "CI": "1"}, timeout=300)
    one_line_error(p.returncode, p.stdout, p.stderr, "a full disk while repros are written")
    rc, o, err = run_to(60, "show", out)
    m = re.search(r"attest: (\d+) cases", o)
    check(rc == 1 and m and int(m.group(1)) > 0, f"show after a full disk: exit {rc} {err}")
    # The other HDF5 writers: one line naming the disk, nothing left behind, and no SIGSEGV in
    # HDF5's exit-time clean-up of the file whose close failed (both died of it after their line).
    # The JUnit report (buffered in a temporary file) and the HTML page said neither the cause
    # nor, for the page, the path.
    golden = os.path.join(SOURCE, "fixtures", "golden", "mla-v4-edges.h5")
    for what, args, path in (
            ("fixture make", ["fixture", "make", os.path.join(tmp, "full-fx.h5"), "--kernel",
                              "mla-decode", "--cases", "8", "--seed", "3"], "full-fx.h5"),
            ("reference", ["reference", golden, "--out", os.path.join(tmp, "full-ref.h5")],
             "full-ref.h5"),
            ("--junit", ["run", "--candidate", "mutant-indexer-scale-off-by-one", "--cases", "200",
                         "--print-failures", "0", "--junit", os.path.join(tmp, "full.xml")],
             "full.xml"),
            ("report", ["report", out, "--html", os.path.join(tmp, "full.html")], "full.html")):
        def smaller_disk():  # the reference file of that fixture is 266 kB, the page ~100 kB
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
        p = subprocess.run([CLI, *args], capture_output=True, text=True, preexec_fn=smaller_disk,
                           env={**os.environ, "CI": "1"}, timeout=300)
        one_line_error(p.returncode, p.stdout, p.stderr, f"{what} on a full disk")
        check("File too large" in p.stderr and path in p.stderr,
              f"{what} on a full disk: {p.stderr!r}")
        left = [n for n in os.listdir(tmp) if n.startswith(path)]
        check(not left, f"{what} on a full disk left {left}")


def finding_10_special_files(tmp):
    fifo = os.path.join(tmp, "policy.fifo")
    os.mkfifo(fifo)
    rc, out, err = run_to(30, "run", "--candidate", "cpu-indexer", "--cases", "1", "--policy", fifo)
    one_line_error(rc, out, err, "a FIFO as --policy")
    check("FIFO" in err, f"--policy FIFO message: {err!r}")
    killed = killed_campaign(tmp, "killed-fifo.h5", cand="cpu-indexer", seconds=1.0)
    os.remove(killed + ".rows")
    os.mkfifo(killed + ".rows")
    rc, out, err = run_to(30, "show", killed)
    one_line_error(rc, out, err, "a FIFO in place of .rows")
    fixdir = os.path.join(tmp, "fixdir")
    os.mkdir(fixdir)
    shutil.copy(GOLDEN, os.path.join(fixdir, "good.h5"))
    os.mkfifo(os.path.join(fixdir, "odd.h5"))
    rc, out, err = run_to(60, "check", fixdir, "--candidate", "cpu-indexer")
    check(rc == 1 and "odd.h5" in out, f"a FIFO named *.h5 in a fixture directory: exit {rc}\n"
          f"{out[-300:]}")


def finding_11_setsid(hostile, tmp):
    pidfile = os.path.join(tmp, "pids.txt")
    rc, out, err = run_to(120, "run", "--candidate", hostile + ":hostile-setsid", "--cases", "3",
                          env={"ATTEST_TEST_PIDFILE": pidfile})
    check(rc == 1, f"hostile-setsid: exit {rc}")
    pids = [int(x) for x in open(pidfile).read().split()] if os.path.exists(pidfile) else []
    check(len(pids) > 0, "hostile-setsid started no process")
    time.sleep(0.2)
    alive = []
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(p)
        except OSError:
            pass
    for p in alive:
        os.kill(p, signal.SIGKILL)
    check(not alive, f"{len(alive)} setsid() processes outlived attest")


def finding_13_messages(tmp, hostile):
    rc, out, err = run_to(60, "run", "--candidate", "cpu-indexer", "--cases")
    one_line_error(rc, out, err, "--cases without a value")
    check("needs a value" in err, f"--cases without a value: {err!r}")
    rc, out, err = run_to(120, "run", "--candidate", hostile + ":hostile-exit0", "--cases", "2")
    check(rc == 1 and "called exit(0)" in out and "SIGSEGV" not in out,
          f"exit(0) in a worker: {out[-300:]}")
    bad = os.path.join(tmp, "escape.json")
    with open(bad, "w") as f:
        f.write('{"schema": 1, "name": "x\\n\\u001b[31mred", "version": "1", "entries": [\n'
                '{"kernel": "indexer", "output": "logits", "atol": 1e-6, "rtol": 1e-5,'
                '"max_fail_fraction": 0, "cos_diff_max": 1e-6, "nmse_max": null,'
                '"max_code_distance": null, "vacuity_factor": 10, "topk_min_recall": 1.0,'
                '"source": "seed"}]}')
    rc, out, err = run_to(60, "run", "--candidate", "cpu-indexer", "--policy", bad)
    one_line_error(rc, out, err, "a policy whose name holds a newline and an escape")
    check("\x1b" not in out + err and "control characters" in err,
          f"a terminal escape echoed raw: {out[-200:]!r} {err!r}")
    # A parse error quoting a control character of the file (found by bad_input_campaign.py).
    ff = os.path.join(tmp, "formfeed.json")
    with open(ff, "wb") as f:
        f.write(b'{"schema": 1, "name": "x", \x0c')
    rc, out, err = run_to(60, "run", "--candidate", "cpu-indexer", "--policy", ff)
    one_line_error(rc, out, err, "a policy parse error quoting a form feed")
    check("\x0c" not in err, f"a control character echoed raw: {err!r}")
    # No stale temporaries after a killed run is replaced.
    killed = killed_campaign(tmp, "stale.h5", cand="cpu-indexer", seconds=1.0)
    with open(killed + ".final999999", "w") as f:
        f.write("left by a killed close\n")
    rc, out, err = run_to(120, "run", "--candidate", "cpu-indexer", "--cases", "2", "--out", killed,
                          "--force")
    left = [n for n in os.listdir(tmp) if n.startswith("stale.h5") and n != "stale.h5"]
    check(rc == 0 and not left, f"leftovers beside a replaced results file: {left} {err}")


def finding_14_memory_cap(tmp):
    """A small compressed file that declares a large case is refused before it is inflated."""
    if h5py is None:
        return
    src = os.path.join(tmp, "prod.h5")
    rc, out, err = run_to(120, "fixture", "make", src, "--kernel", "mla-decode", "--cases", "1",
                          "--production")
    check(rc == 0, f"fixture make --production: exit {rc} {err}")
    big = os.path.join(tmp, "inflates.h5")
    with h5py.File(src, "r") as f, h5py.File(big, "w") as g:
        f.copy("case-0", g, name="case-0")
        c = g["case-0"]
        stride = int(c.attrs["page_stride"])
        old = c["cache_bytes"][:]
        del c["cache_bytes"]
        pages = 100000  # 197 MB declared, about 0.3 MB stored
        c.attrs["num_pages"] = pages
        d = c.create_dataset("cache_bytes", shape=(pages * stride,), dtype="u1",
                             chunks=(1 << 20,), compression="gzip")
        d[:len(old)] = old
        zeros = np.zeros(16 << 20, dtype="u1")
        for at in range(len(old), pages * stride, len(zeros)):
            n = min(len(zeros), pages * stride - at)
            d[at:at + n] = zeros[:n]
    check(os.path.getsize(big) < (4 << 20), f"the inflating file is {os.path.getsize(big)} bytes")
    rc, out, err = run_to(120, "reference", big, "--out", os.path.join(tmp, "inflated-ref.h5"),
                          "--max-case-mb", "64")
    one_line_error(rc, out, err, "a case declaring 197 MB under --max-case-mb 64")
    check("over the 64 MiB" in err, f"memory cap message: {err!r}")


def finding_15_reader_gone(tmp):
    """A reader that stops early (`attest run ... | head -1`) ends neither the campaign nor its
    results file: SIGPIPE killed attest at its first failure line, before a row was flushed, and
    the file said "running" with 0 of 60 cases."""
    for verb, args, rows in (
            ("run", ["--candidate", "mutant-mla-scale-off-by-one", "--cases", "60", "--seed", "4"],
             60),
            ("campaign", ["--candidate", "mutant-indexer-scale-off-by-one", "--cases", "40"], 40)):
        out = os.path.join(tmp, f"reader-gone-{verb}.h5")
        proc = subprocess.Popen([CLI, verb, *args, "--out", out], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env={**os.environ, "CI": "1"})
        first = proc.stdout.readline()
        proc.stdout.close()  # the reader goes away; attest still has lines to print
        try:
            rc = proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = "hang"
        check(first and rc == 1, f"{verb} with its reader gone: exit {rc} (expected 1: failures)")
        rc, o, err = run_to(60, "show", out)
        check(f"schema 4, complete" in o and f"{rows} cases of {rows} planned" in o,
              f"{verb} with its reader gone left:\n{o[:300]}{err}")


def main():
    if not CLI or not os.path.exists(CLI) or len(sys.argv) < 3:
        print("ATTEST_CLI or the plugin arguments missing; skipping")
        return 77
    hostile = sys.argv[1]
    hazards = sys.argv[2].split(",")
    tmp = tempfile.mkdtemp(prefix="attest-reliability-")
    sections = [(finding_1_outputs, (tmp,)), (finding_2_lock, (tmp,)),
                (finding_3_truncated, (tmp,)), (finding_4_external, (tmp,)),
                (finding_5_nothing_judged, (tmp, hostile)), (finding_6_control_page, (hostile,)),
                (finding_7_plugins, (hazards, tmp)), (finding_9_disk_full, (tmp,)),
                (finding_10_special_files, (tmp,)),
                (finding_11_setsid, (hostile, tmp)), (finding_13_messages, (tmp, hostile)),
                (finding_14_memory_cap, (tmp,)), (finding_15_reader_gone, (tmp,))]
    for fn, args in sections:
        try:
            fn(*args)
        except Exception as e:  # a section that cannot go on is one failed check
            check(False, f"{fn.__name__}: {type(e).__name__}: {e}")
    rc = summary("test_reliability")
    if rc == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
