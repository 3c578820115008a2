#!/usr/bin/env python3
"""Writes the seed corpora of attest's fuzz targets into fuzz/corpus/<target>/ (deterministic).

    python3 fuzz/make_seeds.py [FUZZ_DIR]

Seeds are small on purpose: libFuzzer mutates them, and every corpus file is also a ctest
(label fuzz-replay). The crash-* files are the campaign's findings, rebuilt small from the
seeds (regressions() says what each was). Needs numpy and h5py (case-file seeds only).

- mla_decode, indexer: the fuzz input is read from both ends (fuzz_common.h). The last 8 bytes
  are the generator seed (little-endian from the end), the byte before them the shape knobs;
  the head is a list of mutation operations. A seed is a few random mutation bytes plus a tail.
- topk: the same two ends (knobs bit 0: default bounds); the head is 7-byte operations on the
  generated case (fuzz_topk.c).
- casefile: the smallest valid case files (indexer at the root, mla-v32 with topk_length and a
  sink, mla-v4 with an extra scope in a nested group), with compact, contiguous and deflated
  storage and fixed- and variable-length strings, plus a truncated copy.
- policy: the shipped policies and broken variants, one schema rule each.
"""
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def tail(knobs, seed):
    """The 9 bytes read from the end: knobs, then the seed's bytes most significant first."""
    return bytes([knobs]) + seed.to_bytes(8, "big")


def case_seeds(out, target, knob_values):
    rng = random.Random(target)
    for i, knobs in enumerate(knob_values):
        head = bytes(rng.randrange(256) for _ in range(rng.choice([0, 24, 64, 120])))
        write(os.path.join(out, target, "seed-%02d-knobs%d" % (i, knobs)),
              head + tail(knobs, rng.getrandbits(64)))


