"""gravity (VW's own --l1 and --l2: one global gravity and contraction over raw weights) equals the
dense step-by-step reference (``support.reference.eager_gd(algo="gravity")``) under every update rule
and loss, with labels as VW takes them, across block boundaries and through VW's weight sync."""

import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn.cli import main
from streamlearn.learners import gravity
from support.compare import allclose
from support.kernels import run_kernel
from support.reference import eager_gd
from support.streams import streams

LOSSES = ["squared", "logistic", "hinge", "quantile"]
RULES = [dict(adaptive=a, normalized=n, invariant=i)
         for a in (False, True) for n in (False, True) for i in (False, True)]


def rule_options(rule):
    given_ = {k: True for k, v in rule.items() if v}
    return given_ or {"sgd": True}


def check_against_reference(examples, bits, splits, loss, rule, l1, l2, eta, power_t, initial_t):
    opts = dict(loss=loss, algo="gravity", l1=l1, l2=l2, learning_rate=eta, power_t=power_t,
                initial_t=initial_t, **rule_options(rule))
    preds, w, G, N = run_kernel(examples, bits, splits, full=True, **opts)
    ref = eager_gd(examples, 1 << bits, loss=loss, eta=eta, power_t=power_t, initial_t=initial_t,
                   algo="gravity", g=l1, l2=l2, **rule)
    assert allclose(preds, ref[0]), (preds, ref[0])
    assert allclose(w, ref[1]), (w, ref[1])
    assert allclose(G, ref[2]) and allclose(N, ref[3])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), rule=st.sampled_from(RULES),
       l1=st.sampled_from([0.0, 1e-3, 0.1, 7777.0]), l2=st.sampled_from([0.0, 1e-3, 0.3, 1e3]),
       eta=st.sampled_from([0.05, 0.5, 2.0]), power_t=st.sampled_from([0.5, 0.5, 0.3]),
       initial_t=st.sampled_from([0.0, 0.0, 1.0, 4.0]))
def test_gravity_equals_eager_reference(data, loss, rule, l1, l2, eta, power_t, initial_t):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    if eta * l2 > 1:
        # VW's l2 contraction (1 - eta_t l2) is then a growth of the weights, by up to ~50x a step here,
        # and of any rounding difference between the kernel and the reference (the same sums in another
        # order) with them: hypothesis found weights of 1e6 after 9 examples agreeing to 1.6e-5 only.
        # Three examples keep that growth within the 1e-9 compared
        examples = examples[:3]
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    check_against_reference(examples, bits, splits, loss, rule, l1, l2, eta, power_t, initial_t)


#: a stream hypothesis found (issue 30): the invariant logistic step of the label 2^-23 (inside (-1, 1):
#: a mixture of the two classes' closed-form steps) has the sign of loss', so eta_bar < 0 and the
#: gravity goes below 0; VW's trunc_weight then moves every weight, 0 included, by -sign(w) g
NEGATIVE_GRAVITY_STREAM = [(1.0, 1.0, 0.0, [(0, -1.0)] * 6), (None, 1.0, 0.0, [(0, -1.0)] * 5),
                           (1.0, 1.0, 0.0, [(0, -1.0), (0, -1.0), (1, -1.0)]),
                           (1.192092896e-07, 1.0, 0.0, [(0, 0.00390625)]),
                           (None, 1.0, 0.0, [(0, 1.0), (1, 1.0), (2, 1.0)])]


def test_negative_gravity_equals_eager_reference():
    rule = dict(adaptive=False, normalized=False, invariant=True)
    for initial_t in (0.0, 1.0):
        check_against_reference(NEGATIVE_GRAVITY_STREAM, 2, [], "logistic", rule, 1e-3, 0.0, 0.5, 0.5, initial_t)


