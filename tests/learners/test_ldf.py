"""--csoaa_ldf m|mc and --wap_ldf (VW's label-dependent features, csoaa_ldf.cc; issue 27): the multi-line
reader (``streamlearn.io.ldf``), the compiled loop (``streamlearn.core.multiclass.ldf_loop``) against the slow
reference (``support.reference.eager_ldf``), the outputs, bad input, and VW 9.11.9 itself on generated data
(skipped without ``python -m vowpalwabbit``). VW's own suite's ldf tests run in tests/conformance/test_vw_suite.py."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.features.hashing import constant_index, feature_index
from streamlearn.io.blocks import FMT_VW, parse_block
from streamlearn.io.costs import NO_COST, SHARED_CLASS
from streamlearn.io.ldf import LdfGroups, merge_shared
from support.helpers import cli, dense_rows, write_lines
from support.reference import eager_ldf
from support.vwsuite import average_loss, fuzzy_equal, same_tokens, vw_run

BITS = 18


def ldf_dataset(n: int, seed: int, shared: bool = True, tests: bool = False) -> tuple[list[str], list]:
    """n multi-line examples of 2-4 actions (classes 1.. in order, costs with 2 decimals; a shared line
    of namespace u now and then; with ``tests`` now and then an example without costs), each ended by a
    blank line; and the same examples for the reference: per action (class, cost or None, [(weight
    index, value)]) with the action's constant, then the shared features."""
    rng = np.random.default_rng(seed)
    lines, groups = [], []
    for _ in range(n):
        common = []
        if shared and rng.random() < 0.7:
            words = rng.choice(8, size=int(rng.integers(1, 4)), replace=False)
            lines.append("shared |u " + " ".join(f"s{j}" for j in words) + "\n")
            common = [(feature_index("u", f"s{j}", BITS), 1.0) for j in words]
        test = tests and rng.random() < 0.15
        actions = []
        for c in range(1, int(rng.integers(2, 5)) + 1):
            feats = rng.choice(12, size=int(rng.integers(1, 4)), replace=False)
            vals = np.round(rng.uniform(0.2, 2.0, size=feats.size), 2)
            cost = None if test else float(np.round(rng.uniform(0, 2), 2))
            head = f"{c}" if cost is None else f"{c}:{cost:g}"
            lines.append(head + " |a " + " ".join(f"f{j}:{v:g}" for j, v in zip(feats, vals)) + "\n")
            index = [(feature_index("a", f"f{j}", BITS), float(np.float32(v))) for j, v in zip(feats, vals)]
            actions.append((c, cost, index + [(constant_index(BITS), 1.0)] + common))
        lines.append("\n")
        groups.append(actions)
    return lines, groups


def prediction_groups(path) -> list[list[str]]:
    """The -p lines of a multi-line run, one list per example (VW ends each with an empty line)."""
    out, cur = [], []
    for line in path.read_text().split("\n")[:-1]:
        if line == "":
            out.append(cur)
            cur = []
        else:
            cur.append(line)
    return out


@pytest.mark.parametrize("kind,flags", [("m", ["--csoaa_ldf", "m"]), ("mc", ["--csoaa_ldf", "mc"]),
                                        ("wap", ["--wap_ldf", "m"])])
def test_ldf_equals_the_reference(tmp_path, kind, flags):
    lines, groups = ldf_dataset(120, seed=5)
    data = write_lines(tmp_path / "d.ldf", lines)
    m, p = tmp_path / "m.slm", tmp_path / "p"
    res = cli("train", "-d", data, *flags, "-b", BITS, "-f", m, "-p", p)
    classes, scores, w, loss = eager_ldf(groups, 1 << BITS, kind)
    got = prediction_groups(p)
    assert len(got) == len(groups)
    for lines_of, best, actions in zip(got, classes, groups):
        assert lines_of == [str(best) if c == best else "0" for c, _, _ in actions]
    _, rows = dense_rows(m, BITS)
    np.testing.assert_allclose(rows[:, 0], w, rtol=1e-5, atol=1e-7)
    assert float(average_loss(res.stderr)) == pytest.approx(loss, rel=1e-6, abs=1e-6)


