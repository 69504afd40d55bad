"""--oaa K under --sgd learns all K classes of an example in one pass over its features
(``multiclass.oaa_steps_loop`` with ``rules.sgd_class_steps``): the same arrays, bit for bit, as the
class-by-class update (``multiclass.oaa_loop`` with ``rules.sgd_learn``, which test_multiclass.py checks
against K binary runs), with feature rows that collide inside an example, classes whose step is 0
(hinge loss past the margin), bounds that follow the labels (squared loss), importance weights, an
initial weight and a decaying schedule."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from streamlearn import learners
from streamlearn.config import train_config
from streamlearn.core import state as S
from streamlearn.core.loop import base_start, state_view, sum_end
from streamlearn.core.multiclass import oaa_loop
from streamlearn.core.rules import gd_settings, oaa_sgd_block, sgd_learn, sgd_weight


@njit(cache=False)
def class_by_class_block(block, state, start, end):
    """The reference: ``oaa_sgd_block`` before the one-pass update (each class its own ``learn``)."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, gd_settings(prm, iprm), state_view, sgd_weight, base_start, sum_end,
                    sgd_learn)


def random_blocks(rng, n_blocks, K, bits, zero_label):
    """Blocks of examples with 0..12 features over a small hash space (rows collide within an example)."""
    blocks = []
    for _ in range(n_blocks):
        n = int(rng.integers(1, 40))
        counts = rng.integers(0, 13, size=n)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        m = int(indptr[-1])
        idx = rng.integers(0, 1 << (bits - 3), size=m).astype(np.uint32)      # few distinct rows
        val = rng.choice(np.array([1.0, 0.5, -2.0, 3.25, 1e-3], np.float32), size=m)
        labels = rng.integers(0 if zero_label else 1, K + 1, size=n).astype(np.float64)
        labels[rng.random(n) < 0.1] = np.nan                                  # unlabeled
        weights = np.where(rng.random(n) < 0.2, 2.5, 1.0)
        weights[rng.random(n) < 0.05] = 0.0
        bases = np.zeros(n)
        blocks.append((indptr, idx, val, labels, weights, bases, counts.astype(np.int64)))
    return blocks


def run(kernel, cfg, blocks, initial):
    prm, iprm = learners.make_settings(cfg, train=True)
    lay = learners.layout(cfg)
    table = learners.allocate_table(cfg.bits, lay.columns, lay.dtype)
    table[:, 0] = initial
    st = learners.make_state(cfg, prm)
    ctr = learners.make_counters()
    ctr[S.C_DUMP] = np.inf
    out = []
    for indptr, idx, val, labels, weights, bases, counts in blocks:
        n = labels.shape[0]
        preds = np.empty((n, cfg.classes + 2))
        assert kernel((indptr, idx, val, labels, weights, bases, counts, preds), (table, prm, iprm, st, ctr),
                      0, n) == n
        out.append(preds)
    return np.concatenate(out), table, st, ctr


@pytest.mark.parametrize("loss,K,extra,initial", [
    ("logistic", 20, {}, 0.0),
    ("hinge", 5, {}, -0.0),                      # steps of 0 (fewer classes move): their -0.0 weights kept
    ("squared", 3, {"power_t": 0.0}, 0.0),       # the bounds follow the labels
    ("quantile", 8, {"learning_rate": 2.0}, 0.25),
])
def test_one_pass_update_equals_class_by_class(loss, K, extra, initial):
    bits = 10
    cfg = train_config({"sources": ("x",), "bits": bits, "loss": loss, "oaa": K, "sgd": True, **extra})
    assert learners.block_kernel(cfg) is oaa_sgd_block
    blocks = random_blocks(np.random.default_rng(K), 12, K, bits, zero_label=loss == "squared")
    fast = run(oaa_sgd_block, cfg, blocks, initial)
    slow = run(class_by_class_block, cfg, blocks, initial)
    for a, b in zip(fast, slow):
        assert a.tobytes() == b.tobytes()
    assert np.count_nonzero(fast[1][:, 0] != initial) > 50


@pytest.mark.parametrize("K", [2, 3, 4, 6, 9, 20])
def test_class_scores_equal_a_sum_in_feature_order(K):
    """Predicting (nothing learned): each class's score is base + sum_i w[row_i + c] x_i summed in the
    features' order, then clamped to the bounds -- for K classes in passes of four and the rest."""
    bits = 10
    cfg = train_config({"sources": ("x",), "bits": bits, "loss": "logistic", "oaa": K, "sgd": True})
    rng = np.random.default_rng(K)
    blocks = random_blocks(rng, 3, K, bits, zero_label=False)
    prm, iprm = learners.make_settings(cfg, train=False)
    table = rng.normal(scale=12.0, size=(1 << bits, 1))
    st = learners.make_state(cfg, prm)
    ctr = learners.make_counters()
    ctr[S.C_DUMP] = np.inf
    W = 1
    while W < K:
        W *= 2
    lo, hi = st[S.S_MIN_LABEL], st[S.S_MAX_LABEL]
    clamped = 0
    for indptr, idx, val, labels, weights, bases, counts in blocks:
        n = labels.shape[0]
        bases = rng.normal(size=n)
        preds = np.empty((n, K + 2))
        oaa_sgd_block((indptr, idx, val, labels, weights, bases, counts, preds), (table, prm, iprm, st, ctr), 0, n)
        for e in range(n):
            for c in range(K):
                want = float(bases[e])
                for k in range(indptr[e], indptr[e + 1]):
                    want += float(table[((int(idx[k]) * W) & ((1 << bits) - 1)) + c, 0]) * float(val[k])
                clamped += not lo <= want <= hi
                assert preds[e, 1 + c] == min(max(want, lo), hi)
    assert clamped > 0
