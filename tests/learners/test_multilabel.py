"""--multilabel_oaa K (VW's multilabel one-against-all, multilabel_oaa.cc; issue 27): the compiled loop
(``streamlearn.core.multiclass.multilabel_loop``) against the slow reference
(``support.reference.eager_multilabel``), the label-set parser, the options, -f/-i/-t, and VW 9.11.9 itself on
generated data (skipped without ``python -m vowpalwabbit``). VW's own suite's tests run in
tests/conformance/test_vw_suite.py."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.features.hashing import constant_index, feature_index
from streamlearn.io.blocks import FMT_VW, parse_block
from support.helpers import cli, dense_rows, write_lines
from support.reference import eager_multilabel
from support.vwsuite import average_loss, fuzzy_equal, vw_run

K = 5
W = 8
BITS = 18


def ml_dataset(n: int, seed: int, k: int = K) -> tuple[list[str], list]:
    """n lines of sorted label sets (now and then none) and a few features of namespace a; and the
    examples for the reference, (set, [(weight index, value)]) with the constant."""
    rng = np.random.default_rng(seed)
    lines, examples = [], []
    for _ in range(n):
        feats = rng.choice(12, size=int(rng.integers(1, 4)), replace=False)
        vals = np.round(rng.uniform(0.2, 2.0, size=feats.size), 2)
        given = sorted(int(c) for c in rng.choice(k, size=int(rng.integers(0, 3)), replace=False))
        lines.append(",".join(map(str, given)) + " |a " + " ".join(f"f{j}:{v:g}" for j, v in zip(feats, vals)) + "\n")
        index = [(feature_index("a", f"f{j}", BITS), float(np.float32(v))) for j, v in zip(feats, vals)]
        examples.append((given, index + [(constant_index(BITS), 1.0)]))
    return lines, examples


def sets(path) -> list[list[int]]:
    return [[int(c) for c in line.split()[0].split(",")] if line.strip() else []
            for line in path.read_text().splitlines()]


def test_multilabel_equals_the_reference(tmp_path):
    lines, examples = ml_dataset(150, seed=4)
    data = write_lines(tmp_path / "ml.vw", lines)
    m, p = tmp_path / "ml.slm", tmp_path / "ml.p"
    res = cli("train", "-d", data, "--multilabel_oaa", K, "-b", BITS, "-f", m, "-p", p)
    predicted, _, w, loss = eager_multilabel(examples, K, 1 << BITS)
    assert sets(p) == predicted
    _, rows = dense_rows(m, BITS)
    slots = sorted({i for _, feats in examples for i, _ in feats})
    for c in range(K):
        moved = ((np.array(slots) * W) & ((1 << BITS) - 1)) + c
        np.testing.assert_allclose(rows[moved, 0], w[c, slots], rtol=1e-9, atol=1e-12)
    assert float(average_loss(res.stderr)) == pytest.approx(loss, abs=1e-6)
    # the model predicts the same sets with -t (K from the model)
    cli("train", "-i", m, "-t", "-d", data, "-p", tmp_path / "t.p", "--quiet")
    scores = [[sum(rows[((i * W) & ((1 << BITS) - 1)) + c, 0] * v for i, v in feats) for c in range(K)]
              for _, feats in examples]
    assert sets(tmp_path / "t.p") == [[c for c in range(K) if s[c] > 0] for s in scores]


def test_label_sets_parse():
    text = b"0,3 | x\n| y\n2 'tag| z\n1,x | w\n"
    b = parse_block("s", text, 1, FMT_VW, (1 << 18) - 1, False, 0, 0, multilabels=True)
    ptr, cls, _ = b.costs
    assert ptr.tolist() == [0, 2, 2, 3, 3] and cls.tolist() == [0, 3, 2]
    assert np.isnan(b.labels[[1, 3]]).all() and (b.labels[[0, 2]] == 0).all()
    assert b.tag_list() == [b"", b"", b"tag", b""]
    assert [(line, reason) for line, reason, _ in b.fault_lines()] == [
        (4, 'label "1,x" is not a comma-separated list of classes')]


@pytest.mark.parametrize("args,message", [
    (["--multilabel_oaa", "0"], "--multilabel_oaa needs at least 1 class (got 0)"),
    (["--multilabel_oaa", "3", "--oaa", "3"], "--multilabel_oaa cannot be used with --oaa or --csoaa"),
    (["--multilabel_oaa", "3", "--scores"], "--scores does not apply to --multilabel_oaa"),
    (["--multilabel_oaa", "3", "--algo", "ftrl"], "--multilabel_oaa does not apply to --algo ftrl"),
])
def test_option_errors(args, message):
    res = cli("train", *args, expect_ok=False, input="1 |a b\n")
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1].startswith(f"Error: {message}"), res.stderr


@pytest.mark.parametrize("extra", [[], ["--loss_function", "logistic", "--probabilities"], ["--sgd"],
                                   ["--passes", "2", "-c", "-k", "--holdout_off"]],
                         ids=["default", "probabilities", "sgd", "passes"])
def test_vw_gives_the_same(tmp_path, extra):
    lines, _ = ml_dataset(120, seed=9)
    lines[3] = "4,7 " + lines[3].split(" ", 1)[1] if lines[3][0] != " " else "4,7" + lines[3]    # 7: no class
    data = write_lines(tmp_path / "d.vw", lines)
    args = ["-d", data, "--multilabel_oaa", K, *extra]
    vw = vw_run(tmp_path, [*args, "-p", "vw.p"])
    mine = cli("train", *args, "-p", tmp_path / "sl.p")
    a, b = (tmp_path / "sl.p").read_text().split(), (tmp_path / "vw.p").read_text().split()
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if ":" in x:
            assert x.split(":")[0] == y.split(":")[0] and fuzzy_equal(x.split(":")[1], y.split(":")[1]), (x, y)
        else:
            assert x == y
    assert fuzzy_equal(average_loss(mine.stderr), average_loss(vw.stderr))
