"""Figures of the code's structure, for the before/after of the plug-in restructuring (issue 26).

    .venv/bin/python tools/structure.py            # prints a Markdown report

It reads the source only (``ast``), never imports the package:

* lines of code per folder;
* the largest functions;
* the fields of the configuration and run objects (``TrainConfig``, ``Run``);
* the import graph among ``streamlearn`` modules, with imports inside functions, and its cycles;
* for each learner and a few options, the source files that name it: what a new learner or option
  costs today;
* README length, test modules that import other test modules, bench scripts and ``sys.path`` edits.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "streamlearn"

LEARNERS = ("sgd", "tg", "l1ball", "fobos", "eg", "smidas", "rounding", "subgradient", "scd", "ftrl", "softmax",
            "gravity", "pegasos", "coin")
OPTIONS = ("ftrl_alpha", "initial_weight", "l2_ball", "p_norm", "batch_size", "radius", "threshold")


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        out[name] = path
    return out


@lru_cache(maxsize=None)
def parsed(path: Path) -> ast.Module:
    """A file's syntax tree (each file is parsed once per report)."""
    return ast.parse(path.read_text())


def code_lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip() and not line.strip().startswith("#"))


def functions(mods):
    for name, path in mods.items():
        tree = parsed(path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield node.end_lineno - node.lineno + 1, f"{name}.{node.name}", node.lineno


def option_declarations(mods) -> int:
    """``Option`` declarations (``Option(...)`` or the options module's ``_o(...)``) that become
    configuration fields (not ``config=False``)."""
    count = 0
    for path in mods.values():
        for node in ast.walk(parsed(path)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Option", "_o")
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and not any(k.arg == "config" and isinstance(k.value, ast.Constant) and k.value.value is False
                                for k in node.keywords)):
                count += 1
    return count


def class_fields(mods, wanted):
    """object -> its number of fields: a class's annotated fields; a class made by ``make_dataclass``
    (``TrainConfig``, generated from the option declarations) its literal fields plus one per
    declaration."""
    out = {}
    for name, path in mods.items():
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ClassDef) and node.name in wanted:
                fields = [n for n in node.body if isinstance(n, ast.AnnAssign)]
                out[f"{name}.{node.name}"] = len(fields)
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "make_dataclass"
                    and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in wanted):
                literal = sum(isinstance(e, ast.Tuple) for a in node.args[1:] for e in ast.walk(a)
                              if isinstance(e, ast.Tuple) and len(e.elts) == 3)
                out[f"{name}.{node.args[0].value}"] = literal + option_declarations(mods)
    return out


def imports(mods):
    """module -> set of streamlearn modules it imports (anywhere in the file), and the subset imported
    inside functions."""
    graph, inner = defaultdict(set), defaultdict(set)
    known = set(mods)

    def resolve(target):
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target

    for name, path in mods.items():
        tree = parsed(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        in_func = {id(m) for f in funcs for m in ast.walk(f)}
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for t in targets:
                r = resolve(t)
                if r and r != name and r.startswith("streamlearn"):
                    graph[name].add(r)
                    if id(node) in in_func:
                        inner[name].add(r)
    return graph, inner


def cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def naming_files(mods, word) -> list[str]:
    pat = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])")
    return sorted(str(p.relative_to(REPO)) for p in mods.values() if pat.search(p.read_text()))


def report() -> str:
    mods = modules()
    L = ["# streamlearn's structure", ""]
    folders = defaultdict(int)
    for name, path in mods.items():
        folders[str(path.parent.relative_to(REPO))] += code_lines(path)
    tests = sorted((REPO / "tests").rglob("*.py"))
    bench = sorted((REPO / "bench").rglob("*.py"))
    L += [f"- Package: {len(mods)} modules, {sum(folders.values()):,} lines of code (without blank and comment lines): "
          + ", ".join(f"`{k}/` {v:,}" for k, v in sorted(folders.items())),
          f"- Tests: {len(tests)} files, {sum(code_lines(p) for p in tests):,} lines; bench: {len(bench)} scripts, "
          f"{sum(code_lines(p) for p in bench):,} lines",
          f"- README: {len((REPO / 'README.md').read_text().splitlines()):,} lines", ""]
    test_names = {p.stem for p in tests}
    importing = []
    for p in tests:
        tree = parsed(p)
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        if names & {t for t in test_names if t.startswith("test_")}:
            importing.append(p.stem)
    syspath = sum(p.read_text().count("sys.path.insert") + p.read_text().count("sys.path.append")
                  for p in bench + tests)
    L += [f"- Test modules importing another test module: {len(importing)} ({', '.join(importing)})",
          f"- `sys.path` edits in tests/ and bench/: {syspath}", ""]
    L += ["## Largest functions", "", "| lines | function |", "|---:|---|"]
    for n, fn, line in sorted(functions(mods), reverse=True)[:12]:
        L.append(f"| {n} | `{fn}` (line {line}) |")
    L += ["", "## Configuration and run objects", "", "| object | fields |", "|---|---:|"]
    for k, v in sorted(class_fields(mods, {"TrainConfig", "Run", "PredictConfig"}).items()):
        L.append(f"| `{k}` | {v} |")
    graph, inner = imports(mods)
    cyc = cycles(graph)
    L += ["", "## Import cycles (imports inside functions included)", ""]
    L += [f"- {' <-> '.join(c)}" + (" (through imports inside functions)"
                                     if all(any(w in inner.get(v, ()) for w in c) for v in c) else "")
          for c in cyc] or ["- none"]
    L += ["", f"Imports made inside functions: {sum(len(v) for v in inner.values())} "
          f"(in {len(inner)} modules)", ""]
    L += ["## What a learner or an option costs: source files that name it", "",
          "A whole-word match in the package's source: a proxy for the places a new learner or option touches. "
          "Words that are also common English or shared names (sgd, tg, rounding, threshold, radius) over-count.",
          "", "| name | files | which |", "|---|---:|---|"]
    for word in LEARNERS + OPTIONS:
        files = naming_files(mods, word)
        short = ", ".join(f.removeprefix("streamlearn/") for f in files)
        L.append(f"| `{word}` | {len(files)} | {short} |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    print(report(), end="")
