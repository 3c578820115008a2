"""Top-k candidates that misbehave in every way a process can, for tests/py/test_external_topk.py.

Each selects correctly (the numpy example) unless its fault fires. A fault that should fire once
fires on the call numbered $ATTEST_TEST_FAULT_AT (1-based, counted across processes in the file
$ATTEST_TEST_STATE), so a test can check that the campaign goes on with a fresh process. Every
process appends its pid to $ATTEST_TEST_STATE.pids.
"""
import ctypes
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python",
                                "examples"))
import attest_candidate as ac  # noqa: E402
from numpy_topk import select  # noqa: E402

# A slow start (importing torch, compiling a kernel): every process of this module takes
# $ATTEST_TEST_SLOW_START seconds before its hello.
time.sleep(float(os.environ.get("ATTEST_TEST_SLOW_START", "0")))

from process_faults import STATE, fires, hostile  # noqa: E402,F401


def declare(name, outputs="both"):
    return ac.candidate(family="topk", name=name, order="sorted", outputs=outputs,
                        short_row="by-score")


def write(t, p):
    t["topk_indices"][...], t["topk_physical"][...] = select(t, p)


globals().update(hostile(declare, write))


@declare("wrong_dtype")
def wrong_dtype(t, p):
    idx, phys = select(t, p)
    return {"topk_indices": idx.astype(np.int64), "topk_physical": phys}


@declare("wrong_shape")
def wrong_shape(t, p):
    idx, phys = select(t, p)
    return {"topk_indices": idx[:, :-1] if idx.shape[1] > 1 else idx[:0], "topk_physical": phys}


@declare("returns_copy")
def returns_copy(t, p):
    idx, phys = select(t, p)
    return {"topk_indices": idx, "topk_physical": phys}


@declare("clamps_lens")
def clamps_lens(t, p):
    write(t, p)
    t["context_lens"][0] = min(int(t["context_lens"][0]), 1) - 1  # an input written in place


@declare("writes_past")
def writes_past(t, p):
    write(t, p)
    view = t["topk_indices"]  # one byte past its end, in the shared region: numpy stops at it
    ctypes.memset(view.ctypes.data + view.nbytes, 0, 1)


@declare("writes_nothing")
def writes_nothing(t, p):
    pass


CALLS = [0]


@declare("noisy")
def noisy(t, p):
    write(t, p)
    CALLS[0] += 1
    if CALLS[0] % 2 == 0:  # every second run (the re-run of a case) picks differently
        t["topk_indices"][0, -1] = -2


@ac.candidate(family="topk", name="physical_only", order="any", outputs="physical",
              short_row="by-score")
def physical_only(t, p):
    assert "topk_indices" not in t
    phys = select(t, p)[1]
    for row in phys:  # a set: the selected slots in reverse, -1 padding still at the end
        n = int((row >= 0).sum())
        row[:n] = row[:n][::-1].copy()
    t["topk_physical"][...] = phys


@ac.candidate(family="topk", name="declines", order="sorted", outputs="both",
              short_row="by-score", supports=lambda p: p.k <= 64)
def declines(t, p):
    write(t, p)


@ac.candidate(family="indexer", name="an_indexer")
def an_indexer(t, p):
    pass
