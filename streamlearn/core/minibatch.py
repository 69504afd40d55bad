"""Mini-batch bookkeeping shared by the learners that take ``--batch-size B`` (l1ball, fobos, eg):
each row's summed pending step sits in a table column, and the rows with one are listed in another
(the first ``st[S_BATCH_ROWS]`` rows of that column), so applying a batch costs O(its non-zeros).

The rate clock of a mini-batch run counts steps (``clock_step_scale``): step k of B examples is one
step of the papers' batch methods (Duchi et al. 2008, Section 2, eq. 2 with the gradient of the
batch; Duchi & Singer 2009, Section 3, eqs. 2-3), taken with rate_k = eta0 t_k^-power_t where
t_k = initial_t + k. Every example of the step uses that rate, scaled by its own importance weight
h; the weights do not move the clock (a step is a step). With ``--batch-size 1`` the learners keep
VW's clock instead (t += h per example, ``gd.step_scale``), which is the same one for unit weights."""

import math

from numba import njit

from streamlearn.core.rules import step_scale
from streamlearn.core.state import S_BATCH_EX, S_BATCH_ROWS, S_ETA, S_T


@njit(cache=True, nogil=True, inline="always")
def clock_step_scale(st, h, power_t, adaptive, batch):
    """(t, scale) of a learned example of importance h, for the learners that take mini-batches.
    One example at a time (batch 1) it is VW's clock, ``gd.step_scale``. Inside a mini-batch (plain
    schedule only) the clock advances by 1 when the example opens a step (no example of the batch
    learned yet) and stays there for the rest of the step, so scale = eta0 h t_k^-power_t for each
    example of step k."""
    if batch <= 1:
        return step_scale(st, h, power_t, adaptive)
    t = st[S_T]
    if st[S_BATCH_EX] == 0.0:
        t += 1.0
        st[S_T] = t
    return t, st[S_ETA] * h * math.pow(t, -power_t)


@njit(cache=True, nogil=True)
def pend(table, i, d, st, cacc, clist):
    """Add d to row i's pending step (column ``cacc``), listing the row (column ``clist``) the first
    time."""
    if table[i, cacc] == 0.0 and d != 0.0:
        m = int(st[S_BATCH_ROWS])
        table[m, clist] = i
        st[S_BATCH_ROWS] = m + 1
    table[i, cacc] += d
    if table[i, cacc] == 0.0:      # cancelled out: keep the row listed with a tiny marker
        table[i, cacc] = 5e-324


@njit(cache=True, nogil=True, inline="always")
def pend_example(table, idx, val, s, f, u, st, cacc, clist):
    """Pend an example's step u x_i on each of its features s..f-1."""
    for k in range(s, f):
        pend(table, idx[k], u * val[k], st, cacc, clist)
