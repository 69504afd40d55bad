"""streamlearn.Model (the online handle) and VWHasher: equal to the CLI on the same lines."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest

from streamlearn.online import Model, dict_line
from support.helpers import cli, read_predictions, vw_dataset, write_lines

LINES = vw_dataset(300, seed=3, namespaces="ab")
OPTS = dict(loss="logistic", bits=18, l1=1e-6, quadratic=("ab",))
CLI_OPTS = ["--loss", "logistic", "-b", "18", "--l1", "1e-6", "-q", "ab"]


def train_cli(tmp_path, lines, args, name="d"):
    data = write_lines(tmp_path / f"{name}.vw", [ln.rstrip("\n") + "\n" for ln in lines])
    model, preds = tmp_path / f"{name}.slm", tmp_path / f"{name}.pred"
    cli("train", "-d", data, "-f", model, "-p", preds, "--quiet", *args)
    return model.read_bytes(), read_predictions(preds)


def test_learn_one_loop_equals_learn_many():
    a, b = Model(**OPTS), Model(**OPTS)
    pa = np.array([a.learn_one(line) for line in LINES])
    pb = np.concatenate([b.learn_many(LINES[:7]), b.learn_many(LINES[7:])])
    assert np.array_equal(pa, pb)
    assert a.to_bytes() == b.to_bytes()


def test_pipelined_blocks_and_mixed_inputs(tmp_path, monkeypatch):
    import streamlearn.online as online
    model_bytes, preds = train_cli(tmp_path, LINES, CLI_OPTS)
    monkeypatch.setattr(online, "BLOCK", 37)        # many blocks, parsed on a worker thread
    m = Model(**OPTS)
    assert np.allclose(m.learn_many(LINES), preds, rtol=1e-6, atol=1e-6)
    assert m.to_bytes() == model_bytes
    # str with line ends, bytes, and a dict mixed: the line-by-line path, same result
    mixed = [ln if i % 3 == 0 else ln.rstrip("\n").encode() if i % 3 == 1 else ln.rstrip("\n")
             for i, ln in enumerate(LINES)]
    mixed[5] = {"a": ["f1"]}
    ref = Model(**OPTS)
    lines = list(LINES)
    lines[5] = "|a f1"
    c = Model(**OPTS)
    assert np.array_equal(c.learn_many(mixed), ref.learn_many(lines))
    assert c.to_bytes() == ref.to_bytes()


@pytest.mark.parametrize("opts,args", [
    (OPTS, CLI_OPTS),
    (dict(algo="tg", l1=1e-4, bits=16), ["--algo", "tg", "--l1", "1e-4", "-b", "16"]),
    (dict(loss="logistic", link="logistic", bits=18), ["--loss", "logistic", "--link", "logistic", "-b", "18"]),
    (dict(binary=True, bits=18), ["--binary", "-b", "18"]),
])
def test_model_equals_cli(tmp_path, opts, args):
    model_bytes, preds = train_cli(tmp_path, LINES, args)
    m = Model(**opts)
    p = m.learn_many(LINES)
    assert np.allclose(p, preds, rtol=1e-6, atol=1e-6)     # -p prints 6 significant digits
    assert m.to_bytes() == model_bytes


def test_oaa_equals_cli(tmp_path):
    rng = np.random.default_rng(0)
    lines = [f"{int(rng.integers(1, 4))} |a f{int(rng.integers(0, 9))} g{int(rng.integers(0, 5))}" for _ in range(200)]
    model_bytes, preds = train_cli(tmp_path, lines, ["--oaa", "3", "-b", "16"])
    m = Model(oaa=3, bits=16)
    p = np.array([m.learn_one(line) for line in lines])
    assert np.array_equal(p, preds)
    assert set(p.tolist()) <= {1.0, 2.0, 3.0}
    assert m.to_bytes() == model_bytes


def test_dict_input_equals_lines():
    dicts = [{"a": {"x": 1.0, "y": 2.5}, "b": ["z", "w"]}, {" ": {"q": -0.5}}, {"b": ("z",)}]
    ys, ws = [1.0, -1.0, 1.0], [1.0, 2.0, 0.5]
    lines = ["1 |a x y:2.5 |b z w", "-1 2 | q:-0.5", "1 0.5 |b z"]
    assert [dict_line(d, y, w) for d, y, w in zip(dicts, ys, ws)] == ["1 1|a x y:2.5|b z w", "-1 2| q:-0.5",
                                                                     "1 0.5|b z"]
    a, b = Model(**OPTS), Model(**OPTS)
    pa = [a.learn_one(d, y, w) for d, y, w in zip(dicts, ys, ws)]
    pb = b.learn_many(lines)
    assert np.array_equal(pa, pb)
    assert a.to_bytes() == b.to_bytes()
    assert a.predict_one({"a": ["x"]}) == b.predict_one("|a x")


def test_label_and_weight_override_the_line():
    a, b = Model(**OPTS), Model(**OPTS)
    a.learn_many(["1 |a x", "1 |a y"], ys=[-1, 1], weights=[2.0, 1.0])
    b.learn_many(["-1 2 |a x", "1 |a y"])
    assert a.to_bytes() == b.to_bytes()


def test_predict_changes_nothing():
    a, b = Model(**OPTS), Model(**OPTS)
    a.learn_many(LINES[:100])
    b.learn_many(LINES[:100])
    before = a.to_bytes()
    p = a.predict_many(LINES[100:150])
    assert a.predict_one(LINES[100]) == p[0]
    assert a.to_bytes() == before
    assert np.array_equal(a.learn_many(LINES[100:]), b.learn_many(LINES[100:]))
    assert a.to_bytes() == b.to_bytes()
    c = Model(link="logistic", **OPTS)      # -p shows the raw score unless --link logistic, as the CLI
    c.learn_many(LINES[:100])
    assert np.allclose(c.predict_many(LINES[100:150]), 1.0 / (1.0 + np.exp(-p)))


def test_save_load_pickle_and_cli_predict(tmp_path):
    m = Model(**OPTS)
    m.learn_many(LINES[:200])
    path = tmp_path / "m.slm"
    m.save(path)
    expect = m.predict_many(LINES[200:])
    data = write_lines(tmp_path / "test.vw", LINES[200:])
    preds = tmp_path / "p.txt"
    cli("predict", "-i", path, "-d", data, "-p", preds, "--quiet")
    assert np.allclose(read_predictions(preds), expect, rtol=1e-6, atol=1e-6)
    for other in (Model.load(path), Model.from_bytes(m.to_bytes()), pickle.loads(pickle.dumps(m))):
        assert other.to_bytes() == m.to_bytes()
        assert np.array_equal(other.predict_many(LINES[200:]), expect)
        assert other.weights() == m.weights()
    # continuing after a round trip == continuing the original == the CLI on all lines with -i
    c = pickle.loads(pickle.dumps(m))
    assert np.array_equal(c.learn_many(LINES[200:]), m.learn_many(LINES[200:]))
    assert c.to_bytes() == m.to_bytes()


def test_load_cli_model(tmp_path):
    model_bytes, _ = train_cli(tmp_path, LINES, CLI_OPTS)
    m = Model.from_bytes(model_bytes)
    assert m.cfg.quadratic == ("ab",) and m.cfg.loss == "logistic"
    ref = Model(**OPTS)
    ref.learn_many(LINES)
    assert np.array_equal(m.predict_many(LINES[:20]), ref.predict_many(LINES[:20]))


def test_weights_and_invert_hash(tmp_path):
    m = Model(names=True, **OPTS)
    m.learn_many(LINES)
    w = m.weights()
    assert w and all(v != 0.0 for v in w.values())
    data = write_lines(tmp_path / "d.vw", LINES)
    inv = tmp_path / "inv.txt"
    cli("train", "-d", data, "--invert_hash", inv, "--quiet", *CLI_OPTS)
    text = m.invert_hash()
    assert text == inv.read_text()
    assert "a^f" in text and "Constant:" in text
    assert "Constant" not in m.readable()
    # names survive pickling
    assert pickle.loads(pickle.dumps(m)).invert_hash() == text


def test_bad_inputs_and_options():
    with pytest.raises(ValueError) as e:
        Model().learn_one({"a b": ["x"]})
    assert str(e.value) == "namespace name 'a b' cannot be written in a VW line (whitespace, ':' or '|')"
    with pytest.raises(ValueError) as e:
        Model().learn_one({"a": {"x:1": 2.0}})
    assert str(e.value) == "feature name 'x:1' cannot be written in a VW line (whitespace, ':' or '|')"
    with pytest.raises(ValueError) as e:
        Model().predict_one({"a": ["x|y"]})
    assert str(e.value) == "feature name 'x|y' cannot be written in a VW line (whitespace, ':' or '|')"
    with pytest.raises(ValueError) as e:
        Model(loss="bogus")
    assert str(e.value) == ("--loss must be one of squared, logistic, hinge, quantile, softmax, poisson, classic, "
                            "expectile (got bogus)")
    with pytest.raises(ValueError) as e:
        Model(bits=40)
    assert str(e.value) == "-b/--bits must be between 1 and 32 (got 40)"
    with pytest.raises(ValueError) as e:
        Model().learn_one("1 |a x\n-1 |a y")
    assert "is not one VW example" in str(e.value) and "\n" not in str(e.value)


def test_import_online_does_not_import_sklearn():
    import subprocess
    code = "import streamlearn.online, sys; print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_vwhasher_pipeline_equals_cli(tmp_path):
    pytest.importorskip("sklearn")
    from sklearn.pipeline import make_pipeline

    from streamlearn import SparseLinearClassifier, VWHasher
    rng = np.random.default_rng(1)
    vocab = [f"t{i}" for i in range(50)]
    docs = [list(rng.choice(vocab, size=int(rng.integers(1, 8)), replace=False)) for _ in range(200)]
    y = np.array([1 if ("t3" in d or "t7" in d) else -1 for d in docs])
    lines = [f"{label} |w " + " ".join(d) for label, d in zip(y, docs)]
    model_bytes, _ = train_cli(tmp_path, lines, ["-b", "18", "--loss", "logistic"])
    pipe = make_pipeline(VWHasher(bits=18, namespace="w"), SparseLinearClassifier(bits=18, loss="logistic"))
    pipe.fit(docs, y)
    assert pipe[-1].to_bytes() == model_bytes
    # the same rows as nested dicts and as flat dicts
    X = VWHasher(bits=18, namespace="w").transform(docs)
    assert (VWHasher(bits=18).transform([{"w": d} for d in docs]) != X).nnz == 0
    assert (VWHasher(bits=18, namespace="w").transform([{t: 1 for t in d} for d in docs]) != X).nnz == 0
    from streamlearn.features.hashing import feature_index
    assert X.shape == (200, 1 << 18)
    assert X[0, feature_index("w", docs[0][0], 18)] == 1.0
    # duplicates are summed; a bare token list goes to the default namespace
    Z = VWHasher(bits=18).transform([["a", "a", "b"]])
    assert Z[0, feature_index(" ", "a", 18)] == 2.0 and Z.nnz == 2
