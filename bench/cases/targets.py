"""Issue 13's targets, like with like: ``streamlearn train`` against VW 9.11.9 on the core file, per case
the same update rule, ``-b``, ``-q``, ``--oaa`` and loss for both tools.

Each case runs one untimed warm-up of each tool, then ``--runs`` rounds in which the two tools alternate
(the one that goes first alternates from round to round). Reported per tool: fastest and median wall
time and median peak RSS (``bench.timing.run_once``: a child process, wall time from start to reap,
``ru_maxrss`` from ``os.wait4``); the ratio is judged on the fastest runs (VW's wall time on this
machine is bimodal, and its slow mode is the machine's noise, not VW's speed). The machine and its load
average at the start and the end are printed and written.

Usage: ``python -m bench run targets [--lines N] [--runs R] [--cases NAME,...] [--out bench/RESULTS.md]``
(default: the 2,000,000-line core file, 5 rounds, every case; with ``--out`` the table goes between
``<!-- bench_targets:start -->`` and ``<!-- bench_targets:end -->``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys

from bench.data import core_head, ensure_throughput_data, read_through
from bench.harness import Case, Context, Section, machine_facts, say, shared
from bench.timing import run_once, streamlearn_base

SECTION = Section("bench_targets")
VW = [sys.executable, "-m", "vowpalwabbit"]

#: name -> (data: "core" or "oaa20", streamlearn options, VW options, target ratio); both tools also get
#: -d FILE -b 20, logistic loss and --quiet
CASES = {
    "--sgd tg": ("core", ["--algo", "tg", "--sgd", "--l1", "1e-7"], ["--sgd", "--l1", "1e-7"], 1.0),
    "default rule with --l1": ("core", ["--algo", "tg", "--l1", "1e-7"], ["--l1", "1e-7"], 1.0),
    "-q tc (default rule)": ("core", ["-q", "tc"], ["-q", "tc"], 1.0),
    "--oaa 20 --sgd": ("oaa20", ["--oaa", "20", "--sgd"], ["--oaa", "20", "--sgd"], 1.0),
    "--oaa 20 (default rule)": ("oaa20", ["--oaa", "20"], ["--oaa", "20"], 1.0),
}


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", default=2_000_000)
    shared(ap, "runs", default=5)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    shared(ap, "out")


def compare(name: str, sl: list, vw: list, rounds: int, target: float) -> tuple[str, str]:
    """One warm-up run of each command, then ``rounds`` rounds alternating them (the first alternates);
    returns the table row (fastest / median wall time, median peak RSS, ratio of the fastest runs and
    the target) and the line of raw wall times."""
    run_once(sl)
    run_once(vw)
    runs = {"streamlearn": [], "VW": []}
    for i in range(rounds):
        for tool in (("streamlearn", "VW") if i % 2 == 0 else ("VW", "streamlearn")):
            runs[tool].append(run_once(sl if tool == "streamlearn" else vw))
        say(f"  {name} round {i + 1}: streamlearn {runs['streamlearn'][-1].wall:.2f} s, "
            f"VW {runs['VW'][-1].wall:.2f} s")
    s = sorted(r.wall for r in runs["streamlearn"])
    v = sorted(r.wall for r in runs["VW"])
    ratio = s[0] / v[0]
    rss_s = statistics.median(r.rss_mib for r in runs["streamlearn"])
    rss_v = statistics.median(r.rss_mib for r in runs["VW"])
    row = (f"| {name} | {s[0]:.2f} / {statistics.median(s):.2f} | {rss_s:.0f} | {v[0]:.2f} / "
           f"{statistics.median(v):.2f} | {rss_v:.0f} | **{ratio:.2f}x** | at most {target:.1f}x: "
           f"{'met' if ratio <= target else 'not met'} |")
    say(row)
    raw = (f"- {name}: streamlearn " + ", ".join(f"{r.wall:.2f}" for r in runs["streamlearn"])
           + "; VW " + ", ".join(f"{r.wall:.2f}" for r in runs["VW"]))
    return row, raw


def run(args: argparse.Namespace, ctx: Context) -> None:
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ctx.error(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(CASES)}")
    core = core_head(args.lines)
    files = {"core": core}
    if any(CASES[n][0] == "oaa20" for n in names):
        files["oaa20"] = ensure_throughput_data(args.lines)[0]
    facts = machine_facts()
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    say(f"machine: nproc {facts['nproc']}, {facts['cpu']}, load {facts['load']}")
    rows, raw, cmds = [], [], []
    for name in names:
        data, sl_opts, vw_opts, target = CASES[name]
        path = files[data]
        read_through(path)
        sl = streamlearn_base() + ["train", "-d", str(path), "-b", "20", "--loss", "logistic", "--quiet", *sl_opts]
        vw = VW + ["-d", str(path), "-b", "20", "--loss_function", "logistic", "--quiet", *vw_opts]
        cmds += [f"{name}, streamlearn: `{' '.join(sl)}`", f"{name}, VW: `{' '.join(vw)}`"]
        row, raw_line = compare(name, sl, vw, args.runs, target)
        rows.append(row)
        raw.append(raw_line)
    end_load = machine_facts()["load"]
    lines = [
        SECTION.start,
        "## Issue 13's targets: streamlearn against VW, like with like (bench/cases/targets.py)",
        "",
        f"- Run {started}; produced by `python -m bench run targets --lines {args.lines} --runs {args.runs}"
        + (f" --cases '{args.cases}'" if args.cases != ",".join(CASES) else "") + "`",
        f"- Machine: nproc {facts['nproc']}, {facts['cpu']}, RAM {facts['ram']}, load average {facts['load']} "
        f"at the start, {end_load} at the end; python {facts['python']}, numba {facts['numba']}, "
        f"vowpalwabbit {facts['vowpalwabbit']}, streamlearn commit {facts['commit']}",
        f"- Data: the first {args.lines:,} lines of `bench/data/bench-2m.vw` (`--oaa 20`: the same lines "
        "labelled 1..20: the multiclass case's throughput file of that many lines); both tools get `-b 20`, logistic loss, `--quiet`",
        f"- Method: one warm-up run of each tool, then {args.runs} rounds alternating the tools (the first "
        "alternates); fastest / median wall time, median peak RSS; ratio = streamlearn's fastest / VW's fastest",
        "",
        "| case | streamlearn fastest / median (s) | peak RSS (MiB) | VW fastest / median (s) | peak RSS (MiB) "
        "| ratio (fastest) | target |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Raw wall times (s), round by round:",
        "",
        *raw,
        "",
        "Commands:",
        "",
        *[f"- {c}" for c in cmds],
        SECTION.end,
    ]
    if args.out:
        SECTION.write(args.out, "\n".join(lines) + "\n")


CASE = Case("targets", arguments, run, __doc__)
