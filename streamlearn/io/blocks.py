"""Parsed blocks: the CSR examples of one byte block, their tags, and the faults of malformed lines.

``parse_block`` runs the compiled parser chosen for the source's format; ``ParsedBlock.fault_messages``
turns fault codes into the one-line messages users see. Format detection (``--format auto``) looks at
the first data line of each source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from streamlearn.io import parsing as P
from streamlearn.io.libsvm import parse_libsvm_block
from streamlearn.io.costs import NO_COST, named_class_labels, parse_cost_labels, parse_multilabels
from streamlearn.features.hashing import default_namespace_hash
from streamlearn.io.vw import _parse_features, parse_vw_block

FMT_VW = 0
FMT_LIBSVM = 1
FORMATS = {"vw": FMT_VW, "libsvm": FMT_LIBSVM}

LOSES_LABEL = "the example is predicted, not learned"
LOSES_REST = "the rest of the line is ignored"

#: code -> (reason template, consequence); {text} is the offending text, quoted.
FAULTS = {
    P.E_LABEL: ("label {text} is not a number", LOSES_LABEL),
    P.E_WEIGHT: ("importance weight {text} is not a number", LOSES_LABEL),
    P.E_NEG_WEIGHT: ("importance weight {text} is negative", LOSES_LABEL),
    P.E_BASE: ("base {text} is not a number", LOSES_LABEL),
    P.E_LABEL_TOKENS: ("too many label tokens in {text} (expected: label [importance [base]] ['tag])",
                       LOSES_LABEL),
    P.E_NS_NAME: ("namespace name expected after '|' in {text}", LOSES_REST),
    P.E_NS_VALUE: ("namespace value in {text} is not a finite number", LOSES_REST),
    P.E_VALUE: ("feature value in {text} is not finite", LOSES_REST),
    P.E_STRAY: ("unexpected {text} (a space, '|' or end of line was expected)", LOSES_REST),
    P.E_CR: ("carriage return inside the line", LOSES_REST),
    P.E_TOKEN: ("{text} is not index:value", LOSES_REST),
    P.E_INDEX: ("index in {text} is not a non-negative integer", LOSES_REST),
    P.E_NUMBER: ("value in {text} is not a number", LOSES_REST),
    P.E_LABEL_RANGE: ("label {text} is beyond float32's range (+-3.4e38)", LOSES_LABEL),
    P.E_WEIGHT_RANGE: ("importance weight {text} is beyond float32's range (+-3.4e38)", LOSES_LABEL),
    P.E_BASE_RANGE: ("base {text} is beyond float32's range (+-3.4e38)", LOSES_LABEL),
    P.E_VALUE_RANGE: ("feature value in {text} is beyond float32's range (+-3.4e38)", LOSES_REST),
    P.E_NS_RANGE: ("feature value in {text} times its namespace value is beyond float32's range (+-3.4e38)",
                   LOSES_REST),
    P.E_NAME: ("label {text} is not one of --named_labels (class 0, as VW)", "its cost is class 0's"),
    P.E_LABEL_COST: ("cost {text} is not class:cost", LOSES_LABEL),
    P.E_LABEL_SET: ("label {text} is not a comma-separated list of classes", LOSES_LABEL),
    P.E_PRODUCT_RANGE: ("an interaction feature's value (a product of feature values) is beyond float32's "
                        "range (+-3.4e38)", LOSES_LABEL),
}

_MAX_SHOWN = 40


def quote_bytes(raw: bytes) -> str:
    """The offending text as users see it: double-quoted, at most 40 characters, escapes for bad UTF-8."""
    text = raw.decode("utf-8", errors="backslashreplace")
    if len(text) > _MAX_SHOWN:
        text = text[: _MAX_SHOWN - 3] + "..."
    return '"' + text.replace("\t", "\\t").replace("\r", "\\r") + '"'


@dataclass
class ParsedBlock:
    """Examples of one block in CSR form (see streamlearn.io.parsing for the field meanings)."""

    source: str
    labels: np.ndarray
    weights: np.ndarray
    bases: np.ndarray
    lines: np.ndarray
    indptr: np.ndarray
    idx: np.ndarray
    val: np.ndarray
    tag_buf: np.ndarray   # uint8; tags are tag_buf[tag_s[e]:tag_e[e]] (empty when equal)
    tag_s: np.ndarray
    tag_e: np.ndarray
    faults: np.ndarray    # (k, 4): example, code, start, end
    fault_text: list      # offending bytes per fault
    #: features of each example counted in the progress table and summary (VW's num_features plus
    #: its interaction features); None: the example's row length in the CSR arrays
    counts: np.ndarray | None = None
    #: uint8 namespace index of every feature (only when feature expansion asked the parser for it)
    ns: np.ndarray | None = None
    #: the text of every example's line (only when feature names are wanted: --audit, --invert_hash)
    text_lines: list | None = None
    #: cost-sensitive labels (--csoaa, ``streamlearn.io.costs``): (ptr, cls, cost), example e's costs at
    #: ptr[e]..ptr[e+1]-1 (ptr keeps absolute positions, as ``indptr``); None for plain labels
    costs: tuple | None = None
    #: multi-line examples (--csoaa_ldf, ``streamlearn.io.ldf``): int64, the first row of each row's group
    groups: np.ndarray | None = None
    #: the line of each fault when it is not its example's (a shared line's, merged into its actions); None: theirs
    fault_line: np.ndarray | None = None
    #: multi-line examples: (buffer, starts, ends) of the tag of each row's group head (its shared line, or its
    #: first action), which VW writes with --probabilities and --csoaa_rank, and whether the group has a shared line
    head_tags: tuple | None = None
    #: --lrq/--lrqfa: (ptr, idx, val, pairs), example e's features of low-rank group j at
    #: ptr[e*m + j]..ptr[e*m + j + 1]-1 (``streamlearn.io.expand.lowrank_groups``) and the pairs' table
    lowrank: tuple | None = None

    @property
    def n(self) -> int:
        return self.labels.shape[0]

    def arrays(self, preds: np.ndarray) -> tuple:
        """The block as a learner kernel takes it, (indptr, idx, val, labels, weights, bases, nfeat,
        preds), with ``preds`` the array its predictions go to (``streamlearn.core.loop``); a block of
        cost-sensitive labels adds their (ptr, cls, cost) (``streamlearn.core.multiclass.csoaa_loop``)."""
        if self.groups is not None:
            return (self.indptr, self.idx, self.val, self.labels, self.weights, self.bases, self.feature_counts(),
                    preds) + tuple(self.costs) + (self.groups,)
        if self.costs is not None:
            return (self.indptr, self.idx, self.val, self.labels, self.weights, self.bases, self.feature_counts(),
                    preds) + tuple(self.costs)
        if self.lowrank is not None:        # the low-rank loop (streamlearn.core.lowrank)
            return (self.indptr, self.idx, self.val, self.labels, self.weights, self.bases, self.feature_counts(),
                    preds) + tuple(self.lowrank)
        return (self.indptr, self.idx, self.val, self.labels, self.weights, self.bases, self.feature_counts(),
                preds)

    def feature_counts(self) -> np.ndarray:
        """int64 per example: the number of features the reports count for it (``counts``, or the
        length of its CSR row when no feature expansion set them)."""
        if self.counts is not None:
            return self.counts
        return np.diff(self.indptr)

    def tag_list(self) -> list[bytes]:
        """The tag of every example (b"" for none)."""
        buf = self.tag_buf
        return [buf[s:e].tobytes() for s, e in zip(self.tag_s.tolist(), self.tag_e.tolist())]

    def head_tag(self, e: int) -> bytes:
        """The tag of row e's group head (``head_tags``; its own without)."""
        if self.head_tags is None:
            return self.tag_buf[self.tag_s[e]:self.tag_e[e]].tobytes()
        buf, s, t, _ = self.head_tags
        return buf[s[e]:t[e]].tobytes()

    def has_tags(self) -> bool:
        return bool(np.any(self.tag_e > self.tag_s))

    def fault_lines(self) -> list[tuple[int, str, str]]:
        """(line, reason, consequence) for each malformed line, in order."""
        out = []
        for k, ((ex, code, _s, _e), raw) in enumerate(zip(self.faults, self.fault_text)):
            template, consequence = FAULTS[int(code)]
            line = self.lines[ex] if self.fault_line is None else self.fault_line[k]
            out.append((int(line), template.format(text=quote_bytes(raw)), consequence))
        return out


