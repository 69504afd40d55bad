"""VW's neural network reduction (``--nn K``, VW's nn.cc over its gd): one hidden layer of K units with
VW's fast tanh, the output layer learned with the run's loss, every unit learned by the update rule.

Weights (rows of the table; W the smallest power of two >= K + 1, b the bits):

* hidden unit i of input feature h: row ``(h*W + i) & mask`` (the input's own rows, as --oaa's classes);
* unit i's bias: row ``(c + i) & mask``, c VW's constant index shifted right by VW's stride shift (VW
  feeds it as an index of its weight array, not multiplied by the feature width);
* the output weight of unit i: row ``(NN_CONSTANT + K + i) & mask``, the output's constant
  ``(NN_CONSTANT + 2K) & mask``.

One example (VW's predict_or_learn_multi without dropout, input passthrough or multitask):

1. the hidden biases: each one whose score (clamped to [-3, 3]) is 0 is learned once towards a draw of
   VW's generator (seeded with --random-seed) less 1/2, squared loss, importance 1;
2. the hidden units' scores h_i: base + sum_j w_ij x_j, clamped to [-3, 3];
3. the output weights: each whose value (clamped to [-1, 1]) is 0 takes one update towards a draw less
   1/2 over sqrt(K) (the prediction 0), squared loss; sigma_i = fasttanh(h_i) (VW's approximation);
4. the output layer: the features sigma_i at the output weights and 1 at the output's constant, learned
   with the run's loss, label, importance and base: the prediction (clamped to the label bounds) is the
   example's;
5. when learned with a non-zero gradient g of the run's loss: each unit's input weights take one update
   of squared loss from its score h_i towards clamp(h_i - g nu_i (1 - sigma_i^2) / 2, [-3, 3]) (nu_i the
   output weight, clamped to [-3, 3]), unless that target is h_i.

--dropout (VW's, for a learned example): after step 2 each unit is left out (sigma 0) when VW's dropout
generator (seeded with --random-seed, its own) draws below 1/2, the others' sigma doubled; steps 3-5 run
for the units kept, then again for the units left out (VW's "converse"); the prediction is the first
round's. --inpass: the output layer also takes the example's own features (their rows at offset K) and
no constant. --multitask changes nothing for one task, as in VW; --meanfield turns dropout off.

Steps 1 and 3 run for predicted examples too (VW's does). Every update is the update rule's, with the
per-feature statistics of the run and the normalizer sums of its offset (VW's gd keeps one state per
model: unit i's updates and bias use state i, the output layer's state K; ``st[N_ST + 2j]``, as --oaa's
classes); its clock is the example's, advanced once by its importance.
"""

import math

import numpy as np
from numba import njit

from streamlearn.core.initial import _advance, _draw
from streamlearn.core.loop import begin_example, diverged_at, example_loss, finish_prediction
from streamlearn.core.losses import SQUARED, loss_dloss
from streamlearn.core.lowrank import SLOTS, lowrank_loop
from streamlearn.core.rules import gd_settings, gd_step
from streamlearn.core.state import (
    C_DUMP, C_W_LABELED, C_W_UNLABELED, I_BINARY, I_CLASS_W, I_COL_G, I_FIXED_BOUNDS, I_HOLDOUT, I_LOSS, I_LRQ_SHIFT,
    I_NN_FLAGS, I_NN_UNITS, I_SEED, I_TRAIN, N_ST, P_TAU, S_MAX_LABEL, S_MIN_LABEL, S_NLEARN, S_NORM_SUM, S_T, S_TOTAL_W,
)
from streamlearn.core.table import W as WCOL
from streamlearn.features.hashing import CONSTANT_RAW_INDEX

NN_CONSTANT = 533357803     # VW's index of the output layer
NN_DROPOUT = 1              # iprm[I_NN_FLAGS]: --dropout
NN_INPASS = 2               # --inpass
HIDDEN_BOUND = 3.0          # hidden scores are clamped to [-3, 3]
S_SEEDED = SLOTS["nn_seeded"]
S_SEED_LO = SLOTS["nn_seed_lo"]
S_SEED_HI = SLOTS["nn_seed_hi"]
S_DROP_SEEDED = SLOTS["nn_dropout_seeded"]
S_DROP_LO = SLOTS["nn_dropout_seed_lo"]
S_DROP_HI = SLOTS["nn_dropout_seed_hi"]


