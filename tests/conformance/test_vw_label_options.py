"""VW's --classweight, --loss_function expectile --expectile_q and --feature_limit (issue 27), against
VW 9.11.9: the suite's cases that use them (159, 160; 539, 540; 549, 679) and VW itself on generated
data; --feature_limit's compiled group limit against a plain transcription of VW's sort-and-unique."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import vwsuite
from support.helpers import cli, model_arrays, vw_dataset, write_lines
from support.vwsuite import average_loss, fuzzy_equal

CASES = (159, 160, 539, 540, 549, 679)


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    return vwsuite.extract(tmp_path_factory.mktemp("vwsuite"), CASES,
                           ("0001.dat", "0002.dat", "0002_25.dat", "train-sets/multiclass", "classweight",
                            "expectile_loss", "t539.", "t540.", "t549.", "t679."))


@pytest.mark.parametrize("case_id", CASES)
def test_vw_suite_case(suite, case_id, monkeypatch):
    test, cases = suite
    monkeypatch.chdir(test)
    assert vwsuite.run_suite_case(test, cases[case_id]) is None


def same_run(tmp_path, data, *args, lines: int | None = None):
    """streamlearn train and VW on the same command line: -p and the average loss agree."""
    vw = vwsuite.vw_run(tmp_path, ["-d", data, *args, "-p", "vw.p"])
    res = cli("train", "-d", data, *args, "-p", tmp_path / "sl.p")
    mine, theirs = (tmp_path / "sl.p").read_text().split(), (tmp_path / "vw.p").read_text().split()
    assert len(mine) == len(theirs) and (lines is None or len(mine) == lines)
    assert all(fuzzy_equal(a, b) for a, b in zip(mine, theirs)), args
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw.stderr)), (res.stderr, vw.stderr)
    return res, vw


# ----------------------------------------------------------------------------- --classweight

def regression_lines(n: int, seed: int) -> list[str]:
    """Real labels in [-2.5, 2.5] (classes -2..2 once truncated), short exact values."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = rng.choice([-2.5, -1.0, -0.5, 0.0, 0.75, 1.0, 2.25])
        feats = " ".join(f"f{j}:{rng.choice([0.25, 0.5, 1, 2])}" for j in rng.choice(40, 4, replace=False))
        out.append(f"{label} |a {feats} |b g{i % 5}\n")
    return out


@pytest.mark.parametrize("extra", [[], ["--sgd"], ["--passes", 3, "-c", "-k"]], ids=["default", "sgd", "holdout"])
def test_classweight_equals_vw(tmp_path, extra):
    """The class of a real label is its truncation (-0.5 is class 0, -2.5 class -2); held-out
    examples of later passes keep their weight."""
    data = write_lines(tmp_path / "d.vw", regression_lines(300, seed=1))
    same_run(tmp_path, data, "--classweight", "-2:0.5,0:3", "--classweight", "1:0.25", "-b", 12, *extra)


def test_classweight_logistic_equals_vw(tmp_path):
    data = write_lines(tmp_path / "d.vw", vw_dataset(300, seed=2))
    same_run(tmp_path, data, "--classweight", "-1:2,1:0.5", "--loss_function", "logistic", "-b", 12, lines=300)


def test_classweight_oaa_equals_vw(tmp_path):
    rng = np.random.default_rng(3)
    lines = [f"{1 + i % 4} |a f{rng.integers(20)} f{rng.integers(20)} |b g{i % 4}\n" for i in range(200)]
    data = write_lines(tmp_path / "d.vw", lines)
    same_run(tmp_path, data, "--oaa", 4, "--classweight", "2:4,3:0.1", "-b", 12, lines=200)


def test_classweight_not_when_predicting(tmp_path):
    """-t learns nothing, so VW leaves the weights alone: the same loss with or without."""
    data = write_lines(tmp_path / "d.vw", regression_lines(50, seed=2))
    cli("train", "-d", data, "-f", tmp_path / "m.slm", "--quiet")
    a = cli("train", "-d", data, "-t", "-i", tmp_path / "m.slm")
    b = cli("train", "-d", data, "-t", "-i", tmp_path / "m.slm", "--classweight", "0:5")
    assert average_loss(a.stderr) == average_loss(b.stderr)


def test_classweight_malformed(tmp_path):
    data = write_lines(tmp_path / "d.vw", regression_lines(5, seed=2))
    for value, why in (("1", "L:W pairs"), ("a:1", "integer class"), ("1:x", "integer class"),
                       ("1:-2", "finite numbers >= 0")):
        res = cli("train", "-d", data, "--classweight", value, expect_ok=False)
        assert res.exit_code == 1 and why in res.output, res.output


# ----------------------------------------------------------------------------- --loss_function expectile

@pytest.mark.parametrize("q", [0.5, 0.2])
@pytest.mark.parametrize("rule", [[], ["--sgd", "-l", 0.05], ["--adaptive", "-l", 0.1], ["--invariant"], ["--ftrl"],
                                  ["--coin"]],
                         ids=["default", "sgd", "adaptive", "invariant", "ftrl", "coin"])
def test_expectile_equals_vw(tmp_path, q, rule):
    data = write_lines(tmp_path / "d.vw", regression_lines(300, seed=5))
    same_run(tmp_path, data, "--loss_function", "expectile", "--expectile_q", q, "-b", 12, *rule, lines=300)