def casefile_seeds(out):
    import h5py
    import numpy as np

    d = os.path.join(out, "casefile")
    os.makedirs(d, exist_ok=True)

    def bf16_bits(x):
        return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)

    def new_file(path):
        # HDF5 1.10 structures (the system library attest links is 1.10), no metadata blocks.
        return h5py.File(path, "w", libver=("v110", "v110"), meta_block_size=0)

    def fixed(**attrs):
        # Fixed-length strings: a variable-length one costs a 4 KiB global heap collection.
        return {k: np.bytes_(v) if isinstance(v, str) else v for k, v in attrs.items()}

    def dset(g, name, data, layout="compact"):
        # compact: the data lives in the object header (the smallest file); gzip: one deflated
        # chunk; contiguous: HDF5's default. track_times off keeps the files deterministic.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        kw = {}
        if layout == "compact":
            dcpl.set_layout(h5py.h5d.COMPACT)
        elif layout == "gzip":
            dcpl.set_chunk(data.shape)
            dcpl.set_deflate(1)
        g.create_dataset(name, data=data, track_times=False, dcpl=dcpl, **kw)

    # indexer at the root: 1 block, 1 request of 3 positions, 1 head; deflated pool.
    path = os.path.join(d, "seed-indexer-root.h5")
    with new_file(path) as f:
        f.attrs.update(fixed(kind="indexer", num_blocks=1, b=1, heads=1, max_len=4, next_n=1,
                             masking="-inf", topk=2))
        cache = np.zeros((1, 8448), np.uint8)
        cache[0, 0:3 * 128] = 0x38  # fp8 1.0 for positions 0..2
        cache[0, 8192:8192 + 12] = np.array([1.0, 0.5, 2.0], np.float32).view(np.uint8)
        dset(f, "cache_bytes", cache, "gzip")
        dset(f, "block_table", np.zeros((1, 1), np.int32))
        dset(f, "context_lens", np.array([3], np.int32))
        dset(f, "q_fp8", np.full((1, 1, 1, 128), 0x30, np.uint8))  # fp8 0.5
        dset(f, "weights", np.ones((1, 1), np.float32))

    # mla-v32, page_size 1, 2 pages, topk 2, with topk_length and a sink; all compact.
    path = os.path.join(d, "seed-mla-v32-root.h5")
    with new_file(path) as f:
        f.attrs.update(fixed(kind="mla-decode", layout="mla-v32", page_size=1, num_pages=2, b=1,
                             s_q=1, h_q=1, topk=2, sm_scale=576 ** -0.5,
                             lse_convention="excludes_sink"))
        pool = np.full(2 * 656, 0xFF, np.uint8)
        for t in range(2):
            rec = pool[t * 656:(t + 1) * 656]
            rec[0:512] = 0x38
            rec[512:528] = np.full(4, 0.25, np.float32).view(np.uint8)
            rec[528:656] = bf16_bits(np.full(64, 0.5)).astype("<u2").view(np.uint8)
        dset(f, "cache_bytes", pool)
        dset(f, "q_bf16", bf16_bits(np.full((1, 1, 1, 576), 0.125)))
        dset(f, "indices", np.array([[[1, -1]]], np.int32))
        dset(f, "topk_length", np.array([2], np.int32))
        dset(f, "attn_sink", np.array([0.5], np.float32))

    # mla-v4 in a nested group with an extra scope, page_size 1 (stride 1152), variable-length
    # strings as h5py writes them by default (the upstream oracle files have them), contiguous
    # and deflated storage.
    path = os.path.join(d, "seed-mla-v4-group-extra.h5")
    with new_file(path) as f:
        g = f.create_group("cases/v4_extra")
        stride = math.ceil(584 / 576) * 576
        g.attrs.update(kind="mla-decode", kernel="mla-decode", layout="mla-v4", page_size=1,
                       page_stride=stride, num_pages=1, b=1, s_q=1, h_q=1, d_qk=512, d_v=512,
                       topk=1, has_extra=1, extra_page_size=1, extra_num_pages=1, extra_topk=1,
                       attest_schema_version=1)
        pool = np.full(stride, 0xFF, np.uint8)
        pool[0:448] = 0x38
        pool[448:576] = bf16_bits(np.full(64, 0.5)).astype("<u2").view(np.uint8)
        pool[576:583] = 127  # UE8M0 2^0
        dset(g, "cache_bytes", pool, "gzip")
        dset(g, "q_bf16", bf16_bits(np.full((1, 1, 1, 512), 0.125)), "contiguous")
        dset(g, "indices", np.array([[[0]]], np.int32), "contiguous")
        dset(g, "extra_cache_bytes", pool, "gzip")
        dset(g, "extra_indices", np.array([[[0]]], np.int32))
        dset(g, "extra_topk_length", np.array([1], np.int32))

    # A truncated copy: HDF5's end-of-file check.
    data = open(os.path.join(d, "seed-mla-v32-root.h5"), "rb").read()
    write(os.path.join(d, "seed-mla-v32-root-truncated.h5"), data[:len(data) // 2])


POLICY_MIN = b"""{"schema": 1, "name": "min", "version": "1", "entries": [
 {"kernel": "indexer", "output": "logits", "atol": 1e-6, "rtol": 1e-5,
  "max_fail_fraction": 0, "cos_diff_max": 1e-6, "nmse_max": null, "max_code_distance": null,
  "vacuity_factor": 10, "topk_min_recall": 1.0, "source": "seed"}]}
"""


def policy_seeds(out):
    d = os.path.join(out, "policy")
    for name in ("default.json", "strict.json"):
        write(os.path.join(d, "seed-" + name),
              open(os.path.join(HERE, "..", "policies", name), "rb").read())
    write(os.path.join(d, "seed-minimal.json"), POLICY_MIN)
    broken = {
        "negative-atol": POLICY_MIN.replace(b'"atol": 1e-6', b'"atol": -1e-6'),
        "fraction-over-1": POLICY_MIN.replace(b'"max_fail_fraction": 0', b'"max_fail_fraction": 2'),
        "unknown-key": POLICY_MIN.replace(b'"source"', b'"sauce"'),
        "missing-rtol": POLICY_MIN.replace(b'"rtol": 1e-5,', b""),
        "unknown-output": POLICY_MIN.replace(b'"logits"', b'"lse"'),
        "duplicate-entry": POLICY_MIN.replace(b"]}", b", " + POLICY_MIN[POLICY_MIN.index(b"{\"kernel"):POLICY_MIN.rindex(b"]")] + b"]}"),
        "schema-2": POLICY_MIN.replace(b'"schema": 1', b'"schema": 2'),
        "truncated": POLICY_MIN[:150],
        "string-number": POLICY_MIN.replace(b'"rtol": 1e-5', b'"rtol": "1e-5"'),
        "empty-entries": b'{"schema": 1, "name": "e", "version": "1", "entries": []}',
    }
    for name, text in broken.items():
        assert text != POLICY_MIN, name
        write(os.path.join(d, "broken-" + name + ".json"), text)


def regressions(out):
    """Inputs of the campaign's findings, rebuilt small from the seeds (fuzz/README.md, Findings).
    Each replays clean now and failed before its fix."""
    # mla_decode: q values of 3.4e38 (bf16 max) in head 2 overflow float32 dot products where the
    # double reference stays finite: a false positive, fixed by keeping q below 2^5. Ops: 8 = q,
    # then the element (4 bytes) and the bf16 pattern (2 bytes); knobs 0x63 = mla-v32.
    head = b"".join(bytes([8]) + (2 * 576 + d).to_bytes(4, "little") + (0x7F7F).to_bytes(2, "little")
                    for d in range(8))
    write(os.path.join(out, "mla_decode", "crash-q-overflow-float32"),
          head + tail(0x63, 0x079E338BC5BCB2C5))

    # policy: jansson 2.14 skips a NUL right after a number, so the text parsed while the policy's
    # text (a C string) ended at the NUL; attest_policy_parse now refuses NUL bytes.
    write(os.path.join(out, "policy", "crash-nul-after-number.json"),
          POLICY_MIN.replace(b'"cos_diff_max": 1e-6', b'"cos_diff_max": 1e-6\x00', 1))

    d = os.path.join(out, "casefile")
    # casefile: a global-heap object (a variable-length string attribute) claiming a size of
    # 5e18 bytes: HDF5 1.10's H5HG_read copies from a wild address. HDF5's bug; the target skips
    # it after its child crashes in libhdf5, and `attest replay` must refuse it (it crashed).
    data = bytearray(open(os.path.join(d, "seed-mla-v4-group-extra.h5"), "rb").read())
    gcol = data.find(b"GCOL")
    assert gcol > 0
    data[gcol + 24:gcol + 32] = (0x4644AA9900000000).to_bytes(8, "little")  # object 1's size
    write(os.path.join(d, "crash-hdf5-h5hg-read-wild-copy.h5"), bytes(data))
    # casefile: the same object claiming 74 bytes instead of 10: HDF5 1.10 loops forever loading
    # the collection (H5HG__cache_heap_deserialize). The target's child times out in libhdf5
    # and the input is skipped (it takes the child's 5 s to replay).
    data[gcol + 24:gcol + 32] = (74).to_bytes(8, "little")
    write(os.path.join(d, "crash-hdf5-h5hg-infinite-loop.h5"), bytes(data))
    # casefile: the root group's object header with a bad checksum: H5Oopen fails and HDF5 1.10
    # leaks the half-loaded cache entry (and prints "infinite loop closing library" at exit).
    data = bytearray(open(os.path.join(d, "seed-mla-v32-root.h5"), "rb").read())
    ohdr = data.find(b"OHDR")
    assert ohdr > 0
    data[ohdr + 40] ^= 0xFF
    write(os.path.join(d, "crash-hdf5-leak-corrupt-object-header.h5"), bytes(data))


def main():
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else HERE, "corpus")
    # knobs bit 0: layout fixed, bit 1: mla-v32 (else mla-v4), bit 2: edge bytes off.
    case_seeds(out, "mla_decode", [0, 1, 3, 4, 5, 7])
    # knobs bit 0: edge bytes off.
    case_seeds(out, "indexer", [0, 1, 0, 1, 0])
    # knobs bit 0: the top-k generator's default bounds (else small cases); the head is 7-byte
    # operations (fuzz_topk.c).
    case_seeds(out, "topk", [0, 1, 0, 1, 0, 1])
    casefile_seeds(out)
    policy_seeds(out)
    regressions(out)


if __name__ == "__main__":
    main()
