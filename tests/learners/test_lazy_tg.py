"""Lazy truncated gradient and gradient descent, under every update rule, equal the eager dense
references on random streams."""

import functools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support.reference import T1, eager_gd, eager_linear
from streamlearn.core import state as S
from streamlearn.learners import tg
from streamlearn.learners.tg import finalize_tg
from streamlearn.core.table import BLOCK, catch_up, catch_up_block, shrink, truncate
from support.compare import TOL32, allclose, close_in
from support.kernels import run_kernel, table_dtype
from support.streams import random_stream, streams

LOSSES = ["squared", "logistic", "hinge", "quantile"]


def dtypes(opts) -> tuple:
    """The tables every lazy == eager property runs on: the one the learner ships (float32 for sgd and
    tg under per-feature rates, issue 30: to ``TOL32``, the stored values being rounded to float32 and
    the time stamps not) and a float64 one of the same layout through the same kernels (to 1e-9: the
    lazy bookkeeping itself is exact); one table when they are the same."""
    return tuple(dict.fromkeys((table_dtype(**opts), "float64")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES),
       g=st.sampled_from([0.0, 0.01, 0.1, 0.5]), theta=st.sampled_from([math.inf, 0.05, 0.3, 2.0]),
       K=st.sampled_from([1, 2, 3, 7]), eta=st.sampled_from([0.05, 0.5, 2.0]),
       power_t=st.sampled_from([0.0, 0.5, 1.0]), initial_t=st.sampled_from([0.5, 1.0, 10.0]))
def test_lazy_tg_equals_eager(data, loss, g, theta, K, eta, power_t, initial_t):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    opts = dict(loss=loss, algo="tg", l1=g, threshold=theta, period=K, learning_rate=eta,
                power_t=power_t, initial_t=initial_t, sgd=True)
    ref_preds, ref_w = eager_linear(examples, 1 << bits, loss=loss, eta=eta, power_t=power_t,
                                    initial_t=initial_t, algo="tg", g=g, theta=theta, K=K)
    for dtype in dtypes(opts):
        preds, w = run_kernel(examples, bits, splits, dtype=dtype, **opts)
        assert close_in(dtype, preds, ref_preds), (dtype, preds, ref_preds)
        assert close_in(dtype, w, ref_w), (dtype, w, ref_w)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), loss=st.sampled_from(LOSSES), eta=st.sampled_from([0.1, 1.0, 10.0]),
       power_t=st.sampled_from([0.0, 0.5, 0.7]), initial_t=st.sampled_from([0.0, 1.0, 3.0]))
def test_sgd_equals_reference(data, loss, eta, power_t, initial_t):
    bits = data.draw(st.integers(2, 6))
    examples = data.draw(streams(bits))
    ref_preds, ref_w = eager_linear(examples, 1 << bits, loss=loss, eta=eta, power_t=power_t,
                                    initial_t=initial_t)
    opts = dict(loss=loss, algo="sgd", learning_rate=eta, power_t=power_t, initial_t=initial_t, sgd=True)
    for dtype in dtypes(opts):
        preds, w = run_kernel(examples, bits, dtype=dtype, **opts)
        assert close_in(dtype, preds, ref_preds), (dtype, preds, ref_preds)
        assert close_in(dtype, w, ref_w), (dtype, w, ref_w)


def test_tg_with_zero_gravity_is_sgd():
    rng = np.random.default_rng(0)
    examples = [(float(rng.choice([-1, 1])), 1.0, 0.0,
                 [(int(i), float(np.float32(v))) for i, v in zip(rng.integers(0, 64, 5), rng.normal(size=5))])
                for _ in range(200)]
    for rule in ({"sgd": True}, {}, {"adaptive": True}, {"normalized": True, "invariant": True}):
        p1, w1 = run_kernel(examples, 6, loss="logistic", algo="sgd", dtype="float64", **rule)
        p2, w2 = run_kernel(examples, 6, loss="logistic", algo="tg", l1=0.0, dtype="float64", **rule)
        assert np.array_equal(p1, p2) and np.array_equal(w1, w2), rule
        # the tables they ship: --sgd's float64 alike; under per-feature rates tg's stamped float32 table
        # computes each rate in float32 arithmetic (``table.stamped_rate``), sgd rounds its float64 rate
        p1, w1 = run_kernel(examples, 6, loss="logistic", algo="sgd", **rule)
        p2, w2 = run_kernel(examples, 6, loss="logistic", algo="tg", l1=0.0, **rule)
        if rule.get("sgd"):
            assert np.array_equal(p1, p2) and np.array_equal(w1, w2)
        else:
            assert allclose(p1, p2, TOL32) and allclose(w1, w2, TOL32), rule


def test_truncate_matches_paper_T1():
    for v in [-3, -1, -0.2, 0, 0.2, 1, 3]:
        for alpha in [0, 0.1, 0.5, 5]:
            for theta in [0.0, 0.3, 1.5, math.inf]:
                assert truncate(float(v), alpha, theta) == T1(float(v), alpha, theta)


def plain_catch_up(table, i, cum, theta):
    """catch_up of plain truncated gradient: LAST in column 1, no per-feature rate, no penalty."""
    return catch_up(table, i, cum, theta, 1, -1, -1, -1, 0.0, True, 0.5, -1)


