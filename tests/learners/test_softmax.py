"""The softmax learner (streamlearn.learners.softmax): each row prox against a slow reference, the
composition property that makes the lazy catch-up exact (Duchi & Singer 2009, Proposition 4), and
the compiled kernel against a dense, eager NumPy softmax regression -- step by step for every
regularizer under the plain schedule and the per-row rates, and on random sparse streams whose rows
go untouched for many steps (lazy == eager)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import optimize

from support.compare import allclose
from support.kernels import kernel_arrays
from support.reference import X2_MIN, X_MIN, FLT_MAX, feature_rate
from streamlearn import learners
from streamlearn.config import train_config
from streamlearn.errors import OptionError
from streamlearn.learners import softmax
from streamlearn.core import prox as prox_pieces
from streamlearn.core import state as S
from streamlearn.core.multiclass import class_width

REGS = ["l1", "l2sq", "elastic", "l1l2", "l1linf"]
#: the proxes on a row (``streamlearn.core.prox``) of the regularizers that have one
ROW_PROX = {"l1": prox_pieces.l1_row, "l2sq": prox_pieces.l2sq_row, "l1l2": prox_pieces.l1l2_row,
            "l1linf": prox_pieces.l1linf_row}
PLAIN = {"sgd": True}
RULES = [PLAIN, {}, {"adaptive": True}, {"normalized": True}]     # {}: adaptive and normalized


# ----------------------------------------------------------------------------- slow references

def linf_theta_bisect(a, z):
    """theta with sum_k max(a_k - theta, 0) = z (a >= 0, sum a > z > 0) by bisection on
    [0, max a], vectorized over the rows of a 2-D ``a`` (z one value per row)."""
    a = np.atleast_2d(a)
    z = np.broadcast_to(np.asarray(z, float), a.shape[:1])
    lo = np.zeros(a.shape[0])
    hi = a.max(axis=1)
    for _ in range(110):
        mid = 0.5 * (lo + hi)
        over = np.maximum(a - mid[:, None], 0.0).sum(axis=1) > z
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    return 0.5 * (lo + hi)


def prox_rows(M, reg, strength, l2_factor=None):
    """The prox of every row of M (a copy) with per-row strengths (a vector): l1 soft threshold,
    l2sq the per-row factor given, l1l2 the radial shrink, l1linf the cap at the bisection theta."""
    M = M.copy()
    a = np.asarray(strength, float)
    if reg == "l1":
        return np.sign(M) * np.maximum(np.abs(M) - a[:, None], 0.0)
    if reg == "l2sq":
        return M * l2_factor[:, None]
    if reg == "l1l2":
        norm = np.sqrt((M * M).sum(axis=1))
        keep = norm > a
        M[~keep] = 0.0
        M[keep] *= (1.0 - a[keep] / norm[keep])[:, None]
        return M
    assert reg == "l1linf"
    A = np.abs(M)
    l1 = A.sum(axis=1)
    keep = l1 > a
    M[~keep] = 0.0
    if keep.any():
        theta = linf_theta_bisect(A[keep], a[keep])
        M[keep] = np.sign(M[keep]) * np.minimum(A[keep], theta[:, None])
    return M


def eager_softmax(examples, bits, K, reg, lam1=0.0, lam2=0.0, eta=0.5, power_t=0.5, initial_t=0.0,
                  adaptive=False, normalized=False):
    """Softmax regression with FOBOS on the rows, dense and eager, transcribed plainly: W is a
    (rows, K) matrix (row of feature h: ((h*W) & mask) / W, so colliding features share a row),
    each learned example takes the gradient step with one rate per row (G_row, N_row and the global
    normalizer m as VW's gd computes them per weight), then EVERY row takes the prox of strength
    lambda * scale * m * r_row. Returns the per-example scores and W after every example."""
    width = class_width(K)
    size = 1 << bits
    mask = size - 1
    rows = size // width
    per_feature = adaptive or normalized
    eta0 = eta * initial_t ** power_t if initial_t > 0 and not per_feature else eta
    g0 = initial_t if adaptive else 0.0
    M = np.zeros((rows, K))
    G = np.zeros(rows)
    N = np.zeros(rows)
    Ssum = Tsum = initial_t if initial_t > 0 else 0.0
    m = 1.0
    t = initial_t

    def rate(j):
        return feature_rate(G[j] + g0, N[j], adaptive, normalized, power_t) if per_feature else 1.0

    scores_out, after = [], []
    for label, h, base, feats in examples:
        rs = [((i * width) & mask) // width for i, _ in feats]
        xs = [float(v) for _, v in feats]
        scores = np.full(K, float(base))
        for r, x in zip(rs, xs):
            scores += M[r] * x
        scores_out.append(scores.copy())
        if label is None or h <= 0:
            after.append(M.copy())
            continue
        p = np.exp(scores - scores.max())
        p /= p.sum()
        d = p.copy()
        d[int(label) - 1] -= 1.0
        gsum = float(d @ d)
        t += h
        scale = eta0 * h * (1.0 if adaptive else t ** -power_t)
        if gsum > 0:
            if per_feature:
                norm_x = 0.0
                for r, x in zip(rs, xs):
                    x2 = x * x
                    if x2 < X2_MIN:
                        x, x2 = (X_MIN if x > 0 else -X_MIN), X2_MIN
                    if adaptive:
                        G[r] += h * gsum * x2
                    if normalized:
                        if abs(x) > N[r]:
                            if N[r] > 0:
                                if power_t == 0.5:
                                    c = (N[r] / abs(x)) ** (1 if adaptive else 2)
                                else:
                                    c = ((abs(x) / N[r]) ** 2) ** (power_t - 1.0)
                                M[r] *= c
                            N[r] = abs(x)
                        norm_x += 1.0 if x2 > FLT_MAX else x2 / N[r] ** 2
                if normalized:
                    Ssum += h * norm_x
                    Tsum += h
                    if Ssum > 0:
                        if power_t == 0.5:
                            m = math.sqrt(Tsum / Ssum) if adaptive else Tsum / Ssum
                        else:
                            m = (Ssum / Tsum) ** (power_t - 1.0)
            for r, x in zip(rs, xs):
                M[r] -= scale * (m if normalized else 1.0) * rate(r) * x * d
        step = scale * (m if normalized else 1.0)
        rates = np.array([rate(j) for j in range(rows)])
        if reg == "elastic":
            M = np.sign(M) * np.maximum(np.abs(M) - lam1 * step, 0.0) / (1.0 + lam2 * step)
        elif reg == "l2sq":
            M = prox_rows(M, reg, None, (1.0 + lam2 * step) ** -rates)
        else:
            M = prox_rows(M, reg, lam1 * step * rates)
        after.append(M.copy())
    return scores_out, after


# ----------------------------------------------------------------------------- the kernel

def to_arrays(examples):
    indptr = np.zeros(len(examples) + 1, np.int64)
    idx, val = [], []
    for e, (_, _, _, feats) in enumerate(examples):
        for i, v in feats:
            idx.append(i)
            val.append(v)
        indptr[e + 1] = len(idx)
    labels = np.array([np.nan if y is None else y for y, _, _, _ in examples], np.float64)
    weights = np.array([h for _, h, _, _ in examples], np.float64)
    bases = np.array([b for _, _, b, _ in examples], np.float64)
    return indptr, np.array(idx, np.uint32), np.array(val, np.float32), labels, weights, bases


class Run:
    """The softmax kernel over a stream, set up through the registry (train_config, make_settings,
    make_state, make_counters) like a real run."""

    def __init__(self, examples, bits, K, reg, rule, eta=0.5, power_t=0.5, initial_t=None, lam1=0.0, lam2=0.0):
        opts = dict(algo="softmax", loss="softmax", oaa=K, indexing=1, bits=bits, reg=reg, learning_rate=eta,
                    power_t=power_t, **rule)
        if initial_t is not None:
            opts["initial_t"] = initial_t
        if reg in ("l1l2", "l1linf"):
            opts["lam"] = lam1
        else:
            if reg in ("l1", "elastic"):
                opts["l1"] = lam1
            if reg in ("l2sq", "elastic"):
                opts["l2"] = lam2
        self.cfg = train_config(opts)
        self.K, self.width, self.bits = K, class_width(K), bits
        self.prm, self.iprm, self.st, self.ctr = kernel_arrays(self.cfg)
        self.table = np.zeros((1 << bits, learners.layout(self.cfg).columns))
        self.arrays = to_arrays(examples)
        self.nfeat = np.diff(self.arrays[0]).astype(np.int64)
        self.preds = np.zeros((len(examples), K + 2))

    def block(self, a, b):
        indptr, idx, val, labels, weights, bases = self.arrays
        return learners.block_kernel(self.cfg)((indptr, idx, val, labels, weights, bases, self.nfeat, self.preds),
                                               (self.table, self.prm, self.iprm, self.st, self.ctr), a, b)

    def weights(self):
        """The (rows, K) weights in force (finalized on a copy, so the run stays lazy), and the
        unused slots of every row."""
        table = self.table.copy()
        learners.finalize(self.cfg, table, self.prm, self.iprm, self.st.copy())
        w = table[:, 0].reshape(-1, self.width)
        return w[:, :self.K], w[:, self.K:]

    def scores(self, e):
        return self.preds[e, 1:self.K + 1]


def fixed_stream(rng, n, bits, K, nfeat=3, hot=None):
    """n examples over 2^bits indices: nfeat features each (values in +-[0.1, 2]), labels 1..K,
    a few unlabeled and zero-importance examples; ``hot`` restricts most features to a few indices
    so that the others go untouched for long stretches."""
    out = []
    for e in range(n):
        k = int(rng.integers(1, nfeat + 1))
        if hot is not None and e % 5:
            ids = rng.choice(hot, size=k)
        else:
            ids = rng.integers(0, 1 << bits, size=k)
        vals = rng.uniform(0.1, 2.0, size=k) * rng.choice([-1.0, 1.0], size=k)
        feats = [(int(i), float(np.float32(v))) for i, v in zip(ids, vals)]
        label = None if e % 11 == 10 else float(rng.integers(1, K + 1))
        h = 0.0 if e % 13 == 12 else float(rng.choice([1.0, 1.0, 0.5, 2.0]))
        out.append((label, h, float(rng.choice([0.0, 0.0, 0.25])), feats))
    return out


STRENGTHS = {"l1": (0.05, 0.0), "l2sq": (0.0, 0.3), "elastic": (0.03, 0.2), "l1l2": (0.08, 0.0),
             "l1linf": (0.08, 0.0)}


RULE_NAMES = ["sgd", "adaptive-normalized", "adaptive", "normalized"]
#: every regularizer under every rule, but elastic (the plain schedule only)
CASES = [pytest.param(reg, rule, id=f"{reg}-{name}") for reg in REGS for rule, name in zip(RULES, RULE_NAMES)
         if reg != "elastic" or rule == PLAIN]


@pytest.mark.parametrize("reg, rule", CASES)
def test_kernel_equals_dense_eager_step_by_step(reg, rule):
    """After every example: the scores the kernel predicted and the weights in force (finalized on
    a copy) equal the eager dense reference's; unused slots of a row stay 0."""
    rng = np.random.default_rng(10 * REGS.index(reg) + RULES.index(rule))
    bits, K = 6, 3
    examples = fixed_stream(rng, 60, bits, K, hot=[1, 2, 3, 40])
    lam1, lam2 = STRENGTHS[reg]
    eta = 0.5 if rule != PLAIN else 2.0
    run = Run(examples, bits, K, reg, rule, eta=eta, lam1=lam1, lam2=lam2)
    ref_scores, ref_w = eager_softmax(examples, bits, K, reg, lam1, lam2, eta=eta, power_t=0.5,
                                      initial_t=run.cfg.initial_t, adaptive=run.cfg.adaptive,
                                      normalized=run.cfg.normalized)
    for e in range(len(examples)):
        assert run.block(e, e + 1) == e + 1
        assert allclose(run.scores(e), ref_scores[e]), (e, run.scores(e), ref_scores[e])
        w, unused = run.weights()
        assert allclose(w, ref_w[e]), (e, np.abs(w - ref_w[e]).max())
        assert not unused.any()
    if reg in ("l1", "l1l2", "l1linf"):     # the regularizer did something: rows exactly 0
        w, _ = run.weights()
        touched = {((i * run.width) & ((1 << bits) - 1)) // run.width for ex in examples for i, _ in ex[3]}
        assert any(not w[r].any() for r in touched)


@pytest.mark.parametrize("K", [2, 5])
def test_kernel_power_t_and_initial_t(K):
    """power_t != 0.5 (the general rate forms) and initial_t > 0 (g0, the normalizer's start)."""
    rng = np.random.default_rng(K)
    bits = 6
    examples = fixed_stream(rng, 40, bits, K)
    for rule in RULES:
        run = Run(examples, bits, K, "l1l2", rule, eta=0.7, power_t=0.3, initial_t=2.0, lam1=0.02)
        assert run.block(0, len(examples)) == len(examples)
        ref_scores, ref_w = eager_softmax(examples, bits, K, "l1l2", 0.02, eta=0.7, power_t=0.3, initial_t=2.0,
                                          adaptive=run.cfg.adaptive, normalized=run.cfg.normalized)
        assert allclose(run.preds[:, 1:K + 1], np.array(ref_scores)), rule
        assert allclose(run.weights()[0], ref_w[-1]), rule


def test_elastic_rebase_is_exact():
    """Starting the elastic cumulative just below the rebase point (equivalent on a fresh table):
    the run crosses it (every row caught up, the cumulatives restarted) and still equals eager."""
    rng = np.random.default_rng(7)
    bits, K = 5, 4
    examples = fixed_stream(rng, 30, bits, K)
    run = Run(examples, bits, K, "elastic", PLAIN, eta=2.0, lam1=0.01, lam2=0.5)
    run.st[S.S_FOBOS_CUM] = prox_pieces.ELASTIC_REBASE - 1.0
    _, ref_w = eager_softmax(examples, bits, K, "elastic", 0.01, 0.5, eta=2.0, initial_t=run.cfg.initial_t)
    for e in range(len(examples)):
        run.block(e, e + 1)
        assert allclose(run.weights()[0], ref_w[e]), e
    assert run.st[S.S_FOBOS_CUM] < 10.0      # it did rebase


# ----------------------------------------------------------------------------- lazy == eager

FEATURE_VALUES = st.one_of(st.floats(-2.0, -0.05), st.floats(0.05, 2.0)).map(lambda v: float(np.float32(v)))


@st.composite
def sparse_streams(draw, bits, K):
    """Streams where each example touches 1-3 of the 2^bits indices, most often a few hot ones, so
    the other rows go untouched for many steps."""
    hot = draw(st.lists(st.integers(0, (1 << bits) - 1), min_size=1, max_size=3))
    index = st.one_of(st.sampled_from(hot), st.integers(0, (1 << bits) - 1))
    n = draw(st.integers(1, 30))
    out = []
    for _ in range(n):
        feats = draw(st.lists(st.tuples(index, FEATURE_VALUES), min_size=1, max_size=3))
        label = draw(st.one_of(st.none(), st.integers(1, K).map(float), st.integers(1, K).map(float)))
        h = draw(st.sampled_from([1.0, 1.0, 0.5, 2.0, 0.0]))
        out.append((label, h, draw(st.sampled_from([0.0, 0.0, 0.25])), feats))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), reg=st.sampled_from(REGS), rule=st.sampled_from(RULES),
       K=st.sampled_from([2, 3, 4, 6]), lam=st.sampled_from([0.0, 0.01, 0.1, 0.6]),
       lam2=st.sampled_from([0.05, 0.5]), eta=st.sampled_from([0.1, 0.5, 3.0]))
