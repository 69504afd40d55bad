"""SMIDAS (--algo smidas; Shalev-Shwartz & Tewari 2009, Algorithm 3, eq. 12, Section 3.1): the kernel
with its running p-norm equals the dense eager reference, is FOBOS l1 at p = 2, survives thetas of
any scale, resumes exactly from theta, and trains, continues and predicts through the CLI."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_checks import ok, round_trip
from reference import eager_fobos, to_csr
from reference_smidas import eager_smidas, link_inverse, link_inverse_logs
from streamlearn import learners
from streamlearn.config import train_config
from streamlearn.kernels import smidas
from streamlearn.kernels import state as S
from test_lazy_tg import close, run_kernel, streams

TRAIN = "data/samples/sparse.train.vw"
LOSSES = ["squared", "logistic", "hinge", "quantile"]


def default_p(bits):
    return max(2.0, 2.0 * bits * math.log(2.0))


def setup(bits, **opts):
    cfg = train_config(dict(opts, algo="smidas", bits=bits, sources=("-",)))
    prm = learners.make_prm(cfg, train=True)
    stt = learners.make_state(cfg, prm)
    stt[S.S_DUMP] = math.inf
    table = np.zeros((1 << bits, learners.layout(cfg).columns))
    return cfg, prm, stt, table


def run_blocks(examples, cfg, prm, stt, table, bounds):
    indptr, idx, val, labels, weights, bases = to_csr(examples)
    preds = np.zeros(len(examples))
    for a, b in zip(bounds, bounds[1:]):
        assert smidas.learn_smidas_block(indptr, idx, val, labels, weights, bases, a, b, table, prm, stt,
                                         preds) == b
    return preds


def in_force(cfg, table, stt):
    return learners.weights_in_force(cfg, table, stt, np.arange(table.shape[0]))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), lam=st.sampled_from([0.0, 0.001, 0.05, 0.5]),
       eta=st.sampled_from([0.05, 0.5, 5.0]), p_norm=st.sampled_from([None, 2.0, 3.5]))
def test_smidas_equals_dense_eager(data, loss, lam, eta, p_norm):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    opts = {"p_norm": p_norm} if p_norm is not None else {}
    preds, w, stt = run_kernel(examples, bits, splits, state=True, algo="smidas", l1=lam, loss=loss,
                               learning_rate=eta, **opts)
    p = default_p(bits) if p_norm is None else p_norm
    ref_preds, ref_w = eager_smidas(examples, 1 << bits, lam, p, loss=loss, eta=eta)
    assert close(preds, ref_preds), (preds, ref_preds)
    assert close(w, ref_w), (w, ref_w)
    learned = sum(1 for y, h, _, _ in examples if y is not None and h > 0)
    assert stt[S.S_NLEARN] == learned


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), lam=st.sampled_from([0.0, 0.01, 0.3]),
       eta=st.sampled_from([0.05, 0.5, 5.0]))
def test_smidas_p2_is_fobos_l1(data, loss, lam, eta):
    """At p = 2 the link of eq. (12) is the identity: SMIDAS is SGD with every weight truncated by
    eta_t lambda after each learned example, FOBOS with the l1 prox (Duchi & Singer 2009, eq. 6)."""
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    preds, w = run_kernel(examples, bits, algo="smidas", l1=lam, p_norm=2.0, loss=loss, learning_rate=eta)
    ref_preds, ref_w = eager_fobos(examples, 1 << bits, "l1", lam, loss=loss, eta=eta)
    assert close(preds, ref_preds), (preds, ref_preds)
    assert close(w, ref_w), (w, ref_w)


def test_link_matches_paper_formula():
    """The kernel's theta_j (|theta_j| / ||theta||_p)^(p-2) is eq. (12)."""
    rng = np.random.default_rng(1)
    for p in (2.0, 3.5, default_p(18)):
        theta = rng.normal(size=64) * (rng.random(64) < 0.5)
        cfg, prm, stt, table = setup(6, p_norm=p)
        table[:, 0] = theta
        smidas.after_load(table, prm, stt)
        assert stt[S.S_NNZ] == np.count_nonzero(theta)
        assert np.allclose(in_force(cfg, table, stt), link_inverse(theta, p), rtol=1e-12, atol=1e-300)
        xi1 = np.sum(np.abs(theta) ** p)     # Section 3.1's xi1, kept relative to r^p
        assert math.isclose(stt[smidas.S_REF] ** p * stt[S.S_XI1], xi1, rel_tol=1e-12)


