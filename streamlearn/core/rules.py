"""Gradient descent with VW's update rules, plain or with lazy truncated gradient, over one block of
examples (progressive validation: each example is predicted, scored, then learned).

The update rule (vw-spec.md §1c, VW's gd.cc) combines three independent properties:

* adaptive (``--adaptive``): each weight keeps G_i, the sum of h * dloss^2 * x_i^2 over its updates
  (AdaGrad; Duchi, Hazan & Singer 2011), and its step is scaled by G_i^(-power_t);
* normalized (``--normalized``): each weight keeps N_i, the largest |x_i| seen; its step is scaled by
  N_i^-1 (adaptive) or N_i^-2, the weight is rescaled by N_old/N_new when N grows, and every step is
  multiplied by the global normalizer m = sqrt(T/S) (T = sum of h, S = sum of h * sum_i (x_i/N_i)^2);
* invariant (``--invariant``): the step size u along x comes from the importance-aware closed form
  (Karampatziakis & Langford 2011; ``loss_update``) instead of -dloss * scale.

With r_i = G_i^-1/2 N_i^-1 (or the general forms), scale = eta * h (adaptive) or eta * h * t^-power_t
(not adaptive; t = initial_t + weighted learned examples, and eta is multiplied by initial_t^power_t
when neither adaptive nor normalized is on, as VW does), and ppu = m * sum_i x_i^2 r_i, one update is

    u = loss_update(p, y, scale, ppu)   (invariant)   or   u = -dloss(p, y) * scale
    w_i <- w_i + u * m * x_i * r_i

made only when the loss of the example is positive. With none of the three (``--sgd``) this is
plain SGD, w_i <- w_i - eta0 t^-power_t h dloss x_i.

The plain kernel (``learn_sgd_block``, one-against-all ``oaa_sgd_block``) learns with the rule and no
regularization; every saved model predicts with it. The learners that use the rule (sgd, tg, rounding,
gravity, fobos, smidas, softmax, ...) import its pieces from here.
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit

from streamlearn.core.loop import base_start, example_loop, squared_norm, state_view, sum_end
from streamlearn.core.losses import loss_dloss, loss_positive, loss_update
from streamlearn.core.multiclass import (LDF_M, LDF_MC, LDF_WAP, csoaa_loop, ldf_loop, multilabel_loop, oaa_steps_loop,
                                        widen_bounds)
from streamlearn.core.spec import Layout
from streamlearn.core.state import (
    I_ADAPTIVE, I_COL_G, I_COL_LAST, I_COL_N, I_COL_PEN, I_COL_RATE, I_INVARIANT, I_NORMALIZED, I_PERIOD, N_ST,
    P_G0, P_L1, P_POWER_T, P_THRESHOLD, S_ETA, S_MAX_LABEL, S_MIN_LABEL, S_MULT, S_NLEARN, S_NORM_SUM, S_T,
    S_TOTAL_W,
)
from streamlearn.core.table import W, feature_rate, get64, normalizer_rescale, rate_decay, set64, update_normalizer


@njit(cache=True, nogil=True)
def rule_settings(prm, iprm):
    """The update rule's settings (see the module docstring): (adaptive, normalized, invariant,
    initial G, table column of G, table column of N, power_t, power_t == 0.5)."""
    power_t = prm[P_POWER_T]
    return (iprm[I_ADAPTIVE] != 0, iprm[I_NORMALIZED] != 0, iprm[I_INVARIANT] != 0, prm[P_G0],
            iprm[I_COL_G], iprm[I_COL_N], power_t, power_t == 0.5)


@njit(cache=True, nogil=True, inline="always")
def step_scale(st, h, power_t, adaptive):
    """(t, scale) of a learned example of importance h: the clock after it and the step scale
    eta * h, times t^-power_t without adaptive rates (the plain schedule's decay)."""
    t = st[S_T] + h
    scale = st[S_ETA] * h
    if not adaptive:
        scale *= math.pow(t, -power_t)
    return t, scale


X_MIN = 1.084202e-19          # VW clamps |x| below this in the per-feature rate statistics
X2_MIN = X_MIN * X_MIN
X2_MAX = 3.4028234663852886e38  # FLT_MAX: beyond it a feature counts 1 in the normalizer


@njit(cache=True, nogil=True, inline="always")
def rate_statistics(idx, val, s, f, table, gsq, h, adaptive, normalized, sqrt_rate, power_t, cg, cn, cpen,
                    g0, st, cr):
    """First pass of an update (VW's ``pred_per_update_feature``): add gsq * x^2 to each G_i, grow
    each N_i (rescaling the weight as if the new scale had been the old one), and return
    sum_i x_i^2 r_i times the new global normalizer m, which is stored in ``st[S_MULT]``. With a rate
    column (``cr`` >= 0) each r_i is also stored there, as VW keeps it in the weight's spare slot: the
    update reads it back instead of computing it again, and so does the catch-up of a lazy learner
    until the weight's next update (its rate changes only here)."""
    ppu = 0.0
    norm_x = 0.0
    for k in range(np.uint64(s), np.uint64(f)):     # unsigned: no negative-index wrap-around code
        i = idx[k]
        x = np.float64(val[k])     # values are float32 (numba float() keeps float32)
        x2 = x * x
        if x2 < X2_MIN:
            x = X_MIN if x > 0.0 else -X_MIN
            x2 = X2_MIN
        G = 0.0
        N = 0.0
        if adaptive:
            table[i, cg] += gsq * x2
            G = table[i, cg] + g0       # as stored (a float32 table's rounding), as a loaded model's rate
        if normalized:
            N = table[i, cn]
            ax = abs(x)
            if ax > N:
                if N > 0.0:
                    scale = normalizer_rescale(N, ax, adaptive, sqrt_rate, power_t)
                    table[i, W] *= scale
                    if cpen >= 0:          # the weight in force scales with its raw value
                        set64(table, i, cpen, get64(table, i, cpen) * scale)
                table[i, cn] = ax
                N = table[i, cn]
            if x2 > X2_MAX:
                norm_x += 1.0
            else:
                norm_x += x2 / (N * N)
        r = rate_decay(G, N, adaptive, normalized, sqrt_rate, power_t)
        if cr >= 0:
            table[i, cr] = r
        ppu += x2 * r
    if normalized:
        update_normalizer(st, S_NORM_SUM, S_TOTAL_W, S_MULT, h, norm_x, adaptive, sqrt_rate, power_t)
        ppu *= st[S_MULT]
    return ppu


@njit(cache=True, nogil=True)
def gradient_step(idx, val, s, f, table, st, code, p, y, tau, h, scale, adaptive, normalized, invariant,
                  sqrt_rate, power_t, cg, cn, cpen, g0, cr):
    """``rule_gradient_step`` compiled once, the rule read at run time (every rule's)."""
    return rule_gradient_step(idx, val, s, f, table, st, code, p, y, tau, h, scale, adaptive, normalized, invariant,
                              sqrt_rate, power_t, cg, cn, cpen, g0, cr)


@njit(cache=True, nogil=True, inline="always")
def rule_gradient_step(idx, val, s, f, table, st, code, p, y, tau, h, scale, adaptive, normalized, invariant,
                       sqrt_rate, power_t, cg, cn, cpen, g0, cr):
    """The step of one learned example under the update rule (see the module docstring): updates the
    per-feature statistics (G, N and the global normalizer) and returns u such that weight i moves by
    u * x_i * r_i (r_i = 1 without per-feature rates; u includes the normalizer m). 0 when the loss
    is 0 (VW makes no update then) or the step is not a number."""
    if not loss_positive(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL]):
        return 0.0
    g = loss_dloss(code, p, y, tau)
    if adaptive or normalized:
        gsq = h * g * g
        ppu = 1.0
        if gsq != 0.0:
            ppu = rate_statistics(idx, val, s, f, table, gsq, h, adaptive, normalized,
                                  sqrt_rate, power_t, cg, cn, cpen, g0, st, cr)
        elif cr >= 0:       # no statistics to add: the update still reads every feature's rate
            for k in range(s, f):
                table[idx[k], cr] = feature_rate(table, idx[k], cg, cn, g0, sqrt_rate, power_t)
    elif invariant:
        ppu = squared_norm(val, s, f)
    else:
        ppu = 0.0
    if invariant:
        u = loss_update(code, p, y, tau, scale, ppu)
    else:
        u = -g * scale
    if u != u:
        return 0.0
    if normalized:
        u *= st[S_MULT]
    return u


