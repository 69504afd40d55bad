"""FOBOS, forward-backward splitting (Duchi & Singer 2009), over one block of examples.

Each learned example takes the gradient step of the update rule (Section 2, eq. 2), then the
proximal step of the regularizer r scaled by eta_{t+1/2} = eta_t, the online choice of Section 3
(Theorem 3), eq. 3:

    w_{t+1/2} = w_t - eta_t g_t,     w_{t+1} = argmin_w 1/2 ||w - w_{t+1/2}||^2 + eta_t lambda r(w).

``eta_t`` is the step scale of the update rule (``scale``: ``-l`` times h, times t^-power_t without
adaptive rates, times the global normalizer m when normalized), so the prox strength of an example
is ``lambda * scale``, and with per-feature rates weight i's own strength is that times its rate r_i
(its step is ``u x_i r_i``: a diagonal step size, for which the prox of a separable r is separable
with strength ``eta_t lambda r_i``). The regularizers (``--reg``, Section 4):

* l1, ``lambda ||w||_1`` (eq. 6): ``w_i <- sign(v_i) [|v_i| - eta lambda r_i]_+``;
* l2sq, ``lambda/2 ||w||_2^2`` (eq. 7): ``w_i <- v_i / (1 + eta lambda)``; with per-feature rates
  ``v_i (1 + eta lambda)^(-r_i)`` (see below);
* elastic, both: the l1 shrink by ``eta lambda_1``, then the l2sq scaling by ``1/(1 + eta lambda_2)``;
* l2, ``lambda ||w||_2`` (Section 4): ``w <- [1 - eta lambda / ||v||]_+ v``, a global factor;
* linf, ``lambda ||w||_inf`` (eq. 8): ``w_i <- sign(v_i) min(|v_i|, theta)`` with theta the
  threshold of the projection of v onto the L1 ball of radius eta lambda (the dual problem; 0 vector
  when ``||v||_1 <= eta lambda``).

**Lazy catch-up (Section 5, Proposition 4).** The proximal steps of l1 and l2sq on a coordinate the
example does not touch compose: k consecutive prox steps equal one with the summed strength (l1), or
the product of the factors (l2sq). So the kernel keeps one cumulative scalar -- ``st[S_FOBOS_CUM]`` = the sum
of ``lambda * scale`` (l1) or of ``log(1 + lambda * scale)`` (l2sq) over learned examples -- and each
weight the value at its last touch (table column LAST), and pays the difference when it is next read
or saved: O(1) per weight read, O(k) per example. With per-feature rates the weight's rate r_i is
constant between its touches (it depends only on its own G and N), so l1 pays ``r_i * owed`` exactly.
For l2sq, the factor ``1/(1 + eta lambda r_i)`` of eq. 7 under a diagonal step does not compose into a
function of one running sum; the kernel uses ``(1 + eta lambda)^(-r_i)`` instead, which composes
(``exp(-r_i * owed)``), equals eq. 7 whenever r_i = 1 (the plain schedule) and agrees with it to first
order in ``eta lambda r_i`` otherwise. The elastic net composes too: after shrinks a_s and scalings
c_s, ``w_n = P_n (w - sum_s a_s / P_{s-1})`` with ``P_n = prod c_s``, so with ``L = -log P``
(``st[S_FOBOS_CUM]``) and ``A = sum_s a_s exp(L_{s-1})`` (``st[S_FOBOS_CUM2]``) a weight last touched at (L0, A0)
is ``exp(-(L - L0)) * shrink(w, exp(-L0) (A - A0))``; A grows like exp(L), so everything is rebased
(every weight caught up, L = A = 0) before L reaches ``ELASTIC_REBASE``. Elastic takes the plain
schedule (with per-feature rates it does not compose).

**l2** keeps the weights as ``sigma * s_i`` with a global scale sigma (``st[S_SCALE]``) and the running
squared norm of s (``st[S_SQNORM]``): the prox multiplies sigma, O(k) per example. A prox that zeroes
the whole vector starts a new epoch (``st[S_EPOCH]``; a stored value from an earlier epoch reads as 0),
so it is O(1) too. The squared norm is recomputed from scratch when cancellation could have eaten its
precision, and the stored values are rescaled when sigma gets tiny.

**l2sq with an L2 ball** (``--l2-ball R``; the "with projection" runs of Section 7.1, Fig. 1, after
Pegasos): after eq. 7's scaling, ``w <- min(1, R / ||w||_2) w``. Both are global factors under the
plain schedule, so this variant (its own kernels, ``KERNELS["l2sq-ball"]``) stores the weights as l2
does, ``sigma * s`` with the running squared norm of s: eq. 7 divides sigma by ``1 + eta lambda`` and
the projection multiplies it by ``min(1, R / (sigma ||s||))``, O(k) per example. With per-feature rates the scaling
differs per weight and ||w|| could not be followed in O(k), so it takes the plain schedule.

**linf** lists the non-zero weights (columns POS and LIST) and computes the projection threshold over
them with Figure 2 of Duchi et al. 2008 (randomized pivot): O(non-zero weights) per example, as the
issue allows; l2 and linf take the plain schedule.

Mini-batches (``--batch-size B``, plain schedule): the steps of B examples are summed per coordinate
and averaged, then applied as one step followed by one prox whose strength is lambda times the mean
step scale of the batch; predictions inside a batch use the weights at its start.

**One kernel per regularizer.** The regularizer is chosen once, at set-up, by choosing its kernels
(``KERNELS``, keyed by --reg: ``LearnerSpec.variants``), so no kernel branches on it. Each is the
shared example loop with this module's step (``fobos_step``) and the regularizer's pieces, one section
each below: the read of a weight in force (the loop's ``weight``: a lazy weight caught up, a scaled one
times sigma), the add of a step to a stored weight, the prox of an example or a batch, what
``finalize`` brings up to date before saving and what ``after_load`` rebuilds. The lazy regularizers'
cumulatives and proxes on a coordinate are ``streamlearn.core.prox``'s, shared with softmax.
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit

from streamlearn.errors import OptionError
from streamlearn.core.rules import gradient_step, rule_layout, rule_saved, rule_settings
from streamlearn.core.loop import base_start, example_loop, state_view, sum_end
from streamlearn.core.multiclass import oaa_loop
from streamlearn.core.minibatch import clock_step_scale, pend_example
from streamlearn.core.nonzero_list import LIST, POS, list_add, list_rebuild
from streamlearn.core.projection import pivot_seed, theta_pivot
from streamlearn.core.prox import (
    elastic_coord, elastic_release, elastic_restart, l1_coord, l1_release, l2sq_coord, l2sq_release,
)
from streamlearn.core.spec import Layout, LearnerSpec, Variant, weight_column
from streamlearn.core.state import (
    I_BATCH, I_COL_LAST, I_COL_LAST2, I_SEED, P_L1, P_L2, P_L2_BALL, P_LAMBDA, S_BATCH_EX, S_BATCH_ROWS,
    S_BATCH_SCALE, S_FOBOS_CUM, S_FOBOS_CUM2, S_MULT, S_NLEARN, S_NNZ, S_T, own_slots,
)
from streamlearn.regularizers import REGULARIZERS
from streamlearn.core.table import feature_rate


#: the learner's own state slots (``streamlearn.core.state.own_slots``)
SLOTS = own_slots("scale", "sqnorm", "epoch", "sqpeak")
S_SCALE = SLOTS["scale"]
S_SQNORM = SLOTS["sqnorm"]
S_EPOCH = SLOTS["epoch"]
S_SQPEAK = SLOTS["sqpeak"]

W = 0               # the weight (l2: the stored value s, the weight being sigma * s)
EP = 1              # l2: epoch of the stored value
L2_MIN_SCALE = 1e-100    # fold sigma into the stored values below this
L2_CANCEL = 1e-8         # recompute the squared norm when it falls below this fraction of its peak


# ----------------------------------------------------------------------------- settings, step and batch

#: the settings tuple of the fobos kernels (and subgradient's): the update rule's, then the table columns
#: LAST and LAST2 and the batch size
FobosSettings = namedtuple("FobosSettings", ("adaptive", "normalized", "invariant", "g0", "col_g", "col_n",
                                             "power_t", "sqrt_rate", "col_last", "col_last2", "batch"))


@njit(cache=True, nogil=True)
def fobos_settings(prm, iprm):
    """``FobosSettings``: the update rule's settings (``rules.rule_settings``), then the table
    columns LAST and LAST2 and the batch size."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate = rule_settings(prm, iprm)
    return FobosSettings(adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, iprm[I_COL_LAST],
                         iprm[I_COL_LAST2], iprm[I_BATCH])


