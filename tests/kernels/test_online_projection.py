"""The sparse online L1-ball projection (compiled heap) equals the readable Figure-3 reference and the
dense sort-based projection applied after every step, on random sparse streams."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.core.online_projection import (
    H_SIZE, H_THETA, SLACK, compact, new_heap, project_nonzero, sparse_step, weights_in_force,
)
from streamlearn.core.state import N_ST, PROJ_LINEAR, PROJ_SORT, PROJ_TREE, S_HSUM
from streamlearn.core.projection import SORT, project_l1_ball
from streamlearn.tree_projection import TreeProjection
from support.compare import allclose


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


def heap_room(dim, steps):
    """A heap with room for every entry a stream can add (at most one per update, plus the slack)."""
    return new_heap(2 * dim + SLACK + 2 + sum(len(idx) for idx, _ in steps))


def run(dim, steps, z, check_each=None, method=PROJ_TREE):
    """Table column 0: the stored weight; the heap apart. ``method`` other than tree: apply the updates
    with an infinite radius, then project with the plain method over the non-zero weights."""
    table = np.zeros((dim, 1))
    H = heap_room(dim, steps)
    state = np.zeros(N_ST)
    out = np.zeros(dim)
    for n, (idx, delta) in enumerate(steps):
        i, d = np.array(idx, np.int64), np.array(delta, float)
        if method == PROJ_TREE:
            sparse_step(table, 0, H, state, i, d, z)
        else:
            sparse_step(table, 0, H, state, i, d, np.inf)
            project_nonzero(table, 0, H, state, z, method, n)
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
        assert allclose(w, dense), (w, dense)
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
    assert allclose(w, [ref.weight(i) for i in range(dim)])


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


def check_heap(table, H, state):
    """Heap order on the keys; every non-zero row has an entry whose key is at most its exact key;
    no more entries than 2 n + SLACK; n and the key sum follow the non-zero weights."""
    m = int(H[0, 0])
    rows = H[1:m + 1, 0].astype(int)
    keys = H[1:m + 1, 1]
    assert all(keys[(p - 1) // 2] <= keys[p] for p in range(1, m))       # 0-based view of the 1-based heap
    live = set(np.nonzero(table[:, 0])[0].tolist())
    for r in live:
        assert np.any((rows == r) & (keys <= abs(table[r, 0]))), r
    n = int(state[H_SIZE])
    assert n == len(live) and m <= 2 * n + SLACK + 1
    assert np.isclose(state[S_HSUM], np.abs(table[:, 0]).sum(), rtol=1e-9, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(data=streams(), z=st.sampled_from([0.05, 1.0, 3.0]))
def test_heap_invariants_hold_after_every_step(data, z):
    dim, steps = data
    table = np.zeros((dim, 1))
    H = heap_room(dim, steps)
    state = np.zeros(N_ST)
    for idx, delta in steps:
        sparse_step(table, 0, H, state, np.array(idx, np.int64), np.array(delta, float), z)
        check_heap(table, H, state)
        before = table.copy()
        compact(table, 0, H)
        assert np.array_equal(table, before)
        assert int(H[0, 0]) == int(state[H_SIZE])        # one entry per non-zero row
        check_heap(table, H, state)
        assert np.array_equal(np.sort(H[1:int(H[0, 0]) + 1, 1]), np.sort(np.abs(table[table[:, 0] != 0, 0])))


def test_a_zeroed_weight_leaves_its_entry_behind_and_the_top_skips_it():
    """A weight that becomes exactly 0 keeps its heap entry (there is no position map); the
    projection must drop it at the top and threshold the others, and a re-inserted row must not be
    taken for its old entry."""
    dim = 7
    table = np.zeros((dim, 1))
    H = new_heap(64)
    state = np.zeros(N_ST)
    keys = [1.0, 10.0, 2.0, 11.0, 12.0, 3.0, 4.0]
    sparse_step(table, 0, H, state, np.arange(dim), np.array(keys), 1e9)
    sparse_step(table, 0, H, state, np.array([0]), np.array([-1.0]), 1e9)     # 1 -> 0: left behind
    assert int(H[0, 0]) == 7 and int(state[H_SIZE]) == 6 and H[1, 0] == 0
    sparse_step(table, 0, H, state, np.array([0]), np.array([5.0]), 1e9)      # back, with a new entry
    assert int(H[0, 0]) == 8 and int(state[H_SIZE]) == 7
    # sum 47 -> 40: theta 1, every weight above 1 loses 1 (2 -> 1, ...), nothing below it
    sparse_step(table, 0, H, state, np.array([], np.int64), np.array([]), 40.0)
    out = np.zeros(dim)
    weights_in_force(table, 0, state, out)
    assert np.allclose(out, [4.0, 9.0, 1.0, 10.0, 11.0, 2.0, 3.0])
    check_heap(table, H, state)
    # radius 3: the two smallest fall to 0 at the top (theta 7, then the first candidate is refined)
    sparse_step(table, 0, H, state, np.array([], np.int64), np.array([]), 3.0)
    weights_in_force(table, 0, state, out)
    ref = TreeProjection(3.0)
    ref.step(zip(range(dim), [4.0, 9.0, 1.0, 10.0, 11.0, 2.0, 3.0]))
    assert np.allclose(out, [ref.weight(i) for i in range(dim)])
    check_heap(table, H, state)
