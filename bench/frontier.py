"""Sparsity frontier: test accuracy against non-zero weights, streamlearn tg vs VW 9.11.9 ``--l1``.

What it measures
----------------
For 20 Newsgroups (comp.* vs rest), IMDB (positive vs negative review) and Reuters-21578 ModApte
('earn' vs rest), each tool is trained on the train split once per L1 strength of its sweep and
evaluated on the test split:

* VW: the default learner (adaptive, normalized, invariant updates) with ``--loss_function logistic
  --l1 L1 -b 18``, ``--predict_only_model`` (so the saved model is truncated) and ``--readable_model``;
  then ``-t -i MODEL -d TEST -p PRED``.
* streamlearn: ``train --loss logistic --algo tg --l1 L1 -b 18`` with the learner's defaults; then
  ``predict -i MODEL -d TEST -p PRED``.

Both tools make the same number of passes (``--passes``, default 1; with more than one, VW adds
``-c -k --holdout_off`` and streamlearn ``--holdout-off``). No other learner flag is given, so each
tool runs with its own defaults; ``--vw-args`` and ``--sl-args`` append extra arguments to the
training commands. The two L1 sweeps differ (VW_L1 and SL_L1 below, or ``--vw-l1`` / ``--sl-l1``)
because the two L1s mean different things: VW's is one global gravity, streamlearn's a per-feature
gravity scaled by each weight's own rate and counted from its first update (tg's defaults: VW's
default update rule and the cumulative penalty). Each sweep includes 0 (no L1), the densest
point.

For every run: the number of non-zero weights of the saved model (VW: the ``index:value`` lines of the
readable model whose value is not 0; streamlearn: the non-zero entries of the weight column of the
model file, read with ``streamlearn.io.model_file.load_model``), the test accuracy (a prediction > 0
means +1, anything else -1, compared with the sign of the label) and the wall time of the training
command.

Target (from the project issue): on every dataset streamlearn's frontier dominates VW's, i.e. for
every VW point there is a streamlearn point with no more non-zero weights and accuracy at least as
high, and at VW's densest point (most non-zero weights) the best streamlearn accuracy among points
with no more non-zero weights is at least VW's.

Data
----
The compressed VW files in ``--data-root`` (default ../shared/data/real next to the repository; the script exits 0 with a
message when it is absent) are rewritten once to ``bench/data/frontier/`` (git-ignored): the tag of
every line is removed (``-1 'alt.atheism/49960|w ...`` becomes ``-1 |w ...``; it carries the group
or topic names, i.e. the answer) and the lines of each train file are shuffled with
``random.Random(SHUFFLE_SEED)`` (the 20 Newsgroups train file is ordered by group). Namespaces and
features are unchanged and the test files keep their order. A ``.meta.json`` stamp next to each
prepared file names its source, so a stale or partial file is rebuilt.

Output
------
The section between ``<!-- bench_frontier:start -->`` and ``<!-- bench_frontier:end -->`` of
``bench/RESULTS.md`` (replaced, or appended when missing; the rest of the file is left as it is) and
the plot ``bench/frontier.png`` next to it. ``--quick`` sweeps fewer L1 values and writes
``bench/out/RESULTS.quick.md`` and ``bench/out/frontier.png`` instead. Models and predictions go to a
temporary directory that is removed at the end.

Usage: ``python bench/frontier.py [--quick] [--passes P] [--datasets news20,imdb,reuters]
[--vw-l1 0,1e-6,...] [--sl-l1 0,1e-4,...] [--vw-args=ARGS] [--sl-args=ARGS] [--out PATH]``
(write ``--sl-args=--foo`` with ``=`` when the value starts with a dash).
"""

from __future__ import annotations

import argparse
import datetime as dt
import lzma
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import (file_size, machine_facts, produced_by, read_meta, say,  # noqa: E402
                        streamlearn_base, vw_available, write_meta, write_section)

REPO = Path(__file__).resolve().parent.parent
DATA_ROOT = REPO.parent / "shared" / "data" / "real"
PREP_DIR = Path("bench/data/frontier")  # relative to REPO (children run with cwd=REPO)
DEFAULT_OUT = Path("bench/RESULTS.md")
QUICK_OUT = Path("bench/out/RESULTS.quick.md")
PLOT_NAME = "frontier.png"
SHUFFLE_SEED = 20261122
BITS = 18
MARK_START = "<!-- bench_frontier:start -->"
MARK_END = "<!-- bench_frontier:end -->"
PREP_VERSION = 1  # bump when the preparation of the data files changes


