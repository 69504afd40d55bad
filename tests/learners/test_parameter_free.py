"""--algo pistol (VW's --pistol, ftrl.cc) and --algo freegrad (VW's --freegrad, freegrad.cc):

* each compiled kernel equals its slow transcription of VW's update
  (``support/reference_parameter_free.py``) on a few hundred random sparse examples with importance
  weights (0 included: not learned), duplicate features, unlabeled examples and labels outside the
  bounds seen so far, squared and logistic loss, the learners' options;
* bit compatibility with VW 9.11.9 (``python -m vowpalwabbit``; skipped without it) on generated data:
  -p, the readable model (VW's fuzzy rule at 1e-3, and exactly with --hexfloat_weights), the
  ``average loss`` line;
* the VW suite's cases 79, 80, 598 (--pistol) and 367, 368, 605 (--freegrad; ../shared/data/vw/suite,
  skipped without it);
* freegrad's --restart and --project (each its own kernel) against the reference and VW;
* -i resumes exactly, predict uses the stored weights; option checks.
"""

from __future__ import annotations

import numpy as np
import pytest

from support import vwsuite
from support.helpers import cli, dense_rows, parse_examples, read_predictions, vw_dataset, write_lines
from support.reference_parameter_free import reference_freegrad, reference_pistol
from support.vwsuite import average_loss, fuzzy_equal, same_weight_lines, vw_run, weight_lines

BITS = 10

COLUMNS = {"pistol": ("w", "pistol_z", "pistol_g", "pistol_mx"),
           "freegrad": ("w", "fg_g", "fg_v", "fg_h1", "fg_ht", "fg_s")}
REFERENCE = {"pistol": reference_pistol, "freegrad": reference_freegrad}


def dataset(seed, loss, n=300):
    """Random sparse examples: importance weights (one 0, a few 1.5, 2 and 3), a duplicate feature, an
    unlabeled example, squared-loss labels that leave the bounds seen so far."""
    rng = np.random.default_rng(seed)
    lines = vw_dataset(n, seed=seed, vocab=25, weighted=False)
    if loss == "squared":
        lines = [f"{rng.normal(scale=3):.3f}" + line[line.index(" "):] for line in lines]
    for k, h in ((3, "0"), (20, "1.5"), (41, "3"), (77, "2")):
        head, rest = lines[k].split("|", 1)
        lines[k] = f"{head.split()[0]} {h} |{rest}"
    lines[7] = lines[7].rstrip("\n") + " |a f1 f1:2\n"
    lines[11] = "|" + lines[11].split("|", 1)[1]
    return lines


def train(tmp_path, algo, lines, *opts, name="m"):
    data = write_lines(tmp_path / f"{name}.vw", lines)
    model, preds = tmp_path / f"{name}.slm", tmp_path / f"{name}.p"
    res = cli("train", "-d", data, "-b", BITS, "-f", model, "-p", preds, "--algo", algo, *opts)
    return data, model, preds, res


SETTINGS = {
    "pistol": [((), {}), (("--ftrl_alpha", 2.0, "--ftrl_beta", 0.25), {"alpha": 2.0, "beta": 0.25})],
    "freegrad": [((), {}), (("--fepsilon", 0.5, "--flipschitz_const", 3.0), {"eps": 0.5, "lipschitz": 3.0}),
                 (("--restart",), {"restart": True}), (("--project",), {"project": True}),
                 (("--restart", "--project", "--fepsilon", 2.0), {"restart": True, "project": True, "eps": 2.0})],
}
CONFIGS = [(algo, k) for algo in SETTINGS for k in range(len(SETTINGS[algo]))]


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("algo,seed", CONFIGS)
def test_kernel_equals_reference(tmp_path, algo, seed, loss):
    lines = dataset(seed, loss)
    opts, kw = SETTINGS[algo][seed]
    data, model, preds, _ = train(tmp_path, algo, lines, "--loss", loss, *opts)
    examples = parse_examples(data, BITS)
    assert examples[3][1] == 0.0 and examples[41][1] == 3.0 and examples[11][0] is None
    shown, coords, total = REFERENCE[algo](examples, loss, **kw)
    header, rows = dense_rows(model)
    assert header["column_names"] == list(COLUMNS[algo])
    ref = np.zeros_like(rows)
    for i, c in coords.items():
        ref[i] = [float(v) for v in c]
    assert np.count_nonzero(ref[:, 0]) > 20 and np.count_nonzero(ref[:, 1]) > 20
    np.testing.assert_allclose(rows, ref, rtol=1e-9, atol=0)
    if algo == "freegrad":
        assert header["state"]["total_weight"] == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(read_predictions(preds), shown, rtol=0, atol=5.01e-7)   # printed %f


