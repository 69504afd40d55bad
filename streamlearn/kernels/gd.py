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

Truncated gradient (``A_TG``) is Langford, Li & Zhang 2009, eq. (6), with each weight's own rate:

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

from streamlearn.kernels.losses import (
    loss_dloss, loss_label, loss_positive, loss_update, loss_value,
)
from streamlearn.kernels.state import (
    A_ROUNDING, A_TG, P_ADAPTIVE, P_ALGO, P_BINARY, P_COL_PEN, P_COL_G, P_COL_LAST, P_COL_N, P_FIXED_BOUNDS, P_G0,
    P_HOLDOUT, P_INVARIANT, P_L1, P_LOSS, P_NORMALIZED, P_PERIOD, P_POWER_T, P_TAU, P_THRESHOLD,
    P_TRAIN, S_CUM, S_DUMP, S_ETA, S_EXAMPLES, S_FEATURES, S_HAVE_LABEL1, S_HAVE_LABEL2, S_HO_LOSS,
    S_HO_LOSS_PASS, S_HO_LOSS_SINCE, S_HO_W, S_HO_W_PASS, S_HO_W_SINCE, S_LABEL1, S_LABEL2,
    S_MANY_LABELS, S_MAX_LABEL, S_MIN_LABEL, S_MULT, S_NLEARN, S_NONFINITE, S_NORM_SUM, S_PASS_EX,
    S_PENDING, S_SUM_LOSS, S_SUM_LOSS_SINCE, S_T, S_TOTAL_W, S_W_LABELED, S_W_LABELS,
    S_W_UNLABELED,
)
from streamlearn.kernels.table import W, catch_up, feature_rate, finalize_lazy, rate_decay


@njit(cache=True, nogil=True)
def observe_label(st, y, update_bounds):
    """Label bookkeeping shared by all learners: distinct labels (for the best constant) and the
    prediction bounds, which grow to cover every label seen before the prediction (VW's set_minmax)."""
    if st[S_HAVE_LABEL1] == 0.0:
        st[S_HAVE_LABEL1] = 1.0
        st[S_LABEL1] = y
    elif y != st[S_LABEL1]:
        if st[S_HAVE_LABEL2] == 0.0:
            st[S_HAVE_LABEL2] = 1.0
            st[S_LABEL2] = y
        elif y != st[S_LABEL2]:
            st[S_MANY_LABELS] = 1.0
    if update_bounds:
        if y < st[S_MIN_LABEL]:
            st[S_MIN_LABEL] = y
        if y > st[S_MAX_LABEL]:
            st[S_MAX_LABEL] = y


@njit(cache=True, nogil=True)
def clamp_prediction(st, raw):
    """Clamp a raw score to the prediction bounds; NaN becomes 0 and is flagged."""
    if raw != raw:
        st[S_NONFINITE] = 1.0
        return 0.0
    if raw < st[S_MIN_LABEL]:
        return st[S_MIN_LABEL]
    if raw > st[S_MAX_LABEL]:
        return st[S_MAX_LABEL]
    return raw


@njit(cache=True, nogil=True)
def account(st, labeled, holdout, h, y, lval, nfeat):
    """Progress and summary counters for one example (VW's shared_data::update)."""
    if holdout:
        if labeled:
            st[S_HO_W] += h
            st[S_HO_LOSS] += lval
            st[S_HO_W_SINCE] += h
            st[S_HO_LOSS_SINCE] += lval
            st[S_HO_W_PASS] += h
            st[S_HO_LOSS_PASS] += lval
    else:
        if labeled:
            st[S_W_LABELED] += h
            st[S_W_LABELS] += y * h
            st[S_SUM_LOSS] += lval
            st[S_SUM_LOSS_SINCE] += lval
        else:
            st[S_W_UNLABELED] += h
        st[S_EXAMPLES] += 1.0
        st[S_FEATURES] += nfeat


@njit(cache=True, nogil=True)
def example_loss(code, p, y, tau, lo, hi, h, binary):
    """Importance-weighted loss reported for one labeled example (0/1 loss of the sign with --binary)."""
    if binary:
        ps = 1.0 if p > 0.0 else -1.0
        ys = 1.0 if y > 0.0 else -1.0
        return h if ps != ys else 0.0
    return loss_value(code, p, y, tau, lo, hi) * h


