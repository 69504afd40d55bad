"""Loss functions: value and derivative in the prediction, by integer code (vw-spec.md §1c).

Labels reach these functions in *loss space*: for logistic and hinge the caller has already mapped
any label > 0 to +1 and any label <= 0 to -1 (``loss_label``); squared and quantile use labels as
they are. ``p`` is the clamped prediction. The update of VW's plain (``--sgd``, non-invariant) learner
is ``-dloss(p, y) * scale``, which is what ``get_unsafe_update`` computes in VW's loss_functions.cc.
``py_loss``/``py_dloss`` are thin wrappers so tests can tabulate the compiled functions.
"""

import math

import numpy as np
from numba import njit

SQUARED = 0
LOGISTIC = 1
HINGE = 2
QUANTILE = 3
LOSSES = {"squared": SQUARED, "logistic": LOGISTIC, "hinge": HINGE, "quantile": QUANTILE}
LOGISTIC_BOUND = 50.0   # logistic predictions are clamped to [-50, 50], as in VW


@njit(cache=True, nogil=True, inline="always")
def loss_label(code, y):
    """Label in loss space: -1/+1 for logistic and hinge (y > 0 is positive), y otherwise."""
    if code == LOGISTIC or code == HINGE:
        return 1.0 if y > 0.0 else -1.0
    return y


@njit(cache=True, nogil=True)
def loss_value(code, p, y, tau, lo, hi):
    """Loss of prediction p for label y. Squared loss is extended linearly outside [lo, hi] (VW)."""
    if code == SQUARED:
        if lo <= p <= hi:
            return (p - y) * (p - y)
        if p < lo:
            if y == lo:
                return 0.0
            return (y - lo) * (y - lo) + 2.0 * (y - lo) * (lo - p)
        if y == hi:
            return 0.0
        return (hi - y) * (hi - y) + 2.0 * (hi - y) * (p - hi)
    if code == LOGISTIC:
        z = -y * p
        if z > 30.0:
            return z + math.log1p(math.exp(-z))
        return math.log1p(math.exp(z))
    if code == HINGE:
        e = 1.0 - y * p
        return e if e > 0.0 else 0.0
    # quantile
    e = y - p
    if e > 0.0:
        return tau * e
    return -(1.0 - tau) * e


@njit(cache=True, nogil=True)
def loss_dloss(code, p, y, tau):
    """Derivative of the loss in p (the subgradient VW uses at kinks: 0 where VW does not update)."""
    if code == SQUARED:
        return 2.0 * (p - y)
    if code == LOGISTIC:
        return -y / (1.0 + math.exp(y * p))
    if code == HINGE:
        return -y if y * p < 1.0 else 0.0
    e = y - p
    if e == 0.0:
        return 0.0
    return -tau if e > 0.0 else 1.0 - tau


def py_loss(name: str, p: float, y: float, tau: float = 0.5, lo: float = -np.inf, hi: float = np.inf) -> float:
    code = LOSSES[name]
    return float(loss_value(code, float(p), float(loss_label(code, float(y))), tau, lo, hi))


def py_dloss(name: str, p: float, y: float, tau: float = 0.5) -> float:
    code = LOSSES[name]
    return float(loss_dloss(code, float(p), float(loss_label(code, float(y))), tau))
