"""VW's batch L-BFGS (``--bfgs``; ``--conjugate_gradient``: no stored pairs), after Nocedal 1980 and
Liu & Nocedal 1989 as VW 9.11.9's bfgs.cc runs it: the compiled pieces over plain arrays and the
per-pass orchestration (``Lbfgs.end_pass``). A helper module of ``learners/bfgs.py`` (its name
starts with _, so it is no learner); ``streamlearn.run.bfgs_run`` drives the passes.

State, in float32 as VW keeps it: ``W`` (rows x 4) holds per feature the weight x, the gradient g
summed over a pass, the search direction d and the (inverse) preconditioner c; ``mem`` (rows x 2m)
the last m pairs (y_t, s_t) (VW's ring, ``origin`` its start); ``rho`` and ``alpha`` the two-loop
recursion's scalars (float64). Sums over the table are float64, as VW's.

One pass over the data is either a *gradient pass* (predictions stored, loss and gradient summed;
on the first pass also the preconditioner, the sum of each feature's curvature l''(p) h x^2) or a
*curvature pass* (the stored predictions, sum of (d.x)^2 l''(p) h, for the step size by Newton's
rule along d). After a pass (``end_pass``, VW's process_pass):

* first pass: the l2 term added, d = -c g, then a curvature pass (``first_hessian_on``);
* gradient pass: Wolfe's numbers of the step just taken; a failed line search (wolfe1 < 0.01 or a
  larger loss) halves the step (``revise``); otherwise the relative decrease is tested against
  ``--termination``, the new pair is stored and the two-loop recursion gives the next d; the step
  is 1 (or, with ``--hessian_on``, a curvature pass computes it);
* curvature pass: the step -g.d / curvature.

VW zeroes the preconditioner after every pass that does not end the run and accumulates it only on
the first one: from the second direction on c is 1/l2 (0 without --l2, which ends the run with
"zero or negative curvature" at the third pass). That is reproduced as it is.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from streamlearn.core.loop import account, begin_example, example_loss
from streamlearn.core.losses import CLASSIC, HINGE, LOGISTIC, POISSON, SQUARED, loss_dloss_f32, poisson_clamp
from streamlearn.core.state import S_MAX_LABEL, S_MIN_LABEL

XT, GT, DIR, COND = 0, 1, 2, 3      # the columns of W
F32 = np.float32
MAX_PRECOND_RATIO = 10000.0
WOLFE1_BOUND = 0.01

LEARN_OK, LEARN_CURV, LEARN_CONV = 0, 1, 2

CURV_MESSAGE = ("Zero or negative curvature detected.\n"
                "To increase curvature you can increase regularization or rescale features.\n"
                "It is also possible that you have reached numerical accuracy\n"
                "and further decrease in the objective cannot be reliably detected.")


# ----------------------------------------------------------------------------- the passes over the data

@njit(cache=True, nogil=True)
def second_derivative(code, p, y, lo, hi):
    """VW's second derivative of the loss at prediction p (float32; loss_functions.cc)."""
    p32 = F32(p)
    if code == SQUARED:
        return F32(2.0) if (p32 <= F32(hi) and p32 >= F32(lo)) else F32(0.0)
    if code == CLASSIC:
        return F32(2.0)
    if code == LOGISTIC:
        y32 = F32(y)
        s = (y32 + F32(1.0)) / F32(2.0)
        a = F32(1.0) / (F32(1.0) + np.exp(p32))            # label 1
        b = F32(1.0) / (F32(1.0) + np.exp(-p32))           # label -1
        return s * (a * (F32(1.0) - a)) + (F32(1.0) - s) * (b * (F32(1.0) - b))
    if code == POISSON:
        return np.exp(F32(poisson_clamp(p32)))
    return F32(0.0)                                        # hinge, quantile: piecewise linear


@njit(cache=True, nogil=True)
def clamp32(raw, lo, hi):
    """VW's finalize_prediction: NaN -> 0, clamped to the bounds."""
    if raw != raw:
        return F32(0.0)
    if raw < lo:
        return F32(lo)
    if raw > hi:
        return F32(hi)
    return raw


