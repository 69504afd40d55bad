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
plain schedule, so this variant (``REG_L2SQ_BALL``) stores the weights as l2 does, ``sigma * s`` with
the running squared norm of s: eq. 7 divides sigma by ``1 + eta lambda`` and the projection
multiplies it by ``min(1, R / (sigma ||s||))``, O(k) per example. With per-feature rates the scaling
differs per weight and ||w|| could not be followed in O(k), so it takes the plain schedule.

**linf** lists the non-zero weights (columns POS and LIST) and computes the projection threshold over
them with Figure 2 of Duchi et al. 2008 (randomized pivot): O(non-zero weights) per example, as the
issue allows; l2 and linf take the plain schedule.

Mini-batches (``--batch-size B``, plain schedule): the steps of B examples are summed per coordinate
and averaged, then applied as one step followed by one prox whose strength is lambda times the mean
step scale of the batch; predictions inside a batch use the weights at its start.
"""

import math

import numpy as np
from numba import njit

from streamlearn.errors import OptionError
from streamlearn.kernels.rules import gradient_step, rule_layout, rule_saved, rule_settings
from streamlearn.kernels.loop import base_start, example_loop, state_view, sum_end
from streamlearn.kernels.multiclass import oaa_loop
from streamlearn.kernels.minibatch import clock_step_scale, pend_example
from streamlearn.kernels.nonzero_list import LIST, POS, list_add, list_rebuild
from streamlearn.kernels.projection import pivot_seed, theta_pivot
from streamlearn.kernels.spec import Layout, LearnerSpec, l1_regularizer
from streamlearn.kernels.state import (
    I_BATCH, I_COL_G, I_COL_LAST, I_COL_LAST2, I_COL_N, I_REG, I_SEED, P_G0, P_L1, P_L2, P_L2_BALL, P_LAMBDA,
    P_POWER_T, REG_ELASTIC, REG_L1, REG_L2, REG_L2SQ, REG_L2SQ_BALL, REG_LINF, REG_SUBGRADIENT, S_BATCH_EX,
    S_BATCH_ROWS, S_BATCH_SCALE, S_FOBOS_CUM, S_FOBOS_CUM2, S_MULT, S_NLEARN, S_NNZ, S_T, own_slots,
)
from streamlearn.regularizers import REGULARIZERS
from streamlearn.kernels.table import feature_rate, shrink


#: the learner's own state slots (``streamlearn.kernels.state.own_slots``)
SLOTS = own_slots("scale", "sqnorm", "epoch", "sqpeak")
S_SCALE = SLOTS["scale"]
S_SQNORM = SLOTS["sqnorm"]
S_EPOCH = SLOTS["epoch"]
S_SQPEAK = SLOTS["sqpeak"]

W = 0               # the weight (l2: the stored value s, the weight being sigma * s)
EP = 1              # l2: epoch of the stored value
ELASTIC_REBASE = 300.0   # rebase the elastic cumulatives before exp(L) can overflow
L2_MIN_SCALE = 1e-100    # fold sigma into the stored values below this
L2_CANCEL = 1e-8         # recompute the squared norm when it falls below this fraction of its peak


# ----------------------------------------------------------------------------- lazy l1 / l2sq / elastic

@njit(cache=True, nogil=True, inline="always")
def catch_up(table, i, reg, cum, cum2, clast, clast2, per_feature, cg, cn, g0, sqrt_rate, power_t):
    """Weight i after the prox steps released since its last touch (Proposition 4); stores it and
    the cumulatives it is now level with. With per-feature rates the weight pays its own rate (read
    only when it owes something), else rate 1."""
    w = table[i, W]
    owed = cum - table[i, clast]
    table[i, clast] = cum
    if reg == REG_ELASTIC:
        owed2 = cum2 - table[i, clast2]
        last = cum - owed
        table[i, clast2] = cum2
        if w != 0.0 and (owed > 0.0 or owed2 > 0.0):
            w = shrink(w, math.exp(-last) * owed2) * math.exp(-owed)
            table[i, W] = w
        return w
    if w != 0.0 and owed > 0.0:
        if per_feature:
            owed *= feature_rate(table, i, cg, cn, g0, sqrt_rate, power_t)
        if reg == REG_L1:
            w = shrink(w, owed)
        else:
            w *= math.exp(-owed)
        table[i, W] = w
    return w


@njit(cache=True, nogil=True, inline="always")
def weight_rate(table, i, per_feature, cg, cn, g0, sqrt_rate, power_t):
    if per_feature:
        return feature_rate(table, i, cg, cn, g0, sqrt_rate, power_t)
    return 1.0


@njit(cache=True, nogil=True)
def catch_up_all(table, prm, iprm, st):
    """Catch every non-zero weight up (before saving, or before a rebase)."""
    reg = iprm[I_REG]
    clast = iprm[I_COL_LAST]
    clast2 = iprm[I_COL_LAST2]
    cg = iprm[I_COL_G]
    cn = iprm[I_COL_N]
    per_feature = cg >= 0 or cn >= 0
    g0 = prm[P_G0]
    power_t = prm[P_POWER_T]
    sqrt_rate = power_t == 0.5
    cum = st[S_FOBOS_CUM]
    cum2 = st[S_FOBOS_CUM2]
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            catch_up(table, i, reg, cum, cum2, clast, clast2, per_feature, cg, cn, g0, sqrt_rate, power_t)


@njit(cache=True, nogil=True)
def rebase_elastic(table, prm, iprm, st):
    """Catch every weight up, then restart both elastic cumulatives (and the last-touch values of
    the non-zero weights) at 0; a zero weight's stale values are harmless, since 0 stays 0."""
    catch_up_all(table, prm, iprm, st)
    clast = iprm[I_COL_LAST]
    clast2 = iprm[I_COL_LAST2]
    for i in range(table.shape[0]):
        if table[i, W] != 0.0:
            table[i, clast] = 0.0
            table[i, clast2] = 0.0
    st[S_FOBOS_CUM] = 0.0
    st[S_FOBOS_CUM2] = 0.0