def sub_block(block: ParsedBlock, a: int, b: int) -> ParsedBlock:
    """Examples a..b-1 of a block, as a block (the feature arrays are shared: ``indptr`` keeps its
    absolute positions, which is all the kernels read)."""
    faults = block.faults
    keep = (faults[:, 0] >= a) & (faults[:, 0] < b) if faults.shape[0] else np.zeros(0, bool)
    f = faults[keep].copy()
    if f.shape[0]:
        f[:, 0] -= a
    out = ParsedBlock(block.source, block.labels[a:b], block.weights[a:b], block.bases[a:b], block.lines[a:b],
                      block.indptr[a:b + 1], block.idx, block.val, block.tag_buf, block.tag_s[a:b],
                      block.tag_e[a:b], f, [t for t, k in zip(block.fault_text, keep) if k],
                      counts=None if block.counts is None else block.counts[a:b], ns=block.ns,
                      text_lines=None if block.text_lines is None else block.text_lines[a:b],
                      costs=None if block.costs is None else (block.costs[0][a:b + 1],) + tuple(block.costs[1:]),
                      groups=None if block.groups is None else np.maximum(block.groups[a:b] - a, 0),
                      fault_line=None if block.fault_line is None else block.fault_line[keep],
                      head_tags=None if block.head_tags is None else (block.head_tags[0],)
                      + tuple(x[a:b] for x in block.head_tags[1:]),
                      lowrank=None if block.lowrank is None else _lowrank_part(block, a, b))
    if block.counts is None:        # the reports count the example's own row length
        out.counts = np.diff(block.indptr[a:b + 1])
    return out


