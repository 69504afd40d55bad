"""FTRL-Proximal with per-coordinate learning rates (McMahan, Holt, Sculley et al., "Ad Click
Prediction: a View from the Trenches", KDD 2013, Algorithm 1), as VW 9.11.9's ``--ftrl`` computes it
(vw-spec-2.md §2f).

Each coordinate i keeps z_i (the sum of its gradients minus sigma-weighted past weights) and n_i (the
sum of its squared gradients). For a learned example with prediction p, label y and importance h,
d = loss'(p, y) * h, and for each feature (x_i in the example's order; a feature that occurs twice
is updated twice)::

    g = d x_i
    sigma = (sqrt(n_i + g^2) - sqrt(n_i)) / alpha
    z_i += g - sigma w_i
    n_i += g^2
    w_i = 0                                                   if |z_i| <= lambda1
        = -(z_i - sgn(z_i) lambda1) / ((beta + sqrt(n_i)) / alpha + lambda2)    otherwise

(Algorithm 1's closed form, the solution of the per-coordinate problem with the regularizer
lambda1 ||w||_1 + lambda2/2 ||w||^2.) The update runs for every learned example, also when the
gradient is 0 (w is recomputed; z and n do not move).

The learner is lazy by construction: w_i is a function of its own z_i and n_i, which only an example
with feature i changes, so an untouched coordinate never needs catching up and an example costs
O(its features). The table stores w beside z and n (VW's layout), so prediction reads one column.

Like VW, the learner computes in float32 with VW's order of operations (ftrl.cc): the score sum,
the loss derivative (expf), every step of the update, and lambda1, lambda2, alpha and beta as the
float32 values VW parses them to; the table stores the float32 values (exactly, in float64). So the
model equals VW's bit for bit where the inputs are the same floats. The -p prediction is VW's first predict,
clamped to the bounds before the example's label (``loop.shown_before_label``); the loss and the
gradient use the prediction clamped to the bounds the label widened.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from streamlearn.errors import OptionError
from streamlearn.core.loop import as_predicted, example_loss, learner_loop, shown_before_label, state_view, sum_end
from streamlearn.core.multiclass import oaa_loop
from streamlearn.core.losses import loss_dloss_f32
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.core.state import P_FTRL_ALPHA, P_FTRL_BETA, P_L1, P_L2, S_NLEARN, S_T
from streamlearn.learners._vw32 import check_alpha_beta, check_float32, f32, refuse_rates
from streamlearn.options import Option

#: ftrl's own options (besides the shared --l1 and --l2)
OPTIONS = (
    Option("ftrl", ("--ftrl",), "flag", False, config=False, selects="ftrl", section="ftrl",
           help="VW's spelling of --algo ftrl."),
    Option("ftrl_alpha", ("--ftrl-alpha", "--ftrl_alpha"), "float", 0.5, stored="always", legacy=0.5,
           estimator=None, section="ftrl",
           help="ftrl: alpha of each coordinate's rate alpha / (beta + sqrt(sum of its squared gradients))."),
    Option("ftrl_beta", ("--ftrl-beta", "--ftrl_beta"), "float", 1.0, stored="always", legacy=1.0,
           estimator=None, section="ftrl", help="ftrl: beta of that rate."),
)

W = 0          # the weight in force
Z = 1          # z_i
N = 2          # n_i, the sum of squared gradients

#: VW's defaults (ftrl.cc)
ALPHA = 0.5
BETA = 1.0


F32 = np.float32


@njit(cache=True, nogil=True, inline="always")
def ftrl_weight_of(z, n, alpha, beta, l1, l2):
    """Algorithm 1's closed-form weight of a coordinate from its z and n, in float32 as VW computes
    it: 0 if |z| <= l1, else (l1 - |z|) sgn(z) / (l2 + (beta + sqrt(n)) / alpha), the division
    taken as a reciprocal step (all arguments float32)."""
    flag = F32(-1.0) if z < F32(0.0) else F32(1.0)
    fabs_z = z * flag
    if fabs_z <= l1:
        return F32(0.0)
    step = F32(1.0) / (l2 + (beta + np.sqrt(n)) / alpha)
    return step * flag * (l1 - fabs_z)


@njit(cache=True, nogil=True, inline="always")
def ftrl_step(table, i, g, alpha, beta, l1, l2):
    """One coordinate's update with float32 gradient g (Algorithm 1, the loop over i in the
    example), in VW's float32 arithmetic and operation order; the table holds the float32 values."""
    n = F32(table[i, N])
    n_new = n + g * g
    sigma = (np.sqrt(n_new) - np.sqrt(n)) / alpha
    z = F32(table[i, Z]) + (g - sigma * F32(table[i, W]))
    table[i, Z] = z
    table[i, N] = n_new
    table[i, W] = ftrl_weight_of(z, n_new, alpha, beta, l1, l2)


