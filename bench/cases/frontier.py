"""Sparsity frontier: test accuracy against non-zero weights, streamlearn's learners against VW 9.11.9
(``--l1`` and ``--ftrl``) and the batch L1 optimum (scikit-learn's liblinear).

What it measures
----------------
For 20 Newsgroups (comp.* vs rest), IMDB (positive vs negative review) and Reuters-21578 ModApte
('earn' vs rest), every series below trains on the train split once per value of its sweep, logistic
loss, ``-b 20`` hashed features, and is evaluated on the test split:

* **VW --l1**: VW's default learner (adaptive, normalized, invariant), ``--l1 L1``, one pass,
  ``--predict_only_model`` (so the saved model is truncated); test predictions from ``vw -t -i``.
* **VW --ftrl**: ``--ftrl`` with VW's default alpha 0.5 and beta 1, ``--l1 L1`` from 1e-6 to 10, one
  pass; test predictions from ``vw -t -i``.
* **batch optimum**: scikit-learn's ``LogisticRegression(l1_ratio=1, solver='liblinear', C=C,
  fit_intercept=False, random_state=0)`` (penalty='l1' before scikit-learn 1.8) on the same hashed
  features, read with ``streamlearn.csr.load_csr(bits=20)`` (so column j is weight slot j of the
  streamlearn and VW models), minimizing ``C sum_i loss_i + ||w||_1``. **No intercept: the constant feature is a column
  of X** (its slot, value 1 in every row), penalized like every other weight -- exactly as VW and
  streamlearn treat their constant, and as liblinear would penalize its own intercept anyway.
  scikit-learn's defaults otherwise (tol 1e-4, max_iter 100; a point that stopped at max_iter is
  marked).
* **streamlearn**: ``streamlearn train --loss logistic -b 20 --algo A ...`` for each learner
  (default tg, fobos, ftrl -- ``--ftrl-alpha 0.5 --ftrl-beta 1``, VW's defaults -- scd, ``--algo scd
  --cd-step column``, and scd-newton, ``--algo scd --cd-step newton``), the online
  ones with ``--passes P`` for each P of ``--passes`` (default 1 and 10; ``--holdout-off`` when P > 1,
  no shuffling), scd (batch coordinate descent) with ``--passes E`` epochs (default 10)
  and its L1 ``lambda = 1 / (C m)`` for each C of the batch sweep (m the training examples): the same
  objective as liblinear's at that C, scaled by 1/(C m). The runs go through ``streamlearn.cli.main``
  in-process in the worker processes (the CLI's code without a new interpreter per run); test
  accuracy comes from ``load_csr(TEST) @ w`` with the saved weights, and for the first point of every
  series the script also runs ``streamlearn predict`` and checks it gives the same correct count.

Non-zero weights are counted the same way for every series, **the constant included**: the
``index:value`` lines with value != 0 of VW's readable model, the non-zero weights of streamlearn's
model file (``load_model``), the non-zero coefficients of liblinear. Accuracy: a raw prediction > 0
means +1, anything else -1, compared with label > 0.

Targets (from the project issue), PASS/FAIL per dataset:

1. **one pass**: streamlearn's one-pass frontier (all its online learners' one-pass points together)
   dominates VW --ftrl's: for every VW --ftrl point there is a streamlearn one-pass point with no more
   non-zero weights and accuracy >= VW's - 0.002.
2. **at most 10 passes**: for every batch-optimum point with at least 300 non-zero weights there is a
   streamlearn point (any learner, <= 10 passes or epochs) with at most 1.5x its non-zero weights and
   accuracy >= its - 0.01.

The earlier target (streamlearn one pass dominates VW --l1 with no tolerance) is reported too.

``--seeds N`` re-runs every one-pass point (both VW series and streamlearn's one-pass series) on N - 1
further shuffles of the train files (seeds SHUFFLE_SEED + 1, ...) and reports how much the one-pass
figures move: per series, the spread (max - min over the N seeds) of the test accuracy at the same L1
value, and target 1 on each seed.

Data
----
The compressed VW files in ``--data-root`` (default ../shared/data/real next to the repository; the
script exits 0 with a message when it is absent) are rewritten once to ``bench/data/frontier/``
(git-ignored): the tag of every line is removed (``-1 'alt.atheism/49960|w ...`` becomes
``-1 |w ...``; it carries the group or topic names, i.e. the answer) and the lines of each train file
are shuffled with ``random.Random(SHUFFLE_SEED)`` (the 20 Newsgroups train file is ordered by group).
Namespaces and features are unchanged and the test files keep their order. A ``.meta.json`` stamp
next to each prepared file names its source, so a stale or partial file is rebuilt.

Output
------
The section between ``<!-- bench_frontier:start -->`` and ``<!-- bench_frontier:end -->`` of
``bench/RESULTS.md`` (replaced, or appended when missing; the rest of the file is left as it is) and
the plot ``bench/frontier.png`` next to it. ``--quick`` sweeps far fewer values and writes
``bench/out/RESULTS.quick.md`` and ``bench/out/frontier.png`` instead. Models and predictions go to a
temporary directory that is removed at the end.

Runs are spread over ``--jobs`` worker processes (default 2), so the train times in the tables are
wall times measured while another run shares the machine. A streamlearn learner whose probe command
fails (e.g. ``--algo ftrl`` before it exists) is skipped with a message; so are VW and scikit-learn
when they cannot be imported.

Usage: ``python -m bench run frontier [--quick] [--datasets news20,imdb,reuters] [--learners
tg,fobos,ftrl,scd,scd-newton] [--passes 1,10] [--scd-epochs 10] [--grid NAME=v1,v2,...]...
[--learner-args NAME=ARGS]... [--vw-args=ARGS] [--seeds N] [--jobs J] [--out PATH]``. Grid NAMEs:
``vw-l1``, ``vw-ftrl``, ``C`` (the batch sweep, also scd's), a learner (``tg``: all its passes) or a
learner and passes (``tg/10``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import pickle
import shlex
import statistics
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path

from bench.data import DATA_ROOT, DATASETS, SHUFFLE_SEED, Dataset, prepare_test, prepare_train
from bench.harness import REPO, Case, Context, Section, load_pickle, machine_facts, say, shared, version
from bench.timing import fmt_v, grid, parse_values, run_timed, streamlearn_base, vw_available, vw_base, vw_test_cmd

DEFAULT_OUT = Path("bench/RESULTS.md")
QUICK_OUT = Path("bench/out/RESULTS.quick.md")
PLOT_NAME = "frontier.png"
BITS = 20
SECTION = Section("bench_frontier")
LAST_RUN = REPO / "bench" / "out" / "frontier.last.pkl"  # the last run's results (--rerender)
FTRL_ALPHA, FTRL_BETA = 0.5, 1.0  # VW 9.11.9's defaults for --ftrl
ONE_PASS_TOL = 0.002  # target 1: accuracy >= VW --ftrl's - this
BATCH_TOL = 0.01  # target 2: accuracy >= the batch optimum's - this
BATCH_MIN_NNZ = 300  # target 2 looks at batch points with at least this many non-zero weights
BATCH_NNZ_FACTOR = 1.5  # ... and streamlearn points with at most this factor of their non-zero weights
BUDGETS = (100, 300, 1000, 3000, 10000, 30000)  # columns of the summary table


# Sweeps. VW's global --l1 leaves a few hundred weights or fewer of these text models at 1e-4;
# VW --ftrl's L1 (on the scale of its z, the summed gradients) spans 1e-6 to 10 (the range);
# streamlearn's tg and fobos L1 are per-feature and scaled by each weight's own rate, so they need
# larger values for the same sparsity (up to 1, where the models are nearly empty); ftrl takes VW's
# values and goes on to 1000 (one pass: 20 leaves ~500 weights of 20 Newsgroups; over 10 passes z sums
# ten times the gradients, so the interesting range moves up accordingly).
# The batch sweep is over liblinear's C (scd: lambda = 1/(C m)); at C = 0.01 the models hold a few
# dozen weights, at C = 10 thousands (and liblinear takes a minute on 20 Newsgroups).
FULL_GRIDS = {
    "vw-l1": grid(-8, -4, (1, 2, 5)),
    "vw-ftrl": grid(-6, 1, (1, 2, 5), zero=False),
    "C": (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0),
    "tg/1": grid(-8, 0, (1, 2, 5)),
    "fobos/1": grid(-8, 0, (1, 2, 5)),
    "ftrl/1": grid(-6, 3, (1, 2, 5)),
    "tg": grid(-6, 0, (1, 3)),
    "fobos": grid(-6, 0, (1, 3)),
    "ftrl": grid(-3, 3, (1, 2, 5)),
}
QUICK_GRIDS = {
    "vw-l1": (0.0, 1e-6, 1e-5, 1e-4),
    "vw-ftrl": (1e-6, 1e-2, 1.0, 10.0),
    "C": (0.01, 0.1),
    "tg": (0.0, 1e-4, 1e-3, 1e-2, 1e-1),
    "fobos": (0.0, 1e-4, 1e-3, 1e-2, 1e-1),
    "ftrl": (1e-2, 1.0, 10.0, 100.0, 1000.0),
}
QUICK_PASSES = (1, 3)


@dataclass(frozen=True)
class Learner:
    name: str
    args: tuple  # the learner's own arguments of `streamlearn train`
    batch: bool = False  # scd: --passes are epochs, no holdout option, lambda from the C sweep
    title: str = ""  # in labels (default: the name)


LEARNERS = {
    "tg": Learner("tg", ("--algo", "tg")),
    "fobos": Learner("fobos", ("--algo", "fobos")),
    "ftrl": Learner("ftrl", ("--algo", "ftrl", "--ftrl-alpha", f"{FTRL_ALPHA:g}", "--ftrl-beta", f"{FTRL_BETA:g}")),
    "scd": Learner("scd", ("--algo", "scd", "--cd-step", "column"), batch=True, title="scd (column step)"),  # Algorithm 1, the column step
    "scd-newton": Learner("scd-newton", ("--algo", "scd", "--cd-step", "newton"), batch=True),
}


@dataclass(frozen=True)
class Series:
    """One curve: a tool, a learner and a number of passes, swept over one parameter."""

    key: str  # "vw-l1", "vw-ftrl", "batch", "tg/1", "scd/10", ...
    tool: str  # "VW", "scikit-learn", "streamlearn"
    learner: str  # "l1", "ftrl", "liblinear", or a streamlearn learner name
    passes: int
    values: tuple  # the sweep: L1 values, or C values (batch, scd)
    extra: tuple = ()  # extra arguments of the training command

    @property
    def label(self) -> str:
        if self.tool == "VW":
            return f"VW --{self.learner}"
        if self.tool == "scikit-learn":
            return "batch optimum (liblinear)"
        unit = "epochs" if LEARNERS[self.learner].batch else ("pass" if self.passes == 1 else "passes")
        return f"streamlearn {LEARNERS[self.learner].title or self.learner}, {self.passes} {unit}"

    @property
    def param(self) -> str:
        return "C" if self.key == "batch" or (self.learner in LEARNERS and LEARNERS[self.learner].batch) else "L1"

    @property
    def one_pass(self) -> bool:
        """A one-pass online series (streamlearn or VW)."""
        return self.passes == 1 and self.tool != "scikit-learn" and not (
            self.learner in LEARNERS and LEARNERS[self.learner].batch)


@dataclass(frozen=True)
class Task:
    ds: str
    series: Series
    value: float
    seed: int
    train: str  # relative to REPO
    test: str
    m: int  # training examples (scd's lambda = 1/(C m))
    verify: bool = False  # also run `streamlearn predict` and compare


@dataclass
class Point:
    ds: str
    series: str
    value: float
    seed: int
    nnz: int = 0
    correct: int = 0
    total: int = 1
    train_s: float = 0.0
    note: str = ""
    error: str = ""

    @property
    def acc(self) -> float:
        return self.correct / self.total


# --------------------------------------------------------------------------- data files


# --------------------------------------------------------------------------- commands


def vw_train_cmd(series: Series, train: str, l1: float | str, model: str, readable: str) -> list[str]:
    cmd = vw_base() + ["-d", train, "--loss_function", "logistic"]
    if series.learner == "ftrl":
        cmd.append("--ftrl")
    return cmd + ["--l1", fmt_v(l1), "-b", str(BITS), "-f", model, "--predict_only_model",
                  "--readable_model", readable, "--quiet", *series.extra]


def scd_lambda(c: float, m: int) -> float:
    return 1.0 / (c * m)


def sl_train_args(series: Series, train: str, value: float | str, model: str, m: int | None = None) -> list[str]:
    """Arguments of ``streamlearn train`` for one point (value: L1, or C for scd)."""
    learner = LEARNERS[series.learner]
    if learner.batch and not isinstance(value, str):
        l1 = f"{scd_lambda(value, m):.6g}"
    else:
        l1 = fmt_v(value)
    args = ["train", "-d", train, "--loss", "logistic", "-b", str(BITS), *learner.args, "--l1", l1,
            "--passes", str(series.passes)]
    if series.passes > 1 and not learner.batch:
        args.append("--holdout-off")
    return args + ["-f", model, "--quiet", *series.extra]


# --------------------------------------------------------------------------- measurements (workers)

_CACHE: dict = {}


def loaded(path: str):
    """(X, y > 0) of a prepared file at -b BITS, loaded once per worker."""
    if path not in _CACHE:
        from streamlearn.csr import load_csr

        X, y, _ = load_csr(str(REPO / path), bits=BITS)
        _CACHE[path] = (X, y > 0)
    return _CACHE[path]


def vw_nonzero(readable: Path) -> int:
    """Non-zero weights in a VW readable model: lines ``index:value`` (after the header) with value != 0."""
    n = 0
    with open(readable, "rb") as f:
        for line in f:
            index, colon, value = line.partition(b":")
            if colon and index.isdigit() and float(value.split()[0]) != 0.0:
                n += 1
    return n


def count_correct_file(pred: Path, labels) -> int:
    """Test examples whose prediction in a predictions file has the label's sign (> 0 means +1)."""
    with open(pred, "rb") as f:
        preds = [float(line.split(None, 1)[0]) > 0 for line in f if line.strip()]
    if len(preds) != len(labels):
        raise RuntimeError(f"{pred}: {len(preds)} predictions for {len(labels)} test examples")
    return sum(bool(p == y) for p, y in zip(preds, labels))


