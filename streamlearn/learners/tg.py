"""Truncated gradient (``--algo tg``) is Langford, Li & Zhang 2009, eq. (6), with each weight's own rate:

    w_i <- T1(w_i - step_i, lambda_i, theta),   lambda_i = K g * (scale * m) * r_i at every K-th step

implemented lazily (§4 of that paper): each learned example accrues g * scale * m of global gravity;
every K-th learned example releases what accrued into the cumulative ``st[S_CUM]``; each weight pays
r_i times what was released since its last touch when it is next read (``catch_up``) or at save time.
r_i only changes when the weight is touched, so the lazy result equals truncating every weight at
every K-th step with its current rate. With plain SGD (r_i = 1, m = 1) and unit importance weights the
released amount is exactly the paper's eta_t K g.
"""

import math

import numpy as np

from numba import njit

from streamlearn.errors import OptionError
from streamlearn.core.loop import base_start, example_loop, sum_end
from streamlearn.core.multiclass import oaa_loop
from streamlearn.core.rules import gd_settings, gd_update, rule_layout, rule_saved
from streamlearn.core.spec import LearnerSpec, l1_regularizer
from streamlearn.core.state import (
    I_COL_G, I_COL_LAST, I_COL_N, I_COL_PEN, I_COL_RATE, P_G0, P_POWER_T, P_THRESHOLD, S_NLEARN, own_slots,
)
from streamlearn.core.table import (
    catch_up, catch_up_penalty, catch_up_plain, effective_weights, finalize_lazy,
)


#: the learner's own state slots (``streamlearn.core.state.own_slots``)
SLOTS = own_slots("gravity", "pending")
S_GRAVITY = SLOTS["gravity"]
S_PENDING = SLOTS["pending"]


# ----------------------------------------------------------------------------- tg

@njit(cache=True, nogil=True, inline="always")
def tg_view(cfg, st):
    return st[S_GRAVITY]


@njit(cache=True, nogil=True, inline="always")
def tg_weight(table, i, cfg, gravity_released):
    """Weight i caught up with the gravity released since its last touch (``catch_up``)."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, cpen, gravity, theta, period, cr = cfg
    return catch_up(table, i, gravity_released, theta, clast, cpen, cg, cn, g0, sqrt_rate, power_t, cr)


@njit(cache=True, nogil=True, inline="always")
def tg_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """The gradient step, then eq. (6)'s gravity lazily (module docstring): accrue g * step, release
    what accrued into ``st[S_GRAVITY]`` every K-th learned example."""
    step = gd_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h)
    st[S_PENDING] += cfg.gravity * step
    if int(st[S_NLEARN]) % cfg.period == 0:
        st[S_GRAVITY] += st[S_PENDING]
        st[S_PENDING] = 0.0


@njit(cache=True, nogil=True, inline="always")
def tg_weight_plain(table, i, cfg, gravity_released):
    """``tg_weight`` under --sgd without a threshold (``catch_up_plain``)."""
    return catch_up_plain(table, i, gravity_released, cfg.col_last)


@njit(cache=True, nogil=True, inline="always")
def tg_weight_penalty(table, i, cfg, gravity_released):
    """``tg_weight`` with the cumulative penalty under the default rule (``catch_up_penalty``)."""
    return catch_up_penalty(table, i, gravity_released, cfg.col_last, cfg.col_pen, cfg.col_rate)


@njit(cache=True, nogil=True)
def learn_tg_block(block, state, start, end):
    """Examples start..end-1 with lazy truncated gradient (Langford, Li & Zhang 2009, eq. 6, §4). The
    two common layouts -- plain SGD without a threshold, and the default rule's cumulative penalty --
    run a loop whose catch-up has no run-time branches on the layout (measured: 41.8 -> 22.9 ns per
    feature entry for the first at -b 20); every other combination runs the general catch-up."""
    table, prm, iprm, st, ctr = state
    cfg = gd_settings(prm, iprm)
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, cpen, gravity, theta, period, cr = cfg
    if cpen < 0 and cg < 0 and cn < 0 and theta == math.inf:
        return example_loop(block, state, start, end, cfg, tg_view, tg_weight_plain, base_start, sum_end, tg_learn)
    if cpen >= 0 and cr >= 0:
        return example_loop(block, state, start, end, cfg, tg_view, tg_weight_penalty, base_start, sum_end, tg_learn)
    return example_loop(block, state, start, end, cfg, tg_view, tg_weight, base_start, sum_end, tg_learn)


@njit(cache=True, nogil=True)
def oaa_tg_block(block, state, start, end):
    """``learn_tg_block`` one-against-all (the general catch-up)."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, gd_settings(prm, iprm), tg_view, tg_weight, base_start, sum_end, tg_learn)


