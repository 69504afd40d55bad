"""Stochastic coordinate descent (--algo scd; Shalev-Shwartz & Tewari 2009, Section 2): the CSR -> CSC
conversion equals scipy's, every coordinate step equals a dense NumPy transcription of Algorithm 1
(with either per-column beta: the column's smoothness constant, the default, or the paper's) and of
CDN's Newton step with its line search (--cd-step newton), seeded random epochs equal the same
transcriptions over the kernel's coordinate draws, the iterates converge to the optimum of
scikit-learn's solvers under every step form, and runs are reproducible."""

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.linear_model import Lasso, LogisticRegression

from streamlearn.learners.scd import fit as scd
from streamlearn.learners import scd as K
from streamlearn.core.losses import LOGISTIC, LOSSES, SQUARED


# scikit-learn 1.8 deprecated penalty= in favour of l1_ratio=
_SKV = tuple(int(p) for p in sklearn.__version__.split(".")[:2])
L1 = {"l1_ratio": 1.0} if _SKV >= (1, 8) else {"penalty": "l1"}


def block_of(X, y, h=None, bases=None):
    """A parsed-block stand-in holding the rows of the dense matrix X."""
    m = X.shape[0]
    csr = sp.csr_matrix(X)
    return SimpleNamespace(indptr=csr.indptr.astype(np.int64), idx=csr.indices.astype(np.uint32),
                           val=csr.data.astype(np.float32), labels=np.asarray(y, np.float64),
                           weights=np.ones(m) if h is None else np.asarray(h, np.float64),
                           bases=np.zeros(m) if bases is None else np.asarray(bases, np.float64))


def random_csr(rng, nrows, ncols, per_row, dup_cols):
    """CSR arrays whose columns are drawn from ``dup_cols`` distinct values (so rows repeat columns),
    with some repeated entries that cancel exactly."""
    pool = rng.choice(ncols, size=dup_cols, replace=False).astype(np.uint32)
    lens = rng.integers(0, per_row + 1, size=nrows)
    indptr = np.zeros(nrows + 1, np.int64)
    idx, val = [], []
    for r in range(nrows):
        cols = rng.choice(pool, size=lens[r])
        vals = rng.normal(size=lens[r]).astype(np.float32)
        if lens[r] and rng.random() < 0.3:   # an entry and its negation: they sum to 0
            cols = np.append(cols, [cols[0], cols[0]])
            vals = np.append(vals, [np.float32(1.5), np.float32(-1.5)])
            cols = np.append(cols, cols[0])
            vals = np.append(vals, -vals[0])
        idx.append(cols)
        val.append(vals)
        indptr[r + 1] = indptr[r] + cols.shape[0]
    return indptr, np.concatenate(idx).astype(np.uint32), np.concatenate(val).astype(np.float32)


@pytest.mark.parametrize("ncols", [64, 1 << 20, 1 << 32])
def test_csr_to_csc_matches_scipy(ncols):
    rng = np.random.default_rng(ncols % 1000)
    for _ in range(5):
        indptr, idx, val = random_csr(rng, 40, ncols, 8, 12)
        cols, colptr, rows, vals = K.csr_to_csc(indptr, idx, val, ncols)
        # scipy on the compacted columns (its index arrays are int32)
        u, inv = np.unique(idx, return_inverse=True)
        ref = sp.csr_matrix((val.astype(np.float64), inv.ravel(), indptr), shape=(40, u.shape[0])).tocsc()
        ref.sum_duplicates()
        ref.eliminate_zeros()
        nonempty = np.flatnonzero(np.diff(ref.indptr))
        assert cols.dtype == np.uint32 and colptr.dtype == np.int64
        np.testing.assert_array_equal(cols, u[nonempty])
        for k, c in enumerate(nonempty):
            s, e = ref.indptr[c], ref.indptr[c + 1]
            np.testing.assert_array_equal(rows[colptr[k]:colptr[k + 1]], ref.indices[s:e])
            np.testing.assert_allclose(vals[colptr[k]:colptr[k + 1]], ref.data[s:e], rtol=1e-12, atol=1e-12)
        assert colptr[-1] == rows.shape[0] == ref.nnz


def dense_dloss(code, z, y):
    if code == SQUARED:
        return 2.0 * (z - y)
    return -y / (1.0 + np.exp(y * z))