# ----------------------------------------------------------------------------- l2: a global scale

@njit(cache=True, nogil=True, inline="always")
def scaled(reg):
    """The weights are sigma * stored (l2, and l2sq with an L2 ball)."""
    return reg == REG_L2 or reg == REG_L2SQ_BALL


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
def l2_add(table, st, i, d):
    """Add d to weight i (O(1): the stored value moves by d / sigma, the squared norm follows)."""
    old = l2_read(table, i, st[S_EPOCH])
    new = old + d / st[S_SCALE]
    table[i, W] = new
    q = st[S_SQNORM] + new * new - old * old
    st[S_SQNORM] = q
    if q > st[S_SQPEAK]:
        st[S_SQPEAK] = q


@njit(cache=True, nogil=True)
def l2_prox(table, st, strength):
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


@njit(cache=True, nogil=True)
def l2sq_ball_prox(table, st, strength, radius):
    """Eq. 7's w <- w / (1 + strength), then w <- min(1, radius / ||w||_2) w, both as changes of sigma."""
    st[S_SCALE] /= 1.0 + strength
    if st[S_SQNORM] < L2_CANCEL * st[S_SQPEAK]:
        l2_refresh(table, st)
    norm = st[S_SCALE] * math.sqrt(max(st[S_SQNORM], 0.0))
    if norm > radius:
        st[S_SCALE] *= radius / norm
    if st[S_SCALE] < L2_MIN_SCALE:
        l2_fold(table, st)


# ----------------------------------------------------------------------------- linf: the non-zero list

@njit(cache=True, nogil=True)
def subgradient_pass(table, st, a):
    """The L1 part of the subgradient method (Langford, Li & Zhang 2009, Section 3.2, eq. 5):
    w_j -= a sgn(w_j) for every non-zero weight (a weight crosses 0 rather than stopping there, so
    the method is not sparse and cannot be caught up lazily); the list drops weights that became
    exactly 0. O(n), n = listed weights."""
    n = int(st[S_NNZ])
    m = 0
    for p in range(n):
        i = int(table[p, LIST])
        w = table[i, W]
        if w > 0.0:
            w -= a
        elif w < 0.0:
            w += a
        table[i, W] = w
        if w != 0.0:
            table[m, LIST] = i
            table[i, POS] = m + 1
            m += 1
        else:
            table[i, POS] = 0.0
    st[S_NNZ] = m


@njit(cache=True, nogil=True)
def linf_prox(table, st, strength, seed):
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


# ----------------------------------------------------------------------------- the step and the prox

