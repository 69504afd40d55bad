"""Crafted and damaged model files (issue 24): every header value, state value, column name, index and
row a model file holds is checked before anything uses it, and a refusal is one line ("corrupt model
PATH: what", or one of the fixed messages: not a model file, format version, truncated, checksum).

The property tests take valid models of several learners (default rule, --sgd, ftrl, tg with its
cumulative-penalty state, fobos, --oaa 3, --predict-only-model), mutate header values (wrong types,
NaN/inf, negative, huge, strings, removed and unknown keys) and array bytes, recompute the checksum,
and check: either a one-line ModelError, or the model loads and ``predict -i`` / ``train -i`` (the
CLI, in-process), the Python API's ``Engine.from_bytes`` and ``session.predict`` finish without any
exception that is not a streamlearn error (no "internal error"). The two properties carry the
``fuzz`` marker; STREAMLEARN_FUZZ_SCALE=N multiplies their examples (``make fuzz``)."""

import json
import math
import os
import stat
import struct
import threading
import time
import zlib

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamlearn.cli import main
from streamlearn.errors import ModelError, StreamlearnError
from streamlearn.io import model_file
from streamlearn.io.model_file import MAGIC, load_model, parse_model
from streamlearn.run.model_io import load_checked, validate_model

SCALE = int(os.environ.get("STREAMLEARN_FUZZ_SCALE", "1") or 1)
FIXED = (r"is not a streamlearn model file", "is truncated", "is corrupt (checksum mismatch)",
         "has format version")

LEARNERS = {
    "default": [],
    "sgd": ["--sgd"],
    "ftrl": ["--algo", "ftrl", "--l1", "0.01", "--loss", "logistic"],
    "tg": ["--algo", "tg", "--l1", "0.001"],
    "fobos": ["--algo", "fobos", "--l1", "0.001"],
    "oaa": ["--oaa", "3"],
    "weights": ["--predict-only-model", "--loss", "logistic"],
}


def _lines(n, classes=0):
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        label = (i % classes) + 1 if classes else (1 if rng.random() < 0.5 else -1)
        feats = " ".join(f"f{j}:{rng.random():.3f}" for j in rng.choice(40, 5, replace=False))
        out.append(f"{label} |a {feats}\n")
    return "".join(out)


class Corpus(tuple):
    """(folder, {name: model bytes}, binary data path, multiclass data path), with a short repr for
    hypothesis's failure reports."""

    def __repr__(self):
        return f"Corpus({self[0]})"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(folder, {name: model bytes}, binary data path, multiclass data path)."""
    folder = tmp_path_factory.mktemp("models")
    binary, multi = folder / "b.vw", folder / "m.vw"
    binary.write_text(_lines(60))
    multi.write_text(_lines(60, 3))
    models = {}
    for name, args in LEARNERS.items():
        path = folder / f"{name}.slm"
        data = multi if name == "oaa" else binary
        r = CliRunner().invoke(main, ["train", "-d", str(data), "-b", "10", "-f", str(path), "--quiet", *args])
        assert r.exit_code == 0, r.output
        models[name] = path.read_bytes()
    return Corpus((folder, models, str(binary), str(multi)))


# ----------------------------------------------------------------------------- building files

def split(data: bytes):
    """(header, index, rows) of a valid model file's bytes, as plain Python and numpy copies."""
    head_len = struct.unpack_from("<Q", data, 16)[0]
    header = json.loads(data[24:24 + head_len])
    count, columns = header["count"], header["columns"]
    pos = 24 + head_len
    index = np.frombuffer(data, "<u4", count, pos).copy()
    rows = np.frombuffer(data, "<f8", count * columns, pos + 4 * count).reshape(count, columns).copy()
    return header, index, rows


def build(header, body: bytes) -> bytes:
    """A model file with this header and body and a correct checksum (whatever the header says)."""
    head = json.dumps(header, sort_keys=True).encode()
    rest = struct.pack("<Q", len(head)) + head + body
    return MAGIC + struct.pack("<II", 1, zlib.crc32(rest)) + rest


def body_of(index, rows) -> bytes:
    return np.ascontiguousarray(index, "<u4").tobytes() + np.ascontiguousarray(rows, "<f8").tobytes()


def check_refusal(exc: Exception, name: str) -> None:
    msg = str(exc)
    assert "\n" not in msg and msg.strip() == msg, msg
    assert msg.startswith(f"corrupt model {name}: ") or any(f in msg for f in FIXED), msg
    assert "internal error" not in msg