def test_catch_up_is_idempotent_and_composes():
    table = np.zeros((4, 2))
    table[1, 0] = 0.9
    assert plain_catch_up(table, 1, 0.25, math.inf) == pytest.approx(0.65)
    assert plain_catch_up(table, 1, 0.25, math.inf) == pytest.approx(0.65)   # nothing owed twice
    assert plain_catch_up(table, 1, 0.5, math.inf) == pytest.approx(0.4)     # only the difference
    assert plain_catch_up(table, 1, 10.0, math.inf) == 0.0                    # stops at zero
    table[2, 0] = -0.5
    table[3, 0] = 0.9
    prm = np.zeros(S.N_PRM)
    iprm = np.zeros(S.N_IPRM, np.int64)
    prm[S.P_THRESHOLD] = 0.6
    iprm[S.I_COL_LAST] = 1
    iprm[S.I_COL_G] = iprm[S.I_COL_N] = iprm[S.I_COL_PEN] = iprm[S.I_COL_RATE] = iprm[S.I_COL_ACC] = iprm[S.I_STAMPS] = -1
    prm[S.P_POWER_T] = 0.5
    stt = np.zeros(S.N_ST)
    stt[tg.S_GRAVITY] = 0.2
    finalize_tg(table, prm, iprm, stt)     # |w| > theta: untouched; |w| <= theta: shrunk
    assert table[2, 0] == pytest.approx(-0.3) and table[3, 0] == 0.9
    assert table[0, 1] == 0.0        # rows of zero weights are not written


def test_catch_up_scales_by_the_weights_own_rate():
    """Adaptive + normalized: the weight owes r_i = G^-1/2 / N times the released gravity."""
    table = np.zeros((2, 4))       # W, G, N, LAST
    table[1] = [0.9, 4.0, 2.0, 0.0]
    assert catch_up(table, 1, 0.8, math.inf, 3, -1, 1, 2, 0.0, True, 0.5, -1) == pytest.approx(0.9 - 0.8 / 4)
    assert table[1, 3] == 0.8


def test_cumulative_penalty_keeps_the_raw_weight():
    """Cumulative penalty: the raw weight stays, the penalty grows, the weight in force is the
    raw weight shrunk by it; a weight never updated accrues nothing."""
    table = np.zeros((3, 3))       # Z, P, LAST
    table[1, 0] = 0.5
    assert catch_up(table, 1, 0.2, math.inf, 2, 1, -1, -1, 0.0, True, 0.5, -1) == pytest.approx(0.3)
    assert catch_up(table, 1, 0.9, math.inf, 2, 1, -1, -1, 0.0, True, 0.5, -1) == 0.0
    assert table[1, 0] == 0.5 and table[1, 1] == pytest.approx(0.9)    # raw kept, penalty grown
    table[1, 0] = 1.5                                                  # a gradient step outgrows it
    assert catch_up(table, 1, 0.9, math.inf, 2, 1, -1, -1, 0.0, True, 0.5, -1) == pytest.approx(0.6)
    assert catch_up(table, 2, 5.0, math.inf, 2, 1, -1, -1, 0.0, True, 0.5, -1) == 0.0
    assert table[2, 1] == 0.0 and table[2, 2] == 5.0


def test_cumulative_penalty_accrues_while_the_raw_weight_is_zero():
    """A weight whose raw value is exactly 0 but which has a penalty keeps accruing it: the next step
    must outgrow all of it (a mutant that skipped the accrual at z = 0 passed the random streams)."""
    table = np.zeros((2, 3))       # Z, P, LAST
    table[1] = [0.0, 0.3, 0.0]
    assert catch_up(table, 1, 0.5, math.inf, 2, 1, -1, -1, 0.0, True, 0.5, -1) == 0.0
    assert table[1, 1] == pytest.approx(0.8) and table[1, 2] == 0.5
    table[1, 0] = 1.0              # a gradient step moves the raw weight
    assert catch_up(table, 1, 0.5, math.inf, 2, 1, -1, -1, 0.0, True, 0.5, -1) == pytest.approx(0.2)


def test_late_feature_is_not_crushed():
    """A feature first seen after a long stream starts fresh (per-feature lazy L1)."""
    early = [(1.0, 1.0, 0.0, [(1, 1.0)]) for _ in range(500)]
    late = [(1.0, 1.0, 0.0, [(2, 1.0)])]
    _, w = run_kernel(early + late, 3, loss="squared", algo="tg", l1=0.05, learning_rate=0.5, sgd=True)
    # one step of size rate * 2 * (1 - 0) towards the label, minus at most one step of gravity
    assert w[2] > 0.0


RULES = [dict(adaptive=a, normalized=n, invariant=i)
         for a in (False, True) for n in (False, True) for i in (False, True)]


def rule_options(rule):
    given = {k: True for k, v in rule.items() if v}
    return given or {"sgd": True}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), rule=st.sampled_from(RULES),
       eta=st.sampled_from([0.05, 0.5, 2.0]), power_t=st.sampled_from([0.5, 0.5, 0.3, 1.0]),
       initial_t=st.sampled_from([0.0, 0.0, 1.0, 4.0]))
