"""Truncated gradient (``--algo tg``) is Langford, Li & Zhang 2009, eq. (6), with each weight's own rate:

    w_i <- T1(w_i - step_i, lambda_i, theta),   lambda_i = K g * (scale * m) * r_i at every K-th step

implemented lazily (§4 of that paper): each learned example accrues g * scale * m of global gravity;
every K-th learned example releases what accrued into the cumulative ``st[S_CUM]``; each weight pays
r_i times what was released since its last touch when it is next read (``catch_up``) or at save time.
r_i only changes when the weight is touched, so the lazy result equals truncating every weight at
every K-th step with its current rate. With plain SGD (r_i = 1, m = 1) and unit importance weights the
released amount is exactly the paper's eta_t K g.

Under the cumulative penalty with a rule where a never-updated row has rate 0 (``--normalized``, or
``--adaptive`` without initial_t; the default rule) the table is VW's 16 bytes a row (issue 30): w g n a,
float32, the penalty and its time stamp folded into a = P - (LAST - C) r (``catch_up_stamped``), C the
epoch base ``st[S_EPOCH]``, moved to the released cumulative every E releases (``rebase_stamped``;
E = 2^b / 4 at most 2^20, 1 for a small model: ``rebase_every``).
"""

import math
from collections import namedtuple

import numpy as np

from numba import njit

from streamlearn.errors import OptionError
from streamlearn.core.loop import base_start, example_loop, sum_end
from streamlearn.core.losses import loss_dloss, loss_positive, loss_update
from streamlearn.core.multiclass import oaa_loop
from streamlearn.core.rules import (
    X2_MAX, X2_MIN, X_MIN, gd_settings, gd_update, rule_layout, rule_saved, rule_settings, step_scale,
)
from streamlearn.core import sparse
from streamlearn.core.prefetch import prefetch_item
from streamlearn.core.spec import Layout, LearnerSpec, l1_regularizer
from streamlearn.core.state import (
    I_COL_ACC, I_STAMPS, I_COL_G, I_COL_LAST, I_COL_N, I_COL_PEN, I_COL_RATE, I_PERIOD, P_G0, P_L1, P_POWER_T, P_REBASE, P_THRESHOLD,
    N_ST, S_MAX_LABEL, S_MIN_LABEL, S_MULT, S_NLEARN, S_NORM_SUM, S_T, S_TOTAL_W, own_slots,
)
from streamlearn.core.table import (
    BLOCK, BLOCK_SHIFT, W, catch_up, catch_up_block, catch_up_penalty, catch_up_plain, catch_up_stamped,
    effective_weights, finalize_blocks, finalize_lazy, normalizer_rescale, rebase_stamped, stamped_rate,
    stamped_row_rate, update_normalizer,
)


#: the learner's own state slots (``streamlearn.core.state.own_slots``): the released cumulative
#: gravity, the gravity accrued since the last release, and for the stamped penalty (16-byte rows) the
#: epoch base C, the releases since C was set, and E when a test sets it (0: ``prm[P_REBASE]``, ``rebase_every``)
SLOTS = own_slots("gravity", "pending", "epoch", "since", "rebase")
S_GRAVITY = SLOTS["gravity"]
S_PENDING = SLOTS["pending"]
S_EPOCH = SLOTS["epoch"]
S_SINCE = SLOTS["since"]
S_REBASE = SLOTS["rebase"]


#: a model of at most this many slots (2^b) is rebased at every release (its
#: sweep costs about what an example's reads do): the stamped penalty is then exact up to float32's
#: rounding of P
SMALL_TABLE = 256
#: the most releases between two rebases
REBASE_MAX = 1 << 20


def rebase_every(cfg) -> float:
    """E, the releases between two rebases of the stamped penalty (``prm[P_REBASE]``), from the model's
    slots S = 2^b (not from the table's rows, so that a sparse store's run, whose
    table holds the rows in use, rebases as the dense one and saves the same model): S / 4, at most
    ``REBASE_MAX``, so that a dense sweep costs at most max(4, S / 2^20) sequential row reads per release
    (16 at -b 24) against an example's random ones; 1 for at most ``SMALL_TABLE`` slots.

    Precision: a rebase rounds a row's P to float32 (2^-24 relative, as a touch rounds z); a row touched
    d released gravity after the base stores a = P - d r, rounded to 2^-24 (P + d r), d below E releases:
    a row first touched late in an epoch has its young penalty off by up to E 2^-24 of one release at
    its rate (1/16 of one at E = 2^20), which under a large rate can be a good part of a small weight
    (hypothesis found 7e-5 of a weight in force with E = 4, x = 0.004, a rate of 2352 and g = 0.1)."""
    slots = 1 << cfg.bits
    return 1.0 if slots <= SMALL_TABLE else float(min(slots >> 2, REBASE_MAX))