#: the settings tuple of the gradient-descent learners (sgd, tg, rounding, gravity): a tuple the kernels
#: unpack, with names for the learners that read one value (``cfg.gravity``)
GdSettings = namedtuple("GdSettings", ("adaptive", "normalized", "invariant", "g0", "col_g", "col_n", "power_t",
                                       "sqrt_rate", "col_last", "col_pen", "gravity", "theta", "period",
                                       "col_rate"))


@njit(cache=True, nogil=True)
def gd_settings(prm, iprm):
    """The settings of the gradient-descent learners (``GdSettings``): the rule's
    (``rule_settings``), then the table columns LAST and P, the gravity g, theta, the period K and the
    rate column."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate = rule_settings(prm, iprm)
    return GdSettings(adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, iprm[I_COL_LAST],
                      iprm[I_COL_PEN], prm[P_L1], prm[P_THRESHOLD], iprm[I_PERIOD], iprm[I_COL_RATE])


@njit(cache=True, nogil=True, inline="always")
def gd_step(idx, val, s, f, table, cfg, st, code, p, y, tau, h):
    """The gradient step of one learned example under the update rule (module docstring), then the
    clock. Returns (the step scale the regularizers use: scale, times the normalizer m when
    normalized; u, the step along x of ``gradient_step``)."""
    return gd_step_with(gradient_step, idx, val, s, f, table, cfg, st, code, p, y, tau, h)


@njit(cache=True, nogil=True, inline="always")
def gd_step_with(step, idx, val, s, f, table, cfg, st, code, p, y, tau, h):
    """``gd_step`` with the gradient step ``step`` (``gradient_step``, or ``rule_gradient_step``
    compiled into the caller: ``default_sgd_learn``)."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, cpen, gravity, theta, period, cr = cfg
    t, scale = step_scale(st, h, power_t, adaptive)
    u = step(idx, val, s, f, table, st, code, p, y, tau, h, scale, adaptive, normalized,
             invariant, sqrt_rate, power_t, cg, cn, cpen, g0, cr)
    apply_step(idx, val, s, f, table, cfg, u)
    st[S_T] = t
    st[S_NLEARN] += 1.0
    return (scale * st[S_MULT] if normalized else scale), u


