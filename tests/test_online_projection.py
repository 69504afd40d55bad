"""The sparse online L1-ball projection (compiled heap) equals the readable Figure-3 reference and the
dense sort-based projection applied after every step, on random sparse streams."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.kernels.online_projection import (
    H_SIZE, H_THETA, project_nonzero, sparse_step, weights_in_force,
)
from streamlearn.kernels.state import N_ST, PROJ_LINEAR, PROJ_SORT, PROJ_TREE, S_HSUM
from streamlearn.kernels.projection import SORT, project_l1_ball
from streamlearn.tree_projection import TreeProjection


# strategies built once: building them at every draw took half of the generation time
STEP_SIZES = st.integers(0, 8)
DELTAS = st.one_of(st.floats(-3, 3, allow_nan=False), st.sampled_from([0.0, 1.0, -0.5]))


@st.composite
def streams(draw):
    dim = draw(st.integers(1, 60))
    index = st.integers(0, dim - 1)
    steps = []
    for _ in range(draw(st.integers(1, 60))):
        k = draw(STEP_SIZES)
        idx = [draw(index) for _ in range(k)]
        delta = [draw(DELTAS) for _ in range(k)]
        steps.append((idx, delta))
    return dim, steps


def close(a, b, tol=1e-9):
    return np.allclose(a, b, rtol=tol, atol=tol)


def run(dim, steps, z, check_each=None, method=PROJ_TREE):
    """Columns: stored weight, heap position, heap row and key. ``method`` other than tree: apply the updates
    with an infinite radius, then project with the plain method over the non-zero weights."""
    table = np.zeros((dim, 4))
    state = np.zeros(N_ST)
    out = np.zeros(dim)
    for n, (idx, delta) in enumerate(steps):
        i, d = np.array(idx, np.int64), np.array(delta, float)
        if method == PROJ_TREE:
            sparse_step(table, 0, 1, 2, state, i, d, z)
        else:
            sparse_step(table, 0, 1, 2, state, i, d, np.inf)
            project_nonzero(table, 0, 1, 2, state, z, method, n)
        if check_each is not None:
            weights_in_force(table, 0, state, out)
            check_each(idx, delta, out, state)
    weights_in_force(table, 0, state, out)
    return out, state


@settings(max_examples=300, deadline=None)
@given(data=streams(), z=st.sampled_from([0.01, 0.5, 1.0, 3.0, 50.0]),
       method=st.sampled_from([PROJ_TREE, PROJ_LINEAR, PROJ_SORT]))
def test_online_projection_equals_dense_projection_after_every_step(data, z, method):
    dim, steps = data
    dense = np.zeros(dim)

    def check(idx, delta, w, state):
        nonlocal dense
        for i, d in zip(idx, delta):
            dense[i] += d
        dense = project_l1_ball(dense, np.ones(dim), z, SORT, 0)
        assert close(w, dense), (w, dense)
        assert np.abs(w).sum() <= z * (1 + 1e-9)
        assert int(state[H_SIZE]) == np.count_nonzero(w)

    run(dim, steps, z, check, method)


@settings(max_examples=200, deadline=None)
@given(data=streams(), z=st.sampled_from([0.01, 1.0, 3.0]))
def test_online_projection_equals_the_tree_reference(data, z):
    dim, steps = data
    ref = TreeProjection(z)
    for idx, delta in steps:
        ref.step(zip(idx, delta))
    w, _ = run(dim, steps, z)
    assert close(w, [ref.weight(i) for i in range(dim)])


def test_many_steps_rebase_and_stay_exact():
    """Theta grows without bound on a long stream; rebasing keeps ||w||_1 <= z(1 + 1e-9)."""
    rng = np.random.default_rng(5)
    dim, z = 2000, 0.5
    steps = [(rng.integers(0, dim, 20).tolist(), rng.normal(0, 1, 20).tolist()) for _ in range(3000)]
    dense = np.zeros(dim)
    worst = 0.0

    def check(idx, delta, w, state):
        nonlocal dense, worst
        for i, d in zip(idx, delta):
            dense[i] += d
        dense = project_l1_ball(dense, np.ones(dim), z, SORT, 0)
        worst = max(worst, np.abs(w - dense).max())
        assert np.abs(w).sum() <= z * (1 + 1e-9)

    _, state = run(dim, steps, z, check)
    assert worst <= 1e-9
    assert state[H_THETA] < 1e4 * z        # rebased along the way


@settings(max_examples=100, deadline=None)
@given(data=streams(), z=st.sampled_from([0.05, 1.0, 3.0]))
def test_heap_invariants_hold_after_every_step(data, z):
    """Heap order on the heap keys, every heap key at most its entry's exact key, positions and the
    key sum consistent, and only non-zero weights in the heap."""
    dim, steps = data
    table = np.zeros((dim, 4))
    state = np.zeros(N_ST)
    for idx, delta in steps:
        sparse_step(table, 0, 1, 2, state, np.array(idx, np.int64), np.array(delta, float), z)
        n = int(state[H_SIZE])
        rows = table[:n, 2].astype(int)
        keys = table[:n, 3]
        assert all(keys[(p - 1) // 2] <= keys[p] for p in range(1, n))
        assert np.all(keys <= np.abs(table[rows, 0]) * (1 + 1e-15))
        assert all(int(table[r, 1]) == p + 1 for p, r in enumerate(rows))
        assert set(rows.tolist()) == set(np.nonzero(table[:, 0])[0].tolist())
        assert np.isclose(state[S_HSUM], np.abs(table[rows, 0]).sum(), rtol=1e-9, atol=1e-9)


def test_removal_from_inside_the_heap_sifts_the_last_entry_up():
    """A weight that becomes exactly 0 leaves the heap from inside it; the last entry takes its place
    and must move up when it is smaller than its new parent (the random streams above rarely build
    that shape: a mutant that never sifts up there passed them)."""
    dim = 7
    table = np.zeros((dim, 4))
    state = np.zeros(N_ST)
    keys = [1.0, 10.0, 2.0, 11.0, 12.0, 3.0, 4.0]       # heap by position: 1 / 10 2 / 11 12 3 4
    sparse_step(table, 0, 1, 2, state, np.arange(dim), np.array(keys), 1e9)
    sparse_step(table, 0, 1, 2, state, np.array([3]), np.array([-11.0]), 1e9)   # 11 -> 0: removed
    n = int(state[H_SIZE])
    rows = table[:n, 2].astype(int)
    heap_keys = table[:n, 3]
    assert n == 6 and set(rows.tolist()) == {0, 1, 2, 4, 5, 6}
    assert all(heap_keys[(p - 1) // 2] <= heap_keys[p] for p in range(1, n))
    assert all(int(table[r, 1]) == p + 1 for p, r in enumerate(rows))
    out = np.zeros(dim)
    weights_in_force(table, 0, state, out)
    assert out.tolist() == [1.0, 10.0, 2.0, 0.0, 12.0, 3.0, 4.0]
