"""Where the time of ``streamlearn train`` goes (issue 13's "profile first"): parsing, learning and
start-up measured apart, in one process, for the cases of the core benchmark.

For each case the script parses the core benchmark's data file once into blocks (one thread; the
parse throughput in MB/s), then runs the learner's block kernel over the parsed blocks R times (the
fastest and median learn time, no parsing, no I/O), and reports them beside the end-to-end wall time
of the CLI (fastest of R child runs) and the warm start-up of the CLI on 10 lines. In the CLI the
parse runs in a thread beside the learner (``streamlearn.run.stream.pipelined``), so on two cores the
end-to-end time is about start-up + max(parse, learn) + the hand-over; whichever of parse and learn
is larger is the one to work on.

Usage: ``python -m bench run profile_core [--lines N] [--runs R] [--out PATH]`` (default 1,000,000 lines of
``bench/data/bench-2m.vw``, 3 runs; results printed and, with ``--out``, written between
``<!-- profile_core:start -->`` and ``<!-- profile_core:end -->``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from bench.data import DEFAULT_SEED, copy_head, ensure_data, parse_blocks
from bench.harness import REPO, Case, Context, Section, machine_facts, shared
from bench.timing import run_once, streamlearn_base

SECTION = Section("profile_core")

#: case -> (CLI options after -d FILE -b 20 --loss logistic)
CASES = {
    "--sgd tg": ["--algo", "tg", "--l1", "1e-7", "--sgd"],
    "default rule tg": ["--algo", "tg", "--l1", "1e-7"],
    "default rule sgd": [],
    "-q over two namespaces, default rule": ["-q", "tc"],
    "--oaa 20 --sgd": ["--oaa", "20", "--sgd"],
}


def learn_time(cfg, blocks) -> float:
    from streamlearn import learners
    from streamlearn.core import state as S
    from streamlearn.learners import allocate_table
    prm, iprm = learners.make_settings(cfg, train=True)
    table = allocate_table(cfg.bits, learners.layout(cfg).columns, learners.layout(cfg).dtype)
    st = learners.make_state(cfg, prm)
    ctr = learners.make_counters()
    ctr[S.C_DUMP] = np.inf
    kernel = learners.block_kernel(cfg)
    K = cfg.classes
    t0 = time.perf_counter()
    for indptr, idx, val, labels, weights, bases, counts in blocks:
        n = labels.shape[0]
        preds = np.empty((n, K + 2)) if K else np.empty(n)
        kernel((indptr, idx, val, labels, weights, bases, counts, preds), (table, prm, iprm, st, ctr), 0, n)
    return time.perf_counter() - t0


def oaa_copy(src: Path, dst: Path, k: int) -> Path:
    """The lines with their label replaced by a class 1..k (line number mod k + 1)."""
    if dst.exists() and dst.stat().st_mtime >= src.stat().st_mtime:
        return dst
    with open(src, "rb") as f, open(dst, "wb") as g:
        for n, line in enumerate(f):
            head, _, rest = line.partition(b" ")
            g.write(str(n % k + 1).encode() + b" " + rest)
    return dst


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", default=1_000_000)
    shared(ap, "runs", default=3)
    shared(ap, "out")


def run(args: argparse.Namespace, ctx: Context) -> None:
    from streamlearn.config import train_config

    full, _ = ensure_data(2_000_000, DEFAULT_SEED)
    data = REPO / "bench" / "data" / f"profile-{args.lines}.vw"
    if not data.exists():
        copy_head(full, data, args.lines)
    small = REPO / "bench" / "data" / "profile-10.vw"
    if not small.exists():
        copy_head(full, small, 10)
    mb = data.stat().st_size / 1e6
    lines = [f"- Data: the first {args.lines:,} lines of `{full}` ({mb:.0f} MB), -b 20, logistic loss; "
             f"{args.runs} runs of each measurement",
             "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_facts().items()),
             f"- Produced by: `python -m bench run profile_core --lines {args.lines} --runs {args.runs}`", "",
             "| case | parse, 1 thread (s; MB/s) | learn only, fastest / median (s) | CLI end to end, fastest (s) "
             "| CLI start-up, 10 lines, fastest (s) |",
             "|---|---|---|---|---|"]
    for name, opts in CASES.items():
        path = data
        if "--oaa" in opts:
            path = oaa_copy(data, REPO / "bench" / "data" / f"profile-{args.lines}.oaa20.vw", 20)
        explicit = {"sources": (str(path),), "bits": 20, "loss": "logistic"}
        i = 0
        while i < len(opts):      # the few options the cases use, as the CLI would pass them
            key = opts[i].lstrip("-").replace("-", "_")
            if key == "sgd":
                explicit["sgd"] = True
                i += 1
                continue
            value = opts[i + 1]
            explicit[{"q": "quadratic"}.get(key, key)] = (
                (value,) if key == "q" else int(value) if key == "oaa" else float(value) if key == "l1" else value)
            i += 2
        cfg = train_config(explicit)
        blocks, parse_s = parse_blocks(path, cfg)
        learn = sorted(learn_time(cfg, blocks) for _ in range(args.runs))
        del blocks
        cli = [str(a) for a in streamlearn_base() + ["train", "-d", str(path), "-b", "20", "--loss", "logistic",
                                                      "--quiet", *opts]]
        ends = sorted(run_once(cli).wall for _ in range(args.runs))
        start = sorted(run_once(cli[:cli.index("-d") + 1] + [str(small)] + cli[cli.index("-d") + 2:]).wall
                       for _ in range(args.runs))
        row = (f"| {name} | {parse_s:.2f}; {mb / parse_s:.0f} | {learn[0]:.2f} / {statistics.median(learn):.2f} "
               f"| {ends[0]:.2f} | {start[0]:.2f} |")
        print(row, flush=True)
        lines.append(row)
    text = "\n".join(lines)
    print(text)
    if args.out:
        SECTION.write(Path(args.out), SECTION.start + "\n## Where the time goes (bench/cases/profile_core.py)\n\n"
                      + text + "\n" + SECTION.end)


CASE = Case("profile_core", arguments, run, __doc__)
