"""Helpers shared by the CLI test scripts (test_cli.py, test_fixtures.py): running the CLI,
counting checks, and the summary line and exit status."""
import os
import re
import subprocess

CLI = os.environ.get("ATTEST_CLI")
failures = []
_checks = [0]


def run(*args, timeout=600):
    """Runs the CLI with CI set (no progress lines); returns (exit status, stdout, stderr)."""
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "CI": "1"})
    return p.returncode, p.stdout, p.stderr


def host_mutants(families):
    """The host mutants `attest list` shows for the given kernel families, as (name, family).
    Every one must be findable: no shipped fault hides from generated or fuzzed inputs
    (mutant-mla-int32-offsets shows on the pools past 2^31 bytes both draw)."""
    rc, out, _ = run("list")
    fam = "|".join(re.escape(f) for f in families)
    found = []
    for line in out.splitlines():
        m = re.match(r"\s+(mutant-\S+)\s+(" + fam + r")\s+host\s", line)
        if m:
            found.append((m.group(1), m.group(2)))
    return found


def check(cond, what):
    _checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def one_line_error(rc, out, err, what):
    check(rc == 2, f"{what}: exit status {rc}, expected 2")
    lines = [l for l in err.splitlines() if l.strip()]
    check(len(lines) == 1 and lines[0].startswith("attest"),
          f"{what}: expected one error line on stderr, got {err!r}")


def summary(name):
    """Prints "NAME: N checks, M failed"; returns the exit status (1 when a check failed)."""
    print(f"{name}: {_checks[0]} checks, {len(failures)} failed")
    return 1 if failures else 0