def test_rank_and_probabilities_are_the_scores(tmp_path):
    """--csoaa_rank writes the actions by increasing raw score, --probabilities each action's
    normalized 1 / (1 + exp(score)): both from the reference's raw scores."""
    lines, groups = ldf_dataset(40, seed=8)
    data = write_lines(tmp_path / "d.ldf", lines)
    cli("train", "-d", data, "--csoaa_ldf", "m", "--csoaa_rank", "-p", tmp_path / "r", "--quiet")
    res = cli("train", "-d", data, "--csoaa_ldf", "m", "--probabilities", "-p", tmp_path / "q", "--quiet")
    assert "--probabilities should be used only with --loss_function=logistic, currently using: squared" in res.stderr
    assert "--probabilities should be used with --csoaa_ldf=mc" in res.stderr
    _, scores, _, _ = eager_ldf(groups, 1 << BITS, "m")
    for (line,), raw, actions in zip(prediction_groups(tmp_path / "r"), scores, groups):
        pairs = [t.split(":") for t in line.split(",")]
        assert [int(c) for c, _ in pairs] == [actions[k][0] for k in sorted(range(len(raw)),
                                                                           key=lambda k: (np.float32(raw[k]), k))]
        for c, s in pairs:
            assert float(s) == pytest.approx(raw[int(c) - 1], rel=1e-4, abs=1e-5)
    for probs, raw in zip(prediction_groups(tmp_path / "q"), scores):
        want = 1.0 / (1.0 + np.exp(np.array(raw)))
        np.testing.assert_allclose([float(x) for x in probs], want / want.sum(), atol=2e-6)


def test_groups_across_blocks_and_sources(tmp_path):
    """The reader's grouping does not depend on where the blocks end (a tiny --block-size cuts every
    example) nor on the parse threads, and a source's end ends its last example."""
    lines, _ = ldf_dataset(30, seed=2)
    a = write_lines(tmp_path / "a.ldf", lines)
    b = write_lines(tmp_path / "b.ldf", lines[:-1])     # no blank line at its end
    runs = [cli("train", "-d", a, "-d", b, "--csoaa_ldf", "m", "-q", "ua", "-p", tmp_path / f"p{k}", *extra)
            for k, extra in enumerate([[], ["--block-size", 64], ["--block-size", 64, "--threads", 2]])]
    assert (tmp_path / "p0").read_text() == (tmp_path / "p1").read_text() == (tmp_path / "p2").read_text()
    assert len(prediction_groups(tmp_path / "p0")) == 60
    assert len({average_loss(r.stderr) for r in runs}) == 1


def test_shared_labels_parse_and_merge():
    text = b"shared 'q |u x y\n1:0.5 |a z\n2:1 |a w\n\nshared |u x\n3 |a v\n"
    b = parse_block("s", text, 1, FMT_VW, (1 << 18) - 1, False, 0, 0, cost_names=(np.zeros(0, np.int64),) * 2,
                    shared=True)
    ptr, cls, cost = b.costs
    assert cls.tolist() == [SHARED_CLASS, 1, 2, SHARED_CLASS, 3]
    assert cost.tolist() == [0.0, 0.5, 1.0, 0.0, NO_COST]
    grouper = LdfGroups(noconstant=False)
    (g,) = grouper.feed(b)      # the last example may go on in the next block: held back
    (h,) = grouper.feed(parse_block("s", b"\n1:1 |a z\n", 8, FMT_VW, (1 << 18) - 1, False, 0, 0,
                                    cost_names=(np.zeros(0, np.int64),) * 2, shared=True))
    (k,) = grouper.flush()
    assert g.groups.tolist() == [0, 0] and g.lines.tolist() == [2, 3]
    assert h.groups.tolist() == [0] and h.lines.tolist() == [6] and k.lines.tolist() == [9]
    x, y, z = (feature_index(ns, f, 18) for ns, f in (("u", "x"), ("u", "y"), ("a", "z")))
    const = constant_index(18)
    assert g.idx[g.indptr[0]:g.indptr[1]].tolist() == [z, const, x, y]     # the shared constant is not merged
    assert g.tag_list() == [b"", b""] and g.costs[1].tolist() == [1, 2] and h.costs[2].tolist() == [NO_COST]


