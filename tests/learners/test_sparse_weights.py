"""The sparse weight store (issue 30, ``--sparse_weights``; ``streamlearn.core.sparse``) against the dense
table: for every online learner of the registry, and for --oaa and -q, the same model bytes, readable
model and predictions at a -b without collisions; -b 32 end to end (train, -i, predict,
--readable_model); the table's rows in use grow with the features; the runs it cannot serve."""

from __future__ import annotations

import numpy as np
import pytest

from support.helpers import cli, vw_dataset, write_lines
from streamlearn import learners
from streamlearn.core import sparse
from streamlearn.io.model_file import load_model

#: every online learner with its example options (a learner with a multiclass loss: --oaa 3 and its loss)
ONLINE = [spec for spec in learners.SPECS if not spec.batch]


def options(spec) -> list[str]:
    return (["--algo", spec.name] if spec.name != "sgd" else []) + list(spec.example)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("sparse")
    train = write_lines(d / "train.vw", vw_dataset(300, seed=11))
    test = write_lines(d / "test.vw", vw_dataset(80, seed=12, weighted=False))
    multi = [f"{1 + (i % 3)} " + line.split(" ", 1)[1] for i, line in enumerate(vw_dataset(300, seed=13))]
    return d, train, test, write_lines(d / "multi.vw", multi)


@pytest.fixture(autouse=True)
def memory(monkeypatch):
    """A machine of 16 GiB, whatever this one has: -b 32's dense table never fits (the automatic store)."""
    monkeypatch.setattr(sparse, "machine_memory", lambda: 16 << 30)


@pytest.fixture
def stores(monkeypatch):
    """The sparse stores the runs made."""
    made = []
    init = sparse.SparseStore.__init__

    def record(self, *args, **kw):
        init(self, *args, **kw)
        made.append(self)
    monkeypatch.setattr(sparse.SparseStore, "__init__", record)
    return made


def run_pair(d, name, args, train, test):
    """The dense and the sparse run of ``args``: (model bytes, readable model, predictions, -t predictions) of each."""
    out = []
    for kind, extra in (("dense", []), ("sparse", ["--sparse_weights"])):
        m, r, p, t = (d / f"{name}.{kind}.{x}" for x in ("m", "txt", "p", "t"))
        cli("train", "-d", train, "--loss", "logistic", *args, *extra, "-f", m, "--readable_model", r, "-p", p,
            "--quiet")
        cli("train", "-d", test, "-t", "-i", m, *extra, "-p", t, "--quiet")
        out.append((m.read_bytes(), r.read_text(), p.read_text(), t.read_text()))
    return out


@pytest.mark.parametrize("spec", ONLINE, ids=lambda s: s.name)
def test_every_online_learner_sparse_equals_dense(data, stores, spec):
    d, train, test, multi = data
    args = ["-b", "18", *options(spec)]
    dense, sparse_run = run_pair(d, spec.name, args, multi if spec.joint else train, test)
    # a learner the store cannot serve keeps the dense table (below)
    assert bool(stores) == (spec.name not in sparse.REFUSED_LEARNERS)
    assert sparse_run[0] == dense[0]
    assert sparse_run[1:] == dense[1:]


@pytest.mark.parametrize("args", [["--oaa", "3"], ["-q", "ab", "--adaptive"], ["--oaa", "3", "-q", "ab", "--algo", "tg",
                                                                           "--l1", "1e-4"]],
                         ids=["oaa", "q", "oaa-q-tg"])
def test_oaa_and_quadratic_sparse_equal_dense(data, stores, args):
    d, train, test, multi = data
    dense, sparse_run = run_pair(d, "-".join(args), ["-b", "18", *args], multi if "--oaa" in args else train, test)
    assert stores
    assert sparse_run == dense


