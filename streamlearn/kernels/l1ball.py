"""Projected stochastic gradient onto the L1 ball (Duchi, Shalev-Shwartz, Singer & Chandra 2008,
Section 2, eq. 2): after the gradient step of every learned example,

    w <- Pi_{||w||_1 <= z}(w - rate_t h dloss(p, y) x),   rate_t = eta0 t^-power_t

(the plain schedule of ``--sgd``; with ``--invariant`` the step is the importance-invariant one). The
weights are kept un-shifted with the cumulative shift Theta in ``st[S_CUM]``
(``streamlearn.kernels.online_projection``): the default projection costs O(k log n) per example
for k features and n non-zero weights; ``--projection linear|sort`` recomputes it over all non-zero
weights (Figures 2 and 1) for comparison.

Table columns: 0 the stored (un-shifted) weight, 1 the heap position + 1, 2 and 3 the heap (row, key);
with ``--batch-size B`` > 1 also 4 the pending step of the row and 5 the list of rows with one.

Mini-batches (``--batch-size B``): the B examples' steps are summed per coordinate and averaged, then
applied as one step followed by one projection; predictions inside a batch use the weights at its
start. A batch still open when the model is saved is applied then (``flush``).
"""

import math

import numpy as np

from numba import njit

from streamlearn.kernels.gd import begin_example, example_settings, finish_prediction
from streamlearn.kernels.projection import pivot_seed
from streamlearn.kernels.minibatch import pend
from streamlearn.kernels.losses import loss_dloss, loss_positive, loss_update
from streamlearn.kernels.online_projection import (
    project, project_nonzero, read_weight, rebuild, set_weight,
)
from streamlearn.kernels.state import (
    P_BATCH, P_SEED, P_INVARIANT, P_PROJECTION, P_RADIUS, PROJ_TREE, S_CUM, S_DUMP, S_ETA, S_MAX_LABEL,
    S_MIN_LABEL, S_NLEARN, S_BATCH_EX, S_BATCH_ROWS, S_T, S_W_LABELED, S_W_UNLABELED,
)

CW = 0      # stored weight
CPOS = 1    # heap position + 1
CH = 2      # heap: row index, and its key in column 3
CACC = 4    # mini-batch: pending step of the row
CLIST = 5   # mini-batch: rows with a pending step


@njit(cache=True, nogil=True)
def project_with(table, st, z, method, seed):
    if method == PROJ_TREE:
        project(table, CW, CPOS, CH, st, z)
    else:
        project_nonzero(table, CW, CPOS, CH, st, z, method, pivot_seed(seed, st[S_NLEARN]))


@njit(cache=True, nogil=True)
def flush_batch(table, st, z, method, seed):
    """Apply the pending steps averaged over the batch's examples, then project once."""
    n = st[S_BATCH_EX]
    if n > 0.0:
        theta = st[S_CUM]
        for m in range(int(st[S_BATCH_ROWS])):
            i = int(table[m, CLIST])
            d = table[i, CACC] / n
            table[i, CACC] = 0.0
            set_weight(table, CW, CPOS, CH, st, i, read_weight(table, CW, i, theta) + d)
        project_with(table, st, z, method, seed)
    st[S_BATCH_ROWS] = 0.0
    st[S_BATCH_EX] = 0.0


@njit(cache=True, nogil=True)
def finalize(table, prm, st):
    """Apply an open mini-batch (before saving)."""
    if int(prm[P_BATCH]) > 1:
        flush_batch(table, st, prm[P_RADIUS], int(prm[P_PROJECTION]), int(prm[P_SEED]))


@njit(cache=True, nogil=True)
def learn_l1ball_block(indptr, idx, val, labels, weights, bases, start, end, table, prm, st, preds):
    """Predict, score and (when training) learn examples start..end-1 with projected SGD onto the
    L1 ball; stops at the next progress row like the other kernels."""
    code, tau, power_t, holdout_period, train, bounds_follow, binary = example_settings(prm)
    invariant = prm[P_INVARIANT] != 0.0
    z = prm[P_RADIUS]
    method = int(prm[P_PROJECTION])
    seed = int(prm[P_SEED])
    batch = int(prm[P_BATCH])
    for e in range(start, end):
        h = weights[e]
        y, labeled, holdout = begin_example(st, code, labels[e], train, holdout_period, bounds_follow)
        s = indptr[e]
        f = indptr[e + 1]
        theta = st[S_CUM]
        raw = bases[e]
        for k in range(s, f):
            raw += read_weight(table, CW, idx[k], theta) * val[k]
        p = finish_prediction(st, preds, e, raw, code, y, tau, h, labeled, holdout, binary, f - s)
        if train and labeled and h > 0.0 and not holdout:
            t = st[S_T] + h
            scale = st[S_ETA] * h * math.pow(t, -power_t)
            if loss_positive(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL]):
                if invariant:
                    ppu = 0.0
                    for k in range(s, f):
                        x = np.float64(val[k])
                        ppu += x * x
                    u = loss_update(code, p, y, tau, scale, ppu)
                else:
                    u = -loss_dloss(code, p, y, tau) * scale
                if u != 0.0 and u == u:
                    if batch > 1:
                        for k in range(s, f):
                            pend(table, idx[k], u * val[k], st, CACC, CLIST)
                    else:
                        for k in range(s, f):
                            i = idx[k]
                            set_weight(table, CW, CPOS, CH, st, i,
                                       read_weight(table, CW, i, st[S_CUM]) + u * val[k])
                        project_with(table, st, z, method, seed)
            st[S_T] = t
            st[S_NLEARN] += 1.0
            if batch > 1:
                st[S_BATCH_EX] += 1.0
                if int(st[S_BATCH_EX]) == batch:
                    flush_batch(table, st, z, method, seed)
        if st[S_W_LABELED] + st[S_W_UNLABELED] >= st[S_DUMP]:
            return e + 1
    return end


@njit(cache=True, nogil=True)
def in_force(table, rows, theta):
    """Weights in force of the given rows (the stored weights moved towards 0 by Theta)."""
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        out[j] = read_weight(table, CW, rows[j], theta)
    return out


@njit(cache=True, nogil=True)
def after_load(table, prm, st):
    """Index the loaded weights (Theta 0) in the heap."""
    rebuild(table, CW, CPOS, CH, st)
