"""FOBOS (--algo fobos) equals the eager dense references for every --reg, under the plain schedule
and (l1, l2sq) every per-feature update rule, with mini-batches; the CLI trains, predicts and
continues with it."""

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.cli_checks import ok, round_trip
from support.reference import eager_fobos, eager_gd, fobos_prox_dense
from streamlearn.cli import main
from streamlearn.config import train_config
from streamlearn.io.model_file import load_model
from streamlearn.learners import fobos
from streamlearn.core import prox
from streamlearn.core import state as S
from support.compare import allclose
from support.kernels import run_kernel
from support.streams import RULES, random_stream, streams

TRAIN = "data/samples/sparse.train.vw"
LOSSES = ["squared", "logistic", "hinge", "quantile"]
STRENGTH = {"l1": "l1", "l2sq": "l2", "l2": "lam", "linf": "lam"}


def run_fobos(examples, bits, splits=(), **opts):
    """The compiled kernel over ``examples`` in several calls, finalized: (predictions, weights in
    force, state)."""
    return run_kernel(examples, bits, splits, state=True, algo="fobos", **opts)


def reg_options(reg, lam, lam2):
    if reg == "elastic":
        return {"l1": lam, "l2": lam2}
    return {STRENGTH[reg]: lam}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES),
       reg=st.sampled_from(["l1", "l2sq", "elastic", "l2", "linf"]),
       lam=st.sampled_from([0.0, 0.001, 0.05, 0.5, 3.0]), lam2=st.sampled_from([0.01, 0.3, 2.0]),
       eta=st.sampled_from([0.05, 0.5, 5.0]), power_t=st.sampled_from([0.0, 0.5, 1.0]),
       initial_t=st.sampled_from([0.5, 1.0, 10.0]), invariant=st.booleans(),
       batch=st.sampled_from([1, 1, 2, 5]))
def test_fobos_plain_equals_dense_eager(data, loss, reg, lam, lam2, eta, power_t, initial_t, invariant,
                                        batch):
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    rule = {"invariant": True} if invariant else {"sgd": True}
    extra = {"batch_size": batch} if batch > 1 else {}
    preds, w, _ = run_fobos(examples, bits, splits, loss=loss, reg=reg, learning_rate=eta,
                            power_t=power_t, initial_t=initial_t, **reg_options(reg, lam, lam2),
                            **rule, **extra)
    ref_preds, ref_w = eager_fobos(examples, 1 << bits, reg, lam, lam2, loss=loss, eta=eta,
                                   power_t=power_t, initial_t=initial_t, invariant=invariant,
                                   batch=batch)
    assert allclose(preds, ref_preds), (preds, ref_preds)
    assert allclose(w, ref_w), (w, ref_w)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), loss=st.sampled_from(LOSSES), reg=st.sampled_from(["l1", "l2sq"]),
       lam=st.sampled_from([0.0, 0.001, 0.05, 0.5]), rule=st.sampled_from(RULES),
       eta=st.sampled_from([0.1, 0.5, 2.0]), power_t=st.sampled_from([0.5, 0.3]),
       initial_t=st.sampled_from([0.0, 1.0, 3.0]))
def test_lazy_fobos_equals_eager_under_every_rule(data, loss, reg, lam, rule, eta, power_t, initial_t):
    """Lazy == eager with per-feature rates: each weight pays its own rate times what was released
    since its last touch (l1), or (1 + eta lambda)^(-r_i) per step (l2sq)."""
    bits = data.draw(st.integers(2, 5))
    examples = data.draw(streams(bits))
    splits = data.draw(st.lists(st.integers(0, len(examples)), max_size=3))
    preds, w, _ = run_fobos(examples, bits, splits, loss=loss, reg=reg, learning_rate=eta,
                            power_t=power_t, initial_t=initial_t, **{STRENGTH[reg]: lam}, **rule)
    cfg = train_config(dict(algo="fobos", reg=reg, learning_rate=eta, power_t=power_t,
                            initial_t=initial_t, **rule))
    ref_preds, ref_w, _, _ = eager_gd(
        examples, 1 << (bits), loss=loss, eta=cfg.learning_rate, power_t=power_t,
        initial_t=cfg.initial_t, adaptive=cfg.adaptive, normalized=cfg.normalized,
        invariant=cfg.invariant, algo="fobos", reg=reg, g=lam, l2=lam)
    assert allclose(preds, ref_preds), (preds, ref_preds)
    assert allclose(w, ref_w), (w, ref_w)


