"""Stochastic coordinate descent (Shalev-Shwartz & Tewari 2009, Section 2, Algorithms 1 and 2) over
examples held in memory: the driver's parsed blocks are gathered into one column-oriented (CSC)
matrix, then each epoch runs d' coordinate steps (d' = the non-empty hashed columns) of the compiled
kernel ``streamlearn.learners.scd.scd_epochs``. See that module for the algorithm, the loss
conventions (streamlearn's squared loss (p - y)^2 has beta = 2: the paper's 1/2 (a - y)^2 with
lambda doubled; logistic has beta = 1/4), the step forms (``step``: "column", each coordinate's own
smoothness constant beta * (1/m) sum_i x_ij^2, the default; "paper", beta * max(1, max_i x_ij^2); both
Algorithm 1; "newton", CDN's Newton step with a line search, not the paper's) and the deviations
from the paper's literal statement (importance weights, base scores, non-empty columns only)."""

from __future__ import annotations

import time

import numpy as np

from streamlearn.learners import scd as K     # the kernels and the spec (this package)
from streamlearn.core.losses import LOGISTIC, LOSSES

ORDERS = {"random": K.RANDOM, "cyclic": K.CYCLIC, "greedy": K.GREEDY}
STEPS = {"column": K.COLUMN, "paper": K.PAPER, "newton": K.NEWTON}

# bytes per stored feature entry at the peak of fit_scd (see memory_needed)
_PER_ENTRY = (
    8 * 2      # gathered CSR copies (idx uint32 + val float32), the per-block copies and their concatenation
    + 8        # compact column id of every entry (int64), during the conversion
    + 8        # column map (dense, at most 8 bytes per entry) or the sorted copy of idx for np.unique
    + 16 * 2   # CSC rows (int64) + vals (float64), unmerged, and the merged copy
    + 48       # per column, at most one column per entry: cols, colptr, start/fill, betas, w (2 x float64)
)
_PER_EXAMPLE = (
    8 * 3 * 2  # labels, importance, bases: per-block copies and their concatenation
    + 8 * 2    # CSR row pointers (per-block copies + concatenation)
    + 8 * 3    # labels in loss space, normalized importance, scores z (float64)
)
_FIXED = 1 << 20


def memory_needed(n_examples: int, n_entries: int) -> int:
    """Bytes that ``fit_scd`` holds at its peak for ``n_examples`` kept examples with ``n_entries``
    feature entries in all: the gathered row-oriented copy, the column-oriented copy (built with an
    intermediate unmerged copy), the per-column state (weights w_j, w_{j+d'}, step curvature: counted
    as if every entry had its own column), and the per-example labels, importance weights and scores.
    Deliberately generous (every temporary counted as alive at once), plus 1 MiB."""
    return int(_FIXED + _PER_EXAMPLE * int(n_examples) + _PER_ENTRY * int(n_entries))


