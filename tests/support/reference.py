"""Slow, obviously correct references for the compiled kernels (plain Python and NumPy, dense, eager).

Examples are tuples (label or None, importance, base, [(index, value), ...]).
"""

from __future__ import annotations

import math

import numpy as np


def loss_label(loss, y):
    """Labels are taken as they are (VW): hinge takes any real label, logistic mixes its two classes."""
    return y


def logistic_mixture(f, y):
    """A logistic quantity f(y') of a label y as VW's logistic takes it: s f(1) + (1 - s) f(-1), s = (y + 1) / 2
    (just f(y) for y = -1 or 1)."""
    if y in (-1.0, 1.0):
        return f(y)
    s = (y + 1.0) / 2.0
    return s * f(1.0) + (1.0 - s) * f(-1.0)


def loss_value(loss, p, y, tau, lo, hi):
    if loss == "squared":
        if lo <= p <= hi:
            return (p - y) ** 2
        edge = lo if p < lo else hi
        if y == edge:
            return 0.0
        return (y - edge) ** 2 + 2 * abs(y - edge) * abs(p - edge)
    if loss == "logistic":
        return logistic_mixture(lambda c: math.log1p(math.exp(-c * p)) if -c * p < 30
                                else -c * p + math.log1p(math.exp(c * p)), y)
    if loss == "hinge":
        return max(0.0, 1.0 - y * p)
    if loss == "expectile":     # VW's: squared loss, weighted tau (q) above the label, 1 - q below
        return loss_value("squared", p, y, tau, lo, hi) * (tau if p > y else 1.0 - tau)
    e = y - p
    return tau * e if e > 0 else (tau - 1.0) * e


def dloss(loss, p, y, tau):
    if loss == "squared":
        return 2.0 * (p - y)
    if loss == "logistic":
        return logistic_mixture(lambda c: -c / (1.0 + math.exp(c * p)), y)
    if loss == "hinge":
        return -y if y * p < 1.0 else 0.0
    if loss == "expectile":
        return 2.0 * (p - y) * (tau if p > y else 1.0 - tau)
    e = y - p
    if e == 0:
        return 0.0
    return -tau if e > 0 else 1.0 - tau


def T1(v, alpha, theta):
    """Langford, Li & Zhang 2009, eq. (6), one coordinate, written as in the paper."""
    if 0.0 <= v <= theta:
        return max(0.0, v - alpha)
    if -theta <= v <= 0.0:
        return min(0.0, v + alpha)
    return v


def eager_linear(examples, dim, loss="squared", tau=0.5, eta=1.0, power_t=0.5, initial_t=1.0,
                 algo="sgd", g=0.0, theta=math.inf, K=1):
    """Progressive predictions and final weights of plain SGD / eager truncated gradient.

    Truncated gradient: after the gradient step of every K-th learned example, EVERY weight is
    truncated with T1 by the gravity accrued since the previous truncation (g * rate * h per learned
    example). Predictions are clamped to [min label, max label] seen so far (0/0 at the start) for
    squared/hinge/quantile, and to [-50, 50] for logistic.
    """
    w = np.zeros(dim)
    eta0 = eta * initial_t ** power_t if initial_t > 0 else eta
    t = initial_t
    lo = hi = 0.0
    if loss == "logistic":
        lo, hi = -50.0, 50.0
    pending = 0.0
    learned = 0
    preds = []
    for label, h, base, feats in examples:
        y = None if label is None else loss_label(loss, label)
        if y is not None and loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        raw = base + sum(w[i] * v for i, v in feats)
        p = min(max(raw, lo), hi)
        preds.append(p)
        if y is None or h <= 0:
            continue
        t += h
        rate = eta0 * t ** -power_t
        grad = dloss(loss, p, y, tau)
        # VW updates only when the loss is > 0 (in float32: for a logistic label -1 or 1, while y p < 24 ln 2;
        # a mixed label's loss mixes both classes' and is then > 0 inside [-1, 1])
        if loss == "logistic" and abs(y) == 1.0 and y * p >= 24 * math.log(2) \
                or loss_value(loss, p, y, tau, lo, hi) <= 0:
            grad = 0.0
        for i, v in feats:
            w[i] -= rate * h * grad * v
        learned += 1
        if algo == "tg":
            pending += g * rate * h
            if learned % K == 0:
                w = np.array([T1(x, pending, theta) for x in w])
                pending = 0.0
    return np.array(preds), w


