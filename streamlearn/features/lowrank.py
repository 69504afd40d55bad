"""VW's low-rank quadratic features, as options (``--lrq``, VW's lrq.cc; ``--lrqfa``, VW's lrqfa.cc): what
they ask for, parsed and checked once. The features themselves are generated while learning
(``streamlearn.core.lowrank``: their values are weights), from each example's features of the namespaces
involved, which the feature expansion gathers (``streamlearn.io.expand.lowrank_groups``).

* ``--lrq ABk`` (repeatable): namespaces A and B (single bytes, ``\\xNN`` escapes) and the rank k. Every
  feature of A has k latent weights (slots 1..k of its row), and so has every feature of B; the pair adds,
  for each feature a of A, each n in 1..k and each feature b of B, the feature "b's n-th latent weight"
  with value w_a,n x_a x_b. VW's pairs are a set: sorted by their bytes, repeats dropped.
* ``--lrqfa F..k``: the namespaces F (each a byte; all but the trailing digits) and the rank k; every pair
  of positions i < j of F is a pair as above, with field-aware latent weights: a feature of field f keeps
  k latent weights for each field (slots f' k + n), its weights towards field f' read for a pair with f'.
  A namespace given twice takes the field of its last position, as in VW.

The weights of a feature then span a row of W slots, W the smallest power of two >= 1 + max k (--lrq) or
1 + len(F) k (--lrqfa) (VW's feature width), the feature's own weight in slot 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamlearn.errors import OptionError
from streamlearn.features.expansion import bytes_text, parse_namespace_bytes

#: columns of a pair's row in ``LowRank.table``
P_A, P_B, P_K, P_WB0, P_FB0, P_WB1, P_FB1, P_FLIP, P_FA = range(9)


def _rank(text: str) -> int | None:
    """VW's rank: an unsigned integer in C's notation (strtoul base 0: 12, 0x1f, 017), else None."""
    t = text.strip()
    try:
        if t[:2].lower() == "0x":
            return int(t[2:], 16)
        if len(t) > 1 and t[0] == "0":
            return int(t[1:], 8)
        return int(t, 10) if t.isdigit() else None
    except ValueError:
        return None


@dataclass(frozen=True)
class LowRank:
    """The low-rank features asked for: ``namespaces`` (the bytes involved, in the order their groups are
    gathered), ``table`` (one row per pair, int64, columns ``P_*``: the groups of A and B, k, and for each
    orientation the latent-weight offset of the left feature and the slot offset of the generated
    feature, before + n; ``P_FLIP``: the orientation of an example with an even counter is 1; ``P_FA``:
    field-aware initial weights) and ``width`` W."""

    namespaces: bytes
    table: np.ndarray
    width: int
    field_aware: bool
    #: VW's feature width of the reduction before the power of two (1 + max k, 1 + len(F) k): under --nn
    #: the row is the power of two of its product with the network's
    feature_width: int = 0

    @property
    def text(self) -> str:
        """The preamble's list of pairs."""
        return " ".join(bytes_text(bytes([self.namespaces[r[P_A]], self.namespaces[r[P_B]]])) + str(int(r[P_K]))
                        for r in self.table)


def _width(need: int) -> int:
    w = 1
    while w < need:
        w *= 2
    return w


def parse_lrq(args) -> LowRank:
    """``--lrq`` arguments -> LowRank; raises OptionError for an argument VW refuses."""
    pairs = set()
    for arg in args:
        if ":" in arg:
            raise OptionError("--lrq does not support wildcards ':'")
        raw = parse_namespace_bytes(arg)
        k = _rank(raw[2:].decode("utf-8", "replace")) if len(raw) >= 3 else None
        if k is None:
            raise OptionError(f"--lrq {arg}: low-rank quadratic features must involve two namespaces and a "
                              f"rank (--lrq ab3)")
        if k < 1:
            raise OptionError(f"--lrq {arg}: the rank must be at least 1")
        pairs.add((raw, k))
    spaces: list[int] = []
    rows = []
    maxk = 0
    for raw, k in sorted(pairs):
        for b in raw[:2]:
            if b not in spaces:
                spaces.append(b)
        rows.append((spaces.index(raw[0]), spaces.index(raw[1]), k, 0, 0, 0, 0, 0, 0))
        maxk = max(maxk, k)
    return LowRank(bytes(spaces), np.array(rows, np.int64).reshape(-1, 9), _width(1 + maxk), False, 1 + maxk)


def parse_lrqfa(arg: str) -> LowRank:
    """``--lrqfa`` argument -> LowRank; raises OptionError for an argument VW refuses."""
    if ":" in arg:
        raise OptionError("--lrqfa does not support wildcards ':'")
    raw = parse_namespace_bytes(arg)
    cut = len(raw.rstrip(b"0123456789"))
    fields, digits = raw[:cut], raw[cut:]
    if len(fields) < 2 or not digits or int(digits) < 1:
        raise OptionError(f"--lrqfa {arg}: field-aware low-rank features need two or more namespaces and a "
                          f"rank of at least 1 (--lrqfa abc2)")
    k = int(digits)
    fid = {b: i for i, b in enumerate(fields)}          # a repeated namespace: its last position
    spaces: list[int] = []
    for b in fields:
        if b not in spaces:
            spaces.append(b)
    rows = []
    for i in range(len(fields)):
        for j in range(i + 1, len(fields)):
            a, b = fields[i], fields[j]
            # orientation 0: a left (its weights towards b's field), b's features carry a's field
            rows.append((spaces.index(a), spaces.index(b), k, fid[b] * k, fid[a] * k, fid[a] * k, fid[b] * k, 1, 1))
    return LowRank(bytes(spaces), np.array(rows, np.int64).reshape(-1, 9), _width(1 + len(fields) * k), True,
                   1 + len(fields) * k)


def lowrank_of(cfg) -> LowRank | None:
    """The LowRank of a configuration (None: neither --lrq nor --lrqfa)."""
    if getattr(cfg, "lrq", ()):
        return parse_lrq(cfg.lrq)
    if getattr(cfg, "lrqfa", None):
        return parse_lrqfa(cfg.lrqfa)
    return None
