"""streamlearn.csr.load_csr: the SciPy CSR view of an input has the columns streamlearn (and VW) learn
on -- a saved model's predictions are X @ w, the slots are those of ``--audit`` and of VW's weights
under -q and --ngram -- and reports bad options and bad lines as the CLI does."""

from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

from support.helpers import cli, read_predictions, vw_dataset, write_lines  # noqa: E402
from streamlearn.csr import load_csr  # noqa: E402
from streamlearn.io.model_file import load_model  # noqa: E402

EXPANSION = ["-q", "ab", "--ngram", "c2"]


def dense_weights(model, bits: int) -> np.ndarray:
    header, index, rows = load_model(str(model))
    assert header.get("column_names", ["w"])[0] == "w"
    w = np.zeros(1 << bits)
    w[index] = rows[:, 0]
    return w


@pytest.fixture
def data(tmp_path):
    return write_lines(tmp_path / "d.vw", vw_dataset(300, seed=3))


@pytest.mark.parametrize("algo", [["--algo", "tg", "--l1", "1e-4"], ["--algo", "fobos", "--l1", "1e-4"]])
def test_predictions_of_a_saved_model_are_X_w(data, tmp_path, algo):
    model, pred = tmp_path / "m.slm", tmp_path / "p.txt"
    cli("train", "-d", data, "--loss", "logistic", *algo, "-b", 12, *EXPANSION, "-f", model, "--quiet")
    cli("predict", "-i", model, "-d", data, "-p", pred, "--quiet")
    X, y, sw = load_csr(data, bits=12, quadratic="ab", ngram=["c2"])
    assert X.shape == (300, 1 << 12) and X.dtype == np.float64
    assert isinstance(X, sp.csr_matrix) and X.has_canonical_format
    raw = X @ dense_weights(model, 12)
    np.testing.assert_allclose(raw, read_predictions(pred), rtol=0, atol=1e-6)   # -p prints 6 decimals
    assert np.count_nonzero(raw) > 250


