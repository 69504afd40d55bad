"""The lazily regularized weight table and the per-feature learning rates read from it.

``table`` is a C-contiguous array of shape (2^b, k): one row per hashed weight, so everything
an update needs about one weight shares a cache line. It is float64, or float32 for sgd and tg
(issue 30; ``streamlearn.core.spec.Layout``): there LAST and P, which must stay exact, are float64
values in two adjacent float32 columns (even index, rows of a multiple of 8 bytes), read and written
with ``get64`` / ``set64`` (which read a float64 table's column itself, so every kernel serves both);
or, in tg's 16-byte table (default rule), P, LAST and the rate are one float32 column a =
P - (LAST - C) r against a float64 epoch base C (``catch_up_stamped``, ``rebase_stamped``). Column 0 is the weight. Depending on the update
rule and the learner, further columns hold (their positions are resolved once, at set-up, into the
``I_COL_*`` settings):

* G, the sum of squared gradients of the weight (``--adaptive``);
* N, the largest |x| the weight has seen (``--normalized``);
* P, the penalty accrued by the weight (``--cumulative-penalty``; the weight column then holds the
  raw weight, see ``catch_up``);
* LAST, the value of the global *cumulative* regularization scalar (``st[S_GRAVITY]`` for tg, ``st[S_FOBOS_CUM]`` for fobos) at the weight's
  last touch (lazily regularized learners).

A weight untouched since its last touch owes the regularization released since then, which it pays
when it is next read (``catch_up``) or when the model is saved (``finalize_lazy``). An example
therefore costs O(its non-zeros) whatever 2^b is (Langford, Li & Zhang 2009, §4: "time-stamp" per
feature). With per-feature rates the owed amount is the weight's own rate times the released global
amount: a weight's rate depends only on its G and N, which change only when the weight is touched, so
it is constant between two touches and the catch-up stays exact and O(1).
"""

import math

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

from streamlearn.core.prefetch import element_pointer

W = 0       # weight


@intrinsic
def _at64(typingctx, table, i, c):
    """A float64 pointer to element (i, c) of a C-contiguous 2-d array: the element itself in a float64
    table, elements c and c + 1 of row i in a float32 one. (``table.view(np.float64)`` would give the
    same value, but numba builds and checks the view on every call: ~20x slower in a loop, measured.)"""
    def codegen(context, builder, sig, args):
        ptr = element_pointer(context, builder, sig.args[0], args[0],
                              context.cast(builder, args[1], sig.args[1], types.intp),
                              context.cast(builder, args[2], sig.args[2], types.intp))
        return builder.bitcast(ptr, ir.PointerType(ir.DoubleType()))
    return types.CPointer(types.float64)(table, i, c), codegen


@intrinsic
def _row_pointer(typingctx, table, i):
    """A pointer (of the table's type) to element (i, 0) of a C-contiguous 2-d array."""
    def codegen(context, builder, sig, args):
        return element_pointer(context, builder, sig.args[0], args[0],
                               context.cast(builder, args[1], sig.args[1], types.intp),
                               context.get_constant(types.intp, 0))
    return types.CPointer(table.dtype)(table, i), codegen


@njit(cache=True, nogil=True, inline="always")
def get64(table, i, c):
    """The float64 value of column ``c`` of row i: the column itself in a float64 table, the two
    float32 columns c, c + 1 (c even) of a float32 one (the last-touch value and the penalty stay
    exact in the float32 tables: ``streamlearn.core.spec.Layout``)."""
    return _at64(table, i, c)[0]


@njit(cache=True, nogil=True, inline="always")
def set64(table, i, c, v):
    """Store the float64 ``v`` in column ``c`` of row i (``get64``)."""
    _at64(table, i, c)[0] = v


@njit(cache=True, nogil=True, inline="always")
def truncate(w, alpha, theta):
    """T1(w, alpha, theta) of Langford, Li & Zhang 2009, eq. (6): shrink w towards 0 by alpha,
    stopping at 0, when |w| <= theta; leave it alone otherwise."""
    if w > 0.0:
        if w <= theta:
            return w - alpha if w > alpha else 0.0
        return w
    if w < 0.0:
        if -w <= theta:
            return w + alpha if -w > alpha else 0.0
        return w
    return w


