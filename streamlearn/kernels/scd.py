"""Stochastic coordinate descent (SCD) for L1-regularized squared and logistic loss (Shalev-Shwartz &
Tewari 2009, "Stochastic Methods for l1 Regularized Loss Minimization", Section 2).

The problem (Eq. 1) min_w (1/m) sum_i L(<w, x_i>, y_i) + lambda ||w||_1 is solved in its equivalent
non-negative form (Eq. 5-7): min over w in R^{2d}, w >= 0, of

    R(w) = (1/m) sum_i L(<w, x^_i>, y_i) + lambda sum_j w_j,     x^_i = [x_i, -x_i],

whose effective weight of feature c is w_c - w_{c+d}. Algorithm 1 picks a coordinate j uniformly from
{1..2d}, computes g_j = (grad R(w))_j and steps w_j += eta, eta = max(-w_j, -g_j / beta), beta an upper
bound on the second derivative of the loss (Eq. 9). Algorithm 2 (Section 2.1, "Efficient
Implementation") keeps z_i = <w, x^_i> so that g_j = (1/m) sum_{i: x^_ij != 0} L'(z_i, y_i) x^_ij +
lambda (L' as in Eq. 8) costs one pass over column j, and after the step z_i += eta x^_ij on the same
entries. Here:

* **Losses** are streamlearn's (``losses.loss_dloss``), so the objective is the one ``--objective``
  reports: squared loss (p - y)^2, L'(a, y) = 2 (a - y), beta = 2 (the paper's 1/2 (a - y)^2 has
  beta = 1: the same minimizer with lambda doubled); logistic log(1 + exp(-y a)) with y in {-1, +1},
  L' = -y / (1 + exp(y a)), beta = 1/4 (Eq. 8-9).
* **Importance weights** h_i replace the average: (1/m) sum_i becomes (1/sum h) sum_i h_i. The caller
  passes the normalized weights h_i / sum h (``hn``).
* **Base scores**: z_i starts at the example's initial prediction (VW's base), not at 0.
* **Feature scale**: the paper assumes x_i in [-1, +1]^d (Eq. 1), under which beta bounds the
  curvature of R along every coordinate (the condition of Theorem 1). Hashed data need not satisfy
  it, so the step of column c uses beta_c = beta * max(1, max_i x_ic^2): exactly the paper's step on
  data within [-1, 1], and still the condition of Theorem 1 (coordinate-wise) on data outside it, where
  the literal step would overshoot and diverge.
* **Only non-empty columns**: of the 2^b hashed columns only the d' that hold an entry are stored. An
  empty column has g_j = lambda > 0 and w_j = 0, so its step is max(0, -lambda/beta) = 0 and it never
  changes anything; sampling uniformly among the 2d' signed coordinates of the non-empty columns
  therefore produces the same sequence of distinct iterates as sampling among all 2 * 2^b (the same
  distribution, with the no-op steps removed). Columns whose entries all sum to 0 are dropped as
  empty too.
* **Epoch**: d' coordinate steps ("d coordinate steps" per pass, d = the non-empty columns); each step
  reads its column's entries once (counted as data accesses).

Coordinates are numbered as in the paper: j in [0, d') is the positive part of column j, j in [d', 2d')
the negative part of column j - d'. The kernels are compiled (numba, GIL released).
"""

import numpy as np
from numba import njit

from streamlearn.kernels.gd import learn_sgd_block
from streamlearn.kernels.losses import LOGISTIC, SQUARED, loss_dloss, loss_value
from streamlearn.kernels.spec import Layout, LearnerSpec, l1_regularizer
from streamlearn.kernels.state import A_SCD

RANDOM = 0   # coordinates drawn uniformly at random (Algorithm 1 / 2)
CYCLIC = 1   # coordinates 0+, 0-, 1+, 1-, ... in turn

#: upper bound on the second derivative of each loss in its prediction (Eq. 9, for streamlearn's losses)
BETA = {SQUARED: 2.0, LOGISTIC: 0.25}


