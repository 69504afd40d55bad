"""A float32 weight table against the float64 one (issue 13, "table layout and width"): learning time,
table memory, and how far the float32 run's predictions, loss and weights move from the float64 run's.

The same compiled learners run on both (numba compiles them once per table type), over the same
parsed blocks of the core benchmark file (learning alone: no parsing, no I/O, no start-up). The table
is an anonymous memory map in both cases, as ``streamlearn.learners.allocate_table`` makes it. Each
case alternates the two types, ``--runs`` times each, and reports the fastest and median.

Usage: ``python -m bench run table_dtype [--lines N] [--runs R] [--out bench/RESULTS.md]``
(default 200,000 lines of ``bench/data/bench-2m.vw``, 5 runs; with ``--out`` the table is written
between ``<!-- bench_table_dtype:start -->`` and ``<!-- bench_table_dtype:end -->``).
"""

from __future__ import annotations

import argparse
import mmap
import statistics
import time

import numpy as np

from bench.data import core_head, parse_blocks
from bench.harness import Case, Context, Section, machine_facts, shared

SECTION = Section("bench_table_dtype")

#: case -> train options (besides -b 20 --loss logistic)
CASES = {
    "--sgd tg": {"algo": "tg", "l1": 1e-7, "sgd": True},
    "default rule sgd": {},
    "default rule tg (--l1)": {"algo": "tg", "l1": 1e-7},
    "-q tc, default rule": {"quadratic": ("tc",)},
}


def table_of(rows: int, cols: int, dtype) -> np.ndarray:
    n = rows * cols * np.dtype(dtype).itemsize
    buf = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return np.frombuffer(buf, dtype=dtype).reshape(rows, cols)


def learn(cfg, blocks, dtype):
    """(seconds, average progressive loss, the predictions, the weight column) of one run."""
    from streamlearn import learners
    from streamlearn.core import state as S
    prm, iprm = learners.make_settings(cfg, train=True)
    lay = learners.layout(cfg)
    table = table_of(1 << cfg.bits, lay.columns, dtype)
    st = learners.make_state(cfg, prm)
    ctr = learners.make_counters()
    ctr[S.C_DUMP] = np.inf
    kernel = learners.block_kernel(cfg)
    preds = []
    t0 = time.perf_counter()
    for indptr, idx, val, labels, weights, bases, counts in blocks:
        n = labels.shape[0]
        p = np.empty(n)
        kernel((indptr, idx, val, labels, weights, bases, counts, p), (table, prm, iprm, st, ctr), 0, n)
        preds.append(p)
    took = time.perf_counter() - t0
    return took, ctr[S.C_SUM_LOSS] / ctr[S.C_W_LABELED], np.concatenate(preds), table[:, 0].astype(np.float64)


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "lines", default=200_000)
    shared(ap, "runs", default=5)
    shared(ap, "out")


def run(args: argparse.Namespace, ctx: Context) -> None:
    from streamlearn.config import train_config
    path = core_head(args.lines)
    facts = machine_facts()
    rows = []
    for name, opts in CASES.items():
        cfg = train_config(dict({"sources": (str(path),), "bits": 20, "loss": "logistic"}, **opts))
        if __import__("streamlearn.learners", fromlist=["layout"]).layout(cfg).dtype != "float32":
            print(f"{name}: its layout is float64 (issue 30: float32 only under per-feature rates), skipped")
            continue          # a float32 table needs a float32 layout (its float64 columns' places)
        blocks, _ = parse_blocks(path, cfg)
        cols = __import__("streamlearn.learners", fromlist=["layout"]).layout(cfg).columns
        learn(cfg, blocks[:1], np.float32)            # compile (or load) the float32 variant
        times = {np.float64: [], np.float32: []}
        out = {}
        for _ in range(args.runs):
            for dt in (np.float64, np.float32):
                took, loss, preds, w = learn(cfg, blocks, dt)
                times[dt].append(took)
                out[dt] = (loss, preds, w)
        d_pred = float(np.max(np.abs(out[np.float32][1] - out[np.float64][1])))
        w64, w32 = out[np.float64][2], out[np.float32][2]
        scale = float(np.max(np.abs(w64))) or 1.0
        d_w = float(np.max(np.abs(w32 - w64))) / scale
        nnz = (int(np.count_nonzero(w64)), int(np.count_nonzero(w32)))
        f64, f32 = sorted(times[np.float64]), sorted(times[np.float32])
        row = (f"| {name} | {cols} | {f64[0]:.3f} / {statistics.median(f64):.3f} | {f32[0]:.3f} / "
               f"{statistics.median(f32):.3f} | {f32[0] / f64[0]:.2f} | {(1 << 20) * cols * 8 / 2**20:.0f} / "
               f"{(1 << 20) * cols * 4 / 2**20:.0f} | {out[np.float64][0]:.6f} / {out[np.float32][0]:.6f} | "
               f"{d_pred:.1e} | {d_w:.1e} | {nnz[0]:,} / {nnz[1]:,} |")
        print(row, flush=True)
        rows.append(row)
        del blocks
    facts_end = machine_facts()["load"]
    lines = [
        SECTION.start,
        "## Weight table: float32 against float64 (bench/cases/table_dtype.py)",
        "",
        f"- Produced by: `python -m bench run table_dtype --lines {args.lines} --runs {args.runs}`",
        f"- Data: the first {args.lines:,} lines of `bench/data/bench-2m.vw`, -b 20, logistic loss; learning "
        f"alone (parsed blocks in memory), the same compiled learners on a float64 and a float32 table, "
        f"alternating, {args.runs} runs each",
        f"- Machine: nproc {facts['nproc']}, {facts['cpu']}, load {facts['load']} at start, {facts_end} at end; "
        f"numba {facts['numba']}, commit {facts['commit']}",
        "- Differences: the largest |prediction difference| over all examples (progressive), and the "
        "largest |weight difference| over the table relative to the largest |weight|",
        "",
        "| case | columns | float64 fastest / median (s) | float32 fastest / median (s) | float32 / float64 "
        "(fastest) | table MiB, float64 / float32 | average loss, float64 / float32 | max pred. diff | "
        "max weight diff (rel.) | non-zero weights, float64 / float32 |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        SECTION.end,
    ]
    if args.out:
        SECTION.write(args.out, "\n".join(lines) + "\n")


CASE = Case("table_dtype", arguments, run, __doc__)