@njit(cache=True, nogil=True, inline="always")
def shrink(z, P):
    """z moved towards 0 by P >= 0, stopping at 0 (the soft threshold). Branch-free: the sign of a
    weight is a coin flip to the branch predictor (measured on the default rule's tg, 200K lines,
    learning alone: 0.37-0.41 s -> 0.33 s with ``catch_up_penalty``'s branch-free form)."""
    return math.copysign(max(abs(z) - P, 0.0), z)


@njit(cache=True, nogil=True)
def effective_weights(table, rows, cpen):
    """Weights in force of the given rows: the raw weight shrunk by its penalty (cumulative
    penalty, after ``finalize_lazy``), or the weight column as it is."""
    out = np.empty(rows.shape[0])
    for j in range(rows.shape[0]):
        i = rows[j]
        out[j] = shrink(table[i, W], get64(table, i, cpen)) if cpen >= 0 else table[i, W]
    return out


@njit(cache=True, nogil=True, inline="always")
def rate_decay(G, N, adaptive, normalized, sqrt_rate, power_t):
    """Per-feature rate factor of VW's gd (vw-spec.md §1c, step 2.4; gd.cc ``compute_rate_decay``):
    G^(-power_t) when adaptive, times N^-1 (adaptive) or N^-2 (not) when normalized; with
    power_t != 0.5 the normalizer factor is (N^2)^(power_t - 1) in both cases (VW computes that
    exponent before it applies the update-rule flags). A weight with no G or N yet has rate 0."""
    r = 1.0
    if adaptive and normalized and sqrt_rate:
        if G <= 0.0 or N <= 0.0:
            return 0.0
        return 1.0 / (math.sqrt(G) * N)
    if adaptive:
        if G <= 0.0:
            return 0.0
        r = 1.0 / math.sqrt(G) if sqrt_rate else G ** (-power_t)
    if normalized:
        if N <= 0.0:
            return 0.0
        if sqrt_rate:
            r = r / N if adaptive else r / (N * N)
        else:
            r *= (N * N) ** (power_t - 1.0)
    return r


@njit(cache=True, nogil=True, inline="always")
def normalizer_rescale(N, ax, adaptive, sqrt_rate, power_t):
    """The factor a weight is multiplied by when its feature's largest |x| grows from N > 0 to ax
    (VW's normalized rule, vw-spec.md §1c step 2.3): N/ax (adaptive) or (N/ax)^2 with power_t 0.5,
    else (ax/N)^(2 (power_t - 1))."""
    if sqrt_rate:
        c = N / ax
        return c if adaptive else c * c
    c = ax / N
    return (c * c) ** (power_t - 1.0)


@njit(cache=True, nogil=True, inline="always")
def update_normalizer(st, s_norm, s_total, s_mult, h, norm_x, adaptive, sqrt_rate, power_t):
    """VW's global normalizer after an update (vw-spec.md §1c step 3): the sums S += h norm_x and
    T += h (``st[s_norm]``, ``st[s_total]``), then m = sqrt(T/S) (T/S when not adaptive; the general
    form (S/T)^(power_t - 1)) into ``st[s_mult]``; m stays as it was while S is 0 (only feature-less
    examples so far)."""
    st[s_norm] += h * norm_x
    st[s_total] += h
    if st[s_norm] > 0.0:
        if sqrt_rate:
            m = st[s_total] / st[s_norm]
            if adaptive:
                m = math.sqrt(m)
        else:
            m = (st[s_norm] / st[s_total]) ** (power_t - 1.0)
        st[s_mult] = m


@njit(cache=True, nogil=True, inline="always")
def feature_rate(table, i, cg, cn, g0, sqrt_rate, power_t):
    """rate_decay of weight i from its table row (columns cg / cn, -1 when the rule has none)."""
    G = table[i, cg] + g0 if cg >= 0 else 0.0
    N = table[i, cn] if cn >= 0 else 0.0
    return rate_decay(G, N, cg >= 0, cn >= 0, sqrt_rate, power_t)


