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

With --restart (VW's FreeRange restarts), a coordinate whose ht / h1 exceeds S_i + 2 after its
update restarts: h1 = ht, G = c + (h - 1) g, V = c^2 + (h - 1) g^2. With --project, the score of
step 1 is scaled onto the L2 ball of radius r = eps sqrt(N) when ||w|| > r (w the example's
weights, N the run's sum of h ||c|| / max ||c||, the clipped gradients' norms over the largest, from
1), and if moreover g.w < 0, step 2 uses the tilted gradient g - (g.w) w_i / ||w||^2. VW's --radius
(a fixed radius) is not implemented (--radius is l1ball's). Each combination is its own kernel
(``KERNELS``).

Prediction outside learning (held-out and unlabeled examples, -t, ``predict``) is
base + sum_i w_i x_i with the stored w. An example of importance 0 is not learned. A model keeps the
six values and T (-i continues exactly; w is restored as it is); N and max ||c|| restart at 1 and 0
in a restored run, as VW's do (VW does not save them).

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
from streamlearn.core.spec import Layout, LearnerSpec, Variant
from streamlearn.core.state import P_FG_EPSILON, P_FG_LIPSCHITZ, S_NLEARN, S_T, S_TOTAL_W, own_slots
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

#: freegrad's own state slots: ||w|| of the example being learned (step 1's), and the run's sum of
#: normalized clipped-gradient norms and largest clipped-gradient norm (the adaptive radius of
#: --project; VW keeps them outside its model, so a restored run starts them again at 1 and 0)
SLOTS = own_slots("wnorm", "gradnorms", "maxclip")
S_WNORM = SLOTS["wnorm"]
S_GRADNORMS = SLOTS["gradnorms"]
S_MAXCLIP = SLOTS["maxclip"]


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
def adaptive_radius(eps, st):
    """VW's radius of the projection without --radius: eps sqrt(sum of the normalized clipped gradient
    norms) (float32)."""
    return eps * np.sqrt(F32(st[S_GRADNORMS]))


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_score(idx, val, s, f, table, cfg, st, h, project):
    """Step 1 of the module docstring (``project``: the score scaled onto the ball, and ||w|| kept in
    ``st[S_WNORM]`` for step 2)."""
    eps, lip = cfg
    st[S_TOTAL_W] += np.float64(F32(h))
    pred = F32(0.0)
    sq = F32(0.0)
    for k in range(s, f):
        i = idx[k]
        w = freegrad_weight_of(F32(table[i, GS]), F32(table[i, VS]), F32(table[i, H1]), F32(table[i, HT]), eps)
        sq += w * w
        pred += w * F32(val[k])
    norm = np.sqrt(sq)
    st[S_WNORM] = np.float64(norm)
    if project:
        radius = adaptive_radius(eps, st)
        if norm > radius:
            pred *= radius / norm
    return np.float64(pred)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_rescore(idx, val, s, f, table, cfg, st, h, raw):
    """The loop's ``rescore`` without projection."""
    return freegrad_score(idx, val, s, f, table, cfg, st, h, False)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_rescore_projected(idx, val, s, f, table, cfg, st, h, raw):
    """The loop's ``rescore`` with --project."""
    return freegrad_score(idx, val, s, f, table, cfg, st, h, True)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_step(table, i, g, hw, eps, lip, restart, tilt, gdotw, norm):
    """Step 2 of the module docstring for one feature, g its float32 gradient, hw the importance
    (``restart``: VW's --restart; ``tilt``: the projection's tilted gradient applies, with g.w and
    ||w|| of the example). Returns the clipped gradient's square (0 when nothing was updated)."""
    h1 = F32(table[i, H1])
    ht = F32(table[i, HT])
    if h1 > F32(0.0):
        table[i, W] = freegrad_weight_of(F32(table[i, GS]), F32(table[i, VS]), h1, ht, eps)
    if tilt:
        g = g - (gdotw * F32(table[i, W])) / (norm * norm)
    if g == F32(0.0):
        return F32(0.0)
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
    if restart and F32(table[i, HT]) / F32(table[i, H1]) > F32(table[i, S]) + F32(2.0):
        table[i, H1] = table[i, HT]
        table[i, GS] = c + (hw - F32(1.0)) * g
        table[i, VS] = c * c + (hw - F32(1.0)) * (g * g)
    else:
        table[i, GS] = F32(table[i, GS]) + (c + (hw - F32(1.0)) * g)
        table[i, VS] = F32(table[i, VS]) + (c * c + (hw - F32(1.0)) * (g * g))
    if ht > F32(0.0):
        table[i, S] = F32(table[i, S]) + (abs(c) / ht + (hw - F32(1.0)) * ag / F32(table[i, HT]))
    return c * c


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def freegrad_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h, restart, project):
    """Step 2 of the module docstring for every feature, the run's clipped-gradient norms (which the
    adaptive radius reads), then the clock."""
    eps, lip = cfg
    d = loss_dloss_f32(code, p, y, tau)
    hw = F32(h)
    tilt = False
    gdotw = F32(0.0)
    norm = F32(st[S_WNORM])
    if project:
        for k in range(s, f):
            i = idx[k]
            w = freegrad_weight_of(F32(table[i, GS]), F32(table[i, VS]), F32(table[i, H1]), F32(table[i, HT]), eps)
            gdotw += (d * F32(val[k])) * w
        tilt = norm > adaptive_radius(eps, st) and gdotw < F32(0.0)
    sq = F32(0.0)
    for k in range(s, f):
        sq += freegrad_step(table, idx[k], d * F32(val[k]), hw, eps, lip, restart, tilt, gdotw, norm)
    cnorm = np.sqrt(sq)
    mx = F32(st[S_MAXCLIP])
    if cnorm > mx:
        mx = cnorm
        st[S_MAXCLIP] = np.float64(mx)
    if mx > F32(0.0):
        st[S_GRADNORMS] = np.float64(F32(st[S_GRADNORMS]) + hw * cnorm / mx)
    st[S_T] += h
    st[S_NLEARN] += 1.0


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def learn_plain(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    freegrad_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h, False, False)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def learn_restart(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    freegrad_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h, True, False)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def learn_project(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    freegrad_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h, False, True)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def learn_restart_project(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    freegrad_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h, True, True)


@njit(cache=True, nogil=True)
def freegrad_settings(prm):
    return F32(prm[P_FG_EPSILON]), F32(prm[P_FG_LIPSCHITZ])


@njit(cache=True, nogil=True, error_model="numpy")
def learn_freegrad_block(block, state, start, end):
    """Examples start..end-1 with FreeGrad through the example loop: the examples not learned take the
    stored weights' float32 score (VW's predict), a learned example step 1's score, which -p shows."""
    table, prm, iprm, st, ctr = state
    return learner_loop(block, state, start, end, freegrad_settings(prm), state_view, coin_weight, coin_start,
                        coin_end, learn_plain, shown_as_scored, freegrad_rescore, coin_loss)


@njit(cache=True, nogil=True, error_model="numpy")
def learn_freegrad_restart_block(block, state, start, end):
    """``learn_freegrad_block`` with VW's --restart."""
    table, prm, iprm, st, ctr = state
    return learner_loop(block, state, start, end, freegrad_settings(prm), state_view, coin_weight, coin_start,
                        coin_end, learn_restart, shown_as_scored, freegrad_rescore, coin_loss)


@njit(cache=True, nogil=True, error_model="numpy")
def learn_freegrad_project_block(block, state, start, end):
    """``learn_freegrad_block`` with VW's --project (the adaptive radius)."""
    table, prm, iprm, st, ctr = state
    return learner_loop(block, state, start, end, freegrad_settings(prm), state_view, coin_weight, coin_start,
                        coin_end, learn_project, shown_as_scored, freegrad_rescore_projected, coin_loss)


@njit(cache=True, nogil=True, error_model="numpy")
def learn_freegrad_restart_project_block(block, state, start, end):
    """``learn_freegrad_block`` with VW's --restart and --project."""
    table, prm, iprm, st, ctr = state
    return learner_loop(block, state, start, end, freegrad_settings(prm), state_view, coin_weight, coin_start,
                        coin_end, learn_restart_project, shown_as_scored, freegrad_rescore_projected, coin_loss)


#: the kernels per --restart / --project (``LearnerSpec.variants``: no kernel branches on them)
KERNELS = {
    "plain": Variant(learn_freegrad_block),
    "restart": Variant(learn_freegrad_restart_block, example=("--restart",)),
    "project": Variant(learn_freegrad_project_block, example=("--project",)),
    "restart-project": Variant(learn_freegrad_restart_project_block, example=("--restart", "--project")),
}


def variant(cfg) -> str:
    return "-".join(name for name in ("restart", "project") if getattr(cfg, name)) or "plain"


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
    Option("restart", ("--restart",), "flag", False, stored="if_used", estimator=None, section="freegrad",
           help="freegrad: FreeRange restarts (VW's --restart)."),
    Option("project", ("--project",), "flag", False, stored="if_used", estimator=None, section="freegrad",
           help="freegrad: project the weights onto an L2 ball of adaptive radius (VW's --project, without "
                "its --radius)."),
)

