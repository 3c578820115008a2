#!/usr/bin/env python3
"""Every replay command attest prints reproduces its case: runs with mixed generator bounds (with
and without a results file, with more failures than repros kept), a plugin candidate replayed by
its bare name from another directory, and a golden fixture whose stored outputs disagree with the
candidate under `attest check --against stored`. Each printed command is run as printed and must
give the same verdict, gates and worst element (and, for --case-seed replays, the same case)."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from attest_testlib import CLI, check, run, summary

try:
    import h5py
except ImportError:  # the results-file checks need it; ci/setup.sh --with-python installs it
    h5py = None

PLUGIN = sys.argv[1] if len(sys.argv) > 1 else None


def run_printed(command, cwd):
    """Runs a printed command line ("attest replay ...") as a user pastes it."""
    argv = shlex.split(command)
    check(argv[0] == "attest", f"printed command does not start with attest: {command}")
    p = subprocess.run([CLI, *argv[1:]], capture_output=True, text=True, cwd=cwd, timeout=300,
                       env={**os.environ, "CI": "1"})
    return p.returncode, p.stdout, p.stderr


def replay_lines(out):
    return [m.group(1) for m in re.finditer(r"replay: (attest .*)$", out, re.M)]


def rows_by_id(path):
    with h5py.File(path, "r") as f:
        return {int(r["case_id"]): r for r in f["cases"][:]}


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def check_results_replays(tmp, out, results, where):
    """Runs every `attest replay RESULTS --case N` the output printed; compares with the rows."""
    rows = rows_by_id(results) if h5py else {}
    commands = sorted(set(c for c in replay_lines(out) if c.startswith("attest replay")))
    check(commands, f"{where}: no replay commands printed")
    regenerated = 0
    for cmd in commands:
        case_id = int(re.search(r"--case (\d+)", cmd).group(1))
        rc, rout, rerr = run_printed(cmd, tmp)
        check(rc == 1, f"{where}: '{cmd}' exit {rc}, expected 1 (the case failed)\n{rerr}")
        check("(reproduced)" in rout, f"{where}: '{cmd}' did not reproduce:\n{rout[:600]}")
        if "no repro was kept" in rout:
            regenerated += 1
        if not rows:
            continue
        row = rows[case_id]
        m = re.search(r"^case #(\d+) (\S+) \[([^\]]*)\]", rout, re.M)
        check(m and m.group(2) == text(row["verdict_name"]) and m.group(3) == text(row["gates"]),
              f"{where}: case {case_id} replayed as {m and m.groups()}, stored "
              f"{text(row['verdict_name'])} [{text(row['gates'])}]")
        msg = re.search(r"^  message: (.*)$", rout, re.M)
        check(msg and msg.group(1) == text(row["message"]),
              f"{where}: case {case_id} message differs:\n  replay {msg and msg.group(1)}\n"
              f"  stored {text(row['message'])}")
    return len(commands), regenerated


def main():
    if not CLI or not os.path.exists(CLI):
        print("ATTEST_CLI not set or missing; skipping")
        return 77
    tmp = tempfile.mkdtemp(prefix="attest-replays-")
    other = os.path.join(tmp, "elsewhere")
    os.mkdir(other)

    # 1. A results file with mixed bounds and more failures than the 32 repros kept per
    # (verdict, gates): the replays of the cases without a repro regenerate from seed + bounds.
    res = os.path.join(tmp, "big.h5")
    bounds = ["--max-len", "500", "--max-heads", "2", "--max-batch", "2", "--max-next-n", "1"]
    rc, out, err = run("run", "--kernel", "indexer", "--candidate",
                       "mutant-indexer-scale-off-by-one", "--cases", "90", "--seed", "5",
                       "--out", res, "--print-failures", "1000", *bounds)
    check(rc == 1, f"mutant run: exit {rc}\n{err}")
    n, regenerated = check_results_replays(tmp, out, res, "indexer results")
    check(regenerated > 0, f"indexer results: none of {n} replays lacked a stored repro; the "
          "regeneration path went untested")
    if h5py:
        with h5py.File(res, "r") as f:
            jobs = text(f["provenance"].attrs["jobs"])
        check("--max-len 500" in jobs and "--max-heads 2" in jobs,
              f"provenance jobs does not record the bounds: {jobs!r}")

    # 2. Without a results file the failure lines print `attest run ... --case-seed X`; each must
    # carry the bounds and draw the same case (parameter string) with the same verdict.
    rc, out, err = run("run", "--kernel", "mla-decode", "--candidate", "mutant-mla-scale-off-by-one",
                       "--cases", "12", "--seed", "3", "--max-len", "700", "--max-heads", "2",
                       "--max-topk", "40", "--layout", "mla-v32", "--print-failures", "1000")
    check(rc == 1, f"mla mutant run: exit {rc}\n{err}")
    failures = re.findall(r"^#\d+ (\S+) \[([^\]]*)\].*\n    seed (0x[0-9a-f]+)  (\S+)\n"
                          r"    replay: (attest .*)$", out, re.M)
    check(failures, f"mla mutant run printed no failure with a replay:\n{out[:800]}")
    for verdict, gates, seed, params, cmd in failures:
        check(f"--case-seed {seed}" in cmd and "--max-len 700" in cmd and "--layout mla-v32" in cmd,
              f"replay misses a bound: {cmd}")
        one = os.path.join(tmp, f"one-{seed}.h5")
        rc, rout, rerr = run_printed(cmd + " --out " + one, other)
        check(rc == 1, f"'{cmd}': exit {rc}\n{rerr}")
        m = re.search(r"^#0 (\S+) \[([^\]]*)\].*\n    seed (0x[0-9a-f]+)  (\S+)", rout, re.M)
        check(m is not None and m.groups() == (verdict, gates, seed, params),
              f"'{cmd}' drew {m and m.groups()}, the run had {(verdict, gates, seed, params)}")
        # a replay of one failing case prints it in full, as attest replay does: the gate
        # table of each output and where the failing element lives
        check(re.search(r"^case #0 " + re.escape(verdict), rout, re.M) and
              "  output out_bf16: " in rout and re.search(r"^    gate +value +bound", rout, re.M)
              and re.search(r"^    (worst element|first inf/nan mismatch at) out_bf16\[request",
                            rout, re.M),
              f"'{cmd}' printed no case detail:\n{rout[:1500]}")
    # a passing case-seed run prints no detail
    rc, rout, rerr = run("run", "--kernel", "mla-decode", "--candidate", "cpu-mla-decode",
                         "--case-seed", failures[0][2] if failures else "0x1")
    check(rc == 0 and "gate       value" not in rout and "case #0" not in rout,
          f"a passing --case-seed run: exit {rc}\n{rout[:600]}")

    # 3. A plugin replayed from another directory by the bare name the summary prints.
    if PLUGIN and os.path.exists(PLUGIN):
        lib = os.path.join(tmp, "libmine.so")
        shutil.copy(PLUGIN, lib)
        pres = os.path.join(tmp, "plugin.h5")
        rc, out, err = run("campaign", "--candidate", lib + ":example-indexer", "--cases", "6",
                           "--max-len", "200", "--out", pres, "--quiet")
        check(rc == 0, f"campaign --candidate plugin: exit {rc}\n{out}\n{err}")
        for case in ("0", "5"):
            rc, rout, rerr = run_printed(f"attest replay {pres} --case {case} --candidate "
                                         "example-indexer", other)
            check(rc == 0 and "(reproduced)" in rout,
                  f"plugin replay of case {case}: exit {rc}\n{rout[:400]}\n{rerr}")

    # 4. check --against stored: a fixture whose stored logits were nudged fails a correct
    # candidate; the printed replay judges against the stored outputs too, so it fails again
    # (against the reference it would pass).
    src = os.path.join(os.environ.get("ATTEST_SOURCE_DIR", "."), "fixtures", "golden",
                       "indexer-edges.h5")
    if h5py and os.path.exists(src):
        fx = os.path.join(tmp, "nudged.h5")
        shutil.copy(src, fx)
        with h5py.File(fx, "r+") as f:
            lg = f["case-0/logits"]
            v = lg[...]
            finite = [(i, j) for i in range(v.shape[0]) for j in range(v.shape[1])
                      if abs(v[i, j]) < 1e30]
            i, j = finite[0]
            v[i, j] = v[i, j] * 1.5 + 1.0
            lg[...] = v
        rc, out, err = run("check", fx, "--candidate", "cpu-indexer", "--against", "stored")
        check(rc == 1, f"check of the nudged fixture: exit {rc}\n{out}\n{err}")
        cmds = replay_lines(out)
        check(len(cmds) == 1 and "--against stored" in cmds[0],
              f"check printed {cmds}, expected one replay against stored outputs")
        for cmd in cmds:
            rc, rout, rerr = run_printed(cmd, tmp)
            check(rc == 1 and "MISMATCH" in rout, f"'{cmd}': exit {rc}\n{rout[:600]}\n{rerr}")
            rc, rout, rerr = run_printed(cmd.replace(" --against stored", ""), tmp)
            check(rc == 0, f"the same replay against the reference: exit {rc}, expected 0")

    # 5. Bad input: one line, exit 2.
    rc, out, err = run("replay", res, "--case", "0", "--against", "nothing")
    check(rc == 2 and len(err.strip().splitlines()) == 1, f"--against nothing: {rc} {err!r}")
    rc, out, err = run("replay", res, "--case", "0", "--against", "stored")
    check(rc == 2 and "case files" in err, f"--against stored on a results file: {rc} {err!r}")

    shutil.rmtree(tmp, ignore_errors=True)
    return summary("test_replays")


if __name__ == "__main__":
    sys.exit(main())
