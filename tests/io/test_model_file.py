"""Model files: round trip, sparsity on disk, atomic writes, and one-line errors for bad files."""

import os
import re

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


def vw_checksum(lines) -> int:
    """Slow reference of VW's header checksum: mmh3 chained over the pieces VW writes one at a time
    (each line, except that "N ngram:"/"N skip:" are written as the head, each value with a space,
    and the newline), each piece seeded with the hash so far."""
    import mmh3
    pieces = []
    for line in lines:
        m = re.fullmatch(r"(\d+ (?:ngram|skip):)(.*)", line)
        if m:
            pieces += [m.group(1)] + [v + " " for v in m.group(2).split()] + ["\n"]
        else:
            pieces.append(line + "\n")
    h = 0
    for piece in pieces:
        h = mmh3.hash(piece.encode(), h, signed=False)
    return h


def test_vw_header_checksum():
    """VW 9.11.9's checksums of three headers (VW's own readable models), from the text alone."""
    from streamlearn.io.vw_text import checksum, header_lines, header_pieces
    cases = [((0, 0.73251, 18, (), (), ""), 328492323),
             ((0, 2, 18, (), (), " --ftrl --noconstant"), 2919628460),
             ((0, 0.73251, 18, ("2", "a3"), ("1",),
               " --interactions abc --interactions ::: --quadratic ab --quadratic cd --ignore ab"), 3794315992)]
    for args, want in cases:
        pieces = header_pieces(*args)
        lines = header_lines(pieces)
        assert checksum(pieces) == want == vw_checksum(lines[1:-1])
        assert lines[-1] == f"Checksum: {want}" and lines[0] == "Version 9.11.2"
    assert header_lines(header_pieces(*cases[2][0]))[6:8] == ["2 ngram:2 a3 ", "1 skip:1 "]


def test_readable_model(tmp_path):
    txt = tmp_path / "w.txt"
    model = train(tmp_path, "r.slm", "--loss", "logistic", "--algo", "tg", "--l1", "0.01", "--readable-model",
                  str(txt))
    lines = txt.read_text().splitlines()
    # VW's header (parse_regressor.cc): the VW version, the labels' bounds, the bits, no n-grams or
    # skips, the options (a learner VW lacks: --algo and its options), VW's checksum of that text
    assert lines[:8] == ["Version 9.11.2", "Id ", "Min label:-50", "Max label:50", "bits:18", "lda:0",
                         "0 ngram:", "0 skip:"]
    assert lines[8] == "options: --algo tg --l1 0.01 --cumulative-penalty"
    assert lines[9] == f"Checksum: {vw_checksum(lines[1:9])}"
    # then VW's save_resume block: the run's counters (2000 examples of weight 1)
    assert lines[10] == ":1"
    block = dict(line.rsplit(" ", 1) for line in lines[11:29])
    assert list(block) == ["initial_t", "norm normalizer", "t", "sum_loss", "sum_loss_since_last_dump",
                           "dump_interval", "min_label", "max_label", "weighted_labeled_examples",
                           "weighted_labels", "weighted_unlabeled_examples", "example_number",
                           "total_features", "total_weight", "sd::oec.weighted_labeled_examples",
                           "current_pass", "l1_state", "l2_state"]
    assert (block["t"], block["example_number"], block["weighted_labeled_examples"]) == ("2000",) * 3
    assert (block["current_pass"], block["l2_state"], block["min_label"]) == ("1", "1", "-50")
    body = lines[29:]
    n = sum(float(line.split(":")[1].split()[0]) != 0 for line in body)
    # VW's save_resume weight lines "index:w G N": every row with a weight, G or N that is not 0
    index = [int(l.split(":")[0]) for l in body]
    values = [[float(v) for v in l.split(":")[1].split()] for l in body]
    assert index == sorted(index) and all(len(v) == 3 for v in values)
    assert sum(v[0] != 0 for v in values) == n == np.count_nonzero(load_model(str(model))[2][:, 0])
    _, i2, r2 = load_model(str(model))
    assert index == i2.tolist()
    assert [v[0] for v in values] == r2[:, 0].tolist()           # exact round trip of the weights
    cols = load_model(str(model))[0]["column_names"]
    assert [v[1:] for v in values] == r2[:, [cols.index("g"), cols.index("n")]].tolist()


def test_readable_block_counts_examples_with_mini_batches(tmp_path):
    """The save_resume block's t is VW's: initial_t plus the examples' weight, not a mini-batch
    learner's step clock (one step per batch of 7)."""
    txt = tmp_path / "w.txt"
    train(tmp_path, "b.slm", "--loss", "logistic", "--algo", "l1ball", "--radius", "5", "--batch-size", "7",
          "--readable-model", str(txt))
    block = dict(line.rsplit(" ", 1) for line in txt.read_text().splitlines()[11:29])
    assert float(block["t"]) - float(block["initial_t"]) == 2000 == float(block["weighted_labeled_examples"])