def to_csr(examples):
    """Examples -> arrays the kernels and the CLI-free tests use."""
    indptr = [0]
    idx, val, labels, weights, bases = [], [], [], [], []
    for label, h, base, feats in examples:
        for i, v in feats:
            idx.append(i)
            val.append(v)
        indptr.append(len(idx))
        labels.append(np.nan if label is None else label)
        weights.append(h)
        bases.append(base)
    return (np.array(indptr, np.int64), np.array(idx, np.uint32), np.array(val, np.float32),
            np.array(labels, np.float64), np.array(weights, np.float64), np.array(bases, np.float64))


# ----------------------------------------------------------------------------- VW's update rules

X_MIN = 1.084202e-19
X2_MIN = X_MIN * X_MIN
FLT_MAX = 3.4028234663852886e38


def lambert_w_exp_minus(x):
    """W(e^x) - x with VW's one-step approximation (vw-spec.md §1c; it is the specification here)."""
    if x >= 1.0:
        w = 0.86 * x + 0.01
        r = x - math.log(w) - w
    else:
        w = math.exp(0.8 * x - 0.65)
        r = 0.2 * x + 0.65 - w
    t = 1.0 + w
    u = 2.0 * t * (t + 2.0 * r / 3.0)
    return w * (1.0 + r / t * (u - r) / (u - 2.0 * r)) - x


def invariant_update(loss, p, y, tau, scale, ppu):
    """Karampatziakis & Langford's importance-invariant step per loss, as VW's get_update."""
    if loss == "squared":
        if scale * ppu < 1e-6:
            return 2.0 * (y - p) * scale
        return (y - p) * (1.0 - math.exp(-2.0 * scale * ppu)) / ppu
    if loss == "logistic":
        def one(c):
            d = math.exp(c * p)
            if scale * ppu < 1e-6 or c * p >= 24 * math.log(2):     # first order where c's loss is 0
                return c * scale / (1.0 + d)
            return -(c * lambert_w_exp_minus(scale * ppu + c * p + d) + p) / ppu
        return logistic_mixture(one, y)
    if loss == "hinge":
        if y * p >= 1.0:
            return 0.0
        err = 1.0 - y * p
        return y * scale if scale * ppu < err else y * err / ppu
    err = y - p
    if err == 0:
        return 0.0
    if err > 0:
        return tau * scale if tau * scale * ppu < err else err / ppu
    return (tau - 1.0) * scale if (tau - 1.0) * scale * ppu > err else err / ppu


def feature_rate(G, N, adaptive, normalized, power_t):
    """A weight's own rate factor: G^-power_t (adaptive) times the normalizer factor (normalized):
    N^-1 (adaptive) or N^-2 at power_t 0.5, else (N^2)^(power_t - 1). 0 while G or N is still 0."""
    r = 1.0
    if adaptive:
        if G <= 0:
            return 0.0
        r = 1.0 / math.sqrt(G) if power_t == 0.5 else G ** -power_t   # VW's sqrt path
    if normalized:
        if N <= 0:
            return 0.0
        if power_t == 0.5:
            r = r / N if adaptive else r / (N * N)
        else:
            r *= (N * N) ** (power_t - 1.0)
    return r


