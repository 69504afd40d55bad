"""Dense, eager reference for SMIDAS, Stochastic Mirror Descent Made Sparse (Shalev-Shwartz & Tewari
2009, Algorithm 3, the p-norm link of eq. 12). Examples as in ``reference``."""

from __future__ import annotations

import math

import numpy as np

from reference import plain_steps


def link_inverse(theta, p):
    """w = f^-1(theta), eq. (12): w_j = sign(theta_j) |theta_j|^(p-1) / ||theta||_p^(p-2), w = 0 when
    theta = 0, written as in the paper."""
    if not theta.any():
        return np.zeros_like(theta)
    norm = np.sum(np.abs(theta) ** p) ** (1.0 / p)
    return np.sign(theta) * np.abs(theta) ** (p - 1) / norm ** (p - 2)


def link_inverse_logs(theta, p):
    """eq. (12) through logarithms, for thetas whose |theta|^p over- or underflows:
    log|w_j| = (p - 1) log|theta_j| - (p - 2)/p log sum_k |theta_k|^p (a log-sum-exp)."""
    nz = theta != 0
    if not nz.any():
        return np.zeros_like(theta)
    logs = np.log(np.abs(theta[nz]))
    top = p * logs.max()
    log_xi1 = top + math.log(np.exp(p * logs - top).sum())
    w = np.zeros_like(theta)
    w[nz] = np.sign(theta[nz]) * np.exp((p - 1) * logs - (p - 2) / p * log_xi1)
    return w


def eager_smidas(examples, dim, lam, p, loss="squared", tau=0.5, eta=10.0, power_t=0.5, initial_t=1.0,
                 theta0=None, logs=False):
    """Algorithm 3, dense, in input order: theta = 0 (or ``theta0``); each example is predicted with
    w = f^-1(theta) (eq. 12); for each learned example theta~ = theta - eta_t v (v = h L'(<w,x>, y) x,
    0 when the loss is 0: the step is u x, see ``plain_steps``), then EVERY entry is truncated,
    theta_j = sign(theta~_j) max(0, |theta~_j| - eta_t lambda), eta_t lambda = scale * lam.
    ``logs=True`` evaluates eq. (12) through logarithms (``link_inverse_logs``).
    Returns (progressive predictions, final w)."""
    theta = np.zeros(dim) if theta0 is None else np.array(theta0, dtype=float)
    f_inv = link_inverse_logs if logs else link_inverse
    preds = []
    for feats, scale, u in plain_steps(examples, lambda: f_inv(theta, p), preds, loss=loss, tau=tau,
                                       eta=eta, power_t=power_t, initial_t=initial_t):
        for i, v in feats:
            theta[i] += u * v
        theta = np.sign(theta) * np.maximum(0.0, np.abs(theta) - lam * scale)
    return np.array(preds), f_inv(theta, p)
