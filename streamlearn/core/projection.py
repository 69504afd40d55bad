"""Euclidean projections onto the simplex and the L1 ball (Duchi, Shalev-Shwartz, Singer & Chandra
2008), dense, each usable on its own.

Both problems reduce to finding one threshold theta:

* simplex, ``min 1/2 ||w - v||^2  s.t.  sum_i a_i w_i = z, w >= 0``: ``w_i = max(v_i - theta a_i, 0)``;
* L1 ball, ``min 1/2 ||w - v||^2  s.t.  sum_i a_i |w_i| <= z``: ``v`` itself when it is inside,
  else ``w_i = sign(v_i) max(|v_i| - theta a_i, 0)`` with theta the simplex threshold of |v|
  (Section 4, Lemma 3).

``a`` are the weights of the weighted constraint (``a_i >= 0``; all 1 for the papers' plain one).
A coordinate with ``a_i = 0`` is not constrained: it keeps ``v_i`` (simplex: ``max(v_i, 0)``) and
takes no part in finding theta. With ratios ``r_i = v_i / a_i`` sorted decreasingly, the active set
is a prefix (Lemma 1) and, for the prefix S, ``theta = (sum_S a_i v_i - z) / sum_S a_i^2`` (Eq. 4
with weights); the prefix is the longest whose last ratio still exceeds its theta (Lemma 2).

Two ways to find it:

* ``theta_sort`` -- Figure 1: sort, then scan the prefixes, O(n log n);
* ``theta_pivot`` -- Figure 2: randomized pivoting with partial sums carried along, expected O(n).

The online projection of the lazily stored weights (Figure 3, Section 6) lives with its learner.
"""

import numpy as np
from numba import njit

SORT = 0
PIVOT = 1


@njit(cache=True, nogil=True)
def theta_sort(v, a, z):
    """Figure 1 (weighted form): the simplex threshold of v for sum a_i w_i = z. O(n log n).

    Returns (theta, number of active coordinates)."""
    n = v.shape[0]
    idx = np.empty(n, np.int64)
    ratio = np.empty(n)
    m = 0
    for i in range(n):
        if a[i] > 0.0:
            idx[m] = i
            ratio[m] = v[i] / a[i]
            m += 1
    order = np.argsort(-ratio[:m], kind="mergesort")
    s = 0.0          # sum of a_i v_i over the prefix
    q = 0.0          # sum of a_i^2 over the prefix
    theta = 0.0
    rho = 0
    for j in range(m):
        i = idx[order[j]]
        s += a[i] * v[i]
        q += a[i] * a[i]
        t = (s - z) / q
        if ratio[order[j]] > t:
            theta = t
            rho = j + 1
    return theta, rho


@njit(cache=True, nogil=True)
def pivot_seed(random_seed, step):
    """The seed of one randomized-pivot search: a different one for every learning step, fixed by
    --random-seed (so a run is reproducible bit for bit)."""
    return (int(step) * 2654435761 + int(random_seed) * 40503 + 12345) % 2147483647


@njit(cache=True, nogil=True)
def theta_pivot(v, a, z, seed):
    """Figure 2 (weighted form): the same threshold by randomized pivoting, expected O(n).

    U holds the undecided coordinates; a random pivot k splits U into G (ratio >= r_k) and L. If the
    prefix up to r_k is still short of z -- (s + sum_G a v) - (q + sum_G a^2) r_k < z -- every
    element of G is active: add G's sums and continue with L; else L is inactive: continue with
    G without k. Returns (theta, number of active coordinates)."""
    n = v.shape[0]
    u = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if a[i] > 0.0:
            u[m] = i
            m += 1
    np.random.seed(seed)
    work = np.empty(m, np.int64)
    lo = 0
    hi = m            # U = u[lo:hi]
    s = 0.0
    q = 0.0
    rho = 0
    while hi > lo:
        k = u[lo + np.random.randint(0, hi - lo)]
        rk = v[k] / a[k]
        # partition U: G to the front of work, L to the back
        ng = 0
        nl = 0
        ds = 0.0
        dq = 0.0
        for p in range(lo, hi):
            j = u[p]
            if v[j] / a[j] >= rk:
                work[ng] = j
                ng += 1
                ds += a[j] * v[j]
                dq += a[j] * a[j]
            else:
                nl += 1
                work[hi - lo - nl] = j
        if (s + ds) - (q + dq) * rk < z:
            s += ds
            q += dq
            rho += ng
            for p in range(nl):                      # U <- L
                u[lo + p] = work[hi - lo - nl + p]
            hi = lo + nl
        else:
            c = 0                                    # U <- G without k
            for p in range(ng):
                if work[p] != k:
                    u[lo + c] = work[p]
                    c += 1
            hi = lo + c
    if q == 0.0:
        return 0.0, 0
    return (s - z) / q, rho


@njit(cache=True, nogil=True)
def _theta(v, a, z, method, seed):
    if method == SORT:
        return theta_sort(v, a, z)[0]
    return theta_pivot(v, a, z, seed)[0]


@njit(cache=True, nogil=True)
def project_simplex(v, a, z, method=SORT, seed=0):
    """Projection of v onto {w >= 0, sum a_i w_i = z} (z > 0)."""
    theta = _theta(v, a, z, method, seed)
    w = np.empty_like(v)
    for i in range(v.shape[0]):
        w[i] = max(v[i] - theta * a[i], 0.0)
    return w


@njit(cache=True, nogil=True)
def project_l1_ball(v, a, z, method=SORT, seed=0):
    """Projection of v onto {sum a_i |w_i| <= z} (z >= 0): v if inside, else the simplex
    projection of |v| with the signs of v put back (Section 4)."""
    norm = 0.0
    for i in range(v.shape[0]):
        norm += a[i] * abs(v[i])
    if norm <= z:
        return v.copy()
    u = np.abs(v)
    theta = _theta(u, a, z, method, seed)
    w = np.empty_like(v)
    for i in range(v.shape[0]):
        x = max(u[i] - theta * a[i], 0.0)
        w[i] = x if v[i] >= 0.0 else -x
    return w
