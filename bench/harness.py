"""The benchmark harness: what every case shares.

* ``Case`` -- a benchmark or reproduction: its name, its own arguments and its run. Each module of
  ``bench/cases/`` defines one as ``CASE``; ``cases()`` finds them (no list to keep), ``load(name)``
  imports one.
* ``Context`` -- one run of a case: the command line it was given, ``produced_by`` (the line the
  reports cite), ``error`` (a usage error, as argparse gives it).
* ``Section`` -- a case's part of a results file, between ``<!-- key:start -->`` and
  ``<!-- key:end -->``; writing it replaces that part and leaves the rest of the file as it is.
* Shared arguments (``shared``): ``--quick``, ``--out``, ``--only``, ``--lines``, ``--runs``, ``--seed``,
  ``--jobs``, ``--data-root`` are spelled and typed here once; a case gives the default and help.
* Machine facts (``machine_facts``, and the one-line forms of the reports), ``say``, ``Progress``.

The data cache is ``bench/data.py``; timing and the peers (VW) are ``bench/timing.py``.
Run a case with ``python -m bench run NAME [ARGS]`` from the repository root; ``python -m bench list``
lists them and the suites (``make bench``, ``make repro``).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.metadata
import os
import pickle
import platform
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
CASES_DIR = Path(__file__).resolve().parent / "cases"


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """A benchmark: ``arguments(ap)`` adds its own arguments to the parser the harness makes, and
    ``run(args, ctx)`` runs it (its return value, if an int, is the exit status)."""
    name: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, "Context"], object]
    doc: str = ""

    @property
    def summary(self) -> str:
        return (self.doc or "").strip().split("\n\n")[0].replace("\n", " ")


def cases() -> list[str]:
    """The registered cases: every module of bench/cases/ (each defines ``CASE``)."""
    return sorted(p.stem for p in CASES_DIR.glob("*.py") if not p.stem.startswith("_"))


def resolve(name: str) -> str | None:
    """A case's name, also from the script's old name (bench_core -> core, bench/bench_core.py -> core)."""
    stem = Path(name).stem if name.endswith(".py") else name
    known = cases()
    for candidate in (stem, stem.removeprefix("bench_")):
        if candidate in known:
            return candidate
    return None


def summary_of(name: str) -> str:
    """The first paragraph of a case's docstring, read without importing it."""
    doc = ast.get_docstring(ast.parse((CASES_DIR / f"{name}.py").read_text())) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def load(name: str) -> Case:
    module = importlib.import_module(f"bench.cases.{name}")
    case = getattr(module, "CASE", None)
    if not isinstance(case, Case) or case.name != name:
        raise RuntimeError(f"bench/cases/{name}.py does not define CASE = Case({name!r}, ...)")
    return case


class Context:
    """One run of a case."""

    def __init__(self, case: Case, parser: argparse.ArgumentParser, argv: list[str]):
        self.case, self.parser, self.argv = case, parser, list(argv)

    def command(self, argv: list[str] | None = None) -> str:
        argv = self.argv if argv is None else argv
        return f"python -m bench run {self.case.name}" + (" " + shlex.join(argv) if argv else "")

    def produced_by(self, argv: list[str] | None = None) -> str:
        """The command in backquotes; under make, which target ran it."""
        cmd = self.command(argv)
        if "MAKELEVEL" in os.environ:
            return f"`make bench` (which runs `{cmd}`)"
        return f"`{cmd}`"

    def error(self, message: str) -> None:
        self.parser.error(message)


def parser_for(case: Case) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python -m bench run {case.name}", description=case.summary)
    case.arguments(ap)
    return ap


def run_case(name: str, argv: list[str]) -> int:
    case = load(name)
    ap = parser_for(case)
    args = ap.parse_args(argv)
    status = case.run(args, Context(case, ap, argv))
    return status if isinstance(status, int) else 0


# --------------------------------------------------------------------------- shared arguments

SHARED: dict[str, tuple[tuple[str, ...], dict]] = {
    "quick": (("--quick",), {"action": "store_true"}),
    "out": (("--out",), {"type": Path, "default": None, "metavar": "PATH"}),
    "only": (("--only",), {"default": None}),
    "lines": (("--lines",), {"type": int, "default": None}),
    "runs": (("--runs",), {"type": int, "default": None}),
    "seed": (("--seed",), {"type": int, "default": None}),
    "jobs": (("--jobs",), {"type": int, "default": 2}),
    "data-root": (("--data-root",), {"type": Path, "metavar": "DIR"}),
}


def shared(ap: argparse.ArgumentParser, name: str, **kwargs) -> None:
    """Add the shared argument ``name`` (spelling and type from SHARED; default and help from the case)."""
    flags, base = SHARED[name]
    ap.add_argument(*flags, **{**base, **kwargs})


# --------------------------------------------------------------------------- sections