@njit(cache=True, nogil=True)
def csr_to_csc(indptr, idx, val, ncols):
    """Column-oriented copy of a CSR matrix (rows = examples; ``indptr`` int64, ``idx`` uint32 column
    indices in [0, ncols), ``val`` float32), keeping only the non-empty columns. Repeated (row, column)
    entries are merged by adding their values (in float64, in row order), and entries that sum to 0
    are dropped (a column left with none is empty).

    Returns (cols, colptr, rows, vals): ``cols`` uint32, the distinct non-empty columns in increasing
    order (d' of them); ``colptr`` int64 of length d' + 1; ``rows`` int64 (increasing within a column);
    ``vals`` float64. Column k holds rows[colptr[k]:colptr[k+1]], vals[colptr[k]:colptr[k+1]].

    With ncols <= the number of entries a dense column map is used (memory at most 8 bytes per
    entry), else the distinct columns are found by sorting a copy of ``idx``."""
    n = idx.shape[0]
    nrows = indptr.shape[0] - 1
    # compact column id of every entry
    colid = np.empty(n, np.int64)
    if ncols <= n:
        cmap = np.full(ncols, -1, np.int64)
        for k in range(n):
            cmap[idx[k]] = 0
        d = 0
        for c in range(ncols):
            if cmap[c] == 0:
                cmap[c] = d
                d += 1
        ucols = np.empty(d, np.uint32)
        for c in range(ncols):
            if cmap[c] >= 0:
                ucols[cmap[c]] = c
        for k in range(n):
            colid[k] = cmap[idx[k]]
    else:
        ucols = np.unique(idx)
        d = ucols.shape[0]
        pos = np.searchsorted(ucols, idx)
        for k in range(n):
            colid[k] = pos[k]
    # counting sort by column, stable: rows stay in increasing order within a column
    start = np.zeros(d + 1, np.int64)
    for k in range(n):
        start[colid[k] + 1] += 1
    for c in range(d):
        start[c + 1] += start[c]
    fill = start[:d].copy()
    rows = np.empty(n, np.int64)
    vals = np.empty(n, np.float64)
    for r in range(nrows):
        for k in range(indptr[r], indptr[r + 1]):
            c = colid[k]
            p = fill[c]
            rows[p] = r
            vals[p] = np.float64(val[k])
            fill[c] = p + 1
    # merge repeated rows (adjacent within a column), drop zeros and empty columns, in place
    colptr = np.zeros(d + 1, np.int64)
    cols = np.empty(d, np.uint32)
    out = 0
    dc = 0
    for c in range(d):
        first = out
        k = start[c]
        e = start[c + 1]
        while k < e:
            r = rows[k]
            v = vals[k]
            k += 1
            while k < e and rows[k] == r:
                v += vals[k]
                k += 1
            if v != 0.0:
                rows[out] = r
                vals[out] = v
                out += 1
        if out > first:
            cols[dc] = ucols[c]
            dc += 1
            colptr[dc] = out
    return cols[:dc].copy(), colptr[:dc + 1].copy(), rows[:out].copy(), vals[:out].copy()


@njit(cache=True, nogil=True)
def column_betas(colptr, vals, beta):
    """Per-column step curvature beta_c = beta * max(1, max_i x_ic^2) (see the module docstring: the
    paper's beta of Eq. 9 on data within [-1, 1], the bound Theorem 1 needs outside it)."""
    d = colptr.shape[0] - 1
    out = np.empty(d, np.float64)
    for c in range(d):
        m = 1.0
        for k in range(colptr[c], colptr[c + 1]):
            v = vals[k] * vals[k]
            if v > m:
                m = v
        out[c] = beta * m
    return out


