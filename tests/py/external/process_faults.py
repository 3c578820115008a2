"""The process faults every external test module declares (faults.py, faults_topk.py).

A fault that should fire once fires on the call numbered $ATTEST_TEST_FAULT_AT (1-based, counted
across processes in the file $ATTEST_TEST_STATE), so a test can check that the campaign goes on
with a fresh process. Every process that imports this appends its pid to $ATTEST_TEST_STATE.pids.
"""
import ctypes
import os
import sys
import time

STATE = os.environ.get("ATTEST_TEST_STATE", "")
if STATE:
    with open(STATE + ".pids", "a") as f:
        f.write(f"{os.getpid()}\n")


def fires():
    """True on the configured call (every call when ATTEST_TEST_FAULT_AT is unset)."""
    at = int(os.environ.get("ATTEST_TEST_FAULT_AT", "0"))
    if not at or not STATE:
        return True
    with open(STATE, "a+") as f:
        f.seek(0)
        n = len(f.read()) + 1
        f.write("x")
    return n == at


def hostile(declare, work):
    """The candidates raises, exits, segfault, hangs and garbage, each declared by declare(name)
    and doing work(t, p) (the correct kernel) unless its fault fires; a module takes them with
    globals().update(hostile(...)), since the bridge looks a candidate up by attribute."""
    @declare("raises")
    def raises(t, p):
        if fires():
            print("about to divide by zero", file=sys.stderr)
            raise ZeroDivisionError("the kernel divided by zero")
        work(t, p)

    @declare("exits")
    def exits(t, p):
        if fires():
            print("exiting mid-case", file=sys.stderr)
            os._exit(3)
        work(t, p)

    @declare("segfault")
    def segfault(t, p):
        if fires():
            print("dereferencing NULL", file=sys.stderr)
            ctypes.string_at(0)
        work(t, p)

    @declare("hangs")
    def hangs(t, p):
        if fires():
            print("hanging", file=sys.stderr)
            time.sleep(3600)
        work(t, p)

    @declare("garbage")
    def garbage(t, p):
        work(t, p)
        if fires():
            os.write(int(os.environ["ATTEST_CHANNEL_FD"]), b"this is not json\n")

    return {"raises": raises, "exits": exits, "segfault": segfault, "hangs": hangs,
            "garbage": garbage}
