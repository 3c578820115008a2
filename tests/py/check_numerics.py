#!/usr/bin/env python3
"""Cross-check attest's numerics module against ml_dtypes and independent Python rules.

Runs the numerics_dump helper (path in argv[1]) on inputs generated here, then compares:
  - every decode (256 e4m3fn, 256 UE8M0, 65536 bf16) with ml_dtypes, bit for bit;
  - float32 -> e4m3fn (non-saturating) and float32 -> bf16 with ml_dtypes on >= 10^6 random values
    plus every boundary;
  - float32 -> e4m3fn SATFINITE with an independent rule: clip to +-448, then ml_dtypes;
  - UE8M0 ceil and the three writers' clamp rules with math.frexp / DeepGEMM's bit formula;
  - float64 -> bf16 with an exact integer rounding written here (ml_dtypes rounds float64 through
    float32, i.e. twice, so it is not an oracle for that one).
Prints a summary of what it checked; exits 1 on any mismatch, 77 when numpy/ml_dtypes are absent.
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:  # the set-up command installs them; skip rather than fail without
    print(f"skipping: {e}")
    sys.exit(77)

F8 = ml_dtypes.float8_e4m3fn
E8 = ml_dtypes.float8_e8m0fnu
BF = ml_dtypes.bfloat16
f32 = np.float32

failures = []
summary = []


def report(name, n_checked, bad_idx, show):
    """Records one comparison: bad_idx are the indices that differ, show(i) describes one."""
    bad_idx = list(bad_idx)
    summary.append(f"{name}: {n_checked} checked, {len(bad_idx)} mismatches")
    if bad_idx:
        failures.append(name)
        for i in bad_idx[:8]:
            print(f"  MISMATCH {name}: {show(i)}")


def nan_aware_equal_f32(a, b):
    """Bitwise equality of float32 arrays, except that two NaNs of the same sign are equal."""
    ab, bb = a.view(np.uint32), b.view(np.uint32)
    both_nan = np.isnan(a) & np.isnan(b) & (np.signbit(a) == np.signbit(b))
    return (ab == bb) | both_nan


def boundary_f32():
    """The rounding and overflow boundaries (448, 464, 480, subnormals) plus the edges of each format, as float32."""
    v = [464.0, 480.0, 448.0, 449.0, 0.0, 2.0**-10, 1.5 * 2.0**-10, 2.0**-9, 2.0**-6, 1.0,
         np.inf, np.nan, 1e-4, 1e-8, 1e-4 * 448, 1e-8 * 448, 2.0**-127, 2.0**-126, 2.0**127,
         2.0**128 * (1 - 2.0**-24), float(np.finfo(np.float32).tiny),
         float(np.finfo(np.float32).smallest_subnormal), 3.0 * 2.0**-149]
    x = [f32(a) for a in v]
    for a in (464.0, 480.0, 448.0, 2.0**-6, 2.0**-127, 2.0**-126, 2.0**127, 1e-4 * 448):
        x += [np.nextafter(f32(a), f32(np.inf)), np.nextafter(f32(a), f32(-np.inf))]
    # every finite e4m3fn value, every midpoint between neighbours (subnormal ones included:
    # (k + 0.5) * 2^-9), the midpoint to the virtual next step 480, and one float ulp around each
    fin = np.arange(256, dtype=np.uint8).view(F8).astype(np.float64)
    pos = np.unique(fin[np.isfinite(fin) & (fin >= 0)])
    pos = np.append(pos, 480.0)
    for a, b in zip(pos[:-1], pos[1:]):
        m = f32((a + b) / 2)  # exact: 5 significant bits
        x += [f32(a), m, np.nextafter(m, f32(np.inf)), np.nextafter(m, f32(-np.inf))]
    # every power of two float32 holds (UE8M0 ceil is exact there) and its neighbours
    for k in range(-149, 128):
        p = f32(2.0**k)
        x += [p, np.nextafter(p, f32(np.inf)), np.nextafter(p, f32(-np.inf))]
    x = np.array(x, dtype=np.float32)
    x = np.concatenate([x, -x, np.array([np.float32("-nan")], dtype=np.float32)])
    return x


def random_f32(rng, n):
    """n random float32: raw bit patterns (every exponent, NaN, inf), values around fp8's range,
    uniform values past the overflow edge, and exact bf16 ties with their neighbours."""
    q = n // 5
    bits = rng.integers(0, 2**32, size=q, dtype=np.uint64).astype(np.uint32).view(np.float32)
    scaled = (rng.standard_normal(q) * np.exp2(rng.uniform(-24, 12, q))).astype(np.float32)
    wide = rng.uniform(-600, 600, q).astype(np.float32)
    ties = rng.integers(0, 2**32, size=q, dtype=np.uint64).astype(np.uint32)
    ties = (ties & np.uint32(0xFFFF0000)) | rng.choice(
        np.array([0x8000, 0x7FFF, 0x8001, 0x0000], dtype=np.uint32), size=q)
    rest = n - 4 * q
    small = (rng.uniform(-1, 1, rest) * 2.0**-6).astype(np.float32)  # fp8 subnormal range
    return np.concatenate([bits, scaled, wide, ties.view(np.float32), small])


def ue8m0_ceil_py(v):
    """ceil(log2(v)) + 127 from math.frexp; <= 2^-127 gives 0, NaN/inf/> 2^127 give 0xFF."""
    if math.isnan(v) or math.isinf(v):
        return 0xFF
    if v <= 0:
        return 0
    m, e = math.frexp(v)  # v = m * 2^e, m in [0.5, 1)
    c = e - 1 if m == 0.5 else e
    b = c + 127
    return 0 if b <= 0 else (0xFF if b > 254 else b)


def bf16_from_f64_exact(v):
    """float64 -> bf16 bits rounded once, to nearest even, with Python integers."""
    if math.isnan(v):
        return 0xFFC0 if math.copysign(1.0, v) < 0 else 0x7FC0
    sign = 0x8000 if math.copysign(1.0, v) < 0 else 0
    a = abs(v)
    if math.isinf(a) or a == 0:
        return sign | (0x7F80 if a else 0)
    m, e = math.frexp(a)        # a = m * 2^e, 2^(e-1) <= a < 2^e
    n_int = int(m * 2**53)      # exact: a = n_int * 2^(e-53)
    unit = max(e - 1 - 7, -133)  # bf16 step at this magnitude (subnormal step 2^-133)
    shift = unit - (e - 53)
    if shift <= 0:
        q = n_int << -shift
    else:
        q, rem = divmod(n_int, 1 << shift)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and q & 1):
            q += 1
    val = math.ldexp(q, unit)
    if val >= 2.0**128:
        return sign | 0x7F80
    return sign | int(np.array([val], dtype=np.float32).view(np.uint32)[0] >> 16)


def random_f64(rng, n):
    """Doubles close to bf16 rounding midpoints (where rounding twice goes wrong), raw doubles in
    bf16's range, and bf16 subnormal / overflow edges."""
    q = n // 2
    b = rng.integers(0, 0x7F80, size=q).astype(np.uint32) << 16
    mid = (b | np.uint32(0x8000)).view(np.float32).astype(np.float64)
    rel = rng.choice([-1.0, 1.0], q) * np.exp2(-rng.integers(25, 53, q).astype(np.float64))
    near = mid * (1.0 + rel)
    raw = (rng.standard_normal(n - q) * np.exp2(rng.uniform(-140, 128, n - q)))
    edges = [2.0**-133, 2.0**-134, 1.5 * 2.0**-134, 2.0**-126, 3.3895313892515355e38,
             3.3961775292304135e38, 3.3961775292304135e38 * (1 + 2.0**-40), 1 + 2.0**-8 + 2.0**-40,
             1 + 2.0**-8, 0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 2.0**-1022]
    x = np.concatenate([near, raw, np.array(edges)])
    return np.concatenate([x, -x])


