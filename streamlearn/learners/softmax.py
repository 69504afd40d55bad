"""Multinomial logistic regression (softmax) with FOBOS regularizers on each feature's row of the
weight matrix (Duchi & Singer 2009: eq. 3 with the regularizers of Section 4, the mixed norms of
Section 4 eq. 9, the lazy updates of Section 5, Proposition 4).

**Model.** The weights form a matrix W with one row per feature and one column per class; the
weight of feature h for class k is table slot ``(h*W + k) & mask`` (``streamlearn.core.
multiclass``: a feature's *row* is the aligned block of W slots at ``base = (h*W) & mask``, of which
slots base..base+K-1 are used). The score of class k is ``s_k = sum_i w[row_i + k] x_i`` (the joint
loop computes the K raw scores), the prediction ``p = softmax(s)`` and the loss
``-log p_cls``, whose gradient with respect to weight (row i, k) is ``(p_k - [k == cls]) x_i``.

**Step (Section 2, eq. 2).** With ``d_k = p_k - [k == cls]``, every feature entry of the example
moves its row by

    w[row + k] -= scale * m * r_row * d_k * x          (k = 0..K-1)

``scale`` and ``m`` as in ``streamlearn.core.rules`` (``step_scale``: eta * h, times t^-power_t
without adaptive rates; m the global normalizer of --normalized, 1 otherwise) and ``r_row`` the
row's own rate: ONE rate per row (per feature), ``rate_decay(G_row + g0, N_row)`` with

* ``G_row += h * x^2 * sum_k d_k^2`` (adaptive: the squared norm of the row's gradient, group AdaGrad),
* ``N_row = max |x|`` seen (normalized; when it grows the row's K weights are rescaled by the factor
  gd applies to one weight, N_old/N_new (adaptive) or its square), and the global normalizer m from
  the sums of h * sum_i (x_i / N_i)^2 and of h (``st[S_NORM_SUM]``, ``st[S_TOTAL_W]``).

Under --sgd (the plain schedule) r_row = 1 and m = 1. G_row, N_row and the row's last-touch values
live in the columns of the row's base slot (slots base+1.. leave those columns 0). The
importance-invariant rule (--invariant) has no closed form here and does not apply. An example whose
gradient is exactly 0 (or not a number: an infinite score) moves no weight and no statistic; the
clock and the prox still advance.

**Prox (eq. 3).** After the step, the prox of ``eta_t lambda r(W)`` with ``eta_t = scale * m``
(Section 3's online choice eta_{t+1/2} = eta_t), each row with its own rate: the diagonal step
``scale m r_row`` is the same for the K weights of a row, so the prox of a row-separable r under it
is the ordinary prox of the row with strength ``lambda scale m r_row``. ``--reg`` (a kernel each):

* ``l1``, lambda ||W||_1 (eq. 6): each weight soft-thresholded by the strength;
* ``l2sq``, lambda/2 ||W||_F^2 (eq. 7): each weight divided by ``1 + lambda eta`` (with a row rate
  r: multiplied by ``(1 + lambda eta)^(-r)``, which composes -- as ``fobos`` does);
* ``elastic``, both (the l1 shrink, then the l2sq scaling), plain schedule only (as ``fobos``);
* ``l1l2``, lambda sum_rows ||row||_2 (Section 4, mixed norms, eq. 9 with the l2 prox):
  ``row <- row * [1 - a / ||row||_2]_+``;
* ``l1linf``, lambda sum_rows ||row||_inf (eq. 9 with eq. 8 and its dual):
  ``row <- row - Proj_{||.||_1 <= a}(row)``: every |w_k| capped at theta, where
  ``sum_k [|w_k| - theta]_+ = a``; the zero row when ``||row||_1 <= a``.

**Lazy catch-up (Section 5, Proposition 4).** Every prox above composes: two successive steps of
strengths a and b equal one of strength a + b (l1, l1l2, l1linf; l2sq: factors multiply, i.e.
log-strengths add). Proofs, for v a row and t(a) = a r:

* l1: ``shrink(shrink(v, a), b) = shrink(v, a + b)`` coordinate-wise (|v| - a - b, stopping at 0).
* l1/l2: if ||v|| <= a both sides are 0 (||v|| <= a + b). Else u = v (1 - a/||v||) has
  ||u|| = ||v|| - a, so prox_b(u) = v (||v|| - a)/||v|| * [1 - b/(||v|| - a)]_+
  = v [(||v|| - a - b)/||v||]_+ = prox_{a+b}(v).
* l1/linf: let theta_a solve sum_k [|v_k| - theta]_+ = a (0 when ||v||_1 <= a) and u = prox_a(v),
  |u_k| = min(|v_k|, theta_a). If theta_a = 0, u = 0 and ||v||_1 <= a + b: both sides are 0. Else
  ||u||_1 = ||v||_1 - a, so ||u||_1 <= b iff ||v||_1 <= a + b (both sides 0); otherwise for
  theta' = theta_{a+b} <= theta_a, ``[min(|v_k|, theta_a) - theta']_+ = [|v_k| - theta']_+ -
  [|v_k| - theta_a]_+`` (check |v_k| <= theta', between, above theta_a), whose sum over k is
  (a + b) - a = b: theta' is u's threshold for b and prox_b(u)_k = sign(v_k) min(|v_k|, theta_a,
  theta') = prox_{a+b}(v)_k.

A row's rate changes only when one of its features is in an example (its G_row and N_row move), so
between two touches every missed prox has strength ``lambda eta_s r_row`` with the same r_row, and
the missed steps act as one of strength ``r_row * sum_s lambda eta_s``. The kernel keeps the sum in
``st[S_FOBOS_CUM]`` (l2sq: the sum of log(1 + lambda eta_s); elastic: ``fobos``'s two cumulatives,
``st[S_FOBOS_CUM2]`` the second), and each row the value at its last touch (column LAST of its base
slot). Reading any slot of a row (``row_weight``) first pays the row what it owes -- O(K) (l1linf:
O(K log K), a sort) -- and sets LAST to the cumulative, so later reads of the same row in the example
(the other classes, a repeated feature) owe nothing: the catch-up is idempotent. So an example costs
O(K * its features), whatever the number of rows. ``finalize`` catches every row up before saving.

**One kernel per regularizer.** The regularizer is chosen once, at set-up, by choosing its kernel
(``KERNELS``, keyed by --reg: ``LearnerSpec.variants``), so no kernel branches on it: each is the joint
loop with this module's step (``softmax_step``) and the regularizer's catch-up of a row and release,
one section each below. The cumulatives and the proxes on a row (and the elastic net's on a
coordinate, fobos's) are ``streamlearn.core.prox``'s.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from streamlearn.errors import OptionError
from streamlearn.learners.fobos import check_strengths
from streamlearn.regularizers import REGULARIZERS
from streamlearn.core.rules import X2_MAX, X2_MIN, X_MIN, rule_layout, rule_saved, rule_settings, step_scale
from streamlearn.core.multiclass import joint_loop
from streamlearn.core.loop import base_start, sum_end
from streamlearn.core.prox import (
    elastic_coord, elastic_release, elastic_restart, l1_release, l1_row, l1l2_row, l1linf_row, l2sq_release,
    l2sq_row,
)
from streamlearn.core.spec import Layout, LearnerSpec, Variant
from streamlearn.core.state import (
    I_CLASS_W, I_CLASSES, I_COL_LAST, I_COL_LAST2, P_L1, P_L2, P_LAMBDA, S_FOBOS_CUM, S_FOBOS_CUM2, S_MULT,
    S_NLEARN, S_NORM_SUM, S_T, S_TOTAL_W,
)
from streamlearn.core.table import feature_rate, normalizer_rescale, update_normalizer

WCOL = 0                  # the weight column


# ----------------------------------------------------------------------------- settings and step

#: the settings tuple of the softmax kernels: the update rule's (without --invariant), the table columns
#: LAST and LAST2, the strengths (--l1, --l2, --lambda), K, W, scratch for d and for the l1linf sort
SoftmaxSettings = namedtuple("SoftmaxSettings", ("adaptive", "normalized", "g0", "col_g", "col_n", "power_t",
                                                 "sqrt_rate", "col_last", "col_last2", "l1", "l2", "lam",
                                                 "classes", "width", "d", "buf"))


@njit(cache=True, nogil=True)
def softmax_settings(prm, iprm):
    """``SoftmaxSettings`` of a run."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate = rule_settings(prm, iprm)
    K = iprm[I_CLASSES]
    n = K if K > 0 else 1
    return SoftmaxSettings(adaptive, normalized, g0, cg, cn, power_t, sqrt_rate, iprm[I_COL_LAST],
                           iprm[I_COL_LAST2], prm[P_L1], prm[P_L2], prm[P_LAMBDA], K, iprm[I_CLASS_W], np.empty(n),
                           np.empty(n))


