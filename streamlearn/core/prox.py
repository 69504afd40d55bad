"""The compiled pieces of the regularizers the learners keep lazily (the kernel side of
``streamlearn.regularizers``), one section per regularizer: fobos keeps them on each weight, softmax
on each feature's row of class weights (Duchi & Singer 2009, FOBOS).

The proximal step of a learned example with step eta and strength lambda is *released* into a
cumulative scalar of the state (``*_release``: ``st[S_FOBOS_CUM]``, and for the elastic net a second
one, ``st[S_FOBOS_CUM2]``); a weight or a row untouched since its last touch pays what was released
since then when it is next read, in one prox of the summed strength (Section 5, Proposition 4: the
proximal steps of these regularizers compose). The prox of that strength on one coordinate is
``*_coord``, on a row ``*_row``. The learners pair them with their own storage (the weight table's
LAST columns, a weight's or a row's rate).

A learner picks a regularizer's pieces once, at set-up, by picking its kernel (``KERNELS`` in
``streamlearn.learners.fobos`` and ``streamlearn.learners.softmax``), so no kernel branches on the
regularizer. The pieces on a coordinate and the releases are inlined into the kernels; the proxes on a
row are called (a row pays rarely: most reads find it level), as softmax's one row prox was.
"""

import math

from numba import njit

from streamlearn.core.state import S_FOBOS_CUM, S_FOBOS_CUM2
from streamlearn.core.table import shrink

ELASTIC_REBASE = 300.0   # rebase the elastic cumulatives before exp(L) can overflow


# ----------------------------------------------------------------------------- l1: lambda ||w||_1 (eq. 6)

@njit(cache=True, nogil=True, inline="always")
def l1_release(st, lam, step):
    """The cumulative strength: the sum of lambda eta over learned examples (shrinks add up)."""
    st[S_FOBOS_CUM] += lam * step


@njit(cache=True, nogil=True, inline="always")
def l1_coord(w, a):
    """Eq. 6: w <- sign(w) [|w| - a]_+, the soft threshold of strength a."""
    return shrink(w, a)


@njit(cache=True, nogil=True)
def l1_row(w, a, buf):
    """Eq. 6 on each coordinate of the row w, in place (a >= 0)."""
    if a <= 0.0:
        return
    for k in range(w.shape[0]):
        w[k] = l1_coord(w[k], a)


# ----------------------------------------------------------------------------- l2sq: lambda/2 ||w||_2^2 (eq. 7)

@njit(cache=True, nogil=True, inline="always")
def l2sq_release(st, lam, step):
    """The cumulative log-strength: the sum of log(1 + lambda eta) (eq. 7's factors multiply)."""
    st[S_FOBOS_CUM] += math.log1p(lam * step)


@njit(cache=True, nogil=True, inline="always")
def l2sq_factor(a):
    """Eq. 7's scaling for the log-strength a: exp(-a) = prod 1 / (1 + lambda eta) over the steps
    summed in a (with a rate r, a = r * owed gives (1 + lambda eta)^(-r), which composes)."""
    return math.exp(-a)


@njit(cache=True, nogil=True, inline="always")
def l2sq_coord(w, a):
    """Eq. 7 on one coordinate: w * exp(-a)."""
    return w * l2sq_factor(a)


@njit(cache=True, nogil=True)
def l2sq_row(w, a, buf):
    """Eq. 7 on the row w, in place: one factor for every coordinate."""
    if a <= 0.0:
        return
    c = l2sq_factor(a)
    for k in range(w.shape[0]):
        w[k] *= c


# ----------------------------------------------------------------------------- elastic: l1 then l2sq