def _gather(blocks, code):
    """Copies of the labeled, positive-importance examples of ``blocks`` (concatenated CSR arrays,
    labels in loss space, importance weights, base scores) and the number of examples read."""
    idxs, vals, lens, labs, hs, bases = [], [], [], [], [], []
    seen = 0
    for b in blocks:
        n = b.labels.shape[0]
        seen += n
        if n == 0:
            continue
        labels = np.asarray(b.labels[:n], np.float64)
        weights = np.asarray(b.weights[:n], np.float64)
        keep = (labels == labels) & (weights > 0.0)
        if not keep.any():
            continue
        indptr = np.asarray(b.indptr[:n + 1], np.int64)
        length = np.diff(indptr)
        sel = np.repeat(keep, length)
        lo, hi = int(indptr[0]), int(indptr[n])
        idxs.append(np.array(b.idx[lo:hi][sel], np.uint32))
        vals.append(np.array(b.val[lo:hi][sel], np.float32))
        lens.append(length[keep])
        y = labels[keep]
        if code == LOGISTIC:
            y = np.where(y > 0.0, 1.0, -1.0)
        labs.append(np.array(y, np.float64))
        hs.append(np.array(weights[keep], np.float64))
        bases.append(np.array(b.bases[:n], np.float64)[keep])

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)

    lengths = cat(lens, np.int64)
    indptr = np.zeros(lengths.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    return (indptr, cat(idxs, np.uint32), cat(vals, np.float32), cat(labs, np.float64),
            cat(hs, np.float64), cat(bases, np.float64), seen)


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed (in [0, 2^32)) of numba's generator for epoch ``epoch`` (1-based) of a run seeded with
    ``seed``: each epoch reseeds, so a run does not depend on other users of the generator."""
    return int(np.random.SeedSequence([int(seed) % (1 << 64), int(epoch)]).generate_state(1)[0])


def fit_scd(blocks, bits: int, loss: str, lam: float, epochs: int, order, seed: int, on_epoch=None,
            init=None, step="column", progress=None):
    """Minimize (1/sum h) sum_i h_i L(<w, x_i> + base_i, y_i) + lam ||w||_1 by stochastic coordinate
    descent (Shalev-Shwartz & Tewari 2009, Algorithm 2) over the examples of ``blocks`` (parsed
    blocks with indptr, idx, val, labels, weights, bases; copied, so their arrays may be reused once
    the iterator moves on). Unlabeled examples and those with importance <= 0 are left out.

    ``bits``: the hashed columns are [0, 2^bits). ``loss``: "squared" or "logistic" (anything else
    raises ValueError). ``epochs`` passes of d' coordinate steps, d' the non-empty columns.
    ``order``: "random" / 0 (uniform coordinates, numba's generator seeded per epoch from ``seed``:
    the same seed gives bit-identical weights) or "cyclic" / 1 (0+, 0-, 1+, 1-, ... continuing
    across epochs; deterministic). ``step``: "column" / 1 (per-column beta_c = beta * sum_i hn_i
    x_ic^2, the coordinate's smoothness constant; the default), "paper" / 0 (beta * max(1, max_i
    x_ic^2)) or "newton" / 2 (CDN's Newton step with a line search, over the d' columns); see
    ``streamlearn.learners.scd``. ``on_epoch(epoch, w_index, w_values, accesses)`` is called after
    each epoch (1-based) with the non-zero effective weights so far and the feature entries read so
    far (each step reads its column's entries). ``init`` = (hashed columns, weights) starts from those
    weights (``-i``): a weight v becomes w_c = max(v, 0), w_{c+d'} = max(-v, 0); weights of columns
    the data never has are dropped (the objective is lowest with them at 0, and no step visits them).
    ``progress(state)`` is called once the data are in memory (``state["epoch"]`` 0) and after each
    epoch, with a dict: epoch, epochs, objective, loss, regularizer, nonzero (effective weights),
    accesses, seconds (of fitting so far), columns, examples.

    Returns (w_index int64, w_values float64, info): the hashed columns with a non-zero effective
    weight w_c - w_{c+d'} (increasing), those weights, and a dict of counts, timings and the
    objective after each epoch (``objectives``: average loss + lam ||w||_1 of the effective weights,
    as --objective reports; ``paper_objectives``: Eq. 7's R(w) = average loss + lam sum_j w_j over the
    2d' non-negative coordinates, which every step decreases -- it exceeds the former while some
    column has both w_c and w_{c+d'} positive, which Algorithm 1 allows transiently).
    """
    if loss not in ("squared", "logistic"):
        raise ValueError(f"--algo scd supports --loss_function squared or logistic, not {loss}")
    code = LOSSES[loss]
    if isinstance(order, str):
        if order not in ORDERS:
            raise ValueError(f"unknown coordinate order {order!r} (random, cyclic or greedy)")
        order = ORDERS[order]
    order = int(order)
    if order not in (K.RANDOM, K.CYCLIC, K.GREEDY):
        raise ValueError(f"unknown coordinate order {order} (0 = random, 1 = cyclic, 2 = greedy)")
    lam = float(lam)
    if not lam >= 0.0:
        raise ValueError(f"lambda must be >= 0, not {lam}")
    epochs = int(epochs)
    if epochs < 0:
        raise ValueError(f"epochs must be >= 0, not {epochs}")
    if isinstance(step, str):
        if step not in STEPS:
            raise ValueError(f"unknown step form {step!r} (column, paper or newton)")
        step = STEPS[step]
    step = int(step)
    if step not in (K.PAPER, K.COLUMN, K.NEWTON):
        raise ValueError(f"unknown step form {step} (0 = paper, 1 = column, 2 = newton)")
    if order == K.GREEDY and step == K.NEWTON:
        raise ValueError("the greedy order needs the column or paper step (Algorithm 1's bound)")

    t0 = time.perf_counter()
    indptr, idx, val, labels, h, z, seen = _gather(blocks, code)
    m = labels.shape[0]
    hsum = float(h.sum())
    hn = h / hsum if m else h
    cols, colptr, rows, vals = K.csr_to_csc(indptr, idx, val, 1 << int(bits))
    del indptr, idx, val
    d = cols.shape[0]
    beta = K.BETA[code]
    if step != K.PAPER:   # newton: beta_c is unused by the steps, kept for reference
        betas = K.column_smoothness(colptr, rows, vals, hn, beta)
    else:
        betas = K.column_betas(colptr, vals, beta)
    w = np.zeros(2 * d, np.float64)
    if init is not None and d:
        at = np.searchsorted(cols, np.asarray(init[0], np.int64))
        values = np.asarray(init[1], np.float64)
        ok = (at < d) & (cols[np.minimum(at, d - 1)] == np.asarray(init[0], np.int64))
        for c, v in zip(at[ok].tolist(), values[ok].tolist()):
            w[c], w[d + c] = max(v, 0.0), max(-v, 0.0)
            s, e = colptr[c], colptr[c + 1]
            z[rows[s:e]] += v * vals[s:e]
    t1 = time.perf_counter()

    def effective():
        eff = w[:d] - w[d:]
        nz = np.flatnonzero(eff)
        return cols[nz].astype(np.int64), eff[nz].copy()

    def objective():
        if m == 0:
            return float("nan"), 0.0, 0.0
        return K.scd_objective(labels, hn, z, w, lam, code)

    accesses = 0
    objectives, paper_objectives = [], []

    def report(epoch, ls, reg):
        if progress is not None:
            progress({"epoch": epoch, "epochs": epochs, "objective": ls + reg, "loss": ls, "regularizer": reg,
                      "nonzero": int(np.count_nonzero(w[:d] != w[d:])), "accesses": accesses,
                      "seconds": time.perf_counter() - t1, "columns": d, "examples": m})

    if progress is not None:
        ls, reg, _ = objective()
        report(0, ls, reg)
    for epoch in range(1, epochs + 1):
        accesses += int(K.scd_epochs(colptr, rows, vals, betas, labels, hn, z, w, lam, code, 1, d, order,
                                     epoch_seed(seed, epoch), (epoch - 1) * d, step))
        ls, reg, paper_reg = objective()
        objectives.append(ls + reg)
        paper_objectives.append(ls + paper_reg)
        if on_epoch is not None:
            on_epoch(epoch, *effective(), accesses)
        report(epoch, ls, reg)
    t2 = time.perf_counter()
    ls, reg, paper_reg = objective()
    w_index, w_values = effective()
    info = {
        "examples_read": seen, "examples": m, "entries": int(rows.shape[0]), "columns": d,
        "weight_sum": hsum, "beta": beta, "step": {v: k for k, v in STEPS.items()}[step],
        "epochs": epochs, "steps_per_epoch": d,
        "order": {v: k for k, v in ORDERS.items()}[order], "accesses": accesses,
        "loss": ls, "regularizer": reg, "objective": ls + reg,
        "paper_objective": ls + paper_reg,   # Eq. 7 at w in R^{2d}: lam * sum_j w_j
        "objectives": objectives, "paper_objectives": paper_objectives, "nonzero": int(w_index.shape[0]),
        "seconds_build": t1 - t0, "seconds_fit": t2 - t1,
    }
    return w_index, w_values, info
