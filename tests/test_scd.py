"""Stochastic coordinate descent (--algo scd; Shalev-Shwartz & Tewari 2009, Section 2): the CSR -> CSC
conversion equals scipy's, every coordinate step equals a dense NumPy transcription of Algorithm 1,
the iterates converge to the optimum of scikit-learn's solvers, and runs are reproducible."""

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.linear_model import Lasso, LogisticRegression

from streamlearn import scd
from streamlearn.kernels import scd as K
from streamlearn.kernels.losses import LOGISTIC, LOSSES, SQUARED


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


def algorithm1(X, y, hn, base, lam, code, coords):
    """Algorithm 1 on X^ = [X, -X] with dense arithmetic, the gradient recomputed from scratch at
    every step; beta per column as documented (beta * max(1, max x^2)). Yields w after each step."""
    Xh = np.hstack([X, -X])
    beta = K.BETA[code] * np.maximum(1.0, (X * X).max(axis=0))
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


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("lam", [0.0, 0.01, 0.2])
def test_steps_equal_algorithm1(loss, lam):
    code = LOSSES[loss]
    rng = np.random.default_rng(7 + int(100 * lam) + code)
    for _ in range(3):
        X, y, hn, base = small_problem(rng, code)
        m, d = X.shape
        csr = sp.csr_matrix(X)
        cols, colptr, rows, vals = K.csr_to_csc(csr.indptr.astype(np.int64), csr.indices.astype(np.uint32),
                                               csr.data.astype(np.float32), d)
        assert cols.shape[0] == d
        betas = K.column_betas(colptr, vals, K.BETA[code])
        # cyclic order through scd_epochs, one step per call (first_step carries the position)
        nsteps = 6 * d
        cyclic = [(t % (2 * d)) // 2 + (d if t % 2 else 0) for t in range(nsteps)]
        # and an arbitrary fixed sequence through scd_step
        fixed = rng.integers(0, 2 * d, size=nsteps)
        for seq, via_epochs in ((cyclic, True), (fixed, False)):
            z = base.copy()
            w = np.zeros(2 * d)
            for t, (w_ref, z_ref) in enumerate(algorithm1(X, y, hn, base, lam, code, seq)):
                if via_epochs:
                    K.scd_epochs(colptr, rows, vals, betas, y, hn, z, w, lam, code, 1, 1, K.CYCLIC, 0, t)
                else:
                    K.scd_step(colptr, rows, vals, betas, y, hn, z, w, lam, code, seq[t])
                np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(z, z_ref, rtol=1e-12, atol=1e-12)
            assert np.any(w != 0.0) or lam > 0


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


@pytest.mark.parametrize("loss,lam", [("squared", 0.05), ("squared", 0.005), ("logistic", 0.01),
                                      ("logistic", 0.002)])
def test_converges_to_reference_optimum(loss, lam):
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
    w_index, w_values, info = scd.fit_scd([block_of(X, y)], 4, loss, lam, 3000, "random", 3)
    w = dense_weights(w_index, w_values, d)
    r_ref, r_scd = objective(X, y, ref, lam, code), objective(X, y, w, lam, code)
    assert abs(r_scd - r_ref) <= 1e-4 * r_ref, (r_scd, r_ref)
    assert info["objective"] == pytest.approx(r_scd, rel=1e-10)
    assert 0 < info["nonzero"] < d or lam < 0.01
    # Eq. 7's R(w) over w in R^{2d} never increases (each step decreases it: Theorem 1's condition
    # holds per column); the effective objective may, while both parts of a column are positive
    obj = np.array(info["paper_objectives"])
    assert np.all(obj >= np.array(info["objectives"]))
    assert np.all(np.diff(obj) <= 1e-12 * obj[:-1])


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
    w_index, w_values, info = scd.fit_scd([], 4, "squared", 0.1, 2, "random", 0)
    assert w_index.shape == w_values.shape == (0,) and info["examples"] == 0


def test_memory_needed_grows():
    a = scd.memory_needed(1000, 10_000)
    assert scd.memory_needed(1000, 20_000) > a > scd.memory_needed(1000, 5_000)
    assert scd.memory_needed(2000, 10_000) > a
    # at least the CSC copy (int64 row + float64 value per entry) and three float64 per example
    assert a >= 16 * 10_000 + 24 * 1000
