"""Kills a real results writer with SIGKILL at random points and checks that the file opens with
attest's reader, with h5py and with h5dump, and holds every row up to the last flush the writer
reported (tests/results_writer.c prints "flushed N" after each flush).

Rounds vary the chunk size (1-row chunks make the chunk index split its B-tree nodes many times),
the flush cadence, and whether failing rows store repros; one round also reads the campaign from
another process while it runs. Usage: results_sigkill.py RESULTS_WRITER
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_expect import check_row  # noqa: E402

# A live or killed campaign names its raw rows file relative to itself; HDF5 resolves such
# names against the working directory unless told "${ORIGIN}" (docs/results-format.md).
os.environ["HDF5_EXTFILE_PREFIX"] = "${ORIGIN}"
try:
    import h5py
except ImportError:
    print("h5py missing: skipped")
    sys.exit(77)


def run_round(writer, path, args, min_flushes, rng, read_live=False):
    proc = subprocess.Popen([writer, "write", path, "--rows", "0"] + args,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    flushed, seen = 0, 0
    target = min_flushes + rng.randrange(0, 20)
    deadline = time.time() + 60
    while seen < target and time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("flushed "):
            flushed = int(line.split()[1])
            seen += 1
            if read_live and seen == min_flushes // 2:
                # Another process reads the campaign while it runs (the writer holds the lock).
                out = subprocess.run([writer, "check", path, str(flushed)], capture_output=True,
                                     text=True)
                if out.returncode != 0 or "state=running" not in out.stdout:
                    proc.kill()
                    raise SystemExit("reading a running campaign failed: %s%s"
                                     % (out.stdout, out.stderr))
    # Kill at a random moment between flushes (or inside one).
    time.sleep(rng.uniform(0, 0.02))
    proc.send_signal(signal.SIGKILL)
    rest, err = proc.communicate()
    for line in rest.splitlines():
        if line.startswith("flushed "):
            flushed = int(line.split()[1])
    if proc.returncode != -signal.SIGKILL:
        raise SystemExit("writer ended on its own (rc %s): %s" % (proc.returncode, err))
    if seen < min_flushes:
        raise SystemExit("writer reported only %d flushes: %s" % (seen, err))
    return flushed


def check_file(writer, path, flushed, with_repros):
    # attest's reader: every row equals the fixture, at least `flushed` of them.
    out = subprocess.run([writer, "check", path, str(flushed)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("attest reader: %s%s" % (out.stdout, out.stderr))
    if "state=running" not in out.stdout:
        raise SystemExit("a killed campaign should read as running: " + out.stdout)
    # h5py, plain open (no SWMR, no h5clear).
    with h5py.File(path, "r") as f:
        cases = f["cases"][:]
        if len(cases) < flushed:
            raise SystemExit("h5py sees %d rows, %d were flushed" % (len(cases), flushed))
        for i in sorted(set([0, flushed - 1, len(cases) - 1] + list(range(0, len(cases), 97)))):
            if 0 <= i < len(cases):
                bad = check_row(cases[i], i)
                if bad:
                    raise SystemExit("h5py: " + "; ".join(bad[:3]))
        if f["provenance"].attrs["state"] != "running":
            raise SystemExit("h5py: provenance state %r" % f["provenance"].attrs["state"])
    # h5dump opens it and reads the last flushed row.
    if shutil.which("h5dump"):
        out = subprocess.run(["h5dump", "-H", path], capture_output=True, text=True)
        if out.returncode != 0 or 'DATASET "cases"' not in out.stdout:
            raise SystemExit("h5dump -H failed: " + out.stderr[-500:])
        if flushed > 0:
            out = subprocess.run(["h5dump", "-d", "/cases", "-s", str(flushed - 1), "-c", "1",
                                  path], capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit("h5dump of row %d failed: %s" % (flushed - 1, out.stderr[-500:]))
    # Repros written so far are whole case files.
    repro_dir = path + ".repro"
    if with_repros and os.path.isdir(repro_dir):
        for name in os.listdir(repro_dir):
            if name.endswith(".h5"):
                with h5py.File(os.path.join(repro_dir, name), "r") as f:
                    if "cache_bytes" not in f or f.attrs["kind"] != "indexer":
                        raise SystemExit("repro %s is not a whole case file" % name)


def main():
    if len(sys.argv) < 2:
        print("usage: results_sigkill.py RESULTS_WRITER")
        return 2
    writer = sys.argv[1]
    rng = random.Random(int(os.environ.get("ATTEST_SIGKILL_SEED", "20240531")))
    rounds = [
        (["--flush-rows", "7", "--interval", "10", "--chunk", "16"], 30, False),
        (["--flush-rows", "3", "--interval", "10", "--chunk", "1"], 150, False),
        (["--flush-rows", "1000", "--interval", "0.01", "--chunk", "128", "--sleep-us", "300"],
         10, False),
        (["--flush-rows", "4", "--interval", "10", "--sleep-us", "2000"], 20, False),
        (["--flush-rows", "5", "--interval", "10", "--chunk", "8", "--repros"], 20, True),
        (["--flush-rows", "50", "--interval", "10", "--chunk", "64"], 40, False),
    ]
    with tempfile.TemporaryDirectory(prefix="attest-sigkill-") as tmp:
        for n, (args, min_flushes, repros) in enumerate(rounds):
            path = os.path.join(tmp, "r%d.h5" % n)
            flushed = run_round(writer, path, args, min_flushes, rng, read_live=(n == 3))
            check_file(writer, path, flushed, repros)
            print("round %d (%s): killed after %d flushed rows; file opens and holds them"
                  % (n, " ".join(args), flushed))
        # A new campaign on the same path replaces the killed one and its repros.
        path = os.path.join(tmp, "r4.h5")
        out = subprocess.run([writer, "write", path, "--rows", "40", "--repros"],
                             capture_output=True, text=True)
        if out.returncode != 0 or os.path.exists(path + ".repro"):
            raise SystemExit("rerun over a killed campaign failed: " + out.stderr)
        out = subprocess.run([writer, "check", path, "40"], capture_output=True, text=True)
        if out.returncode != 0 or "ok 40 state=complete" not in out.stdout:
            raise SystemExit("rerun check: " + out.stdout + out.stderr)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