def dense_d2loss(code, z):
    if code == SQUARED:
        return np.full_like(z, 2.0)
    q = 1.0 / (1.0 + np.exp(-z))
    return q * (1.0 - q)


def dense_loss(code, z, y):
    if code == SQUARED:
        return (z - y) ** 2
    return np.logaddexp(0.0, -y * z)


def documented_beta(X, hn, code, step):
    """beta_c as the docs state it: column = beta * sum_i hn_i x_ic^2 (beta * (1/m) sum_i x_ic^2 with
    unit weights); paper = beta * max(1, max_i x_ic^2)."""
    if step == "column":
        return K.BETA[code] * (hn @ (X * X))
    return K.BETA[code] * np.maximum(1.0, (X * X).max(axis=0))


def algorithm1(X, y, hn, base, lam, code, coords, step="paper"):
    """Algorithm 1 on X^ = [X, -X] with dense arithmetic, the gradient recomputed from scratch at
    every step; beta per column as documented (``documented_beta``). Yields w after each step."""
    Xh = np.hstack([X, -X])
    beta = documented_beta(X, hn, code, step)
    beta = np.concatenate([beta, beta])
    w = np.zeros(Xh.shape[1])
    for j in coords:
        z = base + Xh @ w
        g = (hn * dense_dloss(code, z, y)) @ Xh[:, j] + lam
        w[j] += max(-w[j], -g / beta[j])
        yield w.copy(), base + Xh @ w


def small_problem(rng, code, m=30, d=6):
    X = rng.normal(scale=1.2, size=(m, d)) * (rng.random((m, d)) < 0.7)
    X[0] = 0.5   # every column non-empty
    X = X.astype(np.float32).astype(np.float64)
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=m)
    if code == LOGISTIC:
        y = np.where(y > 0, 1.0, -1.0)
    h = rng.uniform(0.5, 2.0, size=m)
    base = rng.normal(scale=0.2, size=m)
    return X, y, h / h.sum(), base


def cdn(X, y, hn, base, lam, code, columns):
    """CDN (Yuan et al. 2010, Section 4.1.2) with dense arithmetic: at each listed column the Newton
    direction of the L1 problem along it (gradient and curvature recomputed from scratch), then the
    first step 1, 1/2, 1/4, ... whose decrease of the whole objective is at least 0.01 times the
    step times the model's (at most 30 trials; squared loss: step 1, the exact minimizer); no step
    when the model's decrease is below 1e-12 |t| (sum_i hn_i |L'_i x_ic| + lambda). Yields the
    weights and scores after each step."""
    v = np.zeros(X.shape[1])

    def objective(u):
        return hn @ dense_loss(code, base + X @ u, y) + lam * np.abs(u).sum()

    for c in columns:
        z = base + X @ v
        g = hn @ (dense_dloss(code, z, y) * X[:, c])
        gabs = hn @ np.abs(dense_dloss(code, z, y) * X[:, c])
        h = max(hn @ (dense_d2loss(code, z) * X[:, c] ** 2), 1e-12)
        if g + lam <= h * v[c]:
            t = -(g + lam) / h
        elif g - lam >= h * v[c]:
            t = -(g - lam) / h
        else:
            t = -v[c]
        model = g * t + lam * (abs(v[c] + t) - abs(v[c]))
        if -model <= 1e-12 * abs(t) * (gabs + lam):
            yield v.copy(), base + X @ v
            continue
        s = 1.0
        for _ in range(30):
            u = v.copy()
            u[c] += s * t
            if code == SQUARED or objective(u) - objective(v) <= 0.01 * s * model:
                v = u
                break
            s *= 0.5
        yield v.copy(), base + X @ v


def csc_of(X):
    csr = sp.csr_matrix(X)
    return K.csr_to_csc(csr.indptr.astype(np.int64), csr.indices.astype(np.uint32),
                        csr.data.astype(np.float32), X.shape[1])


