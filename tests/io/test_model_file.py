"""Model files: round trip, sparsity on disk, atomic writes, and one-line errors for bad files."""

import os

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn.cli import main
from streamlearn.errors import ModelError
from streamlearn.io.model_file import FORMAT_VERSION, MAGIC, load_model, save_model, write_atomic

HEADER = {"bits": 10, "loss": "squared"}


def sample(tmp_path, n=5, columns=1):
    path = str(tmp_path / "m.slm")
    index = np.array([1, 5, 17, 500, 1023][:n], dtype=np.int64)
    rows = np.arange(n * columns, dtype=np.float64).reshape(n, columns) / 7.0
    save_model(path, dict(HEADER, column_names=["w", "g", "n"][:columns]), index, rows)
    return path, index, rows


def test_round_trip(tmp_path):
    path, index, rows = sample(tmp_path, columns=3)
    header, i2, r2 = load_model(path)
    assert header["bits"] == 10 and header["count"] == 5 and header["columns"] == 3
    assert np.array_equal(i2, index) and np.array_equal(r2, rows)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~_umask()


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_bad_files_give_one_line_errors(tmp_path):
    path, _, _ = sample(tmp_path)
    data = open(path, "rb").read()
    cases = {
        "missing": (None, r"^cannot read model .*missing\.slm: No such file or directory$"),
        "empty": (b"", r"is not a streamlearn model file$"),
        "foreign": (b"1 |a b\n" * 10, r"is not a streamlearn model file$"),
        "short": (data[:20], r"is truncated$"),
        "truncated": (data[:-3], r"is truncated$"),
        "longer": (data + b"x", r"is corrupt \(checksum mismatch\)$"),
        "flipped": (data[:-1] + bytes([data[-1] ^ 1]), r"is corrupt \(checksum mismatch\)$"),
        "version": (MAGIC + (FORMAT_VERSION + 1).to_bytes(4, "little") + data[12:],
                    r"has format version 2; this streamlearn reads version 1$"),
    }
    for name, (content, pattern) in cases.items():
        p = tmp_path / f"{name}.slm"
        if content is not None:
            p.write_bytes(content)
        with pytest.raises(ModelError, match=pattern):
            load_model(str(p))


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    path, _, _ = sample(tmp_path)
    before = open(path, "rb").read()

    def chunks():
        yield b"partial"
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_atomic(path, chunks())
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["m.slm"]


def train(tmp_path, name, *args, data=None):
    model = tmp_path / name
    res = CliRunner().invoke(main, ["train", "-d", data or "data/samples/sparse.train.vw", "-f", str(model),
                                    "--quiet", *args])
    assert res.exit_code == 0, res.output
    return model


def test_model_size_grows_with_nonzero_weights_not_with_bits(tmp_path):
    small = train(tmp_path, "b18.slm", "-b", "18", "--loss", "logistic", "--predict-only-model")
    large = train(tmp_path, "b28.slm", "-b", "28", "--loss", "logistic", "--predict-only-model")
    h18, i18, _ = load_model(str(small))
    h28, i28, _ = load_model(str(large))
    assert i18.shape[0] == i28.shape[0]                        # no collisions among ~1000 features
    assert abs(os.path.getsize(large) - os.path.getsize(small)) < 100
    assert os.path.getsize(large) < 20 * i28.shape[0] + 2000   # ~12 bytes per non-zero weight + header
    sparse = train(tmp_path, "tg.slm", "-b", "18", "--loss", "logistic", "--algo", "tg", "--l1", "0.05",
                   "--predict-only-model")
    assert os.path.getsize(sparse) < os.path.getsize(small) / 2
    # without --predict-only-model each row also holds G and N (to resume): 4 + 3 x 8 bytes. -b 25
    # (indices past float32's exact integers, a table 128 x -b 18's) rather than 28: scanning 2^28
    # rows of three columns cost ~3 s, and the -b 28 model above already covers the widest index
    full = train(tmp_path, "full.slm", "-b", "25", "--loss", "logistic")
    hf, i_f, rf = load_model(str(full))
    assert hf["column_names"] == ["w", "g", "n"] and rf.shape == (i_f.shape[0], 3)
    assert os.path.getsize(full) < 36 * i_f.shape[0] + 2000


def test_cli_errors_for_bad_models(tmp_path):
    model = train(tmp_path, "ok.slm", "-b", "16")
    r = CliRunner().invoke(main, ["train", "-i", str(model), "-b", "18"], input="1 |a b\n")
    assert r.exit_code == 1
    assert r.stderr == "Error: -b/--bits 18 conflicts with the initial model's -b/--bits 16\n"
    r = CliRunner().invoke(main, ["train", "-i", str(model), "--noconstant"], input="1 |a b\n")
    assert r.stderr == "Error: --noconstant True conflicts with the initial model's --noconstant False\n"
    bad = tmp_path / "bad.slm"
    bad.write_bytes(open(model, "rb").read()[:-5])
    r = CliRunner().invoke(main, ["predict", "-i", str(bad)], input="1 |a b\n")
    assert r.exit_code == 1 and r.stderr == f"Error: model file {bad} is truncated\n"
    r = CliRunner().invoke(main, ["predict", "-i", "data/samples/sparse.test.vw"], input="1 |a b\n")
    assert r.stderr == "Error: data/samples/sparse.test.vw is not a streamlearn model file\n"


def test_readable_model(tmp_path):
    txt = tmp_path / "w.txt"
    model = train(tmp_path, "r.slm", "--loss", "logistic", "--algo", "tg", "--l1", "0.01", "--readable-model",
                  str(txt))
    lines = txt.read_text().splitlines()
    assert lines[0] == "streamlearn readable model (format 1)"
    assert lines[1:4] == ["bits: 18", "loss: logistic", "algo: tg"]
    assert lines[4].startswith("options: -b 18 ") and "--l1 0.01" in lines[4]
    n = int(lines[5].split(": ")[1])
    body = lines[6:]
    # VW's save_resume weight lines "index:w G N": every row with a weight, G or N that is not 0
    index = [int(l.split(":")[0]) for l in body]
    values = [[float(v) for v in l.split(":")[1].split()] for l in body]
    assert index == sorted(index) and all(len(v) == 3 for v in values)
    assert sum(v[0] != 0 for v in values) == n
    _, i2, r2 = load_model(str(model))
    assert index == i2.tolist()
    assert [v[0] for v in values] == r2[:, 0].tolist()           # exact round trip of the weights
    cols = load_model(str(model))[0]["column_names"]
    assert [v[1:] for v in values] == r2[:, [cols.index("g"), cols.index("n")]].tolist()
