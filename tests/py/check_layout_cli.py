#!/usr/bin/env python3
"""Checks `attest layout describe`: the numbers a user reads (docs/kernels.md sections 2-4) and the usage
errors (one line on stderr, exit status 2). The CLI path comes from ATTEST_CLI."""
import os
import re
import subprocess
import sys

cli = os.environ.get("ATTEST_CLI")
if not cli or not os.path.exists(cli):
    print(f"skipping: ATTEST_CLI not set or missing ({cli})")
    sys.exit(77)

checks = 0
failures = []


def run(*args):
    return subprocess.run([cli, "layout", *args], capture_output=True, text=True)


def expect_ok(args, patterns):
    """Exit 0 and every regex in patterns found in stdout."""
    global checks
    r = run(*args)
    checks += 1
    if r.returncode != 0:
        failures.append(f"{args}: exit {r.returncode}: {r.stderr.strip()}")
        return
    for p in patterns:
        checks += 1
        if not re.search(p, r.stdout, re.M):
            failures.append(f"{args}: output lacks /{p}/")


def expect_usage_error(args, word):
    """Exit 2, nothing on stdout, exactly one line on stderr that mentions `word`."""
    global checks
    r = run(*args)
    checks += 1
    lines = r.stderr.splitlines()
    if r.returncode != 2 or len(lines) != 1 or r.stdout or word not in r.stderr:
        failures.append(f"{args}: exit {r.returncode}, stderr {r.stderr!r}, stdout {r.stdout[:80]!r}")


expect_ok(["describe", "mla-v4", "--page-size", "64"],
          [r"page stride\s+37440 bytes", r"page payload\s+37376 bytes",
           r"page padding\s+64 bytes \[37376, 37440\)", r"scale region.*starting at 36864",
           r"token scales\s+36864 \+ 8t \+ \[0, 7\)", r"ue8m0", r"fp8_e4m3fn\s+448", r"bf16\s+64"])
expect_ok(["describe", "mla-v4"], [r"page stride\s+37440 bytes"])  # default page size 64
expect_ok(["describe", "mla-v4", "--page-size=256"],
          [r"page stride\s+149760 bytes", r"page payload\s+149504 bytes", r"147456 \+ 8t"])
expect_ok(["describe", "mla-v4", "--page-size", "2"], [r"page stride\s+1728 bytes"])
expect_ok(["describe", "mla-v32", "--page-size", "64", "--page-stride", str(65 * 656)],
          [r"page stride\s+42640 bytes", r"page padding\s+656 bytes \[41984, 42640\)",
           r"656t \+ \[512, 528\)\s+float32\s+4", r"656t \+ \[528, 656\)\s+bf16\s+64"])
expect_ok(["describe", "c4-indexer"],
          [r"page stride\s+8448 bytes", r"element 2048 \+ t", r"t=63 -> 2111",
           r"8192 \+ 4t", r"page padding\s+0 bytes"])
expect_ok(["describe", "c4-indexer", "--token", "5"],
          [r"scale 0\s+byte 8212 \(float32 element 2053\)", r"fp8 data\s+\[640, 768\)"])
expect_ok(["describe", "mla-v4", "--token", "3"],
          [r"scale 6\s+byte 36894", r"pad\s+byte 36895", r"rope\s+\[2176, 2304\)"])
expect_ok(["--help"], [r"describe"])
expect_ok(["describe", "--help"], [r"--page-size"])

expect_usage_error(["describe", "mla-v5"], "unknown layout")
expect_usage_error(["describe", "mla-v4", "--page-size", "0"], "page-size")
expect_usage_error(["describe", "mla-v4", "--page-size", "4097"], "page-size")
expect_usage_error(["describe", "mla-v4", "--page-size", "99999999999999999999999"], "page-size")
expect_usage_error(["describe", "mla-v4", "--page-size", "-1"], "page-size")
expect_usage_error(["describe", "mla-v4", "--page-size", "64k"], "page-size")
expect_usage_error(["describe", "mla-v4", "--page-size", ""], "page-size")
expect_usage_error(["describe", "mla-v4", "--page-size"], "needs a value")
expect_usage_error(["describe", "c4-indexer", "--page-size", "32"], "64")
expect_usage_error(["describe", "mla-v4", "--page-stride", "37376"], "stride")
expect_usage_error(["describe", "mla-v32", "--page-stride", "100"], "stride")
expect_usage_error(["describe", "mla-v32", "--page-stride", "41986"], "multiple of 4")
expect_usage_error(["describe", "mla-v4", "--token", "64"], "token")
expect_usage_error(["describe", "mla-v4", "--frobnicate"], "unknown option")
expect_usage_error(["describe", "mla-v4", "mla-v32"], "unexpected")
expect_usage_error(["describe"], "LAYOUT")
expect_usage_error([], "subcommand")
expect_usage_error(["explain"], "unknown subcommand")

print(f"check_layout_cli: {checks} checks, {len(failures)} failures")
for f in failures:
    print("  FAIL " + f)
sys.exit(1 if failures else 0)
