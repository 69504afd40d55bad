"""gravity: VW's own --l1 (gd.cc's L1 "gravity"): one global gravity accrued over all examples and
applied to each weight as it is read, with VW's update rules (vw-spec.md)."""

import numpy as np
from numba import njit

from streamlearn.errors import OptionError
from streamlearn.core.loop import base_start, example_loop, sum_end
from streamlearn.core.losses import loss_dloss
from streamlearn.core.multiclass import oaa_loop
from streamlearn.core.rules import gd_settings, gd_step, rule_layout, rule_saved
from streamlearn.core.spec import LearnerSpec, l1_regularizer
from streamlearn.core.state import S_MULT, own_slots
from streamlearn.core.table import W


#: the learner's own state slots (``streamlearn.core.state.own_slots``)
SLOTS = own_slots("gravity_vw")
S_GRAVITY_VW = SLOTS["gravity_vw"]


# ----------------------------------------------------------------------------- gravity (VW's --l1)

@njit(cache=True, nogil=True, inline="always")
def gravity_view(cfg, st):
    return st[S_GRAVITY_VW]


@njit(cache=True, nogil=True, inline="always")
def gravity_weight(table, i, cfg, gravity):
    """The stored (raw) weight truncated by the global gravity: sign(w) max(|w| - g, 0)
    (vw-spec.md §1c, "How --l1 is implemented"; VW's trunc_weight)."""
    w = table[i, W]
    if w > gravity:
        return w - gravity
    if w < -gravity:
        return w + gravity
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def gravity_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """The gradient step on the raw weights, then VW's global gravity grows by l1 * eta_bar, eta_bar
    = -u / loss'(p, y) the example's effective step (without the normalizer m and the per-feature
    rates), when |u| > 1e-8 and |loss'| > 1e-8 (vw-spec.md §1c, step 6)."""
    step, u = gd_step(idx, val, s, f, table, cfg, st, code, p, y, tau, h)
    u_bare = u / st[S_MULT] if cfg.normalized else u        # without the normalizer m
    if abs(u_bare) > 1e-8:
        d = loss_dloss(code, p, y, tau)
        if abs(d) > 1e-8:
            st[S_GRAVITY_VW] += cfg.gravity * (-u_bare / d)


@njit(cache=True, nogil=True)
def learn_gravity_block(block, state, start, end):
    """Examples start..end-1 with VW's --l1: one global gravity, raw weights truncated when read."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, gd_settings(prm, iprm), gravity_view, gravity_weight, base_start,
                        sum_end, gravity_learn)


@njit(cache=True, nogil=True)
def oaa_gravity_block(block, state, start, end):
    """``learn_gravity_block`` one-against-all: the gravity grows once per class update (K times per
    example, as VW's does)."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, gd_settings(prm, iprm), gravity_view, gravity_weight, base_start, sum_end,
                    gravity_learn)


@njit(cache=True, nogil=True)
def gravity_in_force(table, rows, gravity):
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        out[j] = gravity_weight(table, rows[j], None, gravity)
    return out




# ----------------------------------------------------------------------------- spec

def _gravity_check(cfg, flag) -> None:
    if "l2" in cfg.explicit:
        raise OptionError("--l2 does not apply to --algo gravity (VW's --l2 contraction is not provided)")


def merge(cfg, merged, inputs, models, state) -> None:
    """Merged models (``streamlearn.mix``): the raw weights z averaged and VW's global gravity
    averaged uniformly, then the weights in force truncated by it (``gravity_in_force``)."""
    if "w" in merged and "z" in merged:
        table = np.ascontiguousarray(merged["z"][:, None])
        merged["w"][:] = gravity_in_force(table, np.arange(table.shape[0], dtype=np.int64),
                                          float(state.get("gravity_vw", 0.0)))


LEARNER = LearnerSpec(
    name="gravity", order=11, summary="VW's own --l1: one global gravity", paper="VW 9.11.9 (vw-spec §1c)",
    example=("--l1", "1e-4"),
    kernel=learn_gravity_block, oaa_kernel=oaa_gravity_block,
    describe=lambda c: f"gravity (VW's --l1: one global gravity, {c.rule()}: l1 = {c.l1:g})",
    layout=lambda c: rule_layout(c, rate=True),
    in_force=lambda c, table, st, rows: gravity_in_force(table, rows, st[S_GRAVITY_VW]),
    saved=lambda c: [("z", 0)] + rule_saved(c, rule_layout(c)),
    readable_raw=True,
    regularizer=l1_regularizer,
    merge=merge,
    slots=SLOTS,
    options=("l1",),
    # --oaa K with a bare --l1: VW's one-against-all with VW's --l1, as VW users run it (a later
    # learner than ftrl, whose default it then overrides)
    default_for=("l1",),
    default_unless=("l2", "learning_rate", "power_t", "initial_t", "decay_learning_rate", "sgd", "adaptive",
                    "normalized", "invariant"),
    default_needs=("oaa",),
    check=_gravity_check,
)
