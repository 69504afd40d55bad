"""Cache of parsed blocks, so that passes after the first read examples without parsing text again.

A cache is written during the first pass (to a temporary name, renamed when the pass completes, so an
interrupted run never leaves a partial cache behind) and holds the hashing options it was built with;
a cache built with other hashing options (or by another version) is rebuilt.

Layout (version 4; integers little-endian):

* header: MAGIC, version (u32), length of the JSON options (u32), the JSON options, and the CRC-32
  (``zlib.crc32``) of all the header's bytes before it (u32);
* per block a 48-byte record -- examples ``n``, features ``nf``, tag bytes ``ntag``, flags (u64 each),
  the CRC-32 of those 32 bytes, and the CRC-32 of those 32 bytes followed by the block's arrays (u32
  each, then 8 zero bytes) -- then the raw arrays: labels, weights, bases, lines, indptr, idx, val
  [, counts] [, tag starts, tag ends, tag bytes];
* an end record: flags ``_END``, ``n`` the examples of the whole cache, ``nf`` its blocks (so that a
  cache cut at a block boundary is not taken for a complete one), and nothing after it.

Whatever is read back is checked before any compiled code sees it: the record's checksum and its
sizes against the rest of the file (before anything is allocated), the block's checksum, then its
structure even when the checksum matches (a crafted file can carry valid checksums): ``indptr``
starts at 0, never decreases and ends at ``nf``; every feature index is below the table size 2^bits
(the kernels index the weight table with it: one-against-all masks ``idx * W`` again); tag spans lie
within the tag bytes; labels are finite or NaN (none), weights finite and >= 0, bases finite, line
numbers >= 1 and increasing, counts >= 0. A failed check raises ``CacheCorrupt`` (an InputError)
naming the file and the block. ``verify_cache`` runs every check over a whole file.
"""

from __future__ import annotations

import io
import json
import os
import stat
import struct
import zlib

import numpy as np
from numba import njit

from streamlearn.errors import InputError
from streamlearn.io.atomic import OutputFile
from streamlearn.io.atomic import _kind as file_kind    # what a non-regular file is, for messages
from streamlearn.io.blocks import Outputs, ParsedBlock, sub_block
from streamlearn.io.reader import RING

MAGIC = b"SLCACHE\x00"
VERSION = 4
_HEAD = struct.Struct("<II")            # version, length of the JSON options
_CRC = struct.Struct("<I")
_RECORD = struct.Struct("<QQQQ")        # n, nf, ntag, flags
_BLOCK = struct.Struct("<QQQQIIQ")      # the record, its CRC, the block's CRC, zero padding
_HAS_TAGS = 1
_HAS_COUNTS = 2      # per-example feature counts that differ from the row lengths (feature expansion)
_END = 4             # the end record
_KNOWN_FLAGS = _HAS_TAGS | _HAS_COUNTS | _END
#: the dtypes of a block's arrays as stored: labels, weights, bases, lines, indptr, idx, val
_DTYPES = (np.float64, np.float64, np.float64, np.int64, np.int64, np.uint32, np.float32)
#: the largest header we read (a crafted length must not make us allocate more)
_MAX_HEADER = 1 << 24


class CacheCorrupt(InputError):
    """A cache file that fails a check. ``detail`` says where and why ("block 3 at byte 4096: ...");
    ``path`` is the file. The message is one line."""

    def __init__(self, path: str, detail: str):
        self.path = path
        self.detail = detail
        super().__init__(f"cache file {path} is corrupt ({detail}); delete it or use --kill-cache")


class NotACache(InputError):
    """An existing file that is not a streamlearn cache (no magic): never overwritten unasked."""


def _header_bytes(options: dict) -> bytes:
    head = json.dumps(options, sort_keys=True).encode()
    raw = MAGIC + _HEAD.pack(VERSION, len(head)) + head
    return raw + _CRC.pack(zlib.crc32(raw))


