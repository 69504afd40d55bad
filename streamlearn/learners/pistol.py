"""PiSTOL (parameter-free stochastic learning), as VW 9.11.9's ``--pistol`` computes it.

The method is Orabona, "Simultaneous Model Selection and Optimization through Parameter-free
Stochastic Learning" (NeurIPS 2014): a per-coordinate, scale-free exponential potential on the sum of
the negative gradients. VW's ``--pistol`` (``ftrl.cc``: ``inner_update_pistol_state_and_predict``,
``inner_update_pistol_post``) keeps for each coordinate i (VW's four weight values, in VW's order)::

    w   the weight of the last learned example that had feature i
    z   sum of the negative gradients -g              (VW: W_ZT)
    G   sum of |g|                                    (W_G2)
    M   max |x_i|                                     (W_MX)

Learning an example (x, y, importance h), ``a`` = --ftrl_alpha (default 1), ``b`` = --ftrl_beta
(default 0.5):

1. for each feature (in the example's order; a feature that occurs twice is visited twice):

       M_i = max(M_i, |x_i|)
       c   = 1 / (a M_i (G_i + M_i))
       w_i = sqrt(G_i) b z_i exp(z_i^2 / 2 c) c
       score += w_i x_i

   the raw score (without the example's initial score) is clamped to the label bounds (the
   example's label included); VW's learn returns this prediction, so -p and the progress table show
   it, and the loss counts it;
2. with d = loss'(p, y) h, for each feature: z_i += -d x_i, G_i += |d x_i|.

Prediction outside learning (held-out and unlabeled examples, -t, ``predict``) is
base + sum_i w_i x_i with the stored w. An example of importance 0 is not learned. A model keeps the
four values (-i continues exactly; w is restored as it is).

Everything is float32 in VW's order of operations; the table stores the float32 values (exactly, in
float64), so the model equals VW's bit for bit where the inputs are the same floats. VW's learning
rates, -l, --power_t and --initial_t do not enter; --l1/--l2 are refused (VW reads and ignores them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamlearn.core.loop import learner_loop, shown_as_scored, state_view
from streamlearn.core.losses import loss_dloss_f32
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.core.state import P_FTRL_ALPHA, P_FTRL_BETA, S_NLEARN, S_T
from streamlearn.learners._vw32 import check_alpha_beta, check_float32, f32, refuse_rates
from streamlearn.learners.coin import coin_end, coin_loss, coin_start, coin_weight, settings  # alpha, beta as coin's
from streamlearn.options import Option

W = 0          # the stored weight
Z = 1          # sum of -g
G = 2          # sum of |g|
MX = 3         # max |x|

#: VW's defaults for --pistol (ftrl.cc's pistol set-up)
ALPHA = 1.0
BETA = 0.5

F32 = np.float32


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def pistol_predict(idx, val, s, f, table, alpha, beta):
    """Step 1 of the module docstring: M and w of every feature, and the raw score (float32)."""
    pred = F32(0.0)
    for k in range(s, f):
        i = idx[k]
        x = F32(val[k])
        mx = F32(table[i, MX])
        ax = abs(x)
        if ax > mx:
            mx = ax
            table[i, MX] = mx
        z = F32(table[i, Z])
        gs = F32(table[i, G])
        c = F32(1.0) / (alpha * mx * (gs + mx))
        w = np.sqrt(gs) * beta * z * np.exp(z * z / F32(2.0) * c) * c
        table[i, W] = w
        pred += w * x
    return pred


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def pistol_rescore(idx, val, s, f, table, cfg, st, h, raw):
    """The loop's ``rescore``: a learned example is scored with step 1's weights."""
    alpha, beta = cfg
    return np.float64(pistol_predict(idx, val, s, f, table, alpha, beta))


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def pistol_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """Step 2 of the module docstring, then the clock."""
    d = loss_dloss_f32(code, p, y, tau) * F32(h)
    for k in range(s, f):
        i = idx[k]
        g = d * F32(val[k])
        table[i, Z] = F32(table[i, Z]) + (-g)
        table[i, G] = F32(table[i, G]) + abs(g)
    st[S_T] += h
    st[S_NLEARN] += 1.0


@njit(cache=True, nogil=True, error_model="numpy")
def learn_pistol_block(block, state, start, end):
    """Examples start..end-1 with PiSTOL through the example loop: the examples not learned take the
    stored weights' float32 score (VW's predict), a learned example step 1's score, which -p shows."""
    table, prm, iprm, st, ctr = state
    cfg = (F32(prm[P_FTRL_ALPHA]), F32(prm[P_FTRL_BETA]))
    return learner_loop(block, state, start, end, cfg, state_view, coin_weight, coin_start, coin_end, pistol_learn,
                        shown_as_scored, pistol_rescore, coin_loss)


def check(cfg, flag) -> None:
    check_alpha_beta(cfg, flag)
    check_float32(cfg, flag, ("ftrl_alpha", "ftrl_beta"), "pistol")
    refuse_rates(cfg, flag, "pistol", "PiSTOL has no learning rate (each coordinate's step follows its own sums)")


LAYOUT = Layout(("w", "pistol_z", "pistol_g", "pistol_mx"), 4)

#: the saved columns beside "w" (VW's save_resume values, in VW's order)
SAVED = (("pistol_z", Z), ("pistol_g", G), ("pistol_mx", MX))

OPTIONS = (
    Option("pistol", ("--pistol",), "flag", False, config=False, selects="pistol", section="pistol",
           help="VW's spelling of --algo pistol: PiSTOL, parameter-free stochastic learning (--ftrl-alpha: "
                "default 1; --ftrl-beta: default 0.5)."),
)

LEARNER = LearnerSpec(
    order=14, name="pistol", summary="PiSTOL, VW's --pistol", paper="Orabona 2014", declares=OPTIONS,
    float32=True,
    columns=(("pistol_z", False), ("pistol_g", True), ("pistol_mx", True)),
    kernel=learn_pistol_block,
    settings=settings,
    describe=lambda c: f"pistol (PiSTOL, Orabona 2014: alpha = {f32(c.ftrl_alpha):g}, beta = {f32(c.ftrl_beta):g})",
    layout=lambda c: LAYOUT,
    saved=lambda c: list(SAVED),
    readable=lambda c: (Z, G, MX),
    resumes_from_weights=True,
    weights_in_column=lambda c: True,
    options=("ftrl_alpha", "ftrl_beta"),
    defaults={"ftrl_alpha": ALPHA, "ftrl_beta": BETA},
    plain_only=lambda c: "PiSTOL has no learning rate",
    takes_invariant=False,
    rate_schedule=False,
    check=check,
)
