"""L1-ball projection: per-example time of the online (tree) projection against the plain linear-time
projection recomputed over all non-zero weights after every example, as -b grows.

What it measures
----------------
``streamlearn train --algo l1ball --radius Z --projection tree|linear`` on the first N lines of the core
benchmark stream (``bench/data/bench-2m.vw``, ~30 features per line), logistic loss, for -b 16, 18,
20, 22 and 24. More bits mean fewer hash collisions and so more distinct non-zero weights n; the
tree projection costs O(k log n) per example (Duchi et al. 2008, Section 6), the linear one
(Figure 2 over the non-zero weights) O(n). Per-example time is measured in-process: the N lines are
parsed once (with the same hashing as the CLI), then the compiled learner kernel is timed over the
parsed blocks on a fresh weight table (median of 3 runs; one for linear), so start-up and parsing do
not blur it. Plain SGD on the same schedule (``--sgd -l 1``) is timed the same way: what reading and
writing the table costs at each -b.
The table also gives the number of non-zero weights at the end. Target (project issue): the tree
time stays flat as -b grows while the linear one grows with n; the ratio linear / tree is reported at
-b 22 (the paper measured 15x on RCV1 bigrams). Issue 13: the tree's cost above sgd at -b 24 is at
most 1.5x its cost at -b 16 (the ratio is printed under the table).

A second table times fobos (``--l1 1e-6``, default rule), l1ball-tree, eg and tg (default rule,
``--l1 1e-6``) on the whole core file, each ``--rounds`` times, the order rotated every round: the
issue asks each of the first three to stay within 1.5x of tg's wall time.

Usage: ``python -m bench run l1ball [--lines N] [--rounds R] [--radius Z] [--quick] [--bits 16,20,24]
[--reps K] [--clock wall|cpu] [--projection-only] [--out PATH]`` (quick: fewer lines and bits, results to
bench/out/RESULTS.l1ball.quick.md; ``--clock cpu`` times the kernel in thread CPU time, page faults
included, which other processes on a loaded machine do not blur; ``--projection-only``: no whole-file
runs). Results go to the ``bench_l1ball`` section of bench/RESULTS.md, or of ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
from pathlib import Path

from bench.data import DEFAULT_LINES, DEFAULT_SEED, ensure_data, ensure_head, read_through
from bench.harness import REPO, Case, Context, Section, machine_facts, say, shared
from bench.timing import kernel_time, run_once, streamlearn_base

SECTION = Section("bench_l1ball")
DEFAULT_OUT = Path("bench/RESULTS.md")
QUICK_OUT = Path("bench/out/RESULTS.l1ball.quick.md")
BITS = (16, 18, 20, 22, 24)
QUICK_BITS = (16, 22)
RATIO_BITS = 22


def train_cmd(path: Path, bits: int, projection: str, radius: float) -> list[str]:
    """l1ball with the given projection, or (projection "none") plain SGD on the same schedule: the
    baseline that shows what the table itself costs at each -b."""
    if projection == "none":
        return streamlearn_base() + ["train", "-d", str(path), "--loss", "logistic", "--sgd", "-l", "1",
                                     "-b", str(bits), "--quiet"]
    return streamlearn_base() + ["train", "-d", str(path), "--loss", "logistic", "--radius", repr(radius),
                                 "-l", "1", "--projection", projection, "-b", str(bits), "--quiet"]


def tg_cmd(path: Path) -> list[str]:
    return streamlearn_base() + ["train", "-d", str(path), "--loss", "logistic", "--algo", "tg",
                                 "--l1", "1e-06", "-b", "20", "--quiet"]


def whole_file_cmds(path: Path, radius: float) -> dict[str, list[str]]:
    """The learners compared on the whole file, each at -b 20 with logistic loss."""
    base = streamlearn_base() + ["train", "-d", str(path), "--loss", "logistic", "-b", "20", "--quiet"]
    return {
        "fobos l1": base + ["--algo", "fobos", "--l1", "1e-06"],
        "l1ball tree": train_cmd(path, 20, "tree", radius),
        "eg": base + ["--algo", "eg", "--radius", repr(radius), "-l", "1"],
        "tg": tg_cmd(path),
    }


def nonzero(path: Path, bits: int, projection: str, radius: float) -> int:
    """Non-zero weights at the end (from a readable model written by one extra, untimed run)."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "w.txt"
        subprocess.run(train_cmd(path, bits, projection, radius) + ["--readable-model", str(out)],
                       cwd=REPO, check=True)
        header = out.read_text().splitlines()[5]
        return int(header.split(": ")[1])


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", help="lines per projection run (default 50,000)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the whole-file comparison with tg")
    ap.add_argument("--radius", type=float, default=100.0)
    shared(ap, "quick")
    ap.add_argument("--bits", default=None, help="comma-separated -b values (default 16,18,20,22,24)")
    ap.add_argument("--reps", type=int, default=3, help="runs of sgd and tree per -b (the median is kept)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--projection-only", action="store_true", help="skip the whole-file comparison")
    shared(ap, "out", help="results file (default bench/RESULTS.md)")


