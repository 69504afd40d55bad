"""Projection onto the L1 ball after sparse updates, in O(k log n) per step (Duchi, Shalev-Shwartz,
Singer & Chandra 2008, Section 6 and Figure 3).

The weights are stored *un-shifted*: a non-zero weight w_i is kept as ``s_i = sign(w_i) (|w_i| + Theta)``
where Theta, the cumulative shift, is the sum of all the thresholds theta_t applied so far, and is read
as ``sign(s_i) max(|s_i| - Theta, 0)``. Projecting every weight onto the ball therefore costs one
addition to Theta plus the removal of the entries that fall to zero.

Only the non-zero weights are kept in an ordered structure. The paper uses a red-black tree with
subtree counts and sums, searched by Figure 3; here an indexed binary min-heap over the keys |s_i|
gives the same bound: after a step, with S the sum of the keys and n their number, the candidate
threshold of the current set is theta = (S - n Theta - z) / n; while the smallest entry lies at or
below Theta + theta it cannot be active in the projection (for any superset of the active set the
candidate is at most the true threshold), so it is popped and theta recomputed. Each entry is popped
at most once per insertion, so the work is O(k log n) amortized per step of k updated coordinates.
When the smallest entry is above the candidate, the candidate solves sum (u_j - theta) = z over the
remaining set: it is the projection threshold (Eq. 10).

Storage (all plain arrays, so the learner kernel can own them):

* ``table[i, cw]`` -- s_i (0 when the weight is 0 and not in the heap);
* ``table[i, cpos]`` -- 1 + the position of i in the ch, 0 when absent;
* ``table[p, ch]``, ``table[p, ch + 1]`` -- the heap: the row index at heap position p and its heap
  key (a min-heap on the keys in the first ``st[S_HSIZE]`` rows of the two columns, so the sifts read
  contiguous memory; positions and indices are exact in float64). A heap key is at most the exact
  key |s_i|: a key that falls is sifted up at once, one that grows only when its entry reaches the
  top (``_settle_top``), which saves most of the sifts of the gradient steps;
* ``st`` -- the learner state array: Theta (``S_THETA``), the heap size and the key sum.

S - n Theta loses precision as Theta grows, so when n Theta exceeds REBASE x z the keys are rebased:
Theta is subtracted from every key (the heap order is unchanged), S is summed afresh and Theta becomes 0.
"""

import numpy as np
from numba import njit

from streamlearn.kernels.projection import theta_pivot, theta_sort
from streamlearn.kernels.state import PROJ_SORT, S_HSIZE, S_HSUM, S_THETA
from streamlearn.kernels.table import shrink

H_THETA = S_THETA    # cumulative shift Theta
H_SIZE = S_HSIZE    # number of entries in the heap
H_SUM = S_HSUM      # sum of the keys |s_i| in the heap

REBASE = 1e4


@njit(cache=True, nogil=True, inline="always")
def _place(table, cpos, ch, p, i, k):
    """Put row i with key k at heap position p."""
    table[p, ch] = i
    table[p, ch + 1] = k
    table[i, cpos] = p + 1


@njit(cache=True, nogil=True)
def _sift_up(table, cpos, ch, p):
    i = int(table[p, ch])
    k = table[p, ch + 1]
    while p > 0:
        parent = (p - 1) >> 1
        if table[parent, ch + 1] <= k:
            break
        _place(table, cpos, ch, p, int(table[parent, ch]), table[parent, ch + 1])
        p = parent
    _place(table, cpos, ch, p, i, k)


@njit(cache=True, nogil=True)
def _sift_down(table, cpos, ch, p, n):
    i = int(table[p, ch])
    k = table[p, ch + 1]
    while True:
        c = 2 * p + 1
        if c >= n:
            break
        if c + 1 < n and table[c + 1, ch + 1] < table[c, ch + 1]:
            c += 1
        if table[c, ch + 1] >= k:
            break
        _place(table, cpos, ch, p, int(table[c, ch]), table[c, ch + 1])
        p = c
    _place(table, cpos, ch, p, i, k)


@njit(cache=True, nogil=True)
def heap_insert(table, cw, cpos, ch, st, i):
    """Add row i (its key |table[i, cw]| > 0) to the heap."""
    n = int(st[H_SIZE])
    k = abs(table[i, cw])
    _place(table, cpos, ch, n, i, k)
    st[H_SIZE] = n + 1
    st[H_SUM] += k
    _sift_up(table, cpos, ch, n)


@njit(cache=True, nogil=True)
def heap_remove(table, cw, cpos, ch, st, i):
    """Take row i out of the heap (it must be in it); its stored value is left as it is."""
    p = int(table[i, cpos]) - 1
    n = int(st[H_SIZE]) - 1
    st[H_SUM] -= abs(table[i, cw])
    st[H_SIZE] = n
    table[i, cpos] = 0.0
    if p == n:
        return
    k = table[n, ch + 1]
    _place(table, cpos, ch, p, int(table[n, ch]), k)
    if p > 0 and k < table[(p - 1) >> 1, ch + 1]:
        _sift_up(table, cpos, ch, p)
    else:
        _sift_down(table, cpos, ch, p, n)


@njit(cache=True, nogil=True)
def heap_lower(table, cpos, ch, i, k):
    """Row i's key fell to k (below its heap key): store it and sift the entry up."""
    p = int(table[i, cpos]) - 1
    table[p, ch + 1] = k
    _sift_up(table, cpos, ch, p)