@njit(cache=True, nogil=True, inline="always")
def stamped_rate(table, G, N, g0, adaptive, normalized, sqrt_rate, power_t):
    """The rate of a row of the stamped table (``catch_up_stamped``) from its stored G and N (0 for a
    column the rule has not), in the table's precision (VW computes a rate in float): under the default
    rule (adaptive, normalized, power_t 0.5) 1 / (sqrt(G + g0) N) in the table's arithmetic (float32:
    ``vsqrtss``, ``vdivss``, shorter than float64's on the prediction's and the statistics' paths),
    otherwise ``rate_decay`` rounded to the table's type. Every read of a stamped row's rate (the
    prediction, the statistics, the step, the rebase) takes it from here, so the lazy form accrues
    exactly what the eager one would with the same rates; on a float64 table it is ``rate_decay``."""
    T = table.dtype.type
    if adaptive and normalized and sqrt_rate:
        Gt = T(G + g0)
        if Gt <= 0.0 or N <= 0.0:
            return T(0.0)
        den = math.sqrt(Gt) * T(N)
        if den == 0.0:          # tiny G and N (a loaded model's) whose product underflows: the rate overflows
            return T(math.inf)
        return T(1.0) / den
    return T(rate_decay(np.float64(G) + g0 if adaptive else 0.0, np.float64(N), adaptive, normalized, sqrt_rate,
                        power_t))


@njit(cache=True, nogil=True, inline="always")
def stamped_row_rate(table, i, cg, cn, g0, sqrt_rate, power_t):
    """``stamped_rate`` of row i of the table (columns cg / cn, -1 when the rule has none)."""
    G = table[i, cg] if cg >= 0 else table.dtype.type(0.0)
    N = table[i, cn] if cn >= 0 else table.dtype.type(0.0)
    return stamped_rate(table, G, N, g0, cg >= 0, cn >= 0, sqrt_rate, power_t)


@njit(cache=True, nogil=True, inline="always")
def catch_up(table, i, cum, theta, clast, cpen, cg, cn, g0, sqrt_rate, power_t, cr):
    """Bring weight i up to date with the gravity released since its last touch; returns it.

    Between touches a weight only shrinks, so if |w| <= theta at the first missed truncation it stays
    <= theta for all of them, and the truncations compose into one of the summed gravity (LLZ 2009
    §4), scaled by the weight's own rate, which is constant between touches.

    With a penalty column (``cpen`` >= 0, cumulative penalty) the weight column holds the raw weight
    z, which gradient steps move freely, and the penalty column P the gravity the weight has accrued
    since its first update, each step's share scaled by the weight's rate at the time; the weight in
    force is z shrunk towards 0 by P (returned, not stored). This is VW's --l1 bookkeeping (a raw
    weight and the accumulated gravity) kept per feature: a weight must outgrow all the penalty of
    its own lifetime, so noise that a truncation would forgive is not, and a feature first seen late
    starts with no penalty. ``theta`` does not apply in this mode.

    The weight's rate is read from the rate column ``cr`` when the table has one (``gd.rate_statistics``
    keeps it equal to the rate of the weight's G and N), and computed from G and N otherwise.
    """
    w = table[i, W]
    owed = cum - get64(table, i, clast)
    set64(table, i, clast, cum)
    if cpen >= 0:
        P = get64(table, i, cpen)
        if owed > 0.0 and (w != 0.0 or P != 0.0):
            if cr >= 0:
                owed *= table[i, cr]
            elif cg >= 0 or cn >= 0:
                owed *= feature_rate(table, i, cg, cn, g0, sqrt_rate, power_t)
            P += owed
            set64(table, i, cpen, P)
        return shrink(w, P)
    if w != 0.0 and owed > 0.0:
        if cr >= 0:
            owed *= table[i, cr]
        elif cg >= 0 or cn >= 0:
            owed *= feature_rate(table, i, cg, cn, g0, sqrt_rate, power_t)
        w = truncate(w, owed, theta)
        table[i, W] = w
    return w


@njit(cache=True, nogil=True, inline="always")
def catch_up_plain(table, i, cum, clast):
    """``catch_up`` without a threshold, per-feature rates or a penalty column (truncated gradient
    under --sgd, theta = infinity): the weight shrinks towards 0 by the gravity released since its
    last touch. The same arithmetic as the general form, without its run-time branches on the
    layout (a specialised kernel uses it; lazy == eager covers both). The weight is written back
    unconditionally (owed >= 0 because the released gravity never decreases, so this is the same
    arithmetic): at -b 20 on the core file that took 37 -> 23 ns per feature entry."""
    w = table[i, W]
    owed = cum - get64(table, i, clast)
    set64(table, i, clast, cum)
    w = shrink(w, owed)     # = truncate(w, owed, inf), since owed >= 0
    table[i, W] = w
    return w


#: rows sharing one time stamp in the block-stamped table (tg under --sgd, ``catch_up_block``): 16
#: float32 weights, one 64-byte cache line
BLOCK_SHIFT = 4
BLOCK = 1 << BLOCK_SHIFT


