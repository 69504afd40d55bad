"""Exponentiated gradient with w+ and w- (--algo eg; Duchi et al. 2008, Section 7, eq. 13): the O(k)
kernel with its running normalizer equals the dense eager reference, keeps the 2d entries positive
and summing to z, survives steps that move the reference exponent M far, and resumes exactly from
its log-weights; the CLI trains, predicts and continues with it."""

import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.cli_checks import ok, round_trip
from support.reference import to_csr
from support.reference_eg import eager_eg
from streamlearn import learners
from streamlearn.cli import main
from streamlearn.config import train_config
from streamlearn.learners import eg
from streamlearn.core import state as S
from support.kernels import kernel_arrays, run_block
from support.streams import streams

LOSSES = ["squared", "logistic", "hinge", "quantile"]


def setup(bits, z, eta, loss, batch, saved=None):
    opts = dict(algo="eg", radius=z, learning_rate=eta, bits=bits, loss=loss, sources=("-",))
    if batch > 1:
        opts["batch_size"] = batch
    cfg = train_config(opts)
    prm, iprm, stt, ctr = kernel_arrays(cfg, saved)
    table = np.zeros((1 << bits, learners.layout(cfg).columns))
    return cfg, (prm, iprm, ctr), stt, table


def entries(table, z, stt):
    """w+ and w- rebuilt from the log-weights, M and D: z exp(phi - M) / (2d exp(-M) + D)."""
    m = stt[eg.S_EG_M]
    den = 2 * table.shape[0] * math.exp(-m) + stt[eg.S_EG_D]
    return z * np.exp(table[:, 0] - m) / den, z * np.exp(table[:, 1] - m) / den


def check_simplex(table, z, stt):
    """All 2d entries sum to z and are > 0 (unless the entry is below the smallest double relative to
    the total mass: its log-weight is more than 700 below the log-sum-exp of all)."""
    wp, wn = entries(table, z, stt)
    assert math.isclose(wp.sum() + wn.sum(), z, rel_tol=1e-9), (wp.sum() + wn.sum(), z)
    phi = np.concatenate([table[:, 0], table[:, 1]])
    top = phi.max()
    lse = top + math.log(np.exp(phi - top).sum())
    w = np.concatenate([wp, wn])
    assert np.all((w > 0) | (phi - lse < -700)), w


def run_eg(examples, bits, z, eta, loss, batch=1, splits=(), start=0, state=None, check=False):
    """Run the kernel over examples[start:] in calls split at ``splits``, finalize; return
    (predictions, effective weights, table, state). ``state`` = (table, st) to continue from."""
    cfg, (prm, iprm, ctr), stt, table = setup(bits, z, eta, loss, batch)
    if state is not None:
        table, stt = state
    kernel = learners.block_kernel(cfg)
    indptr, idx, val, labels, weights, bases = to_csr(examples)
    n = len(examples)
    preds = np.zeros(n)
    bounds = sorted({start, n, *[s for s in splits if start < s < n]})
    moved = [stt[eg.S_EG_M]]
    for a, b in zip(bounds, bounds[1:]):
        assert run_block(kernel, indptr, idx, val, labels, weights, bases, a, b, table, prm, iprm, stt, ctr, preds) == b
        moved.append(stt[eg.S_EG_M])
        if check:
            check_simplex(table, z, stt)
    learners.finalize(cfg, table, prm, iprm, stt)          # applies an open mini-batch
    if check:
        check_simplex(table, z, stt)
    w = learners.weights_in_force(cfg, table, stt, np.arange(1 << bits))
    return preds[start:], w, table, stt, moved


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), z=st.sampled_from([0.05, 1.0, 20.0]),
       eta=st.sampled_from([0.1, 1.0, 10.0]), batch=st.sampled_from([1, 1, 2, 5]))
def test_eg_equals_dense_eager_eg(data, loss, z, eta, batch):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=4))
    preds, w, table, stt, _ = run_eg(examples, bits, z, eta, loss, batch, splits, check=True)
    ref_preds, ref_w = eager_eg(examples, 1 << bits, z, loss=loss, eta=eta, batch=batch)
    assert np.allclose(preds, ref_preds, rtol=1e-9, atol=1e-9), (preds, ref_preds)
    assert np.allclose(w, ref_w, rtol=1e-9, atol=1e-9), (w, ref_w)
    assert np.abs(w).sum() <= z * (1 + 1e-9)


def test_eg_starts_at_the_centre_of_the_simplex():
    cfg, _, stt, table = setup(3, 2.0, 1.0, "squared", 1)
    wp, wn = entries(table, 2.0, stt)
    assert np.allclose(wp, 2.0 / 16) and np.allclose(wn, 2.0 / 16)
    assert np.array_equal(learners.weights_in_force(cfg, table, stt, np.arange(8)), np.zeros(8))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), z=st.sampled_from([0.05, 1.0]),
       batch=st.sampled_from([1, 3]))