def test_column_beta_is_the_documented_one():
    """beta_c of the default step is beta * (1/m) sum_i x_ic^2 (importance-weighted), at most the
    paper's on data within [-1, 1] and far below it on count features."""
    rng = np.random.default_rng(3)
    for code in (SQUARED, LOGISTIC):
        X, y, hn, base = small_problem(rng, code)
        cols, colptr, rows, vals = csc_of(X)
        np.testing.assert_allclose(K.column_smoothness(colptr, rows, vals, hn, K.BETA[code]),
                                   documented_beta(X, hn, code, "column"), rtol=1e-12)
        np.testing.assert_allclose(K.column_betas(colptr, vals, K.BETA[code]),
                                   documented_beta(X, hn, code, "paper"), rtol=1e-12)
    unit = np.full(30, 1 / 30)
    counts = rng.poisson(0.3, size=(30, 4)).astype(float) * 3
    counts[0] = 1.0
    column, paper = (documented_beta(counts, unit, LOGISTIC, step) for step in ("column", "paper"))
    assert np.all(column < paper)
    small = np.clip(counts / 10, -1, 1)
    assert np.all(documented_beta(small, unit, LOGISTIC, "column") <= K.BETA[LOGISTIC])


def test_zero_beta_column_is_never_updated():
    X = np.array([[1.0, 2.0], [0.5, 0.0], [0.0, 1.0]])
    cols, colptr, rows, vals = csc_of(X)
    y, hn, z, w = np.array([1.0, -1.0, 1.0]), np.full(3, 1 / 3), np.zeros(3), np.zeros(4)
    betas = np.array([0.0, 1.0])
    for j in (0, 2):   # both signs of column 0
        assert K.scd_step(colptr, rows, vals, betas, y, hn, z, w, 0.01, LOGISTIC, j) == 0
    assert not w.any() and not z.any()
    assert K.scd_step(colptr, rows, vals, betas, y, hn, z, w, 0.01, LOGISTIC, 1) == 2 and w[1] > 0