def test_elastic_rebase_keeps_lazy_equal_to_eager():
    """A strong l2sq part drives the elastic cumulative past the rebase point several times."""
    examples = random_stream(600, 64, 4, 1)
    preds, w, stt = run_fobos(examples, 6, (97, 300), loss="logistic", l1=0.01, l2=2.0,
                              learning_rate=1.0, power_t=0.0, sgd=True)
    assert stt[S.S_FOBOS_CUM] < prox.ELASTIC_REBASE
    ref_preds, ref_w = eager_fobos(examples, 64, "elastic", 0.01, 2.0, loss="logistic", eta=1.0,
                                   power_t=0.0)
    assert allclose(preds, ref_preds) and allclose(w, ref_w)


def test_l2_folds_scale_and_zeroes_in_o1():
    """l2's global scale shrinks below the fold point, and strong steps zero the whole vector
    (a new epoch) many times; still the eager result."""
    examples = random_stream(800, 32, 3, 2)
    for lam in (0.02, 0.4, 5.0):
        preds, w, stt = run_fobos(examples, 5, (10, 411), loss="squared", reg="l2", lam=lam,
                                  learning_rate=0.5, power_t=0.0, sgd=True)
        ref_preds, ref_w = eager_fobos(examples, 32, "l2", lam, loss="squared", eta=0.5, power_t=0.0)
        assert allclose(preds, ref_preds) and allclose(w, ref_w), lam
    assert stt[fobos.S_EPOCH] > 10


def test_linf_caps_weights_at_a_common_value():
    examples = random_stream(300, 32, 5, 3)
    _, w, _ = run_fobos(examples, 5, loss="squared", reg="linf", lam=0.5, learning_rate=0.5, sgd=True)
    big = np.abs(w)[np.abs(w) > 0]
    assert big.size > 3 and np.sum(np.isclose(big, big.max(), rtol=1e-12)) >= 2


def test_prox_reference_solves_the_prox_problems():
    """The dense prox of the reference minimizes 1/2||w - v||^2 + s r(w) (checked against random
    perturbations)."""
    rng = np.random.default_rng(4)
    norms = {"l1": lambda w: np.abs(w).sum(), "l2sq": lambda w: 0.5 * np.dot(w, w),
             "l2": lambda w: np.linalg.norm(w), "linf": lambda w: np.abs(w).max()}
    for reg, r in norms.items():
        for s in (0.01, 0.3, 2.0):
            v = rng.normal(size=7)
            w = fobos_prox_dense(v, reg, s)
            best = 0.5 * np.sum((w - v) ** 2) + s * r(w)
            for _ in range(300):
                x = w + rng.normal(scale=0.05, size=7)
                assert 0.5 * np.sum((x - v) ** 2) + s * r(x) >= best - 1e-12


def test_fobos_l1_is_sparse_and_zero_lambda_is_sgd():
    """With lambda 0 fobos is the sgd learner bit for bit (default rule); with lambda > 0 the l1 prox
    zeroes weights."""
    examples = random_stream(400, 256, 6, 5)
    p0, w0, _ = run_fobos(examples, 8, loss="logistic", l1=0.0)
    p1, w1 = run_kernel(examples, 8, loss="logistic", algo="sgd", dtype="float64")   # fobos keeps float64
    assert np.array_equal(p0, p1) and np.array_equal(w0, w1)
    _, w2, _ = run_fobos(examples, 8, loss="logistic", l1=0.05)
    assert 0 < np.count_nonzero(w2) < np.count_nonzero(w0)


# ----------------------------------------------------------------------------- through the CLI


@pytest.mark.parametrize("opts", [
    ["--algo", "fobos", "--l1", "1e-3"],
    ["--algo", "fobos", "--l1", "1e-3", "--sgd", "-l", "0.5"],
    ["--reg", "l2sq", "--l2", "1e-3"],
    ["--l1", "1e-4", "--l2", "1e-3", "--algo", "fobos", "-l", "0.5"],
    ["--reg", "l2", "--lambda", "1e-3", "-l", "0.5"],
    ["--reg", "linf", "--lambda", "1e-3", "-l", "0.5"],
    ["--algo", "fobos", "--l1", "1e-4", "--batch-size", "10", "-l", "0.5"],
])
def test_fobos_cli_round_trip_and_resume(tmp_path, opts):
    header, _, _ = round_trip(tmp_path, opts)
    assert header["algo"] == "fobos"