@njit(cache=True, nogil=True)
def softmax_gradient(scores, cls, K, d):
    """d_k = p_k - [k == cls] with p = softmax(scores) (stably: the largest score subtracted).
    Returns sum_k d_k^2 (NaN when a score is infinite or NaN)."""
    mx = scores[0]
    for k in range(1, K):
        if scores[k] > mx:
            mx = scores[k]
    z = 0.0
    for k in range(K):
        d[k] = math.exp(scores[k] - mx)
        z += d[k]
    gsum = 0.0
    for k in range(K):
        d[k] /= z
        if k == cls:
            d[k] -= 1.0
        gsum += d[k] * d[k]
    return gsum


@njit(cache=True, nogil=True)
def row_statistics(idx, val, s, f, table, gsq, h, K, width, mask, adaptive, normalized, sqrt_rate, power_t,
                   cg, cn, st):
    """The per-row rate statistics of one update (``gd.rate_statistics`` with one G and N per row):
    G_row += gsq * x^2 (gsq = h sum_k d_k^2), N_row grows to |x| (the row's K weights rescaled by
    gd's factor), and the global normalizer m (``st[S_MULT]``) from the updated sums."""
    norm_x = 0.0
    for k in range(s, f):
        base = (np.int64(idx[k]) * width) & mask
        x = np.float64(val[k])
        x2 = x * x
        if x2 < X2_MIN:
            x = X_MIN if x > 0.0 else -X_MIN
            x2 = X2_MIN
        if adaptive:
            table[base, cg] += gsq * x2
        if normalized:
            N = table[base, cn]
            ax = abs(x)
            if ax > N:
                if N > 0.0:
                    c = normalizer_rescale(N, ax, adaptive, sqrt_rate, power_t)
                    for j in range(K):
                        table[base + j, WCOL] *= c
                N = ax
                table[base, cn] = N
            if x2 > X2_MAX:
                norm_x += 1.0
            else:
                norm_x += x2 / (N * N)
    if normalized:
        update_normalizer(st, S_NORM_SUM, S_TOTAL_W, S_MULT, h, norm_x, adaptive, sqrt_rate, power_t)


