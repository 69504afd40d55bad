"""FreeGrad (diagonal), as VW 9.11.9's ``--freegrad`` computes it.

The method is Mhammedi & Koolen, "Lipschitz and Comparator-Norm Adaptivity in Online Learning"
(COLT 2020): per coordinate, a parameter-free potential on the sum G and the sum of squares V of the
gradients, with a "hint" h (the first non-zero |gradient|, then the largest) against which larger
gradients are clipped. VW's ``--freegrad`` (``freegrad.cc``: ``inner_freegrad_predict``,
``inner_freegrad_update_after_prediction``) keeps for each coordinate i (VW's six weight values, in
VW's order)::

    w   the weight the coordinate predicted with at its last update
    G   sum of the (clipped) gradients                (VW: G_SUM)
    V   sum of their squares                          (V_SUM)
    h1  the first hint: the first non-zero |gradient| (H1)
    ht  the hint: the largest |gradient| seen          (HT)
    S   sum of |clipped gradient| / ht                 (S)

The weight of a coordinate (Equation 9 of the paper), eps = --fepsilon (default 1), 0 while h1 is 0::

    w(G, V, h1, ht) = -G eps (2V + ht|G|) h1^2 / (2 (V + ht|G|)^2 sqrt(V)) exp(G^2 / (2V + 2 ht|G|))

Learning an example (x, y, importance h), L = --flipschitz_const (default 0):

1. the raw score is sum_i w(G_i, V_i, h1_i, ht_i) x_i (without the example's initial score), clamped
   to the label bounds (the example's label included); VW's learn returns it, so -p and the progress
   table show it and the loss counts it; the run's total importance T grows by h;
2. with d = loss'(p, y) (the importance enters below), for each feature (in the example's order; a
   feature that occurs twice is updated twice), g = d x_i:

       w_i = w(G_i, V_i, h1_i, ht_i)                   if h1_i > 0
       stop here if g = 0
       c = g
       if h1_i = 0:  h1_i = ht_i = (|g| if L = 0 else L);  V_i += h g^2
       elif |g| > ht_i:  c = g ht_i / |g|;  ht_i = |g|
       G_i += c + (h - 1) g;  V_i += c^2 + (h - 1) g^2
       S_i += |c| / ht + (h - 1) |g| / ht_i            if ht > 0 (ht: the hint before this update)

Prediction outside learning (held-out and unlabeled examples, -t, ``predict``) is
base + sum_i w_i x_i with the stored w. An example of importance 0 is not learned. A model keeps the
six values and T (-i continues exactly; w is restored as it is). VW's --restart, --project and
--radius (the projection's) are not implemented (the last is streamlearn's l1ball radius).

Everything is float32 in VW's order of operations (T in double); the table stores the float32 values
(exactly, in float64), so the model equals VW's bit for bit where the inputs are the same floats.
VW's learning rates, -l, --power_t and --initial_t do not enter; --l1/--l2 are refused.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from streamlearn.core.loop import learner_loop, shown_as_scored, state_view
from streamlearn.core.losses import loss_dloss_f32
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.core.state import P_FG_EPSILON, P_FG_LIPSCHITZ, S_NLEARN, S_T, S_TOTAL_W
from streamlearn.learners._vw32 import check_float32, f32, refuse_rates
from streamlearn.learners.coin import coin_end, coin_loss, coin_start, coin_weight
from streamlearn.options import Option

W = 0          # the stored weight
GS = 1         # sum of gradients
VS = 2         # sum of squared gradients
H1 = 3         # the first hint
HT = 4         # the hint: the largest |gradient|
S = 5          # sum of |clipped gradient| / hint

F32 = np.float32


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_weight_of(gs, v, h1, ht, eps):
    """Equation 9's weight in float32, VW's order of operations; 0 while h1 is 0."""
    if h1 > F32(0.0):
        ag = abs(gs)
        vh = v + ht * ag
        return (-gs * eps * (F32(2.0) * v + ht * ag) * (h1 * h1) / (F32(2.0) * (vh * vh) * np.sqrt(v))
                * np.exp((ag * ag) / (F32(2.0) * v + F32(2.0) * ht * ag)))
    return F32(0.0)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_rescore(idx, val, s, f, table, cfg, st, h, raw):
    """The loop's ``rescore``: step 1 of the module docstring."""
    eps, lip = cfg
    st[S_TOTAL_W] += np.float64(F32(h))
    pred = F32(0.0)
    for k in range(s, f):
        i = idx[k]
        w = freegrad_weight_of(F32(table[i, GS]), F32(table[i, VS]), F32(table[i, H1]), F32(table[i, HT]), eps)
        pred += w * F32(val[k])
    return np.float64(pred)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_step(table, i, g, hw, eps, lip):
    """Step 2 of the module docstring for one feature, g its float32 gradient, hw the importance."""
    h1 = F32(table[i, H1])
    ht = F32(table[i, HT])
    if h1 > F32(0.0):
        table[i, W] = freegrad_weight_of(F32(table[i, GS]), F32(table[i, VS]), h1, ht, eps)
    if g == F32(0.0):
        return
    c = g
    ag = abs(g)
    if h1 == F32(0.0):
        first = ag if lip == F32(0.0) else lip
        table[i, H1] = first
        table[i, HT] = first
        table[i, VS] = F32(table[i, VS]) + hw * (ag * ag)
    elif ag > ht:
        c = c * (ht / ag)
        table[i, HT] = ag
    table[i, GS] = F32(table[i, GS]) + (c + (hw - F32(1.0)) * g)
    table[i, VS] = F32(table[i, VS]) + (c * c + (hw - F32(1.0)) * (g * g))
    if ht > F32(0.0):
        table[i, S] = F32(table[i, S]) + (abs(c) / ht + (hw - F32(1.0)) * ag / F32(table[i, HT]))


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """Step 2 of the module docstring for every feature, then the clock."""
    eps, lip = cfg
    d = loss_dloss_f32(code, p, y, tau)
    hw = F32(h)
    for k in range(s, f):
        freegrad_step(table, idx[k], d * F32(val[k]), hw, eps, lip)
    st[S_T] += h
    st[S_NLEARN] += 1.0