def test_fobos_preamble_and_summary():
    res = CliRunner().invoke(main, ["train", "-d", TRAIN, "--algo", "fobos", "--l1", "1e-3",
                                    "--loss", "logistic"])
    assert res.exit_code == 0, res.output
    assert ("learner = fobos (forward-backward splitting, adaptive, normalized, invariant: reg = l1, "
            "l1 = 0.001, batch size = 1)") in res.stderr
    assert "non-zero weights = " in res.stderr


@pytest.mark.parametrize("args,message", [
    (["--reg", "l1", "--l2", "1"], "--l2 does not apply to --reg l1, whose strength is --l1"),
    (["--reg", "l2", "--l1", "1"], "--l1 does not apply to --reg l2, whose strength is --lambda"),
    (["--reg", "elastic", "--lambda", "1"],
     "--lambda does not apply to --reg elastic, whose strength is --l1 and --l2"),
    (["--algo", "tg", "--l2", "1"], "--l2 needs --algo fobos, ftrl, softmax, gravity, pegasos or bfgs"),
    (["--reg", "linf", "--lambda", "1", "--adaptive"],
     "--adaptive does not apply to --algo fobos --reg linf: the prox of --reg linf with per-feature "
     "rates cannot be caught up lazily, so it takes the plain schedule (--sgd, or no rule flag)"),
    (["--algo", "fobos", "--l1", "1", "--l2", "1", "--normalized"],     # (without --algo: VW's own, gravity)
     "--normalized does not apply to --algo fobos --reg elastic: the prox of --reg elastic with "
     "per-feature rates cannot be caught up lazily, so it takes the plain schedule (--sgd, or no rule "
     "flag)"),
    (["--algo", "fobos", "--l1", "1", "--batch-size", "4", "--adaptive"],
     "--adaptive does not apply to --algo fobos: mini-batches average plain steps, so it takes the "
     "plain schedule (--sgd, or no rule flag)"),
    (["--algo", "fobos", "--threshold", "1"], "--threshold needs --algo tg, rounding or subgradient"),
    (["--lambda", "-1"], "--lambda must be a finite number >= 0 (got -1)"),
])
def test_fobos_option_errors(args, message):
    res = CliRunner().invoke(main, ["train"] + args, input="1 |a b\n")
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1] == f"Error: {message}"


def test_fobos_defaults_follow_the_regularizer():
    from streamlearn.errors import OptionError
    with pytest.raises(OptionError, match=r"^--reg must be one of l1, l2sq, elastic, l2, linf \(got cubic\)$"):
        train_config({"algo": "fobos", "reg": "cubic"})
    assert train_config({"algo": "fobos"}).reg == "l1"
    assert train_config({"algo": "fobos", "l2": 1.0}).reg == "l2sq"
    cfg = train_config({"algo": "fobos", "l1": 1.0, "l2": 1.0})
    assert (cfg.algo, cfg.reg, cfg.adaptive) == ("fobos", "elastic", False)     # plain schedule
    assert train_config({"l1": 1.0, "l2": 1.0}).algo == "gravity"              # VW's own, as VW runs it
    cfg = train_config({"reg": "l1", "l1": 1.0})
    assert (cfg.algo, cfg.adaptive, cfg.normalized, cfg.learning_rate) == ("fobos", True, True, 0.5)
    cfg = train_config({"reg": "linf", "lam": 1.0})
    assert (cfg.adaptive, cfg.learning_rate, cfg.initial_t) == (False, 10.0, 1.0)


@pytest.mark.parametrize("opts", [["--algo", "fobos", "--l1", "1e-4", "-l", "0.5"],
                                  ["--radius", "20", "-l", "0.5"], ["--algo", "eg", "--radius", "10"]])
def test_best_pass_snapshot_does_not_change_a_batched_run(tmp_path, opts):
    """With holdout, the model of the best pass is written while training goes on; with mini-batches
    that snapshot applies the open batch to a copy, so the run's predictions are those of a run that
    writes no model."""
    opts = ["-d", TRAIN, "--loss", "logistic", "--passes", "3", "--batch-size", "7", "--quiet"] + opts
    ok("train", *opts, "-p", tmp_path / "p1")
    ok("train", *opts, "-p", tmp_path / "p2", "-f", tmp_path / "m")
    assert (tmp_path / "p1").read_text() == (tmp_path / "p2").read_text()


