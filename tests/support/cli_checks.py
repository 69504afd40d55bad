"""The CLI check every learner passes: train on a file in two halves with -i in between and in one
run, compare the models, and predict with the result."""

import re

import numpy as np
from click.testing import CliRunner

from streamlearn.cli import main
from streamlearn.io.model_file import load_model

TRAIN = "data/samples/sparse.train.vw"


def ok(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


def round_trip(tmp_path, opts, split=1100):
    """Train on the first ``split`` lines, continue with -i on the rest, and train on all in one run
    (with ``opts``); the two models must be equal (1e-9), the readable model must count the non-zero
    weights, and predict must give one line per example. Returns the one-run model (header, index,
    rows). ``split`` is a multiple of the batch sizes and periods used, so -i resumes at an edge."""
    text = open(TRAIN).read().splitlines(keepends=True)
    a, b, both = tmp_path / "a.vw", tmp_path / "b.vw", tmp_path / "both.vw"
    a.write_text("".join(text[:split]))
    b.write_text("".join(text[split:]))
    both.write_text("".join(text))
    opts = ["--loss", "logistic", "--quiet"] + [str(o) for o in opts]
    m1, m2, m3 = tmp_path / "1.slm", tmp_path / "2.slm", tmp_path / "3.slm"
    ok("train", "-d", a, "-f", m1, *opts)
    ok("train", "-d", b, "-i", m1, "-f", m2, "--quiet")
    ok("train", "-d", both, "-f", m3, "--readable-model", tmp_path / "r.txt", *opts)
    (_, i2, r2), (h3, i3, r3) = load_model(str(m2)), load_model(str(m3))
    assert np.array_equal(i2, i3) and np.allclose(r2, r3, rtol=1e-9, atol=1e-12)
    weights = [float(m.group(1)) for m in re.finditer(r"(?m)^\d+:(\S+)", (tmp_path / "r.txt").read_text())]
    assert sum(v != 0 for v in weights) == np.count_nonzero(r3[:, 0])     # the readable model's weight lines
    ok("predict", "-i", m3, "-d", TRAIN, "-p", tmp_path / "q", "--quiet")
    assert len((tmp_path / "q").read_text().splitlines()) == len(text)
    return h3, i3, r3
