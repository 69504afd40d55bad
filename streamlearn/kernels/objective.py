"""The regularized objective the SMIDAS and truncated-gradient papers compare learners by
(Shalev-Shwartz & Tewari 2009, Section 4; Langford, Li & Zhang 2009, Section 6): the average loss of
a set of examples at fixed weights, to which ``streamlearn.objective`` adds the regularizer."""

import numpy as np
from numba import njit

from streamlearn.kernels.losses import loss_label, loss_value


@njit(cache=True, nogil=True)
def loss_sums(indptr, idx, val, labels, weights, bases, w, code, tau):
    """(sum of h * loss(<w, x> + base, y), sum of h) over the labeled examples of a block with
    positive importance h, at the weights in force ``w`` (a dense (2^b, 1) column). The raw score
    is used as it is (no clamping to the labels' range: this is the papers' objective)."""
    total = 0.0
    weight = 0.0
    for e in range(labels.shape[0]):
        y = labels[e]
        h = weights[e]
        if y != y or not h > 0.0:
            continue
        p = bases[e]
        for k in range(indptr[e], indptr[e + 1]):
            p += w[idx[k], 0] * np.float64(val[k])
        total += h * loss_value(code, p, loss_label(code, y), tau, -np.inf, np.inf)
        weight += h
    return total, weight