def window(blocks, start: int, stop: int | None, drain: bool = True):
    """Examples ``start`` .. ``stop - 1`` of a stream of blocks (counted from its first example; ``stop``
    None: to the end), as blocks cut with ``sub_block``. With ``drain`` the stream is read to its end
    all the same, so that whatever it does as it goes (the cache writer of a first pass) sees every
    block; without, reading stops at ``stop``. A Dask period (``streamlearn.dask``, ``--sync-every``)
    trains on such a window of its shard."""
    pos = 0
    for block in blocks:
        if not drain and stop is not None and pos >= stop:
            return
        n = block.n
        a = min(max(start - pos, 0), n)
        b = n if stop is None else min(max(stop - pos, 0), n)
        pos += n
        if a < b:
            piece = block if (a == 0 and b == n) else sub_block(block, a, b)
            # reading on to the end reuses the reader's ring of buffers while the consumer still works
            # on the window's last block: that one is handed over as a copy
            yield detached(piece) if drain and stop is not None and pos >= stop else piece


def detached(block: ParsedBlock) -> ParsedBlock:
    """A copy of a block that shares no array with it (with the feature arrays cut to its examples)."""
    lo, hi = int(block.indptr[0]), int(block.indptr[block.n])

    def copy(a):
        return None if a is None else np.array(a, copy=True)

    return ParsedBlock(block.source, copy(block.labels), copy(block.weights), copy(block.bases), copy(block.lines),
                       block.indptr - lo, copy(block.idx[lo:hi]), copy(block.val[lo:hi]), copy(block.tag_buf),
                       copy(block.tag_s), copy(block.tag_e), copy(block.faults), list(block.fault_text),
                       counts=copy(block.counts), ns=None if block.ns is None else copy(block.ns[lo:hi]),
                       text_lines=None if block.text_lines is None else list(block.text_lines),
                       costs=None if block.costs is None else _detached_costs(block.costs),
                       groups=None if block.groups is None else block.groups.copy(),
                       fault_line=None if block.fault_line is None else block.fault_line.copy(),
                       head_tags=None if block.head_tags is None else tuple(a.copy() for a in block.head_tags),
                       lowrank=None if block.lowrank is None else _lowrank_part(block, 0, block.n, True))


