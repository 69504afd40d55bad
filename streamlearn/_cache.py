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


# --- Loading the cached kernels, and telling the user when they are compiled --------------------
#
# numba's ``Cache.load_overload`` first calls ``target_context.refresh()``, which on its first call
# imports and installs every implementation registry of numba (``cpu.load_additional_registries``):
# about 0.14 s of imports (numba.np.arraymath, linalg, random, typed, ...), plus scipy.linalg
# (about 0.08 s more) when scipy is installed, for a BLAS check. None of it is needed to load
# machine code that is already compiled: what that code needs from numba's runtime is the NRT
# (``rtsys.initialize``). So a cached kernel is loaded first with the NRT only; on a miss, or if that
# load fails in any way, numba's own path (refresh, load, compile) runs unchanged. A run whose kernels
# are all cached then never pays for the registries (warm 10-line train: 0.82 s -> 0.49-0.61 s).

COMPILE_NOTICE = ("streamlearn: compiling streamlearn's kernels once (about 30 s on first use); "
                  "later runs start at once")

_progress = {"announced": False, "compiled": 0, "t0": 0.0, "stream": None, "open": False}


class LineGuard:
    """The CLI process's stderr: other output first ends an open notice line (its dots), so the
    progress table does not start on the notice's line."""

    def __init__(self, raw):
        self._raw = raw

    def write(self, text):
        if text and _progress.get("open"):
            _progress["open"] = False
            self._raw.write("\n")
        return self._raw.write(text)

    def __getattr__(self, name):
        return getattr(self._raw, name)


def _raw(out):
    return out._raw if isinstance(out, LineGuard) else out


def _notice_stream():
    """The process's real stderr (the CLI's stderr; click's test runner swaps ``sys.stderr`` only,
    so captured command output stays free of it)."""
    import sys
    return _progress["stream"] or sys.__stderr__ or sys.stderr


def module_is_cold(cache_path: str, filename_base: str) -> bool:
    """No kernel of the module of ``filename_base`` (numba's ``<module>.<qualname>-<line>.pyXY``)
    is cached in ``cache_path``: a first use (fresh install, or the guard above dropped the module's
    kernels), so its kernels are about to be compiled from scratch."""
    stem = filename_base.partition(".")[0]
    try:
        names = os.listdir(cache_path)
    except OSError:
        return True
    return not any(n.endswith(".nbi") and n.partition(".")[0] == stem for n in names)


def note_miss(cache_path: str, filename_base: str, stream=None) -> bool:
    """A kernel is about to be compiled: print the one-line notice once per process when its
    module is cold. Returns whether the notice was printed now."""
    if _progress["announced"] or not module_is_cold(cache_path, filename_base):
        return False
    import time
    _progress["announced"] = True
    _progress["t0"] = time.perf_counter()
    out = _raw(stream or _notice_stream())
    try:
        out.write(COMPILE_NOTICE + " ")
        out.flush()
        _progress["open"] = True
    except (OSError, ValueError, AttributeError):
        return True
    import atexit
    atexit.register(_finish_notice)
    return True


def note_compiled(stream=None) -> None:
    """One kernel compiled (and saved): a dot on the notice's line."""
    if not _progress["announced"]:
        return
    _progress["compiled"] += 1
    out = _raw(stream or _notice_stream())
    try:
        out.write(".")
        out.flush()
        _progress["open"] = True
    except (OSError, ValueError, AttributeError):
        pass


def _finish_notice(stream=None) -> None:
    import time
    if not _progress["announced"]:
        return
    out = _raw(stream or _notice_stream())
    lead = " " if _progress.get("open") else "streamlearn: "
    _progress["open"] = False
    try:
        out.write(f"{lead}{_progress['compiled']} kernels compiled in "
                  f"{time.perf_counter() - _progress['t0']:.0f} s\n")
        out.flush()
    except (OSError, ValueError, AttributeError):
        pass


def compile_count() -> int:
    """Kernels compiled (and saved to the cache) by this process since the loader was installed."""
    return _counts["compiled"]


_counts = {"compiled": 0, "loaded": 0}


def install_kernel_loader() -> None:
    """Load cached kernels without numba's registry set-up, and report compilations (see above).
    Idempotent; a numba whose cache class lacks what this relies on keeps its own behaviour."""
    try:
        from numba.core import caching
        from numba.core.runtime import rtsys
    except ImportError:
        return
    cache_cls = caching.Cache
    if getattr(cache_cls.load_overload, "_streamlearn", False):
        return
    needed = ("load_overload", "save_overload", "_load_overload", "_guard_against_spurious_io_errors")
    if not all(hasattr(cache_cls, name) for name in needed):
        return
    numba_load = cache_cls.load_overload
    numba_save = cache_cls.save_overload

    def load_overload(self, sig, target_context):
        cres = None
        try:
            rtsys.initialize(target_context)
            with self._guard_against_spurious_io_errors():
                cres = self._load_overload(sig, target_context)
        except Exception:
            cres = None
        if cres is not None:
            _counts["loaded"] += 1
            return cres
        cres = numba_load(self, sig, target_context)   # refresh, then numba's own load
        if cres is None and _is_ours(self):
            try:
                note_miss(self._cache_path, self._impl.filename_base)
            except Exception:
                pass
        return cres

    def save_overload(self, sig, data):
        numba_save(self, sig, data)
        if _is_ours(self):
            _counts["compiled"] += 1
            note_compiled()

    load_overload._streamlearn = True
    cache_cls.load_overload = load_overload
    cache_cls.save_overload = save_overload


def _is_ours(cache) -> bool:
    return getattr(getattr(cache, "_py_func", None), "__module__", "").startswith("streamlearn")
