"""streamlearn.batch against plain transcriptions: projections by bisection, gradients and steps by
loops over examples and classes, EG by its formula, and the line search's monotone objective."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from streamlearn import batch


def theta_bisect(u, z):
    """theta with sum [u - theta]_+ = z (0 if sum u <= z), by bisection."""
    if u.sum() <= z:
        return 0.0
    lo, hi = 0.0, float(u.max())
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(u - mid, 0).sum() > z:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def project_ref(v, z, sign=None):
    """Euclidean projection of v onto {||w||_1 <= z} (or sign * w >= 0 too), one column."""
    if sign is None:
        th = theta_bisect(np.abs(v), z)
        return np.array([math.copysign(max(abs(a) - th, 0.0), a) for a in v])
    u = np.array([max(s * a, 0.0) for s, a in zip(sign, v)])
    th = theta_bisect(u, z)
    return np.array([s * max(a - th, 0.0) for s, a in zip(sign, u)])


def softmax_grad_ref(X, y, W):
    """(1/n) sum_i x_i^T (p_i - e_{y_i}) with loops."""
    n, d = X.shape
    K = W.shape[1]
    G = np.zeros((d, K))
    total = 0.0
    for i in range(n):
        s = [sum(X[i, f] * W[f, k] for f in range(d)) for k in range(K)]
        m = max(s)
        e = [math.exp(a - m) for a in s]
        Z = sum(e)
        total += math.log(Z) + m - s[y[i]]
        for k in range(K):
            dk = e[k] / Z - (1.0 if k == y[i] else 0.0)
            for f in range(d):
                G[f, k] += X[i, f] * dk
    return total / n, G / n


@pytest.mark.parametrize("seed", range(6))
def test_threshold_and_projection_match_bisection(seed):
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((9, 4)) * rng.choice([0.1, 1.0, 5.0])
    z = float(rng.choice([0.5, 2.0, 50.0]))
    th = batch.simplex_threshold(np.abs(V), z)
    for j in range(4):
        assert th[j] == pytest.approx(theta_bisect(np.abs(V[:, j]), z), abs=1e-10)
    signs = rng.choice([-1.0, 1.0], size=V.shape)
    P = batch.project_columns(V, z, None)
    Q = batch.project_columns(V, z, signs)
    for j in range(4):
        np.testing.assert_allclose(P[:, j], project_ref(V[:, j], z), atol=1e-10)
        np.testing.assert_allclose(Q[:, j], project_ref(V[:, j], z, signs[:, j]), atol=1e-10)
        assert np.abs(P[:, j]).sum() <= z + 1e-9 and np.abs(Q[:, j]).sum() <= z + 1e-9
        assert np.all(signs[:, j] * Q[:, j] >= 0)
    # the projection is no farther from V than random feasible points
    for _ in range(20):
        q = project_ref(rng.standard_normal(9), z * rng.random())
        assert np.linalg.norm(V[:, 0] - P[:, 0]) <= np.linalg.norm(V[:, 0] - q) + 1e-12


@pytest.mark.parametrize("reg", batch.REGS)
def test_prox_matches_row_transcription(reg):
    rng = np.random.default_rng(3)
    W = rng.standard_normal((12, 5))
    W[2] = 0.0
    for a in (0.0, 0.3, 1.5, 20.0):
        P = batch.prox(W, reg, a)
        for r in range(12):
            row = W[r]
            if reg == "l1":
                want = np.sign(row) * np.maximum(np.abs(row) - a, 0)
            elif reg == "l1l2":
                norm = np.linalg.norm(row)
                want = row * max(0.0, 1 - a / norm) if norm > 0 else row * 0
            else:                       # row - Proj_{L1 ball of radius a}(row)
                want = row - project_ref(row, a) if a > 0 else row
            np.testing.assert_allclose(P[r], want, atol=1e-10)


def test_one_step_of_each_method_equals_the_loops():
    rng = np.random.default_rng(0)
    n, d, K = 7, 5, 3
    X = rng.standard_normal((n, d))
    y = rng.integers(0, K, n)
    y[:K] = np.arange(K)
    signs = rng.choice([-1.0, 1.0], size=(d, K))
    f0, G = softmax_grad_ref(X, y, np.zeros((d, K)))
    eta, z = 0.7, 0.4
    # l1 with signs: one projected step from 0
    res = batch.fit(X, y, method="l1", radius=z, signs=signs, eta0=eta, schedule="const", steps=1)
    want = np.column_stack([project_ref(-eta * G[:, j], z, signs[:, j]) for j in range(K)])
    np.testing.assert_allclose(res.W, want, atol=1e-12)
    assert res.history["objective"][0] == pytest.approx(softmax_grad_ref(X, y, want)[0], abs=1e-12)
    # fobos l1l2, two steps with eta0/sqrt(t)
    res = batch.fit(X, y, method="fobos", reg="l1l2", lam=0.05, eta0=eta, steps=2, record=[1, 2])
    W = np.zeros((d, K))
    for t in (1, 2):
        _, G = softmax_grad_ref(X, y, W)
        e = eta / math.sqrt(t)
        V = W - e * G
        W = np.array([row * max(0.0, 1 - e * 0.05 / np.linalg.norm(row)) for row in V])
    np.testing.assert_allclose(res.W, W, atol=1e-12)
    # eg on the signed simplex: u <- z u exp(-eta signs*g) / Z, from the uniform point
    res = batch.fit(X, y, method="eg", radius=z, signs=signs, eta0=eta, schedule="inv", steps=2)
    U = np.full((d, K), z / d)
    for t in (1, 2):
        _, G = softmax_grad_ref(X, y, signs * U)
        U = U * np.exp(-(eta / t) * signs * G)
        U = z * U / U.sum(axis=0)
    np.testing.assert_allclose(res.W, signs * U, atol=1e-12)
    # eg+- without signs keeps ||w_j||_1 <= z
    res = batch.fit(X, y, method="eg", radius=z, eta0=eta, steps=5)
    assert np.all(np.abs(res.W).sum(axis=0) <= z + 1e-12)


def test_minibatches_are_seeded_epochs_and_counted():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((10, 4))
    y = np.where(rng.standard_normal(10) > 0, 1.0, -1.0)
    res = batch.fit(X, y, loss="logistic", method="l1", radius=1.0, batch=0.3, steps=4, seed=5,
                    record=[1, 2, 3, 4])
    assert list(res.history["examples"]) == [3, 6, 9, 10]   # batches of 3 of a permutation, then its rest
    # the same steps by hand, with the same permutation
    order = np.random.default_rng(5).permutation(10)
    w = np.zeros(4)
    for t, rows in enumerate([order[0:3], order[3:6], order[6:9], order[9:10]], start=1):
        s = X[rows] @ w
        g = X[rows].T @ (-y[rows] / (1 + np.exp(y[rows] * s))) / len(rows)
        w = project_ref(w - g / math.sqrt(t), 1.0)
    np.testing.assert_allclose(res.W[:, 0], w, atol=1e-12)
    again = batch.fit(X, y, loss="logistic", method="l1", radius=1.0, batch=0.3, steps=4, seed=5)
    np.testing.assert_array_equal(again.W, res.W)


@pytest.mark.parametrize("accelerate", [False, True])
@pytest.mark.parametrize("loss,method", [("squared", "l1"), ("logistic", "l1"), ("softmax", "l1"),
                                         ("softmax", "fobos"), ("logistic", "fobos")])
def test_line_search_never_increases_the_objective(loss, method, accelerate):
    rng = np.random.default_rng(2)
    n, d = 40, 15
    X = rng.standard_normal((n, d))
    if loss == "softmax":
        y = rng.integers(0, 3, n)
    elif loss == "logistic":
        y = np.sign(X[:, :3].sum(axis=1) + 0.5 * rng.standard_normal(n))
    else:
        y = X[:, :3].sum(axis=1) + 0.1 * rng.standard_normal(n)
    res = batch.fit(X, y, loss=loss, method=method, radius=2.0, reg="l1l2" if loss == "softmax" else "l1",
                    lam=0.02, eta0=50.0, steps=60, line_search=True, record=np.arange(1, 61),
                    accelerate=accelerate)
    obj = res.history["objective"]
    assert np.all(np.diff(obj) <= 1e-12 * np.abs(obj[:-1]))
    assert obj[-1] < obj[0]
    # a function evaluation per trial step is counted on top of the gradients
    assert res.accesses > 60 * n * d


def test_sparse_input_equals_dense():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((30, 8)) * (rng.random((30, 8)) < 0.4)
    y = rng.integers(0, 3, 30)
    a = batch.fit(X, y, method="l1", radius=1.5, signs="nonneg", batch=0.2, steps=12, seed=1,
                  X_test=X, y_test=y)
    b = batch.fit(sp.csr_matrix(X), y, method="l1", radius=1.5, signs="nonneg", batch=0.2, steps=12, seed=1,
                  X_test=sp.csr_matrix(X), y_test=y)
    np.testing.assert_allclose(a.W, b.W, atol=1e-12)
    assert list(a.history["accesses"]) == list(b.history["accesses"])
    np.testing.assert_array_equal(a.history["test_error"], b.history["test_error"])
    assert np.all(a.W >= 0)


@pytest.mark.parametrize("kw,message", [
    (dict(method="l1"), "needs a radius"),
    (dict(method="eg", radius=1.0, line_search=True), "line_search needs the full gradient"),
    (dict(method="l1", radius=1.0, batch=0.5, line_search=True), "line_search needs the full gradient"),
    (dict(method="fobos", reg="l2"), "reg must be one of"),
    (dict(method="fobos", signs="nonneg"), "signs constrain"),
    (dict(method="l1", radius=1.0, batch=0.0), "batch must be a fraction"),
    (dict(method="l1", radius=1.0, signs="positive"), "signs must be 'nonneg'"),
    (dict(method="l1", radius=1.0, schedule="cubic"), "schedule must be one of"),
    (dict(method="l1", radius=1.0, accelerate=True), "accelerate needs line_search"),
])
def test_errors(kw, message):
    X = np.ones((4, 2))
    with pytest.raises(ValueError, match=message):
        batch.fit(X, np.array([0, 1, 0, 1]), **kw)


@pytest.mark.filterwarnings("ignore::UserWarning")   # scikit-learn >= 1.8 deprecates penalty= for l1_ratio=
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_line_search_with_tol_converges_to_scikit_learns_l1_logistic_optimum():
    from sklearn.linear_model import LogisticRegression
    rng = np.random.default_rng(6)
    n, d, lam = 80, 12, 0.02
    X = rng.standard_normal((n, d))
    y = np.sign(X[:, :4] @ np.array([1.0, -2.0, 0.5, 1.5]) + 0.5 * rng.standard_normal(n))
    res = batch.fit(X, y, loss="logistic", method="fobos", reg="l1", lam=lam, eta0=1.0, steps=5000,
                    line_search=True, tol=1e-10, record=10)
    assert res.history["step"][-1] < 5000                   # stopped by tol
    ref = LogisticRegression(penalty="l1", C=1.0 / (n * lam), fit_intercept=False, solver="liblinear",
                             tol=1e-12, max_iter=100000).fit(X, y)
    best = batch.objective(X, y, ref.coef_.reshape(d, 1), "logistic", "fobos", "l1", lam)
    assert res.history["objective"][-1] == pytest.approx(best, rel=1e-6)
    fast = batch.fit(X, y, loss="logistic", method="fobos", reg="l1", lam=lam, eta0=1.0, steps=5000,
                     line_search=True, tol=1e-10, record=10, accelerate=True)
    assert fast.history["objective"][-1] == pytest.approx(best, rel=1e-6)
    # a warm start from the optimum stays there (l1 starts are projected onto the ball first)
    again = batch.fit(X, y, loss="logistic", method="fobos", reg="l1", lam=lam, eta0=1.0, steps=3,
                      line_search=True, init=res.W)
    assert again.history["objective"][-1] <= res.history["objective"][-1] + 1e-12
    start = batch.fit(X, y, loss="logistic", method="l1", radius=0.5, steps=1, eta0=1e-300,
                      schedule="const", init=np.ones(d))
    assert np.abs(start.W).sum() == pytest.approx(0.5)