LEARNER = LearnerSpec(
    order=15, name="freegrad", summary="FreeGrad, VW's --freegrad", paper="Mhammedi & Koolen 2020",
    declares=OPTIONS, float32=True,
    columns=(("fg_g", False), ("fg_v", True), ("fg_h1", True), ("fg_ht", True), ("fg_s", True)),
    variants=KERNELS, variant=variant, slots=SLOTS, slot_start={"gradnorms": 1.0},
    settings=settings,
    describe=lambda c: (f"freegrad (FreeGrad, Mhammedi & Koolen 2020: epsilon = {f32(c.fepsilon):g}, "
                        f"lipschitz = {f32(c.flipschitz_const):g})"),
    layout=lambda c: LAYOUT,
    saved=lambda c: list(SAVED),
    readable=lambda c: (GS, VS, H1, HT, S),
    resumes_from_weights=True,
    weights_in_column=lambda c: True,
    options=("fepsilon", "flipschitz_const", "restart", "project"),
    # initial_t 0: the total importance T starts at 0 (the plain rule would start it at 1)
    defaults={"initial_t": 0.0},
    selected_by=("fepsilon", "flipschitz_const", "restart", "project"),
    plain_only=lambda c: "FreeGrad has no learning rate",
    takes_invariant=False,
    rate_schedule=False,
    check=check,
)
