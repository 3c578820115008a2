#!/usr/bin/env python3
"""Writes fuzz/corpus/results/: seeds and crafted bad inputs of the results-file reader
(fuzz_results.c explains the input layout: results file, then its .rows sibling, then the
sibling's length as 4 little-endian bytes).

    python3 fuzz/make_results_seeds.py BUILD_DIR [FUZZ_DIR]

Uses BUILD_DIR/tests/results_writer (synthetic rows) and h5py for the crafted files. Seeds:
a closed file (chunked, compressed table) and a writer that never closed (rows in .rows).
bad-*: one reliability finding each: a .rows shorter than the table, emptied; a table without
its verdict field; rows declared in /etc/passwd; 2^21 rows declared in chunks that are absent;
10^9 rows declared in a 2-row .rows; a zeroed row. Each must be refused with an error.
"""
import os
import shutil
import subprocess
import sys
import tempfile

os.environ["HDF5_EXTFILE_PREFIX"] = "${ORIGIN}"
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def pack(h5, rows=b""):
    data = open(h5, "rb").read()
    return data + rows + len(rows).to_bytes(4, "little")


def main():
    build = sys.argv[1]
    fuzz = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(fuzz, "corpus", "results")
    os.makedirs(out, exist_ok=True)
    writer = os.path.join(build, "tests", "results_writer")
    tmp = tempfile.mkdtemp(prefix="attest-results-seeds-")

    def write(name, data):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)

    closed = os.path.join(tmp, "closed.h5")
    subprocess.run([writer, "write", closed, "--rows", "40", "--chunk", "16"], check=True,
                   capture_output=True)
    write("seed-closed", pack(closed))
    live = os.path.join(tmp, "live.h5")
    subprocess.run([writer, "write", live, "--rows", "12", "--flush-rows", "4", "--no-close"],
                   check=True, capture_output=True)
    rows = open(live + ".rows", "rb").read()
    write("seed-live", pack(live, rows))

    write("bad-rows-short", pack(live, rows[: len(rows) // 3]))
    write("bad-rows-emptied", pack(live, b"\0"))  # one byte: no whole row

    def rebuild(src, name, make):
        path = os.path.join(tmp, name + ".h5")
        shutil.copy(src, path)
        with h5py.File(path, "r+") as f:
            old = f["cases"][:]
            del f["cases"]
            make(f, old)
        return path

    def no_verdict(f, old):
        names = [n for n in old.dtype.names if n != "verdict"]
        f.create_dataset("cases", data=np.array(old[names].tolist(),
                                                dtype=[(n, old.dtype[n]) for n in names]))
    write("bad-no-verdict-field", pack(rebuild(closed, "noverdict", no_verdict)))

    def passwd(f, old):
        f.create_dataset("cases", shape=(3,), dtype=old.dtype,
                         external=[("/etc/passwd", 0, h5py.h5f.UNLIMITED)])
    write("bad-rows-in-etc-passwd", pack(rebuild(closed, "passwd", passwd)))

    def absent_chunks(f, old):
        d = f.create_dataset("cases", shape=(0,), maxshape=(None,), chunks=(4096,),
                             dtype=old.dtype)
        d.resize((1 << 21,))
    write("bad-2m-rows-no-chunks", pack(rebuild(closed, "absent", absent_chunks)))

    def billion(f, old):
        f.create_dataset("cases", shape=(10 ** 9,), dtype=old.dtype,
                         external=[("billion.h5.rows", 0, h5py.h5f.UNLIMITED)])
    path = rebuild(closed, "billion", billion)
    write("bad-1e9-rows-external", pack(path, rows[: 2 * old_row_size(closed)]))

    def zeroed(f, old):
        old[1] = np.zeros(1, dtype=old.dtype)[0]
        f.create_dataset("cases", data=old, chunks=(16,))
    write("bad-zeroed-row", pack(rebuild(closed, "zeroed", zeroed)))
    shutil.rmtree(tmp)
    print("wrote", len(os.listdir(out)), "files to", out)


def old_row_size(path):
    with h5py.File(path, "r") as f:
        return f["cases"].dtype.itemsize


if __name__ == "__main__":
    main()