@njit(cache=True, nogil=True)
def fasttanh(p, bits):
    """VW's fasttanh of a float32 p: -1 + 2 / (1 + fastexp(-2p)), fastexp(x) = fastpow2(x log2 e), and
    fastpow2 the float whose bits are (2^23 (x + 121.2740575 + 27.7280233 / (4.84252568 - z) - 1.49012907 z))
    (z the fractional part of x, plus 1 below 0), all in float32. ``bits`` is a uint32[1] scratch whose
    float32 view gives the float."""
    x = np.float32(np.float32(1.442695040) * np.float32(np.float32(-2.0) * np.float32(p)))
    offset = np.float32(1.0) if x < 0 else np.float32(0.0)
    clipp = np.float32(-126.0) if x < -126 else x
    w = np.float32(int(clipp))
    z = np.float32(np.float32(clipp - w) + offset)
    t = np.float32(np.float32(clipp + np.float32(121.2740575))
                   + np.float32(np.float32(27.7280233) / np.float32(np.float32(4.84252568) - z)))
    t = np.float32(t - np.float32(np.float32(1.49012907) * z))
    bits[0] = np.uint32(np.float32(np.float32(8388608.0) * t))
    e = bits.view(np.float32)[0]
    return np.float32(np.float32(-1.0) + np.float32(np.float32(2.0) / np.float32(np.float32(1.0) + e)))


@njit(cache=True, nogil=True, inline="always")
def _clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@njit(cache=True, nogil=True, inline="always")
def _draw_half(rng):
    """VW's get_and_update_random() - 0.5, as a float."""
    rng[0] = _advance(rng[0])
    return np.float32(np.float64(_draw(rng[0])) - 0.5)


@njit(cache=True, nogil=True, inline="always")
def _update(slots, vals, n, table, cfg, st, code, p, y, tau, h, t0, j):
    """One update of the rule (loss ``code``) from p towards y of the features slots/vals[:n] with
    normalizer state j (VW's per-model state of gd: the offset's), at the example's clock t0."""
    st[S_NORM_SUM] = st[N_ST + 2 * j]
    st[S_TOTAL_W] = st[N_ST + 2 * j + 1]
    st[S_T] = t0
    gd_step(slots, vals, 0, n, table, cfg, st, code, p, y, tau, h)
    st[N_ST + 2 * j] = st[S_NORM_SUM]
    st[N_ST + 2 * j + 1] = st[S_TOTAL_W]
    st[S_T] = t0


@njit(cache=True, nogil=True, inline="always")
def _step(slots, vals, n, table, cfg, st, p, y, h, lo, hi, t0, j):
    """``_update`` of squared loss within the bounds [lo, hi] (the bounds are put back)."""
    keep_lo = st[S_MIN_LABEL]
    keep_hi = st[S_MAX_LABEL]
    st[S_MIN_LABEL] = lo
    st[S_MAX_LABEL] = hi
    _update(slots, vals, n, table, cfg, st, SQUARED, p, y, 0.5, h, t0, j)
    st[S_MIN_LABEL] = keep_lo
    st[S_MAX_LABEL] = keep_hi


#: --audit's events (``nn_audit_block``): what VW's gd prints at each of its predictions under nn
EV_BIAS = 0        # a hidden bias (its score, then once more as it is learned)
EV_UNIT = 1        # a hidden unit's score over the example's features
EV_OUTPUT_WEIGHT = 2
EV_OUTPUT = 3      # the output layer


@njit(cache=True, nogil=True)
def no_record():
    """The record of a run without --audit (never written)."""
    return (np.zeros((0, 3), np.int64), np.zeros(0), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0),
            np.zeros(2, np.int64))


@njit(cache=True, nogil=True)
def _record(rec, kind, unit, pred, rows, xs, n, off, table, mask, cg):
    """Append an event (kind, unit, the printed prediction) and its features (rows[q] + off, xs[q],
    their weight and G now) to ``rec``."""
    ev, ev_p, f_row, f_val, f_w, f_g, used = rec
    k = used[0]
    ev[k, 0] = kind
    ev[k, 1] = unit
    ev[k, 2] = used[1]
    ev_p[k] = pred
    used[0] = k + 1
    j = used[1]
    for q in range(n):
        r = (rows[q] + off) & mask
        f_row[j] = r
        f_val[j] = xs[q]
        f_w[j] = np.float32(table[r, WCOL])
        f_g[j] = table[r, cg] if cg >= 0 else 0.0
        j += 1
    used[1] = j


