"""Plain SGD and truncated gradient over one block of examples (progressive validation: each example
is predicted, scored, then learned).

Plain SGD (``A_SGD``) is VW's ``--sgd`` learner (vw-spec.md §1c, gd.cc ``get_scale`` and the loss
functions' ``get_unsafe_update``): with t the weighted count of learned examples so far, the current
one included, plus ``initial_t``,

    rate_t = eta0 * t^(-power_t),   w_i <- w_i - rate_t * h * dloss(p, y) * x_i

where h is the importance weight and p the prediction clamped to the prediction bounds
(``eta0 = eta * initial_t^power_t`` as VW sets it, so ``-l`` is the rate at the start).

Truncated gradient (``A_TG``) is Langford, Li & Zhang 2009, eq. (6):

    w <- T1(w - rate_t * grad, rate_t * g_i, theta),  g_i = K g at every K-th step, else 0,

implemented lazily (§4 of that paper): each learned example accrues ``g * rate_t * h`` of gravity;
every K-th learned example releases what accrued into the cumulative ``st[S_CUM]``; each weight pays
what was released since its last touch when it is next read (``catch_up_tg``) or at save time. With
unit importance weights and a constant rate the released amount is exactly the paper's ``rate K g``.
"""

import math

from numba import njit

from streamlearn.kernels.losses import loss_dloss, loss_label, loss_value
from streamlearn.kernels.state import (
    A_TG, P_ALGO, P_BINARY, P_FIXED_BOUNDS, P_HOLDOUT, P_L1, P_LOSS, P_PERIOD, P_POWER_T,
    P_TAU, P_THRESHOLD, P_TRAIN, S_CUM, S_DUMP, S_ETA, S_EXAMPLES, S_FEATURES, S_HAVE_LABEL1,
    S_HAVE_LABEL2, S_HO_LOSS, S_HO_LOSS_PASS, S_HO_LOSS_SINCE, S_HO_W, S_HO_W_PASS, S_HO_W_SINCE,
    S_LABEL1, S_LABEL2, S_MANY_LABELS, S_MAX_LABEL, S_MIN_LABEL, S_NLEARN, S_NONFINITE,
    S_PASS_EX, S_PENDING, S_SUM_LOSS, S_SUM_LOSS_SINCE, S_T, S_W_LABELED, S_W_LABELS,
    S_W_UNLABELED,
)
from streamlearn.kernels.table import W, catch_up_tg


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
def learn_sgd_block(indptr, idx, val, labels, weights, bases, start, end, table, prm, st, preds):
    """Predict, score and (when training) learn examples start..end-1 of a block with SGD or truncated
    gradient. Stops early, returning the next example index, once the weighted example count reaches
    the next progress row (``st[S_DUMP]``); returns ``end`` otherwise."""
    code = int(prm[P_LOSS])
    tau = prm[P_TAU]
    tg = int(prm[P_ALGO]) == A_TG
    power_t = prm[P_POWER_T]
    gravity = prm[P_L1]
    theta = prm[P_THRESHOLD]
    period = int(prm[P_PERIOD])
    holdout_period = int(prm[P_HOLDOUT])
    train = prm[P_TRAIN] != 0.0
    bounds_follow = prm[P_FIXED_BOUNDS] == 0.0
    binary = prm[P_BINARY] != 0.0
    for e in range(start, end):
        h = weights[e]
        y = labels[e]
        labeled = y == y
        st[S_PASS_EX] += 1.0
        holdout = train and holdout_period > 0 and int(st[S_PASS_EX]) % holdout_period == 0
        if labeled:
            y = loss_label(code, y)
            if not holdout:
                observe_label(st, y, train and bounds_follow)
        s = indptr[e]
        f = indptr[e + 1]
        raw = bases[e]
        if tg:
            cum = st[S_CUM]
            for k in range(s, f):
                raw += catch_up_tg(table, idx[k], cum, theta) * val[k]
        else:
            for k in range(s, f):
                raw += table[idx[k], W] * val[k]
        p = clamp_prediction(st, raw)
        preds[e] = p
        lval = 0.0
        if labeled and h > 0.0:
            lval = example_loss(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL], h, binary)
        account(st, labeled, holdout, h, y, lval, f - s)
        if train and labeled and h > 0.0 and not holdout:
            t = st[S_T] + h
            rate = st[S_ETA] * math.pow(t, -power_t)
            g = loss_dloss(code, p, y, tau)
            if g != 0.0:
                u = -g * rate * h
                for k in range(s, f):
                    table[idx[k], W] += u * val[k]
            st[S_T] = t
            st[S_NLEARN] += 1.0
            if tg:
                st[S_PENDING] += gravity * rate * h
                if int(st[S_NLEARN]) % period == 0:
                    st[S_CUM] += st[S_PENDING]
                    st[S_PENDING] = 0.0
        if st[S_W_LABELED] + st[S_W_UNLABELED] >= st[S_DUMP]:
            return e + 1
    return end
