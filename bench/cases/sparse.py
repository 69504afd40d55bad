"""The sparse weight store against the dense table (issue 30): ``-b 32 --sparse_weights`` against the dense
``-b 20`` run, logistic loss, default rule, on news20 (``../shared/data/real/news20/news20.train.vw.xz``,
decompressed into a temporary folder) and on the benchmark stream (``--stream FILE``, e.g. 10^7 lines
made by ``python -m streamlearn.datasets bench FILE --lines 10000000 --seed 1``).

Each data set: ``--runs`` rounds of the two CLI runs (``train -d FILE ... -p PRED --quiet``, a child process
each: wall time from start to reap, peak RSS from ``wait4``), alternating which goes first; reported the
fastest and median wall time and the largest peak RSS of each, and the ratios sparse / dense. Then the
predictions:

* ``-b 20 --sparse_weights`` against dense ``-b 20``: the store alone (same -b), identical lines expected;
* ``-b 32 --sparse_weights`` against dense ``-b 20`` where there is no collision: the features of the data
  that share their -b 20 slot with another are counted, then both learners run side by side in this
  process on the data without them (``without_collisions``): every progressive prediction must be equal.

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


def colliding_features(path: Path, low_bits: int = 20) -> tuple[int, int, np.ndarray]:
    """(features at -b 32, the -b ``low_bits`` slots they fold into, the sorted -b 32 indices of the features
    that share their -b ``low_bits`` slot with another feature of the data)."""
    from streamlearn.config import train_config
    from streamlearn.run.stream import hashing_of, text_blocks
    cfg = train_config({"sources": (str(path),), "bits": 32})
    keys = []
    for b in text_blocks((str(path),), cfg.format, hashing_of(cfg), cfg.block_size):
        keys.append(np.unique(b.idx[b.indptr[0]:b.indptr[b.n]]))
    keys = np.unique(np.concatenate(keys)).astype(np.int64)
    low = keys & ((1 << low_bits) - 1)
    slots, counts = np.unique(low, return_counts=True)
    return int(keys.shape[0]), int(slots.shape[0]), np.sort(keys[np.isin(low, slots[counts > 1])])


def without_collisions(path: Path, colliding: np.ndarray) -> tuple[int, int, int]:
    """The learner's progressive predictions on the data without the colliding features, dense -b 20 against
    -b 32 --sparse_weights, side by side in this process (the same parsed -b 32 blocks, the colliding
    entries dropped, their indices masked to 20 bits for the dense run, as its parser masks them): (examples,
    entries dropped, examples whose two predictions differ)."""
    from streamlearn import learners
    from streamlearn.config import train_config
    from streamlearn.core import state as S
    from streamlearn.run.runstate import RunState
    from streamlearn.run.stream import hashing_of, text_blocks
    runs = {}
    for bits, sparse in ((20, False), (32, True)):
        cfg = train_config({"sources": (str(path),), "bits": bits, "loss": "logistic", "sparse_weights": sparse})
        state = RunState.fresh(cfg)
        state.ctr[S.C_DUMP] = np.inf
        runs[bits] = (state, learners.block_kernel(cfg))
    assert runs[32][0].store is not None and runs[20][0].store is None
    cfg = train_config({"sources": (str(path),), "bits": 32})
    examples = dropped = differ = 0
    for b in text_blocks((str(path),), cfg.format, hashing_of(cfg), cfg.block_size):
        n, s, f = b.n, int(b.indptr[0]), int(b.indptr[b.n])
        idx = b.idx[s:f]
        keep = ~np.isin(idx.astype(np.int64), colliding)
        dropped += int(keep.shape[0] - keep.sum())
        kept = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
        indptr = kept[(b.indptr[:n + 1] - s).astype(np.int64)]
        idx32, val = np.ascontiguousarray(idx[keep]), np.ascontiguousarray(b.val[s:f][keep])
        preds = {}
        for bits, (state, kernel) in runs.items():
            rows = state.rows(idx32) if bits == 32 else (idx32 & np.uint32((1 << 20) - 1))
            p = np.empty(n)
            arrays = (indptr, rows, val, b.labels[:n], b.weights[:n], b.bases[:n], np.diff(indptr), p)
            pos = 0
            while pos < n:
                pos = kernel(arrays, state.kernel_state, pos, n)
            preds[bits] = p
        examples += n
        differ += int(np.count_nonzero(preds[20] != preds[32]))
    return examples, dropped, differ


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
    d20, s20 = ((tmp / f).read_text().splitlines() for f in ("d20", "s20"))
    features, slots, colliding = colliding_features(path)
    examples, dropped, differ = without_collisions(path, colliding)
    wall = {k: sorted(r.wall for r in v) for k, v in got.items()}
    rss = {k: max(r.rss_mib for r in v) for k, v in got.items()}
    d, s = "dense -b 20", "sparse -b 32"
    return [f"| {name} | {len(d20):,} | {wall[d][0]:.2f} / {statistics.median(wall[d]):.2f} | "
            f"{wall[s][0]:.2f} / {statistics.median(wall[s]):.2f} | {wall[s][0] / wall[d][0]:.2f} | "
            f"{rss[d]:.0f} | {rss[s]:.0f} | {rss[s] / rss[d]:.2f} | {'yes' if s20 == d20 else 'NO'} | "
            f"{features:,} / {slots:,} / {colliding.shape[0]:,} | {dropped:,} | {examples - differ:,} of "
            f"{examples:,} |"]


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
        "- Predictions: `-b 20 --sparse_weights` against dense -b 20, -p files (the store alone); -b 32 against "
        "-b 20 where there is no collision: the two learners side by side in one process on the data without "
        "the features that share a -b 20 slot with another (the entries dropped), progressive predictions "
        "compared exactly",
        "",
        "| data | examples | dense -b 20 fastest / median (s) | sparse -b 32 fastest / median (s) | time ratio "
        "(fastest) | dense peak RSS MiB | sparse peak RSS MiB | RSS ratio | -b 20 sparse == dense | features / "
        "their -b 20 slots / colliding features | entries dropped | -b 32 == -b 20 without collisions |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        SECTION.end,
    ]
    print("\n".join(lines))
    if args.out:
        SECTION.write(args.out, "\n".join(lines) + "\n")


CASE = Case("sparse", arguments, run, __doc__)
