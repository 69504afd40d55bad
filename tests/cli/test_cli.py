"""The command line through click's CliRunner: outputs, options, errors (exact texts), passes, -i."""


import re

import numpy as np
import pytest
from click.testing import CliRunner

from streamlearn.cli import main
from streamlearn.features.hashing import feature_index
from streamlearn.io.model_file import load_model
from support.helpers import RESUME_TOL32, table_dtype

TRAIN = "data/samples/sparse.train.vw"
TEST = "data/samples/sparse.test.vw"


def cli(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def ok(*args, input=None):
    r = cli(*args, input=input)
    assert r.exit_code == 0, r.output
    return r


def lines_of(path):
    return open(path).read().splitlines()


# ----------------------------------------------------------------------------- outputs

def test_train_predict_round_trip_matches_numpy(tmp_path):
    """predict's output is clamp(sum w x) with the weights of the readable model (independent check)."""
    model, txt, pred = tmp_path / "m.slm", tmp_path / "w.txt", tmp_path / "p.txt"
    ok("train", "-d", TRAIN, "--loss", "logistic", "--algo", "ftrl", "--l1", "0.002", "-f", model, "--readable-model",
       txt, "--quiet")
    r = ok("predict", "-i", model, "-d", TEST, "-p", pred)
    weights = {int(l.split(":")[0]): float(l.split(":")[1].split()[0]) for l in lines_of(txt)
               if re.match(r"\d+:", l)}      # the weight lines, after VW's header and save_resume block
    expected = []
    for line in lines_of(TEST):
        names = line.split("|")[1].split()
        score = weights.get(116060, 0.0) + sum(weights.get(feature_index("", n), 0.0) for n in names)
        expected.append(min(max(score, -50.0), 50.0))
    got = [float(x) for x in lines_of(pred)]
    assert np.allclose(got, expected, atol=1e-6)
    assert "average loss = " in r.stderr and "number of examples = 500" in r.stderr


def test_predictions_to_stdout_with_tags_and_vw_number_format():
    r = ok("train", "-p", "-", "--quiet", "--loss", "hinge",
           input="1 'a |f x\n-1 |f y\n1 2 b|f x y\n'c |f z\n")
    assert r.stderr == ""
    out = r.stdout.splitlines()
    assert len(out) == 4
    assert out[0] == "0 a" and out[3].endswith(" c")
    for line in out:
        v = line.split()[0]
        assert v == str(int(float(v))) or len(v.split(".")[1]) == 6


def test_link_and_binary(tmp_path):
    r = ok("train", "-p", "-", "--quiet", "--loss", "logistic", "--link", "logistic", "-d", TRAIN)
    probs = [float(x) for x in r.stdout.split()]
    assert all(0.0 <= p <= 1.0 for p in probs) and probs[0] == 0.5 and len(set(probs)) > 100
    r = ok("train", "-p", "-", "--loss", "logistic", "--binary", "-d", TRAIN)
    assert set(r.stdout.split()) <= {"1", "-1"}
    errors = sum(1 for p, line in zip(r.stdout.split(), lines_of(TRAIN)) if float(p) != float(line.split()[0]))
    assert f"average loss = {errors / 2000:f}" in r.stderr     # 0/1 loss of the progressive predictions


def test_summary_and_progress_table():
    r = ok("train", "-d", TRAIN, "--loss", "logistic", "--algo", "tg", "--l1", "0.001")
    err = r.stderr.splitlines()
    i = err.index("average  since         example        example        current        current  current")
    assert err[i + 1] == "loss     last          counter         weight          label        predict features"
    counters = [int(l.split()[2]) for l in err[i + 2:] if l and l[0].isdigit()]
    assert counters == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    for key in ("number of examples = 2000", "weighted example sum = 2000.000000", "best constant = ",
                "total feature number = ", "examples per second = ", "wall time = ", "malformed lines = 0"):
        assert any(l.startswith(key) for l in err), key
    nz = next(l for l in err if l.startswith("non-zero weights = "))
    assert nz.endswith("of 2^18)")
    assert ("learner = tg (truncated gradient, adaptive, normalized, invariant: l1 = 0.001, "
            "cumulative penalty, period = 1)") in err


def test_quiet_prints_nothing_but_warnings():
    r = ok("train", "--quiet", input="1 |f a\n1 |f x:nan\n")
    assert r.stderr == ("streamlearn: warning: stdin line 2: feature value in \"x:nan\" is not finite; "
                        "the rest of the line is ignored\n")


def test_malformed_lines_keep_outputs_aligned():
    data = "1 |f a\nabc |f b\n\n1 |f c:1,5 d\n0 |f e\n"
    r = ok("train", "-p", "-", input=data)
    assert len(r.stdout.splitlines()) == 4                      # every non-empty line, in order
    warnings = [l for l in r.stderr.splitlines() if l.startswith("streamlearn: warning")]
    assert warnings == [
        'streamlearn: warning: stdin line 2: label "abc" is not a number; the example is predicted, not learned',
        "streamlearn: warning: stdin line 4: unexpected \",5\" (a space, '|' or end of line was expected); "
        "the rest of the line is ignored",
    ]
    assert "malformed lines = 2" in r.stderr


def test_strict_stops_with_one_line_error(tmp_path):
    p = tmp_path / "bad.vw"
    p.write_text("1 |f a\n1 |f b\n2 3 4 5 |f c\n")
    r = cli("train", "--strict", "-d", p, "--quiet", "-f", tmp_path / "m.slm")
    assert r.exit_code == 1
    assert r.stderr == (f"Error: {p} line 3: too many label tokens in \"2 3 4 5\" "
                        "(expected: label [importance [base]] ['tag])\n")
    assert not (tmp_path / "m.slm").exists()
    r = cli("predict", "--strict", "-i", "nope.slm", input="")
    assert r.exit_code == 1 and r.stderr == "Error: cannot read model nope.slm: No such file or directory\n"


def test_predict_reports_loss_only_for_labeled_input(tmp_path):
    model = tmp_path / "m.slm"
    ok("train", "-d", TRAIN, "--loss", "logistic", "-f", model, "--quiet")
    r = ok("predict", "-i", model, input="| 1 2 3\n| 4\n")
    assert len(r.stdout.splitlines()) == 2 and "average loss = n.a." in r.stderr
    r = ok("predict", "-i", model, "--quiet", input="1 | 1 2 3\n")
    assert r.stderr == "" and len(r.stdout.splitlines()) == 1


def test_libsvm_and_vw_renderings_give_the_same_model(tmp_path):
    a, b = tmp_path / "a.slm", tmp_path / "b.slm"
    ok("train", "-d", TRAIN, "--loss", "logistic", "-f", a, "--quiet")
    ok("train", "-d", TRAIN.replace(".vw", ".libsvm"), "--loss", "logistic", "-f", b, "--quiet")
    ok("train", "--format", "libsvm", "-d", TRAIN.replace(".vw", ".libsvm"), "-f", tmp_path / "c.slm", "--quiet")
    (_, ia, ra), (_, ib, rb) = load_model(str(a)), load_model(str(b))
    assert np.array_equal(ia, ib) and np.array_equal(ra, rb)


def test_vw_option_spellings(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    ok("train", "-d", TRAIN, "--power_t", "0.4", "--initial_t", "2", "--loss_function", "hinge",
       "--learning_rate", "0.3", "--readable_model", a, "--bit_precision", "16", "--quiet")
    ok("train", "-d", TRAIN, "--power-t", "0.4", "--initial-t", "2", "--loss", "hinge",
       "-l", "0.3", "--readable-model", b, "-b", "16", "--quiet")
    assert a.read_text() == b.read_text()


def test_python_api_style_multiple_inputs(tmp_path):
    one = ok("train", "-d", TRAIN, "-d", TEST, "-p", "-", "--quiet").stdout
    both = tmp_path / "both.vw"
    both.write_text(open(TRAIN).read() + open(TEST).read())
    assert one == ok("train", "-d", both, "-p", "-", "--quiet").stdout


# ----------------------------------------------------------------------------- option errors

@pytest.mark.parametrize("args,message", [
    (["-b", "0"], "-b/--bits must be between 1 and 32 (got 0)"),
    (["--sgd", "--adaptive"], "--sgd cannot be combined with --adaptive: --sgd means none of "
                              "--adaptive, --normalized and --invariant"),
    (["--l1", "0.1", "--threshold", "0.5"], "--threshold does not apply with --cumulative-penalty (the "
                                            "default with per-feature rates); add --no-cumulative-penalty"),
    (["--cumulative-penalty", "--algo", "sgd"], "--cumulative-penalty needs a regularized learner "
                                                "(--algo tg); --algo sgd does not regularize"),
    (["-b", "33"], "-b/--bits must be between 1 and 32 (got 33)"),
    (["--l1", "-1"], "--l1 must be a finite number >= 0 (got -1)"),
    (["-l", "-0.5"], "-l/--learning-rate must be a finite number >= 0 (got -0.5)"),
    (["--power-t", "-1"], "--power-t must be a finite number >= 0 (got -1)"),
    (["--decay-learning-rate", "0"], "--decay-learning-rate must be a finite number > 0 (got 0)"),
    (["--passes", "0"], "--passes must be at least 1 (got 0)"),
    (["--period", "0", "--algo", "tg"], "--period must be at least 1 (got 0)"),
    (["--holdout-period", "0"], "--holdout-period must be at least 1 (got 0)"),
    (["--holdout-off", "--holdout-period", "5"], "--holdout-off and --holdout-period cannot be used together"),
    (["--algo", "sgd", "--l1", "0.1"],
     "--l1 needs a regularized learner (--algo tg); --algo sgd does not regularize"),
    (["--algo", "sgd", "--threshold", "1"],
     "--threshold needs a regularized learner (--algo tg); --algo sgd does not regularize"),
    (["--quantile-tau", "0.3"], "--quantile-tau needs --loss quantile"),
    (["--loss", "quantile", "--quantile-tau", "1.5"], "--quantile-tau must be between 0 and 1 (got 1.5)"),
    (["-c"], "-c/--cache needs -d FILE; with stdin give --cache-file PATH"),
    (["-f", "x.slm", "--readable-model", "x.slm"], "the same file x.slm is given for two outputs"),
    (["-d", "in.vw", "-f", "in.vw"], "output file in.vw is also an input"),
    (["-d", "no/such/file.vw"], "cannot read no/such/file.vw: No such file or directory"),
])
def test_option_errors(args, message):
    r = cli("train", *args, input="1 |a b\n")
    assert r.exit_code == 1
    assert r.stderr.splitlines()[-1] == f"Error: {message}"


def test_kill_cache_without_a_cache_is_accepted_and_does_nothing(tmp_path, monkeypatch):
    """VW takes -k without a cache file and ignores it (its own suite's command lines give it):
    the run is the run without -k, and no cache file appears."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.vw").write_text("1 |a b\n-1 |a c\n1 |a b c\n")
    with_k = cli("train", "-k", "-d", "d.vw", "-p", "k.pred")
    without = cli("train", "-d", "d.vw", "-p", "plain.pred")
    assert with_k.exit_code == 0 and without.exit_code == 0
    assert (tmp_path / "k.pred").read_text() == (tmp_path / "plain.pred").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.vw", "k.pred", "plain.pred"]


def test_bad_choice_is_a_click_usage_error():
    r = cli("train", "--loss", "cubic", input="")
    assert r.exit_code == 2 and "Invalid value for '--loss'" in r.stderr


def test_l1_alone_selects_vws_own_and_with_tg_options_tg(tmp_path):
    r = ok("train", "--l1", "0.01", input="1 |a b\n")
    assert "learner = gravity" in r.stderr and "hint: " in r.stderr and "--algo ftrl" in r.stderr
    r = ok("train", "--l1", "0.01", "--algo", "ftrl", input="1 |a b\n")
    assert "learner = ftrl" in r.stderr and "hint: " not in r.stderr
    for extra in (["--sgd", "--threshold", "1"], ["--period", "2"], ["--no-cumulative-penalty"],
                  ["--cumulative-penalty"]):
        r = ok("train", "--l1", "0.01", *extra, input="1 |a b\n")
        assert "learner = tg" in r.stderr, extra
    # VW's rule and rate options with --l1 and/or --l2 are VW's command lines: VW's own regularizer
    for extra in (["--sgd"], ["--adaptive"], ["-l", "0.1"], ["--power-t", "0.4"], ["--initial_t", "2"],
                  ["--invariant"], ["--normalized"], ["--decay_learning_rate", "0.9"], ["--l2", "0.1"],
                  ["--l2", "0.1", "--sgd"]):
        r = ok("train", "--l1", "0.01", *extra, input="1 |a b\n")
        assert "learner = gravity" in r.stderr, extra
    for extra in ([], ["--sgd", "-l", "0.1"]):
        r = ok("train", "--l2", "0.1", *extra, input="1 |a b\n")
        assert "learner = gravity" in r.stderr and "hint: " not in r.stderr, extra
    r = ok("train", "--l1", "0.01", "--l2", "0.1", "--reg", "elastic", input="1 |a b\n")
    assert "learner = fobos" in r.stderr
    # with -i, the model's learner when it takes the options given (tg's --l1 stays tg)
    model = tmp_path / "tg.slm"
    ok("train", "--algo", "tg", "--l1", "0.01", "-f", model, input="1 |a b\n")
    r = ok("train", "--l1", "0.02", "-i", model, input="1 |a b\n")
    assert "learner = tg" in r.stderr
    ok("train", "-f", model, input="1 |a b\n")                      # an sgd model: --l1 makes it tg
    r = ok("train", "--l1", "0.02", "-i", model, input="1 |a b\n")
    assert "learner = tg" in r.stderr


# ----------------------------------------------------------------------------- passes, cache, holdout

def test_passes_holdout_and_cache_reuse(tmp_path):
    cache = tmp_path / "d.cache"
    r = ok("train", "-d", TRAIN, "--passes", "3", "--cache-file", cache, "--loss", "logistic")
    assert f"creating cache_file = {cache}" in r.stderr
    assert "passes used = 3" in r.stderr and "number of examples per pass = 1800" in r.stderr
    assert any(l.endswith(" h") for l in r.stderr.splitlines())
    assert [l for l in r.stderr.splitlines() if l.startswith("average loss")][0].endswith(" h")
    again = ok("train", "-d", TRAIN, "--passes", "3", "--cache-file", cache, "--loss", "logistic")
    assert f"using cache_file = {cache}" in again.stderr
    strip = lambda s: [l for l in s.splitlines() if not l.startswith(("wall", "examples per", "creating", "using", "ignoring"))]
    assert strip(r.stderr) == strip(again.stderr)
    rebuilt = ok("train", "-d", TRAIN, "--passes", "2", "--cache-file", cache, "-b", "16", "--quiet")
    assert rebuilt.exit_code == 0
    r = ok("train", "-d", TRAIN, "--passes", "2", "--holdout-off", "--loss", "logistic")
    assert not any(l.endswith(" h") for l in r.stderr.splitlines())
    assert "number of examples per pass = 2000" in r.stderr


def test_passes_from_stdin_use_a_temporary_cache():
    data = open(TRAIN).read()
    r = ok("train", "--passes", "2", "-p", "-", "--quiet", input=data)
    assert len(r.stdout.splitlines()) == 4000


def test_c_names_the_cache_after_the_data(tmp_path):
    data = tmp_path / "d.vw"
    data.write_text(open(TRAIN).read())
    r = ok("train", "-d", data, "-c", "--passes", "2")
    assert f"creating cache_file = {data}.cache" in r.stderr
    r = ok("train", "-d", data, "-c", "-k", "--passes", "2")
    assert f"creating cache_file = {data}.cache" in r.stderr


def test_early_termination_keeps_the_best_pass(tmp_path):
    # a rate far too high: holdout loss gets worse from pass to pass
    model = tmp_path / "m.slm"
    r = ok("train", "-d", TRAIN, "--passes", "20", "--sgd", "-l", "200", "--power-t", "0",
           "--early-terminate", "1", "-f", model, "--loss", "squared")
    used = int(next(l for l in r.stderr.splitlines() if l.startswith("passes used")).split("= ")[1])
    assert 1 < used < 20
    best = tmp_path / "best.slm"            # the pass before the one that did not improve
    # (printing rows too: the model's performance counters hold the progress table's schedule)
    ok("train", "-d", TRAIN, "--passes", used - 1, "--sgd", "-l", "200", "--power-t", "0", "-f", best)
    assert model.read_bytes() == best.read_bytes()


# ----------------------------------------------------------------------------- continuing with -i

@pytest.mark.parametrize("opts", [
    ["--loss", "logistic"],
    ["--loss", "logistic", "--algo", "tg", "--l1", "0.003", "--period", "3"],
    ["--loss", "squared", "--algo", "tg", "--l1", "0.01", "--threshold", "0.2", "-l", "0.5",
     "--no-cumulative-penalty"],
    ["--loss", "squared", "--algo", "tg", "--l1", "0.01", "--sgd", "--period", "2"],
    ["--loss", "logistic", "--algo", "tg", "--l1", "0.001", "--normalized", "--invariant"],
])
def test_resume_equals_one_run(tmp_path, opts):
    text = open(TRAIN).read().splitlines(keepends=True)
    a, b, both = tmp_path / "a.vw", tmp_path / "b.vw", tmp_path / "both.vw"
    a.write_text("".join(text[:1234]))
    b.write_text("".join(text[1234:]))
    both.write_text("".join(text))
    m1, m2, m3 = tmp_path / "1.slm", tmp_path / "2.slm", tmp_path / "3.slm"
    ok("train", "-d", a, "-f", m1, "--quiet", *opts)
    ok("train", "-d", b, "-i", m1, "-f", m2, "--quiet")           # options come from the model
    ok("train", "-d", both, "-f", m3, "--quiet", *opts)
    (h2, i2, r2), (h3, i3, r3) = load_model(str(m2)), load_model(str(m3))
    assert np.array_equal(i2, i3)
    tol = RESUME_TOL32 if table_dtype(m3) == "float32" else 1e-12
    assert np.allclose(r2, r3, rtol=tol, atol=tol)   # the lazy gravity is summed in two parts
    assert h2["state"]["t"] == h3["state"]["t"]


def test_resume_counters_restart_but_learning_continues(tmp_path):
    m = tmp_path / "m.slm"
    ok("train", "-d", TRAIN, "-f", m, "--quiet", "--loss", "logistic")
    r = ok("train", "-d", TEST, "-i", m)
    assert "number of examples = 500" in r.stderr and "loss function = logistic" in r.stderr


def test_version_and_help():
    assert ok("--version").stdout.startswith("streamlearn, version ")
    assert "Train a model" in ok("--help").stdout
    assert "--power-t" in ok("train", "--help").stdout


def test_option_names_match_the_registries():
    from streamlearn import config, learners
    from streamlearn.core.losses import LOSSES
    # softmax is the multiclass loss of the softmax learner, not a binary loss of the loss kernels
    assert set(config.LOSS_NAMES) == set(LOSSES) | {"softmax"}
    assert set(config.ALGO_NAMES) == set(learners.LEARNERS)


def test_explicit_holdout_period_with_one_pass():
    r = ok("train", "-d", TRAIN, "--holdout-period", "4", "--loss", "logistic")
    assert "number of examples = 1500" in r.stderr                 # every 4th of 2000 held out
    assert [l for l in r.stderr.splitlines() if l.startswith("average loss")][0].endswith(" h")


# ----------------------------------------------------------------------------- update rules


@pytest.mark.parametrize("args,rule,eta,initial_t,cumulative", [
    ([], (True, True, True), 0.5, 0.0, True),
    (["--sgd"], (False, False, False), 10.0, 1.0, False),
    (["--adaptive"], (True, False, False), 10.0, 0.0, True),
    (["--adaptive", "--normalized"], (True, True, False), 0.5, 0.0, True),
    (["--invariant"], (False, False, True), 10.0, 1.0, False),
    (["--normalized", "-l", "2", "--initial-t", "3"], (False, True, False), 2.0, 3.0, True),
    (["--no-cumulative-penalty"], (True, True, True), 0.5, 0.0, False),
])
def test_update_rule_and_its_defaults(args, rule, eta, initial_t, cumulative):
    """VW's rules: no flag = adaptive + normalized + invariant; any flag = exactly those given; the
    default rate and initial_t follow the rule; the cumulative penalty follows per-feature rates."""
    from streamlearn.config import train_config
    explicit = {}
    i = 0
    while i < len(args):
        name = args[i].lstrip("-").replace("-", "_")
        if name in ("l",):
            explicit["learning_rate"] = float(args[i + 1]); i += 2
        elif name == "initial_t":
            explicit["initial_t"] = float(args[i + 1]); i += 2
        elif name == "no_cumulative_penalty":
            explicit["cumulative_penalty"] = False; i += 1
        else:
            explicit[name] = True; i += 1
    cfg = train_config(explicit)
    assert (cfg.adaptive, cfg.normalized, cfg.invariant) == rule
    assert cfg.learning_rate == eta and cfg.initial_t == initial_t
    assert cfg.cumulative_penalty == cumulative
    r = ok("train", "-d", TRAIN, "--loss", "logistic", *args)
    assert f"learning rate = {eta:g}" in r.stderr.splitlines()


def test_resume_from_a_predict_only_model(tmp_path):
    """-i from a weights-only model keeps the weights and restarts the per-feature state."""
    m1, m2 = tmp_path / "1.slm", tmp_path / "2.slm"
    ok("train", "-d", TRAIN, "--loss", "logistic", "--predict-only-model", "-f", m1, "--quiet")
    h1, i1, r1 = load_model(str(m1))
    assert h1["column_names"] == ["w"] and r1.shape[1] == 1
    ok("train", "-d", TRAIN, "--loss", "logistic", "-i", m1, "-f", m2, "--quiet")
    h2, i2, r2 = load_model(str(m2))
    assert h2["column_names"] == ["w", "g", "n"]
    assert set(i1.tolist()) <= set(i2.tolist()) and not np.array_equal(r2[np.isin(i2, i1), 0], r1[:, 0])