@njit(cache=True, nogil=True, inline="always")
def apply_step(idx, val, s, f, table, cfg, u):
    """Move weight i of features s..f-1 by u * x_i * r_i (``gradient_step``'s u; r_i the feature's
    rate, 1 without per-feature rates)."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, cpen, gravity, theta, period, cr = cfg
    if u != 0.0:
        if cr >= 0:
            for k in range(np.uint64(s), np.uint64(f)):
                i = idx[k]
                table[i, W] += u * val[k] * table[i, cr]
        elif adaptive or normalized:
            for k in range(s, f):
                i = idx[k]
                table[i, W] += u * val[k] * feature_rate(table, i, cg, cn, g0, sqrt_rate, power_t)
        else:
            for k in range(s, f):
                table[idx[k], W] += u * val[k]


@njit(cache=True, nogil=True, inline="always")
def gd_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h):
    """``gd_step``'s step scale."""
    return gd_step(idx, val, s, f, table, cfg, st, code, p, y, tau, h)[0]


# ----------------------------------------------------------------------------- sgd

@njit(cache=True, nogil=True, inline="always")
def sgd_weight(table, i, cfg, v):
    """The weight of row i, as float64 (a float32 table's too: the dot product then multiplies in
    float64, as the lazy learners' catch-up does)."""
    return np.float64(table[i, W])


@njit(cache=True, nogil=True, inline="always")
def sgd_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    gd_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h)


@njit(cache=True, nogil=True, inline="always")
def default_gd_settings(cfg):
    """``cfg`` (``GdSettings``) with VW's default rule's flags (adaptive, normalized, invariant, power_t 0.5)
    and its table's columns (w g n rate, ``rule_layout``; no LAST, no P) as constants: the loop compiled with
    them (``learn_sgd_block``, when ``is_default_gd``) tests none of them. The same arithmetic as the general
    loop's: the same results, bit for bit."""
    return GdSettings(True, True, True, cfg.g0, 1, 2, 0.5, True, -1, -1, cfg.gravity, cfg.theta, cfg.period, 3)


@njit(cache=True, nogil=True, inline="always")
def is_default_gd(cfg):
    """Whether ``cfg`` is what ``default_gd_settings`` makes of it."""
    return (cfg.adaptive and cfg.normalized and cfg.invariant and cfg.sqrt_rate and cfg.power_t == 0.5
            and cfg.col_g == 1 and cfg.col_n == 2 and cfg.col_last == -1 and cfg.col_pen == -1
            and cfg.col_rate == 3)


