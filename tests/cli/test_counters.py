"""The performance counters a model keeps (issue 27, VW's --preserve_performance_counters;
``streamlearn/run/counters.py``): with -i and the option a training run's counters go on from the
model's (streamlearn's models and VW's), without it (and with -t) they start at 0, as VW 9.11.9's do;
a run that learns nothing keeps them; the Python API and merged models carry them the same way."""

from __future__ import annotations

import re

import numpy as np
import pytest

from streamlearn.errors import ModelError
from streamlearn.io.model_file import load_model, model_bytes, parse_model
from streamlearn.mix import merge_counters
from support.helpers import cli, vw_dataset, write_lines
from support.vwsuite import vw_run

#: the summary lines both print, and the save_resume counters of a readable model
SUMMARY = ("number of examples", "number of examples per pass", "passes used", "weighted example sum",
           "weighted label sum", "average loss", "total feature number")
RESUME = ("sum_loss", "weighted_labeled_examples", "weighted_labels", "weighted_unlabeled_examples",
          "example_number", "total_features", "current_pass", "dump_interval", "sum_loss_since_last_dump",
          "sd::oec.weighted_labeled_examples")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("counters")
    lines = vw_dataset(300, seed=11, namespaces="ab")
    return d, write_lines(d / "a.vw", lines[:170]), write_lines(d / "b.vw", lines[170:])


def summary(stderr: str) -> dict:
    out = {}
    for line in stderr.splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key in SUMMARY:
            out[key] = float(value.split()[0])
    return out


def resume_block(path) -> dict:
    out = {}
    for line in open(path).read().splitlines():
        m = re.fullmatch(r"(\S+(?: \S+)?) (-?[0-9.e+-]+)", line)
        if m and m.group(1) in RESUME:
            out[m.group(1)] = float(m.group(2))
    return out


def first_rows(stderr: str) -> list[str]:
    """The example counter of each progress row."""
    out, table = [], False
    for line in stderr.splitlines():
        if line.startswith("loss     last"):
            table = True
        elif table and not line.strip():
            break
        elif table:
            out.append(line.split()[2])
    return out


def close(mine: dict, vw: dict) -> None:
    assert mine.keys() == vw.keys(), (mine, vw)
    for key in vw:
        assert abs(mine[key] - vw[key]) <= 1e-4 * max(1.0, abs(vw[key])), (key, mine[key], vw[key])


@pytest.mark.parametrize("quiet", [False, True])
@pytest.mark.parametrize("preserve", [True, False])
@pytest.mark.parametrize("first", ["streamlearn", "vw"])
def test_a_second_run_goes_on_from_the_models_counters_as_vws(files, preserve, first, quiet):
    """VW: -d a -f m1; -d b -i m1 [--preserve_performance_counters] -f m2 --readable_model r, against
    streamlearn continuing its own model (or VW's m1) the same way: the summary, the progress rows and
    the readable model's counters are VW's (--quiet: the schedule as VW's quiet run leaves it); with the
    option they count both runs."""
    d, a, b = files
    flag = (["--preserve_performance_counters"] if preserve else []) + (["--quiet"] if quiet else [])
    vw_run(d, ["-d", a, "-f", d / "vw1.model", "--quiet"])
    vw = vw_run(d, ["-d", b, "-i", d / "vw1.model", *flag, "-f", d / "vw2.model", "--readable_model", d / "vw2.txt"])
    if first == "vw":
        model = d / "vw1.model"
    else:
        model = d / "sl1.model"
        cli("train", "-d", a, "-f", model, "--quiet")
    mine = cli("train", "-d", b, "-i", model, *flag, "-f", d / "sl2.model", "--readable-model", d / "sl2.txt")
    close(summary(mine.stderr), summary(vw.stderr))
    assert ("passes used" in summary(vw.stderr)) == (preserve and not quiet)
    assert first_rows(mine.stderr) == first_rows(vw.stderr)
    close(resume_block(d / "sl2.txt"), resume_block(d / "vw2.txt"))
    counters = load_model(str(d / "sl2.model"))[0]["counters"]
    block = resume_block(d / "vw2.txt")
    assert counters["example_number"] == block["example_number"] == (300 if preserve else 130)
    assert counters["current_pass"] == block["current_pass"] == (2 if preserve else 1)
    assert abs(counters["sum_loss"] - block["sum_loss"]) < 1e-3