def run(args: argparse.Namespace, ctx: Context) -> None:
    lines = args.lines or (5_000 if args.quick else 50_000)
    bits_list = (tuple(int(b) for b in args.bits.split(",")) if args.bits
                 else QUICK_BITS if args.quick else BITS)
    out = REPO / (args.out or (QUICK_OUT if args.quick else DEFAULT_OUT))

    data, meta = ensure_data(DEFAULT_LINES, DEFAULT_SEED)
    head = ensure_head(data, meta, Path("bench/data") / f"bench-l1ball-{lines}.vw", lines)
    tiny = ensure_head(data, meta, Path("bench/data") / "bench-l1ball-10.vw", 10)
    read_through(data)
    run_once(train_cmd(tiny, 16, "tree", args.radius))          # numba cache warm

    rows = []
    for bits in bits_list:
        row = {"bits": bits}
        for projection in ("none", "tree", "linear"):
            kernel_time(tiny, bits, projection, args.radius)          # compiled code loaded
            reps = 1 if projection == "linear" else args.reps
            secs = statistics.median(kernel_time(head, bits, projection, args.radius, clock=args.clock)
                                     for _ in range(reps))
            row[projection] = secs / lines * 1e6      # microseconds per example
        for projection in ("none", "tree"):
            secs = statistics.median(kernel_time(head, bits, projection, args.radius, pretouch=True,
                                                 clock=args.clock) for _ in range(args.reps))
            row[projection + "_warm"] = secs / lines * 1e6
        row["nnz"] = nonzero(head, bits, "tree", args.radius)
        rows.append(row)
        say(f"-b {bits}: sgd {row['none']:.2f} us, tree {row['tree']:.2f} us, linear {row['linear']:.2f} us per example, "
            f"{row['nnz']:,} non-zero weights")

    cmds = whole_file_cmds(data, args.radius)
    names = list(cmds)
    whole = {name: [] for name in names}
    orders = []
    if not args.quick and not args.projection_only:
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            orders.append(order)
            for name in order:
                whole[name].append(run_once(cmds[name]).wall)
        say("whole file: " + ", ".join(f"{k} {statistics.median(v):.3f} s" for k, v in whole.items()))

    m = machine_facts()
    text = [
        SECTION.start,
        "## L1-ball projection: tree vs linear per example; fobos, l1ball and eg against tg (bench/cases/l1ball.py)",
        "",
        f"- Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC",
        f"- Produced by: {ctx.produced_by()}",
        f"- Machine: nproc {m['nproc']}, CPU {m['cpu']}, load average {m['load']}; Python {m['python']}, "
        f"numba {m['numba']}, streamlearn commit {m['commit']}",
        f"- Data: the first {lines:,} lines of `{data}`; radius {args.radius:g}, `-l 1`, logistic",
        f"- Configuration, as a command: `{' '.join(train_cmd(Path('DATA'), 0, 'PROJECTION', args.radius)).replace(' -b 0', ' -b B')}`",
        "- Per-example time: the compiled learner kernel timed in-process over the parsed lines on a fresh",
        f"  table (no start-up, no parsing), median of {args.reps} runs for sgd and tree, one run for linear; "
        + ("thread CPU time (page faults included)." if args.clock == "cpu" else "wall time."),
        "- Plain SGD on the same schedule (`--sgd -l 1`, no projection) is timed the same way: what reading",
        "  and writing the table costs at each -b (page faults and cache misses grow with the table), so",
        "  tree - sgd is the projection's own cost. The last two columns repeat sgd and tree on a table whose",
        "  pages were all written before the clock started: without first-touch page faults (the steady",
        "  state of a long stream).",
        "",
        "| -b | non-zero weights | sgd (us/example) | tree (us/example) | tree - sgd | linear (us/example) "
        "| linear / tree | sgd, pre-touched | tree, pre-touched |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        text.append(f"| {row['bits']} | {row['nnz']:,} | {row['none']:.2f} | {row['tree']:.2f} | "
                    f"{row['tree'] - row['none']:.2f} | {row['linear']:.2f} | "
                    f"{row['linear'] / row['tree']:.1f} | {row['none_warm']:.2f} | {row['tree_warm']:.2f} |")
    lo = next((r for r in rows if r["bits"] == 16), None)
    hi = next((r for r in rows if r["bits"] == 24), None)
    if lo and hi:
        growth = (hi["tree"] - hi["none"]) / (lo["tree"] - lo["none"])
        text += ["", f"Tree cost above sgd, -b 24 against -b 16: **{growth:.2f}x** "
                     f"(target at most 1.5x: {'met' if growth <= 1.5 else '**not met**'})."]
    at = next((r for r in rows if r["bits"] == RATIO_BITS), None)
    if at:
        text += ["", f"Ratio linear / tree at -b {RATIO_BITS}: **{at['linear'] / at['tree']:.1f}x** "
                     f"(the paper: 15x on RCV1 bigrams)."]
    if whole["tg"]:
        tg = statistics.median(whole["tg"])
        text += ["", f"### Whole file ({meta['lines']:,} lines, -b 20, logistic, {args.rounds} rounds, "
                     f"order rotated every round)", "",
                 "| learner | command | median wall (s) | min (s) | max (s) | / tg (median) | target <= 1.5 |",
                 "|---|---|---:|---:|---:|---:|---|"]
        for name in names:
            med = statistics.median(whole[name])
            target = "" if name == "tg" else ("met" if med / tg <= 1.5 else "**not met**")
            text.append(f"| {name} | `{' '.join(cmds[name][len(streamlearn_base()):])}` | {med:.3f} | "
                        f"{min(whole[name]):.3f} | {max(whole[name]):.3f} | {med / tg:.2f} | {target} |")
        text += ["", "Raw runs (seconds, in the order they ran):", ""]
        for r, order in enumerate(orders):
            text.append(f"- round {r + 1}: " + ", ".join(f"{n} {whole[n][r]:.3f}" for n in order))
        text += ["", f"Program: `{' '.join(streamlearn_base())}`"]
    text += ["", SECTION.end]
    SECTION.write(out, "\n".join(text) + "\n")
    say(f"results written to {out}")


CASE = Case("l1ball", arguments, run, __doc__)