def l1_grid(low_exp: int, high_exp: int, mantissas: tuple[int, ...] = (1, 3)) -> tuple[float, ...]:
    """0, then m x 10^e for e in low_exp..high_exp and each mantissa m, up to 10^high_exp."""
    values = [float(f"{m}e{e}") for e in range(low_exp, high_exp + 1) for m in mantissas]
    return (0.0, *[v for v in values if v <= 10.0 ** high_exp])


# L1 sweeps: the same 1-2-5 steps per decade for both tools, each over the range where its models go
# from dense to (nearly) empty. VW's global gravity leaves a few hundred weights or fewer of these text
# models at 1e-4 (IMDB: none but the constant). streamlearn's per-feature gravity, scaled by each
# weight's own rate, needs values about 100x larger for the same sparsity; its sweep runs until the
# model is empty, so that even VW's sparsest point has a streamlearn point with no more weights.
# (A first run with 1-3 steps left two VW points undominated by a hair: see bench/RESULTS.md.)
VW_L1 = l1_grid(-8, -4, (1, 2, 5))
SL_L1 = l1_grid(-9, 0, (1, 2, 5))
QUICK_VW_L1 = l1_grid(-7, -4, (1,))
QUICK_SL_L1 = l1_grid(-6, 1, (1,))


@dataclass(frozen=True)
class Dataset:
    key: str
    title: str
    task: str
    train: str  # relative to the data root
    test: str


DATASETS = (
    Dataset("news20", "20 Newsgroups", "comp.* (+1) vs the other groups (-1)",
            "news20/news20.train.vw.xz", "news20/news20.test.vw.xz"),
    Dataset("imdb", "IMDB", "positive (+1) vs negative (-1) review",
            "imdb/imdb.train.vw.xz", "imdb/imdb.test.vw.xz"),
    Dataset("reuters", "Reuters-21578 ModApte", "'earn' (+1) vs the other topics (-1)",
            "reuters21578/reuters21578.modapte.train.vw.xz", "reuters21578/reuters21578.modapte.test.vw.xz"),
)


@dataclass
class Prepared:
    path: Path  # relative to REPO
    meta: dict


@dataclass
class Point:
    tool: str
    l1: float
    nnz: int
    correct: int
    total: int
    train_s: float

    @property
    def acc(self) -> float:
        return self.correct / self.total


# --------------------------------------------------------------------------- data files


def strip_tag(line: bytes) -> bytes:
    """``label [importance] 'tag|ns ...`` -> ``label [importance] |ns ...``: keep the leading numbers of
    the head (everything before the first '|'), drop the rest of it (the tag)."""
    head, bar, rest = line.partition(b"|")
    if not bar:
        raise ValueError(f"no '|' in line: {line[:80]!r}")
    numbers = []
    for token in head.split():
        try:
            float(token)
        except ValueError:
            break
        numbers.append(token)
    if not numbers:
        raise ValueError(f"no label in line: {line[:80]!r}")
    return b" ".join(numbers) + b" |" + rest


def read_stripped(source: Path) -> list[bytes]:
    with lzma.open(source, "rb") as f:
        return [strip_tag(line.rstrip(b"\n")) + b"\n" for line in f if line.strip()]


def positives(lines: list[bytes]) -> int:
    return sum(float(line.split(None, 1)[0]) > 0 for line in lines)


def prepare(source: Path, dst: Path, shuffle: bool) -> Prepared:
    """dst = source without tags (shuffled when asked); reused when its stamp matches."""
    st = source.stat()
    want = {"kind": "frontier-data", "version": PREP_VERSION, "source": str(source),
            "source_size": st.st_size, "source_mtime": int(st.st_mtime),
            "shuffle_seed": SHUFFLE_SEED if shuffle else None}
    meta = read_meta(dst)
    size = file_size(dst)
    if meta and size is not None and all(meta.get(k) == v for k, v in want.items()) and meta.get("size") == size:
        return Prepared(dst, meta)
    say(f"writing {dst} from {source}" + (f" (shuffled, seed {SHUFFLE_SEED})" if shuffle else "") + " ...")
    lines = read_stripped(source)
    if shuffle:
        random.Random(SHUFFLE_SEED).shuffle(lines)
    (REPO / dst.parent).mkdir(parents=True, exist_ok=True)
    tmp = REPO / dst.with_name(dst.name + ".part")
    tmp.write_bytes(b"".join(lines))
    os.replace(tmp, REPO / dst)
    meta = {**want, "lines": len(lines), "positives": positives(lines), "size": file_size(dst)}
    write_meta(dst, meta)
    return Prepared(dst, meta)


