"""VW's binary model files (issue 27, ``streamlearn.io.vw_model``, ``streamlearn.run.vw_models``).

* The format without VW: a model written and read back is the same model; every truncation and
  every flipped byte of a model is either read (the flip hit a weight's value) or refused with one
  ModelError line naming the file; checksum, version and record-layout refusals say why.
* With VW 9.11.9 (skipped when ``vowpalwabbit`` is not installed), for each kind of linear model
  (the default rule, --sgd, --adaptive, --normalized, --invariant, --ftrl, --oaa, -q, --ngram/--skips,
  --noconstant, --predict_only_model): VW trains on A and saves; ``streamlearn predict`` and
  ``train -t -i`` predict B as VW's ``-t -i`` does; ``streamlearn train -i`` on B gives VW's
  predictions and average loss of ``vw -i`` on B (save_resume state: t, the normalizer's sums,
  G and N, ftrl's z and n); a model streamlearn writes with ``--vw-model-out`` loads in VW and predicts
  as streamlearn predicts.
* VW's own model-sets (``../shared/data/vw/suite``, skipped when absent): corrupt, truncated, older
  and other-learner models are refused with one line naming the file and the reason.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from streamlearn.errors import ModelError
from streamlearn.io import vw_model
from streamlearn.run.vw_models import keep_options, load_vw, model_explicit

from support import vwsuite
from support.helpers import cli, vw_dataset, write_lines
from support.vwsuite import average_loss, fuzzy_equal


def _model(resume=True, width=3, bits=10, options="--quadratic ab", n=20, seed=0):
    rng = np.random.default_rng(seed)
    m = vw_model.VWModel((9, 11, 9), "", -1.0, 2.0, bits, ["2"], [], options, resume=resume)
    m.index = np.sort(rng.choice(1 << bits, n, replace=False)).astype(np.int64)
    m.values = rng.normal(size=(n, width if resume else 1)).astype(np.float32)
    if resume:
        m.values[:, 1:] = np.abs(m.values[:, 1:])
        m.online = {name: (3.0 if code in "fd" else 7) for name, code in vw_model.ONLINE}
        m.online.update(min_label=-1.0, max_label=2.0, l1_state=0.0, l2_state=1.0)
    return m


def test_written_and_read_back_the_same():
    for resume in (True, False):
        m = _model(resume=resume)
        data = vw_model.dump(m)
        back = vw_model.parse(data, "m", widths=(3,))
        assert (back.bits, back.options, back.ngram, back.resume) == (10, "--quadratic ab", ["2"], resume)
        assert np.array_equal(back.index, m.index) and np.array_equal(back.values, m.values)
        assert back.online == m.online
        assert vw_model.dump(back) == data
    wide = _model(bits=31, n=5)          # -b 31 and more: VW's indices are 64-bit
    data = vw_model.dump(wide)
    assert len(data) == len(vw_model.dump(_model(bits=10, n=5))) + 5 * 4
    assert np.array_equal(vw_model.parse(data, "m", widths=(3,)).index, wide.index)


def test_record_width_and_order():
    """VW stores no update rule: the width the reader's rule gives is taken when the records fit it;
    records in hash-map order (--sparse_weights) are read, a slot stored twice keeps its last record."""
    m = _model(width=2)
    data = vw_model.dump(m)
    with pytest.raises(ModelError, match="fit no record layout"):
        vw_model.parse(data, "m", widths=(3,))
    assert vw_model.parse(data, "m", widths=(3, 2)).values.shape[1] == 2
    m.index, m.values = m.index[::-1].copy(), m.values[::-1].copy()
    m.index[0] = m.index[1]
    back = vw_model.parse(vw_model.dump(m), "m", widths=(2,))
    assert np.all(np.diff(back.index) > 0) and back.index.shape[0] == m.index.shape[0] - 1
    assert np.array_equal(back.values[back.index == m.index[1]][0], m.values[1])   # the later record


def test_every_truncation_and_flip_is_one_line_or_a_model():
    data = vw_model.dump(_model(n=6))
    for cut in range(len(data)):
        try:
            vw_model.parse(data[:cut], "trunc.model", widths=(3,))
        except ModelError as exc:
            assert "trunc.model" in str(exc) and "\n" not in str(exc)
    rng = np.random.default_rng(3)
    for _ in range(400):
        bad = bytearray(data)
        bad[int(rng.integers(len(bad)))] ^= 1 << int(rng.integers(8))
        try:
            vw_model.parse(bad, "flip.model", widths=(3,))
        except ModelError as exc:
            assert "flip.model" in str(exc) and "\n" not in str(exc)


def test_refusals_say_why():
    data = bytearray(vw_model.dump(_model()))
    bad = bytearray(data)
    bad[30] ^= 0xFF                              # inside the hashed header
    with pytest.raises(ModelError, match="corrupt|checksum"):
        vw_model.parse(bad, "m")
    old = data.replace(b"9.11.9\0", b"7.10.2\0", 1)
    with pytest.raises(ModelError, match="VW 7.10.2; streamlearn reads VW models of version 8.0.2"):
        vw_model.parse(old, "m")
    with pytest.raises(ModelError, match="truncated"):
        vw_model.parse(data[:40], "m")
    with pytest.raises(ModelError, match="holds options streamlearn does not implement: --cb 4 --cb_type dr"):
        model_explicit("--cb 4 --cb_type dr --oaa 3", "m")
    assert model_explicit("--oaa 3 --quadratic ab --quadratic cd --noconstant --ftrl --random_seed 3",
                          "m") == {"oaa": 3, "quadratic": ("ab", "cd"), "noconstant": True, "ftrl": True}
    m = _model(options="--oaa 3 --cb 2")
    with pytest.raises(ModelError, match="--cb 2"):
        load_vw(vw_model.dump(m), "m", {}, predicting=True)
    with pytest.raises(ModelError, match="is a model of --algo coin"):
        load_vw(vw_model.dump(_model(options="--coin")), "m", {}, predicting=True)
    m = _model(options="")
    m.online["l1_state"] = 0.5
    with pytest.raises(ModelError, match="l1_state 0.5.*does not continue"):
        load_vw(vw_model.dump(m), "m", {}, predicting=False)
    header, index, rows = load_vw(vw_model.dump(m), "m", {}, predicting=True)   # VW's -t: truncated weights
    w = m.values[:, 0].astype(np.float64)
    want = np.sign(w) * np.maximum(np.abs(w) - 0.5, 0)
    assert np.array_equal(index, m.index) and np.allclose(rows[:, 0], want)


def test_keep_options_are_vws_spelling():
    from streamlearn.config import train_config
    cfg = train_config({"oaa": 3, "quadratic": ("ab",), "noconstant": True, "hash": "all", "learning_rate": 0.25})
    text = keep_options(cfg)
    assert text == "--oaa 3 --quadratic ab --noconstant --hash all --learning_rate 0.25"
    assert model_explicit(text, "m") == {"oaa": 3, "quadratic": ("ab",), "noconstant": True, "hash": "all",
                                         "learning_rate": 0.25}


# ----------------------------------------------------------------------------- against VW 9.11.9

def _data(tmp_path, classes=0):
    lines = vw_dataset(300, seed=11, namespaces="ab", vocab=30)
    if classes:
        lines = [f"{1 + i % classes}" + line[line.index(" "):] for i, line in enumerate(lines)]
    return write_lines(tmp_path / "a.vw", lines[:150]), write_lines(tmp_path / "b.vw", lines[150:])


def _same(mine, theirs):
    a, b = mine.read_text().split(), theirs.read_text().split()
    assert len(a) == len(b) == 150
    bad = [(x, y) for x, y in zip(a, b) if not fuzzy_equal(x, y)]
    assert not bad, bad[:5]


KINDS = {
    "default": [], "sgd": ["--sgd", "-l", "0.2"], "adaptive": ["--adaptive"], "normalized": ["--normalized"],
    "invariant": ["--invariant"], "ftrl": ["--ftrl"], "oaa": ["--oaa", "3"], "oaa_sgd_q": ["--oaa", "3", "--sgd", "-q", "ab"],
    "quadratic": ["-q", "ab", "--noconstant"], "ngram": ["--ngram", "2", "--skips", "1"],
    "logistic": ["--loss_function", "logistic", "-l", "0.3", "--power_t", "0.4"],
    "adaptive_initial_t": ["--adaptive", "--initial_t", "3"], "sgd_initial_t": ["--sgd", "--initial_t", "5"],
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_vw_models_predict_resume_and_go_back(tmp_path, kind):
    pytest.importorskip("vowpalwabbit")
    extra = KINDS[kind]
    a, b = _data(tmp_path, classes=3 if "--oaa" in extra else 0)
    run = lambda *args: vwsuite.vw_run(tmp_path, [*args, "-b", 16, *extra])    # noqa: E731
    run("-d", a, "-f", "vw.model", "--quiet")
    run("-d", a, "-f", "vw_po.model", "--quiet", "--predict_only_model")
    # predicting: VW's -t -i, streamlearn's predict and train -t -i
    vw_t = run("-t", "-d", b, "-i", "vw.model", "-p", "vw_t.p")
    cli("predict", "-d", b, "-i", tmp_path / "vw.model", "-p", tmp_path / "sl_t.p", "--quiet")
    _same(tmp_path / "sl_t.p", tmp_path / "vw_t.p")
    res = cli("train", "-t", "-d", b, "-i", tmp_path / "vw.model", "-p", tmp_path / "sl_tt.p", "-b", 16, *extra)
    _same(tmp_path / "sl_tt.p", tmp_path / "vw_t.p")
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw_t.stderr))
    cli("predict", "-d", b, "-i", tmp_path / "vw_po.model", "-p", tmp_path / "sl_po.p", "--quiet")
    _same(tmp_path / "sl_po.p", tmp_path / "vw_t.p")
    # resuming: VW trains on A then on B; streamlearn trains on B from VW's model of A
    vw_r = run("-d", b, "-i", "vw.model", "-p", "vw_r.p")
    res = cli("train", "-d", b, "-i", tmp_path / "vw.model", "-p", tmp_path / "sl_r.p", "-b", 16, *extra)
    _same(tmp_path / "sl_r.p", tmp_path / "vw_r.p")
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw_r.stderr))
    # back to VW: streamlearn's VW model (after A, then after resuming on B) predicts in VW as in streamlearn
    for name, args in (("sl", ["-d", a]), ("sl2", ["-d", b, "-i", tmp_path / "vw.model"]),
                       ("slpo", ["-d", a, "--predict_only_model"])):
        cli("train", *args, "-b", 16, *extra, "--vw-model-out", tmp_path / f"{name}.vwmodel",
            "-f", tmp_path / f"{name}.slm", "--quiet")
        run("-t", "-d", b, "-i", f"{name}.vwmodel", "-p", f"vw_{name}.p")
        cli("predict", "-d", b, "-i", tmp_path / f"{name}.slm", "-p", tmp_path / f"sl_{name}.p", "--quiet")
        _same(tmp_path / f"sl_{name}.p", tmp_path / f"vw_{name}.p")


def test_sparse_weights_model(tmp_path):
    """VW's --sparse_weights writes its records in hash-map order (and keeps no option for it)."""
    pytest.importorskip("vowpalwabbit")
    a, b = _data(tmp_path)
    vwsuite.vw_run(tmp_path, ["-d", a, "-f", "sp.model", "--sparse_weights", "-q", "ab", "--quiet"])
    index = vw_model.parse((tmp_path / "sp.model").read_bytes(), "sp", widths=(3,)).index
    assert index.shape[0] > 100
    vwsuite.vw_run(tmp_path, ["-t", "-d", b, "-i", "sp.model", "-p", "vw.p"])
    cli("predict", "-d", b, "-i", tmp_path / "sp.model", "-p", tmp_path / "sl.p", "--quiet")
    _same(tmp_path / "sl.p", tmp_path / "vw.p")
    vw_r = vwsuite.vw_run(tmp_path, ["-d", b, "-i", "sp.model", "-p", "vw_r.p"])
    res = cli("train", "-d", b, "-i", tmp_path / "sp.model", "-p", tmp_path / "sl_r.p")
    _same(tmp_path / "sl_r.p", tmp_path / "vw_r.p")
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw_r.stderr))


