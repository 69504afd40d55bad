"""Learner registry: a configuration in, the weight-table shape, settings arrays and kernels out.

Each learner declares whether it regularizes lazily (and so keeps a LAST column per weight), the
compiled kernel that walks a block, and the compiled ``finalize`` that catches every weight up before
saving. The table layout follows from the learner and the update rule (``layout``). The driver only
talks to this interface, so adding a learner is one entry here plus its kernel module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from streamlearn.kernels import state as S
from streamlearn.config import REG_STRENGTHS
from streamlearn.kernels.losses import LOGISTIC, LOGISTIC_BOUND, LOSSES
from streamlearn.kernels import eg, fobos, l1ball, smidas
from streamlearn.kernels.gd import finalize_rounding, finalize_tg, learn_gd_block
from streamlearn.kernels.table import effective_weights


@dataclass(frozen=True)
class Learner:
    name: str
    code: int
    lazy: bool                   # keeps the cumulative regularization at each weight's last touch
    kernel: Callable             # (indptr, idx, val, labels, weights, bases, start, end, table, prm, st, preds) -> int
    finalize: Callable | None    # (table, prm, st) -> None; catches lazy weights up
    describe: Callable           # cfg -> str for the preamble
    batch: bool = False          # a batch method, trained by streamlearn.scd_run instead of the session


LEARNERS = {
    "sgd": Learner("sgd", S.A_SGD, False, learn_gd_block, None,
                   lambda c: f"sgd (gradient descent, {c.rule()})"),
    "tg": Learner("tg", S.A_TG, True, learn_gd_block, finalize_tg,
                  lambda c: f"tg (truncated gradient, {c.rule()}: l1 = {c.l1:g}, "
                            + ("cumulative penalty" if c.cumulative_penalty else f"threshold = {c.threshold:g}")
                            + f", period = {c.period})"),
    "l1ball": Learner("l1ball", S.A_L1BALL, False, l1ball.learn_l1ball_block, l1ball.finalize,
                      lambda c: f"l1ball (projected SGD onto the L1 ball, {c.rule()}: radius = {c.radius:g}, "
                                f"projection = {c.projection}, batch size = {c.batch_size})"),
    "fobos": Learner("fobos", S.A_FOBOS, True, fobos.learn_fobos_block, fobos.finalize,
                     lambda c: f"fobos (forward-backward splitting, {c.rule()}: reg = {c.reg}, "
                               + ", ".join(f"{n} = {getattr(c, n):g}" for n in REG_STRENGTHS[c.reg])
                               + f", batch size = {c.batch_size})"),
    "eg": Learner("eg", S.A_EG, False, eg.learn_eg_block, eg.finalize,
                  lambda c: f"eg (exponentiated gradient, w+ and w-, {c.rule()}: radius = {c.radius:g}, "
                            f"batch size = {c.batch_size})"),
    "smidas": Learner("smidas", S.A_SMIDAS, False, smidas.learn_smidas_block, smidas.finalize,
                      lambda c: f"smidas (stochastic mirror descent made sparse, {c.rule()}: l1 = {c.l1:g}, "
                                f"p = {smidas_p(c):g})"),
    "rounding": Learner("rounding", S.A_ROUNDING, True, learn_gd_block, finalize_rounding,
                        lambda c: f"rounding (SGD, then every {c.period} steps weights with |w| < "
                                  f"{c.threshold:g} set to 0, {c.rule()})"),
    "subgradient": Learner("subgradient", S.A_SUBGRADIENT, False, fobos.learn_fobos_block, fobos.finalize,
                           lambda c: f"subgradient (L1-regularized subgradient, {c.rule()}: l1 = {c.l1:g}"
                                     + (f", rounded at |w| < {c.threshold:g} at the end"
                                        if math.isfinite(c.threshold) else "") + ")"),
    # a batch method, run by streamlearn.scd_run; its saved weights predict with the plain kernel
    "scd": Learner("scd", S.A_SCD, False, learn_gd_block, None,
                   lambda c: f"scd (stochastic coordinate descent, a batch method: l1 = {c.l1:g}, "
                             f"{c.passes} epochs, {c.cd_order} coordinates)", batch=True),
}


def smidas_p(cfg) -> float:
    """p of SMIDAS's p-norm link: --p-norm, else 2 ln d with d = 2^b hashed weights (Algorithm 3)."""
    return cfg.p_norm if cfg.p_norm is not None else max(2.0, 2.0 * cfg.bits * math.log(2.0))

