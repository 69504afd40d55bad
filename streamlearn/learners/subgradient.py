"""subgradient: the L1-regularized subgradient method, the baseline of Langford, Li & Zhang 2009
(Section 3.2, eq. 5), with weights |w| < --threshold rounded to 0 at the end. Its kernel is fobos's
step (``streamlearn.learners.fobos.fobos_step``) over the list of the non-zero weights (as fobos's
linf), with the sign of w taken before the gradient step and no prox after it."""

import math

import numpy as np
from numba import njit

from streamlearn.core.loop import base_start, example_loop, state_view, sum_end
from streamlearn.core.nonzero_list import LIST, POS
from streamlearn.core.spec import Layout, LearnerSpec, l1_regularizer
from streamlearn.core.state import P_L1, S_NNZ
from streamlearn.core.table import W
from streamlearn.learners.fobos import (
    after_load_listed, fobos_settings, fobos_step, listed_add, listed_weight, no_step,
)


@njit(cache=True, nogil=True)
def subgradient_pass(table, st, a):
    """The L1 part of the subgradient method (Section 3.2, eq. 5): w_j -= a sgn(w_j) for every
    non-zero weight (a weight crosses 0 rather than stopping there, so the method is not sparse and
    cannot be caught up lazily); the list drops weights that became exactly 0. O(n), n = listed
    weights."""
    n = int(st[S_NNZ])
    m = 0
    for p in range(n):
        i = int(table[p, LIST])
        w = table[i, W]
        if w > 0.0:
            w -= a
        elif w < 0.0:
            w += a
        table[i, W] = w
        if w != 0.0:
            table[m, LIST] = i
            table[i, POS] = m + 1
            m += 1
        else:
            table[i, POS] = 0.0
    st[S_NNZ] = m


@njit(cache=True, nogil=True, inline="always")
def subgradient_before(table, prm, iprm, st, step):
    """eq. 5's sgn(w), taken at the weights before the gradient step, with strength eta lambda."""
    subgradient_pass(table, st, prm[P_L1] * step)


@njit(cache=True, nogil=True, inline="always")
def subgradient_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    fobos_step(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, listed_weight, listed_add,
               subgradient_before, no_step)


@njit(cache=True, nogil=True)
def learn_subgradient_block(block, state, start, end):
    """Examples start..end-1 with the subgradient method through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, listed_weight, base_start,
                        sum_end, subgradient_learn)


def _subgradient_in_force(cfg, table, st, rows):
    """The weight column, with |w| < theta rounded to 0 at the end of training (Section 3.2)."""
    w = table[rows, W]
    if math.isfinite(cfg.threshold):
        w[np.abs(w) < cfg.threshold] = 0.0
    return w


LEARNER = LearnerSpec(
    name="subgradient", order=7, summary="L1-regularized subgradient", paper="Langford, Li & Zhang 2009",
    example=("--l1", "1e-4"),
    kernel=learn_subgradient_block,
    after_load=after_load_listed,
    describe=lambda c: (f"subgradient (L1-regularized subgradient, {c.rule()}: l1 = {c.l1:g}"
                        + (f", rounded at |w| < {c.threshold:g} at the end" if math.isfinite(c.threshold)
                           else "") + ")"),
    layout=lambda c: Layout(("w", "pos", "list"), 1),     # the weight, the list of the non-zero ones
    in_force=_subgradient_in_force,
    regularizer=l1_regularizer,
    options=("l1", "threshold"),
    plain_only=lambda c: "it is the truncated-gradient paper's plain-SGD baseline",
)
