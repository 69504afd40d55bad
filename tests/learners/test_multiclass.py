"""--oaa K: one-against-all over the binary learners, its options, bad labels and the multiclass
contract (resume, block size, predict == -t). VW conformance is in test_vw_cases2.py (the oaa*
cases); the softmax learner's kernels are in test_softmax.py.

The reference for one-against-all is the obvious one: K binary runs of the same learner, class k's
run on labels +1 (class k) / -1 (any other), with the features at class k's slots. With logistic
loss (fixed prediction bounds) and a learner without global state shared between the classes (sgd
under any update rule, ftrl) the K runs give the one-against-all model bit for bit: each class keeps
its own per-weight state and normalizer, and the clock advances once per example in both.
"""

from __future__ import annotations

import numpy as np
import pytest

from support.helpers import cli, close_models, dense_rows, model_arrays, read_predictions, same_model, write_lines

K = 4
W = 4
BITS = 18


def mc_dataset(n: int, seed: int, k: int = K, vocab: int = 30) -> list[str]:
    """n lines with labels 1..k from a hidden linear model per class, some importance weights."""
    hidden = np.random.default_rng(99)          # one hidden model for every seed's examples
    truth = hidden.normal(size=(vocab, k)) * (hidden.random((vocab, 1)) < 0.5)
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        feats = rng.choice(vocab, size=int(rng.integers(2, 7)), replace=False)
        vals = np.round(rng.uniform(0.2, 2.0, size=feats.size), 2)
        score = (truth[feats] * vals[:, None]).sum(axis=0) + rng.normal(scale=0.3, size=k)
        label = int(np.argmax(score)) + 1
        head = f"{label}" + (" 2" if rng.random() < 0.1 else "")
        lines.append(head + " |a " + " ".join(f"f{j}:{v:g}" for j, v in zip(feats, vals)) + "\n")
    return lines


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("mc")
    train = mc_dataset(240, seed=5)
    return {"dir": d, "train": write_lines(d / "train.vw", train),
            "first": write_lines(d / "first.vw", train[:120]), "second": write_lines(d / "second.vw", train[120:]),
            "test": write_lines(d / "test.vw", mc_dataset(60, seed=6)), "lines": train}


def binary_file(d, lines, k: int):
    """The lines with label +1 for class k (0-based), -1 otherwise (importance weights kept)."""
    out = []
    for line in lines:
        head, _, rest = line.partition(" |")
        parts = head.split()
        parts[0] = "1" if int(parts[0]) == k + 1 else "-1"
        out.append(" ".join(parts) + " |" + rest)
    return write_lines(d / f"bin{k}.vw", out)


@pytest.mark.parametrize("opts", [["--sgd"], [], ["--algo", "ftrl", "--l1", "0.3"]],
                         ids=["sgd-plain", "sgd-default-rule", "ftrl"])
def test_oaa_equals_k_binary_runs(data, opts):
    d = data["dir"]
    m, p = d / "oaa.slm", d / "oaa.pred"
    cli("train", "-d", data["train"], "--oaa", K, "--loss", "logistic", "-b", BITS, "-f", m, "-r", p,
        "--quiet", *opts)
    _, oaa = dense_rows(m, BITS)
    raw = np.array([[float(t.split(":")[1]) for t in line.split()] for line in p.read_text().splitlines()])
    assert raw.shape == (240, K)
    for k in range(K):
        mb, pb = d / f"bin{k}.slm", d / f"bin{k}.pred"
        cli("train", "-d", binary_file(d, data["lines"], k), "--loss", "logistic", "-b", BITS, "-f", mb,
            "-p", pb, "--quiet", *opts)
        _, binary = dense_rows(mb, BITS)
        slots = np.flatnonzero(binary[:, 0])
        assert slots.size > 5
        moved = ((slots * W) & ((1 << BITS) - 1)) + k
        assert len(set(moved.tolist())) == slots.size          # no collisions in this data
        np.testing.assert_array_equal(oaa[moved, 0], binary[slots, 0])
        assert np.count_nonzero(oaa[k::W, 0]) == slots.size
        # the class's score is the binary prediction (both clamped to the logistic bounds)
        np.testing.assert_allclose(raw[:, k], read_predictions(pb), rtol=1e-5, atol=1e-6)


