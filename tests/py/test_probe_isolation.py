#!/usr/bin/env python3
"""The child that probes a plugin before attest loads it is isolated as the runner's worker is:
attest is started with SIGUSR1 ignored and an inherited pipe end open; the plugin's constructor
reports both from every process that loads it. attest itself never loads it; the probe child and
the worker that runs it have SIGUSR1 back at its default and the pipe closed.
usage: test_probe_isolation.py REPORT_PLUGIN.so"""
import os
import re
import signal
import subprocess
import sys
import tempfile

from attest_testlib import CLI, check, summary


def main():
    plugin = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="attest-probe-iso-")
    report = os.path.join(tmp, "report")
    r, w = os.pipe()
    env = {**os.environ, "CI": "1", "TMPDIR": tmp, "ATTEST_TEST_PROBE_REPORT": report,
           "ATTEST_TEST_INHERITED_FD": str(w)}
    p = subprocess.Popen([CLI, "run", "--kernel", "indexer", "--candidate", plugin + ":x",
                          "--cases", "1"], env=env, pass_fds=(w,), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGUSR1, signal.SIG_IGN))
    os.close(w)
    out, err = p.communicate(timeout=120)
    os.close(r)
    lines = open(report).read().splitlines() if os.path.exists(report) else []
    rows = [re.match(r"pid=(\d+) usr1=(\w+) fd=(\w+)$", l) for l in lines]
    check(all(rows) and rows, f"report lines: {lines!r} (attest said {err.strip()!r})")
    rows = [m for m in rows if m]
    own = [m for m in rows if int(m.group(1)) == p.pid]
    probes = [m for m in rows if int(m.group(1)) != p.pid]
    # attest itself never loads a plugin (a corrupt one can damage whatever maps it): the probe
    # child and the runner's worker do.
    check(not own, f"attest itself loaded the plugin: {lines!r}")
    check(len(probes) >= 2, f"the probe child and the worker should load the plugin: {lines!r}")
    for m in probes:
        check(m.group(2) == "dfl", f"probe child {m.group(1)}: SIGUSR1 {m.group(2)}, not default")
        check(m.group(3) == "closed", f"probe child {m.group(1)}: the inherited pipe is open")
    return summary("test_probe_isolation")


if __name__ == "__main__":
    sys.exit(main())