@njit(cache=True, nogil=True)
def pass_block(indptr, idx, val, labels, weights, bases, nfeat, preds, W, st, ctr, code, tau, holdout_period,
               bounds_follow, binary, gradient, precond, first, stored, pos, sums):
    """One block of a pass (module docstring): a gradient pass (``gradient``; with ``precond`` also
    the preconditioner, with ``first`` the importance weights summed into ``sums[1]``) or a curvature
    pass (the predictions ``stored`` by the last gradient pass, from ``pos[0]``). ``sums``: (loss of
    the learned examples, their importance weights, curvature). Held-out and unlabeled examples are
    predicted with the weights as they are; ``preds`` gets every example's prediction."""
    for e in range(labels.shape[0]):
        h = weights[e]
        lo = st[S_MIN_LABEL]
        hi = st[S_MAX_LABEL]
        y, labeled, holdout = begin_example(ctr, st, code, labels[e], True, holdout_period, bounds_follow)
        s = indptr[e]
        f = indptr[e + 1]
        learned = labeled and not holdout
        if learned and not gradient:
            dx = F32(bases[e])
            for k in range(s, f):
                dx += W[idx[k], DIR] * F32(val[k])
            j = pos[0]
            if j >= stored.shape[0]:
                j = stored.shape[0] - 1
            p = stored[j]
            pos[0] = j + 1
            lval = example_loss(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL], h, binary)
            sd = second_derivative(code, p, y, st[S_MIN_LABEL], st[S_MAX_LABEL])
            sums[2] += float(dx) * float(dx) * float(sd) * h
        else:
            raw = F32(bases[e])
            for k in range(s, f):
                raw += W[idx[k], XT] * F32(val[k])
            p = clamp32(raw, lo, hi)
            lval = 0.0
            if labeled:
                lval = example_loss(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL], h, binary)
            if learned:
                d = loss_dloss_f32(code, p, y, tau) * F32(h)
                for k in range(s, f):
                    W[idx[k], GT] += d * F32(val[k])
                j = pos[0]
                if j < stored.shape[0]:
                    stored[j] = p
                pos[0] = j + 1
        if learned:
            sums[0] += lval
            if first:
                sums[1] += h
            if precond:
                c = second_derivative(code, p, y, st[S_MIN_LABEL], st[S_MAX_LABEL]) * F32(h)
                for k in range(s, f):
                    x = F32(val[k])
                    W[idx[k], COND] += c * x * x
        account(ctr, labeled, holdout, h, y, lval, nfeat[e])
        preds[e] = p


# ----------------------------------------------------------------------------- the steps over the table

@njit(cache=True, nogil=True)
def add_regularization(W, l2, regs, no_bias, constant):
    """The l2 term's gradient into g, its value returned: l2/2 x^2 per feature, or with a feature
    regularizer (``regs``: rows x 2, strength and centre) its own strength around its centre;
    --no_bias_regularization leaves the constant's row out."""
    ret = 0.0
    lam = F32(l2)
    if regs.shape[0] == 0:
        for i in range(W.shape[0]):
            w = W[i, XT]
            W[i, GT] += lam * w
            ret += 0.5 * float(lam) * float(w) * float(w)
        if no_bias:
            w = W[constant, XT]
            W[constant, GT] -= lam * w
            ret -= 0.5 * float(lam) * float(w) * float(w)
    else:
        for i in range(W.shape[0]):
            delta = W[i, XT] - regs[i, 1]
            W[i, GT] += regs[i, 0] * delta
            ret += 0.5 * float(regs[i, 0]) * float(delta) * float(delta)
        if no_bias:
            delta = W[constant, XT] - regs[constant, 1]
            W[constant, GT] -= regs[constant, 0] * delta
            ret -= 0.5 * float(regs[constant, 0]) * float(delta) * float(delta)
    return ret