@njit(cache=True, nogil=True, inline="always")
def weight_rate(table, i, cfg):
    """Weight i's own rate r_i with per-feature rates, else 1."""
    if cfg.adaptive or cfg.normalized:
        return feature_rate(table, i, cfg.col_g, cfg.col_n, cfg.g0, cfg.sqrt_rate, cfg.power_t)
    return 1.0


@njit(cache=True, nogil=True, inline="always")
def no_step(table, prm, iprm, st, step):
    """A ``before`` or ``prox`` of ``fobos_step`` that does nothing."""
    return


@njit(nogil=True, inline="always")
def flush_batch(table, prm, iprm, cfg, st, weight, add, prox):
    """Apply the batch's averaged step (each row read in force with ``weight``, then moved with
    ``add``), then one ``prox`` with its mean step scale."""
    n = st[S_BATCH_EX]
    if n > 0.0:
        cacc = table.shape[1] - 2
        clist = table.shape[1] - 1
        for m in range(int(st[S_BATCH_ROWS])):
            i = int(table[m, clist])
            d = table[i, cacc] / n
            table[i, cacc] = 0.0
            weight(table, i, cfg, st)
            add(table, i, st, d)
        prox(table, prm, iprm, st, st[S_BATCH_SCALE] / n)
    st[S_BATCH_ROWS] = 0.0
    st[S_BATCH_EX] = 0.0
    st[S_BATCH_SCALE] = 0.0


