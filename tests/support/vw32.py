"""VW's float32 arithmetic for the slow references of the learners that compute as VW does (ftrl,
coin): C's ``expf``, which VW's float32 logistic loss calls (vw-spec-2 §2g)."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

F = np.float32
_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.expf.restype = ctypes.c_float
_libm.expf.argtypes = [ctypes.c_float]


def expf(x):
    """C's expf of x, as a float32."""
    return F(_libm.expf(float(x)))


def dloss(loss, p, y, tau=0.5):
    """VW's first_derivative in float32 (loss_functions.cc)."""
    p, y = F(p), F(y)
    if loss == "squared":
        return F(2.0) * (p - y)
    if loss == "logistic":
        return -y / (F(1.0) + expf(y * p))
    if loss == "hinge":
        return -y if y * p < F(1.0) else F(0.0)
    e = y - p
    return F(0.0) if e == 0 else (-F(tau) if e > 0 else F(1.0) - F(tau))
