"""Input sources and line-aligned byte blocks.

A source is stdin ("-") or a file; ``.gz``, ``.bz2`` and ``.xz`` files are decompressed by extension.
``read_blocks`` reads about ``block_size`` bytes at a time into a small ring of reusable buffers and
yields blocks that end at a newline (a line longer than the block makes one larger block), with the
position of every line end and the 1-based number of the first line. Memory therefore stays bounded
(ring size x block size) whatever the length of the stream, and no page is allocated per block.

A yielded block stays valid until the ring comes round to its buffer again: the consumer must be done
with block k before block k + ``ring`` is read. With ``threads`` parse threads (streamlearn.run.stream) at
most threads + 1 blocks are alive at once: the consumer's block k, the threads - 1 after it (parsed or being
parsed), and block k + threads being read (the producer reads it while the consumer holds
block k, and reads no further until the consumer asks for the next block). ``ring_size(threads)`` =
threads + 2 keeps one slot spare, as ``RING`` = 3 does for one parse thread.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import stat
import sys
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import numpy as np

from streamlearn.errors import InputError

DEFAULT_BLOCK_SIZE = 1 << 18
RING = 3


def ring_size(threads: int) -> int:
    """Buffers of a ring fed to ``threads`` parse threads: the threads + 1 blocks alive at once (see
    the module's lifetime rule) and one spare."""
    return threads + 2


@dataclass(frozen=True)
class Source:
    """Where examples come from: ``path`` is a file name or "-" for stdin. ``start``/``end``: only the
    bytes start .. end - 1 of a plain (uncompressed) file, a line-aligned byte range (a Dask shard,
    ``streamlearn.dask.split_ranges``); its lines keep their numbers in the whole file (``line``: the
    number of the line at ``start``, if the caller knows it)."""

    path: str
    start: int = 0
    end: int | None = None
    line: int | None = None     # the number of the line at ``start``, when known (else counted)

    @property
    def ranged(self) -> bool:
        return self.start != 0 or self.end is not None

    @property
    def name(self) -> str:
        return "stdin" if self.path == "-" else self.path


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, EOFError):
        return "compressed data ends early (truncated file?)"
    text = str(exc) or exc.__class__.__name__
    return text.rstrip(".")


def open_source(source: Source) -> BinaryIO:
    """Open a source for binary reading, decompressing by extension."""
    if source.path == "-":
        return sys.stdin.buffer
    path = source.path
    if os.path.isdir(path):
        raise InputError(f"cannot read {path}: it is a directory")
    try:
        lower = path.lower()
        if source.ranged and lower.endswith(COMPRESSED):
            raise InputError(f"cannot read {path} by byte range: it is compressed")
        if lower.endswith(".gz"):
            return gzip.open(path, "rb")
        if lower.endswith(".bz2"):
            return bz2.open(path, "rb")
        if lower.endswith(".xz"):
            return lzma.open(path, "rb")
        f = open(path, "rb")
        if source.ranged:
            f.seek(source.start)
            return _Range(f, (os.fstat(f.fileno()).st_size if source.end is None else source.end) - source.start)
        return f
    except OSError as exc:
        raise InputError(f"cannot read {path}: {_reason(exc)}") from None


class _Range:
    """The next ``size`` bytes of an open file (``readinto`` and ``close``: what ``read_blocks`` uses)."""

    def __init__(self, f, size: int):
        self.f = f
        self.left = max(size, 0)

    def readinto(self, view) -> int:
        n = self.f.readinto(view[:min(len(view), self.left)]) if self.left else 0
        self.left -= n
        return n

    def close(self) -> None:
        self.f.close()


def first_line(source: Source) -> int:
    """The number (1-based) of a source's first line: 1 but for a byte range, whose lines keep their
    numbers in the whole file (the newlines before ``start`` are counted)."""
    if source.line is not None:
        return source.line
    if not source.start:
        return 1
    count = 1
    with open(source.path, "rb") as f:
        left = source.start
        while left:
            chunk = f.read(min(left, 1 << 24))
            if not chunk:
                break
            count += chunk.count(b"\n")
            left -= len(chunk)
    return count


_READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError)
#: the extensions of the compressed inputs read by decompressing (never by byte range)
COMPRESSED = (".gz", ".bz2", ".xz")
_COMPRESSED_STEP = 1 << 14


class _ReadFailed(Exception):
    def __init__(self, got: int, message: str):
        self.got = got
        self.message = message


def _fill(f, view: memoryview, name: str, step: int) -> int:
    """Read until ``view`` is full or the input ends, at most ``step`` bytes per call (a failing call
    loses what it read, so compressed inputs are read in small steps); returns the bytes read."""
    got = 0
    size = len(view)
    while got < size:
        try:
            n = f.readinto(view[got:min(size, got + step)])
        except _READ_ERRORS as exc:
            raise _ReadFailed(got, f"cannot read {name}: {_reason(exc)}") from None
        if not n:
            break
        got += n
    return got


def check_readable(paths) -> None:
    """Fail before any work if a named input file cannot be opened. A FIFO or a device is not opened
    here (opening and closing a FIFO would end its writer, and the real open would then wait for
    one that never comes): it is checked with stat and access, and read once, as a stream."""
    for path in paths:
        if path == "-":
            continue
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            raise InputError(f"cannot read {path}: {_reason(exc)}") from None
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            open_source(Source(path)).close()
        elif stat.S_ISSOCK(mode):
            raise InputError(f"cannot read {path}: it is a socket")
        elif not os.access(path, os.R_OK):
            raise InputError(f"cannot read {path}: Permission denied")


def read_blocks(source: Source, block_size: int = DEFAULT_BLOCK_SIZE, ring: int = RING,
                on_error=None) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """Yield (block, line_ends, first_line): ``block`` is a uint8 view ending at a newline (or at the
    end of the input), ``line_ends`` the position of each line's end within it.

    A read error (a truncated or corrupt compressed file, an I/O error) raises InputError, or, with
    ``on_error``, calls ``on_error(message)`` (which may raise) and ends the source after its last
    complete line."""
    f = open_source(source)
    step = _COMPRESSED_STEP if source.path.lower().endswith(COMPRESSED) else block_size
    buffers = [np.empty(0, np.uint8) for _ in range(ring)]
    is_nl = np.empty(0, np.bool_)
    carry = np.empty(0, np.uint8)
    line = first_line(source)
    slot = 0
    try:
        while True:
            need = carry.size + block_size
            buf = buffers[slot]
            if buf.size < need:
                buf = buffers[slot] = np.empty(need, np.uint8)
            buf[:carry.size] = carry
            try:
                n = carry.size + _fill(f, memoryview(buf)[carry.size:need], source.name, step)
                eof = n < need
            except _ReadFailed as failed:
                if on_error is None:
                    raise InputError(failed.message) from None
                on_error(failed.message)
                n = carry.size + failed.got
                eof = True
                complete = np.flatnonzero(buf[:n] == 10)
                n = int(complete[-1]) + 1 if complete.size else 0
            view = buf[:n]
            if is_nl.size < n:
                is_nl = np.empty(n, np.bool_)
            ends = np.flatnonzero(np.equal(view, 10, out=is_nl[:n]))
            if not eof:
                if ends.size == 0:
                    # a line longer than the block: keep reading it
                    carry = view.copy()
                    continue
                last = int(ends[-1]) + 1
                carry = view[last:].copy()
                view = view[:last]
                newlines = ends.size
            else:
                carry = np.empty(0, np.uint8)
                newlines = ends.size
                if n and view[-1] != 10:
                    ends = np.append(ends, n)
                if n == 0:
                    return
            yield view, ends, line
            line += newlines
            slot = (slot + 1) % ring
            if eof:
                return
    finally:
        if f is not sys.stdin.buffer:
            f.close()
