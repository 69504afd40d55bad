"""Issue 30's speed check: ``streamlearn train`` against VW 9.11.9, like with like, on two streams with
different statistics.

* ``bench``: the project's benchmark stream (the first N lines of ``bench/data/bench-2m.vw``: ~160 B a
  line, 4 namespaces, mostly unit values, no tag);
* ``wide``: ``bench.data.ensure_wide`` (``bench.parse_speed.wide_stream``: importance and tag on every
  line, 6 namespaces, two with a namespace value, ~60 features a line with numeric, decimal and exponent
  values, ~480 B a line).

Per stream the cases are: ``--sgd`` with ``--l1`` (tg), the default rule with ``--l1``, ``-q`` (bench:
``tc``; wide: ``ut``, user x text) under the default rule, and ``--oaa 20`` under ``--sgd`` and the
default rule (the same lines labelled 1..20 by a hash of the line number). Both tools get ``-b 20``,
logistic loss and ``--quiet``. Each case: one warm-up run of each tool, then ``--runs`` rounds
alternating the tools (``bench.cases.targets.compare``); the ratio is judged on the fastest runs.

Usage: ``python -m bench run vs_vw [--lines N] [--wide-lines N] [--runs R] [--streams bench,wide]
[--cases NAME,...] [--out bench/RESULTS.md]`` (with ``--out`` the tables go between
``<!-- bench_vs_vw:start -->`` and ``<!-- bench_vs_vw:end -->``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
from pathlib import Path

from bench.cases.targets import VW, compare
from bench.data import core_head, ensure_throughput_data, ensure_wide, read_through
from bench.harness import Case, Context, Section, machine_facts, say, shared
from bench.timing import streamlearn_base

SECTION = Section("bench_vs_vw")
TARGET = 1.0

#: name -> (multiclass data?, streamlearn options, VW options); "{q}" is the stream's -q pair
CASES = {
    "--sgd --l1": (False, ["--algo", "tg", "--sgd", "--l1", "1e-7"], ["--sgd", "--l1", "1e-7"]),
    "default rule --l1": (False, ["--algo", "tg", "--l1", "1e-7"], ["--l1", "1e-7"]),
    "-q {q} (default rule)": (False, ["-q", "{q}"], ["-q", "{q}"]),
    "--oaa 20 --sgd": (True, ["--oaa", "20", "--sgd"], ["--oaa", "20", "--sgd"]),
    "--oaa 20 (default rule)": (True, ["--oaa", "20"], ["--oaa", "20"]),
}
QUADRATIC = {"bench": "tc", "wide": "ut"}


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", default=1_000_000)
    ap.add_argument("--wide-lines", type=int, default=500_000, help="lines of the wide stream")
    shared(ap, "runs", default=5)
    ap.add_argument("--streams", default="bench,wide")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names (with {q})")
    shared(ap, "out")


def stream_file(stream: str, lines: int, multiclass: bool):
    """The stream's file, generated in a child process when it is missing: Linux carries a process's peak
    RSS into the children it forks (``ru_maxrss`` survives fork and exec), so a stream generated in this
    process would set every later run's measured peak (a run on 2026-11-28 read 282 MiB for both tools)."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
            f"from bench.cases.vs_vw import _stream_file; print(_stream_file({stream!r}, {lines}, {multiclass}))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return Path(out.strip().splitlines()[-1])


def _stream_file(stream: str, lines: int, multiclass: bool):
    if stream == "wide":
        return ensure_wide(lines, multiclass)
    return ensure_throughput_data(lines)[0] if multiclass else core_head(lines)


def run(args: argparse.Namespace, ctx: Context) -> None:
    streams = [s.strip() for s in args.streams.split(",") if s.strip()]
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [n for n in names if n not in CASES] + [s for s in streams if s not in QUADRATIC]
    if bad:
        ctx.error(f"unknown case(s) or stream(s): {', '.join(bad)}; known: {', '.join(CASES)}; {', '.join(QUADRATIC)}")
    facts = machine_facts()
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    say(f"machine: nproc {facts['nproc']}, {facts['cpu']}, load {facts['load']}")
    out = []
    for stream in streams:
        lines = args.wide_lines if stream == "wide" else args.lines
        rows, raw, cmds = [], [], []
        for name in names:
            multiclass, sl_opts, vw_opts = CASES[name]
            q = QUADRATIC[stream]
            label = name.format(q=q)
            path = stream_file(stream, lines, multiclass)
            read_through(path)
            sl = streamlearn_base() + ["train", "-d", str(path), "-b", "20", "--loss", "logistic", "--quiet",
                                       *(o.format(q=q) for o in sl_opts)]
            vw = VW + ["-d", str(path), "-b", "20", "--loss_function", "logistic", "--quiet",
                       *(o.format(q=q) for o in vw_opts)]
            cmds += [f"{label}, streamlearn: `{' '.join(sl)}`", f"{label}, VW: `{' '.join(vw)}`"]
            row, raw_line = compare(f"{stream}: {label}", sl, vw, args.runs, TARGET)
            rows.append(row)
            raw.append(raw_line)
        out += [f"### Stream `{stream}`, {lines:,} lines", "",
                "| case | streamlearn fastest / median (s) | peak RSS (MiB) | VW fastest / median (s) | "
                "peak RSS (MiB) | ratio (fastest) | target |", "|---|---|---|---|---|---|---|",
                *rows, "", "Raw wall times (s), round by round:", "", *raw, "", "Commands:", "",
                *[f"- {c}" for c in cmds], ""]
    end_load = machine_facts()["load"]
    head = [
        SECTION.start,
        "## Issue 30: streamlearn against VW on two streams, like with like (bench/cases/vs_vw.py)",
        "",
        f"- Run {started}; produced by `python -m bench run vs_vw --lines {args.lines} --wide-lines "
        f"{args.wide_lines} --runs {args.runs}`" + (f" --streams {args.streams}" if args.streams != "bench,wide" else ""),
        f"- Machine: nproc {facts['nproc']}, {facts['cpu']}, RAM {facts['ram']}, load average {facts['load']} "
        f"at the start, {end_load} at the end; python {facts['python']}, numba {facts['numba']}, "
        f"vowpalwabbit {facts['vowpalwabbit']}, streamlearn commit {facts['commit']}",
        "- Streams: `bench` (the benchmark stream, ~160 B a line) and `wide` (`bench.parse_speed.wide_stream`: "
        "importance and tag, 6 namespaces, ~60 features a line, ~480 B a line); `--oaa 20`: the same lines "
        "labelled 1..20; both tools get `-b 20`, logistic loss, `--quiet`",
        f"- Method: one warm-up run of each tool, then {args.runs} rounds alternating the tools (the first "
        "alternates); fastest / median wall time, median peak RSS; ratio = streamlearn's fastest / VW's fastest",
        "",
    ]
    if args.out:
        SECTION.write(args.out, "\n".join(head + out + [SECTION.end]) + "\n")


CASE = Case("vs_vw", arguments, run, __doc__)
