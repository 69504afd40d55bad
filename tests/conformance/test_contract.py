"""Contract checks every registered learner passes (in the spirit of river's estimator checks), run
through the CLI on small generated VW data:

* ``-i`` resume equals one run (first half with -f, -i on the second half, vs. one run on both);
* the parsed block size does not change anything (models and predictions identical);
* the order of the features within a namespace does not change the model or the predictions beyond
  float summation order (1e-9 relative);
* predict (and ``train -t``) never changes the model, and predicting twice gives identical output;
* a model file round trip is exact (``train -i A -f B`` on no data, and load_model/save_model);
* lazy == eager for the lazy learners (tg, fobos, rounding), against tests/support/reference.py.

Skips and known failures, with their reasons, are listed in SKIPS and XFAILS below (pytest -rsx
prints them); DERIVED_W lists the learners whose re-saved weight column equals the trained one to
rounding only.
"""

from __future__ import annotations

import numpy as np
import pytest

from support.helpers import (cli, close_models, dense_rows, file_digest, model_arrays, parse_examples,
                     read_predictions, same_model, shuffle_namespaces, table_dtype, vw_dataset, write_lines,
                     RESUME_TOL32)
from support.compare import TOL32
from support.reference import eager_gd
from streamlearn.cli import main
from streamlearn import learners
from streamlearn.config import ALGO_NAMES
from streamlearn.io.model_file import load_model, save_model

#: options that make each learner valid (logistic loss is added to all): its spec's example
OPTIONS = {spec.name: ["--algo", spec.name, *spec.example] if spec.name != "sgd" else []
           for spec in learners.SPECS if not spec.joint}

#: (check, learner) -> why the check does not apply
SKIPS = {
    ("resume", "scd"): "scd is a batch method: -i restarts coordinate descent from the model over the "
                       "new data only, which is not one run over all the data",
    ("resave", "scd"): "scd is a batch method: train -i MODEL on no data runs an epoch of coordinate "
                       "descent over zero examples, which minimizes the L1 term alone and zeroes every "
                       "weight (and reports objective = nan); the load_model/save_model round trip is "
                       "still checked (test_model_file_load_save_is_exact)",
    ("resume", "bfgs"): "bfgs is a batch method (VW's L-BFGS): -i starts a new optimization from the model's "
                        "weights over the new data only, which is not one run over all the data",
    ("resave", "bfgs"): "bfgs is a batch method: train -i MODEL on no data has no loss to minimize (VW's "
                        "--bfgs takes at least 2 passes over some data)",
}

#: learners whose -p writes the predictions of every pass, as VW's --bfgs (not once per example)
EVERY_PASS = {"bfgs"}

#: learners whose saved weight column is derived from the state columns they resume from; a re-save
#: recomputes it from the reloaded state, equal to the trained one to rounding (1e-12 relative) and
#: exactly equal from the first re-save on; every state column is exact
DERIVED_W = {
    "eg": "w = w+ - w- is recomputed from the stored w+ and w- (3e-15 relative on the test data)",
    "smidas": "w is recomputed from the stored theta through the p-norm link (3e-16 relative)",
}

#: learners that compute in float32 (as VW does) and the tolerance the feature-order check allows them:
#: the summation order of an example's score changes its last float32 bit
FLOAT32 = {spec.name: 1e-4 for spec in learners.SPECS if spec.float32}

N_TRAIN, N_TEST, SPLIT = 300, 80, 150   # SPLIT: a multiple of rounding's --period 5
#: the binary learners (a learner with a multiclass loss has its contract in test_multiclass.py)
ALGOS = [a for a in ALGO_NAMES if not learners.get(a).joint]


def skip_if(check, algo):
    reason = SKIPS.get((check, algo))
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("contract")
    train = vw_dataset(N_TRAIN, seed=11)
    test = vw_dataset(N_TEST, seed=12, weighted=False)
    shuffled = shuffle_namespaces(train, seed=3)
    assert sum(a != b for a, b in zip(shuffled, train)) > N_TRAIN // 2
    return {
        "dir": d,
        "train": write_lines(d / "train.vw", train),
        "first": write_lines(d / "first.vw", train[:SPLIT]),
        "second": write_lines(d / "second.vw", train[SPLIT:]),
        "shuffled": write_lines(d / "shuffled.vw", shuffled),
        "test": write_lines(d / "test.vw", test),
        "empty": write_lines(d / "empty.vw", []),
    }


def train(data, algo, name, *extra, source="train"):
    """Train ``algo`` on data[source] with its contract options; returns (model, predictions)."""
    d = data["dir"]
    model, preds = d / f"{algo}.{name}.slm", d / f"{algo}.{name}.pred"
    cli("train", "-d", data[source], "-f", model, "-p", preds, "--quiet", "--loss", "logistic",
        *OPTIONS[algo], *extra)
    return model, preds


_BASE = {}


def base_model(data, algo):
    """The one-run model and progressive predictions of ``algo`` on all the training data (shared)."""
    if algo not in _BASE:
        _BASE[algo] = train(data, algo, "base")
    return _BASE[algo]


