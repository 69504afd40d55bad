"""Parse-only throughput of ``streamlearn train``'s input side, with 1 and 2 parse threads.

Reads the first N lines of the core benchmark's file (``bench/data/bench-2m.vw``, -b 20, default
block size) through the CLI's own pipeline -- ``streamlearn.run.stream.pipelined(text_blocks(...))``
with ``--threads T`` -- while the main thread, where the learner would run, does nothing with the
blocks. The thread counts alternate, R rounds, after one untimed warm-up of each; the report gives
the fastest and the median in MB/s, with the machine's facts and its load average before and after
(the machine may be shared: compare the figures of one run only).

Usage: ``python -m bench run parse [--lines N] [--rounds R] [--threads 1 2] [--out bench/RESULTS.md]``
(defaults: 1,000,000 lines, 5 rounds, threads 1 and 2; with ``--out`` the results go between
``<!-- bench_parse:start -->`` and ``<!-- bench_parse:end -->``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from bench.data import DEFAULT_SEED, data_name, ensure_data, ensure_head, read_through
from bench.harness import REPO, Case, Context, Section, machine_facts, shared

SECTION = Section("bench_parse")


def parse_seconds(path: Path, threads: int) -> float:
    """Wall time to parse the whole file as ``train`` does, the consumer idle."""
    from streamlearn.config import train_config
    from streamlearn.run.stream import hashing_of, pipelined, text_blocks
    cfg = train_config({"sources": (str(path),), "bits": 20, "threads": threads})
    t0 = time.perf_counter()
    for _ in pipelined(text_blocks(cfg.sources, cfg.format, hashing_of(cfg), cfg.block_size)):
        pass
    return time.perf_counter() - t0


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    shared(ap, "out")


def run(args: argparse.Namespace, ctx: Context) -> None:

    full, meta = ensure_data(2_000_000, DEFAULT_SEED)
    path = full if args.lines == 2_000_000 else ensure_head(
        full, meta, REPO / "bench" / "data" / data_name(args.lines, DEFAULT_SEED), args.lines)
    read_through(path)
    mb = path.stat().st_size / 1e6
    load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())
    times = {t: [] for t in args.threads}
    for t in args.threads:           # warm-up: compiled kernels loaded, file in the page cache
        parse_seconds(path, t)
    for r in range(args.rounds):
        order = args.threads if r % 2 == 0 else args.threads[::-1]
        for t in order:
            times[t].append(parse_seconds(path, t))
            print(f"round {r + 1}: {t} thread(s) {times[t][-1]:.3f} s ({mb / times[t][-1]:.0f} MB/s)", flush=True)
    facts = machine_facts()
    facts["load"] = f"{load_before} before, {facts['load']} after"
    base = min(times[args.threads[0]])
    lines = ["## Parse throughput (bench/cases/parse.py)", "",
             f"- Data: the first {args.lines:,} lines of `{full}` ({mb:.0f} MB), -b 20, "
             f"`pipelined(text_blocks(...))` as `train` runs it with the learner idle; thread counts "
             f"alternating, {args.rounds} rounds after a warm-up",
             "- Machine: " + ", ".join(f"{k} {v}" for k, v in facts.items()),
             f"- Produced by: {ctx.produced_by()}", "",
             "| --threads | fastest (s) | fastest (MB/s) | median (s) | median (MB/s) | fastest vs "
             f"{args.threads[0]} thread(s) |",
             "|---|---|---|---|---|---|"]
    for t in args.threads:
        v = times[t]
        fast, med = min(v), statistics.median(v)
        lines.append(f"| {t} | {fast:.3f} | {mb / fast:.0f} | {med:.3f} | {mb / med:.0f} | {base / fast:.2f}x |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        SECTION.write(Path(args.out), f"{SECTION.start}\n{text}\n{SECTION.end}")


CASE = Case("parse", arguments, run, __doc__)
