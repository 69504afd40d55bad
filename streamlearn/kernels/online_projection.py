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
* ``table[i, cpos]`` -- 1 + the position of i in the heap, 0 when absent;
* ``heap`` -- int64 row indices, a min-heap on |s_i| in its first ``state[H_SIZE]`` slots;
* ``state`` -- float64: Theta, the heap size and the key sum (``H_*`` slots).

S - n Theta loses precision as Theta grows, so when n Theta exceeds REBASE x z the keys are rebased:
Theta is subtracted from every key (the heap order is unchanged), S is summed afresh and Theta becomes 0.
"""

import numpy as np
from numba import njit

H_THETA = 0     # cumulative shift Theta
H_SIZE = 1      # number of entries in the heap
H_SUM = 2       # sum of the keys |s_i| in the heap
N_HSTATE = 3

REBASE = 1e4


@njit(cache=True, nogil=True, inline="always")
def _key(table, cw, i):
    return abs(table[i, cw])


@njit(cache=True, nogil=True, inline="always")
def _place(table, cpos, heap, p, i):
    heap[p] = i
    table[i, cpos] = p + 1


@njit(cache=True, nogil=True)
def _sift_up(table, cw, cpos, heap, p):
    i = heap[p]
    k = _key(table, cw, i)
    while p > 0:
        parent = (p - 1) >> 1
        j = heap[parent]
        if _key(table, cw, j) <= k:
            break
        _place(table, cpos, heap, p, j)
        p = parent
    _place(table, cpos, heap, p, i)


@njit(cache=True, nogil=True)
def _sift_down(table, cw, cpos, heap, p, n):
    i = heap[p]
    k = _key(table, cw, i)
    while True:
        c = 2 * p + 1
        if c >= n:
            break
        if c + 1 < n and _key(table, cw, heap[c + 1]) < _key(table, cw, heap[c]):
            c += 1
        j = heap[c]
        if _key(table, cw, j) >= k:
            break
        _place(table, cpos, heap, p, j)
        p = c
    _place(table, cpos, heap, p, i)


@njit(cache=True, nogil=True)
def heap_insert(table, cw, cpos, heap, state, i):
    """Add row i (its key |table[i, cw]| > 0) to the heap."""
    n = int(state[H_SIZE])
    _place(table, cpos, heap, n, i)
    state[H_SIZE] = n + 1
    state[H_SUM] += _key(table, cw, i)
    _sift_up(table, cw, cpos, heap, n)


@njit(cache=True, nogil=True)
def heap_remove(table, cw, cpos, heap, state, i):
    """Take row i out of the heap (it must be in it); its stored value is left as it is."""
    p = int(table[i, cpos]) - 1
    n = int(state[H_SIZE]) - 1
    state[H_SUM] -= _key(table, cw, i)
    state[H_SIZE] = n
    table[i, cpos] = 0.0
    if p == n:
        return
    _place(table, cpos, heap, p, heap[n])
    parent = (p - 1) >> 1
    if p > 0 and _key(table, cw, heap[p]) < _key(table, cw, heap[parent]):
        _sift_up(table, cw, cpos, heap, p)
    else:
        _sift_down(table, cw, cpos, heap, p, n)


@njit(cache=True, nogil=True, inline="always")
def read_weight(table, cw, i, theta):
    """The weight in force of row i: its stored value moved towards 0 by Theta."""
    s = table[i, cw]
    if s > theta:
        return s - theta
    if s < -theta:
        return s + theta
    return 0.0


@njit(cache=True, nogil=True)
def set_weight(table, cw, cpos, heap, state, i, w):
    """Give row i the weight w (in force): re-key it in the heap, or drop it when w is 0."""
    if table[i, cpos] != 0.0:
        heap_remove(table, cw, cpos, heap, state, i)
    key = abs(w) + state[H_THETA]
    if key <= state[H_THETA]:       # 0, or too small to show next to Theta: the weight is 0
        table[i, cw] = 0.0
        return
    table[i, cw] = key if w > 0.0 else -key
    heap_insert(table, cw, cpos, heap, state, i)


@njit(cache=True, nogil=True)
def rebase(table, cw, heap, state):
    """Subtract Theta from every key (order unchanged), sum the keys afresh, set Theta to 0."""
    theta = state[H_THETA]
    total = 0.0
    for p in range(int(state[H_SIZE])):
        i = heap[p]
        s = table[i, cw]
        s = s - theta if s > 0.0 else s + theta
        table[i, cw] = s
        total += abs(s)
    state[H_SUM] = total
    state[H_THETA] = 0.0


@njit(cache=True, nogil=True)
def project(table, cw, cpos, heap, state, z):
    """Project the stored vector onto {||w||_1 <= z}: raise Theta by the projection threshold and
    drop the entries that fall to 0. Returns the threshold applied (0 when already inside)."""
    n = int(state[H_SIZE])
    if n == 0:
        return 0.0
    Theta = state[H_THETA]
    if state[H_SUM] - n * Theta <= z:
        return 0.0
    theta = (state[H_SUM] - n * Theta - z) / n
    while n > 1:
        i = heap[0]
        if _key(table, cw, i) - Theta > theta:
            break
        heap_remove(table, cw, cpos, heap, state, i)
        table[i, cw] = 0.0
        n -= 1
        theta = (state[H_SUM] - n * Theta - z) / n
    Theta += theta
    state[H_THETA] = Theta
    while n > 0 and _key(table, cw, heap[0]) <= Theta:     # a tie with theta, lost to rounding
        i = heap[0]
        heap_remove(table, cw, cpos, heap, state, i)
        table[i, cw] = 0.0
        n -= 1
    if n * Theta > REBASE * z:
        rebase(table, cw, heap, state)
    return theta


@njit(cache=True, nogil=True)
def sparse_step(table, cw, cpos, heap, state, idx, delta, z):
    """Add delta[j] to the weight of row idx[j] for every j (repeats add up), then project onto the
    L1 ball of radius z. O(k log n) amortized."""
    theta = state[H_THETA]
    for j in range(idx.shape[0]):
        i = idx[j]
        set_weight(table, cw, cpos, heap, state, i, read_weight(table, cw, i, theta) + delta[j])
    return project(table, cw, cpos, heap, state, z)


@njit(cache=True, nogil=True)
def weights_in_force(table, cw, state, out):
    """Write every row's weight in force into ``out`` (O(rows); for tests and saving)."""
    theta = state[H_THETA]
    for i in range(table.shape[0]):
        out[i] = read_weight(table, cw, i, theta)


def new_heap_state(rows: int):
    """An empty heap for a table of ``rows`` rows, and its state array (Theta 0)."""
    return np.empty(rows, np.int64), np.zeros(N_HSTATE)