@njit(cache=True, nogil=True, inline="always")
def default_sgd_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """``sgd_learn`` under the default rule (``default_gd_settings``): the gradient step and its statistics
    compiled into the loop."""
    gd_step_with(rule_gradient_step, idx, val, s, f, table, cfg, st, code, p, y, tau, h)


@njit(cache=True, nogil=True, inline="always")
def sgd_class_steps(cfg, st, code, acc, cls, tau, h, K, bounds_follow, steps, active):
    """``oaa_steps_loop``'s ``class_steps`` under --sgd (no adaptive, normalized or invariant update): class
    c's step is -dloss(its stored score, +-1) * eta h t^-power_t, or 0 when its loss is 0 -- what
    ``oaa_update`` with ``sgd_learn`` takes, with the schedule's power computed once for the K classes
    (they share the clock). The state as the class-by-class steps leave it: the clock at t0 + h, K more
    learned steps, the last class's normalizer sums in the rule's slots. -1 under another rule."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, cpen, gravity, theta, period, cr = cfg
    if adaptive or normalized or invariant or cr >= 0:
        return -1
    t, scale = step_scale(st, h, power_t, False)
    n = 0
    for c in range(K):
        yk = 1.0 if c == cls else -1.0
        if bounds_follow:
            widen_bounds(st, yk)
        p = acc[c]
        if loss_positive(code, p, yk, tau, st[S_MIN_LABEL], st[S_MAX_LABEL]):
            u = -loss_dloss(code, p, yk, tau) * scale
            if u == u and u != 0.0:
                steps[n] = u
                active[n] = c
                n += 1
    st[S_NORM_SUM] = st[N_ST + 2 * (K - 1)]
    st[S_TOTAL_W] = st[N_ST + 2 * (K - 1) + 1]
    st[S_T] = t
    st[S_NLEARN] += K
    return n


@njit(cache=True, nogil=True)
def learn_sgd_block(block, state, start, end):
    """Examples start..end-1 with gradient descent under the update rule, no regularization (the
    example loop of ``streamlearn.core.loop``; also every model's prediction-only kernel)."""
    table, prm, iprm, st, ctr = state
    cfg = gd_settings(prm, iprm)
    if is_default_gd(cfg):
        return example_loop(block, state, start, end, default_gd_settings(cfg), state_view, sgd_weight, base_start,
                            sum_end, default_sgd_learn)
    return example_loop(block, state, start, end, cfg, state_view, sgd_weight, base_start, sum_end, sgd_learn)


@njit(cache=True, nogil=True)
def oaa_sgd_block(block, state, start, end):
    """``learn_sgd_block`` one-against-all (``streamlearn.core.multiclass.oaa_loop``; also every
    one-against-all model's prediction-only kernel)."""
    table, prm, iprm, st, ctr = state
    return oaa_steps_loop(block, state, start, end, gd_settings(prm, iprm), state_view, sgd_weight, base_start,
                          sum_end, sgd_learn, sgd_class_steps)


@njit(cache=True, nogil=True)
def csoaa_sgd_block(block, state, start, end):
    """``learn_sgd_block`` cost-sensitive one-against-all (``streamlearn.core.multiclass.csoaa_loop``,
    --csoaa K; also every --csoaa model's prediction-only kernel)."""
    table, prm, iprm, st, ctr = state
    return csoaa_loop(block, state, start, end, gd_settings(prm, iprm), state_view, sgd_weight, sgd_learn)


@njit(cache=True, nogil=True)
def multilabel_sgd_block(block, state, start, end):
    """``learn_sgd_block`` multilabel one-against-all (``streamlearn.core.multiclass.multilabel_loop``,
    --multilabel_oaa K; also every --multilabel_oaa model's prediction-only kernel)."""
    table, prm, iprm, st, ctr = state
    return multilabel_loop(block, state, start, end, gd_settings(prm, iprm), state_view, sgd_weight, sgd_learn)


@njit(cache=True, nogil=True)
def ldf_m_sgd_block(block, state, start, end):
    """``learn_sgd_block`` over label-dependent features, each action's cost regressed (``--csoaa_ldf m``;
    ``streamlearn.core.multiclass.ldf_loop``; also its prediction-only kernel)."""
    table, prm, iprm, st, ctr = state
    return ldf_loop(block, state, start, end, gd_settings(prm, iprm), state_view, sgd_weight, sgd_learn, LDF_M)


@njit(cache=True, nogil=True)
def ldf_mc_sgd_block(block, state, start, end):
    """``ldf_m_sgd_block`` with the actions classified against the least cost (``--csoaa_ldf mc``)."""
    table, prm, iprm, st, ctr = state
    return ldf_loop(block, state, start, end, gd_settings(prm, iprm), state_view, sgd_weight, sgd_learn, LDF_MC)


@njit(cache=True, nogil=True)
def ldf_wap_sgd_block(block, state, start, end):
    """``ldf_m_sgd_block`` learned by weighted all pairs (``--wap_ldf``)."""
    table, prm, iprm, st, ctr = state
    return ldf_loop(block, state, start, end, gd_settings(prm, iprm), state_view, sgd_weight, sgd_learn, LDF_WAP)




def rule_layout(cfg, penalty: bool = False, lazy: bool = False, extra: tuple = (), rate: bool = False,
                f32: bool = False, stamped: bool = False) -> Layout:
    """The weight column, then G (adaptive), N (normalized), P (cumulative penalty): the saved
    columns; then LAST (lazy learners), the learner's ``extra`` columns, and with ``rate`` and
    per-feature rates the RATE column (``rate_statistics``; rebuilt from G and N after a model is
    loaded, ``fill_rates``).

    With ``f32`` (sgd's and tg's tables under per-feature rates; no ``extra``) the table is float32:
    W, G, N and RATE one float32 column each, then P and LAST (float64, exact: ``Layout``) two
    columns each at an even index (after a pad column when needed): the default rule's tg would have 8
    columns of 4 bytes (w g n rate p p:2 last last:2, 32 B a slot, 48 B in float64) without
    ``stamped``, its sgd 4 (16 B, VW's; 32 B in float64). Under --sgd they stay float64 below -b 22 (sgd 8 B, tg 16 B: a float32 weight
    beside a float64 stamp would take 16 B too); from -b 22 sgd's is float32 (``sgd.F32_MIN_BITS``) and
    tg's block-stamped (``tg.BLOCK_MIN_BITS``).

    With ``stamped`` (tg's cumulative penalty under a rule where a never-updated row has rate 0, the
    default rule among them; ``streamlearn.learners.tg``) P, LAST and RATE become one float32 column
    "a" = P - (LAST - C) r, C the run's epoch base, r computed from G and N: w g n a, 16 B a slot (VW's),
    all four saved (after ``finalize`` a holds P, the model's "p")."""
    if f32 and stamped:
        names = (("w",) + (("g",) if cfg.adaptive else ()) + (("n",) if cfg.normalized else ()) + ("a",))
        return Layout(names, len(names), "float32")
    if f32:
        names = (("w",) + (("g",) if cfg.adaptive else ()) + (("n",) if cfg.normalized else ()))
        saved = len(names)
        names += ("rate",) if rate and (cfg.adaptive or cfg.normalized) else ()
        wide = (("p",) if penalty else ()) + (("last",) if lazy else ())
        if wide and len(names) % 2:
            names += ("pad",)
        for name in wide:
            names += (name, name + ":2")
        return Layout(names, saved, "float32")
    names = ("w",) + (("g",) if cfg.adaptive else ()) + (("n",) if cfg.normalized else ())
    names += ("p",) if penalty else ()
    saved = len(names)
    names += (("last",) if lazy else ()) + tuple(extra)
    return Layout(names + (("rate",) if rate and (cfg.adaptive or cfg.normalized) else ()), saved)


def rule_saved(cfg, lay: Layout) -> list:
    """Per-feature state a model saves for -i: the raw weight "z" and penalty "p" of the cumulative
    penalty (P, or the stamped column "a", which holds P after ``finalize``), G and N of the
    per-feature rates."""
    pen = lay.pen if lay.pen >= 0 else lay.acc      # a stamped penalty holds P after finalize
    cols = [("z", 0)] if pen >= 0 else []
    cols += [("g", lay.g)] if lay.g >= 0 else []
    cols += [("n", lay.n)] if lay.n >= 0 else []
    cols += [("p", pen)] if pen >= 0 else []
    return cols
