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
* **Step size** (``--cd-step``). Theorem 1 needs a beta with R(w + delta e_j) <= R(w) + delta g_j +
  beta delta^2 / 2 for every coordinate j. The paper takes beta of Eq. 9 (a bound on L''), which is
  enough when x_i is in [-1, +1]^d (Eq. 1): the curvature of R along j is (1/m) sum_i L''(z_i, y_i)
  x_ij^2 <= beta (1/m) sum_i x_ij^2 <= beta. Two forms of Algorithm 1 are implemented, both with a
  per-column beta_c in place of beta (the step max(-w_j, -g_j / beta_c), whose lambda inside g_j is
  the soft threshold, uses it for both):

  - ``COLUMN``: beta_c = beta * (1/m) sum_i x_ic^2 (importance-weighted:
    beta * sum_i hn_i x_ic^2), the coordinate's own smoothness constant from the bound above. It
    satisfies Theorem 1's condition coordinate-wise whatever the feature scale, and is at most the
    paper's beta on data within [-1, 1]; on sparse count features (text) it is far smaller than the
    paper's, so steps are correspondingly larger. A column with sum_i hn_i x_ic^2 = 0 (e.g. all its
    values underflow when squared) has beta_c = 0 and is never updated.
  - ``PAPER``: beta_c = beta * max(1, max_i x_ic^2): exactly the paper's step on data within
    [-1, 1], and still the condition of Theorem 1 on data outside it, where the literal step would
    overshoot and diverge.

  Both bound the curvature by beta = 1/4 for logistic loss, while at a good classifier most
  examples have L'' = q (1 - q) far below it (on 20 Newsgroups at lambda = 1/m, the curvature along
  the non-zero coordinates is a median 2.6% of beta_c), so the steps are that much too short and
  convergence takes thousands of epochs. ``NEWTON`` (``--cd-step newton``, the default; not the
  paper's algorithm) is coordinate descent with a Newton step at the current scores and a backtracking line
  search (CDN, Yuan, Chang, Hsieh & Lin 2010, JMLR 11, Section 4.1.2): ``scd_newton_step``, over the
  d' columns of the effective weights (the soft threshold of the L1 term inside the direction).
* **Only non-empty columns**: of the 2^b hashed columns only the d' that hold an entry are stored. An
  empty column has g_j = lambda > 0 and w_j = 0, so its step is max(0, -lambda/beta) = 0 and it never
  changes anything; sampling uniformly among the 2d' signed coordinates of the non-empty columns
  therefore produces the same sequence of distinct iterates as sampling among all 2 * 2^b (the same
  distribution, with the no-op steps removed). Columns whose entries all sum to 0 are dropped as
  empty too.
* **Epoch**: d' coordinate steps ("d coordinate steps" per pass, d = the non-empty columns); each step
  reads its column's entries once (counted as data accesses; newton: once more per line-search
  trial). With cyclic order an Algorithm 1 epoch visits half of the 2d' signed coordinates, a newton
  epoch all d' columns.