@njit(cache=True, nogil=True, inline="always")
def _load_rng(st, lo, hi, seeded, seed):
    out = np.zeros(1, np.uint64)
    if st[seeded] == 0.0:
        out[0] = np.uint64(seed)
    else:
        out[0] = np.uint64(st[lo]) | (np.uint64(st[hi]) << np.uint64(32))
    return out


@njit(cache=True, nogil=True, inline="always")
def _save_rng(st, lo, hi, seeded, rng):
    st[seeded] = 1.0
    st[lo] = np.float64(rng[0] & np.uint64(0xFFFFFFFF))
    st[hi] = np.float64(rng[0] >> np.uint64(32))


@njit(cache=True, nogil=True)
def nn_aux(K, st, iprm):
    """The scratch arrays of ``nn_example`` and VW's generators (their states restored from ``st``, or
    seeded with --random-seed: the random starts' and --dropout's): (rng, hidden, sig, slots, vals, one_i,
    one_v, bits, drop_rng, dropped)."""
    rng = _load_rng(st, S_SEED_LO, S_SEED_HI, S_SEEDED, iprm[I_SEED])
    drop_rng = _load_rng(st, S_DROP_LO, S_DROP_HI, S_DROP_SEEDED, iprm[I_SEED])
    return (rng, np.zeros(K), np.zeros(K, np.float32), np.empty(K + 1, np.int64), np.empty(K + 1, np.float32),
            np.zeros(1, np.int64), np.ones(1, np.float32), np.zeros(1, np.uint32), drop_rng, np.zeros(K, np.bool_))