@njit(cache=True, nogil=True, inline="always")
def softmax_view(cfg, st):
    return st[S_FOBOS_CUM], st[S_FOBOS_CUM2]


@njit(nogil=True, inline="always")
def row_weight(table, i, cfg, v, catch_up):
    """The weight in force of slot i: its row (the aligned block of W slots holding i) caught up
    first with the regularizer's ``catch_up``, exactly and in O(K) (a no-op when the row is level)."""
    width = cfg.width
    base = i - (i & (width - 1))
    catch_up(table, base, cfg, v[0], v[1])
    return table[i, WCOL]


@njit(nogil=True, inline="always")
def softmax_step(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask, catch_up, prox):
    """One learned example (module docstring): p = softmax(scores), the gradient step of every
    touched row with its own rate (Section 2, eq. 2), the clock, then the regularizer's ``prox`` of
    eq. 3 with eta_t = scale * m, released lazily (Section 5); ``catch_up`` levels a row."""
    adaptive, normalized, g0, cg, cn, power_t, sqrt_rate, clast, clast2, l1, l2, lam, K, width, d, buf = cfg
    per_feature = adaptive or normalized
    cum = st[S_FOBOS_CUM]
    cum2 = st[S_FOBOS_CUM2]
    for k in range(s, f):        # level already (the scores read every row); O(1) each then
        catch_up(table, (np.int64(idx[k]) * W) & mask, cfg, cum, cum2)
    gsum = softmax_gradient(scores, cls, K, d)
    t, scale = step_scale(st, h, power_t, adaptive)
    if gsum > 0.0 and gsum < math.inf:
        if per_feature:
            row_statistics(idx, val, s, f, table, h * gsum, h, K, W, mask, adaptive, normalized, sqrt_rate,
                           power_t, cg, cn, st)
        m = st[S_MULT] if normalized else 1.0
        for k in range(s, f):
            base = (np.int64(idx[k]) * W) & mask
            r = feature_rate(table, base, cg, cn, g0, sqrt_rate, power_t) if per_feature else 1.0
            c = -scale * m * r * np.float64(val[k])
            if c != 0.0:
                for j in range(K):
                    table[base + j, WCOL] += c * d[j]
    st[S_T] = t
    st[S_NLEARN] += 1.0
    prox(table, cfg, st, scale * st[S_MULT] if normalized else scale)