@njit(cache=True, nogil=True)
def ftrl_settings(prm, iprm):
    """(alpha, beta, lambda1, lambda2) as float32."""
    return F32(prm[P_FTRL_ALPHA]), F32(prm[P_FTRL_BETA]), F32(prm[P_L1]), F32(prm[P_L2])


@njit(cache=True, nogil=True, inline="always")
def ftrl_weight(table, i, cfg, v):
    return F32(table[i, W])


@njit(cache=True, nogil=True, inline="always")
def ftrl_start(base):
    """The score is summed in float32 from the example's base, as VW's inline_predict sums it."""
    return F32(base)


@njit(cache=True, nogil=True, inline="always")
def ftrl_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """Algorithm 1's update of every feature of a learned example (module docstring), in float32:
    d = loss'(p, y) h, then each feature's step with g = d x."""
    alpha, beta, l1, l2 = cfg
    d = loss_dloss_f32(code, p, y, tau) * F32(h)
    for k in range(s, f):
        ftrl_step(table, idx[k], d * F32(val[k]), alpha, beta, l1, l2)
    st[S_T] += h
    st[S_NLEARN] += 1.0


@njit(cache=True, nogil=True)
def learn_ftrl_block(block, state, start, end):
    """Examples start..end-1 with FTRL-Proximal (the example loop of ``streamlearn.core.loop``;
    -p shows the prediction before the label widened the bounds, as VW's --ftrl does)."""
    table, prm, iprm, st, ctr = state
    return learner_loop(block, state, start, end, ftrl_settings(prm, iprm), state_view, ftrl_weight, ftrl_start,
                        sum_end, ftrl_learn, shown_before_label, as_predicted, example_loss)