def test_gd_rules_equal_eager_reference(data, loss, rule, eta, power_t, initial_t):
    """Every combination of adaptive / normalized / invariant equals the dense step-by-step
    transcription of VW's rule: predictions, weights and the per-feature G and N."""
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    opts = dict(loss=loss, algo="sgd", learning_rate=eta, power_t=power_t, initial_t=initial_t,
                **rule_options(rule))
    ref = eager_gd(examples, 1 << bits, loss=loss, eta=eta, power_t=power_t, initial_t=initial_t, **rule)
    for dtype in dtypes(opts):
        preds, w, G, N = run_kernel(examples, bits, splits, full=True, dtype=dtype, **opts)
        assert close_in(dtype, preds, ref[0]), (dtype, preds, ref[0])
        assert close_in(dtype, w, ref[1]), (dtype, w, ref[1])
        assert close_in(dtype, G, ref[2]) and close_in(dtype, N, ref[3])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), rule=st.sampled_from(RULES),
       g=st.sampled_from([0.0, 0.01, 0.1, 0.5]), theta=st.sampled_from([math.inf, 0.05, 0.3, 2.0]),
       K=st.sampled_from([1, 2, 3, 7]), eta=st.sampled_from([0.05, 0.5, 2.0]),
       power_t=st.sampled_from([0.5, 0.5, 0.3]), initial_t=st.sampled_from([0.0, 0.0, 1.0, 4.0]),
       cumulative=st.booleans())
def test_lazy_tg_with_per_feature_rates_equals_eager(data, loss, rule, g, theta, K, eta, power_t, initial_t,
                                                     cumulative):
    """Lazy truncated gradient under every update rule, with and without the cumulative penalty,
    equals regularizing every weight with its own current rate at every K-th step, to 1e-9."""
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    if cumulative:
        theta = math.inf               # --threshold does not apply with a cumulative penalty
    opts = dict(loss=loss, algo="tg", l1=g, period=K, learning_rate=eta, power_t=power_t,
                initial_t=initial_t, cumulative_penalty=cumulative, **rule_options(rule))
    if theta != math.inf:
        opts["threshold"] = theta
    ref = eager_gd(examples, 1 << bits, loss=loss, eta=eta, power_t=power_t, initial_t=initial_t,
                   algo="tg", g=g, theta=theta, K=K, cumulative=cumulative, **rule)
    for dtype in dtypes(opts):
        preds, w, G, N = run_kernel(examples, bits, splits, full=True, dtype=dtype, **opts)
        assert close_in(dtype, preds, ref[0]), (dtype, preds, ref[0])
        assert close_in(dtype, w, ref[1]), (dtype, w, ref[1])


def test_default_tg_late_feature_is_not_crushed():
    """With the default per-feature rates too, a feature first seen late starts fresh."""
    early = [(1.0, 1.0, 0.0, [(1, 1.0)]) for _ in range(500)]
    late = [(1.0, 1.0, 0.0, [(2, 1.0)])]
    _, w = run_kernel(early + late, 3, loss="squared", algo="tg", l1=0.05)
    assert w[2] > 0.0


def test_catch_up_reads_the_rate_column():
    """With a rate column the owed gravity is scaled by the stored rate (the same as G^-1/2 / N when
    the column holds it), not recomputed."""
    table = np.zeros((2, 5))       # W, G, N, LAST, RATE
    table[1] = [0.9, 4.0, 2.0, 0.0, 0.25]
    assert catch_up(table, 1, 0.8, math.inf, 3, -1, 1, 2, 0.0, True, 0.5, 4) == pytest.approx(0.9 - 0.8 / 4)
    table[1] = [0.9, 4.0, 2.0, 0.0, 0.5]        # the column is what is read
    assert catch_up(table, 1, 0.8, math.inf, 3, -1, 1, 2, 0.0, True, 0.5, 4) == pytest.approx(0.9 - 0.8 / 2)


@pytest.mark.parametrize("opts", [{"algo": "tg", "l1": 1e-3, "adaptive": True, "initial_t": 1.0},
                                  {"algo": "sgd"}, {"algo": "sgd", "normalized": True, "power_t": 0.3}])
def test_rate_column_holds_every_used_rows_rate(tmp_path, opts):
    """After training, the rate column of every used row equals the rate of its G and N (``rate_decay``),
    and ``fill_rates`` (run after a model is loaded) rebuilds exactly that column."""
    from streamlearn import learners
    from streamlearn.config import train_config
    from streamlearn.core.table import fill_rates, nonzero_rows, rate_decay
    from streamlearn.learners import allocate_table
    from streamlearn.run.stream import hashing_of, text_blocks
    rng = np.random.default_rng(3)
    data = tmp_path / "d.vw"
    data.write_text("".join(f"{rng.choice([-1, 1])} |a " + " ".join(f"f{rng.integers(40)}:{rng.random():.3f}"
                                                                      for _ in range(6)) + "\n"
                            for _ in range(300)))
    cfg = train_config(dict({"sources": (str(data),), "bits": 10, "loss": "logistic"}, **opts))
    lay = learners.layout(cfg)
    assert lay.rate >= 0
    prm, iprm = learners.make_settings(cfg, train=True)
    table = allocate_table(cfg.bits, lay.columns, lay.dtype)      # float32 (issue 30): the rate rounded
    st = learners.make_state(cfg, prm)
    ctr = learners.make_counters()
    ctr[S.C_DUMP] = np.inf
    for b in text_blocks((str(data),), "vw", hashing_of(cfg), 1 << 12):
        learners.block_kernel(cfg)(b.arrays(np.empty(b.n)), (table, prm, iprm, st, ctr), 0, b.n)
    rows = nonzero_rows(table, lay.saved)
    assert rows.shape[0] > 20
    g0, pt = prm[S.P_G0], prm[S.P_POWER_T]
    for i in rows:
        G = float(table[i, lay.g]) + g0 if lay.g >= 0 else 0.0
        N = float(table[i, lay.n]) if lay.n >= 0 else 0.0
        assert table[i, lay.rate] == np.asarray(rate_decay(G, N, lay.g >= 0, lay.n >= 0, pt == 0.5, pt), table.dtype)
    stored = table[:, lay.rate].copy()
    table[:, lay.rate] = 0.0
    fill_rates(table, lay.saved, lay.g, lay.n, lay.rate, g0, pt == 0.5, pt)
    assert np.array_equal(table[:, lay.rate], stored)