@njit(nogil=True, inline="always")
def fobos_step(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, weight, add, before, prox):
    """One learned example: the gradient step of the update rule (eq. 2), each weight moved with the
    regularizer's ``add``, then its ``prox`` (eq. 3) with eta_{t+1/2} = eta_t (Section 3); with
    mini-batches the step is pended and a full batch applied (``flush_batch``). ``before`` acts
    before the gradient step (the subgradient method takes its sgn(w) there)."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, clast2, batch = cfg
    t, scale = clock_step_scale(st, h, power_t, adaptive, batch)   # batches: plain only (fobos_plain_only)
    u = gradient_step(idx, val, s, f, table, st, code, p, y, tau, h, scale, adaptive, normalized,
                      invariant, sqrt_rate, power_t, cg, cn, -1, g0, -1)
    step = scale * st[S_MULT] if normalized else scale
    st[S_T] = t
    st[S_NLEARN] += 1.0
    if batch > 1:
        cacc = table.shape[1] - 2
        clist = table.shape[1] - 1
        if u != 0.0:
            pend_example(table, idx, val, s, f, u, st, cacc, clist)
        st[S_BATCH_SCALE] += step
        st[S_BATCH_EX] += 1.0
        if int(st[S_BATCH_EX]) == batch:
            flush_batch(table, prm, iprm, cfg, st, weight, add, prox)
    else:
        before(table, prm, iprm, st, step)
        if u != 0.0:
            for k in range(s, f):
                i = idx[k]
                add(table, i, st, u * val[k] * weight_rate(table, i, cfg))
        prox(table, prm, iprm, st, step)


@njit(nogil=True, inline="always")
def batch_applied(table, prm, iprm, st, weight, add, prox):
    """The first part of every ``finalize``: an open mini-batch applied. Returns the settings."""
    cfg = fobos_settings(prm, iprm)
    if cfg.batch > 1:
        flush_batch(table, prm, iprm, cfg, st, weight, add, prox)
    return cfg


# ----------------------------------------------------------------------------- lazy: l1, l2sq, elastic

@njit(nogil=True, inline="always")
def lazy_catch_up(table, i, cfg, cum, coord):
    """Weight i after the prox steps released since its last touch (Proposition 4), ``coord(w,
    owed)`` the regularizer's prox on a coordinate; stores it and the cumulative it is now level
    with. With per-feature rates the weight pays its own rate (read only when it owes something),
    else rate 1."""
    w = table[i, W]
    owed = cum - table[i, cfg.col_last]
    table[i, cfg.col_last] = cum
    if w != 0.0 and owed > 0.0:
        if cfg.adaptive or cfg.normalized:
            owed *= feature_rate(table, i, cfg.col_g, cfg.col_n, cfg.g0, cfg.sqrt_rate, cfg.power_t)
        w = coord(w, owed)
        table[i, W] = w
    return w


@njit(cache=True, nogil=True, inline="always")
def lazy_add(table, i, st, d):
    """Move weight i (already caught up) by d."""
    table[i, W] += d


@njit(nogil=True, inline="always")
def catch_up_all(table, cfg, st, weight):
    """Catch every non-zero weight up with ``weight`` (before saving, or before a rebase)."""
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            weight(table, i, cfg, st)


# l1, lambda ||w||_1 (eq. 6): the cumulative sum of lambda eta; a weight is soft-thresholded by what it
# owes (times its rate)

@njit(cache=True, nogil=True, inline="always")
def l1_weight(table, i, cfg, st):
    return lazy_catch_up(table, i, cfg, st[S_FOBOS_CUM], l1_coord)


@njit(cache=True, nogil=True, inline="always")
def l1_prox(table, prm, iprm, st, step):
    l1_release(st, prm[P_L1], step)


@njit(cache=True, nogil=True, inline="always")
def l1_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    fobos_step(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, l1_weight, lazy_add, no_step, l1_prox)


@njit(cache=True, nogil=True)
def learn_fobos_l1_block(block, state, start, end):
    """Examples start..end-1 with FOBOS and l1 (eq. 6) through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, l1_weight, base_start,
                        sum_end, l1_learn)


