"""VW's --initial_weight (``--initial-weight W``), sgd's option declared in its learner module alone
(issue 26's proof that a new option on an existing learner is one declaration): every weight of a
new model starts at W.

Checked against VW 9.11.9: the suite's cases 490 (predictions) and 586 (average loss), and VW itself
on generated data under the default rule, --sgd and --oaa; a model stores the option only when it is
used, -i continues exactly, and other learners and non-finite values are refused."""

from __future__ import annotations

import numpy as np
import pytest

from support import vwsuite
from support.helpers import cli, model_arrays, vw_dataset, write_lines
from support.vwsuite import average_loss, fuzzy_equal

CASES = (490, 586)


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    return vwsuite.extract(tmp_path_factory.mktemp("vwsuite"), CASES,
                           ("0002.dat", "0002_25.dat", "initial_weight_05", "ref/t586."))


@pytest.mark.parametrize("case_id", CASES)
def test_vw_suite_case(suite, case_id, monkeypatch):
    test, cases = suite
    assert "--initial_weight" in cases[case_id]["vw_command"]
    monkeypatch.chdir(test)
    assert vwsuite.run_case(test, cases[case_id], cli) >= 1


def exact_lines(n: int, seed: int, classes: int = 0) -> list[str]:
    """Examples whose numbers are exact in float32 and short (VW's own number parser rounds long
    decimals differently from a correctly rounding one: docs/vw.md), with importance weights."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = 1 + i % classes if classes else rng.choice([-1, 1])
        h = rng.choice([1, 1, 2, 0.5])
        feats = " ".join(f"f{j}:{rng.choice([0.25, 0.5, 1, 2])}" for j in rng.choice(60, 5, replace=False))
        out.append(f"{label} {h} |a {feats} |b g{i % 7}\n")
    return out


@pytest.mark.parametrize("extra", [[], ["--sgd"], ["--oaa", "3"]], ids=["default", "sgd", "oaa"])
def test_equals_vw(tmp_path, extra):
    data = write_lines(tmp_path / "d.vw", exact_lines(300, seed=5, classes=3 if extra[:1] == ["--oaa"] else 0))
    vw = vwsuite.vw_run(tmp_path, ["-d", data, "--initial_weight", 0.25, "-b", 12, "-p", "vw.p", *extra])
    res = cli("train", "-d", data, "--initial_weight", 0.25, "-b", 12, "-p", tmp_path / "sl.p", *extra)
    mine, theirs = (tmp_path / "sl.p").read_text().split(), (tmp_path / "vw.p").read_text().split()
    assert len(mine) == len(theirs) == 300
    assert all(fuzzy_equal(a, b) for a, b in zip(mine, theirs))
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw.stderr))


def test_stored_only_when_used_and_resumed_exactly(tmp_path):
    lines = vw_dataset(200, seed=2)
    data = write_lines(tmp_path / "all.vw", lines)
    first, second = write_lines(tmp_path / "a.vw", lines[:100]), write_lines(tmp_path / "b.vw", lines[100:])
    cli("train", "-d", data, "-b", 10, "-f", tmp_path / "plain.slm", "--quiet")
    assert "initial_weight" not in model_arrays(tmp_path / "plain.slm")[0]
    cli("train", "-d", data, "-b", 10, "--initial-weight", 0.5, "-f", tmp_path / "one.slm", "--quiet")
    header, index, rows = model_arrays(tmp_path / "one.slm")
    assert header["initial_weight"] == 0.5 and index.shape[0] == 1 << 10   # every weight starts at 0.5
    cli("train", "-d", first, "-b", 10, "--initial-weight", 0.5, "-f", tmp_path / "half.slm", "--quiet")
    cli("train", "-d", second, "-i", tmp_path / "half.slm", "-f", tmp_path / "two.slm", "--quiet")
    h2, i2, r2 = model_arrays(tmp_path / "two.slm")
    assert h2["initial_weight"] == 0.5 and (i2 == index).all() and (r2 == rows).all()


def test_refused_where_it_does_not_apply(tmp_path):
    data = write_lines(tmp_path / "d.vw", vw_dataset(10))
    res = cli("train", "-d", data, "--algo", "tg", "--initial-weight", 0.5, expect_ok=False)
    assert res.exit_code == 1 and res.output.strip().endswith("--initial-weight needs --algo sgd")
    res = cli("train", "-d", data, "--initial-weight", "inf", expect_ok=False)
    assert res.output.strip().endswith("--initial-weight must be a finite number (got inf)")
