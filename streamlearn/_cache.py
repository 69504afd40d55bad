"""Keep numba's on-disk cache consistent with the package sources, one module at a time.

numba keys a cached function on its own source file only (its modification time and size). A kernel
that calls or inlines a function from another module (the learner inlines the weight table's
catch-up, the parser inlines the hash) keeps its stale machine code when only that other module
changes. This guard, run at import, gives every module of the package a digest of its own source and
of the sources of the package modules it imports, transitively (a static scan of its ``import``
statements with :mod:`ast`). It records the digests next to the cached kernels and, when a module's
digest differs from the recorded one, deletes that module's cached kernels only (numba names them
after the module file: ``kernels/__pycache__/gd.learn_gd_block-261.py311.nbi`` and ``...nbc``), so
they are compiled again from current sources. A change to a module that no kernel module imports
(the CLI, the driver, ...) deletes nothing.

The common case (nothing changed) reads and hashes the sources and compares them with the record,
about a millisecond; the import scan runs only on files whose content changed.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_STAMP = "streamlearn-sources.json"
_OLD_STAMPS = ("streamlearn-sources.sha256",)
_VERSION = 1
_CACHE_SUFFIXES = (".nbi", ".nbc")


def _read_sources(package: str) -> dict[str, bytes]:
    """The package's .py files by path relative to ``package`` ('/'-separated), with their bytes."""
    out = {}
    for root, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
        rel_root = os.path.relpath(root, package).replace(os.sep, "/")
        prefix = "" if rel_root == "." else rel_root + "/"
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as f:
                    out[prefix + name] = f.read()
    return out


def _module_name(package_name: str, rel: str) -> str:
    parts = [package_name] + rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def scan_imports(source: bytes, rel: str, modules: dict[str, str], package_name: str) -> list[str]:
    """Paths (relative, as keys of ``modules``' values) of the package modules ``source`` imports.

    ``modules`` maps dotted module names to relative paths. ``from P import x`` names the module
    ``P.x`` when it is one, else the module ``P``; ``import P.x`` names ``P.x``; relative imports are
    resolved against the importing module. Imports anywhere in the file count (in functions too).
    Parent packages imported implicitly are not counted: their code is not what a kernel calls.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    me = _module_name(package_name, rel)
    is_package = rel.endswith("__init__.py") or rel == "__init__.py"
    here = me if is_package else me.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = here.split(".")
                if node.level > 1:
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base != package_name and not base.startswith(package_name + "."):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return sorted(modules[name] for name in found if name in modules and modules[name] != rel)


def module_digests(files: dict[str, list]) -> dict[str, str]:
    """Per module: the digest of its own source hash and those of every module it imports, transitively.

    ``files`` maps relative paths to ``[source sha256, [imported relative paths]]``.
    """
    out = {}
    for rel in files:
        seen = {rel}
        todo = [rel]
        while todo:
            for dep in files[todo.pop()][1]:
                if dep not in seen and dep in files:
                    seen.add(dep)
                    todo.append(dep)
        h = hashlib.sha256()
        for dep in sorted(seen):
            h.update(dep.encode())
            h.update(b"\0")
            h.update(files[dep][0].encode())
        out[rel] = h.hexdigest()
    return out


def _cache_files(package: str, rels) -> list[str]:
    """numba's cache files of the given modules (``dir/__pycache__/<stem>.<qualname>-<line>...``)."""
    by_dir: dict[str, set[str]] = {}
    for rel in rels:
        d, _, name = rel.rpartition("/")
        by_dir.setdefault(d, set()).add(name[:-3])
    out = []
    for d, stems in by_dir.items():
        cache_dir = os.path.join(package, *(d.split("/") if d else []), "__pycache__")
        try:
            names = os.listdir(cache_dir)
        except OSError:
            continue
        for name in names:
            if not name.endswith(_CACHE_SUFFIXES):
                continue
            stem = name.partition(".")[0]
            # numba's code-library caches put a prefix before the module stem: "<prefix>-<stem>."
            if stem in stems or stem.rpartition("-")[2] in stems:
                out.append(os.path.join(cache_dir, name))
    return out


def _all_cache_files(package: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if os.path.basename(root) == "__pycache__":
            out.extend(os.path.join(root, n) for n in files if n.endswith(_CACHE_SUFFIXES))
    return out


def check_cache(package: str = _PACKAGE) -> list[str]:
    """Drop the cached kernels of the modules whose sources, or those of modules they import, changed.

    ``package`` is the package directory (its name is the top-level package name of its absolute
    imports). Returns the paths of the deleted cache files. With no usable record of the previous
    sources (first run, other format) every cached kernel of the package is deleted.
    """
    package = os.path.abspath(package)
    package_name = os.path.basename(package)
    cache_dir = os.path.join(package, "__pycache__")
    stamp = os.path.join(cache_dir, _STAMP)
    try:
        sources = _read_sources(package)
    except OSError:
        return []
    hashes = {rel: hashlib.sha256(data).hexdigest() for rel, data in sources.items()}
    old = None
    try:
        with open(stamp, encoding="utf-8") as f:
            record = json.load(f)
        if record.get("version") == _VERSION:
            old = {rel: [entry[0], list(entry[1])] for rel, entry in record["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        old = None
    if old is not None and len(old) == len(hashes) and all(
            rel in old and old[rel][0] == h for rel, h in hashes.items()):
        return []

    modules = {_module_name(package_name, rel): rel for rel in sources}
    files = {}
    for rel, h in hashes.items():
        if old is not None and rel in old and old[rel][0] == h:
            files[rel] = old[rel]  # same content, same imports
        else:
            files[rel] = [h, scan_imports(sources[rel], rel, modules, package_name)]
    try:
        if old is None:
            doomed = _all_cache_files(package)
        else:
            before, after = module_digests(old), module_digests(files)
            changed = [rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)]
            doomed = _cache_files(package, changed)
        deleted = []
        for path in doomed:
            try:
                os.unlink(path)
                deleted.append(path)
            except FileNotFoundError:
                pass
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{stamp}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"version": _VERSION, "files": files}, f, sort_keys=True, indent=0)
        os.replace(tmp, stamp)
        for name in _OLD_STAMPS:
            try:
                os.unlink(os.path.join(cache_dir, name))
            except OSError:
                pass
    except OSError:
        return []  # a read-only install: numba then caches elsewhere, keyed on the installed files
    return deleted
