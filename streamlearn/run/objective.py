"""Objective reporting (``--objective``, ``--objective-data FILE``): after every pass, the average
loss of the training examples (or of a fixed file) at the weights in force, plus the learner's
regularizer, with the number of non-zero weights and the data accesses so far (feature entries
x_ij the learner has read) -- the quantities the SMIDAS paper's figures plot (Shalev-Shwartz &
Tewari 2009, Section 4)."""

from __future__ import annotations

import math

import numpy as np

from streamlearn import learners
from streamlearn.core.losses import LOSSES
from streamlearn.core.objective import class_loss_sums, loss_sums
from streamlearn.core.table import nonzero_rows
from streamlearn.run.model_io import rows_in_use
from streamlearn.run.views import StateView


def regularizer(cfg, w: np.ndarray) -> tuple[float, str]:
    """The regularizer of the learner's objective at weights ``w`` (by slot) and how it reads (the learner's
    spec): lambda ||w||_1 for the L1 learners (tg's gravity stands for its lambda), FOBOS's other
    norms, nothing for the constrained learners (l1ball, eg: the constraint ||w||_1 <= radius holds
    instead) and the unregularized ones."""
    return learners.get(cfg.algo).regularizer(cfg, w)


def in_force(cfg, table, prm, iprm, st) -> tuple[np.ndarray, np.ndarray]:
    """The weights in force after the learner's ``finalize`` (which changes ``table`` and ``st``):
    (rows, weights), the rows whose weight is not 0."""
    learners.finalize(cfg, table, prm, iprm, st)
    rows = nonzero_rows(table, learners.layout(cfg).saved)
    w = learners.weights_in_force(cfg, table, st, rows)
    keep = w != 0.0
    return rows[keep], w[keep]


def evaluate(cfg, arrays, blocks, allocate, accesses: int) -> dict:
    """The objective at a run's current weights (``arrays``: its ``RunState``) over ``blocks`` (parsed
    examples), reported with the data ``accesses`` so far. The weights in force are computed after the
    learner's ``finalize`` (exact catch-up), on a copy when the learner has an open mini-batch, so the
    run goes on unchanged."""
    table, st = arrays.table, arrays.st
    if cfg.batch_size > 1:
        table, st = table.copy(), st.copy()
    rows, w = in_force(cfg, table, arrays.prm, arrays.iprm, st)
    dense = allocate(cfg.bits, 1)
    dense[rows, 0] = w
    code = LOSSES.get(cfg.loss, -1)
    total = weight = 0.0
    for block in blocks:
        if cfg.classes:
            t, h = class_loss_sums(block.indptr, block.idx, block.val, block.labels, block.weights, block.bases,
                                   dense, code, cfg.quantile_tau, cfg.classes, cfg.class_width,
                                   StateView(st).index_mode == 0.0, learners.get(cfg.algo).joint)
        else:
            t, h = loss_sums(block.indptr, block.idx, block.val, block.labels, block.weights, block.bases,
                             dense, code, cfg.quantile_tau)
        total += t
        weight += h
    loss = total / weight if weight > 0 else math.nan
    reg, form = regularizer(cfg, dense[:, 0])
    reg *= learners.get(cfg.algo).regularizer_scale(cfg, st)
    out = {"loss": loss, "regularizer": reg, "form": form, "objective": loss + reg,
           "l1_norm": float(np.abs(w).sum()), "nonzero": int(w.shape[0]), "accesses": accesses}
    if cfg.classes:
        out["rows"] = rows_in_use(rows, cfg.class_width)
    return out


def describe(result: dict, passes: int, where: str) -> str:
    """One line for stderr."""
    return (f"objective after pass {passes} ({where}): {result['objective']:.12g} = average loss "
            f"{result['loss']:.12g} + {result['form']} ({result['regularizer']:.12g}); ||w||_1 = "
            f"{result['l1_norm']:.12g}; non-zero weights = {result['nonzero']}"
            + (f"; non-zero rows = {result['rows']}" if "rows" in result else "")
            + f"; data accesses = {result['accesses']}")