def random_stream(rng, n, bits, k=6):
    out = []
    for _ in range(n):
        feats = [(int(i), float(np.float32(v))) for i, v in zip(rng.integers(0, 1 << bits, k),
                                                                 rng.normal(size=k))]
        out.append((float(rng.choice([-1.0, 1.0])), 1.0, 0.0, feats))
    return out


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("lam", [0.0, 1e-3])
@pytest.mark.parametrize("p_norm", [None, 3.5])
@pytest.mark.parametrize("magnitude", ["1e-8", "1e8", "mixed", "1e-200", "1e200"])
def test_smidas_scale_robustness(loss, lam, p_norm, magnitude):
    """Thetas of any scale: start from a loaded theta of magnitude 1e-8 .. 1e8 (and 1e-+200, where
    |theta|^p over- or underflows), learn a stream, compare with the reference. The reference
    evaluates eq. (12) through logarithms (``link_inverse_logs``) so that it is itself exact there;
    for 1e-8 .. 1e8 it also agrees with the paper's formula in plain doubles. eta is scaled with
    theta, so the steps and the truncation eta_t lambda move it by amounts of its own scale."""
    bits = 10
    rng = np.random.default_rng(7)
    dim = 1 << bits
    nz = rng.random(dim) < 0.3
    if magnitude == "mixed":
        mag = 10.0 ** rng.uniform(-8, 8, dim)
    else:
        mag = float(magnitude) * rng.uniform(0.5, 2.0, dim)
    theta0 = np.where(nz, rng.choice([-1.0, 1.0], dim) * mag, 0.0)
    scale = 1.0 if magnitude == "mixed" else float(magnitude)
    l1 = lam                 # eta_t lambda and the gradient steps are both of the scale of theta
    opts = {"p_norm": p_norm} if p_norm is not None else {}
    p = default_p(bits) if p_norm is None else p_norm
    examples = random_stream(rng, 60, bits)
    eta = 0.5 * scale
    cfg, prm, stt, table = setup(bits, l1=l1, loss=loss, learning_rate=eta, **opts)
    table[:, 0] = theta0
    smidas.after_load(table, prm, stt)
    assert close(in_force(cfg, table, stt), link_inverse_logs(theta0, p), tol=1e-11)
    preds = run_blocks(examples, cfg, prm, stt, table, [0, 17, 60])
    smidas.finalize(table, prm, stt)
    w = in_force(cfg, table, stt)
    ref_preds, ref_w = eager_smidas(examples, dim, l1, p, loss=loss, eta=eta, theta0=theta0, logs=True)
    assert np.all(np.isfinite(w)) and np.abs(ref_w).max() > 0
    assert close(preds, ref_preds), (preds, ref_preds)
    assert np.allclose(w, ref_w, rtol=1e-9, atol=1e-9 * np.abs(ref_w).max()), np.abs(w - ref_w).max()
    if magnitude in ("1e-8", "1e8", "mixed"):
        plain_preds, plain_w = eager_smidas(examples, dim, l1, p, loss=loss, eta=eta, theta0=theta0)
        assert close(plain_preds, ref_preds)
        assert np.allclose(plain_w, ref_w, rtol=1e-9, atol=1e-9 * np.abs(ref_w).max())


def test_smidas_incremental_norm_survives_cancellation():
    """--l1 0 keeps xi1 incrementally (Section 3.1); steps that take the dominant theta back to 0 or
    grow theta by many orders of magnitude leave it exact (it is recomputed when it may have
    cancelled)."""
    bits = 6
    rng = np.random.default_rng(3)
    examples = []
    for n in range(300):
        i = int(rng.integers(0, 4)) if n % 3 else int(rng.integers(0, 64))
        v = float(np.float32(10.0 ** rng.uniform(-3, 3)))
        examples.append((float(rng.normal() * 10.0 ** rng.uniform(-3, 3)), 1.0, 0.0, [(i, v)]))
    for p_norm in (None, 3.5):
        p = default_p(bits) if p_norm is None else p_norm
        opts = {"p_norm": p_norm} if p_norm is not None else {}
        preds, w = run_kernel(examples, bits, [100, 200], algo="smidas", l1=0.0, loss="squared",
                              learning_rate=0.5, **opts)
        ref_preds, ref_w = eager_smidas(examples, 1 << bits, 0.0, p, eta=0.5, logs=True)
        assert np.allclose(preds, ref_preds, rtol=1e-9, atol=1e-9), np.abs(preds - ref_preds).max()
        assert np.allclose(w, ref_w, rtol=1e-9, atol=1e-9 * np.abs(ref_w).max())


@pytest.mark.parametrize("lam", [0.0, 1e-3, 0.05])
@pytest.mark.parametrize("p_norm", [None, 2.0, 3.5])
def test_smidas_after_load_resumes_exactly(lam, p_norm):
    bits = 7
    rng = np.random.default_rng(11)
    examples = random_stream(rng, 400, bits)
    opts = dict(l1=lam, loss="logistic", learning_rate=0.5)
    if p_norm is not None:
        opts["p_norm"] = p_norm
    cfg, prm, stt, table = setup(bits, **opts)
    preds = run_blocks(examples, cfg, prm, stt, table, [0, 150, 400])
    smidas.finalize(table, prm, stt)
    w_one = in_force(cfg, table, stt)

    cfg, prm, st1, t1 = setup(bits, **opts)
    first = run_blocks(examples, cfg, prm, st1, t1, [0, 200])
    smidas.finalize(t1, prm, st1)
    _, _, st2, t2 = setup(bits, **opts)
    t2[:, 0] = t1[:, 0]
    st2[S.S_T] = st1[S.S_T]
    smidas.after_load(t2, prm, st2)
    assert st2[S.S_NNZ] == np.count_nonzero(t1[:, 0]) > 0
    second = run_blocks(examples, cfg, prm, st2, t2, [200, 400])
    smidas.finalize(t2, prm, st2)
    assert close(first[:200], preds[:200]) and close(second[200:], preds[200:])
    assert close(in_force(cfg, t2, st2), w_one)
    assert lam < 0.05 or np.count_nonzero(w_one) < (1 << bits)   # sparse



def test_smidas_cli_round_trip_and_resume(tmp_path):
    opts = ["--algo", "smidas", "--l1", "1e-4", "-l", "0.5"]
    header, _, _ = round_trip(tmp_path, opts)
    assert header["algo"] == "smidas" and header["column_names"] == ["w", "theta"]
    res = ok("train", "-d", TRAIN, "--loss", "logistic", *opts)
    assert ("learner = smidas (stochastic mirror descent made sparse, plain sgd: l1 = 0.0001, "
            "p = 24.9533)") in res.stderr