@pytest.mark.parametrize("step", ["column", "paper"])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("lam", [0.0, 0.01, 0.2])
def test_steps_equal_algorithm1(loss, lam, step):
    code = LOSSES[loss]
    rng = np.random.default_rng(7 + int(100 * lam) + code)
    for _ in range(3):
        X, y, hn, base = small_problem(rng, code)
        m, d = X.shape
        cols, colptr, rows, vals = csc_of(X)
        assert cols.shape[0] == d
        if step == "column":
            betas = K.column_smoothness(colptr, rows, vals, hn, K.BETA[code])
        else:
            betas = K.column_betas(colptr, vals, K.BETA[code])
        # cyclic order through scd_epochs, one step per call (first_step carries the position)
        nsteps = 6 * d
        cyclic = [(t % (2 * d)) // 2 + (d if t % 2 else 0) for t in range(nsteps)]
        # and an arbitrary fixed sequence through scd_step
        fixed = rng.integers(0, 2 * d, size=nsteps)
        for seq, via_epochs in ((cyclic, True), (fixed, False)):
            z = base.copy()
            w = np.zeros(2 * d)
            for t, (w_ref, z_ref) in enumerate(algorithm1(X, y, hn, base, lam, code, seq, step)):
                if via_epochs:
                    K.scd_epochs(colptr, rows, vals, betas, y, hn, z, w, lam, code, 1, 1, K.CYCLIC, 0, t)
                else:
                    K.scd_step(colptr, rows, vals, betas, y, hn, z, w, lam, code, seq[t])
                np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(z, z_ref, rtol=1e-12, atol=1e-12)
            assert np.any(w != 0.0) or lam > 0



@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("lam", [0.0, 0.01, 0.2])
def test_newton_steps_equal_cdn(loss, lam):
    code = LOSSES[loss]
    rng = np.random.default_rng(17 + int(100 * lam) + code)
    for _ in range(2):
        X, y, hn, base = small_problem(rng, code)
        X[1:4] *= 4.0      # values outside [-1, 1]
        d = X.shape[1]
        cols, colptr, rows, vals = csc_of(X)
        betas = np.zeros(d)   # unused by the Newton step
        for via_epochs in (True, False):
            seq = [t % d for t in range(5 * d)] if via_epochs else rng.integers(0, d, size=5 * d)
            z = base.copy()
            w = np.zeros(2 * d)
            for t, (v_ref, z_ref) in enumerate(cdn(X, y, hn, base, lam, code, seq)):
                if via_epochs:
                    K.scd_epochs(colptr, rows, vals, betas, y, hn, z, w, lam, code, 1, 1, K.CYCLIC, 0, t,
                                 K.NEWTON)
                else:
                    K.scd_newton_step(colptr, rows, vals, y, hn, z, w, lam, code, seq[t])
                assert np.all(w >= 0) and np.all(w[:d] * w[d:] == 0)
                # the Newton step divides by the curvature, so rounding differences grow faster
                np.testing.assert_allclose(w[:d] - w[d:], v_ref, rtol=1e-9, atol=1e-10)
                np.testing.assert_allclose(z, z_ref, rtol=1e-9, atol=1e-10)


def test_newton_line_search_backtracks():
    """Logistic loss with large wrong margins: the curvature at the scores is tiny, the Newton step
    overshoots and the line search halves it (several trials, each a pass over the column); the
    steps still equal the transcription's."""
    rng = np.random.default_rng(29)
    X, y, hn, _ = small_problem(rng, LOGISTIC, m=12, d=3)
    base = -6.0 * y + rng.normal(scale=0.5, size=12)
    cols, colptr, rows, vals = csc_of(X)
    lens = np.diff(colptr)
    z, w, trials = base.copy(), np.zeros(6), []
    for t, (v_ref, z_ref) in enumerate(cdn(X, y, hn, base, 0.001, LOGISTIC, [0, 1, 2, 0, 1, 2])):
        c = t % 3
        trials.append(K.scd_newton_step(colptr, rows, vals, y, hn, z, w, 0.001, LOGISTIC, c) // lens[c] - 1)
        np.testing.assert_allclose(w[:3] - w[3:], v_ref, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(z, z_ref, rtol=1e-9, atol=1e-10)
    assert max(trials) >= 3, trials


@pytest.mark.parametrize("step", ["column", "paper", "newton"])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_seeded_epochs_equal_reference(loss, step):
    """A few epochs of fit_scd with random coordinates (importance weights, base scores) equal the
    slow dense transcription run over the same draws: per epoch, coordinate_sequence of the epoch's
    seed (2d' signed coordinates for Algorithm 1, d' columns for newton), to 1e-9."""
    code = LOSSES[loss]
    rng = np.random.default_rng(23 + code)
    X, y, hn, base = small_problem(rng, code, m=40, d=7)
    h = hn * 40 * rng.uniform(0.5, 3.0)          # not normalized: fit_scd divides by the sum
    d, epochs, seed = X.shape[1], 4, 12345
    w_index, w_values, info = scd.fit_scd([block_of(X, y, h, base)], 6, loss, 0.02, epochs, "random", seed,
                                          step=step)
    n = d if step == "newton" else 2 * d
    seq = np.concatenate([K.coordinate_sequence(scd.epoch_seed(seed, e), n, d) for e in range(1, epochs + 1)])
    ref = cdn(X, y, hn, base, 0.02, code, seq) if step == "newton" else \
        algorithm1(X, y, hn, base, 0.02, code, seq, step)
    for w_ref, _ in ref:
        pass
    v_ref = w_ref if step == "newton" else w_ref[:d] - w_ref[d:]
    np.testing.assert_allclose(dense_weights(w_index, w_values, d), v_ref, rtol=1e-9, atol=1e-12)
    assert info["step"] == step and np.count_nonzero(v_ref) > 0

def objective(X, y, w, lam, code):
    p = X @ w
    if code == SQUARED:
        loss = np.mean((p - y) ** 2)
    else:
        loss = np.mean(np.logaddexp(0.0, -y * p))
    return loss + lam * np.abs(w).sum()


def dense_weights(w_index, w_values, d):
    w = np.zeros(d)
    w[w_index] = w_values
    return w


@pytest.mark.parametrize("step", ["column", "paper", "newton"])
@pytest.mark.parametrize("loss,lam", [("squared", 0.05), ("squared", 0.005), ("logistic", 0.01),
                                      ("logistic", 0.002)])
def test_converges_to_reference_optimum(loss, lam, step):
    code = LOSSES[loss]
    rng = np.random.default_rng(11)
    m, d = 200, 15
    X = rng.uniform(-1.0, 1.0, size=(m, d)).astype(np.float32).astype(np.float64)
    w_true = np.where(rng.random(d) < 0.5, rng.normal(scale=2.0, size=d), 0.0)
    y = X @ w_true + 0.5 * rng.normal(size=m)
    if code == LOGISTIC:
        y = np.where(y > 0, 1.0, -1.0)
        ref = LogisticRegression(solver="liblinear", fit_intercept=False, C=1.0 / (m * lam), tol=1e-12,
                                 max_iter=100000, **L1).fit(X, y).coef_.ravel()
    else:
        ref = Lasso(alpha=lam / 2, fit_intercept=False, tol=1e-14, max_iter=1000000).fit(X, y).coef_
    epochs = {"paper": 3000, "column": 1000, "newton": 200}[step]
    w_index, w_values, info = scd.fit_scd([block_of(X, y)], 4, loss, lam, epochs, "random", 3, step=step)
    w = dense_weights(w_index, w_values, d)
    r_ref, r_scd = objective(X, y, ref, lam, code), objective(X, y, w, lam, code)
    assert abs(r_scd - r_ref) <= 1e-4 * r_ref, (r_scd, r_ref)
    assert info["objective"] == pytest.approx(r_scd, rel=1e-10)
    assert 0 < info["nonzero"] < d or lam < 0.01
    # Eq. 7's R(w) over w in R^{2d} never increases (each step decreases it: Theorem 1's condition
    # holds per column; newton's line search ensures a decrease); the effective objective may,
    # while both parts of a column are positive (never with newton, which keeps one of them 0)
    obj = np.array(info["paper_objectives"])
    assert np.all(obj >= np.array(info["objectives"]))
    assert np.all(np.diff(obj) <= 1e-12 * obj[:-1])
    if step == "newton":
        assert info["objectives"] == info["paper_objectives"]


def test_reproducible_and_orders():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 12)) * (rng.random((60, 12)) < 0.5)
    y = np.where(X @ rng.normal(size=12) > 0, 1.0, -1.0)
    blocks = [block_of(X[:30], y[:30]), block_of(X[30:], y[30:])]
    seen = []

    def fit(order, seed, epochs=3, record=False):
        cb = (lambda e, i, v, a: seen.append((e, i.copy(), v.copy(), a))) if record else None
        return scd.fit_scd(blocks, 10, "logistic", 0.01, epochs, order, seed, on_epoch=cb)

    a, b, c = fit("random", 1, record=True), fit("random", 1), fit(0, 2)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1].tobytes() == b[1].tobytes()
    assert a[2]["objectives"] == b[2]["objectives"]
    assert a[2]["objectives"] != c[2]["objectives"]
    # one run of 3 epochs = 3 epochs of callbacks; the last callback holds the result
    assert [s[0] for s in seen] == [1, 2, 3]
    np.testing.assert_array_equal(seen[-1][1], a[0])
    np.testing.assert_array_equal(seen[-1][2], a[1])
    assert seen[-1][3] == a[2]["accesses"] and seen[0][3] < seen[1][3] < seen[2][3]
    assert a[2]["steps_per_epoch"] == a[2]["columns"] == 12
    # cyclic is deterministic: the seed does not matter
    p, q = fit("cyclic", 1), fit(1, 99)
    assert p[1].tobytes() == q[1].tobytes()
    # cyclic: every epoch reads each column's entries once (d' steps over 2d' coordinates: half a sweep)
    p2 = fit("cyclic", 0, epochs=2)
    assert p2[2]["accesses"] == 2 * np.count_nonzero(X)
    # a longer cyclic run continues the sweep rather than restarting it
    assert fit("cyclic", 0, epochs=1)[1].tobytes() != p2[1].tobytes()


