"""Update rules benchmark: streamlearn's VW-style update rules against VW 9.11.9's on the core benchmark file.

What it measures
----------------
End-to-end wall time and peak RSS of five training commands on the file of ``bench/cases/core.py``
(default: 2,000,000 lines from ``python -m streamlearn.datasets bench``), all with logistic loss,
``-b BITS`` and ``--quiet``:

1. ``streamlearn train --adaptive --normalized`` (plain sgd, no L1): the command of the issue's target;
2. ``streamlearn train`` with no rule flag: the default rule, adaptive + normalized + invariant;
3. ``streamlearn train --algo tg --l1 1e-6``: the default rule with lazy per-feature truncated gradient;
4. ``python -m vowpalwabbit`` with no rule flag: VW's default learner (adaptive + normalized + invariant);
5. ``python -m vowpalwabbit --adaptive --normalized``: VW with the same rule as command 1.

The five commands run once per round for ``--runs`` rounds, and the order rotates by one position from
round to round (round 1: 1 2 3 4 5, round 2: 2 3 4 5 1, ...), so that with 5 rounds every command runs
once in every position. Reported: median, min and max wall time and median and max peak RSS of each
command, the ratios of the median wall times (1)/(4), (2)/(4), (3)/(4) and (1)/(5) (with the ratios of
the minimums next to them), and every raw run.

How
---
The timing helpers are those of ``bench/cases/core.py``: each command runs as a child process
(``subprocess.Popen``, stdout and stderr to /dev/null, working directory the repository root); wall time
is ``time.perf_counter()`` from just before the start of the child to just after it is reaped; peak RSS
is ``ru_maxrss`` (KiB on Linux) from ``os.wait4`` on that child. Before anything is timed, every command
runs once on the 10-line head of the data file (this fills the numba cache, so no timing includes
compilation) and the data file is read once (so every run starts with it in the page cache). MiB means
2^20 bytes throughout. If a source file of the streamlearn package changes while the benchmark runs (the
numba cache is then rebuilt inside a timed run, and the runs mix two versions of the code), the script
says so on the console and in the results; run it again on a quiet tree.

Target checked (from the project issue): throughput with ``--adaptive --normalized`` within 1.3x of VW's
default learner on the core benchmark file, i.e. the ratio of median wall times (1)/(4) is at most 1.3
(same file, so the ratio of wall times is the inverse ratio of throughputs).

Files: the data is that of ``bench/cases/core.py`` in ``bench/data/`` (git-ignored; generated when
missing or stale). The results go to the section between ``<!-- bench_rules:start -->`` and
``<!-- bench_rules:end -->`` of ``bench/RESULTS.md`` (``--quick`` writes
``bench/out/RESULTS.rules.quick.md`` instead); the rest of that file is left as it is.

Usage: ``python -m bench run rules [--lines N] [--runs R] [--bits B] [--seed S] [--quick] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.data import DATA_DIR, DEFAULT_LINES, DEFAULT_SEED, STARTUP_LINES, ensure_data, ensure_head, read_through
from bench.harness import (QUICK_LINES, QUICK_RUNS, REPO, Case, Context, Section, fmt_mib, fmt_s, machine_facts, met,
                           say, shared)
from bench.timing import Run, Summary, run_once, streamlearn_base, summarize, vw_available

DEFAULT_OUT = Path("bench/RESULTS.md")
QUICK_OUT = Path("bench/out/RESULTS.rules.quick.md")
DEFAULT_RUNS = 5
TG_L1 = 1e-6
THROUGHPUT_RATIO_TARGET = 1.3
SECTION = Section("bench_rules")


@dataclass
class Command:
    key: str  # "1" .. "5"
    name: str
    tool: str  # "streamlearn" or "VW"
    extra: list[str]  # options between the data file and the common options


COMMANDS = [
    Command("1", "streamlearn --adaptive --normalized", "streamlearn", ["--adaptive", "--normalized"]),
    Command("2", "streamlearn default rule", "streamlearn", []),
    Command("3", f"streamlearn tg --l1 {TG_L1:g}", "streamlearn", ["--algo", "tg", "--l1", repr(TG_L1)]),
    Command("4", "VW default learner", "VW", []),
    Command("5", "VW --adaptive --normalized", "VW", ["--adaptive", "--normalized"]),
]

# (numerator, denominator, what it says); the first is the target.
RATIOS = [
    ("1", "4", "streamlearn --adaptive --normalized / VW default learner (target)"),
    ("2", "4", "streamlearn default rule / VW default learner (same rule)"),
    ("3", "4", f"streamlearn tg --l1 {TG_L1:g} / VW default learner"),
    ("1", "5", "streamlearn --adaptive --normalized / VW --adaptive --normalized (same rule)"),
]


def newest_source() -> tuple[float, str]:
    """(mtime, path) of the most recently modified .py file of the streamlearn package."""
    best = (0.0, "")
    for p in (REPO / "streamlearn").rglob("*.py"):
        try:
            best = max(best, (p.stat().st_mtime, str(p.relative_to(REPO))))
        except OSError:
            pass
    return best


def command_line(c: Command, path: Path, bits: int) -> list[str]:
    if c.tool == "streamlearn":
        # --loss before the rule flags, as in the issue: train -d DATA --loss logistic --adaptive ...
        return streamlearn_base() + ["train", "-d", str(path), "--loss", "logistic", *c.extra,
                                     "-b", str(bits), "--quiet"]
    # VW: the rule flags before --loss_function, as in `vw -d DATA --adaptive --normalized --loss_function ...`
    return [sys.executable, "-m", "vowpalwabbit", "-d", str(path), *c.extra, "--loss_function", "logistic",
            "-b", str(bits), "--quiet"]


def rotate(cmds: dict[str, list[str]], rounds: int) -> tuple[dict[str, list[Run]], list[list[str]]]:
    """`rounds` rounds of every command; the order rotates by one position each round.

    Returns the runs of each command (by key) and the order of each round (a list of keys).
    """
    keys = list(cmds)
    runs: dict[str, list[Run]] = {k: [] for k in keys}
    orders = []
    for i in range(rounds):
        shift = i % len(keys)
        order = keys[shift:] + keys[:shift]
        parts = []
        for k in order:
            run = run_once(cmds[k])
            runs[k].append(run)
            parts.append(f"({k}) {run.wall:.3f} s {run.rss_mib:.1f} MiB")
        orders.append(order)
        say(f"  round {i + 1}/{rounds}: " + ", ".join(parts))
    return runs, orders


# --------------------------------------------------------------------------- report


def ratio(res: dict, num: str, den: str, field: str = "median") -> float | None:
    a, b = res["summary"].get(num), res["summary"].get(den)
    if a is None or b is None:
        return None
    return getattr(a, field) / getattr(b, field)


def fmt_ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def target_verdict(res: dict) -> tuple[str, bool | None, str]:
    target = (f"Throughput with `--adaptive --normalized` within {THROUGHPUT_RATIO_TARGET}x of VW's default "
              f"learner (ratio of median wall times (1)/(4) <= {THROUGHPUT_RATIO_TARGET})")
    r = ratio(res, "1", "4")
    s1 = res["summary"]["1"]
    if r is None:
        return target, None, f"VW unavailable; (1) median {fmt_s(s1.median)} s"
    s4 = res["summary"]["4"]
    return target, r <= THROUGHPUT_RATIO_TARGET, (
        f"Ratio of medians {r:.3f} ((1) {fmt_s(s1.median)} s, (4) {fmt_s(s4.median)} s); "
        f"throughput {res['args'].lines / s1.median:,.0f} vs {res['args'].lines / s4.median:,.0f} lines/s")


def summary_table(res: dict) -> list[str]:
    out = ["| # | command | median wall (s) | min wall (s) | max wall (s) | median peak RSS (MiB) | "
           "max peak RSS (MiB) |",
           "|---:|---|---:|---:|---:|---:|---:|"]
    for c in COMMANDS:
        s: Summary | None = res["summary"].get(c.key)
        if s is None:
            out.append(f"| {c.key} | {c.name} | n/a | n/a | n/a | n/a | n/a |")
        else:
            out.append(f"| {c.key} | {c.name} | {fmt_s(s.median)} | {fmt_s(s.low)} | {fmt_s(s.high)} | "
                       f"{fmt_mib(s.rss_median)} | {fmt_mib(s.rss_max)} |")
    return out


def ratio_table(res: dict) -> list[str]:
    out = ["| ratio | what | of medians | of minimums |", "|---|---|---:|---:|"]
    for num, den, what in RATIOS:
        out.append(f"| ({num})/({den}) | {what} | {fmt_ratio(ratio(res, num, den))} | "
                   f"{fmt_ratio(ratio(res, num, den, 'low'))} |")
    return out


def raw_table(res: dict) -> list[str]:
    keys = [c.key for c in COMMANDS if c.key in res["runs"]]
    out = ["| round | order | " + " | ".join(f"({k}) wall (s) / RSS (MiB)" for k in keys) + " |",
           "|---:|---|" + "---:|" * len(keys)]
    for i, order in enumerate(res["orders"]):
        cells = [f"{fmt_s(res['runs'][k][i].wall)} / {fmt_mib(res['runs'][k][i].rss_mib)}" for k in keys]
        out.append(f"| {i + 1} | {' '.join(order)} | " + " | ".join(cells) + " |")
    return out


def render(res: dict) -> str:
    m = res["machine"]
    a = res["args"]
    data_meta = res["data_meta"]
    target, ok, numbers = target_verdict(res)
    lines = [
        SECTION.start,
        "## Update rules: streamlearn `--adaptive --normalized` and the default rule vs VW (bench/cases/rules.py)",
        "",
        f"- Date: {res['date']} UTC",
        f"- Produced by: {res['produced_by']}",
        f"- Settings: lines {a.lines:,}, rounds {a.runs}, bits {a.bits}, data seed {a.seed}"
        + (" (quick mode: smoke test of the script)" if a.quick else ""),
        f"- Machine: nproc {m['nproc']}, CPU {m['cpu']}, RAM {m['ram']}, load average (1/5/15 min) "
        f"{m['load']} at start and {res['load_end']} at the end, {m['os']}",
        f"- Versions: Python {m['python']}, numpy {m['numpy']}, numba {m['numba']}, "
        f"vowpalwabbit {m['vowpalwabbit']}, streamlearn commit {m['commit']}",
        f"- Data: `{res['data']}`, {data_meta['lines']:,} lines, {data_meta['size']:,} bytes, from "
        f"`python -m streamlearn.datasets bench {res['data']} --lines {data_meta['lines']} "
        f"--seed {data_meta['seed']}` (the file of bench/cases/core.py)",
        "- Method: each command is a child process (stdout and stderr to /dev/null, cwd the repository root); "
        "wall time is `time.perf_counter()` from start to reap; peak RSS is `ru_maxrss` of that child from "
        f"`os.wait4`. One untimed run of each command on the {STARTUP_LINES}-line head `{res['warm_file']}` "
        "precedes the timings (numba cache warm), and the data file is read once beforehand (page cache "
        "warm). The order of the commands rotates by one position each round. MiB = 2^20 bytes.",
        "",
        "Timed commands:",
        "",
        "```",
    ]
    for c in COMMANDS:
        if c.key in res["cmds"]:
            lines.append(f"# ({c.key}) {c.name}")
            lines.append(shlex.join(res["cmds"][c.key]))
        else:
            lines.append(f"# ({c.key}) {c.name}: VW unavailable (vowpalwabbit cannot be imported)")
    lines += [
        "```",
        "",
        f"### End-to-end, {a.lines:,} lines, {a.runs} rounds",
        "",
        *summary_table(res),
        "",
        "Ratios of wall times (below 1: streamlearn faster):",
        "",
        *ratio_table(res),
        "",
        "Raw runs (order: the command numbers in the order they ran in that round):",
        "",
        *raw_table(res),
        "",
        "### Target",
        "",
        f"- {target}: **{met(ok)}**. {numbers}.",
        *([f"- Warning: {res['changed']}"] if res["changed"] else []),
        "",
        SECTION.end,
    ]
    return "\n".join(lines) + "\n"


def print_summary(res: dict, out: Path) -> None:
    say("")
    say(f"end-to-end ({res['args'].lines:,} lines, {res['args'].runs} rounds), medians:")
    for c in COMMANDS:
        s = res["summary"].get(c.key)
        say(f"  ({c.key}) {c.name:<36} " + ("n/a (vowpalwabbit cannot be imported)" if s is None else
                                            f"{fmt_s(s.median)} s, peak RSS {fmt_mib(s.rss_median)} MiB"))
    say("ratios of medians (of minimums):")
    for num, den, what in RATIOS:
        say(f"  ({num})/({den}) {fmt_ratio(ratio(res, num, den))} ({fmt_ratio(ratio(res, num, den, 'low'))})"
            f"  {what}")
    target, ok, numbers = target_verdict(res)
    say(f"target: [{met(ok)}] {target}: {numbers}")
    if res["changed"]:
        say(f"WARNING: {res['changed']}")
    say(f"results written to {out}")


# --------------------------------------------------------------------------- main


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", help=f"lines in the data file (default {DEFAULT_LINES:,}; "
                    f"{QUICK_LINES:,} with --quick)")
    shared(ap, "runs", help=f"rounds (default {DEFAULT_RUNS}, at least 3; "
                    f"{QUICK_RUNS} with --quick)")
    ap.add_argument("--bits", type=int, default=20, help="-b of every command (default 20)")
    shared(ap, "seed", default=DEFAULT_SEED,
                    help=f"seed of the data generator (default {DEFAULT_SEED})")
    shared(ap, "quick", help=f"smoke test: {QUICK_LINES:,} lines, {QUICK_RUNS} rounds, "
                    f"results to {QUICK_OUT}")
    shared(ap, "out", help=f"results file (default {DEFAULT_OUT}, or {QUICK_OUT} "
                    "with --quick)")


def check(args: argparse.Namespace, ctx: Context) -> None:
    if args.lines is None:
        args.lines = QUICK_LINES if args.quick else DEFAULT_LINES
    if args.runs is None:
        args.runs = QUICK_RUNS if args.quick else DEFAULT_RUNS
    if args.out is None:
        args.out = REPO / (QUICK_OUT if args.quick else DEFAULT_OUT)
    if args.lines < 1000:
        ctx.error("--lines must be at least 1000")
    if args.runs < (1 if args.quick else 3):
        ctx.error("--runs must be at least 3 (at least 1 with --quick)")
    if not 1 <= args.bits <= 32:
        ctx.error("--bits must be between 1 and 32")


def run(args: argparse.Namespace, ctx: Context) -> None:
    check(args, ctx)
    res: dict = {"args": args, "produced_by": ctx.produced_by(),
                 "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
                 "machine": machine_facts()}
    vw_ok = vw_available()
    if not vw_ok:
        say("vowpalwabbit cannot be imported: VW runs are skipped, ratios with VW are n/a")
    active = [c for c in COMMANDS if vw_ok or c.tool != "VW"]

    data, data_meta = ensure_data(args.lines, args.seed)
    res["data"], res["data_meta"] = data, data_meta
    small = ensure_head(data, data_meta, DATA_DIR / f"bench-{STARTUP_LINES}.vw", STARTUP_LINES)
    res["warm_file"] = small

    before = newest_source()
    say("warm-up (not timed): numba cache, page cache")
    for c in active:
        run_once(command_line(c, small, args.bits))
    read_through(data)

    res["cmds"] = {c.key: command_line(c, data, args.bits) for c in active}
    say(f"end-to-end on {data}:")
    res["runs"], res["orders"] = rotate(res["cmds"], args.runs)
    res["summary"] = {k: summarize(v) for k, v in res["runs"].items()}
    res["load_end"] = "/".join(f"{x:.2f}" for x in os.getloadavg())
    after = newest_source()
    res["changed"] = None if after == before else (
        f"streamlearn sources changed during the benchmark (newest: `{after[1]}` at "
        f"{dt.datetime.fromtimestamp(after[0], dt.timezone.utc):%H:%M:%S} UTC); timed runs may include numba "
        "compilation and mix two versions of the code: rerun on a quiet tree")
    SECTION.write(args.out, render(res))
    print_summary(res, args.out)


CASE = Case("rules", arguments, run, __doc__)
