"""VW's L-BFGS (``--bfgs``, ``learners/_lbfgs.py``): the compiled passes against the slow dense
reference (``support/reference_bfgs.py``), runs against VW 9.11.9 itself on generated data (skipped
without it), the regularizer files, and the refusals."""

import importlib.util
import re
import subprocess
import sys

import numpy as np
import pytest

from support.helpers import cli, dense_rows, parse_examples, read_predictions, vw_dataset, write_lines
from support.reference_bfgs import eager_bfgs

BITS = 10
HAVE_VW = importlib.util.find_spec("vowpalwabbit") is not None


def average_loss(text: str) -> float:
    return float(re.search(r"^average loss = (\S+)", text, re.M).group(1))


def passes_used(text: str) -> int:
    return int(re.search(r"^passes used = (\d+)", text, re.M).group(1))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("bfgs")
    lines = vw_dataset(80, seed=21)
    # squared-loss labels: real values from the same features
    rng = np.random.default_rng(4)
    real = [f"{rng.normal():.3f}" + line[line.index(" "):] for line in lines]
    return {"dir": d, "logistic": write_lines(d / "logistic.vw", lines),
            "squared": write_lines(d / "squared.vw", real)}


def ours(data, source, *opts, name="m"):
    d = data["dir"]
    model = d / f"{name}.slm"
    res = cli("train", "-d", data[source], "-b", BITS, "--holdout_off", "-f", model, "--bfgs", *opts)
    return res, dense_rows(model, BITS)[1][:, 0]


CASES = [
    ("squared", ("--loss_function", "squared", "--l2", "1", "--mem", "5", "--passes", "8"),
     dict(loss="squared", l2=1.0, m=5, passes=8)),
    ("logistic", ("--loss_function", "logistic", "--l2", "0.5", "--mem", "3", "--passes", "10",
                  "--termination", "0.0001"), dict(loss="logistic", l2=0.5, m=3, passes=10, termination=1e-4)),
    ("logistic", ("--loss_function", "logistic", "--l2", "0.2", "--hessian_on", "--passes", "9"),
     dict(loss="logistic", l2=0.2, m=15, passes=9, hessian_on=True)),
    ("squared", ("--loss_function", "squared", "--passes", "6"), dict(loss="squared", l2=0.0, passes=6)),
    ("logistic", ("--loss_function", "logistic", "--l2", "0.3", "--mem", "0", "--passes", "9"),
     dict(loss="logistic", l2=0.3, m=0, passes=9)),
]


@pytest.mark.parametrize("source,opts,ref", CASES, ids=["squared-l2", "logistic-mem3", "hessian_on", "no-l2", "conjugate"])
def test_kernels_match_the_dense_reference(data, source, opts, ref):
    res, w = ours(data, source, *opts)
    examples = parse_examples(data[source], BITS)
    want = eager_bfgs(examples, 1 << BITS, **ref)
    assert passes_used(res.stderr) == want["passes"]
    assert average_loss(res.stderr) == pytest.approx(want["average_loss"], rel=2e-5, abs=2e-6)
    # float32 (VW's) against float64 over the passes
    assert np.allclose(w, want["w"], rtol=2e-3, atol=2e-4), np.abs(w - want["w"]).max()
    assert np.any(w != 0)


def test_reference_without_l2_stops_on_curvature(data):
    """No --l2: the preconditioner is 0 from the second direction on, so the third pass ends the run."""
    res, _ = ours(data, "squared", "--passes", "20")
    assert passes_used(res.stderr) == 3
    assert "Zero or negative curvature detected." in res.stdout


