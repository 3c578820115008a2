"""Helpers shared by the CLI test scripts (test_cli.py, test_fixtures.py): running the CLI,
counting checks, and the summary line and exit status."""
import os
import subprocess

CLI = os.environ.get("ATTEST_CLI")
failures = []
_checks = [0]


def run(*args, timeout=600):
    """Runs the CLI with CI set (no progress lines); returns (exit status, stdout, stderr)."""
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "CI": "1"})
    return p.returncode, p.stdout, p.stderr


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