@njit(cache=True, nogil=True)
def finalize_preconditioner(W, l2, regs):
    """c <- 1 / (c + l2) where positive, capped at 10000 / the largest c + l2 (VW's ratio)."""
    lam = F32(l2)
    top = F32(0.0)
    for i in range(W.shape[0]):
        W[i, COND] += lam if regs.shape[0] == 0 else regs[i, 0]
        if W[i, COND] > top:
            top = W[i, COND]
        if W[i, COND] > 0:
            W[i, COND] = F32(1.0) / W[i, COND]
    cap = F32(0.0) if top == 0 else F32(MAX_PRECOND_RATIO) / top
    for i in range(W.shape[0]):
        if np.isinf(W[i, COND]) or W[i, COND] > cap:
            W[i, COND] = cap


@njit(cache=True, nogil=True)
def iter_start(W, mem, origin, m):
    """The first direction d = -c g; g stored as the first pair's gradient. Returns (g.g, g.c.g)."""
    stride = mem.shape[1]
    g1_hg1 = 0.0
    g1_g1 = 0.0
    for i in range(W.shape[0]):
        if m > 0:
            mem[i, (1 + origin) % stride] = W[i, XT]
        mem[i, origin % stride] = W[i, GT]
        g = float(W[i, GT])
        g1_hg1 += g * float(W[i, GT]) * float(W[i, COND])
        g1_g1 += g * float(W[i, GT])
        W[i, DIR] = -W[i, COND] * W[i, GT]
        W[i, GT] = 0
    return g1_g1, g1_hg1


@njit(cache=True, nogil=True)
def conjugate_direction(W, mem, origin):
    """--conjugate_gradient (m = 0): d <- beta d - c g, beta Polak-Ribiere's (0 when negative or NaN)."""
    stride = mem.shape[1]
    g_hy = 0.0
    g_hg = 0.0
    for i in range(W.shape[0]):
        old = mem[i, origin % stride]
        y = float(W[i, GT] - old)
        g_hy += float(W[i, GT]) * float(W[i, COND]) * y
        g_hg += float(old) * float(W[i, COND]) * float(old)
    beta = F32(g_hy / g_hg) if g_hg != 0.0 else F32(np.nan)
    if beta < 0 or beta != beta:
        beta = F32(0.0)
    for i in range(W.shape[0]):
        mem[i, origin % stride] = W[i, GT]
        W[i, DIR] *= beta
        W[i, DIR] -= W[i, COND] * W[i, GT]
        W[i, GT] = 0
    return beta


@njit(cache=True, nogil=True)
def two_loop(W, mem, rho, alpha, lastj, origin, m):
    """The new pair (y, s) from the gradient and weights now and at the last step, then L-BFGS's
    two-loop recursion over the stored pairs (scaled by gamma c) for d; the ring moves on.
    Returns (ok, lastj, origin): not ok when y.s or y.c.y is not positive (no curvature)."""
    stride = mem.shape[1]
    y_s = 0.0
    y_hy = 0.0
    s_q = 0.0
    for i in range(W.shape[0]):
        mem[i, origin % stride] = W[i, GT] - mem[i, origin % stride]
        mem[i, (1 + origin) % stride] = W[i, XT] - mem[i, (1 + origin) % stride]
        W[i, DIR] = W[i, GT]
        yv = float(mem[i, origin % stride])
        sv = float(mem[i, (1 + origin) % stride])
        y_s += yv * sv
        y_hy += yv * yv * float(W[i, COND])
        s_q += sv * float(W[i, GT])
    if y_s <= 0.0 or y_hy <= 0.0:
        return False, lastj, origin
    rho[0] = 1.0 / y_s
    gamma = F32(y_s / y_hy)
    for j in range(lastj):
        alpha[j] = rho[j] * s_q
        s_q = 0.0
        a = F32(alpha[j])
        for i in range(W.shape[0]):
            W[i, DIR] -= a * mem[i, (2 * j + origin) % stride]
            s_q += float(mem[i, (2 * j + 3 + origin) % stride]) * float(W[i, DIR])
    alpha[lastj] = rho[lastj] * s_q
    y_r = 0.0
    a = F32(alpha[lastj])
    for i in range(W.shape[0]):
        W[i, DIR] -= a * mem[i, (2 * lastj + origin) % stride]
        W[i, DIR] *= gamma * W[i, COND]
        y_r += float(mem[i, (2 * lastj + origin) % stride]) * float(W[i, DIR])
    for j in range(lastj, 0, -1):
        coef = F32(alpha[j] - rho[j] * y_r)
        y_r = 0.0
        for i in range(W.shape[0]):
            W[i, DIR] += coef * mem[i, (2 * j + 1 + origin) % stride]
            y_r += float(mem[i, (2 * j - 2 + origin) % stride]) * float(W[i, DIR])
    coef = F32(alpha[0] - rho[0] * y_r)
    for i in range(W.shape[0]):
        W[i, DIR] = -W[i, DIR] - coef * mem[i, (1 + origin) % stride]
    lastj = lastj + 1 if lastj < m - 1 else m - 1
    origin = (origin + stride - 2) % stride
    for i in range(W.shape[0]):
        mem[i, origin % stride] = W[i, GT]
        mem[i, (1 + origin) % stride] = W[i, XT]
        W[i, GT] = 0
    for j in range(lastj, 0, -1):
        rho[j] = rho[j - 1]
    return True, lastj, origin