@njit(cache=True, nogil=True)
def oaa_fobos_l1_block(block, state, start, end):
    """``learn_fobos_l1_block`` one-against-all (each class's update is a FOBOS step)."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, l1_weight, base_start,
                    sum_end, l1_learn)


@njit(cache=True, nogil=True)
def finalize_l1(table, prm, iprm, st):
    """An open mini-batch applied, then every weight caught up: the weight column holds the weights
    in force."""
    cfg = batch_applied(table, prm, iprm, st, l1_weight, lazy_add, l1_prox)
    catch_up_all(table, cfg, st, l1_weight)


# l2sq, lambda/2 ||w||_2^2 (eq. 7): the cumulative sum of log(1 + lambda eta); a weight is multiplied by
# exp(-what it owes (times its rate))

@njit(cache=True, nogil=True, inline="always")
def l2sq_weight(table, i, cfg, st):
    return lazy_catch_up(table, i, cfg, st[S_FOBOS_CUM], l2sq_coord)


@njit(cache=True, nogil=True, inline="always")
def l2sq_prox(table, prm, iprm, st, step):
    l2sq_release(st, prm[P_L2], step)


@njit(cache=True, nogil=True, inline="always")
def l2sq_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    fobos_step(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, l2sq_weight, lazy_add, no_step,
               l2sq_prox)


@njit(cache=True, nogil=True)
def learn_fobos_l2sq_block(block, state, start, end):
    """Examples start..end-1 with FOBOS and l2sq (eq. 7) through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, l2sq_weight, base_start,
                        sum_end, l2sq_learn)


@njit(cache=True, nogil=True)
def oaa_fobos_l2sq_block(block, state, start, end):
    """``learn_fobos_l2sq_block`` one-against-all."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, l2sq_weight, base_start,
                    sum_end, l2sq_learn)


@njit(cache=True, nogil=True)
def finalize_l2sq(table, prm, iprm, st):
    """``finalize_l1`` for l2sq."""
    cfg = batch_applied(table, prm, iprm, st, l2sq_weight, lazy_add, l2sq_prox)
    catch_up_all(table, cfg, st, l2sq_weight)


# elastic, both (eq. 6's shrink, then eq. 7's scaling): two cumulatives (module docstring), rebased
# before they overflow; plain schedule only

@njit(cache=True, nogil=True, inline="always")
def elastic_weight(table, i, cfg, st):
    """Weight i caught up with both cumulatives: ``exp(-(L - L0)) * shrink(w, exp(-L0) (A - A0))``."""
    cum = st[S_FOBOS_CUM]
    cum2 = st[S_FOBOS_CUM2]
    w = table[i, W]
    owed = cum - table[i, cfg.col_last]
    table[i, cfg.col_last] = cum
    owed2 = cum2 - table[i, cfg.col_last2]
    last = cum - owed
    table[i, cfg.col_last2] = cum2
    if w != 0.0 and (owed > 0.0 or owed2 > 0.0):
        w = elastic_coord(w, math.exp(-last) * owed2, math.exp(-owed))
        table[i, W] = w
    return w


@njit(cache=True, nogil=True)
def rebase_elastic(table, prm, iprm, st):
    """Catch every weight up, then restart both elastic cumulatives (and the last-touch values of
    the non-zero weights) at 0; a zero weight's stale values are harmless, since 0 stays 0."""
    cfg = fobos_settings(prm, iprm)
    catch_up_all(table, cfg, st, elastic_weight)
    clast = cfg.col_last
    clast2 = cfg.col_last2
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            table[i, clast] = 0.0
            table[i, clast2] = 0.0
    elastic_restart(st)