def eager_gd(examples, dim, loss="squared", tau=0.5, eta=0.5, power_t=0.5, initial_t=0.0,
             adaptive=True, normalized=True, invariant=True, algo="sgd", g=0.0, theta=math.inf, K=1,
             cumulative=False, reg="l1", l2=0.0):
    """Progressive predictions and final (w, G, N) of VW's gd update rule, dense and eager, written
    step by step from vw-spec.md §1c. Truncated gradient: after every K-th learned example EVERY
    weight j is truncated with T1 by its own rate r_j times the global gravity accrued since the last
    truncation (g * scale * m per learned example, m the global normalizer). With ``cumulative``
    (cumulative penalty) w holds raw weights that are never truncated; instead each weight that has
    been updated adds that amount to its penalty P, and predictions and the returned weights use
    w shrunk towards 0 by P.

    Rounding (``algo="rounding"``, Langford, Li & Zhang 2009, Section 3.1): after every K-th learned
    example every weight with |w| < theta is set to 0.

    FOBOS (``algo="fobos"``, Duchi & Singer 2009 eq. 3 with eta_{t+1/2} = eta_t): after every learned
    example EVERY weight j takes the prox of its own strength: l1 (eq. 6) soft-thresholds it by
    g * scale * m * r_j; l2sq multiplies it by (1 + l2 * scale * m)^(-r_j) (eq. 7 when r_j = 1).

    VW's own --l1 and --l2 (``algo="gravity"``, gd.cc): w holds raw weights; the weight in force is
    c * (w - sign(w) grav) where |w| > grav, else 0, sign(0) = -1 (VW's trunc_weight: sign(w) max(|w| -
    grav, 0) while grav >= 0; a mixed logistic label's invariant step can make grav < 0) and the
    prediction c * (base + sum of the truncated weights times x).
    When an example's step u (before m) is > 1e-8 in size: eta_bar = -u / loss' (0 when |loss'| <=
    1e-8), c *= 1 - l2 * eta_bar (when |loss'| > 1e-8), the step becomes u / c, grav += g * eta_bar.
    When c < 1e-9 or grav > 1e3 every w becomes its value in force and grav = 0, c = 1."""
    per_feature = adaptive or normalized
    eta0 = eta * initial_t ** power_t if initial_t > 0 and not per_feature else eta
    w = np.zeros(dim)
    G = np.full(dim, initial_t if adaptive else 0.0)
    N = np.zeros(dim)
    P = np.zeros(dim)

    grav, contraction = 0.0, 1.0

    def in_force(j):
        if algo == "gravity":       # VW's trunc_weight: w - sign(w) grav beyond |w| > grav, sign(0) = -1
            return (w[j] - (1.0 if w[j] > 0 else -1.0) * grav if abs(w[j]) > grav else 0.0) * contraction
        if not cumulative:
            return w[j]
        return math.copysign(max(abs(w[j]) - P[j], 0.0), w[j])

    S = T = initial_t if initial_t > 0 else 0.0
    m = 1.0
    t = initial_t
    lo = hi = 0.0
    if loss == "logistic":
        lo, hi = -50.0, 50.0
    pending = 0.0
    learned = 0
    preds = []
    for label, h, base, feats in examples:
        y = None if label is None else loss_label(loss, label)
        if y is not None and loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        raw = base + sum(in_force(i) * v for i, v in feats)
        if algo == "gravity":
            raw = base * contraction + sum(in_force(i) * v for i, v in feats)
        p = min(max(raw, lo), hi)
        preds.append(p)
        if y is None or h <= 0:
            continue
        t += h
        scale = eta0 * h * (1.0 if adaptive else t ** -power_t)
        # VW updates when the loss is > 0 in float32: for logistic, while y p < 24 ln 2
        positive = (y * p < 24 * math.log(2) if loss == "logistic" and y in (-1.0, 1.0)
                    else loss_value(loss, p, y, tau, lo, hi) > 0)
        if positive:
            d = dloss(loss, p, y, tau)
            if per_feature:
                ppu = 1.0
                if h * d * d != 0:
                    ppu = norm_x = 0.0
                    for i, v in feats:
                        x, x2 = v, v * v
                        if x2 < X2_MIN:
                            x, x2 = (X_MIN if x > 0 else -X_MIN), X2_MIN
                        if adaptive:
                            G[i] += h * d * d * x2
                        if normalized:
                            if abs(x) > N[i]:
                                if N[i] > 0:
                                    if power_t == 0.5:
                                        c = (N[i] / abs(x)) ** (1 if adaptive else 2)
                                    else:
                                        c = ((abs(x) / N[i]) ** 2) ** (power_t - 1.0)
                                    w[i] *= c
                                    P[i] *= c
                                N[i] = abs(x)
                            norm_x += 1.0 if x2 > FLT_MAX else x2 / N[i] ** 2
                        ppu += x2 * feature_rate(G[i], N[i], adaptive, normalized, power_t)
                    if normalized:
                        S += h * norm_x
                        T += h
                        if S == 0:
                            pass              # nothing seen to normalize by: m unchanged
                        elif power_t == 0.5:
                            m = math.sqrt(T / S) if adaptive else T / S
                        else:
                            m = (S / T) ** (power_t - 1.0)
                        ppu *= m
            else:
                ppu = sum(v * v for _, v in feats)
            u = invariant_update(loss, p, y, tau, scale, ppu) if invariant else -d * scale
            if algo == "gravity" and abs(u) > 1e-8:
                eta_bar = -u / d if abs(d) > 1e-8 else 0.0
                if abs(d) > 1e-8:
                    contraction *= 1.0 - l2 * eta_bar
                u /= contraction
                grav += g * eta_bar
            if u != 0:
                for i, v in feats:
                    w[i] += u * (m if normalized else 1.0) * v * feature_rate(
                        G[i], N[i], adaptive, normalized, power_t)
        learned += 1
        if algo == "gravity" and (contraction < 1e-9 or grav > 1e3):
            w = np.array([in_force(j) for j in range(dim)])
            grav, contraction = 0.0, 1.0
        if algo == "gravity":
            continue
        if algo == "fobos":
            step = scale * (m if normalized else 1.0)
            for j in range(dim):
                r = feature_rate(G[j], N[j], adaptive, normalized, power_t)
                if reg == "l1":
                    w[j] = math.copysign(max(abs(w[j]) - g * step * r, 0.0), w[j])
                else:
                    w[j] *= (1.0 + l2 * step) ** -r
        if algo == "rounding" and learned % K == 0:
            w[np.abs(w) < theta] = 0.0
        if algo == "tg":
            pending += g * scale * (m if normalized else 1.0)
            if learned % K == 0:
                for j in range(dim):
                    amount = pending * feature_rate(G[j], N[j], adaptive, normalized, power_t)
                    if not cumulative:
                        w[j] = T1(w[j], amount, theta)
                    elif w[j] != 0 or P[j] != 0:        # penalty accrues from the first update on
                        P[j] += amount
                pending = 0.0
    G = G - (initial_t if adaptive else 0.0)
    return np.array(preds), np.array([in_force(j) for j in range(dim)]), G, N