def stamp_stream(n, m):
    """n examples of squared loss: feature 2 (label 0) in every one, feature 1 (label 1) in example m only."""
    nfeat = np.ones(n, np.int64)
    nfeat[m] = 2
    indptr = np.concatenate([[0], np.cumsum(nfeat)]).astype(np.int64)
    idx = np.full(indptr[-1], 2, np.uint32)
    idx[indptr[m]] = 1
    val = np.ones(indptr[-1], np.float32)
    labels, weights, bases = np.zeros(n), np.ones(n), np.zeros(n)
    labels[m] = 1.0
    return indptr, idx, val, labels, weights, bases


@settings(max_examples=300, deadline=None)
@example(G=2.0 ** -140, N=2.0 ** -130, g0=0.0, flags=(True, True), power_t=0.5)   # sqrt(G) N underflows
@given(G=st.floats(0.0, 2.0 ** 100, width=32), N=st.floats(0.0, 2.0 ** 20, width=32), g0=st.sampled_from([0.0, 1.0, 0.37]),
       flags=st.sampled_from([(True, True), (True, False), (False, True)]), power_t=st.sampled_from([0.5, 0.3]))
def test_stamped_rate_is_the_rate_in_the_tables_arithmetic(G, N, g0, flags, power_t):
    """``stamped_rate``, the rate every read of a stamped row uses: on a float32 table under the default
    rule 1 / (sqrt(G + g0) N) in float32 arithmetic (NumPy's float32 operations, each correctly rounded),
    0 for a row with no G or N yet; otherwise (and on a float64 table) ``rate_decay`` in the table's type."""
    from streamlearn.core.table import rate_decay, stamped_rate
    adaptive, normalized = flags
    f32, f64 = np.zeros((1, 1), np.float32), np.zeros((1, 1))
    got32 = stamped_rate(f32, np.float32(G), np.float32(N), g0, adaptive, normalized, power_t == 0.5, power_t)
    got64 = stamped_rate(f64, G, N, g0, adaptive, normalized, power_t == 0.5, power_t)
    exact = rate_decay(G + g0 if adaptive else 0.0, N, adaptive, normalized, power_t == 0.5, power_t)
    assert got64 == exact
    if adaptive and normalized and power_t == 0.5:
        Gt = np.float32(G + g0)
        with np.errstate(divide="ignore"):       # sqrt(G) N underflowing to 0: an infinite rate
            want = np.float32(0.0) if Gt <= 0 or N <= 0 else np.float32(1.0) / (np.sqrt(Gt) * np.float32(N))
    else:
        with np.errstate(over="ignore"):        # a rate past float32's range rounds to inf, as the kernel's
            want = np.float32(exact)
    assert np.float32(got32) == want or (np.isnan(want) and np.isnan(got32))
    assert abs(float(got32) - exact) <= 3 * 2.0 ** -24 * abs(exact) or not np.isfinite(want)


@pytest.mark.parametrize("rule", [{}, {"adaptive": True}, {"normalized": True}])
def test_stamped_table_pays_exactly_the_released_gravity_across_epochs(rule):
    """The 16-byte table (issue 30: w g n a, a = P - (LAST - C) r): a row untouched for 500,000 learned
    examples, across ~500 rebases of the epoch base C, ends with the penalty it had after its touch
    plus its rate times the float64 difference of the released cumulative gravity, to the rebases'
    float32 roundings of P (2^-24 each; no release is lost to a stamp's rounding), its raw weight and
    rate untouched."""
    from streamlearn import learners
    from streamlearn.config import train_config
    from streamlearn.core.table import stamped_row_rate
    from support.kernels import kernel_arrays, run_block
    n, m = 1_000_001, 500_000
    arrays = stamp_stream(n, m)
    cfg = train_config(dict(rule, bits=3, sources=("-",), loss="squared", algo="tg", l1=1e-7,
                            learning_rate=0.5, power_t=0.0))
    lay = learners.layout(cfg)
    assert lay.dtype == "float32" and lay.columns * 4 <= 16 and lay.acc >= 0 and lay.last < 0 and lay.rate < 0
    kernel = learners.block_kernel(cfg)
    prm, iprm, st, ctr = kernel_arrays(cfg)
    st[tg.S_REBASE] = 1000.0                  # a rebase every 1000 releases (every one by default: 8 slots)
    table = learners.allocate_table(cfg.bits, lay.columns, lay.dtype)
    preds = np.zeros(n)
    run_block(kernel, *arrays, 0, m + 1, table, prm, iprm, st, ctr, preds)
    raw, row = float(table[1, 0]), table[1].copy()
    assert abs(raw) > 0.1
    r = float(stamped_row_rate(table, 1, lay.g, lay.n, prm[S.P_G0], prm[S.P_POWER_T] == 0.5, prm[S.P_POWER_T]))
    cum_touch, epoch_touch = st[tg.S_GRAVITY], st[tg.S_EPOCH]
    P_touch = float(table[1, lay.acc]) + (cum_touch - epoch_touch) * r
    assert P_touch > 0.0
    run_block(kernel, *arrays, m + 1, n, table, prm, iprm, st, ctr, preds)
    assert st[tg.S_EPOCH] - epoch_touch > 0.9 * (st[tg.S_GRAVITY] - cum_touch)    # rebased all along
    assert np.array_equal(table[1, :lay.acc], row[:lay.acc])       # z, G and N untouched
    learners.finalize(cfg, table, prm, iprm, st)
    assert st[tg.S_EPOCH] == st[tg.S_GRAVITY]
    owed = (st[tg.S_GRAVITY] - cum_touch) * r
    assert owed > 0.5 * P_touch
    rebases = (n - m) // 1000 + 1             # each rounds P to float32 (2^-24 relative); the time part is exact
    assert float(table[1, lay.acc]) == pytest.approx(P_touch + owed, rel=rebases * 2.0 ** -24, abs=0)
    assert learners.weights_in_force(cfg, table, st, np.array([1]))[0] == pytest.approx(
        math.copysign(abs(raw) - P_touch - owed, raw), rel=1e-5)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), rule=st.sampled_from([r for r in RULES if r["normalized"]]
                                                                          + [dict(adaptive=True, normalized=False,
                                                                                  invariant=True)]),
       g=st.sampled_from([0.01, 0.1, 0.5]), K=st.sampled_from([1, 2, 3]), eta=st.sampled_from([0.05, 0.5, 2.0]),
       power_t=st.sampled_from([0.5, 0.3]), every=st.sampled_from([1.0, 2.0, 5.0]))
