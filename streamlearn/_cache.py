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
import types

try:
    import fcntl as _fcntl
except ImportError:  # Windows: saves are not locked (see _cache_lock)
    _fcntl = None

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
        _memo["current"] = package     # its cached kernels match its sources (read-only use: below)
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

# measured on the 2-core development machine (issue 29): make demo's train compiled 55 kernels in 43-55 s,
# about 1 s a kernel; a run with fewer options compiles fewer (a plain squared-loss sgd run: about 20 s)
COMPILE_NOTICE = ("streamlearn: compiling the kernels this run needs, once (about 1 s each: 20-70 s "
                  "on first use); later runs start at once")

_progress = {"announced": False, "compiled": 0, "t0": 0.0, "stream": None, "open": False, "closed": False,
             "table": False}


class LineGuard:
    """The CLI process's stderr: other output first ends an open notice line (its dots), so the
    progress table does not start on the notice's line."""

    def __init__(self, raw):
        self._raw = raw

    def write(self, text):
        if text and _progress.get("announced"):
            _progress["closed"] = True      # later compilations add no dots (they would land in the table)
            if _progress.get("open"):
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


def table_started() -> None:
    """The progress table's header is written: from now on a first compilation prints no notice (it
    would land in the table); the kernels are counted and the last line reports them."""
    _progress["table"] = True


def note_miss(cache_path: str, filename_base: str, stream=None) -> bool:
    """A kernel is about to be compiled: print the one-line notice once per process when its
    module is cold (only counted, once the progress table started). Returns whether the notice was
    printed now."""
    if _progress["announced"] or not module_is_cold(cache_path, filename_base):
        return False
    import atexit
    import time
    _progress["announced"] = True
    _progress["t0"] = time.perf_counter()
    atexit.register(_finish_notice)
    if _progress.get("table"):
        _progress["closed"] = True
        return False
    out = _raw(stream or _notice_stream())
    try:
        out.write(COMPILE_NOTICE + " ")
        out.flush()
        _progress["open"] = True
    except (OSError, ValueError, AttributeError):
        pass
    return True


def note_compiled(stream=None) -> None:
    """One kernel compiled (and saved): a dot on the notice's line, while it is the last line (once
    other output has followed it, compilations are only counted: the summary and the last line report
    them)."""
    if not _progress["announced"]:
        return
    _progress["compiled"] += 1
    if _progress.get("closed"):
        return
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
        seconds = compile_seconds() or (time.perf_counter() - _progress["t0"])
        # every kernel this process compiled (as the run's summary counts them), not only the dots
        out.write(f"{lead}{kernels(compile_count() or _progress['compiled'])} compiled in {seconds:.0f} s\n")
        out.flush()
    except (OSError, ValueError, AttributeError):
        pass


def kernels(n: int) -> str:
    """"1 kernel", "2 kernels"."""
    return f"{n} kernel{'' if n == 1 else 's'}"


def compile_count() -> int:
    """Kernels compiled (and saved to the cache) by this process since the loader was installed."""
    return _counts["compiled"]


def compile_seconds() -> float:
    """Seconds this process has spent compiling streamlearn's kernels so far: the time from a cache
    miss to the save of the compiled kernel, outermost ones only (a kernel compiles the kernels it
    calls inside its own compilation). Runs subtract it from their throughput."""
    return _timing["seconds"]


_counts = {"compiled": 0, "loaded": 0}
_timing = {"seconds": 0.0, "depth": 0, "t0": 0.0}


def _compile_started() -> None:
    if _timing["depth"] == 0:
        import time
        _timing["t0"] = time.perf_counter()
    _timing["depth"] += 1