def test_eg_entries_stay_positive_and_sum_to_z(data, loss, z, batch):
    """With small steps no entry can underflow: every one of the 2d entries is strictly positive."""
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = range(1, len(examples))
    _, _, table, stt, _ = run_eg(examples, bits, z, 0.1, loss, batch, splits, check=True)
    wp, wn = entries(table, z, stt)
    assert np.all(wp > 0) and np.all(wn > 0)
    assert math.isclose(wp.sum() + wn.sum(), z, rel_tol=1e-12)


def stress_stream(rng, n, bits, k=3):
    out = []
    for _ in range(n):
        feats = [(int(rng.integers(1 << bits)), float(np.float32(rng.uniform(-2, 2)))) for _ in range(k)]
        out.append((float(rng.choice([-1.0, 1.0])), 1.0, 0.0, feats))
    return out


def test_eg_huge_steps_move_the_reference_exponent():
    """eta = 1e4: single steps change log-weights by thousands, so exp(phi) alone would overflow and
    M must move (up by far more than the safe bound, and back down by recomputing when the mass
    leaves). The reference works in logs (its plain form overflows). Hinge and quantile losses have
    a piecewise constant derivative, so a rounding difference in a prediction does not change the
    step and the comparison is not chaotic (with squared loss at this rate it would be)."""
    rng = np.random.default_rng(7)
    for loss, z, batch in [("hinge", 1.0, 1), ("hinge", 0.05, 1), ("quantile", 20.0, 1), ("hinge", 1.0, 4)]:
        examples = stress_stream(rng, 400, 4)
        if loss == "quantile":
            examples = [(y * 3, h, b, f) for y, h, b, f in examples]
        splits = sorted(rng.integers(0, len(examples), 30))
        preds, w, table, stt, moved = run_eg(examples, 4, z, 1e4, loss, batch, splits, check=True)
        ref_preds, ref_w = eager_eg(examples, 16, z, loss=loss, eta=1e4, batch=batch, logs=True)
        assert max(moved) > 10 * eg.SAFE, moved
        assert np.any(np.diff(moved) < 0), moved           # recomputed lower
        assert np.allclose(preds, ref_preds, rtol=1e-9, atol=1e-12), np.abs(preds - ref_preds).max()
        assert np.allclose(w, ref_w, rtol=1e-9, atol=1e-12), np.abs(w - ref_w).max()
        with np.errstate(over="ignore", invalid="ignore"):
            plain = eager_eg(examples, 16, z, loss=loss, eta=1e4, batch=batch)[1]
        assert not np.all(np.isfinite(plain))              # the plain reference would overflow


def test_eg_logs_reference_matches_plain_reference():
    rng = np.random.default_rng(3)
    examples = stress_stream(rng, 60, 3)
    for loss in LOSSES:
        a = eager_eg(examples, 8, 1.0, loss=loss, eta=1.0, batch=2)
        b = eager_eg(examples, 8, 1.0, loss=loss, eta=1.0, batch=2, logs=True)
        assert np.allclose(a[0], b[0], rtol=1e-10, atol=1e-12) and np.allclose(a[1], b[1], rtol=1e-10, atol=1e-12)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), z=st.sampled_from([0.05, 1.0, 20.0]),
       eta=st.sampled_from([0.1, 1.0, 10.0]))
def test_eg_after_load_continues_exactly(data, loss, z, eta):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    half = data.draw(st.integers(0, len(examples)))
    preds, w, *_ = run_eg(examples, bits, z, eta, loss)
    _, _, table1, st1, _ = run_eg(examples[:half], bits, z, eta, loss)
    # a fresh table and state holding only what a model file keeps: the log-weights and the clock
    saved = learners.saved_state(setup(bits, z, eta, loss, 1)[0], st1)
    cfg, (prm, iprm, ctr), stt, table = setup(bits, z, eta, loss, 1, saved=saved)
    table[:, :2] = table1[:, :2]
    assert stt[eg.S_EG_M] == 0.0 and stt[eg.S_EG_D] == 0.0
    learners.after_load(cfg, table, prm, iprm, stt)
    preds2, w2, *_ = run_eg(examples, bits, z, eta, loss, start=half, state=(table, stt))
    assert np.allclose(preds2, preds[half:], rtol=1e-9, atol=1e-9), (preds2, preds[half:])
    assert np.allclose(w2, w, rtol=1e-9, atol=1e-9), (w2, w)


def test_eg_after_load_rebuilds_the_normalizer():
    rng = np.random.default_rng(5)
    cfg, (prm, iprm, ctr), stt, table = setup(5, 3.0, 1.0, "squared", 1)
    table[:, 0] = rng.normal(0, 50, 32)
    table[:, 1] = -table[:, 0]
    table[::3, :2] = 0.0
    eg.after_load(table, prm, iprm, stt)
    check_simplex(table, 3.0, stt)
    phi = np.concatenate([table[:, 0], table[:, 1]])
    w = 3.0 * np.exp(phi - phi.max()) / np.exp(phi - phi.max()).sum()
    assert np.allclose(learners.weights_in_force(cfg, table, stt, np.arange(32)), w[:32] - w[32:],
                       rtol=1e-12, atol=1e-15)


