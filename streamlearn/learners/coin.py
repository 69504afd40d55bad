"""Coin betting (parameter-free online learning), as VW 9.11.9's ``--coin`` computes it.

The method is Orabona & Pal, "Coin Betting and Parameter-Free Online Learning" (NeurIPS 2016): each
coordinate is a gambler betting a fraction of its wealth on the sign of the next negative gradient,
and the bet is the weight. VW's ``--coin`` (``ftrl.cc``: ``inner_coin_betting_predict``,
``inner_coin_betting_update_after_prediction``, ``coin_betting_predict``,
``coin_betting_update_after_prediction``; its comments call it "COCOB update without sigmoid") bets
the Krichevsky-Trofimov fraction of that paper's Section 3 (the KT bettor: the bet is the
wealth times the average past "coin" -g/L) with per-coordinate, data-dependent normalizers: L_i, the
largest |gradient| seen (at least beta), and M_i, the largest |x_i| seen. VW's learning rates, -l,
--power_t and --initial_t do not enter.

Each coordinate i keeps (VW's six weight values, in VW's order)::

    w   the stored weight (the bet, divided by the normalizer of the example that last updated it)
    z   sum of the negative gradients -g              (VW: W_ZT)
    G   sum of |g|                                    (W_G2)
    M   max |x_i|                                     (W_MX)
    W   the wealth won: sum of -g * bet                (W_WE)
    L   the largest |loss'| seen, at least beta        (W_MG)

and the run keeps two sums (VW's gd_per_model_states[0], in double): S = sum_t h_t ||x_t / M||^2
(``st[S_NORM_SUM]``) and T = sum_t h_t (``st[S_TOTAL_W]``).

Learning an example (x, y, importance h), ``alpha`` = --ftrl_alpha (default 4), ``beta`` =
--ftrl_beta (default 1):

1. predict (``coin_betting_predict``), for each feature, M' = max(M_i, |x_i|):

       bet_i = (alpha + W_i) / (L_i M' (L_i M' + G_i)) * z_i     if L_i M' > 0, else 0
       q_t  += (x_i / M')^2                                    if M' > 0

   then S += h q, T += h, A = float32((S + 1e-6) / T) and the raw score is (sum_i bet_i x_i) / A
   (without the example's initial score), clamped to the label bounds (the example's label included);
2. with d = loss'(p, y) h, for each feature (g = d x_i; a feature that occurs twice is updated twice):

       M_i = max(M_i, |x_i|)
       L_i = max(|d|, beta)                                     if |d| > L_i
       bet = (alpha + W_i) / (L_i M_i (L_i M_i + G_i)) * z_i    if L_i M_i > 0, else 0
       z_i += -g;  G_i += |g|;  W_i += -g * bet;  w_i = bet / A

Prediction outside learning (VW's plain ``predict``: held-out and unlabeled examples, -t, ``predict``)
is base + sum_i w_i x_i with the stored w. VW's learn returns no prediction, so its driver predicts
first with the stored w and the bounds before the example's label; -p (and the progress table) show
that value, while the loss and the gradient use step 1's (vw-spec-2.md §2f, the same as ``--ftrl``).
An example of importance 0 is not learned (as in VW 9.11.9, checked: learning it would move M and
recompute the w of its features).

A model keeps all six values and S, T (-i continues exactly); w is restored as it is, since it cannot
be recomputed from the others. Not supported here: --oaa (no one-against-all kernel yet), --l1/--l2
(VW reads them and coin ignores them; refused, as for every learner that does not use them).

The loss the progress table and the summary report is VW's float32 loss of that prediction times
the float32 importance, summed in double. Everything is float32 in VW's order of operations; the table stores the float32 values (exactly, in
float64), so the model equals VW's bit for bit where the inputs are the same floats.
"""

from __future__ import annotations


import numpy as np
from numba import njit

from streamlearn.core.losses import (
    CLASSIC, EXPECTILE, HINGE, LOGISTIC, POISSON, SQUARED, expectile_weight, loss_dloss_f32, poisson_clamp,
)
from streamlearn.core.loop import example_loss, learner_loop, shown_before_label, state_view
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.core.state import (
    P_FTRL_ALPHA, P_FTRL_BETA, S_NLEARN, S_NORM_SUM, S_T, S_TOTAL_W, own_slots,
)
from streamlearn.learners._vw32 import check_alpha_beta, check_float32, f32, refuse_rates
from streamlearn.options import Option

W = 0          # the stored weight
Z = 1          # sum of -g
G = 2          # sum of |g|
MX = 3         # max |x|
WE = 4         # wealth
MG = 5         # max |loss'| (at least beta)

