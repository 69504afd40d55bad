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

Usage: ``make bench`` or ``python bench/bench_core.py [--lines N] [--runs R] [--l1 G] [--bits B]
[--quick] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import re
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA_DIR = Path("bench/data")  # relative to REPO (children run with cwd=REPO)
DEFAULT_OUT = Path("bench/RESULTS.md")
QUICK_OUT = Path("bench/out/RESULTS.quick.md")
DEFAULT_LINES = 2_000_000
DEFAULT_SEED = 20261122  # the default of `python -m streamlearn.datasets bench`
QUICK_LINES = 50_000
QUICK_RUNS = 3
STARTUP_LINES = 10
MIN_STARTUP_RUNS = 5
WALL_RATIO_TARGET = 1.2
STARTUP_TARGET_S = 1.0
RSS_BASE_MIB = 150.0
FLAT_TOLERANCE = 0.05
MARK_START = "<!-- bench_core:start -->"
MARK_END = "<!-- bench_core:end -->"
MIB = 2**20
BLOCK = 4 * MIB


@dataclass
class Run:
    wall: float  # seconds
    rss_kib: int  # ru_maxrss of the child

    @property
    def rss_mib(self) -> float:
        return self.rss_kib * 1024 / MIB


# --------------------------------------------------------------------------- data files


def dask_skip(data: Path) -> str | None:
    """Why a Dask benchmark cannot run here (Dask not installed, or its data ``data`` absent), or None."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return "skipped: Dask is not installed (pip install 'streamlearn[dask]')"
    if not data.exists():
        return f"skipped: {data} is absent"
    return None


def data_name(lines: int, seed: int) -> str:
    """bench-2m.vw for 2,000,000 lines, bench-50k.vw for 50,000, bench-12345.vw otherwise.

    A seed other than the default adds -s<seed>: bench-2m-s7.vw.
    """
    if lines % 1_000_000 == 0:
        size = f"{lines // 1_000_000}m"
    elif lines % 1_000 == 0:
        size = f"{lines // 1_000}k"
    else:
        size = str(lines)
    suffix = "" if seed == DEFAULT_SEED else f"-s{seed}"
    return f"bench-{size}{suffix}.vw"


def meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".meta.json")


def read_meta(path: Path) -> dict | None:
    try:
        return json.loads((REPO / meta_path(path)).read_text())
    except (OSError, ValueError):
        return None


def write_meta(path: Path, meta: dict) -> None:
    target = REPO / meta_path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, target)


def file_size(path: Path) -> int | None:
    try:
        return (REPO / path).stat().st_size
    except OSError:
        return None


def count_lines(path: Path) -> int:
    n = 0
    last = b"\n"
    with open(REPO / path, "rb") as f:
        while block := f.read(BLOCK):
            n += block.count(b"\n")
            last = block[-1:]
    return n if last == b"\n" else n + 1


def ensure_data(lines: int, seed: int) -> tuple[Path, dict]:
    """The benchmark stream for (lines, seed): reused when its stamp matches, else (re)generated."""
    path = DATA_DIR / data_name(lines, seed)
    want = {"kind": "bench-stream", "lines": lines, "seed": seed}
    meta = read_meta(path)
    size = file_size(path)
    if meta and size is not None and all(meta.get(k) == v for k, v in want.items()) and meta.get("size") == size:
        return path, meta
    if meta is None and size is not None and seed == DEFAULT_SEED and count_lines(path) == lines:
        # A file built with the generator's defaults before stamps existed: adopt it.
        meta = {**want, "size": size, "adopted": True}
        write_meta(path, meta)
        return path, meta
    (REPO / DATA_DIR).mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "streamlearn.datasets", "bench", str(path),
           "--lines", str(lines), "--seed", str(seed)]
    say(f"generating {path} ({lines:,} lines) ...")
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    meta = {**want, "size": file_size(path)}
    write_meta(path, meta)
    return path, meta


def copy_head(src: Path, dst: Path, lines: int) -> None:
    """Write the first `lines` lines of src to dst (atomically)."""
    tmp = REPO / dst.with_name(dst.name + ".part")
    left = lines
    with open(REPO / src, "rb") as fin, open(tmp, "wb") as fout:
        while left > 0 and (block := fin.read(BLOCK)):
            n = block.count(b"\n")
            if n < left:
                fout.write(block)
                left -= n
                continue
            end = -1
            for _ in range(left):
                end = block.index(b"\n", end + 1)
            fout.write(block[: end + 1])
            left = 0
    if left > 0:
        tmp.unlink()
        raise RuntimeError(f"{src} has fewer than {lines} lines")
    os.replace(tmp, REPO / dst)


def ensure_head(src: Path, src_meta: dict, dst: Path, lines: int) -> Path:
    """dst = first `lines` lines of src; reused when its stamp names the same source and size."""
    want = {"kind": "head", "lines": lines,
            "source": {k: src_meta[k] for k in ("lines", "seed", "size")}}
    meta = read_meta(dst)
    size = file_size(dst)
    if meta and size is not None and all(meta.get(k) == v for k, v in want.items()) and meta.get("size") == size:
        return dst
    say(f"writing {dst} (first {lines:,} lines of {src}) ...")
    copy_head(src, dst, lines)
    write_meta(dst, {**want, "size": file_size(dst)})
    return dst


def core_head(lines: int) -> Path:
    """The core benchmark file (2,000,000 lines), or its first ``lines`` lines (``profile-N.vw``)."""
    src, meta = ensure_data(DEFAULT_LINES, DEFAULT_SEED)
    return src if lines >= DEFAULT_LINES else ensure_head(src, meta, src.with_name(f"profile-{lines}.vw"), lines)


def read_through(path: Path) -> None:
    """Read the file once so that every timed run finds it in the page cache."""
    with open(REPO / path, "rb") as f:
        while f.read(BLOCK):
            pass


# --------------------------------------------------------------------------- commands and timing


def streamlearn_base() -> list[str]:
    script = Path(sys.executable).parent / "streamlearn"
    return [str(script)] if script.exists() else [sys.executable, "-m", "streamlearn"]


def streamlearn_cmd(path: Path, l1: float, bits: int) -> list[str]:
    return streamlearn_base() + ["train", "-d", str(path), "--loss", "logistic", "--algo", "tg",
                                 "--sgd", "--l1", repr(l1), "-b", str(bits), "--quiet"]


def vw_cmd(path: Path, l1: float, bits: int) -> list[str]:
    return [sys.executable, "-m", "vowpalwabbit", "-d", str(path), "--sgd", "--loss_function", "logistic",
            "--l1", repr(l1), "-b", str(bits), "--quiet"]


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


# --------------------------------------------------------------------------- machine facts


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def total_ram_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except (OSError, ValueError):
        pass
    return "unknown"


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def git_commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def vw_available() -> bool:
    try:
        import vowpalwabbit  # noqa: F401
    except Exception:  # ImportError, or a broken native library
        return False
    return True


def machine_facts() -> dict:
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu_model(),
        "ram": total_ram_gib(),
        "load": "/".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "numpy": version("numpy"),
        "numba": version("numba"),
        "vowpalwabbit": version("vowpalwabbit"),
        "commit": git_commit(),
        "os": platform.platform(),
    }


# --------------------------------------------------------------------------- report


def fmt_s(x: float) -> str:
    return f"{x:.3f}"


def fmt_mib(x: float) -> str:
    return f"{x:.1f}"


def met(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "not met")


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
        MARK_START,
        "## Core: `streamlearn train` vs VW (bench/bench_core.py)",
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
    lines += ["", MARK_END]
    return "\n".join(lines) + "\n"


def write_section(out: Path, section: str, mark_start: str = MARK_START, mark_end: str = MARK_END) -> None:
    """Replace the section of `out` between the two markers (by default bench_core's), or append it;
    create the file if missing. Every benchmark script writes its own section this way."""
    out.parent.mkdir(parents=True, exist_ok=True)
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    start, end = text.find(mark_start), text.find(mark_end)
    if start != -1 and end > start:
        text = text[:start] + section.rstrip("\n") + text[end + len(mark_end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, out)


def write_titled_section(out: Path, title: str, body: str) -> None:
    """``write_section`` of a section headed ``## title``, between markers made from the title (so one
    script can keep several sections, e.g. a probe run before and after a change)."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    start, end = f"<!-- {slug}:start -->", f"<!-- {slug}:end -->"
    write_section(Path(out), f"{start}\n## {title}\n\n{body.rstrip()}\n{end}\n", start, end)


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