@njit(cache=True, nogil=True)
def example_settings(prm):
    """The settings every learner kernel reads before its loop: (loss code, quantile tau, power_t,
    holdout period, train, prediction bounds follow the labels, binary)."""
    return (int(prm[P_LOSS]), prm[P_TAU], prm[P_POWER_T], int(prm[P_HOLDOUT]), prm[P_TRAIN] != 0.0,
            prm[P_FIXED_BOUNDS] == 0.0, prm[P_BINARY] != 0.0)


@njit(cache=True, nogil=True)
def rule_settings(prm):
    """The update rule's settings (see the module docstring): (adaptive, normalized, invariant,
    initial G, table column of G, table column of N)."""
    return (prm[P_ADAPTIVE] != 0.0, prm[P_NORMALIZED] != 0.0, prm[P_INVARIANT] != 0.0, prm[P_G0],
            int(prm[P_COL_G]), int(prm[P_COL_N]))


@njit(cache=True, nogil=True)
def begin_example(st, code, y, train, holdout_period, bounds_follow):
    """Bookkeeping every kernel does before predicting an example: count it in the pass, decide
    whether it is held out, map its label to loss space and observe it. Returns (label, labeled,
    holdout)."""
    labeled = y == y
    st[S_PASS_EX] += 1.0
    holdout = train and holdout_period > 0 and int(st[S_PASS_EX]) % holdout_period == 0
    if labeled:
        y = loss_label(code, y)
        if not holdout:
            observe_label(st, y, train and bounds_follow)
    return y, labeled, holdout


@njit(cache=True, nogil=True)
def finish_prediction(st, preds, e, raw, code, y, tau, h, labeled, holdout, binary, nfeat):
    """Clamp the raw score, store it as example e's prediction, and count its loss. Returns it."""
    p = clamp_prediction(st, raw)
    preds[e] = p
    lval = 0.0
    if labeled and h > 0.0:
        lval = example_loss(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL], h, binary)
    account(st, labeled, holdout, h, y, lval, nfeat)
    return p


X_MIN = 1.084202e-19          # VW clamps |x| below this in the per-feature rate statistics
X2_MIN = X_MIN * X_MIN
X2_MAX = 3.4028234663852886e38  # FLT_MAX: beyond it a feature counts 1 in the normalizer


@njit(cache=True, nogil=True)
def rate_statistics(idx, val, s, f, table, gsq, h, adaptive, normalized, sqrt_rate, power_t, cg, cn, cpen,
                    g0, st):
    """First pass of an update (VW's ``pred_per_update_feature``): add gsq * x^2 to each G_i, grow
    each N_i (rescaling the weight as if the new scale had been the old one), and return
    sum_i x_i^2 r_i times the new global normalizer m, which is stored in ``st[S_MULT]``."""
    ppu = 0.0
    norm_x = 0.0
    for k in range(s, f):
        i = idx[k]
        x = np.float64(val[k])     # values are float32 (numba float() keeps float32)
        x2 = x * x
        if x2 < X2_MIN:
            x = X_MIN if x > 0.0 else -X_MIN
            x2 = X2_MIN
        G = 0.0
        N = 0.0
        if adaptive:
            G = table[i, cg] + gsq * x2
            table[i, cg] = G
            G += g0
        if normalized:
            N = table[i, cn]
            ax = abs(x)
            if ax > N:
                if N > 0.0:
                    if sqrt_rate:
                        scale = N / ax
                        scale = scale if adaptive else scale * scale
                    else:
                        scale = ax / N
                        scale = (scale * scale) ** (power_t - 1.0)
                    table[i, W] *= scale
                    if cpen >= 0:          # the weight in force scales with its raw value
                        table[i, cpen] *= scale
                N = ax
                table[i, cn] = N
            if x2 > X2_MAX:
                norm_x += 1.0
            else:
                norm_x += x2 / (N * N)
        ppu += x2 * rate_decay(G, N, adaptive, normalized, sqrt_rate, power_t)
    if normalized:
        st[S_NORM_SUM] += h * norm_x
        st[S_TOTAL_W] += h
        if st[S_NORM_SUM] > 0.0:      # else (only feature-less examples so far) m stays as it was
            if sqrt_rate:
                m = st[S_TOTAL_W] / st[S_NORM_SUM]
                if adaptive:
                    m = math.sqrt(m)
            else:
                m = (st[S_NORM_SUM] / st[S_TOTAL_W]) ** (power_t - 1.0)
            st[S_MULT] = m
        ppu *= st[S_MULT]
    return ppu


