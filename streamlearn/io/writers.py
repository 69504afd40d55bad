"""Output files: predictions (``-p``) and readable models (``--readable-model``).

Predictions use VW's number format (vw-spec.md §1e): an integral value is printed without decimals
("0", "-1", "1"), anything else in fixed point with 6 decimals ("0.509763"); a tag follows after a
space when the example has one. One line per example, in input order.
"""

from __future__ import annotations

import os
import stat
import sys

import numpy as np

from streamlearn.errors import ModelError, StreamlearnError
from streamlearn.io.blocks import ParsedBlock
from streamlearn.io.atomic import reason, write_atomic, write_through
from streamlearn.io.numfmt import format_lines, format_predictions  # noqa: F401 (format_predictions: re-exported)


def class_probabilities(scores: np.ndarray, softmax: bool) -> np.ndarray:
    """Each example's class probabilities from its K scores (rows): VW's one-against-all
    normalization sigma(s_k) / sum_j sigma(s_j) in float32 (vw-spec-2.md §2e), or the softmax."""
    if softmax:
        z = scores - scores.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)
    s = scores.astype(np.float32)
    with np.errstate(over="ignore"):
        sig = np.float32(1.0) / (np.float32(1.0) + np.exp(-s))
    total = np.zeros(s.shape[0], np.float32)
    for k in range(s.shape[1]):        # summed in class order, as VW does
        total += sig[:, k]
    return (sig * (np.float32(1.0) / total)[:, None]).astype(np.float64)


def format_class_values(values: np.ndarray, first: int, lead: str = "") -> list[str]:
    """``k:v`` for every class k = first, first+1, ... with %g numbers (VW's --scores,
    --probabilities and -r lines); ``lead`` goes before each line."""
    return [lead + " ".join(f"{first + k}:{v + 0.0:g}" for k, v in enumerate(row)) for row in values.tolist()]


class PredictionWriter:
    """Writes one line per example to a file or ("-") stdout."""

    def __init__(self, path: str):
        self.path = path
        if path == "-":
            self.f = sys.stdout.buffer
        else:
            # a stream, written as it goes (not atomically): a regular file is truncated, a character
            # device or FIFO written through; a directory, socket or block device (a disk) is refused
            try:
                mode = os.stat(path).st_mode
            except OSError:
                mode = 0        # absent (created below) or unreadable (open says why)
            if stat.S_ISBLK(mode):
                raise StreamlearnError(f"cannot write predictions to {path}: it is a block device")
            try:
                self.f = open(path, "wb")
            except OSError as exc:
                raise self._error(exc) from None

    def _error(self, exc: OSError) -> StreamlearnError:
        where = "standard output" if self.path == "-" else self.path
        return StreamlearnError(f"cannot write predictions to {where}: {reason(exc)}")

    def write(self, values: np.ndarray, block: ParsedBlock) -> None:
        if values.shape[0] == 0:
            return
        if not block.has_tags():      # the compiled format
            self._write(format_lines(values))
            return
        self.write_lines(format_predictions(values), block)

    def _write(self, data: bytes) -> None:
        write_through(self.f, data, self._error)

    def write_lines(self, text: list[str], block: ParsedBlock, after: str = "") -> None:
        """One formatted line per example of the block, each followed by its tag (and by ``after``:
        VW's "\\n " after a --multilabel_oaa probability line)."""
        if not text:
            return
        if block.has_tags():
            data = b"\n".join(
                ((t.encode() + b" " + tag) if tag else t.encode()) + after.encode()
                for t, tag in zip(text, block.tag_list()))
        else:
            data = "\n".join(t + after for t in text).encode()
        self._write(data + b"\n")

    def write_text(self, lines: list[str]) -> None:
        """Lines as they are (their tags in them already), each followed by a newline."""
        if not lines:
            return
        self._write("".join(t + "\n" for t in lines).encode())

    def close(self) -> None:
        try:
            if self.f is sys.stdout.buffer:
                self.f.flush()
            else:
                self.f.close()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._error(exc) from None


def write_readable_model(path: str, header: list[str], index: np.ndarray, values: np.ndarray,
                         names: dict | None = None, name_zero_weights: bool = False,
                         what: str = "readable model") -> None:
    """A short header, then VW's weight lines in increasing index order: ``index:w`` or, with the
    per-feature state, ``index:w G N`` (``values`` holds one row per index, the weight first). With
    ``names`` (--invert_hash) a line whose weight is not 0 (any line with ``name_zero_weights``)
    starts with the name of its feature.

    Numbers are printed with Python's shortest round-trip representation, so they are exact."""
    if values.ndim == 1:
        values = values[:, None]

    def chunks():
        yield ("\n".join(header) + "\n").encode()
        step = 65536
        for s in range(0, index.shape[0], step):
            part = index[s:s + step].tolist()
            rows = values[s:s + step].tolist()
            lines = []
            for i, row in zip(part, rows):
                text = f"{i}:" + " ".join(repr(v + 0.0) for v in row)     # + 0.0: -0.0 prints 0.0
                if names is not None and (row[0] != 0.0 or name_zero_weights) and i in names:
                    text = f"{names[i]}:{text}"
                lines.append(text + "\n")
            yield "".join(lines).encode()
    write_atomic(path, chunks(), what, ModelError)
