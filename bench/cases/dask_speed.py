"""Speed of streamlearn on Dask against one process and against VW (issue 16's speed benchmark).

Data: the IMDB training file of ../shared/data/real (``imdb/imdb.train.vw.xz``, 25,000 reviews, about
141 tokens each) repeated until ``--lines`` lines (default 2,000,000: 80 copies), each copy in its own
seeded shuffle (``numpy.random.default_rng([SEED, copy])``). It is built once into
``bench/out/speed/`` (git-ignored; about 1.9 GB at 2M lines), with a stamp so that a stale or partial
file is rebuilt. One pass of streamlearn over 2M such lines takes about ten seconds here (the
LIBSVM sets a9a and w8a, 12-14 features a line, take 1-2 s, too little to time a cluster). The shards
of k workers are the file cut by line: line i goes to shard i mod k, written once per k (for k = 1
the shard is the file itself).

Timed, in one process that alternates them (the order rotates by one each run):

* ``streamlearn train -d FILE --loss logistic -b 18`` in one process, one pass (a child process:
  its wall time includes the interpreter's start-up; the CLI's own "wall time" line, which does not,
  is reported next to it);
* ``streamlearn.dask.train(client, shards, passes=P, loss="logistic", bits=18)`` for P = 1 and 2
  on a ``LocalCluster(n_workers=k, threads_per_worker=1, processes=True)`` for each k of
  ``--workers`` (default 1,2). Every cluster is started once, before the timed runs, and stays up
  for the whole benchmark: the cluster's start-up is not part of any time. The wall time is the
  call's; ``on_round``'s ``sync`` (the merge at the client: parsing the k models, merging them and
  writing the merged model) is reported separately. The transfer of the models from the workers is
  inside ``gather``, so it counts in the round's wall time, not in the sync;
* ``streamlearn.dask.train(client, shards, passes=1, sync_every=N, ...)`` on the same clusters, with
  N = ceil(lines / k / 4) fixed before running: 4 syncs per shard in the pass, each period of a plain
  shard reading on from the byte after the previous period's last example (no parse cache). Its cost
  is reported against the same k's 1-round run without syncs (3 extra syncs); its average loss is
  the pass's (the periods' losses weighted by their examples). The warm-up runs it with
  ceil(warm-up lines / k / 4);
* the peer, VW 9.11.9 (``python -m vowpalwabbit -d FILE --loss_function logistic -b 18``), one pass
  in one process. Both tools use their default update rule, which is the same one: VW's default
  learner (adaptive, normalized and invariant updates), which is streamlearn's default ``--algo
  sgd`` without rule flags. VW's cluster mode needs its ``spanning_tree`` daemon, which the pip
  package does not ship (the library has the ``--span_server`` client options, but there is no
  daemon to point them at), so only single-process VW is timed.

Before the timed runs, one untimed warm-up of every configuration on the file's first 20,000 lines
(it fills the numba cache and imports streamlearn in every worker) and one read of every data file
(page cache). Then ``--runs`` (default 5) timed runs of each. Reported: fastest and median of each;
ratios are judged on the fastest, since VW's wall time is bimodal on this machine. Speed-up =
single-process fastest / Dask-k fastest (one round against one pass).

Bytes per sync: for each k, the model file each worker sends back (on_round ``sent``: only the rows
it touched, each with its resume state) and the round's starting model that every worker receives
(``start``), against what VW's AllReduce moves per sync. At a pass end VW's
``accumulate_weighted_avg`` (the adaptive case, VowpalWabbit/vowpal_wabbit
``vowpalwabbit/core/src/accumulate.cc``; scale-out.md's anchor) makes two all-reduce calls: the
G column, 2^b floats, then the whole weight table, 2^b x stride floats, where the stride of VW's
default learner is 4 (weight, G, N and a spare slot; ``Workspace.get_stride()`` says 4). In VW's
spanning tree every node sends its whole buffer up once and receives the result once per call, so a
node sends (1 + stride) x 2^b x 4 bytes per sync; that is the figure compared. At ``-b 24`` the
streamlearn messages come from one extra untimed 1-round run per k (bytes only).

This machine has 2 cores, and one streamlearn process already keeps both busy (a parser thread and
the learner), so no speed-up can show here: what matters on it is the overhead of Dask with k = 1
against one process, and the sync's share. On a bigger machine or a real cluster: ``--workers
1,2,4,8``, or ``--scheduler tcp://host:8786`` (then k is that cluster's worker count, and the workers
must see ``bench/out/speed/`` under the same path).

Usage: ``python -m bench run dask_speed [--runs 5] [--workers 1,2] [--lines 2000000]
[--scheduler ADDRESS] [--out bench/RESULTS.md]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.data import DATA_ROOT, file_size, fresh, read_through, write_meta
from bench.harness import REPO, Case, Context, Section, machine_facts, say, shared
from bench.timing import dask_skip, streamlearn_base, vw_available
SOURCE = DATA_ROOT / "imdb" / "imdb.train.vw.xz"
WORK = REPO / "bench" / "out" / "speed"
SEED = 20261124
BITS = 18
BITS_BYTES = (18, 24)           # -b of the byte figures
VW_STRIDE = 4                   # VW's default learner: weight, G, N, spare (Workspace.get_stride())
WARM_LINES = 20_000
OPTIONS = {"loss": "logistic", "bits": BITS}
SECTION = Section("bench_dask_speed")


# --------------------------------------------------------------------------- data


def _fresh(paths: list[Path], want: dict) -> bool:
    """Whether every path exists with the stamp ``want`` (and the size the stamp records)."""
    return all(fresh(p, want) for p in paths)


def _seal(path: Path, want: dict) -> None:
    write_meta(path, {**want, "size": file_size(path)})


def build_data(lines: int) -> Path:
    """The benchmark file: IMDB's training lines, copy c in the shuffle default_rng([SEED, c]), until
    ``lines`` lines. Reused when its stamp matches."""
    import lzma

    path = WORK / f"imdb-{lines}.vw"
    want = {"kind": "imdb-repeated", "lines": lines, "seed": SEED, "source_size": SOURCE.stat().st_size}
    if _fresh([path], want):
        return path
    WORK.mkdir(parents=True, exist_ok=True)
    say(f"writing {path.relative_to(REPO)} ({lines:,} lines from {SOURCE.name}) ...")
    with lzma.open(SOURCE, "rb") as f:
        src = f.read().splitlines(keepends=True)
    tmp = path.with_name(path.name + ".part")
    left, copy = lines, 0
    with open(tmp, "wb") as out:
        while left > 0:
            order = np.random.default_rng([SEED, copy]).permutation(len(src))[:left]
            out.write(b"".join(src[i] for i in order))
            left -= len(order)
            copy += 1
    os.replace(tmp, path)
    _seal(path, want)
    return path


def build_shards(data: Path, k: int) -> list[Path]:
    """The file cut into k shards by line (line i to shard i mod k), written once per k; for k = 1
    the file itself."""
    if k == 1:
        return [data]
    paths = [data.with_name(f"{data.stem}.shard{j}of{k}.vw") for j in range(k)]
    want = {"kind": "shard", "of": data.name, "source_size": data.stat().st_size, "k": k}
    if _fresh(paths, want):
        return paths
    say(f"writing {k} shards of {data.name} ...")
    tmps = [p.with_name(p.name + ".part") for p in paths]
    outs = [open(t, "wb", buffering=1 << 22) for t in tmps]
    try:
        with open(data, "rb", buffering=1 << 22) as f:
            for i, line in enumerate(f):
                outs[i % k].write(line)
    finally:
        for o in outs:
            o.close()
    for t, p in zip(tmps, paths):
        os.replace(t, p)
        _seal(p, want)
    return paths


def build_head(data: Path, lines: int) -> Path:
    path = data.with_name(f"{data.stem}.head{lines}.vw")
    want = {"kind": "head", "of": data.name, "source_size": data.stat().st_size, "lines": lines}
    if not _fresh([path], want):
        with open(data, "rb") as f, open(path, "wb") as out:
            for i, line in enumerate(f):
                if i >= lines:
                    break
                out.write(line)
        _seal(path, want)
    return path


# --------------------------------------------------------------------------- the timed configurations


def single_cmd(path: Path) -> list[str]:
    return streamlearn_base() + ["train", "-d", str(path), "--loss", "logistic", "-b", str(BITS)]


def vw_cmd(path: Path) -> list[str]:
    return [sys.executable, "-m", "vowpalwabbit", "-d", str(path), "--loss_function", "logistic", "-b", str(BITS)]


def _field(text: str, name: str) -> float | None:
    m = re.search(rf"^{re.escape(name)}\s*=\s*([-0-9.e+]+)", text, re.M)
    return float(m.group(1)) if m else None


def run_child(cmd: list[str]) -> dict:
    """Wall time of a child process (start to reap), its CPU seconds (user + system, from os.wait4 on
    it), and its summary's average loss and own wall time (stderr, read after the run)."""
    import tempfile

    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"exit status {proc.returncode}: {' '.join(cmd)}\n{text[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "loss": _field(text, "average loss"),
            "inner": _field(text, "wall time")}