@njit(cache=True, nogil=True)
def gradient_step(idx, val, s, f, table, st, code, p, y, tau, h, scale, adaptive, normalized, invariant,
                  sqrt_rate, power_t, cg, cn, cpen, g0):
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
                                  sqrt_rate, power_t, cg, cn, cpen, g0, st)
    elif invariant:
        ppu = 0.0
        for k in range(s, f):
            x = np.float64(val[k])
            ppu += x * x
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


@njit(cache=True, nogil=True)
def learn_gd_block(indptr, idx, val, labels, weights, bases, start, end, table, prm, st, preds):
    """Predict, score and (when training) learn examples start..end-1 of a block with gradient descent
    (plain or lazy truncated gradient, under the configured update rule). Stops early, returning the
    next example index, once the weighted example count reaches the next progress row
    (``st[S_DUMP]``); returns ``end`` otherwise."""
    code, tau, power_t, holdout_period, train, bounds_follow, binary = example_settings(prm)
    adaptive, normalized, invariant, g0, cg, cn = rule_settings(prm)
    tg = int(prm[P_ALGO]) == A_TG
    rounding = int(prm[P_ALGO]) == A_ROUNDING
    sqrt_rate = power_t == 0.5
    gravity = prm[P_L1]
    theta = prm[P_THRESHOLD]
    period = int(prm[P_PERIOD])
    per_feature = adaptive or normalized
    clast = int(prm[P_COL_LAST])
    cpen = int(prm[P_COL_PEN])
    for e in range(start, end):
        h = weights[e]
        y, labeled, holdout = begin_example(st, code, labels[e], train, holdout_period, bounds_follow)
        s = indptr[e]
        f = indptr[e + 1]
        raw = bases[e]
        if tg:
            cum = st[S_CUM]
            for k in range(s, f):
                raw += catch_up(table, idx[k], cum, theta, clast, cpen, cg, cn, g0, sqrt_rate, power_t) * val[k]
        elif rounding:
            rounds = st[S_CUM]
            for k in range(s, f):
                raw += round_catch_up(table, idx[k], rounds, theta, clast) * val[k]
        else:
            for k in range(s, f):
                raw += table[idx[k], W] * val[k]
        p = finish_prediction(st, preds, e, raw, code, y, tau, h, labeled, holdout, binary, f - s)
        if train and labeled and h > 0.0 and not holdout:
            t = st[S_T] + h
            scale = st[S_ETA] * h
            if not adaptive:
                scale *= math.pow(t, -power_t)
            u = gradient_step(idx, val, s, f, table, st, code, p, y, tau, h, scale, adaptive, normalized,
                              invariant, sqrt_rate, power_t, cg, cn, cpen, g0)
            if u != 0.0:
                if per_feature:
                    for k in range(s, f):
                        i = idx[k]
                        table[i, W] += u * val[k] * feature_rate(table, i, cg, cn, g0, sqrt_rate, power_t)
                else:
                    for k in range(s, f):
                        table[idx[k], W] += u * val[k]
            st[S_T] = t
            st[S_NLEARN] += 1.0
            if tg:
                step = scale * st[S_MULT] if normalized else scale
                st[S_PENDING] += gravity * step
                if int(st[S_NLEARN]) % period == 0:
                    st[S_CUM] += st[S_PENDING]
                    st[S_PENDING] = 0.0
            elif rounding and int(st[S_NLEARN]) % period == 0:
                st[S_CUM] += 1.0          # one more rounding every weight owes
        if st[S_W_LABELED] + st[S_W_UNLABELED] >= st[S_DUMP]:
            return e + 1
    return end


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
def finalize_rounding(table, prm, st):
    """Apply the roundings every weight owes (before saving)."""
    rounds = st[S_CUM]
    theta = prm[P_THRESHOLD]
    clast = int(prm[P_COL_LAST])
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            round_catch_up(table, i, rounds, theta, clast)


@njit(cache=True, nogil=True)
def finalize_tg(table, prm, st):
    """Catch every weight of a truncated-gradient table up (see ``finalize_lazy``)."""
    finalize_lazy(table, st[S_CUM], prm[P_THRESHOLD], int(prm[P_COL_LAST]), int(prm[P_COL_PEN]),
                  int(prm[P_COL_G]),
                  int(prm[P_COL_N]), prm[P_G0], prm[P_POWER_T] == 0.5, prm[P_POWER_T])