def sl_run(args: list[str]) -> None:
    """``streamlearn ARGS`` in this process (the CLI's code); a failure raises RuntimeError with its
    one-line message."""
    import click

    from streamlearn.cli import main as sl_main

    try:
        sl_main(args, standalone_mode=False)
    except click.ClickException as exc:
        raise RuntimeError(exc.format_message()) from None
    except click.exceptions.Exit as exc:
        if exc.exit_code:
            raise RuntimeError(f"exit status {exc.exit_code}") from None


def weights_of(model: Path):
    import numpy as np

    from streamlearn.io.model_file import load_model

    _, index, rows = load_model(str(model))
    w = np.zeros(1 << BITS)
    w[index] = rows[:, 0]
    return w


def vw_task(task: Task, work: Path) -> Point:
    point = Point(task.ds, task.series.key, task.value, task.seed)
    model, readable, pred = work / "vw.model", work / "vw.readable.txt", work / "vw.pred"
    point.train_s = run_timed(vw_train_cmd(task.series, task.train, task.value, str(model), str(readable)))
    run_timed(vw_test_cmd(str(model), task.test, str(pred)))
    _, labels = loaded(task.test)
    point.nnz, point.correct, point.total = vw_nonzero(readable), count_correct_file(pred, labels), len(labels)
    return point