@njit(cache=True, nogil=True)
def prox(table, prm, iprm, st, reg, scale):
    """The proximal step of one learned example (or batch) with step scale ``scale``: O(1) for the
    lazy regularizers (the cumulatives move), O(1) for l2, O(n) for linf."""
    if reg == REG_L1:
        st[S_FOBOS_CUM] += prm[P_L1] * scale
    elif reg == REG_L2SQ:
        st[S_FOBOS_CUM] += math.log1p(prm[P_L2] * scale)
    elif reg == REG_ELASTIC:
        st[S_FOBOS_CUM2] += prm[P_L1] * scale * math.exp(st[S_FOBOS_CUM])
        st[S_FOBOS_CUM] += math.log1p(prm[P_L2] * scale)
        if st[S_FOBOS_CUM] > ELASTIC_REBASE:
            rebase_elastic(table, prm, iprm, st)
    elif reg == REG_L2:
        l2_prox(table, st, prm[P_LAMBDA] * scale)
    elif reg == REG_L2SQ_BALL:
        l2sq_ball_prox(table, st, prm[P_L2] * scale, prm[P_L2_BALL])
    else:
        linf_prox(table, st, prm[P_LAMBDA] * scale, pivot_seed(iprm[I_SEED], st[S_NLEARN]))


@njit(cache=True, nogil=True, inline="always")
def read(table, i, reg, st, clast, clast2, per_feature, cg, cn, g0, sqrt_rate, power_t):
    """The weight in force of row i, caught up."""
    if reg <= REG_ELASTIC:
        return catch_up(table, i, reg, st[S_FOBOS_CUM], st[S_FOBOS_CUM2], clast, clast2, per_feature, cg, cn, g0,
                        sqrt_rate, power_t)
    if scaled(reg):
        return st[S_SCALE] * l2_read(table, i, st[S_EPOCH])
    return table[i, W]


@njit(cache=True, nogil=True, inline="always")
def add(table, i, reg, st, d):
    """Move weight i (already caught up) by d."""
    if reg <= REG_ELASTIC:
        table[i, W] += d
    elif scaled(reg):
        l2_add(table, st, i, d)
    else:
        list_add(table, st, i, d)


@njit(cache=True, nogil=True)
def flush_batch(table, prm, iprm, st):
    """Apply the batch's averaged step, then one prox with its mean step scale."""
    n = st[S_BATCH_EX]
    if n > 0.0:
        reg = iprm[I_REG]
        clast = iprm[I_COL_LAST]
        clast2 = iprm[I_COL_LAST2]
        cacc = table.shape[1] - 2
        clist = table.shape[1] - 1
        for m in range(int(st[S_BATCH_ROWS])):
            i = int(table[m, clist])
            d = table[i, cacc] / n
            table[i, cacc] = 0.0
            read(table, i, reg, st, clast, clast2, False, -1, -1, 0.0, True, 0.5)
            add(table, i, reg, st, d)
        prox(table, prm, iprm, st, reg, st[S_BATCH_SCALE] / n)
    st[S_BATCH_ROWS] = 0.0
    st[S_BATCH_EX] = 0.0
    st[S_BATCH_SCALE] = 0.0


@njit(cache=True, nogil=True)
def fobos_settings(prm, iprm):
    """The update rule's settings (``gd.rule_settings``), then the regularizer, the table columns LAST
    and LAST2 and the batch size."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate = rule_settings(prm, iprm)
    return (adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, iprm[I_REG], iprm[I_COL_LAST],
            iprm[I_COL_LAST2], iprm[I_BATCH])


@njit(cache=True, nogil=True, inline="always")
def fobos_weight(table, i, cfg, st):
    """The weight in force of row i, caught up (``read``)."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, reg, clast, clast2, batch = cfg
    return read(table, i, reg, st, clast, clast2, adaptive or normalized, cg, cn, g0, sqrt_rate, power_t)


@njit(cache=True, nogil=True, inline="always")
def fobos_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """The gradient step of the update rule (eq. 2), then the prox of the regularizer (eq. 3) with
    eta_{t+1/2} = eta_t (Section 3); with mini-batches the step is pended and a full batch applied."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, reg, clast, clast2, batch = cfg
    per_feature = adaptive or normalized
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
            flush_batch(table, prm, iprm, st)
    else:
        if reg == REG_SUBGRADIENT:    # its sgn(w) is taken before the gradient step
            subgradient_pass(table, st, prm[P_L1] * step)
        if u != 0.0:
            for k in range(s, f):
                i = idx[k]
                add(table, i, reg, st,
                    u * val[k] * weight_rate(table, i, per_feature, cg, cn, g0, sqrt_rate, power_t))
        if reg != REG_SUBGRADIENT:
            prox(table, prm, iprm, st, reg, step)


@njit(cache=True, nogil=True)
def learn_fobos_block(block, state, start, end):
    """Examples start..end-1 with FOBOS (or the subgradient method) through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, fobos_weight, base_start, sum_end,
                        fobos_learn)