#: VW's defaults for --coin (ftrl.cc's coin set-up: ftrl_alpha 4, ftrl_beta 1)
ALPHA = 4.0
BETA = 1.0

F32 = np.float32

#: coin's own state slot: A of the example being learned (step 1's, which step 2 divides by)
SLOTS = own_slots("avg")
S_AVG = SLOTS["avg"]


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def coin_bet(alpha, wealth, lip, mx, g_sum, z):
    """The KT bet of a coordinate, (alpha + W) / (L M (L M + G)) z, 0 when L M is 0 (float32, VW's
    order of operations)."""
    if lip * mx > F32(0.0):
        return ((alpha + wealth) / (lip * mx * (lip * mx + g_sum))) * z
    return F32(0.0)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def coin_predict(idx, val, s, f, table, st, alpha, h):
    """Step 1 of the module docstring: the raw score of a learned example and A, after adding the
    example to S and T."""
    pred = F32(0.0)
    sq = F32(0.0)
    for k in range(s, f):
        i = idx[k]
        x = F32(val[k])
        mx = F32(table[i, MX])
        ax = abs(x)
        if ax > mx:
            mx = ax
        pred += coin_bet(alpha, F32(table[i, WE]), F32(table[i, MG]), mx, F32(table[i, G]),
                         F32(table[i, Z])) * x
        if mx > F32(0.0):
            xn = x / mx
            sq += xn * xn
    hw = F32(h)
    st[S_NORM_SUM] += np.float64(hw) * np.float64(sq)
    st[S_TOTAL_W] += np.float64(hw)
    avg = F32((st[S_NORM_SUM] + 1e-6) / st[S_TOTAL_W])
    return pred / avg, avg


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def coin_update(idx, val, s, f, table, alpha, beta, d, avg):
    """Step 2 of the module docstring: every feature's update with d = loss'(p, y) h (float32)."""
    ad = abs(d)
    for k in range(s, f):
        i = idx[k]
        x = F32(val[k])
        g = d * x
        mx = F32(table[i, MX])
        ax = abs(x)
        if ax > mx:
            mx = ax
            table[i, MX] = mx
        lip = F32(table[i, MG])
        if ad > lip:
            lip = ad if ad > beta else beta
            table[i, MG] = lip
        z = F32(table[i, Z])
        gs = F32(table[i, G])
        we = F32(table[i, WE])
        bet = coin_bet(alpha, we, lip, mx, gs, z)
        table[i, Z] = z + (-g)
        table[i, G] = gs + abs(g)
        table[i, WE] = we + (-g * bet)
        table[i, W] = bet / avg


@njit(cache=True, nogil=True, inline="always")
def coin_loss_f32(code, p, y, tau):
    """VW's get_loss in float32 (loss_functions.cc; p is already clamped to the bounds, so squared
    loss is (p - y)^2): VW sums the float32 loss times the float32 importance in double."""
    p32 = F32(p)
    y32 = F32(y)
    if code == SQUARED or code == CLASSIC:
        return (p32 - y32) * (p32 - y32)
    if code == EXPECTILE:
        return (p32 - y32) * (p32 - y32) * F32(expectile_weight(p32, y32, tau))
    if code == LOGISTIC:
        if y32 == F32(1.0) or y32 == F32(-1.0):
            return np.log(F32(1.0) + np.exp(-y32 * p32))
        s32 = (y32 + F32(1.0)) / F32(2.0)          # VW's mixture of the two classes
        return (s32 * np.log(F32(1.0) + np.exp(-p32))
                + (F32(1.0) - s32) * np.log(F32(1.0) + np.exp(p32)))
    if code == POISSON:
        c = F32(poisson_clamp(p32))
        return F32(2.0) * (y32 * (np.log(y32 + F32(1e-6)) - c) - (y32 - np.exp(c)))
    if code == HINGE:
        e = F32(1.0) - y32 * p32
        return e if e > F32(0.0) else F32(0.0)
    e = y32 - p32
    if e > F32(0.0):
        return F32(tau) * e
    return -(F32(1.0) - F32(tau)) * e


@njit(cache=True, nogil=True, inline="always")
def coin_loss(code, p, y, tau, lo, hi, h, binary):
    """The loop's ``loss``: VW's float32 loss times the float32 importance (0/1 loss with --binary)."""
    if binary:
        return example_loss(code, p, y, tau, lo, hi, h, binary)
    return np.float64(coin_loss_f32(code, p, y, tau) * F32(h))