def project_l1_ball_dense(v, z):
    """Euclidean projection onto {||w||_1 <= z}, Figure 1 of Duchi et al. 2008 written plainly."""
    v = np.asarray(v, float)
    if np.abs(v).sum() <= z:
        return v.copy()
    mu = np.sort(np.abs(v))[::-1]
    cums = np.cumsum(mu)
    rho = max(j for j in range(1, len(mu) + 1) if mu[j - 1] - (cums[j - 1] - z) / j > 0)
    theta = (cums[rho - 1] - z) / rho
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0.0)


def plain_steps(examples, weights, preds, loss="squared", tau=0.5, eta=10.0, power_t=0.5,
                initial_t=1.0, invariant=False, batch=1):
    """Progressive validation on the plain schedule (``--sgd``'s rate_t = eta0 t^-power_t), shared by
    the dense references of the learners that take it: each example is predicted with the current
    ``weights()`` (clamped to the label range seen so far) into ``preds``; for each learned example
    yields (features, scale = rate_t * h, u) where the gradient step is u * x (the importance-invariant
    step with ``invariant``), u = 0 when the loss is 0 (no update, as VW). The clock t adds h per
    learned example; with mini-batches (batch > 1) it adds 1 per step instead, at the first learned
    example of each group of ``batch``, so every example of step k has t = initial_t + k."""
    eta0 = eta * initial_t ** power_t if initial_t > 0 else eta
    t = initial_t
    learned = 0
    lo = hi = 0.0
    if loss == "logistic":
        lo, hi = -50.0, 50.0
    for label, h, base, feats in examples:
        y = None if label is None else loss_label(loss, label)
        if y is not None and loss != "logistic":
            lo, hi = min(lo, y), max(hi, y)
        w = weights()
        p = min(max(base + sum(w[i] * v for i, v in feats), lo), hi)
        preds.append(p)
        if y is None or h <= 0:
            continue
        if batch == 1:
            t += h
        elif learned % batch == 0:
            t += 1.0
        learned += 1
        scale = eta0 * h * t ** -power_t
        u = 0.0
        if (y * p < 24 * math.log(2) if loss == "logistic" and y in (-1.0, 1.0)
                else loss_value(loss, p, y, tau, lo, hi) > 0):
            if invariant:
                u = invariant_update(loss, p, y, tau, scale, sum(v * v for _, v in feats))
            else:
                u = -dloss(loss, p, y, tau) * scale
        yield feats, scale, u


