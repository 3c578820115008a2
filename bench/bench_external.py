#!/usr/bin/env python3
"""Per-case cost of the external-process bridge (docs/external-candidates.md).

Runs `attest run` on tiny indexer cases (one request, one head, at most 64 positions) with the
built-in C candidate cpu-indexer and with a numpy candidate through the bridge that writes its
output with one assignment (noop_candidate.py), each at two campaign sizes, and times each whole
command (best of --reps). Both candidates see the same cases (same seed and bounds), so
generation, reference and comparison cancel in the difference; the slope between the two sizes
removes process start-up. What is left is what the bridge adds per case (each case runs twice).
Both runner modes: the default isolated worker and --no-isolate (the bridge then runs in attest's
own process; the kernel is still in its own).

    python3 bench/bench_external.py [--attest build/attest] [--small 200 --large 2200]
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def wall_seconds(attest, spec, cases, reps, extra):
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        p = subprocess.run([attest, "run", "--kernel", "indexer", "--candidate", spec,
                            "--cases", str(cases), "--seed", "1", "--max-batch", "1",
                            "--max-heads", "1", "--max-len", "64", "--max-next-n", "1", *extra],
                           capture_output=True, text=True, env={**os.environ, "CI": "1"})
        t = time.perf_counter() - t0
        if p.returncode != 0 and "result:" not in p.stdout:
            sys.exit(f"{spec}: exit {p.returncode}\n{p.stdout}{p.stderr}")
        best = t if best is None else min(best, t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attest", default=os.path.join(HERE, "..", "build", "attest"))
    ap.add_argument("--small", type=int, default=200)
    ap.add_argument("--large", type=int, default=2200)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    specs = {"C cpu-indexer": "cpu-indexer",
             "numpy via bridge": f"py:{os.path.join(HERE, 'noop_candidate.py')}:noop"}
    for mode in ([], ["--no-isolate"]):
        print(f"runner: {'in-process (--no-isolate)' if mode else 'isolated worker (default)'}")
        per_case = {}
        for label, spec in specs.items():
            small = wall_seconds(a.attest, spec, a.small, a.reps, mode)
            large = wall_seconds(a.attest, spec, a.large, a.reps, mode)
            per_case[label] = (large - small) / (a.large - a.small)
            print(f"  {label:18s} {small:.3f} s ({a.small} cases), {large:.3f} s ({a.large} "
                  f"cases): {per_case[label] * 1e6:.0f} us per case")
        extra = per_case["numpy via bridge"] - per_case["C cpu-indexer"]
        print(f"  bridge overhead: {extra * 1e6:.0f} us per case (2 runs), {extra * 5e5:.0f} us "
              "per run")


if __name__ == "__main__":
    main()
