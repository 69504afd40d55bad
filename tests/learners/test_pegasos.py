"""Pegasos (--algo pegasos --l2 LAMBDA) against a dense NumPy transcription of the algorithm
(Shalev-Shwartz, Singer & Srebro 2007: eta_t = 1/(lambda t), w <- (1 - eta_t lambda) w - eta_t g x, then
the projection onto the ball of radius 1/sqrt(lambda)); the lazy global scale must give the same weights."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from support.helpers import cli
from streamlearn.estimators import SparseLinearClassifier, SparseLinearRegressor


def dense_pegasos(X, y, lam, loss="hinge", h=None):
    """The paper's Pegasos, eagerly, on dense float64 rows (values rounded to float32 as parsed)."""
    X = np.asarray(X.toarray(), np.float32).astype(np.float64)
    w = np.zeros(X.shape[1])
    for t, (x, yi) in enumerate(zip(X, y), start=1):
        eta = 1.0 / (lam * t)
        p = float(x @ w)
        if loss == "hinge":
            g = -yi if yi * p < 1.0 else 0.0
        else:               # logistic: scored clamped to [-50, 50], no step once VW's float32 loss is 0
            p = min(max(p, -50.0), 50.0)
            g = -yi / (1.0 + np.exp(yi * p)) if yi * p < 24 * np.log(2.0) else 0.0
        w = (1.0 - eta * lam) * w - eta * (1.0 if h is None else h[t - 1]) * g * x
        norm = np.linalg.norm(w)
        if norm > 1.0 / np.sqrt(lam):
            w *= (1.0 / np.sqrt(lam)) / norm
    return w


def data(seed, n=200, d=30):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.25, random_state=seed, format="csr")
    y = np.where(X @ rng.normal(size=d) > 0, 1, -1)
    return X, y


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.sampled_from([1e-3, 1e-2, 0.1, 1.0]),
       loss=st.sampled_from(["hinge", "logistic"]))
def test_lazy_scale_equals_dense_pegasos(seed, lam, loss):
    X, y = data(seed)
    est = SparseLinearClassifier(algo="pegasos", l2=lam, loss=loss, bits=10, noconstant=True).fit(X, y)
    want = dense_pegasos(X, y, lam, loss)
    got = est.coef_.toarray()[0]
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)
    assert np.linalg.norm(got) <= 1.0 / np.sqrt(lam) * (1 + 1e-12)


def test_importance_scales_the_gradient_term():
    X, y = data(3)
    h = np.linspace(0.5, 2.0, X.shape[0])
    est = SparseLinearClassifier(algo="pegasos", l2=0.05, loss="hinge", bits=10, noconstant=True)
    est.fit(X, y, sample_weight=h)
    assert np.allclose(est.coef_.toarray()[0], dense_pegasos(X, y, 0.05, "hinge", h), rtol=1e-9, atol=1e-12)


def test_resume_from_a_model_continues_the_run(tmp_path):
    """train -i continues t and the weights: two halves equal one run (model bytes)."""
    lines = [f"{'1' if i % 3 else '-1'} |f a{i % 7} b{i % 5}:0.5 c{i % 11}" for i in range(120)]
    (tmp_path / "all.vw").write_text("\n".join(lines) + "\n")
    (tmp_path / "a.vw").write_text("\n".join(lines[:60]) + "\n")
    (tmp_path / "b.vw").write_text("\n".join(lines[60:]) + "\n")
    opts = ["--algo", "pegasos", "--l2", "0.01", "--loss", "hinge", "--quiet"]
    cli("train", "-d", tmp_path / "all.vw", "-f", tmp_path / "one.model", *opts)
    cli("train", "-d", tmp_path / "a.vw", "-f", tmp_path / "a.model", *opts)
    cli("train", "-d", tmp_path / "b.vw", "-i", tmp_path / "a.model", "-f", tmp_path / "two.model", *opts)
    one = SparseLinearRegressor.load(tmp_path / "one.model").weights_.toarray()
    two = SparseLinearRegressor.load(tmp_path / "two.model").weights_.toarray()
    assert np.allclose(one, two, rtol=1e-12, atol=1e-15) and np.count_nonzero(one) > 10


def test_options_checked():
    res = cli("train", "--algo", "pegasos", input="1 | a\n", expect_ok=False)
    assert res.output == "Error: --algo pegasos needs --l2 LAMBDA > 0 (its step is 1/(LAMBDA t))\n"
    res = cli("train", "--algo", "pegasos", "--l2", "0.1", "--adaptive", input="1 | a\n", expect_ok=False)
    assert res.exit_code == 1 and "pegasos" in res.output and res.output.count("\n") == 1


def test_objective_reports_the_svm_objective(tmp_path):
    (tmp_path / "d.vw").write_text("".join(f"{1 if i % 2 else -1} |f a{i % 5} b\n" for i in range(50)))
    res = cli("train", "-d", tmp_path / "d.vw", "--algo", "pegasos", "--l2", "0.1", "--loss", "hinge",
              "--objective", "--quiet")
    assert "0.1/2 ||w||_2^2" in res.output