def say(msg: str) -> None:
    print(msg, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=None, help=f"lines in the data file (default {DEFAULT_LINES:,}; "
                    f"{QUICK_LINES:,} with --quick)")
    ap.add_argument("--runs", type=int, default=None, help="rounds of the end-to-end comparison (default 5, at "
                    f"least 3; {QUICK_RUNS} with --quick)")
    ap.add_argument("--l1", type=float, default=1e-6, help="--l1 of both tools (default 1e-6)")
    ap.add_argument("--bits", type=int, default=20, help="-b of both tools (default 20)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED,
                    help=f"seed of the data generator (default {DEFAULT_SEED})")
    ap.add_argument("--quick", action="store_true", help=f"smoke test: {QUICK_LINES:,} lines, {QUICK_RUNS} rounds, "
                    f"results to {QUICK_OUT}")
    ap.add_argument("--out", type=Path, default=None, help=f"results file (default {DEFAULT_OUT}, or {QUICK_OUT} "
                    "with --quick)")
    args = ap.parse_args(argv)
    if args.lines is None:
        args.lines = QUICK_LINES if args.quick else DEFAULT_LINES
    if args.runs is None:
        args.runs = QUICK_RUNS if args.quick else 5
    if args.out is None:
        args.out = REPO / (QUICK_OUT if args.quick else DEFAULT_OUT)
    if args.lines < 1000:
        ap.error("--lines must be at least 1000")
    if args.runs < (1 if args.quick else 3):
        ap.error("--runs must be at least 3 (at least 1 with --quick)")
    if not 1 <= args.bits <= 32:
        ap.error("--bits must be between 1 and 32")
    return args


def produced_by(argv: list[str], script: str = "bench/bench_core.py") -> str:
    cmd = f"python {script}" + (" " + shlex.join(argv) if argv else "")
    if "MAKELEVEL" in os.environ:
        return f"`make bench` (which runs `{cmd}`)"
    return f"`{cmd}`"


def main(argv: list[str] | None = None) -> None:
    raw_argv = sys.argv[1:] if argv is None else argv
    args = parse_args(raw_argv)
    res: dict = {"args": args, "bits": args.bits, "produced_by": produced_by(raw_argv),
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
    write_section(args.out, render(res))
    print_summary(res, args.out)


if __name__ == "__main__":
    main()
