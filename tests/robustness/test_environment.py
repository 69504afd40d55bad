"""The environment (issue 24): a file-size limit (EFBIG) or a full disk (ENOSPC) on an output is one
line naming the path, and the compiled kernels are cached elsewhere (or not at all) when the
package's __pycache__ cannot be written, instead of "no locator available"."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import streamlearn
from support.helpers import vw_dataset, write_lines

PACKAGE = Path(streamlearn.__file__).resolve().parent
STREAMLEARN = [sys.executable, "-m", "streamlearn"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_lines(tmp_path_factory.mktemp("data") / "train.vw", vw_dataset(600, seed=5))


def _limit(nbytes: int):
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)       # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return preexec


def _one_error_line(res) -> str:
    err = res.stderr.decode()
    lines = [line for line in err.splitlines() if line.startswith("Error")]
    assert res.returncode == 1 and len(lines) == 1, err
    assert "internal error" not in err and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("opt", ["-f", "--cache-file", "-p"])
def test_a_file_size_limit_is_one_line_naming_the_path(tmp_path, data, opt):
    target = tmp_path / "out"
    args = STREAMLEARN + ["train", "-d", str(data), "--quiet", opt, str(target)]
    if opt == "--cache-file":
        args += ["--passes", "2"]
    res = subprocess.run(args, capture_output=True, timeout=300, preexec_fn=_limit(2048))
    line = _one_error_line(res)
    assert str(target) in line and "File too large" in line, line
    if opt != "-p":         # atomic outputs: no target and no temporary file left behind
        assert os.listdir(tmp_path) == []


def test_the_audit_to_a_full_disk_is_one_line(tmp_path, data):
    node = tmp_path / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except OSError as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    with open(node, "wb") as out:
        res = subprocess.run(STREAMLEARN + ["train", "-d", str(data), "--quiet", "--audit"], stdout=out,
                             stderr=subprocess.PIPE, timeout=300)
    line = _one_error_line(res)
    assert "standard output" in line and "No space left on device" in line, line


# --- the kernel cache when the package cannot be written ------------------------------------------

#: run in a subprocess on a copy of the package: one small kernel, then what was cached where; with
#: "locators", also where a kernel's cache would go without a home, and with an insecure temp dir
KERNEL_RUN = r"""
import os, stat, sys, tempfile
sys.path.insert(0, sys.argv[1])
tempfile.tempdir = sys.argv[2]
import numpy as np
import streamlearn
assert streamlearn.__file__.startswith(sys.argv[1]), streamlearn.__file__
from streamlearn import _cache
_cache.install_lazy_caches()
_cache.install_kernel_loader()
from streamlearn.features.hashing import hash_name
h = hash_name(np.frombuffer(bytearray(b"abc"), np.uint8), 0, 3, 0, 0)
real = hash_name._cache._real
print(h, _cache._counts["compiled"], _cache._counts["loaded"], type(real).__name__,
      getattr(real, "_cache_path", None) or "-")
if sys.argv[3:] == ["locators"]:
    os.environ["HOME"] = os.path.join(sys.argv[2], "not-a-home")
    open(os.environ["HOME"], "w").close()
    private = os.path.join(sys.argv[2], f"streamlearn-{os.geteuid()}")
    print(_cache.make_function_cache(hash_name.py_func)._cache_path, oct(stat.S_IMODE(os.stat(private).st_mode)))
    os.chmod(private, 0o777)    # others could plant machine code there: not used
    print(type(_cache.make_function_cache(hash_name.py_func)).__name__)
"""


@pytest.fixture(scope="module")
def readonly_package(tmp_path_factory):
    """A copy of the package whose every ``__pycache__`` is a regular file: nothing can be cached in
    the package (as for a user who cannot write it; root included)."""
    root = tmp_path_factory.mktemp("ro")
    copy = root / "streamlearn"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for d in [copy] + [p for p in copy.rglob("*") if p.is_dir()]:
        (d / "__pycache__").write_bytes(b"")
    return root


def _kernel_run(package_root: Path, home: Path, tmp: Path, *extra: str, prefix=()):
    env = dict(os.environ, HOME=str(home))
    for name in ("XDG_CACHE_HOME", "NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES"):
        env.pop(name, None)
    res = subprocess.run([*prefix, sys.executable, "-c", KERNEL_RUN, str(package_root), str(tmp), *extra],
                         capture_output=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode().split("\n")
    value, compiled, loaded, kind, path = out[0].split()
    return (int(value), int(compiled), int(loaded), kind, path), out[1:], res.stderr.decode()


def test_kernels_are_cached_per_user_when_the_package_is_not_writable(tmp_path, readonly_package):
    """Per user (~/.cache/streamlearn), then a private temp dir; never a temp dir others can write."""
    home = tmp_path / "home"
    home.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (value, compiled, loaded, kind, path), _, _ = _kernel_run(readonly_package, home, tmp)
    assert compiled == 1 and loaded == 0 and kind != "NullCache"
    assert Path(path).is_relative_to(home / ".cache" / "streamlearn" / "numba")
    assert any(n.endswith(".nbi") for n in os.listdir(path))
    got, more, err = _kernel_run(readonly_package, home, tmp, "locators")
    assert got == (value, 0, 1, kind, path)        # loaded from there, not compiled
    temp_path, mode = more[0].split()
    assert Path(temp_path).is_relative_to(tmp / f"streamlearn-{os.geteuid()}") and mode == "0o700"
    assert more[1] == "NullCache" and "compiled in every run" in err


def test_kernels_compile_without_a_cache_when_nothing_is_writable(tmp_path, readonly_package):
    """numba alone fails here: "cannot cache function ...: no locator available"."""
    home = tmp_path / "home"
    home.write_bytes(b"")           # no home directory, no temp dir
    got, _, err = _kernel_run(readonly_package, home, home / "tmp")
    assert got[0] == 3017643002 and got[1:4] == (0, 0, "NullCache")     # the hash of "abc"
    assert "compiled in every run" in err


def test_a_read_only_package_loads_its_own_warm_kernels(tmp_path):
    """An install its owner warmed up, mounted read-only (a private mount namespace: ``unshare -m``,
    nothing outside the test changes): the kernels are loaded from its __pycache__, not compiled again
    into the user's cache."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("no private mount namespace here (unshare -m)")
    root = tmp_path / "install"
    shutil.copytree(PACKAGE, root / "streamlearn")
    home = tmp_path / "home"
    home.mkdir()
    warm, _, _ = _kernel_run(root, home, tmp_path)        # the owner's run: kernel and guard record current
    assert Path(warm[4]) == root / "streamlearn" / "features" / "__pycache__"    # hash_name's module
    pkg = root / "streamlearn"
    read_only = ["unshare", "-m", "sh", "-c", f'mount --bind -o ro "{pkg}" "{pkg}" && exec "$@"', "sh"]
    got, _, err = _kernel_run(root, home, tmp_path, prefix=read_only)
    assert got == (warm[0], 0, 1, warm[3], warm[4]), err
    assert not (home / ".cache").exists()