def test_lazy_softmax_equals_eager(data, reg, rule, K, lam, lam2, eta):
    if reg == "elastic":
        rule = PLAIN
    bits = data.draw(st.integers(class_width(K).bit_length() - 1, 6))
    examples = data.draw(sparse_streams(bits, K))
    splits = sorted(set(data.draw(st.lists(st.integers(1, len(examples)), max_size=3))) | {len(examples)})
    run = Run(examples, bits, K, reg, rule, eta=eta, lam1=lam, lam2=lam2)
    a = 0
    for b in splits:
        assert run.block(a, b) == b
        a = b
    ref_scores, ref_w = eager_softmax(examples, bits, K, reg, lam, lam2, eta=eta, initial_t=run.cfg.initial_t,
                                      adaptive=run.cfg.adaptive, normalized=run.cfg.normalized)
    assert allclose(run.preds[:, 1:K + 1], np.array(ref_scores))
    w, unused = run.weights()
    assert allclose(w, ref_w[-1])
    assert not unused.any()
    # finalizing for real (twice) gives the same weights: the catch-up is idempotent
    learners.finalize(run.cfg, run.table, run.prm, run.iprm, run.st)
    learners.finalize(run.cfg, run.table, run.prm, run.iprm, run.st)
    assert allclose(run.table[:, 0].reshape(-1, run.width)[:, :K], ref_w[-1])