def test_stamped_tg_with_rebases_equals_eager(data, loss, rule, g, K, eta, power_t, every):
    """The stamped bookkeeping, rebased every 1, 2 or 5 releases (many rebases in a stream), equals the
    eager cumulative penalty to 1e-9 on a float64 table of its layout. (A float32 table rebased every
    E > 1 releases rounds a young row's a = -d r, d < E releases: ``tg.rebase_every``'s bound, which
    hypothesis exceeded 1e-5 with under a rate of 2352; at E = 1, the small tables' default, the
    lazy == eager properties above hold to 1e-5.)"""
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    opts = dict(loss=loss, algo="tg", l1=g, period=K, learning_rate=eta, power_t=power_t, **rule_options(rule))
    ref = eager_gd(examples, 1 << bits, loss=loss, eta=eta, power_t=power_t, algo="tg", g=g, K=K,
                   cumulative=True, **rule)
    epochs = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(tg.LEARNER.slot_start, "rebase", every)
        preds, w = run_kernel(examples, bits, dtype="float64", **opts,
                              after=lambda table, stt: epochs.append(stt[tg.S_EPOCH]))
    assert allclose(preds, ref[0]) and allclose(w, ref[1]), (preds, ref[0], w, ref[1])
    releases = sum(1 for lab, h, _, _ in examples if lab is not None and h > 0) // K
    assert releases < every or max(epochs) > 0.0          # rebased inside the run (the base starts at 0)


