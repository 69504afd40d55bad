"""Regularized objective against data accesses on MAGIC04S and MAGIC04D (Shalev-Shwartz & Tewari 2009,
Section 4, Figure 1): the L1 learners compared the way the SMIDAS paper compares them.

What it measures
----------------
The datasets are built as the paper builds them (following Langford, Li & Zhang 2009): the 19,020
examples of UCI MAGIC Gamma Telescope (``../shared/data/real/uci/magic04.libsvm.xz``, 10 features,
centred and scaled into [-1, 1] here: the paper assumes features in [-1, 1] (Eq. 1) but does not say
how it scaled MAGIC's) plus 1,000 random
features, each 1 with probability 0.05 and else absent (MAGIC04S), or -1/+1 with probability 1/2 each
(MAGIC04D); seeded, written to bench/data/. Logistic loss, lambda = 1e-4 (the paper's value for both).

Each learner runs ``--passes P --objective`` (the online learners also ``--holdout-off --shuffle``,
the papers' uniform sampling), which prints the objective (average logistic loss + lambda ||w||_1 over the
training set) and the data accesses after every pass. The step size of the online learners is
searched over a grid, as the paper searches it, and the best final objective is kept:

* smidas: ``--algo smidas --l1 1e-4 -l ETA --power-t 0`` (Algorithm 3's constant eta, p = 2 ln d);
* tg: ``--algo tg --sgd --l1 1e-4 -l ETA`` (the paper's TruncGrad: plain SGD, truncation every step);
* fobos-l1: ``--algo fobos --sgd --l1 1e-4 -l ETA``;
* scd: ``--algo scd --l1 1e-4`` (no step size), when the build has it.

Usage: ``python -m bench run objective [--passes P] [--quick]``. Results go to the
``bench_objective`` section of bench/RESULTS.md and the plot to bench/objective.png.
"""

from __future__ import annotations

import argparse
import datetime as dt
import lzma
import re
import subprocess
from pathlib import Path

import numpy as np

from bench.harness import REPO, Case, Context, Section, machine_facts, say, shared
from bench.timing import streamlearn_base

SECTION = Section("bench_objective")
SOURCE = REPO.parent / "shared" / "data" / "real" / "uci" / "magic04.libsvm.xz"
DATA_DIR = Path("bench/data")
LAMBDA = 1e-4
SEED = 20091109
ETAS = (0.01, 0.03, 0.1, 0.3, 1.0)
LINE = re.compile(r"objective after pass (\d+) .*?: (\S+) = .*non-zero weights = (\d+); data accesses = (\d+)$")


def build(kind: str) -> Path:
    """MAGIC04S ("s") or MAGIC04D ("d") as a LIBSVM file (built once, then reused)."""
    path = REPO / DATA_DIR / f"magic04{kind}.libsvm"
    if path.exists():
        return path
    rows, labels = [], []
    with lzma.open(SOURCE, "rt") as f:
        for line in f:
            parts = line.split()
            labels.append(parts[0])
            x = np.zeros(10)
            for item in parts[1:]:
                j, v = item.split(":")
                x[int(j) - 1] = float(v)
            rows.append(x)
    x = np.array(rows)
    x = x - x.mean(axis=0)
    x = x / np.abs(x).max(axis=0)          # centred, in [-1, 1]: the paper's assumption (Eq. 1)
    rng = np.random.default_rng(SEED if kind == "s" else SEED + 1)
    (REPO / DATA_DIR).mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    with open(tmp, "w") as out:
        for label, row in zip(labels, x):
            feats = [f"{j + 1}:{v:.6g}" for j, v in enumerate(row)]
            if kind == "s":
                on = np.flatnonzero(rng.random(1000) < 0.05)
                feats += [f"{11 + j}:1" for j in on]
            else:
                signs = rng.choice([-1, 1], size=1000)
                feats += [f"{11 + j}:{s}" for j, s in enumerate(signs)]
            out.write(label + " " + " ".join(feats) + "\n")
    tmp.replace(path)
    return path


