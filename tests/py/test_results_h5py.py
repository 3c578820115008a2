"""Reads results files written by attest (through tests/results_writer.c) with h5py and h5dump
only, and checks them against the fixture's values computed here (results_expect.py), against
docs/results-format.md (every field documented, the documented h5py snippet runs), and for the
crash-time layout (a writer that never closed: external raw rows, state "running").

Usage: test_results_h5py.py RESULTS_WRITER
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_expect import CRASH, MISMATCH, check_row, verdict  # noqa: E402

# A live or killed campaign names its raw rows file relative to itself; HDF5 resolves such
# names against the working directory unless told "${ORIGIN}" (docs/results-format.md).
os.environ["HDF5_EXTFILE_PREFIX"] = "${ORIGIN}"
try:
    import h5py
except ImportError:
    print("h5py missing: skipped")
    sys.exit(77)

SOURCE = os.environ.get("ATTEST_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOC = os.path.join(SOURCE, "docs", "results-format.md")
ROWS = 500
PER_SIGNATURE = 32  # attest_results_defaults().repros_per_signature


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def check_final(path):
    if os.path.exists(path + ".repro") or os.path.exists(path + ".rows"):
        fail("the repro directory or raw rows file outlived close")
    with h5py.File(path, "r") as f:
        if f.attrs["format"] != "attest-results" or int(f.attrs["schema_version"]) != 4:
            fail("root attributes: %r" % dict(f.attrs))
        p = f["provenance"].attrs
        for key in ("attest_version", "git_commit", "c_compiler", "host", "start_time"):
            if not isinstance(p[key], str) or not p[key]:
                fail("provenance %s is %r" % (key, p[key]))
        if int(p["seed"]) != 42 or int(p["cases_planned"]) != ROWS:
            fail("provenance seed/cases_planned: %r %r" % (p["seed"], p["cases_planned"]))
        if p["state"] != "complete" or p["policy_name"] != "fixture":
            fail("provenance state/policy: %r %r" % (p["state"], p["policy_name"]))
        if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["end_time"]):
            fail("end_time %r" % p["end_time"])
        if not float(p["duration_seconds"]) > 0:
            fail("duration_seconds %r" % p["duration_seconds"])
        if f["provenance/policy_text"][()] != b'{"name": "fixture"}':
            fail("policy_text %r" % f["provenance/policy_text"][()])

        cases = f["cases"]
        if cases.shape != (ROWS,) or cases.compression != "gzip":
            fail("cases shape %r compression %r" % (cases.shape, cases.compression))
        if "MISMATCH" not in cases.attrs["verdict_values"]:
            fail("verdict legend %r" % cases.attrs["verdict_values"])
        # Every integrity bit of record.h, the sanitizer and graph bits included.
        want = "0=canary,1=input_modified,2=nondeterminism,3=candidate_error,4=sanitizer,5=graph"
        if cases.attrs["integrity_bits"] != want:
            fail("integrity legend %r" % cases.attrs["integrity_bits"])
        rows = cases[:]
        bad = []
        seen = {MISMATCH: 0, CRASH: 0}
        for i in range(ROWS):
            bad += check_row(rows[i], i)
            v = verdict(i)
            want_repro = 0
            if v in seen:
                seen[v] += 1
                want_repro = 1 if seen[v] <= PER_SIGNATURE else 2
            if int(rows[i]["repro"]) != want_repro:
                bad.append("row %d repro %d, expected %d" % (i, rows[i]["repro"], want_repro))
            if want_repro == 1:
                g = f.get("repro/%d" % i)
                if g is None:
                    bad.append("repro/%d missing" % i)
                    continue
                if g.attrs["kind"] != "indexer" or "cache_bytes" not in g:
                    bad.append("repro/%d is not an indexer case" % i)
                if "--case %d " % i not in g.attrs["replay"] or not g.attrs["replay"].startswith(
                        "attest replay "):
                    bad.append("repro/%d replay %r" % (i, g.attrs["replay"]))
        if len(f["repro"]) != 2 * PER_SIGNATURE:
            bad.append("%d repro groups, expected %d" % (len(f["repro"]), 2 * PER_SIGNATURE))
        if bad:
            fail("; ".join(bad[:5]))
        return list(cases.dtype.names)


def check_h5dump(path):
    if not shutil.which("h5dump"):
        print("h5dump missing: its checks skipped")
        return
    head = subprocess.run(["h5dump", "-H", path], capture_output=True, text=True)
    if head.returncode != 0:
        fail("h5dump -H: " + head.stderr[-400:])
    for want in ('DATASET "cases"', 'H5T_STD_U64LE "case_id";', 'H5T_IEEE_F64LE "out0_max_rel";',
                 'H5T_STD_I64LE "out0_worst_index_0";', 'H5T_STD_I64LE "out0_worst_index_3";', 'GROUP "provenance"',
                 'ATTRIBUTE "git_commit"', 'GROUP "repro"'):
        if want not in head.stdout:
            fail("h5dump -H lacks %r" % want)
    # The verdict is an HDF5 enum: h5dump names its members and every row's value.
    if not re.search(r'H5T_ENUM \{\s*H5T_STD_I32LE;\s*"OK"\s+0;[^}]*"MISMATCH"\s+1;[^}]*\}\s*"verdict";',
                     head.stdout):
        fail("h5dump -H: the verdict field is not an enum of the verdict names")
    row = subprocess.run(["h5dump", "-d", "/cases", "-s", "3", "-c", "1", path],
                         capture_output=True, text=True)
    if row.returncode != 0 or '"MISMATCH"' not in row.stdout or '"element+cosine"' not in row.stdout:
        fail("h5dump of row 3: " + row.stdout[-800:] + row.stderr[-300:])
    state = subprocess.run(["h5dump", "-a", "/provenance/state", path], capture_output=True,
                           text=True)
    if state.returncode != 0 or '"complete"' not in state.stdout:
        fail("h5dump of provenance/state: " + state.stdout + state.stderr)


def check_docs(path, fields):
    text = open(DOC).read()
    undocumented = [n for n in fields
                    if "`%s`" % n not in text and "`%s`" % re.sub(r"^out[01]_", "out<k>_", n) not in text]
    if undocumented:
        fail("fields missing from docs/results-format.md: %s" % ", ".join(undocumented))
    m = re.search(r"<!-- h5py-example -->\s*```python\n(.*?)```", text, re.S)
    if not m:
        fail("docs/results-format.md has no h5py example block")
    out = subprocess.run([sys.executable, "-c", m.group(1), path], capture_output=True, text=True)
    if out.returncode != 0 or "MISMATCH" not in out.stdout:
        fail("the documented h5py example failed: " + out.stdout[-500:] + out.stderr[-800:])
    # The pandas one-liner: every field a column (no array fields).
    m = re.search(r"<!-- pandas-example -->.*?```python\n(.*?)```", text, re.S)
    if not m:
        fail("docs/results-format.md has no pandas example block")
    try:
        import pandas  # noqa: F401
    except ImportError:
        print("pandas missing (ci/setup.sh --with-python installs it): its example skipped")
        return
    out = subprocess.run([sys.executable, "-c", m.group(1), path], capture_output=True, text=True)
    if out.returncode != 0 or "MISMATCH" not in out.stdout:
        fail("the documented pandas example failed: " + out.stdout[-500:] + out.stderr[-800:])


def check_live(writer, tmp):
    """A writer that exits without closing leaves the live layout, readable as it is."""
    path = os.path.join(tmp, "live.h5")
    out = subprocess.run([writer, "write", path, "--rows", "100", "--flush-rows", "10",
                          "--no-close"], capture_output=True, text=True)
    if out.returncode != 0 or "flushed 100" not in out.stdout:
        fail("live writer: " + out.stdout[-300:] + out.stderr[-300:])
    with h5py.File(path, "r") as f:
        cases = f["cases"]
        if cases.shape != (100,) or not cases.external:
            fail("live table shape %r external %r" % (cases.shape, cases.external))
        if cases.external[0][0] != os.path.basename(path) + ".rows":
            fail("live table raw file %r" % (cases.external[0][0],))
        if f["provenance"].attrs["state"] != "running":
            fail("live state %r" % f["provenance"].attrs["state"])
        bad = []
        for i, row in enumerate(cases[:]):
            bad += check_row(row, i)
        if bad:
            fail("live rows: " + "; ".join(bad[:3]))


def main():
    if len(sys.argv) < 2:
        print("usage: test_results_h5py.py RESULTS_WRITER")
        return 2
    writer = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="attest-results-h5py-") as tmp:
        path = os.path.join(tmp, "final.h5")
        out = subprocess.run([writer, "write", path, "--rows", str(ROWS), "--repros"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            fail("writer: " + out.stderr)
        fields = check_final(path)
        check_h5dump(path)
        check_docs(path, fields)
        check_live(writer, tmp)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
