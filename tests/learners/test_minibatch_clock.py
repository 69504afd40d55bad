"""The rate clock of a mini-batch run counts steps (issue 25): with ``--batch-size B`` the learners
l1ball, fobos and eg take step k with rate eta0 / sqrt(k), k the number of steps, as the papers'
batch and mini-batch methods do (Duchi et al. 2008, Section 2, eq. 2 and Section 7, eq. 13; Duchi &
Singer 2009, eqs. 2-3). Checked against a NumPy transcription of those methods written here from the
papers (not the dense references of ``reference.py``), over several passes; and ``-i`` resumes the
clock exactly."""

import math

import numpy as np
import pytest

from support.helpers import cli
from support.kernels import kernel_arrays, run_block
from streamlearn import learners
from streamlearn.config import train_config
from streamlearn.io.model_file import load_model

BITS = 4
D = 1 << BITS
M = 40


def problem(seed=7):
    """A dense logistic problem: m examples over d = 16 coordinates with some zeros, labels +-1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M, D)) * (rng.random((M, D)) < 0.6)
    y = np.where(X @ rng.normal(size=D) + 0.3 * rng.normal(size=M) > 0, 1.0, -1.0)
    return X, y


def logistic_gradient(X, y, w):
    """Predictions X w and the mean gradient of log(1 + exp(-y p)) over the rows."""
    p = X @ w
    return p, (X * (-y / (1.0 + np.exp(y * p)))[:, None]).mean(axis=0)


def project_l1(v, z):
    """Euclidean projection onto {||w||_1 <= z} by bisection on the shift theta (no sorting, unlike
    the learner's and reference.py's)."""
    if np.abs(v).sum() <= z:
        return v.copy()
    lo, hi = 0.0, float(np.abs(v).max())
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(np.abs(v) - mid, 0.0).sum() > z:
            lo = mid
        else:
            hi = mid
    return np.sign(v) * np.maximum(np.abs(v) - (lo + hi) / 2, 0.0)


def numpy_minibatch(X, y, algo, batch, steps, eta0, z=None, lam=None):
    """Steps k = 1..steps over consecutive batches of ``batch`` rows (cycling through the data), with
    rate eta0 / sqrt(k): the projected gradient (l1ball), FOBOS with the l1 prox of strength
    rate * lam (fobos), or EG's eq. 13 on w+ and w- with total z (eg). Returns the predictions of
    every example (with the weights at its batch's start) and the final weights."""
    w = np.zeros(D)
    phi_p, phi_n = np.zeros(D), np.zeros(D)
    preds = []
    for k in range(1, steps + 1):
        rows = np.arange((k - 1) * batch, k * batch) % len(y)
        p, g = logistic_gradient(X[rows], y[rows], w)
        preds.extend(p)
        rate = eta0 / math.sqrt(k)
        if algo == "l1ball":
            w = project_l1(w - rate * g, z)
        elif algo == "fobos":
            v = w - rate * g
            w = np.sign(v) * np.maximum(np.abs(v) - rate * lam, 0.0)
        else:
            phi_p, phi_n = phi_p - rate * g, phi_n + rate * g
            top = max(phi_p.max(), phi_n.max())
            ep, en = np.exp(phi_p - top), np.exp(phi_n - top)
            w = z * (ep - en) / (ep.sum() + en.sum())
    return np.array(preds), w


def learner_run(X, y, algo, batch, passes, eta0, **opts):
    """The learner's compiled kernel over ``passes`` passes of the rows in order, ``--sgd
    --initial-t 0 --batch-size batch``; returns the predictions and the weights in force."""
    cfg = train_config(dict(opts, algo=algo, bits=BITS, loss="logistic", learning_rate=eta0, initial_t=0.0,
                            power_t=0.5, batch_size=batch, sources=("-",)))
    kernel = learners.block_kernel(cfg)
    prm, iprm, st, ctr = kernel_arrays(cfg)
    table = np.zeros((D, learners.layout(cfg).columns))
    rows, cols = np.nonzero(X)
    indptr = np.searchsorted(rows, np.arange(len(y) + 1)).astype(np.int64)
    idx, val = cols.astype(np.uint64), X[rows, cols].astype(np.float32)
    X32 = np.zeros_like(X)
    X32[rows, cols] = val                       # the float32 values the learner reads
    labels, weights, bases = y.copy(), np.ones(len(y)), np.zeros(len(y))
    preds = []
    for _ in range(passes):
        out = np.zeros(len(y))
        assert run_block(kernel, indptr, idx, val, labels, weights, bases, 0, len(y), table, prm, iprm, st,
                         ctr, out) == len(y)
        preds.extend(out)
    learners.finalize(cfg, table, prm, iprm, st)
    return np.array(preds), learners.weights_in_force(cfg, table, st, np.arange(D)), X32


CASES = [("l1ball", dict(radius=1.5)), ("fobos", dict(reg="l1", l1=0.02)), ("eg", dict(radius=1.5))]


@pytest.mark.parametrize("algo,opts", CASES, ids=[a for a, _ in CASES])
@pytest.mark.parametrize("batch", [M, M // 4, 8])
def test_minibatch_steps_take_eta0_over_sqrt_k(algo, opts, batch):
    X, y = problem()
    passes = 6
    preds, w, X32 = learner_run(X, y, algo, batch, passes, 2.0, **opts)
    steps = passes * M // batch
    ref_preds, ref_w = numpy_minibatch(X32, y, algo, batch, steps, 2.0, z=opts.get("radius"), lam=opts.get("l1"))
    assert np.allclose(preds, ref_preds, rtol=1e-9, atol=1e-9), np.abs(preds - ref_preds).max()
    assert np.allclose(w, ref_w, rtol=1e-9, atol=1e-9), np.abs(w - ref_w).max()
    assert np.count_nonzero(w) < D or algo == "eg"   # the L1 learners are sparse here (not a vacuous check)


def test_the_old_clock_would_fail_this_test():
    """The comparison above separates the clocks: counting examples (eta0 / sqrt(k B)) gives other
    weights than counting steps."""
    X, y = problem()
    _, w_steps = numpy_minibatch(X, y, "l1ball", M, 6, 2.0, z=1.5)
    _, w_examples = numpy_minibatch(X, y, "l1ball", M, 6, 2.0 / math.sqrt(M), z=1.5)
    assert not np.allclose(w_steps, w_examples, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("algo,opts", [("fobos", ["--l1", "1e-4"]), ("eg", ["--radius", "20"]),
                                       ("l1ball", ["--radius", "20"])])
def test_resume_continues_the_step_clock(tmp_path, algo, opts):
    """Saved t is initial_t plus the steps taken; -i on the rest of the data gives the model of one run
    (the split is at a batch edge) and t of one run."""
    text = open("data/samples/sparse.train.vw").read().splitlines(keepends=True)
    a, b, both = tmp_path / "a.vw", tmp_path / "b.vw", tmp_path / "both.vw"
    a.write_text("".join(text[:700]))
    b.write_text("".join(text[700:]))
    both.write_text("".join(text))
    common = ["--algo", algo, *opts, "--loss", "logistic", "-l", "0.5", "--batch-size", "7", "--quiet"]
    m1, m2, m3 = tmp_path / "1.slm", tmp_path / "2.slm", tmp_path / "3.slm"
    cli("train", "-d", a, "-f", m1, *common)
    cli("train", "-d", b, "-i", m1, "-f", m2, "--quiet")
    cli("train", "-d", both, "-f", m3, *common)
    (h1, _, _), (h2, i2, r2), (h3, i3, r3) = load_model(str(m1)), load_model(str(m2)), load_model(str(m3))
    assert h1["state"]["t"] == 1.0 + 700 / 7          # initial_t 1 (the plain schedule's default) + 100 steps
    assert h2["state"]["t"] == h3["state"]["t"] == 1.0 + math.ceil(len(text) / 7)   # the last step is partial
    assert np.array_equal(i2, i3) and np.allclose(r2, r3, rtol=1e-9, atol=1e-12)


def test_oaa_refuses_minibatches():
    res = cli("train", "--algo", "fobos", "--l1", "0.01", "--oaa", "3", "--batch-size", "4", expect_ok=False,
              input="1 |a b\n")
    assert res.exit_code == 1
    assert res.stderr.splitlines()[-1] == ("Error: --batch-size does not apply to --oaa: a mini-batch is one step "
                                           "of one weight vector (for multiclass mini-batches, streamlearn.batch.fit)")