@njit(cache=True, nogil=True, inline="always")
def catch_up_block(table, i, cum, st, stamps):
    """The weight of row i in the block-stamped table (tg under --sgd without a threshold, issue 30:
    4 B a weight and 8 B a block of ``BLOCK`` rows, 4.5 B a slot). Without per-feature rates every
    row accrues the same global gravity, and the soft threshold composes, shrink(shrink(w, a), b) =
    shrink(w, a + b), so the ``BLOCK`` consecutive rows of a block can share one time stamp: the
    cumulative gravity at the block's last catch-up, ``st[stamps + i // BLOCK]`` (float64, exact, in
    the run's state array). A read of any row of a block first shrinks all its rows by what was
    released since (one cache line of float32 weights) and stamps the block; an update of a row is
    preceded by the example's read of it, so it never meets an owing block."""
    b = stamps + (i >> BLOCK_SHIFT)
    owed = cum - st[b]
    w = table[i, W]
    if owed > 0.0:
        first = i & ~(BLOCK - 1)
        # the block's rows as contiguous values (the table has one column); their count is a run-time
        # value (fewer than BLOCK at -b < 4), which lets LLVM's loop vectorizer take the loop (a
        # constant count is unrolled into scalar code: numba leaves the SLP vectorizer off)
        n = min(BLOCK, table.shape[0] - first)
        o = table.dtype.type(owed)
        _shrink_block(carray(_row_pointer(table, first), (n,)), o, n)
        # row i's new value, computed as the block's (reading it back from the vector store would stall)
        m = abs(w) - o
        w = math.copysign(m if m > table.dtype.type(0.0) else table.dtype.type(0.0), w)
        st[b] = cum
    return np.float64(w)


@njit(cache=True, nogil=True, inline="always")
def _shrink_block(w, owed, n):
    """Each of the n weights of ``w`` shrunk towards 0 by ``owed`` (both of the table's type: a
    float32 table shrinks in float32), stopping at 0."""
    zero = w.dtype.type(0.0)
    for j in range(n):
        v = w[j]
        m = abs(v) - owed
        w[j] = math.copysign(m if m > zero else zero, v)


@njit(cache=True, nogil=True)
def finalize_blocks(table, cum, st, stamps):
    """Catch every block of the block-stamped table up (``catch_up_block``; before saving). Zero
    weights are not written, nor the stamp of a block of zeros (its stamp does not matter: a zero
    stays zero, and the next read of the block stamps it), so that pages training never touched stay
    out of the resident set. The shrink is ``catch_up_block``'s, in the table's type, so that the
    saved weights are those the next read would have given."""
    n = table.shape[0]
    zero = table.dtype.type(0.0)
    for b in range((n + BLOCK - 1) >> BLOCK_SHIFT):
        owed = cum - st[stamps + b]
        if owed > 0.0:
            o = table.dtype.type(owed)
            used = False
            for j in range(b << BLOCK_SHIFT, min((b + 1) << BLOCK_SHIFT, n)):
                w = table[j, W]
                if w != zero:
                    m = abs(w) - o
                    table[j, W] = math.copysign(m if m > zero else zero, w)
                    used = True
            if used:
                st[stamps + b] = cum


@njit(cache=True, nogil=True, inline="always")
def catch_up_penalty(table, i, cum, clast, cpen, cr):
    """``catch_up`` with the cumulative penalty and a rate column (``cr``: per-feature rates),
    without the general form's run-time branches. Reading the rate the last update stored, instead
    of computing G^-1/2 / N again, took the default rule's tg from 0.308 to 0.265 s (learning alone,
    200K lines of the core file, -b 20, fastest of 5, alternating, together with the update's read of
    the same column)."""
    w = table[i, W]
    owed = cum - get64(table, i, clast)
    set64(table, i, clast, cum)
    P = get64(table, i, cpen)
    if owed > 0.0 and (w != 0.0 or P != 0.0):
        P += owed * table[i, cr]
        set64(table, i, cpen, P)
    return shrink(w, P)


@njit(cache=True, nogil=True, inline="always")
def stamped_penalty(table, i, ca, d, r):
    """The penalty in force of row i under the stamped form (``catch_up_stamped``): a + d r, d = cum - C
    the gravity released since the epoch base (float64, from the exact globals), never below 0 (a's
    float32 rounding)."""
    return max(table[i, ca] + d * r, 0.0)


