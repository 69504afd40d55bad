"""--l2-ball R: the projection onto the L2 ball after every step, for fobos --reg l2sq (Duchi & Singer 2009,
Section 7.1, Fig. 1 "with projection": eq. 7's scaling, then w <- min(1, R / ||w||_2) w) and pegasos
(another radius than 1/sqrt(lambda), or none), against dense NumPy transcriptions of both algorithms."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from support.helpers import cli
from streamlearn.api import Engine, column_rows, csr_block, make_config
from streamlearn.estimators import SparseLinearRegressor


def grad(p, y, loss):
    """The loss's derivative in p as the kernels take it (logistic: score clamped to [-50, 50], no step
    once VW's float32 loss is 0)."""
    if loss == "hinge":
        return -y if y * p < 1.0 else 0.0
    p = min(max(p, -50.0), 50.0)
    return -y / (1.0 + np.exp(y * p)) if y * p < 24 * np.log(2.0) else 0.0


def dense(X, y, lam, radius, loss, algo, rate=None, power_t=1.0):
    """Eager FOBOS l2sq (eq. 2 then eq. 7, eta_t = rate t^-power_t) or Pegasos (eta_t = 1/(lam t),
    w <- (1 - eta_t lam) w - eta_t g x), each followed by the projection onto ||w|| <= radius; the
    weights after every example."""
    X = np.asarray(X.toarray(), np.float32).astype(np.float64)
    w = np.zeros(X.shape[1])
    out = []
    for t, (x, yi) in enumerate(zip(X, y), start=1):
        g = grad(float(x @ w), yi, loss)
        if algo == "fobos":
            eta = rate * t ** -power_t
            w = (w - eta * g * x) / (1.0 + eta * lam)
        else:
            eta = 1.0 / (lam * t)
            w = (1.0 - eta * lam) * w - eta * g * x
        norm = np.linalg.norm(w)
        if norm > radius:
            w *= radius / norm
        out.append(w.copy())
    return out


def data(seed, n=80, d=12):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.4, random_state=seed, format="csr") * 3.0
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def run(X, y, options, every=False):
    """The learner's weights in force (by column) after the stream, or after every example."""
    cfg = make_config(dict(options, bits=10, noconstant=True, holdout_off=True))
    eng = Engine(cfg)
    eng.start_pass()
    rows = column_rows(np.arange(X.shape[1]), cfg)
    out = []
    steps = [(i, i + 1) for i in range(X.shape[0])] if every else [(0, X.shape[0])]
    for a, b in steps:
        eng.learn(csr_block(X[a:b], y[a:b], None, cfg))
        idx, w = eng.weights()
        full = np.zeros(1 << cfg.bits)
        full[idx] = w
        out.append(full[rows])
    return out


def fobos(lam, radius, loss, rate, power_t=1.0):
    return {"algo": "fobos", "reg": "l2sq", "l2": lam, "l2_ball": radius, "loss": loss, "sgd": True,
            "learning_rate": rate, "power_t": power_t, "initial_t": 0.0}


@pytest.mark.parametrize("algo", ["fobos", "pegasos"])
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_every_step_equals_the_dense_transcription(algo, loss):
    """After every example: the weights equal the eager algorithm (1e-9) and ||w|| <= R (+1e-12); the
    ball is active on this stream (the projection changes the weights)."""
    X, y = data(1)
    lam, radius = 0.05, 0.8
    opts = fobos(lam, radius, loss, 1 / lam) if algo == "fobos" else {
        "algo": "pegasos", "l2": lam, "l2_ball": radius, "loss": loss}
    got = run(X, y, opts, every=True)
    want = dense(X, y, lam, radius, loss, algo, 1 / lam)
    for g, w in zip(got, want):
        assert np.allclose(g, w, rtol=1e-9, atol=1e-12)
        assert np.linalg.norm(g) <= radius + 1e-12
    free = dense(X, y, lam, np.inf, loss, algo, 1 / lam)
    assert max(np.linalg.norm(w) for w in free) > 1.5 * radius


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.sampled_from([1e-3, 1e-2, 0.1]),
       radius=st.sampled_from([0.3, 2.0, np.inf]), rate=st.sampled_from([0.1, 1.0, 10.0]),
       power_t=st.sampled_from([0.5, 1.0]))
