"""Issue 29's command-line habits: data files as positional arguments (as VW takes them), a readable
model's ``options:`` line that replays as a command line, no ``-0`` in outputs, and the per-example
feature cap as an option (--max-example-features) whose error names it."""

import shlex

import numpy as np
import pytest

from streamlearn import cli as cli_module, config, learners
from streamlearn.io import expand
from streamlearn.io.writers import format_class_values, format_predictions, write_readable_model
from streamlearn.run.model_io import options_string
from support.helpers import cli

TRAIN = "data/samples/sparse.train.vw"
TEST = "data/samples/sparse.test.vw"


# ----------------------------------------------------------------------------- positional data files

def test_positional_data_files_are_the_same_as_d(tmp_path):
    cli("train", "-d", TRAIN, "--quiet", "-f", tmp_path / "a.slm", "--passes", "2", "--cache-file", tmp_path / "a.c")
    cli("train", TRAIN, "--quiet", "-f", tmp_path / "b.slm", "--passes", "2", "--cache-file", tmp_path / "b.c")
    assert (tmp_path / "a.slm").read_bytes() == (tmp_path / "b.slm").read_bytes()
    # two files: -d first, then the positional ones, in order
    cli("train", "-d", TRAIN, "-d", TEST, "--quiet", "-f", tmp_path / "c.slm")
    cli("train", "-d", TRAIN, TEST, "--quiet", "-f", tmp_path / "d.slm")
    assert (tmp_path / "c.slm").read_bytes() == (tmp_path / "d.slm").read_bytes()
    assert (tmp_path / "a.slm").read_bytes() != (tmp_path / "c.slm").read_bytes()
    by_d = cli("predict", "-i", tmp_path / "a.slm", "-d", TEST, "--quiet").stdout
    positional = cli("predict", TEST, "-i", tmp_path / "a.slm", "--quiet").stdout
    assert by_d == positional and len(by_d.splitlines()) == 500
    r = cli("train", tmp_path / "missing.vw", "--quiet", expect_ok=False)
    assert r.exit_code == 1 and "missing.vw" in r.output


# ----------------------------------------------------------------------------- the options: line replays

def _parse(args) -> tuple[dict, object]:
    """(the options named, the configuration) of a train command line, as the CLI parses it."""
    ctx = cli_module.train.make_context("train", ["-d", TRAIN] + list(args))
    named = cli_module._given(ctx, ctx.params)
    named.pop("sources", None)
    named.pop("data_files", None)
    return named, config.train_config({**named, "sources": (TRAIN,)})


def _options_line(path) -> str:
    line = next(l for l in open(path) if l.startswith("options:"))
    return line[len("options:"):].strip()


CONFIGURATIONS = [
    ("--algo", "fobos", "--l1", "0.123456789"),
    ("--algo", "tg", "--l1", "1e-4", "--period", "3"),
    ("--algo", "l1ball", "--radius", "2.5", "--projection", "sort"),
    ("--algo", "eg", "--radius", "3", "--batch-size", "4"),
    ("--algo", "rounding", "--threshold", "1e-3", "--period", "5"),
    ("--algo", "smidas", "--l1", "1.5e-5"),
    ("--algo", "pegasos", "--l2", "0.01"),
    ("--algo", "subgradient", "--l1", "3e-4"),
    ("--loss", "logistic", "--power_t", "0.3", "-q", "ab", "-l", "0.7"),
    ("--ftrl", "--ftrl-alpha", "0.2"),
    ("--coin",),
]


