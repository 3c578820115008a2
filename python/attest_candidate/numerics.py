"""Number formats of the attest cache layouts, for candidates written with numpy.

The tables are computed from the format definitions (OCP FP8 E4M3FN, UE8M0, bfloat16), not
taken from attest, so a candidate using them stays independent of the harness it is judged by.
"""
import numpy as np


def _e4m3fn_table():
    t = np.empty(256, dtype=np.float32)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e = (b >> 3) & 0xF
        m = b & 0x7
        if e == 0xF and m == 0x7:
            t[b] = np.nan  # E4M3FN has no infinities: S.1111.111 is NaN
        elif e == 0:
            t[b] = sign * (m / 8.0) * 2.0 ** -6
        else:
            t[b] = sign * (1.0 + m / 8.0) * 2.0 ** (e - 7)
    return t


#: float32 value of every E4M3FN byte (index the table with a uint8 array).
E4M3FN = _e4m3fn_table()

#: float32 value of every UE8M0 byte: 2^(byte - 127); 255 is NaN.
UE8M0 = np.array([np.float32(2.0) ** (b - 127) if b < 255 else np.nan for b in range(256)],
                 dtype=np.float32)


def bf16_to_f32(bits):
    """uint16 bf16 bit patterns -> float32 (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """float32 -> uint16 bf16 bit patterns, round to nearest even; NaN -> quiet NaN."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, ((u >> 16) & np.uint32(0x8000)).astype(np.uint16) | np.uint16(0x7FC0),
                    rounded).astype(np.uint16)