def test_lazy_scale_equals_eager(seed, lam, radius, rate, power_t):
    """The global scale and squared norm (lazy) give the eager weights, for any radius (inf: none) and
    schedule."""
    X, y = data(seed, n=60)
    got = run(X, y, fobos(lam, radius, "logistic", rate, power_t))[0]
    want = dense(X, y, lam, radius, "logistic", "fobos", rate, power_t)[-1]
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)
    assert np.linalg.norm(got) <= radius + 1e-12


def test_pegasos_without_projection():
    X, y = data(2)
    got = run(X, y, {"algo": "pegasos", "l2": 0.01, "l2_ball": np.inf, "loss": "logistic"})[0]
    assert np.allclose(got, dense(X, y, 0.01, np.inf, "logistic", "pegasos")[-1], rtol=1e-9, atol=1e-12)


def test_resume_from_a_model_continues_the_run(tmp_path):
    """-i keeps the radius and continues the run: two halves equal one run (the weights)."""
    lines = [f"{'1' if i % 3 else '-1'} |f a{i % 7}:2 b{i % 5}:1.5 c{i % 11}" for i in range(120)]
    (tmp_path / "all.vw").write_text("\n".join(lines) + "\n")
    (tmp_path / "a.vw").write_text("\n".join(lines[:60]) + "\n")
    (tmp_path / "b.vw").write_text("\n".join(lines[60:]) + "\n")
    opts = ["--algo", "fobos", "--reg", "l2sq", "--l2", "0.05", "--l2-ball", "0.5", "--sgd", "-l", "20",
            "--power-t", "1", "--initial-t", "0", "--loss", "hinge", "--quiet", "--holdout-off"]
    cli("train", "-d", tmp_path / "all.vw", "-f", tmp_path / "one.model", *opts)
    cli("train", "-d", tmp_path / "a.vw", "-f", tmp_path / "a.model", *opts)
    cli("train", "-d", tmp_path / "b.vw", "-i", tmp_path / "a.model", "-f", tmp_path / "two.model", "--quiet",
        "--holdout-off")
    w1 = SparseLinearRegressor.load(tmp_path / "one.model").weights_.toarray()
    w2 = SparseLinearRegressor.load(tmp_path / "two.model").weights_.toarray()
    assert np.allclose(w1, w2, rtol=1e-12, atol=1e-15) and np.count_nonzero(w1) > 10
    assert np.linalg.norm(w1) <= 0.5 * (1 + 1e-6)


@pytest.mark.parametrize("args, message", [
    (["--algo", "fobos", "--reg", "l1", "--l1", "0.1", "--l2-ball", "1"],
     "--l2-ball needs --reg l2sq with --algo fobos (got --reg l1)"),
    (["--algo", "sgd", "--l2-ball", "1"], "--l2-ball needs --algo fobos or pegasos"),
    (["--algo", "pegasos", "--l2", "0.1", "--l2-ball", "0"],
     "--l2-ball must be a number > 0, or inf for no projection (got 0)"),
    (["--algo", "pegasos", "--l2", "0.1", "--l2-ball", "nan"],
     "--l2-ball must be a number > 0, or inf for no projection (got nan)"),
    (["--algo", "fobos", "--l2", "0.1", "--l2-ball", "1", "--adaptive"],
     "--adaptive does not apply to --algo fobos --reg l2sq: with --l2-ball, ||w|| is followed in O(k) "
     "only when every weight is scaled alike, so it takes the plain schedule (--sgd, or no rule flag)"),
])
def test_option_errors(args, message):
    res = cli("train", *args, input="1 | a\n", expect_ok=False)
    assert res.output == f"Error: {message}\n"