def audit_rows(text: str) -> list[dict]:
    """{index: summed value} per example from ``streamlearn train --audit`` (TAB-led entry lines)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("\t"):
            continue
        row: dict = {}
        for entry in line.split("\t")[1:]:
            _name, index, value, _weight = entry.rsplit(":", 3)
            row[int(index)] = row.get(int(index), 0.0) + float(value)
        rows.append(row)
    return rows


def test_columns_are_the_slots_streamlearn_audits(data):
    res = cli("train", "-d", data, "--loss", "logistic", "-b", 10, *EXPANSION, "--audit", "--quiet")
    expected = audit_rows(res.output)       # values printed rounded (VW prints 5 decimals)
    X, _, _ = load_csr(data, bits=10, quadratic=["ab"], ngram=["c2"])
    assert len(expected) == X.shape[0] == 300
    for i, row in enumerate(expected):
        got = X.getrow(i)
        want = {j: v for j, v in row.items() if v != 0.0}
        assert dict(zip(got.indices.tolist(), got.data.tolist())) == pytest.approx(want, rel=1e-4, abs=2e-5)
    constant = 11650396 & ((1 << 10) - 1)      # VW's constant slot; other features may share it at -b 10
    Xn, _, _ = load_csr(data, bits=10, quadratic=["ab"], ngram=["c2"], noconstant=True)
    diff = (X - Xn).tocsc()
    assert diff.nnz == 300 and np.all(diff[:, constant].toarray() == 1.0)


def test_columns_are_vw_slots(data, tmp_path):
    """VW's raw predictions (-r) of its own model are X @ w with VW's weights by slot."""
    pytest.importorskip("vowpalwabbit")
    vw = [sys.executable, "-m", "vowpalwabbit", "--quiet"]
    model, readable, raw = tmp_path / "vw.model", tmp_path / "vw.txt", tmp_path / "raw.txt"
    subprocess.run(vw + ["-d", str(data), "--loss_function", "logistic", "-b", "12", *EXPANSION,
                         "-f", str(model), "--readable_model", str(readable)], check=True, timeout=120)
    subprocess.run(vw + ["-t", "-i", str(model), "-d", str(data), "-r", str(raw)], check=True, timeout=120)
    w = np.zeros(1 << 12)
    for line in readable.read_text().splitlines():
        index, colon, value = line.partition(":")
        if colon and index.isdigit():
            w[int(index)] = float(value.split()[0])
    assert np.count_nonzero(w) > 100
    X, _, _ = load_csr(data, bits=12, quadratic="ab", ngram="c2")
    np.testing.assert_allclose(X @ w, read_predictions(raw), rtol=1e-4, atol=1e-4)


def test_labels_weights_and_unlabelled(tmp_path):
    f = write_lines(tmp_path / "l.vw", ["1 2.5 'a|x f g:2\n", "-1 |x f\n", "\n", "|x g\n",
                                        "0 0.5 0.3 |x h:-1.5 h\n", "3.5 |x\n"])
    X, y, sw = load_csr(f, bits=8, noconstant=True)
    assert X.shape == (5, 256)
    np.testing.assert_array_equal(y, [1, -1, np.nan, 0, 3.5])
    np.testing.assert_array_equal(sw, [2.5, 1, 1, 0.5, 1])
    assert X[0].sum() == 3.0 and X[1].sum() == 1.0 and X[4].nnz == 0
    h = X[3].toarray().ravel()      # h:-1.5 and h (value 1) share a slot: summed to -0.5
    assert h.sum() == pytest.approx(-0.5) and np.count_nonzero(h) == 1


def test_libsvm_input_equals_its_vw_form(tmp_path):
    libsvm = write_lines(tmp_path / "a.libsvm", ["# comment\n", "1 qid:3 3:0.5 17:2 # tail\n", "-1 3:1 3:1\n",
                                                 "0 100000:1.5\n"])
    vwform = write_lines(tmp_path / "a.vw", ["1 | 3:0.5 17:2\n", "-1 | 3:1 3:1\n", "0 | 100000:1.5\n"])
    for fmt in (None, "libsvm"):
        X, y, sw = load_csr(libsvm, format=fmt, bits=14, quadratic="  ")
        Xv, yv, swv = load_csr(vwform, format="vw", bits=14, quadratic="  ")
        assert (X != Xv).nnz == 0 and X.nnz == Xv.nnz
        np.testing.assert_array_equal(y, [1, -1, 0])
        np.testing.assert_array_equal(y, yv)
        np.testing.assert_array_equal(sw, swv)
    X, _, _ = load_csr(libsvm, bits=18, noconstant=True)
    assert X[1].nnz == 1 and X[1].sum() == 2.0        # the repeated index 3 is summed
    assert X[2, 100000] == 1.5                          # numeric names are their own hash
    # the cubed default namespace crosses the repeated feature with itself
    assert load_csr(libsvm, bits=14, cubic="   ")[0].nnz > load_csr(libsvm, bits=14)[0].nnz


def test_several_and_compressed_files(data, tmp_path):
    gz = tmp_path / "d.vw.gz"
    gz.write_bytes(gzip.compress(data.read_bytes()))
    X1, y1, _ = load_csr(data, bits=12)
    X2, y2, _ = load_csr([gz, str(data)], bits=12)
    assert X2.shape[0] == 600
    assert (X2[:300] != X1).nnz == 0 and (X2[300:] != X1).nnz == 0
    np.testing.assert_array_equal(y2, np.concatenate([y1, y1]))


def cli_error(*args) -> str:
    res = cli("train", *args, expect_ok=False)
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    assert lines[-1].startswith("Error: ")
    return lines[-1][len("Error: "):]


def test_malformed_line_is_the_clis_strict_error(tmp_path):
    f = write_lines(tmp_path / "bad.vw", ["1 |a x\n", "-1 |a y:2\n", "1 |a z:inf w\n", "1 |a x\n"])
    with pytest.raises(ValueError) as err:
        load_csr(f)
    assert str(err.value) == f"{f} line 3: feature value in \"z:inf\" is not finite"
    assert str(err.value) == cli_error("-d", f, "--strict", "--quiet")
    with pytest.warns(UserWarning, match=r"bad.vw line 3: .*; the rest of the line is ignored"):
        X, y, _ = load_csr(f, strict=False, noconstant=True, bits=10)
    assert X.shape[0] == 4 and X[2].nnz == 0 and y[2] == 1.0


def test_bad_label_without_strict_leaves_nan(tmp_path):
    f = write_lines(tmp_path / "lab.vw", ["abc |a x\n", "1 |a x\n"])
    with pytest.raises(ValueError, match=r"lab.vw line 1: label \"abc\" is not a number$"):
        load_csr(f)
    with pytest.warns(UserWarning, match="predicted, not learned"):
        X, y, _ = load_csr(f, strict=False)
    assert np.isnan(y[0]) and y[1] == 1 and X[0].nnz == 2


@pytest.mark.parametrize("kwargs, args", [
    ({"quadratic": "a"}, ["-q", "a"]),
    ({"ngram": "x"}, ["--ngram", "x"]),
    ({"skips": "1"}, ["--skips", "1"]),
    ({"bits": 40}, ["-b", "40"]),
    ({"format": "parquet"}, ["--format", "parquet"]),   # csv and json are formats now (issue 27)
    ({"hash": "some"}, ["--hash", "some"]),
])
def test_option_errors_are_the_clis(data, kwargs, args):
    with pytest.raises(ValueError) as err:
        load_csr(data, **kwargs)
    text = str(err.value)
    assert "\n" not in text
    if args[0] in ("--format", "--hash"):       # click refuses these choices itself
        assert text.startswith(f"{args[0]} must be one of")
    else:
        assert text == cli_error("-d", data, *args, "--quiet")


def test_unreadable_file(tmp_path):
    with pytest.raises(ValueError, match=r"^cannot read .*missing.vw: No such file or directory$"):
        load_csr(tmp_path / "missing.vw")
    with pytest.raises(ValueError, match="no input"):
        load_csr([])


def test_scipy_is_imported_lazily(monkeypatch, data):
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    with pytest.raises(ImportError, match=r"streamlearn\[csr\]"):
        load_csr(data)
    out = subprocess.run([sys.executable, "-c", "import streamlearn.csr, sys; print('scipy' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