def eager_l1ball(examples, dim, z, batch=1, **schedule):
    """Projected SGD (Duchi et al. 2008, eq. 2), dense: after the gradient step of every learned
    example with a positive loss, the whole vector is projected onto the L1 ball of radius z. With
    batch B > 1 the steps of B consecutive learned examples are averaged into one step followed by
    one projection (an unfinished batch is applied at the end). ``schedule``: see ``plain_steps``."""
    w = np.zeros(dim)
    pending = np.zeros(dim)
    in_batch = 0
    preds = []
    for feats, _, u in plain_steps(examples, lambda: w, preds, batch=batch, **schedule):
        if u != 0:
            for i, v in feats:
                (pending if batch > 1 else w)[i] += u * v
            if batch == 1:
                w = project_l1_ball_dense(w, z)
        in_batch += 1
        if batch > 1 and in_batch == batch:
            w = project_l1_ball_dense(w + pending / in_batch, z)
            pending[:] = 0.0
            in_batch = 0
    if batch > 1 and in_batch:
        w = project_l1_ball_dense(w + pending / in_batch, z)
    return np.array(preds), w


def fobos_prox_dense(v, reg, strength, strength2=0.0):
    """The proximal step argmin_w 1/2 ||w - v||^2 + strength r(w) of Duchi & Singer 2009, Section 4,
    dense: eq. 6 (l1), eq. 7 (l2sq), both in turn (elastic: ``strength`` for l1, ``strength2`` for
    l2sq), the l2 norm's global factor, and eq. 8 (linf) through its dual, the L1-ball projection."""
    v = np.asarray(v, float)
    if reg == "l1":
        return np.sign(v) * np.maximum(np.abs(v) - strength, 0.0)
    if reg == "l2sq":
        return v / (1.0 + strength)
    if reg == "elastic":
        return np.sign(v) * np.maximum(np.abs(v) - strength, 0.0) / (1.0 + strength2)
    if reg == "l2":
        norm = math.sqrt(float(np.dot(v, v)))
        return np.zeros_like(v) if norm <= strength else (1.0 - strength / norm) * v
    if strength <= 0.0:
        return v.copy()
    return v - project_l1_ball_dense(v, strength)          # linf


