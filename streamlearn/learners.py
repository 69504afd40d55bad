"""Learner registry: a configuration in, the weight-table shape, settings arrays and kernels out.

Each learner declares how many table columns it keeps per weight, which of them a model file must
store to resume training, the compiled kernel that walks a block, and the compiled ``finalize`` that
catches every weight up before saving. The driver only talks to this interface, so adding a learner
is one entry here plus its kernel module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from streamlearn.kernels import state as S
from streamlearn.kernels.losses import LOGISTIC, LOGISTIC_BOUND, LOSSES
from streamlearn.kernels.sgd import learn_sgd_block
from streamlearn.kernels.table import finalize_tg


@dataclass(frozen=True)
class Learner:
    name: str
    code: int
    columns: int                 # table columns per weight
    saved_columns: int           # columns a model file stores (after finalize)
    kernel: Callable             # (indptr, idx, val, labels, weights, bases, start, end, table, prm, st, preds) -> int
    finalize: Callable | None    # (table, prm, st) -> None; catches lazy weights up
    describe: Callable           # cfg -> str for the preamble


def _finalize_tg(table, prm, st):
    finalize_tg(table, st[S.S_CUM], prm[S.P_THRESHOLD])


LEARNERS = {
    "sgd": Learner("sgd", S.A_SGD, 1, 1, learn_sgd_block, None,
                   lambda c: "sgd (plain stochastic gradient descent)"),
    "tg": Learner("tg", S.A_TG, 2, 1, learn_sgd_block, _finalize_tg,
                  lambda c: f"tg (truncated gradient: l1 = {c.l1:g}, threshold = {c.threshold:g}, "
                            f"period = {c.period})"),
}


def get(name: str) -> Learner:
    return LEARNERS[name]


def rate_scale(cfg) -> float:
    """eta0 of the schedule eta0 * t^(-power_t): VW multiplies eta by initial_t^power_t (gd.cc), so
    ``-l`` is the rate at t = initial_t. With initial_t = 0 (where VW would never learn) it is eta."""
    if cfg.initial_t > 0:
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
    return prm


def make_state(cfg, prm: np.ndarray, saved: dict | None = None) -> np.ndarray:
    """State array: fresh, or restored from a model's saved learner state (counters start at 0)."""
    st = np.zeros(S.N_ST)
    st[S.S_T] = cfg.initial_t
    st[S.S_ETA] = prm[S.P_ETA0]
    for key, slot in SAVED_STATE.items():
        if saved and key in saved:
            st[slot] = saved[key]
    if LOSSES[cfg.loss] == LOGISTIC:      # fixed bounds, whatever the model was trained with
        st[S.S_MIN_LABEL] = -LOGISTIC_BOUND
        st[S.S_MAX_LABEL] = LOGISTIC_BOUND
    st[S.S_DUMP] = 1.0
    return st


#: learner state a model file keeps so that -i continues exactly where the run stopped
SAVED_STATE = {
    "t": S.S_T, "eta": S.S_ETA, "pending": S.S_PENDING, "n_learned": S.S_NLEARN,
    "min_label": S.S_MIN_LABEL, "max_label": S.S_MAX_LABEL,
}


def saved_state(st: np.ndarray) -> dict:
    return {key: float(st[slot]) for key, slot in SAVED_STATE.items()}
