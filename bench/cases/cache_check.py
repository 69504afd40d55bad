"""What checking a cache costs (issue 24, "Caches"): one pass over a cache of ~1M examples read with
``read_cache`` (record and block CRC-32, structural checks) against the same bytes read into the same
arrays without any check (the version-3 reader's work), in one process, alternated, best of 5; plus
``verify_cache`` (the start-up check of a reused cache) and the pass of ``train`` from the cache for
scale.

    python -m bench run cache_check [--examples 1000000] [--dir /tmp/cachebench]
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.harness import Case, Context

from streamlearn.io import cache as C
from streamlearn.io.blocks import Outputs


def make_text(path: Path, n: int, seed: int = 0) -> None:
    """VW lines: a label, 8-16 features in two namespaces (a vocabulary of 100k names)."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for s in range(0, n, 100_000):
            m = min(100_000, n - s)
            labels = rng.choice([-1, 1], m)
            k = rng.integers(8, 17, m)
            names = rng.integers(0, 100_000, int(k.sum()))
            vals = rng.uniform(0, 1, int(k.sum()))
            pos = 0
            lines = []
            for i in range(m):
                feats = " ".join(f"f{names[j]}:{vals[j]:.3f}" for j in range(pos, pos + k[i]))
                pos += k[i]
                lines.append(f"{labels[i]} |a {feats} |b w{i % 97}\n")
            f.write("".join(lines))


def raw_pass(path: str) -> int:
    """The cache's arrays read into reusable buffers with no check at all (the old reader's work)."""
    out = Outputs()
    n_total = 0
    with open(path, "rb") as f:
        head = f.read(16)
        hlen = struct.unpack("<I", head[12:16])[0]
        f.seek(16 + hlen + 4)
        while True:
            n, nf, ntag, flags, _, _, _ = C._BLOCK.unpack(f.read(C._BLOCK.size))
            if flags & C._END:
                return n_total
            out.reserve(n, nf)
            for a in (out.labels[:n], out.weights[:n], out.bases[:n], out.lines[:n], out.indptr[:n + 1],
                      out.idx[:nf], out.val[:nf]):
                f.readinto(memoryview(a).cast("B"))
            rest = C._skipped_bytes(n, nf, ntag, flags) - C._skipped_bytes(n, nf, 0, 0)
            f.seek(rest, os.SEEK_CUR)
            n_total += n


def checked_pass(path: str, bits: int) -> int:
    return sum(b.n for b in C.read_cache(path, "x", bits=bits))


def arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--examples", type=int, default=1_000_000)
    ap.add_argument("--dir", default="/tmp/cachebench")
    ap.add_argument("--bits", type=int, default=18)


def run(args: argparse.Namespace, ctx: Context) -> None:
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    text, cache = d / "d.vw", d / "d.cache"
    if not text.exists():
        make_text(text, args.examples)
    exe = [sys.executable, "-m", "streamlearn", "train", "-d", str(text), "--cache-file", str(cache), "-b",
           str(args.bits), "--quiet"]
    if not cache.exists():
        subprocess.run(exe, check=True)
    size = cache.stat().st_size
    checked_pass(str(cache), args.bits)     # warm the page cache and the compiled check
    raw, checked, verify = [], [], []
    for _ in range(5):
        t = time.perf_counter()
        n = raw_pass(str(cache))
        raw.append(time.perf_counter() - t)
        t = time.perf_counter()
        assert checked_pass(str(cache), args.bits) == n
        checked.append(time.perf_counter() - t)
        t = time.perf_counter()
        C.verify_cache(str(cache), args.bits)
        verify.append(time.perf_counter() - t)
    t = time.perf_counter()
    subprocess.run(exe, check=True)         # a pass of train reading the cache (verified first)
    whole = time.perf_counter() - t
    print(f"cache: {n} examples, {size / 2**20:.1f} MiB ({cache})")
    print(f"read without checks:   best {min(raw):.3f} s  median {sorted(raw)[2]:.3f} s")
    print(f"read_cache (checked):  best {min(checked):.3f} s  median {sorted(checked)[2]:.3f} s  "
          f"(+{min(checked) - min(raw):.3f} s, {(min(checked) - min(raw)) / max(min(checked), 1e-9) * 100:.0f}% "
          f"of the checked read, {(min(checked) - min(raw)) / n * 1e9:.0f} ns per example)")
    print(f"verify_cache:          best {min(verify):.3f} s")
    print(f"train from the cache (one pass, process start-up and the start-up check included): {whole:.2f} s")


CASE = Case("cache_check", arguments, run, __doc__)