def test_oaa_tg_gravity_grows_once_per_class_update(data):
    """tg one-against-all: the cumulative gravity grows with every class update (K times per example,
    as VW's --l1 does), so class k's weights equal a binary tg run with K times the gravity (plain
    SGD: every class's step is the same)."""
    d = data["dir"]
    m = d / "tg.slm"
    cli("train", "-d", data["train"], "--oaa", K, "--loss", "logistic", "--sgd", "--algo", "tg", "--l1", "1e-3",
        "-b", BITS, "-f", m, "--quiet")
    _, oaa = dense_rows(m, BITS)
    for k in range(K):
        mb = d / f"tgbin{k}.slm"
        cli("train", "-d", binary_file(d, data["lines"], k), "--loss", "logistic", "--sgd", "--algo", "tg",
            "--l1", 4e-3, "-b", BITS, "-f", mb, "--quiet")
        _, binary = dense_rows(mb, BITS)
        slots = np.flatnonzero(binary[:, 0])
        moved = ((slots * W) & ((1 << BITS) - 1)) + k
        np.testing.assert_allclose(oaa[moved, 0], binary[slots, 0], rtol=1e-9, atol=1e-12)


LEARNERS = {
    "sgd": [], "sgd-plain": ["--sgd"], "tg": ["--algo", "tg", "--l1", "1e-4"],
    "fobos": ["--algo", "fobos", "--l1", "1e-4"], "ftrl": ["--algo", "ftrl", "--l1", "0.5"],
    "rounding": ["--algo", "rounding", "--threshold", "1e-3"], "gravity": ["--l1", "1e-5"],
    # the softmax learner (--loss softmax overrides the contract's logistic)
    "softmax-l1": ["--loss", "softmax", "--l1", "1e-3"],
    "softmax-l1l2": ["--loss", "softmax", "--reg", "l1l2", "--lambda", "1e-3"],
    "softmax-l1linf-sgd": ["--loss", "softmax", "--reg", "l1linf", "--lambda", "1e-3", "--sgd"],
    "softmax-elastic": ["--loss", "softmax", "--l1", "1e-3", "--l2", "1e-3"],
}


@pytest.mark.parametrize("name", list(LEARNERS))
def test_oaa_contract(data, name):
    """Every one-against-all learner: -i resumes exactly, the block size does not matter, and
    predict gives -t's predictions, with expanded features."""
    d = data["dir"]
    opts = ["--oaa", K, "--loss", "logistic", "-q", "aa", "--quiet", *LEARNERS[name]]
    full, half, resumed = d / f"{name}.full", d / f"{name}.half", d / f"{name}.resumed"
    cli("train", "-d", data["train"], "-f", full, *opts)
    cli("train", "-d", data["first"], "-f", half, *opts)
    cli("train", "-d", data["second"], "-i", half, "-f", resumed, *opts)
    # as the binary contract: lazy state to rounding; tg's float32 table (issue 30) to float32 rounding: the
    # half run's save catches every weight up, a float64 sum the uninterrupted run makes in another
    # order, and one float32 rounding of a raw weight or G that flips moves the rest by ulps
    rtol, atol = (1e-5, 1e-7) if name == "tg" else (1e-9, 1e-12)
    close_models(full, resumed, rtol=rtol, atol=atol)
    small = d / f"{name}.small"
    cli("train", "-d", data["train"], "-f", small, "--block-size", 64, *opts)
    same_model(full, small)
    p1, p2 = d / f"{name}.p1", d / f"{name}.p2"
    cli("predict", "-i", full, "-d", data["test"], "-p", p1, "--quiet")
    cli("train", "-t", "-i", full, "-d", data["test"], "-p", p2, "--quiet")
    a, b = read_predictions(p1), read_predictions(p2)
    assert set(a.tolist()) <= {1, 2, 3, 4} and np.array_equal(a, b)
    truth = np.array([int(line.split()[0]) for line in data["test"].read_text().splitlines()])
    assert (a == truth).mean() > 0.4, name           # it learned something (chance: about 0.25)


