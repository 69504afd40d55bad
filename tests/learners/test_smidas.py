"""SMIDAS (--algo smidas; Shalev-Shwartz & Tewari 2009, Algorithm 3) equals the dense eager
reference; with p = 2 it is FOBOS l1 on the plain schedule; its scaled norm survives large and small
thetas; -i continues exactly; the CLI trains and predicts with it."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.cli_checks import ok, round_trip
from support.reference import eager_fobos, to_csr
from support.reference_smidas import eager_smidas
from streamlearn import learners
from streamlearn.config import train_config
from streamlearn.core import state as S
from support.compare import allclose
from support.kernels import kernel_arrays, run_block, run_kernel
from support.streams import random_stream, streams

TRAIN = "data/samples/sparse.train.vw"
LOSSES = ["squared", "logistic", "hinge", "quantile"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), lam=st.sampled_from([0.0, 0.001, 0.05, 0.5]),
       eta=st.sampled_from([0.05, 0.5, 5.0]), p_norm=st.sampled_from([None, 2.0, 3.5]),
       power_t=st.sampled_from([0.0, 0.5]))
def test_smidas_equals_dense_algorithm_3(data, loss, lam, eta, p_norm, power_t):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    extra = {"p_norm": p_norm} if p_norm is not None else {}
    preds, w = run_kernel(examples, bits, splits, loss=loss, algo="smidas", l1=lam, learning_rate=eta,
                          power_t=power_t, **extra)
    p = p_norm if p_norm is not None else learners.smidas.smidas_p(train_config({"algo": "smidas", "bits": bits}))
    ref_preds, ref_w = eager_smidas(examples, 1 << bits, lam, p, loss=loss, eta=eta, power_t=power_t)
    assert allclose(preds, ref_preds), (preds, ref_preds)
    assert allclose(w, ref_w), (w, ref_w)


def test_default_p_is_twice_the_log_of_the_dimension():
    assert math.isclose(learners.smidas.smidas_p(train_config({"algo": "smidas", "bits": 18})), 2 * math.log(2 ** 18))


def test_p2_is_fobos_l1_on_the_plain_schedule():
    examples = random_stream(300, 64, 5, 11)
    p1, w1 = run_kernel(examples, 6, loss="logistic", algo="smidas", l1=0.01, learning_rate=0.5, p_norm=2.0)
    p2, w2 = eager_fobos(examples, 64, "l1", 0.01, loss="logistic", eta=0.5)
    assert allclose(p1, p2) and allclose(w1, w2)


@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_large_and_small_thetas(scale):
    """The link is homogeneous of degree 1 (f^-1(c theta) = c f^-1(theta)): squared loss with labels
    and values scaled by c gives thetas and weights scaled by c, with no overflow or underflow of
    |theta|^p (p ~ 25)."""
    base = random_stream(200, 256, 4, 12)
    scaled = [(y * scale, h, b, feats) for y, h, b, feats in base]
    p1, w1 = run_kernel(base, 8, loss="squared", algo="smidas", l1=0.0, learning_rate=0.05, power_t=0.0)
    p2, w2 = run_kernel(scaled, 8, loss="squared", algo="smidas", l1=0.0, learning_rate=0.05, power_t=0.0)
    assert np.all(np.isfinite(w2)) and np.count_nonzero(w2) == np.count_nonzero(w1) > 0
    assert np.allclose(w2 / scale, w1, rtol=1e-9, atol=0) and np.allclose(p2 / scale, p1, rtol=1e-9, atol=1e-12)


def test_after_load_continues_exactly():
    examples = random_stream(200, 64, 4, 13)
    cfg = train_config({"algo": "smidas", "bits": 6, "loss": "logistic", "l1": 0.01, "learning_rate": 0.5})
    kernel = learners.block_kernel(cfg)
    csr = to_csr(examples)

    def fresh():
        prm, iprm, stt, ctr = kernel_arrays(cfg)
        return np.zeros((64, learners.layout(cfg).columns)), prm, iprm, stt, ctr

    table, prm, iprm, stt, ctr = fresh()
    preds = np.zeros(200)
    run_block(kernel, *csr, 0, 200, table, prm, iprm, stt, ctr, preds)
    whole = learners.weights_in_force(cfg, table, stt, np.arange(64))
    table, prm, iprm, stt, ctr = fresh()
    run_block(kernel, *csr, 0, 90, table, prm, iprm, stt, ctr, preds)
    t2, prm2, iprm2, st2, ctr2 = fresh()
    t2[:, 0] = table[:, 0]
    st2[S.S_T], st2[S.S_NLEARN] = stt[S.S_T], stt[S.S_NLEARN]
    learners.after_load(cfg, t2, prm2, iprm2, st2)
    run_block(kernel, *csr, 90, 200, t2, prm2, iprm2, st2, ctr2, preds)
    assert allclose(learners.weights_in_force(cfg, t2, st2, np.arange(64)), whole)



def test_smidas_cli_round_trip_and_resume(tmp_path):
    opts = ["--algo", "smidas", "--l1", "1e-4", "-l", "0.5"]
    header, _, _ = round_trip(tmp_path, opts)
    assert header["algo"] == "smidas" and header["column_names"] == ["w", "theta"]
    res = ok("train", "-d", TRAIN, "--loss", "logistic", *opts)
    assert ("learner = smidas (stochastic mirror descent made sparse, plain sgd: l1 = 0.0001, "
            "p = 24.9533)") in res.stderr
