"""``python -m bench list | run CASE [CASE ...] [ARGS] | suite NAME`` (from the repository root)."""

from __future__ import annotations

import compileall
import sys
from pathlib import Path

import streamlearn
from bench.harness import SUITES, cases, resolve, run_case, run_children, say, summary_of

USAGE = """usage: python -m bench list
       python -m bench run CASE [CASE ...] [ARGS]   (ARGS go to every case named; `run CASE --help`)
       python -m bench suite {suites}"""


def installed_bytecode() -> None:
    """Write the package's bytecode, as installing it from a wheel does, before anything is timed: an
    editable install writes none, and where PYTHONDONTWRITEBYTECODE is set (these machines) every
    ``streamlearn`` process would otherwise compile each module from source again (~0.1 s a run).
    Up-to-date files are left as they are."""
    compileall.compile_dir(str(Path(streamlearn.__file__).parent), quiet=1)


def main(argv: list[str]) -> int:
    usage = USAGE.format(suites="|".join(SUITES))
    if not argv or argv[0] in ("-h", "--help"):
        say(usage)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command in ("run", "suite"):
        installed_bytecode()
    if command == "list":
        names = cases()
        width = max(map(len, names))
        for name in names:
            say(f"{name:<{width}}  {summary_of(name)}")
        say("")
        for suite, runs in SUITES.items():
            say(f"suite {suite} (make {suite}): " + "; ".join(" ".join(r) for r in runs))
        return 0
    if command == "run":
        names = []
        while rest and resolve(rest[0]):
            names.append(resolve(rest.pop(0)))
        if not names:
            say(f"unknown case {rest[0]!r}; `python -m bench list` lists them" if rest else usage)
            return 2
        if len(names) == 1:
            return run_case(names[0], rest)
        return run_children([(name, *rest) for name in names])
    if command == "suite":
        if len(rest) != 1 or rest[0] not in SUITES:
            say(usage)
            return 2
        return run_children(SUITES[rest[0]])
    say(usage)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