def repeated_rows_stream(n, dim, seed):
    """Examples in which rows repeat (2 to 4 times, with other values) beside rows that do not."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rows = [int(i) for i in rng.integers(0, dim, 3)]
        rows += [rows[0]] * int(rng.integers(1, 4)) + [rows[1]]
        rng.shuffle(rows)
        out.append((float(rng.choice([-1.0, 1.0])), 1.0, 0.0,
                    [(i, float(np.float32(rng.uniform(0.2, 3.0) * rng.choice([-1.0, 1.0])))) for i in rows]))
    return out


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("seed", [1, 2])
def test_stamped_tg_with_rows_repeated_in_an_example_equals_eager(loss, seed):
    """The stamped table under the default rule (issue 30: the rate r = 1/(sqrt(G) N) is computed from
    the row at each of its reads: the prediction, the old and the new rate of the statistics, the step)
    with a row repeated within an example, each duplicate's touch growing G and N before the next one
    reads them: equal to the eager cumulative penalty on a float64 table (1e-9) and on the float32
    table it ships (TOL32). A rate carried from one read to a later one without checking that the
    row's G and N are still those it was computed from would take a duplicate's stale rate."""
    examples = repeated_rows_stream(150, 16, seed)
    assert all(len({i for i, _ in feats}) < len(feats) for _, _, _, feats in examples)
    rule = dict(adaptive=True, normalized=True, invariant=True)
    opts = dict(loss=loss, algo="tg", l1=0.01, **rule_options(rule))
    ref = eager_gd(examples, 16, loss=loss, eta=0.5, algo="tg", g=0.01, cumulative=True, **rule)
    for dtype in ("float64", "float32"):
        preds, w = run_kernel(examples, 4, dtype=dtype, **opts)
        assert close_in(dtype, preds, ref[0]), (dtype, preds, ref[0])
        assert close_in(dtype, w, ref[1]), (dtype, w, ref[1])
    assert np.count_nonzero(ref[1]) > 3
    merged = [(lab, h, b, list({i: (i, sum(v for j, v in feats if j == i)) for i, _ in feats}.values()))
              for lab, h, b, feats in examples]       # the duplicates summed: another stream, not the same result
    assert not allclose(eager_gd(merged, 16, loss=loss, eta=0.5, algo="tg", g=0.01, cumulative=True, **rule)[1],
                        ref[1])


def test_stamped_rebase_moves_the_base_not_the_weights():
    """Rebases (every release, or every 4) leave every weight in force and every prediction as they
    are without any before the end."""
    examples = random_stream(300, 16, 4, 5)
    opts = dict(loss="squared", algo="tg", l1=0.01)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(tg.LEARNER.slot_start, "rebase", 1e18)
        p1, w1 = run_kernel(examples, 4, dtype="float64", **opts)
    assert np.count_nonzero(w1) > 3 and np.count_nonzero(w1) < 16
    for every in (1.0, 4.0):
        with pytest.MonkeyPatch.context() as mp:
            mp.setitem(tg.LEARNER.slot_start, "rebase", every)
            p2, w2 = run_kernel(examples, 4, dtype="float64", **opts)
        assert np.allclose(p1, p2, rtol=1e-12, atol=1e-12) and np.allclose(w1, w2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rule", [{"adaptive": True, "initial_t": 1.0}])
def test_float32_table_keeps_the_time_stamps_exact(rule):
    """The 32-byte float32 table (tg's cumulative penalty under --adaptive with initial_t > 0, where a
    never-updated row has a rate: not stamped) keeps a weight's last-touch value in float64: a weight untouched
    for 10^6 learned examples owes exactly the float64 difference of the global cumulative gravity,
    although neither value is a float32 (a float32 column would have rounded the stamp)."""
    from streamlearn import learners
    from streamlearn.config import train_config
    from support.kernels import kernel_arrays, run_block
    n, m = 1_000_001, 500_000            # feature 1 (label 1) is touched at example m only, feature 2 always
    indptr, idx, val, labels, weights, bases = stamp_stream(n, m)
    cfg = train_config(dict(rule, bits=3, sources=("-",), loss="squared", algo="tg", l1=1e-7,
                            learning_rate=0.5, power_t=0.0))
    lay = learners.layout(cfg)
    assert lay.dtype == "float32" and lay.wide(lay.last)
    kernel = learners.block_kernel(cfg)
    prm, iprm, st, ctr = kernel_arrays(cfg)
    table = learners.allocate_table(cfg.bits, lay.columns, lay.dtype)
    preds = np.zeros(n)
    run_block(kernel, indptr, idx, val, labels, weights, bases, 0, m, table, prm, iprm, st, ctr, preds)
    cum_touch = st[tg.S_GRAVITY]        # what example m's catch-up reads
    run_block(kernel, indptr, idx, val, labels, weights, bases, m, n, table, prm, iprm, st, ctr, preds)
    cum_end = st[tg.S_GRAVITY]
    stamp = lay.column(table, lay.last)[1]
    assert stamp == cum_touch and np.float32(cum_touch) != cum_touch    # exact, and not a float32
    raw = float(table[1, 0])
    assert abs(raw) > 0.1
    P = lay.column(table, lay.pen)[1]
    learners.finalize(cfg, table, prm, iprm, st)
    owed = cum_end - cum_touch
    assert owed > 0.0 and n - m > 10 ** 5
    owed *= float(table[1, lay.rate])       # scaled by the weight's own rate
    assert lay.pen >= 0 and lay.column(table, lay.pen)[1] == P + owed     # the cumulative penalty grows by it


# ----------------------------------------------------------------- tg under --sgd: block stamps (4.5 B a slot)

@pytest.fixture
def blocks_at_any_b(monkeypatch):
    """The block-stamped table at every -b (it starts at ``tg.BLOCK_MIN_BITS``), so that small tables
    test it."""
    monkeypatch.setattr(tg, "BLOCK_MIN_BITS", 0)


def test_sgd_tg_keeps_block_stamps_from_b22():
    """tg under --sgd without a threshold keeps, from -b 22 on, one float32 weight a slot and one
    float64 stamp a block of ``BLOCK`` rows in st (issue 30); below, and with --threshold, the 16-byte
    rows w last."""
    from streamlearn.config import train_config
    from streamlearn import learners
    assert tg.BLOCK_MIN_BITS == 22
    for bits in (18, 21):
        cfg = train_config(dict(algo="tg", sgd=True, l1=1e-3, bits=bits, sources=("-",)))
        assert learners.layout(cfg).names == ("w", "last") and learners.layout(cfg).dtype == "float64"
    cfg = train_config(dict(algo="tg", sgd=True, l1=1e-3, bits=22, sources=("-",)))
    assert learners.layout(cfg).names == ("w",) and learners.layout(cfg).dtype == "float32"


def test_sgd_tg_block_state(blocks_at_any_b):
    from streamlearn.config import train_config
    from streamlearn import learners
    cfg = train_config(dict(algo="tg", sgd=True, l1=1e-3, bits=10, sources=("-",)))
    lay = learners.layout(cfg)
    assert lay.names == ("w",) and lay.dtype == "float32"
    prm, iprm = learners.make_settings(cfg, train=True)
    stt = learners.make_state(cfg, prm)
    assert iprm[S.I_STAMPS] == S.N_ST and stt.shape[0] == S.N_ST + (1 << 10) // BLOCK
    cfg = train_config(dict(algo="tg", sgd=True, l1=1e-3, threshold=0.5, bits=10, sources=("-",)))
    assert "last" in learners.layout(cfg).names
    assert learners.make_settings(cfg, train=True)[1][S.I_STAMPS] == -1


def test_catch_up_block_equals_per_row_catch_up():
    """A read of any row of a block pays every row of the block what was released since the block's
    stamp, exactly as one catch-up per row would (the soft threshold composes); other blocks stay."""
    rng = np.random.default_rng(5)
    n = 3 * BLOCK + 5                     # a last, short block
    w = rng.normal(size=n)
    w[rng.integers(0, n, 10)] = 0.0
    table = w.reshape(-1, 1).copy()
    stt = np.zeros(4)
    cums = np.cumsum(rng.uniform(0.0, 0.3, 40))
    for cum in cums:
        i = int(rng.integers(0, n))
        assert catch_up_block(table, i, cum, stt, 0) == table[i, 0]
        assert stt[i // BLOCK] == cum
    # the composed reference: every row shrunk by the last stamp of its block
    for b in range(4):
        rows = slice(b * BLOCK, min(n, (b + 1) * BLOCK))
        expect = np.copysign(np.maximum(np.abs(w[rows]) - stt[b], 0.0), w[rows])
        assert np.allclose(table[rows, 0], expect, rtol=0, atol=1e-12)


def test_catch_up_block_reads_after_no_release_write_nothing():
    table = np.array([[0.5], [-0.25]], dtype=np.float32)
    stt = np.array([0.1])
    assert catch_up_block(table, 1, 0.1, stt, 0) == -0.25 and table[0, 0] == np.float32(0.5)
    # a float32 table shrinks in float32 (the owed gravity rounded to it)
    assert catch_up_block(table, 0, 0.3, stt, 0) == np.float32(0.5) - np.float32(0.2)
    assert table[1, 0] == np.float32(-0.25) + np.float32(0.2)
    assert stt[0] == 0.3


@pytest.mark.parametrize("bits,K,g,loss", [(8, 1, 0.01, "squared"), (9, 3, 0.05, "logistic"),
                                           (7, 2, 0.2, "hinge"), (6, 1, 0.05, "quantile")])
def test_block_stamped_tg_equals_eager_over_many_blocks(bits, K, g, loss, blocks_at_any_b):
    """A long stream over many blocks of 16 rows, split into several kernel calls: lazy (block stamps)
    == eager truncated gradient, to 1e-9 on a float64 table of the layout, to float32 precision on
    the float32 table the learner ships."""
    examples = random_stream(600, 1 << bits, 6, seed=bits + K)
    ref_preds, ref_w = eager_linear(examples, 1 << bits, loss=loss, eta=0.5, power_t=0.5, initial_t=1.0,
                                    algo="tg", g=g, K=K)
    opts = dict(loss=loss, algo="tg", l1=g, period=K, learning_rate=0.5, power_t=0.5, initial_t=1.0, sgd=True)
    assert table_dtype(**opts) == "float32"
    for dtype in ("float32", "float64"):
        preds, w = run_kernel(examples, bits, (100, 101, 350), dtype=dtype, **opts)
        assert close_in(dtype, preds, ref_preds), dtype
        assert close_in(dtype, w, ref_w), dtype
    assert np.count_nonzero(ref_w) > 0 and np.count_nonzero(ref_w) < (1 << bits)     # the gravity zeroed some


def test_block_stamped_tg_resumes_from_its_model(tmp_path, blocks_at_any_b):
    """-f after the block-stamped run holds every weight caught up: -i continues as one run would."""
    from support.helpers import cli
    rng = np.random.default_rng(2)
    lines = [f"{rng.choice([-1, 1])} |a " + " ".join(f"f{rng.integers(200)}:{rng.normal():.3f}" for _ in range(5))
             + "\n" for _ in range(400)]
    (tmp_path / "a.vw").write_text("".join(lines[:200]))
    (tmp_path / "b.vw").write_text("".join(lines[200:]))
    (tmp_path / "ab.vw").write_text("".join(lines))
    opts = ["--algo", "tg", "--sgd", "--l1", "1e-3", "-b", "10", "--quiet"]
    cli("train", "-d", tmp_path / "a.vw", "-f", tmp_path / "a.slm", *opts)
    cli("train", "-d", tmp_path / "b.vw", "-i", tmp_path / "a.slm", "-p", tmp_path / "resumed", *opts)
    cli("train", "-d", tmp_path / "ab.vw", "-p", tmp_path / "whole", *opts)
    resumed, whole = np.loadtxt(tmp_path / "resumed"), np.loadtxt(tmp_path / "whole")[200:]
    assert resumed.shape == (200,) and np.any(resumed != 0)
    assert np.allclose(resumed, whole, rtol=1e-5, atol=1e-6)


def test_finalize_blocks_saves_what_reads_give():
    """``finalize_blocks`` shrinks in the table's type as ``catch_up_block`` does: a model saved after it
    holds exactly the weights the next reads would have given (float32 table, owed amounts that float32
    rounds)."""
    from streamlearn.core.table import catch_up_block, finalize_blocks
    rng = np.random.default_rng(11)
    n = 5 * BLOCK + 3
    w = rng.normal(size=(n, 1)).astype(np.float32)
    w[rng.integers(0, n, 12), 0] = 0.0
    cum = 0.1 + 1e-9
    st = np.concatenate([np.zeros(4), rng.uniform(0.0, 0.1, (n + BLOCK - 1) // BLOCK)])
    read, saved = w.copy(), w.copy()
    st_read, st_saved = st.copy(), st.copy()
    values = np.array([catch_up_block(read, i, cum, st_read, 4) for i in range(n)])
    finalize_blocks(saved, cum, st_saved, 4)
    np.testing.assert_array_equal(saved[:, 0], read[:, 0])
    np.testing.assert_array_equal(values.astype(np.float32), read[:, 0])


def same_in_both_loops(loops, cfg, lay, examples, dtype, split, settings):
    """Run each of two block loops over ``examples`` (in two calls, cut at ``split``) from fresh arrays of
    ``cfg`` (``settings(prm, iprm, st)`` adjusts and checks them) on a table of ``dtype``; assert that the
    predictions, table, state and counters are equal bit for bit; return the first loop's (table, state)."""
    from support.kernels import kernel_arrays
    from support.reference import to_csr
    indptr, idx, val, labels, weights, bases = to_csr(examples)
    nfeat = np.diff(indptr).astype(np.int64)
    runs = []
    for loop in loops:
        prm, iprm, st, ctr = kernel_arrays(cfg)
        settings(prm, iprm, st)
        table = np.zeros((1 << cfg.bits, lay.columns), dtype)
        preds = np.zeros(len(examples))
        for a, b in ((0, split), (split, len(examples))):
            assert loop((indptr, idx, val, labels, weights, bases, nfeat, preds), (table, prm, iprm, st, ctr),
                        a, b) == b
        runs.append((preds, table, st, ctr))
    (p1, t1, s1, c1), (p2, t2, s2, c2) = runs
    for x, y in ((p1, p2), (t1, t2), (s1, s2), (c1, c2)):
        assert np.array_equal(x, y, equal_nan=True)
    return t1, s1


