"""--algo ftrl (FTRL-Proximal, McMahan et al. 2013, Algorithm 1; VW's --ftrl, vw-spec-2.md §2f):

* lazy == eager: the CLI's model (bit for bit) and -p predictions equal a dense, eager transcription
  of Algorithm 1 in VW's float32 arithmetic (every weight recomputed from its z and n before every
  prediction and every coordinate step), on
  generated data with importance weights, duplicate features, labels outside the bounds seen so far
  (squared loss: the -p prediction uses the bounds before the label), every loss;
* -i resumes exactly; --predict-only-model writes the weights only; predict serves an ftrl model;
* option checks and the objective line.
The VW conformance cases are in test_vw_cases2.py (prefix ftrl).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as hs

from support.vw32 import F, dloss
from support.helpers import cli, dense_rows, model_arrays, parse_examples, read_predictions, vw_dataset, write_lines

BITS = 10


def eager_ftrl(examples, d, loss, alpha, beta, l1, l2):
    """Algorithm 1 of McMahan et al. 2013 in VW's float32 arithmetic (ftrl.cc), transcribed densely
    and eagerly: the whole weight vector is recomputed from (z, n) before each prediction and before
    each coordinate's step. The score is summed in float32 in the example's feature order. Labels of
    logistic and hinge map to -1/+1; bounds are +-50 for logistic, else the range of the labels seen
    (the -p prediction is clamped to the bounds before the example's label, the gradient's to the
    bounds after it). Returns (-p predictions, w, z, n)."""
    alpha, beta, l1, l2 = F(alpha), F(beta), F(l1), F(l2)
    z = np.zeros(d, F)
    n = np.zeros(d, F)

    def weights():
        flag = np.where(z < 0, F(-1.0), F(1.0)).astype(F)
        fabs = z * flag
        with np.errstate(divide="ignore", invalid="ignore"):     # 1/0 where beta = n = l2 = 0 (not chosen)
            step = F(1.0) / (l2 + (beta + np.sqrt(n)) / alpha)
            return np.where(fabs <= l1, F(0.0), step * flag * (l1 - fabs)).astype(F)

    lo, hi = (-50.0, 50.0) if loss == "logistic" else (0.0, 0.0)
    shown = []
    for label, h, base, feats in examples:
        w = weights()
        raw = F(base)
        for i, v in feats:
            raw = raw + w[i] * F(v)
        raw = float(raw)
        lo0, hi0 = lo, hi
        y = label
        if y is not None and loss in ("logistic", "hinge"):
            y = 1.0 if y > 0 else -1.0
        if y is not None and loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        shown.append(min(max(raw, lo0), hi0))
        if y is None or h <= 0:
            continue
        p = min(max(raw, lo), hi)
        upd = dloss(loss, p, y) * F(h)
        for i, v in feats:
            g = upd * F(v)
            w_i = weights()[i]
            n_new = n[i] + g * g
            sigma = (np.sqrt(n_new) - np.sqrt(n[i])) / alpha
            z[i] = z[i] + (g - sigma * w_i)
            n[i] = n_new
    return np.array(shown), weights(), z, n


def train_ftrl(tmp_path, lines, *opts):
    data = write_lines(tmp_path / "train.vw", lines)
    model, preds = tmp_path / "m.slm", tmp_path / "p"
    cli("train", "-d", data, "-b", BITS, "-f", model, "-p", preds, "--quiet", "--algo", "ftrl", *opts)
    return data, model, preds


@settings(max_examples=12, deadline=None)
@given(seed=hs.integers(0, 10_000), loss=hs.sampled_from(["squared", "logistic", "hinge", "quantile"]),
       alpha=hs.sampled_from([0.05, 0.5, 2.0]), beta=hs.sampled_from([0.0, 1.0]),
       l1=hs.sampled_from([0.0, 0.3, 2.0]), l2=hs.sampled_from([0.0, 0.7]))
def test_lazy_equals_eager(tmp_path_factory, seed, loss, alpha, beta, l1, l2):
    tmp_path = tmp_path_factory.mktemp("ftrl")
    lines = vw_dataset(60, seed=seed, vocab=12)
    rng = np.random.default_rng(seed)
    # squared loss: labels outside the range seen so far, and duplicate features in an example
    lines = [(f"{rng.normal(scale=3):.3f}" + line[line.index(" "):]) if loss == "squared" else line
             for line in lines]
    lines[5] = lines[5].rstrip("\n") + " |a f1 f1:2\n"
    data, model, preds = train_ftrl(tmp_path, lines, "--loss", loss, "--ftrl-alpha", alpha, "--ftrl-beta",
                                    beta, "--l1", l1, "--l2", l2)
    examples = parse_examples(data, BITS)
    ref_shown, ref_w, ref_z, ref_n = eager_ftrl(examples, 1 << BITS, loss, alpha, beta, l1, l2)
    header, rows = dense_rows(model)
    names = header["column_names"]
    assert names == ["w", "ftrl_z", "ftrl_n"]
    assert np.count_nonzero(ref_n) > 10
    for col, ref in (("w", ref_w), ("ftrl_z", ref_z), ("ftrl_n", ref_n)):
        got = rows[:, names.index(col)]
        assert np.array_equal(got, ref.astype(np.float64)), (col, np.abs(got - ref).max())
    assert np.allclose(read_predictions(preds), ref_shown, rtol=0, atol=1.01e-6)


def test_shown_prediction_uses_the_bounds_before_the_label(tmp_path):
    """vw-spec-2 §2f: ``1 |a x:10`` then ``3 |a x:10`` shows 1 for line 2, and its loss is 0."""
    lines = ["1 |a x:10\n", "3 |a x:10\n"]
    data = write_lines(tmp_path / "t.vw", lines)
    res = cli("train", "-d", data, "--ftrl", "-p", tmp_path / "p", "--l1", "0")
    shown = read_predictions(tmp_path / "p")
    assert shown[1] == 1.0
    w = eager_ftrl(parse_examples(data, 18), 1 << 18, "squared", 0.5, 1.0, 0.0, 0.0)
    assert np.allclose(shown, w[0])
    # the second example's loss is (3 - 3)^2 = 0 with the widened bounds: average loss = first loss / 2
    assert "average loss = 0.500000" in res.output


def test_resume_and_predict_only_model(tmp_path):
    lines = vw_dataset(120, seed=4)
    write_lines(tmp_path / "a.vw", lines[:60])
    write_lines(tmp_path / "b.vw", lines[60:])
    write_lines(tmp_path / "all.vw", lines)
    opts = ["--loss", "logistic", "--algo", "ftrl", "--l1", "0.2", "--quiet"]
    cli("train", "-d", tmp_path / "all.vw", "-f", tmp_path / "one.slm", *opts)
    cli("train", "-d", tmp_path / "a.vw", "-f", tmp_path / "half.slm", *opts)
    cli("train", "-d", tmp_path / "b.vw", "-i", tmp_path / "half.slm", "-f", tmp_path / "two.slm", "--quiet")
    (_, ia, ra), (_, ib, rb) = model_arrays(tmp_path / "one.slm"), model_arrays(tmp_path / "two.slm")
    assert np.array_equal(ia, ib) and np.array_equal(ra, rb)
    cli("train", "-d", tmp_path / "all.vw", "-f", tmp_path / "w.slm", "--predict-only-model", *opts)
    header, iw, rw = model_arrays(tmp_path / "w.slm")
    assert header["column_names"] == ["w"] and rw.shape[1] == 1
    assert np.count_nonzero(rw) == rw.shape[0] == np.count_nonzero(ra[:, 0])
    # predict serves both, with the same predictions
    cli("predict", "-i", tmp_path / "one.slm", "-d", tmp_path / "b.vw", "-p", tmp_path / "p1", "--quiet")
    cli("predict", "-i", tmp_path / "w.slm", "-d", tmp_path / "b.vw", "-p", tmp_path / "p2", "--quiet")
    cli("train", "-t", "-i", tmp_path / "w.slm", "-d", tmp_path / "b.vw", "-p", tmp_path / "p3", "--quiet")
    p1, p2, p3 = (read_predictions(tmp_path / k) for k in ("p1", "p2", "p3"))
    assert np.array_equal(p1, p2) and np.count_nonzero(p1) > 0
    # -t sums the score in float32 as VW does, predict in float64
    assert np.allclose(p1, p3, rtol=1e-6, atol=1e-6)
    # continuing to train needs the z and n a predict-only model lacks
    res = cli("train", "-d", tmp_path / "b.vw", "-i", tmp_path / "w.slm", expect_ok=False)
    assert res.exit_code != 0
    assert "cannot continue --algo ftrl from" in res.output


def test_objective_line(tmp_path):
    data = write_lines(tmp_path / "t.vw", vw_dataset(50, seed=2, weighted=False))
    res = cli("train", "-d", data, "--algo", "ftrl", "--loss", "logistic", "--l1", "0.5", "--l2", "0.25",
              "--objective", "--passes", "2", "--holdout-off", "-f", tmp_path / "m.slm")
    line = next(x for x in res.output.splitlines() if x.startswith("objective after pass 2"))
    assert "(0.5 ||w||_1 + 0.25/2 ||w||_2^2) / T" in line
    _, _, rows = model_arrays(tmp_path / "m.slm")
    w = rows[:, 0]
    t = 50 * 2            # T: the examples learned over the two passes
    reg = (0.5 * np.abs(w).sum() + 0.25 / 2 * np.dot(w, w)) / t
    got = float(line.split("||w||_2^2) / T (")[1].split(")")[0])
    assert math.isclose(got, reg, rel_tol=1e-9)


@pytest.mark.parametrize("args, message", [
    (["--ftrl", "--algo", "tg"], "--ftrl means --algo ftrl; it cannot be combined with --algo tg"),
    (["--algo", "ftrl", "-l", "0.1"], "-l/--learning-rate does not apply to --algo ftrl"),
    (["--algo", "ftrl", "--adaptive"], "--adaptive does not apply to --algo ftrl"),
    (["--algo", "ftrl", "--invariant"], "--invariant does not apply to --algo ftrl"),
    (["--algo", "ftrl", "--ftrl-alpha", "0"], "--ftrl-alpha must be a finite number > 0 (got 0)"),
    (["--algo", "ftrl", "--ftrl-beta", "-1"], "--ftrl-beta must be a finite number >= 0 (got -1)"),
    (["--algo", "ftrl", "--l2", "-1"], "--l2 must be a finite number >= 0 (got -1)"),
    (["--algo", "tg", "--ftrl-alpha", "0.1"], "--ftrl-alpha needs --algo ftrl"),
    (["--algo", "ftrl", "--threshold", "0.1"], "--threshold needs --algo"),
])
def test_option_errors(tmp_path, args, message):
    data = write_lines(tmp_path / "t.vw", vw_dataset(5, seed=1))
    res = cli("train", "-d", data, *args, expect_ok=False)
    assert res.exit_code != 0
    assert message in res.output, res.output


def test_ftrl_options_select_ftrl(tmp_path):
    data = write_lines(tmp_path / "t.vw", vw_dataset(5, seed=1))
    res = cli("train", "-d", data, "--ftrl_alpha", "0.1", "--l2", "1")
    assert "learner = ftrl (FTRL-Proximal: alpha = 0.1, beta = 1, l1 = 0, l2 = 1)" in res.output


@pytest.mark.parametrize("flag,name", [("--ftrl_alpha", "--ftrl-alpha"), ("--ftrl_beta", "--ftrl-beta"),
                                       ("--l1", "--l1"), ("--l2", "--l2")])
def test_options_beyond_float32_are_refused(flag, name):
    """ftrl reads its options as float32 (VW's): a finite double beyond float32's range would become
    infinite there (a crafted model with ftrl_alpha = 1e308 divided by zero in after_load)."""
    res = cli("train", "--algo", "ftrl", flag, "1e308", "--quiet", expect_ok=False, input="1 |a b\n")
    assert res.exit_code == 1
    assert res.stderr.splitlines()[-1] == (f"Error: {name} must be at most 3.402823e+38, the largest float32: "
                                           "ftrl computes in float32 as VW does (got 1e+308)")