@pytest.mark.parametrize("args", CONFIGURATIONS, ids=lambda a: " ".join(a))
def test_readable_models_options_line_replays_as_a_command_line(tmp_path, args):
    """The line parses (no '--radius None'), names the learner, and gives every option it names the
    value of the run that wrote it, and every own option of a learner VW lacks its value."""
    cli("train", "-d", TRAIN, "--quiet", "--readable-model", tmp_path / "r.txt", *args)
    line = _options_line(tmp_path / "r.txt")
    assert "None" not in line and "-0 " not in line + " "
    named, replayed = _parse(shlex.split(line))
    _, original = _parse(args)
    assert replayed.algo == original.algo
    for name in named:
        if name in config.LEARNER_FLAGS:        # --ftrl, --coin: spellings of --algo, compared above
            continue
        a, b = getattr(original, name), getattr(replayed, name)
        assert a == b or (isinstance(a, float) and np.float32(a) == np.float32(b)), (name, a, b, line)
    spec = learners.get(original.algo)
    if "--algo" in line:        # a learner VW lacks: its own options travel in full
        for name in spec.options:
            assert getattr(replayed, name) == getattr(original, name), (name, line)


def test_options_string_omits_none_and_false_and_keeps_numbers_exact():
    text = options_string({"radius": None, "l1": 0.123456789, "cumulative_penalty": True, "lrqdropout": False,
                           "l2": -0.0, "period": 3, "threshold": 5.0, "lam": 1e-4})
    assert text == "--l1 0.123456789 --cumulative-penalty --l2 0 --period 3 --threshold 5 --lambda 0.0001"


# ----------------------------------------------------------------------------- no -0 in outputs

def test_negative_zero_prints_as_zero(tmp_path):
    assert format_predictions(np.array([-0.0, -1e-9, 1e-9, -0.25, 2.0])) == ["0", "0", "0.000000", "-0.250000", "2"]
    assert format_class_values(np.array([[-0.0, 0.5]]), 1) == ["1:0 2:0.5"]
    path = tmp_path / "r.txt"
    write_readable_model(str(path), ["header"], np.array([3, 7]), np.array([[-0.0, -0.0], [-1.5, 0.0]]))
    assert path.read_text().splitlines() == ["header", "3:0.0 0.0", "7:-1.5 0.0"]


# ----------------------------------------------------------------------------- the feature cap

def test_feature_cap_is_an_option_and_its_error_names_it(tmp_path):
    r = cli("train", "-d", TRAIN, "--quiet", "-q", "::", "--max-example-features", "50", expect_ok=False)
    assert r.exit_code == 1
    assert "line 1: " in r.output and "more than 50 features" in r.output
    assert "--max-example-features" in r.output
    # the same data under a cap it fits: every example of the sample has fewer than 40^2 + 40 features
    cli("train", "-d", TRAIN, "--quiet", "-q", "::", "--max-example-features", "2000", "-f", tmp_path / "a.slm")
    cli("train", "-d", TRAIN, "--quiet", "-q", "::", "-f", tmp_path / "b.slm")   # the default
    assert (tmp_path / "a.slm").read_bytes() == (tmp_path / "b.slm").read_bytes()
    r = cli("train", "-d", TRAIN, "--quiet", "--max-example-features", "0", expect_ok=False)
    assert r.exit_code == 1 and "--max-example-features must be at least 1" in r.output


def test_feature_cap_default_follows_the_memory(monkeypatch):
    import os
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": (64 << 30) // 4096}
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    assert expand.default_example_features() == (64 << 30) // 8 // 32 == 268_435_456
    pages["SC_PHYS_PAGES"] = (1 << 30) // 4096          # 1 GiB: 4M features, above the floor
    assert expand.default_example_features() == 4_194_304
    pages["SC_PHYS_PAGES"] = (128 << 20) // 4096        # small: the floor
    assert expand.default_example_features() == expand.MIN_EXAMPLE_FEATURES
    def broken(name):
        raise ValueError(name)
    monkeypatch.setattr(os, "sysconf", broken)
    assert expand.default_example_features() == expand.MIN_EXAMPLE_FEATURES
    e = expand.Expander(1023, np.ones(256, np.uint8), np.ones(256, np.uint8), np.zeros(256, np.int64),
                        np.zeros(256, np.int64))
    assert e.limit == expand.MIN_EXAMPLE_FEATURES and not e.limit_given
    msg = str(expand.ExpansionError("x.vw", 40, 1000, False))
    assert "x.vw line 40" in msg and "--max-example-features 1000, the default from the memory" in msg
