"""rounding: SGD with VW's update rules whose weights with |w| < threshold are set to 0 every
--period K steps (coefficient rounding, the baseline of Langford, Li & Zhang 2009, section 3.1),
lazily: each weight catches up on the roundings it missed when it is next read."""

import math

from numba import njit

from streamlearn.errors import OptionError
from streamlearn.core.loop import base_start, example_loop, sum_end
from streamlearn.core.multiclass import oaa_loop
from streamlearn.core.rules import gd_settings, gd_update, rule_layout, rule_saved
from streamlearn.core.spec import LearnerSpec, no_regularizer
from streamlearn.core.state import I_COL_LAST, P_THRESHOLD, S_NLEARN, own_slots
from streamlearn.core.table import W


#: the learner's own state slots (``streamlearn.core.state.own_slots``)
SLOTS = own_slots("rounds")
S_ROUNDS = SLOTS["rounds"]


# ----------------------------------------------------------------------------- rounding

@njit(cache=True, nogil=True, inline="always")
def rounding_view(cfg, st):
    return st[S_ROUNDS]


@njit(cache=True, nogil=True, inline="always")
def rounding_weight(table, i, cfg, rounds):
    """Weight i after the roundings it missed (``round_catch_up``)."""
    return round_catch_up(table, i, rounds, cfg.theta, cfg.col_last)


@njit(cache=True, nogil=True, inline="always")
def rounding_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """The gradient step; every K-th learned example one more rounding every weight owes."""
    gd_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h)
    if int(st[S_NLEARN]) % cfg.period == 0:
        st[S_ROUNDS] += 1.0


@njit(cache=True, nogil=True)
def learn_rounding_block(block, state, start, end):
    """Examples start..end-1 with SGD and coefficient rounding (Langford, Li & Zhang 2009, Section 3.1,
    eq. 4), lazily."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, gd_settings(prm, iprm), rounding_view, rounding_weight, base_start,
                        sum_end, rounding_learn)


@njit(cache=True, nogil=True)
def oaa_rounding_block(block, state, start, end):
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, gd_settings(prm, iprm), rounding_view, rounding_weight, base_start,
                    sum_end, rounding_learn)


@njit(cache=True, nogil=True, inline="always")
def round_catch_up(table, i, rounds, theta, clast):
    """Coefficient rounding (Langford, Li & Zhang 2009, Section 3.1, eq. 4), lazily: every K learned
    examples every weight with |w| < theta is set to 0. A weight untouched since its last write keeps
    its value, so the roundings it missed (``rounds`` counts them all, column ``clast`` holds the count
    at its last touch) act as one: it is 0 if |w| < theta and one happened, else unchanged. (The
    paper's T0 is written with the indicator I(|v| < theta); its text, "round small coefficients ...
    to zero", is what is implemented.)"""
    w = table[i, W]
    if table[i, clast] < rounds:
        table[i, clast] = rounds
        if w != 0.0 and abs(w) < theta:
            w = 0.0
            table[i, W] = 0.0
    return w


@njit(cache=True, nogil=True)
def finalize_rounding(table, prm, iprm, st):
    """Apply the roundings every weight owes (before saving)."""
    rounds = st[S_ROUNDS]
    theta = prm[P_THRESHOLD]
    clast = iprm[I_COL_LAST]
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            round_catch_up(table, i, rounds, theta, clast)




# ----------------------------------------------------------------------------- spec

def _rounding_check(cfg, flag) -> None:
    if math.isinf(cfg.threshold):
        raise OptionError("--algo rounding needs --threshold THETA (weights with |w| < THETA are set to 0 "
                          "every --period K steps)")


LEARNER = LearnerSpec(
    name="rounding", order=6, summary="SGD with coefficient rounding", paper="Langford, Li & Zhang 2009",
    example=("--threshold", "1e-3", "--period", "5"),
    kernel=learn_rounding_block, oaa_kernel=oaa_rounding_block,
    finalize=finalize_rounding,
    describe=lambda c: (f"rounding (SGD, then every {c.period} steps weights with |w| < "
                        f"{c.threshold:g} set to 0, {c.rule()})"),
    layout=lambda c: rule_layout(c, lazy=True, rate=True),
    saved=lambda c: rule_saved(c, rule_layout(c, lazy=True)),
    regularizer=no_regularizer,
    slots=SLOTS,
    options=("threshold", "period"),
    check=_rounding_check,
    check_stage="regularization",
)
