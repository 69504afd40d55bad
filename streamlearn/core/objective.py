"""The regularized objective the SMIDAS and truncated-gradient papers compare learners by
(Shalev-Shwartz & Tewari 2009, Section 4; Langford, Li & Zhang 2009, Section 6): the average loss of
a set of examples at fixed weights, to which ``streamlearn.run.objective`` adds the regularizer."""

import numpy as np
from numba import njit

from streamlearn.core.losses import loss_value


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
        total += h * loss_value(code, p, y, tau, -np.inf, np.inf)
        weight += h
    return total, weight


@njit(cache=True, nogil=True)
def class_loss_sums(indptr, idx, val, labels, weights, bases, w, code, tau, K, W, zero_based, softmax):
    """``loss_sums`` of a multiclass model (class k of feature h at slot (h*W + k) mod 2^b): with
    ``softmax`` the multinomial log loss log sum_k exp(s_k) - s_y (Duchi & Singer 2009, Section 6),
    else one-against-all's objective, the sum over the classes of the binary loss of s_k for the
    label +1 (the example's class) or -1. Labels are 0..K-1 with ``zero_based``, else 1..K; an
    example whose label is not an integer is skipped, as is one outside the classes with softmax
    (one-against-all learns it as a negative for every class, and counts it so)."""
    mask = np.int64(w.shape[0] - 1)
    s = np.empty(K)
    total = 0.0
    weight = 0.0
    for e in range(labels.shape[0]):
        y = labels[e]
        h = weights[e]
        if y != y or not h > 0.0 or y != np.floor(y):
            continue
        cls = int(y) if zero_based else int(y) - 1
        if cls < 0 or cls >= K:
            if softmax:
                continue
            cls = -1
        for c in range(K):
            s[c] = bases[e]
        for k in range(indptr[e], indptr[e + 1]):
            row = (np.int64(idx[k]) * W) & mask
            x = np.float64(val[k])
            for c in range(K):
                s[c] += w[row + c, 0] * x
        if softmax:
            m = s.max()
            z = 0.0
            for c in range(K):
                z += np.exp(s[c] - m)
            loss = m + np.log(z) - s[cls]
        else:
            loss = 0.0
            for c in range(K):
                loss += loss_value(code, s[c], 1.0 if c == cls else -1.0, tau, -np.inf, np.inf)
        total += h * loss
        weight += h
    return total, weight