def _compile_ended() -> None:
    if _timing["depth"] <= 0:
        return
    _timing["depth"] -= 1
    if _timing["depth"] == 0:
        import time
        _timing["seconds"] += time.perf_counter() - _timing["t0"]


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
            with self._guard_against_spurious_io_errors(), _cache_lock(self, shared=True):
                cres = self._load_overload(sig, target_context)
        except Exception:
            cres = None
        if cres is not None:
            _counts["loaded"] += 1
            return cres
        try:
            with _cache_lock(self, shared=True):
                cres = numba_load(self, sig, target_context)   # refresh, then numba's own load
        except OSError:     # an unreadable cache file: compile instead
            if not _is_ours(self):
                raise
            cres = None
        if cres is None and _is_ours(self):
            _compile_started()
            try:
                note_miss(self._cache_path, self._impl.filename_base)
            except Exception:
                pass
        return cres

    def save_overload(self, sig, data):
        try:
            with _cache_lock(self, shared=False):
                numba_save(self, sig, data)
        except OSError:     # a full disk, a file-size limit, ...: the kernel is compiled, just not kept
            if not _is_ours(self):
                raise
        if _is_ours(self):
            _counts["compiled"] += 1
            _compile_ended()
            note_compiled()

    load_overload._streamlearn = True
    cache_cls.load_overload = load_overload
    cache_cls.save_overload = save_overload
    _install_nrt_cache()
    _install_env_rebuild()
    _install_ndarray_typeof()
    _install_extension_init_on_compile()


# numba runs its extensions' ``init`` entry points (``numba.core.entrypoints.init_all``) on the first
# call of any jitted function, before it types the arguments; finding them imports ``importlib.metadata``
# (and email, ...) and scans every installed distribution: 15-25 ms of a 10-line run that loads all its
# kernels from the cache. A compilation runs them anyway (``compile_extra`` refreshes the target
# context, whose registries include them), so a streamlearn kernel's first call skips the early hook:
# loading cached machine code needs no extension, and the arguments of our kernels are numpy arrays,
# numbers and tuples of them, which numba types without one. Other jitted functions keep numba's hook.
# The command line also imports numba with ``importlib.metadata`` deferred (``DeferredModule``).


class DeferredModule(types.ModuleType):
    """Stands in for a module while numba is imported (``sys.modules``): the real module is imported
    when an attribute of it is first read, and the stand-in leaves ``sys.modules`` then, or as soon as
    numba's import is over (``streamlearn.cli`` removes it after ``import numba``)."""

    def __getattr__(self, attr):
        real = self.__dict__.get("_streamlearn_real")
        if real is None:
            import importlib
            import sys
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
            real = importlib.import_module(self.__name__)
            self.__dict__["_streamlearn_real"] = real
        return getattr(real, attr)


def _install_extension_init_on_compile() -> None:
    from numba.core import dispatcher
    base = dispatcher._DispatcherBase
    numba_hook = getattr(base, "_compilation_chain_init_hook", None)
    if numba_hook is None or getattr(numba_hook, "_streamlearn", False):
        return

    def _compilation_chain_init_hook(self):
        if getattr(getattr(self, "py_func", None), "__module__", "").startswith("streamlearn"):
            return      # a compilation of it runs the extensions' init first (see above)
        numba_hook(self)

    _compilation_chain_init_hook._streamlearn = True
    base._compilation_chain_init_hook = _compilation_chain_init_hook


# numba's cache of a kernel is an index (signature -> data file number) and one data file per
# signature. Saving reads the index, takes the first number not in it, writes the index, then the
# data, each file atomically but not the whole: two processes compiling two signatures of one kernel
# at once (two test workers, two first runs) can both take number 1, and the index of one then points
# at the machine code of the other, which is loaded and called with the wrong argument types ever
# after (numba issue 4807). Saves therefore hold an exclusive lock on a file in the cache directory
# and loads a shared one; the compilation itself runs outside the lock. Where ``fcntl`` is missing
# (Windows) or the lock file cannot be opened, numba's own unlocked behaviour remains.

_LOCK_NAME = "streamlearn-cache.lock"


