#!/usr/bin/env python3
"""attest run --save-failures DIR (indexer, mla-decode) and attest check FILE --recorded.

1. A CPU mutant run with --save-failures writes one DIR/<kernel>-SEED.h5 per failing case, and
   attest check --recorded judges each file again with the same verdict, gates and metrics that
   attest run printed for that seed (--jobs 2 too); a correct candidate saves nothing.
2. Recorded outputs tampered to the reference's values (attest reference, rounded to the output
   dtype with numpy/ml_dtypes) pass: the check judges the bytes in the file, not the verdict.
3. An existing file is never replaced (a file of that name is kept byte for byte); an
   unusable DIR is one error line and exit 2; a write that fails (RLIMIT_FSIZE, as a full disk)
   is one line on stderr and the run goes on to the end.
4. A case file without recorded outputs (the golden fixtures) is a clear error, exit 1; a crash
   leaves a file with no outputs, which --recorded names with its recorded verdict.
5. attest campaign --save-failures DIR: two candidates of one kernel on the same case seeds each
   save theirs (DIR/<kernel>-<candidate>-SEED.h5), --recorded re-judges each as the campaign
   printed it; the correct one saves nothing; --save-passing saves every case.

Exit 0 when every check passes, 1 otherwise, 77 (skip) without the CLI or numpy/h5py/ml_dtypes.
"""
import os
import re
import resource
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attest_testlib as t  # noqa: E402

if not t.CLI or not os.access(t.CLI, os.X_OK):
    print("skipping: ATTEST_CLI is not set to the attest executable")
    sys.exit(77)