@njit(nogil=True, inline="always")
def catch_up_all(table, cfg, st, catch_up):
    """Catch every row up with the regularizer's ``catch_up`` (before saving, or before an elastic
    rebase)."""
    cum = st[S_FOBOS_CUM]
    cum2 = st[S_FOBOS_CUM2]
    for base in range(0, table.shape[0], cfg.width):
        catch_up(table, base, cfg, cum, cum2)


@njit(nogil=True, inline="always")
def lazy_row_catch_up(table, base, cfg, cum, row):
    """Pay row ``base`` the prox steps released since its last touch (Proposition 4; module
    docstring): one prox of strength ``r_row * (cum - LAST)``, ``row(w, a, buf)`` the regularizer's
    prox on a row, r_row the row's rate (1 under the plain schedule), then LAST = cum. Idempotent: a
    row level with the cumulative is untouched. (The settings are read first, into locals: read
    where they are used, after the test, the softmax l1 kernel took a quarter longer, measured.)"""
    clast, K, buf = cfg.col_last, cfg.classes, cfg.buf
    adaptive, normalized, cg, cn, g0 = cfg.adaptive, cfg.normalized, cfg.col_g, cfg.col_n, cfg.g0
    sqrt_rate, power_t = cfg.sqrt_rate, cfg.power_t
    owed = cum - table[base, clast]
    if owed == 0.0:
        return
    table[base, clast] = cum
    if adaptive or normalized:
        owed *= feature_rate(table, base, cg, cn, g0, sqrt_rate, power_t)
    if owed > 0.0:
        row(table[base:base + K, WCOL], owed, buf)


# ----------------------------------------------------------------------------- the regularizers

# l1, lambda ||W||_1 (eq. 6): the cumulative sum of lambda eta, a row soft-thresholded by what it owes

@njit(cache=True, nogil=True, inline="always")
def l1_catch_up(table, base, cfg, cum, cum2):
    lazy_row_catch_up(table, base, cfg, cum, l1_row)


@njit(cache=True, nogil=True, inline="always")
def l1_weight(table, i, cfg, v):
    return row_weight(table, i, cfg, v, l1_catch_up)


@njit(cache=True, nogil=True, inline="always")
def l1_prox(table, cfg, st, step):
    l1_release(st, cfg.l1, step)


@njit(cache=True, nogil=True, inline="always")
def l1_learn(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask):
    softmax_step(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask, l1_catch_up, l1_prox)


@njit(cache=True, nogil=True)
def learn_softmax_l1_block(block, state, start, end):
    """Examples start..end-1 with softmax regression and l1 (eq. 6) through the joint multiclass loop
    (``streamlearn.core.multiclass.joint_loop``)."""
    table, prm, iprm, st, ctr = state
    return joint_loop(block, state, start, end, softmax_settings(prm, iprm), softmax_view, l1_weight, base_start,
                      sum_end, l1_learn)