def _lowrank_part(block: ParsedBlock, a: int, b: int, copy: bool = False) -> tuple:
    """The low-rank groups of examples a..b-1 (positions made relative to their first one)."""
    ptr, idx, val, pairs = block.lowrank
    m = (ptr.shape[0] - 1) // max(block.n, 1) if block.n else 0
    lo, hi = int(ptr[a * m]), int(ptr[b * m])
    part = ptr[a * m:b * m + 1] - lo
    return part, idx[lo:hi].copy() if copy else idx[lo:hi], val[lo:hi].copy() if copy else val[lo:hi], pairs


def _detached_costs(costs: tuple) -> tuple:
    ptr, cls, cost = costs
    lo, hi = int(ptr[0]), int(ptr[-1])
    return ptr - lo, cls[lo:hi].copy(), cost[lo:hi].copy()


def example_texts(buf: np.ndarray, ends: np.ndarray, first_line: int, lines: np.ndarray) -> list[bytes]:
    """The text of each example's line (without its newline) in a block that starts at line
    ``first_line``; ``lines`` are the examples' line numbers."""
    out = []
    for line in lines.tolist():
        li = line - first_line
        s = int(ends[li - 1]) + 1 if li > 0 else 0
        out.append(buf[s:int(ends[li])].tobytes())
    return out


def line_ends(buf: np.ndarray) -> np.ndarray:
    """Position of the newline ending each line (the block size for a last line without one)."""
    ends = np.flatnonzero(buf == 10)
    if buf.size and buf[-1] != 10:
        ends = np.append(ends, buf.size)
    return ends


class Outputs:
    """Output arrays for the parsers, reused from block to block and grown when a block needs more.

    Reuse keeps the memory a long stream touches bounded and spares a page fault per fresh page."""

    def __init__(self):
        self.line_cap = -1
        self.feat_cap = -1

    def reserve(self, nlines: int, nfeatures: int) -> None:
        if nlines > self.line_cap:
            cap = max(nlines, int(self.line_cap * 1.25))
            self.labels = np.empty(cap, np.float64)
            self.weights = np.empty(cap, np.float64)
            self.bases = np.empty(cap, np.float64)
            self.lines = np.empty(cap, np.int64)
            self.tag_s = np.empty(cap, np.int64)
            self.tag_e = np.empty(cap, np.int64)
            self.indptr = np.empty(cap + 1, np.int64)
            self.faults = np.empty((cap, 4), np.int64)
            self.line_cap = cap
        if nfeatures > self.feat_cap:
            cap = max(nfeatures, int(self.feat_cap * 1.25))
            self.idx = np.empty(cap, np.uint32)
            self.val = np.empty(cap, np.float32)
            self.ns = np.empty(cap, np.uint8)
            self.feat_cap = cap

    def block(self, source: str, n: int, nf: int, nfault: int, tag_buf: np.ndarray,
              with_ns: bool = False) -> ParsedBlock:
        """A ParsedBlock viewing the first n examples / nf features of these arrays."""
        faults = self.faults[:nfault]
        fault_text = [tag_buf[s:e].tobytes() for s, e in zip(faults[:, 2].tolist(), faults[:, 3].tolist())]
        return ParsedBlock(source, self.labels[:n], self.weights[:n], self.bases[:n], self.lines[:n],
                           self.indptr[:n + 1], self.idx[:nf], self.val[:nf], tag_buf,
                           self.tag_s[:n], self.tag_e[:n], faults, fault_text,
                           ns=self.ns[:nf] if with_ns else None)


