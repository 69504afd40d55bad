"""Exponentiated gradient with positive and negative weights (Duchi, Shalev-Shwartz, Singer & Chandra
2008, Section 7, eq. 13; Kivinen & Warmuth 1997): two vectors w+ and w- of d = 2^bits entries each,
all >= 0 with sum_i (w+_i + w-_i) = z, predict with w = w+ - w-. Every learned example with a positive
loss takes the multiplicative step of eq. (13) on the gradient g = h dloss(p, y) x,

    w+_i <- w+_i exp(-eta_t g_i) / Z_t,   w-_i <- w-_i exp(+eta_t g_i) / Z_t,   eta_t = eta0 t^-power_t

where Z_t renormalizes all 2d entries to sum z. Every entry starts at z / (2d), so w starts at 0.

O(k) per example for k features: the table keeps the log-weights phi+_i, phi-_i (columns 0 and 1)
up to the common normalizer, so a step only adds -eta_t g_i to the phi of the example's features and
Z_t is never applied to the other entries. With a reference exponent M (``st[S_EG_M]``) and

    D = sum over all 2d entries of (exp(phi - M) - exp(-M))      (``st[S_EG_D]``)

the weights are w+-_i = z exp(phi+-_i - M) / (2d exp(-M) + D): an entry never touched has phi = 0 and
adds 0 to D, and changing one phi from a to b adds exp(b - M) - exp(a - M). M is kept near the log of
the total mass (the denominator is kept within [1/16, 16]; raising M only rescales D, and M is raised
before any exp(phi - M) could exceed exp(300)), so nothing overflows and the rounding of D stays
small relative to the denominator. D is recomputed from scratch (O(d)) when it may have cancelled --
the denominator fell below 1/16, or a step went through an entry more than 256 times the final
denominator (a weight raised and lowered again) -- and after every max(d, 2^20) steps.

Table columns: 0 phi+, 1 phi-; with ``--batch-size B`` > 1 also 2 the pending step of the row and 3
the list of rows with one. Mini-batches: the B examples' steps are summed per coordinate, averaged and
applied as one step of eq. (13); predictions inside a batch use the weights at its start. A batch
still open when the model is saved is applied then (``finalize``).
"""

import math
from collections import namedtuple

import numpy as np

from numba import njit

from streamlearn.core.loop import example_loop
from streamlearn.core.losses import loss_dloss, loss_positive
from streamlearn.core.minibatch import clock_step_scale, pend_example
from streamlearn.core.spec import Layout, LearnerSpec
from streamlearn.core.state import (
    I_BATCH, P_POWER_T, P_RADIUS, S_BATCH_EX, S_BATCH_ROWS, S_MAX_LABEL, S_MIN_LABEL, S_NLEARN, S_T, own_slots,
)


#: the learner's own state slots (``streamlearn.core.state.own_slots``)
SLOTS = own_slots("m", "d", "since")
S_EG_M = SLOTS["m"]
S_EG_D = SLOTS["d"]
S_EG_SINCE = SLOTS["since"]

CP = 0      # phi+: log of w+ up to the common normalizer
CN = 1      # phi-: log of w-
CACC = 2    # mini-batch: pending step of the row
CLIST = 3   # mini-batch: rows with a pending step

SAFE = 300.0            # M is raised before any exp(phi - M) exceeds exp(SAFE)
HIGH = 16.0             # the denominator 2d exp(-M) + D is rescaled to 1 above this ...
LOW = 1.0 / 16.0        # ... and recomputed from scratch below this
MIN_RECOMPUTE = 1 << 20  # recompute D after max(d, this) steps


@njit(cache=True, nogil=True)
def denominator(d, st):
    """sum over all 2d entries of exp(phi - M): the normalizer Z_t of eq. (13) (Section 7) over z,
    times exp(-M)."""
    return 2.0 * d * math.exp(-st[S_EG_M]) + st[S_EG_D]


@njit(cache=True, nogil=True)
def recompute(table, st):
    """M and D of eq. (13)'s normalizer (Section 7) from scratch over the table, O(d): M = the log of
    the total mass sum exp(phi), D = sum (exp(phi - M) - exp(-M)) (entries at phi = 0 add 0)."""
    d = table.shape[0]
    m = 0.0                                   # untouched entries are at phi = 0
    for i in range(d):
        m = max(m, table[i, CP], table[i, CN])
    em = math.exp(-m)
    s = 0.0
    for i in range(d):
        for c in range(2):
            a = table[i, c]
            if a != 0.0:
                s += math.exp(a - m) - em
    r = 2.0 * d * em + s                      # >= 1: the largest entry adds exp(0)
    st[S_EG_M] = m + math.log(r)
    st[S_EG_D] = s / r
    st[S_EG_SINCE] = 0.0