# ----------------------------------------------------------------------------- strategies

ODD = st.one_of(
    st.sampled_from(["x", "", None, True, False, -1, 0, 1, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64, -2 ** 63,
                     1.5, -0.5, math.nan, math.inf, -math.inf, 1e308, [], {}, ["x"], [1, 2], {"a": 1},
                     "sgd", "tg", "logistic", "w", [1.0, math.nan]]),
    st.integers(-2 ** 70, 2 ** 70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.one_of(st.integers(-3, 5), st.text(max_size=3), st.floats()), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(-2, 2), max_size=2),
)


@st.composite
def mutated(draw, names=tuple(LEARNERS)):
    """(learner, mutation list) -- each mutation a tuple the function ``apply`` performs."""
    name = draw(st.sampled_from(names))
    n = draw(st.integers(1, 3))
    muts = []
    for _ in range(n):
        kind = draw(st.sampled_from(["set", "set", "set", "state", "del", "index", "row", "byte"]))
        if kind in ("set", "state", "del"):
            muts.append((kind, draw(st.integers(0, 60)), draw(ODD)))
        elif kind == "index":
            muts.append((kind, draw(st.integers(0, 10 ** 6)), draw(st.one_of(
                st.integers(0, 2 ** 32 - 1), st.sampled_from(["dup", "swap", "top"])))))
        elif kind == "row":
            muts.append((kind, draw(st.integers(0, 10 ** 6)), draw(st.one_of(
                st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([math.nan, -1.0, math.inf])))))
        else:
            muts.append((kind, draw(st.integers(0, 10 ** 6)), draw(st.integers(0, 255))))
    return name, muts


def apply(data: bytes, muts) -> bytes:
    header, index, rows = split(data)
    header.pop("streamlearn", None)
    header["streamlearn"] = "test"
    body_changes = []
    for kind, where, value in muts:
        if kind == "set":
            keys = sorted(header) + ["an_unknown_key", "mix"]
            key = keys[where % len(keys)]
            if key == "bits" and isinstance(value, int) and 17 <= value <= 64:
                value = 16          # a valid larger -b only makes the table (and the test) slower
            header[key] = value
        elif kind == "state":
            state = header.setdefault("state", {})
            if isinstance(state, dict):
                keys = sorted(state) + ["an_unknown_state"]
                state[keys[where % len(keys)]] = value
        elif kind == "del":
            keys = sorted(header)
            header.pop(keys[where % len(keys)], None)
        else:
            body_changes.append((kind, where, value))
    for kind, where, value in body_changes:
        if index.shape[0] == 0:
            continue
        j = where % index.shape[0]
        if kind == "index":
            if value == "dup" and j > 0:
                index[j] = index[j - 1]
            elif value == "swap" and j > 0:
                index[j], index[j - 1] = index[j - 1], index[j]
            elif value == "top":
                index[j] = (1 << 10) + j
            elif isinstance(value, int):
                index[j] = value
        elif kind == "row":
            rows[j, where % rows.shape[1]] = value
    body = bytearray(body_of(index, rows))
    for kind, where, value in body_changes:
        if kind == "byte" and body:
            body[where % len(body)] = value
    return build(header, bytes(body))


# ----------------------------------------------------------------------------- the properties

def _check_bytes(data: bytes, name: str = "m.slm"):
    """validate_model: a one-line refusal, or a model (returned) whose every check passed."""
    try:
        return validate_model(data, name)
    except ModelError as exc:
        check_refusal(exc, name)
        return None


@pytest.mark.fuzz
@settings(max_examples=300 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=mutated())
@example(case=("default", [("set", 0, "x")]))
@example(case=("tg", [("state", 10, "x")]))
@example(case=("oaa", [("index", 1, "dup")]))
@example(case=("sgd", [("row", 0, math.nan)]))
def test_mutated_models_are_refused_in_one_line_or_load(corpus, case):
    _, models, _, _ = corpus
    name, muts = case
    data = apply(models[name], muts)
    loaded = _check_bytes(data)
    if loaded is not None:                # whatever loads is what the file says, and consistent
        (header, index, rows), opts = loaded
        assert np.all(np.diff(index.astype(np.int64)) > 0) and np.isfinite(rows).all()
        assert rows.shape == (header["count"], header["columns"])
    # the Python API: ValueError (sklearn's style) or an engine, nothing else
    from streamlearn.api import Engine
    try:
        Engine.from_bytes(data, name="m.slm")
    except ValueError as exc:
        assert "\n" not in str(exc)
        assert loaded is None or "corrupt model" not in str(exc)


