"""Feature names for ``--invert_hash`` and ``--audit`` (vw-spec-2.md §2d).

Names cost a slow, plain-Python expansion of every line (``streamlearn.features.names``), so they are
collected only when one of these options is given; the default path pays nothing. As in VW, the
first name seen for a weight wins (with hash collisions the later names are lost), names are
collected in the first pass (in every pass with ``-t``), and ``--audit`` prints, for every example
and before it is learned, its prediction (as ``-p`` writes it, before the link function) and its
features ``name:slot:value:weight[@G]`` stable-sorted by |w x| (largest first).
"""

from __future__ import annotations

import sys

import numpy as np

from streamlearn.features.expansion import FeatureSpec
from streamlearn.io.writers import format_predictions
from streamlearn.core.multiclass import class_width
from streamlearn.features.hashing import constant_index
from streamlearn.features.names import CONSTANT, LINEAR, Entry, expand_line


class FeatureNames:
    """Expands the text of each example with names; keeps the first name of every weight."""

    def __init__(self, spec: FeatureSpec | None, bits: int, noconstant: bool, hash_seed: int, hash_mode: str,
                 classes: int = 0):
        self.spec = spec if spec is not None else FeatureSpec.from_options()
        # --oaa K: feature h of class k is slot (h*W + k) mod 2^b, named "name[k]" for k >= 1
        self.classes = classes
        self.width = class_width(classes)
        self.bits = bits
        self.noconstant = noconstant
        self.hash_seed = hash_seed
        self.hash_mode = hash_mode
        self.seen: set[int] = set()
        self.names: dict[int, str] = {}
        self.collecting = True

    def entries(self, block) -> list[list[tuple]]:
        """Per example of the block: its ``streamlearn.features.names.Entry`` list (name, index, value, kind)
        in VW's order."""
        out = []
        names = self.names
        for line in block.text_lines:
            expanded = expand_line(line, self.spec, self.bits, self.noconstant, self.hash_seed,
                                   self.hash_mode, self.seen)
            entries = expanded.entries if expanded is not None else []
            if self.collecting:
                if self.classes:
                    mask = (1 << self.bits) - 1
                    for entry in entries:
                        row = (entry.index * self.width) & mask
                        for k in range(self.classes):
                            if row + k not in names:
                                names[row + k] = entry.name if k == 0 else f"{entry.name}[{k}]"
                else:
                    for entry in entries:
                        if entry.index not in names:
                            names[entry.index] = entry.name
            out.append(entries)
        return out


def unnamed_entries(block, bits: int, noconstant: bool) -> list[list[Entry]]:
    """Per example of a block read without its text (a cached pass): its expanded features as
    entries in VW's order (the block's), named as VW names them when the example came from its
    cache: the constant "Constant", every other feature "" (VW's cache keeps no names)."""
    constant = -1 if noconstant else constant_index(bits)
    indptr, idx, val = block.indptr, block.idx.tolist(), block.val.tolist()
    out = []
    for e in range(block.n):
        a, b = int(indptr[e]), int(indptr[e + 1])
        out.append([Entry("Constant" if i == constant else "", i, v, CONSTANT if i == constant else LINEAR)
                    for i, v in zip(idx[a:b], val[a:b])])
    return out


def _num(x: float) -> str:
    """A number as VW's ostream prints it (6 significant digits)."""
    return f"{x:g}"


def audit_features(entries, table: np.ndarray, g_col: int) -> str:
    """The TAB-led line of an example's features with the weights they are predicted with (read
    before the example is learned), stable-sorted by |w x| descending."""
    items = []
    for entry in entries:
        slot, value = entry.index, entry.value
        w = float(table[slot, 0])
        text = f"{entry.name}:{slot}:{_num(value)}:{_num(w)}"
        if g_col >= 0:
            text += f"@{_num(float(table[slot, g_col]))}"
        items.append((-abs(w * value), text))
    items.sort(key=lambda item: item[0])
    return "\t" + "\t".join(text for _, text in items)


def nn_audit_lines(rec, entries, tag: bytes, K: int, g_col: int, inpass: bool = False) -> list[str]:
    """The audit lines of one example through --nn (``streamlearn.core.nn.nn_audit_block``'s record):
    for each prediction VW's gd printed, in order, the prediction (the example's tag with the hidden
    units' scores over its features) and its features stable-sorted by |w x|, named as VW names them
    (HiddenBias, OutputWeight, OutputLayer0.., OutputLayerConst; the example's own names; with --inpass
    the output layer holds the example's features, then the units, without OutputLayerConst)."""
    from streamlearn.core.nn import EV_BIAS, EV_OUTPUT, EV_OUTPUT_WEIGHT, EV_UNIT
    ev, ev_p, f_row, f_val, f_w, f_g, used = rec
    lines = []
    for k in range(int(used[0])):
        kind, unit, first = (int(v) for v in ev[k])
        end = int(ev[k + 1, 2]) if k + 1 < int(used[0]) else int(used[1])
        if kind == EV_BIAS:
            names = ["HiddenBias"]
        elif kind == EV_OUTPUT_WEIGHT:
            names = ["OutputWeight"]
        elif kind == EV_OUTPUT and inpass:
            names = [entry.name for entry in entries] + [f"OutputLayer{j}" for j in range(K)]
        elif kind == EV_OUTPUT:
            names = [f"OutputLayer{j}" for j in range(K)] + ["OutputLayerConst"]
        else:
            names = [entry.name for entry in entries]
        items = []
        for j, name in zip(range(first, end), names):
            text = f"{name}:{int(f_row[j])}:{_num(float(f_val[j]))}:{_num(float(f_w[j]))}"
            if g_col >= 0:
                text += f"@{_num(float(f_g[j]))}"
            # VW sorts by |w x| in float32, where near values tie (then the features keep their order)
            items.append((-abs(float(np.float32(np.float32(f_w[j]) * np.float32(f_val[j])))), text))
        items.sort(key=lambda item: item[0])
        lines.append(audit_prediction(float(ev_p[k]), tag if kind == EV_UNIT else b""))
        lines.append("\t" + "\t".join(text for _, text in items))
    return lines


def audit_score(entries, table: np.ndarray) -> float:
    """sum_i w_i x_i over an example's features, with the weights before it is learned."""
    return float(sum(float(table[entry.index, 0]) * entry.value for entry in entries))


def audit_prediction(p: float, tag: bytes) -> str:
    text = format_predictions(np.array([p]))[0]
    return text + (" " + tag.decode("utf-8", "replace") if tag else "")


def write(lines: list[str]) -> None:
    """Audit lines to standard output; an OS error (a full disk, ...) is one line (a closed pipe, as
    ``| head``, ends the run quietly: the CLI's handling of BrokenPipeError)."""
    try:
        sys.stdout.write("".join(line + "\n" for line in lines))
    except BrokenPipeError:
        raise
    except OSError as exc:
        from streamlearn.errors import StreamlearnError
        from streamlearn.io.atomic import reason
        raise StreamlearnError(f"cannot write the audit to standard output: {reason(exc)}") from None