class Section:
    """A case's part of a results file, between ``<!-- key:start -->`` and ``<!-- key:end -->``."""

    def __init__(self, key: str):
        self.key = key
        self.start, self.end = f"<!-- {key}:start -->", f"<!-- {key}:end -->"

    @classmethod
    def titled(cls, title: str) -> "Section":
        """The section whose key is made from its ``## title`` (so one case can keep several)."""
        return cls(re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-"))

    def wrap(self, body: str) -> str:
        return f"{self.start}\n{body.rstrip(chr(10))}\n{self.end}\n"

    def write(self, out: Path, text: str) -> None:
        """Replace this section of ``out`` by ``text`` (which holds the markers), or append it; create
        the file if missing."""
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        old = out.read_text() if out.exists() else "# Benchmark results\n"
        start, end = old.find(self.start), old.find(self.end)
        if start != -1 and end > start:
            new = old[:start] + text.rstrip("\n") + old[end + len(self.end):]
        else:
            new = old.rstrip("\n") + "\n\n" + text
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(new)
        os.replace(tmp, out)


def write_titled_section(out: Path, title: str, body: str) -> None:
    """The section headed ``## title``, between markers made from the title."""
    section = Section.titled(title)
    section.write(Path(out), section.wrap(f"## {title}\n\n{body.rstrip()}"))


# --------------------------------------------------------------------------- machine facts


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _ram_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except (OSError, ValueError):
        pass
    return "unknown"


def load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def head_commit() -> str:
    try:
        return _git("rev-parse", "--short", "HEAD") or "?"
    except (OSError, subprocess.CalledProcessError):
        return "?"


def git_commit() -> str:
    """The short commit, with ``+dirty`` when tracked files differ from it."""
    try:
        commit = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def machine_facts() -> dict:
    """The machine, its load now and the versions, as the results sections cite them."""
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": _cpu_model() or platform.processor() or "unknown",
        "ram": _ram_gib(),
        "load": load_average(),
        "python": platform.python_version(),
        "numpy": version("numpy"),
        "numba": version("numba"),
        "vowpalwabbit": version("vowpalwabbit"),
        "commit": git_commit(),
        "os": platform.platform(),
    }


def machine_line() -> str:
    """The reproductions' one line: cores, CPU model, load averages, Python and NumPy versions, commit."""
    import numpy as np
    return (f"{os.cpu_count()} cores ({_cpu_model() or '?'}), load {load_average()}, "
            f"Python {platform.python_version()}, NumPy {np.__version__}, repo commit {head_commit()}")


def machine_short() -> str:
    """The start-up section's line: CPU, cores, Python, system."""
    cpu = _cpu_model() or platform.processor() or platform.machine()
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


# --------------------------------------------------------------------------- saved runs


def load_pickle(path: Path, module: str):
    """A run saved by ``pickle`` (``--rerender``, ``--reuse``). Runs saved when the case was a script
    name its classes under ``__main__``: those are looked up in ``module`` (the case), then in the
    harness's modules where they moved."""

    class Unpickler(pickle.Unpickler):
        def find_class(self, mod: str, name: str):
            if mod in ("__main__", "bench_core", "frontier", "repro_common"):
                for home in (module, "bench.data", "bench.timing", "bench.harness"):
                    found = getattr(importlib.import_module(home), name, None)
                    if found is not None:
                        return found
            return super().find_class(mod, name)

    with open(path, "rb") as f:
        return Unpickler(f).load()


# --------------------------------------------------------------------------- output


QUICK_LINES = 50_000  # --quick's lines of the benchmark stream (core, rules)
QUICK_RUNS = 3  # --quick's rounds


def fmt_s(x: float) -> str:
    return f"{x:.3f}"


def fmt_mib(x: float) -> str:
    return f"{x:.1f}"


def met(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "not met")


def say(msg: str) -> None:
    print(msg, flush=True)


class Progress:
    """Runs of a known count. On a terminal, a bar redrawn in place on stderr with the runs done, the
    time so far and the ETA (the mean time per run so far times the runs left); otherwise a line every
    ``every`` runs (and at the last)."""

    def __init__(self, total: int, what: str = "", every: int = 10):
        self.total, self.what, self.every = max(int(total), 1), what, every
        self.done, self.start = 0, time.time()
        self.tty = sys.stderr.isatty()

    def step(self, label: str = "") -> None:
        self.done += 1
        spent = time.time() - self.start
        left = spent / self.done * (self.total - self.done)
        msg = (f"{self.what} {self.done}/{self.total} {label[:40]} {spent:.0f} s so far, "
               f"ETA {int(left) // 60}:{int(left) % 60:02d}")
        if self.tty:
            bar = "#" * int(30 * self.done / self.total)
            end = "\n" if self.done >= self.total else ""
            sys.stderr.write(f"\r[{bar:<30}] {msg:<100}{end}")
            sys.stderr.flush()
        elif self.done % self.every == 0 or self.done >= self.total:
            print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- suites

#: what ``make bench`` and ``make repro`` run, in order: (case, arguments)
SUITES: dict[str, list[tuple[str, ...]]] = {
    "bench": [
        ("core",), ("rules",), ("frontier",), ("l1ball",), ("objective",), ("scd",), ("expansion",),
        ("multiclass", "--second-shuffle"), ("multiclass", "--throughput"), ("startup",),
        ("parse", "--out", "bench/RESULTS.md"), ("table_dtype", "--out", "bench/RESULTS.md"),
        ("targets", "--out", "bench/RESULTS.md"), ("vs_vw", "--out", "bench/RESULTS.md"), ("api", "--out", "bench/RESULTS.md"),
        ("dask", "--out", "bench/RESULTS.md"), ("dask_speed", "--out", "bench/RESULTS.md"),
    ],
    "repro": [
        ("repro_duchi2008",), ("repro_llz2009",),
        ("repro_fobos_smidas", "--budget", "paper", "--magic04d-passes", "25"), ("repro_multiclass",),
    ],
}


def run_children(runs: list[tuple[str, ...]]) -> int:
    """Each (case, args...) in its own process (as make ran the scripts), in order; stop at a failure."""
    for name, *argv in runs:
        cmd = [sys.executable, "-m", "bench", "run", name, *argv]
        say(shlex.join(["python", *cmd[1:]]))
        status = subprocess.run(cmd, cwd=REPO).returncode
        if status != 0:
            say(f"{name} failed (exit status {status}); stopping")
            return status
    return 0
