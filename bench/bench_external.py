#!/usr/bin/env python3
"""Per-case cost of the external-process bridge (docs/external-candidates.md).

Runs `attest run` on tiny indexer cases (one request, one head, at most 64 positions) with a
built-in C candidate and with a numpy candidate through the bridge, each at two campaign sizes.
The slope between the sizes removes process start-up; the difference of the slopes is what the
bridge adds per case (each case runs twice, so per run it is half). Figures come from the
"time in: ... candidate X s" line attest prints (10 ms resolution: 5 us per case over 2000
cases). Both runner modes: the default isolated worker (one more process hop per run) and
--no-isolate (the bridge runs in attest's process; the kernel is still in its own process).

    python3 bench/bench_external.py [--attest build/attest] [--small 200 --large 2200]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def candidate_seconds(attest, spec, cases, reps, extra):
    best = None
    for _ in range(reps):
        out = subprocess.run([attest, "run", "--kernel", "indexer", "--candidate", spec,
                              "--cases", str(cases), "--seed", "1", "--max-batch", "1",
                              "--max-heads", "1", "--max-len", "64", "--max-next-n", "1",
                              *extra],
                             capture_output=True, text=True, env={**os.environ, "CI": "1"})
        m = re.search(r"candidate ([0-9.]+) s", out.stdout)
        if not m:
            sys.exit(f"no timing in the output of {spec}:\n{out.stdout}{out.stderr}")
        t = float(m.group(1))
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
            small = candidate_seconds(a.attest, spec, a.small, a.reps, mode)
            large = candidate_seconds(a.attest, spec, a.large, a.reps, mode)
            per_case[label] = (large - small) / (a.large - a.small)
            print(f"  {label:18s} candidate time {small:.2f} s ({a.small} cases), {large:.2f} s "
                  f"({a.large} cases): {per_case[label] * 1e6:.0f} us per case")
        extra = per_case["numpy via bridge"] - per_case["C cpu-indexer"]
        print(f"  bridge overhead: {extra * 1e6:.0f} us per case (2 runs), {extra * 5e5:.0f} us "
              "per run")


if __name__ == "__main__":
    main()
