"""VW's semantics on VW command lines (issue 27): ``--l1`` and/or ``--l2`` (bare, or with VW's update rule
and rate options) run VW's own regularizer (gd's global gravity and contraction, ``--algo gravity``), and hinge and logistic take
the labels as VW takes them (hinge any real label, logistic a label y as the mixture (y + 1) / 2 of its
classes). Progressive predictions and the summary equal VW 9.11.9's (``python -m vowpalwabbit``;
skipped without it) on generated streams; the hint and the label warning are one line each.
"""

import random
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn.cli import main


def stream(seed, n, labels):
    """VW text: ``labels`` "pm1" (-1/1), "01" (0/1), "real" (in [-0.5, 1.5]) or "wide" (0/1 and a few
    2 and -3); a few importance weights and namespaces, values in [-1.5, 1.5]."""
    rnd = random.Random(seed)
    lines = []
    for _ in range(n):
        if labels == "pm1":
            y = rnd.choice(["1", "-1"])
        elif labels == "01":
            y = rnd.choice(["1", "0"])
        elif labels == "wide":
            y = rnd.choice(["1", "0", "0", "1", "2", "-3"])
        else:
            y = f"{rnd.uniform(-0.5, 1.5):.3f}"
        head = y + (" " + rnd.choice(["2", "0.5"]) if rnd.random() < 0.2 else "")
        feats = " ".join(f"f{rnd.randrange(40)}:{rnd.uniform(-1.5, 1.5):.4f}" for _ in range(rnd.randint(1, 6)))
        lines.append(f"{head} |{rnd.choice(['a', 'b'])} {feats}")
    return "\n".join(lines) + "\n"


