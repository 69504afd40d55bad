"""Multi-line examples of label-dependent features (``--csoaa_ldf``, ``--wap_ldf``; VW's csoaa_ldf.cc and
shared_feature_merger.cc, vw-spec.md §1a).

A multi-line example is a run of consecutive lines ended by a blank line (or the end of its source)::

    [shared | features]          -- optional, first: features every action has too
    class:cost | features        -- one line per action (its label: one cost-sensitive cost)
    ...
    <blank line>

The parser reads every line as an example of its own (costs by ``streamlearn.io.costs``, a ``shared``
label as the one cost ``SHARED_CLASS``). ``LdfGroups`` turns those rows into groups, in one place,
before feature expansion: a group starts after a gap in the line numbers (a blank line) or at a new
source; the shared line's features but its constant are appended to each action's (VW appends them to
the action's namespaces), so interactions of a shared namespace with an action's (``-q ua``) are
formed as in VW; the shared row itself is dropped. A block it gives holds whole groups only: the rows
of a group that may go on in the next block are held back and lead that block. ``groups`` of the
result is the first row of each row's group (``streamlearn.core.multiclass.ldf_loop``); with feature
names wanted, each action's text is (its line, the shared line or None) for ``features.names``. A
shared line's faults are its group's first action's, reported with the shared line's number
(``fault_line``); the tag of each row's group head, the shared line or the first action, is kept
(``head_tags``: VW writes it with --probabilities and --csoaa_rank, and audits the first action with it).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamlearn.io.blocks import ParsedBlock
from streamlearn.io.costs import SHARED_CLASS

_EMPTY_NS = np.zeros(0, np.uint8)


@njit(cache=True, nogil=True)
def merge_shared(indptr, idx, val, ns, want_ns, rows, shared_of, drop_constant):
    """The CSR rows ``rows`` of a block, each followed by the features of its shared row
    (``shared_of``, -1: none) without that row's last feature when ``drop_constant`` (the parser ends
    every row with the constant). Returns (indptr from 0, idx, val, ns: empty unless ``want_ns``)."""
    n = rows.shape[0]
    total = 0
    for j in range(n):
        r = rows[j]
        total += indptr[r + 1] - indptr[r]
        sh = shared_of[j]
        if sh >= 0:
            m = indptr[sh + 1] - indptr[sh]
            if drop_constant and m > 0:
                m -= 1
            total += m
    out_ptr = np.zeros(n + 1, np.int64)
    out_idx = np.empty(total, idx.dtype)
    out_val = np.empty(total, val.dtype)
    out_ns = np.empty(total if want_ns else 0, np.uint8)
    k = 0
    for j in range(n):
        r = rows[j]
        for p in range(indptr[r], indptr[r + 1]):
            out_idx[k] = idx[p]
            out_val[k] = val[p]
            if want_ns:
                out_ns[k] = ns[p]
            k += 1
        sh = shared_of[j]
        if sh >= 0:
            stop = indptr[sh + 1]
            if drop_constant and stop > indptr[sh]:
                stop -= 1
            for p in range(indptr[sh], stop):
                out_idx[k] = idx[p]
                out_val[k] = val[p]
                if want_ns:
                    out_ns[k] = ns[p]
                k += 1
        out_ptr[j + 1] = k
    return out_ptr, out_idx, out_val, out_ns


def _is_shared(block: ParsedBlock) -> np.ndarray:
    """bool per row: a shared line (its one cost is SHARED_CLASS)."""
    ptr, cls, _ = block.costs
    one = np.diff(ptr) == 1
    first = np.full(block.n, np.int64(0))
    has = ptr[:-1] < ptr[-1]
    first[has] = cls[ptr[:-1][has] - ptr[0]] if cls.size else 0
    return one & (first == SHARED_CLASS)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of arange(s, s + n) for each start s and length n."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, np.int64) - offsets, lengths) + np.arange(total, dtype=np.int64)


def _tags(block: ParsedBlock, rows: np.ndarray) -> tuple:
    """(tag buffer, starts, ends) of the tags of ``rows``, packed in a buffer of their own."""
    s = block.tag_s[rows].astype(np.int64)
    lengths = np.maximum(block.tag_e[rows] - s, 0)
    ends = np.cumsum(lengths)
    return block.tag_buf[_ranges(s, lengths)].copy(), ends - lengths, ends


def _select(block: ParsedBlock, rows: np.ndarray, shared_of: np.ndarray, drop_constant: bool,
            groups: np.ndarray | None, fault_row: np.ndarray) -> ParsedBlock:
    """A new block (sharing no array with ``block``) of ``rows``, each with its shared row's features
    (``shared_of``), ``groups`` its group starts (None: none yet); ``fault_row`` maps each row of
    ``block`` to its row in the result (-1: its faults are dropped)."""
    rows = np.asarray(rows, np.int64)
    shared_of = np.asarray(shared_of, np.int64)
    want_ns = block.ns is not None
    ptr0 = block.indptr[:block.n + 1]
    indptr, idx, val, ns = merge_shared(ptr0, block.idx, block.val, block.ns if want_ns else _EMPTY_NS, want_ns,
                                        rows, shared_of, drop_constant)
    tag_buf, tag_s, ends = _tags(block, rows)
    cptr, ccls, ccost = block.costs
    counts = np.diff(cptr)[rows]
    new_ptr = np.zeros(rows.size + 1, np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    take = _ranges(cptr[rows] - cptr[0], counts)
    faults, texts, at = [], [], []
    for k, ((ex, code, s, e), text) in enumerate(zip(block.faults.tolist(), block.fault_text)):
        if fault_row[ex] >= 0:
            faults.append((int(fault_row[ex]), code, s, e))
            texts.append(text)
            at.append(int(block.lines[ex] if block.fault_line is None else block.fault_line[k]))
    fault_arr = np.array(faults, np.int64).reshape(-1, 4)
    text_lines = None
    if block.text_lines is not None:
        text_lines = []
        for r, sh in zip(rows.tolist(), np.asarray(shared_of).tolist()):
            line = block.text_lines[r]
            if isinstance(line, tuple):     # merged already (a row held back from the block before)
                text_lines.append(line)
            else:
                text_lines.append((line, block.text_lines[sh]) if sh >= 0 else line)
    return ParsedBlock(block.source, block.labels[rows].copy(), block.weights[rows].copy(), block.bases[rows].copy(),
                       block.lines[rows].copy(), indptr, idx, val, tag_buf, tag_s, ends, fault_arr, texts,
                       ns=ns if want_ns else None, text_lines=text_lines,
                       costs=(new_ptr, ccls[take].copy(), ccost[take].copy()), groups=groups,
                       fault_line=np.array(at, np.int64),
                       head_tags=None if groups is None else _tags(block, np.where(shared_of >= 0, shared_of,
                                                                                   rows[groups])) + (shared_of >= 0,))


def _concat(a: ParsedBlock, b: ParsedBlock) -> ParsedBlock:
    """The rows of ``a`` then ``b`` (one source) as one block."""
    n = a.n
    want_ns = a.ns is not None and b.ns is not None
    ia = a.indptr[:n + 1] - a.indptr[0]
    off = int(ia[-1])
    indptr = np.concatenate([ia, b.indptr[1:b.n + 1] - b.indptr[0] + off])
    lo, hi = int(b.indptr[0]), int(b.indptr[b.n])
    idx = np.concatenate([a.idx[int(a.indptr[0]):int(a.indptr[n])], b.idx[lo:hi]])
    val = np.concatenate([a.val[int(a.indptr[0]):int(a.indptr[n])], b.val[lo:hi]])
    ns = np.concatenate([a.ns[int(a.indptr[0]):int(a.indptr[n])], b.ns[lo:hi]]) if want_ns else None
    abuf, a_s, a_e = _tags(a, np.arange(n))
    bbuf, b_s, b_e = _tags(b, np.arange(b.n))
    tag_buf = np.concatenate([abuf, bbuf])
    tag_s = np.concatenate([a_s, b_s + abuf.size])
    tag_e = np.concatenate([a_e, b_e + abuf.size])
    pa, ca, xa = a.costs
    pb, cb, xb = b.costs
    cptr = np.concatenate([pa - pa[0], pb[1:] - pb[0] + (pa[-1] - pa[0])])
    cls = np.concatenate([ca[:pa[-1] - pa[0]], cb[:pb[-1] - pb[0]]])
    cost = np.concatenate([xa[:pa[-1] - pa[0]], xb[:pb[-1] - pb[0]]])
    bf = b.faults.copy()
    if bf.shape[0]:
        bf[:, 0] += n
    at = [a.fault_line if a.fault_line is not None else a.lines[a.faults[:, 0]],
          b.fault_line if b.fault_line is not None else b.lines[b.faults[:, 0]]]
    texts = None
    if a.text_lines is not None and b.text_lines is not None:
        texts = list(a.text_lines) + list(b.text_lines)
    return ParsedBlock(a.source, np.concatenate([a.labels, b.labels]), np.concatenate([a.weights, b.weights]),
                       np.concatenate([a.bases, b.bases]), np.concatenate([a.lines, b.lines]), indptr, idx, val,
                       tag_buf, tag_s, tag_e,
                       np.concatenate([a.faults, bf]), list(a.fault_text) + list(b.fault_text), ns=ns,
                       text_lines=texts, costs=(cptr, cls, cost), fault_line=np.concatenate(at).astype(np.int64))


class LdfGroups:
    """Parsed blocks of single lines -> blocks of whole multi-line examples (module docstring)."""

    def __init__(self, noconstant: bool):
        self.drop_constant = not noconstant
        self.held: ParsedBlock | None = None

    def feed(self, block: ParsedBlock) -> list[ParsedBlock]:
        """The whole groups known after ``block`` (the last group is held back: it may go on)."""
        out = []
        if self.held is not None and self.held.source != block.source:
            out += self.flush()
        rows = block if self.held is None else _concat(self.held, block)
        self.held = None
        return out + self._groups(rows, complete=False)

    def flush(self) -> list[ParsedBlock]:
        """The groups held back, at the end of a source or of the stream."""
        held, self.held = self.held, None
        return [] if held is None else self._groups(held, complete=True)

    def _groups(self, block: ParsedBlock, complete: bool) -> list[ParsedBlock]:
        n = block.n
        if n == 0:
            return []
        lines = block.lines[:n]
        shared = _is_shared(block)
        starts = np.ones(n, bool)
        starts[1:] = (lines[1:] != lines[:-1] + 1) | shared[1:]
        first = np.flatnonzero(starts)
        if not complete:
            last = int(first[-1])
            keep = np.full(n, -1, np.int64)
            keep[last:] = np.arange(n - last)
            self.held = _select(block, np.arange(last, n), np.full(n - last, -1), False, None, keep)
            self.held.text_lines = None if block.text_lines is None else list(block.text_lines[last:])
            n = last
            first = first[:-1]
        starts = starts[:n]
        gid = np.cumsum(starts) - 1                         # each row's group
        header = shared[first]                              # the group starts with a shared line
        action = ~(starts & shared[:n])
        has = np.add.reduceat(action, first) > 0 if first.size else np.zeros(0, bool)   # groups with actions
        rows = np.flatnonzero(action & has[gid])
        if rows.size == 0:
            return []
        shared_of = np.where(header, first, -1)[gid[rows]]
        out = np.arange(rows.size, dtype=np.int64)
        lead = np.r_[True, gid[rows][1:] != gid[rows][:-1]]
        groups = np.maximum.accumulate(np.where(lead, out, 0))
        fault_row = np.full(block.n, -1, np.int64)
        fault_row[rows] = out
        fault_row[shared_of[lead][shared_of[lead] >= 0]] = groups[lead][shared_of[lead] >= 0]
        return [_select(block, rows, shared_of, self.drop_constant, groups, fault_row)]