def run_dask(client, shards: list[Path], passes: int, bits: int = BITS, sync_every: int | None = None) -> dict:
    from streamlearn import dask as sdask

    rounds: list[dict] = []
    t0 = time.perf_counter()
    model = sdask.train(client, [str(p) for p in shards], passes=passes, on_round=rounds.append,
                        sync_every=sync_every, **{**OPTIONS, "bits": bits})
    wall = time.perf_counter() - t0
    loss = rounds[-1]["loss"]
    if sync_every is not None:      # the pass's progressive loss: the periods' losses weighted by their examples
        n = sum(r["examples"] for r in rounds)
        loss = sum(r["loss"] * r["examples"] for r in rounds) / n if n else None
    return {"wall": wall, "sync": sum(r["sync"] for r in rounds), "rounds": rounds, "loss": loss,
            "examples": rounds[0]["examples"], "model": len(model)}


def sync_every_for(lines: int, k: int) -> int:
    """N of the one-pass run with syncs: 4 periods per shard."""
    return -(-lines // (k * 4))


class Cluster:
    """A Dask client on a LocalCluster of k single-threaded worker processes, or on ``--scheduler``."""

    def __init__(self, k: int | None, address: str | None):
        from distributed import Client, LocalCluster

        self.cluster = None
        logging.getLogger("distributed").setLevel(logging.ERROR)     # the in-process scheduler's and nannies' INFO lines
        if address is None:
            # the scheduler's HTTP server on a free port (8787 may be taken), no dashboard: as streamlearn.dask.connect
            self.cluster = LocalCluster(n_workers=k, threads_per_worker=1, processes=True, dashboard_address=":0",
                                        scheduler_kwargs={"dashboard": False}, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        else:
            self.client = Client(address, timeout=10)
        self.k = len(self.client.scheduler_info()["workers"])

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


# --------------------------------------------------------------------------- report


def _dirty(path: str) -> bool:
    """Whether ``path`` differs from the checked-out commit."""
    try:
        return bool(subprocess.run(["git", "status", "--porcelain", "--", path], cwd=REPO, capture_output=True,
                                   text=True, check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return False


def fastest(runs: list[dict]) -> float:
    return min(r["wall"] for r in runs)


def median(runs: list[dict], key: str = "wall") -> float:
    return statistics.median(r[key] for r in runs)


def vw_node_bytes(bits: int) -> int:
    """Bytes one node sends per sync in VW's accumulate_weighted_avg: 2^b floats (G), then 2^b x stride."""
    return (1 + VW_STRIDE) * (1 << bits) * 4


def render(res: dict) -> str:
    facts = res["facts"]
    single, vw, ks = res["single"], res["vw"], res["ks"]
    s_fast = fastest(single)
    L = [SECTION.start, "## Dask: speed against one process and VW (issue 16; bench/cases/dask_speed.py)", "",
         f"Produced by {res['produced_by']} on {res['date']} UTC; {res['secs']:.0f} s in all. "
         f"Machine: {facts['nproc']} cores ({facts['cpu']}), {facts['ram']}; Python {facts['python']}, numba "
         f"{facts['numba']}, vowpalwabbit {facts['vowpalwabbit']}, dask/distributed {res['dask_version']}, streamlearn "
         f"commit {facts['commit']}"
         + (" (streamlearn/dask.py had uncommitted changes when this ran)" if res["dask_py_dirty"] else "")
         + "."
         + f" Load average (1/5/15 min) before {res['load_before']}, after {res['load_after']}.",
         "",
         f"Data: `{res['data']}`, {res['lines']:,} lines ({res['size'] / 1e9:.2f} GB): IMDB's training file "
         f"(25,000 reviews) repeated, each copy in its own seeded shuffle; shards by line i mod k (k = 1: the file "
         f"itself). Options: `--loss logistic -b {BITS}`, the default update rule of both tools (VW's default "
         "learner: adaptive, normalized, invariant). "
         + (f"Dask: an existing cluster at `{res['scheduler']}` ({ks[0]} workers). " if res["scheduler"] else
            "Dask: `LocalCluster(n_workers=k, threads_per_worker=1, processes=True)`, started once per k before the "
            "timed runs and up for the whole benchmark (its start-up is in no time). ")
         + f"One untimed warm-up of everything on the first {WARM_LINES:,} lines, then {res['runs']} timed runs "
         "of each configuration, alternated (the order rotates each run). VW has no cluster mode here (the pip "
         "package ships no `spanning_tree` daemon): only single-process VW is timed.", "",
         "Timed commands (the Dask ones are calls in the benchmark's process):", "", "```",
         " ".join(res["cmd_single"]), " ".join(res["cmd_vw"]),
         f"streamlearn.dask.train(client, shards, passes=P, loss='logistic', bits={BITS})   # P = 1, 2",
         f"streamlearn.dask.train(client, shards, passes=1, sync_every=N, loss='logistic', bits={BITS})   # " + ", ".join(
             f"k = {k}: N = {res['sync_every'][k]:,}" for k in ks), "```", "",
         "| configuration | fastest s | median s | rounds (median s) | sync s (median) | sync share | average loss | "
         "speed-up (single fastest / this fastest) |",
         "|---|---:|---:|---:|---:|---:|---:|---:|",
         f"| streamlearn train, 1 process, 1 pass | {s_fast:.2f} | {median(single):.2f} | - | - | - | "
         f"{single[0]['loss']:.4f} | 1.00 |"]
    if vw:
        L.append(f"| VW 9.11.9, 1 process, 1 pass | {fastest(vw):.2f} | {median(vw):.2f} | - | - | - | "
                 f"{vw[0]['loss']:.4f} | {s_fast / fastest(vw):.2f} |")
    for k in ks:
        for p in (1, 2):
            runs = res["dask"][(k, p)]
            share = median([{"wall": r["sync"] / r["wall"]} for r in runs])
            speed = f"{s_fast / fastest(runs):.2f}" if p == 1 else "-"
            per_round = " + ".join(f"{statistics.median(r['rounds'][j]['wall'] for r in runs):.2f}" for j in range(p))
            L.append(f"| Dask, k = {k}, {p} round{'s' * (p > 1)} | {fastest(runs):.2f} | {median(runs):.2f} | "
                     f"{per_round} | {median(runs, 'sync'):.3f} | {100 * share:.1f}% | {runs[0]['loss']:.4f} | {speed} |")
        runs = res["dask_sync"][k]
        share = median([{"wall": r["sync"] / r["wall"]} for r in runs])
        nper = min(len(r["rounds"]) for r in runs)
        per_round = " + ".join(f"{statistics.median(r['rounds'][j]['wall'] for r in runs):.2f}" for j in range(nper))
        L.append(f"| Dask, k = {k}, 1 pass, sync every {res['sync_every'][k]:,} ({nper} syncs) | {fastest(runs):.2f} | "
                 f"{median(runs):.2f} | {per_round} | {median(runs, 'sync'):.3f} | {100 * share:.1f}% | "
                 f"{runs[0]['loss']:.4f} | {s_fast / fastest(runs):.2f} |")
    inner = min(r["inner"] for r in single)
    busy = median([{"wall": r["cpu"] / r["wall"]} for r in single])
    L += ["", "Average loss: the last round's progressive loss (for Dask, summed over the shards before the merge). "
          "Sync: the merge at the client (parse the k models, merge, write the merged model); sync share = sync / "
          "wall, median over the runs.", "",
          f"streamlearn's own `wall time` line (the run without the interpreter's start-up and imports): fastest "
          f"{inner:.2f} s, median {median(single, 'inner'):.2f} s; the rest of the single-process figure (about "
          f"{median(single) - median(single, 'inner'):.2f} s) is start-up, which the Dask runs do not pay (their "
          f"workers are up). CPU seconds per wall second of the single process (user + system, `os.wait4`): "
          f"{busy:.2f}" + (f"; of VW: {median([{'wall': r['cpu'] / r['wall']} for r in vw]):.2f}" if vw else "")
          + ".", ""]
    # the reading of the figures, from the figures
    if not res["scheduler"] and facts["nproc"] <= 2:
        text = (f"**Reading.** This machine has {facts['nproc']} cores, so it cannot show how the speed-up grows "
                "with workers. One streamlearn process runs two threads (a parser and the learner) and used "
                f"{busy:.2f} CPU s per wall s here; k workers are k such processes on the same {facts['nproc']} "
                f"cores, so a second worker can only take up the {facts['nproc'] - busy:.2f} core one process "
                "leaves idle, and more workers add nothing. The figures that matter here are the overhead of Dask "
                "against one process and the sync's share.")
        if 1 in ks:
            d1 = res["dask"][(1, 1)]
            text += (f" Dask with k = 1, one round: {fastest(d1):.2f} s against {s_fast:.2f} s for `streamlearn "
                     f"train` ({fastest(d1) / s_fast:.2f}x) and {inner:.2f} s for its run without start-up "
                     f"({fastest(d1) / inner:.2f}x), fastest runs; medians {median(d1):.2f} s, {median(single):.2f} s "
                     f"and {median(single, 'inner'):.2f} s.")
        for k in ks:
            if k > 1:
                dk = res["dask"][(k, 1)]
                text += (f" k = {k}, one round: {fastest(dk):.2f} s, {s_fast / fastest(dk):.2f}x faster than "
                         f"`streamlearn train` and {inner / fastest(dk):.2f}x faster than its run without start-up "
                         f"(the second process uses what the first leaves of the {facts['nproc']} cores).")
        L.append(text)
    else:
        L.append("**Reading.** Speed-up = single-process fastest / Dask fastest, one round against one pass; ideal = "
                 f"k. Against the single process's own wall time (without its start-up, {inner:.2f} s): " + ", ".join(
                     f"k = {k}: {inner / fastest(res['dask'][(k, 1)]):.2f}x" for k in ks) + ".")
    L.append("In a run of 2 rounds, round 1 also writes each shard's parse cache (`streamlearn.dask.train` keeps "
             "one when a shard is read more than once) and round 2 reads it: hence the round columns.")
    L.append("One pass with a sync every N examples per shard (N = a shard's examples / 4; average loss: the pass's, "
             "the periods' losses weighted by their examples) against the same k's one round without syncs: " + "; ".join(
                 f"k = {k}: {fastest(res['dask_sync'][k]):.2f} s against {fastest(res['dask'][(k, 1)]):.2f} s "
                 f"({fastest(res['dask_sync'][k]) / fastest(res['dask'][(k, 1)]):.2f}x, fastest runs; medians "
                 f"{median(res['dask_sync'][k]):.2f} s and {median(res['dask'][(k, 1)]):.2f} s, "
                 f"{median(res['dask_sync'][k]) / median(res['dask'][(k, 1)]):.2f}x)" for k in ks) + ".")
    L.append("Sync share, median, one round / two rounds / one pass with syncs: " + "; ".join(
        f"k = {k}: " + " / ".join(f"{100 * median([{'wall': r['sync'] / r['wall']} for r in runs]):.1f}%"
                                  for runs in (res['dask'][(k, 1)], res['dask'][(k, 2)], res['dask_sync'][k]))
        for k in ks) + ".")
    if vw:
        L.append(f"streamlearn in one process against VW in one process: {s_fast:.2f} s against {fastest(vw):.2f} s "
                 f"({s_fast / fastest(vw):.2f}x, fastest runs; medians {median(single):.2f} s and {median(vw):.2f} s).")
    L += ["", "Raw wall times (s), in run order:", ""]
    L.append("- streamlearn train: " + ", ".join(f"{r['wall']:.2f}" for r in single))
    if vw:
        L.append("- VW: " + ", ".join(f"{r['wall']:.2f}" for r in vw))
    for k in ks:
        for p in (1, 2):
            runs = res["dask"][(k, p)]
            L.append(f"- Dask k = {k}, {p} round{'s' * (p > 1)}: " + ", ".join(
                f"{r['wall']:.2f} (" + " + ".join(f"{x['wall']:.2f}" for x in r["rounds"]) +
                f"; sync {r['sync']:.3f})" for r in runs))
        L.append(f"- Dask k = {k}, 1 pass, sync every {res['sync_every'][k]:,}: " + ", ".join(
            f"{r['wall']:.2f} (" + " + ".join(f"{x['wall']:.2f}" for x in r["rounds"]) +
            f"; sync {r['sync']:.3f})" for r in res["dask_sync"][k]))
    L += ["", "**Bytes per sync** (per worker). streamlearn: the model file a worker sends back after round 1 "
          "(only the rows it touched, each with the state its learner resumes from: for this learner a uint32 index "
          "and weight, G and N as float64, 28 bytes a row, plus the header), and "
          "the merged model every worker receives at the start of round 2. VW: one node's share of "
          "`accumulate_weighted_avg`'s two dense all-reduces, 2^b floats (G) and then the whole table, "
          f"2^b x {VW_STRIDE} floats (the default learner's stride), float32: (1 + {VW_STRIDE}) x 2^b x 4 bytes "
          "sent up the spanning tree, and as many received. "
          f"`-b {BITS}` from the timed 2-round runs; `-b 24` from one untimed 1-round run per k.", "",
          "| -b | k | worker message (mean / largest) | merged model sent to each worker | VW per node per sync | "
          "largest message / VW |", "|---:|---:|---:|---:|---:|---:|"]
    for bits in BITS_BYTES:
        for k in ks:
            b = res["bytes"][(bits, k)]
            L.append(f"| {bits} | {k} | {b['mean']:,.0f} / {b['max']:,} | {b['start']:,} | {vw_node_bytes(bits):,} | "
                     f"{b['max'] / vw_node_bytes(bits):.3f} |")
    L += ["", SECTION.end]
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------- main


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "runs", default=5, help="timed runs of each configuration (default 5)")
    ap.add_argument("--workers", default="1,2", help="the k of the LocalClusters (default 1,2)")
    shared(ap, "lines", default=2_000_000, help="lines of the data file (default 2,000,000)")
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="use the Dask cluster at ADDRESS instead of LocalClusters (k = its worker count)")
    shared(ap, "out", help="write the section into this file (bench/RESULTS.md)")


def check(args: argparse.Namespace, ctx: Context) -> None:
    if args.runs < 1:
        ctx.error("--runs must be at least 1")
    if args.lines < 1000:
        ctx.error("--lines must be at least 1000")
    try:
        args.ks = sorted({int(k) for k in args.workers.split(",")})
    except ValueError:
        ctx.error(f"--workers takes whole numbers separated by commas, not {args.workers!r}")
    if args.ks[0] < 1:
        ctx.error("--workers must be at least 1")


def run(args: argparse.Namespace, ctx: Context) -> int:
    check(args, ctx)
    skip = dask_skip(SOURCE)
    if skip:
        print(skip)
        return 0
    import distributed
    import datetime as dt

    started = time.time()
    load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())
    data = build_data(args.lines)
    head = build_head(data, min(WARM_LINES, args.lines))

    clusters: dict[int, Cluster] = {}
    try:
        if args.scheduler:
            c = Cluster(None, args.scheduler)
            clusters[c.k] = c
        else:
            for k in args.ks:
                say(f"starting LocalCluster(n_workers={k}) ...")
                clusters[k] = Cluster(k, None)
        ks = sorted(clusters)
        shards = {k: build_shards(data, k) for k in ks}
        warm_shards = {k: build_shards(head, k) for k in ks}
        for path in {p for v in shards.values() for p in v} | {data}:
            read_through(path)

        have_vw = vw_available()
        configs = [("single",), *([("vw",)] if have_vw else []),
                   *[c for k in ks for c in (("dask", k, 1), ("dask", k, 2), ("dask-sync", k))]]

        def run(cfg, path_single, k_shards, lines):
            if cfg[0] == "single":
                return run_child(single_cmd(path_single))
            if cfg[0] == "vw":
                return run_child(vw_cmd(path_single))
            if cfg[0] == "dask-sync":
                return run_dask(clusters[cfg[1]].client, k_shards[cfg[1]], 1, sync_every=sync_every_for(lines, cfg[1]))
            return run_dask(clusters[cfg[1]].client, k_shards[cfg[1]], cfg[2])

        def label(cfg):
            if cfg[0] == "dask-sync":
                return f"dask k={cfg[1]} P=1 sync-every {sync_every_for(args.lines, cfg[1])}"
            return {"single": "streamlearn", "vw": "VW"}.get(cfg[0]) or f"dask k={cfg[1]} P={cfg[2]}"

        say("warm-up (untimed) on the first lines ...")
        for cfg in configs:
            run(cfg, head, warm_shards, min(WARM_LINES, args.lines))
        results: dict[tuple, list[dict]] = {cfg: [] for cfg in configs}
        for i in range(args.runs):
            order = configs[i % len(configs):] + configs[:i % len(configs)]
            parts = []
            for cfg in order:
                r = run(cfg, data, shards, args.lines)
                results[cfg].append(r)
                parts.append(f"{label(cfg)} {r['wall']:.2f}" + (f" (sync {r['sync']:.3f})" if "sync" in r else ""))
            say(f"run {i + 1}/{args.runs}: " + ", ".join(parts))

        # bytes per sync: -b 18 from the timed 2-round runs, -b 24 from one 1-round run per k
        sizes = {}
        for k in ks:
            r = results[("dask", k, 2)][0]
            sent = r["rounds"][0]["sent"]
            sizes[(BITS, k)] = {"mean": sum(sent) / len(sent), "max": max(sent), "start": r["rounds"][1]["start"]}
        for bits in BITS_BYTES:
            if bits == BITS:
                continue
            for k in ks:
                say(f"bytes at -b {bits}, k = {k} (untimed) ...")
                r = run_dask(clusters[k].client, shards[k], 1, bits)
                sent = r["rounds"][0]["sent"]
                sizes[(bits, k)] = {"mean": sum(sent) / len(sent), "max": max(sent), "start": r["model"]}
    finally:
        for c in clusters.values():
            c.close()

    res = {"facts": machine_facts(), "produced_by": ctx.produced_by(),
           "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M"), "secs": time.time() - started,
           "dask_version": distributed.__version__, "dask_py_dirty": _dirty("streamlearn/dask.py"), "load_before": load_before,
           "load_after": "/".join(f"{x:.2f}" for x in os.getloadavg()), "data": data.relative_to(REPO),
           "lines": args.lines, "size": data.stat().st_size, "scheduler": args.scheduler, "ks": ks,
           "runs": args.runs, "cmd_single": single_cmd(data.relative_to(REPO)), "cmd_vw": vw_cmd(data.relative_to(REPO)),
           "single": results[("single",)], "vw": results.get(("vw",)),
           "dask": {(k, p): results[("dask", k, p)] for k in ks for p in (1, 2)},
           "dask_sync": {k: results[("dask-sync", k)] for k in ks},
           "sync_every": {k: sync_every_for(args.lines, k) for k in ks}, "bytes": sizes}
    text = render(res)
    print(text)
    if args.out:
        SECTION.write(args.out, text)
        say(f"written to {args.out}")
    return 0


CASE = Case("dask_speed", arguments, run, __doc__)