@pytest.mark.fuzz
@settings(max_examples=40 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=mutated())
@example(case=("default", [("set", 0, 1.5)]))
@example(case=("default", [("set", 1, "\x1e")]))       # echoed in the message: escaped, one line
def test_mutated_models_through_the_cli(corpus, case):
    """train -i / predict -i of a mutated model: exit 0, or exit 1 with one line; never an internal
    error or a traceback."""
    folder, models, binary, multi = corpus
    name, muts = case
    data = apply(models[name], muts)
    path = folder / "mutated.slm"
    path.write_bytes(data)
    source = multi if name == "oaa" else binary
    out = folder / "out.slm"
    for args in (["predict", "-i", str(path), "-d", source, "--quiet", "-p", os.devnull],
                 ["train", "-i", str(path), "-d", source, "--quiet", "-f", str(out)]):
        r = CliRunner().invoke(main, args)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exception)
        assert "internal error" not in r.output and "Traceback" not in r.output, r.output
        assert r.exit_code in (0, 1), r.output
        if r.exit_code == 1:
            assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_valid_models_load(corpus):
    for name, data in corpus[1].items():
        (header, index, rows), opts = validate_model(data, name)
        assert rows.shape[0] == index.shape[0] and opts["bits"] == 10


# ----------------------------------------------------------------------------- named cases

def _one(corpus, name, **changes):
    header, index, rows = split(corpus[1][name])
    header.update(changes)
    return build(header, body_of(index, rows))


@pytest.mark.parametrize("name, changes, message", [
    ("default", {"total_weight": "x"}, "unknown header key \"total_weight\""),
    ("default", {"adaptive": "x"}, "option adaptive is \"x\", not true or false"),
    ("default", {"learning_rate": math.nan}, "option learning_rate is nan, not a number"),
    ("default", {"learning_rate": -1.0}, "-l/--learning-rate must be a finite number >= 0 (got -1)"),
    ("default", {"bits": 40}, "bits is 40, not between 1 and 32"),
    ("default", {"bits": "18"}, "bits is '18', not an integer"),
    ("default", {"count": -1}, "count is -1, not between 0 and 2^bits = 1024"),
    ("default", {"loss": "nope"}, "--loss must be one of"),
    ("default", {"algo": "nope"}, "--algo must be one of"),
    ("default", {"column_names": ["w", "g", "g"]}, "a column name appears twice"),
    ("default", {"column_names": ["w", "g"]}, "2 column names for 3 columns"),
    ("default", {"column_names": ["g", "w", "n"]}, "the first column is not the weight w"),
    ("default", {"column_names": ["w", "g", "theta"]}, "column theta is not one --algo sgd saves"),
    ("default", {"state": {"t": math.inf}}, "state t is inf, not a finite number"),
    ("default", {"state": {"t": -3}}, "state t is -3, not >= 0"),
    ("default", {"state": {"multiplier": -1.0}}, "state multiplier is -1.0, not >= 0"),
    ("default", {"state": {"index_mode": 7}}, "state index_mode is 7, not 0, 1 or 2"),
    ("default", {"state": {"bogus": 1}}, "unknown state 'bogus'"),
    ("default", {"state": []}, "state is [], not an object"),
    ("oaa", {"state": {"class_norm": [1.0, 2.0]}}, "state class_norm has 2 values, not 2 per class (6)"),
    ("default", {"oaa": 2 ** 70}, "option oaa is 1180591620717411303424, not a 64-bit integer"),
    ("default", {"radius": -1.0}, "option radius is -1.0, not null or a finite number > 0"),
    ("default", {"quadratic": [1]}, "option quadratic is [1], not a list of strings"),
    ("default", {"mix": {"workers": 0}}, "mix workers is 0, not an integer >= 1"),
    ("default", {"mix": {"rule": "sum"}}, "mix rule is \"sum\", not weighted or uniform"),
    ("default", {"mix": {"workers": 2, "syncs": 1, "rule": "uniform"}}, None),   # a merged model
    ("sgd", {"algo": "tg"}, None),     # a tg model without its state: refused (restore) or loaded
])
def test_named_header_faults(corpus, name, changes, message):
    data = _one(corpus, name, **changes)
    if message is None:
        _check_bytes(data)
        return
    with pytest.raises(ModelError) as err:
        validate_model(data, "m.slm")
    check_refusal(err.value, "m.slm")
    assert message in str(err.value)


