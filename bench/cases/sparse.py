"""The sparse weight store against the dense table (issue 30): ``-b 32 --sparse_weights`` against the dense
``-b 20`` run, logistic loss, default rule, on news20 (``../shared/data/real/news20/news20.train.vw.xz``,
decompressed into a temporary folder) and on the benchmark stream (``--stream FILE``, e.g. 10^7 lines
made by ``python -m streamlearn.datasets bench FILE --lines 10000000 --seed 1``).

Each data set: ``--runs`` rounds of the two CLI runs (``train -d FILE ... -p PRED --quiet``, a child process
each: wall time from start to reap, peak RSS from ``wait4``), alternating which goes first; reported the
fastest and median wall time and the largest peak RSS of each, and the ratios sparse / dense. Then the
predictions:

* ``-b 20 --sparse_weights`` against dense ``-b 20``: the store alone (same -b), identical lines expected;
* ``-b 32 --sparse_weights`` against dense ``-b 20``: equal up to the first example holding a feature that
  collides at -b 20 with another feature of the data (the examples before it see no collision in either
  run); the count of features, of -b 20 slots they fold into, and the share of equal predictions overall.

Usage: ``python -m bench run sparse [--stream FILE] [--runs R] [--stream-runs R] [--out bench/RESULTS.md]``.
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import statistics
import tempfile
from pathlib import Path

import numpy as np

from bench.harness import Case, Context, Section, machine_facts, shared
from bench.timing import run_once, streamlearn_base

SECTION = Section("issue30_sparse")
NEWS20 = Path(__file__).resolve().parents[3] / "shared" / "data" / "real" / "news20" / "news20.train.vw.xz"
OPTS = ["--loss", "logistic", "--quiet"]


def features_and_first_collision(path: Path, low_bits: int = 20) -> tuple[int, int, int]:
    """(features at -b 32, their slots at -b ``low_bits``, the first example (0-based) holding a feature that
    shares its -b ``low_bits`` slot with another feature; the number of examples when none does)."""
    from streamlearn.config import train_config
    from streamlearn.run.stream import hashing_of, text_blocks
    cfg = train_config({"sources": (str(path),), "bits": 32})
    keys = []
    for b in text_blocks((str(path),), cfg.format, hashing_of(cfg), cfg.block_size):
        keys.append(np.unique(b.idx[b.indptr[0]:b.indptr[b.n]]))
    keys = np.unique(np.concatenate(keys)).astype(np.int64)
    low = keys & ((1 << low_bits) - 1)
    slots, counts = np.unique(low, return_counts=True)
    shared_slots = slots[counts > 1]
    colliding = np.sort(keys[np.isin(low, shared_slots)])
    first, seen = None, 0
    for b in text_blocks((str(path),), cfg.format, hashing_of(cfg), cfg.block_size):
        idx = b.idx[b.indptr[0]:b.indptr[b.n]].astype(np.int64)
        hit = np.isin(idx, colliding)
        if hit.any():
            pos = int(np.flatnonzero(hit)[0]) + int(b.indptr[0])
            first = seen + int(np.searchsorted(b.indptr[:b.n + 1], pos, side="right")) - 1
            break
        seen += b.n
    return int(keys.shape[0]), int(slots.shape[0]), seen if first is None else first


def measure(name: str, path: Path, runs: int, tmp: Path) -> list[str]:
    base = streamlearn_base() + ["train", "-d", str(path)] + OPTS
    cmds = {"dense -b 20": base + ["-b", "20", "-p", str(tmp / "d20")],
            "sparse -b 32": base + ["-b", "32", "--sparse_weights", "-p", str(tmp / "s32")]}
    run_once(base + ["-b", "20", "--sparse_weights", "-p", str(tmp / "s20")])     # warm (kernels compiled)
    got = {k: [] for k in cmds}
    for i in range(runs):
        for k in (list(cmds) if i % 2 == 0 else list(cmds)[::-1]):
            got[k].append(run_once(cmds[k]))
            print(f"{name} {k}: {got[k][-1].wall:.2f} s {got[k][-1].rss_mib:.0f} MiB", flush=True)
    d20, s20, s32 = ((tmp / f).read_text().splitlines() for f in ("d20", "s20", "s32"))
    features, slots, first = features_and_first_collision(path)
    equal = sum(a == b for a, b in zip(d20, s32))
    before = all(a == b for a, b in zip(d20[:first], s32[:first]))
    wall = {k: sorted(r.wall for r in v) for k, v in got.items()}
    rss = {k: max(r.rss_mib for r in v) for k, v in got.items()}
    d, s = "dense -b 20", "sparse -b 32"
    return [f"| {name} | {len(d20):,} | {wall[d][0]:.2f} / {statistics.median(wall[d]):.2f} | "
            f"{wall[s][0]:.2f} / {statistics.median(wall[s]):.2f} | {wall[s][0] / wall[d][0]:.2f} | "
            f"{rss[d]:.0f} | {rss[s]:.0f} | {rss[s] / rss[d]:.2f} | {'yes' if s20 == d20 else 'NO'} | "
            f"{features:,} / {slots:,} | {first:,}: {'all equal' if before else 'NOT equal'} | "
            f"{equal / max(1, len(d20)):.4f} |"]


def arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--stream", type=Path, default=None, help="the benchmark stream (10^7 lines in issue 30)")
    shared(ap, "runs", default=5)
    ap.add_argument("--stream-runs", type=int, default=3, help="rounds on --stream (default 3)")
    shared(ap, "out")


def run(args: argparse.Namespace, ctx: Context) -> None:
    facts = machine_facts()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sparse-bench-") as d:
        tmp = Path(d)
        if NEWS20.exists():
            news = tmp / "news20.train.vw"
            with lzma.open(NEWS20, "rb") as src, open(news, "wb") as dst:
                shutil.copyfileobj(src, dst)
            rows += measure("news20 train", news, args.runs, tmp)
        if args.stream is not None:
            rows += measure(f"{args.stream.name}", args.stream, args.stream_runs, tmp)
    lines = [
        SECTION.start,
        "## Sparse weights: -b 32 --sparse_weights against dense -b 20 (issue 30; bench/cases/sparse.py)",
        "",
        f"- Produced by: `python -m bench run sparse --runs {args.runs} --stream-runs {args.stream_runs}"
        + (f" --stream {args.stream}`" if args.stream else "`")
        + (" (the stream: `python -m streamlearn.datasets bench FILE --lines 10000000 --seed 1`)" if args.stream else ""),
        "- Runs: `streamlearn train -d FILE --loss logistic --quiet -p PRED` with `-b 20` (dense) and "
        "`-b 32 --sparse_weights`, child processes, alternating; wall time start to reap, peak RSS (wait4)",
        f"- Machine: nproc {facts['nproc']}, {facts['cpu']}, load {facts['load']} at start, "
        f"{machine_facts()['load']} at end; commit {facts['commit']}",
        "- Predictions: `-b 20 --sparse_weights` against dense -b 20 (the store alone); -b 32 against -b 20 "
        "up to the first example with a feature that collides at -b 20 (features at -b 32 / their -b 20 "
        "slots), and the share of all prediction lines equal",
        "",
        "| data | examples | dense -b 20 fastest / median (s) | sparse -b 32 fastest / median (s) | time ratio "
        "(fastest) | dense peak RSS MiB | sparse peak RSS MiB | RSS ratio | -b 20 sparse == dense | features / "
        "-b 20 slots | first collision: before it | equal lines |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        SECTION.end,
    ]
    print("\n".join(lines))
    if args.out:
        SECTION.write(args.out, "\n".join(lines) + "\n")


CASE = Case("sparse", arguments, run, __doc__)
