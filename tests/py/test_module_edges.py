#!/usr/bin/env python3
"""The harness modules' include edges hold: each header (public, and private in its module's
folder) compiles with the flags of every module allowed to see it and fails to compile with the
flags of every other module. The allowed edges are written here, apart from the build's table
(cmake/HarnessModules.cmake), so a build that lets an upward include through fails this test.
Also: no harness source reaches another folder with a relative include."""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from attest_testlib import check, summary

BUILD = os.environ.get("ATTEST_BINARY_DIR")
SOURCE = os.environ.get("ATTEST_SOURCE_DIR")

# What each module may see, itself included (docs/architecture.md).
ALLOWED = {
    "core": {"core"},
    "gen": {"core", "gen"},
    "judge": {"core", "judge"},
    "store": {"core", "judge", "store"},
    "run": {"core", "judge", "run"},
}

# The module each public header belongs to.
PUBLIC = {
    "core": "status numerics rng layout case candidate conventions clock shell verdict sha256 isa "
            "files topk",
    "gen": "generator minimize pipeline",
    "judge": "compare bound policy record judge",
    "store": "casefile casefile_h5 results topk_casefile",
    "run": "runner device external bench topk_runner",
}


def module_flags():
    """Each module's compile command (from a source of its folder), without -o/-c/the file."""
    with open(os.path.join(BUILD, "compile_commands.json")) as f:
        entries = json.load(f)
    flags = {}
    for e in entries:
        m = re.search(r"/harness/src/([a-z]+)/[^/]+\.c$", e["file"])
        if not m or m.group(1) in flags:
            continue
        args = e.get("arguments") or shlex.split(e["command"])
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-c"):
                skip = True
                continue
            out.append(a)
        flags[m.group(1)] = (out, e["directory"])
    return flags


def compiles(flags, header, tmp):
    src = os.path.join(tmp, "probe.c")
    with open(src, "w") as f:
        f.write('#include "%s"\nint attest_probe_unused;\n' % header)
    args, cwd = flags
    p = subprocess.run(args + ["-fsyntax-only", src], capture_output=True, text=True, cwd=cwd)
    return p.returncode == 0, p.stderr


def main():
    if not BUILD or not SOURCE or not os.path.exists(os.path.join(BUILD, "compile_commands.json")):
        print("ATTEST_BINARY_DIR / ATTEST_SOURCE_DIR unset or no compile_commands.json; skipping")
        return 77
    flags = module_flags()
    check(set(flags) == set(ALLOWED), f"modules with sources: {sorted(flags)}")
    public_dir = os.path.join(SOURCE, "harness", "include", "attest")
    owners = {h: m for m, hs in PUBLIC.items() for h in hs.split()}
    headers = []
    for path in sorted(glob.glob(os.path.join(public_dir, "*.h"))):
        stem = os.path.basename(path)[:-2]
        check(stem in owners, f"attest/{stem}.h has no module in this test's table")
        if stem in owners:
            headers.append(("attest/%s.h" % stem, owners[stem]))
    for m in ALLOWED:
        for path in sorted(glob.glob(os.path.join(SOURCE, "harness", "src", m, "*.h"))):
            headers.append((os.path.basename(path), m))
    tmp = tempfile.mkdtemp(prefix="attest-edges-")
    try:
        for header, owner in headers:
            for m in sorted(flags):
                ok, err = compiles(flags[m], header, tmp)
                want = owner in ALLOWED[m]
                first = err.strip().splitlines()[0] if err.strip() else ""
                check(ok == want, f"{header} (module {owner}) from module {m}: "
                      f"{'compiles' if ok else 'fails'}, expected it to "
                      f"{'compile' if want else 'fail'} {first}")
    finally:
        shutil.rmtree(tmp)
    relative = []
    for path in sorted(glob.glob(os.path.join(SOURCE, "harness", "src", "*", "*.[ch]"))):
        for n, line in enumerate(open(path), 1):
            if re.match(r'\s*#\s*include\s*"\.\.?/', line):
                relative.append(f"{os.path.relpath(path, SOURCE)}:{n}")
    check(not relative, f"relative includes reach across module folders: {relative}")
    return summary("test_module_edges")


if __name__ == "__main__":
    sys.exit(main())