def test_merge_shared_kernel():
    """The compiled merge against the obvious list version."""
    rng = np.random.default_rng(0)
    lens = rng.integers(0, 5, size=9)
    indptr = np.r_[0, np.cumsum(lens)].astype(np.int64)
    idx = rng.integers(0, 100, size=indptr[-1]).astype(np.uint32)
    val = rng.normal(size=indptr[-1]).astype(np.float32)
    ns = rng.integers(0, 255, size=indptr[-1]).astype(np.uint8)
    rows = np.array([1, 2, 4, 5, 8], np.int64)
    shared_of = np.array([0, 0, -1, 3, 7], np.int64)
    for drop in (False, True):
        ptr, i2, v2, n2 = merge_shared(indptr, idx, val, ns, True, rows, shared_of, drop)
        want_i, want_v, want_n, want_ptr = [], [], [], [0]
        for r, sh in zip(rows, shared_of):
            own = list(range(indptr[r], indptr[r + 1]))
            extra = list(range(indptr[sh], indptr[sh + 1])) if sh >= 0 else []
            if drop and extra:
                extra = extra[:-1]
            for k in own + extra:
                want_i.append(idx[k])
                want_v.append(val[k])
                want_n.append(ns[k])
            want_ptr.append(len(want_i))
        assert ptr.tolist() == want_ptr and i2.tolist() == want_i and v2.tolist() == want_v
        assert n2.tolist() == want_n


def test_bad_input_is_one_line_and_the_run_goes_on(tmp_path):
    data = write_lines(tmp_path / "bad.ldf", ["1:1 | a\n", "2:x | b\n", "\n",
                                              "1:1 | a\n", "2 | b\n", "\n",
                                              "1:0 2:1 | a\n", "2:1 | b\n", "\n",
                                              "1:0 | a\n", "2:1 | b\n", "\n",
                                              "shared |u x:1e99\n", "1:0 | a\n", "2:1 | b\n", "\n"])
    res = cli("train", "-d", data, "--csoaa_ldf", "m", "-p", tmp_path / "p")
    err = res.stderr
    assert 'bad.ldf line 2: cost "2:x" is not class:cost' in err
    assert "bad.ldf line 5: a multi-line example mixes actions with and without a cost; the example is " \
           "predicted, not learned" in err
    assert "bad.ldf line 7: an action has 2 costs (a multi-line example's have one each); the example is " \
           "predicted, not learned" in err
    assert 'bad.ldf line 13: feature value in "x:1e99" is beyond float32' in err     # the shared line's own
    assert len(prediction_groups(tmp_path / "p")) == 5
    strict = cli("train", "-d", data, "--csoaa_ldf", "m", "--strict", expect_ok=False)
    assert strict.exit_code == 1 and strict.stderr.splitlines()[-1].startswith(f"Error: {data} line 2")


@pytest.mark.parametrize("args,message", [
    (["--csoaa_ldf", "m", "--wap_ldf", "m"], "--csoaa_ldf and --wap_ldf cannot be used together"),
    (["--csoaa_ldf", "m", "--oaa", "3"], "--csoaa_ldf cannot be used with --oaa, --csoaa or --multilabel_oaa"),
    (["--wap_ldf", "m", "--nn", "2"], "--wap_ldf cannot be used with --lrq, --lrqfa or --nn"),
    (["--csoaa_ldf", "m", "--lrq", "ab2"], "--csoaa_ldf cannot be used with --lrq, --lrqfa or --nn"),
    (["--csoaa_ldf", "m", "--algo", "ftrl"], "--csoaa_ldf does not apply to --algo ftrl"),
    (["--wap_ldf", "m", "--link", "logistic"], "--link does not apply to --wap_ldf (use --probabilities)"),
    (["--csoaa_ldf", "s"], "Invalid value for '--csoaa-ldf'"),
])
def test_option_errors(args, message):
    res = cli("train", *args, expect_ok=False, input="1:1 | a\n")
    assert res.exit_code != 0, res.output
    assert message in res.stderr.splitlines()[-1], res.stderr


def test_model_predicts_as_trained(tmp_path):
    """-f keeps --csoaa_ldf: -i with -t predicts the same classes as a run of the last weights would."""
    lines, groups = ldf_dataset(50, seed=4)
    data = write_lines(tmp_path / "d.ldf", lines)
    m = tmp_path / "m.slm"
    cli("train", "-d", data, "--csoaa_ldf", "m", "-f", m, "--quiet")
    cli("train", "-i", m, "-t", "-d", data, "-p", tmp_path / "t", "--quiet")
    _, rows = dense_rows(m, BITS)
    for got, actions in zip(prediction_groups(tmp_path / "t"), groups):
        raw = [sum(rows[i, 0] * v for i, v in feats) for _, _, feats in actions]
        best = actions[int(np.argmin(raw))][0]
        assert got == [str(best) if c == best else "0" for c, _, _ in actions]


