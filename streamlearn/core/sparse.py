"""The sparse weight store (issue 30, VW's ``--sparse_weights``): a weight table whose memory grows
with the features a run touches, whatever ``-b`` is (up to 32).

The kernels never see a hash index in this mode. Before a block reaches its kernel, an open-addressing
hash map (``map_rows``: keys the weight slots of the masked feature indices, values row numbers,
side by side; linear probing, load at most 1/2, grown by rehashing between calls, the slots of the
next entries prefetched) replaces each index of the block
by a row of the table, handing out new rows in order (0, 1, 2, ...) to the keys it has not seen;
``key_of_row`` maps rows back. Since rows are handed out in order, the table stays one lazily committed
anonymous map of a *capacity* of rows (only the pages of the rows in use become resident; it never
moves), and the kernels are unchanged. With W weights per feature (one-against-all's class width) the
key is the feature's first slot ``(idx * W) & (2^b - 1)`` and its row r holds table rows r*W .. r*W+W-1,
as a dense table's slots key .. key+W-1.

A model file keeps the dense slots (``SparseStore.slots_of``), so a sparse run's model is the dense
run's when no two features collide in either; ``-i`` maps its slots to rows (``SparseStore.table_rows_of_slots``).
"""

from __future__ import annotations

import mmap
import os

import numpy as np
from numba import njit

from streamlearn.core.prefetch import prefetch_row
from streamlearn.errors import OptionError

EMPTY = -1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)     # Fibonacci hashing: 2^64 / golden ratio, odd
MAP_NORESERVE = 0x4000                      # Linux: no swap reservation for the store's capacity
#: the smallest hash map (slots); it doubles when more than half full
MIN_SLOTS = 1 << 12
#: the automatic switch: a dense table needing more than this share of the machine's memory is sparse
AUTO_SHARE = 0.5


@njit(cache=True, nogil=True, inline="always")
def _shift(cap):
    """64 - log2(cap) for a power of two ``cap``: the shift taking a 64-bit product to a slot."""
    b = 0
    while (np.int64(1) << b) < cap:
        b += 1
    return np.uint64(64 - b)


#: entries ahead whose map slot is prefetched (the lookups of a block are independent: their cache misses overlap)
AHEAD = 32


@njit(cache=True, nogil=True, inline="always")
def _home(key, shift):
    return np.int64((np.uint64(key) * _GOLDEN) >> shift)


@njit(cache=True, nogil=True)
def map_rows(ent, key_of_row, used, idx, out, start, W, dmask, insert, spare):
    """Rows of the keys ``(idx[j] * W) & dmask`` for j from ``start`` into ``out[j]``: a key seen
    before gets its row; a new key gets the next row (``used[0]``, then counted) when ``insert``,
    else ``spare`` (a row that stays zero). The map ``ent`` is (capacity, 2): a key (EMPTY for none)
    and its row side by side, so that a lookup misses the cache once; its capacity is a power of
    two. Stops before inserting into a map already half full and returns the position to resume from
    after growing it (``SparseStore._grow``); returns len(idx) when done."""
    cap = ent.shape[0]
    cmask = cap - 1
    shift = _shift(cap)
    limit = cap >> 1
    n = used[0]
    m = idx.shape[0]
    for j in range(start, min(m, start + AHEAD)):
        prefetch_row(ent, _home((np.int64(idx[j]) * W) & dmask, shift))
    for j in range(start, m):
        if j + AHEAD < m:
            prefetch_row(ent, _home((np.int64(idx[j + AHEAD]) * W) & dmask, shift))
        key = (np.int64(idx[j]) * W) & dmask
        pos = _home(key, shift)
        while True:
            k = ent[pos, 0]
            if k == key:
                out[j] = ent[pos, 1]
                break
            if k == EMPTY:
                if not insert:
                    out[j] = spare
                    break
                if n >= limit:
                    used[0] = n
                    return j
                ent[pos, 0] = key
                ent[pos, 1] = n
                key_of_row[n] = key
                out[j] = n
                n += 1
                break
            pos = (pos + 1) & cmask
    used[0] = n
    return m


@njit(cache=True, nogil=True)
def rehash(key_of_row, n, ent):
    """Fill the empty map ``ent`` with the rows 0..n-1 of ``key_of_row``."""
    cmask = ent.shape[0] - 1
    shift = _shift(ent.shape[0])
    for r in range(n):
        key = key_of_row[r]
        pos = _home(key, shift)
        while ent[pos, 0] != EMPTY:
            pos = (pos + 1) & cmask
        ent[pos, 0] = key
        ent[pos, 1] = r


def machine_memory() -> int | None:
    """The machine's physical memory in bytes, None when the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def dense_bytes(bits: int, columns: int, itemsize: int = 8) -> int:
    return (1 << bits) * columns * itemsize


def wants_sparse(bits: int, columns: int, itemsize: int = 8) -> bool:
    """The automatic switch: the dense table of -b ``bits`` would take more than AUTO_SHARE of memory."""
    total = machine_memory()
    return total is not None and dense_bytes(bits, columns, itemsize) > AUTO_SHARE * total


def capacity_rows(bits: int, width: int, columns: int, itemsize: int = 8) -> int:
    """The store's capacity in features: 2^bits / width, at most the largest power of two whose rows
    fit in the machine's memory."""
    rows = (1 << bits) // width
    total = machine_memory()
    if total is not None:
        while rows > 1 and rows * width * columns * itemsize > total:
            rows >>= 1
    return rows


