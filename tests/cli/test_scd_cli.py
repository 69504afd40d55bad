"""--algo scd through the CLI: it states the memory the data take and refuses more than
--max-memory, reports the objective per epoch (equal to NumPy from the saved model) under every
--cd-step, prints one progress line per epoch and a progress bar only on a terminal, saves models that
predict, continues from a model with -i, and refuses the options that do not apply to it."""

import io
import math
import re

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn.cli import main
from streamlearn.io.model_file import load_model
from streamlearn.run.scd_run import EpochProgress
from support.objective import LINE, numpy_loss

TRAIN = "data/samples/sparse.train.vw"


def run(*args, code=0):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == code, res.output
    return res


EPOCH = re.compile(r"scd epoch (\d+)/(\d+): objective (\S+) = average loss (\S+) \+ l1 (\S+); "
                   r"non-zero weights (\d+); (\S+) s$")


@pytest.mark.parametrize("step", ["column", "paper", "newton"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_scd_objective_model_and_predictions(tmp_path, loss, step):
    m = tmp_path / "m.slm"
    res = run("train", "-d", TRAIN, "--loss", loss, "--algo", "scd", "--l1", "1e-3", "--passes", "4",
              "--cd-step", step, "--objective", "-f", m, "--readable-model", tmp_path / "r.txt",
              "-p", tmp_path / "p")
    assert f"4 epochs, random coordinates, {step} step)" in res.stderr
    assert "scd: 2000 examples with 42085 feature entries take about" in res.stderr
    lines = [LINE.match(l) for l in res.stderr.splitlines() if l.startswith("objective after")]
    assert [int(l.group(1)) for l in lines] == [1, 2, 3, 4]
    accesses = [int(l.group(8)) for l in lines]
    assert all(b > a for a, b in zip(accesses, accesses[1:]))
    objectives = [float(l.group(3)) for l in lines]
    assert objectives[-1] < objectives[0]
    model = load_model(str(m))
    avg, w = numpy_loss(loss, model, TRAIN)
    assert math.isclose(float(lines[-1].group(4)), avg, rel_tol=1e-9)
    assert math.isclose(objectives[-1], avg + 1e-3 * np.abs(w).sum(), rel_tol=1e-9)
    # the per-epoch progress lines state the same objectives (from the scores kept in memory)
    epochs = [EPOCH.match(l) for l in res.stderr.splitlines() if l.startswith("scd epoch")]
    assert [int(e.group(1)) for e in epochs] == [1, 2, 3, 4] and {e.group(2) for e in epochs} == {"4"}
    for e, objective in zip(epochs, objectives):
        assert math.isclose(float(e.group(3)), objective, rel_tol=1e-9)
    assert int(epochs[-1].group(6)) == np.count_nonzero(w)
    assert model[0]["algo"] == "scd" and model[0]["column_names"] == ["w"]
    weights = [float(m.group(1)) for m in re.finditer(r"(?m)^\d+:(\S+)", (tmp_path / "r.txt").read_text())]
    assert sum(v != 0 for v in weights) == np.count_nonzero(w)       # the readable model's weight lines
    assert len((tmp_path / "p").read_text().splitlines()) == 2000
    run("predict", "-i", m, "-d", TRAIN, "-p", tmp_path / "q", "--quiet")
    assert (tmp_path / "p").read_text() == (tmp_path / "q").read_text()   # -p: the final model's predictions


def test_scd_progress_lines_and_no_bar_on_a_non_terminal():
    """stderr is not a terminal here (CliRunner): one line per epoch, no bar (no carriage return, no
    ETA); --quiet: nothing."""
    args = ["train", "-d", TRAIN, "--loss", "logistic", "--algo", "scd", "--l1", "1e-3", "--passes", "3"]
    res = run(*args)
    epochs = [l for l in res.stderr.splitlines() if l.startswith("scd epoch")]
    assert len(epochs) == 3 and all(EPOCH.match(l) for l in epochs)
    assert "\r" not in res.stderr and "ETA" not in res.stderr
    summary = re.search(r"^objective = (\S+)$", res.stderr, re.M).group(1)
    assert summary == f"{float(EPOCH.match(epochs[-1]).group(3)):f}"
    assert "scd epoch" not in run(*args, "--quiet").stderr


def test_progress_bar_on_a_terminal():
    """On a terminal the bar (with the time left) follows the last epoch line, is redrawn in place
    with carriage returns and erased at the end."""
    def states(out, tty):
        bar = EpochProgress(out, tty=tty)
        for epoch in range(0, 5):
            bar.update({"epoch": epoch, "epochs": 4, "objective": 0.5 - 0.1 * epoch, "loss": 0.4,
                        "regularizer": 0.01, "nonzero": 10 + epoch, "seconds": 2.0 * epoch, "accesses": 0,
                        "columns": 20, "examples": 30})
        bar.close()
        return out.getvalue()
    text = states(io.StringIO(), True)
    assert text.startswith("[" + "." * 30 + "] 0/4 epochs, 0.0 s, ETA n.a.")
    assert "\r" + " " * len("[" + "." * 30 + "] 0/4 epochs, 0.0 s, ETA n.a.") + "\r" in text
    assert "[" + "#" * 15 + "." * 15 + "] 2/4 epochs, 4.0 s, ETA 4.0 s" in text
    last = "[" + "#" * 22 + "." * 8 + "] 3/4 epochs, 6.0 s, ETA 2.0 s"
    assert text.endswith(last + "\r" + " " * len(last) + "\r" + "scd epoch 4/4: objective 0.1 = average loss "
                         "0.4 + l1 0.01; non-zero weights 14; 8.0 s\n")   # no bar after the last epoch
    lines = [l.split("\r")[-1] for l in text.split("\n")]
    assert [EPOCH.match(l).group(1) for l in lines[:4]] == ["1", "2", "3", "4"]
    plain = states(io.StringIO(), False)   # io.StringIO().isatty() is False: the default
    assert plain == states(io.StringIO(), None) and "\r" not in plain and "ETA" not in plain
    assert plain.splitlines() == lines[:4]


def test_scd_same_seed_same_model(tmp_path):
    def model(name, seed):
        run("train", "-d", TRAIN, "--loss", "logistic", "--algo", "scd", "--l1", "1e-3", "--passes", "2",
            "--random-seed", seed, "-f", tmp_path / name, "--quiet")
        return load_model(str(tmp_path / name))[1:]
    (i1, r1), (i2, r2), (i3, r3) = model("a", 5), model("b", 5), model("c", 6)
    assert np.array_equal(i1, i2) and np.array_equal(r1, r2)
    assert not (np.array_equal(i1, i3) and np.array_equal(r1, r3))


def test_scd_continues_from_a_model(tmp_path):
    common = ["--loss", "logistic", "--algo", "scd", "--l1", "1e-3", "--cd-order", "cyclic", "--quiet"]
    run("train", "-d", TRAIN, *common, "--passes", "3", "-f", tmp_path / "a")
    cont = run("train", "-d", TRAIN, "-i", tmp_path / "a", "--passes", "1", "--objective", "--quiet")
    fresh = run("train", "-d", TRAIN, *common, "--passes", "1", "--objective")
    def value(res):
        return float(next(LINE.match(l) for l in res.stderr.splitlines() if l.startswith("objective")).group(3))
    assert value(cont) < value(fresh)


def test_scd_refuses_data_over_the_memory_limit():
    res = run("train", "-d", TRAIN, "--algo", "scd", "--loss", "logistic", "--max-memory", "1M", code=1)
    assert res.stderr.splitlines()[-1].startswith("Error: --algo scd needs about ")
    assert res.stderr.splitlines()[-1].endswith(
        "MiB to hold the 2000 examples in memory, more than --max-memory 1 MiB; raise --max-memory or use "
        "an online learner (--algo smidas, tg, fobos)")
    assert "scd: 2000 examples with 42085 feature entries take about" in res.stderr


@pytest.mark.parametrize("args,message", [
    (["--algo", "scd", "--loss", "hinge"], "--algo scd works with --loss squared or logistic (got hinge)"),
    (["--algo", "scd", "-l", "0.5"], "-l/--learning-rate does not apply to --algo scd (a batch method: exact "
                                     "coordinate steps, no step size, every pass over all examples)"),
    (["--algo", "scd", "--max-memory", "lots"], "--max-memory must be a size such as 500M or 4G (got lots)"),
    (["--algo", "tg", "--cd-order", "cyclic"], "--cd-order needs --algo scd"),
    (["--algo", "tg", "--cd-step", "paper"], "--cd-step needs --algo scd"),
    (["--algo", "scd", "--adaptive"], "--adaptive does not apply to --algo scd: its coordinate steps are "
                                      "exact minimizations, with no step size, so it takes the plain "
                                      "schedule (--sgd, or no rule flag)"),
])
def test_scd_option_errors(args, message):
    res = CliRunner().invoke(main, ["train"] + args, input="1 |a b\n")
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1] == f"Error: {message}"
