"""A list of the possibly non-zero weights, for learners that visit all of them every example
(fobos linf, subgradient, smidas): column POS of the table holds a row's position + 1 in the list (0:
not listed), and column LIST holds the listed row indices in its first ``st[S_NNZ]`` rows. Adding
and listing are O(1); the learners compact the list (drop the rows whose weight became 0) while
they visit it."""

from numba import njit

from streamlearn.core.state import S_NNZ

W = 0       # the weight (or the learner's stored value)
POS = 1     # position + 1 in the list (0: not listed)
LIST = 2    # the listed rows, in the first st[S_NNZ] rows of this column


@njit(cache=True, nogil=True, inline="always")
def list_add(table, st, i, d):
    """Add d to row i's value in column W, listing the row when it was not listed."""
    table[i, W] += d
    if table[i, POS] == 0.0:
        n = int(st[S_NNZ])
        table[n, LIST] = i
        table[i, POS] = n + 1
        st[S_NNZ] = n + 1


@njit(cache=True, nogil=True)
def list_rebuild(table, st):
    """List every row whose value is not 0 (after loading a model)."""
    n = 0
    for i in range(table.shape[0]):
        table[i, POS] = 0.0
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            table[n, LIST] = i
            table[i, POS] = n + 1
            n += 1
    st[S_NNZ] = n
