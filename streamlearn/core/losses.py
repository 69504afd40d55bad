"""Loss functions: value and derivative in the prediction, by integer code (vw-spec.md §1c).

Labels reach these functions as they are, as in VW (loss_functions.cc): hinge takes any real label
(max(0, 1 - y p); a label 0 never updates); logistic takes a label y as the mixture of its two
classes with weight s = (y + 1) / 2 on +1 and 1 - s on -1 (VW's logistic with its default range
[-1, 1]: a 0/1 label 0 is half of each), exactly the usual logistic loss for y = -1 or 1. ``p`` is the clamped prediction. The update of VW's plain (``--sgd``, non-invariant) learner
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
POISSON = 4             # VW's poisson: the deviance of a Poisson count with mean exp(p)
CLASSIC = 5             # VW's classic: squared loss with the plain gradient step even when invariant
EXPECTILE = 6           # VW's expectile: squared loss weighted q below the label's side, 1 - q above (tau = q)
LOSSES = {"squared": SQUARED, "logistic": LOGISTIC, "hinge": HINGE, "quantile": QUANTILE, "poisson": POISSON,
          "classic": CLASSIC, "expectile": EXPECTILE}
LOGISTIC_BOUND = 50.0   # logistic predictions are clamped to [-50, 50], as in VW
POISSON_MAX_EXP = 44.0  # VW clamps the poisson loss's p to [-44, 44], so that exp(p)^2 stays a float


@njit(cache=True, nogil=True, inline="always")
def poisson_clamp(p):
    if p > POISSON_MAX_EXP:
        return POISSON_MAX_EXP
    if p < -POISSON_MAX_EXP:
        return -POISSON_MAX_EXP
    return p


@njit(cache=True, nogil=True, inline="always")
def logistic_sub(p, y):
    """log(1 + e^(-y p)) for y = -1 or 1."""
    z = -y * p
    if z > 30.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@njit(cache=True, nogil=True, inline="always")
def logistic_mix(y):
    """VW's weight of the class +1 in a logistic label y: s = (y + 1) / 2 (y's place in [-1, 1])."""
    return 0.5 * (y + 1.0)


def vw_label_warning(loss: str, y: float) -> str | None:
    """VW's warning for a label its loss does not expect (loss_functions.cc), None when it expects it:
    hinge warns for any label but -1 and 1, logistic for one outside [-1, 1]."""
    shown = str(np.float32(y)).removesuffix(".0")
    if loss == "hinge" and y != -1.0 and y != 1.0:
        return f"The label {shown} is not -1 or 1 or in [0,1] as the hinge loss function expects."
    if loss == "logistic" and not -1.0 <= y <= 1.0:
        return f"The label {shown} is not in the range [-1,1] as the logistic loss function expects."
    return None


@njit(cache=True, nogil=True, inline="always")
def expectile_weight(p, y, q):
    """The expectile loss's factor (VW's expectileloss): q where the prediction is above the label
    (y - p < 0), 1 - q elsewhere."""
    return q if y - p < 0.0 else 1.0 - q


@njit(cache=True, nogil=True, inline="always")
def bounded_squared(p, y, lo, hi):
    """(p - y)^2, extended linearly outside [lo, hi] (VW's squared loss)."""
    if lo <= p <= hi:
        return (p - y) * (p - y)
    if p < lo:
        if y == lo:
            return 0.0
        return (y - lo) * (y - lo) + 2.0 * (y - lo) * (lo - p)
    if y == hi:
        return 0.0
    return (hi - y) * (hi - y) + 2.0 * (hi - y) * (p - hi)


@njit(cache=True, nogil=True)
def loss_value(code, p, y, tau, lo, hi):
    """Loss of prediction p for label y. Squared loss is extended linearly outside [lo, hi] (VW);
    expectile is that squared loss times ``expectile_weight`` (tau = q)."""
    if code == SQUARED:
        return bounded_squared(p, y, lo, hi)
    if code == EXPECTILE:
        return bounded_squared(p, y, lo, hi) * expectile_weight(p, y, tau)
    if code == LOGISTIC:
        if y == 1.0 or y == -1.0:
            return logistic_sub(p, y)
        s = logistic_mix(y)
        return s * logistic_sub(p, 1.0) + (1.0 - s) * logistic_sub(p, -1.0)
    if code == HINGE:
        e = 1.0 - y * p
        return e if e > 0.0 else 0.0
    if code == POISSON:     # 2 (y (log y - p) - (y - e^p)), VW's deviance (log(y + 1e-6): y may be 0)
        c = poisson_clamp(p)
        if y + 1e-6 <= 0.0:
            return math.nan
        return 2.0 * (y * (math.log(y + 1e-6) - c) - (y - math.exp(c)))
    if code == CLASSIC:
        return (p - y) * (p - y)
    # quantile
    e = y - p
    if e > 0.0:
        return tau * e
    return -(1.0 - tau) * e


@njit(cache=True, nogil=True)
def loss_dloss(code, p, y, tau):
    """Derivative of the loss in p (the subgradient VW uses at kinks: 0 where VW does not update)."""
    if code == SQUARED or code == CLASSIC:
        return 2.0 * (p - y)
    if code == EXPECTILE:
        return 2.0 * (p - y) * expectile_weight(p, y, tau)
    if code == POISSON:
        return math.exp(poisson_clamp(p)) - y
    if code == LOGISTIC:
        if y == 1.0 or y == -1.0:
            return -y / (1.0 + math.exp(y * p))
        s = logistic_mix(y)
        return -s / (1.0 + math.exp(p)) + (1.0 - s) / (1.0 + math.exp(-p))
    if code == HINGE:
        return -y if y * p < 1.0 else 0.0
    e = y - p
    if e == 0.0:
        return 0.0
    return -tau if e > 0.0 else 1.0 - tau


@njit(cache=True, nogil=True)
def loss_dloss_f32(code, p, y, tau):
    """``loss_dloss`` in float32 arithmetic, as VW's loss_functions.cc computes first_derivative
    (expf for the logistic loss; vw-spec-2.md §2g): for the learners that reproduce VW bit for bit
    (ftrl). Arguments are rounded to float32; the result is a float32."""
    p32 = np.float32(p)
    y32 = np.float32(y)
    if code == SQUARED or code == CLASSIC:
        return np.float32(2.0) * (p32 - y32)
    if code == EXPECTILE:
        return np.float32(2.0) * (p32 - y32) * np.float32(expectile_weight(p32, y32, tau))
    if code == POISSON:
        return np.exp(np.float32(poisson_clamp(p32))) - y32
    if code == LOGISTIC:
        if y32 == np.float32(1.0) or y32 == np.float32(-1.0):
            return -y32 / (np.float32(1.0) + np.exp(y32 * p32))
        s32 = (y32 + np.float32(1.0)) / np.float32(2.0)
        one = np.float32(1.0)
        return s32 * (-one / (one + np.exp(p32))) + (one - s32) * (one / (one + np.exp(-p32)))
    if code == HINGE:
        return -y32 if y32 * p32 < np.float32(1.0) else np.float32(0.0)
    e = y32 - p32
    if e == np.float32(0.0):
        return np.float32(0.0)
    t32 = np.float32(tau)
    return -t32 if e > np.float32(0.0) else np.float32(1.0) - t32


#: y * p beyond which VW's float32 logistic loss log(1 + e^-yp) is exactly 0 (e^-yp <= 2^-24)
LOGISTIC_ZERO_MARGIN = 24.0 * math.log(2.0)


@njit(cache=True, nogil=True)
def loss_positive(code, p, y, tau, lo, hi):
    """Whether VW updates on this example: its loss is > 0. VW evaluates the loss in float32, where
    the logistic loss is exactly 0 once y p >= 24 ln 2; that decides whether the per-feature
    statistics (G, N, the normalizer) move, so it is reproduced here. A logistic label other than
    -1 and 1 mixes the two classes' losses (one of them at least log 2 inside [-1, 1]; outside, the
    mixture may be 0 or negative, and VW makes no update then)."""
    if code == LOGISTIC:
        if y == 1.0 or y == -1.0:
            return y * p < LOGISTIC_ZERO_MARGIN
        return loss_value(code, p, y, tau, lo, hi) > 0.0
    return loss_value(code, p, y, tau, lo, hi) > 0.0


@njit(cache=True, nogil=True)
def lambert_w_exp_minus(x):
    """W(e^x) - x, W the Lambert W function (W(z) e^W(z) = z), as VW approximates it for the
    logistic invariant update: one step of Fritsch, Shafer & Crowley's iteration from a piecewise
    initial guess (absolute error below 1e-4). Reproduced rather than computed exactly so that the
    updates match VW's."""
    if x >= 1.0:
        w = 0.86 * x + 0.01
        r = x - math.log(w) - w
    else:
        w = math.exp(0.8 * x - 0.65)
        r = 0.2 * x + 0.65 - w
    t = 1.0 + w
    u = 2.0 * t * (t + 2.0 * r / 3.0)
    return w * (1.0 + r / t * (u - r) / (u - 2.0 * r)) - x


@njit(cache=True, nogil=True, inline="always")
def logistic_update(p, y, scale, ppu, small):
    """``loss_update`` of the logistic loss for y = -1 or 1. Where that class's loss is 0 in float32
    (y p >= 24 ln 2: only the other class of a mixed label updates there), the first-order form: the
    closed form cancels catastrophically at such margins (its value is rounding noise, VW's too)."""
    d = math.exp(y * p)
    if small or y * p >= LOGISTIC_ZERO_MARGIN:
        return y * scale / (1.0 + d)
    x = scale * ppu + y * p + d
    return -(y * lambert_w_exp_minus(x) + p) / ppu


@njit(cache=True, nogil=True)
def loss_update(code, p, y, tau, scale, ppu):
    """Importance-invariant update u (Karampatziakis & Langford 2011): the closed-form amount by
    which to move along x so that the step equals infinitely many infinitesimal gradient steps of
    total size ``scale`` (= eta * h [* t^-power_t]); ``ppu`` = sum_i x_i^2 r_i (times the global
    normalizer) is how much the prediction moves per unit of u. VW's ``get_update`` per loss
    (loss_functions.cc); with scale * ppu < 1e-6 the first-order expansion is used, as VW does."""
    if code == EXPECTILE:       # squared's update with the scale times the expectile factor
        scale = scale * expectile_weight(p, y, tau)
        code = SQUARED
    small = scale * ppu < 1e-6
    if code == CLASSIC:
        return 2.0 * (y - p) * scale
    if code == POISSON:
        c = poisson_clamp(p)
        e = math.exp(c)
        if y > 0.0:
            arg = y * scale * ppu
            if arg > POISSON_MAX_EXP:      # the limit, without expm1's overflow (VW)
                return -(c - math.log(y)) / ppu
            return y * scale - math.log1p(e * math.expm1(arg) / y) / ppu
        inner = e * scale * ppu
        if not math.isfinite(inner):
            return -(c + math.log(scale * ppu)) / ppu
        return -math.log1p(inner) / ppu
    if code == SQUARED:
        if small:
            return 2.0 * (y - p) * scale
        return (y - p) * (1.0 - math.exp(-2.0 * scale * ppu)) / ppu
    if code == LOGISTIC:
        if y == 1.0 or y == -1.0:
            return logistic_update(p, y, scale, ppu, small)
        s = logistic_mix(y)
        return (s * logistic_update(p, 1.0, scale, ppu, small)
                + (1.0 - s) * logistic_update(p, -1.0, scale, ppu, small))
    if code == HINGE:
        if y * p >= 1.0:
            return 0.0
        err = 1.0 - y * p
        return y * (scale if scale * ppu < err else err / ppu)
    err = y - p
    if err == 0.0:
        return 0.0
    normal = scale * ppu
    if err > 0.0:
        return tau * scale if tau * normal < err else err / ppu
    return (tau - 1.0) * scale if -(1.0 - tau) * normal > err else err / ppu


def py_loss(name: str, p: float, y: float, tau: float = 0.5, lo: float = -np.inf, hi: float = np.inf) -> float:
    return float(loss_value(LOSSES[name], float(p), float(y), tau, lo, hi))


def py_dloss(name: str, p: float, y: float, tau: float = 0.5) -> float:
    return float(loss_dloss(LOSSES[name], float(p), float(y), tau))
