"""SMIDAS, stochastic mirror descent made sparse (Shalev-Shwartz & Tewari 2009, Section 3,
Algorithm 3), over one block of examples in input order (``--shuffle`` gives the paper's sampling
over passes).

The learner keeps the dual vector theta (table column 0) and predicts with the primal
w = f^-1(theta) of the p-norm link (Eq. 12),

    w_j = sign(theta_j) |theta_j|^(p-1) / ||theta||_p^(p-2),     p = 2 ln d (or --p-norm),

and every learned example takes the steps of Algorithm 3: theta~ = theta - eta_t v with
v = L'(<w, x>, y) x (the example's importance h in eta_t, as the other learners), then for every j
theta_j = sign(theta~_j) max(0, |theta~_j| - eta_t lambda). eta_t is the plain schedule
(``-l``, ``--power-t``, ``--initial-t``; ``--power-t 0`` is the paper's constant eta).

Cost and numerics (Section 3.1): w needs only theta_j and the norm, kept as xi = (M, S) with
M = max_j |theta_j| and S = sum_j (|theta_j| / M)^p, so that w_j = sign(theta_j) M r_j^(p-1) /
S^((p-2)/p) with r_j = |theta_j| / M <= 1: no power of a large or small |theta| is ever formed
(p is ~25 at -b 18). The truncation touches every non-zero theta_j, so it walks the list of them
(``nonzero_list``), drops those that reach 0, and recomputes (M, S) exactly on the way: the p-norm is
never carried across examples, so no rounding accumulates. An example costs O(its non-zeros +
non-zeros of theta).
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit

from streamlearn.core.rules import step_scale
from streamlearn.core.loop import base_start, example_loop, sum_end
from streamlearn.core.losses import loss_dloss, loss_positive
from streamlearn.core.nonzero_list import LIST, POS, list_add, list_rebuild
from streamlearn.core.spec import Layout, LearnerSpec, l1_regularizer
from streamlearn.options import Option
from streamlearn.core.state import (
    P_L1, P_PNORM, P_POWER_T, S_MAX_LABEL, S_MIN_LABEL, S_NLEARN, S_NNZ, S_T, own_slots,
)


#: the learner's own state slots (``streamlearn.core.state.own_slots``)
SLOTS = own_slots("xi1", "ximax")
S_XI1 = SLOTS["xi1"]
S_XIMAX = SLOTS["ximax"]

#: smidas's own option (besides the shared --l1)
OPTIONS = (
    Option("p_norm", ("--p-norm",), "float", None, stored="always", legacy=None, estimator=None, section="smidas",
           help="smidas: p of the p-norm link (default 2 ln d, d = 2^b)."),
)

TH = 0      # theta_j


@njit(cache=True, nogil=True, inline="always")
def primal(theta, p, m, s):
    """f^-1_j(theta) of Eq. 12 from theta_j and the scaled norm (M, S); 0 when theta is 0."""
    if theta == 0.0 or m <= 0.0:
        return 0.0
    r = abs(theta) / m
    w = m * r ** (p - 1.0) / s ** ((p - 2.0) / p)
    return w if theta > 0.0 else -w


@njit(cache=True, nogil=True)
def truncate_all(table, st, a, p):
    """theta_j <- sign(theta_j) max(0, |theta_j| - a) for every listed theta_j (Algorithm 3, last
    line), dropping those that reach 0 from the list, then (M, S) recomputed exactly. O(n)."""
    n = int(st[S_NNZ])
    k = 0
    m = 0.0
    for q in range(n):
        i = int(table[q, LIST])
        t = table[i, TH]
        if t > a:
            t -= a
        elif t < -a:
            t += a
        else:
            t = 0.0
        table[i, TH] = t
        if t != 0.0:
            table[k, LIST] = i
            table[i, POS] = k + 1
            k += 1
            if abs(t) > m:
                m = abs(t)
        else:
            table[i, POS] = 0.0
    st[S_NNZ] = k
    norm(table, st, p, m)


@njit(cache=True, nogil=True)
def norm(table, st, p, m):
    """(M, S) of the listed theta, M given. An entry with |theta| / M below
    c = 2^(-(53 + log2(n + 1)) / p) adds less than 2^-53 / (n + 1) to S >= 1, so all of them together
    stay below S's rounding: their powers are not computed (at p ~ 25 most entries are skipped)."""
    s = 0.0
    n = int(st[S_NNZ])
    if m > 0.0:
        c = 2.0 ** (-(53.0 + math.log2(n + 1.0)) / p)
        for q in range(n):
            r = abs(table[int(table[q, LIST]), TH]) / m
            if r >= c:
                s += r ** p
    st[S_XIMAX] = m
    st[S_XI1] = s


