#!/usr/bin/env python3
"""A bad-input campaign against every loader of attest, as a hostile user would run it.

    python3 tests/bad_input_campaign.py BUILD_DIR [--per-loader N] [--seed S] [--jobs J]

For each loader it feeds N mutated inputs (truncations, bit flips, splices of two seeds, crafted
counts: 32/64-bit words overwritten with 0, -1, 2^31-1, 2^40, and zeroed ranges) plus special
files (a FIFO, a directory, /dev/zero, a symlink to a FIFO) to the attest command that reads
them:
  casefile  attest reference FILE --out OUT --force       (seeds: fuzz/corpus/casefile/seed-*)
  fixture   attest check FILE --candidate cpu-indexer --candidate cpu-mla-decode --against both
  policy    attest run --candidate cpu-indexer --cases 1 --policy FILE
  results   attest show FILE   (closed files, and killed-campaign files with their .rows, each
            part mutated)
  plugin    attest run --candidate FILE:x --cases 1        (a built test plugin)
and counts, per loader: crashes (attest ended by a signal), hangs (no exit within the limit),
silently wrong results (results files: `show` exits 0 or 1 with verdict counts other than the
unmutated file's; any loader: exit 0/1 on a special file), and errors that are not one line
(exit 2 with anything but one "attest ..." line on stderr). Prints a table and exits 1 when any
count but "ok"/"error" is nonzero. $ATTEST_PROBE_TIMEOUT is set to 5 s, the limit per command to
60 s.
"""
import argparse
import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
LIMIT_S = 60