def test_vw_resumes_a_streamlearn_written_model(tmp_path):
    """A --vw-model-out model carries the save_resume state: VW continuing it on B gives what
    streamlearn continuing its own model on B gives."""
    pytest.importorskip("vowpalwabbit")
    a, b = _data(tmp_path)
    cli("train", "-d", a, "-b", 16, "--vw-model-out", tmp_path / "sl.vwmodel", "-f", tmp_path / "sl.slm", "--quiet")
    vw = vwsuite.vw_run(tmp_path, ["-d", b, "-i", "sl.vwmodel", "-p", "vw.p"])
    res = cli("train", "-d", b, "-i", tmp_path / "sl.slm", "-p", tmp_path / "sl.p")
    _same(tmp_path / "sl.p", tmp_path / "vw.p")
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw.stderr))


def test_vw_model_out_refuses_other_learners(tmp_path):
    a, _ = _data(tmp_path)
    res = cli("train", "-d", a, "--algo", "eg", "--radius", "5", "--vw-model-out", tmp_path / "x", expect_ok=False)
    assert res.exit_code == 1 and "--vw-model-out writes the models of VW's linear learners" in res.stderr


# ----------------------------------------------------------------------------- VW's model-sets

REFUSED = {
    "7.10.2_corrupted.model": "written by VW 7.10.2",
    "corrupted_weights_gd.model": "is corrupt (its version",
    "corrupted_weights_gd_mf.model": "is corrupt (its version",
    "truncated_model": "is corrupt (the options string is not text)",
    "cb_compat_test.vwmodel": "holds options streamlearn does not implement: --cb 4 --cb_type dr",
    "epsilon.model": "holds options streamlearn does not implement: --cb_adf",
    "simple_model": "written by VW 7.10.2",
}


def test_model_sets_are_refused_in_one_line(tmp_path):
    test, _ = vwsuite.extract(tmp_path, (), ("model-sets/", "train-sets/0001.dat"))
    for name, why in REFUSED.items():
        path = test / "model-sets" / name
        for args in (("predict", "-i", path), ("train", "-t", "-i", path), ("train", "-i", path)):
            res = cli(*args, "-d", test / "train-sets" / "0001.dat", "--quiet", expect_ok=False)
            lines = [line for line in res.stderr.splitlines() if line.strip()]
            assert res.exit_code == 1 and len(lines) == 1, (name, res.stderr)
            assert lines[0].startswith(f"Error: VW model {path} ") and why in lines[0], (name, lines[0])


def test_a_vw_model_is_named_where_only_streamlearn_models_are_read(tmp_path):
    path = tmp_path / "m.vwmodel"
    path.write_bytes(vw_model.dump(_model()))
    from streamlearn.io.model_file import load_model
    with pytest.raises(ModelError, match="is a VW model file"):
        load_model(str(path))
    assert struct.unpack("<I", path.read_bytes()[:4])[0] == 7
