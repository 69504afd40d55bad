"""--csoaa K (VW's cost-sensitive one-against-all, csoaa.cc; issue 27): the compiled loop
(``streamlearn.core.multiclass.csoaa_loop``) against the slow reference (``support.reference.eager_csoaa``),
the cost-label parser, the options, -f/-i/-t, and VW 9.11.9 itself on generated data (skipped without
``python -m vowpalwabbit``). VW's own suite's --csoaa tests run in tests/conformance/test_vw_suite.py."""

from __future__ import annotations

import re

import numpy as np
import pytest

from streamlearn.features.hashing import constant_index, feature_index
from streamlearn.io.blocks import FMT_VW, parse_block
from streamlearn.io.costs import NO_COST
from support.helpers import cli, dense_rows, read_predictions, write_lines
from support.reference import eager_csoaa
from support.vwsuite import average_loss, fuzzy_equal, vw_run

K = 4
W = 4
BITS = 18


def cs_dataset(n: int, seed: int, k: int = K) -> tuple[list[str], list]:
    """n lines of costs over a random subset of the classes (in random order; now and then a class
    without a cost, or no costs at all) and a few features of namespace a; and the same examples
    for the reference, (costs, [(weight index, value)]) with the constant."""
    rng = np.random.default_rng(seed)
    lines, examples = [], []
    for _ in range(n):
        feats = rng.choice(25, size=int(rng.integers(1, 5)), replace=False)
        vals = np.round(rng.uniform(0.2, 2.0, size=feats.size), 2)
        costs = []
        if rng.random() > 0.08:
            for c in rng.permutation(np.arange(1, k + 1))[:int(rng.integers(1, k + 1))]:
                costs.append((int(c), None if rng.random() < 0.1 else float(np.round(rng.uniform(0, 2), 2))))
        head = " ".join(f"{c}" if x is None else f"{c}:{x:g}" for c, x in costs)
        lines.append(head + " |a " + " ".join(f"f{j}:{v:g}" for j, v in zip(feats, vals)) + "\n")
        index = [(feature_index("a", f"f{j}", BITS), float(np.float32(v))) for j, v in zip(feats, vals)]
        examples.append((costs, index + [(constant_index(BITS), 1.0)]))
    return lines, examples


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cs")
    lines, examples = cs_dataset(200, seed=3)
    return {"dir": d, "train": write_lines(d / "train.vw", lines), "examples": examples}


def raw_lines(path) -> list[dict]:
    """-r lines of --csoaa: {class: score} per example."""
    return [{int(c): float(s) for c, s in (t.split(":") for t in line.split())}
            for line in path.read_text().splitlines()]


def test_csoaa_equals_the_reference(data):
    d = data["dir"]
    m, p, r = d / "cs.slm", d / "cs.pred", d / "cs.raw"
    res = cli("train", "-d", data["train"], "--csoaa", K, "-b", BITS, "-f", m, "-p", p, "-r", r)
    classes, scores, w, loss = eager_csoaa(data["examples"], K, 1 << BITS)
    np.testing.assert_array_equal(read_predictions(p), classes)
    raws = raw_lines(r)
    for mine, ref, (costs, _) in zip(raws, scores, data["examples"]):
        if costs:       # -r names the label's classes (VW's), the reference every class it scored
            assert sorted(mine) == sorted(ref)
            for c in mine:
                assert mine[c] == pytest.approx(ref[c], rel=1e-5, abs=1e-6)   # -r has 6 digits
    _, rows = dense_rows(m, BITS)
    slots = sorted({i for _, feats in data["examples"] for i, _ in feats})
    for c in range(K):
        moved = ((np.array(slots) * W) & ((1 << BITS) - 1)) + c
        np.testing.assert_allclose(rows[moved, 0], w[c, slots], rtol=1e-9, atol=1e-12)
    assert float(average_loss(res.stderr)) == pytest.approx(loss, rel=1e-6)


def test_model_predicts_as_trained(data):
    """-i with -t predicts with the saved weights (K from the model): the classes of least score among
    each example's classes, the same as the last pass would."""
    d = data["dir"]
    m = d / "cs2.slm"
    cli("train", "-d", data["train"], "--csoaa", K, "-b", BITS, "-f", m, "--quiet")
    cli("train", "-i", m, "-t", "-d", data["train"], "-p", d / "t.pred", "-r", d / "t.raw", "--quiet")
    _, rows = dense_rows(m, BITS)
    for cls, (costs, feats), raw in zip(read_predictions(d / "t.pred"), data["examples"], raw_lines(d / "t.raw")):
        score = {c: sum(rows[((i * W) & ((1 << BITS) - 1)) + c - 1, 0] * v for i, v in feats)
                 for c in range(1, K + 1)}
        among = [c for c, _ in costs] or list(range(1, K + 1))
        assert cls == min(among, key=lambda c: (score[c], c))
        for c in raw:
            assert raw[c] == pytest.approx(score[c], rel=1e-5, abs=1e-6)