def test_predict_probabilities_and_scores(data):
    d = data["dir"]
    m = d / "prob.slm"
    cli("train", "-d", data["train"], "--oaa", K, "--loss", "logistic", "-f", m, "--quiet")
    res = cli("predict", "-i", m, "-d", data["test"], "--probabilities", "--quiet")
    probs = np.array([[float(t.split(":")[1]) for t in line.split()] for line in res.stdout.splitlines()])
    assert probs.shape == (60, K)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    res = cli("predict", "-i", m, "-d", data["test"], "--scores", "--quiet")
    scores = np.array([[float(t.split(":")[1]) for t in line.split()] for line in res.stdout.splitlines()])
    classes = cli("predict", "-i", m, "-d", data["test"], "--quiet").stdout.split()
    assert [int(c) for c in classes] == (scores.argmax(axis=1) + 1).tolist()
    sig = 1 / (1 + np.exp(-scores))
    np.testing.assert_allclose(probs, sig / sig.sum(axis=1, keepdims=True), atol=2e-6)


@pytest.mark.parametrize("args, message", [
    (["--oaa", "1"], "--oaa needs at least 2 classes (got 1)"),
    (["--oaa", "0"], "--oaa needs at least 2 classes (got 0)"),
    (["--oaa", "9", "-b", "3"], "--oaa 9 needs more weights per feature than -b 3 gives (8); use a larger -b"),
    (["--oaa", "3", "--algo", "l1ball", "--radius", "1"],
     "--oaa does not apply to --algo l1ball; one-against-all runs --algo sgd, tg, fobos, rounding, ftrl or "
     "gravity, and --loss softmax the softmax learner"),
    (["--oaa", "3", "--binary"], "--binary does not apply to --oaa (the prediction is a class)"),
    (["--probabilities"], "--probabilities needs --oaa K"),
    (["--indexing", "0"], "--indexing needs --oaa K"),
    (["--oaa", "3", "--indexing", "2"], "--indexing must be 0 or 1 (got 2)"),
    (["--loss", "softmax"], "--loss softmax needs --oaa K (the number of classes)"),
    (["--oaa", "3", "--loss", "softmax", "--algo", "tg"], "--loss softmax is learned by --algo softmax, not --algo tg"),
    (["--oaa", "3", "--algo", "softmax"], "--algo softmax needs --loss softmax"),
    (["--oaa", "3", "--loss", "softmax", "--reg", "l1l2", "--l1", "1"],
     "--l1 does not apply to --algo softmax --reg l1l2, whose strength is --lambda"),
])
def test_option_errors(args, message):
    res = cli("train", *args, expect_ok=False, input="1 |a b\n")
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1] == f"Error: {message}"


def test_bad_labels_warn_and_strict_fails(tmp_path):
    f = write_lines(tmp_path / "bad.vw", ["1 |a x\n", "2.5 |a y\n", "7 |a z\n", "3 |a x y\n"])
    m = tmp_path / "m.slm"
    res = cli("train", "-d", f, "--oaa", 3, "-f", m, "--invert_hash", tmp_path / "inv")
    err = res.stderr
    assert (f"streamlearn: warning: {f} line 2: label 2.5 is not a class (--oaa labels are integers 1..3); "
            f"the example is not learned") in err
    assert (f"streamlearn: warning: {f} line 3: label 7 is not in 1..3; learned as a negative for every class, "
            f"as VW does") in err
    assert "number of examples = 4" in err
    # the 2.5 example taught nothing: feature y appears only with the good label 3 (and 2.5)
    names = [line.split(":")[0] for line in (tmp_path / "inv").read_text().splitlines() if line.count(":") >= 2]
    assert "a^y" in names or "a^y[2]" in names
    res = cli("train", "-d", f, "--oaa", 3, "--strict", expect_ok=False)
    assert res.exit_code == 1
    assert res.stderr.splitlines()[-1] == f"Error: {f} line 2: label 2.5 is not a class (--oaa labels are integers 1..3)"


def test_oaa_model_restores_its_classes(data):
    """-t -i and -i take --oaa and --indexing from the model; a different --oaa is refused."""
    d = data["dir"]
    m = d / "restore.slm"
    cli("train", "-d", data["train"], "--oaa", K, "--indexing", 1, "-f", m, "--quiet")
    header, _, _ = model_arrays(m)
    assert header["oaa"] == K and header["indexing"] == 1
    res = cli("train", "-t", "-i", m, "-d", data["test"], "-p", d / "r.pred", "--quiet")
    assert res.exit_code == 0
    res = cli("train", "-i", m, "-d", data["test"], "--oaa", 5, expect_ok=False)
    assert res.stderr.splitlines()[-1] == "Error: --oaa 5 conflicts with the initial model's --oaa 4"