@njit(cache=True, nogil=True, inline="always")
def elastic_prox(table, prm, iprm, st, step):
    if elastic_release(st, prm[P_L1], prm[P_L2], step):
        rebase_elastic(table, prm, iprm, st)


@njit(cache=True, nogil=True, inline="always")
def elastic_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    fobos_step(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, elastic_weight, lazy_add, no_step,
               elastic_prox)


@njit(cache=True, nogil=True)
def learn_fobos_elastic_block(block, state, start, end):
    """Examples start..end-1 with FOBOS and the elastic net through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, elastic_weight,
                        base_start, sum_end, elastic_learn)


@njit(cache=True, nogil=True)
def oaa_fobos_elastic_block(block, state, start, end):
    """``learn_fobos_elastic_block`` one-against-all."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, elastic_weight, base_start,
                    sum_end, elastic_learn)


@njit(cache=True, nogil=True)
def finalize_elastic(table, prm, iprm, st):
    """``finalize_l1`` for the elastic net."""
    cfg = batch_applied(table, prm, iprm, st, elastic_weight, lazy_add, elastic_prox)
    catch_up_all(table, cfg, st, elastic_weight)


# ----------------------------------------------------------------------------- l2, l2sq-ball: a global scale

@njit(cache=True, nogil=True, inline="always")
def l2_read(table, i, epoch):
    """The stored value of row i (0 when stored in an earlier epoch, which is cleared)."""
    if table[i, EP] != epoch:
        table[i, W] = 0.0
        table[i, EP] = epoch
    return table[i, W]


@njit(cache=True, nogil=True)
def l2_refresh(table, st):
    """Recompute the squared norm of the stored values of this epoch from scratch."""
    epoch = st[S_EPOCH]
    total = 0.0
    for i in range(table.shape[0]):
        if table[i, W] != 0.0 and table[i, EP] == epoch:
            total += table[i, W] * table[i, W]
    st[S_SQNORM] = total
    st[S_SQPEAK] = total


@njit(cache=True, nogil=True)
def l2_fold(table, st):
    """Multiply the stored values by sigma and set sigma to 1 (weights unchanged)."""
    epoch = st[S_EPOCH]
    sigma = st[S_SCALE]
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            if table[i, EP] == epoch:
                table[i, W] *= sigma
            else:
                table[i, W] = 0.0
    st[S_SCALE] = 1.0
    l2_refresh(table, st)


@njit(cache=True, nogil=True, inline="always")
def scaled_weight(table, i, cfg, st):
    """The weight in force of row i: sigma times its stored value."""
    return st[S_SCALE] * l2_read(table, i, st[S_EPOCH])


@njit(cache=True, nogil=True, inline="always")
def scaled_add(table, i, st, d):
    """Add d to weight i (O(1): the stored value moves by d / sigma, the squared norm follows)."""
    old = l2_read(table, i, st[S_EPOCH])
    new = old + d / st[S_SCALE]
    table[i, W] = new
    q = st[S_SQNORM] + new * new - old * old
    st[S_SQNORM] = q
    if q > st[S_SQPEAK]:
        st[S_SQPEAK] = q


@njit(cache=True, nogil=True)
def after_load_scaled(table, prm, iprm, st):
    """The loaded weights are the stored values, with sigma = 1 in epoch 0; their squared norm."""
    st[S_SCALE] = 1.0
    st[S_EPOCH] = 0.0
    l2_refresh(table, st)


@njit(cache=True, nogil=True)
def scaled_in_force(table, rows, st):
    """Weights in force of the given rows (after ``finalize``)."""
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        i = rows[j]
        if table[i, EP] != st[S_EPOCH]:
            out[j] = 0.0
        else:
            out[j] = st[S_SCALE] * table[i, W]
    return out


# l2, lambda ||w||_2 (Section 4): w <- [1 - eta lambda / ||w||]_+ w, a change of sigma