def test_b32_end_to_end(data, tmp_path):
    """-b 32: train, continue with -i, predict, the readable model; its predictions are -b 18's (no
    collision in either), its slots the features' 32-bit ones."""
    _, train, test, _ = data
    m32, m18 = tmp_path / "m32", tmp_path / "m18"
    cli("train", "-d", train, "-b", "32", "--sparse_weights", "-f", m32, "-p", tmp_path / "p32", "--quiet")
    cli("train", "-d", train, "-b", "18", "-f", m18, "-p", tmp_path / "p18", "--quiet")
    assert (tmp_path / "p32").read_text() == (tmp_path / "p18").read_text()
    header, index, rows = load_model(str(m32))
    assert header["bits"] == 32 and index.max() >= 1 << 18
    _, index18, rows18 = load_model(str(m18))
    assert np.array_equal(np.sort(rows[:, 0]), np.sort(rows18[:, 0]))
    # -i continues (the automatic store: -b 32 is too large for a dense table)
    cli("train", "-d", test, "-b", "32", "-i", m32, "-f", tmp_path / "m32b", "-p", tmp_path / "c32", "--quiet")
    cli("train", "-d", test, "-b", "18", "-i", m18, "-f", tmp_path / "m18b", "-p", tmp_path / "c18", "--quiet")
    assert (tmp_path / "c32").read_text() == (tmp_path / "c18").read_text()
    cli("predict", "-i", tmp_path / "m32b", "-d", test, "-p", tmp_path / "q32", "--quiet")
    cli("predict", "-i", tmp_path / "m18b", "-d", test, "-p", tmp_path / "q18", "--quiet")
    assert (tmp_path / "q32").read_text() == (tmp_path / "q18").read_text()
    cli("train", "-d", train, "-b", "32", "-f", m32, "--readable_model", tmp_path / "r32", "--quiet")
    lines = (tmp_path / "r32").read_text().splitlines()
    assert "bits:32" in lines
    weights = lines[lines.index(":1") + 1:]
    slots = [int(line.split(":")[0]) for line in weights if line[:1].isdigit()]
    assert sorted(slots) == sorted(index.tolist())


def test_the_table_grows_with_the_touched_features():
    """The rows in use are the distinct features, whatever -b; the table's committed pages follow them."""
    store = sparse.SparseStore(32, 1, sparse.capacity_rows(32, 1, 6))
    table = sparse.reserve_table(store.capacity, 6)
    before = resident_kib(table.ctypes.data)
    rng = np.random.default_rng(1)
    for n in (1000, 20_000):
        idx = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
        rows = store.rows(idx)
        table[rows, 0] += 1.0
    distinct = np.unique(store.key_of_row[:store.n_rows]).shape[0]
    assert store.n_rows == distinct
    assert store.in_use(table).shape == (distinct, 6)
    assert store.in_use(table)[:, 0].sum() == 21_000.0
    assert not table[store.n_rows:store.n_rows + 4096].any()
    # the pages made resident: those of the rows in use (Linux), not the capacity's (measured as a
    # difference: the kernel may merge the map with its neighbours)
    if before is not None:
        assert table.nbytes >= 1 << 30
        assert resident_kib(table.ctypes.data) - before <= distinct * 6 * 8 / 1024 + 2 * 4096 / 1024 + 64