@njit(cache=True, nogil=True)
def finalize_l1(table, prm, iprm, st):
    """Catch every row up, so the weight column holds the weights in force (before saving)."""
    catch_up_all(table, softmax_settings(prm, iprm), st, l1_catch_up)


# l2sq, lambda/2 ||W||_F^2 (eq. 7): the cumulative sum of log(1 + lambda eta), a row scaled by exp(-what
# it owes)

@njit(cache=True, nogil=True, inline="always")
def l2sq_catch_up(table, base, cfg, cum, cum2):
    lazy_row_catch_up(table, base, cfg, cum, l2sq_row)


@njit(cache=True, nogil=True, inline="always")
def l2sq_weight(table, i, cfg, v):
    return row_weight(table, i, cfg, v, l2sq_catch_up)


@njit(cache=True, nogil=True, inline="always")
def l2sq_prox(table, cfg, st, step):
    l2sq_release(st, cfg.l2, step)


@njit(cache=True, nogil=True, inline="always")
def l2sq_learn(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask):
    softmax_step(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask, l2sq_catch_up, l2sq_prox)


@njit(cache=True, nogil=True)
def learn_softmax_l2sq_block(block, state, start, end):
    """``learn_softmax_l1_block`` with l2sq (eq. 7)."""
    table, prm, iprm, st, ctr = state
    return joint_loop(block, state, start, end, softmax_settings(prm, iprm), softmax_view, l2sq_weight, base_start,
                      sum_end, l2sq_learn)


@njit(cache=True, nogil=True)
def finalize_l2sq(table, prm, iprm, st):
    """``finalize_l1`` for l2sq."""
    catch_up_all(table, softmax_settings(prm, iprm), st, l2sq_catch_up)


# elastic, both (fobos's two cumulatives, the same coordinate step); plain schedule only

@njit(cache=True, nogil=True, inline="always")
def elastic_catch_up(table, base, cfg, cum, cum2):
    """Row ``base`` caught up with both cumulatives (fobos's composed elastic net): every weight
    shrunk by exp(-L0) (A - A0), then scaled by exp(-(L - L0)) (the settings read first, as in
    ``lazy_row_catch_up``)."""
    clast, clast2, K = cfg.col_last, cfg.col_last2, cfg.classes
    last = table[base, clast]
    owed = cum - last
    owed2 = cum2 - table[base, clast2]
    if owed == 0.0 and owed2 == 0.0:
        return
    table[base, clast] = cum
    table[base, clast2] = cum2
    sh = math.exp(-last) * owed2
    c = math.exp(-owed)
    for k in range(K):
        w = table[base + k, WCOL]
        if w != 0.0:
            table[base + k, WCOL] = elastic_coord(w, sh, c)


@njit(cache=True, nogil=True)
def rebase_elastic(table, cfg, st):
    """Catch every row up, then restart both elastic cumulatives and every row's LAST values at 0."""
    catch_up_all(table, cfg, st, elastic_catch_up)
    for base in range(0, table.shape[0], cfg.width):
        table[base, cfg.col_last] = 0.0
        table[base, cfg.col_last2] = 0.0
    elastic_restart(st)


@njit(cache=True, nogil=True, inline="always")
def elastic_weight(table, i, cfg, v):
    return row_weight(table, i, cfg, v, elastic_catch_up)


@njit(cache=True, nogil=True, inline="always")
def elastic_prox(table, cfg, st, step):
    if elastic_release(st, cfg.l1, cfg.l2, step):
        rebase_elastic(table, cfg, st)


@njit(cache=True, nogil=True, inline="always")
def elastic_learn(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask):
    softmax_step(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask, elastic_catch_up, elastic_prox)


@njit(cache=True, nogil=True)
def learn_softmax_elastic_block(block, state, start, end):
    """``learn_softmax_l1_block`` with the elastic net."""
    table, prm, iprm, st, ctr = state
    return joint_loop(block, state, start, end, softmax_settings(prm, iprm), softmax_view, elastic_weight,
                      base_start, sum_end, elastic_learn)