def test_expectile_options(tmp_path):
    data = write_lines(tmp_path / "d.vw", regression_lines(20, seed=5))
    for args, why in ((["--loss_function", "expectile"], "--loss expectile needs --expectile-q"),
                      (["--loss_function", "expectile", "--expectile_q", 0.7], "0 < Q <= 0.5 (got 0.7)"),
                      (["--expectile_q", 0.3], "--expectile-q needs --loss expectile")):
        res = cli("train", "-d", data, *args, expect_ok=False)
        assert res.exit_code == 1 and why in res.output, res.output
    # the model keeps q: -i continues with it, and the predictions of the model are the run's
    cli("train", "-d", data, "--loss_function", "expectile", "--expectile_q", 0.3, "-f", tmp_path / "m.slm",
        "--quiet")
    res = cli("train", "-d", data, "-i", tmp_path / "m.slm")
    assert "loss function = expectile (q = 0.3)" in res.stderr


# ----------------------------------------------------------------------------- --feature_limit

def limit_reference(indices, values, n):
    """VW's feature_limit for one namespace longer than n: sort by (index, value), keep the first of
    each index, stop after n."""
    out = []
    for i, v in sorted(zip(indices, values)):
        if len(out) == n:
            break
        if not out or out[-1][0] != i:
            out.append((i, v))
    return out


@settings(deadline=None, max_examples=60)
@given(feats=st.lists(st.tuples(st.integers(0, 12), st.sampled_from([0.5, 1.0, 2.0, -1.0])), min_size=1,
                      max_size=30),
       n=st.integers(0, 8), pad=st.integers(0, 3))
def test_limit_group_is_vws(feats, n, pad):
    from streamlearn.io.expand import limit_group
    idx = np.array([0] * pad + [i for i, _ in feats], np.uint32)
    val = np.array([9.0] * pad + [v for _, v in feats], np.float32)
    end = limit_group(idx, val, pad, idx.shape[0], n)
    got = list(zip(idx[pad:end].tolist(), val[pad:end].tolist()))
    assert got == limit_reference([i for i, _ in feats], [v for _, v in feats], n)
    assert (idx[:pad] == 0).all()


def limit_lines(n: int, seed: int) -> list[str]:
    """Namespaces of several sizes, repeated names (duplicate indices) and values."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a = " ".join(f"x{rng.integers(8)}:{rng.choice([0.5, 1, 2])}" for _ in range(rng.integers(1, 9)))
        b = " ".join(f"y{rng.integers(30)}" for _ in range(rng.integers(0, 6)))
        out.append(f"{rng.choice([0, 1])} |a {a} |b {b} |ab z{rng.integers(5)}\n")
    return out


@pytest.mark.parametrize("extra", [["--feature_limit", "a3"], ["--feature_limit", "2"],
                                   ["--feature_limit", "a1", "--feature_limit", "b4", "-q", "ab"],
                                   ["--feature_limit", "a2", "--ngram", "a2"],
                                   ["--feature_limit", "3", "--feature_limit", "b0"]],
                         ids=["one", "all", "two-q", "ngram", "all-then-zero"])
def test_feature_limit_equals_vw(tmp_path, extra):
    data = write_lines(tmp_path / "d.vw", limit_lines(200, seed=7))
    res, vw = same_run(tmp_path, data, "-b", 14, *extra, lines=200)
    total = [ln for ln in res.stderr.splitlines() if ln.startswith("total feature number")]
    assert total == [ln for ln in vw.stderr.splitlines() if ln.startswith("total feature number")]
    # --audit lists the same features (its names come from the plain-Python pipeline)
    theirs = vwsuite.vw_run(tmp_path, ["-d", data, "-b", 14, *extra, "--audit", "--quiet"]).stdout
    mine = cli("train", "-d", data, "-b", 14, *extra, "--audit", "--quiet").stdout
    theirs = [ln for ln in theirs.splitlines() if not ln.startswith("[")]
    assert len(mine.splitlines()) == len(theirs)
    for a, b in zip(mine.splitlines(), theirs):
        assert len(a.split()) == len(b.split()) and all(
            same_audit_token(x, y) for x, y in zip(a.split(), b.split())), (a, b)


def same_audit_token(a: str, b: str) -> bool:
    """An --audit token (name:index:value:weight@rate, or a prediction): names and indices exactly,
    numbers by VW's rule (the weights are float64 here, float32 in VW)."""
    pa, pb = a.replace("@", ":").split(":"), b.replace("@", ":").split(":")
    return len(pa) == len(pb) and all(x == y or (_number(x) and _number(y) and fuzzy_equal(x, y))
                                      for x, y in zip(pa, pb))


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_feature_limit_values(tmp_path):
    """``a:N`` is read as ``aN`` (a deliberate difference: VW reads ``:N`` as 0 and drops the
    namespace); a model keeps the limit, and -i must not change it."""
    data = write_lines(tmp_path / "d.vw", limit_lines(30, seed=1))
    a = cli("train", "-d", data, "--feature_limit", "a:2", "-p", tmp_path / "a.p")
    b = cli("train", "-d", data, "--feature_limit", "a2", "-p", tmp_path / "b.p")
    assert (tmp_path / "a.p").read_text() == (tmp_path / "b.p").read_text()
    assert average_loss(a.stderr) == average_loss(b.stderr)
    res = cli("train", "-d", data, "--feature_limit", "ab", expect_ok=False)
    assert res.exit_code == 1 and "--feature_limit ab: expected N" in res.output
    cli("train", "-d", data, "--feature_limit", "a2", "-f", tmp_path / "m.slm", "--quiet")
    assert model_arrays(tmp_path / "m.slm")[0]["feature_limit"] == ["a2"]
    cli("train", "-d", data, "-f", tmp_path / "plain.slm", "--quiet")
    assert "feature_limit" not in model_arrays(tmp_path / "plain.slm")[0]
    res = cli("train", "-d", data, "-i", tmp_path / "m.slm", "--feature_limit", "a3", expect_ok=False)
    assert res.exit_code == 1 and "conflicts with the initial model's --feature_limit a2" in res.output