def test_importance_unlabeled_and_bases():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, 5))
    y = X @ rng.normal(size=5) + rng.normal(size=40)
    h = rng.integers(1, 3, size=40).astype(float)
    base = rng.normal(size=40)
    one = scd.fit_scd([block_of(X, y, h, base)], 8, "squared", 0.01, 20, "random", 4)
    # importance h = integer k equals the example repeated k times
    rep = np.repeat(np.arange(40), h.astype(int))
    two = scd.fit_scd([block_of(X[rep], y[rep], None, base[rep])], 8, "squared", 0.01, 20, "random", 4)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_allclose(one[1], two[1], rtol=1e-9, atol=1e-12)
    # unlabeled examples (NaN label) and those with importance <= 0 are left out
    junk = block_of(rng.normal(size=(3, 5)), [np.nan, 1.0, 2.0], [1.0, 0.0, -1.0])
    three = scd.fit_scd([junk, block_of(X, y, h, base)], 8, "squared", 0.01, 20, "random", 4)
    assert three[1].tobytes() == one[1].tobytes() and three[2]["examples"] == 40
    assert three[2]["examples_read"] == 43
    # bases are part of the score: the objective at w = 0 is the loss of the bases
    zero = scd.fit_scd([block_of(X, y, h, base)], 8, "squared", 0.01, 0, "random", 4)
    assert zero[2]["objective"] == pytest.approx(np.sum(h * (base - y) ** 2) / h.sum(), rel=1e-12)