def mutate(rng, data, other):
    data = bytearray(data)
    op = rng.choice(["truncate", "flip", "flip", "splice", "count", "zero"])
    if not data:
        return bytes(data), op
    if op == "truncate":
        data = data[:rng.randrange(len(data))]
    elif op == "flip":
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif op == "splice":
        cut = rng.randrange(len(data))
        cut2 = rng.randrange(len(other)) if other else 0
        data = data[:cut] + bytearray(other[cut2:])
    elif op == "count":
        for _ in range(rng.randint(1, 4)):
            width = rng.choice([4, 8])
            i = rng.randrange(max(1, len(data) - width)) & ~(width - 1)
            value = rng.choice([0, (1 << (8 * width)) - 1, (1 << 31) - 1, 1 << 40, 1 << 21])
            data[i:i + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
    else:
        i = rng.randrange(len(data))
        n = rng.randint(1, 512)
        data[i:i + n] = bytes(min(n, len(data) - i))
    return bytes(data), op


def run(cmd, env):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=LIMIT_S,
                           env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "hang", "", ""


def verdict_line(out):
    m = re.search(r"^  verdicts:.*$", out, re.M)
    n = re.search(r"^attest: (\d+) case", out, re.M)
    return (m.group(0) if m else "", n.group(1) if n else "")


def classify(rc, out, err, special, expect=None):
    if rc == "hang":
        return "hang"
    if rc < 0 or rc >= 128 or rc not in (0, 1, 2):
        return "crash"  # a signal, or a sanitizer's exit code (ASAN_OPTIONS=exitcode=99)
    if rc == 2:
        lines = [l for l in err.splitlines() if l.strip()]
        return "error" if len(lines) == 1 and lines[0].startswith("attest") else "messy-error"
    if special:
        return "silently-wrong"
    if expect is not None and verdict_line(out) != expect:
        return "silently-wrong"
    return "ok"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--per-loader", type=int, default=200)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the inputs that were not ok")
    a = ap.parse_args()
    cli = os.path.join(a.build, "attest")
    writer = os.path.join(a.build, "tests", "results_writer")
    plugin = os.path.join(a.build, "plugins", "libattest_test_plugin.so")
    env = {**os.environ, "CI": "1", "ATTEST_PROBE_TIMEOUT": "5", "CUDA_VISIBLE_DEVICES": ""}
    tmp = tempfile.mkdtemp(prefix="attest-bad-input-")
    rng = random.Random(a.seed)

    # Seeds per loader.
    casefiles = sorted(os.path.join(SOURCE, "fuzz", "corpus", "casefile", n)
                       for n in os.listdir(os.path.join(SOURCE, "fuzz", "corpus", "casefile"))
                       if n.startswith("seed-"))
    golden = sorted(os.path.join(SOURCE, "fixtures", "golden", n)
                    for n in os.listdir(os.path.join(SOURCE, "fixtures", "golden"))
                    if n.endswith(".h5"))
    policies = sorted(os.path.join(SOURCE, "fuzz", "corpus", "policy", n)
                      for n in os.listdir(os.path.join(SOURCE, "fuzz", "corpus", "policy"))
                      if n.startswith("seed-"))
    closed = os.path.join(tmp, "closed.h5")
    subprocess.run([cli, "run", "--candidate", "mutant-indexer-scale-off-by-one", "--cases",
                    "30", "--out", closed], capture_output=True, env=env)
    live = os.path.join(tmp, "live.h5")
    subprocess.run([writer, "write", live, "--rows", "60", "--flush-rows", "7", "--no-close"],
                   capture_output=True, check=True)
    expect = {}
    for r in (closed, live):
        rc, out, _ = run([cli, "show", r], env)
        expect[r] = verdict_line(out)
        if rc not in (0, 1):
            sys.exit(f"seed results file {r}: show exit {rc}")

    work = []  # (loader, description, command, special, expected verdict line)

    def add_mutants(loader, seeds, make_cmd, count, suffix=".h5"):
        for i in range(count):
            seed = rng.choice(seeds)
            data, op = mutate(rng, open(seed, "rb").read(), open(rng.choice(seeds), "rb").read())
            path = os.path.join(tmp, f"{loader}-{i:04d}{suffix}")
            with open(path, "wb") as f:
                f.write(data)
            work.append((loader, f"{op} of {os.path.basename(seed)}", make_cmd(path), False,
                         None))

    out_h5 = lambda: os.path.join(tmp, f"out-{rng.randrange(1 << 30)}.h5")  # noqa: E731
    add_mutants("casefile", casefiles + golden,
                lambda p: [cli, "reference", p, "--out", out_h5(), "--force"], a.per_loader)
    add_mutants("fixture", golden,
                lambda p: [cli, "check", p, "--candidate", "cpu-indexer", "--candidate",
                           "cpu-mla-decode", "--against", "both"], a.per_loader)
    add_mutants("policy", policies,
                lambda p: [cli, "run", "--candidate", "cpu-indexer", "--cases", "1", "--policy",
                           p], a.per_loader, suffix=".json")
    if os.path.exists(plugin):
        add_mutants("plugin", [plugin],
                    lambda p: [cli, "run", "--candidate", p + ":fixture-good", "--cases", "1"],
                    a.per_loader, suffix=".so")
    for i in range(a.per_loader):
        src = rng.choice([closed, live])
        d = os.path.join(tmp, f"results-{i:04d}")
        os.mkdir(d)
        path = os.path.join(d, "r.h5")
        part = "rows" if src == live and rng.random() < 0.5 else "h5"
        h5 = open(src, "rb").read()
        rows = open(src + ".rows", "rb").read() if src == live else None
        other = open(rng.choice([closed, live]), "rb").read()
        if part == "h5":
            h5, op = mutate(rng, h5, other)
        else:
            rows, op = mutate(rng, rows, rows)
        with open(path, "wb") as f:
            f.write(h5)
        if rows is not None:
            with open(path + ".rows", "wb") as f:
                f.write(rows)
        # A mutation may legitimately change what the file says (a message, a seed), not
        # which verdicts it holds: those must read back as they were, or be refused.
        work.append(("results", f"{op} of {os.path.basename(src)} ({part})",
                     [cli, "show", path], False, expect[src]))

    # Special files in every loader's place.
    fifo = os.path.join(tmp, "fifo.h5")
    os.mkfifo(fifo)
    link = os.path.join(tmp, "link.h5")
    os.symlink(fifo, link)
    adir = os.path.join(tmp, "adir.h5")
    os.mkdir(adir)
    for special in (fifo, link, adir, "/dev/zero"):
        for loader, cmd in (
                ("casefile", [cli, "reference", special, "--out", out_h5()]),
                ("fixture", [cli, "check", special, "--candidate", "cpu-indexer"]),
                ("policy", [cli, "run", "--candidate", "cpu-indexer", "--cases", "1", "--policy",
                            special]),
                ("results", [cli, "show", special]),
                ("plugin", [cli, "run", "--candidate", special + ":x", "--cases", "1"])):
            work.append((loader, f"special {os.path.basename(special)}", cmd, True, None))
    fifo_rows = os.path.join(tmp, "fiforows")
    os.mkdir(fifo_rows)
    shutil.copy(live, os.path.join(fifo_rows, "live.h5"))
    os.mkfifo(os.path.join(fifo_rows, "live.h5.rows"))
    work.append(("results", "special: .rows is a FIFO", [cli, "show",
                                                        os.path.join(fifo_rows, "live.h5")],
                 True, None))

    counts = {}
    bad = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(run, w[2], env): w for w in work}
        for fut in concurrent.futures.as_completed(futures):
            loader, what, cmd, special, exp = futures[fut]
            rc, out, err = fut.result()
            # A fixture check may fail cases of a mutated fixture (exit 1): a verdict, not an
            # error. A directory given to check is a fixture directory: an empty one is exit 1.
            kind = classify(rc, out, err, special and not (loader == "fixture" and rc == 1),
                            exp)
            counts.setdefault(loader, {}).setdefault(kind, 0)
            counts[loader][kind] += 1
            if kind not in ("ok", "error"):
                bad.append((loader, kind, what, " ".join(cmd), rc, err.strip()[:300]))

    kinds = ["ok", "error", "crash", "hang", "silently-wrong", "messy-error"]
    print(f"bad-input campaign: {len(work)} inputs, seed {a.seed}, {a.per_loader} mutants per "
          "loader plus special files")
    print(f"{'loader':10}" + "".join(f"{k:>16}" for k in kinds))
    for loader in sorted(counts):
        print(f"{loader:10}" + "".join(f"{counts[loader].get(k, 0):>16}" for k in kinds))
    total = {k: sum(c.get(k, 0) for c in counts.values()) for k in kinds}
    print(f"{'total':10}" + "".join(f"{total[k]:>16}" for k in kinds))
    for b in bad[:40]:
        print("  %s %s: %s\n    %s (exit %s) %s" % b)
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("inputs kept in", tmp)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