class _cache_lock:
    """``flock`` on ``<cache directory>/streamlearn-cache.lock`` around a load (shared) or a save."""

    __slots__ = ("_path", "_shared", "_fd")

    def __init__(self, cache, shared: bool):
        self._path = getattr(cache, "_cache_path", None) if _is_ours(cache) else None
        self._shared = shared
        self._fd = None

    def __enter__(self):
        if self._path is None or _fcntl is None:
            return self
        try:
            if not self._shared:
                os.makedirs(self._path, exist_ok=True)
            fd = os.open(os.path.join(self._path, _LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return self
        try:
            _fcntl.flock(fd, _fcntl.LOCK_SH if self._shared else _fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            return self
        self._fd = fd
        return self

    def __exit__(self, *exc):
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None
        return False


def _is_ours(cache) -> bool:
    return getattr(getattr(cache, "_py_func", None), "__module__", "").startswith("streamlearn")


# --- What numba does on import and on the first cached load that a cached run does not need -----
#
# Measured on a warm 10-line ``streamlearn train`` (time.perf_counter around numba's functions,
# fastest of 3 on a shared 2-core machine):
#
# * ``@njit(cache=True)`` builds each kernel's ``FunctionCache`` at import: a locator search, an
#   ``os.makedirs`` and a temporary file created and deleted in ``__pycache__`` (a writability
#   check), per kernel: 229 kernels, 33-42 ms of the package's import, of which a run uses a few.
#   ``install_lazy_caches`` builds each cache on the kernel's first call instead.
# * each ``@njit`` function (441 in the package: kernels and the functions they inline) computes its
#   ``inspect.signature`` twice when it is decorated, once for the dispatcher and once for its
#   compiler: about a third of the 22-50 ms the decorations take (CPU time, issue 30).
#   ``install_lazy_caches`` lets the second computation reuse the first (a signature is immutable).
# * the first load initialises numba's runtime (NRT), which compiles a small LLVM module of atomic
#   reference-count helpers with LLVM's optimiser and code generator: 20-65 ms, every process.
#   ``_load_nrt`` keeps its machine code next to the kernels (keyed on numba, llvmlite and the
#   codegen's target triple, CPU and features, as numba keys the kernels) and loads it as numba
#   loads a cached kernel.
# * unpickling a cached kernel rebuilds the "environments" of every numba helper inlined into it,
#   and ``_rebuild_env`` imports each helper's module for its globals: numba.np.arrayobj (with
#   numpy.ma), numba.cpython.unicode, charseq, randomimpl, ...: 25-55 ms. Nopython code never reads
#   an environment's globals (only object mode does; its constants are pickled with it), so a module
#   of numba's that is not imported yet gets an empty dict instead of being imported.


class _LazyCache:
    """A kernel's numba ``FunctionCache``, built on first use (its first call)."""

    __slots__ = ("_py_func", "_real")

    def __init__(self, py_func):
        self._py_func = py_func
        self._real = None

    def _get(self):
        if self._real is None:
            self._real = make_function_cache(self._py_func)
        return self._real

    def __getattr__(self, name):
        return getattr(self._get(), name)


# --- Where kernels are cached when the package's __pycache__ is not writable ----------------------
#
# numba tries the package's ``__pycache__`` and then ``~/.cache/numba``, and when neither can be
# written it refuses to compile the kernel at all ("cannot cache function ...: no locator available"):
# a user who cannot write the installed package and has no writable home could not train. Our kernels
# therefore look in turn at NUMBA_CACHE_DIR (when set), the package's ``__pycache__`` (writable; or
# read-only when it already holds the kernel and the guard found its record equal to the sources: an
# install warmed up by its owner, ``streamlearn warm-up``), a per-user directory ``$XDG_CACHE_HOME/streamlearn/numba/<version>-<sources>`` (``~/.cache`` without
# XDG_CACHE_HOME) and ``<tmp>/streamlearn-<uid>/numba/<version>-<sources>`` (created 0700 and used only
# when it is ours and private: a cache holds machine code); with none writable they are compiled in
# every process (one notice says so) instead of failing. ``<sources>`` is a digest of every source of
# the package, so a changed or upgraded package never loads the machine code of another (the guard
# above only watches the package's own ``__pycache__``). A save that fails (a full disk, a file-size
# limit) leaves the kernel compiled and uncached.


def _sources_key() -> str:
    """``<version>-<digest of every .py file of the package>`` (computed once per process)."""
    key = _memo.get("sources")
    if key is None:
        from streamlearn._version import __version__
        h = hashlib.sha256()
        try:
            for rel, data in sorted(_read_sources(_PACKAGE).items()):
                h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
        except OSError:
            pass
        key = _memo["sources"] = f"{__version__}-{h.hexdigest()[:16]}"
    return key


_memo: dict = {}


def user_cache_root() -> str:
    """The per-user directory of the kernels of these sources (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "streamlearn", "numba", _sources_key())


def temp_cache_root() -> str:
    """The last resort: ``<tmp>/streamlearn-<uid>/numba/<version>-<sources>``."""
    import tempfile
    uid = os.geteuid() if hasattr(os, "geteuid") else 0
    return os.path.join(tempfile.gettempdir(), f"streamlearn-{uid}", "numba", _sources_key())


def _private_dir(path: str) -> None:
    """Create ``path`` (0700) if needed; raise OSError unless it is a real directory of ours that no
    one else can write (another user could otherwise plant machine code in a shared temp dir)."""
    import stat
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "geteuid") and st.st_uid != os.geteuid()) \
            or st.st_mode & 0o022:
        raise PermissionError(f"{path} is not a private directory")


def _fallback_cache_class():
    """numba's FunctionCache with the locators above (built once)."""
    cls = _memo.get("cache_class")
    if cls is not None:
        return cls
    from numba.core import caching

    class UserLocator(caching.UserWideCacheLocator):
        root = staticmethod(user_cache_root)

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(self.root(), self.get_suitable_cache_subpath(py_file))

    class TempLocator(UserLocator):
        root = staticmethod(temp_cache_root)

        def ensure_cache_path(self):
            _private_dir(os.path.dirname(os.path.dirname(self.root())))    # <tmp>/streamlearn-<uid>
            super().ensure_cache_path()

    class ReadOnlyInTreeLocator(caching.InTreeCacheLocator):
        """The package's own __pycache__ though it cannot be written (an install warmed up by its
        owner), for a kernel it holds, when the guard found its record equal to the sources: loads
        only (a save fails and is ignored)."""

        @classmethod
        def from_function(cls, py_func, py_file):
            if _memo.get("current") != _PACKAGE or not os.path.abspath(py_file).startswith(_PACKAGE + os.sep):
                return None
            import sys
            self = cls(py_func, py_file)
            stem = os.path.splitext(os.path.basename(py_file))[0]         # numba's file name of the index
            name = f"{stem}.{py_func.__qualname__}".replace("<", "").replace(">", "")
            index = (f"{name}-{py_func.__code__.co_firstlineno}.py{sys.version_info[0]}{sys.version_info[1]}"
                     f"{getattr(sys, 'abiflags', '')}.nbi")
            return self if os.path.isfile(os.path.join(self._cache_path, index)) else None

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, ReadOnlyInTreeLocator,
                            UserLocator, TempLocator]

    class StreamlearnFunctionCache(caching.FunctionCache):
        _impl_class = Impl

    cls = _memo["cache_class"] = StreamlearnFunctionCache
    return cls


UNCACHED_NOTICE = ("streamlearn: no writable directory for compiled kernels (the package's __pycache__, "
                   "$XDG_CACHE_HOME or ~/.cache, the temporary directory); they are compiled in every run")


def make_function_cache(py_func):
    """The numba cache of a kernel: ours (above) for streamlearn's kernels, numba's for others; with no
    writable place, a cache that keeps nothing (the kernel is compiled, once per process)."""
    from numba.core import caching
    if not getattr(py_func, "__module__", "").startswith("streamlearn"):
        return caching.FunctionCache(py_func)
    try:
        return _fallback_cache_class()(py_func)
    except (RuntimeError, OSError):
        if not _memo.get("uncached_noted"):
            _memo["uncached_noted"] = True
            try:
                _raw(_notice_stream()).write(UNCACHED_NOTICE + "\n")
            except (OSError, ValueError, AttributeError):
                pass
        return caching.NullCache()


def install_lazy_caches() -> None:
    """``@njit(cache=True)`` kernels get their numba cache on first call, not at import (see above).
    Idempotent; a numba without what this relies on keeps its own behaviour."""
    try:
        from numba.core import caching, dispatcher
    except ImportError:
        return
    cls = dispatcher.Dispatcher
    if getattr(cls.enable_caching, "_streamlearn", False) or not hasattr(caching, "FunctionCache"):
        return

    def enable_caching(self):
        self._cache = _LazyCache(self.py_func)

    enable_caching._streamlearn = True
    cls.enable_caching = enable_caching
    _reuse_signatures()


def _reuse_signatures() -> None:
    """numba's ``pysignature`` gives back the signature it just computed when asked again for the
    same function (a dispatcher's and its compiler's computations, one after the other)."""
    from numba.core import utils
    compute = getattr(utils, "pysignature", None)
    if compute is None or getattr(compute, "_streamlearn", False):
        return
    last = [None, None]

    def pysignature(func):
        if last[0] is not func:
            last[1] = compute(func)
            last[0] = func
        return last[1]

    pysignature._streamlearn = True
    utils.pysignature = pysignature


def _nrt_cache_file(codegen) -> str:
    import numba
    import llvmlite
    from numba.core import config
    key = repr((numba.__version__, llvmlite.__version__, codegen.magic_tuple(),
                bool(config.NRT_STATS), bool(getattr(config, "DEBUG_NRT", False))))
    name = f"numba-nrt-{hashlib.sha256(key.encode()).hexdigest()[:20]}.bin"
    in_tree = os.path.join(_PACKAGE, "__pycache__")
    if os.path.exists(os.path.join(in_tree, name)) or os.access(in_tree, os.W_OK):
        return os.path.join(in_tree, name)
    for root in (user_cache_root, temp_cache_root):     # where the kernels go (see make_function_cache)
        try:
            path = root()
            if root is temp_cache_root:
                _private_dir(os.path.dirname(os.path.dirname(path)))
            os.makedirs(path, exist_ok=True)
            if os.access(path, os.W_OK):
                return os.path.join(path, name)
        except OSError:
            continue
    return os.path.join(in_tree, name)


def _install_nrt_cache() -> None:
    try:
        from numba.core.runtime import nrtdynmod
    except ImportError:
        return
    if getattr(nrtdynmod.compile_nrt_functions, "_streamlearn", False):
        return
    if not all(hasattr(nrtdynmod, n) for n in ("create_nrt_module", "compile_nrt_functions")):
        return
    numba_compile = nrtdynmod.compile_nrt_functions

    def compile_nrt_functions(ctx):
        import pickle
        try:
            codegen = ctx.codegen()
            path = _nrt_cache_file(codegen)
        except Exception:
            return numba_compile(ctx)
        try:
            with open(path, "rb") as f:
                state = pickle.load(f)
            return codegen.unserialize_library(state)
        except Exception:
            pass
        try:
            ir_mod, library = nrtdynmod.create_nrt_module(ctx)
            library.enable_object_caching()
            library.add_ir_module(ir_mod)
            library.finalize()
        except Exception:
            return numba_compile(ctx)
        try:
            state = library.serialize_using_object_code()
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}"
            with open(tmp, "wb") as f:
                pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except Exception:
            pass
        return library

    compile_nrt_functions._streamlearn = True
    nrtdynmod.compile_nrt_functions = compile_nrt_functions


def _install_env_rebuild() -> None:
    try:
        from numba.core import environment
    except ImportError:
        return
    if getattr(environment._rebuild_env, "_streamlearn", False):
        return
    if not all(hasattr(environment, n) for n in ("lookup_environment", "Environment")):
        return
    numba_rebuild = environment._rebuild_env

    def _rebuild_env(modname, consts, env_name):
        import sys
        if modname in sys.modules or not modname.startswith("numba."):
            return numba_rebuild(modname, consts, env_name)
        env = environment.lookup_environment(env_name)
        if env is not None:
            return env
        env = environment.Environment({"__name__": modname})
        env.consts[:] = consts
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
        return env

    _rebuild_env._streamlearn = True
    environment._rebuild_env = _rebuild_env


def _install_ndarray_typeof() -> None:
    """numba types an array argument (a kernel's first call) by first asking whether it is a
    ``numpy.ma.MaskedArray``, and numpy 2 imports ``numpy.ma`` on that first access: 10-13 ms of a
    10-line run (``-X importtime``). An exact ``numpy.ndarray`` cannot be a masked array, so it is
    typed as numba types it without the question; anything else goes to numba's own rule."""
    try:
        import numpy as np
        from numba.core.typing import typeof as nb_typeof
    except ImportError:
        return
    numba_rule = nb_typeof.typeof_impl.dispatch(np.ndarray)
    if getattr(numba_rule, "_streamlearn", False):
        return
    if not all(hasattr(nb_typeof, n) for n in ("numpy_support", "types", "errors")):
        return

    def typeof_ndarray(val, c):
        if type(val) is not np.ndarray:
            return numba_rule(val, c)
        try:
            dtype = nb_typeof.numpy_support.from_dtype(val.dtype)
        except nb_typeof.errors.NumbaNotImplementedError:
            raise nb_typeof.errors.NumbaValueError(f"Unsupported array dtype: {val.dtype}")
        layout = nb_typeof.numpy_support.map_layout(val)
        return nb_typeof.types.Array(dtype, val.ndim, layout, readonly=not val.flags.writeable)

    typeof_ndarray._streamlearn = True
    nb_typeof.typeof_impl.register(np.ndarray)(typeof_ndarray)
