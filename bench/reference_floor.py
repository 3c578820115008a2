#!/usr/bin/env python3
"""The float64 floor of the mla-decode reference's arithmetic on this CPU (issue 10).

numpy float64 (its BLAS, one thread) does the same work as attest's reference on the
mla-v4 b=1 h=64 topk=512 shape of bench_references, without the dequantization and the
|q||K| magnitudes the bounds need: scores = q K^T, max-subtracted exp, P V / sum. Prints the
median ms of 21 calls. Run it with one BLAS thread:
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python3 bench/reference_floor.py
"""
import time

import numpy as np


def main():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((64, 512))
    k = rng.standard_normal((512, 512))
    v = k[:, :512]

    def call():
        s = q @ k.T
        p = np.exp(s - s.max(axis=1, keepdims=True))
        return (p @ v) / p.sum(axis=1, keepdims=True)

    call()
    times = []
    for _ in range(21):
        t0 = time.process_time()
        call()
        times.append(time.process_time() - t0)
    times.sort()
    print("numpy float64 floor, mla-v4 b=1 h=64 topk=512: %.2f ms (median of 21, CPU time)"
          % (1e3 * times[10]))


if __name__ == "__main__":
    main()