def vw(tmp, *args):
    proc = subprocess.run([sys.executable, "-m", "vowpalwabbit", *map(str, args)], cwd=tmp, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


VW_CASES = [
    ("squared", ("--loss_function", "squared", "--l2", "1", "--mem", "5", "--passes", "8")),
    ("logistic", ("--loss_function", "logistic", "--l2", "0.1", "--passes", "12", "--termination", "0.0001")),
    ("logistic", ("--loss_function", "logistic", "--l2", "0.3", "--hessian_on", "--mem", "4", "--passes", "7")),
    ("logistic", ("--loss_function", "logistic", "--l2", "0.3", "--no_bias_regularization", "--passes", "9")),
    ("squared", ("--loss_function", "squared", "--l2", "0.5", "--passes", "6", "--holdout_period", "5")),
    ("logistic", ("--loss_function", "logistic", "--l2", "0.1", "--conjugate_gradient", "--passes", "6")),
]


@pytest.mark.skipif(not HAVE_VW, reason="VW 9.11.9 (vowpalwabbit) is not installed")
@pytest.mark.parametrize("source,opts", VW_CASES,
                         ids=["squared", "logistic", "hessian_on", "no_bias", "holdout", "conjugate_gradient"])
def test_same_as_vw(data, tmp_path, source, opts):
    holdout = "--holdout_period" in opts
    learner = [] if "--conjugate_gradient" in opts else ["--bfgs"]
    off = [] if holdout else ["--holdout_off"]
    theirs = vw(tmp_path, *learner, "-d", data[source], "-b", BITS, "-k", "-c", "-p", "p.txt", *opts, *off,
                "--readable_model", "vw.txt", "--predict_only_model")
    mine = cli("train", *learner, "-d", data[source], "-b", BITS, "--cache-file", tmp_path / "ours.cache",
               "-p", tmp_path / "q.txt", "-f", tmp_path / "m.slm", *opts, *off)
    text = theirs.stderr
    assert passes_used(mine.stderr) == passes_used(text)
    assert average_loss(mine.stderr) == pytest.approx(average_loss(text), rel=1e-4, abs=1e-6)
    a, b = read_predictions(tmp_path / "q.txt"), read_predictions(tmp_path / "p.txt")
    assert a.shape == b.shape and np.allclose(a, b, rtol=1e-3, atol=1e-4)
    weights = {}
    for line in (tmp_path / "vw.txt").read_text().splitlines():
        m = re.fullmatch(r"(\d+):(\S+)", line)
        if m:
            weights[int(m.group(1))] = float(m.group(2))
    w = dense_rows(tmp_path / "m.slm", BITS)[1][:, 0]
    want = np.zeros_like(w)
    want[list(weights)] = list(weights.values())
    assert np.allclose(w, want, rtol=1e-3, atol=1e-4), np.abs(w - want).max()


@pytest.mark.skipif(not HAVE_VW, reason="VW 9.11.9 (vowpalwabbit) is not installed")
def test_regularizer_files_round_trip_with_vw(data, tmp_path):
    """Our binary regularizer is read by VW, and VW's by us, with the same run after it; the text
    form is VW's."""
    common = ["-d", data["logistic"], "-b", BITS, "--loss_function", "logistic", "--l2", "0.1",
              "--holdout_off", "--termination", "0.01", "--passes", "40"]
    vw(tmp_path, "--bfgs", *common, "-k", "-c", "--predict_only_model", "--output_feature_regularizer_binary", "vw.bin",
       "--output_feature_regularizer_text", "vw.txt")
    cli("train", "--bfgs", *common, "--cache-file", tmp_path / "c1", "--output_feature_regularizer_binary",
        tmp_path / "ours.bin", "--output_feature_regularizer_text", tmp_path / "ours.txt")
    a = (tmp_path / "ours.txt").read_text().splitlines()
    b = (tmp_path / "vw.txt").read_text().splitlines()
    assert a[1:10] == b[1:10] and len(a) == len(b)      # the header after Version (VW's own version)
    va = np.array([float(x.split(":")[1]) for x in a[11:]])
    vb = np.array([float(x.split(":")[1]) for x in b[11:]])
    assert [x.split(":")[0] for x in a[11:]] == [x.split(":")[0] for x in b[11:]]
    assert np.allclose(va, vb, rtol=1e-3, atol=1e-4)
    again = ["-d", data["logistic"], "-b", BITS, "--loss_function", "logistic", "--l2", "0.1", "--holdout_off",
             "--passes", "4"]
    theirs = vw(tmp_path, "--bfgs", *again, "-k", "-c", "--predict_only_model", "--input_feature_regularizer",
                "ours.bin")
    mine = cli("train", "--bfgs", *again, "--cache-file", tmp_path / "c2", "--input_feature_regularizer",
               tmp_path / "vw.bin")
    assert average_loss(mine.stderr) == pytest.approx(average_loss(theirs.stderr), rel=1e-3, abs=1e-6)


@pytest.mark.parametrize("opts,message", [
    (("--passes", "1"), "--bfgs needs at least 2 passes"),
    (("--passes", "3", "--oaa", "3"), "--oaa does not apply to --algo bfgs"),
    (("--passes", "3", "--shuffle"), "does not combine with --bfgs"),
    (("--passes", "3", "--conjugate_gradient"), "cannot be used together with --bfgs"),
    (("--passes", "3", "--mem", "-1"), "--mem"),
    (("--passes", "3", "-l", "0.5"), "does not apply to --algo bfgs"),
    (("--passes", "3", "--loss_function", "expectile", "--expectile_q", "0.3"), "--bfgs works with --loss"),
])
def test_refusals_are_one_line(data, opts, message):
    res = cli("train", "-d", data["logistic"], "--bfgs", *opts, expect_ok=False)
    assert res.exit_code != 0
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], res.stderr


def test_input_regularizer_refuses_other_files(data, tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"not a regularizer")
    res = cli("train", "-d", data["logistic"], "--bfgs", "--passes", "2", "--input_feature_regularizer", bad,
              expect_ok=False)
    assert res.exit_code != 0 and "not a VW regularizer file" in res.stderr


def test_predictions_of_every_pass_and_model_predicts(data, tmp_path):
    res, w = ours(data, "logistic", "--loss_function", "logistic", "--l2", "1", "--passes", "4", "-p",
                  str(tmp_path / "p.txt"), name="pp")
    p = read_predictions(tmp_path / "p.txt")
    assert p.size == 80 * passes_used(res.stderr)
    out = cli("predict", "-i", data["dir"] / "pp.slm", "-d", data["logistic"], "-p", tmp_path / "q.txt", "--quiet")
    assert out.exit_code == 0
    examples = parse_examples(data["logistic"], BITS)
    want = [base + sum(w[i] * v for i, v in feats) for _, _, base, feats in examples]
    assert np.allclose(read_predictions(tmp_path / "q.txt"), want, atol=2e-6)
