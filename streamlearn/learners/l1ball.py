"""Projected stochastic gradient onto the L1 ball (Duchi, Shalev-Shwartz, Singer & Chandra 2008,
Section 2, eq. 2): after the gradient step of every learned example,

    w <- Pi_{||w||_1 <= z}(w - rate_t h dloss(p, y) x),   rate_t = eta0 t^-power_t

(the plain schedule of ``--sgd``; with ``--invariant`` the step is the importance-invariant one). The
weights are kept un-shifted with the cumulative shift Theta in ``st[S_THETA]``
(``streamlearn.core.online_projection``): the default projection costs O(k log n) per example
for k features and n non-zero weights; ``--projection linear|sort`` recomputes it over all non-zero
weights (Figures 2 and 1) for comparison.

Table columns: 0 the stored (un-shifted) weight; with ``--batch-size B`` > 1 also 1 the pending step
of the row and 2 the list of rows with one. The heap of the non-zero weights is not in the table: it
is a compact array that grows with their number (``heap_for``: one per table, made when the table is
first seen), so a row of the table costs what it costs plain SGD and the per-example cost does not
grow with 2^b.

Mini-batches (``--batch-size B``): the B examples' steps are summed per coordinate and averaged, then
applied as one step followed by one projection; predictions inside a batch use the weights at its
start, and the rate clock counts steps (``minibatch.clock_step_scale``: step k has eta0 k^-power_t
with ``--initial-t 0``). A batch still open when the model is saved is applied then (``flush``).
"""

import weakref

import numpy as np

from numba import njit

from streamlearn.core.loop import base_start, example_loop, squared_norm, sum_end
from streamlearn.core.projection import pivot_seed
from streamlearn.core.minibatch import clock_step_scale, pend_example
from streamlearn.core.losses import loss_dloss, loss_positive, loss_update
from streamlearn.core.online_projection import (
    heap_capacity, heap_entries, index_rows, new_heap, project, project_nonzero, read_weight,
    rebuild, set_weight,
)
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.core.state import (
    I_BATCH, I_INVARIANT, I_PROJECTION, I_SEED, P_POWER_T, P_RADIUS, PROJ_LINEAR, PROJ_SORT,
    PROJ_TREE, S_BATCH_EX, S_BATCH_ROWS, S_HSIZE, S_MAX_LABEL, S_MIN_LABEL, S_NLEARN, S_T, S_THETA,
)
from streamlearn.core.table import count_nonzero
from streamlearn.options import Option

CW = 0      # stored weight
CACC = 1    # mini-batch: pending step of the row
CLIST = 2   # mini-batch: rows with a pending step


@njit(cache=True, nogil=True)
def project_with(table, H, st, z, method, seed):
    if method == PROJ_TREE:
        project(table, CW, H, st, z)
    else:
        project_nonzero(table, CW, H, st, z, method, pivot_seed(seed, st[S_NLEARN]))


@njit(cache=True, nogil=True)
def flush_batch(table, H, st, z, method, seed):
    """Apply the pending steps averaged over the batch's examples, then project once."""
    n = st[S_BATCH_EX]
    if n > 0.0:
        theta = st[S_THETA]
        for m in range(int(st[S_BATCH_ROWS])):
            i = int(table[m, CLIST])
            d = table[i, CACC] / n
            table[i, CACC] = 0.0
            set_weight(table, CW, H, st, i, read_weight(table, CW, i, theta) + d)
        project_with(table, H, st, z, method, seed)
    st[S_BATCH_ROWS] = 0.0
    st[S_BATCH_EX] = 0.0


@njit(cache=True, nogil=True)
def _finalize(table, prm, iprm, st, H):
    if iprm[I_BATCH] > 1:
        flush_batch(table, H, st, prm[P_RADIUS], iprm[I_PROJECTION], iprm[I_SEED])


def finalize(table, prm, iprm, st):
    """Apply an open mini-batch (before saving)."""
    _finalize(table, prm, iprm, st, heap_for(table, st, int(st[S_BATCH_ROWS])))


@njit(cache=True, nogil=True)
def l1ball_settings(prm, iprm, H):
    """(invariant, radius z, projection method, seed, batch size, power_t, heap)."""
    return (iprm[I_INVARIANT] != 0, prm[P_RADIUS], iprm[I_PROJECTION], iprm[I_SEED], iprm[I_BATCH],
            prm[P_POWER_T], H)


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
    invariant, z, method, seed, batch, power_t, H = cfg
    t, scale = clock_step_scale(st, h, power_t, False, batch)
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
                    set_weight(table, CW, H, st, i, read_weight(table, CW, i, st[S_THETA]) + u * val[k])
                project_with(table, H, st, z, method, seed)
    st[S_T] = t
    st[S_NLEARN] += 1.0
    if batch > 1:
        st[S_BATCH_EX] += 1.0
        if int(st[S_BATCH_EX]) == batch:
            flush_batch(table, H, st, z, method, seed)


