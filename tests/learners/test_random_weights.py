"""VW's random initial weights (issue 27): ``--random_weights``, ``--normal_weights`` and
``--truncated_normal_weights`` (sgd's options, ``streamlearn/core/initial.py``).

The compiled generators are checked against a plain transcription of VW's merand48, polar Box-Muller
and truncation (float32 arithmetic, one value at a time); the runs against VW 9.11.9: the suite's cases
491-493 (predictions) and 587-589 (average loss), VW's own readable model of the initial weights
(``-t``), and predictions under each update rule (their stride decides the normal draws' seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from support import vwsuite
from support.helpers import cli, vw_dataset, write_lines
from support.vwsuite import average_loss, fuzzy_equal

from streamlearn.core.initial import initial_weights, vw_stride_shift

CASES = (491, 492, 493, 587, 588, 589)
KINDS = ("random", "normal", "truncated_normal")
F32 = np.float32


# ----------------------------------------------------------------------------- the slow reference

def _lcg(state: int) -> tuple[int, float]:
    """VW's merand48: the next state and its float32 draw in [0, 1), as written in VW."""
    state = (0xEECE66D5DEECE66D * state + 2147483647) % (1 << 64)
    bits = ((state >> 25) & 0x7FFFFF) | (127 << 23)
    return state, float(np.array([bits], np.uint32).view(np.float32)[0] - F32(1.0))


def _box_muller(state: int) -> float:
    while True:
        state, r1 = _lcg(state)
        state, r2 = _lcg(state)
        x1, x2 = F32(2.0) * F32(r1) - F32(1.0), F32(2.0) * F32(r2) - F32(1.0)
        r = F32(x1 * x1 + x2 * x2)
        if 0.0 < r < 1.0:
            return float(x1 * F32(np.sqrt(F32(F32(-2.0) * np.log(r)) / r)))


def reference(kind: str, n: int, seed: int, shift: int) -> list[float]:
    if kind == "random":
        out, state = [], seed
        for _ in range(n):
            state, r = _lcg(state)
            out.append(float(F32(r) - F32(0.5)))
        return out
    out = [_box_muller(i << shift) for i in range(n)]
    if kind == "truncated_normal":
        mean = sum(out) / n
        bound = 2.0 * math.sqrt(sum((v - mean) ** 2 for v in out) / n)
        out = [float(F32(math.remainder(v, bound))) if abs(v) > bound else v for v in out]
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed, shift", [(0, 0), (42, 2), (7, 1), (2 ** 32 - 1, 2)])
def test_generators_equal_the_reference(kind, seed, shift):
    n = 1 << 9
    got = initial_weights(kind, n, seed, shift)
    want = reference(kind, n, seed, shift)
    # float32 log may differ from the reference's in the last bit: 1e-6 relative
    assert np.allclose(got, want, rtol=1e-6, atol=1e-7)
    if kind == "random":
        assert (got == np.array(want)).all()        # exact: 23 bits minus 1/2
        assert (got >= -0.5).all() and (got < 0.5).all()
    if kind == "truncated_normal":
        assert np.abs(got).max() <= 2.0 * np.std(initial_weights("normal", n, seed, shift)) + 1e-6


def test_strides_of_vws_rules():
    assert vw_stride_shift(True, True, True) == 2
    assert vw_stride_shift(True, False, True) == vw_stride_shift(False, True, True) == 2     # 3 slots, 2 bits
    assert vw_stride_shift(False, False, True) == 0
    assert vw_stride_shift(True, True, False) == 0      # -t: VW keeps no per-feature state


# ----------------------------------------------------------------------------- against VW

@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    return vwsuite.extract(tmp_path_factory.mktemp("vwsuite"), CASES,
                           ("0002.dat", "0002_25.dat", "_weights.", "t587.", "t588.", "t589."))


@pytest.mark.parametrize("case_id", CASES)
def test_vw_suite_case(suite, case_id, monkeypatch):
    test, cases = suite
    monkeypatch.chdir(test)
    assert vwsuite.run_suite_case(test, cases[case_id]) is None


def _weights(text: str) -> dict[int, float]:
    """index -> weight of a readable model's weight lines."""
    out = {}
    for line in text.splitlines():
        head, _, rest = line.partition(":")
        if head.isdigit() and rest:
            out[int(head)] = float(rest.split()[0])
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_initial_weights_are_vws(tmp_path, kind):
    """With -t nothing is learned: VW's readable model is its initial weights, every one of them."""
    data = write_lines(tmp_path / "d.vw", ["1 |a x y\n", "0 |b z\n"])
    flag = f"--{kind}_weights"
    vwsuite.vw_run(tmp_path, ["-d", data, flag, "--random_seed", 7, "-b", 8, "-t", "--readable_model", "vw.txt"])
    cli("train", "-d", data, flag, "--random_seed", 7, "-b", 8, "-t", "--readable_model", tmp_path / "sl.txt",
        "--quiet")
    theirs, mine = _weights((tmp_path / "vw.txt").read_text()), _weights((tmp_path / "sl.txt").read_text())
    assert len(theirs) == 256 and theirs.keys() == mine.keys()
    assert all(abs(mine[i] - theirs[i]) <= 1e-5 * max(1.0, abs(theirs[i])) for i in theirs)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rule", [[], ["--sgd"], ["--adaptive"], ["--normalized", "--invariant"]],
                         ids=["default", "sgd", "adaptive", "normalized"])
def test_predictions_equal_vw(tmp_path, kind, rule):
    data = write_lines(tmp_path / "d.vw", vw_dataset(200, seed=4))
    args = ["-d", data, f"--{kind}_weights", "--random_seed", 3, "-b", 10, *rule]
    vw = vwsuite.vw_run(tmp_path, [*args, "-p", "vw.p", "-l", 0.1])
    res = cli("train", *args, "-p", tmp_path / "sl.p", "-l", 0.1)
    mine, theirs = (tmp_path / "sl.p").read_text().split(), (tmp_path / "vw.p").read_text().split()
    assert len(mine) == len(theirs) == 200
    assert all(fuzzy_equal(a, b) for a, b in zip(mine, theirs))
    assert fuzzy_equal(average_loss(res.stderr), average_loss(vw.stderr))


def test_initial_weight_comes_first_and_seed_matters(tmp_path):
    """VW's precedence: a non-zero --initial_weight wins over the random starts; the uniform start
    follows --random_seed, the normal one does not."""
    data = write_lines(tmp_path / "d.vw", ["1 |a x\n"])

    def weights(*extra):
        cli("train", "-d", data, "-b", 6, "-t", "--readable_model", tmp_path / "r.txt", "--quiet", *extra)
        return _weights((tmp_path / "r.txt").read_text())

    assert set(weights("--random_weights", "--initial_weight", 0.25).values()) == {0.25}
    assert weights("--random_weights", "--random_seed", 1) != weights("--random_weights", "--random_seed", 2)
    assert weights("--normal_weights", "--random_seed", 1) == weights("--normal_weights", "--random_seed", 2)


def test_refused_where_they_do_not_apply(tmp_path):
    data = write_lines(tmp_path / "d.vw", vw_dataset(10))
    cli("train", "-d", data, "-b", 8, "-f", tmp_path / "m.slm", "--quiet")
    for extra, why in ((["--oaa", 3], "--random-weights does not apply to --oaa"),
                       (["-i", tmp_path / "m.slm"], "--random-weights starts a new model"),
                       (["--algo", "tg"], "--random-weights needs --algo sgd")):
        res = cli("train", "-d", data, "--random_weights", *extra, expect_ok=False)
        assert res.exit_code == 1 and why in res.output, res.output