@njit(cache=True, nogil=True)
def finalize_tg(table, prm, iprm, st):
    """Catch every weight of a truncated-gradient table up (see ``finalize_lazy``)."""
    finalize_lazy(table, st[S_GRAVITY], prm[P_THRESHOLD], iprm[I_COL_LAST], iprm[I_COL_PEN], iprm[I_COL_G],
                  iprm[I_COL_N], prm[P_G0], prm[P_POWER_T] == 0.5, prm[P_POWER_T], iprm[I_COL_RATE])




# ----------------------------------------------------------------------------- spec

def _tg_penalty(cfg) -> bool:
    return bool(cfg.cumulative_penalty)


def _tg_f32(cfg) -> bool:
    """tg keeps a float32 table (issue 30) under per-feature rates with the cumulative penalty (the
    default); with --threshold (--no-cumulative-penalty) a weight's truncation hangs on |w| <= theta,
    which a float32 weight at theta would flip, so that table stays float64, as under --sgd."""
    return bool(cfg.per_feature and cfg.cumulative_penalty)


def _tg_check(cfg, flag) -> None:
    if cfg.cumulative_penalty and "threshold" in cfg.explicit:
        raise OptionError("--threshold does not apply with --cumulative-penalty (the default with "
                          "per-feature rates); add --no-cumulative-penalty")


def merge(cfg, merged, inputs, models, state) -> None:
    """Merged models (``streamlearn.mix``) with the cumulative penalty: the raw weight z and the
    penalty averaged alike, then the weight in force z shrunk by it (``effective_weights``)."""
    if "w" in merged and "z" in merged and "p" in merged:
        table = np.ascontiguousarray(np.column_stack([merged["z"], merged["p"]]))
        merged["w"][:] = effective_weights(table, np.arange(table.shape[0], dtype=np.int64), 1)


LEARNER = LearnerSpec(
    name="tg", order=1, summary="truncated gradient", paper="Langford, Li & Zhang 2009",
    example=("--l1", "1e-4"),
    kernel=learn_tg_block, oaa_kernel=oaa_tg_block, finalize=finalize_tg,
    describe=lambda c: (f"tg (truncated gradient, {c.rule()}: l1 = {c.l1:g}, "
                        + ("cumulative penalty" if c.cumulative_penalty else f"threshold = {c.threshold:g}")
                        + f", period = {c.period})"),
    layout=lambda c: rule_layout(c, penalty=_tg_penalty(c), lazy=True, rate=True, f32=_tg_f32(c)),
    saved=lambda c: rule_saved(c, rule_layout(c, penalty=_tg_penalty(c), lazy=True, rate=True, f32=_tg_f32(c))),
    in_force=lambda c, table, st, rows: effective_weights(
        table, rows, rule_layout(c, _tg_penalty(c), True, rate=True, f32=_tg_f32(c)).pen),
    weights_in_column=lambda c: not _tg_penalty(c),
    regularizer=l1_regularizer,
    merge=merge,
    slots=SLOTS,
    options=("l1", "threshold", "period", "cumulative_penalty"),
    selected_by=("l1", "threshold", "period", "cumulative_penalty"),
    check=_tg_check,
)