@njit(cache=True, nogil=True)
def finalize_elastic(table, prm, iprm, st):
    """``finalize_l1`` for the elastic net."""
    catch_up_all(table, softmax_settings(prm, iprm), st, elastic_catch_up)


# l1l2, lambda sum_rows ||row||_2 (Section 4, mixed norms): l1's cumulative with --lambda, a row shrunk
# radially by what it owes

@njit(cache=True, nogil=True, inline="always")
def l1l2_catch_up(table, base, cfg, cum, cum2):
    lazy_row_catch_up(table, base, cfg, cum, l1l2_row)


@njit(cache=True, nogil=True, inline="always")
def l1l2_weight(table, i, cfg, v):
    return row_weight(table, i, cfg, v, l1l2_catch_up)


@njit(cache=True, nogil=True, inline="always")
def mixed_prox(table, cfg, st, step):
    """The mixed norms' release: l1's, with --lambda."""
    l1_release(st, cfg.lam, step)


@njit(cache=True, nogil=True, inline="always")
def l1l2_learn(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask):
    softmax_step(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask, l1l2_catch_up, mixed_prox)


@njit(cache=True, nogil=True)
def learn_softmax_l1l2_block(block, state, start, end):
    """``learn_softmax_l1_block`` with l1l2 (Section 4, mixed norms)."""
    table, prm, iprm, st, ctr = state
    return joint_loop(block, state, start, end, softmax_settings(prm, iprm), softmax_view, l1l2_weight, base_start,
                      sum_end, l1l2_learn)


@njit(cache=True, nogil=True)
def finalize_l1l2(table, prm, iprm, st):
    """``finalize_l1`` for l1l2."""
    catch_up_all(table, softmax_settings(prm, iprm), st, l1l2_catch_up)


# l1linf, lambda sum_rows ||row||_inf (eq. 9 with eq. 8's dual): l1's cumulative with --lambda, a row
# capped at the threshold of what it owes

@njit(cache=True, nogil=True, inline="always")
def l1linf_catch_up(table, base, cfg, cum, cum2):
    lazy_row_catch_up(table, base, cfg, cum, l1linf_row)


@njit(cache=True, nogil=True, inline="always")
def l1linf_weight(table, i, cfg, v):
    return row_weight(table, i, cfg, v, l1linf_catch_up)


@njit(cache=True, nogil=True, inline="always")
def l1linf_learn(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask):
    softmax_step(idx, val, s, f, table, prm, iprm, cfg, st, scores, cls, h, W, mask, l1linf_catch_up, mixed_prox)


@njit(cache=True, nogil=True)
def learn_softmax_l1linf_block(block, state, start, end):
    """``learn_softmax_l1_block`` with l1linf (eq. 9 with eq. 8's dual)."""
    table, prm, iprm, st, ctr = state
    return joint_loop(block, state, start, end, softmax_settings(prm, iprm), softmax_view, l1linf_weight,
                      base_start, sum_end, l1linf_learn)


@njit(cache=True, nogil=True)
def finalize_l1linf(table, prm, iprm, st):
    """``finalize_l1`` for l1linf."""
    catch_up_all(table, softmax_settings(prm, iprm), st, l1linf_catch_up)


# ----------------------------------------------------------------------------- specs

_JOINT = ("--oaa", "3", "--loss", "softmax")
#: softmax's kernels per regularizer (``streamlearn.core.spec.Variant``), keyed by --reg, each with the
#: options of a small run (warm-up runs them)
KERNELS = {
    "l1": Variant(learn_softmax_l1_block, finalize=finalize_l1, example=_JOINT),
    "l2sq": Variant(learn_softmax_l2sq_block, finalize=finalize_l2sq,
                    example=_JOINT + ("--reg", "l2sq", "--l2", "1e-4")),
    "elastic": Variant(learn_softmax_elastic_block, finalize=finalize_elastic,
                       example=_JOINT + ("--reg", "elastic", "--l1", "1e-4", "--l2", "1e-4", "--sgd")),
    "l1l2": Variant(learn_softmax_l1l2_block, finalize=finalize_l1l2,
                    example=_JOINT + ("--reg", "l1l2", "--lambda", "1e-4")),
    "l1linf": Variant(learn_softmax_l1linf_block, finalize=finalize_l1linf,
                      example=_JOINT + ("--reg", "l1linf", "--lambda", "1e-4")),
}
#: the --reg names softmax takes, and the strength options each takes
REGS = tuple(KERNELS)
REG_STRENGTHS = {name: REGULARIZERS[name].strengths for name in REGS}