@njit(cache=True, nogil=True)
def l2_scale(table, st, strength):
    """w <- [1 - strength / ||w||]_+ w (Section 4), as a change of sigma."""
    if st[S_SQNORM] < L2_CANCEL * st[S_SQPEAK]:
        l2_refresh(table, st)
    norm = st[S_SCALE] * math.sqrt(max(st[S_SQNORM], 0.0))
    if norm <= strength:
        st[S_EPOCH] += 1.0            # every weight is 0 now: O(1)
        st[S_SCALE] = 1.0
        st[S_SQNORM] = 0.0
        st[S_SQPEAK] = 0.0
        return
    st[S_SCALE] *= 1.0 - strength / norm
    if st[S_SCALE] < L2_MIN_SCALE:
        l2_fold(table, st)


@njit(cache=True, nogil=True, inline="always")
def l2_prox(table, prm, iprm, st, step):
    l2_scale(table, st, prm[P_LAMBDA] * step)


@njit(cache=True, nogil=True, inline="always")
def l2_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    fobos_step(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, scaled_weight, scaled_add, no_step,
               l2_prox)


@njit(cache=True, nogil=True)
def learn_fobos_l2_block(block, state, start, end):
    """Examples start..end-1 with FOBOS and l2 (Section 4) through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, scaled_weight, base_start,
                        sum_end, l2_learn)


@njit(cache=True, nogil=True)
def oaa_fobos_l2_block(block, state, start, end):
    """``learn_fobos_l2_block`` one-against-all."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, scaled_weight, base_start,
                    sum_end, l2_learn)


@njit(cache=True, nogil=True)
def finalize_l2(table, prm, iprm, st):
    """An open mini-batch applied, then sigma folded into the stored values: the weight column holds
    the weights in force."""
    batch_applied(table, prm, iprm, st, scaled_weight, scaled_add, l2_prox)
    l2_fold(table, st)


# l2sq with an L2 ball (--l2-ball R; Section 7.1): eq. 7's scaling, then the projection onto ||w|| <= R,
# both changes of sigma

@njit(cache=True, nogil=True)
def l2sq_ball_scale(table, st, strength, radius):
    """Eq. 7's w <- w / (1 + strength), then w <- min(1, radius / ||w||_2) w, both as changes of sigma."""
    st[S_SCALE] /= 1.0 + strength
    if st[S_SQNORM] < L2_CANCEL * st[S_SQPEAK]:
        l2_refresh(table, st)
    norm = st[S_SCALE] * math.sqrt(max(st[S_SQNORM], 0.0))
    if norm > radius:
        st[S_SCALE] *= radius / norm
    if st[S_SCALE] < L2_MIN_SCALE:
        l2_fold(table, st)


@njit(cache=True, nogil=True, inline="always")
def l2sq_ball_prox(table, prm, iprm, st, step):
    l2sq_ball_scale(table, st, prm[P_L2] * step, prm[P_L2_BALL])


@njit(cache=True, nogil=True, inline="always")
def l2sq_ball_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    fobos_step(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, scaled_weight, scaled_add, no_step,
               l2sq_ball_prox)


@njit(cache=True, nogil=True)
def learn_fobos_l2sq_ball_block(block, state, start, end):
    """Examples start..end-1 with FOBOS, l2sq (eq. 7) and the projection onto an L2 ball through the
    example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, scaled_weight, base_start,
                        sum_end, l2sq_ball_learn)


@njit(cache=True, nogil=True)
def oaa_fobos_l2sq_ball_block(block, state, start, end):
    """``learn_fobos_l2sq_ball_block`` one-against-all."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, scaled_weight, base_start,
                    sum_end, l2sq_ball_learn)


@njit(cache=True, nogil=True)
def finalize_l2sq_ball(table, prm, iprm, st):
    """``finalize_l2`` for l2sq with an L2 ball."""
    batch_applied(table, prm, iprm, st, scaled_weight, scaled_add, l2sq_ball_prox)
    l2_fold(table, st)


# ----------------------------------------------------------------------------- linf: the non-zero list

@njit(cache=True, nogil=True, inline="always")
def listed_weight(table, i, cfg, st):
    """The weight in force of row i: the stored weight (a regularizer that keeps the non-zero list
    acts on every listed weight at each example)."""
    return table[i, W]


@njit(cache=True, nogil=True, inline="always")
def listed_add(table, i, st, d):
    """Move weight i by d, listing it when it was not listed."""
    list_add(table, st, i, d)


@njit(cache=True, nogil=True)
def after_load_listed(table, prm, iprm, st):
    """List the loaded non-zero weights."""
    list_rebuild(table, st)


# linf, lambda ||w||_inf (eq. 8): every |w_i| capped at the threshold of the projection onto the L1 ball

