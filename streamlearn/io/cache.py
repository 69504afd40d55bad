"""Cache of parsed blocks, so that passes after the first read examples without parsing text again.

A cache is written during the first pass (to a temporary name, renamed when the pass completes, so an
interrupted run never leaves a partial cache behind) and holds the hashing options it was built with;
a cache built with other hashing options is rebuilt. Layout: magic, version, JSON header, then per
block a fixed 32-byte record (examples, features, tag bytes, flags) followed by
the raw arrays of the block.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile

import numpy as np

from streamlearn.errors import InputError
from streamlearn.io.blocks import Outputs, ParsedBlock, sub_block
from streamlearn.io.reader import RING

MAGIC = b"SLCACHE\x00"
VERSION = 3
_BLOCK = struct.Struct("<QQQQ")
_HAS_TAGS = 1
_HAS_COUNTS = 2      # per-example feature counts that differ from the row lengths (feature expansion)


def _header_bytes(options: dict) -> bytes:
    head = json.dumps(options, sort_keys=True).encode()
    return MAGIC + struct.pack("<II", VERSION, len(head)) + head


class CacheWriter:
    """Appends parsed blocks; ``commit`` renames the finished file into place."""

    def __init__(self, path: str, options: dict):
        self.path = path
        directory = os.path.dirname(os.path.abspath(path))
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".cache", dir=directory)
        except OSError as exc:
            raise InputError(f"cannot write cache {path}: {exc.strerror or exc}") from None
        self.f = os.fdopen(fd, "wb")
        self.f.write(_header_bytes(options))

    def write(self, b: ParsedBlock) -> None:
        n = b.n
        has_tags = b.has_tags()
        if has_tags:
            tags = b.tag_list()
            lengths = np.fromiter((len(t) for t in tags), dtype=np.int64, count=n)
            tag_e = np.cumsum(lengths)
            tag_s = tag_e - lengths
            tag_bytes = b"".join(tags)
        else:
            tag_bytes = b""
        f = self.f
        flags = (_HAS_TAGS if has_tags else 0) | (_HAS_COUNTS if b.counts is not None else 0)
        f.write(_BLOCK.pack(n, b.idx.shape[0], len(tag_bytes), flags))
        for a in (b.labels, b.weights, b.bases, b.lines, b.indptr, b.idx, b.val):
            f.write(np.ascontiguousarray(a).tobytes())
        if b.counts is not None:
            f.write(np.ascontiguousarray(b.counts, np.int64).tobytes())
        if has_tags:
            f.write(tag_s.tobytes())
            f.write(tag_e.tobytes())
            f.write(tag_bytes)

    def commit(self) -> None:
        self.f.close()
        os.replace(self.tmp, self.path)

    def discard(self) -> None:
        try:
            self.f.close()
        finally:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass


def cache_matches(path: str, options: dict) -> bool:
    """True when ``path`` is a complete cache built with ``options``."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
            if len(head) < 16 or head[:8] != MAGIC:
                return False
            version, hlen = struct.unpack("<II", head[8:16])
            if version != VERSION:
                return False
            return json.loads(f.read(hlen)) == json.loads(json.dumps(options, sort_keys=True))
    except (OSError, ValueError):
        return False


def _read_into(f, a: np.ndarray, path: str) -> None:
    if a.nbytes and f.readinto(memoryview(a).cast("B")) != a.nbytes:
        raise InputError(f"cache file {path} is truncated; delete it or use --kill-cache")


#: bytes per example and per feature of a block's arrays, as ``read_cache`` reads them (labels,
#: weights, bases, lines; indptr has one more entry; idx and val per feature)
_PER_EXAMPLE = 3 * 8 + 8
_PER_FEATURE = 4 + 4


def _skipped_bytes(n: int, nf: int, ntag: int, flags: int) -> int:
    """The bytes of a block's arrays after its record (the layout ``CacheWriter.write`` writes)."""
    size = n * _PER_EXAMPLE + (n + 1) * 8 + nf * _PER_FEATURE
    if flags & _HAS_COUNTS:
        size += n * 8
    if flags & _HAS_TAGS:
        size += n * 16 + ntag
    return size


def read_cache(path: str, source_name: str, start: int = 0, stop: int | None = None):
    """Yield the ParsedBlocks stored in a cache file (read into a ring of reusable arrays, with the
    same lifetime rule as text blocks: streamlearn.io.reader).

    ``start``/``stop``: only examples ``start`` .. ``stop - 1`` of the cache (a Dask period's window,
    ``streamlearn.io.blocks.window``); blocks wholly before ``start`` are skipped without being read,
    and reading ends at ``stop``."""
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read cache {path}: {exc.strerror or exc}") from None
    outputs = [Outputs() for _ in range(RING)]
    tag_bufs = [np.empty(0, np.uint8) for _ in range(RING)]
    count_bufs = [np.empty(0, np.int64) for _ in range(RING)]
    k = 0
    pos = 0     # the examples before the block read next
    with f:
        head = f.read(16)
        _, hlen = struct.unpack("<II", head[8:16])
        f.seek(16 + hlen)
        while True:
            rec = f.read(_BLOCK.size)
            if not rec:
                return
            if len(rec) < _BLOCK.size:
                raise InputError(f"cache file {path} is truncated; delete it or use --kill-cache")
            n, nf, ntag, flags = _BLOCK.unpack(rec)
            out = outputs[k % RING]
            if stop is not None and pos >= stop:
                return
            if pos + n <= start:        # wholly before the window
                pos += n
                f.seek(_skipped_bytes(n, nf, ntag, flags), os.SEEK_CUR)
                continue
            out.reserve(n, nf)
            for a in (out.labels[:n], out.weights[:n], out.bases[:n], out.lines[:n], out.indptr[:n + 1],
                      out.idx[:nf], out.val[:nf]):
                _read_into(f, a, path)
            counts = None
            if flags & _HAS_COUNTS:
                if count_bufs[k % RING].size < n:
                    count_bufs[k % RING] = np.empty(max(n, 2 * count_bufs[k % RING].size), np.int64)
                counts = count_bufs[k % RING][:n]
                _read_into(f, counts, path)
            tag_buf = tag_bufs[k % RING]
            if flags & _HAS_TAGS:
                _read_into(f, out.tag_s[:n], path)
                _read_into(f, out.tag_e[:n], path)
                if tag_buf.size < ntag:
                    tag_buf = tag_bufs[k % RING] = np.empty(ntag, np.uint8)
                _read_into(f, tag_buf[:ntag], path)
            else:
                out.tag_s[:n] = 0
                out.tag_e[:n] = 0
            k += 1
            block = out.block(source_name, n, nf, 0, tag_buf)
            block.counts = counts
            a = max(start - pos, 0)
            b = n if stop is None else min(stop - pos, n)
            pos += n
            yield block if (a == 0 and b == n) else sub_block(block, a, b)


def cache_examples(path: str) -> int:
    """The number of examples in a complete cache file (its block records; the arrays are skipped)."""
    total = 0
    with open(path, "rb") as f:
        head = f.read(16)
        _, hlen = struct.unpack("<II", head[8:16])
        f.seek(16 + hlen)
        while True:
            rec = f.read(_BLOCK.size)
            if len(rec) < _BLOCK.size:
                return total
            n, nf, ntag, flags = _BLOCK.unpack(rec)
            total += n
            f.seek(_skipped_bytes(n, nf, ntag, flags), os.SEEK_CUR)
