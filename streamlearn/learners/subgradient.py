"""subgradient: the L1-regularized subgradient method, the baseline of Langford, Li & Zhang 2009
(Section 3.2, eq. 5), with weights |w| < --threshold rounded to 0 at the end. It runs fobos's kernel
(``streamlearn.learners.fobos``, ``REG_SUBGRADIENT``: the sign of w taken before the gradient step)."""

import math

import numpy as np

from streamlearn.kernels.spec import Layout, LearnerSpec, l1_regularizer
from streamlearn.kernels.state import I_REG, REG_SUBGRADIENT
from streamlearn.kernels.table import W
from streamlearn.learners.fobos import after_load, finalize, learn_fobos_block


def _subgradient_settings(cfg, prm, iprm) -> None:
    iprm[I_REG] = REG_SUBGRADIENT


def _subgradient_in_force(cfg, table, st, rows):
    """The weight column, with |w| < theta rounded to 0 at the end of training (Section 3.2)."""
    w = table[rows, W]
    if math.isfinite(cfg.threshold):
        w[np.abs(w) < cfg.threshold] = 0.0
    return w


LEARNER = LearnerSpec(
    name="subgradient", order=7, summary="L1-regularized subgradient", paper="Langford, Li & Zhang 2009",
    example=("--l1", "1e-4"),
    kernel=learn_fobos_block, finalize=finalize,
    after_load=after_load,
    describe=lambda c: (f"subgradient (L1-regularized subgradient, {c.rule()}: l1 = {c.l1:g}"
                        + (f", rounded at |w| < {c.threshold:g} at the end" if math.isfinite(c.threshold)
                           else "") + ")"),
    layout=lambda c: Layout(("w", "pos", "list"), 1),     # the weight, the list of the non-zero ones
    settings=_subgradient_settings,
    in_force=_subgradient_in_force,
    regularizer=l1_regularizer,
    options=("l1", "threshold"),
    plain_only=lambda c: "it is the truncated-gradient paper's plain-SGD baseline",
)
