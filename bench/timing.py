"""Timing and the peers of the benchmarks.

* ``run_once``: a command as a child process (cwd the repository root, output to /dev/null), its wall
  time from start to reap and its peak RSS from ``os.wait4``; ``alternate``: two tools in alternating
  order, round by round; ``summarize``; ``run_timed``: a timed child whose failure raises with its stderr.
* ``kernel_time``: a learner's compiled kernel alone over blocks parsed beforehand.
* The peers: ``streamlearn_base`` (the CLI of this environment), VW (``vw_available``, ``vw_base``,
  ``vw_test_cmd``), Dask (``dask_skip``).
* ``grid``, ``parse_values``, ``fmt_v``: the sweeps' values.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.data import MIB
from bench.harness import REPO, say


@dataclass
class Run:
    wall: float  # seconds
    rss_kib: int  # ru_maxrss of the child

    @property
    def rss_mib(self) -> float:
        return self.rss_kib * 1024 / MIB


def run_once(cmd: list[str]) -> Run:
    """Run cmd as a child; wall time around start..reap, peak RSS from os.wait4 on that child."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"exit status {proc.returncode}: {shlex.join(cmd)} (run it by hand to see its output)")
    return Run(wall, usage.ru_maxrss)


def alternate(sl: list[str], vw: list[str] | None, rounds: int, label: str) -> tuple[list, list, list]:
    """`rounds` rounds of streamlearn and VW; the one that goes first alternates (SL VW, VW SL, ...).

    Without VW (vw None) only streamlearn runs. Returns the streamlearn runs, the VW runs and the
    order of each round.
    """
    cmds = {"streamlearn": sl, "VW": vw}
    runs: dict[str, list[Run]] = {"streamlearn": [], "VW": []}
    orders = []
    for i in range(rounds):
        order = ["streamlearn", "VW"] if i % 2 == 0 else ["VW", "streamlearn"]
        if vw is None:
            order = ["streamlearn"]
        parts = []
        for tool in order:
            run = run_once(cmds[tool])
            runs[tool].append(run)
            parts.append(f"{tool} {run.wall:.3f} s {run.rss_mib:.1f} MiB")
        orders.append(" then ".join(order))
        say(f"  {label} round {i + 1}/{rounds}: " + ", ".join(parts))
    return runs["streamlearn"], runs["VW"], orders


@dataclass
class Summary:
    median: float
    low: float
    high: float
    rss_median: float
    rss_max: float


def summarize(runs: list[Run]) -> Summary:
    walls = [r.wall for r in runs]
    rss = [r.rss_mib for r in runs]
    return Summary(statistics.median(walls), min(walls), max(walls), statistics.median(rss), max(rss))


def run_timed(cmd: list[str]) -> float:
    """Run cmd (cwd the repository root); its wall time in seconds. A failure raises with its stderr."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-10:])
        raise RuntimeError(f"exit status {proc.returncode}: {shlex.join(cmd)}\n{tail}")
    return wall


def kernel_time(path: Path, bits: int, projection: str, radius: float, pretouch: bool = False,
                clock: str = "wall") -> float:
    """Seconds the compiled learner takes over the examples of ``path`` (parsed beforehand) on a fresh
    table: l1ball with ``projection``, or plain SGD for "none". With ``pretouch`` every page of the
    table is written before the clock starts (no first-touch page faults: the steady state of a long
    stream)."""
    import time

    import numpy as np

    from streamlearn import learners
    from streamlearn.run import stream
    from streamlearn.config import train_config
    from streamlearn.core import state as S

    opts = {"bits": bits, "loss": "logistic", "learning_rate": 1.0, "sources": (str(path),)}
    opts.update({"sgd": True} if projection == "none" else {"radius": radius, "projection": projection})
    cfg = train_config(opts)
    hashing = stream.hashing_of(cfg)
    fields = ("indptr", "idx", "val", "labels", "weights", "bases")
    blocks = [tuple(getattr(b, f).copy() for f in fields) + (b.feature_counts().copy(),)
              for b in stream.text_blocks([str(REPO / path)], "vw", hashing, cfg.block_size)]
    kernel = learners.block_kernel(cfg)
    prm, iprm = learners.make_settings(cfg, train=True)
    st = learners.make_state(cfg, prm)
    ctr = learners.make_counters()
    ctr[S.C_DUMP] = float("inf")
    table = learners.allocate_table(bits, learners.layout(cfg).columns)
    if pretouch:
        table[:] = 0.0
    now = time.thread_time if clock == "cpu" else time.perf_counter
    start = now()
    for indptr, idx, val, labels, weights, bases, nfeat in blocks:
        preds = np.empty(labels.shape[0])
        kernel((indptr, idx, val, labels, weights, bases, nfeat, preds), (table, prm, iprm, st, ctr), 0,
               labels.shape[0])
    return now() - start


# --------------------------------------------------------------------------- peers


def streamlearn_base() -> list[str]:
    script = Path(sys.executable).parent / "streamlearn"
    return [str(script)] if script.exists() else [sys.executable, "-m", "streamlearn"]


def vw_available() -> bool:
    try:
        import vowpalwabbit  # noqa: F401
    except Exception:  # ImportError, or a broken native library
        return False
    return True


def vw_base() -> list[str]:
    return [sys.executable, "-m", "vowpalwabbit"]


def vw_test_cmd(model: str, test: str, pred: str) -> list[str]:
    return vw_base() + ["-t", "-i", model, "-d", test, "-p", pred, "--quiet"]


def dask_skip(data: Path) -> str | None:
    """Why a Dask benchmark cannot run here (Dask not installed, or its data ``data`` absent), or None."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return "skipped: Dask is not installed (pip install 'streamlearn[dask]')"
    if not data.exists():
        return f"skipped: {data} is absent"
    return None


# --------------------------------------------------------------------------- sweeps


def grid(low_exp: int, high_exp: int, mantissas: tuple[int, ...] = (1, 3), zero: bool = True) -> tuple[float, ...]:
    """(0,) then m x 10^e for e in low_exp..high_exp and each mantissa m, up to 10^high_exp."""
    values = [float(f"{m}e{e}") for e in range(low_exp, high_exp + 1) for m in mantissas]
    return ((0.0,) if zero else ()) + tuple(v for v in values if v <= 10.0 ** high_exp)


def parse_values(text: str) -> tuple[float, ...]:
    """A sweep given on the command line: comma-separated values >= 0, sorted, without repeats."""
    values = tuple(sorted({float(x) for x in text.split(",") if x.strip()}))
    if not values or values[0] < 0:
        raise argparse.ArgumentTypeError("a comma-separated list of values >= 0")
    return values


def fmt_v(v: float | str) -> str:
    return v if isinstance(v, str) else f"{v:g}"
