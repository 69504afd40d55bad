"""Pegasos (Shalev-Shwartz, Singer & Srebro 2007; the baseline of Duchi & Singer 2009, Section 7.1 and
Fig. 1), one example per step, with a lazy global scale.

For the t-th learned example (t = 1, 2, ...; importance h), with eta_t = 1 / (lambda t) and the loss's
(sub)gradient g = L'(<w, x>, y) (the hinge loss's -y when y <w, x> < 1, the SVM of the paper; any loss
works the same way),

    w <- (1 - eta_t lambda) w - eta_t h g x          (the step; 0 when the loss is 0)
    w <- min(1, (1 / sqrt(lambda)) / ||w||_2) w       (the projection onto the ball of radius 1/sqrt(lambda))

``--l2-ball R`` sets another radius, and ``--l2-ball inf`` leaves the projection out (the FOBOS
paper's Fig. 1 runs logistic Pegasos "without projection" too).

The weights are stored as w = s v (``st[S_SCALE]`` = s, table column 0 = v) and the squared norm of v
is kept (``st[S_SQNORM]``), so the shrink and the projection are one multiplication of s and an
example costs O(its non-zeros): v_i += -eta_t h g x_i / s, and ||v||^2 follows each change exactly
(new^2 - old^2). The first step multiplies w by 1 - 1/1 = 0: the weights are reset (a pass over the
table, once). The objective is the SVM's lambda/2 ||w||^2 + the average loss.
"""

import math

import numpy as np
from numba import njit

from streamlearn.errors import OptionError
from streamlearn.core.loop import base_start, example_loop, sum_end
from streamlearn.core.losses import loss_dloss, loss_positive
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.core.state import P_L2, P_L2_BALL, S_MAX_LABEL, S_MIN_LABEL, S_NLEARN, S_T, own_slots


#: the learner's own state slots (``streamlearn.core.state.own_slots``)
SLOTS = own_slots("scale", "sqnorm")
S_SCALE = SLOTS["scale"]
S_SQNORM = SLOTS["sqnorm"]

V = 0       # the stored weight v_i (w_i = s v_i)


@njit(cache=True, nogil=True, inline="always")
def pegasos_view(cfg, st):
    return st[S_SCALE]


@njit(cache=True, nogil=True, inline="always")
def pegasos_weight(table, i, cfg, s):
    return s * table[i, V]


@njit(cache=True, nogil=True)
def rescale(table, st):
    """Fold the scale into the stored weights (w = v, s = 1)."""
    s = st[S_SCALE]
    if s != 1.0:
        for i in range(table.shape[0]):
            if table[i, V] != 0.0:
                table[i, V] *= s
        st[S_SQNORM] *= s * s
        st[S_SCALE] = 1.0


@njit(cache=True, nogil=True, inline="always")
def pegasos_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """One Pegasos step (module docstring)."""
    lam, radius = cfg
    t = st[S_NLEARN] + 1.0
    eta = 1.0 / (lam * t)
    shrink = 1.0 - eta * lam
    if shrink <= 0.0:                     # t = 1: w <- 0
        for i in range(table.shape[0]):
            table[i, V] = 0.0
        st[S_SCALE] = 1.0
        st[S_SQNORM] = 0.0
    else:
        st[S_SCALE] *= shrink
    if loss_positive(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL]):
        u = -eta * h * loss_dloss(code, p, y, tau) / st[S_SCALE]
        if u != 0.0 and math.isfinite(u):
            sq = st[S_SQNORM]
            for k in range(s, f):
                i = idx[k]
                old = table[i, V]
                new = old + u * val[k]
                table[i, V] = new
                sq += new * new - old * old
            st[S_SQNORM] = max(sq, 0.0)
    norm = st[S_SCALE] * math.sqrt(st[S_SQNORM])
    if norm > radius:
        st[S_SCALE] *= radius / norm
    if st[S_SCALE] < 1e-100:              # keep v in range (never on realistic runs: s ~ 1/t)
        rescale(table, st)
    st[S_T] += h
    st[S_NLEARN] = t


@njit(cache=True, nogil=True)
def learn_pegasos_block(block, state, start, end):
    """Examples start..end-1 with Pegasos (module docstring) through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, (prm[P_L2], prm[P_L2_BALL]), pegasos_view, pegasos_weight,
                        base_start, sum_end, pegasos_learn)


@njit(cache=True, nogil=True)
def finalize(table, prm, iprm, st):
    """The weights in force into the table (s folded into v)."""
    rescale(table, st)


@njit(cache=True, nogil=True)
def after_load(table, prm, iprm, st):
    """The loaded weights are w (s = 1); their squared norm."""
    sq = 0.0
    for i in range(table.shape[0]):
        sq += table[i, V] * table[i, V]
    st[S_SQNORM] = sq
    st[S_SCALE] = 1.0


def radius(cfg) -> float:
    """The radius of the ball projected onto: --l2-ball R, else 1/sqrt(lambda) (inf: no projection)."""
    return 1.0 / math.sqrt(cfg.l2) if cfg.l2_ball is None else cfg.l2_ball


def _settings(cfg, prm, iprm) -> None:
    prm[P_L2] = cfg.l2
    prm[P_L2_BALL] = radius(cfg)


def _check(cfg, flag) -> None:
    if not cfg.l2 > 0:
        raise OptionError("--algo pegasos needs --l2 LAMBDA > 0 (its step is 1/(LAMBDA t))")


def _regularizer(cfg, w):
    return cfg.l2 / 2 * float(np.dot(w, w)), f"{cfg.l2:g}/2 ||w||_2^2"


LEARNER = LearnerSpec(
    name="pegasos", order=12, summary="Pegasos, --l2", paper="Shalev-Shwartz, Singer & Srebro 2007",
    example=("--l2", "0.01"),
    kernel=learn_pegasos_block, finalize=finalize, after_load=after_load,
    describe=lambda c: ("pegasos (steps 1/(lambda t), "
                        + ("projection onto ||w|| <= 1/sqrt(lambda)" if c.l2_ball is None
                           else f"projection onto ||w|| <= {c.l2_ball:g}" if math.isfinite(c.l2_ball)
                           else "no projection")
                        + f": l2 = {c.l2:g})"),
    layout=lambda c: Layout(("w",), 1),
    settings=_settings,
    in_force=lambda c, table, st, rows: table[rows, V] * st[S_SCALE],
    weights_in_column=lambda c: True,
    regularizer=_regularizer,
    slots=SLOTS,
    slot_start={"scale": 1.0},
    options=("l2", "l2_ball"),
    check=_check,
    plain_only=lambda c: "its step is Pegasos's 1/(lambda t)",
    takes_invariant=False,
    rate_schedule=False,
)
