"""--extra_metrics FILE (issue 27; ``streamlearn/run/metrics.py``): VW's JSON file of a run's metrics,
the same keys and values as VW 9.11.9 writes for the linear learners, --oaa, --csoaa,
--multilabel_oaa, -t, holdout and the ftrl family's own object (no key of it depends on time)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn.core.loop import held_out
from streamlearn.run.metrics import held_out_mask
from support.helpers import cli, vw_dataset, write_lines
from support.vwsuite import vw_run


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    d = tmp_path_factory.mktemp("metrics")
    lines = vw_dataset(120, seed=4, namespaces="ab")
    for j in (5, 17, 60, 61):       # unlabeled examples
        lines[j] = lines[j].split(" ", 1)[1].lstrip("0123456789. ")
    write_lines(d / "g.vw", lines)
    rng = np.random.default_rng(2)
    write_lines(d / "oaa.vw", [f"{int(rng.integers(1, 4))} |a f{int(rng.integers(0, 9))} g{int(rng.integers(0, 5))}\n"
                               if j % 7 else f"|a f{j % 9}\n" for j in range(90)])
    write_lines(d / "cs.vw", [f"1:{rng.random():.2f} 2:{rng.random():.2f} 3:{rng.random():.2f} |a f{j % 7}\n"
                              if j % 5 else f"|a f{j % 7}\n" for j in range(60)])
    write_lines(d / "ml.vw", [f"{j % 2},2 |a f{j % 7}\n" if j % 4 else f"|a f{j % 7}\n"
                              for j in range(60)])
    write_lines(d / "wide.vw", [f"{(j % 5) - 2} |a f{j % 7}\n" for j in range(40)])    # labels outside [-1, 1]
    return d


def same_metrics(mine: str, vw: str) -> None:
    """The same JSON text, but for float32 sums VW accumulates in another order (1e-6 relative)."""
    a, b = json.loads(mine), json.loads(vw)
    assert list(a) == list(b)
    for key in b:
        if isinstance(b[key], dict):
            assert list(a[key]) == list(b[key])
            for k, v in b[key].items():
                if isinstance(v, float):
                    assert abs(a[key][k] - v) <= 1e-6 * max(1.0, abs(v)), (key, k, a[key][k], v)
                else:
                    assert a[key][k] == v, (key, k)
        else:
            assert a[key] == b[key], key


CASES = [
    ("g.vw", []), ("g.vw", ["--sgd", "-l", "0.1"]), ("g.vw", ["--adaptive"]), ("g.vw", ["--l1", "1e-4"]),
    ("g.vw", ["--ftrl"]), ("g.vw", ["--coin"]), ("g.vw", ["--pistol"]), ("g.vw", ["--freegrad"]),
    ("g.vw", ["--noop"]), ("g.vw", ["--loss_function", "logistic", "--link", "logistic"]),
    ("g.vw", ["--passes", "3", "-c", "-k"]), ("g.vw", ["--holdout_after", "70"]),
    ("g.vw", ["--coin", "--passes", "2", "-c", "-k", "--holdout_period", "7"]),
    ("oaa.vw", ["--oaa", "3"]), ("oaa.vw", ["--oaa", "3", "--ftrl"]),
    ("oaa.vw", ["--oaa", "3", "--probabilities", "--loss_function", "logistic"]),
    ("cs.vw", ["--csoaa", "3"]), ("ml.vw", ["--multilabel_oaa", "3"]),
    ("wide.vw", ["--loss_function", "logistic"]), ("wide.vw", ["--loss_function", "hinge"]),
    ("wide.vw", ["--loss_function", "hinge", "--passes", "2", "-c", "-k"]),
    ("wide.vw", ["--loss_function", "logistic", "--noop"]),
]


@pytest.mark.parametrize("data, args", CASES, ids=[" ".join([c[0]] + c[1]) for c in CASES])
def test_the_file_is_vws(d, data, args):
    vw_run(d, ["-d", d / data, "--extra_metrics", d / "vw.json", "--quiet", *args])
    cli("train", "-d", d / data, "--extra_metrics", d / "mine.json", "--quiet", *args)
    same_metrics((d / "mine.json").read_text(), (d / "vw.json").read_text())
    if "--coin" not in args:        # coin's normalizer sums aside, the very bytes
        assert (d / "mine.json").read_text() == (d / "vw.json").read_text()


def test_testonly_is_vws(d):
    """-t -i MODEL: every example is predicted, none learned."""
    vw_run(d, ["-d", d / "oaa.vw", "--oaa", "3", "-f", d / "m.vw", "--quiet"])
    cli("train", "-d", d / "oaa.vw", "--oaa", "3", "-f", d / "m.slm", "--quiet")
    for model in ("m.vw", "m.slm"):
        vw_run(d, ["-t", "-i", d / "m.vw", "-d", d / "oaa.vw", "--extra_metrics", d / "vw.json", "--quiet"])
        cli("train", "-t", "-i", d / model, "-d", d / "oaa.vw", "--extra_metrics", d / "mine.json", "--quiet")
        assert (d / "mine.json").read_text() == (d / "vw.json").read_text()
        assert json.loads((d / "mine.json").read_text())["extra_metrics"] == {"total_learn_calls": 0,
                                                                              "total_predict_calls": 90}


def test_the_holdout_mask_is_the_kernels_rule():
    for period in (0, 1, 3, 10, -1, -7):
        for first in (0, 5, 13):
            mask = held_out_mask(first, 25, period)
            assert mask.tolist() == [bool(held_out(float(first + k), period)) for k in range(1, 26)]


def test_refused_where_vw_has_no_such_run_and_the_path_is_checked_first(d):
    r = cli("train", "-d", d / "g.vw", "--algo", "scd", "--l1", "1e-3", "--extra_metrics", d / "x.json",
            expect_ok=False)
    assert r.exit_code == 1 and r.stderr.splitlines() == [
        "Error: --extra_metrics is not available with --algo scd (VW's learn and predict calls are those of an "
        "online run)"]
    r = cli("train", "-d", d / "g.vw", "--extra_metrics", d / "no" / "x.json", expect_ok=False)
    assert r.exit_code == 1 and "x.json" in r.stderr and len(r.stderr.splitlines()) == 1