@njit(cache=True, nogil=True)
def oaa_fobos_block(block, state, start, end):
    """``learn_fobos_block`` one-against-all (each class's update is a FOBOS step)."""
    table, prm, iprm, st, ctr = state
    return oaa_loop(block, state, start, end, fobos_settings(prm, iprm), state_view, fobos_weight, base_start, sum_end,
                    fobos_learn)


@njit(cache=True, nogil=True)
def finalize(table, prm, iprm, st):
    """Apply an open mini-batch, then bring every weight up to date (lazy regularizers: caught up;
    l2: sigma folded into the stored values), so the weight column holds the weights in force."""
    if iprm[I_BATCH] > 1:
        flush_batch(table, prm, iprm, st)
    reg = iprm[I_REG]
    if reg <= REG_ELASTIC:
        catch_up_all(table, prm, iprm, st)
    elif scaled(reg):
        l2_fold(table, st)


@njit(cache=True, nogil=True)
def in_force(table, rows, reg, st):
    """Weights in force of the given rows (after ``finalize``)."""
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        i = rows[j]
        if scaled(reg) and table[i, EP] != st[S_EPOCH]:
            out[j] = 0.0
        elif scaled(reg):
            out[j] = st[S_SCALE] * table[i, W]
        else:
            out[j] = table[i, W]
    return out


@njit(cache=True, nogil=True)
def after_load(table, prm, iprm, st):
    """Derive what the loaded weights imply: l2's squared norm, linf's list (lazy: nothing, the
    cumulatives and last-touch values all start at 0)."""
    reg = iprm[I_REG]
    if scaled(reg):
        st[S_SCALE] = 1.0
        st[S_EPOCH] = 0.0
        l2_refresh(table, st)
    elif reg == REG_LINF or reg == REG_SUBGRADIENT:
        list_rebuild(table, st)


# ----------------------------------------------------------------------------- specs

#: --reg names -> REG_* codes, and the strength options each regularizer takes
REGS = {"l1": REG_L1, "l2sq": REG_L2SQ, "elastic": REG_ELASTIC, "l2": REG_L2, "linf": REG_LINF}
REG_STRENGTHS = {name: REGULARIZERS[name].strengths for name in REGS}
#: regularizers caught up lazily per coordinate (LAST columns); l2 and linf act globally
LAZY_REGS = tuple(name for name in REGS if REGULARIZERS[name].lazy)
#: regularizers whose lazy catch-up is exact with per-feature rates
PER_FEATURE_REGS = tuple(name for name in REGS if REGULARIZERS[name].per_feature)


def ball(cfg) -> bool:
    """l2sq with a projection onto an L2 ball (``--l2-ball R``, R finite)."""
    return cfg.reg == "l2sq" and cfg.l2_ball is not None and math.isfinite(cfg.l2_ball)


def reg_code(cfg) -> int:
    """The kernel's REG_* code of the configuration."""
    return REG_L2SQ_BALL if ball(cfg) else REGS[cfg.reg]


def fobos_layout(cfg) -> Layout:
    batch = ("acc", "list") if cfg.batch_size > 1 else ()    # pending step and row list: the last two
    if cfg.reg == "l2" or ball(cfg):
        return Layout(("w", "epoch") + batch, 1)
    if cfg.reg == "linf":
        return Layout(("w", "pos", "list") + batch, 1)
    return rule_layout(cfg, lazy=True, extra=(("last2",) if cfg.reg == "elastic" else ()) + batch)


def fobos_settings_of(cfg, prm, iprm) -> None:
    iprm[I_REG] = reg_code(cfg)
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
    kernel=learn_fobos_block, oaa_kernel=oaa_fobos_block, finalize=finalize,
    after_load=after_load,
    describe=lambda c: (f"fobos (forward-backward splitting, {c.rule()}: reg = {c.reg}, "
                        + ", ".join(f"{n} = {getattr(c, n):g}" for n in REG_STRENGTHS[c.reg])
                        + (f", l2 ball radius = {c.l2_ball:g}" if ball(c) else "")
                        + f", batch size = {c.batch_size})"),
    layout=fobos_layout,
    settings=fobos_settings_of,
    in_force=lambda c, table, st, rows: in_force(table, rows, reg_code(c), st),
    saved=lambda c: rule_saved(c, fobos_layout(c)) if c.reg in LAZY_REGS and not ball(c) else [],
    regularizer=fobos_regularizer,
    slots=SLOTS,
    slot_start={"scale": 1.0},
    options=("l1", "reg", "l2", "lam", "batch_size", "l2_ball"),
    selected_by=("reg", "l2", "lam"),
    choices={"reg": tuple(REGS)},
    check=fobos_check,
    check_stage="reg",
    plain_only=fobos_plain_only,
)