def prepare_dataset(root: Path, ds: Dataset) -> tuple[Prepared, Prepared]:
    train = prepare(root / ds.train, PREP_DIR / f"{ds.key}.train.vw", shuffle=True)
    test = prepare(root / ds.test, PREP_DIR / f"{ds.key}.test.vw", shuffle=False)
    return train, test


def read_labels(path: Path) -> list[bool]:
    """True for a positive label, one entry per line of a prepared file."""
    with open(REPO / path, "rb") as f:
        return [float(line.split(None, 1)[0]) > 0 for line in f]


# --------------------------------------------------------------------------- commands


def vw_base() -> list[str]:
    return [sys.executable, "-m", "vowpalwabbit"]


def fmt_l1(l1: float | str) -> str:
    return l1 if isinstance(l1, str) else f"{l1:g}"


def vw_train_cmd(train: str, l1: float | str, model: str, readable: str, passes: int, extra: list[str]) -> list[str]:
    cmd = vw_base() + ["-d", train, "--loss_function", "logistic", "--l1", fmt_l1(l1), "-b", str(BITS),
                       "--passes", str(passes)]
    if passes > 1:
        cmd += ["-c", "-k", "--holdout_off"]
    return cmd + ["-f", model, "--predict_only_model", "--readable_model", readable, "--quiet", *extra]


def vw_test_cmd(model: str, test: str, pred: str) -> list[str]:
    return vw_base() + ["-t", "-i", model, "-d", test, "-p", pred, "--quiet"]


def sl_train_cmd(train: str, l1: float | str, model: str, passes: int, extra: list[str]) -> list[str]:
    cmd = streamlearn_base() + ["train", "-d", train, "--loss", "logistic", "--algo", "tg", "--l1", fmt_l1(l1),
                                "-b", str(BITS), "--passes", str(passes)]
    if passes > 1:
        cmd.append("--holdout-off")
    return cmd + ["-f", model, "--quiet", *extra]


def sl_predict_cmd(model: str, test: str, pred: str) -> list[str]:
    return streamlearn_base() + ["predict", "-i", model, "-d", test, "-p", pred, "--quiet"]


def run(cmd: list[str]) -> float:
    """Run cmd (cwd the repository root); its wall time in seconds. A failure raises with its stderr."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-10:])
        raise RuntimeError(f"exit status {proc.returncode}: {shlex.join(cmd)}\n{tail}")
    return wall


# --------------------------------------------------------------------------- measurements


def vw_nonzero(readable: Path) -> int:
    """Non-zero weights in a VW readable model: lines ``index:value`` (after the header) with value != 0."""
    n = 0
    with open(readable, "rb") as f:
        for line in f:
            index, colon, value = line.partition(b":")
            if colon and index.isdigit() and float(value) != 0.0:
                n += 1
    return n


def sl_nonzero(model: Path) -> int:
    """Non-zero weights in a streamlearn model file (column 0 of the stored rows is the weight)."""
    import numpy as np
    from streamlearn.io.model_file import load_model

    _, _, rows = load_model(str(model))
    return int(np.count_nonzero(rows[:, 0])) if rows.shape[0] else 0


def count_correct(pred: Path, labels: list[bool]) -> int:
    """Test examples whose prediction has the label's sign (a prediction > 0 means +1)."""
    with open(pred, "rb") as f:
        preds = [float(line.split(None, 1)[0]) > 0 for line in f if line.strip()]
    if len(preds) != len(labels):
        raise RuntimeError(f"{pred}: {len(preds)} predictions for {len(labels)} test examples")
    return sum(p == y for p, y in zip(preds, labels))