@njit(cache=True, nogil=True, inline="always")
def coin_start(base):
    """VW's predict sums the stored weights' score in float32, from the example's base."""
    return F32(base)


@njit(cache=True, nogil=True, inline="always")
def coin_weight(table, i, cfg, v):
    return F32(table[i, W])


@njit(cache=True, nogil=True, inline="always")
def coin_end(acc, base, table, cfg, st):
    return np.float64(acc)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def coin_rescore(idx, val, s, f, table, cfg, st, h, raw):
    """The loop's ``rescore``: a learned example is scored with step 1's bets (module docstring),
    and step 2 divides by its A, kept in ``st[S_AVG]``."""
    alpha, beta = cfg
    score, avg = coin_predict(idx, val, s, f, table, st, alpha, h)
    st[S_AVG] = np.float64(avg)
    return np.float64(score)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def coin_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """Step 2 of the module docstring, then the clock."""
    alpha, beta = cfg
    d = loss_dloss_f32(code, p, y, tau) * F32(h)
    coin_update(idx, val, s, f, table, alpha, beta, d, F32(st[S_AVG]))
    st[S_T] += h
    st[S_NLEARN] += 1.0


@njit(cache=True, nogil=True, error_model="numpy")
def learn_coin_block(block, state, start, end):
    """Examples start..end-1 with coin betting through the example loop: -p and the examples not
    learned take the stored weights' float32 score (VW's predict), a learned example step 1's score
    for its loss and its update (VW's learn returns no prediction: -p shows the first, as for ftrl)."""
    table, prm, iprm, st, ctr = state
    cfg = (F32(prm[P_FTRL_ALPHA]), F32(prm[P_FTRL_BETA]))
    return learner_loop(block, state, start, end, cfg, state_view, coin_weight, coin_start, coin_end, coin_learn,
                        shown_before_label, coin_rescore, coin_loss)


def settings(cfg, prm, iprm) -> None:
    prm[P_FTRL_ALPHA] = f32(cfg.ftrl_alpha)
    prm[P_FTRL_BETA] = f32(cfg.ftrl_beta)


def check(cfg, flag) -> None:
    check_alpha_beta(cfg, flag)
    check_float32(cfg, flag, ("ftrl_alpha", "ftrl_beta"), "coin")
    refuse_rates(cfg, flag, "coin", "coin betting has no learning rate (each coordinate bets a fraction of its wealth)")


LAYOUT = Layout(("w", "coin_z", "coin_g", "coin_mx", "coin_wealth", "coin_mg"), 6)

#: the saved columns beside "w" (VW's save_resume values, in VW's order)
SAVED = (("coin_z", Z), ("coin_g", G), ("coin_mx", MX), ("coin_wealth", WE), ("coin_mg", MG))

#: coin's own option: VW's spelling of --algo coin (it takes ftrl's --ftrl-alpha and --ftrl-beta, with
#: defaults of its own)
OPTIONS = (
    Option("coin", ("--coin",), "flag", False, config=False, selects="coin", section="coin",
           help="VW's spelling of --algo coin: coin betting (--ftrl-alpha: the initial wealth, default 4; "
                "--ftrl-beta: the least gradient bound, default 1)."),
)

LEARNER = LearnerSpec(
    order=13, name="coin", summary="coin betting, VW's --coin", declares=OPTIONS, float32=True,
    columns=(("coin_z", False), ("coin_g", True), ("coin_mx", True), ("coin_wealth", False), ("coin_mg", True)),
    kernel=learn_coin_block, slots=SLOTS,
    settings=settings,
    describe=lambda c: (f"coin (coin betting, Orabona & Pal 2016: alpha = {f32(c.ftrl_alpha):g}, "
                        f"beta = {f32(c.ftrl_beta):g})"),
    layout=lambda c: LAYOUT,
    saved=lambda c: list(SAVED),
    readable=lambda c: (Z, G, MX, WE, MG),
    # w is restored from a model (it cannot be recomputed: it is divided by the normalizer of its last
    # update); a --predict-only-model model continues with its w and the rest 0, as VW's does
    resumes_from_weights=True,
    weights_in_column=lambda c: True,
    options=("ftrl_alpha", "ftrl_beta"),
    # initial_t 0: the normalizer sums S and T start at 0 (the plain rule would start them at 1)
    defaults={"ftrl_alpha": ALPHA, "ftrl_beta": BETA, "initial_t": 0.0},
    plain_only=lambda c: "coin betting has no learning rate",
    takes_invariant=False,
    rate_schedule=False,
    predicts_twice=True,
    check=check,
)