@functools.cache
def general_stamped_loop():
    """The general stamped loop of ``learn_tg_block``, its settings read at run time even under the
    default rule (compiled once per process)."""
    from numba import njit
    from streamlearn.core.loop import base_start, example_loop, sum_end

    @njit
    def general(block, state, start, end):
        table, prm, iprm, st, ctr = state
        return example_loop(block, state, start, end, tg.stamped_settings(prm, iprm), tg.stamped_view,
                            tg.stamped_weight, base_start, sum_end, tg.stamped_learn)

    return general


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("loss", ["logistic", "squared", "hinge"])
@pytest.mark.parametrize("seed", [1, 2])
def test_default_rule_loop_equals_the_general_stamped_loop(dtype, loss, seed):
    """The default rule's stamped loop (``learn_tg_block`` with ``tg.default_settings``: its flags and
    columns constants, issue 30) computes what the general stamped loop computes with the same settings
    read at run time: the same predictions, table and state, bit for bit, on a stream with repeated,
    rare and fresh rows, values of many scales (N growing, binary and tiny values), unlabelled and
    zero-importance examples, and rebases."""
    from streamlearn import learners
    from streamlearn.config import train_config
    general = general_stamped_loop()
    rng = np.random.default_rng(seed)
    examples = []
    for e in range(600):
        k = int(rng.integers(1, 9))
        rows = [int(i) for i in rng.zipf(1.3, k) % 200] + ([int(rng.integers(0, 8))] * int(rng.integers(0, 3)))
        vals = [float(np.float32(rng.choice([1.0, -1.0, 1e-20, 0.5, 3.0, 40.0]) * rng.uniform(0.5, 2.0)))
                for _ in rows]
        label = None if e % 17 == 5 else float(rng.choice([-1.0, 1.0]))
        h = 0.0 if e % 23 == 7 else float(rng.choice([1.0, 0.5, 3.0]))
        examples.append((label, h, 0.0, list(zip(rows, vals))))
    cfg = train_config(dict(bits=8, sources=("-",), loss=loss, algo="tg", l1=1e-3))
    kernel = learners.block_kernel(cfg)
    lay = learners.layout(cfg)
    assert kernel is tg.learn_tg_block and lay.acc == 3 and lay.g == 1 and lay.n == 2
    def settings(prm, iprm, st):
        st[tg.S_REBASE] = 3.0
        assert tg.is_default(tg.stamped_settings(prm, iprm))

    t1, s1 = same_in_both_loops((kernel, general), cfg, lay, examples, dtype, 250, settings)
    assert np.count_nonzero(t1[:, 0]) > 20 and s1[tg.S_EPOCH] > 0.0


