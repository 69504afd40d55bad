"""The truncated-gradient paper's baselines (Langford, Li & Zhang 2009, Section 3): coefficient
rounding (--algo rounding, lazy) and the L1-regularized subgradient method (--algo subgradient) equal
their dense eager references; the CLI trains, predicts and continues with them."""

import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.cli_checks import round_trip
from support.reference import eager_gd, eager_subgradient
from streamlearn.cli import main
from streamlearn.config import train_config
from streamlearn.core.state import S_NLEARN
from streamlearn.core.table import W
from support.streams import RULES, random_stream, streams
from support.compare import allclose
from support.kernels import run_kernel

TRAIN = "data/samples/sparse.train.vw"
LOSSES = ["squared", "logistic", "hinge", "quantile"]


def eager_rounding(examples, bits, theta, K, **opts):
    """The rounding kernel's own gradient steps with the rounding made eager and dense: its lazy
    rounding off (a period beyond the stream), and after every K-th learned example every weight of
    its table with |w| < theta set to 0 here (Langford, Li & Zhang 2009, eq. 4). Returns (predictions,
    weights, whether a rounding met a nonzero weight within 1e-9, relative, of theta)."""
    learned, near = 0, False

    def round_all(table, st):
        nonlocal learned, near
        if st[S_NLEARN] > learned:
            learned = int(st[S_NLEARN])
            if learned % K == 0:
                w = table[:, W]
                near = near or bool(np.any((w != 0.0) & (np.abs(np.abs(w) - theta) <= 1e-9 * theta)))
                w[np.abs(w) < theta] = 0.0

    preds, w = run_kernel(examples, bits, after=round_all, threshold=theta, period=len(examples) + 1, **opts)
    return preds, w, near


def check_lazy_rounding(examples, bits, splits, loss, theta, K, rule, eta, initial_t):
    """Lazy rounding equals eager rounding exactly over the same gradient steps, and the slow eager
    reference to 1e-9 unless a rounding met a weight within 1e-9 of theta: there |w| < theta is decided
    by rounding error (the kernel's and the reference's steps differ in the last bits), and the
    weight is 0 in one and theta in the other. Returns whether such a near tie was met."""
    opts = dict(loss=loss, algo="rounding", learning_rate=eta, initial_t=initial_t, **rule)
    preds, w = run_kernel(examples, bits, splits, threshold=theta, period=K, **opts)
    eager_preds, eager_w, near_tie = eager_rounding(examples, bits, theta, K, **opts)
    assert np.array_equal(preds, eager_preds), (preds, eager_preds)
    assert np.array_equal(w, eager_w), (w, eager_w)
    if near_tie:
        return True
    cfg = train_config(dict(algo="rounding", threshold=theta, learning_rate=eta, initial_t=initial_t, **rule))
    ref_preds, ref_w, _, _ = eager_gd(examples, 1 << bits, loss=loss, eta=cfg.learning_rate,
                                      initial_t=cfg.initial_t, adaptive=cfg.adaptive,
                                      normalized=cfg.normalized, invariant=cfg.invariant,
                                      algo="rounding", theta=theta, K=K)
    assert allclose(preds, ref_preds), (preds, ref_preds)
    assert allclose(w, ref_w), (w, ref_w)
    return False


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), theta=st.sampled_from([0.01, 0.1, 0.5, 3.0]),
       K=st.sampled_from([1, 2, 3, 7]), rule=st.sampled_from(RULES), eta=st.sampled_from([0.1, 0.5, 2.0]),
       initial_t=st.sampled_from([0.0, 1.0, 3.0]))
def test_lazy_rounding_equals_eager_under_every_rule(data, loss, theta, K, rule, eta, initial_t):
    """Lazy: a weight owes at most one rounding whatever it missed; it is 0 after it when |w| < theta."""
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    check_lazy_rounding(examples, bits, splits, loss, theta, K, rule, eta, initial_t)


_U = (None, 1.0, 0.0, [])
#: Hypothesis's counterexample to the property when it compared only with the slow reference
TIE_STREAM = ([_U] * 25 + [(-1.0, 1.0, 0.0, [(0, -1.0), (0, -1.0), (1, -1.0)])] + [_U] * 4
              + [(-0.5, 1.0, 0.0, [(1, -2.0), (2, -1.0), (3, -1.0)])] + [_U] * 6 + [(None, 1.0, 0.0, [(2, -1.0)])])