@njit(cache=True, nogil=True)
def nn_example(rows, xs, n, base, table, cfg, st, code, y, tau, h, learn_it, K, mask, hb0, out0, t0, aux, rec, cg,
               dropout, inpass):
    """Steps 1-5 of the module docstring for an example's features: rows[q] (``(h*W) & mask``, unit i
    reads row ``(rows[q] + i) & mask``) and values xs[q], q < n; base: its initial score. Returns the raw
    score of the output layer (before the label bounds); the clock is left at t0, VW's generators and the
    first normalizer state saved in ``st``. With --audit (``rec`` sized, ``cg`` the G column or -1) every
    prediction VW's gd prints is recorded (``_record``). ``dropout``/``inpass``: VW's --dropout (for an
    example it learns: a predicted one, held out or without a label, has every unit, as VW's) and --inpass
    (module docstring)."""
    rng, hidden, sig, slots, vals, one_i, one_v, bits, drop_rng, dropped = aux
    audit = rec[0].shape[0] > 0
    hb = HIDDEN_BOUND
    one_v[0] = 1.0
    if audit:
        one_i[0] = hb0
        for i in range(K):
            _record(rec, EV_BIAS, i, _clamp(np.float64(np.float32(table[(hb0 + i) & mask, WCOL])), -hb, hb), one_i,
                    one_v, 1, i, table, mask, cg)
    for i in range(K):                                   # 1. the hidden biases
        r = (hb0 + i) & mask
        if _clamp(table[r, WCOL], -hb, hb) == 0.0:
            target = _draw_half(rng)
            one_i[0] = r
            if audit:
                _record(rec, EV_BIAS, i, 0.0, one_i, one_v, 1, 0, table, mask, cg)
            _step(one_i, one_v, 1, table, cfg, st, 0.0, np.float64(target), 1.0, -hb, hb, t0, i)
    for i in range(K):                                   # 2. the hidden scores
        acc = base
        for q in range(n):
            acc += table[(rows[q] + i) & mask, WCOL] * xs[q]
        hidden[i] = _clamp(acc, -hb, hb)
    if audit:
        for i in range(K):
            _record(rec, EV_UNIT, i, hidden[i], rows, xs, n, i, table, mask, cg)
    for i in range(K):                                   # --dropout: each unit kept when a draw is >= 1/2
        dropped[i] = False
        if dropout:
            drop_rng[0] = _advance(drop_rng[0])
            dropped[i] = _draw(drop_rng[0]) < np.float32(0.5)
    scale = np.float32(2.0) if dropout else np.float32(1.0)
    sqrtk = np.float32(math.sqrt(np.float32(K)))
    m = K + (n if inpass else 1)                          # the output layer's features
    if slots.shape[0] < m:
        slots = np.empty(m, np.int64)
        vals = np.empty(m, np.float32)
    first_raw = 0.0
    for rnd in range(2 if dropout else 1):               # --dropout: then the other units (VW's converse)
        for i in range(K):                               # 3. the output weights
            sig[i] = 0.0 if dropped[i] else np.float32(scale * fasttanh(np.float32(hidden[i]), bits))
            r = (out0 + i) & mask
            if audit:
                one_i[0] = r
                _record(rec, EV_OUTPUT_WEIGHT, i, _clamp(table[r, WCOL], -1.0, 1.0), one_i, one_v, 1, 0, table, mask,
                        cg)
            if _clamp(table[r, WCOL], -1.0, 1.0) == 0.0:
                target = np.float32(_draw_half(rng) / sqrtk)
                one_i[0] = r
                _step(one_i, one_v, 1, table, cfg, st, 0.0, np.float64(target), 1.0, -1.0, 1.0, t0, K)
        j = 0                                            # 4. the output layer
        if inpass:                                       # the example's own features at offset K first
            for q in range(n):
                slots[j] = (rows[q] + K) & mask
                vals[j] = xs[q]
                j += 1
        for i in range(K):
            slots[j] = (out0 + i) & mask
            vals[j] = sig[i]
            j += 1
        if not inpass:
            slots[j] = (out0 + K) & mask
            vals[j] = 1.0
            j += 1
        raw = base
        for i in range(j):
            raw += table[slots[i], WCOL] * vals[i]
        if rnd == 0:
            first_raw = raw
        if audit:
            _record(rec, EV_OUTPUT, K, _clamp(raw, st[S_MIN_LABEL], st[S_MAX_LABEL]) if raw == raw else 0.0, slots,
                    vals, j, 0, table, mask, cg)
        if learn_it:
            lo = st[S_MIN_LABEL]
            hi = st[S_MAX_LABEL]
            p = _clamp(raw, lo, hi) if raw == raw else 0.0
            _update(slots, vals, j, table, cfg, st, code, p, y, tau, h, t0, K)
            g = loss_dloss(code, p, y, tau)              # 5. the hidden units
            if g != 0.0:
                unit = np.empty(n, np.int64)
                for i in range(K):
                    if dropped[i]:
                        continue
                    sh = np.float32(sig[i] / scale)
                    prime = np.float32(scale * np.float32(np.float32(1.0) - np.float32(sh * sh)))
                    nu = np.float32(_clamp(table[(out0 + i) & mask, WCOL], -hb, hb))
                    if audit:
                        one_i[0] = (out0 + i) & mask
                        _record(rec, EV_OUTPUT_WEIGHT, i, np.float64(nu), one_i, one_v, 1, 0, table, mask, cg)
                    gradhw = np.float32(np.float32(np.float32(np.float32(0.5) * nu) * np.float32(g)) * prime)
                    target = _clamp(np.float64(np.float32(np.float32(hidden[i]) - gradhw)), -hb, hb)
                    if target != np.float64(np.float32(hidden[i])):
                        for q in range(n):
                            unit[q] = (rows[q] + i) & mask
                        _step(unit, xs, n, table, cfg, st, hidden[i], target, h, -hb, hb, t0, i)
        for i in range(K):
            dropped[i] = not dropped[i]
    st[S_NORM_SUM] = st[N_ST]          # VW saves the first state's sums
    st[S_TOTAL_W] = st[N_ST + 1]
    _save_rng(st, S_SEED_LO, S_SEED_HI, S_SEEDED, rng)
    _save_rng(st, S_DROP_LO, S_DROP_HI, S_DROP_SEEDED, drop_rng)
    return first_raw


@njit(cache=True, nogil=True, inline="always")
def nn_places(iprm, table):
    """(K, mask, the first hidden bias's row, the first output weight's row) of a run."""
    K = iprm[I_NN_UNITS]
    return (K, np.int64(table.shape[0] - 1), np.int64(CONSTANT_RAW_INDEX >> iprm[I_LRQ_SHIFT]),
            np.int64(NN_CONSTANT + K))