def eager_fobos(examples, dim, reg, lam, lam2=0.0, batch=1, **schedule):
    """FOBOS on the plain schedule, dense and eager (Duchi & Singer 2009, eqs. 2-3, eta_{t+1/2} =
    eta_t): after the gradient step of every learned example the whole vector takes the prox with
    strength lam * rate_t * h (elastic: lam for l1, lam2 for l2sq). With batch B > 1 the steps of B
    consecutive learned examples are averaged into one step, followed by one prox whose strength uses
    the mean of their rate_t * h (an unfinished batch is applied at the end). ``schedule``: see
    ``plain_steps``."""
    w = np.zeros(dim)
    pending = np.zeros(dim)
    in_batch = 0
    scales = 0.0
    preds = []
    for feats, scale, u in plain_steps(examples, lambda: w, preds, batch=batch, **schedule):
        for i, v in feats:
            (pending if batch > 1 else w)[i] += u * v
        if batch == 1:
            w = fobos_prox_dense(w, reg, lam * scale, lam2 * scale)
            continue
        in_batch += 1
        scales += scale
        if in_batch == batch:
            s = scales / in_batch
            w = fobos_prox_dense(w + pending / in_batch, reg, lam * s, lam2 * s)
            pending[:] = 0.0
            in_batch = 0
            scales = 0.0
    if batch > 1 and in_batch:
        s = scales / in_batch
        w = fobos_prox_dense(w + pending / in_batch, reg, lam * s, lam2 * s)
    return np.array(preds), w


def eager_subgradient(examples, dim, lam, **schedule):
    """The L1-regularized subgradient method (Langford, Li & Zhang 2009, Section 3.2, eq. 5), dense:
    for every learned example, w <- w - eta_t grad L - eta_t lam sgn(w), sgn(0) = 0, the sign taken
    before the step, for every coordinate. ``schedule``: see ``plain_steps``."""
    w = np.zeros(dim)
    preds = []
    for feats, scale, u in plain_steps(examples, lambda: w, preds, **schedule):
        w = w - lam * scale * np.sign(w)
        for i, v in feats:
            w[i] += u * v
    return np.array(preds), w


def eager_csoaa(examples, K, dim, eta=0.5):
    """VW's cost-sensitive one-against-all (``--csoaa K``, csoaa.cc) over its default rule (adaptive,
    normalized, invariant; squared loss), dense and eager, written from vw-spec.md §1c and csoaa.cc:
    one regressor per class (its own w, G, N and normalizer sums), the prediction bounds shared and
    widened by every given cost in turn (VW's set_minmax ignores FLT_MAX), each cost learned with importance 1 and the clamped score, the class of least raw score
    among the label's classes (all K for an example without costs), ties to the lower class.

    ``examples``: (costs [(class 1..K, cost or None)], feats [(i, v)]). Returns (the predicted
    classes, each example's raw scores {class: score}, w (K, dim), the average loss: the predicted
    class's cost less the least cost, 0 for an example without a cost, each example weighing 1 but a
    learned one whose last class has no cost, which weighs 0 as in VW)."""
    w = np.zeros((K, dim))
    G = np.zeros((K, dim))
    N = np.zeros((K, dim))
    S = np.zeros(K)
    T = np.zeros(K)
    m = np.ones(K)
    lo = hi = 0.0
    classes, scores, total, weight = [], [], 0.0, 0.0
    for costs, feats in examples:
        raw = {}
        given = [x for _, x in costs if x is not None]
        for c, x in costs:
            k = c - 1
            if x is not None:
                lo, hi = min(lo, x), max(hi, x)
            raw[c] = sum(w[k, i] * v for i, v in feats)
            if x is None or not given:      # a test example is predicted only
                continue
            p = min(max(raw[c], lo), hi)
            if loss_value("squared", p, x, 0.5, lo, hi) <= 0:
                continue
            d = dloss("squared", p, x, 0.5)
            ppu = norm_x = 0.0
            for i, v in feats:
                G[k, i] += d * d * v * v
                if abs(v) > N[k, i]:
                    if N[k, i] > 0:
                        w[k, i] *= N[k, i] / abs(v)
                    N[k, i] = abs(v)
                norm_x += v * v / N[k, i] ** 2
                ppu += v * v * feature_rate(G[k, i], N[k, i], True, True, 0.5)
            S[k] += norm_x
            T[k] += 1.0
            m[k] = math.sqrt(T[k] / S[k])
            u = invariant_update("squared", p, x, 0.5, eta, ppu * m[k])
            for i, v in feats:
                w[k, i] += u * m[k] * v * feature_rate(G[k, i], N[k, i], True, True, 0.5)
        if not costs:
            raw = {c: sum(w[c - 1, i] * v for i, v in feats) for c in range(1, K + 1)}
        best = min(raw, key=lambda c: (raw[c], c))
        h = 0.0 if costs and costs[-1][1] is None else 1.0
        if given:       # VW's average loss is over the labeled examples' weight
            weight += h
            total += h * ( dict((c, FLT_MAX if x is None else x) for c, x in costs)[best] - min(given))   # the last wins
        classes.append(best)
        scores.append(raw)
    return classes, scores, w, total / weight