def test_a_learner_column_dropped_is_refused(corpus):
    """A model holds the weight alone or every column its learner saves: the default rule's w g n
    with n dropped (columns and names agreeing, checksum valid) would resume with n restarted."""
    header, index, rows = split(corpus[1]["default"])
    header.update(columns=2, column_names=["w", "g"])
    with pytest.raises(ModelError) as err:
        validate_model(build(header, body_of(index, rows[:, :2])), "m.slm")
    check_refusal(err.value, "m.slm")
    assert "columns w, g are neither the weight alone nor all that --algo sgd saves (w, g, n)" in str(err.value)
    header.update(columns=1, column_names=["w"])
    validate_model(build(header, body_of(index, rows[:, :1])), "m.slm")     # the weights alone load


def test_index_and_row_faults(corpus):
    header, index, rows = split(corpus[1]["default"])
    cases = {
        "duplicate": (np.concatenate([index[:1], index[:-1]]), rows, "weight indices are not increasing"),
        "decreasing": (index[::-1].copy(), rows, "weight indices are not increasing"),
        "out of range": (np.concatenate([index[:-1], [1024]]), rows, "weight index 1024 is out of range"),
        "nan weight": (index, np.where(np.arange(rows.size).reshape(rows.shape) == 0, np.nan, rows),
                       "column w of weight index"),
        "negative g": (index, rows * np.array([1, -1, 1]), "column g of weight index"),
    }
    for what, (i, r, message) in cases.items():
        with pytest.raises(ModelError, match=message):
            parse_model(build(header, body_of(i, r)), "m.slm")


def test_raw_header_faults(corpus):
    data = corpus[1]["sgd"]
    head_len = struct.unpack_from("<Q", data, 16)[0]
    body = data[24 + head_len:]

    def raw(head: bytes, length=None, tail=body):
        rest = struct.pack("<Q", len(head) if length is None else length) + head + tail
        return MAGIC + struct.pack("<II", 1, zlib.crc32(rest)) + rest

    for head, message in [(b"[1, 2]", "the header is not a JSON object"),
                          (b"{\"bits\": 1", "the header is not valid JSON"),
                          (b"\xff\xfe", "the header is not UTF-8 text"),
                          (b"[" * 100000, "the header is not valid JSON"),
                          (b"{\"bits\": 10, \"bits\": 11}", "the key 'bits' appears twice"),
                          (b"{}", "the header lacks 'count'")]:
        with pytest.raises(ModelError, match="^corrupt model m.slm: ") as err:
            parse_model(raw(head), "m.slm")
        assert message in str(err.value)
    # a crafted header length: never an allocation of it
    with pytest.raises(ModelError, match="is truncated$"):
        parse_model(raw(b"{}", length=2 ** 63), "m.slm")
    with pytest.raises(ModelError, match=r"header length \d+ is beyond"):
        parse_model(raw(b"{}", length=2 ** 25, tail=b" " * 2 ** 25), "m.slm")


def test_legacy_header_without_options_is_refused_by_name(corpus):
    header, index, rows = split(corpus[1]["sgd"])
    del header["algo"]
    with pytest.raises(ModelError, match="^corrupt model m.slm: the header lacks option algo$"):
        validate_model(build(header, body_of(index, rows)), "m.slm")


# ----------------------------------------------------------------------------- reading: bounds, nodes