def test_cost_labels_parse():
    text = (b"1:0.5 2 3:-1 'tag |a x\n| y\n2:1\t1:7 |a z\n1:abc 2:1 |a x\n9:1 'q|a x\n")
    b = parse_block("s", text, 1, FMT_VW, (1 << 18) - 1, False, 0, 0, cost_names=(np.zeros(0, np.int64),) * 2)
    ptr, cls, cost = b.costs
    assert ptr.tolist() == [0, 3, 3, 4, 4, 5]
    assert cls.tolist() == [1, 2, 3, 1, 9]
    assert cost.tolist() == [0.5, NO_COST, -1.0, 7.0, 1.0]      # a TAB drops what comes before it
    assert np.isnan(b.labels[[1, 3]]).all() and (b.labels[[0, 2, 4]] == 0).all()
    assert b.tag_list() == [b"tag", b"", b"", b"", b"q"]
    assert [(line, reason) for line, reason, _ in b.fault_lines()] == [(4, 'cost "1:abc" is not class:cost')]


@pytest.mark.parametrize("args,message", [
    (["--csoaa", "1"], "--csoaa needs at least 2 classes (got 1)"),
    (["--csoaa", "3", "--oaa", "3"], "--csoaa and --oaa cannot be used together"),
    (["--csoaa", "3", "--probabilities"], "--csoaa does not support --probabilities (use --oaa)"),
    (["--csoaa", "3", "--algo", "ftrl"], "--csoaa does not apply to --algo ftrl"),
    (["--csoaa", "3", "--scores"], "--scores does not apply to --csoaa"),
])
def test_option_errors(args, message):
    res = cli("train", *args, expect_ok=False, input="1:1 |a b\n")
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1].startswith(f"Error: {message}"), res.stderr


@pytest.mark.parametrize("args,lines", [
    (["--csoaa", 2], ["1:1 2:0 |a x:1e99\n", "1:0 2:1 |a y\n"]),
    (["--oaa", 2, "--named_labels", "p,q"], ["p |a x:1e99\n", "q |a y\n"]),
    (["--multilabel_oaa", 2], ["0,1 |a x:1e99\n", "1 |a y\n"]),
], ids=["csoaa", "named", "multilabel"])
def test_feature_faults_of_cost_lines_are_reported(tmp_path, args, lines):
    """A cost label (a name, a label set) is a fault to the plain label parser, which keeps one fault a
    line: the feature part of such a line is read again for its own (issue 27)."""
    f = write_lines(tmp_path / "f.vw", lines)
    res = cli("train", "-d", f, *args)
    assert 'f.vw line 1: feature value in "x:1e99" is beyond float32\'s range' in res.stderr
    assert "malformed lines = 1" in res.stderr


def test_out_of_range_classes_warn(tmp_path):
    """--indexing 0 with class K: VW takes it as class 0 (and warns); so does streamlearn, naming the line."""
    f = write_lines(tmp_path / "o.vw", ["1:0 2:1 3:1 |a x\n", "0:1 3:0 |a y\n"])
    res = cli("train", "-d", f, "--csoaa", 3, "--indexing", 0, "-p", tmp_path / "p")
    assert "o.vw line 1: a cost's class is not in 0..2; it is class 0's, as VW takes it" in res.stderr
    assert read_predictions(tmp_path / "p").tolist() == [0.0, 0.0]


@pytest.mark.parametrize("extra", [[], ["--indexing", "0"], ["--noconstant", "-q", "aa"], ["--passes", "3", "-c", "-k"]],
                         ids=["auto", "indexing0", "quadratic", "passes"])
def test_vw_gives_the_same(tmp_path, extra):
    lines, _ = cs_dataset(150, seed=11)
    if "--indexing" in extra:       # classes 0..K-1
        lines = [re.sub(r"(^|\s)4(?=[:\s])", r"\g<1>0", line.split("|")[0]) + "|" + line.split("|", 1)[1]
                 for line in lines]
    data = write_lines(tmp_path / "d.vw", lines)
    args = ["-d", data, "--csoaa", K, "-b", 18, *extra]
    vw = vw_run(tmp_path, [*args, "-p", "vw.p", "-r", "vw.r"])
    mine = cli("train", *args, "-p", tmp_path / "sl.p", "-r", tmp_path / "sl.r")
    assert read_predictions(tmp_path / "sl.p").tolist() == read_predictions(tmp_path / "vw.p").tolist()
    for a, b in zip((tmp_path / "sl.r").read_text().split(), (tmp_path / "vw.r").read_text().split()):
        ca, sa = a.split(":")
        cb, sb = b.split(":")
        assert ca == cb and fuzzy_equal(sa, sb), (a, b)
    assert fuzzy_equal(average_loss(mine.stderr), average_loss(vw.stderr))