def vw_point(train: Path, test: Path, labels: list[bool], l1: float, args, work: Path) -> Point:
    model, readable, pred = work / "vw.model", work / "vw.readable.txt", work / "vw.pred"
    wall = run(vw_train_cmd(str(train), l1, str(model), str(readable), args.passes, args.vw_extra))
    run(vw_test_cmd(str(model), str(test), str(pred)))
    return Point("VW", l1, vw_nonzero(readable), count_correct(pred, labels), len(labels), wall)


def sl_point(train: Path, test: Path, labels: list[bool], l1: float, args, work: Path) -> Point:
    model, pred = work / "sl.model", work / "sl.pred"
    wall = run(sl_train_cmd(str(train), l1, str(model), args.passes, args.sl_extra))
    run(sl_predict_cmd(str(model), str(test), str(pred)))
    return Point("streamlearn", l1, sl_nonzero(model), count_correct(pred, labels), len(labels), wall)


def sweep(kind: str, grid: tuple[float, ...], train: Path, test: Path, labels: list[bool], args,
          work: Path) -> list[Point]:
    point_fn = vw_point if kind == "VW" else sl_point
    points = []
    for l1 in grid:
        p = point_fn(train, test, labels, l1, args, work)
        say(f"  {kind:<11} l1 {fmt_l1(l1):>7}: {p.nnz:>7,} non-zero, accuracy {p.acc:.4f}, train {p.train_s:.2f} s")
        points.append(p)
    return points


def warm_up(test: Path, work: Path, args) -> None:
    """One untimed run of each tool on a small file, so no timing includes numba compilation."""
    say("warm-up (not timed): numba cache")
    run(sl_train_cmd(str(test), 0.0, str(work / "warm.model"), 1, args.sl_extra))
    run(vw_train_cmd(str(test), 0.0, str(work / "warm.vw"), str(work / "warm.txt"), 1, args.vw_extra))


# --------------------------------------------------------------------------- frontier check


@dataclass
class Verdict:
    undominated: list[Point]  # VW points with no streamlearn point at least as sparse and as accurate
    densest: Point  # VW's point with the most non-zero weights
    densest_best: Point | None  # best streamlearn point with no more non-zero weights than that

    @property
    def dominates(self) -> bool:
        return not self.undominated

    @property
    def densest_ok(self) -> bool:
        return self.densest_best is not None and self.densest_best.correct >= self.densest.correct

    @property
    def met(self) -> bool:
        return self.dominates and self.densest_ok


def best_within(points: list[Point], nnz: int) -> Point | None:
    """The most accurate point with at most nnz non-zero weights (the sparser one on a tie)."""
    fits = [p for p in points if p.nnz <= nnz]
    return max(fits, key=lambda p: (p.correct, -p.nnz)) if fits else None


def check(vw: list[Point], sl: list[Point]) -> Verdict:
    undominated = []
    for v in vw:
        best = best_within(sl, v.nnz)
        if best is None or best.correct < v.correct:
            undominated.append(v)
    densest = max(vw, key=lambda p: (p.nnz, p.correct))
    return Verdict(undominated, densest, best_within(sl, densest.nnz))


# --------------------------------------------------------------------------- plot