def _bytes_read() -> int:
    """Bytes this process has read through read() calls so far (Linux's /proc/self/io rchar)."""
    try:
        with open("/proc/self/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
    except (OSError, StopIteration):
        pytest.skip("no /proc/self/io here")


def test_load_model_refuses_a_wrong_size_before_reading_the_body(corpus, tmp_path):
    data = corpus[1]["default"]
    path = tmp_path / "big.slm"
    path.write_bytes(data)
    with open(path, "r+b") as f:        # a sparse 1 GiB tail: refused from the size alone
        f.truncate(len(data) + (1 << 30))
    before = _bytes_read()
    with pytest.raises(ModelError, match="is corrupt \\(checksum mismatch\\)$"):
        load_model(str(path))
    assert _bytes_read() - before < 1 << 20
    path.write_bytes(data[:-8])
    with pytest.raises(ModelError, match="is truncated$"):
        load_model(str(path))


def test_load_model_of_a_crafted_header_length(tmp_path):
    path = tmp_path / "crafted.slm"
    path.write_bytes(MAGIC + struct.pack("<IIQ", 1, 0, 2 ** 63) + b"{}")
    with pytest.raises(ModelError, match="is truncated$"):
        load_model(str(path))


def _node(tmp_path, name, major, minor):
    path = tmp_path / name
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here: {exc}")
    return str(path)


def test_a_zero_device_is_not_a_model(tmp_path):
    zero = _node(tmp_path, "zero", 1, 5)        # a node made here, never the machine's /dev
    start = time.monotonic()
    with pytest.raises(ModelError, match="zero is not a streamlearn model file$"):
        load_model(zero)
    assert time.monotonic() - start < 5
    null = _node(tmp_path, "null", 1, 3)
    with pytest.raises(ModelError, match="null is not a streamlearn model file$"):
        load_model(null)
    r = CliRunner().invoke(main, ["predict", "-i", zero], input="1 |a b\n")
    assert r.exit_code == 1 and r.stderr == f"Error: {zero} is not a streamlearn model file\n"


def test_a_fifo_without_a_writer_is_refused(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(model_file, "FIFO_WAIT", 0.3)
    start = time.monotonic()
    with pytest.raises(ModelError, match="nothing wrote to the FIFO within 0.3 s$"):
        load_model(str(fifo))
    assert time.monotonic() - start < 5


def test_a_fifo_with_a_writer_is_read_as_a_stream(corpus, tmp_path, monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(model_file, "FIFO_WAIT", 20)
    data = corpus[1]["tg"]

    def write(payload):
        time.sleep(0.2)               # the reader opens first (it must wait, not read an empty pipe)
        with open(fifo, "wb") as f:
            f.write(payload)

    for payload, error in [(data, None), (data[:-3], "is truncated$"),
                           (data + b"x", "checksum mismatch\\)$"), (b"", "not a streamlearn model file$")]:
        writer = threading.Thread(target=write, args=(payload,))
        writer.start()
        try:
            if error is None:
                header, index, rows = load_model(str(fifo))
                assert rows.shape == (header["count"], 5)
            else:
                with pytest.raises(ModelError, match=error):
                    load_model(str(fifo))
        finally:
            writer.join()


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ModelError, match="^cannot read model .*: Is a directory$"):
        load_model(str(tmp_path))


def test_load_checked_reads_and_validates(corpus):
    folder = corpus[0]
    (header, index, rows), opts = load_checked(str(folder / "oaa.slm"))
    assert opts["oaa"] == 3 and len(header["state"]["class_norm"]) == 6


def test_the_estimators_load_reads_bounded(corpus, tmp_path, monkeypatch):
    from streamlearn.estimators import SparseLinearRegressor
    zero = _node(tmp_path, "zero", 1, 5)
    with pytest.raises(ValueError, match="zero is not a streamlearn model file$"):
        SparseLinearRegressor.load(zero)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(model_file, "FIFO_WAIT", 0.2)
    with pytest.raises(ValueError, match="nothing wrote to the FIFO"):
        SparseLinearRegressor.load(fifo)
    est = SparseLinearRegressor.load(corpus[0] / "default.slm")
    assert est.engine_.cfg.bits == 10


def test_a_value_beyond_a_float32_table_is_refused(corpus):
    """A value the file holds validly (finite, float64) but a float32 table cannot (issue 30: the
    default rule's tables are float32) is refused in one line when loaded, not turned into inf."""
    folder, models, binary, _ = corpus
    header, index, rows = split(models["default"])
    rows[3, 1] = 1e300                                 # column g
    path = folder / "huge.slm"
    path.write_bytes(build(header, body_of(index, rows)))
    validate_model(path.read_bytes(), "huge.slm")      # the file itself is sound
    message = (f"cannot load {path}: column g of weight index {int(index[3])} is 1e+300, beyond this run's "
               f"float32 table (at most 3.4e+38 in magnitude)")
    for args in (["train", "-i", str(path), "-d", binary, "--quiet", "-f", str(folder / "out.slm")],
                 ["predict", "-i", str(path), "-d", binary, "--quiet", "-p", os.devnull]):
        r = CliRunner().invoke(main, args)
        if args[0] == "predict" and r.exit_code == 0:
            continue                                   # a prediction reads the weights alone (column w)
        assert r.exit_code == 1 and r.stderr.strip() == f"Error: {message}", (args, r.output)
    rows[3, 1] = 3e38                                  # within float32: loads
    path.write_bytes(build(header, body_of(index, rows)))
    r = CliRunner().invoke(main, ["train", "-i", str(path), "-d", binary, "--quiet"])
    assert r.exit_code == 0, r.output