@njit(cache=True, nogil=True, inline="always")
def elastic_release(st, lam1, lam2, step):
    """The elastic net's two cumulatives: after shrinks a_s and scalings c_s, a weight is
    ``P_n (w - sum_s a_s / P_{s-1})`` with ``P_n = prod c_s``; L = -log P (``st[S_FOBOS_CUM]``,
    l2sq's log-strength) and A = sum_s a_s exp(L_{s-1}) (``st[S_FOBOS_CUM2]``). Returns whether L
    passed ``ELASTIC_REBASE``: A grows like exp(L), and the learner must then catch every weight up
    and restart both at 0."""
    st[S_FOBOS_CUM2] += lam1 * step * math.exp(st[S_FOBOS_CUM])
    st[S_FOBOS_CUM] += math.log1p(lam2 * step)
    return st[S_FOBOS_CUM] > ELASTIC_REBASE


@njit(cache=True, nogil=True, inline="always")
def elastic_coord(w, sh, c):
    """The composed elastic steps on one coordinate: the l1 shrink by ``sh`` = exp(-L0) (A - A0),
    then the l2sq scaling by ``c`` = exp(-(L - L0)), for a weight last touched at (L0, A0)."""
    return shrink(w, sh) * c


@njit(cache=True, nogil=True, inline="always")
def elastic_restart(st):
    """Both cumulatives back to 0 (a rebase, once every weight is caught up)."""
    st[S_FOBOS_CUM] = 0.0
    st[S_FOBOS_CUM2] = 0.0


# ----------------------------------------------------------------------------- l1l2: lambda sum_rows ||row||_2

@njit(cache=True, nogil=True)
def l1l2_row(w, a, buf):
    """Section 4 (mixed norms, eq. 9 with the l2 prox): row <- row [1 - a / ||row||_2]_+, in place.
    Its cumulative is l1's (strengths add: the softmax module docstring proves it)."""
    if a <= 0.0:
        return
    K = w.shape[0]
    sq = 0.0
    for k in range(K):
        sq += w[k] * w[k]
    norm = math.sqrt(sq)
    if norm <= a:
        for k in range(K):
            w[k] = 0.0
    else:
        c = 1.0 - a / norm
        for k in range(K):
            w[k] *= c


# ----------------------------------------------------------------------------- l1linf: lambda sum_rows ||row||_inf

@njit(cache=True, nogil=True)
def linf_threshold(w, a, buf):
    """theta >= 0 with sum_k [|w_k| - theta]_+ = a, for ||w||_1 > a > 0: the threshold of the
    Euclidean projection of |w| onto the L1 ball of radius a (Duchi et al. 2008, Figure 1, by
    sorting, u sorted decreasingly): theta = (sum_{i<=rho} u_i - a) / rho with rho the largest j
    such that u_j > (sum_{i<=j} u_i - a)/j. The test is made as sum_{i<j} (u_i - u_j) < a (the
    same inequality), which holds for j = 1 in floating point too: written as in Figure 1 it
    fails at j = 1 when a is below u_1's rounding, and the row would be zeroed. ``buf`` is
    scratch of length len(w)."""
    K = w.shape[0]
    for k in range(K):
        buf[k] = abs(w[k])
    buf.sort()
    cs = buf[K - 1]
    rho = 1
    for j in range(2, K + 1):
        u = buf[K - j]
        if cs - (j - 1) * u < a:
            cs += u
            rho = j
        else:
            break
    theta = (cs - a) / rho
    return theta if theta > 0.0 else 0.0


@njit(cache=True, nogil=True)
def l1linf_row(w, a, buf):
    """Section 4 (eq. 9 with eq. 8 and its dual): row <- row - Proj_{||.||_1 <= a}(row), in place:
    every |w_k| capped at theta (``linf_threshold``), the zero row when ||row||_1 <= a. Its
    cumulative is l1's (strengths add: the softmax module docstring proves it)."""
    if a <= 0.0:
        return
    K = w.shape[0]
    l1 = 0.0
    for k in range(K):
        l1 += abs(w[k])
    if l1 <= a:
        for k in range(K):
            w[k] = 0.0
    else:
        theta = linf_threshold(w, a, buf)
        for k in range(K):
            if w[k] > theta:
                w[k] = theta
            elif w[k] < -theta:
                w[k] = -theta