@njit(cache=True, nogil=True)
def linf_cap(table, st, strength, seed):
    """w <- v - Pi_{||.||_1 <= strength}(v) (eq. 8 through its dual): every |w_i| is capped at the
    projection threshold theta of |v| (Figure 2), or all become 0 when ||v||_1 <= strength. The list
    is compacted to the non-zero weights on the way. O(n), n = listed weights."""
    if strength <= 0.0:
        return
    n = int(st[S_NNZ])
    a = np.empty(n)
    rows = np.empty(n, np.int64)
    m = 0
    total = 0.0
    for p in range(n):
        i = int(table[p, LIST])
        table[i, POS] = 0.0
        if table[i, W] != 0.0:
            rows[m] = i
            a[m] = abs(table[i, W])
            total += a[m]
            m += 1
    if total <= strength:
        for p in range(m):
            table[rows[p], W] = 0.0
        st[S_NNZ] = 0.0
        return
    theta = theta_pivot(a[:m], np.ones(m), strength, seed)[0]
    for p in range(m):
        i = rows[p]
        if a[p] > theta:
            table[i, W] = theta if table[i, W] > 0.0 else -theta
        table[p, LIST] = i
        table[i, POS] = p + 1
    st[S_NNZ] = m


@njit(cache=True, nogil=True, inline="always")
def linf_prox(table, prm, iprm, st, step):
    linf_cap(table, st, prm[P_LAMBDA] * step, pivot_seed(iprm[I_SEED], st[S_NLEARN]))


@njit(cache=True, nogil=True, inline="always")
def linf_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    fobos_step(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h, listed_weight, listed_add, no_step,
               linf_prox)


@njit(cache=True, nogil=True)
def learn_fobos_linf_block(block, state, start, end):
    """Examples start..end-1 with FOBOS and linf (eq. 8) through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, listed_weight, base_start,
                        sum_end, linf_learn)


@njit(cache=True, nogil=True)
def oaa_fobos_linf_block(block, state, start, end):
    """``learn_fobos_linf_block`` one-against-all."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, listed_weight, base_start,
                    sum_end, linf_learn)


@njit(cache=True, nogil=True)
def finalize_linf(table, prm, iprm, st):
    """An open mini-batch applied (the listed weights are the weights in force)."""
    batch_applied(table, prm, iprm, st, listed_weight, listed_add, linf_prox)


# ----------------------------------------------------------------------------- specs

#: fobos's kernels per regularizer (``streamlearn.core.spec.Variant``), keyed by --reg (l2sq with an L2
#: ball has its own, "l2sq-ball": ``variant``), each with the options of a small run (warm-up runs them)
KERNELS = {
    "l1": Variant(learn_fobos_l1_block, oaa_fobos_l1_block, finalize_l1, None, ("--l1", "1e-4")),
    "l2sq": Variant(learn_fobos_l2sq_block, oaa_fobos_l2sq_block, finalize_l2sq, None,
                    ("--reg", "l2sq", "--l2", "1e-4")),
    "elastic": Variant(learn_fobos_elastic_block, oaa_fobos_elastic_block, finalize_elastic, None,
                       ("--reg", "elastic", "--l1", "1e-4", "--l2", "1e-4", "--sgd")),
    "l2": Variant(learn_fobos_l2_block, oaa_fobos_l2_block, finalize_l2, after_load_scaled,
                  ("--reg", "l2", "--lambda", "1e-4", "--sgd")),
    "linf": Variant(learn_fobos_linf_block, oaa_fobos_linf_block, finalize_linf, after_load_listed,
                    ("--reg", "linf", "--lambda", "1e-4", "--sgd")),
    "l2sq-ball": Variant(learn_fobos_l2sq_ball_block, oaa_fobos_l2sq_ball_block, finalize_l2sq_ball,
                         after_load_scaled, ("--reg", "l2sq", "--l2", "1e-4", "--l2-ball", "10", "--sgd")),
}
#: the --reg names (``streamlearn.regularizers``) fobos takes, and the strength options each takes
REGS = tuple(name for name in KERNELS if name in REGULARIZERS)
REG_STRENGTHS = {name: REGULARIZERS[name].strengths for name in REGS}
#: regularizers caught up lazily per coordinate (LAST columns); l2 and linf act globally
LAZY_REGS = tuple(name for name in REGS if REGULARIZERS[name].lazy)
#: regularizers whose lazy catch-up is exact with per-feature rates
PER_FEATURE_REGS = tuple(name for name in REGS if REGULARIZERS[name].per_feature)