def sl_task(task: Task, work: Path) -> Point:
    import numpy as np

    point = Point(task.ds, task.series.key, task.value, task.seed)
    model = work / "sl.model"
    t0 = time.perf_counter()
    sl_run(sl_train_args(task.series, task.train, task.value, str(model), task.m))
    point.train_s = time.perf_counter() - t0
    X, labels = loaded(task.test)
    w = weights_of(model)
    point.nnz, point.total = int(np.count_nonzero(w)), len(labels)
    point.correct = int(np.count_nonzero((X @ w > 0) == labels))
    if LEARNERS[task.series.learner].batch:
        point.note = f"lambda {scd_lambda(task.value, task.m):.3g}"
    if task.verify:
        pred = work / "sl.pred"
        sl_run(["predict", "-i", str(model), "-d", task.test, "-p", str(pred), "--quiet"])
        by_predict = count_correct_file(pred, labels)
        if by_predict != point.correct:
            point.note = (point.note + "; " if point.note else "") + \
                f"streamlearn predict: {by_predict} correct, X @ w: {point.correct}"
    return point


def sklearn_task(task: Task, work: Path) -> Point:
    import numpy as np
    import sklearn
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    point = Point(task.ds, task.series.key, task.value, task.seed)
    X, y = loaded(task.train)
    Xt, labels = loaded(task.test)
    major, minor = (int(x) for x in sklearn.__version__.split(".")[:2])
    l1 = {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}
    max_iter = int(dict(task.series.extra).get("max_iter", 100))
    model = LogisticRegression(solver="liblinear", C=task.value, fit_intercept=False, max_iter=max_iter,
                               random_state=0, **l1)  # liblinear visits the coordinates in a random order
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    point.train_s = time.perf_counter() - t0
    coef = model.coef_.ravel()
    point.nnz, point.total = int(np.count_nonzero(coef)), len(labels)
    point.correct = int(np.count_nonzero((Xt @ coef > 0) == labels))
    iters = int(np.max(model.n_iter_))
    if iters >= max_iter:
        point.note = f"stopped at max_iter {max_iter}"
    return point


def run_task(task: Task, work_root: str, index: int) -> Point:
    work = Path(work_root) / f"t{index}"
    work.mkdir(parents=True, exist_ok=True)
    try:
        if task.series.tool == "VW":
            return vw_task(task, work)
        if task.series.tool == "scikit-learn":
            return sklearn_task(task, work)
        return sl_task(task, work)
    except Exception as exc:  # reported by the caller; the benchmark goes on
        return Point(task.ds, task.series.key, task.value, task.seed, error=f"{exc.__class__.__name__}: {exc}")
    finally:
        for f in work.iterdir():
            f.unlink()
        work.rmdir()


# --------------------------------------------------------------------------- series and tasks


def grid_for(args, name: str, passes: int) -> tuple[float, ...]:
    """The sweep of a learner at a number of passes: --grid NAME/P, --grid NAME, else the defaults
    (NAME/P, then NAME)."""
    for key in (f"{name}/{passes}", name):
        if key in args.grid:
            return args.grid[key]
    grids = QUICK_GRIDS if args.quick else FULL_GRIDS
    for key in (f"{name}/{passes}", name):
        if key in grids:
            return grids[key]
    raise KeyError(name)