def test_softmax_probabilities_sum_to_one_and_match_the_class(data):
    d = data["dir"]
    m = d / "sm.slm"
    res = cli("train", "-d", data["train"], "--oaa", K, "--loss", "softmax", "--reg", "l1l2", "--lambda", 1e-3,
              "-f", m, "--probabilities", "-p", d / "sm.prob")
    assert "non-zero rows = " in res.stderr and "average multiclass log loss = " in res.stderr
    probs = np.array([[float(t.split(":")[1]) for t in line.split()]
                      for line in cli("predict", "-i", m, "-d", data["test"], "--probabilities",
                                      "--quiet").stdout.splitlines()])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    classes = cli("predict", "-i", m, "-d", data["test"], "--quiet").stdout.split()
    assert [int(c) for c in classes] == (probs.argmax(axis=1) + 1).tolist()


def test_class_loss_sums_equal_numpy(data):
    """The multiclass objective's loss (core/objective.py) against NumPy, for softmax and oaa."""
    from support.helpers import parse_examples
    from streamlearn.core.objective import class_loss_sums
    from streamlearn.io.blocks import ParsedBlock  # noqa: F401  (the block arrays come from the parser)
    rng = np.random.default_rng(0)
    bits = 12
    dense = np.zeros((1 << bits, 1))
    dense[:, 0] = rng.normal(size=1 << bits) * (rng.random(1 << bits) < 0.3)
    ex = parse_examples(data["test"], bits)
    indptr = np.cumsum([0] + [len(f) for _, _, _, f in ex])
    idx = np.array([i for *_, f in ex for i, _ in f], np.uint32)
    val = np.array([v for *_, f in ex for _, v in f], np.float32)
    labels = np.array([y for y, *_ in ex])
    weights = np.array([h for _, h, _, _ in ex])
    bases = np.zeros(len(ex))
    for softmax in (True, False):
        total, weight = class_loss_sums(indptr, idx, val, labels, weights, bases, dense, 1, 0.5, K, W, False,
                                        softmax)
        want = 0.0
        for (y, h, _, feats) in ex:
            s = np.zeros(K)
            for i, v in feats:
                s += dense[((i * W) & ((1 << bits) - 1)) + np.arange(K), 0] * np.float32(v)
            c = int(y) - 1
            if softmax:
                want += h * (np.log(np.exp(s - s.max()).sum()) + s.max() - s[c])
            else:
                t = np.where(np.arange(K) == c, 1.0, -1.0)
                want += h * np.log1p(np.exp(-t * s)).sum()
        assert weight == weights.sum()
        assert np.isclose(total, want, rtol=1e-12), (softmax, total, want)


def test_auto_indexing_decides_before_the_first_zero_label_is_predicted(tmp_path):
    """VW's oaa decides the indexing as it starts learning an example, so the example whose label 0
    makes the labels 0-indexed is already scored 0-indexed (--scores, --probabilities: reported after
    learning); the -p lines before it name the classes from 1, those from it on from 0 (VW's suite,
    tests 359 and 360). Its plain class output is predicted before learning, the old way (test 647)."""
    data = tmp_path / "d.vw"
    write_lines(data, ["1 | a:2 b:3\n", "2 | e:2 b:3\n", "0 | a:2 b:3\n", "0 | b:2 c:3\n"])
    res = cli("train", "-d", data, "--oaa", "4", "--loss", "logistic", "--probabilities", "-p", tmp_path / "p")
    lines = (tmp_path / "p").read_text().splitlines()
    assert [line.split()[0].split(":")[0] for line in lines] == ["1", "1", "0", "0"]
    zero = tmp_path / "z.vw"
    write_lines(zero, ["0 | a:2 b:3\n"])
    # the plain class output is VW's prediction made before the example is learned, so before the
    # indexing is decided: all scores tie, class 1 is predicted, the label is 0 (VW 9.11.9: loss 1)
    res = cli("train", "-d", zero, "--oaa", "4", "--loss", "logistic")
    assert [line for line in res.stderr.splitlines() if line.startswith("average loss")] == ["average loss = 1.000000"]
    res = cli("train", "-d", zero, "--oaa", "4", "--loss", "logistic", "--scores")    # scored after learning
    assert [line for line in res.stderr.splitlines() if line.startswith("average loss")] == ["average loss = 0.000000"]
