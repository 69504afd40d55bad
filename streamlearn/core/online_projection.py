"""Projection onto the L1 ball after sparse updates, in O(k log n) per step (Duchi, Shalev-Shwartz,
Singer & Chandra 2008, Section 6 and Figure 3).

The weights are stored *un-shifted*: a non-zero weight w_i is kept as ``s_i = sign(w_i) (|w_i| + Theta)``
where Theta, the cumulative shift, is the sum of all the thresholds theta_t applied so far, and is read
as ``sign(s_i) max(|s_i| - Theta, 0)``. Projecting every weight onto the ball therefore costs one
addition to Theta plus the removal of the entries that fall to zero.

Only the non-zero weights are kept in an ordered structure. The paper uses a red-black tree with
subtree counts and sums, searched by Figure 3; here a binary min-heap over lower bounds of the keys
|s_i| gives the same bound: after a step, with S the sum of the keys and n their number, the candidate
threshold of the current set is theta = (S - n Theta - z) / n; while the smallest key lies at or
below Theta + theta it cannot be active in the projection (for any superset of the active set the
candidate is at most the true threshold), so it is removed and theta recomputed. Each entry is removed
at most once per insertion, so the work is O(k log n) amortized per step of k updated coordinates.
When the smallest key is above the candidate, the candidate solves sum (u_j - theta) = z over the
remaining set: it is the projection threshold (Eq. 10).

Storage. The weight table holds only s_i (``table[i, cw]``, 0 when the weight is 0): the heap lives
outside it, in a compact array ``H`` whose size follows the number of non-zero weights, not 2^b, so
a row costs what it costs plain SGD (one float64; a heap position column per row doubled the pages a
fresh table faults in at -b 24):

* ``H[0, 0]`` -- m, the number of heap entries; ``H[p, 0]``, ``H[p, 1]`` for p = 1..m -- the row index
  and the heap key of entry p, a 1-based min-heap on the keys (row indices are exact in float64);
* ``st`` -- the learner state array: Theta (``S_THETA``), n = the number of non-zero weights and S =
  the sum of their keys |s_i| (exact, whatever the heap holds).

The heap is *lazy*: it has no row -> position map. Its invariant is that every non-zero row has at
least one entry whose key is at most its exact key |s_i|. A key that grows is left alone (the entry
is fixed when it reaches the top, ``_settle_top``); a key that falls gets a new entry; a weight that
becomes 0 leaves its entries behind. The top therefore gives the smallest exact key once entries of
zero rows are dropped and a lagging key is raised and sifted down. Left-behind entries are compacted
away (``compact``: one entry per non-zero row, exact keys, heapified in O(m)) when they outnumber the
non-zero rows, so m <= 2 n + SLACK and the amortized cost stays O(log n) per update.

S - n Theta loses precision as Theta grows, so when n Theta exceeds REBASE x z the keys are rebased:
Theta is subtracted from every key (the heap order is unchanged), S is summed afresh and Theta becomes 0.
"""

import numpy as np
from numba import njit

from streamlearn.core.projection import theta_pivot, theta_sort
from streamlearn.core.state import PROJ_SORT, S_HSIZE, S_HSUM, S_THETA
from streamlearn.core.table import shrink

H_THETA = S_THETA    # cumulative shift Theta
H_SIZE = S_HSIZE    # number of non-zero weights
H_SUM = S_HSUM      # sum of their keys |s_i|

REBASE = 1e4
SLACK = 64          # left-behind entries tolerated beyond n before compacting


def new_heap(capacity: int) -> np.ndarray:
    """An empty heap with room for ``capacity`` entries."""
    return np.zeros((capacity + 1, 2))


def heap_capacity(H: np.ndarray) -> int:
    return H.shape[0] - 1


def heap_entries(H: np.ndarray) -> int:
    return int(H[0, 0])


@njit(cache=True, nogil=True)
def _sift_up(H, p):
    i = H[p, 0]
    k = H[p, 1]
    while p > 1:
        q = p >> 1
        if H[q, 1] <= k:
            break
        H[p, 0] = H[q, 0]
        H[p, 1] = H[q, 1]
        p = q
    H[p, 0] = i
    H[p, 1] = k


@njit(cache=True, nogil=True)
def _sift_down(H, p, m):
    i = H[p, 0]
    k = H[p, 1]
    while True:
        c = 2 * p
        if c > m:
            break
        if c < m and H[c + 1, 1] < H[c, 1]:
            c += 1
        if H[c, 1] >= k:
            break
        H[p, 0] = H[c, 0]
        H[p, 1] = H[c, 1]
        p = c
    H[p, 0] = i
    H[p, 1] = k


