"""Keep numba's on-disk cache consistent with the package sources.

numba keys a cached function on its own source file only. A kernel that calls or inlines a function
from another module (the learner inlines the weight table's catch-up, the parser inlines the hash)
keeps its stale machine code when only that other module changes. This guard hashes every source file
of the package at import (about a millisecond) and, when the digest differs from the one recorded at
the last check, deletes the package's cached kernels so they are compiled again from current sources.
"""

from __future__ import annotations

import hashlib
import os

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_STAMP = "streamlearn-sources.sha256"


def _digest() -> str:
    h = hashlib.sha256()
    for root, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                h.update(os.path.relpath(path, _PACKAGE).encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def check_cache() -> None:
    """Drop cached kernels compiled from other sources than the current ones."""
    cache_dir = os.path.join(_PACKAGE, "__pycache__")
    stamp = os.path.join(cache_dir, _STAMP)
    try:
        digest = _digest()
        with open(stamp, encoding="ascii") as f:
            if f.read() == digest:
                return
    except OSError:
        pass
    try:
        for root, dirs, files in os.walk(_PACKAGE):
            if os.path.basename(root) == "__pycache__":
                for name in files:
                    if name.endswith((".nbi", ".nbc")):
                        os.unlink(os.path.join(root, name))
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{stamp}.{os.getpid()}"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(digest)
        os.replace(tmp, stamp)
    except OSError:
        pass  # a read-only install: numba then caches elsewhere, keyed on the installed files