def test_every_registered_learner_has_contract_options():
    assert set(OPTIONS) == set(ALGOS)
    assert all(check in ("resume", "resave") and algo in ALGO_NAMES for check, algo in SKIPS)
    assert set(DERIVED_W) <= set(ALGO_NAMES)
    assert all(algo in ALGO_NAMES for _, algo in XFAILS)


@pytest.mark.parametrize("algo", ALGOS)
def test_every_learner_trains_and_predicts(data, algo):
    model, preds = base_model(data, algo)
    p = read_predictions(preds)
    passes = int(OPTIONS[algo][OPTIONS[algo].index("--passes") + 1]) if algo in EVERY_PASS else 1
    assert p.size == N_TRAIN * passes and np.all(np.isfinite(p))
    header, index, rows = model_arrays(model)
    assert header["algo"] == algo and index.size > 0 and np.all(np.isfinite(rows))


@pytest.mark.parametrize("algo", ALGOS)
def test_resume_equals_one_run(data, algo):
    skip_if("resume", algo)
    one, _ = base_model(data, algo)
    first, p1 = train(data, algo, "first", source="first")
    d = data["dir"]
    resumed, p2 = d / f"{algo}.resumed.slm", d / f"{algo}.resumed.pred"
    cli("train", "-d", data["second"], "-i", first, "-f", resumed, "-p", p2, "--quiet")
    f32 = table_dtype(one) == "float32"
    close_models(resumed, one, rtol=RESUME_TOL32 if f32 else 1e-9, atol=RESUME_TOL32 if f32 else 1e-12)
    both = np.concatenate([read_predictions(p1), read_predictions(p2)])
    assert np.allclose(both, read_predictions(base_model(data, algo)[1]), rtol=0,
                       atol=RESUME_TOL32 if f32 else 1.01e-6)


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("block", [64, 1000])
def test_block_size_does_not_matter(data, algo, block):
    one, preds = base_model(data, algo)
    model, p = train(data, algo, f"block{block}", "--block-size", block)
    same_model(model, one)
    assert p.read_bytes() == preds.read_bytes()


@pytest.mark.parametrize("algo", ALGOS)
def test_feature_order_within_a_namespace_does_not_matter(data, algo):
    one, preds = base_model(data, algo)
    model, p = train(data, algo, "shuffled", source="shuffled")
    rtol = FLOAT32.get(algo, 1e-9)
    close_models(model, one, rtol=rtol, atol=1e-12 if rtol < 1e-6 else rtol)
    # progressive predictions are printed with 6 decimals
    a, b = read_predictions(p), read_predictions(preds)
    assert np.all(np.abs(a - b) <= rtol * np.abs(b) + 1.01e-6)
    # and the two models predict the same on the test set, shuffled or not
    q1, q2 = data["dir"] / f"{algo}.q1", data["dir"] / f"{algo}.q2"
    cli("predict", "-i", one, "-d", data["test"], "-p", q1, "--quiet")
    test_shuffled = write_lines(data["dir"] / f"{algo}.test.shuffled.vw",
                                shuffle_namespaces(data["test"].read_text().splitlines(True), seed=5))
    cli("predict", "-i", model, "-d", test_shuffled, "-p", q2, "--quiet")
    a, b = read_predictions(q1), read_predictions(q2)
    assert np.all(np.abs(a - b) <= rtol * np.abs(b) + 1.01e-6)


def same_resaved_model(again, one, algo):
    """``again``, written by a run that loaded ``one`` and learned nothing, equals it: exactly, or for
    the DERIVED_W learners with every state column exact and the derived weight to 1e-12 relative."""
    if algo not in DERIVED_W:
        same_model(again, one)
        return
    same_model(again, one, rtol=1e-12)
    (_, ia, ra), (h1, i1, r1) = model_arrays(again), model_arrays(one)
    w = h1["column_names"].index("w")
    state = [c for c in range(r1.shape[1]) if c != w]
    assert np.array_equal(ia, i1) and np.array_equal(ra[:, state], r1[:, state])


def _has_testonly():
    return any("--testonly" in p.opts for p in main.commands["train"].params)


@pytest.mark.parametrize("algo", ALGOS)
def test_predict_never_changes_the_model(data, algo):
    one, _ = base_model(data, algo)
    before = file_digest(one)
    _, index, rows = model_arrays(one)
    d = data["dir"]
    p1, p2 = d / f"{algo}.predict1", d / f"{algo}.predict2"
    cli("predict", "-i", one, "-d", data["test"], "-p", p1, "--quiet")
    cli("predict", "-i", one, "-d", data["test"], "-p", p2, "--quiet")
    out = cli("predict", "-i", one, "-d", data["test"], "--quiet").stdout
    assert p1.read_bytes() == p2.read_bytes() == out.encode()
    assert len(p1.read_text().splitlines()) == N_TEST
    assert file_digest(one) == before
    _, index2, rows2 = model_arrays(one)
    assert np.array_equal(index, index2) and np.array_equal(rows, rows2)


#: known failures of the contract, as of the commit that added this file
XFAILS = {}