def resident_kib(address: int) -> int | None:
    """Rss (KiB) of the mapping holding ``address`` (/proc/self/smaps), None where there is none."""
    try:
        text = open("/proc/self/smaps").read().splitlines()
    except OSError:
        return None
    inside = False
    for line in text:
        head = line.split()[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and head == "Rss:":
            return int(line.split()[1])
    return None


def test_runs_the_store_cannot_serve(data, tmp_path):
    """A run the store cannot serve keeps the dense table while it fits (the same numbers) and is one
    error naming why when it does not."""
    _, train, _, _ = data
    r = cli("train", "-d", train, "-b", "32", "--algo", "bfgs", "--passes", "2", "--l2", "0.01", "--quiet",
            expect_ok=False)
    assert r.exit_code != 0
    assert "does not apply to --algo bfgs" in r.output and len(r.output.strip().splitlines()) == 1
    r = cli("train", "-d", train, "-b", "32", "--sparse_weights", "--initial_weight", "0.1", "--quiet",
            expect_ok=False)
    assert "does not apply to --initial-weight" in r.output
    a = cli("train", "-d", train, "-b", "10", "--sparse_weights", "--initial_weight", "0.1", "-p",
            tmp_path / "a", "--quiet")
    b = cli("train", "-d", train, "-b", "10", "--initial_weight", "0.1", "-p", tmp_path / "b", "--quiet")
    assert a.exit_code == b.exit_code == 0
    assert (tmp_path / "a").read_text() == (tmp_path / "b").read_text()


def test_python_model_sparse_equals_dense(data, stores):
    """streamlearn.Model with sparse_weights: the same progressive and later predictions, weights,
    readable model and model bytes as the dense table."""
    from streamlearn.online import Model
    _, train, test, _ = data
    lines, later = train.read_text().splitlines(), test.read_text().splitlines()
    out = []
    for extra in ({}, {"sparse_weights": True}):
        m = Model(loss="logistic", bits=18, algo="tg", l1=1e-4, **extra)
        out.append((m.learn_many(lines).tolist(), m.predict_many(later).tolist(), m.weights(), m.readable(),
                    m.to_bytes()))
    assert stores
    assert out[0] == out[1]


def test_the_automatic_store_says_so(data, tmp_path):
    """-b 32 without --sparse_weights takes the store with one info line (none under --quiet, none when
    asked for)."""
    _, train, _, _ = data
    note = "sparse weights: the dense table of -b 32 would take more than half the memory"
    assert note in cli("train", "-d", train, "-b", "32", "-f", tmp_path / "m").output
    assert note not in cli("train", "-d", train, "-b", "32", "--quiet").output
    assert note not in cli("train", "-d", train, "-b", "32", "--sparse_weights").output
    assert note in cli("predict", "-i", tmp_path / "m", "-d", train).output


def test_oaa_b32_predict(data, tmp_path):
    """--oaa at -b 32 (the automatic store, W rows a feature): train, then predict (the predictor's store,
    unseen features on its zero row), as at -b 18."""
    _, _, test, multi = data
    for b in ("18", "32"):
        cli("train", "-d", multi, "--oaa", "3", "-b", b, "-f", tmp_path / f"m{b}", "-p", tmp_path / f"p{b}", "--quiet")
        cli("predict", "-i", tmp_path / f"m{b}", "-d", test, "-p", tmp_path / f"q{b}", "--quiet")
    assert (tmp_path / "p32").read_text() == (tmp_path / "p18").read_text()
    assert (tmp_path / "q32").read_text() == (tmp_path / "q18").read_text()
    assert len(set((tmp_path / "q32").read_text().split())) > 1


@pytest.mark.parametrize("args", [["--algo", "gravity", "--l1", "1e-4", "--l2", "0.3", "-l", "5"],
                                  ["--algo", "gravity", "--l1", "5", "-l", "5"]],
                         ids=["contraction-sync", "gravity-sync"])
def test_whole_table_steps_at_b32(data, tmp_path, args):
    """A kernel step over every row (VW's sync of gravity's weights, once the contraction falls below 1e-9
    or the gravity passes 1e3) runs on the rows in use at -b 32 (``RunState.kernel_view``), with -b 18's
    predictions."""
    _, train, _, _ = data
    for b in ("18", "32"):
        cli("train", "-d", train, "--loss", "logistic", *args, "-b", b, "-p", tmp_path / f"p{b}", "--quiet")
    assert (tmp_path / "p32").read_text() == (tmp_path / "p18").read_text()


@pytest.mark.parametrize("args", [[], ["--oaa", "3"]], ids=["binary", "oaa"])
def test_a_test_only_run_adds_no_rows(data, stores, tmp_path, args):
    """-t with the sparse store: the features the model lacks read the zero row (as ``predict`` does), so
    the store does not grow with the test data; the predictions are the dense run's."""
    d, train, test, multi = data
    src = multi if args else train
    unseen = write_lines(tmp_path / "unseen.vw", [f"{1 + i % 3} | new{i} new{i + 1}:0.5 a" for i in range(200)])
    preds = []
    for extra in ([], ["--sparse_weights"]):
        m, p = tmp_path / f"m{len(extra)}", tmp_path / f"p{len(extra)}"
        cli("train", "-d", src, "-b", "18", *args, *extra, "-f", m, "--quiet")
        cli("train", "-d", unseen, "-t", "-i", m, "-b", "18", *args, *extra, "-p", p, "--quiet")
        preds.append(p.read_text())
    trained, tested = stores[-2], stores[-1]
    assert tested.n_rows == trained.n_rows > 0
    assert preds[0] == preds[1]


def test_refused_options_come_from_their_declarations():
    """The options the store refuses are declared so (``Option.sparse``): each one set is named by
    ``refusal`` as messages spell it, and the list holds what the store cannot serve."""
    import dataclasses
    from streamlearn import config
    refused = dict(config.SPARSE_REFUSED)
    assert {"initial_weight", "initial_constant", "random_weights", "normal_weights", "truncated_normal_weights",
            "feature_mask", "audit", "invert_hash", "audit_regressor", "objective", "objective_data", "trace",
            "csoaa", "multilabel_oaa", "csoaa_ldf", "wap_ldf", "lrq", "lrqfa", "nn", "vw_model_out"} == set(refused)
    plain = config.TrainConfig()
    spec = learners.get(plain.algo)
    assert sparse.refusal(plain, spec, config.SPARSE_REFUSED) is None
    values = {"flag": True, "int": 2, "float": 0.5, "text": "x", "multi": ("ab2",)}
    for name, flag in config.SPARSE_REFUSED:
        value = values.get(config.OPTION[name].kind, "x")
        cfg = dataclasses.replace(plain, **{name: value})
        assert sparse.refusal(cfg, spec, config.SPARSE_REFUSED) == flag == config.FLAG[name], name
