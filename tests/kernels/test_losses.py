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
    for loss in ("squared", "logistic", "hinge", "quantile"):
        yy = (1.0 if y > 0 else -1.0) if loss in ("logistic", "hinge") else y
        assert py_loss(loss, p, y, tau) == pytest.approx(ref_loss(loss, p, yy, tau, -math.inf, math.inf))
        assert py_dloss(loss, p, y, tau) == pytest.approx(ref_dloss(loss, p, yy, tau))


@settings(deadline=None)
@given(p=st.floats(-5, 5).filter(lambda p: abs(abs(p) - 1) > 1e-3 and abs(p - 0.3) > 1e-3),
       y=st.sampled_from([-1.0, 1.0, 0.3]))
def test_derivatives_are_numerical_derivatives(p, y):
    h = 1e-6
    for loss in ("squared", "logistic", "hinge", "quantile"):
        num = (py_loss(loss, p + h, y) - py_loss(loss, p - h, y)) / (2 * h)
        assert py_dloss(loss, p, y) == pytest.approx(num, abs=1e-4)


def test_labels_for_classification_losses():
    # > 0 positive, <= 0 negative: 0/1 and -1/+1 labels behave the same
    assert py_loss("logistic", 0.3, 0.0) == py_loss("logistic", 0.3, -1.0)
    assert py_loss("hinge", 0.3, 1.0) == py_loss("hinge", 0.3, 7.0)
    assert py_loss("logistic", 0.0, 1.0) == pytest.approx(math.log(2))


def test_squared_loss_linear_outside_bounds():
    # VW extends squared loss linearly outside [min label, max label]
    assert py_loss("squared", 3.0, 1.0, lo=0.0, hi=2.0) == pytest.approx(1.0 + 2.0 * 1.0 * 1.0)
    assert py_loss("squared", -1.0, 0.0, lo=0.0, hi=2.0) == 0.0