@njit(nogil=True, inline="always")
def nn_loop(block, state, start, end, cfg, rec):
    """Predict, score and (when training) learn examples start..end-1 through VW's nn over the update
    rule (module docstring; the bookkeeping is ``streamlearn.core.loop``'s). Returns the next example
    (early at a progress row)."""
    indptr, idx, val, labels, weights, bases, nfeat, preds = block
    table, prm, iprm, st, ctr = state
    code = iprm[I_LOSS]
    tau = prm[P_TAU]
    holdout_period = iprm[I_HOLDOUT]
    train = iprm[I_TRAIN] != 0
    bounds_follow = iprm[I_FIXED_BOUNDS] == 0
    binary = iprm[I_BINARY] != 0
    W = np.int64(iprm[I_CLASS_W])
    K, mask, hb0, out0 = nn_places(iprm, table)
    aux = nn_aux(K, st, iprm)
    cg = iprm[I_COL_G]
    dropout = (iprm[I_NN_FLAGS] & NN_DROPOUT) != 0
    inpass = (iprm[I_NN_FLAGS] & NN_INPASS) != 0
    rows = np.empty(64, np.int64)
    for e in range(start, end):
        h = weights[e]
        y, labeled, holdout = begin_example(ctr, st, code, labels[e], train, holdout_period, bounds_follow)
        s = indptr[e]
        f = indptr[e + 1]
        if f - s > rows.shape[0]:
            rows = np.empty(2 * (f - s), np.int64)
        for q in range(s, f):
            rows[q - s] = (np.int64(idx[q]) * W) & mask
        learn_it = train and labeled and not holdout and h > 0.0
        t0 = st[S_T]
        raw = nn_example(rows, val[s:f], f - s, bases[e], table, cfg, st, code, y, tau, h, learn_it, K, mask, hb0,
                         out0, t0, aux, rec, cg, dropout and train and labeled and not holdout, inpass)
        if raw - raw != 0.0:
            diverged_at(ctr, e)
        preds[e] = finish_prediction(ctr, st, raw, code, y, tau, h, labeled, holdout, binary, nfeat[e], example_loss)
        if learn_it:
            st[S_T] = t0 + h
            st[S_NLEARN] += 1.0
        if ctr[C_W_LABELED] + ctr[C_W_UNLABELED] >= ctr[C_DUMP]:
            return e + 1
    return end


@njit(cache=True, nogil=True)
def nn_sgd_block(block, state, start, end):
    """Examples start..end-1 through VW's nn over gradient descent under the update rule (sgd; also every
    --nn model's prediction-only kernel)."""
    table, prm, iprm, st, ctr = state
    return nn_loop(block, state, start, end, gd_settings(prm, iprm), no_record())


@njit(cache=True, nogil=True)
def nn_audit_block(block, rec, state, start, end):
    """``nn_sgd_block`` recording VW's audit events in ``rec`` (--audit: one example at a time)."""
    table, prm, iprm, st, ctr = state
    return nn_loop(block, state, start, end, gd_settings(prm, iprm), rec)


@njit(cache=True, nogil=True, inline="always")
def nn_base(rows, xs, n, base, table, prm, iprm, cfg, st, code, y, tau, h, learn_it, t0, aux):
    """``streamlearn.core.lowrank.lowrank_loop``'s base of --nn (VW's stack: the low-rank features under
    the network's each round): ``nn_example`` of the features."""
    K, mask, hb0, out0 = nn_places(iprm, table)
    return nn_example(rows, xs, n, base, table, cfg, st, code, y, tau, h, learn_it, K, mask, hb0, out0, t0, aux,
                      no_record(), -1, learn_it and (iprm[I_NN_FLAGS] & NN_DROPOUT) != 0,
                      (iprm[I_NN_FLAGS] & NN_INPASS) != 0)


@njit(cache=True, nogil=True)
def lowrank_nn_block(block, state, start, end):
    """Examples start..end-1 with low-rank features (--lrq/--lrqfa) through VW's nn over the update rule
    (also every such model's prediction-only kernel)."""
    table, prm, iprm, st, ctr = state
    return lowrank_loop(block, state, start, end, gd_settings(prm, iprm), nn_base, nn_aux(iprm[I_NN_UNITS], st, iprm))