@njit(cache=True, nogil=True, inline="always")
def catch_up_stamped(table, i, d, cg, cn, ca, g0, sqrt_rate, power_t):
    """The weight in force of row i with the cumulative penalty kept *stamped* in one column (tg's
    16-byte rows, issue 30): the lazy time stamp of Langford, Li & Zhang 2009, §4, folded into the
    penalty. With C the run's epoch base (``st[tg.S_EPOCH]``, float64), LAST the cumulative gravity at
    the row's last touch and r its rate (G and N change only at a touch, so r is constant between two
    touches, and is computed from them instead of stored: ``stamped_rate``), column ``ca`` holds a = P - (LAST - C) r;
    the penalty in force after the gravity ``d`` = cum - C released since C is then a + d r, and the
    weight in force z shrunk by it. Nothing is written: a read owes nothing later. A row whose z and a
    are both 0 accrues nothing (never updated, or its updates left z at 0; its weight is 0 anyway)."""
    r = stamped_row_rate(table, i, cg, cn, g0, sqrt_rate, power_t)
    return shrink(table[i, W], stamped_penalty(table, i, ca, d, r))


@njit(cache=True, nogil=True)
def rebase_stamped(table, d, cg, cn, ca, g0, sqrt_rate, power_t):
    """Move every row's stamped penalty (``catch_up_stamped``) to a new epoch base C' = C + d: a += d r,
    i.e. a = the penalty in force; the caller sets C' (``st[tg.S_EPOCH]``). Afterwards a holds P (the
    model's "p") and the time part of the next reads starts at 0, so a's float32 rounding stays
    relative to the penalty plus one epoch's accrual. Rows whose z and a are both 0 accrue nothing and
    are not written (pages training never touched stay out of the resident set)."""
    if d == 0.0:
        return
    for i in range(table.shape[0]):
        if table[i, W] != 0.0 or table[i, ca] != 0.0:
            table[i, ca] = stamped_penalty(table, i, ca, d, stamped_row_rate(table, i, cg, cn, g0, sqrt_rate, power_t))


@njit(cache=True, nogil=True)
def finalize_lazy(table, cum, theta, clast, cpen, cg, cn, g0, sqrt_rate, power_t, cr):
    """Catch every weight up (before saving): afterwards the table holds the eager weights. With a
    rate column (``cr`` >= 0) each weight's rate is read from it, as the training's catch-up reads it
    (a float32 table's rounded rate).

    A zero weight stays zero whatever it owes, so its row is not written: pages of the table that
    training never touched stay untouched (and out of the resident set)."""
    for i in range(table.shape[0]):
        if table[i, W] != 0.0 or (cpen >= 0 and get64(table, i, cpen) != 0.0):
            catch_up(table, i, cum, theta, clast, cpen, cg, cn, g0, sqrt_rate, power_t, cr)


@njit(cache=True, nogil=True)
def fill_rates(table, saved, cg, cn, cr, g0, sqrt_rate, power_t):
    """Set the rate column ``cr`` of every used row (a value not 0 in one of the first ``saved``
    columns) from its G and N, after a model is loaded (the column is not saved). An unused row's
    rate is written by its first update before anything reads it (``gd.gradient_step``), so its page
    of the table stays untouched."""
    for i in range(table.shape[0]):
        if _row_used(table, i, saved):
            table[i, cr] = feature_rate(table, i, cg, cn, g0, sqrt_rate, power_t)


@njit(cache=True, nogil=True)
def count_nonzero(table, col=W):
    """Number of non-zero values in column ``col`` (the weights by default)."""
    n = 0
    for i in range(table.shape[0]):
        if table[i, col] != 0.0:
            n += 1
    return n


@njit(cache=True, nogil=True)
def _row_used(table, i, ncol):
    for c in range(ncol):
        if table[i, c] != 0.0:
            return True
    return False


@njit(cache=True, nogil=True)
def nonzero_rows(table, ncol=1):
    """Indices of the rows with a non-zero value in one of the first ``ncol`` columns, increasing
    (no temporary of size 2^b). ``ncol`` = 1: the non-zero weights."""
    n = 0
    for i in range(table.shape[0]):
        if _row_used(table, i, ncol):
            n += 1
    out = np.empty(n, np.int64)
    j = 0
    for i in range(table.shape[0]):
        if _row_used(table, i, ncol):
            out[j] = i
            j += 1
    return out
