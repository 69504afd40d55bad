"""Regularizers as data (issue 26, step 7): each FOBOS regularizer is declared once,
with the options that set its strength, what the learners' kernels can do with it, its value (what
``--objective`` reports and ``streamlearn.batch`` minimizes) and, for the batch solver, its prox on a
matrix whose rows are features (Duchi & Singer 2009, Section 4: eq. 6 for l1, the squared and plain
L2 norm, eq. 8 and 9 for the mixed norms l1linf and l1l2 of each feature's row of class weights).

fobos, softmax, the batch solver and the objective read these declarations. Their compiled side is
keyed by the same names: fobos and softmax have one kernel per regularizer (``KERNELS`` in
``streamlearn.learners.fobos`` and ``streamlearn.learners.softmax``, the learners' ``LearnerSpec.variants``),
chosen once, at set-up, so no kernel branches on the regularizer. A kernel is the learner's example loop
with the regularizer's pieces: its release into the lazy cumulatives and its prox on a coordinate and on
a row (``streamlearn.core.prox``, shared by both learners), and the learner's read and add of a stored
weight, catch-up, finalize and after-load for it (a section per regularizer in each learner's module).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


def simplex_threshold(U: np.ndarray, z: float) -> np.ndarray:
    """Per column j of U >= 0 (d x K): theta_j >= 0 with sum_i [U_ij - theta_j]_+ = z when
    sum_i U_ij > z, else 0 (Duchi et al. 2008, Figure 1, by sorting: rho the largest j with
    sum_{i<=j} u_(i) - j u_(j) < z, theta = (sum_{i<=rho} u_(i) - z) / rho; the comparison in this
    form holds at j = 1 in floating point too)."""
    d = U.shape[0]
    V = -np.sort(-U, axis=0)
    C = np.cumsum(V, axis=0)
    j = np.arange(1, d + 1, dtype=np.float64)[:, None]
    ok = C - j * V < z
    rho = d - np.argmax(ok[::-1], axis=0)                # the last index where ok holds, 1-based
    cols = np.arange(U.shape[1])
    theta = (C[rho - 1, cols] - z) / rho
    return np.where(C[-1] > z, np.maximum(theta, 0.0), 0.0)


def _l1_prox(W, a):
    return np.sign(W) * np.maximum(np.abs(W) - a, 0.0)


def _l1l2_prox(W, a):
    norm = np.sqrt(np.einsum("ij,ij->i", W, W))
    keep = np.where(norm > a, 1.0 - a / np.where(norm > 0, norm, 1.0), 0.0)
    return W * keep[:, None]


def _l1linf_prox(W, a):
    A = np.abs(W)
    theta = simplex_threshold(A.T, a)                     # per row; 0 where ||row||_1 <= a
    capped = np.sign(W) * np.minimum(A, theta[:, None])
    capped[A.sum(axis=1) <= a] = 0.0
    return capped


@dataclass(frozen=True)
class Regularizer:
    """``strengths``: the options that set it (``--l1``, ``--l2``, ``--lambda``). ``rows``: a sum over
    each feature's row of class weights (the mixed norms; else over the weights one by one).
    ``lazy``: fobos keeps it per coordinate and catches a weight up when it is read (a model saves
    that state); ``per_feature``: its prox composes with per-feature rates. ``value(s, W)``: its value
    at the weights W (a vector, or the rows for a row regularizer) with strengths ``s`` (option ->
    value); ``form``: how --objective writes it, a format of the strengths. ``prox(W, a)``: the prox of
    a (the step times the strength) on W's rows, for the batch solver (None: not offered there)."""

    name: str
    strengths: tuple
    value: Callable
    form: str
    rows: bool = False
    lazy: bool = False
    per_feature: bool = False
    prox: Callable | None = None

    def of(self, cfg, W) -> tuple[float, str]:
        """(value, how it reads) with the configuration's strengths."""
        s = {name: getattr(cfg, name) for name in self.strengths}
        return self.value(s, W), self.form.format(**s)

    def reads(self, cfg) -> str:
        """How it reads with the configuration's strengths."""
        return self.form.format(**{name: getattr(cfg, name) for name in self.strengths})


REGULARIZERS = {r.name: r for r in (
    Regularizer("l1", ("l1",), lambda s, w: s["l1"] * float(np.abs(w).sum()), "{l1:g} ||w||_1",
                lazy=True, per_feature=True, prox=_l1_prox),
    Regularizer("l2sq", ("l2",), lambda s, w: s["l2"] / 2 * float(np.dot(w, w)), "{l2:g}/2 ||w||_2^2",
                lazy=True, per_feature=True),
    Regularizer("elastic", ("l1", "l2"),
                lambda s, w: s["l1"] * float(np.abs(w).sum()) + s["l2"] / 2 * float(np.dot(w, w)),
                "{l1:g} ||w||_1 + {l2:g}/2 ||w||_2^2", lazy=True),
    Regularizer("l2", ("lam",), lambda s, w: s["lam"] * math.sqrt(float(np.dot(w, w))), "{lam:g} ||w||_2"),
    Regularizer("linf", ("lam",), lambda s, w: s["lam"] * float(np.abs(w).max(initial=0.0)), "{lam:g} ||w||_inf"),
    Regularizer("l1l2", ("lam",), lambda s, R: s["lam"] * float(np.sqrt((R * R).sum(axis=1)).sum()),
                "{lam:g} sum_rows ||row||_2", rows=True, per_feature=True, prox=_l1l2_prox),
    Regularizer("l1linf", ("lam",), lambda s, R: s["lam"] * float(np.abs(R).max(axis=1, initial=0.0).sum()),
                "{lam:g} sum_rows ||row||_inf", rows=True, per_feature=True, prox=_l1linf_prox),
)}