def _record(n: int, nf: int, ntag: int, flags: int, arrays=()) -> bytes:
    """A block's record, with its CRC and the CRC of the record followed by ``arrays`` (bytes-like)."""
    rec = _RECORD.pack(n, nf, ntag, flags)
    rcrc = zlib.crc32(rec)
    crc = rcrc
    for a in arrays:
        crc = zlib.crc32(a, crc)
    return rec + struct.pack("<IIQ", rcrc, crc, 0)


class CacheWriter:
    """Appends parsed blocks; ``commit`` renames the finished file into place."""

    examples = 0    # examples and blocks written so far (counted in the end record)
    blocks = 0

    def __init__(self, path: str, options: dict):
        self.path = path
        # a temporary ".<name>.<pid>.<random>.cache" beside the target, renamed over it by commit; a
        # device or FIFO is refused (a cache is read back); OS errors are one line naming the path
        self.f = OutputFile(path, "cache", InputError, suffix=".cache", special=False)
        self.f.write(_header_bytes(options))

    def write(self, b: ParsedBlock) -> None:
        n = b.n
        has_tags = b.has_tags()
        arrays = [np.ascontiguousarray(a, t) for a, t in zip(
            (b.labels, b.weights, b.bases, b.lines, b.indptr, b.idx, b.val), _DTYPES)]
        if b.counts is not None:
            arrays.append(np.ascontiguousarray(b.counts, np.int64))
        ntag = 0
        if has_tags:
            tags = b.tag_list()
            lengths = np.fromiter((len(t) for t in tags), dtype=np.int64, count=n)
            tag_e = np.cumsum(lengths)
            tag_s = tag_e - lengths
            tag_bytes = b"".join(tags)
            ntag = len(tag_bytes)
            arrays += [tag_s, tag_e, tag_bytes]
        flags = (_HAS_TAGS if has_tags else 0) | (_HAS_COUNTS if b.counts is not None else 0)
        views = [a if isinstance(a, bytes) else memoryview(a).cast("B") for a in arrays]
        f = self.f
        f.write(_record(n, b.idx.shape[0], ntag, flags, views))
        for v in views:
            f.write(v)
        self.examples += n
        self.blocks += 1

    def _write_end(self) -> None:
        """The end record: the examples and blocks of the whole cache."""
        self.f.write(_record(self.examples, self.blocks, 0, _END))

    def commit(self) -> None:
        self._write_end()
        self.f.commit()

    def discard(self) -> None:
        self.f.discard()


def _not_regular(path, mode: int) -> InputError:
    return InputError(f"cache file {path} is {file_kind(mode)}, not a regular file; give --cache-file a file path")


