"""Slow references of VW's parameter-free learners --pistol (ftrl.cc) and --freegrad (freegrad.cc),
transcribed plainly from VW's update (one dict of float32 values per coordinate, float32 arithmetic in
VW's order of operations), for the compiled kernels' tests.

``examples``: ``support.helpers.parse_examples``' (label or None, importance, base, [(slot, value)]).
Both return (-p predictions, {slot: [the coordinate's values, in VW's order]}, total importance
learned). The -p prediction of a learned example is the one learning computed (VW's learn returns
it), clamped to the bounds its label widened; any other example is the stored weights' score from
its base, clamped to the bounds.
"""

from __future__ import annotations

import math

import numpy as np

from support.vw32 import F, dloss, expf


def _bounds(loss):
    return (-50.0, 50.0) if loss == "logistic" else (0.0, 0.0)


def _label(loss, y):
    if y is not None and loss == "logistic":
        return 1.0 if y > 0 else -1.0
    return y


def _plain(coords, base, feats, size):
    s = F(base)
    for i, v in feats:
        s = s + coords.setdefault(i, [F(0.0)] * size)[0] * F(v)
    return float(s)


def reference_pistol(examples, loss, alpha=1.0, beta=0.5):
    """VW's --pistol: coordinate values [w, z (sum of -g), G (sum of |g|), M (max |x|)]."""
    alpha, beta = F(alpha), F(beta)
    coords: dict[int, list] = {}
    lo, hi = _bounds(loss)
    shown, total = [], 0.0
    for label, h, base, feats in examples:
        y = _label(loss, label)
        plain = _plain(coords, base, feats, 4)
        if y is not None and loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        if y is None or h <= 0:
            shown.append(min(max(plain, lo), hi))
            continue
        total += h
        # inner_update_pistol_state_and_predict
        pred = F(0.0)
        for i, v in feats:
            x = F(v)
            c = coords[i]
            if abs(x) > c[3]:
                c[3] = abs(x)
            tmp = F(1.0) / (alpha * c[3] * (c[2] + c[3]))
            c[0] = F(math.sqrt(c[2])) * beta * c[1] * expf(c[1] * c[1] / F(2.0) * tmp) * tmp
            pred = pred + c[0] * x
        p = min(max(float(pred), lo), hi)
        shown.append(p)
        # inner_update_pistol_post
        d = dloss(loss, p, y) * F(h)
        for i, v in feats:
            g = d * F(v)
            c = coords[i]
            c[1] = c[1] - g
            c[2] = c[2] + abs(g)
    return np.array(shown), coords, total


def freegrad_w(c, eps):
    """Equation 9 of Mhammedi & Koolen 2020 as VW writes it: c = [w, G, V, h1, ht, S]."""
    _, g, v, h1, ht, _ = c
    if h1 > F(0.0):
        ag = abs(g)
        vh = v + ht * ag
        # VW's std::pow(x, 2.f) taken as the float32 x * x, as the kernel does (numpy's float32 ** 2 can
        # differ in the last bit; the kernel equals VW 9.11.9 bit for bit in test_parameter_free.py)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):   # V can be 0: inf/NaN, as in VW
            return (-g * eps * (F(2.0) * v + ht * ag) * (h1 * h1) / (F(2.0) * (vh * vh) * F(math.sqrt(v)))
                    * expf(F(ag * ag) / (F(2.0) * v + F(2.0) * ht * ag)))
    return F(0.0)


def reference_freegrad(examples, loss, eps=1.0, lipschitz=0.0, restart=False, project=False):
    """VW's --freegrad (with --restart, --project: the adaptive radius): coordinate values
    [w, G, V, h1, ht, S]."""
    eps, lip = F(eps), F(lipschitz)
    coords: dict[int, list] = {}
    lo, hi = _bounds(loss)
    shown, total = [], 0.0
    grad_norms, max_clipped = F(1.0), F(0.0)      # VW's sum_normalized_grad_norms, maximum_clipped_gradient_norm
    for label, h, base, feats in examples:
        y = _label(loss, label)
        plain = _plain(coords, base, feats, 6)
        if y is not None and loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        if y is None or h <= 0:
            shown.append(min(max(plain, lo), hi))
            continue
        total += float(F(h))
        # freegrad_predict
        pred, sq = F(0.0), F(0.0)
        for i, v in feats:
            w = freegrad_w(coords[i], eps)
            sq = sq + w * w
            pred = pred + w * F(v)
        norm = F(math.sqrt(sq))
        radius = eps * F(math.sqrt(grad_norms))
        if project and norm > radius:
            pred = pred * (radius / norm)
        p = min(max(float(pred), lo), hi)
        shown.append(p)
        # freegrad_update_after_prediction
        d = dloss(loss, p, y)
        hw = F(h)
        g_dot_w = F(0.0)
        for i, v in feats:
            g_dot_w = g_dot_w + (d * F(v)) * freegrad_w(coords[i], eps)
        sq_clipped = F(0.0)
        for i, v in feats:
            c = coords[i]
            g = d * F(v)
            h1, ht = c[3], c[4]
            if h1 > 0:
                c[0] = freegrad_w(c, eps)
            if project and norm > radius and g_dot_w < 0:
                g = g - (g_dot_w * c[0]) / (norm * norm)
            if g == 0:
                continue
            clipped = g
            if h1 == 0:
                c[3] = c[4] = abs(g) if lip == 0 else lip
                c[2] = c[2] + hw * F(g * g)
            elif abs(g) > ht:
                clipped = clipped * (ht / abs(g))
                c[4] = abs(g)
            sq_clipped = sq_clipped + clipped * clipped
            if restart and c[4] / c[3] > c[5] + F(2.0):
                c[3] = c[4]
                c[1] = clipped + (hw - F(1.0)) * g
                c[2] = F(clipped * clipped) + (hw - F(1.0)) * F(g * g)
            else:
                c[1] = c[1] + (clipped + (hw - F(1.0)) * g)
                c[2] = c[2] + (F(clipped * clipped) + (hw - F(1.0)) * F(g * g))
            if ht > 0:
                c[5] = c[5] + (abs(clipped) / ht + (hw - F(1.0)) * abs(g) / c[4])
        clipped_norm = F(math.sqrt(sq_clipped))
        max_clipped = max(max_clipped, clipped_norm)
        if max_clipped > 0:
            grad_norms = grad_norms + hw * clipped_norm / max_clipped
    return np.array(shown), coords, total