def reserve_table(rows: int, columns: int, dtype="float64") -> np.ndarray:
    """A zeroed (rows, columns) table of ``dtype`` in an anonymous map without reservation: only the
    pages written become resident."""
    need = rows * columns * np.dtype(dtype).itemsize
    try:
        buf = mmap.mmap(-1, need, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE)
    except (OSError, MemoryError, OverflowError):
        raise OptionError(f"--sparse_weights could not reserve {need / 2**30:.1f} GiB of address space "
                          f"for the weight table") from None
    return np.frombuffer(buf, dtype=dtype).reshape(rows, columns)


class SparseStore:
    """The map of a sparse run: dense slots (of -b ``bits``, ``width`` per feature) -> feature rows of a
    table of ``capacity`` features."""

    def __init__(self, bits: int, width: int, capacity: int):
        self.bits, self.width, self.capacity = bits, width, capacity
        self.dmask = np.int64((1 << bits) - 1)
        self.ent = np.full((MIN_SLOTS, 2), EMPTY, np.int64)
        self.key_of_row = np.zeros(MIN_SLOTS // 2, np.int64)
        self.used = np.zeros(1, np.int64)
        self._out = np.empty(0, np.uint32)

    @property
    def n_rows(self) -> int:
        """Features (table rows of ``width`` slots) in use."""
        return int(self.used[0])

    def _full(self) -> OptionError:
        return OptionError(f"--sparse_weights: the weight store is full ({self.capacity} features, what "
                           f"fits in this machine's memory); use a smaller -b or fewer features")

    def _grow(self) -> None:
        if self.n_rows >= self.capacity:
            raise self._full()
        cap = self.ent.shape[0] * 2
        ent = np.full((cap, 2), EMPTY, np.int64)
        rehash(self.key_of_row, self.n_rows, ent)
        keys = np.zeros(cap // 2, np.int64)
        keys[:self.n_rows] = self.key_of_row[:self.n_rows]
        self.ent, self.key_of_row = ent, keys

    def rows(self, idx: np.ndarray, insert: bool = True, out: np.ndarray | None = None,
             width: int | None = None) -> np.ndarray:
        """The feature rows of the masked feature indices ``idx`` (uint32 by default: what the kernels
        take), new features inserted (``insert``) or mapped to ``self.capacity - 1``, a row left zero
        (a predictor's; see ``RunState.predictor``)."""
        if out is None:
            if self._out.shape[0] < idx.shape[0]:
                self._out = np.empty(max(idx.shape[0], 2 * self._out.shape[0]), np.uint32)
            out = self._out[:idx.shape[0]]
        W = self.width if width is None else width
        pos = 0
        while True:
            pos = map_rows(self.ent, self.key_of_row, self.used, idx, out, pos,
                           np.int64(W), self.dmask, insert, self.capacity - 1)
            if pos >= idx.shape[0]:
                break
            self._grow()
        if self.n_rows > self.capacity - (0 if insert else 1):
            raise self._full()
        return out

    def table_rows_of_slots(self, slots: np.ndarray, insert: bool = True) -> np.ndarray:
        """Table rows (int64) of dense weight slots (a model file's index): the slot's feature row
        times ``width`` plus its offset in the feature."""
        slots = np.asarray(slots, np.int64)
        W = self.width
        feats = self.rows(slots // W, insert=insert, out=np.empty(slots.shape[0], np.int64), width=W)
        return feats * W + slots % W

    def slots_of(self, rows: np.ndarray) -> np.ndarray:
        """Dense weight slots (int64) of table rows."""
        rows = np.asarray(rows, np.int64)
        W = self.width
        return self.key_of_row[rows // W] + rows % W

    def in_use(self, table: np.ndarray) -> np.ndarray:
        """The table's rows of the features in use (a view)."""
        return table[:self.n_rows * self.width]


#: learners whose weights the sparse store cannot hold: the batch ones keep arrays of their own
#: (``LearnerSpec.batch``), and these online ones count every one of the 2^b slots (eg's normalizer:
#: its table's length); tests/learners/test_sparse_weights.py checks every other online learner
REFUSED_LEARNERS = ("eg",)


def refusal(cfg, spec, refused) -> str | None:
    """Why a run of ``cfg`` (learner ``spec``) cannot use the sparse store, or None; ``refused``:
    (config field, flag) of the options the store does not take (``config.SPARSE_REFUSED``, from the
    options' declarations)."""
    if spec.batch or spec.name in REFUSED_LEARNERS:
        return f"--algo {spec.name}"
    for name, flag in refused:
        if getattr(cfg, name, None):
            return flag
    return None