@pytest.mark.parametrize("extra", [["--csoaa_ldf", "m"], ["--csoaa_ldf", "mc"], ["--wap_ldf", "m"],
                                   ["--csoaa_ldf", "m", "-q", "ua", "--noconstant"],
                                   ["--csoaa_ldf", "mc", "--probabilities", "--loss_function", "logistic"],
                                   ["--csoaa_ldf", "m", "--csoaa_rank"],
                                   ["--csoaa_ldf", "m", "--passes", "3", "-c", "-k", "--holdout_off"],
                                   ["--csoaa_ldf", "m", "--passes", "3", "-c", "-k"],
                                   ["--wap_ldf", "m", "--invariant", "--passes", "2", "-c", "-k", "--holdout_off"]],
                         ids=["m", "mc", "wap", "quadratic-shared", "probabilities", "rank", "passes", "holdout",
                              "wap-plain"])
def test_vw_gives_the_same(tmp_path, extra):
    """VW's predictions and average loss; with test examples among the labeled ones (predicted only,
    moving the clock back) the predictions: VW's loss then adds each test example's FLT_MAX cost
    (a deviation, docs/vw.md). With --passes and holdout nothing is held out (VW's "undefined (no holdout)").
    With --probabilities VW's loss takes the class of the action before the
    most probable one when there is a shared line (another deviation): the data has none then."""
    for tests in (False, True):
        lines, _ = ldf_dataset(100, seed=13, shared="--probabilities" not in extra, tests=tests)
        data = write_lines(tmp_path / f"d{tests}.ldf", lines)
        vw = vw_run(tmp_path, ["-d", data, *extra, "-p", "vw.p", "-r", "vw.r"])
        mine = cli("train", "-d", data, *extra, "-p", tmp_path / "sl.p", "-r", tmp_path / "sl.r")
        same_tokens((tmp_path / "sl.p").read_text(), (tmp_path / "vw.p").read_text())
        same_tokens((tmp_path / "sl.r").read_text(), (tmp_path / "vw.r").read_text())
        a, b = average_loss(mine.stderr), average_loss(vw.stderr)
        if "--passes" in extra and "--holdout_off" not in extra:
            assert a == b == "undefined"
        elif not tests:
            assert fuzzy_equal(a, b)
            if "--probabilities" in extra:
                a, b = (next(line for line in r.stderr.splitlines() if line.startswith("average multiclass log loss"))
                        .split("=")[1].strip() for r in (mine, vw))
                assert fuzzy_equal(a, b)
        else:
            assert float(b) > 1e30 > float(a)


@pytest.mark.parametrize("extra", [[], ["--csoaa_rank"], ["--probabilities"], ["--audit"]],
                         ids=["class", "rank", "probabilities", "audit"])
def test_tags_as_vw(tmp_path, extra):
    """Each action's -p line has its own tag; --csoaa_rank's and --probabilities' lines the group head's (the
    shared line's, else the first action's); --audit shows the first action with the head's tag (VW lends it
    while the example runs); -r a line 0:0 for a shared line, then each action's costs (the first with its
    score), each with its own tag."""
    data = write_lines(tmp_path / "t.ldf", ["shared 'sh |u x\n", "1:0 'ta |a y\n", "2:1 'tb |a z\n", "\n",
                                            "1:1 |a y\n", "2:0 'tc |a z\n", "\n", "shared |u x\n", "1:1 'td |a y\n",
                                            "2:0 |a z\n", "\n", "1:1 3:0.5 |a y\n", "2 |a z\n", "\n"])
    vw = vw_run(tmp_path, ["-d", data, "--csoaa_ldf", "m", "-p", "vw.p", "-r", "vw.r", "--quiet", *extra])
    mine = cli("train", "-d", data, "--csoaa_ldf", "m", "-p", tmp_path / "sl.p", "-r", tmp_path / "sl.r", "--quiet",
               *extra)
    assert (tmp_path / "sl.p").read_text() == (tmp_path / "vw.p").read_text()
    same_tokens((tmp_path / "sl.r").read_text(), (tmp_path / "vw.r").read_text())     # tags exactly, scores fuzzy
    assert mine.stdout == vw.stdout
