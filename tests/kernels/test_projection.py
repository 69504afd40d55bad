"""Projections onto the simplex and the L1 ball (Duchi et al. 2008, Figures 1 and 2, and the weighted
constraint) against an independent reference: bisection on the threshold theta."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.core.projection import (
    PIVOT, SORT, project_l1_ball, project_simplex, theta_pivot, theta_sort,
)
from support.compare import allclose


def bisect_theta(u, a, z):
    """theta with sum_i a_i max(u_i - theta a_i, 0) = z, by bisection (the function of theta is
    continuous and decreasing where it is positive)."""
    f = lambda t: sum(ai * max(ui - t * ai, 0.0) for ui, ai in zip(u, a) if ai > 0) - z
    active = [ui / ai for ui, ai in zip(u, a) if ai > 0]
    lo, hi = min(active) - z / sum(ai * ai for ai in a if ai > 0) - 1.0, max(active)
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ref_simplex(v, a, z):
    t = bisect_theta(v, a, z)
    return np.array([max(vi - t * ai, 0.0) for vi, ai in zip(v, a)])


def ref_ball(v, a, z):
    if sum(ai * abs(vi) for vi, ai in zip(v, a)) <= z:
        return np.array(v, float)
    t = bisect_theta([abs(x) for x in v], a, z)
    return np.array([np.sign(vi) * max(abs(vi) - t * ai, 0.0) for vi, ai in zip(v, a)])


entries = st.one_of(st.floats(-10, 10, allow_nan=False), st.sampled_from([0.0, 1.0, -1.0, 2.5]))
coefficients = st.one_of(st.floats(0.05, 5), st.just(0.0), st.just(1.0))


@st.composite
def problems(draw, weighted):
    n = draw(st.integers(1, 40))
    v = np.array([draw(entries) for _ in range(n)])
    if weighted:
        a = np.array([draw(coefficients) for _ in range(n)])
        if not (a > 0).any():
            a[0] = 1.0
    else:
        a = np.ones(n)
    z = draw(st.floats(0.01, 50))
    return v, a, z


@settings(max_examples=300, deadline=None)
@given(p=problems(weighted=False), seed=st.integers(0, 2**31 - 1))
def test_simplex_projection_equals_bisection(p, seed):
    v, a, z = p
    ref = ref_simplex(v, a, z)
    for method in (SORT, PIVOT):
        w = project_simplex(v, a, z, method, seed)
        assert allclose(w, ref), (method, w, ref)
        assert w.min() >= 0 and abs(w.sum() - z) <= 1e-9 * max(1.0, z)


@settings(max_examples=300, deadline=None)
@given(p=problems(weighted=True), seed=st.integers(0, 2**31 - 1))
def test_weighted_projections_equal_bisection(p, seed):
    v, a, z = p
    ball, simplex = ref_ball(v, a, z), ref_simplex(v, a, z)   # once: the bisections dominate the time
    for method in (SORT, PIVOT):
        w = project_l1_ball(v, a, z, method, seed)
        assert allclose(w, ball), (method, w)
        assert (a * np.abs(w)).sum() <= z * (1 + 1e-9)
        assert allclose(project_simplex(v, a, z, method, seed), simplex)


@settings(max_examples=300, deadline=None)
@given(p=problems(weighted=False), seed=st.integers(0, 2**31 - 1))
def test_l1_ball_projection_equals_bisection(p, seed):
    v, a, z = p
    ref = ref_ball(v, a, z)
    for method in (SORT, PIVOT):
        w = project_l1_ball(v, a, z, method, seed)
        assert allclose(w, ref), (method, w, ref)
        assert np.abs(w).sum() <= z * (1 + 1e-9)
        assert np.all(w * v >= 0)                       # Lemma 3: signs are kept


def test_inside_the_ball_is_unchanged():
    v = np.array([0.5, -0.25, 0.0, 0.1])
    w = project_l1_ball(v, np.ones(4), 1.0, SORT, 0)
    assert np.array_equal(w, v) and w is not v


def test_ties_and_the_active_count():
    v = np.array([3.0, 3.0, 3.0, 1.0, 0.0])
    a = np.ones(5)
    for theta, rho in (theta_sort(v, a, 3.0), theta_pivot(v, a, 3.0, 7)):
        assert theta == pytest.approx(2.0) and rho == 3
    assert project_simplex(v, a, 3.0, PIVOT, 1).tolist() == pytest.approx([1, 1, 1, 0, 0])


def test_unweighted_coordinates_are_free():
    """a_i = 0: the coordinate is not constrained and keeps its value."""
    v = np.array([5.0, -4.0, 1.0])
    a = np.array([1.0, 0.0, 1.0])
    w = project_l1_ball(v, a, 2.0, SORT, 0)
    assert w[1] == -4.0 and abs(w[0]) + abs(w[2]) == pytest.approx(2.0)


def test_pivot_is_deterministic_for_a_seed():
    rng = np.random.default_rng(3)
    v = rng.normal(size=1000)
    a = np.ones(1000)
    assert theta_pivot(v, a, 5.0, 11) == theta_pivot(v, a, 5.0, 11)
    assert theta_pivot(v, a, 5.0, 11)[0] == pytest.approx(theta_sort(v, a, 5.0)[0], rel=1e-12)