@njit(cache=True, nogil=True)
def wolfe_sums(W, mem, origin):
    """(g0.d, g1.d, g1.c.g1, g1.g1): the last step's gradients along d, for Wolfe's conditions."""
    stride = mem.shape[1]
    g0_d = g1_d = g1_hg1 = g1_g1 = 0.0
    for i in range(W.shape[0]):
        g = float(W[i, GT])
        g0_d += float(mem[i, origin % stride]) * float(W[i, DIR])
        g1_d += g * float(W[i, DIR])
        g1_hg1 += g * g * float(W[i, COND])
        g1_g1 += g * g
    return g0_d, g1_d, g1_hg1, g1_g1


@njit(cache=True, nogil=True)
def direction_magnitude(W):
    ret = 0.0
    for i in range(W.shape[0]):
        ret += float(W[i, DIR]) * float(W[i, DIR])
    return ret


@njit(cache=True, nogil=True)
def regularizer_direction_magnitude(W, l2, regs):
    """The l2 term's curvature along d."""
    ret = 0.0
    if regs.shape[0] == 0:
        if l2 == 0.0:
            return 0.0
        for i in range(W.shape[0]):
            ret += l2 * float(W[i, DIR]) * float(W[i, DIR])
    else:
        for i in range(W.shape[0]):
            ret += float(regs[i, 0]) * float(W[i, DIR]) * float(W[i, DIR])
    return ret


@njit(cache=True, nogil=True)
def derivative_in_direction(W, mem, origin):
    stride = mem.shape[1]
    ret = 0.0
    for i in range(W.shape[0]):
        ret += float(mem[i, origin % stride]) * float(W[i, DIR])
    return ret


@njit(cache=True, nogil=True)
def update_weight(W, step):
    s = F32(step)
    for i in range(W.shape[0]):
        W[i, XT] += s * W[i, DIR]


def preconditioner_to_regularizer(W, l2, regs):
    """The feature regularizer at convergence (VW's): strength l2 + the feature's curvature (1 / its
    preconditioner), added to an input regularizer's strength; centre the weight. (rows, 2) float32."""
    c = W[:, COND]
    out = regs.copy() if regs.shape[0] else np.zeros((W.shape[0], 2), np.float32)
    if not regs.shape[0]:
        out[:, 0] = np.float32(l2)
    pos = c > 0
    out[pos, 0] += np.float32(1.0) / c[pos]
    out[:, 1] = W[:, XT]
    return out


# ----------------------------------------------------------------------------- the orchestration

def _f(x: float, width: int = 10, prec: int = 5) -> str:
    return f"{x:<{width}.{prec}f}"