@njit(cache=True, nogil=True, error_model="numpy")
def learn_freegrad_block(block, state, start, end):
    """Examples start..end-1 with FreeGrad through the example loop: the examples not learned take the
    stored weights' float32 score (VW's predict), a learned example step 1's score, which -p shows."""
    table, prm, iprm, st, ctr = state
    cfg = (F32(prm[P_FG_EPSILON]), F32(prm[P_FG_LIPSCHITZ]))
    return learner_loop(block, state, start, end, cfg, state_view, coin_weight, coin_start, coin_end, freegrad_learn,
                        shown_as_scored, freegrad_rescore, coin_loss)


def settings(cfg, prm, iprm) -> None:
    prm[P_FG_EPSILON] = f32(cfg.fepsilon)
    prm[P_FG_LIPSCHITZ] = f32(cfg.flipschitz_const)


def _nonnegative(v) -> str | None:
    return None if v >= 0 and math.isfinite(v) else "a finite number >= 0"


def _positive(v) -> str | None:
    return None if v > 0 and math.isfinite(v) else "a finite number > 0"


def check(cfg, flag) -> None:
    check_float32(cfg, flag, ("fepsilon", "flipschitz_const"), "freegrad")
    refuse_rates(cfg, flag, "freegrad", "FreeGrad has no learning rate (each coordinate's weight follows its own "
                                        "gradient sums)")


LAYOUT = Layout(("w", "fg_g", "fg_v", "fg_h1", "fg_ht", "fg_s"), 6)

#: the saved columns beside "w" (VW's save_resume values, in VW's order)
SAVED = (("fg_g", GS), ("fg_v", VS), ("fg_h1", H1), ("fg_ht", HT), ("fg_s", S))

OPTIONS = (
    Option("freegrad", ("--freegrad",), "flag", False, config=False, selects="freegrad", section="freegrad",
           help="VW's spelling of --algo freegrad: diagonal FreeGrad (Mhammedi & Koolen 2020)."),
    Option("fepsilon", ("--fepsilon",), "float", 1.0, stored="if_used", estimator=None, section="freegrad",
           check=_positive, help="freegrad: epsilon, the initial wealth (VW's --fepsilon)."),
    Option("flipschitz_const", ("--flipschitz-const", "--flipschitz_const"), "float", 0.0, stored="if_used",
           estimator=None, section="freegrad", check=_nonnegative,
           help="freegrad: a known bound on the gradients, the first hint of every coordinate (0: the first "
                "non-zero gradient; VW's --flipschitz_const)."),
)

LEARNER = LearnerSpec(
    order=15, name="freegrad", summary="FreeGrad, VW's --freegrad", paper="Mhammedi & Koolen 2020",
    declares=OPTIONS, float32=True,
    columns=(("fg_g", False), ("fg_v", True), ("fg_h1", True), ("fg_ht", True), ("fg_s", True)),
    kernel=learn_freegrad_block,
    settings=settings,
    describe=lambda c: (f"freegrad (FreeGrad, Mhammedi & Koolen 2020: epsilon = {f32(c.fepsilon):g}, "
                        f"lipschitz = {f32(c.flipschitz_const):g})"),
    layout=lambda c: LAYOUT,
    saved=lambda c: list(SAVED),
    readable=lambda c: (GS, VS, H1, HT, S),
    resumes_from_weights=True,
    weights_in_column=lambda c: True,
    options=("fepsilon", "flipschitz_const"),
    # initial_t 0: the total importance T starts at 0 (the plain rule would start it at 1)
    defaults={"initial_t": 0.0},
    selected_by=("fepsilon", "flipschitz_const"),
    plain_only=lambda c: "FreeGrad has no learning rate",
    takes_invariant=False,
    rate_schedule=False,
    check=check,
)