def plot(results: list[tuple[Dataset, list[Point], list[Point], Verdict]], path: Path) -> None:
    """One subplot per dataset: test accuracy against non-zero weights (symlog x, so 0 shows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.2 * len(results), 4.4), squeeze=False)
    for ax, (ds, vw, sl, verdict) in zip(axes[0], results):
        for points, style, label in ((vw, "o-", "VW --l1"), (sl, "s-", "streamlearn tg --l1")):
            pts = sorted(points, key=lambda p: (p.nnz, p.correct))
            ax.plot([p.nnz for p in pts], [p.acc for p in pts], style, label=label, markersize=5)
        ax.set_xscale("symlog", linthresh=10, linscale=0.3)
        ax.set_xlim(left=0)
        ax.set_title(f"{ds.title}: streamlearn dominates: {'yes' if verdict.dominates else 'no'}", fontsize=10)
        ax.set_xlabel("non-zero weights (log scale; 0 to 10 linear)")
        ax.set_ylabel("test accuracy")
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- report


def yes_no(ok: bool) -> str:
    return "yes" if ok else "no"


def point_table(vw: list[Point], sl: list[Point]) -> list[str]:
    out = ["| tool | L1 | non-zero weights | test accuracy | train time (s) |", "|---|---:|---:|---:|---:|"]
    for p in vw + sl:
        out.append(f"| {p.tool} | {fmt_l1(p.l1)} | {p.nnz:,} | {p.acc:.4f} ({p.correct:,}/{p.total:,}) "
                   f"| {p.train_s:.2f} |")
    return out


def verdict_lines(v: Verdict) -> list[str]:
    d, b = v.densest, v.densest_best
    best = "none" if b is None else f"{b.acc:.4f} (L1 {fmt_l1(b.l1)}, {b.nnz:,} non-zero weights)"
    lines = [f"- streamlearn's frontier dominates VW's: **{yes_no(v.dominates)}**",
             f"- At VW's densest point (L1 {fmt_l1(d.l1)}, {d.nnz:,} non-zero weights, accuracy {d.acc:.4f}) "
             f"streamlearn's best accuracy with at most as many non-zero weights is {best}: "
             f"**{'met' if v.densest_ok else 'not met'}**"]
    if v.undominated:
        lines.append("- VW points not dominated: " + "; ".join(
            f"L1 {fmt_l1(p.l1)} ({p.nnz:,} non-zero, {p.acc:.4f})" for p in v.undominated))
    return lines


def data_lines(prepared: dict) -> list[str]:
    out = ["| dataset | task | train (prepared) | train lines (+1) | test (prepared) | test lines (+1) |",
           "|---|---|---|---:|---|---:|"]
    for ds, (train, test) in prepared.items():
        out.append(f"| {ds.title} | {ds.task} | `{train.path}` from `{ds.train}` | {train.meta['lines']:,} "
                   f"({train.meta['positives']:,}) | `{test.path}` from `{ds.test}` | {test.meta['lines']:,} "
                   f"({test.meta['positives']:,}) |")
    return out


def command_lines(args) -> list[str]:
    p, vx, sx = args.passes, args.vw_extra, args.sl_extra
    return ["```",
            shlex.join(vw_train_cmd("TRAIN", "L1", "MODEL", "READABLE", p, vx)),
            shlex.join(vw_test_cmd("MODEL", "TEST", "PRED")),
            shlex.join(sl_train_cmd("TRAIN", "L1", "MODEL", p, sx)),
            shlex.join(sl_predict_cmd("MODEL", "TEST", "PRED")),
            "```"]


def render(res: dict) -> str:
    m, a = res["machine"], res["args"]
    all_met = all(v.met for _, _, _, v in res["results"])
    lines = [
        MARK_START,
        "## Sparsity frontier: streamlearn tg vs VW `--l1` (bench/frontier.py)",
        "",
        f"- Date: {res['date']} UTC; total run time {res['elapsed']:.0f} s",
        f"- Produced by: {res['produced_by']}",
        f"- Settings: passes {a.passes}, bits {BITS}, shuffle seed {SHUFFLE_SEED}; VW L1 sweep "
        f"{', '.join(map(fmt_l1, a.vw_l1))}; streamlearn L1 sweep {', '.join(map(fmt_l1, a.sl_l1))}"
        + (" (quick mode: smoke test of the script)" if a.quick else ""),
        f"- Extra arguments: VW `{shlex.join(a.vw_extra) or '(none)'}`, streamlearn "
        f"`{shlex.join(a.sl_extra) or '(none)'}`",
        f"- Machine: nproc {m['nproc']}, CPU {m['cpu']}, RAM {m['ram']}, load average at start (1/5/15 min) "
        f"{m['load']}, {m['os']}",
        f"- Versions: Python {m['python']}, numpy {m['numpy']}, numba {m['numba']}, "
        f"vowpalwabbit {m['vowpalwabbit']}, streamlearn commit {m['commit']}",
        "- Method: each tool trains once per L1 value on the shuffled, tag-free train file and predicts the "
        "test file; accuracy counts predictions > 0 as +1 and the rest as -1. Non-zero weights: VW's "
        "readable model (`index:value` lines with value != 0), streamlearn's model file (non-zero weights "
        "read with `load_model`). Train time is the wall time of the training command (one run, untimed "
        "warm-up before). A VW point is dominated when some streamlearn point has no more non-zero weights "
        "and at least the same accuracy.",
        "",
        "Data (tags removed, train lines shuffled; labels as in the source files):",
        "",
        *data_lines(res["prepared"]),
        "",
        "Commands (TRAIN, TEST, L1, MODEL, READABLE, PRED stand for the actual values):",
        "",
        *command_lines(a),
        "",
        f"Target (streamlearn dominates VW on every dataset and is at least as accurate at VW's densest "
        f"point): **{'met' if all_met else 'not met'}**",
        "",
        f"![frontier]({PLOT_NAME})",
    ]
    for ds, vw, sl, verdict in res["results"]:
        lines += ["", f"### {ds.title}", "", *point_table(vw, sl), "", *verdict_lines(verdict)]
    lines += ["", MARK_END]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main


def parse_grid(text: str) -> tuple[float, ...]:
    values = tuple(sorted({float(x) for x in text.split(",") if x.strip()}))
    if not values or values[0] < 0:
        raise argparse.ArgumentTypeError("a comma-separated list of L1 values >= 0")
    return values


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"fewer L1 values; results to {QUICK_OUT}")
    ap.add_argument("--passes", type=int, default=1, help="passes of both tools (default 1)")
    ap.add_argument("--datasets", default=",".join(d.key for d in DATASETS),
                    help="comma-separated subset of " + ", ".join(d.key for d in DATASETS))
    ap.add_argument("--vw-l1", type=parse_grid, default=None, help="VW's L1 values, comma-separated")
    ap.add_argument("--sl-l1", type=parse_grid, default=None, help="streamlearn's L1 values, comma-separated")
    ap.add_argument("--vw-args", default="", help="extra arguments of VW's training command (--vw-args=...)")
    ap.add_argument("--sl-args", default="", help="extra arguments of streamlearn train (--sl-args=...)")
    ap.add_argument("--data-root", type=Path, default=DATA_ROOT, help=f"datasets (default {DATA_ROOT})")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"results file (default {DEFAULT_OUT}, or {QUICK_OUT} with --quick); "
                    f"the plot {PLOT_NAME} goes next to it")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.datasets.split(",") if k.strip()]
    known = {d.key: d for d in DATASETS}
    if not keys or any(k not in known for k in keys):
        ap.error(f"--datasets must name some of {', '.join(known)}")
    args.datasets = [known[k] for k in keys]
    if args.passes < 1:
        ap.error("--passes must be at least 1")
    args.vw_l1 = args.vw_l1 or (QUICK_VW_L1 if args.quick else VW_L1)
    args.sl_l1 = args.sl_l1 or (QUICK_SL_L1 if args.quick else SL_L1)
    args.vw_extra, args.sl_extra = shlex.split(args.vw_args), shlex.split(args.sl_args)
    args.out = REPO / (args.out or (QUICK_OUT if args.quick else DEFAULT_OUT))
    return args


def main(argv: list[str] | None = None) -> int:
    raw_argv = sys.argv[1:] if argv is None else argv
    args = parse_args(raw_argv)
    if not args.data_root.is_dir():
        say(f"{args.data_root} is absent: frontier benchmark skipped")
        return 0
    if not vw_available():
        say("error: vowpalwabbit cannot be imported (pip install vowpalwabbit==9.11.9 into this Python)")
        return 1
    t0 = time.perf_counter()
    res: dict = {"args": args, "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
                 "produced_by": produced_by(raw_argv, "bench/frontier.py"),
                 "machine": machine_facts(), "prepared": {}, "results": []}
    for ds in args.datasets:
        res["prepared"][ds] = prepare_dataset(args.data_root, ds)
    with tempfile.TemporaryDirectory(prefix="frontier-") as tmp:
        work = Path(tmp)
        warm_up(next(iter(res["prepared"].values()))[1].path, work, args)
        for ds, (train, test) in res["prepared"].items():
            say(f"{ds.title}: {train.meta['lines']:,} train, {test.meta['lines']:,} test examples")
            labels = read_labels(test.path)
            vw = sweep("VW", args.vw_l1, train.path, test.path, labels, args, work)
            sl = sweep("streamlearn", args.sl_l1, train.path, test.path, labels, args, work)
            verdict = check(vw, sl)
            res["results"].append((ds, vw, sl, verdict))
            for line in verdict_lines(verdict):
                say("  " + line.replace("**", ""))
    res["elapsed"] = time.perf_counter() - t0
    plot(res["results"], args.out.parent / PLOT_NAME)
    write_section(args.out, render(res), MARK_START, MARK_END)
    say(f"results written to {args.out} and {args.out.parent / PLOT_NAME} ({res['elapsed']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