def test_resume_into_a_plain_schedule_learner(tmp_path):
    """-i from a default-rule model into a learner that takes only the plain schedule switches to
    it (instead of refusing the model's --adaptive); a plain-schedule model keeps its own rule."""
    m1, m2, m3 = tmp_path / "1.slm", tmp_path / "2.slm", tmp_path / "3.slm"
    ok("train", "-d", TRAIN, "-f", m1, "--loss", "logistic", "--quiet")
    ok("train", "-d", TRAIN, "-i", m1, "-f", m2, "--algo", "fobos", "--reg", "linf", "--lambda", "0.01",
       "--quiet")
    h2 = load_model(str(m2))[0]
    assert (h2["reg"], h2["adaptive"], h2["normalized"], h2["invariant"]) == ("linf", False, False, False)
    ok("train", "-d", TRAIN, "-f", m3, "--radius", "5", "--invariant", "--quiet")
    ok("train", "-d", TRAIN, "-i", m3, "-f", m2, "--quiet")
    h2 = load_model(str(m2))[0]
    assert (h2["algo"], h2["invariant"], h2["adaptive"]) == ("l1ball", True, False)


# ----------------------------------------------------------------------------- one kernel per regularizer

#: a configuration of each of fobos's kernels (``fobos.KERNELS``)
VARIANTS = {
    "l1": dict(l1=1e-3), "l2sq": dict(reg="l2sq", l2=1e-3), "elastic": dict(l1=1e-3, l2=1e-3),
    "l2": dict(reg="l2", lam=1e-3), "linf": dict(reg="linf", lam=1e-3),
    "l2sq-ball": dict(reg="l2sq", l2=1e-3, l2_ball=0.5, sgd=True),
}


def test_every_kernel_has_a_configuration():
    assert set(VARIANTS) == set(fobos.KERNELS) and set(fobos.REGS) == set(fobos.KERNELS) - {"l2sq-ball"}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_regularizer_runs_its_own_kernels_one_against_all_too(tmp_path, name):
    """The regularizer is chosen with the kernel, once: a configuration runs its variant's kernels,
    binary and one-against-all (``learners.block_kernel``); with the variant's example options (warm-up's
    run), --oaa K trains, continues from its model (the variant's after_load) as one run does, and
    predicts."""
    from streamlearn import learners
    variant = fobos.KERNELS[name]
    cfg = train_config(dict(algo="fobos", **VARIANTS[name]))
    assert learners.block_kernel(cfg) is variant.kernel
    assert learners.block_kernel(train_config(dict(algo="fobos", oaa=3, **VARIANTS[name]))) is variant.oaa_kernel
    lines = open(TRAIN).read().splitlines()[:1200]
    text = [f"{1 + n % 3} |{line.split('|', 1)[1]}\n" for n, line in enumerate(lines)]
    a, b, both = tmp_path / "a.vw", tmp_path / "b.vw", tmp_path / "both.vw"
    a.write_text("".join(text[:700]))
    b.write_text("".join(text[700:]))
    both.write_text("".join(text))
    opts = ["--algo", "fobos", *variant.example, "--oaa", "3", "--loss", "logistic", "-l", "0.5", "--quiet"]
    m1, m2, m3 = tmp_path / "1.slm", tmp_path / "2.slm", tmp_path / "3.slm"
    ok("train", "-d", a, "-f", m1, *opts)
    ok("train", "-d", b, "-i", m1, "-f", m2, "--quiet")
    ok("train", "-d", both, "-f", m3, *opts)
    (h2, i2, r2), (h3, i3, r3) = load_model(str(m2)), load_model(str(m3))
    assert h3["reg"] == (name if name != "l2sq-ball" else "l2sq") and np.count_nonzero(r3[:, 0]) > 10
    assert np.array_equal(i2, i3) and np.allclose(r2, r3, rtol=1e-9, atol=1e-12)
    ok("predict", "-i", m3, "-d", both, "-p", tmp_path / "q", "--quiet")
    assert len((tmp_path / "q").read_text().splitlines()) == len(text)
