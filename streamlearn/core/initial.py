"""VW's random initial weights (``--random_weights``, ``--normal_weights``,
``--truncated_normal_weights``; VW's initialize_regressor and its merand48 generator), computed exactly
as VW computes them in float32, one value per hashed weight.

VW's generator is a 64-bit linear congruential one: ``s <- A s + C (mod 2^64)``, and the draw is the 23
bits ``(s >> 25) & 0x7FFFFF`` as the mantissa of a float in [1, 2), minus 1: a float32 in [0, 1).

* ``--random_weights``: one generator seeded with ``--random_seed``, drawn once per weight in index order;
  the weight is draw - 0.5.
* ``--normal_weights``: each weight's own generator, seeded with the weight's index in VW's weight array
  (its row shifted left by the stride VW's update rule uses), gives a polar Box-Muller normal draw (pairs
  until 0 < x1^2 + x2^2 < 1, then x1 sqrt(-2 log r / r)); ``--random_seed`` plays no part.
* ``--truncated_normal_weights``: those normal weights, then every weight beyond twice their standard
  deviation (population, over all weights) is replaced by its IEEE remainder by that bound.
"""

import numpy as np
from numba import njit

#: merand48's multiplier and increment (the increment is 2^31 - 1)
LCG_A = 0xEECE66D5DEECE66D
LCG_C = 2147483647
_MASK23 = 0x7FFFFF
_SCALE23 = 1.0 / 8388608.0      # 2^-23: a draw is its 23 mantissa bits times this, exactly


@njit(cache=True, nogil=True, inline="always")
def _advance(s):
    return np.uint64(LCG_A) * s + np.uint64(LCG_C)


@njit(cache=True, nogil=True, inline="always")
def _draw(s):
    """The float32 in [0, 1) of generator state ``s`` (already advanced)."""
    return np.float32(np.float64((s >> np.uint64(25)) & np.uint64(_MASK23)) * _SCALE23)


@njit(cache=True, nogil=True)
def uniform_weights(out, seed):
    """``out[i]`` = the i-th draw of the generator seeded with ``seed``, minus 0.5 (float32 values)."""
    s = np.uint64(seed)
    half = np.float32(0.5)
    for i in range(out.shape[0]):
        s = _advance(s)
        out[i] = np.float32(_draw(s) - half)


@njit(cache=True, nogil=True, inline="always")
def _polar_normal(s):
    one = np.float32(1.0)
    two = np.float32(2.0)
    while True:
        s = _advance(s)
        x1 = two * _draw(s) - one
        s = _advance(s)
        x2 = two * _draw(s) - one
        r = np.float32(x1 * x1 + x2 * x2)
        if r < one and r != np.float32(0.0):
            break
    m = np.float32(np.sqrt(np.float32(np.float32(-2.0) * np.log(r)) / r))
    return np.float32(x1 * m)


@njit(cache=True, nogil=True)
def normal_weights(out, shift):
    """``out[i]`` = the polar Box-Muller draw of the generator seeded with ``i << shift``."""
    for i in range(out.shape[0]):
        out[i] = _polar_normal(np.uint64(i) << np.uint64(shift))


@njit(cache=True, nogil=True)
def truncate_weights(out):
    """Every value beyond twice the population standard deviation of ``out`` becomes its IEEE
    remainder by that bound (rounded to float32), in place."""
    n = out.shape[0]
    total = 0.0
    for i in range(n):
        total += out[i]
    mean = total / n
    sq = 0.0
    for i in range(n):
        d = out[i] - mean
        sq += d * d
    bound = 2.0 * np.sqrt(sq / n)
    for i in range(n):
        v = out[i]
        if abs(v) > bound:
            q = np.rint(v / bound)          # nearest integer, ties to even: the IEEE remainder's quotient
            out[i] = np.float32(v - q * bound)


def vw_stride_shift(adaptive: bool, normalized: bool, train: bool) -> int:
    """The stride shift of VW's weight array for its default learner (gd.cc): the weight, then G
    (adaptive), N (normalized) and a spare slot when either is on -- 4 or 3 slots, else 1 -- and the
    shift is the bit length of that count less one (VW's ceil_log_2(stride - 1)): 2, 2 or 0. VW
    predicting without learning keeps neither G nor N."""
    if not train:
        return 0
    slots = 1 + int(adaptive) + int(normalized) + (1 if adaptive or normalized else 0)
    return (slots - 1).bit_length()


def initial_weights(kind: str, n: int, seed: int, shift: int) -> np.ndarray:
    """VW's initial weights of an array of ``n`` weights: ``kind`` is "random", "normal" or
    "truncated_normal"."""
    out = np.zeros(n)
    if kind == "random":
        uniform_weights(out, seed)
    else:
        normal_weights(out, shift)
        if kind == "truncated_normal":
            truncate_weights(out)
    return out