def build_series(args) -> list[Series]:
    out = []
    if args.use_vw:
        out.append(Series("vw-l1", "VW", "l1", 1, grid_for(args, "vw-l1", 1), tuple(args.vw_extra)))
        out.append(Series("vw-ftrl", "VW", "ftrl", 1, grid_for(args, "vw-ftrl", 1), tuple(args.vw_extra)))
    c_values = args.grid.get("C") or (QUICK_GRIDS if args.quick else FULL_GRIDS)["C"]
    if args.use_sklearn:
        out.append(Series("batch", "scikit-learn", "liblinear", 1, c_values, (("max_iter", args.sk_max_iter),)))
    for name in args.learners:
        learner = LEARNERS[name]
        extra = tuple(args.learner_args.get(name, ()))
        if learner.batch:
            for e in args.scd_epochs:
                values = args.grid.get(f"{name}/{e}") or args.grid.get(name) or c_values
                out.append(Series(f"{name}/{e}", "streamlearn", name, e, values, extra))
        else:
            for p in args.passes:
                out.append(Series(f"{name}/{p}", "streamlearn", name, p, grid_for(args, name, p), extra))
    return out


def cost(task: Task, sizes: dict) -> float:
    """A rough duration, to start the long runs first."""
    size = sizes[task.ds]
    s = task.series
    if s.tool == "scikit-learn":
        return size * (3 + 6 * math.log10(max(task.value, 0.01) / 0.01))
    if s.tool == "VW":
        return size * 0.5
    return size * (0.6 + 0.3 * s.passes)


def probe(series: list[Series], tiny: Path, work: Path) -> dict[str, str]:
    """Run each streamlearn learner once on a tiny file (untimed; also fills the numba cache).
    Returns {learner: message} for the learners whose command fails."""
    failed = {}
    seen = set()
    for s in series:
        if s.tool != "streamlearn" or s.learner in seen:
            continue
        seen.add(s.learner)
        value = s.values[min(1, len(s.values) - 1)]
        cmd = streamlearn_base() + sl_train_args(replace(s, passes=min(s.passes, 2)), str(tiny), value,
                                                 str(work / "probe.model"), m=100)
        try:
            run_timed(cmd)
        except RuntimeError as exc:
            lines = str(exc).strip().splitlines()
            failed[s.learner] = lines[-1] if lines else str(exc)
            say(f"skipping streamlearn learner {s.learner}: its command fails ({failed[s.learner]})")
    return failed


def run_all(tasks: list[Task], jobs: int, work: Path, sizes: dict) -> tuple[list[Point], float]:
    """Run every task on ``jobs`` workers: the main shuffle's first, longest first; the re-runs on other
    shuffle seeds after them. Returns the points and the time at which the main shuffle's were done."""
    order = sorted(range(len(tasks)), key=lambda i: (tasks[i].seed != SHUFFLE_SEED, -cost(tasks[i], sizes)))
    points: list[Point | None] = [None] * len(tasks)
    main_left = sum(t.seed == SHUFFLE_SEED for t in tasks)
    main_done = 0.0
    t0 = time.perf_counter()
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(run_task, tasks[i], str(work), i): i for i in order}
        for n, fut in enumerate(as_completed(futures), 1):
            i = futures[fut]
            p = fut.result()
            points[i] = p
            t = tasks[i]
            if t.seed == SHUFFLE_SEED:
                main_left -= 1
                if main_left == 0:
                    main_done = time.perf_counter() - t0
            what = f"{t.ds:<8} {t.series.label:<32} {t.series.param} {fmt_v(t.value):>7}" + \
                (f" seed {t.seed}" if t.seed != SHUFFLE_SEED else "")
            if p.error:
                say(f"[{n}/{len(tasks)} {time.perf_counter() - t0:5.0f} s] {what}: FAILED {p.error.splitlines()[0]}")
            else:
                say(f"[{n}/{len(tasks)} {time.perf_counter() - t0:5.0f} s] {what}: {p.nnz:>7,} non-zero, "
                    f"accuracy {p.acc:.4f}, train {p.train_s:.2f} s" + (f" ({p.note})" if p.note else ""))
    return points, main_done  # type: ignore[return-value]


# --------------------------------------------------------------------------- targets


@dataclass
class TargetResult:
    name: str
    checked: int  # reference points checked
    misses: list  # (reference point, best streamlearn point or None)
    available: bool = True

    @property
    def ok(self) -> bool:
        return self.available and not self.misses

    @property
    def verdict(self) -> str:
        return "n/a" if not self.available else ("PASS" if self.ok else "FAIL")


def best_within(points: list[Point], nnz: float) -> Point | None:
    """The most accurate point with at most nnz non-zero weights (the sparser one on a tie)."""
    fits = [p for p in points if p.nnz <= nnz]
    return max(fits, key=lambda p: (p.correct, -p.nnz)) if fits else None


def target_one_pass(ref: list[Point], sl: list[Point], available: bool) -> TargetResult:
    misses = []
    for v in ref:
        best = best_within(sl, v.nnz)
        if best is None or best.acc < v.acc - ONE_PASS_TOL - 1e-12:
            misses.append((v, best))
    return TargetResult("one pass vs VW --ftrl", len(ref), misses, available and bool(ref))


def target_batch(ref: list[Point], sl: list[Point], available: bool) -> TargetResult:
    checked = [b for b in ref if b.nnz >= BATCH_MIN_NNZ]
    misses = []
    for b in checked:
        best = best_within(sl, BATCH_NNZ_FACTOR * b.nnz)
        if best is None or best.acc < b.acc - BATCH_TOL - 1e-12:
            misses.append((b, best))
    return TargetResult("<= 10 passes vs batch optimum", len(checked), misses, available and bool(ref))


def target_vw_l1(ref: list[Point], sl: list[Point], available: bool) -> TargetResult:
    misses = []
    for v in ref:
        best = best_within(sl, v.nnz)
        if best is None or best.correct < v.correct:
            misses.append((v, best))
    return TargetResult("one pass vs VW --l1 (no tolerance)", len(ref), misses, available and bool(ref))


