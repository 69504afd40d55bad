"""Slow, obviously correct references for the compiled kernels (plain Python and NumPy, dense, eager).

Examples are tuples (label or None, importance, base, [(index, value), ...]).
"""

from __future__ import annotations

import math

import numpy as np


def loss_label(loss, y):
    if loss in ("logistic", "hinge"):
        return 1.0 if y > 0 else -1.0
    return y


def loss_value(loss, p, y, tau, lo, hi):
    if loss == "squared":
        if lo <= p <= hi:
            return (p - y) ** 2
        edge = lo if p < lo else hi
        if y == edge:
            return 0.0
        return (y - edge) ** 2 + 2 * abs(y - edge) * abs(p - edge)
    if loss == "logistic":
        return math.log1p(math.exp(-y * p)) if -y * p < 30 else -y * p + math.log1p(math.exp(y * p))
    if loss == "hinge":
        return max(0.0, 1.0 - y * p)
    e = y - p
    return tau * e if e > 0 else (tau - 1.0) * e


def dloss(loss, p, y, tau):
    if loss == "squared":
        return 2.0 * (p - y)
    if loss == "logistic":
        return -y / (1.0 + math.exp(y * p))
    if loss == "hinge":
        return -y if y * p < 1.0 else 0.0
    e = y - p
    if e == 0:
        return 0.0
    return -tau if e > 0 else 1.0 - tau


def T1(v, alpha, theta):
    """Langford, Li & Zhang 2009, eq. (6), one coordinate, written as in the paper."""
    if 0.0 <= v <= theta:
        return max(0.0, v - alpha)
    if -theta <= v <= 0.0:
        return min(0.0, v + alpha)
    return v


def eager_linear(examples, dim, loss="squared", tau=0.5, eta=1.0, power_t=0.5, initial_t=1.0,
                 algo="sgd", g=0.0, theta=math.inf, K=1):
    """Progressive predictions and final weights of plain SGD / eager truncated gradient.

    Truncated gradient: after the gradient step of every K-th learned example, EVERY weight is
    truncated with T1 by the gravity accrued since the previous truncation (g * rate * h per learned
    example). Predictions are clamped to [min label, max label] seen so far (0/0 at the start) for
    squared/hinge/quantile, and to [-50, 50] for logistic.
    """
    w = np.zeros(dim)
    eta0 = eta * initial_t ** power_t if initial_t > 0 else eta
    t = initial_t
    lo = hi = 0.0
    if loss == "logistic":
        lo, hi = -50.0, 50.0
    pending = 0.0
    learned = 0
    preds = []
    for label, h, base, feats in examples:
        y = None if label is None else loss_label(loss, label)
        if y is not None and loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        raw = base + sum(w[i] * v for i, v in feats)
        p = min(max(raw, lo), hi)
        preds.append(p)
        if y is None or h <= 0:
            continue
        t += h
        rate = eta0 * t ** -power_t
        grad = dloss(loss, p, y, tau)
        for i, v in feats:
            w[i] -= rate * h * grad * v
        learned += 1
        if algo == "tg":
            pending += g * rate * h
            if learned % K == 0:
                w = np.array([T1(x, pending, theta) for x in w])
                pending = 0.0
    return np.array(preds), w


def to_csr(examples):
    """Examples -> arrays the kernels and the CLI-free tests use."""
    indptr = [0]
    idx, val, labels, weights, bases = [], [], [], [], []
    for label, h, base, feats in examples:
        for i, v in feats:
            idx.append(i)
            val.append(v)
        indptr.append(len(idx))
        labels.append(np.nan if label is None else label)
        weights.append(h)
        bases.append(base)
    return (np.array(indptr, np.int64), np.array(idx, np.uint32), np.array(val, np.float32),
            np.array(labels, np.float64), np.array(weights, np.float64), np.array(bases, np.float64))
