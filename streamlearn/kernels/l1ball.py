"""Projected stochastic gradient onto the L1 ball (Duchi, Shalev-Shwartz, Singer & Chandra 2008,
Section 2, eq. 2): after the gradient step of every learned example,

    w <- Pi_{||w||_1 <= z}(w - rate_t h dloss(p, y) x),   rate_t = eta0 t^-power_t

(the plain schedule of ``--sgd``; with ``--invariant`` the step is the importance-invariant one). The
weights are kept un-shifted with the cumulative shift Theta in ``st[S_THETA]``
(``streamlearn.kernels.online_projection``): the default projection costs O(k log n) per example
for k features and n non-zero weights; ``--projection linear|sort`` recomputes it over all non-zero
weights (Figures 2 and 1) for comparison.

Table columns: 0 the stored (un-shifted) weight, 1 the heap position + 1, 2 and 3 the heap (row, key);
with ``--batch-size B`` > 1 also 4 the pending step of the row and 5 the list of rows with one.

Mini-batches (``--batch-size B``): the B examples' steps are summed per coordinate and averaged, then
applied as one step followed by one projection; predictions inside a batch use the weights at its
start. A batch still open when the model is saved is applied then (``flush``).
"""

import numpy as np

from numba import njit

from streamlearn.kernels.gd import step_scale
from streamlearn.kernels.loop import base_start, example_loop, squared_norm, sum_end
from streamlearn.kernels.projection import pivot_seed
from streamlearn.kernels.minibatch import pend_example
from streamlearn.kernels.losses import loss_dloss, loss_positive, loss_update
from streamlearn.kernels.online_projection import (
    project, project_nonzero, read_weight, rebuild, set_weight,
)
from streamlearn.kernels.spec import Layout, LearnerSpec
from streamlearn.kernels.state import (
    A_L1BALL, I_BATCH, I_INVARIANT, I_PROJECTION, I_SEED, P_POWER_T, P_RADIUS, PROJ_LINEAR, PROJ_SORT,
    PROJ_TREE, S_BATCH_EX, S_BATCH_ROWS, S_MAX_LABEL, S_MIN_LABEL, S_NLEARN, S_T, S_THETA,
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
        theta = st[S_THETA]
        for m in range(int(st[S_BATCH_ROWS])):
            i = int(table[m, CLIST])
            d = table[i, CACC] / n
            table[i, CACC] = 0.0
            set_weight(table, CW, CPOS, CH, st, i, read_weight(table, CW, i, theta) + d)
        project_with(table, st, z, method, seed)
    st[S_BATCH_ROWS] = 0.0
    st[S_BATCH_EX] = 0.0


@njit(cache=True, nogil=True)
def finalize(table, prm, iprm, st):
    """Apply an open mini-batch (before saving)."""
    if iprm[I_BATCH] > 1:
        flush_batch(table, st, prm[P_RADIUS], iprm[I_PROJECTION], iprm[I_SEED])


@njit(cache=True, nogil=True)
def l1ball_settings(prm, iprm):
    """(invariant, radius z, projection method, seed, batch size, power_t)."""
    return (iprm[I_INVARIANT] != 0, prm[P_RADIUS], iprm[I_PROJECTION], iprm[I_SEED], iprm[I_BATCH],
            prm[P_POWER_T])


@njit(cache=True, nogil=True, inline="always")
def l1ball_view(cfg, st):
    return st[S_THETA]


@njit(cache=True, nogil=True, inline="always")
def l1ball_weight(table, i, cfg, theta):
    """The stored weight of row i moved towards 0 by the shift Theta."""
    return read_weight(table, CW, i, theta)


@njit(cache=True, nogil=True, inline="always")
def l1ball_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """The gradient step of eq. (2), then the projection onto the L1 ball (Section 2); with
    mini-batches the step is pended and a full batch applied and projected once."""
    invariant, z, method, seed, batch, power_t = cfg
    t, scale = step_scale(st, h, power_t, False)
    if loss_positive(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL]):
        if invariant:
            u = loss_update(code, p, y, tau, scale, squared_norm(val, s, f))
        else:
            u = -loss_dloss(code, p, y, tau) * scale
        if u != 0.0 and u == u:
            if batch > 1:
                pend_example(table, idx, val, s, f, u, st, CACC, CLIST)
            else:
                for k in range(s, f):
                    i = idx[k]
                    set_weight(table, CW, CPOS, CH, st, i,
                               read_weight(table, CW, i, st[S_THETA]) + u * val[k])
                project_with(table, st, z, method, seed)
    st[S_T] = t
    st[S_NLEARN] += 1.0
    if batch > 1:
        st[S_BATCH_EX] += 1.0
        if int(st[S_BATCH_EX]) == batch:
            flush_batch(table, st, z, method, seed)


@njit(cache=True, nogil=True)
def learn_l1ball_block(indptr, idx, val, labels, weights, bases, nfeat, start, end, table, prm, iprm, st,
                       ctr, preds):
    """Examples start..end-1 with projected SGD onto the L1 ball through the example loop."""
    return example_loop(indptr, idx, val, labels, weights, bases, nfeat, start, end, table, prm, iprm, st,
                        ctr, preds, l1ball_settings(prm, iprm), l1ball_view, l1ball_weight, base_start, sum_end,
                        l1ball_learn)


@njit(cache=True, nogil=True)
def in_force(table, rows, theta):
    """Weights in force of the given rows (the stored weights moved towards 0 by Theta)."""
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        out[j] = read_weight(table, CW, rows[j], theta)
    return out


@njit(cache=True, nogil=True)
def after_load(table, prm, iprm, st):
    """Index the loaded weights (Theta 0) in the heap."""
    rebuild(table, CW, CPOS, CH, st)


# ----------------------------------------------------------------------------- spec

PROJECTIONS = {"tree": PROJ_TREE, "linear": PROJ_LINEAR, "sort": PROJ_SORT}


def _settings(cfg, prm, iprm) -> None:
    prm[P_RADIUS] = cfg.radius
    iprm[I_PROJECTION] = PROJECTIONS[cfg.projection]


L1BALL = LearnerSpec(
    name="l1ball", code=A_L1BALL, kernel=learn_l1ball_block, finalize=finalize, after_load=after_load,
    describe=lambda c: (f"l1ball (projected SGD onto the L1 ball, {c.rule()}: radius = {c.radius:g}, "
                        f"projection = {c.projection}, batch size = {c.batch_size})"),
    # stored weight, heap position, heap row and key; with mini-batches the pending step and row list
    layout=lambda c: Layout(("w", "pos", "heap_row", "heap_key")
                            + (("acc", "list") if c.batch_size > 1 else ()), 1),
    settings=_settings,
    in_force=lambda c, table, st, rows: in_force(table, rows, st[S_THETA]),
    slots=("S_THETA", "S_HSIZE", "S_HSUM", "S_BATCH_EX", "S_BATCH_ROWS"),
    options=("radius", "projection", "batch_size"),
    selected_by=("radius", "projection"),
    choices={"projection": tuple(PROJECTIONS)},
    plain_only=lambda c: "its projection is Euclidean",
)