@njit(cache=True, nogil=True)
def move(table, i, c, delta, st):
    """Add delta to the log-weight phi of entry (i, c) (one coordinate of eq. 13, Section 7: the
    entry is multiplied by exp(delta)) and keep D, raising M first if exp(phi - M) could overflow.
    Returns the larger of the old and new phi (the magnitude D's rounding is relative to)."""
    a = table[i, c]
    b = a + delta
    table[i, c] = b
    m = st[S_EG_M]
    if b - m > SAFE:
        st[S_EG_D] *= math.exp(m - b)
        st[S_EG_M] = b
        m = b
    st[S_EG_D] += math.exp(b - m) - math.exp(a - m)
    return max(a, b)


@njit(cache=True, nogil=True)
def settle(table, st, peak):
    """After a step of eq. (13) (Section 7): keep the denominator 2d exp(-M) + D near 1 (raising M
    rescales D exactly), and recompute it from scratch when most of the mass left (D may have
    cancelled: the denominator fell below 1/16, or an entry the step went through, peak = its
    largest phi, was more than HIGH/LOW times the denominator), when it is not a positive number, or
    after max(d, 2^20) steps (amortized O(1) per step)."""
    d = table.shape[0]
    st[S_EG_SINCE] += 1.0
    r = denominator(d, st)
    if (not (r >= LOW and r < math.inf) or peak - st[S_EG_M] > math.log(r * (HIGH / LOW))
            or st[S_EG_SINCE] > max(d, MIN_RECOMPUTE)):
        recompute(table, st)
    elif r > HIGH:
        st[S_EG_M] += math.log(r)
        st[S_EG_D] /= r


@njit(cache=True, nogil=True)
def flush_batch(table, st):
    """Apply the pending steps averaged over the batch's examples as one step of eq. (13)
    (Section 7): phi+ += step, phi- -= step."""
    n = st[S_BATCH_EX]
    if n > 0.0:
        peak = -math.inf
        for m in range(int(st[S_BATCH_ROWS])):
            i = int(table[m, CLIST])
            dlt = table[i, CACC] / n
            table[i, CACC] = 0.0
            peak = max(peak, move(table, i, CP, dlt, st), move(table, i, CN, -dlt, st))
        settle(table, st, peak)
    st[S_BATCH_ROWS] = 0.0
    st[S_BATCH_EX] = 0.0


@njit(cache=True, nogil=True)
def finalize(table, prm, iprm, st):
    """Apply an open mini-batch of eq. (13) steps (Section 7) before saving."""
    if iprm[I_BATCH] > 1:
        flush_batch(table, st)


#: eg's settings: the total z of w+ and w-, the batch size, power_t
EgSettings = namedtuple("EgSettings", ("radius", "batch", "power_t"))


@njit(cache=True, nogil=True)
def eg_settings(prm, iprm):
    return EgSettings(prm[P_RADIUS], iprm[I_BATCH], prm[P_POWER_T])


@njit(cache=True, nogil=True, inline="always")
def eg_view(cfg, st):
    return st[S_EG_M]


@njit(cache=True, nogil=True, inline="always")
def eg_weight(table, i, cfg, m):
    """(w+_i - w-_i) times the normalizer (2d exp(-M) + D) / z, which ``eg_end`` divides out (M:
    the reference log-weight)."""
    return math.exp(table[i, CP] - m) - math.exp(table[i, CN] - m)


@njit(cache=True, nogil=True, inline="always")
def eg_start(base):
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def eg_end(acc, base, table, cfg, st):
    """The score <w+ - w-, x> of eq. (13)'s weights (Section 7) plus the base."""
    return base + cfg.radius * acc / denominator(table.shape[0], st)


