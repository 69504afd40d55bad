"""Mini-batch bookkeeping shared by the learners that take ``--batch-size B`` (l1ball, fobos, eg):
each row's summed pending step sits in a table column, and the rows with one are listed in another
(the first ``st[S_BATCH_ROWS]`` rows of that column), so applying a batch costs O(its non-zeros)."""

from numba import njit

from streamlearn.kernels.state import S_BATCH_ROWS


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
