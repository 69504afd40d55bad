"""The numba cache guard (streamlearn/_cache.py) drops only the cached kernels whose sources changed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import streamlearn
from streamlearn import _cache

PACKAGE = Path(streamlearn.__file__).resolve().parent
ROOT = PACKAGE.parent


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def _fake_caches(package: Path, rels) -> set[str]:
    """Files named as numba names the cache of a kernel ``f`` of each module (index and data)."""
    made = set()
    for rel in rels:
        src = package / rel
        cache_dir = src.parent / "__pycache__"
        cache_dir.mkdir(exist_ok=True)
        stem = src.stem
        for name in (f"{stem}.f-3.py311.nbi", f"{stem}.f-3.py311.1.nbc", f"{stem}.g-9.py311.nbi"):
            (cache_dir / name).write_bytes(b"x")
            made.add(str(cache_dir / name))
    return made


def _stems(paths) -> set[str]:
    return {(Path(p).parent.parent.name, Path(p).name.partition(".")[0]) for p in paths}


def _append(path: Path, text: str = "\n# a comment\n") -> None:
    with open(path, "a") as f:
        f.write(text)


@pytest.fixture
def toy(tmp_path):
    """A package 'toypkg': a <- b <- c (relative import), a <- sub/e, d imported by nobody, and sub/a.

    A kernel module imports: b from toypkg.a; c from .b (relative); sub/e 'from toypkg import a';
    sub/a.py has the same stem as a.py in another directory; d.py is a module no one imports.
    """
    pkg = tmp_path / "toypkg"
    _write(pkg / "__init__.py", '"""toy"""\n')
    _write(pkg / "a.py", "def f():\n    return 1\n")
    _write(pkg / "b.py", "from toypkg.a import f\n\ndef g():\n    return f()\n")
    _write(pkg / "c.py", "from .b import g\n")
    _write(pkg / "d.py", "import os\n")
    _write(pkg / "sub" / "__init__.py", "")
    _write(pkg / "sub" / "e.py", "def h():\n    from toypkg import a\n    return a.f()\n")
    _write(pkg / "sub" / "a.py", "X = 1\n")
    return pkg


TOY_MODULES = ["a.py", "b.py", "c.py", "d.py", "sub/e.py", "sub/a.py"]


def test_first_check_without_a_record_drops_everything(toy):
    made = _fake_caches(toy, TOY_MODULES)
    assert set(_cache.check_cache(str(toy))) == made
    assert (toy / "__pycache__" / _cache._STAMP).is_file()


def test_unchanged_or_touched_sources_delete_nothing(toy):
    _cache.check_cache(str(toy))
    made = _fake_caches(toy, TOY_MODULES)
    assert _cache.check_cache(str(toy)) == []
    t = time.time() + 10
    for rel in TOY_MODULES:
        os.utime(toy / rel, (t, t))  # a new mtime, same content
    assert _cache.check_cache(str(toy)) == []
    assert all(os.path.exists(p) for p in made)


def test_a_change_drops_the_module_and_its_importers_only(toy):
    _cache.check_cache(str(toy))
    _fake_caches(toy, TOY_MODULES)
    _append(toy / "a.py")
    deleted = _cache.check_cache(str(toy))
    # a itself, b (absolute import), c (through b, relative), sub/e (import in a function);
    # not d, and not sub/a (same stem, other directory)
    assert _stems(deleted) == {("toypkg", "a"), ("toypkg", "b"), ("toypkg", "c"), ("sub", "e")}
    assert len(deleted) == 4 * 3
    _fake_caches(toy, TOY_MODULES)
    assert _cache.check_cache(str(toy)) == []  # recorded: not dropped again

    _append(toy / "c.py")
    assert _stems(_cache.check_cache(str(toy))) == {("toypkg", "c")}
    _append(toy / "sub" / "a.py")
    assert _stems(_cache.check_cache(str(toy))) == {("sub", "a")}


def test_a_module_no_one_imports_deletes_only_its_own(toy):
    _cache.check_cache(str(toy))
    made = _fake_caches(toy, ["a.py", "b.py", "c.py", "sub/e.py"])
    _append(toy / "d.py")
    _write(toy / "new.py", "from toypkg.a import f\n")
    assert _cache.check_cache(str(toy)) == []
    assert all(os.path.exists(p) for p in made)


def test_new_imports_and_removed_modules(toy):
    _cache.check_cache(str(toy))
    _fake_caches(toy, TOY_MODULES)
    # d starts importing a: its digest now covers a, so d is recompiled (its code changed anyway)
    _write(toy / "d.py", "from toypkg import a\n")
    assert _stems(_cache.check_cache(str(toy))) == {("toypkg", "d")}
    _fake_caches(toy, TOY_MODULES)
    _append(toy / "a.py")
    assert ("toypkg", "d") in _stems(_cache.check_cache(str(toy)))
    # a removed module's caches go, and so do its importers'
    _fake_caches(toy, TOY_MODULES)
    (toy / "b.py").unlink()
    assert _stems(_cache.check_cache(str(toy))) == {("toypkg", "b"), ("toypkg", "c")}


def test_a_corrupt_record_drops_everything(toy):
    _cache.check_cache(str(toy))
    made = _fake_caches(toy, TOY_MODULES)
    (toy / "__pycache__" / _cache._STAMP).write_text("{not json")
    assert set(_cache.check_cache(str(toy))) == made


def test_scan_of_the_real_package():
    """The import scan finds what the kernels call across modules."""
    files = {}
    sources = _cache._read_sources(str(PACKAGE))
    modules = {_cache._module_name("streamlearn", rel): rel for rel in sources}
    for rel, data in sources.items():
        files[rel] = _cache.scan_imports(data, rel, modules, "streamlearn")
    assert "core/table.py" in files["core/rules.py"]
    assert "core/losses.py" in files["core/rules.py"]
    assert "core/rules.py" in files["learners/fobos.py"]
    assert "learners/fobos.py" in files["learners/subgradient.py"]
    assert "features/hashing.py" in files["io/vw.py"]
    assert "io/parsing.py" in files["io/vw.py"]
    assert "learners/scd/__init__.py" in files["learners/scd/fit.py"]  # from streamlearn.learners import scd as K


@pytest.fixture
def package_copy(tmp_path):
    dst = tmp_path / "streamlearn"
    shutil.copytree(PACKAGE, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    kernels = sorted(str(p.relative_to(dst)).replace(os.sep, "/") for p in dst.rglob("*.py")
                     if "cache=True" in p.read_text())
    assert "core/rules.py" in kernels and "learners/ftrl.py" in kernels and "features/hashing.py" in kernels
    _cache.check_cache(str(dst))
    return dst, kernels


def test_real_package_non_kernel_modules_delete_nothing(package_copy):
    pkg, kernels = package_copy
    made = _fake_caches(pkg, kernels)
    for rel in ("cli.py", "config.py", "driver.py", "report.py", "__main__.py", "datasets.py"):
        if (pkg / rel).exists():
            _append(pkg / rel)
    assert _cache.check_cache(str(pkg)) == []
    assert all(os.path.exists(p) for p in made)


def test_real_package_kernel_change_drops_it_and_its_importers(package_copy):
    pkg, kernels = package_copy
    _fake_caches(pkg, kernels)
    _append(pkg / "core" / "table.py")
    stems = {stem for _, stem in _stems(_cache.check_cache(str(pkg)))}
    assert {"table", "rules", "fobos"} <= stems  # rules inlines the table's catch-up; fobos calls rules
    assert not stems & {"losses", "projection", "hashing", "parsing", "vw", "libsvm"}

    _fake_caches(pkg, kernels)
    _append(pkg / "features/hashing.py")
    stems = {stem for _, stem in _stems(_cache.check_cache(str(pkg)))}
    assert {"hashing", "vw", "libsvm"} <= stems  # the parsers inline the hash
    assert not stems & {"table", "rules", "fobos", "losses"}


def test_check_writes_nothing_when_nothing_changed(package_copy):
    """With the sources as stamped, a check only reads: no file of the package (stamp, caches) is
    written or removed. (Its speed, ~1 ms, is a benchmark's to measure, not a test's.)"""
    pkg, _ = package_copy  # a copy: other work in the tree cannot change the sources meanwhile
    assert _cache.check_cache(str(pkg)) == []
    before = {p: p.stat().st_mtime_ns for p in pkg.rglob("*") if p.is_file()}
    for _ in range(3):
        assert _cache.check_cache(str(pkg)) == []
    assert {p: p.stat().st_mtime_ns for p in pkg.rglob("*") if p.is_file()} == before


KERNEL_PKG = {
    "__init__.py": """
        import os
        if not os.environ.get("NO_GUARD"):
            from streamlearn._cache import check_cache
            check_cache(os.path.dirname(__file__))
    """,
    "const.py": """
        from numba import njit

        @njit(cache=True, inline="always")
        def value():
            return 1
    """,
    "kern.py": """
        from numba import njit
        from nbtoy.const import value

        @njit(cache=True)
        def run():
            return value() + 10
    """,
}


def test_real_numba_cache_follows_an_imported_module(tmp_path):
    """End to end: a kernel inlining a function of another module sees that module's change."""
    pkg = tmp_path / "nbtoy"
    for rel, text in KERNEL_PKG.items():
        _write(pkg / rel, text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_DISABLE_JIT", None)

    def run(**extra):
        out = subprocess.run([sys.executable, "-c", "import nbtoy.kern; print(nbtoy.kern.run())"],
                             env=dict(env, **extra), capture_output=True, text=True, check=True)
        return int(out.stdout)

    assert run() == 11
    assert list((pkg / "__pycache__").glob("kern.run-*.nbi"))  # cached next to the source

    def edit(v):
        text = (pkg / "const.py").read_text()
        (pkg / "const.py").write_text(text.replace(f"return {v - 1}", f"return {v}"))

    edit(2)
    assert run(NO_GUARD="1") == 11  # numba alone: kern.py unchanged, so its stale cache is loaded
    edit(3)
    assert run() == 13  # the guard dropped kern's cache because const changed


def test_kernel_saves_and_loads_hold_the_cache_directory_lock(tmp_path, monkeypatch):
    """numba's save (index, then data file, each atomic but not together) runs under an exclusive
    lock and a load under a shared one, so that two processes saving two signatures of one kernel
    cannot both take data file 1 (numba issue 4807); probed with a second descriptor, non-blocking."""
    fcntl = pytest.importorskip("fcntl")
    from numba.core import caching
    from numba.core.registry import cpu_target

    _cache.install_kernel_loader()
    monkeypatch.setattr(_cache, "_counts", {"compiled": 0, "loaded": 0})
    probe = os.open(tmp_path / _cache._LOCK_NAME, os.O_RDWR | os.O_CREAT)

    def free(mode):
        try:
            fcntl.flock(probe, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(probe, fcntl.LOCK_UN)
        return True

    seen = []

    class FakeCache:  # what the loader's wrappers and numba's own save_overload use of a Cache
        _cache_path = str(tmp_path)
        _py_func = _cache.check_cache  # a function of the streamlearn package

        def _guard_against_spurious_io_errors(self):
            return caching.Cache._guard_against_spurious_io_errors(self)

        def _save_overload(self, sig, data):
            seen.append(("save", free(fcntl.LOCK_SH)))

        def _load_overload(self, sig, target_context):
            seen.append(("load", free(fcntl.LOCK_SH), free(fcntl.LOCK_EX)))
            return "cached"

    try:
        caching.Cache.save_overload(FakeCache(), None, None)
        assert caching.Cache.load_overload(FakeCache(), None, cpu_target.target_context) == "cached"
        assert seen == [("save", False), ("load", True, False)]
        assert free(fcntl.LOCK_EX)  # released
    finally:
        os.close(probe)