def _settings(cfg, prm, iprm) -> None:
    prm[P_REBASE] = rebase_every(cfg)
    iprm[I_STAMPS] = stamps_slot(cfg) if _tg_blocks(cfg) else -1


def stamps_slot(cfg) -> int:
    """The st slot of the first block stamp (``catch_up_block``): after the normalizer states."""
    return N_ST + 2 * cfg.norm_states


def _state_extra(cfg) -> int:
    """The block stamps' slots in st: one per ``BLOCK`` rows of the 2^b-row table."""
    return ((1 << cfg.bits) + BLOCK - 1) >> BLOCK_SHIFT if _tg_blocks(cfg) else 0


# ----------------------------------------------------------------------------- tg

@njit(cache=True, nogil=True, inline="always")
def tg_view(cfg, st):
    return st[S_GRAVITY]


@njit(cache=True, nogil=True, inline="always")
def tg_weight(table, i, cfg, gravity_released):
    """Weight i caught up with the gravity released since its last touch (``catch_up``)."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, cpen, gravity, theta, period, cr = cfg
    return catch_up(table, i, gravity_released, theta, clast, cpen, cg, cn, g0, sqrt_rate, power_t, cr)


@njit(cache=True, nogil=True, inline="always")
def tg_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """The gradient step, then eq. (6)'s gravity lazily (module docstring): accrue g * step, release
    what accrued into ``st[S_GRAVITY]`` every K-th learned example."""
    step = gd_update(idx, val, s, f, table, cfg, st, code, p, y, tau, h)
    st[S_PENDING] += cfg.gravity * step
    if int(st[S_NLEARN]) % cfg.period == 0:
        st[S_GRAVITY] += st[S_PENDING]
        st[S_PENDING] = 0.0


@njit(cache=True, nogil=True, inline="always")
def tg_weight_plain(table, i, cfg, gravity_released):
    """``tg_weight`` under --sgd without a threshold (``catch_up_plain``)."""
    return catch_up_plain(table, i, gravity_released, cfg.col_last)


@njit(cache=True, nogil=True, inline="always")
def tg_weight_penalty(table, i, cfg, gravity_released):
    """``tg_weight`` with the cumulative penalty under the default rule (``catch_up_penalty``)."""
    return catch_up_penalty(table, i, gravity_released, cfg.col_last, cfg.col_pen, cfg.col_rate)


# ------------------------------------------------- tg under --sgd, block stamps (4.5 B a slot)

#: settings of the block-stamped table: the rule's (``rules.GdSettings``, for the step) and the st
#: slot of the first block stamp
BlockSettings = namedtuple("BlockSettings", ("gd", "stamps"))


@njit(cache=True, nogil=True)
def block_settings(prm, iprm):
    return BlockSettings(gd_settings(prm, iprm), iprm[I_STAMPS])


@njit(cache=True, nogil=True, inline="always")
def block_view(cfg, st):
    return st


@njit(cache=True, nogil=True, inline="always")
def block_weight(table, i, cfg, st):
    """``tg_weight`` of the block-stamped table (``catch_up_block``)."""
    return catch_up_block(table, i, st[S_GRAVITY], st, cfg.stamps)


@njit(cache=True, nogil=True, inline="always")
def block_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """``tg_learn`` with the rule's settings of ``BlockSettings``. First the block stamps of as many
    entries after this example as it has are prefetched (the next example's, about: the loop
    prefetches its table rows, not the stamps it will read with them)."""
    for k in range(f, min(idx.shape[0], 2 * f - s)):
        prefetch_item(st, cfg.stamps + (idx[k] >> BLOCK_SHIFT))
    tg_learn(idx, val, s, f, table, prm, iprm, cfg.gd, st, code, p, y, tau, h)


# ------------------------------------------------------------- tg, the stamped penalty (16 B a row)

#: settings of the stamped form: the rule's, the column of a, the gravity g and the period K
StampedSettings = namedtuple("StampedSettings", ("adaptive", "normalized", "invariant", "g0", "col_g", "col_n",
                                                 "power_t", "sqrt_rate", "col_acc", "gravity", "period"))


@njit(cache=True, nogil=True)
def stamped_settings(prm, iprm):
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate = rule_settings(prm, iprm)
    return StampedSettings(adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, iprm[I_COL_ACC],
                           prm[P_L1], iprm[I_PERIOD])


@njit(cache=True, nogil=True, inline="always")
def default_settings(cfg):
    """``cfg`` (``StampedSettings``) with the default rule's flags and its table's columns (w g n a,
    ``rules.rule_layout``) as constants: the loop compiled with them (``learn_tg_block``, when
    ``is_default``; the step inlined, ``default_learn``) has no test of a flag or a column left in its
    passes over an example's features. The same arithmetic as the general loop's: the same results,
    bit for bit."""
    return StampedSettings(True, True, True, cfg.g0, 1, 2, 0.5, True, 3, cfg.gravity, cfg.period)


@njit(cache=True, nogil=True, inline="always")
def is_default(cfg):
    """Whether ``cfg`` is what ``default_settings`` makes of it (the default rule, its columns)."""
    return (cfg.adaptive and cfg.normalized and cfg.invariant and cfg.sqrt_rate and cfg.power_t == 0.5
            and cfg.col_g == 1 and cfg.col_n == 2 and cfg.col_acc == 3)


@njit(cache=True, nogil=True, inline="always")
def stamped_view(cfg, st):
    """d = cum - C, the gravity released since the epoch base (float64, exact globals)."""
    return st[S_GRAVITY] - st[S_EPOCH]


@njit(cache=True, nogil=True, inline="always")
def stamped_weight(table, i, cfg, d):
    """``tg_weight`` of the stamped form (``catch_up_stamped``: reads only)."""
    return catch_up_stamped(table, i, d, cfg.col_g, cfg.col_n, cfg.col_acc, cfg.g0, cfg.sqrt_rate, cfg.power_t)


@njit(cache=True, nogil=True, inline="always")
def stamped_statistics(idx, val, s, f, table, gsq, h, adaptive, normalized, sqrt_rate, power_t, cg, cn, ca, g0,
                       st, d):
    """``rules.rate_statistics`` for the stamped penalty: each feature's row is a touch (Langford, Li &
    Zhang 2009, §4): its penalty in force P = a + d r with its old rate, then G and N grow (the raw
    weight and P rescaled as ``rate_statistics`` rescales them), then a = P - d r' with the new rate r',
    so that P stays what it was and accrues at r' from now on. A row that accrues nothing (z and a both
    0) is marked with a = NaN until ``stamped_step`` has moved its weight (its duplicates in the
    example stay marked). Returns (m sum_i x_i^2 r'_i, as ``rate_statistics``; whether a row was marked).

    A feature whose x^2 is its N^2 (a binary feature, N = |x| = 1) adds 1 to the normalizer's sum without
    the division x^2 / N^2 (exactly 1: the same sum)."""
    ppu = 0.0
    norm_x = 0.0
    marked = False
    for k in range(s, f):
        i = idx[k]
        x = np.float64(val[k])
        x2 = x * x
        if x2 < X2_MIN:
            x = X_MIN if x > 0.0 else -X_MIN
            x2 = X2_MIN
        a = np.float64(table[i, ca])
        fresh = a != a or (a == 0.0 and table[i, W] == 0.0)
        P = 0.0
        if not fresh:
            P = max(a + d * stamped_row_rate(table, i, cg, cn, g0, sqrt_rate, power_t), 0.0)
        G = table.dtype.type(0.0)
        N = table.dtype.type(0.0)
        if adaptive:
            table[i, cg] += gsq * x2
            G = table[i, cg]
        if normalized:
            N = table[i, cn]
            ax = abs(x)
            if ax > N:
                if N > 0.0:
                    scale = normalizer_rescale(np.float64(N), ax, adaptive, sqrt_rate, power_t)
                    table[i, W] *= scale
                    P *= scale
                table[i, cn] = ax
                N = table[i, cn]
            N2 = np.float64(N) * np.float64(N)
            if x2 > X2_MAX or x2 == N2:
                norm_x += 1.0
            else:
                norm_x += x2 / N2
        r = np.float64(stamped_rate(table, G, N, g0, adaptive, normalized, sqrt_rate, power_t))
        if fresh:
            marked = True
            table[i, ca] = math.nan
        else:
            table[i, ca] = P - d * r
        ppu += x2 * r
    if normalized:
        update_normalizer(st, S_NORM_SUM, S_TOTAL_W, S_MULT, h, norm_x, adaptive, sqrt_rate, power_t)
        ppu *= st[S_MULT]
    return ppu, marked


@njit(cache=True, nogil=True)
def stamped_step(idx, val, s, f, table, cfg, st, code, p, y, tau, h):
    """``stamped_rule_step`` compiled once, its settings read at run time (every rule's)."""
    return stamped_rule_step(idx, val, s, f, table, cfg, st, code, p, y, tau, h)


@njit(cache=True, nogil=True, inline="always")
def stamped_rule_step(idx, val, s, f, table, cfg, st, code, p, y, tau, h):
    """``rules.gd_step`` on the stamped table: the statistics (``stamped_statistics``), the step
    u x_i r_i (r_i in the table's type, ``stamped_rate``: on a float64 table tg with no gravity is sgd
    bit for bit; on the shipped float32 table the rate is computed in float32 arithmetic where sgd's
    rate column holds its float64 rate rounded, so the two agree to float32's rounding), then the rows
    that accrued nothing: a = -d r when the step left their weight not 0 (their penalty starts at 0 now,
    as the eager reference's starts at their first update), else 0. Returns the step scale (times m when
    normalized)."""
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, ca, gravity, period = cfg
    t, scale = step_scale(st, h, power_t, adaptive)
    if loss_positive(code, p, y, tau, st[S_MIN_LABEL], st[S_MAX_LABEL]):
        d = st[S_GRAVITY] - st[S_EPOCH]
        g = loss_dloss(code, p, y, tau)
        gsq = h * g * g
        ppu = 1.0
        marked = True
        if gsq != 0.0:
            ppu, marked = stamped_statistics(idx, val, s, f, table, gsq, h, adaptive, normalized, sqrt_rate, power_t,
                                             cg, cn, ca, g0, st, d)
        else:           # no statistics to add: the rates stay; mark the rows that accrue nothing
            for k in range(s, f):
                i = idx[k]
                if table[i, ca] == 0.0 and table[i, W] == 0.0:
                    table[i, ca] = math.nan
        u = loss_update(code, p, y, tau, scale, ppu) if invariant else -g * scale
        if u != u:
            u = 0.0
        if normalized:
            u *= st[S_MULT]
        if u != 0.0:       # the rate as a table value, as sgd's step reads it from its rate column
            for k in range(s, f):
                i = idx[k]
                table[i, W] += u * val[k] * stamped_row_rate(table, i, cg, cn, g0, sqrt_rate, power_t)
        if marked:      # only an example with a fresh row has a marked one
            for k in range(s, f):
                i = idx[k]
                if table[i, ca] != table[i, ca]:
                    table[i, ca] = 0.0 if table[i, W] == 0.0 else -d * stamped_row_rate(table, i, cg, cn, g0,
                                                                                        sqrt_rate, power_t)
    st[S_T] = t
    st[S_NLEARN] += 1.0
    return scale * st[S_MULT] if normalized else scale


@njit(cache=True, nogil=True)
def rebase(table, cfg, st):
    """Set the epoch base C to the released cumulative gravity (``rebase_stamped``)."""
    rebase_stamped(table, st[S_GRAVITY] - st[S_EPOCH], cfg.col_g, cfg.col_n, cfg.col_acc, cfg.g0, cfg.sqrt_rate,
                   cfg.power_t)
    st[S_EPOCH] = st[S_GRAVITY]
    st[S_SINCE] = 0.0


@njit(cache=True, nogil=True, inline="always")
def stamped_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """``tg_learn`` on the stamped table, with a rebase every E releases (``rebase_every``)."""
    stamped_release(table, prm, cfg, st, stamped_step(idx, val, s, f, table, cfg, st, code, p, y, tau, h))


@njit(cache=True, nogil=True, inline="always")
def default_learn(idx, val, s, f, table, prm, iprm, cfg, st, code, p, y, tau, h):
    """``stamped_learn`` under the default rule (``default_settings``): the step compiled into the loop
    with its flags and columns constants."""
    stamped_release(table, prm, cfg, st, stamped_rule_step(idx, val, s, f, table, cfg, st, code, p, y, tau, h))


@njit(cache=True, nogil=True, inline="always")
def stamped_release(table, prm, cfg, st, step):
    """Accrue the gravity of a learned example's step, release it every K-th (``tg_learn``) and rebase
    every E releases."""
    st[S_PENDING] += cfg.gravity * step
    if int(st[S_NLEARN]) % cfg.period == 0:
        st[S_GRAVITY] += st[S_PENDING]
        st[S_PENDING] = 0.0
        st[S_SINCE] += 1.0
        if st[S_SINCE] >= (st[S_REBASE] if st[S_REBASE] > 0.0 else prm[P_REBASE]):
            rebase(table, cfg, st)


@njit(cache=True, nogil=True)
def learn_tg_block(block, state, start, end):
    """Examples start..end-1 with lazy truncated gradient (Langford, Li & Zhang 2009, eq. 6, §4). The
    two common layouts -- plain SGD without a threshold, and the default rule's cumulative penalty --
    run a loop whose catch-up has no run-time branches on the layout (measured: 41.8 -> 22.9 ns per
    feature entry for the first at -b 20); every other combination runs the general catch-up. The
    default rule's stamped loop is compiled apart with its flags and columns constants
    (``default_settings``; 500K lines of the benchmark stream, the learner alone: 0.414 -> 0.385 s)."""
    table, prm, iprm, st, ctr = state
    if iprm[I_STAMPS] >= 0:
        return example_loop(block, state, start, end, block_settings(prm, iprm), block_view, block_weight,
                            base_start, sum_end, block_learn)
    if iprm[I_COL_ACC] >= 0:
        stamped = stamped_settings(prm, iprm)
        if is_default(stamped):
            return example_loop(block, state, start, end, default_settings(stamped), stamped_view, stamped_weight,
                                base_start, sum_end, default_learn)
        return example_loop(block, state, start, end, stamped, stamped_view, stamped_weight, base_start, sum_end,
                            stamped_learn)
    cfg = gd_settings(prm, iprm)
    adaptive, normalized, invariant, g0, cg, cn, power_t, sqrt_rate, clast, cpen, gravity, theta, period, cr = cfg
    if cpen < 0 and cg < 0 and cn < 0 and theta == math.inf:
        return example_loop(block, state, start, end, cfg, tg_view, tg_weight_plain, base_start, sum_end, tg_learn)
    if cpen >= 0 and cr >= 0:
        return example_loop(block, state, start, end, cfg, tg_view, tg_weight_penalty, base_start, sum_end, tg_learn)
    return example_loop(block, state, start, end, cfg, tg_view, tg_weight, base_start, sum_end, tg_learn)


@njit(cache=True, nogil=True)
def oaa_tg_block(block, state, start, end):
    """``learn_tg_block`` one-against-all (the general catch-up, or the stamped one)."""
    table, prm, iprm, st, ctr = state
    if iprm[I_STAMPS] >= 0:
        return oaa_loop(block, state, start, end, block_settings(prm, iprm), block_view, block_weight,
                        base_start, sum_end, block_learn)
    if iprm[I_COL_ACC] >= 0:
        return oaa_loop(block, state, start, end, stamped_settings(prm, iprm), stamped_view, stamped_weight,
                        base_start, sum_end, stamped_learn)
    return oaa_loop(block, state, start, end, gd_settings(prm, iprm), tg_view, tg_weight, base_start, sum_end, tg_learn)


@njit(cache=True, nogil=True)
def finalize_tg(table, prm, iprm, st):
    """Catch every weight of a truncated-gradient table up (see ``finalize_lazy``; the stamped table:
    a rebase, after which a holds P; the block-stamped table: every block caught up)."""
    if iprm[I_STAMPS] >= 0:
        finalize_blocks(table, st[S_GRAVITY], st, iprm[I_STAMPS])
        return
    if iprm[I_COL_ACC] >= 0:
        rebase(table, stamped_settings(prm, iprm), st)
        return
    finalize_lazy(table, st[S_GRAVITY], prm[P_THRESHOLD], iprm[I_COL_LAST], iprm[I_COL_PEN], iprm[I_COL_G],
                  iprm[I_COL_N], prm[P_G0], prm[P_POWER_T] == 0.5, prm[P_POWER_T], iprm[I_COL_RATE])




# ----------------------------------------------------------------------------- spec

def _tg_penalty(cfg) -> bool:
    return bool(cfg.cumulative_penalty)


def _tg_f32(cfg) -> bool:
    """tg keeps a float32 table (issue 30) under per-feature rates with the cumulative penalty (the
    default); with --threshold (--no-cumulative-penalty) a weight's truncation hangs on |w| <= theta,
    which a float32 weight at theta would flip, so that table stays float64, as under --sgd."""
    return bool(cfg.per_feature and cfg.cumulative_penalty)


def _tg_stamped(cfg) -> bool:
    """The 16-byte stamped table (``catch_up_stamped``): float32 with the cumulative penalty, under a rule
    where a never-updated row has rate 0 (N = 0 under --normalized, G = 0 under --adaptive without
    initial_t), so that a row accrues from its first update on, as the eager definition's. With
    --adaptive alone and initial_t > 0 every row starts with rate initial_t^-1/2: the 32-byte table."""
    return _tg_f32(cfg) and (cfg.normalized or cfg.initial_t == 0)


#: the smallest -b whose --sgd table is block-stamped (``_tg_blocks``): 2^22 rows of 16 B are 64 MiB
BLOCK_MIN_BITS = 22


def _tg_blocks(cfg) -> bool:
    """The block-stamped table (``catch_up_block``; issue 30: VW's 4 B a weight under --sgd, and 8 B a
    block of 16 rows): every row accrues the one global gravity -- no per-feature rates, no cumulative
    penalty -- and the soft threshold applies (no --threshold: a truncation that hangs on |w| <= theta
    does not compose over a block). From -b ``BLOCK_MIN_BITS`` on, where the table is most of the
    memory: a read catches up 16 rows where the 16-byte rows w last catch up one (-b 20, 1M lines of
    the benchmark stream: 1.15-1.26x the CPU time end to end), while at -b 24 both took the same time.
    A dense table only: the sparse store (``--sparse_weights``, or a -b too large for memory) keeps the
    16-byte rows."""
    return (cfg.bits >= BLOCK_MIN_BITS and not cfg.per_feature and not cfg.cumulative_penalty
            and cfg.threshold == math.inf and not getattr(cfg, "sparse_weights", False)
            and not sparse.wants_sparse(cfg.bits, 1, 4))


def _tg_layout(cfg):
    if _tg_blocks(cfg):
        return Layout(("w",), 1, "float32")
    return rule_layout(cfg, penalty=_tg_penalty(cfg), lazy=True, rate=True, f32=_tg_f32(cfg), stamped=_tg_stamped(cfg))


def _tg_in_force(cfg, table, st, rows):
    """The weights in force of the rows (after ``finalize``): the raw weight shrunk by its penalty."""
    lay = _tg_layout(cfg)
    if lay.acc < 0:
        return effective_weights(table, rows, lay.pen)
    z = table[rows, W].astype(np.float64)
    return np.copysign(np.maximum(np.abs(z) - table[rows, lay.acc].astype(np.float64), 0.0), z)


def _tg_check(cfg, flag) -> None:
    if cfg.cumulative_penalty and "threshold" in cfg.explicit:
        raise OptionError("--threshold does not apply with --cumulative-penalty (the default with "
                          "per-feature rates); add --no-cumulative-penalty")


def merge(cfg, merged, inputs, models, state) -> None:
    """Merged models (``streamlearn.mix``) with the cumulative penalty: the raw weight z and the
    penalty averaged alike, then the weight in force z shrunk by it (``effective_weights``)."""
    if "w" in merged and "z" in merged and "p" in merged:
        table = np.ascontiguousarray(np.column_stack([merged["z"], merged["p"]]))
        merged["w"][:] = effective_weights(table, np.arange(table.shape[0], dtype=np.int64), 1)


LEARNER = LearnerSpec(
    name="tg", order=1, summary="truncated gradient", paper="Langford, Li & Zhang 2009",
    example=("--l1", "1e-4"),
    kernel=learn_tg_block, oaa_kernel=oaa_tg_block, finalize=finalize_tg,
    describe=lambda c: (f"tg (truncated gradient, {c.rule()}: l1 = {c.l1:g}, "
                        + ("cumulative penalty" if c.cumulative_penalty else f"threshold = {c.threshold:g}")
                        + f", period = {c.period})"),
    layout=_tg_layout,
    saved=lambda c: rule_saved(c, _tg_layout(c)),
    in_force=_tg_in_force,
    weights_in_column=lambda c: not _tg_penalty(c),
    regularizer=l1_regularizer,
    merge=merge,
    settings=_settings,
    slots=SLOTS,
    state_extra=_state_extra,
    options=("l1", "threshold", "period", "cumulative_penalty"),
    selected_by=("l1", "threshold", "period", "cumulative_penalty"),
    check=_tg_check,
)
