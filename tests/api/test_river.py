"""streamlearn.river (issue 29): river estimators over the online learners. Skipped without river
and pandas (the `river` and `test` extras install them)."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

river = pytest.importorskip("river")
pd = pytest.importorskip("pandas")

from hypothesis import given, settings, strategies as st  # noqa: E402
from river import checks  # noqa: E402

from streamlearn.features.hashing import feature_index, hash_string  # noqa: E402
from streamlearn.online import Model  # noqa: E402
from streamlearn.river import LinearClassifier, LinearRegressor, vw_hash  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def stream(n=300, seed=5, d=40, names=None):
    """Flat dict examples (a few of d features each, values with zeros among them) and a binary label
    that depends on them."""
    rng = np.random.default_rng(seed)
    names = names or [f"f{j}" for j in range(d)]
    truth = rng.normal(size=len(names))
    out = []
    for _ in range(n):
        cols = rng.choice(len(names), size=rng.integers(1, 8), replace=False)
        x = {names[j]: float(rng.choice([0.0, 1.0, 2.5, -0.75])) for j in cols}
        out.append((x, bool(sum(truth[j] * v for j, v in zip(cols, x.values())) > 0)))
    return out


def vw_line(x, y):
    return f"{1 if y else -1} |" + "".join(f" {k}:{v!r}" for k, v in x.items() if v != 0.0)


# ---------------------------------------------------------------------- river's own checks

@pytest.mark.parametrize("model", [LinearClassifier(), LinearRegressor(), LinearClassifier(algo="tg", l1=1e-4),
                                   LinearRegressor(algo="ftrl", l1=0.1)], ids=repr)
def test_river_check_estimator_passes(model):
    assert model._unit_test_skips() == set()        # nothing skipped: learn_many == learn_one included
    checks.check_estimator(model)


@pytest.mark.skipif(tuple(int(v) for v in river.__version__.split(".")[:2]) < (0, 26),
                    reason="the checks' names of river 0.26")
def test_river_check_estimator_runs_the_mini_batch_checks():
    names = {c.__name__ for c in checks.yield_checks(LinearClassifier())}
    assert {"check_learn_many_matches_learn_one", "check_predict_proba_many_matches_predict_proba_one",
            "check_predict_proba_one_binary", "check_shuffle_features_no_impact"} <= names


def test_import_streamlearn_does_not_import_river():
    code = "import sys, streamlearn; print('river' in sys.modules, 'pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------------- names and hashing

NAMES = st.one_of(st.text(max_size=12), st.from_regex(r"\s*[0-9]{1,25}\s*", fullmatch=True))


@settings(max_examples=300, deadline=None)
@given(name=NAMES, seed=st.integers(0, 2**32 - 1), hash_all=st.booleans())
def test_vw_hash_equals_the_compiled_hasher(name, seed, hash_all):
    assert vw_hash(name.encode(), seed, hash_all) == hash_string(name, seed, "all" if hash_all else "strings")


def test_any_name_is_hashed_as_it_is():
    """Spaces, ':' and '|' are data: the weight learned is at VW's index of the name in the default
    namespace, which no VW line could spell."""
    for name in ["two words", "a:b", "x|y", "12", ("t", 1)]:
        m = LinearRegressor(noconstant=True, bits=20, hash_seed=3)
        m.learn_one({name: 1.0}, 2.0)
        rows, w = m.engine.weights()
        assert rows.tolist() == [feature_index(" ", str(name), 20, 3)], name
        assert w[0] != 0.0


def test_learn_one_equals_the_cli_on_the_same_examples():
    """A sequence of learn_one is train on the same examples written as VW lines (names the text can
    carry): the same model file, byte for byte; predict_one before learning is train's progressive
    prediction, and it changes nothing that is learned."""
    data = stream()
    for opts in [dict(l1=1e-5), dict(algo="tg", l1=1e-4), dict(algo="ftrl", l1=0.1), dict(algo="fobos", l1=1e-4)]:
        ours, plain = LinearClassifier(**opts), LinearClassifier(**opts)
        probs = []
        for x, y in data:
            probs.append(ours.predict_proba_one(x)[True])
            ours.learn_one(x, y)
            plain.learn_one(x, y)
        ref = Model(loss="logistic", **opts)
        shown = ref.learn_many([vw_line(x, y) for x, y in data])
        assert ours.to_bytes() == plain.to_bytes() == ref.to_bytes(), opts
        assert np.allclose(probs, 1.0 / (1.0 + np.exp(-shown)), rtol=1e-12, atol=1e-15), opts
        assert np.array_equal(ours.engine.run.ctr, plain.engine.run.ctr)     # counters put back


def test_sparse_weight_store_equals_the_dense_table(monkeypatch):
    """With the sparse weight store (automatic when -b's dense table would not fit; here forced) learn_one,
    predict_proba_one and learn_many give the dense table's model bytes and probabilities: predictions
    read the store's rows, and its table cut to the rows in use (``RunState.for_kernel``)."""
    from streamlearn.core import sparse
    data = stream(200, seed=3)
    frame = pd.DataFrame([x for x, _ in data]).fillna(0.0)
    out = []
    for forced in (False, True):
        monkeypatch.setattr(sparse, "wants_sparse", lambda *a, forced=forced: forced)
        got = []
        for opts in [dict(l1=1e-5), dict(algo="tg", l1=1e-4)]:
            one, many = LinearClassifier(bits=16, **opts), LinearClassifier(bits=16, **opts)
            probs = []
            for x, y in data:
                probs.append(one.predict_proba_one(x)[True])
                one.learn_one(x, y)
            many.learn_many(frame, pd.Series([y for _, y in data]))
            assert (one.engine.state.store is not None) == forced
            got.append((one.to_bytes(), probs, many.to_bytes(), list(many.predict_proba_many(frame)[True])))
        out.append(got)
    assert out[0] == out[1]


def test_predict_one_copies_no_table(monkeypatch):
    """predict_one runs the run's kernel on the example: the weights in force are never computed for
    the whole table (Engine.finalized / predictor), which would cost a table copy per call."""
    from streamlearn.api import Engine
    m = LinearClassifier(algo="tg", l1=1e-4)
    data = stream(50)
    for x, y in data[:20]:
        m.learn_one(x, y)

    def boom(*a, **k):
        raise AssertionError("whole-table weights computed")

    monkeypatch.setattr(Engine, "finalized", boom)
    monkeypatch.setattr(Engine, "predictor", boom)
    for x, y in data[20:]:
        m.predict_one(x)
        m.predict_proba_one(x)
        m.learn_one(x, y)
    m.predict_many(pd.DataFrame([x for x, _ in data]))


def test_learn_many_is_a_loop_of_learn_one_and_nan_is_absent():
    data = stream(200, seed=9)
    cols = sorted({k for x, _ in data for k in x})
    X = pd.DataFrame([x for x, _ in data], columns=cols)        # absent keys become NaN
    y = pd.Series([t for _, t in data])
    many, one = LinearClassifier(l1=1e-6), LinearClassifier(l1=1e-6)
    many.learn_many(X.iloc[:77], y.iloc[:77])
    many.learn_many(X.iloc[77:], y.iloc[77:])
    for (x, t) in data:
        one.learn_one({k: x[k] for k in cols if k in x}, t)      # the frame's column order
    assert many.to_bytes() == one.to_bytes()
    proba = many.predict_proba_many(X)
    assert list(proba.columns) == [False, True]
    for i, (x, _) in enumerate(data):
        assert proba[True].iloc[i] == pytest.approx(one.predict_proba_one(x)[True], rel=1e-6)
    assert many.predict_many(X).tolist() == [one.predict_one(x) for x, _ in data]

    reg_many, reg_one = LinearRegressor(), LinearRegressor()
    targets = np.linspace(-2, 3, len(data))
    reg_many.learn_many(X, pd.Series(targets), w=np.full(len(data), 0.5))
    for (x, _), t in zip(data, targets):
        reg_one.learn_one({k: x[k] for k in cols if k in x}, t, w=0.5)
    assert reg_many.to_bytes() == reg_one.to_bytes()
    assert np.allclose(reg_many.predict_many(X).to_numpy(), [reg_one.predict_one(x) for x, _ in data])


def test_labels_and_outputs():
    m = LinearClassifier()
    assert m.predict_proba_one({"a": 1.0}) == {False: 0.5, True: 0.5}      # before any learning
    assert m.predict_one({"a": 1.0}) is False
    for y in (True, 1, np.bool_(True), np.int64(1), 1.0):
        m.learn_one({"a": 1.0}, y)
    assert m.predict_one({"a": 1.0}) is True
    for y in (False, 0, -1, np.bool_(False)):
        m.learn_one({"b": 1.0}, y)
    assert m.predict_one({"b": 1.0}) is False
    assert m.learn_one({"a": 1.0}, True) is None
    with pytest.raises(ValueError, match="a binary label is True/False"):
        m.learn_one({"a": 1.0}, 2)
    with pytest.raises(NotImplementedError, match="--loss hinge has no probabilities"):
        LinearClassifier(loss="hinge").predict_proba_one({"a": 1.0})
    r = LinearRegressor()
    assert isinstance(r.predict_one({"a": 1.0}), float)
    with pytest.raises(ValueError, match="regression target"):
        r.learn_one({"a": 1.0}, "x")
    with pytest.raises(ValueError, match="not a finite number within float32"):
        r.learn_one({"a": 1.0}, 1e39)


def test_bad_inputs_and_options():
    m = LinearClassifier()
    with pytest.raises(ValueError, match="feature 'b': value 'x' is not a number"):
        m.learn_one({"a": 1.0, "b": "x"}, True)
    with pytest.raises(ValueError, match="feature 'b': value nan is not a finite number"):
        m.predict_one({"a": 1.0, "b": math.nan})
    with pytest.raises(ValueError, match="an example is a dict"):
        m.learn_one([("a", 1.0)], True)
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        m.learn_one({"a": 1.0}, True, w=-1.0)
    with pytest.raises(ValueError, match="l1"):
        LinearClassifier(l1=-1.0)                    # the CLI's check, when the estimator is made
    with pytest.raises(TypeError, match="unexpected parameter 'oaa'"):
        LinearClassifier(oaa=3)
    with pytest.raises(ValueError, match="take a pandas DataFrame"):
        m.predict_many([{"a": 1.0}])


def test_pickle_goes_on_as_the_original():
    data = stream(120, seed=2)
    a = LinearClassifier(algo="tg", l1=1e-4)
    for x, y in data[:60]:
        a.learn_one(x, y)
    b = pickle.loads(pickle.dumps(a))
    assert repr(b) == repr(a)
    for x, y in data[60:]:
        # tg's stamped float32 penalty (issue 30): the pickle's model holds a = P rounded to float32 at
        # the pickle (a rebase), the original a = P - (LAST - C) r against its own base: ulps apart
        pa, pb = a.predict_proba_one(x), b.predict_proba_one(x)
        assert pa.keys() == pb.keys() and all(pa[k] == pytest.approx(pb[k], rel=1e-6) for k in pa)
        a.learn_one(x, y)
        b.learn_one(x, y)
    # the weights in force (a lazy learner's saved state columns are caught up in the pickle's model)
    (ra, wa), (rb, wb) = a.engine.weights(), b.engine.weights()
    # tg's float32 table (issue 30): the pickle's catch-up sums a weight's penalty in another order than
    # the original's later catch-up, and a flipped float32 rounding moves later values by ulps
    assert np.array_equal(ra, rb) and np.allclose(wa, wb, rtol=1e-5, atol=1e-5) and wa.size
    assert np.allclose(a.engine.run.ctr, b.engine.run.ctr, rtol=1e-6, atol=0)     # the losses of those ulps
    fresh = pickle.loads(pickle.dumps(LinearRegressor(bits=12)))
    assert fresh.bits == 12 and fresh.predict_one({"a": 1.0}) == 0.0


def test_parameters_are_the_options():
    from streamlearn import config
    params = LinearClassifier()._get_params()
    assert params["loss"] == "logistic" and LinearRegressor()._get_params()["loss"] == "squared"
    assert {"algo", "l1", "l2", "learning_rate", "bits", "power_t", "adaptive", "batch_size"} <= set(params)
    assert all(name in config.OPTION for name in params)
    assert not {"oaa", "csoaa", "holdout_off", "affix", "mem"} & set(params)
    assert LinearClassifier(l1=1e-3).clone().l1 == 1e-3
