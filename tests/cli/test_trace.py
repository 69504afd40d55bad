"""train --trace FILE --trace-every N [--trace-data FILE]: rows every N examples, the same learning as
an untraced run, and columns that agree with what the CLI reports by other means."""

import csv
import random

import numpy as np
import pytest

from support.helpers import cli


@pytest.fixture
def files(tmp_path):
    rng = random.Random(5)
    lines, test = [], []
    for i in range(1300):
        y = 1 if rng.random() < 0.5 else -1
        a = rng.randint(0, 40)
        lines.append(f"{y} |a f{a} g{rng.randint(0, 9)}:0.5 |b h{(a + (y > 0)) % 7}")
    for i in range(200):
        y = 1 if rng.random() < 0.5 else -1
        test.append(f"{y} |a f{rng.randint(0, 40)} |b h{i % 7}")
    (tmp_path / "d.vw").write_text("\n".join(lines) + "\n")
    (tmp_path / "t.vw").write_text("\n".join(test) + "\n")
    return tmp_path


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


@pytest.mark.parametrize("opts", [["--loss", "logistic", "--algo", "tg", "--l1", "1e-3"],
                                  ["--loss", "logistic", "-q", "ab", "--passes", "2"],
                                  ["--loss", "squared", "--algo", "fobos", "--l1", "1e-3"]])
def test_traced_run_learns_what_an_untraced_one_learns(files, opts):
    d = files
    cli("train", "-d", d / "d.vw", "-p", d / "p1", "-f", d / "m1", "--quiet", *opts)
    cli("train", "-d", d / "d.vw", "-p", d / "p2", "-f", d / "m2", "--quiet", "--trace", d / "tr.tsv",
        "--trace-every", 97, "--block-size", 3000, *opts)
    assert (d / "p1").read_bytes() == (d / "p2").read_bytes()
    assert (d / "m1").read_bytes() == (d / "m2").read_bytes()
    rows = read(d / "tr.tsv")
    passes = 2 if "--passes" in opts else 1
    total = 1300 * passes
    assert [int(r["examples"]) for r in rows] == list(range(97, total + 1, 97)) + ([total] if total % 97 else [])


def test_columns_agree_with_the_cli(files):
    d = files
    opts = ["--loss", "logistic", "--algo", "tg", "--l1", "1e-3"]
    cli("train", "-d", d / "d.vw", "-p", d / "p", "-f", d / "m", "--quiet", "--trace", d / "tr.tsv",
        "--trace-every", 250, "--trace-data", d / "t.vw", *opts)
    rows = read(d / "tr.tsv")
    preds = np.loadtxt(d / "p")
    labels = np.array([float(line.split()[0]) for line in (d / "d.vw").read_text().splitlines()])
    for r in rows:
        k = int(r["examples"])
        assert int(r["errors"]) == int(np.count_nonzero((preds[:k] > 0) != (labels[:k] > 0)))
        assert int(r["accesses"]) == 4 * k          # 3 features and the constant per line
    assert int(rows[-1]["features_seen"]) == 41 + 10 + 7 + 1
    res = cli("train", "-d", d / "d.vw", "--objective", "--objective-data", d / "t.vw", *opts)
    assert f"non-zero weights = {rows[-1]['nonzero']};" in res.output
    shown = res.output.split("objective after pass 1")[1].split(": ", 1)[1].split(" ", 1)[0]
    assert abs(float(rows[-1]["objective"]) - float(shown)) <= 1e-9 * abs(float(shown))
    cli("predict", "-i", d / "m", "-d", d / "t.vw", "-p", d / "tp", "--quiet")
    tp = np.loadtxt(d / "tp")
    ty = np.array([float(line.split()[0]) for line in (d / "t.vw").read_text().splitlines()])
    assert float(rows[-1]["test_error"]) == pytest.approx(np.mean((tp > 0) != (ty > 0)))


def test_trace_options_checked(files):
    d = files
    for args, text in ((["--trace", d / "t.tsv", "--trace-every", 0], "--trace-every must be at least 1 (got 0)"),
                       (["--trace-every", 5], "--trace-every needs --trace FILE"),
                       (["--trace-data", d / "t.vw"], "--trace-data needs --trace FILE"),
                       (["--trace", d / "nowhere" / "t.tsv"], f"--trace {d / 'nowhere' / 't.tsv'}: directory "
                                                              f"{d / 'nowhere'} does not exist")):
        res = cli("train", "-d", d / "d.vw", *args, expect_ok=False)
        assert res.output == f"Error: {text}\n", res.output