@pytest.mark.parametrize("algo", ["pistol", "freegrad"])
def test_resume_equals_one_run(tmp_path, algo):
    """A model saved mid-stream and continued with -i (without naming the learner) equals the one-run
    model, and the -p predictions of the two halves are the one run's."""
    lines = dataset(3, "squared")
    _, whole, p_whole, _ = train(tmp_path, algo, lines, name="whole")
    _, first, p1, _ = train(tmp_path, algo, lines[:140], name="first")
    data2 = write_lines(tmp_path / "second.vw", lines[140:])
    second, p2 = tmp_path / "second.slm", tmp_path / "second.p"
    cli("train", "-d", data2, "-i", first, "-f", second, "-p", p2)
    (ha, ra), (hb, rb) = dense_rows(whole), dense_rows(second)
    assert hb["algo"] == algo
    assert np.array_equal(ra, rb)
    for key in ("total_weight", "min_label", "max_label"):
        assert ha["state"][key] == hb["state"][key], key
    both = np.concatenate([read_predictions(p1), read_predictions(p2)])
    assert np.array_equal(both, read_predictions(p_whole))


@pytest.mark.parametrize("algo", ["pistol", "freegrad"])
def test_predict_uses_the_stored_weights(tmp_path, algo):
    lines = dataset(4, "squared")
    data, model, _, _ = train(tmp_path, algo, lines)
    out = tmp_path / "q"
    cli("predict", "-i", model, "-d", data, "-p", out)
    header, rows = dense_rows(model)
    lo, hi = header["state"]["min_label"], header["state"]["max_label"]
    want = []
    for _, _, base, feats in parse_examples(data, BITS):
        s = float(base)              # the predict command's plain kernel sums in double
        for i, v in feats:
            s += rows[i, 0] * float(np.float32(v))
        want.append(min(max(s, lo), hi))
    assert np.count_nonzero(want) > 100
    np.testing.assert_allclose(read_predictions(out), want, rtol=0, atol=5.01e-7)   # printed %f


def test_options(tmp_path):
    data = write_lines(tmp_path / "d.vw", ["1 |a x\n", "0 |a y\n"])
    cli("train", "-d", data, "--pistol", "-f", tmp_path / "m", "--quiet")
    header, _ = dense_rows(tmp_path / "m")
    assert header["algo"] == "pistol" and header["ftrl_alpha"] == 1.0 and header["ftrl_beta"] == 0.5
    cli("train", "-d", data, "--freegrad", "-f", tmp_path / "g", "--quiet")
    header, _ = dense_rows(tmp_path / "g")
    assert header["algo"] == "freegrad"
    cli("train", "-d", data, "--fepsilon", "2", "-f", tmp_path / "e", "--quiet")
    header, _ = dense_rows(tmp_path / "e")
    assert header["algo"] == "freegrad" and header["fepsilon"] == 2.0
    cli("train", "-d", data, "--project", "--restart", "-f", tmp_path / "r", "--quiet")
    header, _ = dense_rows(tmp_path / "r")
    assert header["algo"] == "freegrad" and header["project"] is True and header["restart"] is True
    for algo, bad, words in (("--pistol", ["--ftrl_alpha", "0"], "--ftrl-alpha must be a finite number > 0"),
                             ("--pistol", ["-l", "0.1"], "does not apply to --algo pistol"),
                             ("--pistol", ["--l1", "0.1"], "--l1 needs"),
                             ("--pistol", ["--algo", "ftrl"], "--pistol means --algo pistol"),
                             ("--freegrad", ["--fepsilon", "0"], "--fepsilon must be a finite number > 0"),
                             ("--freegrad", ["--flipschitz_const", "-1"], "must be a finite number >= 0"),
                             ("--freegrad", ["--power_t", "0.3"], "does not apply to --algo freegrad"),
                             ("--freegrad", ["--l2", "0.1"], "--l2 needs")):
        res = cli("train", "-d", data, algo, *bad, expect_ok=False)
        assert res.exit_code != 0 and words in res.output, (algo, bad, res.output)


# ----------------------------------------------------------------------------- VW 9.11.9

def generated_lines(seed, loss, n=400):
    """Examples whose numbers VW's parser and ours read as the same float32 (halves), importance
    weights 1.5, 2 and 0, two namespaces, duplicate features."""
    rng = np.random.default_rng(seed)
    lines = []
    for k in range(n):
        names = rng.choice(30, rng.integers(1, 8), replace=False).tolist() + ([3] if k % 13 == 0 else [])
        feats = " ".join(f"f{j}:{rng.integers(-6, 7) / 2 or 0.5:g}" for j in names)
        if loss == "logistic":
            label = "1" if rng.random() < 0.4 + 0.02 * (names[0] % 10) else "-1"
        else:
            label = f"{rng.integers(-4, 12) / 2:g}"
        head = label + (f" {rng.choice([1.5, 2.0, 0.0]):g}" if k % 9 == 4 else "")
        lines.append(f"{head} |a {feats} |b g{rng.integers(5)}\n")
    return lines