def eager_multilabel(examples, K, dim, eta=0.5):
    """VW's multilabel one-against-all (``--multilabel_oaa K``, multilabel_oaa.cc) over its default rule
    (adaptive, normalized, invariant; squared loss), dense and eager: class i = 0..K-1 in turn learns
    +1 when it is the next class of the label set (walked in its order), else -1, with the clamped
    score as the prediction (the shared bounds widened by the label first) and its own w, G, N and
    normalizer sums; a test example (no set) is predicted only.

    ``examples``: (label set [classes] or [], feats [(i, v)]). Returns (the predicted sets: the classes
    of positive clamped score, each example's clamped scores, w (K, dim), the average loss: the size
    of the symmetric difference of the sets over the labeled examples)."""
    w = np.zeros((K, dim))
    G = np.zeros((K, dim))
    N = np.zeros((K, dim))
    S = np.zeros(K)
    T = np.zeros(K)
    m = np.ones(K)
    lo = hi = 0.0
    sets, scores, total, labeled = [], [], 0.0, 0
    for given, feats in examples:
        nxt = 0
        row = []
        for k in range(K):
            y = -1.0
            if nxt < len(given) and given[nxt] == k:
                y, nxt = 1.0, nxt + 1
            if given:
                lo, hi = min(lo, y), max(hi, y)
            p = min(max(sum(w[k, i] * v for i, v in feats), lo), hi)
            row.append(p)
            if not given or loss_value("squared", p, y, 0.5, lo, hi) <= 0:
                continue
            d = dloss("squared", p, y, 0.5)
            ppu = norm_x = 0.0
            for i, v in feats:
                G[k, i] += d * d * v * v
                if abs(v) > N[k, i]:
                    if N[k, i] > 0:
                        w[k, i] *= N[k, i] / abs(v)
                    N[k, i] = abs(v)
                norm_x += v * v / N[k, i] ** 2
                ppu += v * v * feature_rate(G[k, i], N[k, i], True, True, 0.5)
            S[k] += norm_x
            T[k] += 1.0
            m[k] = math.sqrt(T[k] / S[k])
            u = invariant_update("squared", p, y, 0.5, eta, ppu * m[k])
            for i, v in feats:
                w[k, i] += u * m[k] * v * feature_rate(G[k, i], N[k, i], True, True, 0.5)
        predicted = [k for k in range(K) if row[k] > 0]
        if given:
            labeled += 1
            total += len(set(predicted) ^ set(given))
        sets.append(predicted)
        scores.append(row)
    return sets, scores, w, total / max(labeled, 1)