def test_the_models_counters_are_vws(files):
    """A model's counters after one run are those VW saves (its readable model's save_resume block),
    printing rows or --quiet."""
    d, a, _ = files
    for quiet in ([], ["--quiet"]):
        vw_run(d, ["-d", a, "--readable_model", d / "vw.txt", *quiet])
        cli("train", "-d", a, "-f", d / "one.model", *quiet)
        counters = load_model(str(d / "one.model"))[0]["counters"]
        want = resume_block(d / "vw.txt")
        mine = {k: counters[k] for k in ("sum_loss", "weighted_labeled_examples", "weighted_labels",
                                         "weighted_unlabeled_examples", "example_number", "total_features",
                                         "current_pass", "dump_interval", "sum_loss_since_last_dump")}
        mine["sd::oec.weighted_labeled_examples"] = counters["old_weighted_labeled_examples"]
        close(mine, want)


def test_testonly_and_runs_that_learn_nothing(files):
    """-t with the option counts from 0 (VW resets the counters when it does not train) and -f writes
    the model as it was; a run on no data keeps the counters; --predict-only-model writes none."""
    d, a, b = files
    cli("train", "-d", a, "-f", d / "m.model", "--quiet")
    vw_run(d, ["-d", a, "-f", d / "m.vw", "--quiet"])
    vw = vw_run(d, ["-d", b, "-t", "-i", d / "m.vw", "--preserve_performance_counters"])
    mine = cli("train", "-d", b, "-t", "-i", d / "m.model", "--preserve_performance_counters", "-f", d / "t.model")
    close(summary(mine.stderr), summary(vw.stderr))
    assert summary(mine.stderr)["number of examples"] == 130
    assert (d / "t.model").read_bytes() == (d / "m.model").read_bytes()
    empty = write_lines(d / "empty.vw", [])
    cli("train", "-d", empty, "-i", d / "m.model", "-f", d / "again.model", "--quiet")
    assert (d / "again.model").read_bytes() == (d / "m.model").read_bytes()
    cli("train", "-d", a, "-f", d / "p.model", "--predict-only-model", "--quiet")
    assert "counters" not in load_model(str(d / "p.model"))[0]
    cli("train", "-d", empty, "-f", d / "e.model", "--quiet")
    assert "counters" not in load_model(str(d / "e.model"))[0]


def test_the_python_api_carries_them_as_the_cli(files):
    """Model.from_bytes(MODEL, preserve_performance_counters=...) continued is train -i MODEL [--preserve...]
    byte for byte, with and without the option."""
    from streamlearn.online import Model
    d, a, b = files
    cli("train", "-d", a, "-f", d / "m.model", "--quiet")
    lines = b.read_text().splitlines()
    for preserve in (True, False):
        flag = ["--preserve_performance_counters"] if preserve else []
        cli("train", "-d", b, "-i", d / "m.model", *flag, "-f", d / "c.model", "--quiet")
        m = Model.from_bytes((d / "m.model").read_bytes(), preserve_performance_counters=preserve)
        m.learn_many(lines)
        assert m.to_bytes() == (d / "c.model").read_bytes(), preserve
        counters = parse_model(m.to_bytes())[0]["counters"]
        assert counters["example_number"] == (300 if preserve else 130)


def test_merged_models_sum_the_workers_counters():
    a = {"example_number": 3, "weighted_labeled_examples": 3.0, "weighted_unlabeled_examples": 0.0,
         "weighted_labels": 1.0, "sum_loss": 0.5, "total_features": 9, "sum_loss_since_last_dump": 0.5,
         "old_weighted_labeled_examples": 0.0, "dump_interval": 4.0, "current_pass": 1}
    b = dict(a, example_number=5, weighted_labeled_examples=4.5, sum_loss=1.25, dump_interval=8.0, current_pass=2)
    assert merge_counters([a]) == a
    m = merge_counters([a, b])
    assert m["example_number"] == 8 and m["weighted_labeled_examples"] == 7.5 and m["sum_loss"] == 1.75
    assert m["dump_interval"] == 8.0 and m["current_pass"] == 2


@pytest.mark.parametrize("key, value, why", [
    ("example_number", -1, "counter example_number is -1, not an integer >= 0"),
    ("example_number", 1.5, "counter example_number is 1.5, not an integer >= 0"),
    ("sum_loss", "x", 'counter sum_loss is "x", not a finite number'),
    ("weighted_labeled_examples", -2.0, "counter weighted_labeled_examples is -2.0, not >= 0"),
    ("bogus", 1, 'unknown counter "bogus"'),
])
def test_bad_counters_are_one_line(files, key, value, why):
    d, a, _ = files
    cli("train", "-d", a, "-f", d / "ok.model", "--quiet")
    header, index, rows = load_model(str(d / "ok.model"))
    header["counters"][key] = value
    with pytest.raises(ModelError) as exc:
        parse_model(model_bytes(header, index, rows), "m")
    assert str(exc.value) == f"corrupt model m: {why}"
    del header["counters"][key]
    if key != "bogus":
        with pytest.raises(ModelError, match=f"corrupt model m: counters lack {key}"):
            parse_model(model_bytes(header, index, rows), "m")