def softmax_layout(cfg) -> Layout:
    """The weight, G (adaptive), N (normalized) -- saved; then LAST (and LAST2 for elastic). G, N,
    LAST and LAST2 are row-level: only a row's base slot uses them."""
    return rule_layout(cfg, lazy=True, extra=("last2",) if cfg.reg == "elastic" else ())


def softmax_settings_of(cfg, prm, iprm) -> None:
    prm[P_L1] = cfg.l1
    prm[P_L2] = cfg.l2
    prm[P_LAMBDA] = cfg.lam
    iprm[I_COL_LAST2] = softmax_layout(cfg).last2


def rows_of(cfg, dense: np.ndarray) -> np.ndarray:
    """The (rows, K) matrix of a dense vector of weights in force indexed by slot (length 2^b)."""
    return np.asarray(dense, float).reshape(-1, cfg.class_width)[:, :cfg.classes]


def rows_regularizer(cfg, dense: np.ndarray) -> tuple[float, str]:
    """The regularizer of --reg at the weights in force ``dense`` (indexed by slot, length 2^b):
    lambda ||W||_1, lambda/2 ||W||_F^2, both, lambda sum_rows ||row||_2 (l1l2) or lambda sum_rows
    ||row||_inf (l1linf)."""
    if REGULARIZERS[cfg.reg].rows:
        return REGULARIZERS[cfg.reg].of(cfg, rows_of(cfg, dense))
    return softmax_regularizer(cfg, np.asarray(dense, float))


def softmax_regularizer(cfg, w: np.ndarray) -> tuple[float, str]:
    """The regularizer at the weights in force ``w`` (any subset holding the non-zero ones): exact
    for the separable l1, l2sq and elastic; the mixed norms need the rows (``rows_regularizer``) and
    give NaN here."""
    reg = REGULARIZERS[cfg.reg]
    if not reg.rows:                # fobos's, over all the class weights
        value, form = reg.of(cfg, w)
        return value, form.replace("||w||_2^2", "||W||_F^2").replace("||w||_1", "||W||_1")
    return math.nan, reg.reads(cfg)


def softmax_check(cfg, flag) -> None:
    """Each regularizer takes its own strength options (fobos's check)."""
    check_strengths(cfg, flag, REG_STRENGTHS[cfg.reg], f"--algo softmax --reg {cfg.reg}")


def softmax_plain_only(cfg):
    """One rate per row composes with every regularizer's prox except the elastic net's."""
    if not REGULARIZERS[cfg.reg].per_feature:
        return "its prox with per-feature rates cannot be caught up lazily"
    return None


LEARNER = LearnerSpec(
    name="softmax", order=10, summary="multinomial logistic with --oaa K --loss softmax", paper="Duchi & Singer 2009",
    example=_JOINT,
    variants=KERNELS, variant=lambda c: c.reg, joint=True,
    describe=lambda c: (f"softmax (multinomial logistic regression, {c.oaa} classes, {c.rule()}: "
                        f"reg = {c.reg}, " + ", ".join(f"{n} = {getattr(c, n):g}" for n in REG_STRENGTHS[c.reg])
                        + ")"),
    layout=softmax_layout,
    settings=softmax_settings_of,
    saved=lambda c: rule_saved(c, softmax_layout(c)),
    weights_in_column=lambda c: True,
    regularizer=rows_regularizer,
    options=("reg", "l1", "l2", "lam"),
    choices={"reg": REGS},
    check=softmax_check,
    check_stage="reg",
    plain_only=softmax_plain_only,
    takes_invariant=False,
)
