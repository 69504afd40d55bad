"""--objective and --objective-data: the reported objective equals the one recomputed in NumPy from
the saved model, data accesses count the entries read, and reporting does not change the run."""

import math

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn.cli import main
from streamlearn.io.model_file import load_model
from support.objective import LINE, examples, numpy_loss

TRAIN = "data/samples/sparse.train.vw"
TEST = "data/samples/sparse.test.vw"


def run(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return [LINE.match(l) for l in res.stderr.splitlines() if l.startswith("objective after")]


@pytest.mark.parametrize("loss,opts,penalty", [
    ("logistic", ["--algo", "fobos", "--l1", "1e-3", "-l", "0.5"], lambda w: 1e-3 * np.abs(w).sum()),
    ("squared", ["--algo", "tg", "--l1", "1e-2"], lambda w: 1e-2 * np.abs(w).sum()),
    ("hinge", ["--radius", "10", "-l", "0.5"], lambda w: 0.0),
    ("logistic", ["--l1", "1e-3", "--l2", "1e-2", "-l", "0.5"],
     lambda w: 1e-3 * np.abs(w).sum() + 1e-2 / 2 * np.dot(w, w)),
    ("logistic", ["--algo", "subgradient", "--l1", "1e-4", "-l", "0.5"], lambda w: 1e-4 * np.abs(w).sum()),
])
def test_reported_objective_equals_numpy_from_the_saved_model(tmp_path, loss, opts, penalty):
    m = tmp_path / "m.slm"
    (line,) = run("train", "-d", TRAIN, "--loss", loss, "--objective", "-f", m, "--quiet", *opts)
    model = load_model(str(m))
    avg, w = numpy_loss(loss, model, TRAIN)
    assert line.group(2) == "training examples"
    assert math.isclose(float(line.group(4)), avg, rel_tol=1e-9)
    assert math.isclose(float(line.group(3)), avg + penalty(w), rel_tol=1e-9)
    assert math.isclose(float(line.group(6)), np.abs(w).sum(), rel_tol=1e-9)
    assert int(line.group(7)) == np.count_nonzero(w)
    indptr = examples(TRAIN, 18)[0]
    assert int(line.group(8)) == indptr[-1]          # one pass: every entry read once


def test_objective_data_and_passes(tmp_path):
    m = tmp_path / "m.slm"
    lines = run("train", "-d", TRAIN, "--loss", "logistic", "--algo", "fobos", "--l1", "1e-3", "-l", "0.5",
                "--passes", "3", "--holdout-off", "--objective-data", TEST, "-f", m, "--quiet")
    assert [int(l.group(1)) for l in lines] == [1, 2, 3]
    assert all(l.group(2) == TEST for l in lines)
    entries = examples(TRAIN, 18)[0][-1]
    assert [int(l.group(8)) for l in lines] == [entries, 2 * entries, 3 * entries]
    avg, _ = numpy_loss("logistic", load_model(str(m)), TEST)
    assert math.isclose(float(lines[-1].group(4)), avg, rel_tol=1e-9)


@pytest.mark.parametrize("opts", [["--algo", "tg", "--l1", "1e-3"],
                                  ["--radius", "10", "-l", "0.5", "--batch-size", "7"],
                                  ["--algo", "rounding", "--threshold", "0.01", "--period", "50"]])
def test_objective_reporting_does_not_change_the_run(tmp_path, opts):
    base = ["train", "-d", TRAIN, "--loss", "logistic", "--passes", "2", "--quiet", *opts]
    run(*base, "-p", tmp_path / "p1", "-f", tmp_path / "m1")
    run(*base, "-p", tmp_path / "p2", "-f", tmp_path / "m2", "--objective")
    assert (tmp_path / "p1").read_text() == (tmp_path / "p2").read_text()
    (_, i1, r1), (_, i2, r2) = load_model(str(tmp_path / "m1")), load_model(str(tmp_path / "m2"))
    assert np.array_equal(i1, i2) and np.array_equal(r1, r2)


def test_objective_data_must_exist():
    res = CliRunner().invoke(main, ["train", "-d", TRAIN, "--objective-data", "/nonexistent/x.vw"])
    assert res.exit_code == 1
    assert "/nonexistent/x.vw" in res.stderr.splitlines()[-1]