@njit(cache=True, nogil=True)
def scd_step(colptr, rows, vals, betas, labels, hn, z, w, lam, code, j):
    """One step of Algorithm 2 (Section 2.1) on signed coordinate j (j < d': positive part of column
    j; j >= d': negative part of column j - d'): g_j = sum_i hn_i L'(z_i, y_i) x^_ij + lambda (Eq. 8,
    hn the normalized importance weights, labels in loss space), eta = max(-w_j, -g_j / beta_c),
    w_j += eta, z_i += eta x^_ij. Returns the number of entries read (the column's)."""
    d = colptr.shape[0] - 1
    c = j
    sign = 1.0
    if j >= d:
        c = j - d
        sign = -1.0
    s = colptr[c]
    e = colptr[c + 1]
    g = 0.0
    for k in range(s, e):
        i = rows[k]
        g += hn[i] * loss_dloss(code, z[i], labels[i], 0.5) * vals[k]
    g = sign * g + lam
    eta = -g / betas[c]
    if eta < -w[j]:
        eta = -w[j]
    if eta != 0.0:
        w[j] += eta
        step = sign * eta
        for k in range(s, e):
            z[rows[k]] += step * vals[k]
    return e - s


@njit(cache=True, nogil=True)
def scd_epochs(colptr, rows, vals, betas, labels, hn, z, w, lam, code, epochs, steps_per_epoch, order,
               seed, first_step):
    """``epochs`` * ``steps_per_epoch`` coordinate steps of Algorithm 2 (Shalev-Shwartz & Tewari 2009,
    Section 2.1) over the d' non-empty columns of a CSC matrix (``colptr``, ``rows``, ``vals`` from
    ``csr_to_csc``; ``w`` float64 of length 2d', paper layout; ``z`` the scores, updated in place).

    ``order`` RANDOM: each coordinate drawn uniformly from the 2d' (numpy's generator inside numba,
    seeded here with ``np.random.seed(seed)``, seed in [0, 2^32)); CYCLIC: the t-th step of the run
    (t counted from ``first_step``) visits column (t mod 2d') // 2, its positive part when t is even,
    its negative part when odd. Returns the entries read."""
    d = colptr.shape[0] - 1
    if d == 0:
        return 0
    n2 = 2 * d
    if order == RANDOM:
        np.random.seed(seed)
    reads = 0
    t = first_step
    for _ in range(epochs):
        for _ in range(steps_per_epoch):
            if order == RANDOM:
                j = np.random.randint(0, n2)
            else:
                k = t % n2
                j = k >> 1
                if k & 1:
                    j += d
            t += 1
            reads += scd_step(colptr, rows, vals, betas, labels, hn, z, w, lam, code, j)
    return reads


@njit(cache=True, nogil=True)
def scd_objective(labels, hn, z, w, lam, code):
    """(average loss sum_i hn_i L(z_i, y_i), lambda ||w_eff||_1 with w_eff = w_c - w_{c+d'}, the
    paper's lambda sum_j w_j of Eq. 7). The first two sum to the objective ``--objective`` reports."""
    loss = 0.0
    for i in range(z.shape[0]):
        loss += hn[i] * loss_value(code, z[i], labels[i], 0.5, -np.inf, np.inf)
    d = w.shape[0] // 2
    eff = 0.0
    tot = 0.0
    for c in range(d):
        eff += abs(w[c] - w[c + d])
        tot += w[c] + w[c + d]
    return loss, lam * eff, lam * tot


# ----------------------------------------------------------------------------- spec

# a batch method, run by streamlearn.scd_run (the solver: streamlearn.scd); the table holds the
# weights, filled in after the fit, which predict with the plain kernel
SCD = LearnerSpec(
    name="scd", code=A_SCD, kernel=learn_sgd_block,
    describe=lambda c: (f"scd (stochastic coordinate descent, a batch method: l1 = {c.l1:g}, "
                        f"{c.passes} epochs, {c.cd_order} coordinates)"),
    layout=lambda c: Layout(("w",), 1),
    regularizer=l1_regularizer,
    options=("l1", "cd_order", "max_memory"),
    choices={"cd_order": ("random", "cyclic")},
    plain_only=lambda c: "its coordinate steps are exact minimizations, with no step size",
    batch=True,
)
