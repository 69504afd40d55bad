"""VW's --confidence (confidence.cc): next to each prediction, |prediction| / sensitivity, where the
sensitivity is how much the prediction would move per unit of update on this example (gd.cc's
``sensitivity``: the step scale of importance 1 times the example's ``pred_per_update``, computed
on a copy of the per-feature statistics, which it leaves as they are).

Under per-feature rates the sensitivity is eta * m' * sum_i x_i^2 r_i', with each weight's G and N
as the update would leave them (G_i + h g^2 x_i^2, max(N_i, |x_i|); g the loss's gradient at the
prediction for the label -- for an unlabeled example the label opposite to the prediction's sign) and
m' the global normalizer with the example's h and norm added; under the plain rule it is the
schedule's rate times sum_i x_i^2. With --confidence_after_training VW takes an unlabeled example's
sensitivity with its "no label" value FLT_MAX, where g^2 overflows float32: every adaptive rate is 0.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from streamlearn.core.losses import loss_dloss
from streamlearn.core.rules import X2_MAX, X2_MIN
from streamlearn.core.state import S_ETA, S_NORM_SUM, S_T, S_TOTAL_W
from streamlearn.core.table import rate_decay

FLT_MAX = 3.4028234663852886e38


@njit(cache=True, nogil=True)
def sensitivity(idx, val, s, f, table, st, cfg, code, p, y, tau, h):
    """The sensitivity of the example with features idx/val[s:f] at prediction ``p`` and label ``y``
    (loss space) under the gradient-descent settings ``cfg`` (``rules.gd_settings``); reads the
    table and the state only."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate = cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], \
        cfg[5], cfg[6], cfg[7]
    if adaptive:
        scale = st[S_ETA]
    else:
        scale = st[S_ETA] * math.pow(st[S_T] + 1.0, -power_t)
    if not (adaptive or normalized):
        total = 0.0
        for k in range(s, f):
            x = np.float64(val[k])
            total += x * x
        return scale * total
    g = loss_dloss(code, p, y, tau)
    gsq = h * g * g
    if gsq > FLT_MAX:       # VW's float32 overflows (an unlabeled example after training: its label
        gsq = math.inf      # is VW's FLT_MAX), and every rate is then 0
    ppu = 0.0
    norm_x = 0.0
    for k in range(s, f):
        i = idx[k]
        x = np.float64(val[k])
        x2 = x * x
        if x2 < X2_MIN:
            x2 = X2_MIN
            x = math.sqrt(X2_MIN)
        G = 0.0
        N = 0.0
        if adaptive:
            G = table[i, cg] + gsq * x2 + g0
        if normalized:
            N = max(table[i, cn], abs(x))
            norm_x += 1.0 if x2 > X2_MAX else x2 / (N * N)
        ppu += x2 * rate_decay(G, N, adaptive, normalized, sqrt_rate, power_t)
    if normalized:
        S = st[S_NORM_SUM] + h * norm_x
        T = st[S_TOTAL_W] + h
        m = 1.0
        if S > 0.0:
            if sqrt_rate:
                m = T / S
                if adaptive:
                    m = math.sqrt(m)
            else:
                m = (S / T) ** (power_t - 1.0)
        ppu *= m
    return scale * ppu


def confidence_of(pred: float, sens: float) -> float:
    """|prediction| / sensitivity (VW divides as floats: 0 / 0 is nan, x / 0 infinite)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float32(abs(pred)) / np.float32(sens))
