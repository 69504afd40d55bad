"""Progress history (streamlearn.run.history), train --plot, and the plots of streamlearn.plot: the history
holds the progress table's numbers, recording it does not change the run, and every plot function
draws the data it was given (read back from the Axes; no image comparisons)."""

import importlib.util
import math

import numpy as np
import pytest

from streamlearn.run import driver, session
from streamlearn.run.history import ProgressHistory, nonzero_in_force
from streamlearn.core import state as S
from support.helpers import cli, vw_dataset, write_lines

mpl = pytest.importorskip("matplotlib")
from streamlearn import plot  # noqa: E402

KEYS = ["examples", "weighted", "average_loss", "since_last", "nonzero", "accesses", "holdout"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("plot") / "train.vw"
    return write_lines(path, vw_dataset(300, seed=3, weighted=False))


def table_rows(stderr: str) -> list[tuple]:
    """(average, since, examples) of each progress row printed."""
    rows = []
    for line in stderr.splitlines():
        parts = line.split()
        if len(parts) >= 7 and parts[2].isdigit() and parts[0][0].isdigit():
            since = float(parts[1]) if parts[1][0].isdigit() else math.nan     # unknown / n.a.
            rows.append((float(parts[0]), since, int(parts[2])))
    return rows


def train(path, **options):
    cfg, model = driver.prepare_train(dict(sources=(str(path),), quiet=True, **options))
    return session.train(cfg, model, progress=True)


def test_history_is_the_progress_table(data):
    res = cli("train", "-d", data, "--algo", "tg", "--l1", "1e-3", "--loss", "logistic")
    shown = table_rows(res.stderr)
    assert [r[2] for r in shown] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    out = train(data, algo="tg", l1=1e-3, loss="logistic")
    h = out["progress"]
    assert list(h) == KEYS
    assert all(a.ndim == 1 for a in h.values())
    assert h["examples"].dtype == np.int64 and h["nonzero"].dtype == np.int64 and h["holdout"].dtype == bool
    # the rows of the table (recorded with --quiet too), then one at the end of training
    assert h["examples"].tolist() == [r[2] for r in shown] + [300]
    assert h["weighted"].tolist() == [float(r[2]) for r in shown] + [300.0]
    np.testing.assert_allclose(h["average_loss"][:-1], [r[0] for r in shown], atol=5e-7)
    np.testing.assert_allclose(h["since_last"][:-1], [r[1] for r in shown], atol=5e-6, rtol=1e-5)
    assert h["average_loss"][-1] == pytest.approx(out["counters"][S.C_SUM_LOSS] / 300)
    assert h["nonzero"][-1] == out["nonzero"]
    assert np.all(np.diff(h["accesses"]) > 0) and not h["holdout"].any()
    assert h["accesses"][-1] == int(out["counters"][S.C_FEATURES])     # one pass: every entry read once


@pytest.mark.parametrize("options", [dict(algo="tg", l1=1e-3), dict(algo="fobos", l1=1e-3, batch_size=4)])
def test_recording_does_not_change_the_run(data, options):
    a = train(data, loss="logistic", **options)
    cfg, _ = driver.prepare_train(dict(sources=(str(data),), quiet=True, loss="logistic", **options))
    b = session.train(cfg)
    assert "progress" not in b
    # the tables byte for byte: a float32 table's float64 halves (issue 30) are no float32 values (NaN patterns)
    assert a["table"].tobytes() == b["table"].tobytes() and np.array_equal(a["state"], b["state"])
    assert 0 < a["progress"]["nonzero"][-1] == b["nonzero"]


def test_nonzero_in_force_counts_after_catch_up(data):
    """tg's lazy table holds weights the gravity has not yet reached: the count is of the weights in
    force, and the table is left as it was."""
    cfg, _ = driver.prepare_train(dict(sources=(str(data),), quiet=True, algo="tg", l1=5e-2,
                                       loss="logistic"))
    out = session.train(cfg)
    from streamlearn import learners
    prm, iprm = learners.make_settings(cfg, train=True)
    before = out["table"].copy()
    assert nonzero_in_force(cfg, out["table"], prm, iprm, out["state"]) == out["nonzero"]
    assert np.array_equal(before, out["table"])


def test_holdout_rows_and_passes(data):
    res = cli("train", "-d", data, "--passes", "6", "--early-terminate", "9", "--algo", "tg", "--l1", "1e-4")
    shown = table_rows(res.stderr)
    held = [line.endswith(" h") for line in res.stderr.splitlines() if table_rows(line)]
    out = train(data, passes=6, early_terminate=9, algo="tg", l1=1e-4)
    h = out["progress"]
    assert h["examples"].tolist() == [r[2] for r in shown] + [int(out["counters"][S.C_EXAMPLES])]
    assert h["holdout"].tolist() == held + [True] and sum(held) >= 2
    np.testing.assert_allclose(h["average_loss"][:-1], [r[0] for r in shown], atol=5e-7)
    # recorded quietly, the held-out since-last sums are reset at each row as the printed table does
    np.testing.assert_allclose(h["since_last"][:-1], [r[1] for r in shown], atol=5e-6, rtol=1e-5)
    assert np.all(np.diff(h["accesses"]) > 0)
    assert np.isfinite(h["average_loss"]).all()


def test_empty_history():
    h = ProgressHistory().as_dict()
    assert list(h) == KEYS and all(a.shape == (0,) for a in h.values())


def test_unknown_since_last_is_nan():
    from streamlearn import learners
    ctr = learners.make_counters()
    hist = ProgressHistory()
    hist.record(ctr, False, 0, 0)
    hist.record(ctr, True, 0, 0)
    d = hist.as_dict()
    assert np.isnan(d["average_loss"]).all() and np.isnan(d["since_last"]).all()
    assert d["holdout"].tolist() == [False, True]


# ----------------------------------------------------------------------------- train --plot

def test_train_plot_writes_png(data, tmp_path):
    out = tmp_path / "progress.png"
    cli("train", "-d", data, "--quiet", "--plot", out)
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert [p.name for p in tmp_path.iterdir()] == ["progress.png"]     # no temporary file left


def test_train_plot_errors(data, tmp_path, monkeypatch):
    res = cli("train", "-d", data, "--plot", tmp_path / "no" / "p.png", expect_ok=False)
    assert res.exit_code == 1
    assert res.stderr == f"Error: --plot {tmp_path / 'no' / 'p.png'}: directory {tmp_path / 'no'} does not exist\n"
    res = cli("train", "-d", data, "--plot", tmp_path / "p.jpg2", expect_ok=False)
    assert res.stderr == f"Error: --plot {tmp_path / 'p.jpg2'}: the file name must end in .png, .pdf, .svg\n"
    res = cli("train", "-d", data, "--plot", tmp_path / "p.png", "-f", tmp_path / "p.png", expect_ok=False)
    assert res.stderr == f"Error: the same file {tmp_path / 'p.png'} is given for two outputs\n"
    res = cli("train", "-d", data, "--algo", "scd", "--plot", tmp_path / "p.png", expect_ok=False)
    assert res.stderr.startswith("Error: --plot does not apply to --algo scd")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    res = cli("train", "-d", data, "--plot", tmp_path / "p.png", expect_ok=False)
    assert res.stderr == "Error: --plot needs matplotlib: pip install 'streamlearn[plot]'\n"
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------- the plots

HIST = {"examples": np.array([1, 2, 4, 8]), "weighted": np.array([1.0, 2, 4, 8]),
        "average_loss": np.array([0.7, 0.6, 0.5, 0.4]), "since_last": np.array([0.7, 0.5, 0.4, 0.3]),
        "nonzero": np.array([3, 5, 6, 6]), "accesses": np.array([10, 20, 40, 80]),
        "holdout": np.zeros(4, bool)}


class Estimator:
    progress_ = HIST
    objective_ = [{"accesses": 100, "objective": 0.5}, {"accesses": 200, "objective": 0.25}]


def check_progress(ax):
    assert ax.get_xscale() == "log"
    np.testing.assert_array_equal(ax.get_lines()[0].get_xydata(), np.column_stack([HIST["examples"],
                                                                                   HIST["average_loss"]]))
    twin = ax.figure.axes[1]
    np.testing.assert_array_equal(twin.get_lines()[0].get_xydata(), np.column_stack([HIST["examples"],
                                                                                     HIST["nonzero"]]))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["average loss", "non-zero weights"]


@pytest.mark.parametrize("form", ["dict", "history", "result", "estimator"])
def test_progress_forms(form):
    if form == "history":
        arg = ProgressHistory()
        from streamlearn import learners
        for n, loss, nz in zip(HIST["examples"], HIST["average_loss"], HIST["nonzero"]):
            ctr = learners.make_counters()
            ctr[S.C_EXAMPLES] = ctr[S.C_W_LABELED] = n
            ctr[S.C_SUM_LOSS] = loss * n
            arg.record(ctr, False, nz, n * 10)
    else:
        arg = {"dict": HIST, "result": {"progress": HIST, "nonzero": 6}, "estimator": Estimator()}[form]
    check_progress(plot.progress(arg))


def test_progress_on_given_axes_and_errors():
    from matplotlib.figure import Figure
    ax = Figure().add_subplot()
    assert plot.progress(HIST, ax=ax) is ax
    with pytest.raises(TypeError):
        plot.progress([1, 2, 3])


def test_progress_of_a_run(data):
    out = train(data, algo="tg", l1=1e-3, loss="logistic")
    ax = plot.progress(out)
    assert ax.get_lines()[0].get_xydata()[:, 0].tolist() == out["progress"]["examples"].tolist()


@pytest.mark.parametrize("form", ["list", "estimator", "result"])
def test_objective_forms(form):
    rows = Estimator.objective_
    arg = {"list": rows, "estimator": Estimator(), "result": {"objectives": rows}}[form]
    ax = plot.objective(arg)
    assert ax.get_yscale() == "log"
    assert ax.get_lines()[0].get_xydata().tolist() == [[100, 0.5], [200, 0.25]]
    with pytest.raises(TypeError):
        plot.objective([{"loss": 1.0}])


def test_objective_of_a_run(data):
    out = train(data, passes=2, objective=True, holdout_off=True)
    ax = plot.objective(out["objectives"])
    xy = ax.get_lines()[0].get_xydata()
    assert xy[:, 0].tolist() == [r["accesses"] for r in out["objectives"]]
    assert xy[:, 1].tolist() == [r["objective"] for r in out["objectives"]]


def test_frontier_forms():
    ax = plot.frontier([(100, 0.9), (10, 0.8)])
    assert ax.get_xscale() == "log"
    assert ax.get_lines()[0].get_xydata().tolist() == [[10, 0.8], [100, 0.9]]
    assert ax.get_lines()[0].get_label() == "streamlearn"
    ax = plot.frontier({"tg": [(5, 0.7), (50, 0.85)], "fobos": [(7, 0.75)]},
                       baselines={"sklearn L1": [(20, 0.8), (2, 0.6)]})
    lines = ax.get_lines()
    assert [l.get_label() for l in lines] == ["tg", "fobos", "sklearn L1"]
    assert [l.get_linestyle() for l in lines] == ["-", "-", "--"]
    assert lines[2].get_xydata().tolist() == [[2, 0.6], [20, 0.8]]
    ax = plot.frontier([(1, 0.5)], baselines=[(2, 0.6)])
    assert [l.get_label() for l in ax.get_lines()] == ["streamlearn", "baseline"]


def bars(ax):
    return ([p.get_width() for p in ax.patches], [t.get_text() for t in ax.get_yticklabels()])


def test_top_weights_forms():
    scipy = pytest.importorskip("scipy.sparse")
    w = np.array([0.0, 0.5, -2.0, 0.0, 1.0, -0.1])
    expect_w = [-2.0, 1.0, 0.5, -0.1]
    assert bars(plot.top_weights(w)) == (expect_w, ["#2", "#4", "#1", "#5"])
    assert bars(plot.top_weights(w[None, :], k=2)) == (expect_w[:2], ["#2", "#4"])
    names = {2: "b", 4: "c"}
    assert bars(plot.top_weights(scipy.csr_matrix(w[None, :]), names=names)) == (expect_w, ["b", "c", "#1", "#5"])
    seq = ["f0", "f1", "f2", "f3", "f4", "f5"]
    assert bars(plot.top_weights(w, names=seq, k=3)) == (expect_w[:3], ["f2", "f4", "f1"])

    class Est:
        coef_ = scipy.csr_matrix(w[None, :])
    assert bars(plot.top_weights(Est(), k=1)) == ([-2.0], ["#2"])
    assert bars(plot.top_weights({"x": 0.1, "y": -3.0, "z": 0.0})) == ([-3.0, 0.1], ["y", "x"])
    with pytest.raises(ValueError):
        plot.top_weights(np.zeros((2, 3)))


def test_write_is_atomic(tmp_path):
    ax = plot.frontier([(1, 0.5)])
    path = tmp_path / "f.png"
    path.write_bytes(b"old")
    plot.write(ax.figure, str(path))
    assert path.read_bytes()[:4] == b"\x89PNG" and len(list(tmp_path.iterdir())) == 1
