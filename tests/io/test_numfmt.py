"""The compiled prediction format (``streamlearn.io.numfmt``) against the reference, Python's own
formatting (``streamlearn.io.writers.format_predictions``): the same bytes for every value, and the
values the kernel leaves to the reference are those its module names."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from streamlearn.io.numfmt import LIMIT, format_kernel, format_lines
from streamlearn.io.writers import format_predictions


def reference(values) -> bytes:
    return "".join(t + "\n" for t in format_predictions(np.asarray(values, np.float64))).encode()


def check(values) -> bytes:
    got = format_lines(np.asarray(values, np.float64))
    assert got == reference(values)
    return got


def left(v: float) -> bool:
    """The kernel leaves v to the reference."""
    values = np.array([v])
    out = np.empty(64, np.uint8)
    return format_kernel(values, 0, out, 0) == (0, 0)


KNOWN = [0.0, -0.0, 1.0, -1.0, 3.0, 0.5, -0.5, 0.509763, 1e-9, -1e-9, 0.0000005, 0.0000015, 0.0000025,
         123456.123456, -2147483647.0, 2147483647.5, 0.1, 0.2, 0.3, 1 / 3, -2 / 3, 1e-7, 5e-7, 4.9999995,
         0.9999995, 0.99999949999, 12.0000005]


def test_known_values():
    for v in KNOWN:
        check([v])
        x = abs(v) * 1e6
        # left to the reference: only values whose millionths are within an ulp of a tie
        assert left(v) == (v != math.floor(v) and abs(x - math.floor(x) - 0.5) <= x * 2.0 ** -52)
    assert check([-0.0, 1e-9, -1e-9, 0.5, 0.509763]) == b"0\n0.000000\n0\n0.500000\n0.509763\n"


def test_left_to_the_reference():
    for v in (math.nan, math.inf, -math.inf, LIMIT, -LIMIT, 1e18, 0.0000005):
        assert left(v)
        assert check([0.25, v, -1.5, v, v]).startswith(b"0.250000\n")
    assert not left(0.25) and not left(-3.0)
    assert format_lines(np.zeros(0)) == b""


@settings(max_examples=400, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=40))
def test_any_floats_equal_the_reference(values):
    check(values)


@settings(max_examples=400, deadline=None)
@given(st.integers(-10 ** 12, 10 ** 12), st.integers(-3, 3))
def test_near_ties_equal_the_reference(k, ulps):
    """Values a few units in the last place from k + 0.5 millionths: the hardest to round."""
    v = (k + 0.5) / 1e6
    for _ in range(abs(ulps)):
        v = np.nextafter(v, math.inf if ulps > 0 else -math.inf)
    check([float(v)])


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e3, 1e6])
def test_random_predictions(scale):
    rng = np.random.default_rng(7)
    values = rng.normal(0, scale, 20000)
    values[::7] = np.round(values[::7])
    check(values)
