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
from helpers import vw_dataset, write_lines

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

#: run in a subprocess on a copy of the package: one small kernel, then what was cached where
KERNEL_RUN = r"""
import os, sys, tempfile
sys.path.insert(0, sys.argv[1])
tempfile.tempdir = sys.argv[2]
import numpy as np
import streamlearn
assert streamlearn.__file__.startswith(sys.argv[1]), streamlearn.__file__
from streamlearn import _cache
_cache.install_lazy_caches()
_cache.install_kernel_loader()
from streamlearn.hashing import hash_name
h = hash_name(np.frombuffer(bytearray(b"abc"), np.uint8), 0, 3, 0, 0)
real = hash_name._cache._real
print(h, _cache._counts["compiled"], _cache._counts["loaded"], type(real).__name__,
      getattr(real, "_cache_path", None) or "-")
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


def _kernel_run(package_root: Path, home: Path, tmp: Path):
    env = dict(os.environ, HOME=str(home))
    for name in ("XDG_CACHE_HOME", "NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES"):
        env.pop(name, None)
    res = subprocess.run([sys.executable, "-c", KERNEL_RUN, str(package_root), str(tmp)], capture_output=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    value, compiled, loaded, kind, path = res.stdout.decode().split()
    return int(value), int(compiled), int(loaded), kind, path, res.stderr.decode()


def test_kernels_are_cached_per_user_when_the_package_is_not_writable(tmp_path, readonly_package):
    home = tmp_path / "home"
    home.mkdir()
    first = _kernel_run(readonly_package, home, tmp_path)
    value, compiled, loaded, kind, path, _ = first
    assert compiled == 1 and loaded == 0 and kind != "NullCache"
    assert Path(path).is_relative_to(home / ".cache" / "streamlearn" / "numba")
    assert any(n.endswith(".nbi") for n in os.listdir(path))
    second = _kernel_run(readonly_package, home, tmp_path)
    assert second[:3] == (value, 0, 1) and second[4] == path       # loaded from there, not compiled


def test_kernels_fall_back_to_a_private_temp_dir_then_to_no_cache(tmp_path, readonly_package):
    home = tmp_path / "home"
    home.write_bytes(b"")           # no home directory to cache in
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    value, compiled, loaded, kind, path, _ = _kernel_run(readonly_package, home, tmp)
    assert compiled == 1 and Path(path).is_relative_to(tmp / f"streamlearn-{os.geteuid()}")
    assert stat.S_IMODE(os.stat(tmp / f"streamlearn-{os.geteuid()}").st_mode) == 0o700
    # a temp dir that others could write is not trusted; with nowhere else writable, the kernel is
    # compiled without a cache and the run still works (numba alone: "no locator available")
    os.chmod(tmp / f"streamlearn-{os.geteuid()}", 0o777)
    got = _kernel_run(readonly_package, home, tmp)
    assert got[0] == value and got[3] == "NullCache"
    assert "compiled in every run" in got[5]