# ----------------------------------------------------------------------------- the proxes

def prox(v, reg, a):
    w = np.array(v, float)
    ROW_PROX[reg](w, a, np.empty(len(w)))
    return w


ROWS = st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=8).map(np.array)
STRENGTH = st.floats(0.0, 6.0)


def l1l2_objective(x, v, a):
    return 0.5 * float(np.sum((x - v) ** 2)) + a * float(np.linalg.norm(x))


def l1linf_objective(x, v, a):
    return 0.5 * float(np.sum((x - v) ** 2)) + a * float(np.abs(x).max())


@settings(max_examples=60, deadline=None)
@given(v=ROWS, a=STRENGTH)
def test_l1l2_prox_is_the_minimizer(v, a):
    """The closed form equals the minimizer of 1/2 ||x - v||^2 + a ||x||_2: along v (the radial
    problem solved by scipy's bounded scalar minimizer), and no better point found by scipy's
    Powell search over the whole space."""
    x = prox(v, "l1l2", a)
    norm = float(np.linalg.norm(v))
    if norm > 0:
        s = optimize.minimize_scalar(lambda s: 0.5 * (s - norm) ** 2 + a * s, bounds=(0.0, norm), method="bounded",
                                     options={"xatol": 1e-12}).x
        assert np.allclose(x, s * v / norm, atol=1e-6)
    best = optimize.minimize(l1l2_objective, v, args=(v, a), method="Powell",
                             options={"xtol": 1e-10, "ftol": 1e-14})
    assert l1l2_objective(x, v, a) <= best.fun + 1e-9