@njit(cache=True, nogil=True, inline="always")
def eg_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """The multiplicative step of eq. (13) (Section 7) on the example's features, O(k); with
    mini-batches the step is pended and a full batch applied."""
    z, batch, power_t = cfg
    t, scale = clock_step_scale(st, h, power_t, False, batch)
    if loss_positive(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL]):
        u = -loss_dloss(code, p, y, tau) * scale      # -eta_t g_i = u x_i
        if u != 0.0 and math.isfinite(u):
            if batch > 1:
                pend_example(table, idx, val, s, f, u, st, CACC, CLIST)
            else:
                peak = -math.inf
                for k in range(s, f):
                    i = idx[k]
                    dlt = u * val[k]
                    peak = max(peak, move(table, i, CP, dlt, st), move(table, i, CN, -dlt, st))
                settle(table, st, peak)
    st[S_T] = t
    st[S_NLEARN] += 1.0
    if batch > 1:
        st[S_BATCH_EX] += 1.0
        if int(st[S_BATCH_EX]) == batch:
            flush_batch(table, st)


@njit(cache=True, nogil=True)
def learn_eg_block(block, state, start, end):
    """Examples start..end-1 with exponentiated gradient over w+ and w- (Duchi et al. 2008, Section 7,
    eq. 13) through the example loop, O(k) per example."""
    table, prm, iprm, st, ctr = state
    return example_loop(block, state, start, end, eg_settings(prm, iprm), eg_view, eg_weight, eg_start, eg_end,
                        eg_learn)


@njit(cache=True, nogil=True)
def in_force(table, rows, z, st):
    """Effective weights w_i = w+_i - w-_i of the given rows (Section 7, eq. 13), with
    w+-_i = z exp(phi+-_i - M) / (2d exp(-M) + D)."""
    m = st[S_EG_M]
    c = z / denominator(table.shape[0], st)
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        i = rows[j]
        out[j] = c * (math.exp(table[i, CP] - m) - math.exp(table[i, CN] - m))
    return out


@njit(cache=True, nogil=True)
def after_load(table, prm, iprm, st):
    """Rebuild M and D of eq. (13)'s normalizer (Section 7) from loaded log-weights phi+, phi-."""
    recompute(table, st)


# ----------------------------------------------------------------------------- merging models

def _logmeanexp(v: np.ndarray) -> np.ndarray:
    """log(mean_k exp(v_k)) along axis 0, shifted by the largest (exactly v_0 when all agree)."""
    m = v.max(axis=0)
    return m + np.log(np.exp(v - m).sum(axis=0) / v.shape[0])


def merge(cfg, merged, inputs, models, state) -> None:
    """Merged models (``streamlearn.mix``; Section 7, eq. 13): w+- = z exp(phi+-) / sum over all 2d
    entries of exp(phi), so with L_k the log of model k's total mass the average of w+- over the
    models is exp(phi_bar) times the average untouched entry, phi_bar = logmeanexp_k(phi_k - L_k) -
    logmeanexp_k(-L_k): untouched entries stay at phi 0, and the merged entries sum to z."""
    d = 1 << cfg.bits
    L = np.empty(len(models))
    for j, (idx, cols) in enumerate(models):
        phi = np.column_stack([cols["ep"], cols["en"]]).ravel()
        untouched = 2 * (d - np.shape(idx)[0])
        m = max(phi.max(initial=-math.inf), 0.0 if untouched else -math.inf)
        L[j] = m + math.log(np.exp(phi - m).sum() + untouched * math.exp(-m))
    shift = (L - L[0])[:, None]                 # relative to model 0: exactly 0 when the models agree
    rest = _logmeanexp(-shift)
    for name in ("ep", "en"):
        merged[name][:] = _logmeanexp(inputs[name] - shift) - rest


# ----------------------------------------------------------------------------- spec

def _settings(cfg, prm, iprm) -> None:
    prm[P_RADIUS] = cfg.radius


LEARNER = LearnerSpec(
    name="eg", order=4, summary="exponentiated gradient", paper="Duchi, Shalev-Shwartz, Singer & Chandra 2008",
    example=("--radius", "5"),
    kernel=learn_eg_block, finalize=finalize, after_load=after_load,
    describe=lambda c: (f"eg (exponentiated gradient, w+ and w-, {c.rule()}: radius = {c.radius:g}, "
                        f"batch size = {c.batch_size})"),
    # log-weights of w+ and w-; with mini-batches the pending step and row list
    layout=lambda c: Layout(("ep", "en") + (("acc", "list") if c.batch_size > 1 else ()), 2),
    settings=_settings,
    in_force=lambda c, table, st, rows: in_force(table, rows, c.radius, st),
    saved=lambda c: [("ep", CP), ("en", CN)],
    merge=merge,
    resumes_from_weights=False,
    slots=SLOTS,
    options=("radius", "batch_size"),
    plain_only=lambda c: "its update is multiplicative, with one rate for all weights",
    takes_invariant=False,
)