def vw(data, args, tmp_path):
    pytest.importorskip("vowpalwabbit")
    pred = tmp_path / "vw.pred"
    proc = subprocess.run([sys.executable, "-m", "vowpalwabbit", "-d", str(data), "-p", str(pred), *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return np.array([float(v) for v in pred.read_text().split()]), proc.stderr


def ours(data, args, tmp_path):
    pred = tmp_path / "sl.pred"
    res = CliRunner().invoke(main, ["train", "-d", str(data), "-p", str(pred), *args])
    assert res.exit_code == 0, res.output
    return np.array([float(v) for v in pred.read_text().split()]), res.stderr


def summary(text, key):
    return float([line for line in text.splitlines() if line.startswith(key + " =")][0].split("=")[1].split()[0])


CASES = [
    (["--l1", "1e-3"], "real"),
    (["--l1", "1e-2"], "pm1"),
    (["--l1", "1e-3", "--l2", "1e-3"], "real"),
    (["--l1", "1e-4", "--l2", "1e-2"], "pm1"),
    (["--l1", "1e-3", "--loss_function", "logistic"], "01"),
    (["--l1", "1e-3", "--l2", "1e-3", "--loss_function", "hinge"], "pm1"),
    (["--loss_function", "hinge"], "real"),
    (["--loss_function", "hinge"], "01"),
    (["--loss_function", "logistic"], "01"),
    (["--loss_function", "logistic"], "wide"),
    (["--loss_function", "logistic", "--sgd", "-l", "0.5"], "wide"),
    (["--l1", "1e-3", "--oaa", "3"], "classes"),
    # VW's --l1/--l2 with its update rule and rate options: VW's own regularizer too (not tg or fobos)
    (["--l1", "1e-3", "--sgd", "-l", "0.1"], "real"),
    (["--l1", "1e-3", "-l", "0.3"], "real"),
    (["--l1", "1e-3", "--power_t", "0.3"], "real"),
    (["--l1", "1e-3", "--initial_t", "2"], "pm1"),
    (["--l1", "1e-3", "--invariant"], "real"),
    (["--l1", "1e-3", "--normalized"], "real"),
    (["--l1", "1e-3", "--adaptive", "-l", "0.5"], "real"),
    (["--l1", "1e-3", "--adaptive", "--normalized", "--power_t", "0.4"], "pm1"),
    (["--l1", "1e-3", "--l2", "1e-4", "--sgd", "-l", "0.1", "--loss_function", "logistic"], "pm1"),
    (["--l1", "1e-3", "--l2", "1e-4", "-l", "0.3"], "real"),
    (["--l2", "1e-3"], "real"),
    (["--l2", "1e-3", "--sgd", "-l", "0.1"], "real"),
    (["--l2", "1e-4", "--invariant", "--power_t", "0.3"], "pm1"),
]


@pytest.mark.parametrize("args,labels", CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_vw_command_lines_give_vws_numbers(tmp_path, args, labels):
    data = tmp_path / "d.vw"
    if labels == "classes":
        text = stream(7, 300, "pm1").splitlines()
        data.write_text("\n".join(f"{1 + i % 3} " + line.split(" ", 1)[1] for i, line in enumerate(text)) + "\n")
    else:
        data.write_text(stream(len(args) * 31 + len(labels), 400, labels))
    mine, my_err = ours(data, args, tmp_path)
    theirs, their_err = vw(data, args, tmp_path)
    assert len(mine) == len(theirs)
    excess = np.abs(mine - theirs) - (1e-4 * np.maximum(np.abs(mine), np.abs(theirs)) + 1e-5)
    worst = int(np.argmax(excess))
    assert excess[worst] <= 0, f"example {worst + 1}: streamlearn {mine[worst]}, VW {theirs[worst]}"
    for key in ("average loss", "weighted label sum"):
        assert summary(my_err, key) == pytest.approx(summary(their_err, key), rel=1e-4, abs=1e-6), key
    if "best constant's loss" in their_err:
        assert summary(my_err, "best constant's loss") == pytest.approx(summary(their_err, "best constant's loss"),
                                                                        rel=1e-4)


READABLE_CASES = [["--l1", "1e-3", "--sgd", "-l", "0.1"], ["--l1", "1e-3", "--invariant", "-l", "0.3"],
                  ["--l2", "1e-3"], ["--l1", "1e-4", "--l2", "1e-3", "--normalized"]]


@pytest.mark.parametrize("args", READABLE_CASES, ids=" ".join)
def test_vws_regularizer_with_rule_options_saves_vws_weights(tmp_path, args):
    """The readable model's weights (VW's raw weights and their G/N, with save_resume) equal VW's."""
    data = tmp_path / "d.vw"
    data.write_text(stream(5, 300, "real"))
    ours(data, args + ["--readable_model", str(tmp_path / "sl.txt")], tmp_path)
    vw(data, args + ["--readable_model", str(tmp_path / "vw.txt")], tmp_path)

    def weights(path):
        text = path.read_text().splitlines()
        start = next(j for j, line in enumerate(text) if line.startswith("l2_state ")) + 1   # the weights follow
        return {int(line.split(":")[0]): [float(v) for v in line.split(":")[1].split()] for line in text[start:]}
    mine, theirs = weights(tmp_path / "sl.txt"), weights(tmp_path / "vw.txt")
    assert set(mine) == set(theirs) and len(theirs) > 10
    for i, values in theirs.items():
        np.testing.assert_allclose(mine[i], values, rtol=1e-3, atol=1e-5, err_msg=str(i))


def test_l1_resolves_to_vws_own_and_ftrl_is_one_flag_away(tmp_path):
    """A bare --l1 and --l1 --l2 run gravity with a one-line hint on stderr; --algo picks another
    learner (and no hint); --l2 alone stays fobos's squared L2 norm."""
    data = tmp_path / "d.vw"
    data.write_text(stream(3, 50, "pm1"))

    def run(*args):
        res = CliRunner().invoke(main, ["train", "-d", str(data), *args])
        assert res.exit_code == 0, res.output
        learner = [line for line in res.stderr.splitlines() if line.startswith("learner = ")][0]
        return learner.split()[2], [line for line in res.stderr.splitlines() if line.startswith("hint: ")]

    for args in (["--l1", "1e-3"], ["--l1", "1e-3", "--l2", "1e-3"]):
        algo, hints = run(*args)
        assert algo == "gravity"
        assert len(hints) == 1 and "--algo ftrl" in hints[0]
    assert run("--l1", "1e-3", "--algo", "ftrl") == ("ftrl", [])
    assert run("--l1", "1e-3", "--algo", "gravity") == ("gravity", [])
    assert run("--l2", "1e-3") == ("gravity", [])
    assert run("--l1", "1e-3", "--sgd", "-l", "0.1")[0] == "gravity"
    assert run("--l2", "1e-3", "--reg", "l2sq")[0] == "fobos"


def test_unexpected_labels_are_warned_once_in_vws_words(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text("0.5 |a x:1\n0.25 |a y:1\n1 |a x:1\n")
    res = CliRunner().invoke(main, ["train", "-d", str(data), "--loss", "hinge"])
    lines = [line for line in res.stderr.splitlines() if "hinge loss function expects" in line]
    assert lines == ["streamlearn: warning: The label 0.5 is not -1 or 1 or in [0,1] as the hinge loss "
                     "function expects."]
    data.write_text("0 |a x:1\n1 |a y:1\n")             # 0/1 labels are in logistic's range [-1, 1]
    res = CliRunner().invoke(main, ["train", "-d", str(data), "--loss", "logistic"])
    assert "expects" not in res.stderr
    data.write_text("0 |a x:1\n2 |a y:1\n-3 |a y:1\n")
    res = CliRunner().invoke(main, ["train", "-d", str(data), "--loss", "logistic"])
    lines = [line for line in res.stderr.splitlines() if "expects" in line]
    assert lines == ["streamlearn: warning: The label 2 is not in the range [-1,1] as the logistic loss "
                     "function expects."]