# ----------------------------------------------------------------------------- --named_labels

NAMES = ("det", "noun", "verb")


def named_lines(n: int, seed: int, costs: bool) -> list[str]:
    rng = np.random.default_rng(seed)
    words = {"det": ["the", "a"], "noun": ["monster", "sandwich", "cat"], "verb": ["ate", "saw"]}
    out = []
    for _ in range(n):
        k = int(rng.integers(3))
        word = words[NAMES[k]][int(rng.integers(len(words[NAMES[k]])))]
        if costs:
            head = " ".join(f"{name}:{0 if j == k else 1}" for j, name in enumerate(NAMES))
        else:
            head = NAMES[k] if rng.random() > 0.1 else ""
        out.append(f"{head} | {word} w{int(rng.integers(4))}\n")
    return out


def test_named_class_labels_parse():
    from streamlearn.run.stream import Hashing
    table = Hashing(18, False, "strings", 0, names=NAMES).name_table()
    text = b"noun | x\nverb 2 'tag| y\n| z\ncat | w\n"
    b = parse_block("s", text, 1, FMT_VW, (1 << 18) - 1, False, 0, 0, class_names=table)
    assert b.labels[[0, 1, 3]].tolist() == [2.0, 3.0, 0.0] and np.isnan(b.labels[2])
    assert b.weights.tolist() == [1.0, 2.0, 1.0, 1.0]
    assert b.tag_list() == [b"", b"tag", b"", b""]
    assert [(line, reason) for line, reason, _ in b.fault_lines()] == [
        (4, 'label "cat" is not one of --named_labels (class 0, as VW)')]
    c = parse_block("s", b"det:0 verb:1 | x\nnoun: det: | y\n", 1, FMT_VW, (1 << 18) - 1, False, 0, 0,
                    cost_names=table)
    assert c.costs[0].tolist() == [0, 2, 4] and c.costs[1].tolist() == [1, 3, 2, 1]
    assert c.costs[2].tolist() == [0.0, 1.0, NO_COST, NO_COST]


@pytest.mark.parametrize("reduction", ["--oaa", "--csoaa"])
def test_named_labels_model_keeps_the_names(tmp_path, reduction):
    """-p writes names; a model saved with -f keeps them, so -i -t writes the same names."""
    data = write_lines(tmp_path / "n.vw", named_lines(60, 1, reduction == "--csoaa"))
    m = tmp_path / "n.slm"
    cli("train", "-d", data, reduction, 3, "--named_labels", ",".join(NAMES), "-f", m, "-p", tmp_path / "a.p",
        "--quiet")
    res = cli("train", "-i", m, "-t", "-d", data, "-p", tmp_path / "b.p")
    first = (tmp_path / "a.p").read_text().split()
    assert set(first) <= set(NAMES) and len(first) == 60
    assert set((tmp_path / "b.p").read_text().split()) <= set(NAMES)
    assert re.search(r"\s(det|noun|verb)\s+3\n", res.stderr)        # the progress rows name the classes


@pytest.mark.parametrize("reduction", ["--oaa", "--csoaa"])
def test_named_labels_as_vw(tmp_path, reduction):
    lines = named_lines(80, 2, reduction == "--csoaa")
    lines[5] = lines[5].replace("noun", "pronoun", 1)       # a name VW does not know: class 0, with a warning
    data = write_lines(tmp_path / "n.vw", lines)
    args = ["-d", data, reduction, 3, "--named_labels", ",".join(NAMES)]
    vw = vw_run(tmp_path, [*args, "-p", "vw.p"])
    mine = cli("train", *args, "-p", tmp_path / "sl.p")
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    assert fuzzy_equal(average_loss(mine.stderr), average_loss(vw.stderr))
    assert 'label "pronoun" is not one of --named_labels' in mine.stderr


@pytest.mark.parametrize("args,message", [
    (["--named_labels", "a,b"], "--named_labels needs --oaa K or --csoaa K"),
    (["--oaa", "2", "--named_labels", "a,a"], "--named_labels names a twice"),
    (["--oaa", "2", "--named_labels", "a,b:c"], "--named_labels 'a,b:c': names are not empty and hold no space"),
])
def test_named_labels_errors(args, message):
    res = cli("train", *args, expect_ok=False, input="a |a b\n")
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1].startswith(f"Error: {message}"), res.stderr
