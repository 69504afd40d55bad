"""Dense, eager reference for exponentiated gradient with positive and negative weights (Duchi,
Shalev-Shwartz, Singer & Chandra 2008, Section 7, eq. 13). Examples as in ``reference``."""

from __future__ import annotations

import math

import numpy as np

from support.reference import plain_steps


def eager_eg(examples, dim, z, loss="squared", tau=0.5, eta=10.0, power_t=0.5, initial_t=1.0, batch=1,
             logs=False):
    """EG (eq. 13), dense: w+ and w- start at z / (2 dim); after the gradient step of every learned
    example with a positive loss, w+_i *= exp(-eta_t g_i), w-_i *= exp(+eta_t g_i) for each of its
    features (a repeated feature's steps add up), then all 2 dim entries are
    rescaled to sum z. With batch B > 1 the steps of B consecutive learned examples are summed per
    coordinate, averaged and applied as one step (an unfinished batch is applied at the end).

    ``logs=True`` keeps log(w+), log(w-) instead (the same steps, renormalized with a log-sum-exp)
    for step sizes whose exp would overflow. Returns (progressive predictions, final w+ - w-)."""
    if logs:
        lp = np.full(dim, math.log(z / (2 * dim)))
        ln = lp.copy()
    else:
        wp = np.full(dim, z / (2 * dim))
        wn = wp.copy()

    def weights():
        return np.exp(lp) - np.exp(ln) if logs else wp - wn

    def step(d):                         # d = -eta_t g (per coordinate), then renormalize to z
        nonlocal wp, wn, lp, ln
        if logs:
            lp, ln = lp + d, ln - d
            top = max(lp.max(), ln.max())
            c = top + math.log(np.exp(lp - top).sum() + np.exp(ln - top).sum()) - math.log(z)
            lp, ln = lp - c, ln - c
        else:
            wp, wn = wp * np.exp(d), wn * np.exp(-d)
            total = wp.sum() + wn.sum()
            wp, wn = wp * (z / total), wn * (z / total)

    pending = np.zeros(dim)
    in_batch = 0
    preds = []
    for feats, _, u in plain_steps(examples, weights, preds, loss=loss, tau=tau, eta=eta,
                                   power_t=power_t, initial_t=initial_t, batch=batch):
        if u != 0:                                       # -eta_t g_i = u x_i
            if batch > 1:
                for i, v in feats:
                    pending[i] += u * v
            elif feats:
                d = np.zeros(dim)
                for i, v in feats:
                    d[i] += u * v
                step(d)
        in_batch += 1
        if batch > 1 and in_batch == batch:
            step(pending / in_batch)
            pending[:] = 0.0
            in_batch = 0
    if batch > 1 and in_batch:
        step(pending / in_batch)
    return np.array(preds), weights()