Coordinates are numbered as in the paper: j in [0, d') is the positive part of column j, j in [d', 2d')
the negative part of column j - d'. The kernels are compiled (numba, GIL released).
"""

import math

import numpy as np
from numba import njit

from streamlearn.errors import OptionError

from streamlearn.core.rules import learn_sgd_block
from streamlearn.core.losses import LOGISTIC, SQUARED, loss_dloss, loss_value
from streamlearn.core.spec import Layout, LearnerSpec, l1_regularizer
from streamlearn.options import Option

RANDOM = 0   # coordinates drawn uniformly at random (Algorithm 1 / 2)
CYCLIC = 1   # coordinates 0+, 0-, 1+, 1-, ... in turn
GREEDY = 2   # the coordinate whose step decreases the bound most (deterministic CD, DETCD)

PAPER = 0    # per-column beta_c = beta * max(1, max_i x_ic^2) (the paper's beta on data in [-1, 1])
COLUMN = 1   # per-column beta_c = beta * sum_i hn_i x_ic^2, the coordinate's smoothness constant
NEWTON = 2   # per-column Newton step at the current scores with a backtracking line search (CDN)

#: CDN's line search (Yuan et al. 2010, Section 4.1.2 / Algorithm 3): sufficient decrease sigma,
#: backtracking factor, at most this many trials, and the curvature floor nu
NEWTON_SIGMA = 0.01
NEWTON_BACKTRACK = 0.5
NEWTON_TRIALS = 30
NEWTON_NU = 1e-12
#: a Newton direction whose predicted decrease is below this relative rounding level is not taken
NEWTON_ROUNDING = 1e-12

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
    """``PAPER`` step: per-column curvature beta_c = beta * max(1, max_i x_ic^2) (see the module
    docstring: the paper's beta of Eq. 9 on data within [-1, 1], the bound Theorem 1 needs outside
    it)."""
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
def column_smoothness(colptr, rows, vals, hn, beta):
    """``COLUMN`` step: per-column curvature beta_c = beta * sum_i hn_i x_ic^2 (hn the normalized
    importance weights, so with unit weights beta * (1/m) sum_i x_ic^2), the smoothness constant of R
    along coordinate c (and c + d'): its second derivative there is sum_i hn_i L''(z_i, y_i) x_ic^2
    <= beta_c with beta of Eq. 9, which is the condition of Theorem 1 for that coordinate."""
    d = colptr.shape[0] - 1
    out = np.empty(d, np.float64)
    for c in range(d):
        s = 0.0
        for k in range(colptr[c], colptr[c + 1]):
            s += hn[rows[k]] * (vals[k] * vals[k])
        out[c] = beta * s
    return out


@njit(cache=True, nogil=True)
def draw_coordinate(n2):
    """A coordinate drawn uniformly from [0, n2) with numba's generator (Algorithm 1's "sample j
    uniformly at random"): the one place ``scd_epochs`` draws, so ``coordinate_sequence`` repeats its
    draws."""
    return np.random.randint(0, n2)


@njit(cache=True, nogil=True)
def coordinate_sequence(seed, n2, count):
    """The ``count`` coordinates ``scd_epochs`` draws with order RANDOM after ``np.random.seed(seed)``
    (for the tests' references)."""
    np.random.seed(seed)
    out = np.empty(count, np.int64)
    for t in range(count):
        out[t] = draw_coordinate(n2)
    return out


@njit(cache=True, nogil=True)
def scd_step(colptr, rows, vals, betas, labels, hn, z, w, lam, code, j):
    """One step of Algorithm 2 (Section 2.1) on signed coordinate j (j < d': positive part of column
    j; j >= d': negative part of column j - d'): g_j = sum_i hn_i L'(z_i, y_i) x^_ij + lambda (Eq. 8,
    hn the normalized importance weights, labels in loss space), eta = max(-w_j, -g_j / beta_c),
    w_j += eta, z_i += eta x^_ij, with the column's beta_c (``column_smoothness`` or
    ``column_betas``). A column with beta_c = 0 is never updated (nothing read). Returns the number
    of entries read (the column's)."""
    d = colptr.shape[0] - 1
    c = j
    sign = 1.0
    if j >= d:
        c = j - d
        sign = -1.0
    if not betas[c] > 0.0:
        return 0
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
def greedy_coordinate(colptr, rows, vals, betas, labels, hn, z, w, lam, code, dl):
    """The signed coordinate of deterministic coordinate descent (Shalev-Shwartz & Tewari 2009,
    Section 2, the deterministic rule of Algorithm 1, "DETCD"): from the full gradient, for every
    coordinate j the step eta_j = max(-w_j, -g_j / beta_c) of ``scd_step`` and the decrease it
    guarantees of the bound R(w + eta e_j) <= R(w) + eta g_j + beta_c eta^2 / 2, i.e.
    -(eta_j g_j + beta_c eta_j^2 / 2); the first coordinate with the largest one (0 when no step
    decreases the bound). ``dl`` (length m) is scratch for hn_i L'(z_i, y_i). Reads every entry once."""
    m = z.shape[0]
    for i in range(m):
        dl[i] = hn[i] * loss_dloss(code, z[i], labels[i], 0.5)
    d = colptr.shape[0] - 1
    best = 0
    best_dec = 0.0
    for c in range(d):
        if not betas[c] > 0.0:
            continue
        gc = 0.0
        for k in range(colptr[c], colptr[c + 1]):
            gc += dl[rows[k]] * vals[k]
        for half in range(2):
            j = c + half * d
            g = (gc if half == 0 else -gc) + lam
            eta = -g / betas[c]
            if eta < -w[j]:
                eta = -w[j]
            dec = -(eta * g + 0.5 * betas[c] * eta * eta)
            if dec > best_dec:
                best_dec = dec
                best = j
    return best


@njit(cache=True, nogil=True, inline="always")
def _d2loss(code, a, y):
    """Second derivative of streamlearn's loss in the prediction a: 2 for squared loss (p - y)^2,
    q (1 - q) with q = 1 / (1 + exp(-a)) for logistic (at most 1/4: Eq. 9's beta)."""
    if code == SQUARED:
        return 2.0
    e = math.exp(-abs(a))
    return e / ((1.0 + e) * (1.0 + e))


@njit(cache=True, nogil=True, inline="always")
def _loss_change(code, a, y, delta):
    """L(a + delta, y) - L(a, y) without cancellation: delta (2 (a - y) + delta) for squared loss;
    for logistic (y in {-1, +1}, u = -y a, u' = -y (a + delta)) log1p(expm1(u' - u) / (1 + exp(-u))),
    or L(a + delta) - L(a) (``loss_value``) when a margin or the change is large (no cancellation there)."""
    if code == SQUARED:
        return delta * (2.0 * (a - y) + delta)
    u = -y * a
    u2 = u - y * delta
    if u > 30.0 or u2 > 30.0 or abs(u2 - u) > 30.0:
        return loss_value(code, a + delta, y, 0.5, 0.0, 0.0) - loss_value(code, a, y, 0.5, 0.0, 0.0)
    return math.log1p(math.expm1(u2 - u) / (1.0 + math.exp(-u)))


@njit(cache=True, nogil=True)
def scd_newton_step(colptr, rows, vals, labels, hn, z, w, lam, code, c):
    """One coordinate-descent Newton step (CDN: Yuan, Chang, Hsieh & Lin 2010, "A Comparison of
    Optimization Methods and Software for Large-scale L1-regularized Linear Classification", JMLR 11,
    Section 4.1.2) on column c of the effective weights v_c = w_c - w_{c+d'} (``--cd-step newton``;
    not the Shalev-Shwartz & Tewari step). With g = sum_i hn_i L'(z_i, y_i) x_ic and
    h = max(sum_i hn_i L''(z_i, y_i) x_ic^2, nu), the direction minimizes g t + h t^2 / 2 +
    lambda |v_c + t| (a soft threshold): t = -(g + lambda) / h if g + lambda <= h v_c,
    -(g - lambda) / h if g - lambda >= h v_c, else -v_c. The step s t takes the first s in
    1, 1/2, 1/4, ... with F(v + s t e_c) - F(v) <= sigma s (g t + lambda (|v_c + t| - |v_c|)), F the
    objective (Eq. 1 with importance weights), its change computed over the column's entries only.
    Then w_c = max(v_c, 0), w_{c+d'} = max(-v_c, 0) and z_i += s t x_ic. For squared loss s = 1 is
    the exact minimizer along c and satisfies the condition (the decrease is at least half the
    model's: g t + lambda (|v_c + t| - |v_c|) <= -h t^2), so it is taken without evaluating it. A
    direction whose predicted decrease -(g t + lambda (|v_c + t| - |v_c|)) is below
    1e-12 |t| (sum_i hn_i |L'(z_i, y_i) x_ic| + lambda), the rounding error of evaluating it, is not
    taken (the coordinate is optimal to working precision; testing such a step would only compare
    rounding errors). Returns the entries read (the column's, once for g and h and once per
    evaluated trial)."""
    d = colptr.shape[0] - 1
    s = colptr[c]
    e = colptr[c + 1]
    g = 0.0
    gabs = 0.0
    h = 0.0
    for k in range(s, e):
        i = rows[k]
        x = vals[k]
        gi = hn[i] * loss_dloss(code, z[i], labels[i], 0.5) * x
        g += gi
        gabs += abs(gi)
        h += hn[i] * _d2loss(code, z[i], labels[i]) * x * x
    reads = e - s
    if h < NEWTON_NU:
        h = NEWTON_NU
    v = w[c] - w[c + d]
    if g + lam <= h * v:
        t = -(g + lam) / h
    elif g - lam >= h * v:
        t = -(g - lam) / h
    else:
        t = -v
    if t == 0.0:
        return reads
    model = g * t + lam * (abs(v + t) - abs(v))
    if not -model > NEWTON_ROUNDING * abs(t) * (gabs + lam):
        return reads
    step = 1.0
    ok = code == SQUARED
    for _ in range(0 if ok else NEWTON_TRIALS):
        delta = step * t
        change = lam * (abs(v + delta) - abs(v))
        for k in range(s, e):
            i = rows[k]
            change += hn[i] * _loss_change(code, z[i], labels[i], delta * vals[k])
        reads += e - s
        if change <= NEWTON_SIGMA * step * model:
            ok = True
            break
        step *= NEWTON_BACKTRACK
    if not ok:
        return reads
    delta = step * t
    v += delta
    w[c] = v if v > 0.0 else 0.0
    w[c + d] = -v if v < 0.0 else 0.0
    for k in range(s, e):
        z[rows[k]] += delta * vals[k]
    return reads


@njit(cache=True, nogil=True)
def scd_epochs(colptr, rows, vals, betas, labels, hn, z, w, lam, code, epochs, steps_per_epoch, order,
               seed, first_step, form=COLUMN):
    """``epochs`` * ``steps_per_epoch`` coordinate steps of Algorithm 2 (Shalev-Shwartz & Tewari 2009,
    Section 2.1) over the d' non-empty columns of a CSC matrix (``colptr``, ``rows``, ``vals`` from
    ``csr_to_csc``; ``w`` float64 of length 2d', paper layout; ``z`` the scores, updated in place).

    ``form`` COLUMN or PAPER: the steps of ``scd_step`` over the 2d' signed coordinates, with
    ``betas`` the per-column beta_c of the form (``column_smoothness`` for COLUMN, ``column_betas``
    for PAPER). ``order`` RANDOM: each coordinate drawn uniformly from the 2d' (numpy's generator
    inside numba, seeded here with ``np.random.seed(seed)``, seed in [0, 2^32); the draws are
    ``coordinate_sequence(seed, 2d', steps)``); CYCLIC: the t-th step of the run (t counted from
    ``first_step``) visits column (t mod 2d') // 2, its positive part when t is even, its negative part
    when odd.

    GREEDY (COLUMN or PAPER only): the coordinate of ``greedy_coordinate`` (deterministic CD), whose
    full gradient is counted in the entries read.

    ``form`` NEWTON: the steps of ``scd_newton_step`` over the d' columns (``betas`` unused): RANDOM
    draws ``coordinate_sequence(seed, d', steps)``, CYCLIC visits column t mod d'.

    Returns the entries read."""
    d = colptr.shape[0] - 1
    if d == 0:
        return 0
    n = d if form == NEWTON else 2 * d
    if order == RANDOM:
        np.random.seed(seed)
    reads = 0
    t = first_step
    dl = np.empty(z.shape[0] if order == GREEDY else 0)
    for _ in range(epochs):
        for _ in range(steps_per_epoch):
            if order == GREEDY:
                j = greedy_coordinate(colptr, rows, vals, betas, labels, hn, z, w, lam, code, dl)
                reads += rows.shape[0]
            elif order == RANDOM:
                j = draw_coordinate(n)
            elif form == NEWTON:
                j = t % n
            else:
                k = t % n
                j = k >> 1
                if k & 1:
                    j += d
            t += 1
            if form == NEWTON:
                reads += scd_newton_step(colptr, rows, vals, labels, hn, z, w, lam, code, j)
            else:
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

#: scd's own options (besides the shared --l1)
CD_ORDERS = ("random", "cyclic", "greedy")
CD_STEPS = ("column", "paper", "newton")
OPTIONS = (
    Option("cd_order", ("--cd-order",), "choice", "random", choices=CD_ORDERS, section="scd",
           help="scd: coordinates picked uniformly at random (the paper) or in turn."),
    Option("cd_step", ("--cd-step",), "choice", "newton", choices=CD_STEPS, section="scd",
           help="scd: step of a coordinate: newton = Newton step with line search (CDN, converges on "
                "text); column = Algorithm 1 with the coordinate's smoothness constant beta * mean x^2; "
                "paper = Algorithm 1 with beta * max(1, max x^2) (the paper's, for the reproductions)."),
    Option("max_memory", ("--max-memory",), "text", None, metavar="SIZE", section="scd",
           help="scd: refuse to load data needing more memory than SIZE (e.g. 2G). Default: 70% of RAM."),
)


# a batch method, run by streamlearn.run.scd_run (the solver over blocks: streamlearn.learners.scd.fit);
# the table holds the weights, filled in after the fit, which predict with the plain kernel
def _check(cfg, flag) -> None:
    if cfg.cd_order == "greedy" and cfg.cd_step == "newton":
        raise OptionError("--cd-order greedy is Algorithm 1's deterministic rule: it needs --cd-step column "
                          "or paper (the default newton step has no such bound)")


LEARNER = LearnerSpec(
    name="scd", order=8, summary="stochastic coordinate descent, batch", paper="Shalev-Shwartz & Tewari 2009; Yuan et al. 2010",
    example=("--l1", "1e-3", "--passes", "2"), declares=OPTIONS,
    kernel=learn_sgd_block, check=_check,
    describe=lambda c: (f"scd (stochastic coordinate descent, a batch method: l1 = {c.l1:g}, "
                        f"{c.passes} epochs, {c.cd_order} coordinates, {c.cd_step} step)"),
    layout=lambda c: Layout(("w",), 1),
    regularizer=l1_regularizer,
    options=("l1", "cd_order", "cd_step", "max_memory"),
    choices={"cd_order": CD_ORDERS, "cd_step": CD_STEPS},
    plain_only=lambda c: "its coordinate steps are exact minimizations, with no step size",
    batch=True,
)