PROJECTIONS = {"tree": S.PROJ_TREE, "linear": S.PROJ_LINEAR, "sort": S.PROJ_SORT}
REGS = {"l1": S.REG_L1, "l2sq": S.REG_L2SQ, "elastic": S.REG_ELASTIC, "l2": S.REG_L2, "linf": S.REG_LINF}
#: FOBOS regularizers caught up lazily per coordinate (LAST columns); l2 and linf act globally
LAZY_REGS = ("l1", "l2sq", "elastic")


@dataclass(frozen=True)
class Layout:
    """Columns of the weight table: W first, then G (adaptive), N (normalized), LAST (lazy); -1 when
    absent. ``saved`` columns (W, G, N) are what a model needs to resume training exactly."""
    columns: int
    saved: int
    g: int = -1
    n: int = -1
    last: int = -1
    pen: int = -1
    last2: int = -1


def layout(cfg) -> Layout:
    batch = 2 if cfg.batch_size > 1 else 0      # + pending step and row list (the last two columns)
    if cfg.algo == "l1ball":          # stored weight, heap position, heap row and key (kernels/l1ball.py)
        return Layout(4 + batch, 1)
    if cfg.algo == "eg":              # log-weights of w+ and w- (kernels/eg.py)
        return Layout(2 + batch, 2)
    if cfg.algo == "fobos" and cfg.reg not in LAZY_REGS:   # weight, then epoch (l2) or list (linf)
        return Layout((2 if cfg.reg == "l2" else 3) + batch, 1)
    if cfg.algo in ("smidas", "subgradient"):    # weight (smidas: theta), list of the non-zero ones
        return Layout(3, 1)
    if cfg.algo == "scd":                        # the weights, filled in after the fit
        return Layout(1, 1)
    col = 1
    g = n = last = pen = -1
    if cfg.adaptive:
        g, col = col, col + 1
    if cfg.normalized:
        n, col = col, col + 1
    if cfg.algo == "tg" and cfg.cumulative_penalty:
        pen, col = col, col + 1
    saved = col
    last2 = -1
    if LEARNERS[cfg.algo].lazy:
        last, col = col, col + 1
    if cfg.algo == "fobos" and cfg.reg == "elastic":
        last2, col = col, col + 1
    if cfg.algo == "fobos":
        col += batch
    return Layout(col, saved, g, n, last, pen, last2)


def state_columns(cfg) -> list[tuple[str, int]]:
    """Table columns a model saves beside the weights in force ("w") so that -i resumes exactly:
    (name, column). The raw weight "z" and penalty "p" of tg's cumulative penalty, G and N of the
    per-feature rates, eg's log-weights; none for the learners that resume from their weights."""
    lay = layout(cfg)
    if cfg.algo == "eg":
        return [("ep", 0), ("en", 1)]
    if cfg.algo == "smidas":
        return [("theta", 0)]
    if cfg.algo in ("l1ball", "subgradient", "scd") or (cfg.algo == "fobos" and cfg.reg not in LAZY_REGS):
        return []
    cols = [("z", 0)] if lay.pen >= 0 else []
    cols += [("g", lay.g)] if lay.g >= 0 else []
    cols += [("n", lay.n)] if lay.n >= 0 else []
    cols += [("p", lay.pen)] if lay.pen >= 0 else []
    return cols


def weight_column(cfg) -> int | None:
    """Table column a saved weight "w" is restored into (None: the learner cannot resume from its
    weights alone)."""
    if cfg.algo in ("eg", "smidas"):
        return None
    return 0


def get(name: str) -> Learner:
    return LEARNERS[name]


def weights_in_force(cfg, table, st, rows):
    """The weights the model predicts with, for the given rows (after ``finalize``): the table's
    weight column, or what a learner's lazy representation means by it."""
    if cfg.algo == "l1ball":
        return l1ball.in_force(table, rows, st[S.S_CUM])
    if cfg.algo == "eg":
        return eg.in_force(table, rows, cfg.radius, st)
    if cfg.algo == "fobos":
        return fobos.in_force(table, rows, REGS[cfg.reg], st)
    if cfg.algo == "smidas":
        return smidas.in_force(table, rows, smidas_p(cfg), st)
    w = effective_weights(table, rows, layout(cfg).pen)
    if cfg.algo == "subgradient" and math.isfinite(cfg.threshold):    # rounding at the end (Section 3.2)
        w[np.abs(w) < cfg.threshold] = 0.0
    return w


def after_load(cfg, table, prm, st) -> None:
    """Rebuild what a learner derives from the loaded weights (the l1ball heap, fobos l2's norm and
    linf's list, eg's normalizer)."""
    if cfg.algo == "l1ball":
        l1ball.after_load(table, prm, st)
    elif cfg.algo == "eg":
        eg.after_load(table, prm, st)
    elif cfg.algo in ("fobos", "subgradient"):
        fobos.after_load(table, prm, st)
    elif cfg.algo == "smidas":
        smidas.after_load(table, prm, st)