@njit(cache=True, nogil=True)
def oaa_ftrl_block(block, state, start, end):
    """``learn_ftrl_block`` one-against-all: each class's update is Algorithm 1's with the class's
    stored score (VW runs --oaa with --ftrl without defining it; vw-spec-2.md §2e)."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, ftrl_settings(prm, iprm), state_view, ftrl_weight, ftrl_start, sum_end,
                    ftrl_learn)


@njit(cache=True, nogil=True)
def recompute_weights(table, alpha, beta, l1, l2):
    """w_i from z_i and n_i for every coordinate with state (after -i: the model's w was computed with
    the settings it was trained with)."""
    alpha, beta, l1, l2 = F32(alpha), F32(beta), F32(l1), F32(l2)
    for i in range(table.shape[0]):
        if table[i, N] != 0.0 or table[i, Z] != 0.0:
            table[i, W] = ftrl_weight_of(F32(table[i, Z]), F32(table[i, N]), alpha, beta, l1, l2)


def after_load(table, prm, iprm, st) -> None:
    recompute_weights(table, prm[P_FTRL_ALPHA], prm[P_FTRL_BETA], prm[P_L1], prm[P_L2])


def settings(cfg, prm, iprm) -> None:
    prm[P_FTRL_ALPHA] = f32(cfg.ftrl_alpha)
    prm[P_FTRL_BETA] = f32(cfg.ftrl_beta)
    prm[P_L1] = f32(cfg.l1)
    prm[P_L2] = f32(cfg.l2)


def regularizer(cfg, w: np.ndarray) -> tuple[float, str]:
    """The regularizer of the objective FTRL-Proximal follows, lambda1 ||w||_1 + lambda2/2 ||w||^2,
    counted once for the whole sum of losses (the objective scales it by 1/T)."""
    value = f32(cfg.l1) * float(np.abs(w).sum()) + f32(cfg.l2) / 2 * float(np.dot(w, w))
    return value, f"({cfg.l1:g} ||w||_1 + {cfg.l2:g}/2 ||w||_2^2) / T"


def regularizer_scale(cfg, st) -> float:
    """1/T, T the weighted examples learned so far: FTRL-Proximal minimizes the summed losses plus
    the regularizer once, i.e. the average loss plus the regularizer over T."""
    t = float(st[S_T]) - cfg.initial_t      # the clock starts at initial_t, which ftrl does not use
    return 1.0 / t if t > 0 else 0.0


def check(cfg, flag) -> None:
    check_alpha_beta(cfg, flag)
    for name in ("l1", "l2"):
        v = getattr(cfg, name)
        if not (v >= 0 and math.isfinite(v)):
            raise OptionError(f"{flag[name]} must be a finite number >= 0 (got {v:g})")
    check_float32(cfg, flag, ("ftrl_alpha", "ftrl_beta", "l1", "l2"), "ftrl")    # read as float32 (``settings``)
    refuse_rates(cfg, flag, "ftrl", "each coordinate's rate is --ftrl-alpha / (--ftrl-beta + sqrt(n_i)), "
                                    "n_i its sum of squared gradients")


LAYOUT = Layout(("w", "ftrl_z", "ftrl_n"), 3)

def merge(cfg, merged, inputs, models, state) -> None:
    """Merged models (``streamlearn.mix``): z and n averaged, rounded to the float32 values the
    learner computes in, then w recomputed from them (Algorithm 1's closed form, ``after_load``)."""
    from streamlearn import learners
    if "w" in merged and "ftrl_z" in merged:
        prm, iprm = learners.make_settings(cfg, train=True)
        st = learners.make_state(cfg, prm, state)
        n = merged["ftrl_z"].shape[0]
        table = np.zeros((n, 3))
        for name in ("ftrl_z", "ftrl_n"):
            merged[name][:] = merged[name].astype(np.float32).astype(np.float64)
        table[:, Z] = merged["ftrl_z"]
        table[:, N] = merged["ftrl_n"]
        after_load(table, prm, iprm, st)
        merged["w"][:] = table[:, W]


LEARNER = LearnerSpec(
    name="ftrl", order=9, summary="FTRL-Proximal", paper="McMahan et al. 2013",
    example=("--l1", "0.5", "--l2", "0.1"), declares=OPTIONS, float32=True,
    kernel=learn_ftrl_block, oaa_kernel=oaa_ftrl_block, after_load=after_load,
    settings=settings,
    describe=lambda c: (f"ftrl (FTRL-Proximal: alpha = {f32(c.ftrl_alpha):g}, beta = {f32(c.ftrl_beta):g}, "
                        f"l1 = {f32(c.l1):g}, l2 = {f32(c.l2):g})"),
    layout=lambda c: LAYOUT,
    saved=lambda c: [("ftrl_z", Z), ("ftrl_n", N)],
    readable=lambda c: (Z, N),
    resumes_from_weights=False,
    weights_in_column=lambda c: True,
    regularizer=regularizer,
    merge=merge,
    regularizer_scale=regularizer_scale,
    options=("l1", "l2", "ftrl_alpha", "ftrl_beta"),
    selected_by=("ftrl_alpha", "ftrl_beta"),
    # the sparsest accurate one-pass learner (bench/frontier.py), one flag away from a bare --l1
    # (which runs VW's own, gravity): --algo ftrl
    plain_only=lambda c: "its per-coordinate rates are FTRL's own",
    takes_invariant=False,
    rate_schedule=False,
    predicts_twice=True,
    check=check,
)
