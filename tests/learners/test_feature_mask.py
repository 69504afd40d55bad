"""VW's --feature_mask (issue 27; sgd's option, ``streamlearn/run/feature_mask.py``): only the weights
that are non-zero are learned; a new model starts at the mask model's weights.

Against VW 9.11.9: a mask trained on part of the data by each program (the same weights, VW's numbers),
then a run over all of it with the mask: the predictions and the average loss agree, under the default
rule and --sgd. The block filter against a plain loop over the examples."""

from __future__ import annotations

import numpy as np
import pytest

from support import vwsuite
from support.helpers import cli, model_arrays, vw_dataset, write_lines
from support.vwsuite import average_loss, fuzzy_equal

from streamlearn.run.feature_mask import masked


def test_filter_is_the_plain_loop():
    rng = np.random.default_rng(0)
    table = np.zeros((64, 3))
    table[rng.choice(64, 20, replace=False), 0] = rng.normal(size=20)
    counts = rng.integers(0, 6, size=30)
    indptr = np.concatenate(([0], np.cumsum(counts)))
    idx = rng.integers(0, 64, size=indptr[-1]).astype(np.uint32)
    val = rng.normal(size=indptr[-1]).astype(np.float32)
    rest = (np.ones(30), np.ones(30), np.zeros(30), counts, np.empty(30))
    got = masked((indptr, idx, val) + rest, table)
    assert got[3:] == rest
    for e in range(30):
        want = [(int(i), float(v)) for i, v in zip(idx[indptr[e]:indptr[e + 1]], val[indptr[e]:indptr[e + 1]])
                if table[i, 0] != 0.0]
        have = list(zip(got[1][got[0][e]:got[0][e + 1]].tolist(), got[2][got[0][e]:got[0][e + 1]].tolist()))
        assert [(i, pytest.approx(v)) for i, v in want] == have


@pytest.mark.parametrize("rule", [[], ["--sgd", "-l", 0.5]], ids=["default", "sgd"])
def test_equals_vw(tmp_path, rule):
    lines = vw_dataset(300, seed=6)
    part, data = write_lines(tmp_path / "part.vw", lines[:60]), write_lines(tmp_path / "all.vw", lines)
    vwsuite.vw_run(tmp_path, ["-d", part, "-b", 12, *rule, "-f", "vw.mask", "--predict_only_model"])
    cli("train", "-d", part, "-b", 12, *rule, "-f", tmp_path / "sl.mask", "--predict_only_model", "--quiet")
    vw = vwsuite.vw_run(tmp_path, ["-d", data, "-b", 12, *rule, "--feature_mask", "vw.mask", "-p", "vw.p"])
    res = cli("train", "-d", data, "-b", 12, *rule, "--feature_mask", tmp_path / "sl.mask", "-p", tmp_path / "sl.p",
              "-f", tmp_path / "out.slm")
    mine, theirs = (tmp_path / "sl.p").read_text().split(), (tmp_path / "vw.p").read_text().split()
    assert len(mine) == len(theirs) == 300
    assert all(fuzzy_equal(a, b) for a, b in zip(mine, theirs))
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw.stderr))
    # the weights learned are exactly the mask's non-zero ones
    _, mask_index, _ = model_arrays(tmp_path / "sl.mask")
    _, out_index, out_rows = model_arrays(tmp_path / "out.slm")
    assert set(out_index[out_rows[:, 0] != 0].tolist()) == set(mask_index.tolist())
    plain = cli("train", "-d", data, "-b", 12, *rule)
    assert average_loss(plain.stderr) != average_loss(res.stderr)


def test_with_initial_model_the_models_weights_are_learned(tmp_path):
    """With -i the -i model's non-zero weights are the ones learned (VW zeroes the mask's weights and
    loads the model): a model trained on part of the data masks the rest's new features."""
    lines = vw_dataset(200, seed=8)
    part, data = write_lines(tmp_path / "part.vw", lines[:40]), write_lines(tmp_path / "all.vw", lines)
    cli("train", "-d", part, "-b", 12, "-f", tmp_path / "part.slm", "--quiet")
    cli("train", "-d", data, "-b", 12, "-f", tmp_path / "big.slm", "--quiet")
    cli("train", "-d", data, "-b", 12, "-i", tmp_path / "part.slm", "--feature_mask", tmp_path / "big.slm",
        "-f", tmp_path / "out.slm", "--quiet")
    _, part_index, _ = model_arrays(tmp_path / "part.slm")
    _, out_index, out_rows = model_arrays(tmp_path / "out.slm")
    assert set(out_index[out_rows[:, 0] != 0].tolist()) == set(part_index.tolist())
    _, big_index, _ = model_arrays(tmp_path / "big.slm")
    assert len(big_index) > len(part_index)


def test_refused_where_it_does_not_apply(tmp_path):
    data = write_lines(tmp_path / "d.vw", vw_dataset(10))
    cli("train", "-d", data, "-b", 10, "-f", tmp_path / "m.slm", "--quiet")
    for extra, why in ((["--oaa", 3], "--feature-mask does not apply to --oaa"),
                       (["--algo", "tg"], "--feature-mask needs --algo sgd"),
                       (["-b", 12], "has -b 10; this run has -b 12")):
        res = cli("train", "-d", data, "--feature_mask", tmp_path / "m.slm", *extra, expect_ok=False)
        assert res.exit_code == 1 and why in res.output, res.output
    res = cli("train", "-d", data, "--feature_mask", tmp_path / "missing.slm", expect_ok=False)
    assert res.exit_code == 1 and "missing.slm" in res.output


def test_predicting_with_a_mask_is_vws(tmp_path):
    """-t with a mask and no -i predicts with the mask's weights and its label bounds (VW reads the
    mask's header: its min and max label)."""
    lines = vw_dataset(100, seed=9)
    part, data = write_lines(tmp_path / "part.vw", lines[:50]), write_lines(tmp_path / "all.vw", lines)
    args = ["-b", 11, "--sgd", "-l", 0.5]
    vwsuite.vw_run(tmp_path, ["-d", part, *args, "-f", "vw.mask", "--predict_only_model"])
    cli("train", "-d", part, *args, "-f", tmp_path / "sl.mask", "--predict_only_model", "--quiet")
    vw = vwsuite.vw_run(tmp_path, ["-d", data, *args, "--feature_mask", "vw.mask", "-t", "-p", "vw.p"])
    res = cli("train", "-d", data, *args, "--feature_mask", tmp_path / "sl.mask", "-t", "-p", tmp_path / "sl.p")
    mine, theirs = (tmp_path / "sl.p").read_text().split(), (tmp_path / "vw.p").read_text().split()
    assert len(mine) == len(theirs) == 100 and all(fuzzy_equal(a, b) for a, b in zip(mine, theirs))
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw.stderr))
    assert len({float(p) for p in mine}) > 10       # not clamped to a point
