"""Feature expansion through the command line: errors, model files (-f / -i / predict / -t),
passes and the cache (stdin too), LIBSVM input, readable models and names, for every learner."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from streamlearn import learners
from streamlearn.config import ALGO_NAMES
from streamlearn.io.model_file import load_model
from support import helpers


def cli(*args, input=None):
    return helpers.cli(*args, input=input, expect_ok=False)


def ok(*args, input=None):
    return helpers.cli(*args, input=input)


def make_data(path, n=300, seed=1):
    """Lines with namespaces u, i, c, the default one and numeric names; the label depends on a
    u x i interaction."""
    rng = random.Random(seed)
    lines = []
    for k in range(n):
        u, i = rng.randrange(8), rng.randrange(8)
        y = 1 if (u + i) % 3 == 0 else -1
        words = " ".join(f"w{rng.randrange(30)}" for _ in range(rng.randrange(1, 5)))
        lines.append(f"{y} 'e{k} |user u{u} age:{rng.random():.3f} |item i{i} {rng.randrange(5)} "
                     f"|ctx:0.5 h{rng.randrange(4)} | {words}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def data(tmp_path):
    return make_data(tmp_path / "d.vw")


@pytest.mark.parametrize("args, message", [
    (["-q", "a"], "Error: -q/--quadratic a: quadratic features must involve two namespaces (got 1 byte)"),
    (["--cubic", "ab"], "Error: --cubic ab: cubic features must involve three namespaces (got 2 bytes)"),
    (["--interactions", "a"],
     "Error: --interactions a: feature interactions must involve at least two namespaces (got 1 byte)"),
    (["--ngram", "x"], None),
    (["--ngram", "t0"], None),
    (["--skips", "1"], None),
])
def test_malformed_expansion_options_are_one_line_errors(data, args, message):
    r = cli("train", "-d", data, "--quiet", *args)
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output
    if message is not None:
        assert lines[0] == message
    else:
        assert args[0] in lines[0] and lines[0].startswith("Error: ")


def test_namespaces_that_never_occur_are_fine(data):
    r = ok("train", "-d", data, "-q", "xy", "--cubic", "uzz", "--ngram", "q2", "--quiet", "-p", "-")
    plain = ok("train", "-d", data, "--quiet", "-p", "-")
    assert r.stdout == plain.stdout


def test_interaction_limit_is_a_clear_error(tmp_path):
    words = " ".join(f"w{i}" for i in range(200))        # 200*201*202/6 = 1,353,400 > 10^6
    f = tmp_path / "big.vw"
    f.write_text(f"1 |a x\n1 |a {words}\n")
    r = cli("train", "-d", f, "--interactions", "aaa", "--quiet", "--max-example-features", "1000000")
    assert r.exit_code == 1
    assert r.stderr == (f"Error: {f} line 2: the feature interactions would produce more than 1,000,000 "
                        "features for this example (--max-example-features 1000000); raise --max-example-features "
                        "or use fewer or narrower -q/--cubic/--interactions terms\n")
    # issue 29: the default cap comes from the memory (no hard 10^6): this example fits under it
    from streamlearn.io.expand import default_example_features
    r = cli("train", "-d", f, "--interactions", "aaa", "--quiet")
    assert (r.exit_code == 0) == (default_example_features() >= 1_353_400 + 1), r.stderr


def test_model_records_the_expansion_and_predict_applies_it(data, tmp_path):
    m = tmp_path / "m.slm"
    ok("train", "-d", data, "-q", "ui", "--ngram", "2", "--ignore", "c", "-f", m, "--quiet")
    header = load_model(str(m))[0]
    assert header["quadratic"] == ["ui"] and header["ngram"] == ["2"] and header["ignore"] == ["c"]
    pred = ok("predict", "-i", m, "-d", data, "--quiet").stdout
    test = ok("train", "-t", "-i", m, "-d", data, "-p", "-", "--quiet").stdout
    assert pred == test
    # the same model without the expansion predicts differently (the interactions matter)
    m2 = tmp_path / "m2.slm"
    ok("train", "-d", data, "-f", m2, "--quiet")
    assert ok("predict", "-i", m2, "-d", data, "--quiet").stdout != pred


def test_testonly_does_not_learn(data, tmp_path):
    m = tmp_path / "m.slm"
    ok("train", "-d", data, "-q", "ui", "-f", m, "--quiet")
    m2 = tmp_path / "m2.slm"
    ok("train", "-t", "-i", m, "-d", data, "-f", m2, "--quiet")
    (_, i1, r1), (_, i2, r2) = load_model(str(m)), load_model(str(m2))
    assert np.array_equal(i1, i2) and np.array_equal(r1, r2)
    r = ok("train", "-t", "-i", m, "-d", data)
    assert "only testing" in r.stderr


def test_resume_takes_the_models_expansion_and_refuses_another(data, tmp_path):
    lines = data.read_text().splitlines(keepends=True)
    a, b = tmp_path / "a.vw", tmp_path / "b.vw"
    a.write_text("".join(lines[:150]))
    b.write_text("".join(lines[150:]))
    m1, m2, m3 = tmp_path / "1.slm", tmp_path / "2.slm", tmp_path / "3.slm"
    ok("train", "-d", a, "-q", "ui", "--cubic", "uic", "-f", m1, "--quiet")
    ok("train", "-d", b, "-i", m1, "-f", m2, "--quiet")
    ok("train", "-d", data, "-q", "ui", "--cubic", "uic", "-f", m3, "--quiet")
    (_, i2, r2), (_, i3, r3) = load_model(str(m2)), load_model(str(m3))
    assert np.array_equal(i2, i3) and np.allclose(r2, r3, rtol=1e-9, atol=1e-12)
    r = cli("train", "-d", b, "-i", m1, "-q", "uc", "--quiet")
    assert r.exit_code == 1
    assert r.stderr == "Error: -q/--quadratic uc conflicts with the initial model's -q/--quadratic ui\n"


def test_passes_with_the_cache_from_a_file_and_from_stdin(data, tmp_path):
    opts = ["-q", "ui", "--ngram", "i2", "--passes", "3", "--holdout-off", "--quiet"]
    m1, m2, m3 = tmp_path / "1.slm", tmp_path / "2.slm", tmp_path / "3.slm"
    ok("train", "-d", data, "-f", m1, *opts)
    ok("train", "-f", m2, *opts, input=data.read_text())
    cache = tmp_path / "c.cache"
    ok("train", "-d", data, "-f", m3, "--cache-file", cache, *opts)
    r = ok("train", "-d", data, "--cache-file", cache, "-f", m3, *opts[:-1])   # reuses the cache
    assert "using cache_file" in r.stderr
    models = [load_model(str(m)) for m in (m1, m2, m3)]
    for _, i, r_ in models[1:]:
        assert np.array_equal(models[0][1], i) and np.array_equal(models[0][2], r_)
    # a cache built without the expansion is not reused with it
    other = tmp_path / "o.cache"
    ok("train", "-d", data, "--cache-file", other, "--passes", "2", "--quiet")
    r = ok("train", "-d", data, "--cache-file", other, "--passes", "2", "-q", "ui")
    assert "creating cache_file" in r.stderr


def test_summary_counts_expanded_features_and_nonzero_weights(data, tmp_path):
    r = ok("train", "-d", data, "-q", "ui", "--readable-model", tmp_path / "r.txt")
    plain = ok("train", "-d", data)
    count = lambda s: int(next(l for l in s.splitlines() if l.startswith("total feature number")).split()[-1])
    nonzero = lambda s: int(next(l for l in s.splitlines() if l.startswith("non-zero weights")).split()[3])
    # every example has exactly 2 user and 2 item features (name and age; name and a number)
    assert count(r.stderr) == count(plain.stderr) + 4 * 300
    body = [l for l in (tmp_path / "r.txt").read_text().splitlines() if re.match(r"\d+:", l)]  # weight lines
    assert nonzero(r.stderr) == sum(float(l.split(":")[1].split()[0]) != 0 for l in body)


def test_invert_hash_names_interactions(data, tmp_path):
    inv = tmp_path / "inv.txt"
    ok("train", "-d", data, "-q", "ui", "--invert-hash", inv, "--quiet")
    names = [m.group(1) for m in re.finditer(r"(?m)^(.+):\d+:\S+", inv.read_text())]
    assert "Constant" in names and any(n.startswith("user^u") and "*item^i" in n for n in names)


def test_libsvm_input_expands_the_default_namespace(tmp_path):
    f = tmp_path / "d.libsvm"
    f.write_text("1 1:1 2:0.5\n-1 2:1 3:2\n1 1:1 3:1\n")
    r = ok("train", "-d", f, "-q", "  ", "--audit", "--quiet")
    first = r.stdout.splitlines()[1].split("\t")[1:]
    assert [e.rsplit(":", 3)[0] for e in first] == ["1", "2", "Constant", "1*1", "1*2", "2*2"]


@pytest.mark.parametrize("algo", [a for a in ALGO_NAMES if not learners.get(a).joint])
def test_every_learner_takes_expanded_features(data, tmp_path, algo):
    opts = ["--algo", algo, *learners.get(algo).example]
    m = tmp_path / "m.slm"
    r = ok("train", "-d", data, "-q", "ui", "--loss", "logistic", "-f", m, *opts)
    assert "non-zero weights" in r.stderr
    out = ok("predict", "-i", m, "-d", data, "--quiet").stdout.splitlines()
    assert len(out) == 300