def test_negative_gravity_truncates_as_vw():
    """VW's trunc_weight with g < 0 (its sign(0) = -1): w - sign(w) g for every w, a weight 0 becomes g;
    the last prediction is the sum of those over its three features (raw weights z0 < 0 < |g|, z1 in
    (g, 0), z2 = 0)."""
    preds, w, stt = run_kernel(NEGATIVE_GRAVITY_STREAM[:-1], 2, state=True, loss="logistic", algo="gravity",
                               l1=1e-3, learning_rate=0.5, power_t=0.5, initial_t=1.0, invariant=True)
    g = stt[gravity.S_GRAVITY_VW]
    assert g < 0
    z = w + np.where(w > 0, g, -g)          # the raw weights back from the weights in force
    assert z[0] < g < z[1] < 0 and z[2] == 0 and w[2] == g
    preds, _ = run_kernel(NEGATIVE_GRAVITY_STREAM, 2, loss="logistic", algo="gravity", l1=1e-3,
                          learning_rate=0.5, power_t=0.5, initial_t=1.0, invariant=True)
    assert preds[-1] == pytest.approx((z[0] + g) + (z[1] + g) + g, rel=1e-12)


def test_contraction_and_gravity_in_the_state():
    """One squared-loss step of the plain rule from 0 (p = 0, y = 1, x = 1, eta 1, t = 1): u = 2,
    eta_bar = -u / loss' = 1, c = 1 - l2, the raw weight moves by u / c, g = l1; in force c (z - g)."""
    examples = [(1.0, 1.0, 0.0, [(1, 1.0)])]
    preds, w, stt = run_kernel(examples, 2, state=True, loss="squared", algo="gravity", l1=0.25, l2=0.5,
                               sgd=True, learning_rate=1.0, initial_t=1.0, power_t=0.0)
    assert stt[gravity.S_CONTRACTION_VW] == pytest.approx(0.5)
    assert stt[gravity.S_GRAVITY_VW] == pytest.approx(0.25)
    assert w[1] == pytest.approx(0.5 * (2.0 / 0.5 - 0.25))


def test_sync_when_gravity_grows_past_1e3():
    """VW's sync_weights: once g > 1e3 every weight is its value in force and g = 0, c = 1."""
    rng = np.random.default_rng(1)
    examples = [(float(rng.normal()), 1.0, 0.0, [(int(i), 1.0) for i in rng.integers(0, 8, 3)])
                for _ in range(30)]
    preds, w, stt = run_kernel(examples, 3, state=True, loss="squared", algo="gravity", l1=600.0, l2=0.1,
                               sgd=True, learning_rate=1.0, initial_t=1.0, power_t=0.0)
    assert stt[gravity.S_GRAVITY_VW] < 1e3
    ref = eager_gd(examples, 8, loss="squared", eta=1.0, power_t=0.0, initial_t=1.0, adaptive=False,
                   normalized=False, invariant=False, algo="gravity", g=600.0, l2=0.1)
    assert allclose(preds, ref[0]) and allclose(w, ref[1])
    assert not math.isnan(float(np.sum(w)))


def test_a_model_with_negative_gravity_loads_again(tmp_path):
    """A model saved with its gravity below 0 (NEGATIVE_GRAVITY_STREAM's, in text; VW saves such an
    l1_state too) is not refused as corrupt by -i, and predicts as the run that saved it."""
    data = tmp_path / "d.vw"
    data.write_text("1 | a:-1 a:-1 a:-1 a:-1 a:-1 a:-1\n | a:-1 a:-1 a:-1 a:-1 a:-1\n1 | a:-1 a:-1 b:-1\n"
                    "1.192092896e-07 | a:0.00390625\n | a:1 b:1 c:1\n")
    opts = ["--loss_function", "logistic", "--l1", "1e-3", "-l", "0.5", "--power_t", "0.5", "--initial_t", "1",
            "--invariant", "--noconstant", "-b", "4", "--quiet"]
    model, first, second = tmp_path / "m.slm", tmp_path / "p1", tmp_path / "p2"
    res = CliRunner().invoke(main, ["train", "-d", str(data), "-f", str(model), "-p", str(first), *opts])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["train", "-d", str(data), "-i", str(model), "-t", "-p", str(second), *opts])
    assert res.exit_code == 0, res.output
    assert float(first.read_text().split()[-1]) < -0.5
    assert second.read_text().split()[-1] == first.read_text().split()[-1]