@settings(max_examples=60, deadline=None)
@given(v=ROWS, a=STRENGTH)
def test_l1linf_prox_is_the_minimizer(v, a):
    """v - Proj_{L1 ball of radius a}(v) minimizes 1/2 ||x - v||^2 + a ||x||_inf (eq. 8): its
    theta equals a bisection on sum_k [|v_k| - theta]_+ = a, and no better point is found by scipy."""
    x = prox(v, "l1linf", a)
    A = np.abs(v)
    if A.sum() <= a:
        assert not x.any()
    elif a > 0:
        theta = float(linf_theta_bisect(A, a)[0])
        assert math.isclose(prox_pieces.linf_threshold(v.astype(float), a, np.empty(len(v))), theta, rel_tol=1e-12,
                            abs_tol=1e-12)
        assert np.allclose(x, np.sign(v) * np.minimum(A, theta), atol=1e-12)
        assert math.isclose(np.maximum(A - np.abs(x).max(), 0).sum(), a, rel_tol=1e-9, abs_tol=1e-9)
    best = optimize.minimize(l1linf_objective, v, args=(v, a), method="Powell",
                             options={"xtol": 1e-10, "ftol": 1e-14})
    assert l1linf_objective(x, v, a) <= best.fun + 1e-9


def test_prox_edge_cases():
    assert not prox([3.0, -4.0], "l1l2", 5.0).any()                 # ||v||_2 = a: the zero row
    assert np.allclose(prox([3.0, -4.0], "l1l2", 2.5), [1.5, -2.0])
    assert not prox([1.0, -2.0, 0.5], "l1linf", 3.5).any()          # ||v||_1 = a: the zero row
    assert np.allclose(prox([1.0, -2.0, 0.5], "l1linf", 1.0), [1.0, -1.0, 0.5])
    assert np.allclose(prox([3.0, -3.0, 1.0], "l1linf", 2.0), [2.0, -2.0, 1.0])   # ties
    assert np.allclose(prox([1.0, -0.2], "l1", 0.5), [0.5, 0.0])
    assert np.allclose(prox([1.0, -0.2], "l2sq", math.log(2.0)), [0.5, -0.1])
    assert np.allclose(prox([1.0, -0.2], "l1linf", 0.0), [1.0, -0.2])