def test_eg_weight_raised_then_lowered_recomputes_the_normalizer():
    """A weight's log grows by ~25 (M follows the mass up), then falls back by ~24.5 in the next
    example: the mass drops ~1e10-fold and D = (about 1) - (about 1) has cancelled; without
    recomputing it the weights would be off by ~1e-6 relative."""
    u = 0.5 * 70.0 / math.sqrt(2.0)                          # quantile, tau 0.5, eta 70, t = 2
    x2 = float(np.float32(u / (0.5 * 70.0 / math.sqrt(3.0)) * 0.98))
    examples = [(10.0, 1.0, 0.0, [(0, 1.0)]), (-10.0, 1.0, 0.0, [(0, x2)]),
                (1.0, 1.0, 0.0, [(0, 1.0), (1, 1.0)]), (1.0, 1.0, 0.0, [(0, 1.0), (2, -1.0)])]
    preds, w, table, stt, moved = run_eg(examples, 2, 1.0, 70.0, "quantile", splits=[1, 2, 3], check=True)
    ref_preds, ref_w = eager_eg(examples, 4, 1.0, loss="quantile", eta=70.0)
    assert moved[1] > 20 and moved[2] < 5, moved
    assert np.allclose(preds, ref_preds, rtol=1e-12, atol=1e-15), (preds, ref_preds)
    assert np.allclose(w, ref_w, rtol=1e-12, atol=1e-15), (w, ref_w)


def test_eg_periodic_recompute_keeps_learning_exactly():
    """After max(d, 2^20) steps D is recomputed from scratch; forcing it midway changes nothing."""
    rng = np.random.default_rng(11)
    examples = stress_stream(rng, 50, 3)
    cfg, (prm, iprm, ctr), stt, table = setup(3, 1.0, 1.0, "logistic", 1)
    indptr, idx, val, labels, weights, bases = to_csr(examples)
    preds = np.zeros(len(examples))
    kernel = learners.block_kernel(cfg)
    run_block(kernel, indptr, idx, val, labels, weights, bases, 0, 25, table, prm, iprm, stt, ctr, preds)
    assert stt[eg.S_EG_SINCE] == 25
    stt[eg.S_EG_SINCE] = eg.MIN_RECOMPUTE
    run_block(kernel, indptr, idx, val, labels, weights, bases, 25, 50, table, prm, iprm, stt, ctr, preds)
    assert stt[eg.S_EG_SINCE] == 24                      # recomputed at step 26, then 24 more steps
    check_simplex(table, 1.0, stt)
    ref_preds, ref_w = eager_eg(examples, 8, 1.0, loss="logistic", eta=1.0)
    assert np.allclose(preds, ref_preds, rtol=1e-12, atol=1e-14)
    assert np.allclose(learners.weights_in_force(cfg, table, stt, np.arange(8)), ref_w, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------- through the CLI

TRAIN = "data/samples/sparse.train.vw"



@pytest.mark.parametrize("batch", [1, 10])
def test_eg_cli_round_trip_and_resume(tmp_path, batch):
    header, _, _ = round_trip(tmp_path, ["--algo", "eg", "--radius", "10", "--batch-size", batch])
    assert header["algo"] == "eg" and header["column_names"] == ["w", "ep", "en"]

@pytest.mark.parametrize("first", [["--algo", "eg", "--radius", "10", "--predict-only-model"],
                                   ["--algo", "sgd"]])
def test_eg_cannot_resume_without_its_log_weights(tmp_path, first):
    m = tmp_path / "m.slm"
    ok("train", "-d", TRAIN, "-f", m, "--quiet", *first)
    res = CliRunner().invoke(main, ["train", "-d", TRAIN, "-i", str(m), "--quiet", "--algo", "eg",
                                    "--radius", "10"])
    assert res.exit_code == 1
    assert res.stderr.splitlines()[-1] == (
        f"Error: cannot continue --algo eg from {m}: it holds no eg state (only a model trained with "
        f"--algo eg and saved without --predict-only-model can be continued)")


@pytest.mark.parametrize("args,message", [
    (["--algo", "eg"], "--algo eg needs --radius Z (the L1 norm the weights may reach)"),
    (["--algo", "eg", "--radius", "1", "--adaptive"],
     "--adaptive does not apply to --algo eg: its update is multiplicative, with one rate for all "
     "weights, so it takes the plain schedule (--sgd, or no rule flag)"),
    (["--algo", "eg", "--radius", "1", "--invariant"],
     "--invariant does not apply to --algo eg: its update is not an SGD step (--sgd, or no rule flag)"),
    (["--algo", "eg", "--radius", "1", "--projection", "sort"], "--projection needs --algo l1ball"),
    (["--algo", "eg", "--radius", "1", "--l1", "1"],
     "--l1 needs --algo tg or fobos; --algo eg regularizes with --radius"),
])
def test_eg_option_errors(args, message):
    res = CliRunner().invoke(main, ["train"] + args, input="1 |a b\n")
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1] == f"Error: {message}"
