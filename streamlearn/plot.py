"""Plots of a run (matplotlib, the ``plot`` extra): Axes in, Axes out, no pyplot state.

* ``progress``: average loss and non-zero weights over examples (the progress table's rows; the
  truncated-gradient paper's curves, Langford, Li & Zhang 2009).
* ``objective``: the objective after each pass against data accesses (``--objective``; SMIDAS paper,
  Shalev-Shwartz & Tewari 2009, Section 4).
* ``frontier``: test accuracy against non-zero weights, one point per regularization strength.
* ``top_weights``: the k largest weights by magnitude, with their feature names.

matplotlib is imported inside the functions, so ``import streamlearn.plot`` costs nothing; without an
``ax`` each function draws on a new ``matplotlib.figure.Figure`` (``ax.figure.savefig`` or ``write``
saves it).
"""

from __future__ import annotations

import os

import numpy as np


def _axes(ax):
    if ax is not None:
        return ax
    from matplotlib.figure import Figure
    return Figure(figsize=(6.4, 4.2), layout="constrained").add_subplot()


def write(fig, path: str) -> None:
    """Save a figure as model files are written (``streamlearn.io.atomic``: a temporary file in the same
    directory renamed over ``path``, or written through a device or FIFO; the format from the suffix)."""
    import io

    from streamlearn.errors import StreamlearnError
    from streamlearn.io.atomic import write_atomic
    buf = io.BytesIO()
    fig.savefig(buf, format=os.path.splitext(path)[1].lstrip(".").lower() or "png", dpi=110)
    write_atomic(path, [buf.getvalue()], "plot", StreamlearnError)


def _progress_arrays(history) -> dict:
    """The arrays of a ProgressHistory, its as_dict(), a train() result or an object with progress_."""
    if hasattr(history, "progress_"):
        history = history.progress_
    if hasattr(history, "as_dict"):
        history = history.as_dict()
    if isinstance(history, dict) and "progress" in history and "examples" not in history:
        history = history["progress"]
    if not isinstance(history, dict) or "examples" not in history:
        raise TypeError("progress() takes a ProgressHistory, its as_dict(), a train() result with "
                        "'progress' or an estimator with progress_")
    return history


def progress(history, ax=None):
    """Average loss against examples (log x, the progress table's doubling grid) and, on a twin y axis
    (``ax.twinx()``, the figure's next Axes), the non-zero weights in force. Returns ``ax``."""
    h = _progress_arrays(history)
    ax = _axes(ax)
    x = np.asarray(h["examples"], dtype=np.float64)
    held = np.asarray(h.get("holdout", np.zeros(x.shape[0], bool)), dtype=bool)
    label = "average loss" + (" (h: on held-out examples)" if held.any() else "")
    loss_line, = ax.plot(x, h["average_loss"], "o-", color="C0", markersize=3, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("examples")
    ax.set_ylabel("average loss (progressive)")
    ax.grid(True, which="major", alpha=0.3)
    twin = ax.twinx()
    nz_line, = twin.plot(x, h["nonzero"], "s--", color="C1", markersize=3, label="non-zero weights")
    twin.set_ylabel("non-zero weights")
    twin.set_ylim(bottom=0)
    ax.legend(handles=[loss_line, nz_line], loc="best")
    ax.set_title("progress")
    return ax


def _objective_rows(history) -> list:
    if hasattr(history, "objective_"):
        history = history.objective_
    if isinstance(history, dict) and "objectives" in history:
        history = history["objectives"]
    rows = list(history)
    if not all(isinstance(r, dict) and "accesses" in r and "objective" in r for r in rows):
        raise TypeError("objective() takes a list of dicts with 'accesses' and 'objective' (one per pass), "
                        "a train() result with 'objectives' or an estimator with objective_")
    return rows


def objective(history, ax=None):
    """The objective after each pass against the data accesses so far (feature entries read), log y as
    in the SMIDAS paper's Section 4. Returns ``ax``."""
    rows = _objective_rows(history)
    ax = _axes(ax)
    x = np.array([r["accesses"] for r in rows], dtype=np.float64)
    y = np.array([r["objective"] for r in rows], dtype=np.float64)
    ax.plot(x, y, "o-", color="C0", markersize=4, label="objective")
    if y.size and np.all(y > 0):
        ax.set_yscale("log")
    ax.set_xlabel("data accesses (feature entries read)")
    ax.set_ylabel("objective (average loss + regularizer)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best")
    ax.set_title("objective per pass")
    return ax


def _series(results, default: str) -> dict:
    if results is None:
        return {}
    if isinstance(results, dict):
        return {str(k): list(v) for k, v in results.items()}
    return {default: list(results)}


def frontier(results, ax=None, baselines=None):
    """Test accuracy against non-zero weights (log x): ``results`` and ``baselines`` (dashed) are
    lists of (nonzero, accuracy) pairs or dicts name -> such lists. Returns ``ax``."""
    ax = _axes(ax)
    for dashed, series in ((False, _series(results, "streamlearn")), (True, _series(baselines, "baseline"))):
        for name, pairs in series.items():
            pts = sorted((float(n), float(a)) for n, a in pairs)
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            ax.plot(xs, ys, "s--" if dashed else "o-", markersize=4, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("non-zero weights")
    ax.set_ylabel("test accuracy")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best")
    ax.set_title("accuracy against sparsity")
    return ax


def _weight_entries(weights):
    """(indices or None, labels or None, values) of the non-zero weights."""
    if isinstance(weights, dict):
        named = [(str(k), float(v)) for k, v in weights.items() if v != 0.0]
        return None, [k for k, _ in named], np.array([v for _, v in named], dtype=np.float64)
    if hasattr(weights, "coef_"):
        weights = weights.coef_
    if hasattr(weights, "tocoo"):       # a SciPy sparse row
        coo = weights.tocoo()
        if coo.shape[0] != 1:
            raise ValueError(f"top_weights() takes one row of weights (got shape {coo.shape})")
        idx, vals = np.asarray(coo.col, np.int64), np.asarray(coo.data, np.float64)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim == 2 and w.shape[0] == 1:
            w = w[0]
        if w.ndim != 1:
            raise ValueError(f"top_weights() takes one row of weights (got shape {w.shape})")
        idx = np.flatnonzero(w)
        vals = w[idx]
    keep = vals != 0.0
    return idx[keep], None, vals[keep]


def top_weights(weights, names=None, k: int = 30, ax=None):
    """A horizontal bar chart of the ``k`` largest weights by magnitude, largest on top, labelled with
    their names (``names``: dict index -> name or a sequence; else "#index"). ``weights``: an estimator
    with ``coef_``, a SciPy sparse row, a dense 1-D or (1, N) array, or a dict {name: weight}.
    Returns ``ax``."""
    idx, labels, vals = _weight_entries(weights)
    order = np.argsort(-np.abs(vals), kind="stable")[:k]
    vals = vals[order]
    if labels is not None:
        labels = [labels[i] for i in order]
    else:
        labels = []
        for i in idx[order].tolist():
            if isinstance(names, dict):
                name = names.get(i)
            elif names is not None and 0 <= i < len(names):
                name = names[i]
            else:
                name = None
            labels.append(str(name) if name is not None else f"#{i}")
    ax = _axes(ax)
    ax.barh(np.arange(vals.shape[0]), vals, color=["C0" if v > 0 else "C3" for v in vals])
    ax.set_yticks(np.arange(vals.shape[0]), labels=labels, fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0.0, color="black", linewidth=0.6)
    ax.set_xlabel("weight")
    ax.set_title(f"top {vals.shape[0]} weights by |w|")
    return ax