@settings(max_examples=200, deadline=None)
@given(v=ROWS, a=STRENGTH, b=STRENGTH, reg=st.sampled_from(["l1", "l2sq", "l1l2", "l1linf"]))
def test_prox_steps_compose(v, a, b, reg):
    """Proposition 4 (the module docstring proves it for each): prox_b(prox_a(v)) = prox_{a+b}(v),
    what makes paying a row's missed steps in one catch-up exact."""
    assert np.allclose(prox(prox(v, reg, a), reg, b), prox(v, reg, a + b), rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- spec and options

def test_registry_and_options():
    cfg = train_config(dict(algo="softmax", loss="softmax", oaa=3, reg="l1linf", lam=0.1, bits=4))
    assert cfg.adaptive and cfg.normalized and not cfg.invariant
    assert learners.layout(cfg).names == ("w", "g", "n", "last")
    prm, iprm = learners.make_settings(cfg, train=True)
    assert prm[S.P_LAMBDA] == 0.1
    for reg, opts in {"l1": dict(l1=0.1), "l2sq": dict(reg="l2sq", l2=0.1), "elastic": dict(l1=0.1, l2=0.1),
                      "l1l2": dict(reg="l1l2", lam=0.1), "l1linf": dict(reg="l1linf", lam=0.1)}.items():
        # the regularizer is chosen with the kernel, once (``softmax.KERNELS``)
        one = train_config(dict(algo="softmax", loss="softmax", oaa=3, bits=4, **opts))
        assert one.reg == reg and learners.block_kernel(one) is softmax.KERNELS[reg].kernel
    assert set(softmax.KERNELS) == set(REGS)
    assert (iprm[S.I_CLASSES], iprm[S.I_CLASS_W]) == (3, 4)
    assert "l1linf" in learners.get("softmax").describe(cfg)
    elastic = train_config(dict(algo="softmax", loss="softmax", oaa=3, l1=0.1, l2=0.2, bits=4))
    assert elastic.reg == "elastic" and not elastic.per_feature
    assert learners.layout(elastic).names == ("w", "last", "last2")
    with pytest.raises(OptionError, match="--l2 does not apply to --algo softmax --reg l1l2"):
        train_config(dict(algo="softmax", loss="softmax", oaa=3, reg="l1l2", l2=0.1))
    with pytest.raises(OptionError, match="--adaptive does not apply"):
        train_config(dict(algo="softmax", loss="softmax", oaa=3, l1=0.1, l2=0.2, adaptive=True))
    with pytest.raises(OptionError, match="--invariant does not apply"):
        train_config(dict(algo="softmax", loss="softmax", oaa=3, invariant=True))


def test_rows_regularizer():
    cfg = train_config(dict(algo="softmax", loss="softmax", oaa=3, reg="l1l2", lam=0.5, bits=3))
    dense = np.zeros(8)
    dense[0:3] = [3.0, 4.0, 0.0]          # row 0 (slots 0..2; slot 3 unused)
    dense[4:7] = [0.0, -1.0, 0.0]         # row 1
    assert softmax.rows_regularizer(cfg, dense)[0] == pytest.approx(0.5 * (5.0 + 1.0))
    linf = train_config(dict(algo="softmax", loss="softmax", oaa=3, reg="l1linf", lam=0.5, bits=3))
    assert softmax.rows_regularizer(linf, dense)[0] == pytest.approx(0.5 * (4.0 + 1.0))
    l1 = train_config(dict(algo="softmax", loss="softmax", oaa=3, l1=0.5, bits=3))
    assert softmax.rows_regularizer(l1, dense)[0] == pytest.approx(0.5 * 8.0)
    assert math.isnan(softmax.softmax_regularizer(cfg, dense[dense != 0])[0])
