"""Compiled losses against the closed forms and numerical derivatives."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.reference import dloss as ref_dloss
from support.reference import loss_value as ref_loss
from streamlearn.core.losses import py_dloss, py_loss

preds = st.floats(-20, 20, allow_nan=False)


# no deadline: on a cold numba cache the first example loads or compiles the losses (over the
# default 200 ms deadline, a spurious DeadlineExceeded)
@settings(deadline=None)
@given(p=preds, y=st.sampled_from([-1.0, 1.0, 0.0, 0.5, 2.0]), tau=st.floats(0.05, 0.95))
def test_losses_match_reference(p, y, tau):
    for loss in ("squared", "logistic", "hinge", "quantile", "expectile"):
        assert py_loss(loss, p, y, tau) == pytest.approx(ref_loss(loss, p, y, tau, -math.inf, math.inf))
        assert py_dloss(loss, p, y, tau) == pytest.approx(ref_dloss(loss, p, y, tau))


@settings(deadline=None)
@given(p=st.floats(-5, 5).filter(lambda p: abs(abs(p) - 1) > 1e-3 and abs(p - 0.3) > 1e-3),
       y=st.sampled_from([-1.0, 1.0, 0.3]))
def test_derivatives_are_numerical_derivatives(p, y):
    h = 1e-6
    for loss in ("squared", "logistic", "hinge", "quantile"):
        num = (py_loss(loss, p + h, y) - py_loss(loss, p - h, y)) / (2 * h)
        assert py_dloss(loss, p, y) == pytest.approx(num, abs=1e-4)
    for tau in (0.1, 0.5):      # expectile: weighted squared loss, differentiable at p = y too
        num = (py_loss("expectile", p + h, y, tau) - py_loss("expectile", p - h, y, tau)) / (2 * h)
        assert py_dloss("expectile", p, y, tau) == pytest.approx(num, abs=1e-4)


def test_labels_for_classification_losses():
    # labels as VW takes them: hinge any real label; logistic y as the mixture (y + 1) / 2 of +1 and -1
    assert py_loss("logistic", 0.3, 0.0) == pytest.approx(0.5 * (math.log1p(math.exp(-0.3)) + math.log1p(math.exp(0.3))))
    assert py_loss("logistic", 0.3, 2.0) == pytest.approx(1.5 * math.log1p(math.exp(-0.3)) - 0.5 * math.log1p(math.exp(0.3)))
    assert py_dloss("logistic", 0.3, 0.0) == pytest.approx(-0.5 / (1 + math.exp(0.3)) + 0.5 / (1 + math.exp(-0.3)))
    assert py_loss("hinge", 0.3, 7.0) == 0.0 and py_loss("hinge", 0.3, 0.5) == pytest.approx(0.85)
    assert py_dloss("hinge", 0.3, 0.0) == 0.0          # a hinge label 0 never moves the weights
    assert py_loss("logistic", 0.0, 1.0) == pytest.approx(math.log(2))


def test_squared_loss_linear_outside_bounds():
    # VW extends squared loss linearly outside [min label, max label]
    assert py_loss("squared", 3.0, 1.0, lo=0.0, hi=2.0) == pytest.approx(1.0 + 2.0 * 1.0 * 1.0)
    assert py_loss("squared", -1.0, 0.0, lo=0.0, hi=2.0) == 0.0


# ----------------------------------------------------------------------------- VW's poisson and classic (issue 27)

@settings(deadline=None)
@given(p=st.floats(-10, 10), y=st.sampled_from([0.0, 0.5, 1.0, 3.0, 40.0]))
def test_poisson_and_classic_closed_forms(p, y):
    """poisson: the deviance 2 (y (log(y + 1e-6) - p) - (y - e^p)), derivative e^p - y; classic:
    (p - y)^2 without the linear extension outside the bounds."""
    want = 2.0 * (y * (math.log(y + 1e-6) - p) - (y - math.exp(p)))
    assert py_loss("poisson", p, y) == pytest.approx(want, rel=1e-9, abs=1e-9)
    assert py_dloss("poisson", p, y) == pytest.approx(math.exp(p) - y)
    assert py_loss("classic", p, y, lo=0.0, hi=0.1) == pytest.approx((p - y) ** 2)
    assert py_dloss("classic", p, y) == pytest.approx(2.0 * (p - y))
    # VW reports the deviance, twice the negative log-likelihood, and steps along the likelihood's
    # gradient e^p - y: half the deviance's derivative
    h = 1e-6
    num = (py_loss("poisson", p + h, y) - py_loss("poisson", p - h, y)) / (2 * h)
    assert 2.0 * py_dloss("poisson", p, y) == pytest.approx(num, rel=1e-4, abs=1e-4)


def _gradient_flow(code, p, y, scale, ppu, steps=20000):
    """The importance-invariant update by its definition (Karampatziakis & Langford 2011): u after
    the flow du/ds = -dloss(p + ppu u, y) over s in [0, scale], integrated with RK4."""
    from streamlearn.core.losses import loss_dloss
    f = lambda u: -float(loss_dloss(code, p + ppu * u, y, 0.5))   # noqa: E731
    u, ds = 0.0, scale / steps
    for _ in range(steps):
        k1 = f(u)
        k2 = f(u + ds * k1 / 2)
        k3 = f(u + ds * k2 / 2)
        k4 = f(u + ds * k3)
        u += ds * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return u


@pytest.mark.parametrize("p, y, scale, ppu", [(0.0, 2.0, 0.1, 1.0), (1.0, 0.5, 0.3, 2.0), (-2.0, 0.0, 0.5, 1.5),
                                              (0.5, 5.0, 0.05, 10.0), (2.0, 0.0, 1.0, 0.7)])
def test_poisson_invariant_update_is_the_gradient_flow(p, y, scale, ppu):
    from streamlearn.core.losses import LOSSES, loss_update
    code = LOSSES["poisson"]
    got = float(loss_update(code, p, y, 0.5, scale, ppu))
    assert got == pytest.approx(_gradient_flow(code, p, y, scale, ppu), rel=1e-6, abs=1e-9)


def test_classic_update_is_the_plain_step():
    """classic keeps the plain gradient step when the rule is invariant (VW's classic_squaredloss)."""
    from streamlearn.core.losses import LOSSES, loss_update
    for scale, ppu in ((0.1, 1.0), (0.5, 30.0), (1e-9, 1e-3)):
        assert float(loss_update(LOSSES["classic"], 0.2, 1.0, 0.5, scale, ppu)) == pytest.approx(2.0 * 0.8 * scale)


# ----------------------------------------------------------------------------- VW's expectile (issue 27)

@settings(deadline=None)
@given(p=st.floats(-10, 10), y=st.sampled_from([-2.0, 0.0, 0.5, 3.0]), q=st.floats(0.01, 0.5))
def test_expectile_is_weighted_squared_loss(p, y, q):
    """VW's expectile: (p - y)^2 times q where p is above y, 1 - q elsewhere (extended linearly
    outside the bounds as squared loss is); the derivative 2 (p - y) times the same factor."""
    w = q if p > y else 1.0 - q
    assert py_loss("expectile", p, y, q) == pytest.approx(w * (p - y) ** 2)
    assert py_dloss("expectile", p, y, q) == pytest.approx(w * 2.0 * (p - y))
    assert py_loss("expectile", p, y, q, lo=-1.0, hi=1.0) == pytest.approx(
        w * py_loss("squared", p, y, q, lo=-1.0, hi=1.0))
    if q == 0.5:
        assert py_loss("expectile", p, y, q) == pytest.approx(0.5 * py_loss("squared", p, y))


@pytest.mark.parametrize("p, y, q, scale, ppu", [(0.0, 2.0, 0.25, 0.1, 1.0), (1.0, 0.5, 0.25, 0.3, 2.0),
                                                 (-2.0, 0.0, 0.1, 0.5, 1.5), (0.5, 5.0, 0.5, 0.05, 10.0),
                                                 (2.0, 0.0, 0.3, 1e-9, 0.7)])
def test_expectile_invariant_update_is_the_gradient_flow(p, y, q, scale, ppu):
    """The invariant update is the gradient flow's (which never crosses the label, so the factor
    stays that of the start): squared's closed form with the scale times the factor."""
    from streamlearn.core.losses import LOSSES, loss_dloss, loss_update
    code = LOSSES["expectile"]
    f = lambda u: -float(loss_dloss(code, p + ppu * u, y, q))   # noqa: E731
    u, steps = 0.0, 20000
    ds = scale / steps
    for _ in range(steps):
        k1 = f(u)
        k2 = f(u + ds * k1 / 2)
        k3 = f(u + ds * k2 / 2)
        k4 = f(u + ds * k3)
        u += ds * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    assert float(loss_update(code, p, y, q, scale, ppu)) == pytest.approx(u, rel=1e-6, abs=1e-12)
