"""``python -m bench list | run CASE [CASE ...] [ARGS] | suite NAME`` (from the repository root)."""

from __future__ import annotations

import sys

from bench.harness import SUITES, cases, resolve, run_case, run_children, say, summary_of

USAGE = """usage: python -m bench list
       python -m bench run CASE [CASE ...] [ARGS]   (ARGS go to every case named; `run CASE --help`)
       python -m bench suite {suites}"""


def main(argv: list[str]) -> int:
    usage = USAGE.format(suites="|".join(SUITES))
    if not argv or argv[0] in ("-h", "--help"):
        say(usage)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
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