@pytest.mark.parametrize("splits", [[], [26, 31]])
def test_lazy_rounding_at_a_tie_with_the_threshold(splits):
    """The first adaptive step of a weight moves it by eta exactly in real arithmetic, so with eta =
    theta = 0.5 weights 2 and 3 land on theta. The kernel's logistic derivative of the label -0.5
    differs from the reference's in the last bits: its weights are 0.5 - 1 ulp, rounded to 0 (the
    last prediction 0), the reference's exactly 0.5, kept (-0.5). Lazy equals eager on the kernel's
    own steps, and on either side of the tie it equals the slow reference."""
    args = dict(loss="logistic", K=1, rule={"adaptive": True}, eta=0.5, initial_t=0.0)
    assert check_lazy_rounding(TIE_STREAM, 2, splits, theta=0.5, **args)
    for theta in (0.5 - 1e-7, 0.5 + 1e-7):
        assert not check_lazy_rounding(TIE_STREAM, 2, splits, theta=theta, **args)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), lam=st.sampled_from([0.0, 0.001, 0.05, 0.5]),
       eta=st.sampled_from([0.05, 0.5, 5.0]), power_t=st.sampled_from([0.0, 0.5]),
       initial_t=st.sampled_from([1.0, 10.0]))
def test_subgradient_equals_eager(data, loss, lam, eta, power_t, initial_t):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    preds, w = run_kernel(examples, bits, splits, loss=loss, algo="subgradient", l1=lam, learning_rate=eta,
                          power_t=power_t, initial_t=initial_t)
    ref_preds, ref_w = eager_subgradient(examples, 1 << bits, lam, loss=loss, eta=eta, power_t=power_t,
                                         initial_t=initial_t)
    assert allclose(preds, ref_preds), (preds, ref_preds)
    assert allclose(w, ref_w), (w, ref_w)


def test_subgradient_oscillates_and_rounding_at_the_end_sparsifies():
    """The subgradient method keeps weights bouncing around 0 instead of at 0 (Section 3.2); with
    --threshold its saved weights are rounded at the end of training, as the paper's baseline."""
    examples = random_stream(500, 64, 4, 7)
    _, w = run_kernel(examples, 6, loss="logistic", algo="subgradient", l1=0.05, learning_rate=0.5)
    _, w_fobos = run_kernel(examples, 6, loss="logistic", algo="fobos", reg="l1", l1=0.05,
                            learning_rate=0.5, sgd=True)
    assert np.count_nonzero(w) > np.count_nonzero(w_fobos)
    _, w_round = run_kernel(examples, 6, loss="logistic", algo="subgradient", l1=0.05, learning_rate=0.5,
                            threshold=0.05)
    assert np.array_equal(w_round, np.where(np.abs(w) < 0.05, 0.0, w))



@pytest.mark.parametrize("opts", [["--algo", "rounding", "--threshold", "0.01", "--period", "10"],
                                  ["--algo", "rounding", "--threshold", "0.01", "--sgd", "-l", "1"],
                                  ["--algo", "subgradient", "--l1", "1e-4", "-l", "0.5"]])
def test_baselines_cli_round_trip_and_resume(tmp_path, opts):
    header, _, _ = round_trip(tmp_path, opts)
    assert header["algo"] == opts[opts.index("--algo") + 1]

@pytest.mark.parametrize("args,message", [
    (["--algo", "rounding"], "--algo rounding needs --threshold THETA (weights with |w| < THETA are set "
                             "to 0 every --period K steps)"),
    (["--algo", "rounding", "--threshold", "1", "--l1", "1"],
     "--l1 needs --algo tg, fobos, smidas, subgradient, scd, ftrl, softmax, gravity or bfgs"),
    (["--algo", "subgradient", "--period", "3"], "--period needs --algo tg or rounding"),
    (["--algo", "subgradient", "--adaptive"],
     "--adaptive does not apply to --algo subgradient: it is the truncated-gradient paper's plain-SGD "
     "baseline, so it takes the plain schedule (--sgd, or no rule flag)"),
    (["--algo", "tg", "--p-norm", "3"], "--p-norm needs --algo smidas"),
    (["--algo", "smidas", "--p-norm", "1.5"], "--p-norm must be a finite number >= 2 (got 1.5)"),
    (["--algo", "fobos", "--cumulative-penalty"], "--cumulative-penalty needs --algo tg"),
])
def test_baseline_option_errors(args, message):
    res = CliRunner().invoke(main, ["train"] + args, input="1 |a b\n")
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1] == f"Error: {message}"


def test_rounding_keeps_large_weights_and_drops_small_ones():
    examples = random_stream(300, 64, 4, 8)
    _, w_sgd = run_kernel(examples, 6, loss="logistic", algo="sgd", sgd=True, learning_rate=0.5,
                          dtype="float64")     # rounding keeps a float64 table
    _, w = run_kernel(examples, 6, loss="logistic", algo="rounding", threshold=0.2, period=300,
                      sgd=True, learning_rate=0.5)
    assert np.array_equal(w, np.where(np.abs(w_sgd) < 0.2, 0.0, w_sgd))   # one rounding, at the end
    assert 0 < np.count_nonzero(w) < np.count_nonzero(w_sgd)
    assert math.isclose(np.abs(w).max(), np.abs(w_sgd).max())
