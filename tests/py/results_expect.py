"""Expected values of the results-store fixture rows (tests/results_fixture.h), computed
independently of attest so h5py checks do not trust the writer."""

MISMATCH, CRASH, OK = 1, 5, 0


def verdict(i):
    if i % 7 == 3:
        return MISMATCH
    if i % 11 == 5:
        return CRASH
    return OK


def expected(i):
    """A few fields of row i, as h5py reads them (strings as bytes)."""
    v = verdict(i)
    name = {OK: b"OK", MISMATCH: b"MISMATCH", CRASH: b"CRASH"}[v]
    return {
        "case_id": i,
        "seed": (i * 2654435761 + 12345) % (1 << 64),
        "params": b"kernel=indexer,b=%d,next_n=2,h=64,max_len=%d" % (i % 5 + 1, 64 * (i % 9 + 1)),
        "candidate": b"cand-%d" % (i % 3),
        "verdict": v,
        "verdict_name": name,
        "failed_gates": 0b110 if v == MISMATCH else 0,
        "gates": b"element+cosine" if v == MISMATCH else b"",
        "integrity_flags": 1 if v == CRASH else 0,
        "integrity": b"canary" if v == CRASH else b"",
        "vacuous": int(i % 13 == 0),
        "reruns": 2,
        "num_outputs": 2,
        "message": b"worker killed by signal 11 (case %d)" % i if v == CRASH else b"",
        "out0_output": b"out_bf16",
        "out1_output": b"lse",
        "out0_count": 1000 + i,
        "out1_count": 1001 + i,
        "out0_element_failures": i % 17 + 1 if v == MISMATCH else 0,
        "out0_worst_rank": 4,
        "out0_worst_index": [i % 5, 0, i % 64, i % 512],
        "out1_worst_index": [i % 5, 0, i % 64, 0],
        "out0_worst_ref": 0.5 + i,
        "out0_worst_cand": 0.5 + i + 1.0 / 1024.0,
        "out0_max_rel": 1.0 / (1024.0 * (0.5 + i)),
        "out0_failed_gates": 0b110 if v == MISMATCH else 0,
        "out0_topk_worst_row": -1,
    }


def check_row(row, i):
    """Returns a list of differences between an h5py row and the fixture."""
    bad = []
    for key, want in expected(i).items():
        if isinstance(want, list):  # coordinates: four scalar columns KEY_0 .. KEY_3
            got = [int(row["%s_%d" % (key, j)]) for j in range(len(want))]
        else:
            got = row[key]
        if isinstance(want, list):
            pass
        elif isinstance(want, float):
            got = float(got)
        elif isinstance(want, int):
            got = int(got)
        if got != want:
            bad.append("row %d %s: %r != %r" % (i, key, got, want))
    return bad