def learner_cmds(data: Path, passes: int) -> dict[str, list[list[str]]]:
    """Every command of the step-size search, per learner."""
    base = streamlearn_base() + ["train", "-d", str(data), "--loss", "logistic", "-b", "18",
                                 "--passes", str(passes), "--objective", "--quiet"]
    online = ["--holdout-off", "--shuffle", "--random-seed", "1"]
    cmds = {
        "smidas": [base + online + ["--algo", "smidas", "--l1", f"{LAMBDA:g}", "-l", f"{e:g}", "--power-t", "0"]
                   for e in ETAS],
        "tg": [base + online + ["--algo", "tg", "--sgd", "--l1", f"{LAMBDA:g}", "-l", f"{e:g}"] for e in ETAS],
        "fobos-l1": [base + online + ["--algo", "fobos", "--sgd", "--l1", f"{LAMBDA:g}", "-l", f"{e:g}"]
                     for e in ETAS],
    }
    if has_scd():
        cmds["scd"] = [base + ["--algo", "scd", "--l1", f"{LAMBDA:g}", "--random-seed", "1"]]
    return cmds


def has_scd() -> bool:
    from streamlearn.config import ALGO_NAMES
    return "scd" in ALGO_NAMES


def run_curve(cmd: list[str]) -> list[tuple[int, float, int, int]]:
    """(pass, objective, non-zero weights, data accesses) after every pass."""
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{res.stderr}")
    out = []
    for line in res.stderr.splitlines():
        m = LINE.match(line)
        if m:
            out.append((int(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4))))
    return out


def arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--passes", type=int, default=10)
    shared(ap, "quick", help="2 passes, results to bench/out/")


def run(args: argparse.Namespace, ctx: Context) -> None:
    passes = 2 if args.quick else args.passes
    out_md = REPO / ("bench/out/RESULTS.objective.quick.md" if args.quick else "bench/RESULTS.md")
    out_png = REPO / ("bench/out/objective.quick.png" if args.quick else "bench/objective.png")
    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE} is missing: this benchmark needs ../shared/data")

    results = {}
    for kind, name in (("s", "MAGIC04S"), ("d", "MAGIC04D")):
        data = build(kind)
        for learner, cmds in learner_cmds(data, passes).items():
            best = None
            for cmd in cmds:
                curve = run_curve(cmd)
                if curve and all(np.isfinite(c[1]) for c in curve) and (best is None or curve[-1][1] < best[1][-1][1]):
                    best = (cmd, curve)
            results[(name, learner)] = best
            say(f"{name} {learner}: final objective {best[1][-1][1]:.6f}, {best[1][-1][2]} non-zero, "
                f"{best[1][-1][3]:,} accesses")

    plot(results, out_png)
    m = machine_facts()
    text = [SECTION.start, "## Regularized objective against data accesses, MAGIC04S / MAGIC04D (bench/cases/objective.py)", "",
            f"- Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC",
            f"- Produced by: {ctx.produced_by()}",
            f"- Machine: nproc {m['nproc']}; Python {m['python']}, numba {m['numba']}, streamlearn commit {m['commit']}",
            f"- Data: MAGIC04 (19,020 examples, 10 features centred and scaled into [-1, 1]) + 1,000 random features (S: 1 with "
            f"probability 0.05; D: +-1), seed {SEED}; logistic loss, lambda {LAMBDA:g}, {passes} passes",
            f"- Step sizes searched for the online learners: {', '.join(f'{e:g}' for e in ETAS)} (best final objective kept)",
            f"- Plot: `{out_png.relative_to(REPO)}`", "",
            "| dataset | learner | best command (after `streamlearn train -d DATA`) | objective after pass 1 | final objective | non-zero weights | data accesses |",
            "|---|---|---|---:|---:|---:|---:|"]
    for (name, learner), (cmd, curve) in results.items():
        shown = " ".join(cmd[len(streamlearn_base()) + 3:])
        text.append(f"| {name} | {learner} | `{shown}` | {curve[0][1]:.6f} | {curve[-1][1]:.6f} | "
                    f"{curve[-1][2]} | {curve[-1][3]:,} |")
    text += ["", SECTION.end]
    SECTION.write(out_md, "\n".join(text) + "\n")
    say(f"results written to {out_md}")


def plot(results, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = sorted({n for n, _ in results})
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5))
    for ax, name in zip(np.atleast_1d(axes), names):
        for (n, learner), (_, curve) in results.items():
            if n == name:
                ax.plot([c[3] for c in curve], [c[1] for c in curve], marker="o", label=learner)
        finals = [c[-1][1] for (n, _), (_, c) in results.items() if n == name]
        ax.set_ylim(min(finals) - 0.02, max(finals) + 0.15)     # the first passes of large steps go far above
        ax.set_title(f"{name} (lambda = {LAMBDA:g})")
        ax.set_xlabel("data accesses")
        ax.set_ylabel("average logistic loss + lambda ||w||_1")
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


CASE = Case("objective", arguments, run, __doc__)