def eager_ldf(groups, dim, kind="m", eta=0.5):
    """VW's cost-sensitive learning with label-dependent features (``--csoaa_ldf m|mc``, ``--wap_ldf``;
    csoaa_ldf.cc) over its default rule (adaptive, normalized, invariant; squared loss), dense and
    eager, written from csoaa_ldf.cc and vw-spec.md §1c: ONE weight vector (w, G, N, the normalizer
    sums S, T), the prediction bounds widened by every label learned.

    ``groups``: multi-line examples, each a list of actions (class, cost or None, feats [(i, v)]: the
    action's features with its shared line's). An example is predicted first: each action's raw
    score, the class of the least (the first such); its loss is the predicted action's cost. It is
    learned when every action has a cost, action by action, each step predicting again with the
    weights as they are: m towards the cost (importance 1); mc towards -1 with importance max - min
    for a least cost, else +1 with importance cost - min; wap, for each later action whose wap value
    differs (by 1e-6 or more), towards -1 (its cost lower) or +1 over the features of the first
    followed by those of the second negated, importance the values' difference. Returns (predicted
    classes, raw scores per example, w, average loss over the learned examples)."""
    w, G, N = np.zeros(dim), np.zeros(dim), np.zeros(dim)
    norm = {"S": 0.0, "T": 0.0}
    bounds = [0.0, 0.0]

    def step(feats, y, h):
        bounds[0], bounds[1] = min(bounds[0], y), max(bounds[1], y)
        p = min(max(sum(w[i] * v for i, v in feats), bounds[0]), bounds[1])
        if h == 0.0 or loss_value("squared", p, y, 0.5, *bounds) <= 0:
            return
        d = dloss("squared", p, y, 0.5)
        ppu = norm_x = 0.0
        for i, v in feats:      # per entry, as VW: a repeated index adds twice, its rate as it is then
            G[i] += h * d * d * v * v
            if abs(v) > N[i]:
                if N[i] > 0:
                    w[i] *= N[i] / abs(v)
                N[i] = abs(v)
            norm_x += v * v / N[i] ** 2
            ppu += v * v * feature_rate(G[i], N[i], True, True, 0.5)
        norm["S"] += h * norm_x
        norm["T"] += h
        m = math.sqrt(norm["T"] / norm["S"])
        u = invariant_update("squared", p, y, 0.5, eta * h, ppu * m)
        for i, v in feats:
            w[i] += u * m * v * feature_rate(G[i], N[i], True, True, 0.5)

    classes, scores, total, weight = [], [], 0.0, 0.0
    for actions in groups:
        raw = [sum(w[i] * v for i, v in feats) for _, _, feats in actions]
        best = actions[min(range(len(actions)), key=lambda k: (raw[k], k))][0]
        classes.append(best)
        scores.append(raw)
        if any(x is None for _, x, _ in actions):
            continue
        weight += 1.0
        total += next(x for c, x, _ in actions if c == best)
        costs = [x for _, x, _ in actions]
        lo, hi = min(costs), max(costs)
        if kind == "wap":
            order = sorted(range(len(costs)), key=lambda k: costs[k])
            value = [0.0] * len(costs)
            for j in range(1, len(order)):
                value[order[j]] = value[order[j - 1]] + (costs[order[j]] - costs[order[j - 1]]) / j
        for k, (_, x, feats) in enumerate(actions):
            if kind == "m":
                step(feats, x, 1.0)
            elif kind == "mc":
                step(feats, -1.0 if x <= lo else 1.0, hi - lo if x <= lo else x - lo)
            else:
                for k2 in range(k + 1, len(actions)):
                    gap = abs(value[k2] - value[k])
                    if gap >= 1e-6:
                        pair = feats + [(i, -v) for i, v in actions[k2][2]]
                        step(pair, -1.0 if x < costs[k2] else 1.0, gap)
    return classes, scores, w, total / weight if weight else 0.0
