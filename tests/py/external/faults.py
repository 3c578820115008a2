"""Indexer candidates that misbehave in every way a process can, for tests/py/test_external.py.

Each computes the correct logits (via the numpy example) unless its fault fires. Faults that
should fire once fire on the call numbered $ATTEST_TEST_FAULT_AT (1-based, counted across
processes in the file $ATTEST_TEST_STATE), so a test can check that the campaign goes on with a
fresh process. Every process appends its pid to $ATTEST_TEST_STATE.pids.
"""
import ctypes
import os
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python",
                                "examples"))
import attest_candidate as ac  # noqa: E402
from numpy_indexer import compute  # noqa: E402

from process_faults import STATE, fires, hostile  # noqa: E402,F401


def declare(name):
    return ac.candidate(family="indexer", name=name, conventions={"masking": "-inf"})


globals().update(hostile(declare, compute))


@declare("wrong_dtype")
def wrong_dtype(t, p):
    return {"logits": np.zeros(t["logits"].shape, dtype=np.float64)}


@declare("wrong_shape")
def wrong_shape(t, p):
    return {"logits": np.zeros((1, 1), dtype=np.float32)}


@declare("returns_copy")
def returns_copy(t, p):
    """Correct, but returns its outputs instead of writing them in place."""
    out = np.empty_like(t["logits"])
    compute({**t, "logits": out}, p)
    return {"logits": out}


@declare("clamps_table")
def clamps_table(t, p):
    """Correct logits, but clamps its page table in place (an input)."""
    compute(t, p)
    np.maximum(t["block_table"], 0, out=t["block_table"])
    t["block_table"][0, 0] ^= 1


@declare("writes_nothing")
def writes_nothing(t, p):
    pass


@declare("noisy")
def noisy(t, p):
    compute(t, p)
    t["logits"].flat[0] = np.float32(np.random.default_rng().random())


@declare("declines")
def declines(t, p):
    compute(t, p)


declines.__attest__.supports = lambda p: p.b < 2


@declare("declines_all")
def declines_all(t, p):
    compute(t, p)


declines_all.__attest__.supports = lambda p: False


def not_declared(t, p):
    compute(t, p)


@declare("one_arg")
def one_arg(t):
    pass
