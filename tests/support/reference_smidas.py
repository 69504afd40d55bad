"""Dense, eager reference for SMIDAS (Shalev-Shwartz & Tewari 2009, Algorithm 3). Examples as in
``reference``."""

import numpy as np

from support.reference import plain_steps


def link_inverse(theta, p):
    """f^-1(theta) of Eq. 12, written plainly: sign(theta) |theta|^(p-1) / ||theta||_p^(p-2)."""
    norm = np.sum(np.abs(theta) ** p) ** (1.0 / p)
    if norm == 0.0:
        return np.zeros_like(theta)
    return np.sign(theta) * np.abs(theta) ** (p - 1.0) / norm ** (p - 2.0)


def eager_smidas(examples, dim, lam, p, **schedule):
    """Algorithm 3 over the examples in order, dense: predict with w = f^-1(theta); for every learned
    example theta <- theta - eta_t v (v = L'(<w, x>, y) x), then every theta_j shrinks towards 0 by
    eta_t lam, stopping at 0. ``schedule``: see ``reference.plain_steps``. Returns (progressive
    predictions, final w)."""
    theta = np.zeros(dim)
    preds = []
    for feats, scale, u in plain_steps(examples, lambda: link_inverse(theta, p), preds, **schedule):
        for i, v in feats:
            theta[i] += u * v
        theta = np.sign(theta) * np.maximum(np.abs(theta) - scale * lam, 0.0)
    return np.array(preds), link_inverse(theta, p)