GENERATED = {
    "pistol": (lambda: generated_lines(1, "squared"), ["--pistol"]),
    "pistol-q-alpha-beta": (lambda: generated_lines(2, "squared"),
                            ["--pistol", "-q", "ab", "--ftrl_alpha", "2", "--ftrl_beta", "0.25"]),
    "pistol-logistic": (lambda: generated_lines(3, "logistic"), ["--pistol", "--loss_function", "logistic"]),
    "freegrad": (lambda: generated_lines(1, "squared"), ["--freegrad"]),
    "freegrad-q-options": (lambda: generated_lines(2, "squared"),
                           ["--freegrad", "-q", "ab", "--fepsilon", "0.5", "--flipschitz_const", "2"]),
    "freegrad-logistic": (lambda: generated_lines(3, "logistic"), ["--freegrad", "--loss_function", "logistic"]),
    "freegrad-restart": (lambda: generated_lines(5, "squared"), ["--freegrad", "--restart"]),
    "freegrad-project": (lambda: generated_lines(6, "squared"), ["--freegrad", "--project"]),
    "freegrad-restart-project-logistic": (lambda: generated_lines(7, "logistic"),
                                          ["--freegrad", "--restart", "--project", "--loss_function", "logistic"]),
    "freegrad-passes": (lambda: generated_lines(4, "squared", 150), ["--freegrad", "--passes", "3", "--holdout_off"]),
}


@pytest.mark.parametrize("case", sorted(GENERATED))
def test_vw_bit_compatible(tmp_path, case):
    make, opts = GENERATED[case]
    data = write_lines(tmp_path / "d.vw", make())
    passes = ["-c", "-k"] if "--passes" in opts else []
    vw = vw_run(tmp_path, ["-d", data, "-b", 18, "-p", "vw.p", "--readable_model", "vw.r", *opts, *passes])
    vw_run(tmp_path, ["-d", data, "-b", 18, "--readable_model", "vw.hex", "--hexfloat_weights", *opts, *passes])
    ours = [o.replace("--loss_function", "--loss") for o in map(str, opts)]
    res = cli("train", "-d", data, "-b", 18, "-p", tmp_path / "sl.p", "--readable-model", tmp_path / "sl.r",
              "-f", tmp_path / "sl.slm", *ours)
    mine_p = (tmp_path / "sl.p").read_text().split()
    vw_p = (tmp_path / "vw.p").read_text().split()
    assert len(mine_p) == len(vw_p)
    assert all(fuzzy_equal(a, b) for a, b in zip(mine_p, vw_p))
    same_weight_lines((tmp_path / "sl.r").read_text(), (tmp_path / "vw.r").read_text())
    assert average_loss(res.stderr) == average_loss(vw.stderr)
    # exactly: every value of VW's hex-float readable model is our float32 value
    theirs = weight_lines((tmp_path / "vw.hex").read_text())
    assert sorted(weight_lines((tmp_path / "sl.r").read_text())) == sorted(theirs)
    _, rows = dense_rows(tmp_path / "sl.slm")
    for slot, (_, values) in theirs.items():
        assert [float.fromhex(v) for v in values] == list(rows[slot]), slot
    assert mine_p == vw_p


# ----------------------------------------------------------------------------- the VW suite's cases

SUITE_CASES = {79: "--pistol", 80: None, 598: "--pistol", 367: "--freegrad", 368: None, 605: "--freegrad"}
DEPENDS = {80: 79, 368: 367}
MODELS = {80: "ftrl_pistol.model", 368: "freegrad.model"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    return vwsuite.extract(tmp_path_factory.mktemp("vwsuite"), tuple(SUITE_CASES), (
        "0001.dat", "0002_25.dat", "ftrl_pistol", "freegrad", "t598.stderr", "t605.stderr"))


@pytest.mark.parametrize("case_id", sorted(SUITE_CASES))
def test_vw_suite_case(suite, case_id, monkeypatch):
    test, cases = suite
    case = cases[case_id]
    flag = SUITE_CASES[case_id]
    assert flag is None or flag in case["vw_command"]
    monkeypatch.chdir(test)
    if case_id in DEPENDS and not (test / "models" / MODELS[case_id]).exists():
        test_vw_suite_case(suite, DEPENDS[case_id], monkeypatch)
    compared = vwsuite.run_case(test, case, cli)
    assert compared >= 1