#: --redefine that changes nothing: every first byte is its own namespace index
IDENTITY_REDEFINE = np.arange(256, dtype=np.uint8)


def parse_block(source: str, data, first_line: int, fmt: int, mask: int, noconstant: bool,
                hash_seed: int, hash_mode: int, ends: np.ndarray | None = None,
                out: Outputs | None = None, redefine: np.ndarray | None = None,
                cost_names: tuple | None = None, class_names: tuple | None = None,
                multilabels: bool = False, shared: bool = False) -> ParsedBlock:
    """Parse one line-aligned block (bytes or a uint8 array) with the compiled parser for ``fmt``.

    ``ends`` (line end positions) and ``out`` (reusable arrays) are computed / allocated if not given;
    with ``out`` the returned block views arrays that the next parse into ``out`` overwrites. With
    ``redefine`` (a uint8[256] map of first bytes to namespace indices) the block also carries each
    feature's namespace index (``ns``), which feature expansion needs; LIBSVM features are all in
    the default namespace ' '. With ``cost_names`` ((hashes, ids) of --named_labels, both empty
    without) the labels are cost-sensitive (``streamlearn.io.costs``): the block carries them as
    ``costs``, its ``labels`` are 0 for an example with a cost and NaN for a test example, and the
    faults of the label part are theirs. With ``class_names`` ((hashes, ids) of --named_labels with
    --oaa) a label is a class name (``streamlearn.io.costs.named_class_labels``); with ``multilabels``
    a set of classes ``0,3,4`` (--multilabel_oaa), carried as ``costs`` of cost 0; with ``shared`` (and
    ``cost_names``) a ``shared`` label is a shared line's (--csoaa_ldf: ``streamlearn.io.ldf``)."""
    buf = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray)) else data
    if ends is None:
        ends = line_ends(buf)
    if out is None:
        out = Outputs()
    out.reserve(ends.size, buf.size // 2 + ends.size + 1)
    want_ns = redefine is not None
    if fmt == FMT_VW:
        n, nf, nfault = parse_vw_block(buf, ends, first_line, mask, noconstant, hash_seed, hash_mode,
                                       out.labels, out.weights, out.bases, out.lines, out.tag_s,
                                       out.tag_e, out.indptr, out.idx, out.val, out.faults,
                                       IDENTITY_REDEFINE if redefine is None else redefine, out.ns,
                                       want_ns)
    else:
        n, nf, nfault = parse_libsvm_block(buf, ends, first_line, mask, noconstant, hash_seed,
                                           hash_mode, out.labels, out.weights, out.bases, out.lines,
                                           out.tag_s, out.tag_e, out.indptr, out.idx, out.val,
                                           out.faults)
        if want_ns:
            out.ns[:nf] = 32
            if not noconstant and n:
                out.ns[out.indptr[1:n + 1] - 1] = 128
    block = out.block(source, n, nf, nfault, buf, with_ns=want_ns)
    if (cost_names is not None or multilabels or class_names is not None) and block.faults.shape[0]:
        # the plain parser kept one fault a line, its label's, which these labels replace: the feature
        # part of those lines is read again for its own
        plain = block.faults[np.isin(block.faults[:, 1], _PLAIN_LABEL_FAULTS), 0]
        extra = _feature_faults(buf, ends, first_line, block.lines, plain, mask, hash_seed, hash_mode,
                                IDENTITY_REDEFINE if redefine is None else redefine)
        if extra.shape[0]:
            block.faults = np.concatenate([block.faults, extra])
    if cost_names is not None:
        with_costs(block, buf, ends, first_line, *cost_names, shared=shared)
    elif multilabels:
        with_costs(block, buf, ends, first_line, None, None)
    elif class_names is not None:
        faults = named_class_labels(buf, ends, first_line, block.lines, block.tag_s, block.tag_e, *class_names,
                                    block.labels, block.weights)
        block.bases[:] = 0.0
        _label_faults(block, buf, faults)
    return block


#: fault codes of the plain label part, which cost-sensitive labels replace with their own
_PLAIN_LABEL_FAULTS = (P.E_LABEL, P.E_WEIGHT, P.E_NEG_WEIGHT, P.E_BASE, P.E_LABEL_TOKENS, P.E_LABEL_RANGE,
                       P.E_WEIGHT_RANGE, P.E_BASE_RANGE)


def with_costs(block: ParsedBlock, buf: np.ndarray, ends: np.ndarray, first_line: int, names: np.ndarray,
               ids: np.ndarray, shared: bool = False) -> None:
    """Read the block's labels as costs (``parse_block``'s ``cost_names``), in place."""
    if names is None:       # a multilabel set: every class given
        ptr, cls, cost, cfaults = parse_multilabels(buf, ends, first_line, block.lines, block.tag_s, block.tag_e)
    else:
        ptr, cls, cost, cfaults = parse_cost_labels(buf, ends, first_line, block.lines, block.tag_s, block.tag_e,
                                                    names, ids, shared)
    block.costs = (ptr, cls, cost)
    labeled = np.zeros(block.n, bool)
    has = np.flatnonzero(cost != NO_COST)
    if has.size:
        labeled[np.unique(np.searchsorted(ptr, has, side="right") - 1)] = True
    block.labels[:] = np.where(labeled, 0.0, np.nan)
    block.weights[:] = 1.0
    block.bases[:] = 0.0
    _label_faults(block, buf, cfaults)


def _feature_faults(buf: np.ndarray, ends: np.ndarray, first_line: int, lines: np.ndarray, rows: np.ndarray,
                    mask: int, seed: int, mode: int, redefine: np.ndarray) -> np.ndarray:
    """(k, 4) faults of the feature parts of examples ``rows`` (their first only), read again."""
    out = []
    dflt = default_namespace_hash(seed)
    for ex in rows.tolist():
        s, e = P.line_span(buf, ends, int(lines[ex]) - first_line)
        bar = s
        while bar < e and buf[bar] != P.BAR:
            bar += 1
        if bar >= e:
            continue
        room = e - bar + 2
        _, code, fs, fe = _parse_features(buf, bar, e, mask, seed, mode, dflt, np.empty(room, np.uint32),
                                          np.empty(room, np.float32), 0, redefine, np.empty(room, np.uint8), False)
        if code != 0:
            out.append((ex, code, fs, fe))
    return np.array(out, np.int64).reshape(-1, 4)


def _label_faults(block: ParsedBlock, buf: np.ndarray, label_faults: np.ndarray) -> None:
    """The block's faults with those of its plain label part replaced by ``label_faults``."""
    keep = ~np.isin(block.faults[:, 1], _PLAIN_LABEL_FAULTS) if block.faults.shape[0] else np.zeros(0, bool)
    faults = np.concatenate([block.faults[keep], label_faults]) if label_faults.shape[0] else block.faults[keep]
    order = np.argsort(faults[:, 0], kind="stable")
    block.faults = faults[order]
    block.fault_text = [buf[s:e].tobytes() for s, e in zip(block.faults[:, 2].tolist(), block.faults[:, 3].tolist())]


_LIBSVM_TOKEN = re.compile(rb"^(\d+|qid):\S*$")
_NUMBER = re.compile(rb"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def detect_format(data) -> int | None:
    """Format of the first data line in ``data`` (bytes or uint8 array; None if it holds no data line).

    A line with '|' is VW; a line of "number idx:val ..." tokens is LIBSVM; anything else is VW.
    """
    if isinstance(data, np.ndarray):
        data = data.tobytes()
    for raw in data.split(b"\n"):
        line = raw.split(b"#", 1)[0].strip() if b"|" not in raw else raw.strip()
        if not line:
            continue
        if b"|" in line:
            return FMT_VW
        tokens = line.split()
        if _NUMBER.match(tokens[0]) and all(_LIBSVM_TOKEN.match(t) for t in tokens[1:]):
            return FMT_LIBSVM
        return FMT_VW
    return None