def per_learner(series: list[Series], pts: dict) -> list[str]:
    """Targets 1 and 2 with each streamlearn learner alone: which learners carry them."""
    by = {s.key: s for s in series}
    out = []
    for i, (name, ref) in enumerate((("target 1", "vw-ftrl"), ("target 2", "batch"))):
        if ref not in pts:
            continue
        cells = []
        for learner in dict.fromkeys(s.learner for s in series if s.tool == "streamlearn"):
            own = [p for k, ps in pts.items() if by[k].tool == "streamlearn" and by[k].learner == learner
                   and (by[k].one_pass if i == 0 else by[k].passes <= 10) for p in ps]
            if not own:
                continue
            t = (target_one_pass if i == 0 else target_batch)(pts[ref], own, True)
            cells.append(f"{learner} {t.verdict} ({t.checked - len(t.misses)}/{t.checked})")
        if cells:
            out.append(f"{name} with one streamlearn learner alone: " + ", ".join(cells))
    return out


def evaluate(series: list[Series], pts: dict) -> list[TargetResult]:
    """pts: series key -> points (one dataset, one seed)."""
    by = {s.key: s for s in series}
    sl_one = [p for k, ps in pts.items() if by[k].tool == "streamlearn" and by[k].one_pass for p in ps]
    sl_all = [p for k, ps in pts.items() if by[k].tool == "streamlearn" and by[k].passes <= 10 for p in ps]
    return [target_one_pass(pts.get("vw-ftrl", []), sl_one, "vw-ftrl" in pts),
            target_batch(pts.get("batch", []), sl_all, "batch" in pts),
            target_vw_l1(pts.get("vw-l1", []), sl_one, "vw-l1" in pts)]


# --------------------------------------------------------------------------- plot

COLORS = {"vw-l1": "#7f7f7f", "vw-ftrl": "#d62728", "batch": "#000000", "tg": "#1f77b4", "fobos": "#2ca02c",
          "ftrl": "#ff7f0e", "scd": "#9467bd", "scd-newton": "#8c564b"}


