"""The ``--objective`` report's line, and the objective recomputed in NumPy from a saved model."""

import re

import numpy as np

from streamlearn.run.stream import Hashing, text_blocks

LINE = re.compile(r"objective after pass (\d+) \((.*)\): (\S+) = average loss (\S+) \+ .* \((\S+)\); "
                  r"\|\|w\|\|_1 = (\S+); non-zero weights = (\d+); data accesses = (\d+)$")


def examples(path, bits):
    """(indptr, idx, val, labels, weights, bases) of a file, parsed with the model's hashing."""
    parts = [[], [], [], [], [], []]
    offset = 0
    for b in text_blocks([path], "auto", Hashing(bits, False, "strings", 0), 1 << 16):
        parts[0].append(b.indptr[1:] + offset)
        offset += int(b.indptr[-1])
        for j, name in enumerate(("idx", "val", "labels", "weights", "bases"), start=1):
            parts[j].append(getattr(b, name).copy())
    return (np.concatenate([[0]] + parts[0]),) + tuple(np.concatenate(p) for p in parts[1:])


def numpy_loss(loss, model, path):
    """Average loss of the saved weights over a file, in NumPy: raw scores, no clamping."""
    header, index, rows = model
    w = np.zeros(1 << header["bits"])
    w[index.astype(np.int64)] = rows[:, 0]
    indptr, idx, val, labels, weights, bases = examples(path, header["bits"])
    p = bases + np.add.reduceat(np.append(w[idx] * val.astype(float), 0.0), indptr[:-1]) * (np.diff(indptr) > 0)
    keep = ~np.isnan(labels) & (weights > 0)
    p, y, h = p[keep], labels[keep], weights[keep]
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
        values = np.logaddexp(0.0, -y * p)
    elif loss == "hinge":
        y = np.where(y > 0, 1.0, -1.0)
        values = np.maximum(0.0, 1.0 - y * p)
    else:
        values = (p - y) ** 2
    return float((h * values).sum() / h.sum()), w