@njit(cache=True, nogil=True)
def _push(H, i, k):
    """Add an entry for row i with key k (the caller keeps m within the capacity)."""
    m = int(H[0, 0]) + 1
    H[0, 0] = m
    H[m, 0] = i
    H[m, 1] = k
    _sift_up(H, m)


@njit(cache=True, nogil=True)
def _pop(H):
    """Drop the top entry."""
    m = int(H[0, 0])
    H[1, 0] = H[m, 0]
    H[1, 1] = H[m, 1]
    m -= 1
    H[0, 0] = m
    if m > 1:
        _sift_down(H, 1, m)


@njit(cache=True, nogil=True)
def compact(table, cw, H):
    """Keep one entry per non-zero row, with its exact key, and re-heapify: O(m). (The rows already
    seen are marked by a 0 in the weight column meanwhile; their values wait in the keys.)"""
    m = int(H[0, 0])
    q = 0
    for p in range(1, m + 1):
        i = int(H[p, 0])
        s = table[i, cw]
        if s != 0.0:
            q += 1
            H[q, 0] = i
            H[q, 1] = s
            table[i, cw] = 0.0
    for p in range(1, q + 1):
        s = H[p, 1]
        table[int(H[p, 0]), cw] = s
        H[p, 1] = abs(s)
    H[0, 0] = q
    for p in range(q >> 1, 0, -1):
        _sift_down(H, p, q)


@njit(cache=True, nogil=True)
def _settle_top(table, cw, H):
    """Drop the entries of zero rows from the top and make the top's key exact (keys may lag below
    the truth). Returns the exact key of the new top: the smallest of the non-zero rows (there must
    be one)."""
    while True:
        s = table[int(H[1, 0]), cw]
        if s == 0.0:
            _pop(H)
            continue
        k = abs(s)
        if H[1, 1] == k:
            return k
        H[1, 1] = k
        _sift_down(H, 1, int(H[0, 0]))


@njit(cache=True, nogil=True, inline="always")
def read_weight(table, cw, i, theta):
    """The weight in force of row i: its stored value moved towards 0 by Theta."""
    return shrink(table[i, cw], theta)


@njit(cache=True, nogil=True)
def set_weight(table, cw, H, st, i, w):
    """Give row i the weight w (in force): re-key it, or drop it when w is 0. Adds at most one heap
    entry."""
    key = abs(w) + st[H_THETA]
    old = table[i, cw]
    if key <= st[H_THETA]:       # 0, or too small to show next to Theta: the weight is 0
        if old != 0.0:           # its entries stay behind, dropped at the top or by compact
            st[H_SUM] -= abs(old)
            st[H_SIZE] -= 1.0
            table[i, cw] = 0.0
        return
    table[i, cw] = key if w > 0.0 else -key
    if old != 0.0:
        # the key sum follows the exact keys; an entry only has to stay at or below the exact key,
        # so a key that grew keeps its entry (most never reach the top) and one that fell gets a new one
        st[H_SUM] += key - abs(old)
        if key < abs(old):
            _push(H, i, key)
    else:
        st[H_SIZE] += 1.0
        st[H_SUM] += key
        _push(H, i, key)
    if H[0, 0] > 2.0 * st[H_SIZE] + SLACK:
        compact(table, cw, H)


@njit(cache=True, nogil=True)
def rebase(table, cw, H, st):
    """Subtract Theta from every key (order unchanged), sum the keys afresh, set Theta to 0."""
    compact(table, cw, H)            # one entry per row: each is shifted once
    theta = st[H_THETA]
    total = 0.0
    for p in range(1, int(H[0, 0]) + 1):
        i = int(H[p, 0])
        s = table[i, cw]
        s = s - theta if s > 0.0 else s + theta
        table[i, cw] = s
        H[p, 1] = abs(s)              # every exact key shifts alike: rounding is monotone, order holds
        total += abs(s)
    st[H_SUM] = total
    st[H_THETA] = 0.0