@njit(cache=True, nogil=True)
def _settle_top(table, cw, cpos, ch, n):
    """Make the heap key of the top entry exact (keys may lag below the truth: a key that grew is not
    sifted down until its entry reaches the top). Returns the exact key of the new top."""
    while True:
        k = abs(table[int(table[0, ch]), cw])
        if table[0, ch + 1] >= k:
            return k
        table[0, ch + 1] = k
        _sift_down(table, cpos, ch, 0, n)


@njit(cache=True, nogil=True, inline="always")
def read_weight(table, cw, i, theta):
    """The weight in force of row i: its stored value moved towards 0 by Theta."""
    return shrink(table[i, cw], theta)


@njit(cache=True, nogil=True)
def set_weight(table, cw, cpos, ch, st, i, w):
    """Give row i the weight w (in force): re-key it in the heap, or drop it when w is 0."""
    key = abs(w) + st[H_THETA]
    in_heap = table[i, cpos] != 0.0
    if key <= st[H_THETA]:       # 0, or too small to show next to Theta: the weight is 0
        if in_heap:
            heap_remove(table, cw, cpos, ch, st, i)
        table[i, cw] = 0.0
        return
    if in_heap:
        # the key sum follows the exact keys; the heap key only has to stay at or below the exact
        # key, so a key that grew is left for ``_settle_top`` (most never reach the top)
        st[H_SUM] += key - abs(table[i, cw])
        table[i, cw] = key if w > 0.0 else -key
        if key < table[int(table[i, cpos]) - 1, ch + 1]:
            heap_lower(table, cpos, ch, i, key)
    else:
        table[i, cw] = key if w > 0.0 else -key
        heap_insert(table, cw, cpos, ch, st, i)


@njit(cache=True, nogil=True)
def rebase(table, cw, ch, st):
    """Subtract Theta from every key (order unchanged), sum the keys afresh, set Theta to 0."""
    theta = st[H_THETA]
    total = 0.0
    for p in range(int(st[H_SIZE])):
        i = int(table[p, ch])
        s = table[i, cw]
        s = s - theta if s > 0.0 else s + theta
        table[i, cw] = s
        table[p, ch + 1] -= theta         # every heap key shifts alike: the order and the bound hold
        total += abs(s)
    st[H_SUM] = total
    st[H_THETA] = 0.0


@njit(cache=True, nogil=True)
def project(table, cw, cpos, ch, st, z):
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
        if _settle_top(table, cw, cpos, ch, n) - Theta > theta:
            break
        i = int(table[0, ch])
        heap_remove(table, cw, cpos, ch, st, i)
        table[i, cw] = 0.0
        n -= 1
        theta = (st[H_SUM] - n * Theta - z) / n
    Theta += theta
    st[H_THETA] = Theta
    while n > 0 and _settle_top(table, cw, cpos, ch, n) <= Theta:   # a tie with theta, lost to rounding
        i = int(table[0, ch])
        heap_remove(table, cw, cpos, ch, st, i)
        table[i, cw] = 0.0
        n -= 1
    if n * Theta > REBASE * z:
        rebase(table, cw, ch, st)
    return theta


@njit(cache=True, nogil=True)
def sparse_step(table, cw, cpos, ch, st, idx, delta, z):
    """Add delta[j] to the weight of row idx[j] for every j (repeats add up), then project onto the
    L1 ball of radius z. O(k log n) amortized."""
    theta = st[H_THETA]
    for j in range(idx.shape[0]):
        i = idx[j]
        set_weight(table, cw, cpos, ch, st, i, read_weight(table, cw, i, theta) + delta[j])
    return project(table, cw, cpos, ch, st, z)


@njit(cache=True, nogil=True)
def weights_in_force(table, cw, st, out):
    """Write every row's weight in force into ``out`` (O(rows); for tests and saving)."""
    theta = st[H_THETA]
    for i in range(table.shape[0]):
        out[i] = read_weight(table, cw, i, theta)




@njit(cache=True, nogil=True)
def project_nonzero(table, cw, cpos, ch, st, z, method, seed):
    """The same projection computed the plain way, for comparison: the threshold of all the non-zero
    weights by Figure 2 (randomized pivot) or Figure 1 (sort), then every entry checked and the heap
    rebuilt. O(n) or O(n log n) per call, n = non-zero weights."""
    n = int(st[H_SIZE])
    if n == 0:
        return 0.0
    Theta = st[H_THETA]
    u = np.empty(n)
    rows = np.empty(n, np.int64)
    total = 0.0
    for p in range(n):
        i = int(table[p, ch])
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
    for p in range(n):
        i = rows[p]
        table[i, cpos] = 0.0
        if u[p] <= theta or abs(table[i, cw]) <= Theta:
            table[i, cw] = 0.0
        else:
            heap_insert(table, cw, cpos, ch, st, i)
    if int(st[H_SIZE]) * Theta > REBASE * z:
        rebase(table, cw, ch, st)
    return theta


@njit(cache=True, nogil=True)
def rebuild(table, cw, cpos, ch, st):
    """Index every non-zero stored weight in a fresh heap (after loading weights into column cw with
    Theta = 0). O(rows)."""
    st[H_SIZE] = 0.0
    st[H_SUM] = 0.0
    st[H_THETA] = 0.0
    for i in range(table.shape[0]):
        table[i, cpos] = 0.0
    for i in range(table.shape[0]):
        if table[i, cw] != 0.0:
            heap_insert(table, cw, cpos, ch, st, i)