def test_bad_loss_and_empty():
    X = np.eye(3)
    with pytest.raises(ValueError):
        scd.fit_scd([block_of(X, [1.0, 0.0, 1.0])], 4, "hinge", 0.1, 1, "random", 0)
    with pytest.raises(ValueError):
        scd.fit_scd([block_of(X, [1.0, 0.0, 1.0])], 4, "squared", 0.1, 1, "sideways", 0)
    with pytest.raises(ValueError):
        scd.fit_scd([block_of(X, [1.0, 0.0, 1.0])], 4, "squared", 0.1, 1, "random", 0, step="huge")
    w_index, w_values, info = scd.fit_scd([], 4, "squared", 0.1, 2, "random", 0)
    assert w_index.shape == w_values.shape == (0,) and info["examples"] == 0


def test_memory_needed_grows():
    a = scd.memory_needed(1000, 10_000)
    assert scd.memory_needed(1000, 20_000) > a > scd.memory_needed(1000, 5_000)
    assert scd.memory_needed(2000, 10_000) > a
    # at least the CSC copy (int64 row + float64 value per entry) and three float64 per example
    assert a >= 16 * 10_000 + 24 * 1000


def dense_greedy(X, y, hn, base, lam, code, nsteps, step):
    """Deterministic coordinate descent (DETCD) with dense arithmetic: at every step the full
    gradient of R over X^ = [X, -X], each coordinate's step max(-w_j, -g_j / beta_j) and the decrease
    of the bound it guarantees, -(eta g + beta eta^2 / 2); the first coordinate with the largest one.
    Yields (coordinate, w) after each step."""
    Xh = np.hstack([X, -X])
    beta = documented_beta(X, hn, code, step)
    beta = np.concatenate([beta, beta])
    w = np.zeros(Xh.shape[1])
    for _ in range(nsteps):
        z = base + Xh @ w
        g = (hn * dense_dloss(code, z, y)) @ Xh + lam
        eta = np.maximum(-w, -g / beta)
        dec = -(eta * g + beta * eta ** 2 / 2)
        j = int(np.argmax(dec)) if dec.max() > 0 else 0
        w[j] += max(-w[j], -g[j] / beta[j])
        yield j, w.copy()


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("step", ["column", "paper"])
def test_greedy_order_equals_dense_detcd(loss, step):
    """--cd-order greedy: every step picks the dense transcription's coordinate and moves w as it does,
    and R(w) (Eq. 7) never increases."""
    code = LOSSES[loss]
    rng = np.random.default_rng(11 + code)
    X, y, hn, base = small_problem(rng, code)
    cols, colptr, rows, vals = csc_of(X)
    d = X.shape[1]
    betas = (K.column_smoothness(colptr, rows, vals, hn, K.BETA[code]) if step == "column"
             else K.column_betas(colptr, vals, K.BETA[code]))
    form = K.COLUMN if step == "column" else K.PAPER
    z = base.copy()
    w = np.zeros(2 * d)
    lam = 0.01
    last = np.inf
    for t, (j_ref, w_ref) in enumerate(dense_greedy(X, y, hn, base, lam, code, 4 * d, step)):
        dl = np.empty(z.shape[0])
        assert K.greedy_coordinate(colptr, rows, vals, betas, y, hn, z, w, lam, code, dl) == j_ref
        reads = K.scd_epochs(colptr, rows, vals, betas, y, hn, z, w, lam, code, 1, 1, K.GREEDY, 0, t, form)
        assert reads >= rows.shape[0]          # the full gradient is read at every step
        np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=1e-12)
        r = hn @ dense_loss(code, z, y) + lam * w.sum()
        assert r <= last + 1e-12
        last = r


def test_greedy_order_needs_a_bounded_step():
    from support.helpers import cli
    res = cli("train", "--algo", "scd", "--l1", "0.01", "--cd-order", "greedy", input="1 | a\n", expect_ok=False)
    assert res.output == ("Error: --cd-order greedy is Algorithm 1's deterministic rule: it needs --cd-step "
                          "column or paper (the default newton step has no such bound)\n")
    res = cli("train", "--algo", "scd", "--l1", "0.01", "--cd-order", "greedy", "--cd-step", "column",
              "--passes", "2", input="1 | a\n-1 | b\n1 | a b\n")
    assert "greedy coordinates" in res.output