@njit(cache=True, nogil=True)
def project(table, cw, H, st, z):
    """Project the stored vector onto {||w||_1 <= z}: raise Theta by the projection threshold and
    drop the entries that fall to 0. Returns the threshold applied (0 when already inside)."""
    n = int(st[H_SIZE])
    if n == 0:
        return 0.0
    Theta = st[H_THETA]
    if st[H_SUM] - n * Theta <= z:
        return 0.0
    theta = (st[H_SUM] - n * Theta - z) / n
    while n > 1:
        k = _settle_top(table, cw, H)
        if k - Theta > theta:
            break
        i = int(H[1, 0])
        _pop(H)
        st[H_SUM] -= k
        table[i, cw] = 0.0
        n -= 1
        st[H_SIZE] = n
        theta = (st[H_SUM] - n * Theta - z) / n
    Theta += theta
    st[H_THETA] = Theta
    while n > 0:                      # a tie with theta, lost to rounding
        k = _settle_top(table, cw, H)
        if k > Theta:
            break
        i = int(H[1, 0])
        _pop(H)
        st[H_SUM] -= k
        table[i, cw] = 0.0
        n -= 1
        st[H_SIZE] = n
    if n * Theta > REBASE * z:
        rebase(table, cw, H, st)
    return theta


@njit(cache=True, nogil=True)
def sparse_step(table, cw, H, st, idx, delta, z):
    """Add delta[j] to the weight of row idx[j] for every j (repeats add up), then project onto the
    L1 ball of radius z. O(k log n) amortized. H needs room for m + len(idx) entries."""
    theta = st[H_THETA]
    for j in range(idx.shape[0]):
        i = idx[j]
        set_weight(table, cw, H, st, i, read_weight(table, cw, i, theta) + delta[j])
    return project(table, cw, H, st, z)


@njit(cache=True, nogil=True)
def weights_in_force(table, cw, st, out):
    """Write every row's weight in force into ``out`` (O(rows); for tests and saving)."""
    theta = st[H_THETA]
    for i in range(table.shape[0]):
        out[i] = read_weight(table, cw, i, theta)


@njit(cache=True, nogil=True)
def project_nonzero(table, cw, H, st, z, method, seed):
    """The same projection computed the plain way, for comparison: the threshold of all the non-zero
    weights by Figure 2 (randomized pivot) or Figure 1 (sort), then every entry checked and the heap
    rebuilt. O(n) or O(n log n) per call, n = non-zero weights."""
    n = int(st[H_SIZE])
    if n == 0:
        return 0.0
    compact(table, cw, H)            # one entry per non-zero row
    Theta = st[H_THETA]
    u = np.empty(n)
    rows = np.empty(n, np.int64)
    total = 0.0
    for p in range(n):
        i = int(H[p + 1, 0])
        rows[p] = i
        u[p] = abs(table[i, cw]) - Theta
        total += u[p]
    if total <= z:
        return 0.0
    ones = np.ones(n)
    if method == PROJ_SORT:
        theta = theta_sort(u, ones, z)[0]
    else:
        theta = theta_pivot(u, ones, z, seed)[0]
    Theta += theta
    st[H_THETA] = Theta
    st[H_SIZE] = 0.0
    st[H_SUM] = 0.0
    H[0, 0] = 0.0
    for p in range(n):
        i = rows[p]
        if u[p] <= theta or abs(table[i, cw]) <= Theta:
            table[i, cw] = 0.0
        else:
            k = abs(table[i, cw])
            st[H_SIZE] += 1.0
            st[H_SUM] += k
            _push(H, i, k)
    if int(st[H_SIZE]) * Theta > REBASE * z:
        rebase(table, cw, H, st)
    return theta


@njit(cache=True, nogil=True)
def index_rows(table, cw, H):
    """One heap entry for every non-zero stored weight, state untouched (a heap for a table whose
    state is already consistent, e.g. a copy). O(rows); H needs room for them all."""
    H[0, 0] = 0.0
    for i in range(table.shape[0]):
        if table[i, cw] != 0.0:
            _push(H, i, abs(table[i, cw]))


@njit(cache=True, nogil=True)
def rebuild(table, cw, H, st):
    """Index every non-zero stored weight in a fresh heap (after loading weights into column cw with
    Theta = 0). O(rows); H needs room for them all."""
    st[H_SIZE] = 0.0
    st[H_SUM] = 0.0
    st[H_THETA] = 0.0
    H[0, 0] = 0.0
    for i in range(table.shape[0]):
        if table[i, cw] != 0.0:
            k = abs(table[i, cw])
            st[H_SIZE] += 1.0
            st[H_SUM] += k
            _push(H, i, k)