def rate_scale(cfg) -> float:
    """eta0 of the schedule eta0 * t^(-power_t). Without per-feature rates VW multiplies eta by
    initial_t^power_t (gd.cc), so ``-l`` is the rate at t = initial_t. With initial_t = 0 (where VW
    would never learn) it is eta."""
    if cfg.initial_t > 0 and not cfg.per_feature:
        return cfg.learning_rate * math.pow(cfg.initial_t, cfg.power_t)
    return cfg.learning_rate


def make_prm(cfg, train: bool, holdout: int = 0) -> np.ndarray:
    """Settings array for a run (see streamlearn.kernels.state)."""
    prm = np.zeros(S.N_PRM)
    loss = LOSSES[cfg.loss]
    prm[S.P_LOSS] = loss
    prm[S.P_TAU] = cfg.quantile_tau
    prm[S.P_ALGO] = LEARNERS[cfg.algo].code
    prm[S.P_ETA0] = rate_scale(cfg)
    prm[S.P_POWER_T] = cfg.power_t
    prm[S.P_L1] = cfg.l1
    prm[S.P_THRESHOLD] = cfg.threshold
    prm[S.P_PERIOD] = cfg.period
    prm[S.P_HOLDOUT] = holdout
    prm[S.P_TRAIN] = 1.0 if train else 0.0
    prm[S.P_FIXED_BOUNDS] = 1.0 if (loss == LOGISTIC or not train) else 0.0
    prm[S.P_BINARY] = 1.0 if cfg.binary else 0.0
    prm[S.P_ADAPTIVE] = 1.0 if cfg.adaptive else 0.0
    prm[S.P_NORMALIZED] = 1.0 if cfg.normalized else 0.0
    prm[S.P_INVARIANT] = 1.0 if cfg.invariant else 0.0
    # VW: "initial_t fake examples with squared gradient 1" for every weight (adaptive only)
    prm[S.P_G0] = cfg.initial_t if cfg.adaptive else 0.0
    lay = layout(cfg)
    prm[S.P_COL_G] = lay.g
    prm[S.P_COL_N] = lay.n
    prm[S.P_COL_LAST] = lay.last
    prm[S.P_COL_PEN] = lay.pen
    if cfg.algo == "l1ball":
        prm[S.P_RADIUS] = cfg.radius
        prm[S.P_PROJECTION] = PROJECTIONS[cfg.projection]
    if cfg.algo == "eg":
        prm[S.P_RADIUS] = cfg.radius
    if cfg.algo == "smidas":
        prm[S.P_PNORM] = smidas_p(cfg)
    if cfg.algo == "subgradient":
        prm[S.P_REG] = S.REG_SUBGRADIENT
    if cfg.algo == "fobos":
        prm[S.P_REG] = REGS[cfg.reg]
        prm[S.P_L2] = cfg.l2
        prm[S.P_LAMBDA] = cfg.lam
        prm[S.P_COL_LAST2] = lay.last2
    prm[S.P_BATCH] = cfg.batch_size
    prm[S.P_SEED] = cfg.random_seed
    return prm


def make_state(cfg, prm: np.ndarray, saved: dict | None = None) -> np.ndarray:
    """State array: fresh, or restored from a model's saved learner state (counters start at 0)."""
    st = np.zeros(S.N_ST)
    st[S.S_T] = cfg.initial_t
    st[S.S_ETA] = prm[S.P_ETA0]
    if cfg.initial_t > 0:      # VW: normalizer sums as if initial_t examples of norm 1 had been seen
        st[S.S_NORM_SUM] = st[S.S_TOTAL_W] = cfg.initial_t
    st[S.S_MULT] = 1.0
    for key, slot in SAVED_STATE.items():
        if saved and key in saved:
            st[slot] = saved[key]
    if LOSSES[cfg.loss] == LOGISTIC:      # fixed bounds, whatever the model was trained with
        st[S.S_MIN_LABEL] = -LOGISTIC_BOUND
        st[S.S_MAX_LABEL] = LOGISTIC_BOUND
    st[S.S_DUMP] = 1.0
    st[S.S_SCALE] = 1.0
    return st


#: learner state a model file keeps so that -i continues exactly where the run stopped
SAVED_STATE = {
    "t": S.S_T, "eta": S.S_ETA, "pending": S.S_PENDING, "n_learned": S.S_NLEARN,
    "min_label": S.S_MIN_LABEL, "max_label": S.S_MAX_LABEL,
    "norm_sum": S.S_NORM_SUM, "total_weight": S.S_TOTAL_W, "multiplier": S.S_MULT,
}


def saved_state(st: np.ndarray) -> dict:
    return {key: float(st[slot]) for key, slot in SAVED_STATE.items()}