#: smidas's settings: p of the link function, lambda, power_t
SmidasSettings = namedtuple("SmidasSettings", ("pnorm", "lam", "power_t"))


@njit(cache=True, nogil=True)
def smidas_settings(prm, iprm):
    return SmidasSettings(prm[P_PNORM], prm[P_L1], prm[P_POWER_T])


@njit(cache=True, nogil=True, inline="always")
def smidas_view(cfg, st):
    """The scaled norm (M, S) of theta."""
    return st[S_XIMAX], st[S_XI1]


@njit(cache=True, nogil=True, inline="always")
def smidas_weight(table, i, cfg, xi):
    """w_i = f^-1_i(theta) of Eq. 12."""
    return primal(table[i, TH], cfg.pnorm, xi[0], xi[1])


@njit(cache=True, nogil=True, inline="always")
def smidas_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, pr, y, tau, h):
    """The steps of Algorithm 3: theta~ = theta - eta_t v, then every theta_j shrunk by eta_t lambda."""
    p, lam, power_t = cfg
    t, scale = step_scale(st, h, power_t, False)
    if loss_positive(code, pr, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL]):
        u = -loss_dloss(code, pr, y, tau) * scale        # theta~ = theta - eta v = theta + u x
        if u != 0.0 and math.isfinite(u):
            for k in range(s, f):
                list_add(table, st, idx[k], u * val[k])
    truncate_all(table, st, scale * lam, p)
    st[S_T] = t
    st[S_NLEARN] += 1.0


@njit(cache=True, nogil=True)
def learn_smidas_block(block, state, start, end):
    """Examples start..end-1 with SMIDAS (Algorithm 3) through the example loop."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, smidas_settings(prm, iprm), smidas_view, smidas_weight, base_start,
                        sum_end, smidas_learn)


@njit(cache=True, nogil=True)
def finalize(table, prm, iprm, st):
    """Nothing is pending: theta and its norm are up to date after every example."""


@njit(cache=True, nogil=True)
def in_force(table, rows, p, st):
    """w = f^-1(theta) (Eq. 12) of the given rows."""
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        out[j] = primal(table[rows[j], TH], p, st[S_XIMAX], st[S_XI1])
    return out


@njit(cache=True, nogil=True)
def after_load(table, prm, iprm, st):
    """List the loaded theta and compute its norm."""
    list_rebuild(table, st)
    m = 0.0
    for q in range(int(st[S_NNZ])):
        m = max(m, abs(table[int(table[q, LIST]), TH]))
    norm(table, st, prm[P_PNORM], m)


# ----------------------------------------------------------------------------- spec

def smidas_p(cfg) -> float:
    """p of SMIDAS's p-norm link: --p-norm, else 2 ln d with d = 2^b hashed weights (Algorithm 3)."""
    return cfg.p_norm if cfg.p_norm is not None else max(2.0, 2.0 * cfg.bits * math.log(2.0))


def _settings(cfg, prm, iprm) -> None:
    prm[P_PNORM] = smidas_p(cfg)


def merge(cfg, merged, inputs, models, state) -> None:
    """Merged models (``streamlearn.mix``): theta averaged, then w = f^-1(theta_bar) (Eq. 12) with the
    norm rebuilt as after loading."""
    from streamlearn import learners
    if "w" in merged and "theta" in merged:
        prm, iprm = learners.make_settings(cfg, train=True)
        st = learners.make_state(cfg, prm, state)
        n = merged["theta"].shape[0]
        table = np.zeros((n, 3))
        table[:, TH] = merged["theta"]
        after_load(table, prm, iprm, st)
        merged["w"][:] = in_force(table, np.arange(n, dtype=np.int64), prm[P_PNORM], st)


LEARNER = LearnerSpec(
    name="smidas", order=5, summary="stochastic mirror descent made sparse", paper="Shalev-Shwartz & Tewari 2009",
    example=("--l1", "1e-4"), declares=OPTIONS,
    kernel=learn_smidas_block, finalize=finalize, after_load=after_load,
    describe=lambda c: (f"smidas (stochastic mirror descent made sparse, {c.rule()}: l1 = {c.l1:g}, "
                        f"p = {smidas_p(c):g})"),
    layout=lambda c: Layout(("theta", "pos", "list"), 1),   # theta, the list of the non-zero ones
    settings=_settings,
    in_force=lambda c, table, st, rows: in_force(table, rows, smidas_p(c), st),
    saved=lambda c: [("theta", TH)],
    resumes_from_weights=False,
    regularizer=l1_regularizer,
    merge=merge,
    slots=SLOTS,
    options=("l1", "p_norm"),
    plain_only=lambda c: "its step is a mirror-descent step in the dual, with one rate for all weights",
    takes_invariant=False,
)