SRC = os.environ.get("ATTEST_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
check = t.check

# "#3 MISMATCH [element+cosine] cand  logits: ..." then "    seed 0x... params"
HEAD = re.compile(r"^#\d+ (\S+) (\[[^\]]*\] )?(\S+)  (.*)$")


def failures_by_seed(out):
    """seed -> (verdict, gates, metrics) from attest run / check --recorded failure lines."""
    found, head = {}, None
    for line in out.splitlines():
        m = HEAD.match(line)
        if m:
            head = (m.group(1), (m.group(2) or "").strip(), m.group(4))
            continue
        m = re.match(r"^    seed 0x([0-9a-f]{16}) ", line)
        if m and head:
            found[m.group(1)] = head
            head = None
    return found


def saved(d, kernel):
    return sorted(f for f in os.listdir(d) if re.fullmatch(kernel + r"-[0-9a-f]{16}\.h5", f))


def roundtrip(work, cand, kernel, jobs):
    d = os.path.join(work, f"{cand}-{jobs}")  # missing: the run makes it
    rc, out, err = t.run("run", "--candidate", cand, "--cases", "8", "--seed", "5",
                         "--print-failures", "100", "--jobs", str(jobs), "--save-failures", d)
    check(rc == 1, f"{cand}: run exit {rc}, expected 1: {err}")
    run_fail = failures_by_seed(out)
    files = saved(d, kernel)
    check(len(run_fail) > 0 and len(files) == len(run_fail),
          f"{cand} --jobs {jobs}: {len(run_fail)} failing cases, {len(files)} files")
    check(f"saved failures: {len(files)} written to {d}" in out, f"{cand}: no saved line")
    for f in files:
        seed = f[len(kernel) + 1:-3]
        rc, out, err = t.run("check", os.path.join(d, f), "--recorded")
        check(rc == 1, f"{f}: check --recorded exit {rc}, expected 1: {err}")
        again = failures_by_seed(out)
        check(again.get(seed) == run_fail.get(seed),
              f"{f}: re-judged {again.get(seed)}, run said {run_fail.get(seed)}")
        check(re.search(r"^    recorded: MISMATCH \(", out, re.M) is not None,
              f"{f}: no recorded verdict line")
        with h5py.File(os.path.join(d, f), "r") as h:
            g = h["candidate"]
            check(g.attrs["recorded"] == 1 and g.attrs["candidate"] in (cand, cand.encode()),
                  f"{f}: candidate/ attributes")
            check(len(g.attrs["policy_hash"]) == 64, f"{f}: policy_hash")
    return d, files


def tamper_to_reference(work, path, kernel):
    ref = os.path.join(work, "ref.h5")
    if os.path.exists(ref):
        os.remove(ref)
    rc, _, err = t.run("reference", path, "--out", ref)
    check(rc == 0, f"attest reference {path}: exit {rc}: {err}")
    if rc:
        return
    with h5py.File(ref, "r") as r, h5py.File(path, "r+") as h:
        if kernel == "indexer":
            h["candidate/logits"][...] = r["logits"][...].astype(np.float32)
        else:
            bf = r["out"][...].astype(ml_dtypes.bfloat16)
            h["candidate/out_bf16"][...] = bf.view(np.uint16)
            h["candidate/lse"][...] = r["lse"][...].astype(np.float32)


def main():
    work = tempfile.mkdtemp(prefix="attest-savefail-")
    try:
        # 1 and 2
        for cand, kernel in (("mutant-indexer-scale-off-by-one", "indexer"),
                             ("mutant-mla-scale-off-by-one", "mla-decode")):
            for jobs in (1, 2):
                d, files = roundtrip(work, cand, kernel, jobs)
            if not files:
                continue
            one = os.path.join(d, files[0])
            tamper_to_reference(work, one, kernel)
            rc, out, err = t.run("check", one, "--recorded")
            check(rc == 0 and re.search(r"  OK\s*$", out.splitlines()[0]) is not None,
                  f"{kernel}: recorded outputs set to the reference: exit {rc}: {out}{err}")
            # The recorded verdict stays in the file; the check judges the bytes.
            check("recorded: MISMATCH" in out, f"{kernel}: tampered file lost its verdict")
            # The same file under --policy of the same content: the same verdict.
            rc, out, _ = t.run("check", one, "--recorded", "--policy",
                               os.path.join(SRC, "policies", "default.json"))
            check(rc == 0, f"{kernel}: --policy default.json: exit {rc}")
            # A recorded policy text that no longer hashes to its recorded hash is refused.
            with h5py.File(one, "r+") as h:
                h["candidate"].attrs["policy_text"] = "{}"
            rc, out, _ = t.run("check", one, "--recorded")
            check(rc == 1 and "does not hash to candidate/policy_hash" in out,
                  f"{kernel}: edited policy_text: exit {rc}: {out}")

        d = os.path.join(work, "correct")
        os.mkdir(d)
        rc, out, err = t.run("run", "--candidate", "cpu-indexer", "--cases", "8", "--seed", "5",
                             "--save-failures", d)
        check(rc == 0 and os.listdir(d) == [], f"cpu-indexer saved {os.listdir(d)} (exit {rc})")
        # --save-passing: every case, and the correct candidate's recorded outputs pass; the same
        # bytes scaled by 2 fail (the check judges the file's bytes both ways).
        rc, out, err = t.run("run", "--candidate", "cpu-indexer", "--cases", "4", "--seed", "5",
                             "--jobs", "2", "--save-failures", d, "--save-passing")
        files = saved(d, "indexer")
        check(rc == 0 and len(files) == 4 and f"saved cases: 4 written to {d}" in out,
              f"--save-passing: exit {rc}, files {files}: {out}{err}")
        rc, out, _ = t.run("check", d, "--recorded")
        check(rc == 0 and "OK 4" in out and "result: PASS" in out,
              f"--save-passing files: check --recorded exit {rc}: {out}")
        if files:
            one = os.path.join(d, files[0])
            with h5py.File(one, "r+") as h:
                h["candidate/logits"][...] = h["candidate/logits"][...] * np.float32(2)
            rc, out, _ = t.run("check", one, "--recorded")
            check(rc == 1 and re.search(r"  MISMATCH  reference: ", out) is not None,
                  f"doubled recorded logits: exit {rc}: {out}")
        rc, out, err = t.run("run", "--candidate", "cpu-indexer", "--save-passing")
        t.one_line_error(rc, out, err, "--save-passing without --save-failures")

        # 3: never replaced. A stranger file at a name the run will use is kept byte for byte.
        d = os.path.join(work, "keep")
        os.mkdir(d)
        rc, out, _ = t.run("run", "--candidate", "mutant-indexer-scale-off-by-one", "--cases",
                           "4", "--seed", "5", "--save-failures", d)
        files = saved(d, "indexer")
        check(len(files) > 0, "keep: no file saved")
        if files:
            victim = os.path.join(d, files[0])
            with open(victim, "wb") as f:
                f.write(b"not an attest file")
            rc, out, _ = t.run("run", "--candidate", "mutant-indexer-scale-off-by-one", "--cases",
                               "4", "--seed", "5", "--save-failures", d)
            with open(victim, "rb") as f:
                check(f.read() == b"not an attest file", "an existing file was replaced")
            check(f"0 written to {d}, {len(files)} kept" in out, f"keep: summary line: {out}")
            check(not [f for f in os.listdir(d) if ".tmp-" in f], "keep: a temporary file is left")

        notdir = os.path.join(work, "plain")
        open(notdir, "w").close()
        for bad in (notdir, os.path.join(work, "missing", "sub")):
            rc, out, err = t.run("run", "--candidate", "mutant-indexer-scale-off-by-one",
                                 "--save-failures", bad)
            t.one_line_error(rc, out, err, f"--save-failures {bad}")
        check(not os.path.exists(os.path.join(work, "missing")), "a refused DIR made its parent")
        if os.geteuid() != 0:
            ro = os.path.join(work, "ro")
            os.mkdir(ro, 0o555)
            rc, out, err = t.run("run", "--candidate", "mutant-indexer-scale-off-by-one",
                                 "--save-failures", ro)
            t.one_line_error(rc, out, err, "--save-failures read-only DIR")

        # A write that fails mid-run (the file-size limit stands in for a full disk): one line
        # per case on stderr, the run still judges every case, nothing half-written is left.
        d = os.path.join(work, "full")
        os.mkdir(d)

        def small_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

        p = subprocess.run([t.CLI, "run", "--candidate", "mutant-indexer-scale-off-by-one",
                            "--cases", "4", "--seed", "5", "--save-failures", d],
                           capture_output=True, text=True, timeout=600,
                           env={**os.environ, "CI": "1"}, preexec_fn=small_files)
        errs = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode == 1, f"full disk: exit {p.returncode}, expected 1 (run went on)")
        check(len(errs) > 0 and all(l.startswith("attest run: --save-failures: ") for l in errs),
              f"full disk: stderr {p.stderr!r}")
        check("result: FAIL (4 of 4 cases failed)" in p.stdout, "full disk: the run stopped")
        check(os.listdir(d) == [], f"full disk: left {os.listdir(d)}")

        # 4: old case files read, and say they record nothing.
        golden = os.path.join(SRC, "fixtures", "golden")
        gf = sorted(f for f in os.listdir(golden) if f.endswith(".h5"))[0]
        rc, out, err = t.run("check", os.path.join(golden, gf), "--recorded")
        check(rc == 1 and "no recorded outputs" in out, f"golden --recorded: exit {rc}: {out}")
        rc, out, err = t.run("check", "--recorded", os.path.join(golden, gf), "--candidate",
                             "cpu-indexer")
        t.one_line_error(rc, out, err, "--recorded with --candidate")
        d = os.path.join(work, "crash")
        os.mkdir(d)
        rc, out, _ = t.run("run", "--candidate", "mutant-indexer-crash", "--cases", "30",
                           "--save-failures", d)
        files = saved(d, "indexer")
        check(rc == 1 and len(files) > 0, f"crash: exit {rc}, files {files}")
        if files:
            rc, out, _ = t.run("check", os.path.join(d, files[0]), "--recorded")
            check(rc == 1 and "the recorded run (CRASH) left none" in out,
                  f"crash file --recorded: exit {rc}: {out}")
            rc, out, _ = t.run("replay", os.path.join(d, files[0]), "--candidate", "cpu-indexer")
            check(rc == 0, f"a saved crash case replays as a fixture: exit {rc}: {out}")

        # 5: campaign, two mutants and the correct kernel of one family, the same seeds.
        d = os.path.join(work, "campaign")
        os.mkdir(d)
        muts = ["mutant-indexer-scale-off-by-one", "mutant-indexer-reads-past-blocks"]
        args = ["campaign", "--kernel", "indexer", "--cases", "8", "--seed", "5", "--jobs", "2",
                "--out", os.path.join(work, "c.h5"), "--save-failures", d]
        for c in muts + ["cpu-indexer"]:
            args += ["--candidate", c]
        rc, out, err = t.run(*args)
        check(rc == 1, f"campaign --save-failures: exit {rc}: {err}")
        names = sorted(os.listdir(d))
        check(f"saved failures: {len(names)} written to {d}" in out,
              f"campaign: no saved line for {len(names)} files: {out[-400:]}")
        for c in muts:
            mine = [f for f in names if re.fullmatch(rf"indexer-{c}-[0-9a-f]{{16}}\.h5", f)]
            check(len(mine) > 0, f"campaign: no file of {c}: {names}")
            for f in mine[:2]:
                rc, out2, err = t.run("check", os.path.join(d, f), "--recorded")
                check(rc == 1 and re.search(r"^    recorded: MISMATCH \(", out2, re.M),
                      f"campaign file {f}: check --recorded exit {rc}: {out2[-300:]} {err}")
                with h5py.File(os.path.join(d, f), "r") as h:
                    g = h["candidate"]
                    check(g.attrs["candidate"] in (c, c.encode()), f"{f}: candidate attribute")
                    note = h.attrs.get("note", b"")
                    note = note.decode() if isinstance(note, bytes) else str(note)
                    check(note.startswith("attest campaign --save-failures"), f"{f}: note {note!r}")
        check(not any("cpu-indexer-" in f for f in names), f"campaign: cpu-indexer saved: {names}")
        d = os.path.join(work, "campaign-passing")
        os.mkdir(d)
        rc, out, err = t.run("campaign", "--candidate", "cpu-indexer", "--cases", "3", "--out",
                             os.path.join(work, "c2.h5"), "--save-failures", d, "--save-passing")
        check(rc == 0 and len(os.listdir(d)) == 3, f"campaign --save-passing: exit {rc}, "
              f"{os.listdir(d)} {err}")
        rc, out, err = t.run("campaign", "--save-passing")
        t.one_line_error(rc, out, err, "campaign --save-passing without --save-failures")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return t.summary("test_save_failures")


if __name__ == "__main__":
    sys.exit(main())