def ball(cfg) -> bool:
    """l2sq with a projection onto an L2 ball (``--l2-ball R``, R finite)."""
    return cfg.reg == "l2sq" and cfg.l2_ball is not None and math.isfinite(cfg.l2_ball)


def variant(cfg) -> str:
    """The configuration's key in ``KERNELS``: its --reg, or "l2sq-ball"."""
    return "l2sq-ball" if ball(cfg) else cfg.reg


def scaled(cfg) -> bool:
    """The weights are sigma * stored (l2, and l2sq with an L2 ball)."""
    return cfg.reg == "l2" or ball(cfg)


def fobos_layout(cfg) -> Layout:
    batch = ("acc", "list") if cfg.batch_size > 1 else ()    # pending step and row list: the last two
    if scaled(cfg):
        return Layout(("w", "epoch") + batch, 1)
    if cfg.reg == "linf":
        return Layout(("w", "pos", "list") + batch, 1)
    return rule_layout(cfg, lazy=True, extra=(("last2",) if cfg.reg == "elastic" else ()) + batch)


def fobos_in_force(cfg, table, st, rows):
    """The weights in force of the rows (after ``finalize``): sigma times the stored values of this
    epoch (l2, l2sq-ball), else the weight column."""
    if scaled(cfg):
        return scaled_in_force(table, rows, st)
    return weight_column(cfg, table, st, rows)


def fobos_settings_of(cfg, prm, iprm) -> None:
    prm[P_L2] = cfg.l2
    prm[P_L2_BALL] = cfg.l2_ball if ball(cfg) else math.inf
    prm[P_LAMBDA] = cfg.lam
    iprm[I_COL_LAST2] = fobos_layout(cfg).last2


def fobos_regularizer(cfg, w):
    """The regularizer r of --reg at w (Section 4; ``streamlearn.regularizers``)."""
    return REGULARIZERS[cfg.reg].of(cfg, w)


def check_strengths(cfg, flag, takes, what: str) -> None:
    """Each regularizer takes its own strength options (``takes``; ``what`` names it in the message)."""
    for name in ("l1", "l2", "lam"):
        if name in cfg.explicit and name not in takes:
            raise OptionError(f"{flag[name]} does not apply to {what}, whose strength is "
                              + " and ".join(flag[n] for n in takes))


def fobos_check(cfg, flag) -> None:
    check_strengths(cfg, flag, REG_STRENGTHS[cfg.reg], f"--reg {cfg.reg}")
    if cfg.l2_ball is not None and cfg.reg != "l2sq":
        raise OptionError(f"{flag['l2_ball']} needs --reg l2sq with --algo fobos (got --reg {cfg.reg})")


def fobos_plain_only(cfg):
    """Per-feature rates apply to l1 and l2sq one example at a time only."""
    if cfg.batch_size > 1:
        return "mini-batches average plain steps"
    if cfg.reg not in PER_FEATURE_REGS:
        return f"the prox of --reg {cfg.reg} with per-feature rates cannot be caught up lazily"
    if ball(cfg):
        return "with --l2-ball, ||w|| is followed in O(k) only when every weight is scaled alike"
    return None


LEARNER = LearnerSpec(
    name="fobos", order=3, summary="forward-backward splitting", paper="Duchi & Singer 2009",
    example=("--l1", "1e-4"),
    variants=KERNELS, variant=variant,
    describe=lambda c: (f"fobos (forward-backward splitting, {c.rule()}: reg = {c.reg}, "
                        + ", ".join(f"{n} = {getattr(c, n):g}" for n in REG_STRENGTHS[c.reg])
                        + (f", l2 ball radius = {c.l2_ball:g}" if ball(c) else "")
                        + f", batch size = {c.batch_size})"),
    layout=fobos_layout,
    settings=fobos_settings_of,
    in_force=fobos_in_force,
    saved=lambda c: rule_saved(c, fobos_layout(c)) if c.reg in LAZY_REGS and not ball(c) else [],
    regularizer=fobos_regularizer,
    slots=SLOTS,
    slot_start={"scale": 1.0},
    options=("l1", "reg", "l2", "lam", "batch_size", "l2_ball"),
    selected_by=("reg", "l2", "lam"),
    choices={"reg": REGS},
    check=fobos_check,
    check_stage="reg",
    plain_only=fobos_plain_only,
)
