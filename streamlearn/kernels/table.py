"""The lazily regularized weight table.

``table`` is a C-contiguous float64 array of shape (2^b, k): one row per hashed weight, so everything
an update needs about one weight shares a cache line. Column 0 is the weight. Lazily regularized
learners keep, in column 1, the value of a global *cumulative* regularization scalar (``st[S_CUM]``)
at the weight's last touch; a weight untouched since then owes the difference, which it pays when it
is next read (``catch_up_*``) or when the model is saved (``finalize_*``). An example therefore costs
O(its non-zeros) whatever 2^b is (Langford, Li & Zhang 2009, §4: "time-stamp" per feature).

Later regularizers extend the same mechanism with their own cumulative scalars and columns (FOBOS
l2sq: a cumulative log-scale; L1-ball projection: a cumulative shift Theta).
"""

import numpy as np
from numba import njit

W = 0       # weight
LAST = 1    # cumulative regularization at the last touch


@njit(cache=True, nogil=True, inline="always")
def truncate(w, alpha, theta):
    """T1(w, alpha, theta) of Langford, Li & Zhang 2009, eq. (6): shrink w towards 0 by alpha,
    stopping at 0, when |w| <= theta; leave it alone otherwise."""
    if w > 0.0:
        if w <= theta:
            return w - alpha if w > alpha else 0.0
        return w
    if w < 0.0:
        if -w <= theta:
            return w + alpha if -w > alpha else 0.0
        return w
    return w


@njit(cache=True, nogil=True, inline="always")
def catch_up_tg(table, i, cum, theta):
    """Bring weight i up to date with the gravity released since its last touch; returns it.

    Between touches a weight only shrinks, so if |w| <= theta at the first missed truncation it stays
    <= theta for all of them, and the K-step truncations compose into one of the summed gravity: the
    lazy result equals the eager one (LLZ 2009 §4).
    """
    w = table[i, W]
    if w != 0.0:
        owed = cum - table[i, LAST]
        if owed > 0.0:
            w = truncate(w, owed, theta)
            table[i, W] = w
    table[i, LAST] = cum
    return w


@njit(cache=True, nogil=True)
def finalize_tg(table, cum, theta):
    """Catch every weight up (before saving): afterwards the table holds the eager weights.

    A zero weight stays zero whatever it owes, so its row is not written: pages of the table that
    training never touched stay untouched (and out of the resident set)."""
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            catch_up_tg(table, i, cum, theta)


@njit(cache=True, nogil=True)
def count_nonzero(table):
    """Number of non-zero weights."""
    n = 0
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            n += 1
    return n


@njit(cache=True, nogil=True)
def nonzero_rows(table):
    """Indices of the rows whose weight is non-zero, increasing (no temporary of size 2^b)."""
    out = np.empty(count_nonzero(table), np.int64)
    j = 0
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            out[j] = i
            j += 1
    return out