@functools.cache
def general_sgd_loop():
    """``learn_sgd_block``'s general loop, its rule read at run time even under the default rule."""
    from numba import njit
    from streamlearn.core import rules
    from streamlearn.core.loop import base_start, example_loop, state_view, sum_end

    @njit
    def general(block, state, start, end):
        table, prm, iprm, st, ctr = state
        return example_loop(block, state, start, end, rules.gd_settings(prm, iprm), state_view, rules.sgd_weight,
                            base_start, sum_end, rules.sgd_learn)

    return general


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("loss", ["logistic", "squared", "hinge"])
def test_default_rule_sgd_loop_equals_the_general_loop(dtype, loss):
    """sgd's loop under VW's default rule (``rules.default_gd_settings``: the flags and the columns w g n rate
    constants, issue 30) computes what the general loop computes with the same settings read at run time:
    the same predictions, table, state and counters, bit for bit."""
    from streamlearn import learners
    from streamlearn.config import train_config
    from streamlearn.core import rules
    rng = np.random.default_rng(7)
    examples = []
    for e in range(500):
        rows = [int(i) for i in rng.zipf(1.3, int(rng.integers(1, 9))) % 200] + [int(rng.integers(0, 8))] * 2
        vals = [float(np.float32(rng.choice([1.0, -1.0, 1e-20, 0.5, 3.0, 40.0]) * rng.uniform(0.5, 2.0)))
                for _ in rows]
        label = None if e % 17 == 5 else float(rng.choice([-1.0, 1.0]))
        h = 0.0 if e % 23 == 7 else float(rng.choice([1.0, 0.5, 3.0]))
        examples.append((label, h, 0.0, list(zip(rows, vals))))
    cfg = train_config(dict(bits=8, sources=("-",), loss=loss, algo="sgd"))
    kernel = learners.block_kernel(cfg)
    lay = learners.layout(cfg)
    assert kernel is rules.learn_sgd_block and lay.names == ("w", "g", "n", "rate")
    def settings(prm, iprm, st):
        assert rules.is_default_gd(rules.gd_settings(prm, iprm))

    t1, _ = same_in_both_loops((kernel, general_sgd_loop()), cfg, lay, examples, dtype, 200, settings)
    assert np.count_nonzero(t1[:, 0]) > 20