def main():
    helper = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.environ.get("ATTEST_BINARY_DIR", "build"), "tests", "numerics_dump")
    if not os.path.exists(helper):
        print(f"numerics_dump helper not found at {helper}")
        return 1
    rng = np.random.default_rng(0x5EED2)

    # ml_dtypes itself: float32 -> e4m3fn must round directly from float32. 1.0625 + 2^-23 is
    # just above the midpoint of 1.0 and 1.125; a detour through a narrower type would tie to 1.0.
    probe = np.array([1.0625 + 2.0**-23], dtype=np.float32).astype(F8).view(np.uint8)[0]
    assert probe == 0x39, f"ml_dtypes float32->e4m3fn does not round directly (got {probe:#x})"
    d_probe = np.array([1 + 2.0**-8 + 2.0**-40]).astype(BF).view(np.uint16)[0]
    summary.append("ml_dtypes float32->float8_e4m3fn rounds directly from float32: yes "
                   "(1.0625+2^-23 -> 0x39)")
    summary.append(f"ml_dtypes float64->bfloat16 of 1+2^-8+2^-40 gives {d_probe:#06x} "
                   f"(exact once-rounded: 0x3f81): "
                   f"{'rounds via float32, not used as oracle' if d_probe != 0x3F81 else 'direct'}")

    xb = boundary_f32()
    xr = random_f32(rng, 1_000_000)
    x = np.concatenate([xb, xr])
    d = random_f64(rng, 200_000)

    with tempfile.TemporaryDirectory() as tmp:
        x.tofile(os.path.join(tmp, "in.f32"))
        d.tofile(os.path.join(tmp, "in.f64"))
        run = subprocess.run([helper, tmp, os.path.join(tmp, "in.f32"), os.path.join(tmp, "in.f64")],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout, run.stderr)
            return 1
        speed = run.stdout.strip().replace("\n", "; ")

        def load(name, dtype):
            return np.fromfile(os.path.join(tmp, name), dtype=dtype)

        # --- decodes: every bit pattern -------------------------------------------------------
        all8 = np.arange(256, dtype=np.uint8)
        got = load("fp8_decode.f32", np.float32)
        ref = all8.view(F8).astype(np.float32)
        ok = nan_aware_equal_f32(got, ref)
        report("e4m3fn decode (all 256)", 256, np.nonzero(~ok)[0],
               lambda i: f"byte {i:#04x}: attest {got[i]!r} ml_dtypes {ref[i]!r}")

        got = load("ue8m0_decode.f32", np.float32)
        ref = all8.view(E8).astype(np.float32)
        ok = nan_aware_equal_f32(got, ref)
        report("ue8m0 decode to float32 (all 256)", 256, np.nonzero(~ok)[0],
               lambda i: f"byte {i:#04x}: attest {got[i]!r} ml_dtypes {ref[i]!r}")
        got64 = load("ue8m0_decode.f64", np.float64)
        ref64 = all8.view(E8).astype(np.float64)
        ok = (got64 == ref64) | (np.isnan(got64) & np.isnan(ref64))
        report("ue8m0 decode to float64 (all 256)", 256, np.nonzero(~ok)[0],
               lambda i: f"byte {i:#04x}: attest {got64[i]!r} ml_dtypes {ref64[i]!r}")

        got = load("bf16_decode.f32", np.float32)
        ref = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(BF).astype(np.float32)
        ok = nan_aware_equal_f32(got, ref)
        report("bf16 decode (all 65536)", 65536, np.nonzero(~ok)[0],
               lambda i: f"bits {i:#06x}: attest {got[i]!r} ml_dtypes {ref[i]!r}")

        # --- float32 encodes -------------------------------------------------------------------
        n = x.size
        nb = xb.size

        def show8(got, ref):
            return lambda i: (f"x={x[i]!r} ({x.view(np.uint32)[i]:#010x}): attest {got[i]:#04x} "
                              f"oracle {ref[i]:#04x}")

        with np.errstate(invalid="ignore", over="ignore"):
            got = load("fp8_nonsat.u8", np.uint8)
            ref = x.astype(F8).view(np.uint8)
            report(f"e4m3fn encode NONSAT vs ml_dtypes ({nb} boundary + {n - nb} random)", n,
                   np.nonzero(got != ref)[0], show8(got, ref))

            got = load("fp8_sat.u8", np.uint8)
            ref = np.clip(x, f32(-448), f32(448)).astype(F8).view(np.uint8)  # NaN passes through
            report("e4m3fn encode SATFINITE vs clip(+-448) then ml_dtypes", n,
                   np.nonzero(got != ref)[0], show8(got, ref))

            got16 = load("bf16.u16", np.uint16)
            ref16 = x.astype(BF).view(np.uint16)
            report("bf16 encode vs ml_dtypes", n, np.nonzero(got16 != ref16)[0],
                   lambda i: f"x={x[i]!r}: attest {got16[i]:#06x} ml_dtypes {ref16[i]:#06x}")

            got = load("ue8m0_ceil.u8", np.uint8)
            ref = np.array([ue8m0_ceil_py(float(v)) for v in x], dtype=np.uint8)
            report("ue8m0 encode_ceil vs ceil(log2) by math.frexp", n,
                   np.nonzero(got != ref)[0], show8(got, ref))
            # the frexp rule itself agrees with ml_dtypes on exact powers of two
            pw = np.isfinite(x) & (x >= f32(2.0**-127)) & (x <= f32(2.0**127)) & \
                ((x.view(np.uint32) & np.uint32(0x7FFFFF)) == 0)
            ref_md = x[pw].astype(E8).view(np.uint8)
            report("  frexp rule vs ml_dtypes on exact powers of two", int(pw.sum()),
                   np.nonzero(ref[pw] != ref_md)[0], lambda i: f"power {x[pw][i]!r}")

            # writers: the input is the tile's amax; divisions in float32 like torch's
            s = x / f32(448)
            s = np.where(s < f32(1e-4), f32(1e-4), s)  # torch.clamp_min keeps NaN
            ref = np.array([ue8m0_ceil_py(float(v)) for v in s], dtype=np.uint8)
            got = load("ue8m0_flashmla.u8", np.uint8)
            report("ue8m0 writer flashmla: ceil(max(amax/448, 1e-4))", n,
                   np.nonzero(got != ref)[0], show8(got, ref))

            m = np.where(x < f32(1e-8), f32(1e-8), x)
            ref = np.array([ue8m0_ceil_py(float(v)) for v in m / f32(448)], dtype=np.uint8)
            got = load("ue8m0_sglang.u8", np.uint8)
            report("ue8m0 writer sglang: ceil(max(amax, 1e-8)/448)", n,
                   np.nonzero(got != ref)[0], show8(got, ref))

            sf = (np.abs(x) / f32(448)).view(np.uint32)  # DeepGEMM ceil_to_ue8m0, literally
            e = ((sf >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64) + \
                ((sf & np.uint32(0x7FFFFF)) != 0).astype(np.int64)
            ref = np.clip(e, 1, 254).astype(np.uint8)
            got = load("ue8m0_deepgemm.u8", np.uint8)
            report("ue8m0 writer deepgemm: exponent+(mantissa!=0) clamped [1,254]", n,
                   np.nonzero(got != ref)[0], show8(got, ref))

        # --- float64 -> bf16, rounded once -------------------------------------------------------
        got16 = load("bf16_f64.u16", np.uint16)
        ref16 = np.array([bf16_from_f64_exact(float(v)) for v in d], dtype=np.uint16)
        report("bf16 encode_f64 vs exact integer rounding", d.size,
               np.nonzero(got16 != ref16)[0],
               lambda i: f"x={d[i]!r}: attest {got16[i]:#06x} exact {ref16[i]:#06x}")
        with np.errstate(invalid="ignore", over="ignore"):
            md = d.astype(BF).view(np.uint16)
        summary.append(f"  (ml_dtypes float64->bfloat16 differs from the exact rounding on "
                       f"{int((md != ref16).sum())} of these: its double rounding)")

    print("check_numerics summary:")
    for line in summary:
        print("  " + line)
    print("  helper timing: " + speed)
    if failures:
        print(f"FAILED: {len(failures)} comparisons: {', '.join(failures)}")
        return 1
    print("all numerics checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
