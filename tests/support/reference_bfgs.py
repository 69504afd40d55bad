"""Slow, obvious reference of VW's batch L-BFGS (``--bfgs``) for the tests: dense float64 vectors over
the 2^b weights, the examples in a list, the (s, y) pairs in a Python list (newest first) and the
two-loop recursion written out as in Nocedal & Wright (Algorithm 7.4, H0 = gamma diag(c)); with m = 0
(--conjugate_gradient) Polak-Ribiere's conjugate direction, each step from a curvature pass. It follows
VW's schedule of passes (bfgs.cc, read independently of streamlearn's kernels): the first pass
gives the gradient and the preconditioner, a curvature pass the first step; after each later gradient
pass a failed Wolfe test (wolfe1 < 0.01 or a larger loss) halves the step, else --termination is
tested and the next direction taken with step 1 (--hessian_on: a curvature pass gives the step).
The preconditioner is the first pass's only: 1 / (curvature + l2), capped at 10^4 / its largest
value; from the second direction on it is 1/l2 (VW resets it after every pass).

Squared and logistic losses, holdout off, no importance weight 0."""

from __future__ import annotations

import math

import numpy as np


def _loss(loss, p, y):
    if loss == "logistic":
        s = (y + 1) / 2
        return s * math.log1p(math.exp(-p)) + (1 - s) * math.log1p(math.exp(p))
    return (p - y) ** 2


def _d1(loss, p, y):
    if loss == "logistic":
        s = (y + 1) / 2
        return s * (-1 / (1 + math.exp(p))) + (1 - s) * (1 / (1 + math.exp(-p)))
    return 2 * (p - y)


def _d2(loss, p, y, lo, hi):
    if loss == "logistic":
        q = 1 / (1 + math.exp(p))
        return q * (1 - q)
    return 2.0 if lo <= p <= hi else 0.0


def eager_bfgs(examples, dim, loss="squared", l2=0.0, m=15, passes=5, termination=0.001, hessian_on=False,
               start=None):
    """Returns {"w": final weights, "average_loss": the run's average loss (every pass's examples),
    "passes": passes used, "pass_losses": each gradient pass's regularized average loss}."""
    w = np.zeros(dim) if start is None else np.array(start, float)
    lo, hi = (-50.0, 50.0) if loss == "logistic" else (0.0, 0.0)
    hessian_on = hessian_on or m == 0
    pairs = []                      # (s, y), newest first
    total_loss = total_w = 0.0
    iw = 0.0
    prev_loss = step = 0.0
    g_prev = x_prev = d = precond = None
    kind = "first"
    preds = []
    pass_losses = []
    used = 0
    for p in range(passes):
        used += 1
        status_done = False
        if kind == "curvature":
            curv = 0.0
            for (y, h, base, feats), pred in zip(examples, preds):
                dx = base + sum(d[i] * v for i, v in feats)
                curv += dx * dx * _d2(loss, pred, y, lo, hi) * h
                total_loss += _loss(loss, pred, y) * h
                total_w += h
            curv += l2 * float(d @ d)
            dd = float(g_prev @ d)
            if (curv == 0 and dd != 0) or dd == 0:
                step, status_done = 0.0, True
            else:
                step = -dd / curv
            w = w + step * d
            kind = "gradient"
        else:
            g = np.zeros(dim)
            diag = np.zeros(dim)
            loss_sum = 0.0
            preds = []
            for y, h, base, feats in examples:
                raw = base + sum(w[i] * v for i, v in feats)
                pred = min(max(raw, lo), hi)
                if loss == "squared":
                    lo, hi = min(lo, y), max(hi, y)
                loss_sum += _loss(loss, pred, y) * h
                preds.append(pred)
                for i, v in feats:
                    g[i] += _d1(loss, pred, y) * h * v
                    if kind == "first":
                        diag[i] += _d2(loss, pred, y, lo, hi) * h * v * v
                if kind == "first":
                    iw += h
            total_loss += loss_sum
            total_w += sum(h for _, h, _, _ in examples)
            loss_sum += l2 / 2 * float(w @ w)
            g = g + l2 * w
            pass_losses.append(loss_sum / iw)
            if kind == "first":
                c = diag + l2
                top = c.max()
                precond = np.where(c > 0, 1 / np.where(c > 0, c, 1), 0.0)
                precond = np.minimum(precond, 1e4 / top if top > 0 else 0.0)
                d = -precond * g
                g_prev, x_prev, prev_loss = g, w.copy(), loss_sum
                kind = "curvature"
            else:
                precond = np.full(dim, 1 / l2 if l2 > 0 else 0.0)
                g0_d = float(g_prev @ d)
                wolfe1 = (loss_sum - prev_loss) / (step * g0_d) if step * g0_d != 0 else math.nan
                if math.isnan(wolfe1):
                    status_done = True
                elif wolfe1 < 0.01 or loss_sum > prev_loss:
                    w = w + (-step + step / 2) * d
                    step = step / 2
                else:
                    if abs((prev_loss - loss_sum) / prev_loss) < termination:
                        status_done = True
                    prev_loss = loss_sum
                    step = 1.0
                    if m == 0:      # conjugate gradient: Polak-Ribiere's beta (0 when negative or NaN)
                        num, den = float(g @ (precond * (g - g_prev))), float(g_prev @ (precond * g_prev))
                        beta = num / den if den != 0 else math.nan
                        beta = 0.0 if (math.isnan(beta) or beta < 0) else beta
                        d = beta * d - precond * g
                        g_prev = g
                        kind = "curvature"
                        if status_done:
                            break
                        continue
                    s_new, y_new = w - x_prev, g - g_prev
                    ys, yhy = float(y_new @ s_new), float(y_new @ (precond * y_new))
                    if ys <= 0 or yhy <= 0:
                        step, status_done = 0.0, True
                    else:
                        pairs = [(s_new, y_new)] + pairs[:max(m, 1) - 1]
                        q = g.copy()
                        alphas = []
                        for s_i, y_i in pairs:
                            a = float(s_i @ q) / float(y_i @ s_i)
                            alphas.append(a)
                            q -= a * y_i
                        r = (ys / yhy) * precond * q
                        for (s_i, y_i), a in reversed(list(zip(pairs, alphas))):
                            b = float(y_i @ r) / float(y_i @ s_i)
                            r += s_i * (a - b)
                        d = -r
                        g_prev, x_prev = g, w.copy()
                    if hessian_on:
                        kind = "curvature"
                    else:
                        w = w + step * d
        if status_done:
            break
    return {"w": w, "average_loss": total_loss / total_w, "passes": used, "pass_losses": pass_losses}