class Lbfgs:
    """The optimizer's state between passes (VW's bfgs struct) and its step after each pass
    (``end_pass``). ``trace(text)`` receives the per-pass table's text (stderr), ``info(text)`` VW's
    [info] messages (stdout)."""

    def __init__(self, rows: int, m: int, rel_threshold: float, hessian_on: bool, l2: float, no_bias: bool,
                 constant: int, regs: np.ndarray | None, trace, info):
        self.m = m
        self.hessian_on = hessian_on or m == 0
        self.rel_threshold = float(np.float32(rel_threshold))
        self.l2 = float(np.float32(l2))
        self.no_bias, self.constant = no_bias, constant
        self.regs = np.zeros((0, 2), np.float32) if regs is None else regs
        self.W = np.zeros((rows, 4), np.float32)
        if regs is not None:
            self.l2 = 1.0       # VW: a feature regularizer is always added
            self.W[:, XT] = regs[:, 1]      # the start: the regularizer's centres, its strengths in c
            self.W[:, COND] = regs[:, 0]
        self.mem = np.zeros((rows, 2 * m if m > 0 else 1), np.float32)
        self.rho = np.zeros(max(m, 1), np.float64)
        self.alpha = np.zeros(max(m, 1), np.float64)
        self.trace, self.info = trace, info
        self.lastj = self.origin = 0
        self.loss_sum = self.previous_loss_sum = 0.0
        self.importance_weight_sum = 0.0
        self.curvature = 0.0
        self.step_size = 0.0
        self.first_pass = self.gradient_pass = self.preconditioner_pass = True
        self.backstep_on = True
        self.current_pass = 0
        self.stored = np.zeros(1024, np.float32)
        self.pos = np.zeros(1, np.int64)
        self.sums = np.zeros(3, np.float64)

    def header(self) -> str:
        return (f"{'##':>2s} {'avg. loss':<10s}\t{'der. mag.':<10s}\t{'d. m. cond.':<10s}\t {'wolfe1':<10s}\t"
                f"{'wolfe2':<10s}\t{'mix fraction':<10s}\t{'curvature':<10s}\t{'dir. magnitude':<10s}\t"
                f"step size\n")

    def begin_pass(self) -> None:
        self.pos[0] = 0
        self.sums[0] = self.sums[2] = 0.0

    def room(self, n: int) -> None:
        """Room for ``n`` more stored predictions (a gradient pass)."""
        need = int(self.pos[0]) + n
        if self.gradient_pass and need > self.stored.shape[0]:
            grown = np.zeros(max(need, 2 * self.stored.shape[0]), np.float32)
            grown[:self.stored.shape[0]] = self.stored
            self.stored = grown

    def block(self, arrays: tuple, st, ctr, iprm_values: tuple) -> None:
        code, tau, holdout_period, bounds_follow, binary = iprm_values
        self.room(arrays[3].shape[0])
        pass_block(*arrays, self.W, st, ctr, code, tau, holdout_period, bounds_follow, binary, self.gradient_pass,
                   self.preconditioner_pass, self.first_pass, self.stored, self.pos, self.sums)

    def end_pass(self, holdout: bool, ho_loss: float, ho_w: float) -> int:
        """VW's process_pass: the step after a pass (module docstring); returns the status."""
        W = self.W
        self.loss_sum = float(self.sums[0])
        if self.first_pass:
            self.importance_weight_sum = float(self.sums[1])
        self.curvature = float(self.sums[2])
        status = LEARN_OK
        finalize_preconditioner(W, self.l2, self.regs)
        iw = self.importance_weight_sum
        if self.first_pass:
            if self.l2 > 0:
                self.loss_sum += add_regularization(W, self.l2, self.regs, self.no_bias, self.constant)
            self.trace(f"{self.current_pass + 1:2d} {_f(self.loss_sum / iw if iw else math.nan)}\t")
            self.previous_loss_sum, self.loss_sum = self.loss_sum, 0.0
            g1_g1, g1_hg1 = iter_start(W, self.mem, self.origin, self.m)
            self.lastj = 0
            self.trace(f"{_f(g1_g1 / (iw * iw) if iw else math.nan)}\t{_f(g1_hg1 / iw if iw else math.nan)}\t"
                       f"{'':<10s}\t{'':<10s}\t{'':<10s}\t")
            self.gradient_pass = False
        elif self.gradient_pass:
            if self.l2 > 0:
                self.loss_sum += add_regularization(W, self.l2, self.regs, self.no_bias, self.constant)
            if holdout and self.current_pass >= 1:
                if ho_loss == 0.0 and ho_w == 0.0:
                    self.trace(f"{self.current_pass + 1:2d} h unknown    ")
                else:
                    self.trace(f"{self.current_pass + 1:2d} h{_f(ho_loss / ho_w)}\t")
            else:
                self.trace(f"{self.current_pass + 1:2d} {_f(self.loss_sum / iw if iw else math.nan)}\t")
            g0_d, g1_d, g1_hg1, g1_g1 = wolfe_sums(W, self.mem, self.origin)
            with np.errstate(all="ignore"):
                wolfe1 = float(np.float64(self.loss_sum - self.previous_loss_sum) / (self.step_size * g0_d))
                wolfe2 = float(np.float64(g1_d) / g0_d)
            self.trace(f"{_f(g1_g1 / (iw * iw) if iw else math.nan)}\t{_f(g1_hg1 / iw if iw else math.nan)}\t "
                       f"{wolfe1:<10f}\t{wolfe2:<10f}\t")
            new_step = 0.5 * self.step_size
            if math.isnan(float(np.float32(wolfe1))):
                self.trace("\n")
                self.info("Derivative 0 detected.")
                self.step_size = 0.0
                status = LEARN_CONV
            elif self.backstep_on and (wolfe1 < WOLFE1_BOUND or self.loss_sum > self.previous_loss_sum):
                ratio = 0.0 if self.step_size == 0 else float(np.float32(new_step / self.step_size))
                self.trace(f"{'':<10s}\t{'':<10s}\t(revise x {ratio:.1f})\t{new_step:<.5f}\n")
                update_weight(W, float(np.float32(-self.step_size + new_step)))
                self.step_size = float(np.float32(new_step))
                W[:, GT] = 0
                self.loss_sum = 0.0
            else:
                with np.errstate(all="ignore"):
                    rel = (self.previous_loss_sum - self.loss_sum) / self.previous_loss_sum
                if not math.isnan(float(np.float32(rel))) and self.backstep_on and abs(rel) < self.rel_threshold:
                    self.info("")
                    self.info(f"Termination condition reached in pass {self.current_pass + 1}: decrease in loss "
                              f"less than {self.rel_threshold * 100.0:.3f}%.\n"
                              f"If you want to optimize further, decrease termination threshold.")
                    status = LEARN_CONV
                self.previous_loss_sum, self.loss_sum = self.loss_sum, 0.0
                self.curvature = 0.0
                self.step_size = 1.0
                ok = True
                if self.m == 0:
                    beta = conjugate_direction(W, self.mem, self.origin)
                    self.trace(f"{beta:f}\t")
                else:
                    self.trace(f"{'':<10s}\t")
                    ok, self.lastj, self.origin = two_loop(W, self.mem, self.rho, self.alpha, self.lastj,
                                                           self.origin, self.m)
                if not ok:
                    self.info("In bfgs_iter_middle: " + CURV_MESSAGE)
                    self.step_size = 0.0
                    status = LEARN_CURV
                if self.hessian_on:
                    self.gradient_pass = False
                else:
                    self.trace(f"{'':<10s}\t{_f(float(np.float32(direction_magnitude(W))))}\t{self.step_size:<.5f}\n")
                    update_weight(W, self.step_size)
        else:
            if self.l2 > 0:
                self.curvature += regularizer_direction_magnitude(W, self.l2, self.regs)
            dd = float(np.float32(derivative_in_direction(W, self.mem, self.origin)))
            if self.curvature == 0.0 and dd != 0.0:
                self.info(CURV_MESSAGE)
                self.step_size = 0.0
                status = LEARN_CURV
            elif dd == 0.0:
                self.info("Derivative 0 detected.")
                self.step_size = 0.0
                status = LEARN_CONV
            else:
                self.step_size = float(np.float32(-dd / np.float32(self.curvature)))
            d_mag = float(np.float32(direction_magnitude(W)))
            update_weight(W, self.step_size)
            self.trace(f"{_f(self.curvature / iw if iw else math.nan)}\t{_f(d_mag)}\t{self.step_size:<.5f}\n")
            self.gradient_pass = True
        self.current_pass += 1
        self.first_pass = False
        self.preconditioner_pass = False
        return status