def params(check):
    return [pytest.param(a, marks=pytest.mark.xfail(reason=XFAILS[(check, a)], strict=False))
            if (check, a) in XFAILS else a for a in ALGOS]


@pytest.mark.parametrize("algo", params("testonly"))
def test_testonly_never_changes_the_model(data, algo):
    """Training-free evaluation: train -t -i MODEL predicts what predict predicts, leaves MODEL's file
    as it was, and -f writes the same model."""
    if not _has_testonly():
        pytest.skip("no -t/--testonly option")
    one, _ = base_model(data, algo)
    before = file_digest(one)
    d = data["dir"]
    p1, p3, m3 = d / f"{algo}.t.predict", d / f"{algo}.testonly.pred", d / f"{algo}.testonly.slm"
    cli("predict", "-i", one, "-d", data["test"], "-p", p1, "--quiet")
    cli("train", "-t", "-i", one, "-d", data["test"], "-p", p3, "-f", m3, "--quiet")
    assert file_digest(one) == before
    assert np.allclose(read_predictions(p3), read_predictions(p1), rtol=0, atol=1.01e-6)
    same_resaved_model(m3, one, algo)


@pytest.mark.parametrize("algo", ALGOS)
def test_model_file_load_save_is_exact(data, algo, tmp_path):
    one, _ = base_model(data, algo)
    header, index, rows = load_model(str(one))
    copy = tmp_path / "copy.slm"
    save_model(str(copy), dict(header), index, rows)
    assert copy.read_bytes() == one.read_bytes()
    same_model(copy, one)


@pytest.mark.parametrize("algo", ALGOS)
def test_model_file_resave_with_i_is_exact(data, algo, tmp_path):
    """train -i MODEL -f AGAIN on no data: the rows, options and learner state come back unchanged."""
    skip_if("resave", algo)
    one, _ = base_model(data, algo)
    again, twice = tmp_path / "again.slm", tmp_path / "twice.slm"
    cli("train", "-d", data["empty"], "-i", one, "-f", again, "--quiet")
    same_resaved_model(again, one, algo)
    cli("train", "-d", data["empty"], "-i", again, "-f", twice, "--quiet")
    same_model(twice, again)  # a fixed point from the first re-save on, DERIVED_W included


# ----------------------------------------------------------------------------- lazy == eager
BITS = 10
#: lazy learner variants: CLI options (every schedule option explicit) and the eager_gd arguments
LAZY = {
    "tg-default-rule": (["--algo", "tg", "--l1", "1e-3", "--cumulative-penalty"],
                        dict(algo="tg", g=1e-3, cumulative=True)),
    "tg-sgd-threshold": (["--algo", "tg", "--sgd", "--l1", "2e-3", "--threshold", "0.3", "--period", "3",
                          "--no-cumulative-penalty"],
                         dict(algo="tg", g=2e-3, theta=0.3, K=3, adaptive=False, normalized=False,
                              invariant=False)),
    "fobos-l1": (["--algo", "fobos", "--l1", "1e-3"], dict(algo="fobos", reg="l1", g=1e-3)),
    "fobos-l2sq": (["--algo", "fobos", "--l2", "1e-2"], dict(algo="fobos", reg="l2sq", l2=1e-2)),
    "rounding": (["--algo", "rounding", "--threshold", "0.05", "--period", "5"],
                 dict(algo="rounding", theta=0.05, K=5)),
}
SCHEDULE = {True: (["-l", "0.5", "--power-t", "0.5", "--initial-t", "0"],
                   dict(eta=0.5, power_t=0.5, initial_t=0.0)),
            False: (["-l", "0.5", "--power-t", "0.5", "--initial-t", "1"],
                    dict(eta=0.5, power_t=0.5, initial_t=1.0))}


def test_lazy_variants_cover_the_lazy_learners():
    assert {v[1]["algo"] for v in LAZY.values()} == {"tg", "fobos", "rounding"}


@pytest.mark.parametrize("variant", list(LAZY))
def test_lazy_equals_eager(data, variant, tmp_path):
    opts, ref_args = LAZY[variant]
    per_feature = ref_args.get("adaptive", True)
    sched_opts, sched_args = SCHEDULE[per_feature]
    model, preds = tmp_path / "m.slm", tmp_path / "p"
    cli("train", "-d", data["train"], "-b", BITS, "--loss", "logistic", "-f", model, "-p", preds,
        "--quiet", *opts, *sched_opts)
    examples = parse_examples(data["train"], BITS)
    ref_preds, ref_w, _, _ = eager_gd(examples, 1 << BITS, loss="logistic", **sched_args, **ref_args)
    header, rows = dense_rows(model)
    w = rows[:, header["column_names"].index("w")]
    assert np.count_nonzero(ref_w) > 10
    tol = (TOL32, TOL32) if table_dtype(model) == "float32" else (1e-9, 1e-12)   # float32 table: issue 30
    assert np.allclose(w, ref_w, rtol=tol[0], atol=tol[1]), np.abs(w - ref_w).max()
    assert np.allclose(read_predictions(preds), ref_preds, rtol=0, atol=1.01e-6)