@njit(cache=True, nogil=True)
def _learn_block(block, state, start, end, H):
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, l1ball_settings(prm, iprm, H), l1ball_view, l1ball_weight, base_start,
                        sum_end, l1ball_learn)


def learn_l1ball_block(block, state, start, end):
    """Examples start..end-1 with projected SGD onto the L1 ball through the example loop. Every
    updated feature adds at most one heap entry, so the table's heap gets room for the block's
    feature entries (and a pending batch's rows) first."""
    indptr, table, st = block[0], state[0], state[3]
    H = heap_for(table, st, int(indptr[end] - indptr[start]) + int(st[S_BATCH_ROWS]))
    return _learn_block(block, state, start, end, H)


# ----------------------------------------------------------------------------- the heap of a table

_HEAPS: dict = {}       # id(table) -> (weak reference to the table, its heap)


def _forget(key: int) -> None:
    _HEAPS.pop(key, None)


def heap_for(table, st, extra: int) -> np.ndarray:
    """The heap of the table's non-zero weights, with room for ``extra`` more entries. A table seen for
    the first time with non-zero weights in its state (a copy) gets them indexed (O(rows), once)."""
    key = id(table)
    entry = _HEAPS.get(key)
    H = entry[1] if entry is not None and entry[0]() is table else None
    n = int(st[S_HSIZE])
    if H is None:
        H = new_heap(max(1024, 2 * (n + extra)))
        if n > 0:
            index_rows(table, CW, H)
        _HEAPS[key] = (weakref.ref(table, lambda _, key=key: _forget(key)), H)
    elif n == 0:
        H[0, 0] = 0.0           # no non-zero weight: whatever entries are left are stale
    need = heap_entries(H) + extra
    if need > heap_capacity(H):
        bigger = new_heap(max(need, 2 * heap_capacity(H)))
        m = heap_entries(H)
        bigger[:m + 1] = H[:m + 1]
        H = bigger
        _HEAPS[key] = (_HEAPS[key][0], H)
    return H


@njit(cache=True, nogil=True)
def in_force(table, rows, theta):
    """Weights in force of the given rows (the stored weights moved towards 0 by Theta)."""
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        out[j] = read_weight(table, CW, rows[j], theta)
    return out


def after_load(table, prm, iprm, st):
    """Index the loaded weights (Theta 0) in the heap."""
    st[S_HSIZE] = 0.0
    H = heap_for(table, st, count_nonzero(table, CW))
    rebuild(table, CW, H, st)


# ----------------------------------------------------------------------------- spec

PROJECTIONS = {"tree": PROJ_TREE, "linear": PROJ_LINEAR, "sort": PROJ_SORT}

#: l1ball's own option (besides the shared --radius and --batch-size)
OPTIONS = (
    Option("projection", ("--projection",), "choice", "tree", choices=tuple(PROJECTIONS), stored="always",
           legacy="tree", estimator=None, section="l1ball",
           help="L1-ball projection method: tree (O(k log n) per example), linear or sort "
                "(recomputed over all non-zero weights; for comparison)."),
)


def _settings(cfg, prm, iprm) -> None:
    prm[P_RADIUS] = cfg.radius
    iprm[I_PROJECTION] = PROJECTIONS[cfg.projection]


LEARNER = LearnerSpec(
    name="l1ball", order=2, summary="projected SGD onto the L1 ball", paper="Duchi, Shalev-Shwartz, Singer & Chandra 2008",
    example=("--radius", "5"), declares=OPTIONS,
    kernel=learn_l1ball_block, finalize=finalize, after_load=after_load,
    describe=lambda c: (f"l1ball (projected SGD onto the L1 ball, {c.rule()}: radius = {c.radius:g}, "
                        f"projection = {c.projection}, batch size = {c.batch_size})"),
    # the stored weight (the heap is outside the table); with mini-batches the pending step and row list
    layout=lambda c: Layout(("w",) + (("acc", "list") if c.batch_size > 1 else ()), 1),
    settings=_settings,
    in_force=lambda c, table, st, rows: in_force(table, rows, st[S_THETA]),
    options=("radius", "projection", "batch_size"),
    selected_by=("radius", "projection"),
    choices={"projection": tuple(PROJECTIONS)},
    plain_only=lambda c: "its projection is Euclidean",
)
