"""Start-up benchmark: warm ``streamlearn train`` and ``streamlearn predict`` on 10 lines, VW on the
same 10 lines, and the floor (python importing numpy and numba, nothing else).

How
---
The 10 lines are the first 10 of bench/data/bench-2m.vw (else bench-200k.vw, else the sample
data/samples/sparse.train.vw). Commands (each a child process, stdout and stderr to /dev/null, working
directory the repository root):

* streamlearn train:   ``streamlearn train -d TEN --quiet``
* streamlearn predict: ``streamlearn predict -d TEN --quiet -i MODEL -p /dev/null`` (MODEL trained on TEN)
* VW:                  ``python -m vowpalwabbit -d TEN --quiet``
* floor:               ``python -c 'import numpy, numba'``

``streamlearn warm-up`` runs first (the kernels are compiled, or loaded when cached), then one
warm-up round, then ``--runs`` rounds (default 7) in which the commands alternate, the first one
rotating from round to round. The children run without PYTHONDONTWRITEBYTECODE (it is dropped from
their environment when set), so streamlearn's modules load from bytecode as in an installed package:
with it set, every run compiles the package's sources again (about 70 ms here). Wall time: ``time.perf_counter()`` from just before the child starts
to just after it is reaped; peak RSS: ``ru_maxrss`` of that child from ``os.wait4``. Reported per
command: fastest and median wall time, the fastest less the floor's fastest, and the largest peak RSS. The table is printed and written
between the markers ``<!-- bench_startup:start -->`` and ``<!-- bench_startup:end -->`` into
bench/RESULTS.md (the rest of that file is kept).

Then, unless ``--memory-lines 0``, the peak RSS of ``streamlearn train -b 20 --loss logistic --l1 1e-7``
(default rule, and ``--algo tg --sgd``) on the first 200,000 lines of the same file, one run each.

    python -m bench run startup [--runs N] [--memory-lines N] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import REPO as ROOT, Case, Context, Section, machine_short, shared

OUT = ROOT / "bench" / "RESULTS.md"
SECTION = Section("bench_startup")
PY = sys.executable
FLOOR = "floor: python -c 'import numpy, numba'"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _streamlearn() -> list[str]:
    exe = Path(PY).with_name("streamlearn")
    return [str(exe)] if exe.exists() else [PY, "-m", "streamlearn"]


def _ten_lines(tmp: Path) -> tuple[Path, Path]:
    for name in ("bench/data/bench-2m.vw", "bench/data/bench-200k.vw", "data/samples/sparse.train.vw"):
        src = ROOT / name
        if src.exists():
            break
    lines = []
    with open(src, encoding="utf-8", errors="replace") as f:
        for line in f:
            lines.append(line)
            if len(lines) == 10:
                break
    ten = tmp / "ten.vw"
    ten.write_text("".join(lines))
    return ten, src


def run_once(cmd: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS KiB, exit status) of one child."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss, proc.returncode


def _memory(sl: list[str], src: Path, tmp: Path, lines: int) -> list[tuple[str, str, int]]:
    """(options, table columns, peak RSS KiB) of train -b 20 on the first ``lines`` lines of ``src``."""
    data = tmp / "lines.vw"
    with open(src, "rb") as f, open(data, "wb") as out:
        for i, line in enumerate(f):
            if i == lines:
                break
            out.write(line)
    out_rows = []
    for extra in ([], ["--algo", "tg", "--sgd"]):
        options = ["-b", "20", "--loss", "logistic", "--l1", "1e-7", *extra]
        columns = subprocess.run(
            [PY, "-c", "import sys; from streamlearn import learners; from streamlearn.config import train_config; "
                       "from streamlearn.cli import train; ctx = train.make_context('train', sys.argv[1:]); "
                       "cfg = train_config({k: v for k, v in ctx.params.items() "
                       "if k in ('bits', 'loss', 'l1', 'algo', 'sgd') and v not in (None, False)}); "
                       "print(cfg.algo, ','.join(learners.layout(cfg).names))",
             *options], cwd=ROOT, env=ENV, capture_output=True, text=True).stdout.strip() or "?"
        _, peak, code = run_once([*sl, "train", "-d", str(data), "--quiet", *options])
        if code != 0:
            raise SystemExit(f"train {' '.join(options)} failed (exit {code})")
        algo, _, names = columns.partition(" ")
        label = f"{' '.join(extra) or 'no --algo'} ({algo})"
        out_rows.append((label, f"{len(names.split(','))}: {names}" if names else "?", peak))
    return out_rows


def arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--runs", type=int, default=7, help="timed rounds (at least 5)")
    ap.add_argument("--memory-lines", type=int, default=200_000,
                    help="also the peak RSS of train -b 20 on this many lines of the core file (0: skip)")
    shared(ap, "out", default=OUT, help=f"results file (default {OUT.relative_to(ROOT)})")


def run(args: argparse.Namespace, ctx: Context) -> int:
    runs = max(5, args.runs)
    sl = _streamlearn()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        tmp = Path(tmp)
        ten, src = _ten_lines(tmp)
        model = tmp / "ten.slm"
        subprocess.run([*sl, "warm-up"], cwd=ROOT, env=ENV, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        subprocess.run([*sl, "train", "-d", str(ten), "--quiet", "-f", str(model)], cwd=ROOT, env=ENV,
                       check=True)
        commands = {
            "streamlearn train": [*sl, "train", "-d", str(ten), "--quiet"],
            "streamlearn predict": [*sl, "predict", "-d", str(ten), "--quiet", "-i", str(model), "-p", os.devnull],
            FLOOR: [PY, "-c", "import numpy, numba"],
        }
        has_vw = subprocess.run([PY, "-c", "import vowpalwabbit"], capture_output=True).returncode == 0
        if has_vw:
            commands["VW (python -m vowpalwabbit)"] = [PY, "-m", "vowpalwabbit", "-d", str(ten), "--quiet"]
        names = list(commands)
        times = {n: [] for n in names}
        rss = {n: [] for n in names}
        load_start = os.getloadavg()
        for rnd in range(runs + 1):          # round 0 is the warm-up round
            k = rnd % len(names)
            for name in names[k:] + names[:k]:
                wall, peak, code = run_once(commands[name])
                if code != 0:
                    raise SystemExit(f"{name} failed (exit {code}): {' '.join(commands[name])}")
                if rnd:
                    times[name].append(wall)
                    rss[name].append(peak)
        load_end = os.getloadavg()
        memory = _memory(sl, src, tmp, args.memory_lines) if args.memory_lines > 0 else []

    rows = [f"Warm start-up on 10 lines (the first 10 of `{src.relative_to(ROOT)}`), "
            f"{runs} alternating runs after a warm-up round; command: `python -m bench run startup`.",
            "",
            f"Machine: {machine_short()}; load average {'/'.join(f'{x:.2f}' for x in load_start)} at start, "
            f"{'/'.join(f'{x:.2f}' for x in load_end)} at end.",
            "",
            "Children run without PYTHONDONTWRITEBYTECODE (streamlearn loads from bytecode, as installed)"
            + (" (it is set in this shell)." if "PYTHONDONTWRITEBYTECODE" in os.environ else "."),
            "",
            "| command | fastest | median | fastest over the floor | peak RSS |",
            "|---|---|---|---|---|"]
    floor = min(times[FLOOR])
    for name in names:
        over = "" if name == FLOOR else f"{min(times[name]) - floor:+.3f} s"
        rows.append(f"| {name} | {min(times[name]):.3f} s | {statistics.median(times[name]):.3f} s | "
                    f"{over} | {max(rss[name]) / 1024:.0f} MiB |")
    if not has_vw:
        rows.append("")
        rows.append("VW is not installed (`pip install -e '.[vw]'`): its row is missing.")
    if memory:
        rows += ["", f"Peak RSS of `streamlearn train -d LINES -b 20 --loss logistic --l1 1e-7 --quiet` on the first "
                     f"{args.memory_lines:,} lines of `{src.relative_to(ROOT)}` (one run each; the weight table is "
                     f"2^20 rows x columns x 8 bytes):", "",
                 "| options | table columns | peak RSS |", "|---|---|---|"]
        for extra, columns, peak in memory:
            rows.append(f"| {extra} | {columns} | {peak / 1024:.0f} MiB |")
    rows.append("")
    rows.append("Raw wall times (s): " + "; ".join(
        f"{n}: {', '.join(f'{t:.3f}' for t in times[n])}" for n in names))
    table = "\n".join(rows)
    print(table)

    SECTION.write(args.out, SECTION.wrap(table))
    print(f"\nwritten to {args.out}")
    return 0


CASE = Case("startup", arguments, run, __doc__)
