"""VW's number format for prediction lines (vw-spec.md §1e): an integral value without
decimals ("0", "-1", "3"), any other in fixed point with 6 decimals ("0.509763"); a negative value
that rounds to zero prints "0" (no "-0.000000").

``format_lines(values)`` writes one line per value into a byte buffer, compiled, with the same characters
Python's ``str(int(v))`` and ``f"{v:.6f}"`` give: ``format_predictions``, the plain Python of the format
(the reference, and the writer of tagged lines).

The 6 decimals are the exact value rounded to the nearest multiple of 1e-6, ties to even. The kernel
computes x = |v| * 1e6 in floating point, whose error is at most half a unit in its last place; unless
x's fraction lies within one unit in the last place of one half, rounding the computed x gives the
same integer as rounding the exact product. Values it cannot decide that way (that window, NaN,
infinities, |v| >= 2^31) are left to Python: the kernel stops at each, the reference writes it, and the
kernel goes on after it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


def format_predictions(values: np.ndarray) -> list[str]:
    """Predictions in VW's format: integral values without decimals, others with 6 ("nan", "inf")."""
    out = []
    append = out.append
    floor = math.floor
    for v in values.tolist():
        if -1e18 < v < 1e18 and v == floor(v):
            append(str(int(v)))
        else:
            text = f"{v:.6f}"
            append("0" if text == "-0.000000" else text)     # no -0 (issue 29): a tiny negative prints 0
    return out


#: |v| below this takes the compiled path (x = |v| * 1e6 < 2^52: its fraction is representable)
LIMIT = float(2 ** 31)
#: one unit in the last place of x is at most this times x (2^-52)
ULP = 2.0 ** -52


@njit(cache=True, nogil=True, inline="always")
def _digits(out, pos, q):
    """Write the decimal digits of the non-negative integer q at out[pos:]; the new position."""
    if q == 0:
        out[pos] = 48
        return pos + 1
    start = pos
    while q > 0:
        out[pos] = 48 + q % 10
        q //= 10
        pos += 1
    i, j = start, pos - 1
    while i < j:
        out[i], out[j] = out[j], out[i]
        i += 1
        j -= 1
    return pos


@njit(cache=True, nogil=True)
def format_kernel(values, start, out, pos):
    """Lines for values[start:] into ``out`` from ``pos`` (28 bytes a value are enough); returns (the new
    position, the index of the first value that needs the reference, or the number of values)."""
    for i in range(start, values.shape[0]):
        v = values[i]
        if not (-LIMIT < v < LIMIT):          # NaN, infinities, large values
            return pos, i
        fl = np.floor(v)
        if v == fl:                            # integral: no decimals ("-0.0" prints "0")
            q = np.int64(fl)
            if q < 0:
                out[pos] = 45
                pos += 1
                q = -q
            pos = _digits(out, pos, q)
        else:
            a = -v if v < 0.0 else v
            x = a * 1e6
            r = np.floor(x)
            f = x - r                          # exact: x < 2^52
            if abs(f - 0.5) <= x * ULP:
                return pos, i
            q = np.int64(r) + (1 if f > 0.5 else 0)
            if q == 0 and v < 0.0:             # no -0 (issue 29): a tiny negative prints 0
                out[pos] = 48
                out[pos + 1] = 10
                pos += 2
                continue
            if v < 0.0:
                out[pos] = 45
                pos += 1
            pos = _digits(out, pos, q // 1000000)
            out[pos] = 46
            pos += 1
            frac = q % 1000000
            d = 100000
            while d > 0:
                out[pos] = 48 + (frac // d) % 10
                pos += 1
                d //= 10
        out[pos] = 10
        pos += 1
    return pos, values.shape[0]


def format_lines(values: np.ndarray) -> bytes:
    """The values' prediction lines (each ending in a newline) as bytes: the compiled format, and the
    reference (``format_predictions``) for each value the kernel leaves to it."""
    values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    n = values.shape[0]
    out = np.empty(28 * n + 1, np.uint8)
    parts = []
    pos, i = format_kernel(values, 0, out, 0)
    while i < n:            # a value for the reference, then the kernel again
        parts.append(out[:pos].tobytes())
        parts.append(format_predictions(values[i:i + 1])[0].encode() + b"\n")
        pos, i = format_kernel(values, i + 1, out, 0)
    parts.append(out[:pos].tobytes())
    return b"".join(parts) if len(parts) > 1 else parts[0]