def _open(path):
    """The cache file opened for reading, and its size. A path that is not a regular file (a FIFO,
    a device, a socket, a directory) is refused without waiting for a writer. ``path`` may also be
    the bytes of a cache (tests, fuzzing)."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        data = bytes(path)
        return io.BytesIO(data), len(data)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _read_error(path, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def check_cache_path(path: str) -> bool:
    """For a ``--cache-file`` at start-up: False when nothing is there yet; True for a regular file
    (through symbolic links); InputError (one line) for anything else, which is neither read nor
    replaced."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputError(f"cannot use cache file {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    return True


def _read_header(f, size: int, path: str):
    """(options, version) of an open cache file, its position left at the first block record.
    Raises NotACache without the magic, CacheCorrupt for a damaged header of this version; another
    version's header is returned unchecked (with its version) and must not be read further."""
    head = f.read(16)
    if len(head) < 8 and MAGIC.startswith(head):
        raise CacheCorrupt(path, "header: the file ends inside it")
    if head[:8] != MAGIC:
        raise NotACache(f"{path} exists and is not a streamlearn cache; name another --cache-file, "
                        f"or give --kill-cache to overwrite it")
    if len(head) < 16:
        raise CacheCorrupt(path, "header: the file ends inside it")
    version, hlen = _HEAD.unpack(head[8:16])
    if version != VERSION:
        return None, version
    if hlen > min(_MAX_HEADER, size - 16 - _CRC.size):
        raise CacheCorrupt(path, f"header: its length {hlen} exceeds the file")
    body = f.read(hlen)
    crc = f.read(_CRC.size)
    if len(body) < hlen or len(crc) < _CRC.size:
        raise CacheCorrupt(path, "header: the file ends inside it")
    if _CRC.unpack(crc)[0] != zlib.crc32(body, zlib.crc32(head)):
        raise CacheCorrupt(path, "header: checksum mismatch")
    try:
        options = json.loads(body)
    except ValueError:
        options = None
    if not isinstance(options, dict):
        raise CacheCorrupt(path, "header: the options are not a JSON object")
    bits = options.get("bits")
    if type(bits) is not int or not 1 <= bits <= 32:
        raise CacheCorrupt(path, f"header: bits {bits!r} is not an integer from 1 to 32")
    return options, version


def cache_status(path: str, options: dict) -> str:
    """What an existing cache file is, from its header alone: "match" (this version, these options),
    "other" (another version or other options: rebuilt), "empty" (a file of no bytes). Raises
    NotACache (not a cache at all), CacheCorrupt (a damaged header) or InputError (unreadable,
    not a regular file)."""
    f, size = _open(path)
    with f:
        if size == 0:
            return "empty"
        try:
            found, version = _read_header(f, size, path)
        except OSError as exc:
            raise _read_error(path, exc) from None
    if version != VERSION:
        return "other"
    return "match" if found == json.loads(json.dumps(options, sort_keys=True)) else "other"


def cache_matches(path: str, options: dict) -> bool:
    """True when ``path`` has the header of a cache built with ``options`` by this version (its
    blocks are checked as they are read: ``verify_cache``, ``read_cache``)."""
    try:
        return cache_status(path, options) == "match"
    except InputError:
        return False


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


# reasons of _check_block's codes
_REASONS = {
    1: "indptr does not start at 0",
    2: "indptr decreases at example {}",
    3: "indptr does not end at the block's feature count",
    4: "feature index out of range at feature {}",
    5: "label of example {} is infinite",
    6: "importance weight of example {} is negative or not finite",
    7: "base of example {} is not finite",
    8: "line number of example {} is not after the one before",
    9: "feature count of example {} is negative",
    10: "tag of example {} lies outside the tag bytes",
    11: "value of feature {} is not finite",
}


@njit(cache=True, nogil=True)
def _check_block(labels, weights, bases, lines, indptr, idx, val, nf, limit, counts, has_counts, tag_s,
                 tag_e, ntag, has_tags):
    """(0, 0) when a block read from a cache is well-formed (module docstring), else (code, where)."""
    n = labels.shape[0]
    if indptr[0] != 0:
        return 1, 0
    for e in range(n):
        if indptr[e + 1] < indptr[e]:
            return 2, e
    if indptr[n] != nf:
        return 3, n
    top = np.uint32(0)
    for k in range(nf):
        top = max(top, idx[k])
    if top > limit:
        for k in range(nf):
            if idx[k] > limit:
                return 4, k
    inf = np.inf
    for k in range(nf):
        v = val[k]
        if not (v > -inf and v < inf):
            return 11, k
    for e in range(n):
        y = labels[e]
        if y == inf or y == -inf:
            return 5, e
        w = weights[e]
        if not (w >= 0.0 and w < inf):
            return 6, e
        b = bases[e]
        if not (b > -inf and b < inf):
            return 7, e
        if lines[e] < 1 or (e > 0 and lines[e] <= lines[e - 1]):
            return 8, e
        if has_counts and counts[e] < 0:
            return 9, e
        if has_tags and not (0 <= tag_s[e] and tag_s[e] <= tag_e[e] and tag_e[e] <= ntag):
            return 10, e
    return 0, 0


class _Blocks:
    """Reads a cache file's records and blocks in order, checking each (module docstring)."""

    def __init__(self, path, bits: int | None):
        self.f, self.size = _open(path)
        self.path = path = "<bytes>" if isinstance(path, (bytes, bytearray, memoryview)) else os.fspath(path)
        try:
            if self.size == 0:
                raise CacheCorrupt(path, "the file is empty")
            options, version = _read_header(self.f, self.size, path)
            if version != VERSION:
                raise CacheCorrupt(path, f"header: version {version}, not {VERSION}")
            if bits is not None and options["bits"] != bits:
                raise CacheCorrupt(path, f"header: built with -b {options['bits']}, this run uses -b {bits}")
        except OSError as exc:
            self.f.close()
            raise _read_error(self.path, exc) from None
        except BaseException:
            self.f.close()
            raise
        self.options = options
        self.limit = (1 << options["bits"]) - 1
        self.k = 0          # blocks read
        self.examples = 0   # examples in them
        self.at = 0         # the byte offset of the current record
        self.ended = False  # the end record was read (and checked)

    def corrupt(self, reason: str) -> CacheCorrupt:
        return CacheCorrupt(self.path, f"block {self.k + 1} at byte {self.at}: {reason}")

    def record(self):
        """(n, nf, ntag, flags, record crc, block crc) of the next block, checked (the record's CRC is
        the seed of the block's); None at a valid end record."""
        f = self.f
        self.at = f.tell()
        raw = f.read(_BLOCK.size)
        if len(raw) < _BLOCK.size:
            raise self.corrupt("the file ends " + ("before the end record" if not raw else "inside the record"))
        n, nf, ntag, flags, rcrc, crc, pad = _BLOCK.unpack(raw)
        if rcrc != zlib.crc32(raw[:_RECORD.size]) or pad != 0:
            raise self.corrupt("record checksum mismatch")
        if flags & ~_KNOWN_FLAGS:
            raise self.corrupt(f"unknown flags {flags:#x}")
        if flags & _END:
            if flags != _END or ntag != 0 or crc != rcrc:
                raise self.corrupt("malformed end record")
            if n != self.examples or nf != self.k:
                raise self.corrupt(f"the end record counts {n} examples in {nf} blocks, the file has "
                                   f"{self.examples} in {self.k}")
            if f.tell() != self.size:
                raise self.corrupt(f"{self.size - f.tell()} bytes after the end record")
            self.ended = True
            return None
        if not flags & _HAS_TAGS and ntag:
            raise self.corrupt("tag bytes without the tag flag")
        rest = self.size - f.tell()
        if _skipped_bytes(n, nf, ntag, flags) > rest:
            raise self.corrupt(f"its sizes ({n} examples, {nf} features, {ntag} tag bytes) exceed the "
                               f"{rest} bytes left in the file")
        return n, nf, ntag, flags, rcrc, crc

    def skip(self, n, nf, ntag, flags) -> None:
        self.f.seek(_skipped_bytes(n, nf, ntag, flags), os.SEEK_CUR)
        self.k += 1
        self.examples += n

    def skip_rest(self) -> int:
        """Check the records not read yet, to the end record (their arrays skipped); returns the
        examples of the whole cache."""
        while not self.ended:
            rec = self.record()
            if rec is not None:
                self.skip(*rec[:4])
        return self.examples

    def close(self) -> None:
        self.f.close()


def _read_into(f, a: np.ndarray, crc: int, blocks: _Blocks) -> int:
    """Fill ``a`` from the file; the CRC chained over its bytes."""
    if not a.nbytes:
        return crc
    view = memoryview(a).cast("B")
    if f.readinto(view) != a.nbytes:
        raise blocks.corrupt("the file ends inside the block")
    return zlib.crc32(view, crc)


def read_cache(path: str, source_name: str, start: int = 0, stop: int | None = None, bits: int | None = None):
    """Yield the ParsedBlocks stored in a cache file (read into a ring of reusable arrays, with the
    same lifetime rule as text blocks: streamlearn.io.reader), each checked before it is yielded
    (module docstring; ``bits``: the -b of the run, which the cache must have been built with;
    None: the cache's own). A check that fails raises CacheCorrupt naming the file and the block.

    ``start``/``stop``: only examples ``start`` .. ``stop - 1`` of the cache (a Dask period's window,
    ``streamlearn.io.blocks.window``); blocks wholly before ``start`` are skipped without being read
    (their records are checked), and reading ends at ``stop``."""
    blocks = _Blocks(path, bits)
    return _read_blocks(blocks, source_name, start, stop)


def _read_blocks(blocks: _Blocks, source_name: str, start: int, stop: int | None):
    try:
        with blocks.f:
            yield from _checked_blocks(blocks, source_name, start, stop)
    except OSError as exc:      # an I/O error of the device: one line too
        raise _read_error(blocks.path, exc) from None


def _read_error(path, exc: OSError) -> InputError:
    return InputError(f"cannot read cache {path}: {exc.strerror or exc}")


def _checked_blocks(blocks: _Blocks, source_name: str, start: int, stop: int | None):
    outputs = [Outputs() for _ in range(RING)]
    tag_bufs = [np.empty(0, np.uint8) for _ in range(RING)]
    count_bufs = [np.empty(0, np.int64) for _ in range(RING)]
    no_counts = np.empty(0, np.int64)
    f = blocks.f
    limit = np.uint32(blocks.limit)
    while True:
        if stop is not None and blocks.examples >= stop:
            return
        rec = blocks.record()
        if rec is None:
            return
        n, nf, ntag, flags, crc, want = rec     # crc: the record's, checked, chained over the arrays
        pos = blocks.examples
        if pos + n <= start:        # wholly before the window
            blocks.skip(n, nf, ntag, flags)
            continue
        slot = blocks.k % RING
        out = outputs[slot]
        out.reserve(n, nf)
        for a in (out.labels[:n], out.weights[:n], out.bases[:n], out.lines[:n], out.indptr[:n + 1],
                  out.idx[:nf], out.val[:nf]):
            crc = _read_into(f, a, crc, blocks)
        counts = None
        if flags & _HAS_COUNTS:
            if count_bufs[slot].size < n:
                count_bufs[slot] = np.empty(max(n, 2 * count_bufs[slot].size), np.int64)
            counts = count_bufs[slot][:n]
            crc = _read_into(f, counts, crc, blocks)
        tag_buf = tag_bufs[slot]
        if flags & _HAS_TAGS:
            crc = _read_into(f, out.tag_s[:n], crc, blocks)
            crc = _read_into(f, out.tag_e[:n], crc, blocks)
            if tag_buf.size < ntag:
                tag_buf = tag_bufs[slot] = np.empty(ntag, np.uint8)
            crc = _read_into(f, tag_buf[:ntag], crc, blocks)
        else:
            out.tag_s[:n] = 0
            out.tag_e[:n] = 0
        if crc != want:
            raise blocks.corrupt("checksum mismatch")
        code, where = _check_block(out.labels[:n], out.weights[:n], out.bases[:n], out.lines[:n],
                                   out.indptr[:n + 1], out.idx[:nf], out.val[:nf], nf, limit,
                                   no_counts if counts is None else counts, counts is not None,
                                   out.tag_s[:n], out.tag_e[:n], ntag, bool(flags & _HAS_TAGS))
        if code:
            raise blocks.corrupt(_REASONS[code].format(where))
        blocks.k += 1
        blocks.examples += n
        block = out.block(source_name, n, nf, 0, tag_buf)
        block.counts = counts
        a = max(start - pos, 0)
        b = n if stop is None else min(stop - pos, n)
        yield block if (a == 0 and b == n) else sub_block(block, a, b)


def verify_cache(path: str, bits: int | None = None, start: int = 0, stop: int | None = None) -> int:
    """Check a whole cache file as ``read_cache`` checks what it reads (every record, checksum and
    block; with ``start``/``stop`` the blocks outside that window of examples only by their records)
    without using it. Returns the number of examples checked; raises CacheCorrupt (an InputError:
    one line naming the file and the block), NotACache or InputError. Never a signal, whatever the
    bytes: for fuzzing too."""
    blocks = _Blocks(path, bits)
    total = 0
    try:
        for block in _checked_blocks(blocks, "cache", start, stop):
            total += block.n
        blocks.skip_rest()      # the records after the window, to the end record
    except OSError as exc:
        raise _read_error(blocks.path, exc) from None
    finally:
        blocks.close()
    return total


def cache_examples(path: str) -> int:
    """The number of examples in a complete cache file (its block records, checked; the arrays are
    skipped)."""
    blocks = _Blocks(path, None)
    try:
        return blocks.skip_rest()
    except OSError as exc:
        raise _read_error(blocks.path, exc) from None
    finally:
        blocks.close()
