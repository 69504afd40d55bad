"""The four plots of ``streamlearn.plot`` drawn from real data, for the docs (docs/python.md; bench/plots/*.png).

* ``progress.png``: ``train --algo tg --l1 1e-6 --loss logistic`` on RCV1 (rcv1_small.train, 1,000
  documents): the progressive average loss and the non-zero weights at every progress row
  (``session.train(..., progress=True)``, what ``train --plot`` draws).
* ``objective.png``: the same run with ``--passes 5 --holdout-off --objective``: the objective after each
  pass against the data accesses (SMIDAS paper, Section 4).
* ``frontier.png``: test accuracy on rcv1_small.test (500 documents) against non-zero weights, for
  ``--algo tg`` and ``--algo fobos`` over a sweep of ``--l1``, one pass; dashed: plain sgd (no L1).
* ``top_weights.png``: the 30 largest weights of ``--algo tg --l1 1e-5`` on the RCV1 news text
  (rcv1_text/rcv1_dev.ccat.vw.xz, CCAT vs rest, words as features), named with ``--invert-hash``.

The data come from ``--data-root`` (default ../shared/data/real next to the repository); without it the
script says so and exits 0. Runs in-process through ``streamlearn.run.driver`` (a few seconds once the
kernels are compiled).

    .venv/bin/python -m bench run plots [--data-root DIR] [--out bench/plots]
"""

from __future__ import annotations

import argparse
import lzma
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.data import DATA_ROOT
from bench.harness import REPO as ROOT, Case, Context, shared
from streamlearn import plot
from streamlearn.run import driver, session
from streamlearn.config import predict_config

L1_SWEEP = (1e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 2e-3, 4e-3, 1e-2)


def train(**options) -> dict:
    cfg, model = driver.prepare_train(dict(quiet=True, **options))
    return driver.train(cfg, model)


def labels(path: Path) -> np.ndarray:
    with lzma.open(path, "rt") as f:
        return np.array([float(line.split(None, 1)[0]) for line in f if line.strip()])


def accuracy(model: str, test: Path, y: np.ndarray, tmp: Path) -> float:
    pred = tmp / "pred.txt"
    driver.predict(predict_config(initial_model=model, sources=(str(test),), predictions=str(pred), quiet=True))
    p = np.array([float(line.split()[0]) for line in pred.read_text().splitlines()])
    return float(np.mean(np.where(p > 0, 1.0, -1.0) == np.where(y > 0, 1.0, -1.0)))


def readable_weights(path: Path) -> dict:
    """{name: weight} of an --invert-hash file (lines name:index:weight ..., or index:weight ...)."""
    out = {}
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("non-zero weights:")) + 1
    for line in lines[start:]:
        head = line.split()[0]
        parts = head.rsplit(":", 2)
        name = parts[0] if len(parts) == 3 else f"#{parts[0]}"
        w = float(parts[-1])
        if w != 0.0:
            out[name.split("^", 1)[-1]] = w     # "w^word" -> "word"
    return out


def save(ax, path: Path) -> None:
    plot.write(ax.figure, str(path))
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "data-root", default=DATA_ROOT)
    shared(ap, "out", default=ROOT / "bench" / "plots")


def run(args: argparse.Namespace, ctx: Context) -> int:
    rcv1 = args.data_root / "rcv1"
    train_file, test_file = rcv1 / "rcv1_small.train.vw.xz", rcv1 / "rcv1_small.test.vw.xz"
    text_file = args.data_root / "rcv1_text" / "rcv1_dev.ccat.vw.xz"
    missing = [p for p in (train_file, test_file, text_file) if not p.exists()]
    if missing:
        print(f"bench/cases/plots.py: skipped, {missing[0]} is absent (give --data-root)")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    base = dict(sources=(str(train_file),), loss="logistic")

    cfg, model = driver.prepare_train(dict(quiet=True, algo="tg", l1=1e-6, **base))
    res = session.train(cfg, model, progress=True)     # the rows train --plot draws
    ax = plot.progress(res)
    ax.set_title("progress: --algo tg --l1 1e-6, RCV1 (rcv1_small.train)")
    save(ax, args.out / "progress.png")

    res = train(algo="tg", l1=1e-6, passes=5, holdout_off=True, objective=True, **base)
    ax = plot.objective(res["objectives"])
    ax.set_title("objective per pass: --algo tg --l1 1e-6 --passes 5")
    save(ax, args.out / "objective.png")

    y = labels(test_file)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model_path = str(tmp / "m.model")
        for algo in ("tg", "fobos"):
            results[algo] = []
            for l1 in L1_SWEEP:
                r = train(algo=algo, l1=l1, final_model=model_path, **base)
                results[algo].append((r["nonzero"], accuracy(model_path, test_file, y, tmp)))
        r = train(algo="sgd", final_model=model_path, **base)
        baselines = {"sgd (no L1)": [(r["nonzero"], accuracy(model_path, test_file, y, tmp))]}
        ax = plot.frontier(results, baselines=baselines)
        ax.set_title(f"RCV1 test accuracy, one pass, --l1 {L1_SWEEP[0]:g} to {L1_SWEEP[-1]:g}")
        save(ax, args.out / "frontier.png")

        names = tmp / "names.txt"
        train(sources=(str(text_file),), loss="logistic", algo="tg", l1=1e-5, invert_hash=str(names))
        ax = plot.top_weights(readable_weights(names), k=30)
        ax.set_title("top 30 weights: CCAT vs rest, RCV1 news text, --algo tg --l1 1e-5")
        save(ax, args.out / "top_weights.png")
    for name, pts in results.items():
        print(f"{name}: " + ", ".join(f"{n} nz {a:.3f}" for n, a in pts))
    print(f"baseline: {baselines}")
    print(f"done in {time.perf_counter() - started:.1f} s")
    return 0


CASE = Case("plots", arguments, run, __doc__)