def plot(res: dict, path: Path) -> None:
    """One subplot per dataset: test accuracy against non-zero weights (symlog x, so 0 shows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = res["datasets"]
    fig, axes = plt.subplots(1, len(datasets), figsize=(6.2 * len(datasets), 5.2), squeeze=False)
    handles = {}
    for ax, ds in zip(axes[0], datasets):
        pts = res["points"][ds.key][SHUFFLE_SEED]
        for s in res["series"]:
            ps = sorted(pts.get(s.key, []), key=lambda p: (p.nnz, p.correct))
            if not ps:
                continue
            color = COLORS.get(s.learner if s.tool == "streamlearn" else s.key, None)
            if s.tool == "VW":     # hollow, larger: streamlearn's ftrl points fall on VW --ftrl's
                style = dict(marker="o", linestyle=":", linewidth=1.2, markersize=7, markerfacecolor="none")
            elif s.tool == "scikit-learn":
                style = dict(marker="*", linestyle="-", linewidth=1.6, markersize=8)
            else:
                style = dict(marker="s" if s.passes == 1 else "^", markersize=4,
                             linestyle="-" if s.passes == 1 else "--", linewidth=1.2)
            (line,) = ax.plot([p.nnz for p in ps], [p.acc for p in ps], color=color, label=s.label,
                              alpha=0.9, **style)
            handles.setdefault(s.label, line)
        ax.set_xscale("symlog", linthresh=10, linscale=0.3)
        ax.set_xlim(left=0)
        verdicts = res["targets"][ds.key][SHUFFLE_SEED]
        ax.set_title(f"{ds.title}\ntarget 1 (one pass vs VW --ftrl): {verdicts[0].verdict}; "
                     f"target 2 (<= 10 passes vs batch): {verdicts[1].verdict}", fontsize=9)
        ax.set_xlabel("non-zero weights, constant included (log scale; 0 to 10 linear)")
        ax.set_ylabel("test accuracy")
        ax.grid(True, which="major", alpha=0.3)
    fig.legend(list(handles.values()), list(handles.keys()), loc="upper center", ncol=min(6, len(handles)),
               fontsize=8, frameon=False)
    rows = math.ceil(len(handles) / 6)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.045 * rows))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------- report


def point_line(p: Point) -> str:
    return f"{p.nnz:,} non-zero, {p.acc:.4f}"


def target_lines(t: TargetResult, ref_label: str) -> list[str]:
    if not t.available:
        return [f"- {t.name}: **n/a** ({ref_label} not run)"]
    lines = [f"- {t.name}: **{t.verdict}** ({t.checked - len(t.misses)} of {t.checked} {ref_label} points matched)"]
    for ref, best in t.misses:
        got = "none" if best is None else f"best streamlearn {point_line(best)} ({best.series}, {fmt_v(best.value)})"
        lines.append(f"  - missed: {ref_label} {fmt_v(ref.value)} ({point_line(ref)}); {got}")
    return lines


def summary_table(series: list[Series], pts: dict) -> list[str]:
    """Best accuracy of each series within non-zero budgets."""
    head = "| series | points | non-zero range | " + " | ".join(f"<= {b:,}" for b in BUDGETS) + " | best |"
    out = [head, "|---|---:|---|" + "---:|" * (len(BUDGETS) + 1)]
    for s in series:
        ps = pts.get(s.key, [])
        if not ps:
            continue
        cells = []
        for b in BUDGETS + (math.inf,):
            best = best_within(ps, b)
            cells.append("–" if best is None else f"{best.acc:.4f}")
        out.append(f"| {s.label} | {len(ps)} | {min(p.nnz for p in ps):,}–{max(p.nnz for p in ps):,} | "
                   + " | ".join(cells) + " |")
    return out


def point_table(series: list[Series], pts: dict) -> list[str]:
    out = ["| series | parameter | non-zero weights | test accuracy | train time (s) | note |",
           "|---|---:|---:|---:|---:|---|"]
    for s in series:
        for p in pts.get(s.key, []):
            out.append(f"| {s.label} | {s.param} {fmt_v(p.value)} | {p.nnz:,} | {p.acc:.4f} ({p.correct:,}/{p.total:,}) "
                       f"| {p.train_s:.2f} | {p.note} |")
    return out


def spread_lines(res: dict, ds: Dataset) -> list[str]:
    """How much the one-pass points move over the shuffle seeds (same series, same value)."""
    seeds = res["seeds"]
    if len(seeds) < 2:
        return []
    out = [f"Shuffle seeds {', '.join(map(str, seeds))}: spread (max - min over the seeds) of the one-pass "
           f"points at the same L1 value.", "",
           "| series | values | accuracy spread: median | mean | max (at L1) | non-zero weights: median relative spread |",
           "|---|---:|---:|---:|---:|---:|"]
    for s in res["series"]:
        if not s.one_pass:
            continue
        by_value: dict = {}
        for seed in seeds:
            for p in res["points"][ds.key][seed].get(s.key, []):
                by_value.setdefault(p.value, {})[seed] = p
        full = {v: d for v, d in by_value.items() if len(d) == len(seeds)}
        if not full:
            continue
        acc_spread = {v: max(p.acc for p in d.values()) - min(p.acc for p in d.values()) for v, d in full.items()}
        nnz_spread = [(max(p.nnz for p in d.values()) - min(p.nnz for p in d.values())) /
                      max(1, max(p.nnz for p in d.values())) for d in full.values()]
        worst = max(acc_spread, key=acc_spread.get)
        out.append(f"| {s.label} | {len(full)} | {statistics.median(acc_spread.values()):.4f} | "
                   f"{statistics.mean(acc_spread.values()):.4f} | {acc_spread[worst]:.4f} ({fmt_v(worst)}) | "
                   f"{statistics.median(nnz_spread):.1%} |")
    verdicts = [f"seed {seed}: {res['targets'][ds.key][seed][0].verdict}" for seed in seeds]
    out += ["", "Target 1 (one pass vs VW --ftrl) on each seed: " + ", ".join(verdicts) + "."]
    return out


def matched_ftrl_lines(pts: dict) -> list[str]:
    """streamlearn ftrl (one pass) against VW --ftrl at the same L1 values."""
    vw = {p.value: p for p in pts.get("vw-ftrl", [])}
    sl = {p.value: p for p in pts.get("ftrl/1", [])}
    common = sorted(set(vw) & set(sl))
    if not common:
        return []
    dacc = [sl[v].acc - vw[v].acc for v in common]
    ratio = [sl[v].nnz / vw[v].nnz for v in common if vw[v].nnz]
    same = sum(sl[v].nnz == vw[v].nnz for v in common)
    worst = max(common, key=lambda v: abs(sl[v].nnz - vw[v].nnz))
    return [f"streamlearn ftrl against VW --ftrl at the same {len(common)} L1 values (one pass, the same "
            f"alpha and beta): the same non-zero count at {same}; streamlearn / VW non-zero ratio "
            f"{min(ratio):.4f} to {max(ratio):.4f} (largest difference at L1 {fmt_v(worst)}: "
            f"{sl[worst].nnz:,} vs {vw[worst].nnz:,}); accuracy difference {min(dacc):+.4f} to {max(dacc):+.4f}."]


def data_lines(res: dict) -> list[str]:
    out = ["| dataset | task | train (prepared) | train lines (+1) | test (prepared) | test lines (+1) |",
           "|---|---|---|---:|---|---:|"]
    for ds in res["datasets"]:
        train, test = res["prepared"][ds.key]
        out.append(f"| {ds.title} | {ds.task} | `{train.path}` from `{ds.train}` | {train.meta['lines']:,} "
                   f"({train.meta['positives']:,}) | `{test.path}` from `{ds.test}` | {test.meta['lines']:,} "
                   f"({test.meta['positives']:,}) |")
    return out


def command_lines(res: dict) -> list[str]:
    out = ["```"]
    for s in res["series"]:
        if s.tool == "VW":
            out.append(shlex.join(vw_train_cmd(s, "TRAIN", "L1", "MODEL", "READABLE")))
    if any(s.tool == "VW" for s in res["series"]):
        out.append(shlex.join(vw_test_cmd("MODEL", "TEST", "PRED")))
    seen = set()
    for s in res["series"]:
        if s.tool == "streamlearn" and (s.learner, s.passes > 1) not in seen:
            seen.add((s.learner, s.passes > 1))
            passes = "P" if s.passes > 1 else "1"
            args = sl_train_args(s, "TRAIN", "LAMBDA" if LEARNERS[s.learner].batch else "L1", "MODEL")
            args[args.index("--passes") + 1] = "E" if LEARNERS[s.learner].batch else passes
            out.append("streamlearn " + shlex.join(args))
    out.append("streamlearn predict -i MODEL -d TEST -p PRED --quiet   # first point of each series, as a check")
    if any(s.tool == "scikit-learn" for s in res["series"]):
        out.append(f"X, y, _ = load_csr(TRAIN, bits={BITS}); LogisticRegression(l1_ratio=1, solver='liblinear', "
                   f"C=C, fit_intercept=False, random_state=0).fit(X, y > 0)")
    return out + ["```"]


def render(res: dict) -> str:
    m, a = res["machine"], res["args"]
    skipped = [f"{name} ({why})" for name, why in res["skipped"].items()]
    lines = [
        SECTION.start,
        "## Sparsity frontier: streamlearn vs VW `--l1`, VW `--ftrl` and the batch L1 optimum (bench/cases/frontier.py)",
        "",
        f"- Date: {res['date']} UTC; total run time {res['elapsed']:.0f} s with {a.jobs} worker processes"
        + (f" (the main shuffle's runs done after {res['main_elapsed']:.0f} s, then the other seeds' re-runs)"
           if len(res["seeds"]) > 1 else "")
        + (" (quick mode: smoke test of the script)" if a.quick else ""),
        f"- Produced by: {res['produced_by']}",
        f"- Settings: bits {BITS}, logistic loss, shuffle seed {SHUFFLE_SEED}"
        + (f" (and {', '.join(map(str, res['seeds'][1:]))} for the seed spread)" if len(res["seeds"]) > 1 else "")
        + f"; streamlearn learners {', '.join(a.learners)}, online passes {', '.join(map(str, a.passes))}, "
        f"scd epochs {', '.join(map(str, a.scd_epochs))}; liblinear max_iter {a.sk_max_iter}"
        + (f"; skipped: {'; '.join(skipped)}" if skipped else ""),
        "- Sweeps: " + "; ".join(f"{s.label}: {s.param} {', '.join(map(fmt_v, s.values))}" for s in res["series"]),
        f"- Extra arguments: VW `{shlex.join(a.vw_extra) or '(none)'}`, streamlearn "
        + (", ".join(f"{k} `{shlex.join(v)}`" for k, v in a.learner_args.items()) or "(none)"),
        f"- Machine: nproc {m['nproc']}, CPU {m['cpu']}, RAM {m['ram']}, load average at start (1/5/15 min) "
        f"{m['load']}, {m['os']}",
        f"- Versions: Python {m['python']}, numpy {m['numpy']}, numba {m['numba']}, vowpalwabbit "
        f"{m['vowpalwabbit']}, scikit-learn {version('scikit-learn')}, scipy {version('scipy')}, streamlearn "
        f"commit {m['commit']}",
        "- Method: every series trains once per value on the shuffled, tag-free train file and is evaluated on "
        "the test file; accuracy counts raw predictions > 0 as +1. Non-zero weights include the constant for "
        "every series (VW: readable model; streamlearn: model file; liblinear: coefficients, the constant "
        "being a column of X with `fit_intercept=False`). streamlearn's test predictions are "
        "`load_csr(TEST) @ w` (checked against `streamlearn predict` on the first point of each series). "
        "scd's L1 is `lambda = 1/(C m)` (m training examples), the liblinear problem at the same C. Train "
        "times are wall times with two runs sharing the 2 cores.",
        "",
        "Data (tags removed, train lines shuffled; labels as in the source files):",
        "",
        *data_lines(res),
        "",
        "Commands (TRAIN, TEST, L1, LAMBDA, P, E, MODEL, READABLE, PRED stand for the actual values; "
        "streamlearn runs in-process through `streamlearn.cli.main`):",
        "",
        *command_lines(res),
        "",
        "Targets: (1) **one pass**: for every VW `--ftrl` point a streamlearn one-pass point (tg, fobos, "
        f"ftrl) with no more non-zero weights and accuracy >= VW's - {ONE_PASS_TOL}; (2) **<= 10 passes**: "
        f"for every batch-optimum point with >= {BATCH_MIN_NNZ} non-zero weights a streamlearn point (any "
        f"learner, <= 10 passes/epochs) with <= {BATCH_NNZ_FACTOR}x its non-zero weights and accuracy >= its "
        f"- {BATCH_TOL}. Also shown: the earlier target (one pass dominates VW `--l1`, no tolerance).",
        "",
        "| dataset | target 1: one pass vs VW --ftrl | target 2: <= 10 passes vs batch | one pass vs VW --l1 |",
        "|---|---|---|---|",
    ]
    for ds in res["datasets"]:
        t = res["targets"][ds.key][SHUFFLE_SEED]
        lines.append(f"| {ds.title} | **{t[0].verdict}** | **{t[1].verdict}** | {t[2].verdict} |")
    lines += ["", f"![frontier]({PLOT_NAME})"]
    for ds in res["datasets"]:
        pts = res["points"][ds.key][SHUFFLE_SEED]
        t = res["targets"][ds.key][SHUFFLE_SEED]
        lines += ["", f"### {ds.title}", "",
                  *target_lines(t[0], "VW --ftrl L1"), *target_lines(t[1], "batch C"),
                  *target_lines(t[2], "VW --l1 L1"),
                  *[f"- {line}" for line in per_learner(res["series"], pts)], "",
                  "Best test accuracy of each series with at most N non-zero weights:", "",
                  *summary_table(res["series"], pts), ""]
        matched = matched_ftrl_lines(pts)
        if matched:
            lines += [*matched, ""]
        spread = spread_lines(res, ds)
        if spread:
            lines += [*spread, ""]
        failures = res["failures"].get(ds.key)
        if failures:
            lines += [f"Failed runs: {failures}", ""]
        lines += ["<details><summary>All points</summary>", "", *point_table(res["series"], pts), "",
                  "</details>"]
    lines += ["", SECTION.end]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main


def parse_named(items: list[str], what: str, value_fn) -> dict:
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise argparse.ArgumentTypeError(f"{what} must be NAME=VALUE (got {item})")
        out[name.strip()] = value_fn(value)
    return out


def int_list(text: str) -> tuple[int, ...]:
    values = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of integers >= 1")
    return values


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "quick", help=f"far fewer values; results to {QUICK_OUT}")
    ap.add_argument("--datasets", default=",".join(d.key for d in DATASETS),
                    help="comma-separated subset of " + ", ".join(d.key for d in DATASETS))
    ap.add_argument("--learners", default=",".join(LEARNERS),
                    help="streamlearn learners, comma-separated subset of " + ", ".join(LEARNERS))
    ap.add_argument("--passes", type=int_list, default=None,
                    help="passes of the online learners (default 1,10; with --quick 1,3)")
    ap.add_argument("--scd-epochs", type=int_list, default=None, help="scd's --passes (default 10; with --quick 3)")
    ap.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2,...",
                    help="a sweep: NAME vw-l1, vw-ftrl, C, a learner or LEARNER/PASSES (repeatable)")
    ap.add_argument("--learner-args", action="append", default=[], metavar="NAME=ARGS",
                    help="extra arguments of a streamlearn learner's training command (repeatable)")
    ap.add_argument("--vw-args", default="", help="extra arguments of VW's training commands (--vw-args=...)")
    ap.add_argument("--sk-max-iter", type=int, default=100, help="liblinear's max_iter (default 100, sklearn's)")
    ap.add_argument("--no-vw", action="store_true", help="leave out the VW series")
    ap.add_argument("--no-batch", action="store_true", help="leave out the scikit-learn batch optimum")
    ap.add_argument("--seeds", type=int, default=1,
                    help="re-run the one-pass points on this many shuffles in all (default 1: no re-runs)")
    shared(ap, "jobs", help="worker processes (default 2)")
    shared(ap, "data-root", default=DATA_ROOT, help=f"datasets (default {DATA_ROOT})")
    ap.add_argument("--rerender", action="store_true",
                    help=f"only rewrite the report and the plot from the last run's points ({LAST_RUN.name})")
    shared(ap, "out", help=f"results file (default {DEFAULT_OUT}, or {QUICK_OUT} with --quick); "
                    f"the plot {PLOT_NAME} goes next to it")


def check(args: argparse.Namespace, ctx: Context) -> None:
    keys = [k.strip() for k in args.datasets.split(",") if k.strip()]
    known = {d.key: d for d in DATASETS}
    if not keys or any(k not in known for k in keys):
        ctx.error(f"--datasets must name some of {', '.join(known)}")
    args.datasets = [known[k] for k in keys]
    args.learners = [k.strip() for k in args.learners.split(",") if k.strip()]
    if any(k not in LEARNERS for k in args.learners):
        ctx.error(f"--learners must name some of {', '.join(LEARNERS)}")
    args.passes = args.passes or (QUICK_PASSES if args.quick else (1, 10))
    args.scd_epochs = args.scd_epochs or ((3,) if args.quick else (10,))
    if any(p > 10 for p in args.passes + args.scd_epochs):
        ctx.error("the targets look at <= 10 passes: --passes and --scd-epochs must be <= 10")
    if args.seeds < 1 or args.jobs < 1:
        ctx.error("--seeds and --jobs must be at least 1")
    try:
        args.grid = parse_named(args.grid, "--grid", parse_values)
        args.learner_args = parse_named(args.learner_args, "--learner-args", shlex.split)
    except argparse.ArgumentTypeError as exc:
        ctx.error(str(exc))
    args.vw_extra = shlex.split(args.vw_args)
    args.out = REPO / (args.out or (QUICK_OUT if args.quick else DEFAULT_OUT))
    return args


def run(args: argparse.Namespace, ctx: Context) -> int:
    raw_argv = ctx.argv
    check(args, ctx)
    if args.rerender:
        res = load_pickle(LAST_RUN, __name__)
        res["args"].out = args.out if "--out" in " ".join(raw_argv) else res["args"].out
        return report(res)
    if not args.data_root.is_dir():
        say(f"{args.data_root} is absent: frontier benchmark skipped")
        return 0
    skipped: dict[str, str] = {}
    args.use_vw = not args.no_vw and vw_available()
    if not args.no_vw and not args.use_vw:
        skipped["VW"] = "vowpalwabbit cannot be imported"
    try:
        import scipy  # noqa: F401
        import sklearn  # noqa: F401
        args.use_sklearn = not args.no_batch
    except ImportError:
        args.use_sklearn = False
        if not args.no_batch:
            skipped["batch optimum"] = "scikit-learn or scipy cannot be imported"
    for what, why in skipped.items():
        say(f"skipping {what}: {why}")
    t0 = time.perf_counter()
    seeds = [SHUFFLE_SEED + i for i in range(args.seeds)]
    res: dict = {"args": args, "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
                 "produced_by": ctx.produced_by(), "machine": machine_facts(),
                 "datasets": args.datasets, "seeds": seeds, "prepared": {}, "skipped": skipped,
                 "points": {}, "targets": {}, "failures": {}}
    trains: dict = {}
    for ds in args.datasets:
        for seed in seeds:
            trains[ds.key, seed] = prepare_train(args.data_root, ds, seed)
        res["prepared"][ds.key] = (trains[ds.key, SHUFFLE_SEED], prepare_test(args.data_root, ds))
    series = build_series(args)
    with tempfile.TemporaryDirectory(prefix="frontier-") as tmp:
        work = Path(tmp)
        tiny = work / "tiny.vw"
        with open(REPO / res["prepared"][args.datasets[0].key][1].path, "rb") as f:
            tiny.write_bytes(b"".join(f.readline() for _ in range(200)))
        failed = probe(series, tiny, work)
        for name, why in failed.items():
            skipped[f"streamlearn {name}"] = why
        series = [s for s in series if not (s.tool == "streamlearn" and s.learner in failed)]
        res["series"] = series
        tasks = []
        for ds in args.datasets:
            test = str(res["prepared"][ds.key][1].path)
            for seed in seeds:
                train = trains[ds.key, seed]
                for s in series:
                    if seed != SHUFFLE_SEED and not s.one_pass:
                        continue
                    for i, v in enumerate(s.values):
                        tasks.append(Task(ds.key, s, v, seed, str(train.path), test, train.meta["lines"],
                                          verify=(i == 0 and seed == SHUFFLE_SEED and s.tool == "streamlearn")))
        sizes = {ds.key: res["prepared"][ds.key][0].meta["size"] / 1e7 for ds in args.datasets}
        say(f"{len(tasks)} runs on {args.jobs} worker processes")
        points, res["main_elapsed"] = run_all(tasks, args.jobs, work, sizes)
    for ds in args.datasets:
        res["points"][ds.key] = {seed: {} for seed in seeds}
        res["targets"][ds.key] = {}
    failures: dict = {}
    for t, p in zip(tasks, points):
        if p.error:
            failures.setdefault(t.ds, []).append(f"{t.series.label} {t.series.param} {fmt_v(t.value)}: "
                                                 f"{p.error.splitlines()[0]}")
            continue
        res["points"][t.ds][t.seed].setdefault(t.series.key, []).append(p)
    res["failures"] = {k: "; ".join(v[:5]) + (f" (and {len(v) - 5} more)" if len(v) > 5 else "")
                       for k, v in failures.items()}
    for ds in args.datasets:
        for seed in seeds:
            res["targets"][ds.key][seed] = evaluate(series, res["points"][ds.key][seed])
    res["elapsed"] = time.perf_counter() - t0
    LAST_RUN.parent.mkdir(parents=True, exist_ok=True)
    with open(LAST_RUN, "wb") as f:
        pickle.dump(res, f)
    return report(res)


def report(res: dict) -> int:
    args, seeds = res["args"], res["seeds"]
    say("")
    for ds in args.datasets:
        t = res["targets"][ds.key][SHUFFLE_SEED]
        say(f"{ds.title}: target 1 (one pass vs VW --ftrl) {t[0].verdict}; target 2 (<= 10 passes vs batch) "
            f"{t[1].verdict}; one pass vs VW --l1 {t[2].verdict}")
        for line in target_lines(t[0], "VW --ftrl L1")[1:] + target_lines(t[1], "batch C")[1:]:
            say("  " + line.strip())
        if len(seeds) > 1:
            say("  target 1 per seed: " + ", ".join(f"{s}: {res['targets'][ds.key][s][0].verdict}" for s in seeds))
    try:
        plot(res, args.out.parent / PLOT_NAME)
    except Exception as exc:  # the tables matter more than the picture
        say(f"warning: the plot could not be drawn ({exc.__class__.__name__}: {exc})")
    SECTION.write(args.out, render(res))
    say(f"results written to {args.out} and {args.out.parent / PLOT_NAME} ({res['elapsed']:.0f} s)")
    return 0


CASE = Case("frontier", arguments, run, __doc__)
