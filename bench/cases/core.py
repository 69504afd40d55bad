"""Core benchmark: ``streamlearn train`` against Vowpal Wabbit 9.11.9 on one large VW file.

What it measures
----------------
* End-to-end: ``streamlearn train`` (logistic loss, truncated gradient with ``--l1``, ``-b BITS``) and
  ``python -m vowpalwabbit -d FILE --sgd --loss_function logistic --l1 L1 -b BITS --quiet`` on the same
  file (default: 2,000,000 lines from ``python -m streamlearn.datasets bench``). The two commands run
  alternately for ``--runs`` rounds and the tool that goes first alternates from round to round
  (A B, B A, A B, ...). Reported: median, min and max wall time of each tool, the ratio of the medians
  (streamlearn / VW), and every raw run.
* Start-up: both tools on a 10-line file (the first 10 lines of the data file), at least 5 runs each.
* Peak RSS: every timed child's peak resident set size. Flatness: streamlearn once on prefixes of the
  stream with 1/8, 1/4, 1/2 and all of the lines; the spread (max - min) of those peaks is reported.

How
---
Each command runs as a child process (``subprocess.Popen``, stdout and stderr to /dev/null, working
directory the repository root). Wall time is ``time.perf_counter()`` from just before the start of the
child to just after it is reaped; peak RSS is ``ru_maxrss`` (KiB on Linux) from ``os.wait4`` on that
child, so each run is measured on its own. Before anything is timed, streamlearn and VW each run once on
the 10-line file (this fills the numba cache, so no timing includes compilation) and the data file is
read once (so every run starts with it in the page cache). MiB means 2^20 bytes throughout.

Targets checked (from the project issue): end-to-end wall time at most 1.2x VW's; start-up for a 10-line
input under 1 s with a warm numba cache; peak RSS at most 16 bytes x 2^bits + 150 MiB in every
streamlearn run, and flat as the stream grows. "Flat" is checked here as: the spread of the prefix
runs' peak RSS is at most FLAT_TOLERANCE (5%) of the peak RSS of the smallest prefix.

Files: the data lives in ``bench/data/`` (git-ignored), each generated or derived file with a
``.meta.json`` stamp next to it so that a stale or partial file is rebuilt. The results go to the
section between ``<!-- bench_core:start -->`` and ``<!-- bench_core:end -->`` of ``bench/RESULTS.md``
(``--quick`` writes ``bench/out/RESULTS.quick.md`` instead); the rest of that file is left as it is.

Usage: ``make bench`` or ``python -m bench run core [--lines N] [--runs R] [--l1 G] [--bits B]
[--quick] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
from pathlib import Path

from bench.data import DATA_DIR, DEFAULT_LINES, DEFAULT_SEED, STARTUP_LINES, ensure_data, ensure_head, read_through
from bench.harness import (QUICK_LINES, QUICK_RUNS, REPO, Case, Context, Section, fmt_mib, fmt_s, machine_facts, met,
                           say, shared)
from bench.timing import MIB, Run, Summary, alternate, run_once, streamlearn_base, summarize, vw_available

SECTION = Section("bench_core")
DEFAULT_OUT = Path("bench/RESULTS.md")
QUICK_OUT = Path("bench/out/RESULTS.quick.md")
MIN_STARTUP_RUNS = 5
WALL_RATIO_TARGET = 1.2
STARTUP_TARGET_S = 1.0
RSS_BASE_MIB = 150.0
FLAT_TOLERANCE = 0.05


# --------------------------------------------------------------------------- commands


def streamlearn_cmd(path: Path, l1: float, bits: int) -> list[str]:
    return streamlearn_base() + ["train", "-d", str(path), "--loss", "logistic", "--algo", "tg",
                                 "--sgd", "--l1", repr(l1), "-b", str(bits), "--quiet"]


def vw_cmd(path: Path, l1: float, bits: int) -> list[str]:
    return [sys.executable, "-m", "vowpalwabbit", "-d", str(path), "--sgd", "--loss_function", "logistic",
            "--l1", repr(l1), "-b", str(bits), "--quiet"]


# --------------------------------------------------------------------------- report


def evaluate(res: dict) -> list[tuple[str, bool | None, str]]:
    """(target, met?, numbers) for each target of the issue."""
    sl, vw = res["main_sl"], res["main_vw"]
    out = []
    if vw is None:
        out.append((f"End-to-end wall time <= {WALL_RATIO_TARGET}x VW's", None,
                    f"VW unavailable; streamlearn median {fmt_s(sl.median)} s"))
    else:
        ratio = sl.median / vw.median
        out.append((f"End-to-end wall time <= {WALL_RATIO_TARGET}x VW's", ratio <= WALL_RATIO_TARGET,
                    f"Ratio of medians {ratio:.3f} (streamlearn {fmt_s(sl.median)} s, VW {fmt_s(vw.median)} s)"))
    st = res["start_sl"]
    out.append((f"Start-up, {STARTUP_LINES}-line input, warm numba cache, < {STARTUP_TARGET_S:g} s",
                st.median < STARTUP_TARGET_S,
                f"Median for streamlearn {fmt_s(st.median)} s (min {fmt_s(st.low)}, max {fmt_s(st.high)})"))
    limit = res["rss_limit_mib"]
    all_sl = res["all_sl_rss"]
    out.append((f"Peak RSS <= 16 B x 2^{res['bits']} + {RSS_BASE_MIB:g} MiB = {fmt_mib(limit)} MiB",
                max(all_sl) <= limit,
                f"Largest streamlearn peak RSS {fmt_mib(max(all_sl))} MiB over {len(all_sl)} runs "
                f"(end-to-end, start-up and prefix runs); {sum(x > limit for x in all_sl)} runs above the limit"))
    prefix = res["prefix"]
    rss = [r.rss_mib for _, _, r in prefix]
    spread = max(rss) - min(rss)
    allowed = FLAT_TOLERANCE * rss[0]
    out.append((f"Peak RSS flat as the stream grows (spread <= {FLAT_TOLERANCE:.0%} of the smallest "
                f"prefix's peak RSS = {fmt_mib(allowed)} MiB)", spread <= allowed,
                f"Spread {fmt_mib(spread)} MiB ({fmt_mib(min(rss))} to {fmt_mib(max(rss))} MiB) over "
                f"{prefix[0][0]:,} to {prefix[-1][0]:,} lines"))
    return out


def summary_table(rows: list[tuple[str, Summary | None]]) -> list[str]:
    out = ["| tool | median wall (s) | min wall (s) | max wall (s) | median peak RSS (MiB) | max peak RSS (MiB) |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, s in rows:
        if s is None:
            out.append(f"| {name} | n/a | n/a | n/a | n/a | n/a |")
        else:
            out.append(f"| {name} | {fmt_s(s.median)} | {fmt_s(s.low)} | {fmt_s(s.high)} | "
                       f"{fmt_mib(s.rss_median)} | {fmt_mib(s.rss_max)} |")
    return out


def raw_table(runs_sl: list[Run], runs_vw: list[Run], orders: list[str]) -> list[str]:
    out = ["| round | order | streamlearn wall (s) | streamlearn peak RSS (MiB) | VW wall (s) | VW peak RSS (MiB) |",
           "|---:|---|---:|---:|---:|---:|"]
    for i, order in enumerate(orders):
        a = runs_sl[i]
        b = runs_vw[i] if i < len(runs_vw) else None
        vw_cells = f"{fmt_s(b.wall)} | {fmt_mib(b.rss_mib)}" if b else "n/a | n/a"
        out.append(f"| {i + 1} | {order} | {fmt_s(a.wall)} | {fmt_mib(a.rss_mib)} | {vw_cells} |")
    return out


def render(res: dict) -> str:
    m = res["machine"]
    a = res["args"]
    sl, vw = res["main_sl"], res["main_vw"]
    ratio = "n/a" if vw is None else f"{sl.median / vw.median:.3f}"
    data_meta = res["data_meta"]
    lines = [
        SECTION.start,
        "## Core: `streamlearn train` vs VW (bench/cases/core.py)",
        "",
        f"- Date: {res['date']} UTC",
        f"- Produced by: {res['produced_by']}",
        f"- Settings: lines {a.lines:,}, rounds {a.runs}, l1 {a.l1!r}, bits {a.bits}, data seed {a.seed}"
        + (" (quick mode: smoke test of the script)" if a.quick else ""),
        f"- Machine: nproc {m['nproc']}, CPU {m['cpu']}, RAM {m['ram']}, load average at start (1/5/15 min) "
        f"{m['load']}, {m['os']}",
        f"- Versions: Python {m['python']}, numpy {m['numpy']}, numba {m['numba']}, "
        f"vowpalwabbit {m['vowpalwabbit']}, streamlearn commit {m['commit']}",
        f"- Data: `{res['data']}`, {data_meta['lines']:,} lines, {data_meta['size']:,} bytes, from "
        f"`python -m streamlearn.datasets bench {res['data']} --lines {data_meta['lines']} "
        f"--seed {data_meta['seed']}`",
        "- Method: each command is a child process (stdout and stderr to /dev/null, cwd the repository root); "
        "wall time is `time.perf_counter()` from start to reap; peak RSS is `ru_maxrss` of that child from "
        "`os.wait4`. One untimed run of each tool on the 10-line file precedes the timings (numba cache warm), "
        "and the data file is read once beforehand (page cache warm). MiB = 2^20 bytes.",
        "",
        "Timed commands:",
        "",
        "```",
        shlex.join(res["cmd_sl"]),
        shlex.join(res["cmd_vw"]) if res["vw_ok"] else "# VW unavailable (vowpalwabbit cannot be imported)",
        "```",
        "",
        f"### End-to-end, {a.lines:,} lines, {a.runs} rounds (order alternates each round)",
        "",
        *summary_table([("streamlearn", sl), ("VW", vw)]),
        "",
        f"Ratio of median wall times, streamlearn / VW: {ratio}",
        "",
        "Raw runs:",
        "",
        *raw_table(res["runs_sl"], res["runs_vw"], res["orders"]),
        "",
        f"### Start-up, {STARTUP_LINES}-line input (`{res['startup_file']}`), {res['startup_runs']} runs each",
        "",
        *summary_table([("streamlearn", res["start_sl"]), ("VW", res["start_vw"])]),
        "",
        "Raw wall times (s): streamlearn " + ", ".join(fmt_s(r.wall) for r in res["start_runs_sl"])
        + ("; VW " + ", ".join(fmt_s(r.wall) for r in res["start_runs_vw"]) if res["start_runs_vw"] else "; VW n/a"),
        "",
        "### Peak RSS against stream length (streamlearn, one run per prefix, same options)",
        "",
        "| lines | file | wall (s) | peak RSS (MiB) |",
        "|---:|---|---:|---:|",
    ]
    for n, path, run in res["prefix"]:
        lines.append(f"| {n:,} | `{path}` | {fmt_s(run.wall)} | {fmt_mib(run.rss_mib)} |")
    rss = [r.rss_mib for _, _, r in res["prefix"]]
    lines += ["", f"Spread of peak RSS (max - min): {fmt_mib(max(rss) - min(rss))} MiB", "", "### Targets", ""]
    for target, ok, numbers in evaluate(res):
        lines.append(f"- {target}: **{met(ok)}**. {numbers}.")
    lines += ["", SECTION.end]
    return "\n".join(lines) + "\n"


def print_summary(res: dict, out: Path) -> None:
    sl, vw = res["main_sl"], res["main_vw"]
    say("")
    say(f"end-to-end ({res['args'].lines:,} lines, {res['args'].runs} rounds), medians:")
    say(f"  streamlearn {fmt_s(sl.median)} s, peak RSS {fmt_mib(sl.rss_median)} MiB")
    say("  VW          n/a (vowpalwabbit cannot be imported)" if vw is None
        else f"  VW          {fmt_s(vw.median)} s, peak RSS {fmt_mib(vw.rss_median)} MiB")
    say(f"  ratio streamlearn / VW: {'n/a' if vw is None else f'{sl.median / vw.median:.3f}'}")
    st, sv = res["start_sl"], res["start_vw"]
    say(f"start-up ({STARTUP_LINES} lines), medians: streamlearn {fmt_s(st.median)} s"
        + ("" if sv is None else f", VW {fmt_s(sv.median)} s"))
    say("peak RSS by prefix (MiB): " + ", ".join(f"{n:,}: {fmt_mib(r.rss_mib)}" for n, _, r in res["prefix"]))
    say("targets (MiB = 2^20 bytes):")
    for target, ok, numbers in evaluate(res):
        say(f"  [{met(ok)}] {target}: {numbers}")
    say(f"results written to {out}")


# --------------------------------------------------------------------------- main


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", help=f"lines in the data file (default {DEFAULT_LINES:,}; {QUICK_LINES:,} with --quick)")
    shared(ap, "runs", help=f"rounds of the end-to-end comparison (default 5, at least 3; {QUICK_RUNS} with --quick)")
    ap.add_argument("--l1", type=float, default=1e-6, help="--l1 of both tools (default 1e-6)")
    ap.add_argument("--bits", type=int, default=20, help="-b of both tools (default 20)")
    shared(ap, "seed", default=DEFAULT_SEED, help=f"seed of the data generator (default {DEFAULT_SEED})")
    shared(ap, "quick", help=f"smoke test: {QUICK_LINES:,} lines, {QUICK_RUNS} rounds, results to {QUICK_OUT}")
    shared(ap, "out", help=f"results file (default {DEFAULT_OUT}, or {QUICK_OUT} with --quick)")


def check(args: argparse.Namespace, ctx: Context) -> None:
    if args.lines is None:
        args.lines = QUICK_LINES if args.quick else DEFAULT_LINES
    if args.runs is None:
        args.runs = QUICK_RUNS if args.quick else 5
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
    res: dict = {"args": args, "bits": args.bits, "produced_by": ctx.produced_by(),
                 "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
                 "machine": machine_facts()}
    vw_ok = res["vw_ok"] = vw_available()
    if not vw_ok:
        say("vowpalwabbit cannot be imported: VW runs are skipped, ratios are n/a")

    data, data_meta = ensure_data(args.lines, args.seed)
    res["data"], res["data_meta"] = data, data_meta
    small = ensure_head(data, data_meta, DATA_DIR / f"bench-{STARTUP_LINES}.vw", STARTUP_LINES)
    res["startup_file"] = small
    prefix_lines = [args.lines // 8, args.lines // 4, args.lines // 2]
    prefixes = [(n, ensure_head(data, data_meta, DATA_DIR / f"bench-prefix-{n}.vw", n)) for n in prefix_lines]
    prefixes.append((args.lines, data))

    say("warm-up (not timed): numba cache, page cache")
    run_once(streamlearn_cmd(small, args.l1, args.bits))
    if vw_ok:
        run_once(vw_cmd(small, args.l1, args.bits))
    read_through(data)

    res["cmd_sl"] = streamlearn_cmd(data, args.l1, args.bits)
    res["cmd_vw"] = vw_cmd(data, args.l1, args.bits)
    say(f"end-to-end on {data}:")
    runs_sl, runs_vw, orders = alternate(res["cmd_sl"], res["cmd_vw"] if vw_ok else None, args.runs, "end-to-end")
    res.update(runs_sl=runs_sl, runs_vw=runs_vw, orders=orders, main_sl=summarize(runs_sl),
               main_vw=summarize(runs_vw) if runs_vw else None)

    n_start = max(MIN_STARTUP_RUNS, args.runs)
    say(f"start-up on {small}:")
    st_sl, st_vw, _ = alternate(streamlearn_cmd(small, args.l1, args.bits),
                                vw_cmd(small, args.l1, args.bits) if vw_ok else None, n_start, "start-up")
    res.update(startup_runs=n_start, start_runs_sl=st_sl, start_runs_vw=st_vw, start_sl=summarize(st_sl),
               start_vw=summarize(st_vw) if st_vw else None)

    say("peak RSS by prefix:")
    res["prefix"] = []
    for n, path in prefixes:
        run = run_once(streamlearn_cmd(path, args.l1, args.bits))
        say(f"  {n:,} lines: {run.wall:.3f} s {run.rss_mib:.1f} MiB")
        res["prefix"].append((n, path, run))

    res["rss_limit_mib"] = 16 * 2**args.bits / MIB + RSS_BASE_MIB
    res["all_sl_rss"] = [r.rss_mib for r in runs_sl + st_sl] + [r.rss_mib for _, _, r in res["prefix"]]
    SECTION.write(args.out, render(res))
    print_summary(res, args.out)


CASE = Case("core", arguments, run, __doc__)
